#!/usr/bin/env bash
# session 43, call 13: the _g / _gs choice by the boxes a tile (a page's mean over its tiles), checked where the
# page-size threshold and a boxes rule disagree or nothing was measured: _gs (MLA_HD_GPREP_MIN=1000) against _g (=1)
B=build-s43/thr
CONFIGS="gs=$B:MLA_HD_GPREP_MIN=1000 g=$B:MLA_HD_GPREP_MIN=1" ROUNDS=${ROUNDS:-2} \
SHAPES="bf16p|--sq_2_--seqlen_8192_--page-size_42 bf16p|--sq_2_--seqlen_8192_--page-size_46 bf16p|--sq_2_--seqlen_8192_--page-size_49 bf16p|--sq_2_--seqlen_8192_--page-size_51 bf16p|--sq_2_--seqlen_8192_--page-size_53 bf16p|--sq_2_--seqlen_8192_--page-size_54 bf16p|--sq_2_--seqlen_8192_--page-size_41 bf16p|--sq_2_--seqlen_8192_--page-size_44" \
  bash bench/patches/s40_ab.sh
