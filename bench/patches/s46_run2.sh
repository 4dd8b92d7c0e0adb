#!/usr/bin/env bash
# session 46, call 2: A/B against the review binary (f1a2f2f): FP8 default-precision gathered pages (v67c), FP8 bf16p
# varlen / fixed and h16 (the raw-tile kernels' longest-first slots; nolpt = MLA_HN_LPT=0)
N=${N:-build-s46/new}
CONFIGS="base=build-s46/base:- new=$N:- nolpt=$N:MLA_HN_LPT=0" ROUNDS=${ROUNDS:-2} \
SHAPES="fp8spec|--sq_2_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192_--page-size_17 fp8spec|--sq_2_--seqlen_8192_--page-size_50 fp8spec|--sq_1_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_1_--seqlen_8192_--varlen fp8h16|--heads_16_--sq_1_--seqlen_16384 fp8h16|--heads_16_--sq_1_--seqlen_16384_--varlen" \
  bash bench/patches/s40_ab.sh
