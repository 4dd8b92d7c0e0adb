#!/usr/bin/env bash
# session 41, call 1: the DSMEM probe, the clock under mla bench shape by shape, and env-knob A/B at HEAD
set -u
echo "== dsmem probe"
mkdir -p build-gpu && nvcc -O3 -gencode arch=compute_90a,code=sm_90a bench/dsmem_probe.cu -o build-gpu/dsmem_probe && timeout 120 build-gpu/dsmem_probe
echo "== clocks (nvidia-smi every 20 ms; each shape alone after 3 s idle)"
b=build-s41/base
for s in 4096 8192 16384 32768; do
  sleep 3
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 20 > $OUT/clk_$s.csv &
  sp=$!
  $b/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen $s 2>&1 | grep -E "^decode"
  kill $sp; wait $sp 2>/dev/null
  python3 - $OUT/clk_$s.csv <<'PY'
import sys, statistics
rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") >= 3]
busy = [r for r in rows if float(r[2].split()[0]) > 200]
if busy:
    clk = [int(r[1].split()[0]) for r in busy]; pw = [float(r[2].split()[0]) for r in busy]
    thr = [r[3].strip() for r in busy]
    print(f"  samples >200 W: {len(busy)} of {len(rows)}; clock median {statistics.median(clk)} min {min(clk)} max {max(clk)} MHz; power median {statistics.median(pw):.0f} W; throttle reasons {sorted(set(thr))}")
else:
    print("  no busy samples")
PY
done
echo "== knob A/B at HEAD"
CONFIGS="base=$b:- bal=$b:MLA_DECODE_BALANCE=1 c3=$b:MLA_DECODE_SEG_COST=3 c9=$b:MLA_DECODE_SEG_COST=9" \
SHAPES="bf16p|--sq_2_--seqlen_4096 bf16p|--sq_2_--seqlen_8192 bf16p|--sq_2_--seqlen_8192_--varlen bf16p|--sq_2_--seqlen_4096_--varlen bf16p|--sq_1_--seqlen_8192" \
ROUNDS=2 bash bench/patches/s40_ab.sh
