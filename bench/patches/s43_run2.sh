#!/usr/bin/env bash
# session 43, call 2: v61a, hd_producer_gtma's four issuers as lanes 0-3 of producer warp 0 (MLA_HD_GLANES=1)
# instead of lane 0 of warps 0-3. Tests with the knob on, then the A/B against the knob off.
N=build-s43/v61a
echo "== tests (knob on)"; MLA_HD_GLANES=1 timeout 300 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden (knob on)"; MLA_HD_GLANES=1 MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $N/test_golden 2>&1 | tail -1
CONFIGS="warps=$N:- lanes=$N:MLA_HD_GLANES=1 lanes64=$N:MLA_HD_GLANES=1,MLA_HD_GPAGE=2" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_33 bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_1_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192" \
  bash bench/patches/s40_ab.sh
