/*
 * stream: a STREAM-like memory bandwidth kernel (after McCalpin's STREAM):
 * copy (c = a), scale (b = 3 c), add (c = a + b) and triad (a = b + 3 c)
 * over three arrays of N doubles, each far larger than the nanoPU's 512 KB
 * L2 (N = 2^17: 1 MB each), split across every hart that takes part.
 *
 * Usage: stream [HARTS] (default: as many as come, up to the SDK's
 * NANOPU_MAX_HARTS). Harts register (an atomic counter closed by hart 0
 * once HARTS came or a spin budget ran out; later harts park), meet at a barrier
 * before and after each kernel, and hart 0 times the kernel with rdtime
 * (the CLINT's mtime: 1 MHz on the nanoPU, so bytes per tick are MB/s) and
 * rdcycle. Bytes are counted as STREAM does: 16 per element for copy and
 * scale, 24 for add and triad (write-allocate reads and write-backs are
 * extra traffic the count leaves out).
 *
 * Output, one line per kernel:
 *   stream: copy 1234 MB/s (2097152 bytes, 1699 us, 5436800 cycles)
 * then "stream: harts H, N elements". Exit: 0 ok, 1 wrong results, 2 bad
 * argument.
 */
#include <nanopu.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef N
#define N (1u << 17)
#endif
#ifndef REGISTER_SPINS
#define REGISTER_SPINS 20000
#endif
#define CLOSED 0x80000000u

static double a[N], b[N], c[N];
static volatile uint32_t registration;
static volatile int go;
static volatile int participants;
static nanopu_barrier_t barrier;

/* Every hart the SDK supports may take part. */
const int nanopu_ncores = NANOPU_MAX_HARTS;

static inline uint64_t rdtime_us(void)
{
    uint64_t t;
    __asm__ volatile ("rdtime %0" : "=r"(t));
    return t;
}

/* The slice [lo, hi) of hart `id` among `n`, in whole 64-byte lines. */
static void slice(int id, int n, uint32_t *lo, uint32_t *hi)
{
    uint32_t lines = N / 8;
    *lo = (uint32_t)((uint64_t)lines * id / n) * 8;
    *hi = (uint32_t)((uint64_t)lines * (id + 1) / n) * 8;
}

static void kernel(int k, int id, int n)
{
    uint32_t lo, hi;
    slice(id, n, &lo, &hi);
    const double s = 3.0;
    switch (k) {
    case 0: for (uint32_t j = lo; j < hi; j++) c[j] = a[j]; break;
    case 1: for (uint32_t j = lo; j < hi; j++) b[j] = s * c[j]; break;
    case 2: for (uint32_t j = lo; j < hi; j++) c[j] = a[j] + b[j]; break;
    default: for (uint32_t j = lo; j < hi; j++) a[j] = b[j] + s * c[j]; break;
    }
}

static void init(int id, int n)
{
    uint32_t lo, hi;
    slice(id, n, &lo, &hi);
    for (uint32_t j = lo; j < hi; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
}

static void run(int id, int n, uint64_t *us, uint64_t *cyc)
{
    init(id, n);
    for (int k = 0; k < 4; k++) {
        nanopu_barrier_wait(&barrier, n);
        uint64_t t0 = rdtime_us(), c0 = rdcycle();
        kernel(k, id, n);
        nanopu_barrier_wait(&barrier, n);
        if (us) {
            us[k] = rdtime_us() - t0;
            cyc[k] = rdcycle() - c0;
        }
    }
}

void thread_entry(int cid, int nc)
{
    (void)nc;
    uint32_t v = __atomic_fetch_add(&registration, 1, __ATOMIC_SEQ_CST);
    if (v & CLOSED)
        return; /* came too late: park */
    while (!go)
        ;
    run(cid, participants, 0, 0);
}

int main(int argc, char **argv)
{
    int want = argc > 1 ? atoi(argv[1]) : NANOPU_MAX_HARTS;
    if (want < 1 || want > NANOPU_MAX_HARTS) {
        printf("stream: HARTS must be between 1 and %d\n", NANOPU_MAX_HARTS);
        return 2;
    }
    __atomic_fetch_add(&registration, 1, __ATOMIC_SEQ_CST);
    for (long spins = 0; spins < REGISTER_SPINS; spins++)
        if ((int)(registration & ~CLOSED) >= want)
            break;
    int n = (int)(__atomic_fetch_or(&registration, CLOSED, __ATOMIC_SEQ_CST) & ~CLOSED);
    participants = n;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    go = 1;

    static const char *const names[4] = {"copy", "scale", "add", "triad"};
    static const uint64_t per_elem[4] = {16, 16, 24, 24};
    uint64_t us[4], cyc[4];
    run(0, n, us, cyc);
    for (int k = 0; k < 4; k++) {
        uint64_t bytes = per_elem[k] * N;
        uint64_t t = us[k] ? us[k] : 1;
        printf("stream: %s %lu MB/s (%lu bytes, %lu us, %lu cycles)\n", names[k],
               (unsigned long)(bytes / t), (unsigned long)bytes, (unsigned long)us[k],
               (unsigned long)cyc[k]);
    }
    printf("stream: harts %d, %u elements\n", n, (unsigned)N);
    /* After one pass: c = 1, b = 3, c = 4, a = 3 + 12 = 15. */
    for (uint32_t j = 0; j < N; j++)
        if (a[j] != 15.0 || b[j] != 3.0 || c[j] != 4.0) {
            printf("stream: FAIL element %u: a %d b %d c %d\n", (unsigned)j, (int)a[j],
                   (int)b[j], (int)c[j]);
            return 1;
        }
    return 0;
}
