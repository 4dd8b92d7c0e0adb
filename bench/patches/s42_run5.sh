#!/usr/bin/env bash
# session 42, call 5: v57 against session 41's binary on the page-aligned shapes the early start reaches (the
# uniform split of small batches) and the memory-bound ones, the order alternating
CONFIGS="s41=build-s42/ab/s41:- v57=build-s42/ab/v57:-" ROUNDS=${ROUNDS:-4} \
SHAPES="${SHAPES:-bf16p|--batch_4_--sq_1_--seqlen_32768_--page-size_61 bf16p|--batch_8_--sq_1_--seqlen_32768_--page-size_61 bf16p|--heads_16_--sq_1_--seqlen_16384_--page-size_61 bf16p|--sq_1_--seqlen_8192_--page-size_120 bf16p|--heads_64_--sq_2_--seqlen_8192_--page-size_61 bf16p|--batch_4_--sq_1_--seqlen_32768}" \
  bash bench/patches/s40_ab.sh
