#!/usr/bin/env bash
# Appends one line of `nanopu bench` figures for the current commit to
# docs/bench-history.csv, so speed regressions show up in the history.
#
#   scripts/bench-record.sh [--pgo] [NOTE]
#
# With --pgo the figures are those of the profile-guided build
# (scripts/pgo-build.sh). The note starts with the build when it is not a
# plain one ("PGO build"), as the binary's `nanopu bench` JSON reports it.
# Run it on a quiet machine (nothing else building): the figures are host
# time. The CSV says which machine (CPU model, cores) each line came from.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/bench-history.csv
json=$(mktemp)
json_t2=$(mktemp)
trap 'rm -f "$json" "$json_t2"' EXIT
bin=./target/release/nanopu
if [ "${1:-}" = --pgo ]; then
    shift
    bin=$(scripts/pgo-build.sh)
else
    cargo build --release -q
fi
make -C sdk -s >/dev/null
"$bin" bench --repeat 3 --json "$json" >&2
# The network benchmarks again, partitioned on both host cores (issue #16).
"$bin" bench --net-only --threads 2 --repeat 3 --json "$json_t2" >&2
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates sdk || echo "+dirty")
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//; s/,/ /g')
cores=$(nproc)
note=${1:-}
if [ ! -f "$out" ]; then
    echo "date,commit,cpu,cores,matmul_mips,coremark_like_mips,pointer_chase_mips,idle_cycles_per_s,incast80_packets_per_s,incast80_sim_us_per_s,leafspine64_packets_per_s,leafspine64_sim_us_per_s,incast1024_sim_us_per_s,hashing_mips,node16_mips,node16_sim_us_per_s,node16_full_mips,node16_full_sim_us_per_s,incast80_t2_packets_per_s,leafspine64_t2_packets_per_s,incast1024_t2_sim_us_per_s,note" >"$out"
fi
python3 - "$json" "$json_t2" "$commit" "$cpu" "$cores" "${note//,/;}" >>"$out" <<'PY'
import json, sys, datetime
j = json.load(open(sys.argv[1]))
j.update({k.replace("_packets", "_t2_packets").replace("_sim_us", "_t2_sim_us"): v
          for k, v in json.load(open(sys.argv[2])).items()})
keys = ["kernel_mips", "coremark_like_mips", "pointer_chase_mips", "idle_cycles_per_s",
        "incast80_packets_per_s", "incast80_sim_us_per_s", "leafspine64_packets_per_s",
        "leafspine64_sim_us_per_s", "incast1024_sim_us_per_s", "hashing_mips", "node16_mips",
        "node16_sim_us_per_s", "node16_full_mips", "node16_full_sim_us_per_s",
        "incast80_t2_packets_per_s", "leafspine64_t2_packets_per_s", "incast1024_t2_sim_us_per_s"]
vals = [f"{j[k]:.4g}" if k in j else "" for k in keys]
date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
# The build the figures came from, as the binary reports it (`nanopu bench`).
build = j.get("build", "plain")
note = ("PGO build; " if build == "profile-guided" else "" if build == "plain" else f"{build} build; ") + sys.argv[6]
print(",".join([date, sys.argv[3], sys.argv[4], sys.argv[5]] + vals + [note]))
PY
tail -n 1 "$out"
