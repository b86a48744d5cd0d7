#!/usr/bin/env bash
# Builds the nanoPU prototype's evaluation program (lnic-evaluation.c, the
# program of its FireSim thread-scheduling and core-selection runs) from your
# own chipyard checkout, for `nanopu reproduce` to run beside ours:
#
#   scripts/build-lnic-evaluation.sh CHIPYARD_DIR [OUT_ELF]
#   NANOPU_LNIC_EVALUATION=OUT_ELF nanopu reproduce
#
# CHIPYARD_DIR: a checkout of https://github.com/l-nic/chipyard at tag
#   nanoPU-artifact-v1.0 (its tests-lnic/ directory is what is built; this
#   repository holds none of its code). OUT_ELF defaults to
#   out/lnic-evaluation.elf.
# Needs: make, riscv64-unknown-elf-gcc, and libc headers for it
#   (picolibc-riscv64-unknown-elf, installed by scripts/setup.sh): the
#   prototype's build used a full RISC-V toolchain; here the headers come
#   from picolibc and its own syscalls.c supplies the functions.
set -euo pipefail

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
src=$1/tests-lnic
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$repo/out/lnic-evaluation.elf}
headers=/usr/lib/picolibc/riscv64-unknown-elf/include

[ -f "$src/lnic-evaluation.c" ] || { echo "error: $src/lnic-evaluation.c not found: CHIPYARD_DIR must be a checkout of l-nic/chipyard (tag nanoPU-artifact-v1.0)" >&2; exit 2; }
command -v riscv64-unknown-elf-gcc >/dev/null || { echo "error: riscv64-unknown-elf-gcc not found: run scripts/setup.sh" >&2; exit 2; }
[ -d "$headers" ] || { echo "error: $headers not found: install picolibc-riscv64-unknown-elf (scripts/setup.sh)" >&2; exit 2; }

# Build in a scratch copy with the prototype's own Makefile and flags (and
# -fno-pie: Debian's gcc makes position-independent code by default, whose GOT
# no loader of a bare-metal program fills in; and -fno-tree-loop-distribute-patterns:
# newer GCC turns the memset loop of its own syscalls.c into a call to memset,
# which then recurses forever); the
# checkout is left untouched.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/tests-lnic"
make -C "$work/tests-lnic" -s lnic-evaluation.riscv \
    GCC="riscv64-unknown-elf-gcc -isystem $headers -march=rv64gc_zicsr_zifencei -mabi=lp64d -fno-pie -no-pie -fno-tree-loop-distribute-patterns"
mkdir -p "$(dirname "$out")"
cp "$work/tests-lnic/lnic-evaluation.riscv" "$out"
echo "built $out; run it beside ours with: NANOPU_LNIC_EVALUATION=$out nanopu reproduce"
