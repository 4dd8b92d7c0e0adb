#!/usr/bin/env bash
# session 45, call 6: v66c gathered at every FP8 page (MLA_HD_GATHER=2) against the rule (TMA at multiples of 16,
# group tiles at pages 12..15, 24..31, 36.., the gather at the rest), default precision, h=128 s_q=2 8K
N=${N:-build-s45/new}
bash bench/patches/ab_tests.sh $N
CONFIGS="auto=$N:- g2=$N:MLA_HD_GATHER=2" ROUNDS=${ROUNDS:-2} \
SHAPES="fp8spec|--sq_2_--seqlen_8192_--page-size_12 fp8spec|--sq_2_--seqlen_8192_--page-size_15 fp8spec|--sq_2_--seqlen_8192_--page-size_24 fp8spec|--sq_2_--seqlen_8192_--page-size_28 fp8spec|--sq_2_--seqlen_8192_--page-size_40 fp8spec|--sq_2_--seqlen_8192_--page-size_50 fp8spec|--sq_2_--seqlen_8192_--page-size_61 fp8spec|--sq_2_--seqlen_8192_--page-size_100 fp8spec|--sq_2_--seqlen_8192_--page-size_120 fp8spec|--sq_2_--seqlen_8192_--page-size_16 fp8spec|--sq_2_--seqlen_8192_--page-size_64" \
  bash bench/patches/s40_ab.sh
