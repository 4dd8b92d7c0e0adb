# s1's per-tile trace (fp8 bf16p b=128 h=128 s_q=2 8K) from an HD_TRACE build of the decode test: scripts/s1_tiles.py's table
#   bash bench/patches/s48_s1trace.sh DIR   (DIR/test_cuda_decode_hopper built with -DHD_TRACE)
MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$((1 << 10)) MLA_BENCH_PRECISION=bf16p MLA_HD_TRACE=$OUT/tr \
  timeout 120 $1/test_cuda_decode_hopper 2>&1 | grep -E "^bench|^trace"
python3 scripts/s1_tiles.py $OUT/tr*.s1t
rm -f $OUT/tr*.txt $OUT/tr*.cta $OUT/tr*.cmb
