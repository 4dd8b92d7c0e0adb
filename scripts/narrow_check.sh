#!/usr/bin/env bash
# The raw-tile FP8 decode kernels (src/cuda/decode_narrow.cu: 16, 32 and 64 rows a CTA) on the GPU machine
# in one call: build, test_cuda_decode_hopper (all of it), then FP8 shapes under each MLA_HD_NARROW
# value of VALS (default "1 0": the automatic choice against the 64-row kernel), ROUNDS rounds
# (default 2), medians last (TFLOPS and GB/s).
#   SET=narrow|wide|all bash scripts/narrow_check.sh [notest]
# BASE=dir (a source tree carried beside this one, e.g. `git archive <rev> | tar -x -C build-base-src`):
# builds it into build-base and compares this tree ("new") with it ("base") under the automatic
# choice, alternating, instead of the MLA_HD_NARROW values.
set -uo pipefail
OUT=${OUT:-out}; mkdir -p "$OUT"; B=build-gpu
bash scripts/gpu.sh none > "$OUT/gpu_build.txt" 2>&1 || { tail -30 "$OUT/gpu_build.txt"; exit 1; }
grep -A3 "hn_decode" "$OUT/build.log" | grep -E "registers|spill" | head -4
if [ -n "${BASE:-}" ]; then
  cmake -S "$BASE" -B build-base -DCMAKE_BUILD_TYPE=Release > /dev/null && cmake --build build-base -j "$(nproc)" --target mla_cli > "$OUT/base_build.log" 2>&1 || { tail -20 "$OUT/base_build.log"; exit 1; }
  VALS="new base"
fi
if [ "${1:-}" != notest ]; then
  timeout 300 $B/tests/test_cuda_decode_hopper > "$OUT/t.log" 2>&1; echo "test rc=$?: $(tail -1 "$OUT/t.log")"
  grep -E "^FAIL" "$OUT/t.log" | head -6 | cut -c1-300
fi
rm -f "$OUT/nb.txt"
narrow=("h16 16K|--batch 128 --heads 16 --sq 1 --seqlen 16384" "h16 b=4 32K|--batch 4 --heads 16 --sq 1 --seqlen 32768"
        "h8 4K|--batch 128 --heads 8 --sq 1 --seqlen 4096" "h16 page16|--batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 16"
        "h16 page61|--batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 61" "h16 page1|--batch 128 --heads 16 --sq 1 --seqlen 16384 --page-size 1")
wide=("h128 sq2 8K bf16p|--batch 128 --heads 128 --sq 2 --seqlen 8192 --precision bf16p"
      "h128 sq2 4K bf16p|--batch 128 --heads 128 --sq 2 --seqlen 4096 --precision bf16p"
      "h128 sq2 32K bf16p|--batch 128 --heads 128 --sq 2 --seqlen 32768 --precision bf16p"
      "h128 sq1 bf16p|--batch 128 --heads 128 --sq 1 --seqlen 8192 --precision bf16p"
      "h128 b=4 bf16p|--batch 4 --heads 128 --sq 1 --seqlen 32768 --precision bf16p"
      "h64 sq1 bf16p|--batch 128 --heads 64 --sq 1 --seqlen 8192 --precision bf16p"
      "h128 sq2 8K|--batch 128 --heads 128 --sq 2 --seqlen 8192" "h128 sq1 8K|--batch 128 --heads 128 --sq 1 --seqlen 8192"
      "h128 b=4 32K|--batch 4 --heads 128 --sq 1 --seqlen 32768" "h16 sq2 16K|--batch 128 --heads 16 --sq 2 --seqlen 16384"
      "h16 sq2 bf16p|--batch 128 --heads 16 --sq 2 --seqlen 16384 --precision bf16p"
      "h32 sq1 bf16p|--batch 128 --heads 32 --sq 1 --seqlen 16384 --precision bf16p"
      "h16 sq2 b=4 bf16p|--batch 4 --heads 16 --sq 2 --seqlen 32768 --precision bf16p")
case "${SET:-all}" in narrow) shapes=("${narrow[@]}");; wide) shapes=("${wide[@]}");; *) shapes=("${narrow[@]}" "${wide[@]}");; esac
for r in $(seq "${ROUNDS:-2}"); do
  for sh in "${shapes[@]}"; do
    for nr in ${VALS:-1 0}; do
      rm -f "$OUT/nb.md"
      bin=$B/mla; envs="MLA_HD_NARROW=$nr"
      case $nr in new) envs="X=1";; base) envs="X=1"; bin=build-base/mla;; esac
      env $envs timeout 90 $bin bench decode --backend cuda --no-ceilings --format fp8 ${sh#*|} --md "$OUT/nb.md" > /dev/null 2>&1
      echo "$nr|${sh%%|*}|$(grep '^| decode' "$OUT/nb.md" 2>/dev/null | tail -1)" >> "$OUT/nb.txt"
    done
  done
done
python3 - "$OUT/nb.txt" "${VALS:-1 0}" <<'PY'
import statistics, sys, collections
d = collections.defaultdict(list)
vals = sys.argv[2].split()
for l in open(sys.argv[1]):
    n, s, row = l.rstrip('\n').split('|', 2)
    f = [x.strip() for x in row.split('|')]
    try: d[(s, n)].append((float(f[4]), float(f[6])))
    except (ValueError, IndexError): pass
print("%-14s" % "shape" + "".join("%22s" % (v if v in ("new", "base") else "MLA_HD_NARROW=" + v) for v in vals) + "   (TFLOPS / GB/s, medians)")
for s in dict.fromkeys(k[0] for k in d):
    cells = []
    for v in vals:
        x = d.get((s, v), [])
        cells.append("%10.0f /%9.0f" % (statistics.median([a for a, b in x]), statistics.median([b for a, b in x])) if x else "%22s" % "-")
    print("%-14s" % s + "".join("%22s" % c for c in cells))
PY
