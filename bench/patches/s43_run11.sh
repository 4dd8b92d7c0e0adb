#!/usr/bin/env bash
# session 43, call 11: is instruction fetch a limit elsewhere? Stall sampling (scripts/decode_ncu.sh) of s1 (FP8 bf16p
# 8K), the _ep kernel (bf16p s_q=1 8K) and the base bf16p kernel at 4K, b06041b's binary
B=build-s43/final/mla
KREGEX=hn_decode MLA_BIN=$B bash scripts/decode_ncu.sh --precision bf16p --format fp8 --batch 128 --heads 128 --sq 2 --seqlen 8192 2>&1 | grep -E "^decode|Issue Slots|stall reasons"
MLA_BIN=$B bash scripts/decode_ncu.sh --precision bf16p --batch 128 --heads 128 --sq 1 --seqlen 8192 2>&1 | grep -E "^decode|Issue Slots|stall reasons"
MLA_BIN=$B bash scripts/decode_ncu.sh --precision bf16p --batch 128 --heads 128 --sq 2 --seqlen 4096 2>&1 | grep -E "^decode|Issue Slots|stall reasons"
MLA_BIN=$B bash scripts/decode_ncu.sh --precision spec --batch 128 --heads 128 --sq 2 --seqlen 8192 2>&1 | grep -E "^decode|Issue Slots|stall reasons"
