#!/usr/bin/env bash
# session 47, call 3: s1 v2 (decode_narrow.cu hs_tiles: S_{u+1} and its softmax before P.V_u, the P'^T buffer freed by
# pfree, V's scale table in three buffers). (1) device tests; (2) same-run A/B against v67d's binary (s1 v1);
# (3) decode_hopper's quick set under memcheck and racecheck
mkdir -p build-s47/v2all && cp build-s47/v2/mla build-s47/v2t/test_* build-s47/v2all/
t=$(date +%s); bash bench/patches/ab_tests.sh build-s47/v2all; echo "tests $(( $(date +%s) - t )) s"
CONFIGS="v1=build-s47/new:- v2=build-s47/v2:-" ROUNDS=3 SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_16384 fp8bf16p|--sq_2_--seqlen_8192_--page-size_1" bash bench/patches/s40_ab.sh
mv $OUT/ab.txt $OUT/ab1.txt
CONFIGS="v1=build-s47/new:MLA_BENCH_KV_SCALE=3 v2=build-s47/v2:MLA_BENCH_KV_SCALE=3" ROUNDS=2 SHAPES="fp8bf16p|--sq_2_--seqlen_8192" bash bench/patches/s40_ab.sh
N=build-s47/v2all bash bench/patches/s45_run8.sh
