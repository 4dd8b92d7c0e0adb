#!/usr/bin/env bash
# session 47, call 5: the full table on the final kernels (v67d; build-s47/new is this tree's mla), two runs
for r in 1 2; do build-s47/new/mla bench --all --backend cuda --md $OUT/bench$r.md > $OUT/bench$r.txt 2>&1; echo "run $r rc=$?"; done
cat $OUT/bench1.md | head -80
