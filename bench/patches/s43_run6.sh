#!/usr/bin/env bash
# session 43, call 6: v61d, hd_gtma_prep as a rolled loop over the runs (hd_gtma_prep_c: the general-page producer's
# pair loop 1214 -> 922 SASS instructions); tests, then the A/B against HEAD's binary (build-s42/rev).
N=build-s43/v61d
echo "== tests"; timeout 300 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== golden"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $N/test_golden 2>&1 | tail -1
CONFIGS="head=build-s42/rev:- prepc=$N:- head64=build-s42/rev:MLA_HD_GPAGE=2 prepc64=$N:MLA_HD_GPAGE=2" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_113 bf16p|--sq_2_--seqlen_8192_--page-size_33 bf16p|--sq_2_--seqlen_8192_--page-size_17 bf16p|--sq_1_--seqlen_8192_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192" \
  bash bench/patches/s40_ab.sh
echo "== ncu page 64 through the general page"
MLA_HD_GPAGE=2 MLA_BIN=$N/mla bash scripts/decode_ncu.sh --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 64 2>&1 | grep -E "^decode|Issue Slots|stall reasons"
