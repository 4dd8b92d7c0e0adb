#!/usr/bin/env bash
# Local-memory traffic inside each Hopper decode kernel's matrix loop: compiles a CUDA source to a
# cubin and counts LDL/STL between its first and last GMMA instruction (HGMMA or QGMMA), then per
# kernel those inside its innermost consumer and TMA-producer loops (scripts/loop_spills.py). ptxas's
# register allocation over the setmaxnreg regions moves with code added anywhere in a kernel, even
# before the role split (session 17: one prefetch block in the plan took the bf16p kernel from 1 to
# 138 such instructions), so count before a change goes to the GPU.
#   bash scripts/gmma_spills.sh [src/cuda/decode_hopper.cu]   (CUOBJDUMP=path if not on PATH; NVFLAGS=-D... for variants)
set -uo pipefail
src=${1:-src/cuda/decode_hopper.cu}
cuobj=${CUOBJDUMP:-$(command -v cuobjdump || ls /root/.pyenv/versions/*/lib/python*/site-packages/nvidia/cu1*/bin/cuobjdump 2>/dev/null | head -1)}
[ -x "$cuobj" ] || { echo "cuobjdump not found (set CUOBJDUMP)"; exit 1; }
tmp=$(mktemp -d)
nvcc ${NVFLAGS:-} -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -Iinclude -Isrc -cubin -o "$tmp/k.cubin" "$src" > "$tmp/ptxas.log" 2>&1 ||
  { grep -E "error" "$tmp/ptxas.log" | head; exit 1; }
echo "ptxas serialization warnings (C7510-C7518, C752x): $(grep -cE 'C75(1[0-8]|2[0-9])' "$tmp/ptxas.log")"
"$cuobj" -sass "$tmp/k.cubin" | awk '
  /Function :/ { if (name != "") report(); name = $3; n = 0; delete line; next }
  /\/\*[0-9a-f]+\*\/ / && /;/ { line[n++] = $0 }
  function report(   i, first, last, span, tot) {
    first = -1; last = -1; span = 0; tot = 0
    for (i = 0; i < n; i++) if (line[i] ~ /GMMA/) { if (first < 0) first = i; last = i }
    for (i = 0; i < n; i++) if (line[i] ~ /LDL|STL/) { tot++; if (i > first && i < last) span++ }
    if (first >= 0) printf "%-52s %6d instructions, LDL/STL %4d in the GMMA span, %4d in all\n", name, n, span, tot
  }
  END { if (name != "") report() }'
# per kernel, the loops themselves (scripts/loop_spills.py): the per-tile and per-pair loops' spills
for fn in $("$cuobj" -sass "$tmp/k.cubin" | awk '/Function :/ { print $3 }'); do
  "$cuobj" -sass -fun "$fn" "$tmp/k.cubin" | grep -q GMMA || continue
  echo "$fn: $("$cuobj" -sass -fun "$fn" "$tmp/k.cubin" | python3 "$(dirname "$0")/loop_spills.py" | tail -1)"
done
rm -rf "$tmp"
