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

# scripts/build-lnic-tests.sh builds it with the prototype's Makefile and flags
# (and the two flags our newer toolchain needs, explained there).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$repo/scripts/build-lnic-tests.sh" "$1" "$work" lnic-evaluation >/dev/null
mkdir -p "$(dirname "$out")"
cp "$work/lnic-evaluation.elf" "$out"
echo "built $out; run it beside ours with: NANOPU_LNIC_EVALUATION=$out nanopu reproduce"
