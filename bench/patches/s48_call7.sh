# session 48 call 7: v68 with the racecheck fixes (ovf ring of 4, __syncwarp before the zeroing) against base and the
# variant whose scale-table stores follow the fast max (its loads may issue with the scores'); tests, sanitizers
set -u
B=build-s48
echo "== tests"; timeout 300 $B/newt/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -20
CONFIGS="base=$B/base:- fix=$B/new:- move=$B/move:-" SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_8192_--varlen" ROUNDS=3 bash bench/patches/s40_ab.sh
N=$B/newt bash bench/patches/s45_run8.sh
