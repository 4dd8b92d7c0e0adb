#!/usr/bin/env bash
# session 47, call 4: s1 v2 with the last-tile wait fixed, a diagnosis build (HS_WAIT_DBG: s1's waits give up after ~2^28
# polls and print which): the bench shape that hung in call 3, then decode_hopper's full set
D=build-s47/dbg
timeout 60 $D/mla bench decode --backend cuda --no-ceilings --precision bf16p --format fp8 --batch 128 --heads 128 --sq 2 --seqlen 8192 2>&1 | grep -E "HS_WAIT|^decode|rror" | sort | uniq -c | sort -rn | head -20
timeout 60 $D/mla bench decode --backend cuda --no-ceilings --precision bf16p --format fp8 --batch 128 --heads 128 --sq 1 --seqlen 8192 2>&1 | grep -E "HS_WAIT|^decode|rror" | sort | uniq -c | sort -rn | head -8
t=$(date +%s); timeout 300 $D/test_cuda_decode_hopper 2>&1 | grep -E "FAIL|passed|HS_WAIT" | head -12; echo "tests $(( $(date +%s) - t )) s"
