#!/bin/sh
# count-insns.sh PROGRAM.linux | PROGRAM.elf
# Count the instructions a program executes by single-stepping it in QEMU
# (one translation block per instruction) and counting the executed blocks:
#   *.linux  qemu-riscv64 (user mode; includes glibc start-up and exit)
#   *.elf    qemu-system-riscv64 -machine spike -smp 1 (build it with
#            `make test-qemu` first: use build/qemu/NAME.elf, whose output goes
#            to the HTIF console); counts every instruction of hart 0 from reset
# Slow: about 1 M instructions per second.
set -eu
prog=$1
case "$prog" in
*.linux)
    ${QEMU_USER:-qemu-riscv64} -singlestep -d exec,nochain -D /dev/fd/3 "$prog" 3>&1 >/dev/null 2>/dev/null |
        grep -c '^Trace'
    ;;
*)
    ${QEMU_SYSTEM:-qemu-system-riscv64} -machine spike -bios none -nographic -smp 1 -singlestep \
        -d exec,nochain -D /dev/fd/3 -kernel "$prog" 3>&1 >/dev/null 2>/dev/null </dev/null |
        grep -c '^Trace'
    ;;
esac
