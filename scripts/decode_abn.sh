#!/usr/bin/env bash
# A/B/C.. of several versions of src/cuda/decode_hopper.cu on the GPU machine (issue 5 tuning): each
# FILE (carried in a git-ignored folder such as golden/ab/) is built in a copy of this tree (the
# variants build side by side), then the shapes run variant after variant, ROUNDS rounds (default 2);
# medians per shape and variant last. SHAPES=fp8 (default) or bf16 picks the shape set; SHAPES=list takes
# SHAPE_LIST="name|bench args;name|bench args..."; SKIP_BUILD=1 reuses the build-v* of the last call;
# AB_TARGET=src/cuda/decode_narrow.cu swaps that file instead of decode_hopper.cu.
#   bash scripts/decode_abn.sh golden/ab/a.cu golden/ab/b.cu [...]
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"; rm -f "$OUT/abn.txt"
files=("$@"); n=${#files[@]}
[ "$n" -ge 1 ] || { echo "usage: decode_abn.sh FILE..."; exit 2; }
for i in $(seq 0 $((n - 1))); do
  [ "${SKIP_BUILD:-0}" = 1 ] && [ -x build-v$i/mla ] && continue
  tb=/tmp/tree_$i; rm -rf $tb; mkdir -p $tb
  tar --exclude='./build*' --exclude='./golden' --exclude='./out' -cf - . | tar -xf - -C $tb
  cp "${files[$i]}" $tb/${AB_TARGET:-src/cuda/decode_hopper.cu}
  ( cmake -S $tb -B build-v$i -DCMAKE_BUILD_TYPE=Release >/dev/null && \
    cmake --build build-v$i -j 6 --target mla_cli > "$OUT/build_v$i.log" 2>&1 || echo "BUILD $i FAILED" ) &
done
wait
P2="--batch 128 --heads 128 --sq 2"
if [ "${SHAPES:-fp8}" = list ]; then
  IFS=';' read -r -a shapes <<< "${SHAPE_LIST:?SHAPES=list needs SHAPE_LIST}"
elif [ "${SHAPES:-fp8}" = fp8 ]; then
  shapes=("fp8 s_q=2 8K|--format fp8 $P2 --seqlen 8192" "fp8 s_q=1 8K|--format fp8 --batch 128 --heads 128 --sq 1 --seqlen 8192"
          "fp8 h16 16K|--format fp8 --batch 128 --heads 16 --sq 1 --seqlen 16384" "fp8 b=4 32K|--format fp8 --batch 4 --heads 128 --sq 1 --seqlen 32768"
          "fp8 bf16p 8K|--format fp8 --precision bf16p $P2 --seqlen 8192" "ra 8K|--format ropeaware $P2 --seqlen 8192"
          "fp8 page 16 8K|--format fp8 $P2 --seqlen 8192 --page-size 16")
else
  shapes=("bf16p 4K|--precision bf16p $P2 --seqlen 4096" "bf16p 8K|--precision bf16p $P2 --seqlen 8192"
          "bf16p 32K|--precision bf16p $P2 --seqlen 32768" "bf16p s_q=1 8K|--precision bf16p --batch 128 --heads 128 --sq 1 --seqlen 8192"
          "varlen 8K|--precision bf16p $P2 --seqlen 8192 --varlen" "spec 8K|--precision spec $P2 --seqlen 8192" "b=4 32K|--precision bf16p --batch 4 --heads 128 --sq 1 --seqlen 32768"
          "h16 16K|--batch 128 --heads 16 --sq 1 --seqlen 16384"
          "causal 4K|--precision bf16p $P2 --seqlen 4096 --causal 1" "causal 8K|--precision bf16p $P2 --seqlen 8192 --causal 1")
fi
for r in $(seq "${ROUNDS:-2}"); do
  for sh in "${shapes[@]}"; do
    for i in $(seq 0 $((n - 1))); do
      line=$(build-v$i/mla bench decode --backend cuda --no-ceilings ${sh#*|} 2>&1 | grep "^decode" | tail -1)
      echo "$i|${sh%%|*}|$(echo "$line" | awk '{print $(NF-4)}')|$(echo "$line" | awk '{print $(NF-2)}')" >> "$OUT/abn.txt"
    done
  done
done
python3 - "$OUT/abn.txt" "${files[@]}" <<'PY'
import statistics, sys
from collections import defaultdict
d = defaultdict(list)
for line in open(sys.argv[1]):
    v, sh, tf, gb = line.strip().split("|")
    try: d[sh, int(v)].append((float(tf), float(gb)))
    except ValueError: pass
names = [f.split("/")[-1] for f in sys.argv[2:]]
print("shape".ljust(16) + "".join(n[:22].rjust(24) for n in names))
for sh in dict.fromkeys(k[0] for k in d):
    cells = []
    for i in range(len(names)):
        x = d.get((sh, i))
        cells.append(f"{statistics.median(a for a, _ in x):7.1f} TF {statistics.median(b for _, b in x):5.0f} GB/s" if x else "-")
    print(sh.ljust(16) + "".join(c.rjust(24) for c in cells))
PY
