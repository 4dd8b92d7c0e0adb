#!/usr/bin/env bash
# session 45, call 1 (v65) and 2 (v65b: line-aligned pieces): v65 (the FP8 raw-tile kernels gather pages under 8 keys row by row, eight lanes a 128-byte
# piece, four rows a warp instruction, all four producer warps: hn_issue_rows): tests, then the bulk copies
# (MLA_HD_GATHER=0) against v65's rule and v65 gathering every page (=2)
N=${N:-build-s45/new}
bash bench/patches/ab_tests.sh $N
CONFIGS="bulk=$N:MLA_HD_GATHER=0 auto=$N:- g2=$N:MLA_HD_GATHER=2" ROUNDS=${ROUNDS:-2} \
SHAPES="fp8bf16p|--sq_2_--seqlen_8192_--page-size_1 fp8bf16p|--sq_2_--seqlen_8192_--page-size_2 fp8bf16p|--sq_2_--seqlen_8192_--page-size_3 fp8bf16p|--sq_2_--seqlen_8192_--page-size_4 fp8bf16p|--sq_2_--seqlen_8192_--page-size_7 fp8bf16p|--sq_2_--seqlen_8192_--page-size_8 fp8bf16p|--sq_2_--seqlen_8192_--page-size_16 fp8bf16p|--sq_2_--seqlen_8192_--page-size_61 fp8bf16p|--sq_2_--seqlen_8192_--page-size_64 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_1 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_2 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_4 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_8 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_16 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_64 fp8w1|--heads_16_--sq_2_--seqlen_16384_--page-size_1 fp8w1|--heads_16_--sq_2_--seqlen_16384_--page-size_64 fp8bf16p|--sq_1_--seqlen_8192_--page-size_1" \
  bash bench/patches/s40_ab.sh
