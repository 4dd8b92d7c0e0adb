#!/usr/bin/env bash
# Timeline of one decode CTA (issue 5 diagnosis) on the GPU machine: builds build-trace with
# -DHD_TRACE, times b=128 h=128 s_q=2 8K (test bench, MLA_BENCH_SEL bit 1) in both precisions and
# prints the average pair timeline (scripts/trace_summary.py) and where each SM's time goes
# between CTAs (scripts/cta_summary.py). Traces land in $OUT.
#   bash scripts/decode_trace.sh [sel mask (default 0x2)]   (PRECS="bf16p": one precision; MLA_BENCH_POOL_PAGES /
#   MLA_BENCH_NOFLUSH pass through to the test bench: keys in L2; MLA_BENCH_PAGE=n: page size n, not 64;
#   TRACE_CTA=n: the CTA whose pairs are traced, not 100)
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
T=build-trace${TRACE_CTA:+-$TRACE_CTA}
sel=${1:-0x2}
if [ ! -f $T/Makefile ]; then
  cmake -S . -B $T -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_FLAGS=-DHD_TRACE${TRACE_CTA:+ -DHD_TRACE_CTA=$TRACE_CTA}" >/dev/null || exit 1
fi
cmake --build $T -j "$(nproc)" --target test_cuda_decode_hopper > "$OUT/trace_build.log" 2>&1 || { tail -30 "$OUT/trace_build.log"; exit 1; }
for pr in ${PRECS:-spec bf16p}; do
  MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$sel MLA_BENCH_PRECISION=$pr MLA_HD_TRACE="$OUT/trace_$pr" \
    $T/tests/test_cuda_decode_hopper 2>&1 | grep -E "^bench|^trace" | sed "s/^/$pr /"
done
python3 scripts/trace_summary.py "$OUT"/trace_*.txt
python3 scripts/cta_summary.py "$OUT"/trace_*.txt.cta
