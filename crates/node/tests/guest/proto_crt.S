/* Start-up code in the style of the nanoPU prototype's (riscv-tests
 * "benchmarks" environment as the prototype extended it): every hart zeroes
 * x1-x29 (never x30/x31), enables the FPU and machine interrupts, takes a
 * 128 KB stack above _end and jumps to _init(hartid, 4). Written for the
 * simulator's compatibility test; not the prototype's file. */
    .section .text.init, "ax"
    .globl _start
_start:
    .irp r, 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29
    li x\r, 0
    .endr
    li t0, (3 << 13) | (1 << 3)      /* mstatus.FS = dirty, mstatus.MIE */
    csrs mstatus, t0
    la t0, trap_entry
    csrw mtvec, t0
    la tp, _end + 63
    and tp, tp, -64
    csrr a0, mhartid
    li a1, 4
    sll a2, a0, 17
    add tp, tp, a2
    add sp, a0, 1
    sll sp, sp, 17
    add sp, sp, tp
    csrwi 0x54, 4                    /* start the message-processing timer */
    j _init

    .align 2
trap_entry:
    li a0, (77 << 1) | 1             /* unexpected trap: exit 77 */
    la t0, tohost
    sd a0, 0(t0)
1:  j 1b

    .section .tohost, "aw", @progbits
    .align 6
    .globl tohost
tohost: .dword 0
    .align 6
    .globl fromhost
fromhost: .dword 0
