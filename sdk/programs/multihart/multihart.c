/*
 * multihart: all harts hammer two shared counters, one with amoadd.d and one
 * with an lr.d/sc.d loop, meet at a barrier, and hart 0 checks the totals.
 *
 * How many harts take part: the machine may run fewer harts than
 * nanopu_ncores, so harts register first.  Registration is an lr.w/sc.w loop
 * on a word whose bit 31 means "closed"; hart 0 waits until nanopu_ncores
 * harts have registered or a spin budget runs out, then closes it with
 * amoor.w, whose old value is the exact participant count.  A hart that
 * comes later parks.
 *
 * Exit: 0 ok; 1 amoadd total wrong; 2 LR/SC total wrong; 3 amo* results wrong;
 * 4 barrier rounds wrong.
 */
#include <nanopu.h>
#include <stdio.h>

#ifndef ITERS
#define ITERS 2000
#endif
#ifndef REGISTER_SPINS
#define REGISTER_SPINS 200000
#endif
#define CLOSED 0x80000000u
#define ROUNDS 8

static volatile uint32_t registration;
static volatile uint64_t hart_mask;
static volatile uint64_t counter_amo;
static volatile uint64_t counter_lrsc;
static volatile uint64_t round_sum[ROUNDS];
static volatile uint32_t round_cnt[ROUNDS];
static volatile uint32_t barrier_errors;
static volatile uint32_t max_word, min_word;
static volatile int go;
static volatile int participants;
static nanopu_barrier_t barrier;

static int register_hart(void)
{
    uint32_t v, fail;
    __asm__ volatile (
        "1: lr.w.aq %0, (%2)\n\t"
        "   bltz %0, 2f\n\t"          /* closed (bit 31 set) */
        "   addiw %1, %0, 1\n\t"
        "   sc.w.rl %1, %1, (%2)\n\t"
        "   bnez %1, 1b\n\t"
        "2:"
        : "=&r"(v), "=&r"(fail) : "r"(&registration) : "memory");
    if (v & CLOSED)
        return -1;
    __atomic_fetch_or(&hart_mask, 1ULL << nanopu_hartid(), __ATOMIC_SEQ_CST);
    return (int)v;
}

static void lrsc_add(volatile uint64_t *p, uint64_t inc)
{
    uint64_t tmp, fail;
    __asm__ volatile (
        "1: lr.d %0, (%2)\n\t"
        "   add %0, %0, %3\n\t"
        "   sc.d %1, %0, (%2)\n\t"
        "   bnez %1, 1b"
        : "=&r"(tmp), "=&r"(fail) : "r"(p), "r"(inc) : "memory");
}

static void work(unsigned long hart)
{
    for (int i = 0; i < ITERS; i++) {
        uint64_t inc = hart + 1;
        __asm__ volatile ("amoadd.d zero, %1, (%0)" :: "r"(&counter_amo), "r"(inc) : "memory");
        lrsc_add(&counter_lrsc, 1);
    }
    /* amomax/amomin on a word with signed and unsigned views */
    uint32_t val = (uint32_t)(hart * 0x11111111u) | 0x80000000u;
    __asm__ volatile ("amomaxu.w zero, %1, (%0)" :: "r"(&max_word), "r"(val) : "memory");
    __asm__ volatile ("amomin.w zero, %1, (%0)" :: "r"(&min_word), "r"(val) : "memory");
    /* barrier rounds: everyone adds to round r, waits, then checks that all did */
    for (int r = 0; r < ROUNDS; r++) {
        __atomic_fetch_add(&round_sum[r], hart + 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&round_cnt[r], 1, __ATOMIC_SEQ_CST);
        nanopu_barrier_wait(&barrier, participants);
        if (round_cnt[r] != (uint32_t)participants)
            __atomic_fetch_add(&barrier_errors, 1, __ATOMIC_SEQ_CST);
    }
}

void thread_entry(int cid, int nc)
{
    (void)nc;
    if (register_hart() < 0)
        return; /* too late: parks */
    while (!go)
        ;
    work((unsigned long)cid);
    nanopu_barrier_wait(&barrier, participants);
}

int main(void)
{
    int ncores = nanopu_ncores;
    register_hart();
    for (long spins = 0; spins < REGISTER_SPINS; spins++)
        if ((int)(registration & ~CLOSED) >= ncores)
            break;
    uint32_t n = __atomic_fetch_or(&registration, CLOSED, __ATOMIC_SEQ_CST) & ~CLOSED;
    participants = (int)n;
    max_word = 0;
    min_word = 0x7fffffff;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    go = 1;

    work(0);
    nanopu_barrier_wait(&barrier, participants);

    uint64_t mask = hart_mask, want_amo = 0, want_round = 0;
    uint32_t want_max = 0, want_min = 0x7fffffff;
    for (unsigned h = 0; h < 64; h++)
        if (mask & (1ULL << h)) {
            want_amo += (uint64_t)ITERS * (h + 1);
            want_round += h + 1;
            uint32_t val = (uint32_t)(h * 0x11111111u) | 0x80000000u;
            if (val > want_max) want_max = val;
            if ((int32_t)val < (int32_t)want_min) want_min = val;
        }
    printf("multihart: %u of %d harts took part (mask 0x%llx)\n", n, ncores, (unsigned long long)mask);
    printf("multihart: amoadd total %llu (want %llu), lr/sc total %llu (want %llu)\n",
           (unsigned long long)counter_amo, (unsigned long long)want_amo,
           (unsigned long long)counter_lrsc, (unsigned long long)n * ITERS);
    if (counter_amo != want_amo)
        return 1;
    if (counter_lrsc != (uint64_t)n * ITERS)
        return 2;
    if (max_word != want_max || min_word != want_min) {
        printf("multihart: FAIL amomaxu.w %08x (want %08x), amomin.w %08x (want %08x)\n",
               max_word, want_max, min_word, want_min);
        return 3;
    }
    if (barrier_errors) {
        printf("multihart: FAIL %u harts left a barrier before all had arrived\n", barrier_errors);
        return 4;
    }
    for (int r = 0; r < ROUNDS; r++)
        if (round_sum[r] != want_round) {
            printf("multihart: FAIL barrier round %d sum %llu (want %llu)\n", r,
                   (unsigned long long)round_sum[r], (unsigned long long)want_round);
            return 4;
        }
    printf("multihart: OK\n");
    return 0;
}
