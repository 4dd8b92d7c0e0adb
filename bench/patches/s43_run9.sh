#!/usr/bin/env bash
# session 43, call 9: v61f, v61d with tile m1's rolled prep after tile m0's three parts (bf16p): tests, then the A/B
# against HEAD's binary and v61d
N=build-s43/v61f
echo "== tests"; timeout 300 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $N/test_golden 2>&1 | tail -1
CONFIGS="head=build-s43/rev_only:- v61d=build-s43/d_only:- v61f=$N:-" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_24 bf16p|--sq_2_--seqlen_8192_--page-size_33 bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_2_--seqlen_8192_--page-size_40 bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_1_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_200 bf16p|--sq_2_--seqlen_8192" \
  bash bench/patches/s40_ab.sh
