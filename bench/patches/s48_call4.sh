# session 48 call 4: v68's flag threshold 8 against 15, and its per-tile trace (threshold 8)
set -u
B=build-s48
MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$((1 << 10)) MLA_BENCH_PRECISION=bf16p MLA_HD_TRACE=$OUT/tr \
  timeout 120 $B/trace/test_cuda_decode_hopper 2>&1 | grep -E "^bench|^trace"
python3 scripts/s1_tiles.py $OUT/tr*.s1t
rm -f $OUT/tr*.txt $OUT/tr*.cta $OUT/tr*.cmb
CONFIGS="base=$B/base:- t8=$B/new:- t15=$B/new15:-" SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_32768" ROUNDS=3 bash bench/patches/s40_ab.sh
