#!/usr/bin/env bash
# session 44, call 10: v64 (the FP8 raw-tile kernels gather pages under 4 keys row by row, hn_issue_rows): tests, then HEAD
# against v64 (auto) and v64 gathering every page (MLA_HN_GATHER=2) / never (=0)
N=${N:-build-s44/v64}
bash bench/patches/ab_tests.sh $N
CONFIGS="head=build-s44/head:- auto=$N:- g2=$N:MLA_HN_GATHER=2 g0=$N:MLA_HN_GATHER=0" ROUNDS=${ROUNDS:-2} \
SHAPES="fp8bf16p|--sq_2_--seqlen_8192_--page-size_1 fp8bf16p|--sq_2_--seqlen_8192_--page-size_2 fp8bf16p|--sq_2_--seqlen_8192_--page-size_3 fp8bf16p|--sq_2_--seqlen_8192_--page-size_4 fp8bf16p|--sq_2_--seqlen_8192_--page-size_8 fp8bf16p|--sq_2_--seqlen_8192_--page-size_64 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_1 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_2 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_4 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_64 fp8w1|--heads_16_--sq_2_--seqlen_16384_--page-size_1 bf16p|--sq_2_--seqlen_8192_--page-size_1" \
  bash bench/patches/s40_ab.sh
