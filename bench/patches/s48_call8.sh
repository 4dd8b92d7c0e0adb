# session 48 call 8: golden on CUDA and the full table (mla bench --all, twice) on v68 (build-s48/new = this tree's kernels)
set -u
B=build-s48
echo "== golden"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $B/newt/test_golden 2>&1 | tail -1
for r in 1 2; do timeout 200 $B/new/mla bench --all --backend cuda --md $OUT/bench$r.md > $OUT/bench$r.log 2>&1; echo "run $r rc=$?"; done
grep -E "target|met|missed" $OUT/bench1.md | head -40
