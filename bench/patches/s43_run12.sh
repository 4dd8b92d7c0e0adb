#!/usr/bin/env bash
# session 43, call 12: where the rolled prep's kernels (_g) start to win: the host's threshold (MLA_HD_GPREP_MIN, default
# 40) forced low (every general page on _g) or high (every one on _gs), pages 34..47
B=build-s43/thr
CONFIGS="gs=$B:MLA_HD_GPREP_MIN=1000 g=$B:MLA_HD_GPREP_MIN=1" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_34 bf16p|--sq_2_--seqlen_8192_--page-size_36 bf16p|--sq_2_--seqlen_8192_--page-size_37 bf16p|--sq_2_--seqlen_8192_--page-size_39 bf16p|--sq_2_--seqlen_8192_--page-size_41 bf16p|--sq_2_--seqlen_8192_--page-size_44 bf16p|--sq_1_--seqlen_8192_--page-size_36 spec|--sq_2_--seqlen_8192_--page-size_36" \
  bash bench/patches/s40_ab.sh
