#!/usr/bin/env bash
# session 44, call 2: v62 (BF16 pages under 16 keys gathered row by row, the _r kernels): tests, then HEAD's binary
# against v62 (default: pages under 16; MLA_HD_GATHER=2: every page through the gather, for the TMA pages' comparison)
N=${N:-build-s44/v62}
bash bench/patches/ab_tests.sh $N
CONFIGS="head=build-s44/head:- v62=$N:- all=$N:MLA_HD_GATHER=2" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_1 spec|--sq_2_--seqlen_8192_--page-size_1 bf16p|--sq_2_--seqlen_8192_--page-size_7 bf16p|--sq_1_--seqlen_8192_--page-size_1 bf16p|--sq_2_--seqlen_4096_--page-size_1 bf16p|--sq_2_--seqlen_8192_--page-size_64 bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_2_--seqlen_8192_--page-size_33 bf16p|--sq_2_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_64" \
  bash bench/patches/s40_ab.sh
for ps in 1 64; do for cfg in "head=build-s44/head" "v62=$N"; do b=${cfg#*=}
  echo "h16 page=$ps ${cfg%%=*}: $(timeout 60 $b/mla bench decode --backend cuda --no-ceilings --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size $ps 2>&1 | grep -E '^decode' | tail -1)"
  echo "b=4 page=$ps ${cfg%%=*}: $(timeout 60 $b/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 4 --heads 128 --sq 1 --seqlen 32768 --page-size $ps 2>&1 | grep -E '^decode' | tail -1)"
done; done
