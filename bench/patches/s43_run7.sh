#!/usr/bin/env bash
# session 43, call 7: where the rolled prep (v61d, hd_gtma_prep_c) wins: HEAD's binary against v61d over more page sizes
N=build-s43/v61d
CONFIGS="head=build-s42/rev:- prepc=$N:-" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_24 bf16p|--sq_2_--seqlen_8192_--page-size_40 bf16p|--sq_2_--seqlen_8192_--page-size_50 bf16p|--sq_2_--seqlen_8192_--page-size_72 bf16p|--sq_2_--seqlen_8192_--page-size_90 bf16p|--sq_2_--seqlen_8192_--page-size_200 bf16p|--sq_1_--seqlen_8192_--page-size_40 bf16p|--sq_1_--seqlen_32768_--batch_4_--page-size_100 spec|--sq_2_--seqlen_8192_--page-size_40 bf16p|--sq_2_--seqlen_8192_--varlen_--page-size_100" \
  bash bench/patches/s40_ab.sh
