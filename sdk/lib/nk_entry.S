/*
 * nk_entry.S - nanokernel trap entry, scheduler-interrupt fast path and
 * thread launch (see include/nanokernel.h).
 *
 * mscratch holds the running thread's TCB.  x30 (netRX) is never read and x31
 * (netTX) never written: they are the running context's network FIFOs, not
 * thread state, so they are neither saved nor restored.
 *
 * Fast path (interrupt 16), in instructions: 31 stores + 6 CSR reads/writes
 * to save, ~10 to retarget the NIC, 4-6 per TCB compared, then the switch and
 * 31 loads + mret; the f registers are only touched when FS is Dirty or the
 * target has saved FP state.
 */
#include "nanopu.h"
#include "nanokernel.h"

    .text
    .balign 4
    .globl nk_trap_entry
    .type nk_trap_entry, @function
nk_trap_entry:
    csrrw a0, mscratch, a0          /* a0 = current TCB, mscratch = thread's a0 */
    sd x1, 8(a0)
    sd x2, 16(a0)
    sd x3, 24(a0)
    sd x4, 32(a0)
    sd x5, 40(a0)
    sd x6, 48(a0)
    sd x7, 56(a0)
    sd x8, 64(a0)
    sd x9, 72(a0)
    sd x11, 88(a0)
    sd x12, 96(a0)
    sd x13, 104(a0)
    sd x14, 112(a0)
    sd x15, 120(a0)
    sd x16, 128(a0)
    sd x17, 136(a0)
    sd x18, 144(a0)
    sd x19, 152(a0)
    sd x20, 160(a0)
    sd x21, 168(a0)
    sd x22, 176(a0)
    sd x23, 184(a0)
    sd x24, 192(a0)
    sd x25, 200(a0)
    sd x26, 208(a0)
    sd x27, 216(a0)
    sd x28, 224(a0)
    sd x29, 232(a0)
    csrr t0, mscratch
    sd t0, 80(a0)                   /* thread's a0 */
    csrr t0, mepc
    sd t0, NK_TCB_PC(a0)
    csrr t1, mcause
    li t2, MCAUSE_LNIC_IRQ
    bne t1, t2, .Lslow

    /* ---- nanoPU scheduler interrupt: switch to ltargetcontext ---- */
    csrr t3, CSR_LTARGETCONTEXT
    csrr t4, CSR_LTARGETPRIORITY
    ld a1, NK_TCB_HART(a0)
    ld a2, NK_HART_NTHREADS(a1)
    addi a3, a1, NK_HART_THREADS
1:  beqz a2, .Lunknown              /* exited threads' cids never match */
    ld a4, NK_TCB_CID(a3)
    beq a4, t3, .Lfound
    addi a3, a3, NK_TCB_SIZE
    addi a2, a2, -1
    j 1b
.Lunknown:
    /* No runnable thread of this hart owns that context: make it idle and
     * discard its messages (C, on the boot stack; otherwise the scheduler
     * names it again at once, for ever), then resume the current thread. */
    ld sp, NK_TCB_KSTACK(a0)
    mv s0, a0
    mv a0, a1                       /* hart */
    mv a1, t3                       /* the context */
    call nk_orphan_context
    mv a0, s0
    mv a3, s0
    ld a1, NK_TCB_HART(a0)
    j .Lswitch
.Lfound:
    csrw CSR_LCURCONTEXT, t3
    csrw CSR_LCURPRIORITY, t4
    csrwi CSR_LNICCMD, LNICCMD_RESTART_TIMER
    sd t4, NK_TCB_PRIO(a3)          /* the scheduler may have demoted it */

    /* ---- switch from a0 to a3 (a1 = hart) ---- */
.Lswitch:
    beq a3, a0, .Lresume
    sd a3, NK_HART_CUR(a1)
    ld t0, NK_HART_SWITCHES(a1)
    addi t0, t0, 1
    sd t0, NK_HART_SWITCHES(a1)
    csrr t0, mstatus
    li t1, MSTATUS_FS
    and t2, t0, t1
    bne t2, t1, 2f                  /* FS not Dirty: nothing to save */
    fsd f0, NK_TCB_FREGS+0(a0)
    fsd f1, NK_TCB_FREGS+8(a0)
    fsd f2, NK_TCB_FREGS+16(a0)
    fsd f3, NK_TCB_FREGS+24(a0)
    fsd f4, NK_TCB_FREGS+32(a0)
    fsd f5, NK_TCB_FREGS+40(a0)
    fsd f6, NK_TCB_FREGS+48(a0)
    fsd f7, NK_TCB_FREGS+56(a0)
    fsd f8, NK_TCB_FREGS+64(a0)
    fsd f9, NK_TCB_FREGS+72(a0)
    fsd f10, NK_TCB_FREGS+80(a0)
    fsd f11, NK_TCB_FREGS+88(a0)
    fsd f12, NK_TCB_FREGS+96(a0)
    fsd f13, NK_TCB_FREGS+104(a0)
    fsd f14, NK_TCB_FREGS+112(a0)
    fsd f15, NK_TCB_FREGS+120(a0)
    fsd f16, NK_TCB_FREGS+128(a0)
    fsd f17, NK_TCB_FREGS+136(a0)
    fsd f18, NK_TCB_FREGS+144(a0)
    fsd f19, NK_TCB_FREGS+152(a0)
    fsd f20, NK_TCB_FREGS+160(a0)
    fsd f21, NK_TCB_FREGS+168(a0)
    fsd f22, NK_TCB_FREGS+176(a0)
    fsd f23, NK_TCB_FREGS+184(a0)
    fsd f24, NK_TCB_FREGS+192(a0)
    fsd f25, NK_TCB_FREGS+200(a0)
    fsd f26, NK_TCB_FREGS+208(a0)
    fsd f27, NK_TCB_FREGS+216(a0)
    fsd f28, NK_TCB_FREGS+224(a0)
    fsd f29, NK_TCB_FREGS+232(a0)
    fsd f30, NK_TCB_FREGS+240(a0)
    fsd f31, NK_TCB_FREGS+248(a0)
    frcsr t2
    sd t2, NK_TCB_FCSR(a0)
    li t2, 1
    sd t2, NK_TCB_FPUSED(a0)
