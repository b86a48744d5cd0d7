/*
 * printf.c - integer-only formatted output, compiled with -ffixed-x30/x31.
 *
 * Supports %d %i %u %o %x %X %c %s %p %% with the flags '-', '0', '+', ' ',
 * '#', a field width and a precision (numbers or '*'), and the length
 * modifiers hh h l ll z j t.  Output matches glibc for these conversions.
 * Unknown conversions are copied as is.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void __nanopu_putc(char c);

struct sink {
    char *buf;    /* NULL: write to stdout */
    size_t size;  /* capacity of buf including the terminating NUL */
    size_t n;     /* characters produced so far */
};

static void emit(struct sink *s, char c)
{
    if (s->buf) {
        if (s->n + 1 < s->size)
            s->buf[s->n] = c;
    } else {
        __nanopu_putc(c);
    }
    s->n++;
}

static void emit_n(struct sink *s, char c, int count)
{
    while (count-- > 0)
        emit(s, c);
}

enum { F_LEFT = 1, F_ZERO = 2, F_PLUS = 4, F_SPACE = 8, F_ALT = 16 };

static void format_int(struct sink *s, uint64_t v, int negative, unsigned base,
                       int upper, int flags, int width, int prec)
{
    char digits[24];
    int nd = 0;
    const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    while (v) {
        digits[nd++] = set[v % base];
        v /= base;
    }
    /* precision = minimum digit count; "%.0d" of 0 prints nothing */
    int ndig = nd;
    if (prec < 0 && ndig == 0)
        ndig = 1;
    if (prec >= 0 && ndig < prec)
        ndig = prec;

    const char *prefix = "";
    if (negative)
        prefix = "-";
    else if (flags & F_PLUS)
        prefix = "+";
    else if (flags & F_SPACE)
        prefix = " ";
    if ((flags & F_ALT) && nd > 0) {
        if (base == 16)
            prefix = upper ? "0X" : "0x";
        else if (base == 8 && ndig <= nd)
            ndig = nd + 1; /* leading 0 */
    }
    int plen = (int)strlen(prefix);
    int total = plen + ndig;
    int pad = width > total ? width - total : 0;

    if (!(flags & F_LEFT) && !((flags & F_ZERO) && prec < 0))
        emit_n(s, ' ', pad);
    for (int i = 0; i < plen; i++)
        emit(s, prefix[i]);
    if (!(flags & F_LEFT) && (flags & F_ZERO) && prec < 0)
        emit_n(s, '0', pad);
    emit_n(s, '0', ndig - nd);
    while (nd > 0)
        emit(s, digits[--nd]);
    if (flags & F_LEFT)
        emit_n(s, ' ', pad);
}

