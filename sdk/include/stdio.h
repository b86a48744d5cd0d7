/*
 * SDK stdio.h: the small formatted-output runtime of lib/printf.c and
 * lib/syscalls.c, compiled with -ffixed-x30 -ffixed-x31.  Output goes to the
 * host through HTIF SYS_write (fd 1), line-buffered per hart.
 * Conversions: %d %i %u %x %X %o %c %s %p %% with flags "-0+ #", width and
 * precision (also '*'), and the length modifiers hh h l ll z j t.
 * No floating-point conversions.
 */
#ifndef NANOPU_STDIO_H
#define NANOPU_STDIO_H
#include <stddef.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef EOF
#define EOF (-1)
#endif

typedef struct __nanopu_file FILE;
extern FILE *const stdout;
extern FILE *const stderr; /* also written to fd 1 */

int printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vprintf(const char *fmt, va_list ap);
int sprintf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int snprintf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int vsnprintf(char *buf, size_t n, const char *fmt, va_list ap);
int vsprintf(char *buf, const char *fmt, va_list ap);
int fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int vfprintf(FILE *f, const char *fmt, va_list ap);
int puts(const char *s);
int putchar(int c);
int fputs(const char *s, FILE *f);
int fputc(int c, FILE *f);
int putc(int c, FILE *f);
int fflush(FILE *f);
size_t fwrite(const void *buf, size_t size, size_t n, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