2:  ld t2, NK_TCB_FPUSED(a3)
    beqz t2, 3f
    fld f0, NK_TCB_FREGS+0(a3)
    fld f1, NK_TCB_FREGS+8(a3)
    fld f2, NK_TCB_FREGS+16(a3)
    fld f3, NK_TCB_FREGS+24(a3)
    fld f4, NK_TCB_FREGS+32(a3)
    fld f5, NK_TCB_FREGS+40(a3)
    fld f6, NK_TCB_FREGS+48(a3)
    fld f7, NK_TCB_FREGS+56(a3)
    fld f8, NK_TCB_FREGS+64(a3)
    fld f9, NK_TCB_FREGS+72(a3)
    fld f10, NK_TCB_FREGS+80(a3)
    fld f11, NK_TCB_FREGS+88(a3)
    fld f12, NK_TCB_FREGS+96(a3)
    fld f13, NK_TCB_FREGS+104(a3)
    fld f14, NK_TCB_FREGS+112(a3)
    fld f15, NK_TCB_FREGS+120(a3)
    fld f16, NK_TCB_FREGS+128(a3)
    fld f17, NK_TCB_FREGS+136(a3)
    fld f18, NK_TCB_FREGS+144(a3)
    fld f19, NK_TCB_FREGS+152(a3)
    fld f20, NK_TCB_FREGS+160(a3)
    fld f21, NK_TCB_FREGS+168(a3)
    fld f22, NK_TCB_FREGS+176(a3)
    fld f23, NK_TCB_FREGS+184(a3)
    fld f24, NK_TCB_FREGS+192(a3)
    fld f25, NK_TCB_FREGS+200(a3)
    fld f26, NK_TCB_FREGS+208(a3)
    fld f27, NK_TCB_FREGS+216(a3)
    fld f28, NK_TCB_FREGS+224(a3)
    fld f29, NK_TCB_FREGS+232(a3)
    fld f30, NK_TCB_FREGS+240(a3)
    fld f31, NK_TCB_FREGS+248(a3)
    ld t2, NK_TCB_FCSR(a3)
    fscsr t2
    j 4f
3:  fscsr zero
4:  li t1, MSTATUS_FS_INITIAL
    csrc mstatus, t1                /* Dirty -> Clean (FS is never Initial here) */
.Lresume:
    mv a0, a3

    /* ---- resume the thread whose TCB is in a0 ---- */
.Lrestore:
    csrw mscratch, a0
    ld t0, NK_TCB_PC(a0)
    csrw mepc, t0
    ld x1, 8(a0)
    ld x2, 16(a0)
    ld x3, 24(a0)
    ld x4, 32(a0)
    ld x5, 40(a0)
    ld x6, 48(a0)
    ld x7, 56(a0)
    ld x8, 64(a0)
    ld x9, 72(a0)
    ld x11, 88(a0)
    ld x12, 96(a0)
    ld x13, 104(a0)
    ld x14, 112(a0)
    ld x15, 120(a0)
    ld x16, 128(a0)
    ld x17, 136(a0)
    ld x18, 144(a0)
    ld x19, 152(a0)
    ld x20, 160(a0)
    ld x21, 168(a0)
    ld x22, 176(a0)
    ld x23, 184(a0)
    ld x24, 192(a0)
    ld x25, 200(a0)
    ld x26, 208(a0)
    ld x27, 216(a0)
    ld x28, 224(a0)
    ld x29, 232(a0)
    ld a0, 80(a0)
    mret

    /* ---- everything else: C slow path on the hart's boot stack ---- */
.Lslow:
    ld sp, NK_TCB_KSTACK(a0)
    mv s0, a0
    mv a0, t1                       /* cause */
    ld a1, NK_TCB_PC(s0)            /* epc */
    mv a2, s0                       /* TCB (regs[] first) */
    call nk_trap
    mv a3, a0
    mv a0, s0
    ld a1, NK_TCB_HART(a0)
    j .Lswitch
    .size nk_trap_entry, . - nk_trap_entry

/* void nk_launch(struct nk_tcb *t): start or resume t with interrupts enabled. */
    .globl nk_launch
    .type nk_launch, @function
nk_launch:
    li t0, MSTATUS_MPP | MSTATUS_MPIE
    csrs mstatus, t0                /* mret: stay in M-mode, MIE = 1 */
    j .Lrestore
    .size nk_launch, . - nk_launch
