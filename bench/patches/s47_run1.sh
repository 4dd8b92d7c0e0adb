#!/usr/bin/env bash
# session 47, call 1: v67d (every producer thread closes chunks 4-7 of hd_decode_kernel_v7_f8_r itself, instead of
# v67c's pbar barrier). (1) device tests of the new binary; (2) same-run A/B against HEAD's (b44f187's kernels);
# (3) decode_hopper's quick set under memcheck and racecheck
N=${N:-build-s47/new}
t=$(date +%s); bash bench/patches/ab_tests.sh $N; echo "tests $(( $(date +%s) - t )) s"
CONFIGS="base=build-s47/base:- new=$N:-" ROUNDS=3 SHAPES="fp8spec|--sq_2_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192_--page-size_7 fp8spec|--sq_2_--seqlen_8192_--page-size_24 fp8spec|--sq_2_--seqlen_8192_--page-size_50 fp8spec|--sq_1_--seqlen_8192_--page-size_1 fp8spec|--sq_2_--seqlen_8192 fp8h16|--heads_16_--sq_1_--seqlen_16384_--page-size_7 bf16p|--sq_2_--seqlen_8192" bash bench/patches/s40_ab.sh
N=$N bash bench/patches/s45_run8.sh
