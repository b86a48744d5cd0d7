/*
 * gopt.h: what the G-Opt microbenchmarks (programs/gopt_*) share.
 *
 * G-Opt (Kalia et al., "Raising the Bar for Using GPUs in Software Packet
 * Processing", NSDI'15, §3) turns a loop of independent lookups into a
 * batch of B lookups run as coroutines: before each expensive memory access
 * a lookup prefetches the address, saves where it stopped (a label) and
 * switches to the next lookup of the batch ("Prefetch, Save, and Switch",
 * G_PSS below, Fig. 7 of the paper); the batch ends when every lookup has
 * reached its end. Each program holds a naive version and a version written
 * in that form by hand, runs the naive one and then G-Opt at each batch size
 * given, and prints one line per run:
 *
 *   NAME VERSION batch=B lookups=N cycles=C instret=I checksum=0xS cycles_per_lookup=X.YY
 *
 * Command line: NAME [SIZE [LOOKUPS [B1,B2,...]]] (SIZE: program-specific).
 * Exit: 0 ok, 1 a G-Opt checksum differs from the naive one, 2 bad arguments.
 */
#ifndef GOPT_H
#define GOPT_H

#include <nanopu.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Largest batch (the per-lookup state arrays are this long). */
#define GOPT_MAX_BATCH 64
/* Most batch sizes one run takes. */
#define GOPT_MAX_RUNS 16
/*
 * Bytes read between runs so that each starts with cold caches: 8x the
 * nanoPU's 512 KB L2 (a larger LLC keeps some of the previous run's lines).
 */
#ifndef GOPT_FLUSH_BYTES
#define GOPT_FLUSH_BYTES (4u << 20)
#endif

static inline uint64_t gopt_cycles(void)
{
    uint64_t c;
    __asm__ volatile("rdcycle %0" : "=r"(c));
    return c;
}

static inline uint64_t gopt_instret(void)
{
    uint64_t c;
    __asm__ volatile("rdinstret %0" : "=r"(c));
    return c;
}

/* splitmix64: the workloads' random numbers (deterministic). */
static inline uint64_t gopt_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/*
 * Memory past the image and the harts' stacks, 1 MiB aligned. Nothing wrote
 * it, so it is zero without a zeroing loop (a large .bss would be zeroed by
 * crt.S, one store per word), and the simulator backs it on first touch.
 */
extern char _end[];
static inline void *gopt_arena(void)
{
    uintptr_t a = (uintptr_t)_end + ((uintptr_t)NANOPU_MAX_HARTS << NANOPU_STACK_SHIFT);
    return (void *)((a + (1u << 20) - 1) & ~(uintptr_t)((1u << 20) - 1));
}

/* Reads GOPT_FLUSH_BYTES at `buf`, a line at a time (evicts the tables). */
static inline uint64_t gopt_flush(const void *buf)
{
    const volatile uint64_t *p = (const volatile uint64_t *)buf;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < GOPT_FLUSH_BYTES / 8; i += 8)
        sum += p[i];
    return sum;
}

struct gopt_args {
    unsigned long size;
    unsigned lookups;
    unsigned runs;
    unsigned batch[GOPT_MAX_RUNS];
};

/* Parses NAME [SIZE [LOOKUPS [B1,B2,...]]]; prints what is wrong and returns -1. */
static inline int gopt_parse(int argc, char **argv, struct gopt_args *a, unsigned long size,
                             unsigned lookups, unsigned long max_size, unsigned max_lookups)
{
    a->size = size;
    a->lookups = lookups;
    a->runs = 1;
    a->batch[0] = 8;
    if (argc > 1)
        a->size = strtoul(argv[1], 0, 0);
    if (argc > 2)
        a->lookups = (unsigned)strtoul(argv[2], 0, 0);
    if (argc > 3) {
        char *s = argv[3];
        a->runs = 0;
        while (*s && a->runs < GOPT_MAX_RUNS) {
            char *end;
            unsigned long b = strtoul(s, &end, 0);
            if (end == s || b == 0 || b > GOPT_MAX_BATCH) {
                printf("%s: batch sizes must be 1..%d, comma-separated: %s\n", argv[0],
                       GOPT_MAX_BATCH, argv[3]);
                return -1;
            }
            a->batch[a->runs++] = (unsigned)b;
            s = *end == ',' ? end + 1 : end;
        }
    }
    if (a->size == 0 || a->size > max_size || a->lookups == 0 || a->lookups > max_lookups) {
        printf("%s: SIZE must be 1..%lu and LOOKUPS 1..%u (got %lu, %u)\n", argv[0], max_size,
               max_lookups, a->size, a->lookups);
        return -1;
    }
    return 0;
}

