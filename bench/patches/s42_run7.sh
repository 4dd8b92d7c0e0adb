#!/usr/bin/env bash
# session 42, call 7: the final tree's decode_hopper tests (its new page-aligned cases on the kept kernels), and the
# quick set under memcheck and racecheck
set -u
b=build-s42/head/test_cuda_decode_hopper
echo "== tests"; timeout 300 $b 2>&1 | grep -E "FAIL|passed" | head -20
for t in memcheck racecheck; do
  echo "== $t (quick set)"; MLA_TEST_QUICK=1 timeout 300 compute-sanitizer --tool $t --error-exitcode 9 $b 2>&1 | grep -E "passed|SUMMARY|ERROR" | tail -3
done
