#!/usr/bin/env bash
# session 44, call 9: page 1's spread between calls (call 5: 577.5 TF, call 7: 580, call 8: 509): the same binary in
# fresh processes, the pool's pages in order (MLA_BENCH_SEQ_PAGES=1) against shuffled, and HEAD's binary beside it
N=${N:-build-s44/v63}
nvidia-smi --query-gpu=name,temperature.gpu,power.draw,clocks.sm --format=csv,noheader
for r in 1 2 3; do for cfg in "v63=$N:-" "v63seq=$N:MLA_BENCH_SEQ_PAGES=1" "head=build-s44/head:-"; do
  n=${cfg%%=*}; b=${cfg#*=}; e=${b#*:}; b=${b%%:*}; [ "$e" = - ] && e=
  for ps in 1 7; do
    echo "$n page=$ps: $(env $e timeout 60 $b/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size $ps 2>&1 | grep -E '^decode' | tail -1 | awk '{print $(NF-4)}')"
  done
done; done
nvidia-smi --query-gpu=name,temperature.gpu,power.draw,clocks.sm --format=csv,noheader
