#!/usr/bin/env bash
# session 45, call 3: v65c (the rule by kernel: HN_GATHER_BELOW(rows), 64 rows under 3 keys, else under 8): tests, then
# the bulk copies (MLA_HD_GATHER=0) against the rule and gathering every page (=2), at the pages that set the rule
N=${N:-build-s45/new}
bash bench/patches/ab_tests.sh $N
CONFIGS="bulk=$N:MLA_HD_GATHER=0 auto=$N:- g2=$N:MLA_HD_GATHER=2" ROUNDS=${ROUNDS:-3} \
SHAPES="fp8bf16p|--sq_2_--seqlen_8192_--page-size_2 fp8bf16p|--sq_2_--seqlen_8192_--page-size_3 fp8bf16p|--sq_1_--seqlen_8192_--page-size_2 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_3 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_7 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_8 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_16 fp8w1|--heads_16_--sq_2_--seqlen_16384_--page-size_2 fp8w1|--heads_16_--sq_2_--seqlen_16384_--page-size_4 fp8w1|--heads_16_--sq_2_--seqlen_16384_--page-size_7 fp8w1|--heads_16_--sq_2_--seqlen_16384_--page-size_8" \
  bash bench/patches/s40_ab.sh
