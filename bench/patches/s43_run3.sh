#!/usr/bin/env bash
# session 43, call 3: Nsight Compute stall sampling, page 64 through the general-page copies (MLA_HD_GPAGE=2)
# against page 64's own producer (bf16p 8K); then the same pair at 16K / 32K (how much is per segment)
B=${B:-build-s42/rev}
MLA_BIN=$B/mla bash scripts/decode_ncu.sh --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 > $OUT/ncu_std.txt 2>&1
MLA_HD_GPAGE=2 MLA_BIN=$B/mla bash scripts/decode_ncu.sh --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 64 > $OUT/ncu_gp2.txt 2>&1
head -30 $OUT/ncu_std.txt; head -30 $OUT/ncu_gp2.txt
CONFIGS="std=$B:- gp2=$B:MLA_HD_GPAGE=2" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_4096 bf16p|--sq_2_--seqlen_16384 bf16p|--sq_2_--seqlen_32768 bf16p|--sq_1_--seqlen_8192" bash bench/patches/s40_ab.sh
