#!/usr/bin/env bash
# Issue 5 sweeps on the GPU machine (after scripts/gpu.sh has built build-gpu): decode page sizes,
# small batches against the split count, prints one line per configuration.
#   ROUNDS=n (default 2): rounds of the knob sweeps (vals, core, vals8).
#   bash scripts/decode_sweep.sh [quick|seqline|s1line|l2res|envab VAR|vals|vals8|core VAR "v1 v2 .."|sched|pages|diag|bf16p|small|all]   (quick: one line per issue-5 shape)
set -uo pipefail
B=${B:-build-gpu}
what=${1:-all}
bench() { # label, env..., -- bench args...
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local line
  line=$(env "${envs[@]}" $B/mla bench decode --backend cuda --no-ceilings "$@" 2>&1 | grep -E "^decode " | tail -1)
  printf '%-30s %s\n' "$label" "$(echo "${line:-FAILED x x x x x x}" | awk '{print $(NF-5), "ms", $(NF-4), "TF", $(NF-2), "GB/s"}')"
}
if [ "$what" = quick ]; then # the issue's shapes, one run each (tuning loop)
  for pr in spec bf16p; do
    bench "bf16 $pr s_q=2 8K" X=1 -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen 8192
    bench "bf16 $pr s_q=2 32K" X=1 -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen 32768
    bench "bf16 $pr s_q=1 8K" X=1 -- --precision $pr --batch 128 --heads 128 --sq 1 --seqlen 8192
    bench "bf16 $pr b=4 32K" X=1 -- --precision $pr --batch 4 --heads 128 --sq 1 --seqlen 32768
  done
  bench "bf16 h16 16K" X=1 -- --batch 128 --heads 16 --sq 1 --seqlen 16384
  bench "fp8 s_q=2 8K" X=1 -- --format fp8 --batch 128 --heads 128 --sq 2 --seqlen 8192
  bench "fp8 h16 16K" X=1 -- --format fp8 --batch 128 --heads 16 --sq 1 --seqlen 16384
  bench "bf16 page=16 8K" X=1 -- --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 16
fi
if [ "$what" = s1line ]; then # the 64-row FP8 kernel (fp8 bf16p h=128 s_q=2): time over seqlen and batch
  # (fixed part per launch and per CTA), and the page pool in order against shuffled (TLB reach)
  F8="--format fp8 --precision bf16p --heads 128 --sq 2"
  for s in 1024 2048 4096 8192 16384 32768; do bench "s1 b=128 seq=$s" X=1 -- $F8 --batch 128 --seqlen $s; done
  for b in 32 64; do bench "s1 b=$b seq=8192" X=1 -- $F8 --batch $b --seqlen 8192; done
  for sp in 0 1; do
    bench "s1 32K seqpages=$sp" MLA_BENCH_SEQ_PAGES=$sp -- $F8 --batch 128 --seqlen 32768
    for s in 16384 32768; do
      bench "bf16 bf16p $s seqpages=$sp" MLA_BENCH_SEQ_PAGES=$sp -- --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen $s
    done
  done
fi
if [ "$what" = seqline ]; then # b=128 h=128 s_q=2 over seqlen: time = fixed + per-key; the fixed part is
  # what a launch pays besides its tiles (prologues, epilogues, gaps between CTAs, the tail)
  for pr in spec bf16p; do
    for s in 1024 2048 4096 8192 16384; do
      bench "bf16 $pr s_q=2 seq=$s" X=1 -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen $s
    done
  done
