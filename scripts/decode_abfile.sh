#!/usr/bin/env bash
# A/B of this tree's decode kernel against another version of src/cuda/decode_hopper.cu on the GPU
# machine (issue 5 tuning): build-gpu (this tree) and build-gpu-b (a copy of the tree with FILE as
# the kernel; carry it in a git-ignored folder such as golden/), then the issue's shapes in both
# precisions, variants alternating, $2 rounds (default 2); medians last.
#   SHAPES=fp8: the FP8 cache shapes (and two BF16 ones) instead of the BF16 set.
#   bash scripts/decode_abfile.sh golden/ab/decode_hopper.cu [rounds]
set -uo pipefail
file=$1; rounds=${2:-2}
OUT=${OUT:-out}; mkdir -p "$OUT"; rm -f "$OUT/abf.txt"
tb=/tmp/tree_b; rm -rf $tb; mkdir -p $tb
tar --exclude='./build*' --exclude='./golden' --exclude='./out' -cf - . | tar -xf - -C $tb
cp "$file" $tb/src/cuda/decode_hopper.cu
[ -f build-gpu/Makefile ] || cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
cmake -S $tb -B build-gpu-b -DCMAKE_BUILD_TYPE=Release >/dev/null || exit 1
( cmake --build build-gpu -j 8 > "$OUT/build_a.log" 2>&1 || echo "BUILD A FAILED" ) &
( cmake --build build-gpu-b -j 8 --target mla_cli > "$OUT/build_b.log" 2>&1 || echo "BUILD B FAILED" ) &
wait
shapes=("bf16p|--precision bf16p --sq 2 --seqlen 4096" "bf16p|--precision bf16p --sq 2 --seqlen 8192"
        "bf16p|--precision bf16p --sq 2 --seqlen 32768" "bf16p|--precision bf16p --sq 1 --seqlen 8192"
        "bf16p|--precision bf16p --sq 2 --seqlen 8192 --varlen" "bf16p b=4|--precision bf16p --batch 4 --sq 1 --seqlen 32768"
        "spec|--precision spec --sq 2 --seqlen 4096" "spec|--precision spec --sq 2 --seqlen 8192"
        "spec|--precision spec --sq 1 --seqlen 8192" "spec b=4|--precision spec --batch 4 --sq 1 --seqlen 32768"
        "h16|--heads 16 --sq 1 --seqlen 16384" "fp8|--format fp8 --sq 2 --seqlen 8192")
[ "${SHAPES:-}" = fp8 ] && shapes=("fp8|--format fp8 --sq 2 --seqlen 8192" "fp8|--format fp8 --sq 1 --seqlen 8192"
        "fp8 h16|--format fp8 --heads 16 --sq 1 --seqlen 16384" "fp8 b=4|--format fp8 --batch 4 --sq 1 --seqlen 32768"
        "fp8 bf16p|--format fp8 --precision bf16p --sq 2 --seqlen 8192" "ra|--format ropeaware --sq 2 --seqlen 8192"
        "fp8 page 16|--format fp8 --sq 2 --seqlen 8192 --page-size 16" "bf16p|--precision bf16p --sq 2 --seqlen 8192"
        "spec|--precision spec --sq 2 --seqlen 8192")
for r in $(seq "$rounds"); do
  for sh in "${shapes[@]}"; do
    label=${sh%%|*}; args=${sh#*|}
    for v in a b; do
      B=build-gpu; [ $v = b ] && B=build-gpu-b
      line=$($B/mla bench decode --backend cuda --no-ceilings --batch 128 --heads 128 $args 2>&1 | grep "^decode" | tail -1)
      echo "$v | $label $args | $(echo "$line" | awk '{print $(NF-4)}') | $(echo "$line" | awk '{print $(NF-2)}')" >> "$OUT/abf.txt"
    done
  done
done
python3 scripts/ab_medians.py "$OUT/abf.txt"
