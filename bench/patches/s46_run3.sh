#!/usr/bin/env bash
# session 46, call 3: the final binary (v67c + longest-first slots on the 64-row raw-tile kernel only): device tests, then
# A/B against the review binary (f1a2f2f), 3 rounds; nolpt = MLA_HN_LPT=0
N=${N:-build-s46/new}
t=$(date +%s); bash bench/patches/ab_tests.sh $N; echo "tests $(( $(date +%s) - t )) s"
CONFIGS="base=build-s46/base:- new=$N:- nolpt=$N:MLA_HN_LPT=0" ROUNDS=${ROUNDS:-3} \
SHAPES="fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_1_--seqlen_8192_--varlen fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_4096_--varlen fp8bf16p|--sq_2_--seqlen_16384 fp8h16|--heads_16_--sq_1_--seqlen_16384 fp8h16|--heads_16_--sq_1_--seqlen_16384_--varlen fp8spec|--sq_2_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192_--page-size_7 fp8spec|--sq_2_--seqlen_8192_--page-size_24 fp8spec|--sq_2_--seqlen_8192 bf16p|--sq_2_--seqlen_8192" \
  bash bench/patches/s40_ab.sh
