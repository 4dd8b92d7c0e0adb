#!/usr/bin/env bash
# session 41, call 4: the refactored probes still run (dsmem_probe, l2_probe's cluster table), and the two
# bf16p kernels (base / _ep) against each other on every shape (MLA_HD_EARLY_PAY=1 forces _ep, 2 the base)
set -u
mkdir -p build-gpu
nvcc -O3 -gencode arch=compute_90a,code=sm_90a bench/dsmem_probe.cu -o build-gpu/dsmem_probe && timeout 60 build-gpu/dsmem_probe | tail -7
nvcc -O3 -gencode arch=compute_90a,code=sm_90a bench/l2_probe.cu -o build-gpu/l2_probe && timeout 120 build-gpu/l2_probe | tail -18
b=build-s41/base
CONFIGS="auto=$b:- ep=$b:MLA_HD_EARLY_PAY=1 base=$b:MLA_HD_EARLY_PAY=2" \
SHAPES="bf16p|--sq_2_--seqlen_4096 bf16p|--sq_2_--seqlen_8192 bf16p|--sq_2_--seqlen_32768 bf16p|--sq_2_--seqlen_8192_--varlen bf16p|--sq_1_--seqlen_8192 bf16p|--heads_64_--sq_2_--seqlen_8192 bf16p|--batch_4_--sq_1_--seqlen_32768" \
ROUNDS=2 bash bench/patches/s40_ab.sh
