#!/usr/bin/env bash
# Per-kernel GPU times (nsys) of one decode shape under each schedule: plan, decode, combine.
#   bash scripts/decode_prof.sh [bench args...]   (default: bf16p b=4 h=128 s_q=1 32K)
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
bash scripts/gpu.sh none > /dev/null 2>&1 || { echo "BUILD FAILED"; tail -30 out/build.log; exit 1; }
args=("$@"); [ ${#args[@]} = 0 ] && args=(--precision bf16p --batch 4 --heads 128 --sq 1 --seqlen 32768)
NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
for sc in 1 0; do
  echo "== MLA_DECODE_SCHED=$sc ${args[*]}"
  MLA_DECODE_SCHED=$sc build-gpu/mla bench decode --backend cuda --no-ceilings "${args[@]}" 2>&1 | grep -E "^decode " | tail -1
  if [ -n "$NSYS" ]; then
    MLA_DECODE_SCHED=$sc "$NSYS" profile -o "$OUT/prof$sc" --force-overwrite true build-gpu/mla bench decode --backend cuda \
      --no-ceilings "${args[@]}" > /dev/null 2>&1
    "$NSYS" stats --report cuda_gpu_kern_sum --format csv "$OUT/prof$sc.nsys-rep" 2>/dev/null \
      | awk -F, 'NR>1 && /hd_|combine|plan/ {gsub(/"/,""); printf "  %-40.40s n=%s med=%s ns avg=%s ns\n", $9, $3, $6, $5}'
  else echo "  (no nsys)"; fi
done
