#!/usr/bin/env bash
# session 42, call 1: the e4m3 -> f16 conversion's issue rate (bench/cvt_probe.cu) and the pipes s1 keeps busy
# (Nsight Compute, FP8-656 bf16p b=128 h=128 s_q=2 8K), beside the BF16 bf16p kernel's. BIN: an mla binary.
set -u
OUT=${OUT:-out}; mkdir -p "$OUT"; BIN=${BIN:-build-s41/spec/mla}
nvcc -O3 -gencode arch=compute_90a,code=sm_90a -Ibench -o /tmp/cvt_probe bench/cvt_probe.cu && /tmp/cvt_probe | tee "$OUT/cvt.txt"
M='regex:sm__inst_executed_pipe_[a-z0-9_]+\.avg\.pct_of_peak_sustained_active$,regex:sm__pipe_[a-z0-9_]+_cycles_active\.avg\.pct_of_peak_sustained_active$,sm__inst_executed.sum,sm__cycles_elapsed.avg,smsp__issue_active.avg.pct_of_peak_sustained_active'
for k in "hn_decode:fp8" "hd_decode_kernel:bf16"; do
  re=${k%%:*}; fmt=${k##*:}
  ncu --clock-control none -k regex:$re --launch-skip 4 --launch-count 1 --metrics "$M" -f -o "$OUT/pipes_$fmt" \
    "$BIN" bench decode --backend cuda --no-ceilings --format $fmt --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 > "$OUT/pipes_$fmt.log" 2>&1 || tail -5 "$OUT/pipes_$fmt.log"
  echo "== $fmt ($re)"; ncu --import "$OUT/pipes_$fmt.ncu-rep" --page raw --csv 2>/dev/null | python3 -c '
import csv,sys
r=list(csv.reader(sys.stdin))
if len(r)<3: sys.exit()
h,u,v=r[0],r[1],r[2]
for i,n in enumerate(h):
    if ("pipe" in n or "issue" in n or "inst_executed.sum" in n or "cycles_elapsed" in n) and v[i] not in ("","0","0.00"): print("%-70s %s" % (n, v[i]))
'
done
