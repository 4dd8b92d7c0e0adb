#!/usr/bin/env bash
# session 46, call 5: `mla bench --all` again with the CLI of f2 (adds FP8 bf16p varlen 8K), the same library code
N=${N:-build-s46/new}
export MLA_COMMIT=$(cat golden/COMMIT)
nvidia-smi --query-gpu=name,temperature.gpu,power.draw,clocks.sm --format=csv,noheader
t=$(date +%s); $N/mla bench --all --backend cuda --md $OUT/bench.md > $OUT/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s) - t )) s"
grep -E "ceilings: D2D|^decode" $OUT/bench.log
