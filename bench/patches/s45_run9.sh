#!/usr/bin/env bash
# session 45, call 9: v67 (consumer 1's warps gather the refills of the FP8 kernel's gathered pages, as its lane 0
# issues the TMA boxes elsewhere: the _f8_r2 kernel) against v66 (the producer issues every tile, MLA_HD_F8R=1):
# tests (the default: v67), then default precision h=128 8K
N=${N:-build-s45/new}
bash bench/patches/ab_tests.sh $N
CONFIGS="v66=$N:MLA_HD_F8R=1 v67=$N:-" ROUNDS=${ROUNDS:-2} \
SHAPES="fp8spec|--sq_2_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192_--page-size_7 fp8spec|--sq_2_--seqlen_8192_--page-size_17 fp8spec|--sq_2_--seqlen_8192_--page-size_24 fp8spec|--sq_2_--seqlen_8192_--page-size_50 fp8spec|--sq_1_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192_--page-size_64" \
  bash bench/patches/s40_ab.sh
