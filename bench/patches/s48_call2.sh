# session 48 call 2: v1 / v2 order with P'^T in the stages' rope bytes (MLA_HS_ORDER), tests, A/B, per-tile trace
set -u
B=build-s48
echo "== tests (order 1)"; timeout 300 $B/newt/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
echo "== tests quick (order 2)"; MLA_HS_ORDER=2 MLA_TEST_QUICK=1 timeout 200 $B/newt/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
for o in 1 2; do
  MLA_HS_ORDER=$o MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$((1 << 10)) MLA_BENCH_PRECISION=bf16p MLA_HD_TRACE=$OUT/tr$o \
    timeout 120 $B/trace/test_cuda_decode_hopper 2>&1 | grep -E "^bench|^trace"
  python3 scripts/s1_tiles.py $OUT/tr$o*.s1t
done
rm -f $OUT/tr*.txt $OUT/tr*.cta $OUT/tr*.cmb
CONFIGS="base=$B/base:- v1=$B/new:- v2=$B/new:MLA_HS_ORDER=2" SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_8192_--page-size_1" ROUNDS=3 bash bench/patches/s40_ab.sh
