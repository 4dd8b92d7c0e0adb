#!/usr/bin/env bash
# session 44, call 3: where v62's gather stops (bf16p b=128 h=128 s_q=2 8K): keys from HBM against keys in L2
# (MLA_BENCH_POOL_PAGES / MLA_BENCH_NOFLUSH, diagnosis only), page 1 and page 64 (TMA, and gathered: MLA_HD_GATHER=2);
# then Nsight Compute's stall sampling of the _r kernel at page 1
N=${N:-build-s44/v62}
for ps in 1 64; do for g in 1 2; do for l2 in 0 1; do
  [ $ps = 1 ] && [ $g = 2 ] && continue
  if [ $l2 = 1 ]; then e="MLA_BENCH_POOL_PAGES=$((128 * 64 / ps)) MLA_BENCH_NOFLUSH=1"; else e=""; fi
  echo "page=$ps gather=$g l2=$l2: $(env $e MLA_HD_GATHER=$g timeout 60 $N/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size $ps 2>&1 | grep -E '^decode' | tail -1)"
done; done; done
MLA_BIN=$N/mla KREGEX=hd_decode_kernel_v7_bf16p_r bash scripts/decode_ncu.sh --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size 1 2>&1 | head -120
