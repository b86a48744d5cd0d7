/*
 * nanokernel.h - a minimal per-core thread switcher for the nanoPU.
 *
 * Up to NK_MAX_THREADS threads per hart, each bound to one NIC context id
 * (lcurcontext) and priority.  Two scheduling modes:
 *
 *  - nk_start(): hardware thread scheduling (HTS).  The NIC's scheduler raises
 *    machine interrupt 16 (mcause 0x8000000000000010, mie bit 16) and names
 *    the thread to run in ltargetcontext/ltargetpriority; the assembly fast
 *    path (lib/nk_entry.S) saves the running thread into its TCB, writes the
 *    target to lcurcontext/lcurpriority, writes 4 (restart timer) to lniccmd,
 *    restores the target and mrets, without calling C.
 *
 *  - nk_start_timer(period_us): the timer-interrupt scheduling baseline (TIS).
 *    Every period the CLINT timer interrupt (cause 7) runs nk_timer_tick(),
 *    which swaps in the highest-priority thread that has a message.  To see
 *    whether context C has a message it writes C to lcurcontext and reads
 *    lmsgsrdy (the CSR reports the *current* context only); candidates are
 *    scanned round-robin starting after the running thread, so threads of
 *    equal priority take turns; with no message anywhere the running thread
 *    keeps the core.
 *
 * Floating point: a thread's f registers and fcsr are saved at a switch only
 * if mstatus.FS is Dirty, and restored only for threads that have saved FP
 * state (others get fcsr = 0); integer-only threads cost nothing extra.
 *
 * All threads of a hart share its tp (thread-local data is per hart).
 */
#ifndef NANOKERNEL_H
#define NANOKERNEL_H

#define NK_MAX_THREADS 4

/* TCB layout (bytes), shared with lib/nk_entry.S */
#define NK_TCB_REGS    0    /* uint64_t regs[32]: x0..x31 (x0, x30, x31 unused) */
#define NK_TCB_PC      256
#define NK_TCB_CID     264
#define NK_TCB_PRIO    272
#define NK_TCB_KSTACK  280  /* stack for the C slow path (the hart's boot stack) */
#define NK_TCB_HART    288  /* struct nk_hart * */
#define NK_TCB_FPUSED  296
#define NK_TCB_FCSR    304
#define NK_TCB_STATE   312
#define NK_TCB_FREGS   320  /* uint64_t fregs[32] */
#define NK_TCB_SIZE    576

/* Per-hart layout */
#define NK_HART_CUR      0
#define NK_HART_NTHREADS 8
#define NK_HART_PERIOD   16
#define NK_HART_DEADLINE 24
#define NK_HART_SWITCHES 32
#define NK_HART_UNKNOWN  40
#define NK_HART_MODE     48
#define NK_HART_DROPPED  56
#define NK_HART_THREADS  64
#define NK_HART_SIZE     (NK_HART_THREADS + NK_MAX_THREADS * NK_TCB_SIZE)

#ifndef __ASSEMBLER__
#include <stdint.h>

enum nk_state { NK_FREE = 0, NK_RUNNABLE = 1, NK_EXITED = 2 };
enum nk_mode { NK_MODE_NONE = 0, NK_MODE_HTS = 1, NK_MODE_TIMER = 2 };

struct nk_hart;

struct nk_tcb {
    uint64_t regs[32];
    uint64_t pc;
    uint64_t cid;
    uint64_t prio;
    uint64_t kstack;
    struct nk_hart *hart;
    uint64_t fp_used;
    uint64_t fcsr;
    uint64_t state;
    uint64_t fregs[32];
} __attribute__((aligned(64)));

struct nk_hart {
    struct nk_tcb *cur;
    uint64_t nthreads;
    uint64_t period_ticks;   /* timer mode: period in mtime ticks */
    uint64_t deadline;       /* timer mode: current mtimecmp */
    uint64_t switches;       /* number of context switches performed */
    uint64_t unknown_target; /* HTS named a context with no running thread on this hart */
    uint64_t mode;
    uint64_t dropped;        /* messages discarded: for such contexts, or an exited thread's */
    struct nk_tcb threads[NK_MAX_THREADS];
} __attribute__((aligned(64)));

extern struct nk_hart nk_harts[];

/*
 * Create a thread on the calling hart bound to context `cid` with priority
 * `prio` (0 highest): registers the context with the NIC (lnic_add_context)
 * and prepares a frame that starts fn(arg) on the stack whose top (highest
 * address, exclusive) is `stack`.  If fn returns, the thread has exited: it
 * is never switched to again, its slot may be reused by a later
 * nk_thread_create, and messages for its context are discarded (counted in
 * nk_hart.dropped; the prototype cannot unregister a context).  A context the
 * scheduler names that has no running thread on this hart (registered with
 * lnic_add_context alone, or an exited thread's) is made idle, its messages
 * discarded, and the running thread resumed (nk_hart.unknown_target counts
 * these).  Called from a running thread, keeps that thread's current
 * priority (a demotion by the scheduler stays).
 * Returns the thread's index (0..NK_MAX_THREADS-1) or -1.
 */
int nk_thread_create(uint16_t cid, uint8_t prio, void (*fn)(void *), void *arg, void *stack);

/* Stack top of a stack array, for nk_thread_create. */
#define NK_STACK_TOP(array) ((void *)((char *)(array) + sizeof(array)))

/* Enable the scheduler interrupt (mie bit 16, mstatus.MIE) and run thread 0. */
void nk_start(void) __attribute__((noreturn));

/* Timer-interrupt baseline: swap threads every period_us (CLINT, NK_MTIME_HZ). */
void nk_start_timer(uint64_t period_us) __attribute__((noreturn));

/* Context id of the running thread on this hart, and the switch count. */
uint16_t nk_current_context(void);
uint64_t nk_switch_count(void);

/*
 * NIC hooks, weak, used by everything except the assembly fast path (which
 * always uses the CSRs directly):
 *   nk_register_context  lnic_add_context(cid, prio)
 *   nk_set_context       lcurcontext = cid, lcurpriority = prio
 *   nk_probe_context     lcurcontext = cid; return lmsgsrdy != 0 (timer baseline)
 *   nk_current_priority  lcurpriority
 * A program may define its own, e.g. to test thread switching without a NIC.
 */
void nk_register_context(uint16_t cid, uint8_t prio);
void nk_set_context(uint16_t cid, uint8_t prio);
int nk_probe_context(uint16_t cid);
uint8_t nk_current_priority(void);

/* Assembly entry points (lib/nk_entry.S). */
void nk_trap_entry(void);
void nk_launch(struct nk_tcb *t) __attribute__((noreturn));

/* C slow path called by nk_trap_entry for every trap except interrupt 16;
 * returns the thread to resume. */
struct nk_tcb *nk_trap(uintptr_t cause, uintptr_t epc, struct nk_tcb *cur);

/* Called by nk_trap_entry when the scheduler names context `cid`, which no
 * runnable thread of this hart owns. */
void nk_orphan_context(struct nk_hart *h, uint64_t cid);

/* An exited thread's cid in its TCB: never equal to a 16-bit context id,
 * so the interrupt-16 fast path does not find it. */
#define NK_CID_EXITED 0x10000UL

#endif /* __ASSEMBLER__ */
#endif /* NANOKERNEL_H */
