# A small program whose Spike commit log (commit_log.spike.log) was derived
# by hand from riscv-isa-sim's source (see README, "Debugging a guest
# program"): integer, compressed, branch, jump, CSR (register and immediate
# forms), FP (with the FS-dirty mstatus write and an fflags write) and AMO
# instructions, then an HTIF exit.
# Built with commit_log.ld: text at 0x80000000, tohost at 0x80001000.
    .section .text.init, "ax"
    .globl _start
_start:
    la      a0, data            # auipc + addi
    li      a1, 0x12345678      # lui + addiw
    sd      a1, 0(a0)
    lw      a2, 0(a0)
    lbu     a3, 1(a0)
    sh      a3, 8(a0)
    c.addi  a2, 1
    c.li    a4, -3
    c.mv    a5, a4
    beq     a4, a5, 1f
    li      a4, 99              # skipped
1:  jal     ra, func
    csrw    mscratch, a2
    csrr    a6, mscratch
    li      t1, 0x2000          # mstatus.FS = initial
    csrs    mstatus, t1
    fld     fa0, 16(a0)         # 1.5; makes FS dirty
    fadd.d  fa1, fa0, fa0
    fsd     fa1, 24(a0)
    fdiv.d  fa2, fa0, fa3       # 1.5 / 0: +inf, raises DZ
    amoadd.d a7, a1, (a0)
    li      t2, 1               # exit code 0 through HTIF
    la      t3, tohost
    sd      t2, 0(t3)
2:  j       2b

func:
    addi    a2, a2, 2
    csrwi   mscratch, 5
    csrsi   mscratch, 2
    csrrci  a4, mscratch, 1
    ret

    .section .tohost, "aw", @progbits
    .align 6
    .globl tohost
tohost: .dword 0
    .align 6
    .globl fromhost
fromhost: .dword 0

    .data
    .align 3
data:
    .dword 0
    .dword 0
    .double 1.5
    .dword 0
