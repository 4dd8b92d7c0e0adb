#!/usr/bin/env bash
# session 46, call 6: the review tree (hn_lpt_slot's loops as one request a thread; HD_F8_CREDIT removed, decode_hopper.cu's
# SASS identical): device tests, then A/B against call 3's binary (new) on the s1 shapes, 3 rounds
N=${N:-build-s46/rev}
t=$(date +%s); bash bench/patches/ab_tests.sh $N; echo "tests $(( $(date +%s) - t )) s"
CONFIGS="new=build-s46/new:- rev=$N:-" ROUNDS=${ROUNDS:-3} \
SHAPES="fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_1_--seqlen_8192_--varlen fp8bf16p|--sq_2_--seqlen_4096 fp8h16|--heads_16_--sq_1_--seqlen_16384" \
  bash bench/patches/s40_ab.sh
