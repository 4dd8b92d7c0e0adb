# session 48 call 6: v68 under the sanitizers (decode_hopper's quick set, which forces the redo on 64 rows), and its per-tile trace
set -u
B=build-s48
MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$((1 << 10)) MLA_BENCH_PRECISION=bf16p MLA_HD_TRACE=$OUT/tr \
  timeout 120 $B/trace/test_cuda_decode_hopper 2>&1 | grep -E "^bench|^trace"
python3 scripts/s1_tiles.py $OUT/tr*.s1t
rm -f $OUT/tr*.txt $OUT/tr*.cta $OUT/tr*.cmb
N=$B/newt bash bench/patches/s45_run8.sh
