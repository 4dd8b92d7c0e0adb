#!/usr/bin/env bash
# session 42, call 6: v59 (hd_decode_kernel_v7_bf16p_ep_pt: the _ep kernel on page-aligned tiles only): tests with
# racecheck, then A/B against v57
NEW=build-s42/v59 RACE=1 CONFIGS="v57=build-s42/ab/v57:- v59=build-s42/v59:-" \
SHAPES="${SHAPES:-bf16p|--sq_1_--seqlen_8192_--page-size_61 bf16p|--sq_1_--seqlen_8192_--page-size_120 bf16p|--heads_64_--sq_2_--seqlen_8192_--page-size_61 bf16p|--batch_4_--sq_1_--seqlen_32768_--page-size_61 bf16p|--batch_8_--sq_1_--seqlen_32768_--page-size_61 bf16p|--sq_1_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_1_--seqlen_8192}" \
  bash bench/patches/s42_test_ab.sh
