#!/usr/bin/env bash
# Builds the official RISC-V ISA tests from a riscv-tests checkout and runs
# them on the simulator, one hart each.
#
#   scripts/riscv-tests.sh RISCV_TESTS_DIR [OUT_DIR]
#
# RISCV_TESTS_DIR: a checkout of https://github.com/riscv-software-src/riscv-tests
#   with its `env` submodule (git clone --recursive, or
#   git submodule update --init env).
# OUT_DIR: where the built tests go (default out/riscv-tests/isa); point
#   NANOPU_RISCV_TESTS at it to have `make test` run them.
# Needs: make, riscv64-unknown-elf-gcc and objdump (scripts/setup.sh), and the
#   simulator (cargo build --release). Builds the suites the simulator
#   implements in the physical-memory environment (-p): rv64ui um ua uc uf ud
#   mi; prints FAIL for each failing test and exits 1 if any failed.
set -euo pipefail

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
src=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$repo/out/riscv-tests/isa}
nanopu=${NANOPU:-$repo/target/release/nanopu}
suites="rv64ui rv64um rv64ua rv64uc rv64uf rv64ud rv64mi"

[ -f "$src/isa/Makefile" ] || { echo "error: $src is not a riscv-tests checkout (no isa/Makefile)" >&2; exit 2; }
[ -f "$src/env/p/link.ld" ] || { echo "error: $src/env is empty: run 'git submodule update --init env' in $src" >&2; exit 2; }
command -v riscv64-unknown-elf-gcc >/dev/null || { echo "error: riscv64-unknown-elf-gcc not found: run scripts/setup.sh" >&2; exit 2; }
[ -x "$nanopu" ] || { echo "error: $nanopu not found: run cargo build --release (or set NANOPU)" >&2; exit 2; }

# Build in a scratch copy: the checkout is left untouched.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$src/isa" "$src/env" "$work/"
# Only the -p tests (the -v ones need virtual memory): their names from the
# suites' Makefrags; -k keeps going past a test the compiler cannot build.
printf 'print-p-tests:\n\t@echo $(foreach s,$(SUITES),$($(s)_p_tests))\n' >"$work/print.mk"
tests=$(make -s -C "$work/isa" -f Makefile -f "$work/print.mk" XLEN=64 RISCV_PREFIX=riscv64-unknown-elf- \
    SUITES="$suites" print-p-tests)
# shellcheck disable=SC2086
make -C "$work/isa" -k -s XLEN=64 RISCV_PREFIX=riscv64-unknown-elf- $tests >"$work/build.log" 2>&1 ||
    { echo "warning: some tests did not build:" >&2; grep -i error "$work/build.log" >&2 || true; }

mkdir -p "$out"
built=0
for s in $suites; do
    for t in "$work/isa/$s"-p-*; do
        [ -f "$t" ] || continue
        cp "$t" "$out/"
        built=$((built + 1))
    done
done
[ "$built" -gt 0 ] || { echo "error: no test was built" >&2; exit 1; }

failed=0
for t in "$out"/*; do
    if ! "$nanopu" run "$t" --cores 1 --max-cycles 20000000 >/dev/null 2>"$work/run.log"; then
        echo "FAIL ${t##*/}: $(tail -n 1 "$work/run.log")"
        failed=$((failed + 1))
    fi
done
echo "$built tests built into $out; $((built - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
