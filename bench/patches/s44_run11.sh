#!/usr/bin/env bash
# session 44, call 11: the final tree (fc6387f's kernels = v63): tests, then page 100 against 64 and 61 (call 7's full run put
# page 100 at 609 TF where calls 6 and 8 measured 625-629.5), 3 rounds alternating
N=${N:-build-s44/final}
bash bench/patches/ab_tests.sh $N
CONFIGS="final=$N:-" ROUNDS=${ROUNDS:-3} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_64 bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_2_--seqlen_8192_--page-size_1 spec|--sq_2_--seqlen_8192_--page-size_100" \
  bash bench/patches/s40_ab.sh
cat $OUT/ab.txt | sort | awk -F'|' '{print $2"|"$3": "$4}' | sort | uniq -c | head -30
