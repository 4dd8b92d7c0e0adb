#!/usr/bin/env bash
# session 45, call 12: v67b (v67 + consumer 1 waiting on every full barrier of the tile it replaces before its
# refill): racecheck and memcheck on the quick set, then the FP8 gathered pages against MLA_HD_GATHER=0
N=${N:-build-s45/new}
bash bench/patches/s45_run8.sh
CONFIGS="cp=$N:MLA_HD_GATHER=0 v67b=$N:-" ROUNDS=${ROUNDS:-1} \
SHAPES="fp8spec|--sq_2_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192_--page-size_17 fp8spec|--sq_2_--seqlen_8192_--page-size_100 fp8spec|--sq_2_--seqlen_8192_--page-size_64" \
  bash bench/patches/s40_ab.sh
