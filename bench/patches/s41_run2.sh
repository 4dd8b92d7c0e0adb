#!/usr/bin/env bash
# session 41, call 2: per-CTA timelines (HD_TRACE build of HEAD, carried in build-s41/trace) at 4K and 8K bf16p
set -u
for sel in 0x1 0x2; do
  MLA_BENCH_HOPPER=2 MLA_BENCH_SEL=$sel MLA_BENCH_PRECISION=bf16p MLA_HD_TRACE="$OUT/trace_$sel" \
    build-s41/trace/test_cuda_decode_hopper 2>&1 | grep -E "^bench|^trace"
  python3 scripts/cta_summary.py "$OUT"/trace_$sel.txt.cta
done
