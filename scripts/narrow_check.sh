#!/usr/bin/env bash
# The narrow FP8 decode kernel (src/cuda/decode_narrow.cu) on the GPU machine in one call: build,
# test_cuda_decode_hopper (all of it), then the bytes-bound FP8 shapes with the narrow kernel and
# without it (MLA_HD_NARROW=0), ROUNDS rounds (default 2), medians last.
#   bash scripts/narrow_check.sh [notest]
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"; B=build-gpu
bash scripts/gpu.sh none > "$OUT/gpu_build.txt" 2>&1 || { tail -30 "$OUT/gpu_build.txt"; exit 1; }
grep -A3 "hn_decode" "$OUT/build.log" | grep -E "registers|spill" | head -3
if [ "${1:-}" != notest ]; then
  timeout 300 $B/tests/test_cuda_decode_hopper > "$OUT/t.log" 2>&1; echo "test rc=$?: $(tail -1 "$OUT/t.log")"
  grep -E "^FAIL" "$OUT/t.log" | head -6 | cut -c1-300
fi
rm -f "$OUT/nb.txt"
shapes=("h16 16K|--batch 128 --heads 16 --sq 1 --seqlen 16384" "h16 b=4 32K|--batch 4 --heads 16 --sq 1 --seqlen 32768"
        "h8 4K|--batch 128 --heads 8 --sq 1 --seqlen 4096" "h16 page16|--batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 16")
for r in $(seq "${ROUNDS:-2}"); do
  for sh in "${shapes[@]}"; do
    for nr in 1 0; do
      line=$(MLA_HD_NARROW=$nr timeout 60 $B/mla bench decode --backend cuda --no-ceilings --format fp8 ${sh#*|} 2>&1 | grep "^decode" | tail -1)
      echo "$nr|${sh%%|*}|$(echo "$line" | awk '{print $(NF-2)}')" >> "$OUT/nb.txt"
    done
  done
done
python3 - "$OUT/nb.txt" <<'PY'
import statistics, sys, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    n, s, v = l.strip().split('|')
    try: d[(s, n)].append(float(v))
    except ValueError: pass
print("%-14s %12s %12s  (GB/s, median)" % ("shape", "narrow", "64-row"))
for s in dict.fromkeys(k[0] for k in d):
    print("%-14s %12.0f %12.0f" % (s, statistics.median(d[(s, '1')] or [0]), statistics.median(d[(s, '0')] or [0])))
PY
