#!/usr/bin/env bash
# session 46, call 1: (1) bench/race_probe.cu under racecheck, modes 0 (control), 4 (the FP8 producer's chunk closing:
# __syncwarp, lane 0 arrives) and 5 (v67c: every lane through an mbarrier first); (2) the new binary's device tests
# (v67c + the raw-tile kernels' longest-first slots): decode_hopper full set, golden CUDA; (3) decode_hopper's quick set
# under memcheck and racecheck
N=${N:-build-s46/new}
for m in 0 4 5; do
  echo "== probe mode $m"; compute-sanitizer --tool racecheck build-s46/probe/race_probe $m 2>&1 | grep -E "checksum|SUMMARY|Race" | head -4
done
t=$(date +%s); bash bench/patches/ab_tests.sh $N; echo "tests $(( $(date +%s) - t )) s"
N=$N bash bench/patches/s45_run8.sh
