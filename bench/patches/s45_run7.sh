#!/usr/bin/env bash
# session 45, call 7: the full run of the final tree in the order tests, bench, sanitizers (so that a cut near the
# call's 600 s loses racecheck's tail, not the bench); logs under $OUT
# (golden/COMMIT is written by the caller: the device copy has no .git)
OUT=$OUT bash scripts/gpu.sh test > $OUT/log_test.txt 2>&1
OUT=$OUT bash scripts/gpu.sh bench > $OUT/log_bench.txt 2>&1
OUT=$OUT timeout 250 bash scripts/gpu.sh sanitize > $OUT/log_san.txt 2>&1
tail -4 $OUT/log_test.txt; tail -62 $OUT/log_bench.txt; tail -9 $OUT/log_san.txt
