/*
 * syscalls.c - HTIF host interface (nanopu-abi.md, "Host I/O is HTIF").
 *
 *   tohost = (code << 1) | 1          ends the run with exit code `code`
 *   tohost = &magic_mem (even)        host performs magic_mem[0](magic_mem[1..3]),
 *                                     writes the result to magic_mem[0], sets
 *                                     fromhost = 1; we wait and clear fromhost
 *
 * magic_mem, tohost and fromhost are shared by all harts: a recursive spin
 * lock (owner = hart id) serialises host calls; it is recursive so that a
 * trap handler that prints while its hart was inside a host call does not
 * deadlock (the interrupted call's magic_mem contents are then lost).
 *
 * Standard output is line-buffered per hart and flushed with SYS_write(1, ...).
 *
 * Build option -DNANOPU_HTIF_CONSOLE: write characters through the HTIF
 * console device (device 1, command 1) instead of SYS_write; used to run SDK
 * programs on QEMU's `spike` machine, whose HTIF has no syscall proxy.
 */
#include <nanopu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile uint64_t tohost __attribute__((section(".tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(64)));

static volatile uint64_t magic_mem[8] __attribute__((aligned(64)));

static volatile int htif_lock_word;
static volatile long htif_owner = -1;
static int htif_depth;

static void htif_lock(void)
{
    long me = (long)nanopu_hartid();
    if (htif_owner == me) {
        htif_depth++;
        return;
    }
    for (;;) {
        if (__atomic_exchange_n(&htif_lock_word, 1, __ATOMIC_ACQUIRE) == 0)
            break;
        while (htif_lock_word)
            ;
    }
    htif_owner = me;
    htif_depth = 1;
}

static void htif_unlock(void)
{
    if (--htif_depth == 0) {
        htif_owner = -1;
        __atomic_store_n(&htif_lock_word, 0, __ATOMIC_RELEASE);
    }
}

long htif_syscall(long num, long a0, long a1, long a2)
{
    htif_lock();
    magic_mem[0] = (uint64_t)num;
    magic_mem[1] = (uint64_t)a0;
    magic_mem[2] = (uint64_t)a1;
    magic_mem[3] = (uint64_t)a2;
    magic_mem[4] = 0;
    magic_mem[5] = 0;
    magic_mem[6] = 0;
    magic_mem[7] = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    tohost = (uint64_t)(uintptr_t)magic_mem;
    while (fromhost == 0)
        ;
    fromhost = 0;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    long ret = (long)magic_mem[0];
    htif_unlock();
    return ret;
}

#ifdef NANOPU_HTIF_CONSOLE
static void htif_console_putchar(char c)
{
    tohost = (1ULL << 56) | (1ULL << 48) | (uint8_t)c;
    while (fromhost == 0)
        ;
    fromhost = 0;
}
#endif

long nanopu_write(const void *buf, size_t len)
{
    if (len == 0)
        return 0;
#ifdef NANOPU_HTIF_CONSOLE
    htif_lock();
    for (size_t i = 0; i < len; i++)
        htif_console_putchar(((const char *)buf)[i]);
    htif_unlock();
    return (long)len;
#else
    return htif_syscall(SYS_write, 1, (long)(uintptr_t)buf, (long)len);
#endif
}

long nanopu_read(void *buf, size_t len)
{
    return htif_syscall(SYS_read, 0, (long)(uintptr_t)buf, (long)len);
}

/* ---- line-buffered standard output, one buffer per hart ---- */

#define OUTBUF_SIZE 256
static char outbuf[NANOPU_MAX_HARTS][OUTBUF_SIZE] __attribute__((aligned(64)));
static unsigned outlen[NANOPU_MAX_HARTS];

void nanopu_flush(void)
{
    unsigned long h = nanopu_hartid();
    if (h >= NANOPU_MAX_HARTS || outlen[h] == 0)
        return;
    nanopu_write(outbuf[h], outlen[h]);
    outlen[h] = 0;
}

/* Called by printf & co. for every output character. */
void __nanopu_putc(char c)
{
    unsigned long h = nanopu_hartid();
    if (h >= NANOPU_MAX_HARTS) {
        nanopu_write(&c, 1);
        return;
    }
    outbuf[h][outlen[h]++] = c;
    if (c == '\n' || outlen[h] == OUTBUF_SIZE)
        nanopu_flush();
}

struct __nanopu_file { int fd; };
static struct __nanopu_file file_stdout = { 1 };
static struct __nanopu_file file_stderr = { 2 };
FILE *const stdout = &file_stdout;
FILE *const stderr = &file_stderr;

int putchar(int c)
{
    __nanopu_putc((char)c);
    return (unsigned char)c;
}

int fputc(int c, FILE *f)
{
    (void)f;
    return putchar(c);
}

int putc(int c, FILE *f)
{
    return fputc(c, f);
}

int fputs(const char *s, FILE *f)
{
    (void)f;
    while (*s)
        __nanopu_putc(*s++);
    return 0;
}

/* Short writes go through the line buffer; long ones flush it and go to the
 * host in one SYS_write. */
size_t fwrite(const void *buf, size_t size, size_t n, FILE *f)
{
    (void)f;
    const char *p = buf;
    size_t len = size * n;
    if (len < OUTBUF_SIZE / 2) {
        for (size_t i = 0; i < len; i++)
            __nanopu_putc(p[i]);
    } else {
        nanopu_flush();
        nanopu_write(p, len);
    }
    return n;
}

int puts(const char *s)
{
    fputs(s, stdout);
    __nanopu_putc('\n');
    return 0;
}

int fflush(FILE *f)
{
    (void)f;
    nanopu_flush();
    return 0;
}

/* ---- process end ---- */

void exit(int code)
{
    nanopu_flush();
    htif_lock(); /* never released: no other hart may start a host call now */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    tohost = ((uint64_t)(uint32_t)code << 1) | 1;
    for (;;)
        __asm__ volatile ("wfi");
}

void abort(void)
{
    fputs("abort\n", stdout);
    exit(134);
}
