#!/usr/bin/env bash
# session 44, call 8: v63 (the gather for every BF16 page that is not a multiple of 16 but 63, 127, ...): racecheck of the
# quick set (its time: call 7's hit the 150 s limit), then page 100's figure (call 7's bench: 609 where call 6 measured
# 629.5 gathered) against the gather forced on and off
N=${N:-build-s44/v63}
t=$(date +%s); MLA_TEST_QUICK=1 timeout 400 compute-sanitizer --tool racecheck --error-exitcode 9 $N/test_cuda_decode_hopper > $OUT/racecheck.log 2>&1
echo "racecheck rc=$? $(( $(date +%s) - t )) s: $(grep -E '^[0-9]+ passed' $OUT/racecheck.log | tail -1) $(grep -ciE 'hazard' $OUT/racecheck.log) hazard lines"
grep -iE "hazard|error" $OUT/racecheck.log | head -5
CONFIGS="auto=$N:- g2=$N:MLA_HD_GATHER=2 g0=$N:MLA_HD_GATHER=0" ROUNDS=${ROUNDS:-3} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_127 bf16p|--sq_2_--seqlen_8192_--page-size_1 bf16p|--sq_2_--seqlen_8192_--page-size_64" \
  bash bench/patches/s40_ab.sh
