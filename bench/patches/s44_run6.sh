#!/usr/bin/env bash
# session 44, call 6: v62c's gather against the TMA paths it could replace: BF16 pages that are not multiples of 16 (runs
# of rows _g / _gs, page-aligned tiles) and multiples of 16 under 64 (16-/32-row boxes); automatic choice (HEAD's
# rules) against every page gathered (MLA_HD_GATHER=2), same binary
N=${N:-build-s44/v62c}
CONFIGS="auto=$N:- gather=$N:MLA_HD_GATHER=2" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_16 bf16p|--sq_2_--seqlen_8192_--page-size_48 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_120 bf16p|--sq_2_--seqlen_8192_--page-size_127 bf16p|--sq_2_--seqlen_4096_--page-size_61 bf16p|--sq_1_--seqlen_8192_--page-size_100 bf16p|--sq_1_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--varlen_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_61 spec|--sq_2_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_16 spec|--sq_1_--seqlen_8192_--page-size_33 bf16p|--heads_64_--sq_2_--seqlen_8192_--page-size_100" \
  bash bench/patches/s40_ab.sh
for ps in 100 61 17; do for g in 1 2; do
  echo "b=4 page=$ps gather=$g: $(MLA_HD_GATHER=$g timeout 60 $N/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 4 --heads 128 --sq 1 --seqlen 32768 --page-size $ps 2>&1 | grep -E '^decode' | tail -1)"
  echo "h16 page=$ps gather=$g: $(MLA_HD_GATHER=$g timeout 60 $N/mla bench decode --backend cuda --no-ceilings --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size $ps 2>&1 | grep -E '^decode' | tail -1)"
done; done
