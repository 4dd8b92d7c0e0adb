#!/usr/bin/env bash
# Where the balanced schedule's time goes: the bench line under each schedule, then (MLA_HD_TIMING=1,
# events between the grids) plan / decode / combine times of the last calls.
#   bash scripts/decode_prof.sh [bench args...]   (default: bf16p b=4 h=128 s_q=1 32K)
set -uo pipefail
[ -x build-gpu/mla ] || bash scripts/gpu.sh none > /dev/null 2>&1 || { echo "BUILD FAILED"; tail -30 out/build.log; exit 1; }
args=("$@"); [ ${#args[@]} = 0 ] && args=(--precision bf16p --batch 4 --heads 128 --sq 1 --seqlen 32768)
echo "== ${args[*]}"
for sc in 1 0; do
  printf 'sched=%s ' $sc
  MLA_DECODE_SCHED=$sc build-gpu/mla bench decode --backend cuda --no-ceilings "${args[@]}" 2>&1 | grep -E "^decode " | tail -1 | awk '{print $(NF-5), "ms", $(NF-4), "TF"}'
done
MLA_HD_TIMING=1 build-gpu/mla bench decode --backend cuda --no-ceilings "${args[@]}" 2>&1 | grep "hd timing" | tail -2
