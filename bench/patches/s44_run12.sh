#!/usr/bin/env bash
# session 44, call 12: the review (the gather decided before the other paths' tensor maps are made; comments): tests and
# the path each page takes (bf16p 8K pages 64 / 1 / 61 / 127, default precision 127)
N=${N:-build-s44/review}
bash bench/patches/ab_tests.sh $N
CONFIGS="review=$N:-" ROUNDS=1 \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_64 bf16p|--sq_2_--seqlen_8192_--page-size_1 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_127 spec|--sq_2_--seqlen_8192_--page-size_127" \
  bash bench/patches/s40_ab.sh
