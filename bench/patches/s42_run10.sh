#!/usr/bin/env bash
# session 42, call 10: v60 (page-aligned tiles only where a page's last tile holds >= 56 keys): tests, then A/B
# against v57's final binary
NEW=build-s42/v60 CONFIGS="v57=build-s42/ab/head:- v60=build-s42/v60:-" \
SHAPES="${SHAPES:-bf16p|--sq_2_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_116 bf16p|--sq_1_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_120 bf16p|--sq_2_--seqlen_8192}" \
  bash bench/patches/s42_test_ab.sh
