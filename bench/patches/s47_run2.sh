#!/usr/bin/env bash
# session 47, call 2: s1's wgmma A-fragment buffers (decode_narrow.cu HS_SBUF: S's groups in flight, HS_PBUF: P.V's),
# default 2 / 2 against 3 / 2 (s3), 2 / 3 (p3), 3 / 3 (sp3), 4 / 2 (s4); FP8 bf16p, b=128 h=128
CONFIGS="base=build-s47/new:- s3=build-s47/s3:- p3=build-s47/p3:- sp3=build-s47/sp3:- s4=build-s47/s4:-" ROUNDS=3 SHAPES="fp8bf16p|--sq_2_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_8192_--varlen fp8bf16p|--sq_2_--seqlen_4096 fp8bf16p|--sq_1_--seqlen_8192 fp8bf16p|--sq_2_--seqlen_16384" bash bench/patches/s40_ab.sh
