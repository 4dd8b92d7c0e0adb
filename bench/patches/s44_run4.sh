#!/usr/bin/env bash
# session 44, call 4: v62b (the gather's copies on precomputed addresses, chunk offsets as immediates): tests, then
# HEAD / v62 (first cut) / v62b, and v62b through the gather at every page (MLA_HD_GATHER=2)
N=${N:-build-s44/v62b}
bash bench/patches/ab_tests.sh $N
CONFIGS="head=build-s44/head:- v62=build-s44/v62:- v62b=$N:- all=$N:MLA_HD_GATHER=2" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_1 spec|--sq_2_--seqlen_8192_--page-size_1 bf16p|--sq_2_--seqlen_8192_--page-size_7 bf16p|--sq_1_--seqlen_8192_--page-size_1 bf16p|--sq_2_--seqlen_8192_--page-size_64 bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_2_--seqlen_8192_--page-size_33" \
  bash bench/patches/s40_ab.sh
for cfg in "head=build-s44/head" "v62b=$N"; do b=${cfg#*=}
  echo "h16 page=1 ${cfg%%=*}: $(timeout 60 $b/mla bench decode --backend cuda --no-ceilings --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 1 2>&1 | grep -E '^decode' | tail -1)"
  echo "b=4 page=1 ${cfg%%=*}: $(timeout 60 $b/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 4 --heads 128 --sq 1 --seqlen 32768 --page-size 1 2>&1 | grep -E '^decode' | tail -1)"
done
echo "h16 page=64 gathered: $(MLA_HD_GATHER=2 timeout 60 $N/mla bench decode --backend cuda --no-ceilings --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 64 2>&1 | grep -E '^decode' | tail -1)"
