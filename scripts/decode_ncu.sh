#!/usr/bin/env bash
# Nsight Compute on one decode launch (issue 5 diagnosis, GPU machine): per-SASS-instruction warp
# stall sampling (scripts/ncu_hot.py prints the hot instructions and their stall reasons) and the
# speed-of-light / warp-state sections. Reports and CSVs land in $OUT.
#   bash scripts/decode_ncu.sh [bench args...]   (default: bf16p b=128 h=128 s_q=2 8K; KREGEX=hn_decode for the narrow kernel;
#   MLA_BIN=path for another build's mla)
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"
BIN=${MLA_BIN:-build-gpu/mla}
[ -x "$BIN" ] || bash scripts/gpu.sh none > /dev/null 2>&1 || { echo "BUILD FAILED"; tail -30 out/build.log; exit 1; }
args=("$@"); [ ${#args[@]} = 0 ] && args=(--precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 8192)
tag=$(echo "${args[*]}" | tr -c 'a-zA-Z0-9=\n' '_' | tr -s '_')
rep="$OUT/ncu_$tag"
ncu --clock-control none -k regex:"${KREGEX:-hd_decode_kernel}" --launch-skip 4 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section Occupancy --import-source no -f -o "$rep" \
  "$BIN" bench decode --backend cuda --no-ceilings "${args[@]}" > "$rep.log" 2>&1 || { tail -20 "$rep.log"; exit 1; }
grep -E "^decode " "$rep.log" | tail -1
ncu --import "$rep.ncu-rep" --page details > "$rep.details.txt" 2>&1
grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Issue Slots Busy|Issued Ipc|Warp Cycles Per Issued|Stall|No Eligible|Active Warps|Shared" "$rep.details.txt" | head -40
ncu --import "$rep.ncu-rep" --page source --print-source sass --csv > "$rep.src.csv" 2> "$rep.src.err" || tail -5 "$rep.src.err"
python3 scripts/ncu_hot.py "$rep.src.csv" 70
gzip -f "$rep.src.csv"
