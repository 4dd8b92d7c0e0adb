#!/usr/bin/env bash
# session 46, call 4: the full benchmark table (`mla bench --all`, as scripts/gpu.sh bench runs it) on the binary built
# here from a1d8fed's code, then decode_hopper's quick set under memcheck and racecheck on that binary
N=${N:-build-s46/new}
export MLA_GOLDEN=$PWD/golden MLA_COMMIT=$(cat golden/COMMIT)
t=$(date +%s); $N/mla bench --all --backend cuda --md $OUT/bench.md > $OUT/bench.log 2>&1; echo "bench rc=$? $(( $(date +%s) - t )) s"
N=$N bash bench/patches/s45_run8.sh
tail -62 $OUT/bench.log
