#!/usr/bin/env bash
# session 43, call 1: where the runs-of-rows producer (hd_producer_gtma) loses. Page 64 through the general-page
# copies (MLA_HD_GPAGE=2: one run, one 64-row box a tile, no overlapping boxes) against page 64's own producer,
# pages 100 / 61 (runs) and 80 (16-row boxes, four issuers); then Nsight Compute's instruction counts.
B=${B:-build-s42/rev}
CONFIGS="std=$B:- gp2=$B:MLA_HD_GPAGE=2 pt0=$B:MLA_HD_PTILE=0" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192 bf16p|--sq_2_--seqlen_8192_--page-size_100 bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_80 bf16p|--sq_2_--seqlen_8192_--page-size_16" \
  bash bench/patches/s40_ab.sh
M=smsp__inst_executed.sum,sm__cycles_elapsed.max,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed_op_shared_st.sum
for cfg in "std|-|64" "gp2|MLA_HD_GPAGE=2|64" "std|-|100" "pt0|MLA_HD_PTILE=0|61"; do
  IFS='|' read n e ps <<< "$cfg"; [ "$e" = - ] && e=
  echo "== ncu $n page $ps"
  env $e ncu --clock-control none -k regex:hd_decode_kernel --launch-skip 4 --launch-count 1 --metrics $M \
    $B/mla bench decode --backend cuda --no-ceilings --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192 --page-size $ps 2>&1 |
    grep -E "hd_decode_kernel|inst_executed|cycles_elapsed|issue_active|wavefronts|shared_st" | head -8
done
