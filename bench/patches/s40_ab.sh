#!/usr/bin/env bash
# session 40: same-run A/B of binaries and env knobs, alternating rounds, medians (TF; GB/s where the
# bench line's TF column is not the figure). CONFIGS: NAME=BINDIR:ENV=VAL (ENV=VAL optional, "-" none); several: ENV=VAL,ENV2=VAL2
set -u
nvidia-smi --query-gpu=name,temperature.gpu,power.draw,clocks.sm --format=csv,noheader
CONFIGS=${CONFIGS:-"base=build-s40/base:- off=build-s40/new:MLA_HD_CUTMERGE=0 on=build-s40/new:-"}
if [ "${TESTS:-0}" = 1 ]; then
  b=build-s40/new
  echo "== tests $b"; timeout 240 $b/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
  echo "== golden $b"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $b/test_golden 2>&1 | tail -2
fi
if [ -n "${TIMING:-}" ]; then
  for cfg in $CONFIGS; do n=${cfg%%=*}; b=${cfg#*=}; e=${b#*:}; b=${b%%:*}; [ "$e" = - ] && e=
    for sh in "--sq 2 --seqlen 8192 --varlen" "--sq 2 --seqlen 4096"; do
      echo "== timing $n $sh"; env $e MLA_HD_TIMING=1 $b/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 128 --heads 128 $sh 2>&1 | grep -E "hd timing" | sort | uniq -c | sort -rn | head -3
    done
  done
fi
SH=(${SHAPES:-"bf16p|--sq_2_--seqlen_4096" "bf16p|--sq_2_--seqlen_8192" "bf16p|--sq_2_--seqlen_8192_--varlen" "bf16p|--sq_2_--seqlen_4096_--varlen" "bf16p|--sq_2_--seqlen_16384" "bf16p|--sq_1_--seqlen_8192" "bf16p|--sq_1_--seqlen_8192_--varlen" "bf16p|--heads_64_--sq_2_--seqlen_8192" "spec|--sq_2_--seqlen_8192_--varlen" "fp8spec|--sq_2_--seqlen_8192_--varlen"})
ROUNDS=${ROUNDS:-2}
: > $OUT/ab.txt
CFGS=($CONFIGS)
for r in $(seq $ROUNDS); do
  # (session 41) the configs' order alternates by round: a fixed order biased a same-shape pair by ~0.4%
  # (4K favours the second run of a pair, 16K-32K under the power cap the first)
  if [ $((r % 2)) = 0 ]; then ORD=$(printf '%s\n' "${CFGS[@]}" | tac | tr '\n' ' '); else ORD="${CFGS[*]}"; fi
  for s in "${SH[@]}"; do
    pr=${s%%|*}; args=${s#*|}; args=${args//_/ }
    # (session 44) fp8bf16p: FP8 under bf16p; fp8h16 / fp8w1: FP8, default precision / bf16p, the GB/s column
    fmt=""; col=4; case $pr in fp8spec) fmt="--format fp8"; pr=spec;; fp8bf16p) fmt="--format fp8"; pr=bf16p;;
      fp8h16) fmt="--format fp8"; pr=spec; col=2;; fp8w1) fmt="--format fp8"; pr=bf16p; col=2;; esac
    hs="--heads 128"; case "$args" in *--heads*) hs="";; esac
    for cfg in $ORD; do
      n=${cfg%%=*}; b=${cfg#*=}; e=${b#*:}; b=${b%%:*}; [ "$e" = - ] && e=
      line=$(env ${e//,/ } timeout 60 $b/mla bench decode --backend cuda --no-ceilings --precision $pr $fmt --batch 128 $hs $args 2>&1 | grep -E "^decode" | tail -1)
      echo "$n|$s|$(echo "$line" | awk -v c=$col '{print $(NF-c)}')" >> $OUT/ab.txt
    done
  done
done
python3 - $OUT/ab.txt <<'PY'
import sys, statistics, collections
d = collections.defaultdict(list); order = []; names = []
for ln in open(sys.argv[1]):
    n, sh, tf = ln.rstrip("\n").split("|", 2)[0], ln.split("|")[1] + "|" + ln.split("|")[2], ln.rstrip("\n").split("|")[3]
    if sh not in order: order.append(sh)
    if n not in names: names.append(n)
    try: d[sh, n].append(float(tf))
    except ValueError: pass
print(f"{'shape':44s} " + " ".join(f"{n:>9s}" for n in names))
for sh in order:
    print(f"{sh:44s} " + " ".join(f"{statistics.median(d[sh, n]) if d[sh, n] else 0:9.1f}" for n in names))
PY
