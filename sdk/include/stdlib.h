/* SDK stdlib.h: the few process and integer helpers of the runtime. */
#ifndef NANOPU_STDLIB_H
#define NANOPU_STDLIB_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 0x7fffffff

/* Flush this hart's output and end the run: tohost = (code << 1) | 1. */
void exit(int code) __attribute__((noreturn));
/* exit(134) after printing "abort". */
void abort(void) __attribute__((noreturn));
int abs(int x);
long labs(long x);
long long llabs(long long x);
int atoi(const char *s);
long strtol(const char *s, char **end, int base);
unsigned long strtoul(const char *s, char **end, int base);
/* Deterministic per-program LCG (not thread-safe). */
int rand(void);
void srand(unsigned seed);

#ifdef __cplusplus
}
#endif
#endif
