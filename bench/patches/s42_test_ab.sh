#!/usr/bin/env bash
# session 42: a new build's tests (decode_hopper, golden CUDA; RACE=1 adds racecheck on the quick set), then
# bench/patches/s40_ab.sh over CONFIGS and SHAPES (order alternating). NEW: the build's folder. Calls 3, 6, 10 ran it.
set -u
n=${NEW:?NEW=build folder}
echo "== tests $n"; timeout 300 $n/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden $n"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $n/test_golden 2>&1 | tail -1
if [ "${RACE:-0}" = 1 ]; then
  echo "== racecheck (quick set)"; MLA_TEST_QUICK=1 timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 $n/test_cuda_decode_hopper 2>&1 | grep -E "passed|hazard|ERROR" | tail -3
fi
ROUNDS=${ROUNDS:-4} bash bench/patches/s40_ab.sh
