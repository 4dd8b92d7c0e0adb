#!/usr/bin/env bash
# The 64-row FP8 kernel's fixed cost on the GPU machine (session 16): builds build-trace (-DHD_TRACE)
# with the CLI and the decode test, runs decode_sweep.sh s1line on it (timings carry the trace
# stores: compare within this run only), then the per-CTA timelines of fp8 bf16p h=128 s_q=2 4K and
# 32K (scripts/s1_summary.py). Traces land in $OUT.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
T=build-trace
if [ ! -f $T/Makefile ]; then
  cmake -S . -B $T -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_FLAGS=-DHD_TRACE >/dev/null || exit 1
fi
t0=$(date +%s)
cmake --build $T -j "$(nproc)" --target mla_cli test_cuda_decode_hopper > "$OUT/trace_build.log" 2>&1 || { tail -30 "$OUT/trace_build.log"; exit 1; }
echo "== build: $(( $(date +%s) - t0 )) s"
if [ "${SKIP_LINE:-0}" != 1 ]; then B=$T bash scripts/decode_sweep.sh s1line; fi
MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$(( (1 << 9) | (1 << 11) )) MLA_BENCH_PRECISION=bf16p MLA_HD_TRACE="$OUT/tr" \
  $T/tests/test_cuda_decode_hopper 2>&1 | grep -E "^bench|^trace"
python3 scripts/s1_summary.py "$OUT"/tr*.s1
rm -f "$OUT"/tr*.txt "$OUT"/tr*.cta "$OUT/trace_build.log" # the device returns few files
