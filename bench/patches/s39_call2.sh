#!/usr/bin/env bash
# session 39: configs NAME=BIN:CFLOW, same run, alternating rounds, medians of TF
set -u
nvidia-smi --query-gpu=name,temperature.gpu,power.draw --format=csv,noheader
CONFIGS=${CONFIGS:-"base=build-s39/bin_b:0 pairs_mid=build-s39/bin_b:1 v53a=build-s39/bin_a:1"}
if [ "${TESTS:-0}" = 1 ]; then
  for cfg in $CONFIGS; do b=${cfg#*=}; b=${b%:*}; [ -x $b/test_cuda_decode_hopper ] || continue
    echo "== tests $b"; timeout 300 $b/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed|continuous" | head -20; done
fi
SH=("--sq 2 --seqlen 4096" "--sq 2 --seqlen 8192" "--sq 2 --seqlen 8192 --varlen" "--sq 2 --seqlen 16384" "--sq 2 --seqlen 8192 --causal 1" "--heads 64 --sq 4 --seqlen 8192")
ROUNDS=${ROUNDS:-3}
: > $OUT/ab.txt
for r in $(seq $ROUNDS); do
  for i in "${!SH[@]}"; do
    for cfg in $CONFIGS; do
      n=${cfg%%=*}; b=${cfg#*=}; cf=${b##*:}; b=${b%:*}
      hs="--heads 128"; case "${SH[$i]}" in *--heads*) hs="";; esac
      line=$(MLA_HD_CFLOW=$cf $b/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 128 $hs ${SH[$i]} 2>&1 | grep -E "^decode" | tail -1)
      echo "$n|${SH[$i]}|$(echo "$line" | awk '{print $(NF-4)}')" >> $OUT/ab.txt
    done
  done
done
python3 - $OUT/ab.txt <<'PY'
import sys, statistics, collections
d = collections.defaultdict(list); order = []
for ln in open(sys.argv[1]):
    n, sh, tf = ln.rstrip("\n").split("|")
    if sh not in order: order.append(sh)
    try: d[sh, n].append(float(tf))
    except ValueError: pass
names = list(dict.fromkeys(ln.split("|")[0] for ln in open(sys.argv[1])))
print(f"{'shape':40s} " + " ".join(f"{n:>10s}" for n in names))
for sh in order:
    print(f"{sh:40s} " + " ".join(f"{statistics.median(d[sh, n]) if d[sh, n] else 0:10.1f}" for n in names))
PY
