/*
 * crt.S - startup and trap entry of the nanoPU SDK.
 *
 * Environment of riscv-tests "benchmarks": every hart starts at _start at
 * the same time, in machine mode.
 *
 * RULE: x30 (netRX) is never read and x31 (netTX) is never written here:
 * reading x30 pops a word of the receive FIFO, writing x31 pushes a word to
 * the transmit FIFO.  Neither is zeroed, saved or restored.
 */
#include "nanopu.h"

#define REGBYTES 8
#define FRAME    (32 * REGBYTES)

    .section .text.init, "ax", @progbits
    .globl _start
    .type _start, @function
_start:
    /* Zero the integer registers x1-x29 (never x30/x31). */
    li x1, 0
    li x2, 0
    li x3, 0
    li x4, 0
    li x5, 0
    li x6, 0
    li x7, 0
    li x8, 0
    li x9, 0
    li x10, 0
    li x11, 0
    li x12, 0
    li x13, 0
    li x14, 0
    li x15, 0
    li x16, 0
    li x17, 0
    li x18, 0
    li x19, 0
    li x20, 0
    li x21, 0
    li x22, 0
    li x23, 0
    li x24, 0
    li x25, 0
    li x26, 0
    li x27, 0
    li x28, 0
    li x29, 0

    /* Harts beyond the SDK's stack area park at once. */
    csrr a0, mhartid
    li a1, NANOPU_MAX_HARTS
    bgeu a0, a1, .Lpark

    /* Trap vector first, so that a fault below is reported. */
    la t0, trap_entry
    csrw mtvec, t0
    csrw mie, zero
    csrw mscratch, zero

    /* Enable the FPU (mstatus.FS = Initial) and zero the FP state. */
    li t0, MSTATUS_FS
    csrc mstatus, t0
    li t0, MSTATUS_FS_INITIAL
    csrs mstatus, t0
    fscsr zero
    fmv.d.x f0, zero
    fmv.d.x f1, zero
    fmv.d.x f2, zero
    fmv.d.x f3, zero
    fmv.d.x f4, zero
    fmv.d.x f5, zero
    fmv.d.x f6, zero
    fmv.d.x f7, zero
    fmv.d.x f8, zero
    fmv.d.x f9, zero
    fmv.d.x f10, zero
    fmv.d.x f11, zero
    fmv.d.x f12, zero
    fmv.d.x f13, zero
    fmv.d.x f14, zero
    fmv.d.x f15, zero
    fmv.d.x f16, zero
    fmv.d.x f17, zero
    fmv.d.x f18, zero
    fmv.d.x f19, zero
    fmv.d.x f20, zero
    fmv.d.x f21, zero
    fmv.d.x f22, zero
    fmv.d.x f23, zero
    fmv.d.x f24, zero
    fmv.d.x f25, zero
    fmv.d.x f26, zero
    fmv.d.x f27, zero
    fmv.d.x f28, zero
    fmv.d.x f29, zero
    fmv.d.x f30, zero
    fmv.d.x f31, zero

    /* Global pointer (must not be relaxed against itself). */
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop

    /* Per-hart area of 2^NANOPU_STACK_SHIFT bytes above _end:
     * tp = bottom (thread-local data), sp = top. */
    la tp, _end
    slli t1, a0, NANOPU_STACK_SHIFT
    add tp, tp, t1
    li t2, (1 << NANOPU_STACK_SHIFT)
    add sp, tp, t2

    /* Hart 0 zeroes .sbss/.bss (the loader should already have); the other
     * harts wait for it before touching any global. */
    bnez a0, .Lwait_bss
    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sd zero, 0(t0)
    addi t0, t0, REGBYTES
    j 1b
2:  fence rw, rw
    la t0, nanopu_bss_ready
    li t1, 1
    sw t1, 0(t0)
    fence rw, rw
    j .Lrun
.Lwait_bss:
    la t0, nanopu_bss_ready
3:  lw t1, 0(t0)
    beqz t1, 3b
    fence rw, rw

.Lrun:
    /* _init(cid = mhartid, nc = nanopu_ncores) never returns. */
    csrr a0, mhartid
    la t0, nanopu_ncores
    lw a1, 0(t0)
    call _init
