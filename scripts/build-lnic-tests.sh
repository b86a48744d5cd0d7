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
# PROGRAM: names without extension (default: every lnic-* source of
#   tests-lnic/, and lnic-euclidean-dist, the HD search server of
#   software/euclidean-dist/, built against tests-lnic/). Each one
#   that fails to build is reported with the compiler's first error, and the
#   script exits 1 if any failed (the others are still built).
# Needs: make, riscv64-unknown-elf-gcc/g++ and picolibc-riscv64-unknown-elf
#   (scripts/setup.sh): the prototype's build used a full RISC-V toolchain;
#   here the headers come from picolibc, its own syscalls.c supplies the
#   functions, and scripts/lnic-shims/ what its C++ programs took from the
#   toolchain (see below).
set -euo pipefail

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
chipyard=$1
src=$chipyard/tests-lnic
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
    [ -f "$chipyard/software/euclidean-dist/lnic-euclidean-dist.cc" ] && programs+=(lnic-euclidean-dist)
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
# C++ (lnic-multi-core-mica, -chain-rep): Debian has no libstdc++ for this
# target, and the programs use none of it. scripts/lnic-shims/include maps
# <cstdio> and the like to picolibc's headers; lnic_shim.c supplies sbrk_init,
# sbrk and the constructor-array walkers the programs call; init_array.ld
# places the constructor arrays link.ld lacks. The empty libstdc++.a and
# libgloss.a stand for the libraries g++ names at the end of its link line;
# picolibc's libc.a and libm.a come from its multilib for rv64gc/lp64d.
shims=$repo/scripts/lnic-shims
picolib=/usr/lib/picolibc/riscv64-unknown-elf/lib/rv64imafdc/lp64d
mkdir -p "$work/shimlib"
riscv64-unknown-elf-ar rc "$work/shimlib/libstdc++.a"
riscv64-unknown-elf-ar rc "$work/shimlib/libgloss.a"
riscv64-unknown-elf-gcc $extra -mcmodel=medany -O2 -ffixed-x30 -ffixed-x31 \
    -c "$shims/lnic_shim.c" -o "$work/shimlib/lnic_shim.o"
cxx="riscv64-unknown-elf-g++ -isystem $shims/include -fno-rtti $extra"
ldflags_mica="-static -nostartfiles -L$work/shimlib -L$picolib -Wl,-T,$shims/init_array.ld $work/shimlib/lnic_shim.o -lgcc"
mkdir -p "$out"
failed=0
# Programs outside tests-lnic/ (software/), built with tests-lnic's headers,
# start-up code and link script as their Makefiles' `../../tests` stand for.
software() {
    case $1 in
        lnic-euclidean-dist) echo software/euclidean-dist/lnic-euclidean-dist.cc ;;
        *) return 1 ;;
    esac
}
build_software() {
    local p=$1 rel=$2 t=$work/tests-lnic
    [ -f "$chipyard/$rel" ] || { echo "$chipyard/$rel not found" >"$work/$p.log"; return 1; }
    make -C "$t" -s crt.o syscalls.o GCC="riscv64-unknown-elf-gcc $extra" >"$work/$p.log" 2>&1 &&
    $cxx -std=c++11 -Wall -mcmodel=medany -O2 -ffixed-x30 -ffixed-x31 -fno-common \
        -fno-builtin-printf -fno-use-cxa-atexit -I"$(dirname "$chipyard/$rel")" -I"$t" \
        -T "$t/link.ld" -static -nostartfiles -nostdlib "$chipyard/$rel" "$t/crt.o" "$t/syscalls.o" -lgcc \
        -o "$t/$p.riscv" >>"$work/$p.log" 2>&1
}
for p in "${programs[@]}"; do
    if rel=$(software "$p"); then
        built() { build_software "$p" "$rel"; }
    else
        built() { make -C "$work/tests-lnic" -s "$p.riscv" \
            GCC="riscv64-unknown-elf-gcc $extra" CXX="$cxx" LDFLAGS_MICA="$ldflags_mica" \
            >"$work/$p.log" 2>&1; }
    fi
    if built; then
        cp "$work/tests-lnic/$p.riscv" "$out/$p.elf"
        echo "built $p -> $out/$p.elf"
    else
        failed=1
        why=$(grep -m1 -E 'error|undefined reference|No rule' "$work/$p.log" || tail -n1 "$work/$p.log")
        echo "FAILED $p: $why"
    fi
done
exit $failed
