#!/usr/bin/env bash
# session 41, call 12: v56's rolled out rows in the default program's BF16 kernels too (hd_consumer, !f8):
# tests, then A/B against v56 (build-s41/v56) with the order alternating
NEW=build-s41/spec BASE=build-s41/v56 BNAME=v56 NNAME=spec ROUNDS=4 \
SHAPES="spec|--sq_2_--seqlen_4096 spec|--sq_2_--seqlen_8192 spec|--sq_2_--seqlen_8192_--varlen spec|--sq_1_--seqlen_8192 spec|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_4096 fp8spec|--sq_2_--seqlen_8192" \
  bash bench/patches/s41_run6.sh
