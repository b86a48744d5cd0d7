#!/usr/bin/env bash
# Runs the same DRAM access traces through nanopu's banked DRAM model and
# through DRAMsim3 (umd-memsys/DRAMsim3), and compares the mean and p99 read
# latency and the achieved bandwidth:
#
#   scripts/dram-compare.sh PATH/TO/dramsim3main [STANDARD...]
#
# dramsim3main is your own build of DRAMsim3 (this repository neither
# contains nor builds it: build it where you like with its CMake, e.g.
# `cmake -B build && make -C build`). STANDARDs default to ddr4-3200,
# ddr4-2400 and ddr3-fased. For each, the script writes DRAMsim3 the same
# standard as a configuration (`dram_replay --dramsim3-ini`: the same
# organisation, timings, address map, queue depth; refreshes staggered over
# the ranks on both sides, see dram_replay.rs),
# generates seeded traces (random reads over 1 GiB, a read stream,
# reads to 16 open rows, random reads and writes 2:1) at three intensities
# (Poisson arrivals, a request every 64, 24 and 12 clocks on average: all
# below saturation, where latency would be set by the queues' sizes) and
# replays each through both (`crates/node/examples/dram_replay.rs`; DRAMsim3's
# trace mode). Latencies are in DRAM clocks, from the request entering the
# controller to its data; p99 is the smallest latency at or above 99 % of
# the reads, computed the same way from DRAMsim3's latency histogram. The
# bandwidth counts reads done and writes accepted over the run, as
# DRAMsim3's `average_bandwidth`. Work files go to a temporary directory,
# removed at the end. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
ds3=${1:?usage: scripts/dram-compare.sh PATH/TO/dramsim3main [STANDARD...]}
shift
[ -x "$ds3" ] || { echo "dram-compare: $ds3 is not an executable" >&2; exit 2; }
standards=("$@")
[ ${#standards[@]} -gt 0 ] || standards=(ddr4-3200 ddr4-2400 ddr3-fased)

cargo build --profile ci -q -p nanopu-node --example dram_replay
ours=$PWD/target/ci/examples/dram_replay
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 - "$tmp" "$ds3" "$ours" "${standards[@]}" <<'PY'
import json, math, random, subprocess, sys
tmp, ds3, ours, standards = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
N = 20000
GAPS = (64, 24, 12)
LINE = 64

def trace(kind, gap, seed):
    r = random.Random(seed)
    t, out = 0, []
    hot = [r.randrange(1 << 24) for _ in range(16)]  # 16 lines: their rows
    for i in range(N):
        t += 1 + int(r.expovariate(1 / max(gap - 1, 1)))
        write = False
        if kind == "random":
            line = r.randrange(1 << 24)
        elif kind == "stream":
            line = i
        elif kind == "rowlocal":
            # A random column (7 bits above the line offset) of a hot row.
            line = (hot[r.randrange(16)] & ~0x7F) | r.randrange(128)
        else:  # mixed
            line = r.randrange(1 << 24)
            write = r.random() < 1 / 3
        out.append(f"0x{line * LINE:x} {'WRITE' if write else 'READ'} {t}")
    return "\n".join(out) + "\n", t

def p99(hist):
    n = sum(hist.values())
    need, acc = math.ceil(0.99 * n), 0
    for k, v in sorted((int(k), v) for k, v in hist.items()):
        acc += v
        if acc >= need:
            return k
    return 0

def err(a, b):
    return (a - b) / b * 100 if b else float("nan")

rows = []
for std in standards:
    ini = f"{tmp}/{std}.ini"
    with open(ini, "w") as f:
        f.write(subprocess.run([ours, "--dramsim3-ini", std], check=True, capture_output=True, text=True).stdout)
    for kind in ("random", "stream", "rowlocal", "mixed"):
        for gap in GAPS:
            text, end = trace(kind, gap, f"{kind}-{gap}")
            path = f"{tmp}/{std}-{kind}-{gap}.trace"
            with open(path, "w") as f:
                f.write(text)
            cycles = end + 20000  # time to drain
            mine = dict(l.split() for l in subprocess.run(
                [ours, std, path, str(cycles)], check=True, capture_output=True, text=True).stdout.splitlines())
            outdir = f"{tmp}/out-{std}-{kind}-{gap}"
            subprocess.run(["mkdir", "-p", outdir], check=True)
            subprocess.run([ds3, ini, "-c", str(cycles), "-t", path, "-o", outdir],
                           check=True, capture_output=True)
            theirs = json.load(open(f"{outdir}/dramsim3.json"))["0"]
            a = (float(mine["mean_read_latency"]), float(mine["p99_read_latency"]), float(mine["bandwidth_gb_s"]))
            b = (theirs["average_read_latency"], p99(theirs["read_latency"]), theirs["average_bandwidth"])
            rows.append((std, kind, gap, a, b))

print("| standard | trace | clocks/request | mean latency ours / DRAMsim3 (clocks) | err | p99 ours / DRAMsim3 | err | GB/s ours / DRAMsim3 | err |")
print("|---|---|---|---|---|---|---|---|---|")
worst = [0.0, 0.0, 0.0]
for std, kind, gap, a, b in rows:
    e = [err(x, y) for x, y in zip(a, b)]
    worst = [max(w, abs(x)) for w, x in zip(worst, e)]
    print(f"| {std} | {kind} | {gap} | {a[0]:.1f} / {b[0]:.1f} | {e[0]:+.1f}% | {a[1]:.0f} / {b[1]:.0f} | {e[1]:+.1f}% "
          f"| {a[2]:.2f} / {b[2]:.2f} | {e[2]:+.1f}% |")
print(f"\nlargest error: mean {worst[0]:.1f}%, p99 {worst[1]:.1f}%, bandwidth {worst[2]:.1f}%")
PY
