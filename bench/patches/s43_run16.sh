#!/usr/bin/env bash
# session 43, call 16: does the default program (spec, whole-tile refills: tile m1 prepared before m0's copies) follow
# the boxes rule? _g (MLA_HD_GKERN=1) against _gs (=2), fcada4e's binary
B=build-s43/rev43m
CONFIGS="g=$B:MLA_HD_GKERN=1 gs=$B:MLA_HD_GKERN=2" ROUNDS=${ROUNDS:-2} \
SHAPES="spec|--sq_2_--seqlen_8192_--page-size_17 spec|--sq_2_--seqlen_8192_--page-size_24 spec|--sq_2_--seqlen_8192_--page-size_33 spec|--sq_2_--seqlen_8192_--page-size_36 spec|--sq_2_--seqlen_8192_--page-size_41 spec|--sq_2_--seqlen_8192_--page-size_45 spec|--sq_1_--seqlen_8192_--page-size_36" \
  bash bench/patches/s40_ab.sh
