#!/usr/bin/env bash
# the device tests of one carried build folder (session 44's call scripts): decode_hopper (full set) and golden on CUDA
#   bash bench/patches/ab_tests.sh DIR
N=$1
echo "== tests"; timeout 400 $N/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed" | head -30
echo "== golden"; MLA_GOLDEN=$PWD/golden MLA_TEST_BACKEND=cuda timeout 120 $N/test_golden 2>&1 | tail -1
