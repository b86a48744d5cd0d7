/*
 * ooo_micro: microbenchmarks with known answers for a core's timing model
 * (docs/ooo-core.md, "Validation"). Each section is timed with rdcycle and
 * rdinstret around it (CSR reads drain an out-of-order window first, so
 * the cycles count every instruction of the section).
 *
 * - alu_indep: 8 independent chains of 1-cycle adds (32 adds and 2 loop
 *   instructions per iteration): IPC reaches the core's width (or its ALU
 *   ports), 1 on an in-order single-issue core.
 * - alu_dep: one chain of 32 dependent adds per iteration: 1 cycle per add
 *   whatever the width.
 * - chase k=K: K independent pointer chases through one random cycle of
 *   2^18 words (2 MB, four times the nanoPU's 512 KB L2), 32768 loads in
 *   all: cycles per load fall as 1/K until the L1D's MSHRs or the ROB
 *   limit the misses in flight; an in-order blocking cache does not
 *   overlap them at all.
 * - branch: a loop whose branch alternates taken/not taken (a bimodal
 *   predictor misses every one) against the same loop with the branch
 *   always taken: the difference per iteration is what a misprediction
 *   costs.
 *
 * Output (one line each; values x100 where fractional):
 *   ooo_micro: alu_indep ipc_x100=...
 *   ooo_micro: alu_dep cycles_per_add_x100=...
 *   ooo_micro: chase k=K cycles_per_load_x100=...
 *   ooo_micro: branch alternating_x100=... taken_x100=... (cycles per iteration)
 * Exit: 0 ok, 1 a chase came back wrong.
 * Cost: about 4 M instructions (most of them building the cycle).
 */
#include <stdint.h>
#include <stdio.h>

#define WORDS (1u << 18)
#define CHASE_LOADS 32768u
#define ALU_ITERS 2000u
#define BRANCH_ITERS 4000u

static uint64_t next[WORDS];
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rdcycle(void)
{
    uint64_t c;
    __asm__ volatile("rdcycle %0" : "=r"(c));
    return c;
}

static inline uint64_t rdinstret(void)
{
    uint64_t c;
    __asm__ volatile("rdinstret %0" : "=r"(c));
    return c;
}

#define ADD8 "addi %1,%1,1; addi %2,%2,1; addi %3,%3,1; addi %4,%4,1;" \
             "addi %5,%5,1; addi %6,%6,1; addi %7,%7,1; addi %8,%8,1;"

static void alu_indep(void)
{
    uint64_t n = ALU_ITERS, a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0;
    uint64_t i0 = rdinstret(), c0 = rdcycle();
    __asm__ volatile("1:" ADD8 ADD8 ADD8 ADD8 "addi %0,%0,-1; bnez %0,1b"
                     : "+r"(n), "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f), "+r"(g),
                       "+r"(h));
    uint64_t c1 = rdcycle(), i1 = rdinstret();
    printf("ooo_micro: alu_indep ipc_x100=%lu\n",
           (unsigned long)((i1 - i0) * 100 / (c1 - c0)));
}

#define DEP8 "addi %1,%1,1; addi %1,%1,1; addi %1,%1,1; addi %1,%1,1;" \
             "addi %1,%1,1; addi %1,%1,1; addi %1,%1,1; addi %1,%1,1;"

static void alu_dep(void)
{
    uint64_t n = ALU_ITERS, a = 0;
    uint64_t c0 = rdcycle();
    __asm__ volatile("1:" DEP8 DEP8 DEP8 DEP8 "addi %0,%0,-1; bnez %0,1b"
                     : "+r"(n), "+r"(a));
    uint64_t c1 = rdcycle();
    printf("ooo_micro: alu_dep cycles_per_add_x100=%lu\n",
           (unsigned long)((c1 - c0) * 100 / (32u * ALU_ITERS)));
}

/* Positions 1/16 of the cycle apart: chains started there never meet. */
static uint64_t starts[16];

#define CHASE(K)                                                        \
    static uint64_t chase##K(void)                                      \
    {                                                                   \
        uint64_t p[K];                                                  \
        for (int k = 0; k < K; k++)                                     \
            p[k] = starts[k * (16 / K)];                                \
        for (uint64_t s = 0; s < CHASE_LOADS / K; s++) {                \
            /* Unrolled: the chains live in registers. */               \
            _Pragma("GCC unroll 16") for (int k = 0; k < K; k++)        \
                p[k] = next[p[k]];                                      \
        }                                                               \
        uint64_t x = 0;                                                 \
        for (int k = 0; k < K; k++)                                     \
            x ^= p[k];                                                  \
        return x;                                                       \
    }
CHASE(1)
CHASE(2)
CHASE(4)
CHASE(8)
CHASE(16)

static int chase(int k, uint64_t (*run)(void))
{
    uint64_t c0 = rdcycle();
    uint64_t x = run();
    uint64_t c1 = rdcycle();
    /* Each chain ends CHASE_LOADS / K steps after its start. */
    uint64_t want = 0;
    for (int j = 0; j < k; j++) {
        uint64_t p = starts[j * (16 / k)];
        for (uint64_t s = 0; s < CHASE_LOADS / k; s++)
            p = next[p];
        want ^= p;
    }
    if (x != want) {
        printf("ooo_micro: chase k=%d came back wrong\n", k);
        return 1;
    }
    printf("ooo_micro: chase k=%d cycles_per_load_x100=%lu\n", k,
           (unsigned long)((c1 - c0) * 100 / CHASE_LOADS));
    return 0;
}

static uint64_t branch_loop(uint64_t mask)
{
    uint64_t n = BRANCH_ITERS, acc = 0, t;
    uint64_t c0 = rdcycle();
    __asm__ volatile("1: and %2,%0,%3; beqz %2,2f; addi %1,%1,1;"
                     "2: addi %0,%0,-1; bnez %0,1b"
                     : "+r"(n), "+r"(acc), "=&r"(t)
                     : "r"(mask));
    uint64_t c1 = rdcycle();
    return (c1 - c0) * 100 / BRANCH_ITERS;
}

int main(void)
{
    alu_indep();
    alu_dep();
    for (uint64_t i = 0; i < WORDS; i++)
        next[i] = i;
    /* Sattolo: a uniformly random permutation with a single cycle. */
    for (uint64_t i = WORDS - 1; i > 0; i--) {
        uint64_t j = rng() % i;
        uint64_t t = next[i];
        next[i] = next[j];
        next[j] = t;
    }
    uint64_t p = 0;
    for (uint64_t s = 0; s < WORDS; s++) {
        if (s % (WORDS / 16) == 0)
            starts[s / (WORDS / 16)] = p;
        p = next[p];
    }
    if (chase(1, chase1) || chase(2, chase2) || chase(4, chase4) || chase(8, chase8) ||
        chase(16, chase16))
        return 1;
    /* Warm the predictor's entry, then measure. */
    branch_loop(0);
    uint64_t taken = branch_loop(0);
    uint64_t alternating = branch_loop(1);
    printf("ooo_micro: branch alternating_x100=%lu taken_x100=%lu\n", (unsigned long)alternating,
           (unsigned long)taken);
    return 0;
}
