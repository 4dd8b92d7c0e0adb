# session 48 call 4: v68's flag threshold 8 against 15, and its per-tile trace (threshold 8)
set -u
B=build-s48
bash bench/patches/s48_s1trace.sh $B/trace
CONFIGS="base=$B/base:- t8=$B/new:- t15=$B/new15:-" SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_32768" ROUNDS=3 bash bench/patches/s40_ab.sh
