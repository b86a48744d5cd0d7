#!/usr/bin/env bash
# Builds the nanoPU prototype's test programs (tests-lnic/lnic-*.c and .cc,
# l-nic/chipyard tag nanoPU-artifact-v1.0) from your own chipyard checkout,
# with the prototype's own Makefile and flags, to run under `nanopu run`
# (see docs/artifact-programs.md for how each one is driven):
#
#   scripts/build-lnic-tests.sh CHIPYARD_DIR [OUT_DIR] [PROGRAM...]
#
# CHIPYARD_DIR: a checkout of https://github.com/l-nic/chipyard at tag
#   nanoPU-artifact-v1.0 (this repository holds none of its code).
# OUT_DIR: where PROGRAM.elf files go (default out/lnic-tests).
# PROGRAM: names without extension (default: every lnic-* source). Each one
#   that fails to build is reported with the compiler's first error, and the
#   script exits 1 if any failed (the others are still built).
# Needs: make, riscv64-unknown-elf-gcc/g++ and picolibc-riscv64-unknown-elf
#   (scripts/setup.sh): the prototype's build used a full RISC-V toolchain;
#   here the headers come from picolibc and its own syscalls.c supplies the
#   functions.
set -euo pipefail

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
src=$1/tests-lnic
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/out/lnic-tests}
[ $# -ge 1 ] && shift
headers=/usr/lib/picolibc/riscv64-unknown-elf/include

[ -f "$src/Makefile" ] && [ -f "$src/lnic.h" ] || { echo "error: $src/Makefile or lnic.h not found: CHIPYARD_DIR must be a checkout of l-nic/chipyard (tag nanoPU-artifact-v1.0)" >&2; exit 2; }
command -v riscv64-unknown-elf-gcc >/dev/null || { echo "error: riscv64-unknown-elf-gcc not found: run scripts/setup.sh" >&2; exit 2; }
[ -d "$headers" ] || { echo "error: $headers not found: install picolibc-riscv64-unknown-elf (scripts/setup.sh)" >&2; exit 2; }

if [ $# -ge 1 ]; then
    programs=("$@")
else
    programs=()
    for f in "$src"/lnic-*.c "$src"/lnic-*.cc; do
        b=$(basename "$f"); programs+=("${b%.*}")
    done
fi

# Build in a scratch copy with the prototype's Makefile and flags, plus
# -fno-pie (Debian's gcc makes position-independent code by default, whose GOT
# no loader of a bare-metal program fills in) and
# -fno-tree-loop-distribute-patterns (newer GCC turns the memset loop of the
# prototype's syscalls.c into a call to memset, which then recurses forever).
# The checkout is left untouched.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/tests-lnic"
extra="-isystem $headers -march=rv64gc_zicsr_zifencei -mabi=lp64d -fno-pie -no-pie -fno-tree-loop-distribute-patterns"
mkdir -p "$out"
failed=0
for p in "${programs[@]}"; do
    if make -C "$work/tests-lnic" -s "$p.riscv" \
        GCC="riscv64-unknown-elf-gcc $extra" CXX="riscv64-unknown-elf-g++ $extra" \
        >"$work/$p.log" 2>&1; then
        cp "$work/tests-lnic/$p.riscv" "$out/$p.elf"
        echo "built $p -> $out/$p.elf"
    else
        failed=1
        why=$(grep -m1 -E 'error|undefined reference|No rule' "$work/$p.log" || tail -n1 "$work/$p.log")
        echo "FAILED $p: $why"
    fi
done
exit $failed
