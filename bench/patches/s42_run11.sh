#!/usr/bin/env bash
# session 42, call 11: the review's hd_pt_start (the page-aligned tile's page and row worked out in one helper; SASS
# counts unchanged, a few IMADs reordered): tests, then A/B against bdbb4cd's binary
NEW=build-s42/rev CONFIGS="v60=build-s42/v60:- rev=build-s42/rev:-" \
SHAPES="${SHAPES:-bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_120 bf16p|--sq_1_--seqlen_8192_--page-size_61 bf16p|--batch_4_--sq_1_--seqlen_32768_--page-size_61 bf16p|--sq_2_--seqlen_8192}" \
  bash bench/patches/s42_test_ab.sh
