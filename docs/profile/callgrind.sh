#!/bin/bash
# docs/profile/callgrind.sh BIN TAG [nanopu net options]: host instructions inside Cluster::run_until per delivered packet on three fixed workloads (OUT: where the outputs go, default /tmp)
BIN=$1; TAG=$2; shift 2
for cfg in in80 ls64 in1024; do
  valgrind --tool=callgrind --toggle-collect='*Cluster::run_until*' --callgrind-out-file=${OUT:-/tmp}/cg-$cfg-$TAG.out $BIN net $(dirname "$0")/$cfg.toml --json ${OUT:-/tmp}/$cfg-$TAG.json "$@" > ${OUT:-/tmp}/cg-$cfg-$TAG.log 2>&1
  ir=$(grep "Collected" ${OUT:-/tmp}/cg-$cfg-$TAG.log | awk '{print $4}')
  pk=$(python3 -c "import json;print(json.load(open('${OUT:-/tmp}/$cfg-$TAG.json'))['packets_delivered'])")
  echo "$cfg $TAG Ir=$ir packets=$pk Ir/packet=$(python3 -c "print(round($ir/$pk))")"
done
