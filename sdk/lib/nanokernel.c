/*
 * nanokernel.c - thread creation, start-up and the C slow path of the
 * nanokernel (see include/nanokernel.h; the fast path is lib/nk_entry.S).
 */
#include <nanopu.h>
#include <nanokernel.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(offsetof(struct nk_tcb, regs) == NK_TCB_REGS, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, pc) == NK_TCB_PC, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, cid) == NK_TCB_CID, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, prio) == NK_TCB_PRIO, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, kstack) == NK_TCB_KSTACK, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, hart) == NK_TCB_HART, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, fp_used) == NK_TCB_FPUSED, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, fcsr) == NK_TCB_FCSR, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, state) == NK_TCB_STATE, "tcb layout");
_Static_assert(offsetof(struct nk_tcb, fregs) == NK_TCB_FREGS, "tcb layout");
_Static_assert(sizeof(struct nk_tcb) == NK_TCB_SIZE, "tcb layout");
_Static_assert(offsetof(struct nk_hart, cur) == NK_HART_CUR, "hart layout");
_Static_assert(offsetof(struct nk_hart, nthreads) == NK_HART_NTHREADS, "hart layout");
_Static_assert(offsetof(struct nk_hart, period_ticks) == NK_HART_PERIOD, "hart layout");
_Static_assert(offsetof(struct nk_hart, deadline) == NK_HART_DEADLINE, "hart layout");
_Static_assert(offsetof(struct nk_hart, switches) == NK_HART_SWITCHES, "hart layout");
_Static_assert(offsetof(struct nk_hart, unknown_target) == NK_HART_UNKNOWN, "hart layout");
_Static_assert(offsetof(struct nk_hart, mode) == NK_HART_MODE, "hart layout");
_Static_assert(offsetof(struct nk_hart, dropped) == NK_HART_DROPPED, "hart layout");
_Static_assert(offsetof(struct nk_hart, threads) == NK_HART_THREADS, "hart layout");
_Static_assert(sizeof(struct nk_hart) == NK_HART_SIZE, "hart layout");

struct nk_hart nk_harts[NANOPU_MAX_HARTS];

/* ---- NIC hooks (weak: a test may replace them, see nanokernel.h) ---- */

__attribute__((weak)) void nk_register_context(uint16_t cid, uint8_t prio)
{
    lnic_add_context(cid, prio);
}

__attribute__((weak)) void nk_set_context(uint16_t cid, uint8_t prio)
{
    write_csr(CSR_LCURCONTEXT, cid);
    write_csr(CSR_LCURPRIORITY, prio);
    /* Restart the message-processing timer for the thread switched in, as
     * the interrupt-16 fast path does (lniccmd bit 2). */
    write_csr(0x054, 4);
}

__attribute__((weak)) uint8_t nk_current_priority(void)
{
    return (uint8_t)read_csr(CSR_LCURPRIORITY);
}

__attribute__((weak)) int nk_probe_context(uint16_t cid)
{
    write_csr(CSR_LCURCONTEXT, cid);
    return read_csr(CSR_LMSGSRDY) != 0;
}

static struct nk_hart *this_hart(void)
{
    return &nk_harts[nanopu_hartid()];
}

/* Reads and discards one message of the current context (one is ready).
 * The runtime's only use of netRX (tools/check-regs.sh allows it here). */
__attribute__((noinline)) void nk_discard_message(struct nk_hart *h);
__attribute__((noinline)) void nk_discard_message(struct nk_hart *h)
{
    uint64_t hdr = lnic_read();
    for (uint32_t i = lnic_hdr_words(hdr); i > 0; i--)
        (void)lnic_read();
    h->dropped++;
}

/* Where a thread goes when its function returns.  The fast path no longer
 * finds it (NK_CID_EXITED); until the scheduler switches away, messages for
 * its context are discarded here. */
static void __attribute__((noreturn)) nk_thread_exit(void)
{
    struct nk_hart *h = this_hart();
    unsigned long was = clear_csr(mstatus, MSTATUS_MIE);
    h->cur->state = NK_EXITED;
    h->cur->cid |= NK_CID_EXITED;
    if (was & MSTATUS_MIE)
        set_csr(mstatus, MSTATUS_MIE);
    for (;;) {
        lnic_wait();
        nk_discard_message(h);
    }
}

void nk_orphan_context(struct nk_hart *h, uint64_t cid)
{
    uint64_t cur_cid = read_csr(CSR_LCURCONTEXT);
    uint64_t cur_prio = read_csr(CSR_LCURPRIORITY);
    h->unknown_target++;
    /* While it is current, x30 reads its RX FIFO and lnicucmd applies to it. */
    write_csr(CSR_LCURCONTEXT, cid);
    while (lnic_has_msg())
        nk_discard_message(h);
    lnic_idle();
    write_csr(CSR_LCURCONTEXT, cur_cid);
    write_csr(CSR_LCURPRIORITY, cur_prio);
}

