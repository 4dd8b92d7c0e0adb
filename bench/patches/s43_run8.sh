#!/usr/bin/env bash
# session 43, call 8: v61e, both preps in the general-page kernels, the rolled one from page MLA_HD_GPREP (default 48)
# up: against HEAD's binary and v61d (rolled everywhere); tests on v61e first
N=build-s43/v61e
echo "== tests"; MLA_HD_GPREP=36 timeout 300 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden"; MLA_HD_GPREP=36 MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $N/test_golden 2>&1 | tail -1
CONFIGS="head=build-s43/rev_only:- v61d=build-s43/d_only:- e36=$N:MLA_HD_GPREP=36 e48=$N:-" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_24 bf16p|--sq_2_--seqlen_8192_--page-size_33 bf16p|--sq_2_--seqlen_8192_--page-size_40 bf16p|--sq_2_--seqlen_8192_--page-size_50 bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_1_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192" \
  bash bench/patches/s40_ab.sh
