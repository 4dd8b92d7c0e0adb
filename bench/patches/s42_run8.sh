#!/usr/bin/env bash
# session 42, call 8: where the page-aligned tiles (v57) beat the runs of rows near their 7/8 line: the final binary
# with MLA_HD_PTILE=0 (runs of rows) against its default, bf16p s_q=2 8K
CONFIGS="runs=build-s42/ab/head:MLA_HD_PTILE=0 ptile=build-s42/ab/head:-" ROUNDS=${ROUNDS:-4} \
SHAPES="${SHAPES:-bf16p|--sq_2_--seqlen_8192_--page-size_56 bf16p|--sq_2_--seqlen_8192_--page-size_57 bf16p|--sq_2_--seqlen_8192_--page-size_59 bf16p|--sq_2_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_115 bf16p|--sq_1_--seqlen_8192_--page-size_56}" \
  bash bench/patches/s40_ab.sh
