#!/usr/bin/env bash
# session 42, call 2: v57 (page-aligned tiles on one 64-row box a chunk, the early start and the L2 prefetch ahead
# of a segment; pages 56..63 and 113..127 under bf16p): tests, then A/B against session 41's final binary
NEW=${NEW:-build-s42/v57} BASE=${BASE:-build-s41/spec} BNAME=s41 NNAME=v57 ROUNDS=${ROUNDS:-4} \
SHAPES="${SHAPES:-bf16p|--sq_2_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_4096_--page-size_61 bf16p|--sq_2_--seqlen_8192_--page-size_120 bf16p|--sq_1_--seqlen_8192_--page-size_61 bf16p|--sq_2_--seqlen_8192_--varlen_--page-size_61 bf16p|--sq_2_--seqlen_8192 bf16p|--sq_2_--seqlen_8192_--page-size_100}" \
  bash bench/patches/s41_run6.sh
