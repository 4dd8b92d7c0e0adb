#!/usr/bin/env bash
# session 45, call 5: v66c (hd_f8_issue_rows as the BF16 gather: eight lanes a row's 128 bytes, four rows an
# instruction, every address a lane base plus an immediate): tests, then the producer's cp.async tile by tile
# (MLA_HD_GATHER=0) against v66b (a row a step, rolled) and v66c
N=${N:-build-s45/new}
bash bench/patches/ab_tests.sh $N
CONFIGS="cp=$N:MLA_HD_GATHER=0 b=build-s45/b:- c=build-s45/c:-" ROUNDS=${ROUNDS:-2} \
SHAPES="fp8spec|--sq_2_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192_--page-size_3 fp8spec|--sq_2_--seqlen_8192_--page-size_7 fp8spec|--sq_2_--seqlen_8192_--page-size_17 fp8spec|--sq_2_--seqlen_8192_--page-size_64 fp8spec|--sq_1_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_4096_--page-size_1" \
  bash bench/patches/s40_ab.sh
