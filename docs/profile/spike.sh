#!/bin/bash
# docs/profile/spike.sh NANOPU SPIKE [ROUNDS]: the bench's four compute kernels, built ten times
# longer, run alternately on nanopu (timing on) and on Spike (riscv-isa-sim, no timing), simulated
# MIPS side by side. Both count hart 0's instructions as nanopu reports them (Spike's own
# `--log-commits` count of the same binary differs by 0.1 %); Spike's time is its process's wall
# time less its start-up (the fastest of five runs of hello.elf). HARTS: Spike's harts (default 4,
# the node's: harts 1-3 wait in wfi, as on nanopu, where they cost nothing); OUT: where the
# kernels and outputs go (default /tmp).
#
# Spike is not packaged in Debian; built so for docs/profile/README.md (commit 55b4658, 2026-06):
#   apt-get install -y device-tree-compiler
#   git clone https://github.com/riscv-software-src/riscv-isa-sim && cd riscv-isa-sim
#   mkdir build && cd build && ../configure --prefix=$HOME/spike && make -j2 && make install
set -e
BIN=$1; SPIKE=$2; R=${3:-3}; P=${HARTS:-4}; O=${OUT:-/tmp}; K=$O/spike-kernels
SDK=$(cd "$(dirname "$0")/../../sdk" && pwd)
[ -x "$BIN" ] && [ -x "$SPIKE" ] || { echo "usage: $0 NANOPU SPIKE [ROUNDS]"; exit 2; }
# The cycle CSR the kernels read is Zicntr's; Spike leaves it out of plain rv64gc.
ISA=rv64gc_zicntr
make -C "$SDK" --no-print-directory BUILD="$K" matmul_CFLAGS=-DREPS=160 \
  coremark_like_CFLAGS=-DITERATIONS=400 hashing_CFLAGS=-DROUNDS=80 pointer_chase_CFLAGS=-DROUNDS=40 \
  "$K/matmul.elf" "$K/coremark_like.elf" "$K/hashing.elf" "$K/pointer_chase.elf" "$K/hello.elf" >/dev/null
wall() { python3 -c 'import subprocess,sys,time
t=time.perf_counter(); subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,check=True); print(time.perf_counter()-t)' "$@"; }
s0=$(for i in 1 2 3 4 5; do wall "$SPIKE" --isa=$ISA -p$P "$K/hello.elf"; done | sort -n | head -1)
echo "spike -p$P start-up ${s0} s"
for r in $(seq "$R"); do
  for k in matmul coremark_like hashing pointer_chase; do
    "$BIN" run "$K/$k.elf" --stats-json "$O/spike-$k.json" >/dev/null
    read -r n ours < <(python3 -c "import json;d=json.load(open('$O/spike-$k.json'));n=d['harts'][0]['instret'];print(n, round(n/d['wall_s']/1e6,1))")
    ws=$(wall "$SPIKE" --isa=$ISA -p$P "$K/$k.elf")
    echo "round $r $k instructions=$n nanopu_mips=$ours spike_mips=$(python3 -c "print(round($n/($ws-$s0)/1e6,1))")"
  done
done
