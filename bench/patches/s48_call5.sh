# session 48 call 5: v68 (s1's speculative running max, flag at 2^15, forced-redo tests): tests, golden, A/B
set -u
B=build-s48
bash bench/patches/ab_tests.sh $B/newt
CONFIGS="base=$B/base:- v68=$B/new:-" SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_8192_--page-size_1 fp8bf16p|--sq_2_--seqlen_16384 fp8bf16p|--sq_2_--seqlen_32768 fp8bf16p|--batch_4_--sq_1_--seqlen_32768" ROUNDS=3 bash bench/patches/s40_ab.sh