static inline void gopt_report(const char *name, const char *version, unsigned batch,
                               unsigned lookups, uint64_t cycles, uint64_t instret,
                               uint64_t checksum)
{
    uint64_t x100 = cycles * 100 / lookups;
    printf("%s %s batch=%u lookups=%u cycles=%lu instret=%lu checksum=0x%lx "
           "cycles_per_lookup=%lu.%02lu\n",
           name, version, batch, lookups, (unsigned long)cycles, (unsigned long)instret,
           (unsigned long)checksum, (unsigned long)(x100 / 100), (unsigned long)(x100 % 100));
}

/*
 * G-Opt's control state in a function: g_n lookups in the batch, I the one
 * running, g_labels[i] where lookup i resumes, g_mask the finished ones.
 */
#define G_STATE(n)                                                                   \
    unsigned g_n = (n), I = 0;                                                       \
    uint64_t g_mask = 0, g_all = g_n == 64 ? ~0ULL : (1ULL << g_n) - 1;              \
    void *g_labels[GOPT_MAX_BATCH];                                                  \
    for (unsigned g_i = 0; g_i < g_n; g_i++)                                         \
        g_labels[g_i] = &&g_label_0

/* Prefetch, Save label, and Switch lookup (G-Opt Fig. 7, G_PSS). */
#define G_PSS(addr, label)                                                           \
    do {                                                                             \
        nanopu_prefetch_r(addr);                                                     \
        g_labels[I] = &&label;                                                       \
        I = I + 1 == g_n ? 0 : I + 1;                                                \
        goto *g_labels[I];                                                           \
    } while (0)

/* The end of a lookup: mark it done; leave for `done` when all are, else switch. */
#define G_END(done)                                                                  \
    g_end:                                                                           \
    g_labels[I] = &&g_end;                                                           \
    g_mask |= 1ULL << I;                                                             \
    if (g_mask == g_all)                                                             \
        goto done;                                                                   \
    I = I + 1 == g_n ? 0 : I + 1;                                                    \
    goto *g_labels[I]

/*
 * Runs the naive version and then G-Opt at every batch size of `a`, with
 * cold caches each time (flush at `flush_buf`); prints the lines. Returns
 * the exit code.
 */
#define GOPT_RUN_ALL(name, a, flush_buf, naive_call, gopt_call_of_b)                  \
    ({                                                                               \
        int rc_ = 0;                                                                 \
        gopt_flush(flush_buf);                                                       \
        uint64_t c0_ = gopt_cycles(), i0_ = gopt_instret();                          \
        uint64_t ref_ = (naive_call);                                                \
        uint64_t c1_ = gopt_cycles(), i1_ = gopt_instret();                          \
        gopt_report(name, "naive", 1, (a)->lookups, c1_ - c0_, i1_ - i0_, ref_);     \
        for (unsigned r_ = 0; r_ < (a)->runs; r_++) {                                \
            unsigned B = (a)->batch[r_];                                             \
            gopt_flush(flush_buf);                                                   \
            c0_ = gopt_cycles();                                                     \
            i0_ = gopt_instret();                                                    \
            uint64_t sum_ = (gopt_call_of_b);                                        \
            c1_ = gopt_cycles();                                                     \
            i1_ = gopt_instret();                                                    \
            gopt_report(name, "gopt", B, (a)->lookups, c1_ - c0_, i1_ - i0_, sum_); \
            if (sum_ != ref_) {                                                      \
                printf("%s: G-Opt (batch %u) checksum differs from the naive one\n", \
                       name, B);                                                     \
                rc_ = 1;                                                             \
            }                                                                        \
        }                                                                            \
        rc_;                                                                         \
    })

#endif /* GOPT_H */
