set -u
bash bench/patches/ab_tests.sh build-s48/newt
CONFIGS="base=build-s48/base:- new=build-s48/new:-" SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_8192_--page-size_1 fp8bf16p|--sq_2_--seqlen_32768" ROUNDS=3 bash bench/patches/s40_ab.sh
