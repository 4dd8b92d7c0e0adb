#!/usr/bin/env bash
# session 44, call 1: HEAD's binary over small page sizes (1..16) against page 64, b=128 h=128 s_q=2 8K, each precision;
# h=16 s_q=1 16K (GB/s) at pages 1 / 64. One round, TF (GB/s for h16).
B=${B:-build-s44/head}
nvidia-smi --query-gpu=name,temperature.gpu,power.draw,clocks.sm --format=csv,noheader
for f in bf16 fp8; do
  for pr in bf16p spec; do
    for ps in 64 1 2 4 8 12 16; do
      line=$(timeout 60 $B/mla bench decode --backend cuda --no-ceilings --format $f --precision $pr --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size $ps 2>&1 | grep -E "^decode" | tail -1)
      echo "$f $pr page=$ps | $line"
    done
  done
  for ps in 64 1 8; do
    line=$(timeout 60 $B/mla bench decode --backend cuda --no-ceilings --format $f --batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size $ps 2>&1 | grep -E "^decode" | tail -1)
    echo "$f h16 page=$ps | $line"
  done
done
