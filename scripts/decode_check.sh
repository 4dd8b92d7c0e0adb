#!/usr/bin/env bash
# The decode tuning loop on the GPU machine in one call: build (scripts/gpu.sh none), the Hopper
# decode tests, the golden cases on CUDA, then `decode_sweep.sh ${1:-quick}` (one line per shape).
#   bash scripts/decode_check.sh [quick|pages|bf16p|envab|...] [racecheck|-] [more decode_sweep.sh args, e.g. MLA_HD_CARRY]
set -uo pipefail
bash scripts/gpu.sh none > /dev/null 2>&1 || { echo "BUILD FAILED"; tail -30 out/build.log; exit 1; }
export MLA_GOLDEN=$PWD/golden
timeout 200 build-gpu/tests/test_cuda_decode_hopper 2>&1 | grep -E "^FAIL|passed, " | head -20
MLA_TEST_BACKEND=cuda timeout 200 build-gpu/tests/test_golden 2>&1 | grep -E "^FAIL|passed, " | head -10
if [ "${2:-}" = racecheck ]; then
  MLA_TEST_QUICK=1 timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/tests/test_cuda_decode_hopper 2>&1 \
    | grep -E "hazard|ERROR SUMMARY|passed, " | tail -20
fi
bash scripts/decode_sweep.sh "${1:-quick}" "${@:3}"
