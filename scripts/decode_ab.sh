#!/usr/bin/env bash
# A/B of two compile-time variants of the decode kernel on the GPU machine: build-gpu (this tree)
# and build-gpu-b (this tree with -D$1), then the bf16p shapes of issue 5 alternately, $2 rounds
# (default 3): one line per run, medians last.
#   bash scripts/decode_ab.sh HD_SOME_MACRO [rounds]
set -uo pipefail
flag=$1; rounds=${2:-3}
rm -f "${OUT:-out}/ab.txt"
OUT=${OUT:-out}; mkdir -p "$OUT"
if [ ! -f build-gpu/Makefile ]; then cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1; fi
if [ ! -f build-gpu-b/Makefile ]; then cmake -S . -B build-gpu-b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-D$flag >/dev/null || exit 1; fi
( cmake --build build-gpu -j 8 --target mla_cli > "$OUT/build_a.log" 2>&1 ) &
( cmake --build build-gpu-b -j 8 --target mla_cli > "$OUT/build_b.log" 2>&1 ) &
wait
shapes=("--sq 2 --seqlen 8192" "--sq 2 --seqlen 32768" "--sq 1 --seqlen 8192")
for r in $(seq "$rounds"); do
  for sh in "${shapes[@]}"; do
    for v in a b; do
      B=build-gpu; [ $v = b ] && B=build-gpu-b
      tf=$($B/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 128 --heads 128 $sh 2>&1 | grep "^decode" | awk '{print $(NF-4)}')
      echo "$v | $sh | $tf" | tee -a "$OUT/ab.txt"
    done
  done
done
python3 scripts/ab_medians.py "$OUT/ab.txt"
