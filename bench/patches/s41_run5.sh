#!/usr/bin/env bash
# session 41, call 5: hd_finish's two rows in one rolled pass (HD_FIN_ROLL_ON=1, the page-64 bf16p kernels):
# tests on the variant, 4K timelines of both (HD_TRACE builds), then the A/B against HEAD's binary
set -u
r=build-s41/roll
echo "== tests $r"; timeout 240 $r/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden $r"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $r/test_golden 2>&1 | tail -2
for v in trace troll; do
  for sel in 0x1 0x2; do
    MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$sel MLA_BENCH_PRECISION=bf16p MLA_HD_TRACE="$OUT/${v}_$sel" \
      build-s41/$v/test_cuda_decode_hopper 2>&1 | grep -E "^bench"
    python3 scripts/cta_summary.py "$OUT"/${v}_$sel*.txt.cta | sed "s/^/$v /"
  done
done
CONFIGS="base=build-s41/base:- roll=$r:-" \
SHAPES="bf16p|--sq_2_--seqlen_4096 bf16p|--sq_2_--seqlen_8192 bf16p|--sq_2_--seqlen_8192_--varlen bf16p|--sq_1_--seqlen_8192 bf16p|--heads_64_--sq_2_--seqlen_8192 bf16p|--sq_2_--seqlen_16384 bf16p|--sq_2_--seqlen_4096_--page-size_61" \
ROUNDS=3 bash bench/patches/s40_ab.sh