fi
if [ "$what" = l2res ]; then # the kernel without HBM: every page one of the first POOL (default 128) of
  # the pool and no L2 flush between runs (MLA_BENCH_POOL_PAGES, MLA_BENCH_NOFLUSH; diagnosis only)
  pool=${POOL:-128}
  for round in 1 2; do
    for cfg in "b=4 32K|--batch 4 --sq 1 --seqlen 32768" "b=1 32K|--batch 1 --sq 1 --seqlen 32768" \
               "b=8 32K|--batch 8 --sq 1 --seqlen 32768" "s_q=1 8K|--batch 128 --sq 1 --seqlen 8192" \
               "s_q=2 4K|--batch 128 --sq 2 --seqlen 4096" "s_q=2 16K|--batch 128 --sq 2 --seqlen 16384"; do
      lab=${cfg%%|*}; args=${cfg#*|}
      bench "bf16p $lab hbm" X=1 -- --precision bf16p --heads 128 $args
      bench "bf16p $lab noflush" MLA_BENCH_NOFLUSH=1 -- --precision bf16p --heads 128 $args
      bench "bf16p $lab l2 ($pool pages)" MLA_BENCH_NOFLUSH=1 MLA_BENCH_POOL_PAGES=$pool -- --precision bf16p --heads 128 $args
    done
  done
fi
if [ "$what" = envab ]; then # A/B of a runtime switch: VAR=1 against VAR=0 on the fixed s_q=2 shapes,
  # s_q=1 and varlen, twice interleaved (decode_sweep.sh envab MLA_HD_Q_TMA)
  var=${2:?envab needs a variable name}
  for round in 1 2; do
    for pr in spec bf16p; do
      for s in 4096 8192; do
        for v in 1 0; do
          bench "$pr s_q=2 $s $var=$v" $var=$v -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen $s
        done
      done
      for v in 1 0; do
        bench "$pr s_q=1 8192 $var=$v" $var=$v -- --precision $pr --batch 128 --heads 128 --sq 1 --seqlen 8192
      done
      for v in 1 0; do
        bench "$pr varlen 8192 $var=$v" $var=$v -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen 8192 --varlen
      done
    done
  done
fi
# A runtime knob over several values in one build, two interleaved rounds; the shape sets:
#   vals  compute-bound, small-batch and memory-bound BF16 (decode_sweep.sh vals MLA_HD_L2AHEAD "0 2 4")
#   core  one shape per issue-5 target (decode_sweep.sh core MLA_HD_L2HINT "0 1 2 3")
#   vals8 the FP8 cache (decode_sweep.sh vals8 MLA_HD_F8_PF "1 0")
P2="--batch 128 --heads 128 --sq 2"; P1="--batch 128 --heads 128 --sq 1"; S4="--heads 128 --sq 1 --seqlen 32768"
shapes_vals=("bf16p s_q=2 4096|--precision bf16p $P2 --seqlen 4096" "bf16p s_q=2 8192|--precision bf16p $P2 --seqlen 8192"
  "bf16p s_q=2 32768|--precision bf16p $P2 --seqlen 32768" "bf16p s_q=1 8192|--precision bf16p $P1 --seqlen 8192"
  "bf16p b=1 32K|--precision bf16p --batch 1 $S4" "bf16p b=4 32K|--precision bf16p --batch 4 $S4"
  "bf16p b=8 32K|--precision bf16p --batch 8 $S4" "spec s_q=2 8192|--precision spec $P2 --seqlen 8192"
  "spec b=4 32K|--precision spec --batch 4 $S4" "h16 16K|--batch 128 --heads 16 --sq 1 --seqlen 16384")
shapes_core=("bf16p s_q=2 8192|--precision bf16p $P2 --seqlen 8192" "bf16p s_q=2 32768|--precision bf16p $P2 --seqlen 32768"
  "bf16p s_q=1 8192|--precision bf16p $P1 --seqlen 8192" "bf16p b=4 32K|--precision bf16p --batch 4 $S4"
  "h16 16K|--batch 128 --heads 16 --sq 1 --seqlen 16384" "fp8 s_q=2 8192|--format fp8 $P2 --seqlen 8192")
shapes_vals8=("fp8 s_q=2 8192|--format fp8 $P2 --seqlen 8192" "fp8 s_q=1 8192|--format fp8 $P1 --seqlen 8192"
  "fp8 h16 16K|--format fp8 --batch 128 --heads 16 --sq 1 --seqlen 16384" "fp8 b=4 32K|--format fp8 --batch 4 $S4"
  "fp8 bf16p s_q=2 8192|--format fp8 --precision bf16p $P2 --seqlen 8192" "ra s_q=2 8192|--format ropeaware $P2 --seqlen 8192"
  "fp8 page=16 8192|--format fp8 $P2 --seqlen 8192 --page-size 16")
if [ "$what" = vals ] || [ "$what" = core ] || [ "$what" = vals8 ]; then
  var=${2:?$what needs a variable name}; vals=${3:?$what needs a list of values}
  declare -n shapes="shapes_$what"
  for round in $(seq "${ROUNDS:-2}"); do
    for v in $vals; do
      for sh in "${shapes[@]}"; do
        # shellcheck disable=SC2086 # the bench arguments split on purpose
        bench "${sh%%|*} $var=$v" "$var=$v" -- ${sh#*|}
      done
    done
  done
fi
if [ "$what" = sched ]; then # balanced schedule (default) against the uniform split, same build
  for pr in spec bf16p; do
    for sc in 1 0; do
      bench "bf16 $pr s_q=2 8K sched=$sc" MLA_DECODE_SCHED=$sc -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen 8192
      bench "bf16 $pr varlen 8K sched=$sc" MLA_DECODE_SCHED=$sc -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen 8192 --varlen
      bench "bf16 $pr s_q=2 32K sched=$sc" MLA_DECODE_SCHED=$sc -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen 32768
      bench "bf16 $pr s_q=1 8K sched=$sc" MLA_DECODE_SCHED=$sc -- --precision $pr --batch 128 --heads 128 --sq 1 --seqlen 8192
      bench "bf16 $pr b=4 32K sched=$sc" MLA_DECODE_SCHED=$sc -- --precision $pr --batch 4 --heads 128 --sq 1 --seqlen 32768
    done
  done
  for sc in 1 0; do
    bench "bf16 h16 16K sched=$sc" MLA_DECODE_SCHED=$sc -- --batch 128 --heads 16 --sq 1 --seqlen 16384
    bench "fp8 s_q=2 8K sched=$sc" MLA_DECODE_SCHED=$sc -- --format fp8 --batch 128 --heads 128 --sq 2 --seqlen 8192
    bench "bf16 b=1 32K sched=$sc" MLA_DECODE_SCHED=$sc -- --batch 1 --heads 128 --sq 1 --seqlen 32768
  done
fi
if [ "$what" = pages ] || [ "$what" = all ]; then
  for f in bf16 fp8; do
    for ps in 64 32 16 48 61 100 17; do
      bench "$f page=$ps 8K" X=1 -- --format $f --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size $ps
      bench "$f bf16p page=$ps 8K" X=1 -- --format $f --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size $ps
    done
    for ps in 64 32 16 61 100; do
      bench "$f page=$ps h16 16K" X=1 -- --format $f --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size $ps
    done
  done
  # BF16 pages that are not multiples of 16: TMA by runs (default) against cp.async (MLA_HD_GPAGE=0)
  bench "bf16 bf16p page=61 8K cp.async" MLA_HD_GPAGE=0 -- --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 61
  bench "bf16 page=61 8K cp.async" MLA_HD_GPAGE=0 -- --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 61
  bench "bf16 page=61 h16 16K cp.async" MLA_HD_GPAGE=0 -- --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 61
  bench "bf16 bf16p page=61 b=4 32K" X=1 -- --precision bf16p --batch 4 --heads 128 --sq 1 --seqlen 32768 --page-size 61
  bench "bf16 bf16p page=64 b=4 32K" X=1 -- --precision bf16p --batch 4 --heads 128 --sq 1 --seqlen 32768
fi
if [ "$what" = diag ] || [ "$what" = all ]; then # page-size cost: TMA box size vs page locality
  for f in bf16 fp8; do
    bench "$f p=64 box=16 8K" MLA_HD_BOX=16 -- --format $f --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 64
    bench "$f p=16 sequential pages 8K" MLA_BENCH_SEQ_PAGES=1 -- --format $f --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 16
    bench "$f p=64 sequential pages 8K" MLA_BENCH_SEQ_PAGES=1 -- --format $f --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 64
  done
  bench "bf16 p=64 box=16 h16 16K" MLA_HD_BOX=16 -- --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 64
  bench "bf16 p=16 seq pages h16 16K" MLA_BENCH_SEQ_PAGES=1 -- --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 16
fi
if [ "$what" = bf16p ] || [ "$what" = all ]; then # MLA_PRECISION_BF16_P against the default, same shapes
  for pr in spec bf16p; do
    for s in 4096 8192 16384 32768; do
      bench "bf16 $pr s_q=2 seq=$s" X=1 -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen $s
    done
    bench "bf16 $pr s_q=1 8K" X=1 -- --precision $pr --batch 128 --heads 128 --sq 1 --seqlen 8192
    bench "bf16 $pr varlen 8K" X=1 -- --precision $pr --batch 128 --heads 128 --sq 2 --seqlen 8192 --varlen
    for b in 1 2 4 8; do bench "bf16 $pr b=$b 32K" X=1 -- --precision $pr --batch $b --heads 128 --sq 1 --seqlen 32768; done
    bench "fp8 $pr s_q=2 8K" X=1 -- --precision $pr --format fp8 --batch 128 --heads 128 --sq 2 --seqlen 8192
  done
fi
if [ "$what" = small ] || [ "$what" = all ]; then
  for b in 1 2 4 8; do
    bench "bf16 b=$b 32K auto" X=1 -- --batch $b --heads 128 --sq 1 --seqlen 32768
    for s in ${SPLITS:-16 32 48 66 96 128}; do
      bench "bf16 b=$b 32K splits=$s" MLA_DECODE_SPLITS=$s -- --batch $b --heads 128 --sq 1 --seqlen 32768
    done
  done
  bench "bf16 b=1 h16 32K auto" X=1 -- --batch 1 --heads 16 --sq 1 --seqlen 32768
  bench "fp8 b=4 32K auto" X=1 -- --format fp8 --batch 4 --heads 128 --sq 1 --seqlen 32768
fi
