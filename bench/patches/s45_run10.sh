#!/usr/bin/env bash
# session 45, call 10: v67's final tree (the _f8_r kernel with consumer 1's gathered refills; group tiles only on
# 64-row boxes with 7/8 of their rows keys): tests, then the rule's edges against group tiles forced (MLA_HD_F8G=2)
N=${N:-build-s45/new}
bash bench/patches/ab_tests.sh $N
CONFIGS="auto=$N:- grp=$N:MLA_HD_F8G=2" ROUNDS=${ROUNDS:-2} \
SHAPES="fp8spec|--sq_2_--seqlen_8192_--page-size_30 fp8spec|--sq_2_--seqlen_8192_--page-size_56 fp8spec|--sq_2_--seqlen_8192_--page-size_58 fp8spec|--sq_2_--seqlen_8192_--page-size_61 fp8spec|--sq_2_--seqlen_8192_--page-size_100 fp8spec|--sq_2_--seqlen_8192_--page-size_120 fp8spec|--sq_2_--seqlen_8192_--page-size_1" \
  bash bench/patches/s40_ab.sh
