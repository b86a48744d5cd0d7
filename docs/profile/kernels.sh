#!/bin/bash
# docs/profile/kernels.sh BIN TAG [SDK_BUILD]: host instructions inside Node::run per simulated
# instruction executed (skipped polling-loop iterations left out, as `nanopu bench` does) on the
# compute kernels of `nanopu bench` (load-independent; OUT: where the outputs go, default /tmp).
# The pattern must name one function that does not call itself or another match: callgrind turns
# collection on and off at every entry and exit of a match (`*Node::run*` also matched
# `Node::run_slice` once it was no longer inlined, and counted almost nothing).
BIN=$1; TAG=$2; DIR=${3:-$(dirname "$0")/../../sdk/build}
for k in matmul coremark_like pointer_chase hashing; do
  valgrind --tool=callgrind --toggle-collect='*Node::run_inner*' --callgrind-out-file=${OUT:-/tmp}/cg-$k-$TAG.out $BIN run $DIR/$k.elf --stats-json ${OUT:-/tmp}/$k-$TAG.json > ${OUT:-/tmp}/cg-$k-$TAG.log 2>&1
  ir=$(grep "Collected" ${OUT:-/tmp}/cg-$k-$TAG.log | awk '{print $4}' | tr -d ,)
  n=$(python3 -c "import json;print(json.load(open('${OUT:-/tmp}/$k-$TAG.json'))['executed_instret'])")
  echo "$k $TAG Ir=$ir executed=$n Ir/instruction=$(python3 -c "print(round($ir/$n, 1))")"
done
