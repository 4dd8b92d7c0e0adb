#!/usr/bin/env bash
# session 43, call 14: v61 with the _g / _gs choice by the boxes a tile (HD_GPREP_BOXES): tests, then the automatic
# choice against both kernels forced (MLA_HD_GKERN=1 / 2)
N=build-s43/v61h
echo "== tests"; timeout 300 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $N/test_golden 2>&1 | tail -1
CONFIGS="auto=$N:- g=$N:MLA_HD_GKERN=1 gs=$N:MLA_HD_GKERN=2" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_2_--seqlen_8192_--page-size_36 bf16p|--sq_2_--seqlen_8192_--page-size_41 bf16p|--sq_2_--seqlen_8192_--page-size_44 bf16p|--sq_2_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_100" \
  bash bench/patches/s40_ab.sh
