/*
 * nk_timer: exercises the nanokernel's thread switching with the timer
 * baseline (nk_start_timer), independently of the NIC: the message probe is
 * replaced by one that reports a message for every context, so each timer
 * tick rotates to the next thread (round-robin among equal priorities).
 *
 * Three threads (contexts 1, 2, 3) run the same integer + floating-point
 * kernel, each with its own rounding mode (rne, rup, rdn set with fsrm), while
 * being preempted every NK_TIMER_US microseconds.  Hart 0 first computes the
 * reference results without preemption; the last thread to finish checks
 * that every thread got exactly its reference result (so integer registers,
 * f registers and fcsr survived the switches) and that switches happened.
 *
 * Built with -DNANOPU_QEMU (make test-qemu) the NIC context hooks are no-ops,
 * since QEMU has no LNIC CSRs.
 * Exit: 0 ok; 1 a thread's result differs; 2 no context switch happened;
 * 3 thread creation failed.
 */
#include <nanopu.h>
#include <nanokernel.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef NK_TIMER_US
#define NK_TIMER_US 20
#endif
#ifndef WORK_ITERS
#define WORK_ITERS 20000
#endif
#define NTHREADS 3

int nk_probe_context(uint16_t cid)
{
    (void)cid;
    return 1;
}

#ifdef NANOPU_QEMU
void nk_register_context(uint16_t cid, uint8_t prio) { (void)cid; (void)prio; }
void nk_set_context(uint16_t cid, uint8_t prio) { (void)cid; (void)prio; }
#endif

struct result {
    uint64_t isum;
    uint64_t fbits;
    uint64_t fflags;
};

static struct result reference[NTHREADS], got[NTHREADS];
static volatile int done_count;
static uint64_t stacks[NTHREADS][2048] __attribute__((aligned(16)));

/* Integer and FP work with many live values; rm is the dynamic rounding mode. */
static struct result __attribute__((noinline)) work(int id)
{
    static const int rms[NTHREADS] = { 0 /* rne */, 3 /* rup */, 2 /* rdn */ };
    __asm__ volatile ("fsrm %0" :: "r"((uint64_t)rms[id]));
    __asm__ volatile ("csrwi fflags, 0");
    uint64_t a = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1), b = 1, c = 2, d = 3, e = 5, f = 7;
    double x = 1.0 + id, y = 0.1, z = 1.0 / 3.0, w = 2.5;
    for (int i = 0; i < WORK_ITERS; i++) {
        a = a * 6364136223846793005ULL + 1442695040888963407ULL;
        b += a >> 33;
        c ^= b * 31 + (a & 0xffff);
        d = (d << 7) | (d >> 57);
        d += c;
        e -= d ^ (uint64_t)i;
        f += e * 3 + b;
        x = x * 1.0000001 + y;
        y = y * 0.9999999 + z * 1e-9;
        z = z + w * 1e-12;
        w = w * 1.0000000001 + x * 1e-15;
    }
    struct result r;
    r.isum = a ^ b ^ c ^ d ^ e ^ f;
    double s = x + y + z + w;
    __asm__ volatile ("fmv.x.d %0, %1" : "=r"(r.fbits) : "f"(s));
    __asm__ volatile ("frflags %0" : "=r"(r.fflags));
    __asm__ volatile ("fsrm zero");
    return r;
}

static void thread(void *arg)
{
    int id = (int)(uintptr_t)arg;
    got[id] = work(id);
    if (__atomic_add_fetch(&done_count, 1, __ATOMIC_SEQ_CST) < NTHREADS)
        for (;;) /* not `return`: the nanokernel's idle loop uses lnic_idle() */
            __asm__ volatile ("wfi");

    int bad = 0;
    for (int i = 0; i < NTHREADS; i++) {
        int ok = got[i].isum == reference[i].isum && got[i].fbits == reference[i].fbits &&
                 got[i].fflags == reference[i].fflags;
        printf("nk_timer: thread %d: int %016llx fp %016llx flags %02llx %s\n", i,
               (unsigned long long)got[i].isum, (unsigned long long)got[i].fbits,
               (unsigned long long)got[i].fflags, ok ? "ok" : "MISMATCH");
        if (!ok) {
            printf("nk_timer:   reference int %016llx fp %016llx flags %02llx\n",
                   (unsigned long long)reference[i].isum, (unsigned long long)reference[i].fbits,
                   (unsigned long long)reference[i].fflags);
            bad = 1;
        }
    }
    uint64_t switches = nk_switch_count();
    printf("nk_timer: %llu context switches\n", (unsigned long long)switches);
    if (bad)
        exit(1);
    if (switches < NTHREADS)
        exit(2);
    printf("nk_timer: OK\n");
    exit(0);
}

int main(void)
{
    for (int i = 0; i < NTHREADS; i++)
        reference[i] = work(i);
    for (int i = 0; i < NTHREADS; i++)
        if (nk_thread_create((uint16_t)(i + 1), 0, thread, (void *)(uintptr_t)i, NK_STACK_TOP(stacks[i])) != i) {
            printf("nk_timer: FAIL nk_thread_create %d\n", i);
            return 3;
        }
    nk_start_timer(NK_TIMER_US);
}
