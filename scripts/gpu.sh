#!/usr/bin/env bash
# One call on the GPU machine: build, GPU tests (golden on CUDA, CUDA vs CPU randomized),
# compute-sanitizer memcheck/racecheck on a reduced set, the benchmark; short table last.
#   bash scripts/gpu.sh [test|bench|all|sanitize|sweep] [extra bench args... | sweep: pages|small|all]
# Needs the golden cases in ./golden (copy of ../shared/golden; carried to the device), and
# golden/COMMIT holding `git describe --always --dirty` of the tree sent.
set -uo pipefail
mode=${1:-all}; shift || true
OUT=${OUT:-out}; mkdir -p "$OUT"
B=build-gpu
log() { echo "== $*"; }
summary=()

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader || true
if [ ! -f $B/Makefile ]; then
  cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DMLA_PTXAS_VERBOSE=ON >/dev/null || exit 1
fi
t0=$(date +%s)
cmake --build $B -j "$(nproc)" > "$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log"; exit 1; }
log "build: $(( $(date +%s) - t0 )) s"
grep -E "spill|Used [0-9]+ registers" "$OUT/build.log" | grep -B1 -E "[1-9][0-9]* bytes spill" | head -20
if command -v cuobjdump >/dev/null; then
  cuobjdump --dump-sass $B/libmla.a > "$OUT/sass.txt" 2>/dev/null
  log "SASS: $(grep -cE 'HGMMA' "$OUT/sass.txt") HGMMA, $(grep -cE 'QGMMA' "$OUT/sass.txt") QGMMA, $(grep -cE 'HMMA' "$OUT/sass.txt") HMMA, $(grep -c 'LDL\|STL' "$OUT/sass.txt") LDL/STL"
fi
export MLA_GOLDEN=$PWD/golden
# the device copy has no .git: the commit comes in golden/COMMIT (written by the caller)
export MLA_COMMIT=$(cat golden/COMMIT 2>/dev/null || echo unknown)

run_test() { # name, command...
  local name=$1; shift
  local t=$(date +%s)
  timeout "${TEST_TIMEOUT:-150}" "$@" > "$OUT/$name.log" 2>&1; local rc=$?
  [ $rc = 124 ] && echo "TIMEOUT $name after ${TEST_TIMEOUT:-150} s" >> "$OUT/$name.log"
  local last=$(grep -E "^[0-9]+ passed, [0-9]+ failed" "$OUT/$name.log" | tail -1)
  summary+=("$(printf '%-28s rc=%-3s %-40s %ss' "$name" "$rc" "${last:-no summary}" "$(( $(date +%s) - t ))")")
  grep -E "^FAIL" "$OUT/$name.log" | head -8
}

if [ "$mode" = test ] || [ "$mode" = all ]; then
  run_test golden_cpu $B/tests/test_golden
  MLA_TEST_BACKEND=cuda run_test golden_cuda $B/tests/test_golden
  for t in $B/tests/test_cuda_*; do run_test "$(basename $t)" "$t"; done
fi
if [ "$mode" = sanitize ] || [ "$mode" = all ]; then
  for t in $B/tests/test_cuda_*; do
    MLA_TEST_QUICK=1 run_test "memcheck_$(basename $t)" compute-sanitizer --tool memcheck --error-exitcode 9 "$t"
    MLA_TEST_QUICK=1 TEST_TIMEOUT=${RACE_TIMEOUT:-300} run_test "racecheck_$(basename $t)" compute-sanitizer --tool racecheck --error-exitcode 9 "$t"
  done
fi
if [ "$mode" = sweep ]; then
  B=$B bash scripts/decode_sweep.sh "${1:-all}" 2>&1 | tee "$OUT/sweep.log"
fi
if [ "$mode" = bench ] || [ "$mode" = all ]; then
  $B/mla bench --all --backend cuda --md "$OUT/bench.md" "$@" > "$OUT/bench.log" 2>&1
  summary+=("bench rc=$?")
fi
log "logs in $OUT"
[ -f "$OUT/bench.log" ] && tail -60 "$OUT/bench.log"
printf '%s\n' "${summary[@]}"
