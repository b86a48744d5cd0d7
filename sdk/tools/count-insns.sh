#!/bin/sh
# count-insns.sh PROGRAM [ARGS...]: count the instructions a Linux RISC-V
# program executes, with qemu-riscv64 single-stepping (one translation block
# per instruction) and logging every block executed.  Slow (~1 M insn/s).
set -eu
QEMU_USER=${QEMU_USER:-qemu-riscv64}
"$QEMU_USER" -singlestep -d exec,nochain -D /dev/fd/3 "$@" 3>&1 >/dev/null 2>/dev/null | grep -c '^Trace'
