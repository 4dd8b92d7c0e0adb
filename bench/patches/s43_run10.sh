#!/usr/bin/env bash
# session 43, call 10: v61g, the rolled prep in the general-page kernels from page 40 up (HD_GPREP_MIN), kernels _gs with
# HEAD's unrolled prep below: tests (RACE=1: racecheck on the quick set), then the A/B against HEAD's binary
N=build-s43/v61g
echo "== tests"; timeout 300 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $N/test_golden 2>&1 | tail -1
if [ "${RACE:-1}" = 1 ]; then
  echo "== racecheck (quick set)"; MLA_TEST_QUICK=1 timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 $N/test_cuda_decode_hopper 2>&1 | grep -E "passed|hazard|ERROR" | tail -3
fi
CONFIGS="head=build-s43/rev_only:- v61g=$N:-" ROUNDS=${ROUNDS:-3} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_2_--seqlen_8192_--page-size_24 bf16p|--sq_2_--seqlen_8192_--page-size_33 bf16p|--sq_2_--seqlen_8192_--page-size_40 bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_113 bf16p|--sq_1_--seqlen_8192_--page-size_100 bf16p|--sq_1_--seqlen_32768_--batch_4_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_33 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192" \
  bash bench/patches/s40_ab.sh
