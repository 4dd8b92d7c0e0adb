#!/usr/bin/env bash
# session 43, call 5: v61c, the general page's six parts a pair as one rolled loop over one issue site (MLA_HD_GCOMP=1);
# tests with the knob on, the A/B against the knob off, the stall sampling at page 64 (MLA_HD_GPAGE=2) with it.
N=build-s43/v61c
echo "== tests (knob on)"; MLA_HD_GCOMP=1 timeout 300 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden (knob on)"; MLA_HD_GCOMP=1 MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $N/test_golden 2>&1 | tail -1
CONFIGS="old=$N:- comp=$N:MLA_HD_GCOMP=1 old64=$N:MLA_HD_GPAGE=2 comp64=$N:MLA_HD_GCOMP=1,MLA_HD_GPAGE=2" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_33 bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_1_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192" \
  bash bench/patches/s40_ab.sh
for k in 1; do
  echo "== ncu page 64 through the general page, MLA_HD_GCOMP=$k"
  MLA_HD_GCOMP=$k MLA_HD_GPAGE=2 MLA_BIN=$N/mla bash scripts/decode_ncu.sh --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 64 2>&1 | grep -E "^decode|Issue Slots|stall reasons"
done
