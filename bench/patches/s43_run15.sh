#!/usr/bin/env bash
# session 43, call 15: review (the two preps' shared header and key-bit note as helpers, hd_gtile_none /
# hd_gtile_valid): tests, then the A/B against e00184a's binary
N=build-s43/rev43
echo "== tests"; timeout 300 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
CONFIGS="e00184a=build-s43/h_only:- review=$N:-" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_36 bf16p|--sq_1_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_33" \
  bash bench/patches/s40_ab.sh
