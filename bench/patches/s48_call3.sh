# session 48 call 3: v68 (s1's speculative running max), tests, golden, A/B, per-tile trace
set -u
B=build-s48
bash bench/patches/ab_tests.sh $B/newt
[ -x $B/trace/test_cuda_decode_hopper ] && MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$((1 << 10)) MLA_BENCH_PRECISION=bf16p MLA_HD_TRACE=$OUT/tr \
  timeout 120 $B/trace/test_cuda_decode_hopper 2>&1 | grep -E "^bench|^trace"
python3 scripts/s1_tiles.py $OUT/tr*.s1t
rm -f $OUT/tr*.txt $OUT/tr*.cta $OUT/tr*.cmb
CONFIGS="base=$B/base:- new=$B/new:-" SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_8192_--page-size_1 fp8bf16p|--sq_2_--seqlen_32768 fp8w1|--heads_16_--sq_2_--seqlen_16384" ROUNDS=3 bash bench/patches/s40_ab.sh
