#!/usr/bin/env bash
# session 41, call 3: the FP8-656 cache under MLA_PRECISION_BF16_P, s1 (registers) against the 64-row
# shared-memory dequantization kernel (MLA_HD_NARROW=0), HEAD's binary
set -u
b=build-s41/base
for r in 1 2; do
  for s in 4096 8192 16384; do
    for n in 1 0; do
      echo "narrow=$n seq=$s $(MLA_HD_NARROW=$n $b/mla bench decode --backend cuda --no-ceilings --precision bf16p --format fp8 --batch 128 --heads 128 --sq 2 --seqlen $s 2>&1 | grep -E '^decode' | awk '{print $(NF-4)}')"
    done
    echo "bf16 seq=$s $($b/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen $s 2>&1 | grep -E '^decode' | awk '{print $(NF-4)}')"
  done
done