static void format(struct sink *s, const char *fmt, va_list ap)
{
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            emit(s, *fmt);
            continue;
        }
        const char *start = fmt++;
        int flags = 0;
        for (;; fmt++) {
            if (*fmt == '-') flags |= F_LEFT;
            else if (*fmt == '0') flags |= F_ZERO;
            else if (*fmt == '+') flags |= F_PLUS;
            else if (*fmt == ' ') flags |= F_SPACE;
            else if (*fmt == '#') flags |= F_ALT;
            else break;
        }
        int width = 0;
        if (*fmt == '*') {
            width = va_arg(ap, int);
            if (width < 0) {
                flags |= F_LEFT;
                width = -width;
            }
            fmt++;
        } else {
            while (*fmt >= '0' && *fmt <= '9')
                width = width * 10 + (*fmt++ - '0');
        }
        int prec = -1;
        if (*fmt == '.') {
            fmt++;
            prec = 0;
            if (*fmt == '*') {
                prec = va_arg(ap, int);
                if (prec < 0)
                    prec = -1;
                fmt++;
            } else {
                while (*fmt >= '0' && *fmt <= '9')
                    prec = prec * 10 + (*fmt++ - '0');
            }
        }
        int len = 0; /* -2 hh, -1 h, 0 int, 1 long, 2 long long */
        for (;; fmt++) {
            if (*fmt == 'h') len--;
            else if (*fmt == 'l') len++;
            else if (*fmt == 'z' || *fmt == 'j' || *fmt == 't') len = 1;
            else break;
        }
        char c = *fmt;
        switch (c) {
        case 'd':
        case 'i': {
            int64_t v;
            if (len >= 1) v = va_arg(ap, long);
            else v = va_arg(ap, int);
            if (len == -1) v = (short)v;
            else if (len <= -2) v = (signed char)v;
            uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            format_int(s, mag, v < 0, 10, 0, flags, width, prec);
            break;
        }
        case 'u':
        case 'x':
        case 'X':
        case 'o': {
            uint64_t v;
            if (len >= 1) v = va_arg(ap, unsigned long);
            else v = va_arg(ap, unsigned int);
            if (len == -1) v = (unsigned short)v;
            else if (len <= -2) v = (unsigned char)v;
            unsigned base = c == 'u' ? 10 : c == 'o' ? 8 : 16;
            format_int(s, v, 0, base, c == 'X', flags & ~(F_PLUS | F_SPACE), width, prec);
            break;
        }
        case 'p': {
            uintptr_t v = (uintptr_t)va_arg(ap, void *);
            if (v == 0) { /* glibc prints "(nil)" */
                int n = 5;
                if (!(flags & F_LEFT))
                    emit_n(s, ' ', width - n);
                for (const char *p = "(nil)"; *p; p++)
                    emit(s, *p);
                if (flags & F_LEFT)
                    emit_n(s, ' ', width - n);
                break;
            }
            format_int(s, v, 0, 16, 0, (flags & ~(F_PLUS | F_SPACE)) | F_ALT, width, prec);
            break;
        }
        case 'c': {
            char ch = (char)va_arg(ap, int);
            if (!(flags & F_LEFT))
                emit_n(s, ' ', width - 1);
            emit(s, ch);
            if (flags & F_LEFT)
                emit_n(s, ' ', width - 1);
            break;
        }
        case 's': {
            const char *str = va_arg(ap, const char *);
            if (!str)
                str = "(null)";
            int n = 0;
            while (str[n] && (prec < 0 || n < prec))
                n++;
            if (!(flags & F_LEFT))
                emit_n(s, ' ', width - n);
            for (int i = 0; i < n; i++)
                emit(s, str[i]);
            if (flags & F_LEFT)
                emit_n(s, ' ', width - n);
            break;
        }
        case '%':
            emit(s, '%');
            break;
        case '\0':
            /* stray '%' at the end: print it */
            for (const char *p = start; *p; p++)
                emit(s, *p);
            return;
        default:
            for (const char *p = start; p <= fmt; p++)
                emit(s, *p);
            break;
        }
    }
}

int vsnprintf(char *buf, size_t n, const char *fmt, va_list ap)
{
    struct sink s = { buf, n, 0 };
    /* A NULL buffer with size 0 only counts. */
    static char dummy;
    if (!buf) {
        s.buf = &dummy;
        s.size = 0;
    }
    format(&s, fmt, ap);
    if (s.size > 0)
        s.buf[s.n < s.size ? s.n : s.size - 1] = '\0';
    return (int)s.n;
}

int snprintf(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    return r;
}

int vsprintf(char *buf, const char *fmt, va_list ap)
{
    return vsnprintf(buf, (size_t)-1 >> 1, fmt, ap);
}

int sprintf(char *buf, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsprintf(buf, fmt, ap);
    va_end(ap);
    return r;
}

int vprintf(const char *fmt, va_list ap)
{
    struct sink s = { NULL, 0, 0 };
    format(&s, fmt, ap);
    return (int)s.n;
}

int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vprintf(fmt, ap);
    va_end(ap);
    return r;
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    (void)f;
    return vprintf(fmt, ap);
}

int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}
