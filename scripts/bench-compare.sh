#!/usr/bin/env bash
# Compares an earlier commit's speed with this tree's, on this machine in one
# sitting (host speed differs from machine to machine and drifts within
# minutes, so only runs side by side compare):
#
#   scripts/bench-compare.sh REV [ROUNDS]
#
# Builds REV in a temporary git worktree with a target directory of its own
# (both removed at the end; the first build of REV takes a few minutes), then
# runs the two binaries alternately ROUNDS times (default 3): `nanopu bench
# --json`, and `nanopu run --stats-json` on each compute kernel of the bench.
# Both run this tree's guest binaries (sdk/build). It prints every figure both
# benches report, with its range over the rounds and the ratio of the medians.
# A kernel's simulated MIPS counts, for both binaries, the instructions this
# tree's binary executes one by one (older ones also counted the polling-loop
# iterations they skip). Works back to 3557cf0 (2026-11-23, before issue #16;
# its bench reports matmul, the idle node and two networks). Run it on a quiet
# machine; docs/profile/README.md ("Issue #16 against where it started") has
# the figures it gave for 3557cf0.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?usage: scripts/bench-compare.sh REV [ROUNDS]}
rounds=${2:-3}
git rev-parse --verify -q "$rev^{commit}" >/dev/null || { echo "bench-compare: no commit $rev" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "bench-compare: ROUNDS must be a positive number, not $rounds" >&2; exit 2; }
tmp=$(mktemp -d)
cleanup() {
    git worktree remove --force "$tmp/tree" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

cargo build --release -q -p nanopu
make -C sdk -s >/dev/null
sdk=$PWD/sdk/build
new=$PWD/target/release/nanopu

git worktree add -q --detach "$tmp/tree" "$rev"
echo "bench-compare: building $rev (its own target directory: a few minutes)" >&2
CARGO_TARGET_DIR="$tmp/target" cargo build --release -q -p nanopu --manifest-path "$tmp/tree/Cargo.toml"
old=$tmp/target/release/nanopu

kernels=()
for k in matmul coremark_like pointer_chase hashing; do
    [ -f "$sdk/$k.elf" ] && kernels+=("$k")
done
for r in $(seq "$rounds"); do
    echo "bench-compare: round $r of $rounds" >&2
    for side in old new; do
        bin=${!side}
        "$bin" bench --programs "$sdk" --json "$tmp/$side-bench-$r.json" >/dev/null
        for k in "${kernels[@]}"; do
            "$bin" run "$sdk/$k.elf" --stats-json "$tmp/$side-$k-$r.json" >/dev/null
        done
    done
done

here=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates sdk || echo "+dirty")
python3 - "$tmp" "$rounds" "$rev" "$here" "${kernels[@]}" <<'PY'
import json, re, statistics, sys
tmp, rounds, rev, head, kernels = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
load = lambda side, what, r: json.load(open(f"{tmp}/{side}-{what}-{r}.json"))
rows = {}
speed = re.compile(r"(mips|packets_per_s|sim_us_per_s|cycles_per_s)$")
for r in range(1, rounds + 1):
    old, new = load("old", "bench", r), load("new", "bench", r)
    for key in sorted(set(old) & set(new)):
        if speed.search(key) and isinstance(old[key], (int, float)) and isinstance(new[key], (int, float)):
            rows.setdefault(f"bench {key}", ([], []))
            rows[f"bench {key}"][0].append(old[key])
            rows[f"bench {key}"][1].append(new[key])
    for k in kernels:
        ref = load("new", k, r)
        executed = ref.get("executed_instret", ref["instret"])
        row = rows.setdefault(f"run {k} MIPS", ([], []))
        for i, side in enumerate(("old", "new")):
            row[i].append(executed / load(side, k, r)["wall_s"] / 1e6)
fmt = lambda v: f"{v:.3g}" if abs(v) < 1e3 else f"{v:,.0f}" if abs(v) < 1e6 else f"{v:.3e}"
span = lambda vs: fmt(min(vs)) if len(vs) == 1 else f"{fmt(min(vs))}-{fmt(max(vs))}"
print(f"| figure (rounds: {rounds}, alternating) | {rev} | {head} (this tree) | ratio of medians |")
print("|---|---:|---:|---:|")
for name, (o, n) in rows.items():
    ratio = statistics.median(n) / statistics.median(o) if statistics.median(o) else float("nan")
    print(f"| {name} | {span(o)} | {span(n)} | {ratio:.2f}x |")
PY
