#!/usr/bin/env bash
# session 42, call 3: v58 (hd_decode_kernel_v7_pt: the default program on page-aligned tiles): tests, then A/B of
# session 41's binary, v57 and v58
NEW=build-s42/v58 CONFIGS="s41=build-s42/ab/s41:- v57=build-s42/ab/v57:- v58=build-s42/v58:-" \
SHAPES="${SHAPES:-spec|--sq_2_--seqlen_8192_--page-size_61 spec|--sq_2_--seqlen_4096_--page-size_61 spec|--sq_2_--seqlen_8192_--page-size_120 spec|--sq_1_--seqlen_8192_--page-size_61 spec|--sq_2_--seqlen_8192_--varlen_--page-size_61 spec|--sq_2_--seqlen_8192 spec|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_61}" \
  bash bench/patches/s42_test_ab.sh