.Lpark:
    wfi
    j .Lpark
    .size _start, . - _start

    /* Set to 1 by hart 0 once .bss is zero (lives in .data: loaded, not zeroed). */
    .section .data
    .balign 4
    .globl nanopu_bss_ready
nanopu_bss_ready:
    .word 0

/*
 * Trap entry: saves x1-x29 in a frame on the current stack, calls
 *     uintptr_t handle_trap(uintptr_t cause, uintptr_t epc, uintptr_t regs[32])
 * and resumes at the returned pc with the (possibly modified) frame.
 * regs[0], regs[30], regs[31] are stored as 0; x30/x31 are not touched.
 */
    .text
    .balign 4
    .globl trap_entry
    .type trap_entry, @function
trap_entry:
    addi sp, sp, -FRAME
    sd x1, 1*REGBYTES(sp)
    sd x3, 3*REGBYTES(sp)
    sd x4, 4*REGBYTES(sp)
    sd x5, 5*REGBYTES(sp)
    sd x6, 6*REGBYTES(sp)
    sd x7, 7*REGBYTES(sp)
    sd x8, 8*REGBYTES(sp)
    sd x9, 9*REGBYTES(sp)
    sd x10, 10*REGBYTES(sp)
    sd x11, 11*REGBYTES(sp)
    sd x12, 12*REGBYTES(sp)
    sd x13, 13*REGBYTES(sp)
    sd x14, 14*REGBYTES(sp)
    sd x15, 15*REGBYTES(sp)
    sd x16, 16*REGBYTES(sp)
    sd x17, 17*REGBYTES(sp)
    sd x18, 18*REGBYTES(sp)
    sd x19, 19*REGBYTES(sp)
    sd x20, 20*REGBYTES(sp)
    sd x21, 21*REGBYTES(sp)
    sd x22, 22*REGBYTES(sp)
    sd x23, 23*REGBYTES(sp)
    sd x24, 24*REGBYTES(sp)
    sd x25, 25*REGBYTES(sp)
    sd x26, 26*REGBYTES(sp)
    sd x27, 27*REGBYTES(sp)
    sd x28, 28*REGBYTES(sp)
    sd x29, 29*REGBYTES(sp)
    addi t0, sp, FRAME
    sd t0, 2*REGBYTES(sp)       /* sp before the trap */
    sd zero, 0*REGBYTES(sp)
    sd zero, 30*REGBYTES(sp)
    sd zero, 31*REGBYTES(sp)

    csrr a0, mcause
    csrr a1, mepc
    mv a2, sp
    call handle_trap
    csrw mepc, a0

    ld x1, 1*REGBYTES(sp)
    ld x3, 3*REGBYTES(sp)
    ld x4, 4*REGBYTES(sp)
    ld x5, 5*REGBYTES(sp)
    ld x6, 6*REGBYTES(sp)
    ld x7, 7*REGBYTES(sp)
    ld x8, 8*REGBYTES(sp)
    ld x9, 9*REGBYTES(sp)
    ld x10, 10*REGBYTES(sp)
    ld x11, 11*REGBYTES(sp)
    ld x12, 12*REGBYTES(sp)
    ld x13, 13*REGBYTES(sp)
    ld x14, 14*REGBYTES(sp)
    ld x15, 15*REGBYTES(sp)
    ld x16, 16*REGBYTES(sp)
    ld x17, 17*REGBYTES(sp)
    ld x18, 18*REGBYTES(sp)
    ld x19, 19*REGBYTES(sp)
    ld x20, 20*REGBYTES(sp)
    ld x21, 21*REGBYTES(sp)
    ld x22, 22*REGBYTES(sp)
    ld x23, 23*REGBYTES(sp)
    ld x24, 24*REGBYTES(sp)
    ld x25, 25*REGBYTES(sp)
    ld x26, 26*REGBYTES(sp)
    ld x27, 27*REGBYTES(sp)
    ld x28, 28*REGBYTES(sp)
    ld x29, 29*REGBYTES(sp)
    ld x2, 2*REGBYTES(sp)       /* last: may have been changed by the handler */
    mret
    .size trap_entry, . - trap_entry
