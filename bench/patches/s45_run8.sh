#!/usr/bin/env bash
# session 45, call 8: the sanitizers on decode_hopper's quick set, on the binary built here from the final tree
# (call 7's device build took ~300 s and left no time for them)
N=${N:-build-s45/new}
export MLA_TEST_QUICK=1
t=$(date +%s); timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 $N/test_cuda_decode_hopper > $OUT/memcheck.log 2>&1
echo "memcheck rc=$? $(( $(date +%s) - t )) s: $(grep -E '^[0-9]+ passed' $OUT/memcheck.log | tail -1) $(grep -E 'ERROR SUMMARY' $OUT/memcheck.log | tail -1)"
t=$(date +%s); timeout 330 compute-sanitizer --tool racecheck --error-exitcode 9 $N/test_cuda_decode_hopper > $OUT/racecheck.log 2>&1
echo "racecheck rc=$? $(( $(date +%s) - t )) s: $(grep -E '^[0-9]+ passed' $OUT/racecheck.log | tail -1) $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $OUT/racecheck.log | tail -1)"
grep -E "^FAIL|hazard" $OUT/racecheck.log $OUT/memcheck.log | head -10
