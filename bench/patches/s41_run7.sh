#!/usr/bin/env bash
# session 41, last call: v56's rolled out rows in the default program's BF16 kernels too (hd_consumer, !f8):
# tests, then A/B against v56 (build-s41/v56) with the order alternating
set -u
n=build-s41/spec
echo "== tests $n"; timeout 240 $n/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden $n"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $n/test_golden 2>&1 | tail -1
CONFIGS="v56=build-s41/v56:- spec=$n:-" \
SHAPES="spec|--sq_2_--seqlen_4096 spec|--sq_2_--seqlen_8192 spec|--sq_2_--seqlen_8192_--varlen spec|--sq_1_--seqlen_8192 spec|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_4096 fp8spec|--sq_2_--seqlen_8192" \
ROUNDS=4 bash bench/patches/s40_ab.sh
