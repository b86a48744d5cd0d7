/*
 * nk_fixes: the nanokernel with contexts that no thread runs, and with a
 * demoted thread.  Driven by crates/node/tests/nanokernel.rs, which puts
 * messages into the RX FIFOs (one hart, no NIC):
 *
 *  1. context 9 is registered with lnic_add_context alone: when the
 *     scheduler names it, the kernel makes it idle and resumes the running
 *     thread (it used to switch back for ever, a livelock);
 *  2. thread 2 exits at once; a message for its context is discarded without
 *     switching to it (the exited thread used to take the core for good);
 *  3. thread 1 reads a message and keeps it in progress until the message
 *     timer demotes it to priority 1, then creates a thread: its priority
 *     stays 1 (it used to be written back as 0), and the new thread takes
 *     thread 2's slot.
 *
 * Exit code: 0 if all holds, else the sum of: 1 context 9 never named,
 * 2 no message discarded, 4 the demotion undone, 8 the exited slot not
 * reused, 16 nk_thread_create failed, 32 never demoted.
 */
#include <nanopu.h>
#include <nanokernel.h>
#include <stdlib.h>

static uint64_t stacks[3][1024] __attribute__((aligned(16)));

static void exits_at_once(void *arg)
{
    (void)arg;
}

static void waits(void *arg)
{
    (void)arg;
    for (;;)
        lnic_wait();
}

static void demoted(void *arg)
{
    (void)arg;
    struct nk_hart *h = &nk_harts[0];
    /* Idle: the scheduler names context 9, then runs thread 2, which exits.
     * The switch comes a few instructions after the idle report (the
     * prototype's core does not flush after LNIC CSR writes, and the
     * scheduler raises its interrupt two cycles after the write): look at
     * what happened only once resumed, by the harness's message for
     * context 1. */
    lnic_idle();
    lnic_wait();
    __asm__ volatile ("" ::: "memory");
    int code = h->unknown_target >= 1 ? 0 : 1;
    uint64_t hdr = lnic_read();
    for (uint32_t i = lnic_hdr_words(hdr); i > 0; i--)
        (void)lnic_read();
    /* The message is in progress: spin until the timer demotes us.  The
     * harness's message for exited thread 2's context then preempts us, and
     * is discarded. */
    for (int i = 0; i < 1000000 && read_csr(CSR_LCURPRIORITY) == 0; i++)
        __asm__ volatile ("" ::: "memory");
    if (read_csr(CSR_LCURPRIORITY) != 1)
        code |= 32;
    for (int i = 0; i < 1000000 && h->dropped == 0; i++)
        __asm__ volatile ("" ::: "memory");
    if (h->dropped != 1)
        code |= 2;
    unsigned long was = clear_csr(mstatus, MSTATUS_MIE);
    int idx = nk_thread_create(3, 0, waits, 0, NK_STACK_TOP(stacks[2]));
    uint64_t prio = read_csr(CSR_LCURPRIORITY);
    if (was & MSTATUS_MIE)
        set_csr(mstatus, MSTATUS_MIE);
    if (idx < 0)
        code |= 16;
    else if (idx != 1)
        code |= 8;
    if (prio != 1)
        code |= 4;
    exit(code);
}

int main(void)
{
    write_csr(CSR_LMSGCYCLES, 2000);
    lnic_add_context(9, 0);
    if (nk_thread_create(1, 0, demoted, 0, NK_STACK_TOP(stacks[0])) != 0 ||
        nk_thread_create(2, 0, exits_at_once, 0, NK_STACK_TOP(stacks[1])) != 1)
        return 16;
    nk_start();
}
