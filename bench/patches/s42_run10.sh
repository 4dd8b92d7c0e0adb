#!/usr/bin/env bash
# session 42, call 10: v60 (page-aligned tiles only where a page's last tile holds >= 56 keys): tests, then A/B
# against v57's final binary, the order alternating
set -u
n=build-s42/v60
echo "== tests $n"; timeout 300 $n/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden $n"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $n/test_golden 2>&1 | tail -1
CONFIGS="v57=build-s42/ab/head:- v60=build-s42/v60:-" ROUNDS=${ROUNDS:-4} \
SHAPES="${SHAPES:-bf16p|--sq_2_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_116 bf16p|--sq_1_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_120 bf16p|--sq_2_--seqlen_8192}" \
  bash bench/patches/s40_ab.sh
