#!/usr/bin/env bash
# Builds a `nanopu` with profile-guided optimisation (PGO), for long network
# and multi-core node runs:
#
#   scripts/pgo-build.sh          # prints the binary's path: target/pgo/release/nanopu
#
# An instrumented build runs `nanopu bench` (the compute kernels, the idle node,
# the networks, the 16-core node), `nanopu reproduce --scale quick` (into
# target/pgo/train; the experiments' code would otherwise be left cold) and
# the four kernels three times more (trained on the benchmark alone, the
# kernels came out slower) to record which code is hot; the second build lays
# out and inlines the code by that profile. Same program, so the same results
# bit for bit; only host speed changes (docs/profile/README.md, "Profile-guided
# optimisation"): on the session-22 machine `nanopu reproduce` 88 -> 79 s,
# networks +15-25 %, the 16-core node +35 %, the single-hart compute kernels
# +12-20 % (-7 to +11 % in an earlier build: they follow one loop's placement). The RUSTFLAGS repeat .cargo/config.toml's (the environment
# replaces it). Two release builds and the training (~6 minutes on 2 cores).
# Needs rustup's llvm-tools component (added if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$PWD/target/pgo
rustup component add llvm-tools >&2
profdata=$(find "$(rustc --print sysroot)" -name llvm-profdata -type f | head -1)
if [ -z "$profdata" ]; then
    echo "pgo-build: no llvm-profdata in $(rustc --print sysroot) after 'rustup component add llvm-tools'" >&2
    exit 1
fi
make -C sdk -s >/dev/null
rm -rf "$dir/profiles" "$dir/merged.profdata"
CARGO_TARGET_DIR=$dir/instrumented RUSTFLAGS="-Cprofile-generate=$dir/profiles -Cllvm-args=-align-all-functions=6 -Cllvm-args=-align-all-nofallthru-blocks=5" \
    cargo build --release -q -p nanopu
"$dir/instrumented/release/nanopu" bench >/dev/null
# The papers' experiments at quick scale: code the benchmarks do not run
# (NEBULA, the RDMA NIC, the applications) is profiled too, not left cold.
rm -rf "$dir/train"
"$dir/instrumented/release/nanopu" reproduce --scale quick --out "$dir/train" >"$dir/train.log" 2>&1 ||
    { echo "pgo-build: the training run failed; see $dir/train.log" >&2; exit 1; }
for _ in 1 2 3; do
    for kernel in matmul coremark_like pointer_chase hashing; do
        "$dir/instrumented/release/nanopu" run "sdk/build/$kernel.elf" >/dev/null
    done
done
"$profdata" merge -o "$dir/merged.profdata" "$dir/profiles"
CARGO_TARGET_DIR=$dir RUSTFLAGS="-Cprofile-use=$dir/merged.profdata -Cllvm-args=-align-all-functions=6 -Cllvm-args=-align-all-nofallthru-blocks=5" \
    cargo build --release -q -p nanopu
echo "$dir/release/nanopu"
