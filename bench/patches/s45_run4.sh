#!/usr/bin/env bash
# session 45, call 4: v66 (the 64-row FP8 kernel, default precision, gathers the pages neither TMA nor the group
# tiles take: hd_f8_issue_rows, the _f8_r kernel): tests (v66a: the row loop unrolled), then the producer's
# cp.async tile by tile (MLA_HD_GATHER=0) against v66a and v66b (the row loop rolled: fewer spills)
N=${N:-build-s45/new}
bash bench/patches/ab_tests.sh $N
CONFIGS="cp=$N:MLA_HD_GATHER=0 a=$N:- b=build-s45/b:-" ROUNDS=${ROUNDS:-2} \
SHAPES="fp8spec|--sq_2_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192_--page-size_3 fp8spec|--sq_2_--seqlen_8192_--page-size_7 fp8spec|--sq_2_--seqlen_8192_--page-size_17 fp8spec|--sq_2_--seqlen_8192_--page-size_64 fp8spec|--sq_1_--seqlen_8192_--page-size_1 fp8bf16p|--sq_2_--seqlen_8192_--page-size_2" \
  bash bench/patches/s40_ab.sh
