#!/usr/bin/env bash
# session 42, call 6: v59 (hd_decode_kernel_v7_bf16p_ep_pt: the _ep kernel on page-aligned tiles only): tests,
# then A/B against v57, the order alternating
set -u
n=build-s42/v59
echo "== tests $n"; timeout 300 $n/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden $n"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $n/test_golden 2>&1 | tail -1
echo "== racecheck (quick set)"; MLA_TEST_QUICK=1 timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 $n/test_cuda_decode_hopper 2>&1 | grep -E "passed|hazard|ERROR" | tail -3
CONFIGS="v57=build-s42/ab/v57:- v59=build-s42/v59:-" ROUNDS=${ROUNDS:-4} \
SHAPES="${SHAPES:-bf16p|--sq_1_--seqlen_8192_--page-size_61 bf16p|--sq_1_--seqlen_8192_--page-size_120 bf16p|--heads_64_--sq_2_--seqlen_8192_--page-size_61 bf16p|--batch_4_--sq_1_--seqlen_32768_--page-size_61 bf16p|--batch_8_--sq_1_--seqlen_32768_--page-size_61 bf16p|--sq_1_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_1_--seqlen_8192}" \
  bash bench/patches/s40_ab.sh