int nk_thread_create(uint16_t cid, uint8_t prio, void (*fn)(void *), void *arg, void *stack)
{
    struct nk_hart *h = this_hart();
    if (fn == NULL || stack == NULL)
        return -1;

    unsigned long was = clear_csr(mstatus, MSTATUS_MIE);
    int idx = -1;
    /* A live thread of that context already: refuse.  Else reuse an exited
     * thread's slot (its own context first) or take a new one. */
    for (unsigned i = 0; i < h->nthreads; i++) {
        struct nk_tcb *t = &h->threads[i];
        if (t->state == NK_EXITED && (idx < 0 || (t->cid & 0xffff) == cid))
            idx = (int)i;
        if (t->state != NK_EXITED && t->cid == cid) {
            idx = -1;
            goto out;
        }
    }
    if (idx < 0 && h->nthreads < NK_MAX_THREADS)
        idx = (int)h->nthreads;
    if (idx >= 0) {
        struct nk_tcb *t = &h->threads[idx];
        memset(t, 0, sizeof(*t));
        uintptr_t gp, tp;
        __asm__ volatile ("mv %0, gp" : "=r"(gp));
        __asm__ volatile ("mv %0, tp" : "=r"(tp));
        t->regs[1] = (uintptr_t)nk_thread_exit; /* ra */
        t->regs[2] = (uintptr_t)stack & ~(uintptr_t)15; /* sp */
        t->regs[3] = gp;
        t->regs[4] = tp;
        t->regs[10] = (uintptr_t)arg; /* a0 */
        t->pc = (uintptr_t)fn;
        t->cid = cid;
        t->prio = prio;
        t->hart = h;
        t->state = NK_RUNNABLE;

        if (h->cur) {
            /* Called from a running thread: give it its own context back, at
             * its current priority (the scheduler may have demoted it since
             * its TCB was last written). */
            h->cur->prio = nk_current_priority();
        }
        nk_register_context(cid, prio);
        if (h->cur)
            nk_set_context((uint16_t)h->cur->cid, (uint8_t)h->cur->prio);
        if ((unsigned)idx == h->nthreads)
            __atomic_store_n(&h->nthreads, h->nthreads + 1, __ATOMIC_RELEASE);
    }
out:
    if (was & MSTATUS_MIE)
        set_csr(mstatus, MSTATUS_MIE);
    return idx;
}

static void nk_prepare(struct nk_hart *h, uint64_t mode)
{
    if (h->nthreads == 0) {
        printf("nanokernel: nk_start on hart %lu with no thread\n", nanopu_hartid());
        exit(1);
    }
    uintptr_t sp;
    __asm__ volatile ("mv %0, sp" : "=r"(sp));
    sp = (sp - 64) & ~(uintptr_t)15; /* this frame is never returned to */
    for (unsigned i = 0; i < h->nthreads; i++)
        h->threads[i].kstack = sp;
    h->mode = mode;
    h->cur = &h->threads[0];
    nk_set_context((uint16_t)h->cur->cid, (uint8_t)h->cur->prio);
    /* FS = Clean: from now on FS is Clean or Dirty, never Initial/Off. */
    clear_csr(mstatus, MSTATUS_FS);
    set_csr(mstatus, MSTATUS_FS_CLEAN);
    __asm__ volatile ("fscsr zero");
    clear_csr(mstatus, MSTATUS_FS_INITIAL); /* Dirty -> Clean */
    write_csr(mtvec, (uintptr_t)nk_trap_entry);
}

void nk_start(void)
{
    struct nk_hart *h = this_hart();
    nk_prepare(h, NK_MODE_HTS);
    set_csr(mie, MIP_LNIC);
    nk_launch(h->cur);
}

void nk_start_timer(uint64_t period_us)
{
    struct nk_hart *h = this_hart();
    nk_prepare(h, NK_MODE_TIMER);
    uint64_t ticks = period_us * NK_MTIME_HZ / 1000000UL;
    h->period_ticks = ticks ? ticks : 1;
    h->deadline = clint_mtime() + h->period_ticks;
    clint_set_mtimecmp(nanopu_hartid(), h->deadline);
    set_csr(mie, MIP_MTIP);
    nk_launch(h->cur);
}

/* Timer baseline: pick the highest-priority thread with a message ready. */
static struct nk_tcb *nk_timer_tick(struct nk_hart *h, struct nk_tcb *cur)
{
    uint64_t now = clint_mtime();
    uint64_t next = h->deadline + h->period_ticks;
    if (next <= now)
        next = now + h->period_ticks;
    h->deadline = next;
    clint_set_mtimecmp(nanopu_hartid(), next);

    unsigned n = (unsigned)h->nthreads;
    unsigned ci = (unsigned)(cur - h->threads);
    struct nk_tcb *best = NULL;
    for (unsigned k = 1; k <= n; k++) {
        struct nk_tcb *t = &h->threads[(ci + k) % n];
        if (t->state != NK_RUNNABLE)
            continue;
        if (nk_probe_context((uint16_t)t->cid) && (best == NULL || t->prio < best->prio))
            best = t;
    }
    if (best == NULL)
        best = cur;
    nk_set_context((uint16_t)best->cid, (uint8_t)best->prio);
    return best;
}

struct nk_tcb *nk_trap(uintptr_t cause, uintptr_t epc, struct nk_tcb *cur)
{
    struct nk_hart *h = cur->hart;
    if (cause == MCAUSE_MTIMER_IRQ && h->mode == NK_MODE_TIMER)
        return nk_timer_tick(h, cur);
    /* Anything else goes to the program's (or the SDK's default) handler. */
    cur->pc = handle_trap(cause, epc, (uintptr_t *)cur->regs);
    return cur;
}

uint16_t nk_current_context(void)
{
    struct nk_hart *h = this_hart();
    return h->cur ? (uint16_t)h->cur->cid : 0;
}

uint64_t nk_switch_count(void)
{
    return this_hart()->switches;
}
