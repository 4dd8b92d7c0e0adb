#!/usr/bin/env bash
# session 41, call 6: v56 (hd_finish's rows in one rolled pass in the bf16p base kernel): tests, then A/B against
# HEAD's binary. NEW / BASE (binary folders) and SHAPES may be set: call 12 ran it through s41_run7.sh
set -u
n=${NEW:-build-s41/new}; b=${BASE:-build-s41/base}
echo "== tests $n"; timeout 240 $n/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden $n"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $n/test_golden 2>&1 | tail -1
CONFIGS="${BNAME:-base}=$b:- ${NNAME:-new}=$n:-" \
SHAPES="${SHAPES:-bf16p|--sq_2_--seqlen_4096 bf16p|--sq_2_--seqlen_8192 bf16p|--sq_2_--seqlen_16384 bf16p|--sq_2_--seqlen_32768 bf16p|--sq_2_--seqlen_8192_--varlen bf16p|--sq_2_--seqlen_4096_--varlen bf16p|--sq_2_--seqlen_8192_--causal_1 bf16p|--heads_100_--sq_2_--seqlen_8192 bf16p|--sq_1_--seqlen_8192 bf16p|--sq_2_--seqlen_8192_--page-size_61 spec|--sq_2_--seqlen_8192}" \
ROUNDS=${ROUNDS:-3} bash bench/patches/s40_ab.sh
