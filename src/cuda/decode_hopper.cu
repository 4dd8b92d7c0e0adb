/* mla_decode on CUDA, Hopper (sm_90a) path: paged MLA_KV_BF16, MLA_KV_FP8 or MLA_KV_FP8_ROPE_AWARE cache -> out
   [T,H,512] bf16, lse [T,H] f32 (spec 4.1). Entry points in decode_hopper.h; decode.cu dispatches here.
   TFLOPS count 2*b*s_q*h*(576+512)*seqlen (FlashMLA's count; the P_hi + P_lo split below does
   1.47x that in tensor work). H100, b=128 h=128 s_q=2 seq 4K / 32K; b=128 h=16 s_q=1 16K:
     v1  wgmma from smem, cp.async producer (two warp pairs), two consumers splitting each
         tile's keys (S: N=32 each), P as one bf16 (fails SPEC 5)     201 TF            1.64 TB/s
     v2  P = P_hi + P_lo, two bf16 terms (P_hi in the stage's dead rope chunk)  190 TF  1.54 TB/s
     v3  key tiles by TMA (one thread, 9 box copies per tile)         325 / 330 TF      2.81 TB/s
     v4  seesaw: each consumer owns alternate whole tiles (S: N=64), its softmax overlaps the
         other's matrix work, its own P.V from registers                387 / 422 TF    2.86 TB/s
     v5  stages paid as soon as each P.V ends; P_lo read first (own group) 432 / 470 TF  2.97 TB/s
     v6  P by stmatrix, lazy running max (O rescaled only when the max grows by > 2^8)
                                                                        438 / 475 TF    2.97 TB/s
     v7  MLA_KV_FP8 (656 B/token): the producer dequantizes in shared memory (see the FP8 section
         of the producer); registers 56 producer / 224 consumers (BF16 unchanged). Measured on an
         H200 (this version's session; H100 figures above), seq 4K / 8K / 32K, h=16 16K, b=4 h=128 32K:
           BF16                                   448 / 468 / 435 TF  3.69 TB/s   339 TF
           FP8, power-of-two scales               226 / 232 / 240 TF  1.08 TB/s   191 TF (656 B/token)
           FP8, other scales (exact program)            188 TF at 8K
         FP8 is producer-bound (HD_TRACE timeline, 4K): per pair of tiles ~17.8K cycles against
         ~10.1K for BF16; per tile the dequantization of 64 rows takes ~3.9K cycles (128 threads,
         ~700 instructions each; batching the shared loads and 56 instead of 40 registers did not
         move it) and the raw tile lands ~3.7K cycles after conversion ends, because with two
         in-place stages tile n+2 can only be loaded once consumer 1 has done P.V of tile n, which
         follows S of tile n+1, which waits for tile n+1's conversion. Tried: f32 conversion path
         (2 conversions + 2 f16->f32 per pair) -> f16 bit trick + bf16x2 multiply (1 conversion):
         no change; early TMA issue (polled during conversion): no change; per-pair scale loads
         from global -> one pre-scan per CTA + scales by TMA: +3%.
     v8  MLA_KV_FP8_ROPE_AWARE (640 B/token + 4 B sigma): the FP8 producer with 640-byte rows (no
         scale box; sigma per key from the pool), q packed [T,H,640] converted to bf16 (exact) by
         producer pair 1; always the exact program with one scale per key (sigma_k), S of the full
         576 columns times q_sigma sigma_k in f32, P times sigma_k before P.V. H200, 8K / h=16 16K:
           rope-aware                              181 TF at 8K                0.87 TB/s (644 B/token)
         same session, HEAD (v7) -> v8: BF16 458 -> 454 TF, FP8 233 -> 230 TF, FP8 exact 187 -> 178 TF
     v9  page sizes that are multiples of 16 on TMA too: boxes of 16 / 32 rows, one per page
         sub-block of the tile, each sub-block issued by its own producer warp (lane 0). One thread
         issuing the 36 boxes of a 16-row tile ran like the cp.async path (H200 8K: 302 TF; 64-row
         boxes forced to 16 rows on page 64: 303, so the issue, not the page locality). H200:
           BF16 8K  page 64 / 32 / 16 / 48: 466 / 462 / 461 / 462 TF (61, cp.async: 285)
           BF16 h=16 16K page 64 / 32 / 16: 3.60 / 3.56 / 3.54 TB/s
           FP8 8K   page 64 / 32 / 16: 219 / 215 / 208 TF; h=16 16K: 1.02 / 1.00 / 0.95 TB/s
         Split-KV combine v2: one CTA per row with the split weights in shared memory (v1 loaded
         each split's lse inside its loop, ~1 us per split), launched as a programmatic dependent
         of the decode grid; up to 128 splits. b=1 h=128 32K: 74.8 -> 58 us.
     v10 MLA_PRECISION_BF16_P (hd_decode_kernel_v7_bf16p, p1 = 1): P as one bf16 term (FlashMLA's
         numerics), row sums of the rounded P; no P_lo product, no P_lo tile. H200 (same run):
           seq 4K / 8K / 16K / 32K s_q=2          spec 441 / 463 / 464 / 425   bf16p 547 / 582 / 594 / 544 TF
           s_q=1 8K; b=4 / b=8 h=128 32K           spec 433 TF; 1.44 / 1.66 TB/s  bf16p 541 TF; 1.65 / 1.95 TB/s
         The tensor work drops by 1/3 but the time by 1/5: S = Q K^T at N = 64 from shared memory
         reads 4 KB per 32-cycle m64n64k16, the whole 128 B/clk of shared-memory bandwidth, and a
         tile's shared traffic (S 147 KB, V 64 KB, the TMA write 73 KB) takes ~2200 cycles, as long
         as its tensor work (2176 cycles); FlashMLA (660 TF) feeds S wider.
     v11 one "full" mbarrier per 64-column chunk: S = Q K^T waits chunk by chunk (TMA: one per
         chunk and issuer; FP8: per dequantization phase and warp); H100 8K spec 455 -> 464,
         bf16p 557 -> 566 TF. The pair of tiles is one dependency chain (timeline in
         bench/results.md, session 3): S_t, softmax_t (~1000 cycles), publish, the other's
         take, P.V_t, softmax_u, publish, take, P.V_u, then the ~2150-cycle reload of the stage:
         7125 cycles a pair against 4352 of tensor work. Tried: softmax_u before taking P_t
         (both softmaxes then overlap each other, not matrix work): -10%; refilling each V half
         of a stage as soon as its consumer is done: -3%.
     v12 MLA_PRECISION_BF16_P on FlashMLA's schedule (hd_consumer_p1): the row max passes between
         the consumers ahead of P, consumer 1's softmax starts on consumer 0's max and runs under
         matrix work; stages refill in three parts (V half 0, V half 1, rope: one "empty" barrier
         each) in the order the consumers free them; kv_valid / nvalid per tile. H100 (mla bench
         --all) bf16p s_q=2 4K / 8K / 16K / 32K 531 / 568 / 564 / 563 -> 556 / 609 / 636 / 651 TF
         (32K varies 560-650 from run to run), s_q=1 8K 520 -> 545, b=4 32K 1.50 -> 1.55 TB/s. The
         default precision keeps hd_consumer and whole-tile refills (the part-by-part refill alone
         measured 1-3% slower there).
     v13 balanced split-KV schedule (hd_plan_cta, hd_sched_next, hd_combine_kernel_v3): where the
         uniform layout would run unsplit, the CTAs plan (requests on one cost line, parts x lanes,
         CTA 0 publishes the plan for later waves and the combine); unequal requests get balanced
         parts, cut requests merged by the combine; one cost or ragged q_len keeps the uniform
         layout (mode 0); small batches keep the uniform split with no plan. H100, sched 0 -> 1:
         varlen b=128 s_q=2 8K spec 360 -> 446, bf16p 478 -> 566 TF; fixed shapes -1..-3% (the
         plan, the combine grid that exits); b=4 / b=1 unchanged. Steps: bench/results.md, session 5.
     v14 the fixed cost per CTA (per-CTA timeline, HD_CT / scripts/cta_summary.py: ~31K cycles besides
         ~216K of tiles at 4K): a full row block's Q by 9 TMA boxes (cp.async landed ~10K cycles after
         issue), the row block found by a warp (32 probes a round), out staged in stage 0 and stored by
         TMA from producer thread 0 after the segment's __syncthreads (BF16 caches). H100, same build,
         switch off -> on: bf16p 4K 534 -> 542 (Q) and 534 -> 547 (out), 8K 584 -> 590, 601 -> 609;
         spec 4K 419 -> 428 (out). Full table, steps: bench/results.md, session 6.
     v15 persistent CTAs (MLA_HD_PERSIST, default on) under the balanced schedule: where the plan keeps
         the uniform layout and every request has at most L row blocks ("mode 2", hd_lane_job) the grid
         is P L CTAs and CTA x runs jobs j = x, x + gridDim.x, ... (row block j % L of request j / L);
         between segments producer warp 0 finds the next job while the last tiles run (hd_next_job,
         with the pages of its first two tiles and an L2 prefetch of them), thread 0 loads its Q by TMA
         as soon as every part of the last two tiles is paid (hd_q_ahead; qfull keeps its phases),
         the barriers are re-armed by a warp, tile 0's issuer waits for the out stores. Per segment
         (8K bf16p timeline) ~24K -> ~13K cycles outside the tiles. H100, same build, off -> on:
         bf16p s_q=2 4K / 16K / 32K 543 -> 554 / 580 -> 600 / 550 -> 576 TF, 8K 592 -> 590; spec
         4K / 8K 426 -> 443 / 459 -> 467, 16K / 32K equal within the run-to-run noise; s_q=1 and
         varlen (mode 1: Q ahead only) within 1%. Steps: bench/results.md, session 7.
     v16 bf16p softmax: the max over the raw scores and the scale inside P's FFMA (positive scales),
         no stage-test code in the bf16p program. Nsight Compute (scripts/decode_ncu.sh) put both
         softmaxes (~1300 cycles each, ~30% of their cycles waiting for instructions) on the critical
         chain of a pair. H100, same run, against v15: bf16p s_q=2 4K / 8K / 32K +1.1 / +1.5 / +2.4%,
         spec within 1%. Tiles prefetched into L2 ahead of their copies measured slower everywhere
         (h=16 2849 -> 2513 GB/s two tiles ahead) and were dropped. Steps: bench/results.md, session 8.
     v17 S descriptors advanced by one 32-bit add on the low word (hd_desc_add; a 64-bit add and
         moves per k-step before): the S issue of a tile ~290 -> ~180 SASS instructions per warp,
         issued beside the other consumer's softmax. H100, same run, against v16: bf16p s_q=2 4K /
         8K / 32K +3.4 / +4.7 / +6.6%, b=4 32K +3.2%, spec +1.2..3.1%. Full table at 2807f09: bf16p
         570 / 612 / 632 / 603 TF (4K..32K), spec 445 / 470 / 444 / 453 TF.
     v18 bf16p hand-overs: each consumer waits for the V chunks of the other's tile (landed before
         that tile's S) before waiting for its P, not after. H100, same run, against v17: bf16p
         s_q=2 4K / 8K / 32K +1.0 / +1.8 / +1.5%, s_q=1 +1.9%. Not kept (bench/results.md, session
         9): L2 eviction hints on the tile copies (all slower), consumer 1's row max ahead of P_t
         (-1..-3%), S_{u+2} ordered after S_{t+2} (neutral), named barriers for the hand-overs
         (neutral), S_{t+2}'s first chunks issued ahead of P_u (-12%: they are still loading).
         Full table at 528874a: bf16p 583 / 635 / 629 / 636 TF, spec 444 / 480 / 475 / 447 TF.
     v19 (not kept; code in commit 4127fd8, MLA_HD_F8=2) the FP8 producer through registers: no raw
         byte in shared memory; each producer thread loads its raw words (4 rows x 16 B per group of
         128 columns, 5 groups a tile, rope first) from global memory ahead of the stage's "empty",
         converts and stores them; own kernels with setmaxnreg 72 / 216. H100, same run, v7 -> v19:
         FP8 s_q=2 8K 195 -> 161 TF, bf16p 201 -> 179, h=16 16K 912 -> 728 GB/s, rope-aware 165 ->
         125 TF. Timeline (HD_TRACE): each group's conversion takes ~1500 cycles, the L2 latency of
         its loads: the fence.proxy.async that hands a chunk to wgmma is a MEMBAR.ALL.CTA, which also
         waits for the next group's loads in flight (2 or 1 hand-overs a tile instead of 5: no
         better, S then starts later); with 56 producer registers two groups in flight spilled, and
         one group in flight plus L1 prefetches (prefetch.global.L1) measured 146 TF (L1 is 28 KB).
     v20 FP8 dequantization in two phases (slots 0-3 into chunks 0-3, then slots 4-7 in registers, one
         barrier, chunks 4-7 over the slots): two producer barriers a tile instead of five. H100, same
         run, v19's base (v7) -> v20: FP8 s_q=2 8K 197 -> 203 TF, s_q=1 191 -> 197, h=16 914 -> 943 GB/s.
     v21 hd_decode_kernel_v7_f8 (FP8 caches, default precision): consumer 1 runs P.V of the other's tile
         before its own S (the HD_TRACE timeline put stage t's release, hence tile t+2's landing, behind
         consumer 1's S_{t+1}, which waited for t+1's dequantization while P_t sat ready); that S waits
         for its chunks in two parts outside the wgmma sequence (waits between them made ptxas
         serialize every wgmma, C7520). H100 same run: FP8 s_q=2 8K 206 -> 215 TF, h=16 936 -> 984 GB/s.
     v22 the FP8 kernel with 64-row boxes: consumer 1's thread 0 issues tiles 2.. (hd_f8_refill) once
         their stage is free; the producer's issuer had polled for it between its conversion phases
         and, when it issued mid-tile, stalled its warp on the page lookup. H100 same run: FP8 s_q=2 8K
         215 -> 244 TF, s_q=1 208 -> 234, h=16 994 -> 1068 GB/s, b=4 407 -> 434 GB/s (page 16 keeps
         the producer's issuers: one thread issuing 4 sub-blocks measured -28%).
     v23 that consumer looks up the pages of its next two tiles while it waits for P: h=16 1066 -> 1132
         GB/s, other FP8 shapes +0..1%. Not kept: the block-table lookups of tile n+1 loaded during tile
         n (-3%: producer spills), the tile's metadata ahead of its landing (neutral).
         Timeline now (spec 8K, traced): pair ~16K cycles; stage free -> tile landed ~3.9K (lookup +
         TMA), landed -> chunks 0-3 converted ~4K (LDS/STS against the consumers' wgmma traffic).
     v24 (not kept) the owner consumer converting its tile's second half (slots 4-7, the producer
         the first, a per-stage mbarrier in two phases between them): correct (tests, racecheck) but
         slower, H100 same run, 8K 244 -> 225.5 TF (both consumers; converting under PV_u, before
         paying stage 1, measured 222.5) and 231 (consumer 1 only): the conversion moved onto the
         consumers' own chains, which reach it later than the producer did.
     v25 (not kept) the producer's scales by __ldg during the landing wait, no scales box and no
         barrier before the first phase: 8K 243.5 -> 226.5 TF, and rope-aware / page 16 (other paths)
         -7% too: the 56-register producer spilled more (LDL/STL 223 -> 252).
     v26 bf16p masked softmax (the last tile of a causal segment, partial tiles) as bit arithmetic:
         written with || and && it compiled to a branch around each element (~900 -> ~500 SASS per
         inlined softmax; the masked softmax took ~4.6K cycles against ~1.3K). H100 same run: causal
         s_q=2 4K 586.5 -> 594.5 TF, varlen 8K 604.5 -> 612.5, others within noise.
     v27 hd_decode_kernel_v7_bf16p_ep where a request has at most 2 row blocks (s_q = 1 at h = 128,
         h = 64 s_q = 2, small batches): consumer 0 frees stage 1 (V half 0, rope) as soon as its P.V
         of the odd tile is done, then issues S of the next pair; the base order issues half of that S
         first, whose chunk waits held the free back ~1.4K cycles (16K timeline). H100 same run:
         s_q=1 8K 556.5 -> 569 TF, b=4 32K 1562 -> 1581 GB/s, h=64 s_q=2 +2%; at s_q=2 h=128 (four row
         blocks a tile, mostly L2 hits) it measured -2% (8K), so those keep the base kernel. Not kept
         (same session): consumer 1 freeing stage 0's half 1 inside its softmax (-2..-6%), the
         producer's page lookups one pair ahead (-0.5..-1%).
     v28 the base bf16p kernel sums each own tile's rounded P by a wgmma (m64n8k16 against 256 bytes of
         0.25 in the alignment slack, in the P.V group: hd_issue_pv_regs) instead of 64 ALU
         instructions in the softmax (~286 -> ~220 a warp). H100 same run: s_q=2 4K 593.5 -> 598 TF, 8K
         635 -> 639, causal 4K / 8K +0.7 / +0.8%; in the _ep kernel it measured -0.8% (s_q=1, b=4), so
         that one keeps the ALU sums. Predicted +3-6% (the softmax is on both stages' loops): the
         softmax waits more than it issues (Nsight: selected 29%, wait 28%, short scoreboard 18%).
         Not kept: a V half as one 4-chunk TMA box (a 4-D view of the cache): -0.5..-1% against a6b3789.
     v29 the FP8 kernel on 16- and 32-row boxes (pages 16, 32, 48, ...): consumer 1 issues the refills
         there too, warp w's lane 0 sub-block w, so the four sub-blocks of page 16 go out in parallel.
         H100 same run (8K s_q=2): page 16 / 32 / 48 205 / 208.5 / 207 -> 231 / 236 / 233.5 TF (page 64:
         246), s_q=1 page 16 197 -> 226, b=4 page 16 390 -> 422 GB/s. Four lanes of one warp issuing
         them (their TMA serialized inside the warp) gained 1-2% at pages 16 and 48.
     v30 page-aligned tiles in the bf16p general-page kernels (p.ptile, hd_pt_tiles): for pages 56..63
         and 113..127 (not multiples of 16, at least 7/8 of a tile's rows keys, no causal mask) tile t
         holds one page's keys from row 64 (t % c), its rows past the page zeros (the 16-row boxes run
         out of the tensor's page dimension), loaded by the page-64 producer's copies (hd_tma_prep, pt);
         the softmax masks only the four elements of keys 56.. where that is all that is missing (the
         full masked program cost 6.5%). H100 same run against v29: page 61 8K 554.5 -> 589.5 TF,
         s_q=1 511 -> 532.5, varlen 541 -> 581, b=4 32K 1450 -> 1539 GB/s, page 120 559 -> 582.5;
         h16 and the other pages unchanged. Compiled into the default program's kernel the same code
         cost it 2.5-3% (registers), so that one keeps the runs of rows.
     v31 the uniform split's combine inside the decode grid (hd_fused_combine, p.fuse): the grid launched
         cooperatively with dense row-block slots; each split CTA flags its partial with the launch's
         epoch, waits for its block's splits and combines 64 / nsplit of its rows from L2. The combine
         grid costs b=4 h=128 32K 10.5 us of ~96 (left out: 1574 -> 1766 GB/s), b=1 16 us of 57. Inside:
         a shared count (CAS) serialized its 64 CTAs (b=1 668 -> 526 GB/s), one flag a split did not;
         a rolled split loop kept one load in flight; with 16 in flight the code still costs ~6 us cold.
         Same run: b=1 666 -> 706 GB/s (kept there: 64 splits and more), b=4 1578 -> 1563, b=8 1954 ->
         1931, b=16 8K 1572 -> 1528.
     v32 the FP8 kernel (default precision) on group tiles at pages that are not multiples of 16
         (p.f8g, hd_g_tiles, hd_decode_kernel_v7_f8_g): each page's rows cut into 16-row groups (the
         last one short), a tile = four consecutive groups in key order, one 16-row TMA box each, its
         rows past the page zero-filled (out of the tensor's page dimension); they ran by cp.async
         (41 pieces a row, the producer waiting for each tile's pieces). Where at least 3/4 of the
         tiles' rows are keys; the softmax masks only the four elements of keys 56.. where that is
         all that is missing (bf16p's v30 tail, +3..5% at pages 61 and 120). H100 same run, cp.async
         -> group tiles, s_q=2 8K: page 61 152 -> 213 TF, 100 153.5 -> 196, 120 153.5 -> 212.5, 24
         151.5 -> 168 (page 17, 17/32 of the rows keys: 151 -> 123, so it keeps cp.async); s_q=1 page
         61 148 -> 207.5, rope-aware 123 -> 155, b=4 32K 316 -> 390 GB/s. Page 64 246, 16 230. Causal
         calls take hd_decode_kernel_v7_f8_gc: the producer hands each sub-block's first key to the
         masked softmax (HD_KGRP); compiled into the non-causal kernel that cost it 1-2% (14 LDL/STL in
         its loops): causal page 61 153 -> 212.5 TF, page 100 153 -> 184, rope-aware 124 -> 157.5.
         Where the groups of a page come in fours (pages 49..63, 113..127, ...) a tile is 64 rows of
         one page: one 64-row box (one issuer, 10 copies instead of 40): page 61 214.5 -> 218.5, 120
         212.5 -> 215.5, s_q=1 +1.7%, causal page 56 +2.5%, b=4 +2% (predicted ~232 at page 61 from
         page 64's 246 x 61/64: the issue was not what held it at 215). Forced onto page 64 (MLA_HD_F8G=3,
         the standard kernel's tiles) this kernel runs 226 against 246: its own code costs 7%; the
         producer's per-row divisions (now a step a tile, hd_f8_grow) were +0.5..1% of it.
     v33 consumer 1's refills in the FP8 kernels without a division (hd_pos_refill): the sub-block's (page
         index, row) stepped 64 rows a tile; they had held consumer 1 between its P.V and its S (seven
         divisions a refill on group tiles, two on 16-row-multiple pages). Found by the group-tile kernel
         forced onto page 64 (MLA_HD_F8G=3, 226 against 246 TF): HD_TRACE put its ~1.1K more cycles a
         pair in the chain through the consumers, ncu in their integer instructions (+6%) and fetch
         stalls. The group-tile producer's rows without a division too (hd_f8_grow). H100 same run,
         8K s_q=2 FP8 default (bench/results.md, session 29): page 64 246 -> 252.5 TF, 61 220 -> 242.5,
         100 200 -> 220, 120 217.5 -> 240.5, 24 167.5 -> 183, causal 61 217.5 -> 237, s_q=1 61 213 -> 234,
         b=4 32K 61 402 -> 436 GB/s, rope-aware 61 160 -> 171; 48 232 -> 247, 16 229.5 -> 233. Cost: the
         exact program at page 61 161 -> 142.5 TF (ptxas's allocation of the producer: the refills alone
         kept 160.5; page 64's exact program unchanged). The step a tile in O(1) (hd_pos_tile: its loop
         had run 8 times a pair at page 16, 2M warp instructions by ncu): page 16 235 -> 241.5, 32 248 ->
         252.5, 48 247 -> 252, s_q=1 page 16 230 -> 233.5; 64 / 61 / 100 unchanged (254 / 243.5 / 221).
     v34 the bf16p base kernel's f32 row sums (lse) after P's hand-over (hd_late_sums: the consumer adds
         them under its own P.V): 32 FADDs fewer on the chain from S to the published P, which each
         instruction there lengthens (tried alongside: exponentials by an FMA-pipe polynomial, 12 of 32,
         -5%; so the softmax is bound by its instructions' issue, not by the MUFU pipe). H100 same run,
         3 rounds: bf16p s_q=2 4K / 8K / 16K 592 -> 595 / 638 -> 645 / 656 -> 667 TF, causal 638 -> 644,
         page 61 592 -> 597; the _ep kernel keeps its sums in the softmax (after its P.V: s_q=1 -1.2%,
         b=4 -1.1%). Not kept (bench/results.md, session 30): the row max as a tree (neutral), the key
         bits loaded before S's wait (neutral; 36 LDL/STL in the _ep kernel's loops).
     v35 (session 31, kernels unchanged but hd_finish) the bf16p raw scores' domain: test cases whose late
         tiles pass the running max by up to 2^28 (log2 units) broke the bf16p softmax past ~2^31 (P's FMA
         subtracts fl(max s * sc) from the exact product: the row's largest P is 2^(ulp(m)/2)); documented
         (|scaled scores| < ~2^29), hd_finish writes NaN where a seen row kept no probability. Not kept:
         scaling first past 2^24 (a vote on the chain: -2.5..-4%), P before the row max (hd_p1_max_free,
         a vote where some P passes 2^8: -3%; bench/results.md, session 31).
     v36 a segment's re-arm without re-initializing (hd_init_bars): a persistent CTA's transition spent
         ~5.2K cycles re-initializing its 31 mbarriers (inval, init and fence a barrier: SYNCS.EXCH runs
         serialized over the warp; HD_TRACE slots 18 -> 19 at 4K and 16K). The segment's barriers are
         quiet there, so one arrival of each odd-phase barrier's full count puts every barrier back at an
         even phase, as fresh. H100 same run, 3 rounds: bf16p 4K 597 -> 603, 8K 650 -> 653, causal 8K
         648 -> 653, varlen 616 -> 618, s_q=1 579 -> 580, spec 8K 483 -> 485; b=4 (no transition) 377 / 377.
     v45 (not kept; bench/patches/s35_v45_sorted_lanes_lpt.diff) unequal requests as whole-request lanes
         from one queue, largest cost first (no cut, no combine): whole requests balance 4.5-7% worse than
         mode 1's cuts; H100 same run, varlen 8K / 16K bf16p 614.5 -> 599 / 652.5 -> 622.5 TF, s_q=1
         varlen 515 -> 467.
     v46 the early start (hd_start_early: Q and tiles 0, 1 issued by thread 0 before the roles split) under the
         balanced schedule too, past one more barrier after the plan (its scratch lives in the stages). The
         first wave's first S 25.7K -> 20.9K cycles after entry (4K trace). H100 same run, 3 rounds: bf16p 4K /
         8K / 16K 601 -> 603 / 649 -> 651 / 671 -> 673, varlen 617 -> 619, causal 8K 648 -> 650, s_q=1 578 ->
         579, spec 8K 483 -> 484; b=4, h16 (other paths) unchanged.
     v49 (not kept; bench/patches/s36_v49_continuous_flow.diff) segments without a pipeline drain: barriers run on
         across segments (no re-arm), out from the consumers' registers by 16-byte stores, the next Q and tiles 0, 1
         issued as the last stages free. The stores took 8.5K cycles (64 KB at ~8 B/clock, as the tensor stores'
         128-byte row pieces: a rate set by the write pattern, not by the other SMs' traffic, bench/store_probe.cu),
         so the transition shrank ~0.7K cycles and the consumers waited instead: H100 same run 4K 599.5 -> 587.5,
         8K 646 -> 639.5, varlen 613.5 -> 610.5 TF. v50 (the same with 64 whole-row bulk stores from producer warp
         0, bench/patches/s36_v50_flow_row_stores.diff): their issue held the warp ~6K cycles, 4K 598 -> 588.
     v51, v52 (not kept; bench/patches/s37_v52_row_major_out_early_tiles.diff) out staged row-major in stage 0
         (a quad transpose, conflict-free) and sent as one 64 KB bulk store; v52 also re-armed the stages'
         barriers and issued the next tile 1 once hd_q_ahead saw them paid. The transition stayed ~17.4K cycles:
         tile 0 then waited on the producer's own chain (v51), or the staging slowed under the landing tiles
         (6.4K cycles, v52). H100 same run 4K 600 -> 593.5 / 587, 8K 642.5 -> 639 / 635, s_q=1 574 -> 560 / 557.5.
     v53 (not kept; bench/patches/s39_v53_next_s_under_epilogue.diff) v49's flow in a kernel of its own with each
         consumer's next first S issued inside the epilogue (a dummy S where it owns no tile; the consumer index
         a compile-time constant: a branch on it with a wgmma in flight serialized every wgmma, C7520). H100 same
         run 4K 597 -> 588 (S between the rows' stores 591; whole-line store pairs 585), 8K 641 -> 637, 16K 660 ->
         652 (663): the consumers' store issue is the transition, the S under it too short to pay for it.
     v54 (not kept; bench/patches/s39_v54_tile0_behind_out_boxes.diff) out's 8 boxes as 8 bulk groups, the next
         tile 1 first and tile 0 chunk by chunk as each box is read: H100 same run 4K 599 -> 595, 8K 647 -> 644.
     v55 the balanced schedule's cut row blocks merged inside the decode grid (hd_cut_note, hd_cut_count,
         hd_cut_merge; not in the _ep kernels), so no combine grid follows a scheduled decode but the
         _ep kernels' (its CTAs all exited where nothing was cut: ~4 us a launch, MLA_HD_TIMING). H100
         same run, 3 rounds, HEAD -> v55: 4K 604 -> 608, page 61 8K 600 -> 606, varlen 8K 619 -> 619
         (the ~22 us combine grid, overlapped by PDL, against ~10 us more decode), every other shape
         within 1 TF. Variants that counted each piece at its segment's end, or all at the CTA's
         end, and one compiled into the _ep kernels: bench/results.md, session 40.
     v56 the bf16p base kernel writes its two rows of out in one rolled pass (hd_finish_row; row r0 + 8's
         values moved into row r0's registers for the second): that code runs once a segment and is fetched
         cold (session 38). 640 SASS instructions fewer, loop spills as before; trace build, 4K: epilogue
         5.6K -> 4.3K cycles a segment. H100, same runs: 4K +0.2..+1.0% (the order of the pair moved it by
         ~0.4%), 8K / varlen +0.2..+0.5%; the _ep and general-page bf16p kernels unchanged (their SASS too).
         The default program's BF16 kernels as well (v7, v7_g; not FP8, whose loop spills rose): spec 4K 450
         -> 454, 8K 473 -> 475, varlen 8K 460.5 -> 462 TF; v7_g's GMMA-loop LDL/STL 405 -> 189.
     v57 page-aligned tiles (v30) on one 64-row box a chunk (kv_map made with 64-row boxes over the page; the
         rows past it land as zeros), as page 64's producer: one issuer, the early start (hd_start_early) and
         the next segment's L2 prefetch (hd_job_ahead), which 16-row boxes had kept out. H100 same run, order
         alternating, 4 rounds, bf16p: page 61 8K 603 -> 617 TF (page 64 650: 61/64 of it is 619.5, so
         the tiles' three idle rows are the whole gap now), 4K 562 -> 575, page 120 596.5 -> 610, s_q=1
         page 61 538 -> 542, varlen page 61 588 -> 599; page 100 (the runs of rows, same kernel) 577 -> 574.5.
     v60 page-aligned tiles only where a page's last tile holds >= 56 keys (hd_softmax's tail mask): pages 113..119
         had taken them by the 7/8-of-128-rows rule, their 49..55-key second tiles on the masked program. H100,
         MLA_HD_PTILE=0 against the tiles, 8K bf16p: page 113 / 115 577 / 577 against 556.5 / 557 TF (now runs of
         rows), 119 576.5 / 577.5; pages 56..63 and 120 keep them (57 566 -> 590.5, 120 580 -> 614.5).
     v61 the general-page producer's tile prep as a rolled loop over the runs (hd_gtma_prep_c) where a page's
         tiles take at most 4.4 boxes on average (HD_GPREP_BOXES: pages 40, 44, 46, 49.. of those not multiples
         of 16; kernels _gs keep the unrolled prep for the others; MLA_HD_GKERN=1 / 2 forces _g / _gs for A/B;
         a first cut at page 40 measured 41 and 42 slower on _g). Nsight Compute put the general-page kernels'
         loss in instruction fetch: page 64 forced through these copies (MLA_HD_GPAGE=2) ran 578 against 650 TF
         with stall_no_inst 15.5% of the warp samples against 4.2%; the producer's pair loop (1214 SASS
         instructions, two unrolled preps most of it) pushed the consumers' code out. The rolled prep takes it
         to 922 (no_inst 7.6%), and the second tile's prep goes after the first tile's parts, under the wait for
         its own. Below page 40 (tiles of three to five runs) the rolled prep's chain cost more than the fetch
         saved (page 17 -5%, 33 -3.6%), and the two preps in one kernel cost both sides. H100, same run, 3
         rounds, HEAD -> v61, bf16p 8K: page 100 576 -> 609, 113 574 -> 608, 40 570 -> 583 TF; s_q=1 page 100
         523 -> 543; b=4 32K page 100 350 -> 362; spec page 100 455 -> 468; pages 17, 24, 33, 61, 64 unchanged.
         Not kept (bench/patches/s43_v61c_gtma_rolled_parts.diff): the six parts of a pair as one rolled loop
         (page 100 575 -> 519: the issue's latency), four issuers as lanes of one warp (page 100 569 -> 508:
         their copies serialize in the warp).
     v62 BF16 pages under 16 keys gathered row by row (hd_producer_rows, the _r kernels): all four producer
         warps copy every tile by 16-byte cp.async, closed per chunk by cp.async.mbarrier.arrive, in
         hd_producer_tma's part order; no thread waits for its own copies. The cp.async warp pairs (a tile a
         pair, copies awaited, under bf16p the whole stage awaited) ran 170 TF at page 1. Three cuts, H100 same
         run, bf16p 8K page 1 (and, forced onto page 64 with MLA_HD_GATHER=2, against TMA's 653): addresses
         computed per copy 295 (327: ncu put the producer warps at ~13 cycles an instruction, keys in L2
         changed nothing); each copy one instruction on precomputed addresses 406 (465); one block-table
         lookup a lane with the rows shuffled, a zero row instead of predicated copies and the parts unrolled
         (~150 instructions a tile a warp) 577.5 (632). Page 7 170 -> 636, spec page 1 238 -> 460, s_q=1 page 1
         266 -> 533.5 TF, h=16 page 1 1729 -> 2814 GB/s, b=4 page 1 914 -> 1512 GB/s.
     v66 FP8 pages that neither TMA nor the group tiles take (1..13, 17..27, 33..41, ... since group tiles need
         7/8 of their rows keys; default precision) gathered row by row (hd_f8_issue_rows, hd_decode_kernel_v7_f8_r): producer warp w copies sub-block w
         of a tile into the TMA boxes' layout, where and when the TMA issuers would, closed on landed[st] by
         cp.async.mbarrier.arrive; consumer 1 issues no refills. Before, the producer copied each tile by
         cp.async and awaited it before dequantizing. H100 same run, 8K: page 1 138 -> 190, 17 150 -> 206,
         s_q=1 page 1 136 -> 184 TF (page 64 252-255). (v65, the raw-tile kernels' gather: decode_narrow.cu.)
     v67 consumer 1's warps gather the fast program's refills (hd_pos_refill -> hd_f8_gather, each lane its own
         key's (page, row) stepped without a division, as its lane 0 issues the TMA boxes on other pages): 8K
         page 1 189 -> 214.5, 17 206.5 -> 226.5, 50 210 -> 227.5, s_q=1 page 1 185.5 -> 210 TF. Group tiles
         now only on 64-row boxes with 7/8 of their rows keys; the gather takes the rest. Not kept in session 45:
         racecheck reported 48 write-write hazards between the producer's stores of chunks 4-7 and consumer
         1's copies.
     v67c (session 46) v67 with every producer thread through pbar before lane 0 of each warp closes chunks 4-7. Racecheck credits a thread's own mbarrier arrival, not __syncwarp then lane 0's arrival
         (bench/race_probe.cu modes 4 / 5: hazards / none), though the memory model orders both. Racecheck 0
         hazards; H100 same run, 3 rounds, v66d -> v67c: 8K page 1 190 -> 206, 7 204 -> 217, 24 206 -> 217 TF
         (v67 without the barrier: 214.5 / 225.5 / 226.5, session 45)
     v67d (session 47) instead of pbar, every producer thread arrives on chunks 4-7 itself (their count 128 in
         hd_decode_kernel_v7_f8_r only, hd_init_bars(rw)); every other kernel's SASS unchanged. H100: see results.md
   Run alone: build/tests/test_cuda_decode_hopper (MLA_BENCH_HOPPER=1 times it, =2 only times).

   ---- design -----------------------------------------------------------------------------------
   Work unit (one CTA, 384 threads = 3 warpgroups): 64 query rows of ONE request x a contiguous
   range of 64-key tiles (a split). The rows of request b are its q_len*H (token, head) pairs,
   row R = i*H + h (token i of the request, head h), cut into blocks of 64 (last block masked).
   grid.x = "row-block slots": request b owns slots [g_b, g_b + ceil(q_len*H/64)) with
   g_b = floor(q_offsets[b]*H/64) + b, which are disjoint and increasing, so a CTA finds b by a
   binary search over q_offsets (no plan kernel) and slots past a request's blocks exit at once;
   grid.x = floor(T*H/64) + B. grid.y = split: the block's visible keys [0, key_end) (key_end =
   seq_len, or under causal the last row's pos + 1) are cut into 64-key tiles and split y takes
   tiles [y*tps, (y+1)*tps), tps = ceil(tiles / nsplit). Large batches plan first (v13, the balanced
   schedule); where the plan keeps the uniform layout, persistent CTAs (v15, mode 2) run the row
   blocks as lane jobs j = x, x + gridDim.x, ... instead of one CTA per slot.

   Warpgroup 0 = producer (setmaxnreg 56). Thread 64 loads a full block's Q by TMA (q_map: 64
   consecutive rows when H % 64 == 0 or 64 % H == 0); otherwise warps 2-3 load Q by cp.async (zero
   rows past the block). Key tiles, two stages (tile n in stage n & 1):
   - page_size % 16 == 0 (TMA path): one thread issues 9 TMA box copies (64 columns x box rows
     of one page, box = 64, 32 or 16 dividing page_size, 128-byte swizzle) per sub-block of box
     rows, 64 / box sub-blocks per tile, each onto its chunk's "full" mbarrier, after the stage's
     "empty" mbarrier says both consumers are done with tile n-2. Rows past seq_len are copied
     too (whatever the page holds there, NaN included); a sub-block on an out-of-range page is
     zero-filled (TMA out of bounds) and masked. nvalid[stage] tells the consumers; each zeroes
     the rows past it in its own V half before its P.V (0 * NaN), the mask keeps them out of S.
   - BF16, page_size >= 16 and not a multiple of 16, under MLA_HD_GATHER=0 only since v63 (the
     gather below is faster at every such page but 63, 127, ...; kept as the A/B baseline):
     (p.gpage, hd_producer_gtma): the same with box
     16's four issuers, each page's run of rows in a tile as one or two overlapping boxes of a power
     of two rows (seven tensor maps, one per height), in kernels of their own (hd_decode_kernel_*_g; *_gs
     where a page's tiles take more than 4.4 boxes on average, v61: hd_gtile_boxes100);
     MLA_HD_GPAGE=0 sends these pages to cp.async. Under bf16p without a causal mask, pages 56..63
     and 120..127 (a page's last tile at least 56 keys, since v60) take page-aligned tiles instead (p.ptile, v30,
     on 64-row boxes since v57; MLA_HD_PTILE=0 for A/B); by default (v63) only those one key short of a
     multiple of 64 (63, 127, 191, ...) do.
   - FP8 (default precision), page_size not a multiple of 16, tiles of one 64-row box, 7/8 of their rows keys (v67):
     group tiles (p.f8g, v32): sub-block w of tile t is the 16-row group 4t + w of the pages' groups
     in key order, one box each (rows past the page zero-filled), in kernels of their own
     (hd_decode_kernel_v7_f8_g, _gc under a causal mask); MLA_HD_F8G=0 sends them to cp.async.
   - BF16 pages that are not multiples of 16 (v62, v63), but page-aligned tiles at pages 63, 127, ...:
     all four warps gather every tile row by row with cp.async (hd_producer_rows, kernels
     hd_decode_kernel_*_r), each chunk's barrier closed by cp.async.mbarrier.arrive. MLA_HD_GATHER=0
     keeps the TMA runs of rows and page-aligned tiles above and, under 16 keys, the path below; =2
     gathers every BF16 page.
   - FP8 (default precision) pages left (v66, v67): each tile's 16-row sub-blocks gathered into the raw
     layout the boxes give (hd_f8_gather: tiles 0, 1 and the exact program's by the four producer warps,
     the fast program's refills by consumer 1's; hd_decode_kernel_v7_f8_r); MLA_HD_GATHER=0 sends them to
     the path below.
   - otherwise: warp pairs 0-1 / 2-3 copy the even / odd tiles with cp.async, row by row through
     the block table (zero-fill for rows without a key), fence.proxy.async, each warp's lane 0
     arrives on the 9 chunk barriers.
   MLA_KV_FP8: all four warps load raw tiles into the stage and dequantize them there (see the
   FP8 section of the producer); the consumers are the same, except that in the FP8 kernel
   (hd_decode_kernel_v7_f8, default precision) consumer 1 takes the other's tile before its own and,
   on the TMA path, issues the copies of tiles 2.. (hd_f8_refill: warp w sub-block w).
   Warpgroups 1, 2 = consumers c = 0, 1 (setmaxnreg 224): consumer c owns O[:, 256c, 256c+256)
   (128 f32 registers per thread) and the tiles t with t % 2 == c (see hd_consumer):
     own tile:  S = Q K^T (36 x m64n64k16, Q and K K-major in smem), mask, running max (lazy),
                P = exp2(S - m) as P_hi + P_lo fragments; P_hi -> the stage's rope chunk (dead
                after S), P_lo -> the P tile, m -> xm[stage]; signal "pready"; then
                O_c = O_c * alpha + P V[:, half c] from registers (2 x 4 x m64n256k16, V read
                N-major from the same stage through the transpose bit)
     other's:   wait "pready", alpha from xm, O_c = O_c * alpha + P V[:, half c] with P from smem
   and pays the stage's "empty" as soon as its P.V of the tile is done. Each consumer keeps the
   row sums of its own tiles (rescaled by every alpha); the halves are added once at the end.
   Unsplit: out = O / l (times the sink factor) in bf16, lse; a full block with o_map (BF16 cache)
   through stage 0 and TMA stores (hd_out_smem). Split: f32 partials O / l and
   lse2 = m + log2 l per (split, t, h) in the workspace; combine kernel. Balanced schedule (v13,
   see hd_sched_next): a CTA runs a list of segments (row block x tile range), re-arming its
   mbarriers between them; cut row blocks leave partials per (part, lane) for the combine.

   ---- shared memory (dynamic, base rounded up to 1024 B; all offsets from that base) ---------
   A "chunk" is 64 rows x 64 bf16 columns = 64 x 128 B = 8192 B in the 128-byte swizzle layout
   that wgmma descriptors (swizzle mode 1) and TMA SWIZZLE_128B use: element (r, c) of chunk k
   sits at k*8192 + r*128 + (((c/8) ^ (r%8)) * 16) + (c%8)*2. A 576-wide row block is 9 chunks.
     Q      [0,      73728)   64 rows x 576, 9 chunks (row r = query row of the block)
     K[0]   [73728,  147456)  stage 0: 64 keys x 576, 9 chunks (row r = key key0 + r)
     K[1]   [147456, 221184)  stage 1
     P      [221184, 229376)  P_lo of the last published tile: 64 rows x 64 keys bf16, one chunk
                              (FP8 exact program: the scales, [64 keys][4] f32 per stage)
                              (P_hi goes to chunk 8 of the tile's stage, its rope columns)
     small  [229376, ...)     mbarriers, key-valid bits, exchanged row maxima, row addresses
   wgmma descriptors (64-bit): bits 0-13 addr>>4, 16-29 LBO>>4, 32-45 SBO>>4, 62-63 = 1 (128B).
     K-major operand (Q, K for S; P_hi, P_lo for P.V): SBO = 1024 (next 8 rows), LBO unused (16);
       k-step ks of 16 columns: start + (ks/4)*8192 + (ks%4)*32 (inside the 128 B row; the
       hardware applies the XOR on the address bits, so the atom must be 1024-aligned).
     N-major operand (V for P.V, transpose bit 1): LBO = 8192 (next 64 columns = next chunk),
       SBO = 1024 (next 8 keys); k-step ks of 16 keys: start + ks*2048; columns 256c: +4*c*8192.
   wgmma accumulator layout (m64nN, f32): thread t of the warpgroup, warp = t/32, lane = t%32,
   holds d[4i + e], i < N/8: row = 16*warp + lane/4 + 8*(e/2), col = 8*i + 2*(lane%4) + (e%2). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h> /* CUtensorMap (the driver entry point is fetched through the runtime) */

#include "common.cuh"
#include "cuda.h"
#include "decode_hopper.h"
#include "hopper.cuh"

/* ------------------------------------------------------------------------------------------ */
/* Tile constants (one block: change together)                                                 */

#define HD_ROWS 64              /* query rows per CTA (wgmma M) */
#define HD_SCHED_MAX_P 256      /* balanced schedule: most parts */
#define HD_KEYS 64              /* keys per tile */
#define HD_DK 576               /* key / q width */
#define HD_DV 512               /* value width */
#define HD_ROW_BYTES 1152       /* one bf16 cache row */
#define HD_C16 72               /* 16-byte pieces per row */
#define HD_CHUNK 8192           /* 64 rows x 128 B */
#define HD_TILE (9 * HD_CHUNK)  /* 73728: 64 rows x 576 bf16 */
#define HD_SQ 0
#define HD_SK0 HD_TILE
#define HD_SK1 (2 * HD_TILE)
#define HD_SP (3 * HD_TILE)
#define HD_BIG (HD_SP + HD_CHUNK) /* 229376 */
#define HD_THREADS 384
#define HD_PRODUCER_REGS 56     /* the FP8 conversion needs them (40: latency-bound, 2x slower) */
#define HD_CONSUMER_REGS 224
/* MLA_KV_FP8 (656-byte rows: 512 e4m3, 4 f32 scales, 64 bf16 rope) */
#define HD_F8_ROW 656
#define HD_F8_SCALES 512        /* byte offset of the 4 scales in a row */
#define HD_F8_ROPE 528          /* byte offset of the rope */
#define HD_RA_ROW 640           /* MLA_KV_FP8_ROPE_AWARE rows: 512 e4m3, 64 bf16 rope / sigma */
#define HD_RA_ROPE 512
#define HD_F8_RAW (4 * HD_CHUNK) /* raw latent of a tile inside its stage: slot j (latent columns 64j..64j+63
                                    of the 64 rows, 64 B per row) at stage + HD_F8_RAW + j * 4096 */
#define HD_F8_SLOT 4096
#define HD_F8_TX (8 * HD_F8_SLOT + HD_CHUNK + 1024) /* TMA bytes per tile: 8 latent slots, the rope chunk,
                                                       the scales (64 rows x 16 B at the stage's start) */
#define HD_NCH 9                 /* 64-column chunks of a 576-wide row */
#define HD_LAZY 8.0f             /* lazy running max: see hd_softmax */
#define HD_SMEM_LIMIT 232448    /* sharedMemPerBlockOptin on H100 / H200 (227 KB) */

/* What one CTA works on: a segment (row block x tile range; thread 0 finds it, hd_small.job). */
typedef struct hd_job {
    int b, q_start, q_len, nrows, row0, seq, t_begin, nt;
    int split; /* part -2: the uniform split's index; part >= 0: the cut block's pieces, in parts qa .. qa + n - 1,
                  and whether it is part qa's first request, as qa | n << 9 | first << 18 (hd_sched_next) */
    int part; /* -1: the whole row block (write out); -2: uniform split y = split (partial); >= 0:
                 balanced schedule, the partial's index */
    int slot; /* uniform layout: the row-block slot (a persistent CTA runs slot, slot + gridDim.x, ...) */
    int k;    /* the CTA's segment count before this one */
    int qk;   /* Q loads of the CTA before this segment: the phase of qfull */
    int qpre; /* 1: this segment's Q was loaded during the last one (hd_q_ahead); 2: Q and tiles 0, 1
                 issued before the roles split (hd_start_early) */
    int id;   /* per-CTA trace index (HD_CT): blockIdx.x + k * gridDim.x */
    int pg[2]; /* pages of tiles 0 and 1 looked up ahead (hd_next_job; TMA with 64-row boxes), else -2 */
} hd_job;

typedef struct hd_small {
    uint64_t full[2][HD_NCH];   /* mbarrier per stage and chunk: the chunk loaded (TMA: one arrival + tx bytes per
                                   issuer; FP8: one arrival per producer warp as its phases end; cp.async: one
                                   per warp of the pair), so that S = Q K^T starts on the
                                   first chunks while the others land (or are dequantized) */
    uint64_t empty[2][3];       /* mbarrier per stage and part (hd_part): the part's last reader is done with
                                   it (128 arrivals: the consumer that frees it; see hd_pay, hd_pay_pv) */
    uint64_t qfull;             /* mbarrier: Q loaded (64 arrivals of pair 1, or 64 from thread 0 when
                                   loaded ahead); never re-armed: phase J.qk */
    uint32_t kv_valid[4][2];    /* per tile n (slot n & 3), bit r of word k: key key0 + 32k + r is readable
                                   (per tile, not per stage: a stage's parts refill at different times) */
    int32_t nvalid[4];          /* per tile n (slot n & 3): rows [nvalid, 64) hold no key; with TMA they may
                                   hold anything (NaN) and each consumer zeroes them in its V half */
    uint64_t pready[2];         /* mbarrier per stage: the owner published P and m of the tile (128) */
    uint64_t mready[2];         /* hd_consumer_p1: per consumer c, m after its tile of the pair in xm[c] (128) */
    float xm[2][HD_ROWS];       /* per stage: running row max after the tile (log2 units); at the
                                   end: per consumer, the row sums */
    const uint8_t *rows[2][HD_ROWS]; /* per producer pair: global address of each row or NULL */
    uint64_t landed[2];         /* FP8 + TMA: mbarrier per stage, raw tile landed (1 arrival + tx bytes) */
    int32_t mode[2];            /* FP8: per stage, 1 = the tile holds raw e4m3 values (scales not applied:
                                   some scale of its pair is not a power of two) -> exact program */
    uint64_t pbar;              /* FP8: mbarrier over the 128 producer threads (phase barrier) */
    hd_job job;                 /* the segment now running (warp 0, warp 1 or thread 0 finds it) */
    hd_job job_next;            /* the next one (producer warp 0 finds it during this one: hd_next_job) */
    int32_t more_next;          /* 1: job_next holds a segment */
    int64_t sc_w, sc_next, sc_cum; /* balanced schedule: W, the next request to look at, its cum */
    int32_t sc_p, sc_first, sc_mode, sc_have, sc_more, sc_uni, sc_lane; /* parts used, the part's first request,
                                   mode (1 balanced, 0 the uniform layout, 2 lanes: see hd_lane_job), plan read
                                   from CTA 0's, 1 while a segment is to run, the uniform layout has a job here
                                   (in job), mode 2 has one (hd_plan_cta) */
} hd_small;
/* FP8 group tiles (p.f8g; no byte of shared memory is left): per tile n (slot n & 3), sub-block w's first
   key (the causal mask's key positions: hd_softmax, gp 2), in rows[0], which only the FP8 producer's
   cp.async path uses */
#define HD_KGRP(sm) ((int32_t(*)[4])(void *)(sm)->rows[0])

#define HD_SMEM_BYTES (1024 + HD_BIG + (int)sizeof(hd_small)) /* 1024: alignment slack */

static_assert(HD_DK == MLA_KEY_DIM && HD_DV == MLA_LATENT_DIM, "MLA dims");
static_assert(HD_DK == 9 * 64 && HD_C16 * 16 == HD_ROW_BYTES && HD_ROW_BYTES == 2 * HD_DK, "row = 9 chunks of 64 columns");
static_assert(HD_TILE == HD_ROWS * HD_DK * 2 && HD_TILE == HD_KEYS * HD_DK * 2, "tile bytes");
static_assert(HD_SK0 % 1024 == 0 && HD_SK1 % 1024 == 0 && HD_SP % 1024 == 0, "1024-byte swizzle atoms");
static_assert(HD_SMEM_BYTES <= HD_SMEM_LIMIT, "shared memory budget (227 KB per block)");
static_assert(sizeof(hd_small) % 8 == 0 && HD_BIG % 8 == 0, "mbarrier alignment");
static_assert(HD_ROWS * HD_C16 == 64 * 72, "a producer pair (64 threads) issues 72 copies each per tile");
static_assert(HD_PRODUCER_REGS + 2 * HD_CONSUMER_REGS <= 3 * ((65536 / HD_THREADS) & ~7) && HD_PRODUCER_REGS % 8 == 0 &&
                  HD_CONSUMER_REGS % 8 == 0,
              "setmaxnreg budget: the CTA's registers at entry (384 x 168); more and setmaxnreg.inc waits forever");



/* ------------------------------------------------------------------------------------------ */
/* Timeline trace (build with -DHD_TRACE; mla_cuda_decode_hopper_trace_dump writes it out):     */
/* thread 0 of each role of CTA HD_TRACE_CTA (linear index x + y gridDim.x) records (event, tile,  */
/* clock64).                                                                                    */

#ifdef HD_TRACE
#ifndef HD_TRACE_CTA /* decode_trace.sh: TRACE_CTA=n */
#define HD_TRACE_CTA 100
#endif
#define HD_TRACE_TILES 512
#define HD_TRACE_EV 32
/* [role][tile][event] = clock64 (0: not recorded); a plain store, no counter (a global counter's
   dependent load stalled the traced warp ~500 cycles per event) */
__device__ unsigned long long hd_trace_buf[3][HD_TRACE_TILES][HD_TRACE_EV];
/* the store predicated (hd_trace_st) */
#define HD_T(role, ev, n)                                                                         \
    hd_trace_st(&hd_trace_buf[role][(unsigned)(n) & (HD_TRACE_TILES - 1)][ev],                    \
                blockIdx.x + blockIdx.y * gridDim.x == HD_TRACE_CTA && (threadIdx.x & 127) == 0 &&  \
                    (unsigned)(n) < HD_TRACE_TILES,                                               \
                clock64())
/* per-CTA timeline (all CTAs, first 4096 of the grid): [cta][slot] = clock64 of one thread;
   slots (HD_CT: thread 0 of a role; HD_CT1: the calling thread): 0 entry, 1 smid, 2 consumer 0 has
   Q, 3 consumer 0 issues its first S, 4 consumer 0 enters hd_finish, 5 consumer 0 leaves it,
   6 globaltimer at entry, 7 the job (b << 16 | nt), 8 the job is known (after the first
   __syncthreads), 9 the Q copy starts (row addresses known), 10 Q landed (producer thread 64),
   11 the TMA issuer starts tile 0, 13 its page known (hd_tma_prep), 12 globaltimer at hd_finish's end,
   14 consumer 0 past the row-sum exchange, 15 consumer 1 enters hd_finish, 16 consumer 0 has staged
   out (before its proxy fence), 17 / 21 / 22 / 23 the uniform layout's prologue (HD_CT_PRO: before the job
   lookup, past its request search, the job found, the barriers initialized; the plan's steps under the
   balanced schedule, HD_CT_PLAN), 18 thread 0 has issued the out stores, 19 thread 0 has re-armed the barriers, 20 thread 0 issued the next Q
   (hd_q_ahead); a persistent CTA's segments are separate entries (index J.id), each with its own
   entry (slot 0: the segment's start) */
#define HD_CTAS 4096
#define HD_CT_SLOTS 24
__device__ unsigned long long hd_cta_buf[HD_CTAS][HD_CT_SLOTS];
#define HD_CT(slot, val) HD_CT_IF(slot, val, (threadIdx.x & 127) == 0)
#define HD_CT1(slot, val) HD_CT_IF(slot, val, 1)
#define HD_CT_IF(slot, val, cond) HD_CT_ID((J).id, slot, val, cond)
/* the uniform layout's prologue (no plan: its slots are free): 17 before hd_find_job, 21 past the
   request search, 22 the job found, 23 the barriers initialized */
#define HD_CT_PRO(slot) HD_CT_ID(blockIdx.x + blockIdx.y * gridDim.x, slot, clock64(), threadIdx.x == 0)
/* the plan's steps (hd_plan_cta, before any job): slots 17 (thread 128 has loaded its request's cost),
   21 (thread 0 past the first barrier), 22 (the mode known; in mode 1 after the scan), 23 (the plan
   published or read) */
#define HD_CT_PLAN(slot) HD_CT_ID(blockIdx.x + blockIdx.y * gridDim.x, slot, clock64(), threadIdx.x == ((slot) == 17 ? 128 : 0))
#define HD_CT_ID(idv, slot, val, cond)                                                            \
    do {                                                                                          \
        const unsigned hd_i_ = (unsigned)(idv);                                                   \
        hd_trace_st(&hd_cta_buf[hd_i_ & (HD_CTAS - 1)][slot], hd_i_ < HD_CTAS && (cond), (val));   \
    } while (0)
MLA_DEV unsigned long long hd_gtime() {
    unsigned long long g;
    asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(g));
    return g;
}
MLA_DEV uint32_t hd_smid() {
    uint32_t s;
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(s));
    return s;
}
/* the combine grid's timeline (globaltimer, thread 0 of CTA x < HD_CMBS): [x] = entry, past
   griddepcontrol.wait, exit, smid */
#define HD_CMBS 4096
__device__ unsigned long long hd_cmb_buf[HD_CMBS][4];
#define HD_CMB(k, v)                                                                              \
    do {                                                                                          \
        if (threadIdx.x == 0 && blockIdx.x < HD_CMBS) hd_cmb_buf[blockIdx.x][k] = (v);            \
    } while (0)
#define HD_CMB_ENTRY()                                                                            \
    do {                                                                                          \
        HD_CMB(0, hd_gtime());                                                                    \
        HD_CMB(3, hd_smid());                                                                     \
    } while (0)
#else
#define HD_T(role, ev, n) do { } while (0)
#define HD_CT(slot, val) do { } while (0)
#define HD_CT1(slot, val) do { } while (0)
#define HD_CT_PLAN(slot) do { } while (0)
#define HD_CT_PRO(slot) do { } while (0)
#define HD_CMB(k, v) do { } while (0)
#define HD_CMB_ENTRY() do { } while (0)
#endif


/* ------------------------------------------------------------------------------------------ */
/* PTX wrappers                                                                                */

/* the "full" mbarrier of chunk c of stage st (full0: that of chunk 0 of stage 0) */
MLA_DEV uint32_t hd_fullc(uint32_t full0, int st, int c) { return full0 + 8u * (uint32_t)(HD_NCH * st + c); }
/* arrive on the "full" barriers of chunks [c0, c1) of stage st */
MLA_DEV void hd_arrive_chunks(uint32_t full0, int st, int c0, int c1) {
    for (int c = c0; c < c1; c++) hd_mbar_arrive(hd_fullc(full0, st, c));
}
/* wait for chunks [c0, c1) of stage st (phase parity par) */
MLA_DEV void hd_wait_chunks(uint32_t full0, int st, int c0, int c1, uint32_t par) {
    for (int c = c0; c < c1; c++) hd_mbar_wait(hd_fullc(full0, st, c), par);
}
/* A stage refills in three parts, each as soon as its last reader is done with it (its "empty"
 * barrier): part 0 = chunks 0-3 (V columns 0-255, consumer 0's P.V), part 1 = chunks 4-7 (consumer
 * 1's P.V), part 2 = chunk 8 (the rope: read by S only; in the default precision it then holds P_hi
 * of the tile for the other consumer's P.V). */
#define HD_PARTS 3
MLA_DEV int hd_part_lo(int q) { return 4 * q; }                   /* first chunk of part q */
MLA_DEV int hd_part_hi(int q) { return q < 2 ? 4 * q + 4 : HD_NCH; } /* one past its last chunk */
MLA_DEV uint32_t hd_emptyp(uint32_t empty0, int st, int q) { return empty0 + 8u * (uint32_t)(HD_PARTS * st + q); }
/* the whole stage st free (every part's phase with parity par completed) */
MLA_DEV void hd_wait_free(uint32_t empty0, int st, uint32_t par) {
    for (int q = 0; q < HD_PARTS; q++) hd_mbar_wait(hd_emptyp(empty0, st, q), par);
}
/* A producer warp has written (FP8) or copied (cp.async) its part of chunks [c0, c1) of stage st:
 * each thread makes its generic writes visible to the async proxy, the warp syncs (memory ordering
 * among its lanes) and lane 0 arrives for the warp (one arrival per producer warp on each
 * barrier; racecheck credits __syncwarp, not a named barrier before a single arrival) */
MLA_DEV void hd_chunks_done(uint32_t full0, int st, int c0, int c1, int tid) {
    hd_fence_proxy_async();
    __syncwarp();
    if ((tid & 31) == 0) hd_arrive_chunks(full0, st, c0, c1);
}


/* D[64x64] = A[64x16] B[16x64] (first k-step: D is not read) / D += A B; A, B K-major in smem */
MLA_DEV void hd_wgmma_n64_first(float d[32], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : HD_ACC8("=f", 0), HD_ACC8("=f", 8), HD_ACC8("=f", 16), HD_ACC8("=f", 24)
        : "l"(da), "l"(db), "r"(0));
}
MLA_DEV void hd_wgmma_n64(float d[32], uint64_t da, uint64_t db) {
    asm volatile(
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
        "}, %32, %33, 1, 1, 1, 0, 0;\n"
        : HD_ACC8("+f", 0), HD_ACC8("+f", 8), HD_ACC8("+f", 16), HD_ACC8("+f", 24)
        : "l"(da), "l"(db));
}

/* D[64x256] += A[64x16] B[16x256]; A from registers (the m64k16 fragment: a[0] row r cols c,c+1;
 * a[1] row r+8; a[2] row r cols c+8,c+9; a[3] row r+8 cols c+8,c+9 with r = 16*warp + lane/4,
 * c = 2*(lane%4)), B N-major (transpose bit) in smem */
MLA_DEV void hd_wgmma_n256t_r(float d[128], const uint32_t a[4], uint64_t db) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
        : HD_ACC8("+f", 0), HD_ACC8("+f", 8), HD_ACC8("+f", 16), HD_ACC8("+f", 24),
          HD_ACC8("+f", 32), HD_ACC8("+f", 40), HD_ACC8("+f", 48), HD_ACC8("+f", 56),
          HD_ACC8("+f", 64), HD_ACC8("+f", 72), HD_ACC8("+f", 80), HD_ACC8("+f", 88),
          HD_ACC8("+f", 96), HD_ACC8("+f", 104), HD_ACC8("+f", 112), HD_ACC8("+f", 120)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

/* D[64x8] += A[64x16] B[16x8]; A from registers (fragment as in hd_wgmma_n256t_r), B K-major in smem
 * (no swizzle): hd_consumer_p1's row sums of its own P, B a block of 0.25 (hd_issue_pv_regs) */
MLA_DEV void hd_wgmma_n8_r(float d[4], const uint32_t a[4], uint64_t db, int acc) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %9, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
}

/* D[64x128] += A[64x16] B[16x128]; A from registers (fragment as in hd_wgmma_n256t_r), B N-major
 * (transpose bit) in smem: the exact program's P.V of one 128-column scale tile */
MLA_DEV void hd_wgmma_n128t_r(float d[64], const uint32_t a[4], uint64_t db) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : HD_ACC8("+f", 0), HD_ACC8("+f", 8), HD_ACC8("+f", 16), HD_ACC8("+f", 24),
          HD_ACC8("+f", 32), HD_ACC8("+f", 40), HD_ACC8("+f", 48), HD_ACC8("+f", 56)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

/* D[64x64] = (first) / += A[64x16] B[16x64]; A from registers, B N-major (transpose bit) in smem */
HD_WGMMA_M64N64_RS(hd_wgmma_n64t_r, bf16, 1)
/* D[64x256] += A[64x16] B[16x256]; A K-major, B N-major (transpose bit), both in smem */
MLA_DEV void hd_wgmma_n256t(float d[128], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : HD_ACC8("+f", 0), HD_ACC8("+f", 8), HD_ACC8("+f", 16), HD_ACC8("+f", 24),
          HD_ACC8("+f", 32), HD_ACC8("+f", 40), HD_ACC8("+f", 48), HD_ACC8("+f", 56),
          HD_ACC8("+f", 64), HD_ACC8("+f", 72), HD_ACC8("+f", 80), HD_ACC8("+f", 88),
          HD_ACC8("+f", 96), HD_ACC8("+f", 104), HD_ACC8("+f", 112), HD_ACC8("+f", 120)
        : "l"(da), "l"(db), "r"(1));
}

/* ------------------------------------------------------------------------------------------ */
/* The CTA's job                                                                               */

MLA_DEV int hd_clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
MLA_DEV int64_t hd_slot_of(const hd_params &p, int b) {
    /* p.fuse (H % 64 == 0): a request's rows are whole blocks, so its slots need no spare one */
    return (int64_t)hd_clamp(p.q_off[b], 0, p.T) * p.H / HD_ROWS + (p.fuse ? 0 : b);
}

/* Page-aligned tiles (p.ptile = c >= 1, general-page kernels only): tile t holds the keys of page
 * t / c from page row 64 (t % c) on, at most 64 of them; its rows past the page are zeros (the TMA
 * box runs out of the tensor's page dimension). Pages just under a multiple of 64 (56..63, 120..127)
 * then run the page-64 producer's copies with a few idle rows instead of the runs of rows of the
 * general page (hd_producer_gtma). No causal mask (its key positions assume 64 keys a tile). */
MLA_DEV int hd_pt_tiles(const hd_params &p, int keys) {
    const int f = keys / p.page_size;
    return f * p.ptile + (keys - f * p.page_size + HD_KEYS - 1) / HD_KEYS;
}
/* page-aligned tile t: the index of its page in the request's block table (*pi), its first row there (*row);
 * returns its first key */
MLA_DEV int hd_pt_start(const hd_params &p, int t, int *pi, int *row) {
    *pi = t / p.ptile;
    *row = (t - *pi * p.ptile) * HD_KEYS;
    return *pi * p.page_size + *row;
}

/* Group tiles (p.f8g = g = ceil(page_size / 16) >= 1, the FP8 kernel's general page only, v32): a
 * page's rows are cut into g groups of 16 (the last one short), the groups of all pages numbered in
 * key order, and tile t holds groups 4t .. 4t+3, sub-block w of the tile = group 4t + w: one 16-row
 * TMA box each, its rows past the page zeros (the box runs out of the tensor's page dimension). The
 * tiles hold 16 g rows a page for page_size keys (page 61: 61 / 64, page 100: 100 / 112). Under a
 * causal mask the softmax takes each sub-block's first key from the producer (HD_KGRP, gp 3: its own
 * kernel). hd_g_start: the first key of group gi (the producer steps from tile to tile instead:
 * hd_f8_grow). */
MLA_DEV int hd_g_start(const hd_params &p, int gi) {
    const int pi = gi / p.f8g;
    return pi * p.page_size + 16 * (gi - pi * p.f8g);
}
MLA_DEV int hd_g_tiles(const hd_params &p, int keys) {
    const int f = keys / p.page_size;
    return (f * p.f8g + (keys - f * p.page_size + 15) / 16 + 3) / 4;
}

/* Row block r of request b: 0 when the request has no such block; else J->b .. J->seq filled and
 * the visible key tiles returned in *ntiles (key_end = seq_len, or under causal the block's last
 * row's pos + 1: nondecreasing in r; gp: page-aligned
 * tiles where p.ptile; gp == 2: the FP8 kernel's group tiles, hd_g_tiles). */
MLA_DEV int hd_block_job(const hd_params &p, int b, int r, hd_job *J, int *ntiles, const int gp = 0) {
    J->b = b;
    J->q_start = hd_clamp(p.q_off[b], 0, p.T);
    J->q_len = hd_clamp(p.q_off[b + 1], J->q_start, p.T) - J->q_start;
    J->nrows = J->q_len * p.H;
    J->row0 = r * HD_ROWS;
    if (r < 0 || J->row0 >= J->nrows) return 0;
    J->seq = p.seq[b] > 0 ? p.seq[b] : 0;
    const int rows_here = min(HD_ROWS, J->nrows - J->row0);
    const int i_last = (J->row0 + rows_here - 1) / p.H;
    int key_end = J->seq;
    if (p.causal) key_end = min(key_end, J->seq - J->q_len + i_last + 1);
    if (key_end < 0) key_end = 0;
    *ntiles = gp == 2 ? hd_g_tiles(p, key_end)
                      : (gp && p.ptile ? hd_pt_tiles(p, key_end) : (key_end + HD_KEYS - 1) / HD_KEYS);
    return 1;
}

/* The row block at a row-block slot (grid.x of the unsplit layout): request b owns slots
 * [slot_of(b), slot_of(b) + its blocks); 0 when the slot has no rows. Found by a whole warp (every
 * lane returns the same): each round the lanes probe 32 points
 * of the interval at once, so B = 128 takes two dependent loads instead of seven (a load from L2
 * costs ~800 cycles while the other SMs stream tiles: the sequential search was ~7K cycles of
 * every CTA's prologue, measured). */
MLA_DEV int hd_slot_job(const hd_params &p, int64_t slot, hd_job *J, int *ntiles, const int gp = 0) {
    if (p.B < 1) return 0;
    const int lane = threadIdx.x & 31;
    int lo = 0, hi = p.B - 1; /* the answer lies in [lo, hi] (lo = 0 may still fail: checked below) */
    while (lo < hi) {
        const int step = (hi - lo + 32) / 32; /* ceil((hi - lo + 1) / 32) */
        const int b = lo + lane * step;
        const int ok = b <= hi && (lane == 0 || hd_slot_of(p, b) <= slot);
        const uint32_t m = __ballot_sync(0xffffffffu, ok);
        const int last = 31 - __clz(m); /* lane 0 always votes */
        lo = lo + last * step;
        hi = min(hi, lo + step - 1);
    }
    if (!p.sched) HD_CT_PRO(21);
    const int64_t g = hd_slot_of(p, lo);
    if (slot < g) return 0;
    return hd_block_job(p, lo, (int)(slot - g), J, ntiles, gp);
}

/* Uniform split (p.sched == 0): CTA (x, y) = slot x, split y of nsplit equal tile ranges (a
 * persistent CTA of the balanced schedule's mode 0 runs slots x, x + gridDim.x, ..., split 0).
 * 0 when the slot has no rows (past its request's blocks). A whole warp calls it. */
MLA_DEV int hd_find_job(const hd_params &p, int slot, int split, hd_job *J, const int gp = 0) {
    int ntiles;
    if (!hd_slot_job(p, slot, J, &ntiles, gp)) return 0;
    const int tps = (ntiles + p.nsplit - 1) / p.nsplit;
    J->slot = slot;
    J->split = split;
    J->part = p.nsplit > 1 ? -2 : -1;
    J->t_begin = J->split * tps;
    J->nt = max(0, min(ntiles, J->t_begin + tps) - J->t_begin);
    if (p.dbg) J->nt = min(J->nt, 1);
    return 1;
}

/* Mode 2 of the balanced schedule ("lanes": persistent CTAs where the plan keeps the uniform
 * layout and every request has at most L row blocks): job j = row block j % L of request j / L,
 * CTA x runs j = x, x + gridDim.x, ... So the jobs are dense where q_len is uniform (the slot
 * layout has an empty slot per request: striding over slots gave some CTAs 3 jobs of s_q=1 and
 * others none, 530 -> 391 TF), the lanes of a request run at the same time (their tiles shared
 * in L2), and no search is needed. 0 when j holds no row block. One thread calls it. */
MLA_DEV int hd_lane_job(const hd_params &p, int64_t j, hd_job *J, const int gp = 0) {
    const int64_t b = j / p.L;
    const int l = (int)(j - b * p.L);
    int ntiles;
    if (b >= p.B || !hd_block_job(p, (int)b, l, J, &ntiles, gp)) return 0;
    J->slot = (int)j;
    J->split = 0;
    J->part = -1;
    J->t_begin = 0;
    J->nt = ntiles;
    return 1;
}

/* A persistent CTA's walk: the first job with rows at slot (mode 0) or lane job (mode 2) s, s +
 * gridDim.x, ...; 0 when none is left. hd_first_slot: a whole warp; hd_first_lane: one thread. */
MLA_DEV int hd_first_slot(const hd_params &p, int64_t s, hd_job *J, const int gp = 0) {
    const int64_t nslots = (int64_t)p.T * p.H / HD_ROWS + p.B;
    for (; s < nslots; s += gridDim.x)
        if (hd_find_job(p, (int)s, 0, J, gp)) return 1;
    return 0;
}
MLA_DEV int hd_first_lane(const hd_params &p, int64_t j, hd_job *J, const int gp = 0) {
    for (; j < (int64_t)p.B * p.L; j += gridDim.x)
        if (hd_lane_job(p, j, J, gp)) return 1;
    return 0;
}

/* Balanced schedule (p.sched == 1; FlashMLA's idea, our code). The requests lie on one line,
 * cost(b) = c0 + the tiles of its last row block (c0: a segment's fixed cost in tile units: Q
 * load, pipeline fill, output), cum[b] the prefix sums, W = cum[B]. Part q of the plan's P' takes
 * the interval [s_q, s_{q+1}), s_q = q * W / P', and runs as L CTAs ("lanes", linear CTA index x =
 * q * L + l): lane l does row block l of every request on the interval (L = the row blocks of a
 * request: the lanes of a part read the same keys at about the same time, from L2), the tiles of
 * that block whose position cum[b] + c0 + j falls inside, one segment per request. A block wholly
 * inside one part writes the output; else each part writes an f32 partial, index (2q + 0 if b is
 * the part's first request, else 2q + 1) * L + l (only a part's first and last request can be
 * cut), and hd_combine_kernel_v3 merges them. A block without tiles belongs to the part whose
 * interval holds cum[b].
 * The plan is made in the CTAs (hd_plan_cta): one pass over the requests and a scan in shared
 * memory; CTA 0 publishes it (cum[], plan[], then the launch's epoch), and a CTA that starts later
 * and finds it reads it instead. When every request costs the same, or some request has more than
 * L row blocks (ragged q_len), or the batch is small enough for the uniform layout to split, the
 * plan says mode 0 and the grid runs the uniform layout (CTA (slot, split), hd_find_job). */
MLA_DEV int64_t hd_sched_s(int64_t q, int64_t W, int P) { return q * W / P; }

/* cum[i], from shared memory or (glob) from CTA 0's copy in global memory, through L2 */
MLA_DEV int64_t hd_cum(const int64_t *cum, int glob, int i) { return glob ? __ldcg(cum + i) : cum[i]; }

/* largest b with cum[b] <= x (x < W): the request whose interval holds x */
MLA_DEV int hd_sched_req(const int64_t *cum, int glob, int B, int64_t x) {
    int lo = 0, hi = B - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (hd_cum(cum, glob, mid) <= x) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* the part whose interval [s_q, s_{q+1}) holds x (0 <= x < W) */
MLA_DEV int hd_sched_part(int64_t x, int64_t W, int P) {
    int q = (int)(x * P / W);
    while (q + 1 < P && hd_sched_s(q + 1, W, P) <= x) q++;
    while (q > 0 && hd_sched_s(q, W, P) > x) q--;
    return q;
}

/* request b's cost on the line (0 without rows); *nblk its row blocks */
MLA_DEV int64_t hd_req_cost(const hd_params &p, int b, int *nblk, const int gp = 0) {
    const int q0 = hd_clamp(p.q_off[b], 0, p.T), q1 = hd_clamp(p.q_off[b + 1], q0, p.T);
    *nblk = (int)(((int64_t)(q1 - q0) * p.H + HD_ROWS - 1) / HD_ROWS);
    hd_job J;
    int ntiles;
    if (*nblk < 1 || !hd_block_job(p, b, *nblk - 1, &J, &ntiles, gp)) return 0;
    return (int64_t)p.c0 + ntiles;
}

/* The next segment of CTA x (thread 0, balanced mode): 1 with J filled, 0 when none is left.
 * sc_next: the next request to look at, sc_cum its cum (walked forward, costs recomputed: the
 * plan's scratch is gone once the tiles load). */
MLA_DEV int hd_sched_next(const hd_params &p, hd_small *sm, int x, hd_job *J, const int gp = 0, const int cuts = 1) {
    int ntiles;
    const int P = sm->sc_p;
    const int q = x / p.L, l = x - q * p.L;
    const int64_t W = sm->sc_w, s0 = hd_sched_s(q, W, P), s1 = hd_sched_s(q + 1, W, P);
    while (sm->sc_next < p.B) {
        const int b = (int)sm->sc_next;
        const int64_t c = sm->sc_cum;
        if (c >= s1) return 0;
        int nblk;
        const int64_t cost = hd_req_cost(p, b, &nblk, gp);
        sm->sc_next = b + 1;
        sm->sc_cum = c + cost;
        if (cost == 0 || !hd_block_job(p, b, l, J, &ntiles, gp)) continue;
        const int64_t x0 = c + p.c0;
        const int lo = (int)min((int64_t)ntiles, max((int64_t)0, s0 - x0));
        const int hi = (int)min((int64_t)ntiles, max((int64_t)0, s1 - x0));
        if (lo == hi && !(ntiles == 0 && c >= s0)) continue;
        J->t_begin = lo;
        J->nt = hi - lo;
        J->split = 0;
        J->part = (lo == 0 && hi == ntiles) ? -1 : (2 * q + (b == sm->sc_first ? 0 : 1)) * p.L + l;
        if (cuts && J->part >= 0) { /* the block's pieces: parts qa .. qr (as hd_combine_rows_sched finds them;
                                       cuts = 0: the _ep kernels, which leave them to the combine grid) */
            const int qa = hd_sched_part(x0, W, P), qr = hd_sched_part(x0 + ntiles - 1, W, P);
            J->split = qa | (qr - qa + 1) << 9 | (c <= hd_sched_s(qa, W, P) ? 1 : 0) << 18;
        }
        return 1;
    }
    return 0;
}

/* Q by TMA: a full row block is 64 consecutive (token, head) rows (q_map) */
MLA_DEV int hd_q_by_tma(const hd_params &p, const hd_job &J) { return p.q_tma && J.row0 + HD_ROWS <= J.nrows; }

/* One thread, ahead of J's segment (TMA with 64-row boxes, BF16 caches): the pages of its first two
 * tiles into J->pg (hd_tma_prep takes them from the job: a block-table load cost ~1K cycles of a
 * segment's start) and those tiles into L2. pt (page-aligned tiles): the prefetch only counts there,
 * hd_tma_prep looks their pages up (taking them from the job put 31 LDL/STL into the bf16p_g
 * producer's loop) */
MLA_DEV void hd_job_ahead(const hd_params &p, hd_job *J, const int pt = 0) {
    for (int m = 0; m < 2; m++) {
        J->pg[m] = -2;
        const int t = J->t_begin + m;
        int pi = 0, row = 0; /* pt: page-aligned tiles */
        const int key = pt ? hd_pt_start(p, t, &pi, &row) : t * HD_KEYS;
        if (!p.tma || p.fp8 || p.box != HD_KEYS || m >= J->nt) continue;
        int32_t page = -1;
        if (key < J->seq) page = p.bt[(int64_t)J->b * p.bt_stride + (pt ? pi : key / p.page_size)];
        J->pg[m] = page;
        if (page >= 0 && page < p.num_pages)
            for (int c = 0; c < HD_NCH; c++)
                asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n" ::"l"((uint64_t)&p.kv_map),
                             "r"(64 * c), "r"(pt ? row : key % p.page_size), "r"(page)
                             : "memory");
    }
}

/* The plan and the CTA's first job (all threads, before the roles split): CTA 0's published plan
 * if it is there; else the requests' costs and the mode, and in mode 1 their prefix sums in scratch
 * (the shared memory of the K stages, free until the first tile), W and P'; CTA 0 publishes. Returns 1 with
 * sm->job set when the CTA has a job. */
MLA_DEV int hd_plan_cta(const hd_params &p, hd_small *sm, uint8_t *gbase, const int gp = 0, const int cuts = 1) {
    int64_t *cum = (int64_t *)(gbase + HD_SK0);   /* [B + 1] */
    int64_t *wsum = (int64_t *)(gbase + HD_SK1);  /* [32] the scan's warp sums */
    /* min, max cost; over; requests (32 bits: costs are c0 + tiles < 2^26, and shared-memory atomics of
       64 bits are compare-and-swap loops: 128 contending threads took ~15K cycles of the first wave) */
    unsigned *mm = (unsigned *)(gbase + HD_SK1 + 256);
    hd_job *job_lane = (hd_job *)(gbase + HD_SK1 + 512); /* mode 2's first job (thread 64, ahead of the mode) */
    const int tid = threadIdx.x;
    const int x = blockIdx.x + blockIdx.y * gridDim.x;
    if (tid >= 32 && tid < 64) { /* warp 1: the uniform layout's job (mode 0), while thread 0 reads the epoch;
                                    a persistent CTA takes its first slot with rows (x, x + gridDim.x, ...) */
        hd_job Ju;
        const int hu = p.persist ? hd_first_slot(p, blockIdx.x, &Ju, gp) : hd_find_job(p, blockIdx.x, blockIdx.y, &Ju, gp);
        if (tid == 32) {
            sm->sc_uni = hu;
            if (hu) sm->job = Ju;
        }
    }
    if (tid == 64 && p.persist) { /* thread 64: mode 2's (the first lane job with rows: x, x + gridDim.x, ...) */
        hd_job Jl;
        sm->sc_lane = hd_first_lane(p, x, &Jl, gp);
        if (sm->sc_lane) {
            *job_lane = Jl;
            /* its block-table line and Q into L2 while the plan is made (unused unless mode 2): in the
               first wave every CTA's Q comes at once, and the page lookup behind it took ~8K cycles */
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p.bt + (int64_t)Jl.b * p.bt_stride));
            if (Jl.nt > 0 && hd_q_by_tma(p, Jl)) {
                const int i0 = Jl.row0 / p.H, h0 = Jl.row0 - i0 * p.H;
                for (int c = 0; c < HD_NCH; c++)
                    asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];\n" ::"l"((uint64_t)&p.q_map),
                                 "r"(64 * c), "r"(h0), "r"(Jl.q_start + i0)
                                 : "memory");
            }
        }
    }
    if (tid == 0) {
        int64_t e;
        asm volatile("ld.acquire.gpu.global.b64 %0, [%1];\n" : "=l"(e) : "l"(p.plan + 3) : "memory");
        sm->sc_have = e == p.epoch;
        if (sm->sc_have) {
            sm->sc_w = __ldcg(p.plan);
            sm->sc_p = (int32_t)__ldcg(p.plan + 1);
            sm->sc_mode = (int32_t)__ldcg(p.plan + 2);
        }
        mm[0] = ~0u;
        mm[1] = 0;
        mm[2] = 0;
        mm[3] = 0;
    }
    /* the requests' costs at once, alongside the loads above (the plan may be CTA 0's: then unused),
       by the consumer threads first (b = (tid + 256) % 384 + ...: warps 0-2 are busy above) */
    unsigned mn = ~0u, mx = 0;
    int over = 0, nreq = 0;
    for (int b = (tid + 256) % HD_THREADS; b < p.B; b += HD_THREADS) {
        int nblk;
        const int64_t c = hd_req_cost(p, b, &nblk, gp);
        cum[b] = c;
        if (nblk > p.L) over = 1;
        if (c > 0) {
            nreq++;
            mn = min(mn, (unsigned)c);
            mx = max(mx, (unsigned)c);
        }
    }
    HD_CT_PLAN(17);
    __syncthreads();
    HD_CT_PLAN(21);
    if (!sm->sc_have) {
        /* a warp's reduction, then one native 32-bit atomic a warp */
        mn = __reduce_min_sync(0xffffffffu, mn);
        mx = __reduce_max_sync(0xffffffffu, mx);
        over = __any_sync(0xffffffffu, over);
        nreq = (int)__reduce_add_sync(0xffffffffu, (unsigned)nreq);
        if ((tid & 31) == 0) {
            if (mn != ~0u) atomicMin(&mm[0], mn);
            if (mx) atomicMax(&mm[1], mx);
            if (over) mm[2] = 1;
            if (nreq) atomicAdd(&mm[3], (unsigned)nreq);
        }
        __syncthreads();
        /* mode 1 where the requests cost differently, each fits the lanes and the uniform layout is
           unsplit (small batches keep their uniform split: b=4 varlen 32K measured 259 TF uniform
           against 189 balanced, cause not found); P' parts of at least min_units each. Only mode 1
           reads the prefix sums (here, in later CTAs and in the combine): the others skip the scan */
        const int bal = !mm[2] && (mm[0] != mm[1] || p.force_bal) && mm[3] > 0 && p.nsplit == 1;
        const int mode = bal ? 1 : (!mm[2] && p.nsplit == 1 && p.persist ? 2 : 0);
        int64_t W = 0;
        if (mode == 1) { /* uniform over the CTA; each thread sums a contiguous chunk, then the scan */
            const int chunk = (p.B + HD_THREADS - 1) / HD_THREADS;
            const int lo = min(p.B, tid * chunk), hi = min(p.B, lo + chunk);
            int64_t run = 0;
            for (int b = lo; b < hi; b++) run += cum[b];
            long long total;
            int64_t base = block_excl_scan(run, &total, (long long *)wsum); /* the chunk's start */
            for (int b = lo; b < hi; b++) {
                const int64_t c = cum[b];
                cum[b] = base;
                base += c;
            }
            if (tid == 0) cum[p.B] = total;
            __syncthreads();
            W = cum[p.B];
        }
        HD_CT_PLAN(22);
        const int64_t g = W / (p.min_units > 0 ? p.min_units : 1);
        const int P = (int)(g < 1 ? 1 : (g > p.P ? p.P : g));
        if (x == 0) { /* publish: the prefix sums (mode 1), the plan, then this launch's epoch */
            if (mode == 1) {
                for (int b = tid; b <= p.B; b += HD_THREADS) p.cum[b] = cum[b];
                __syncthreads();
            }
            if (tid == 0) {
                p.plan[0] = W;
                p.plan[1] = P;
                p.plan[2] = mode;
                __threadfence();
                asm volatile("st.release.gpu.global.b64 [%0], %1;\n" ::"l"(p.plan + 3), "l"(p.epoch) : "memory");
            }
        }
        if (tid == 0) {
            sm->sc_w = W;
            sm->sc_p = P;
            sm->sc_mode = mode;
        }
    }
    HD_CT_PLAN(23);
    int has = 0;
    if (tid == 0) {
        hd_job J;
        if (sm->sc_mode == 0) has = sm->sc_uni; /* sm->job holds it */
        else if (sm->sc_mode == 2) {
            has = sm->sc_lane;
            if (has) sm->job = *job_lane;
        } else if (x < sm->sc_p * p.L) {
            const int glob = sm->sc_have;
            const int64_t *cp = glob ? p.cum : cum;
            sm->sc_first = hd_sched_req(cp, glob, p.B, hd_sched_s(x / p.L, sm->sc_w, sm->sc_p));
            sm->sc_next = sm->sc_first;
            sm->sc_cum = hd_cum(cp, glob, sm->sc_first);
            has = hd_sched_next(p, sm, x, &J, gp, cuts);
        }
        if (has && sm->sc_mode == 1) sm->job = J;
    }
    return has;
}

/* ------------------------------------------------------------------------------------------ */
/* Producer (warpgroup 0): Q by cp.async; key tiles by TMA or by cp.async warp pairs           */

/* Q by TMA, one box per 64-column chunk onto bar (the caller has set its expected bytes) */
MLA_DEV void hd_q_boxes(const hd_params &p, const hd_job &J, uint32_t sbase, uint32_t bar) {
    const int i0 = J.row0 / p.H, h0 = J.row0 - i0 * p.H;
    for (int c = 0; c < HD_NCH; c++) hd_tma_3d(sbase + HD_SQ + c * HD_CHUNK, &p.q_map, 64 * c, h0, J.q_start + i0, bar);
}

/* Q of J by TMA from one thread, outside the producer's pair 1: its bytes expected on qfull and
 * all 64 of its arrivals at once (hd_q_ahead, hd_start_early) */
MLA_DEV void hd_q_issue(const hd_params &p, const hd_job &J, uint32_t sbase, uint32_t qfull_bar) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(qfull_bar), "r"(HD_TILE) : "memory");
    hd_q_boxes(p, J, sbase, qfull_bar);
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0], 64;\n}\n" ::"r"(qfull_bar) : "memory");
}

/* 64 rows x 1152 B -> 9 swizzled chunks at dst. Thread pt issues pieces pt, pt+64, ... so a warp
 * reads 512 contiguous bytes per instruction; rows[r] NULL = 16 zero bytes, nothing read. */
MLA_DEV void hd_copy_rows(uint32_t dst, const uint8_t *const *rows, int pt, const void *dummy) {
#pragma unroll 4
    for (int it = 0; it < HD_C16; it++) {
        const int c = it * 64 + pt;
        const int r = c / HD_C16, k = c - r * HD_C16;
        const uint8_t *src = rows[r];
        const uint32_t d = dst + (uint32_t)((k >> 3) * HD_CHUNK + r * 128 + (((k & 7) ^ (r & 7)) << 4));
        hd_cp16(d, src ? (const void *)(src + k * 16) : dummy, src ? 16 : 0);
    }
}

#define HD_PAIR_BAR(pair) do { if (pair) HD_BAR(4, 64); else HD_BAR(3, 64); } while (0)

/* bits of kv_valid word k (keys 32k..32k+31 of the tile) when the first nv rows are keys */
MLA_DEV uint32_t hd_valid_bits(int nv, int k) {
    const int c = nv - 32 * k;
    return c >= 32 ? 0xffffffffu : (c <= 0 ? 0u : (1u << c) - 1u);
}

/* TMA path (page_size % 16 == 0): a tile is 64 / box sub-blocks, each inside one page; issuer w
 * (lane 0 of producer warp w) issues, per tile, the 9 box copies of sub-block w (64 columns x box
 * rows, one chunk or a 16/32-row band of it: the 128-byte swizzle is a function of the shared
 * address, so bands at multiples of 8 rows compose into the 64-row layout), each onto its chunk's
 * full barrier (one arrival per issuer). MLA_PRECISION_BF16_P (hd_consumer_p1): the copies of a
 * tile go out part by part (hd_part), each part once its "empty" barrier says the last reader of
 * tile n-2 is done with it, in the order the consumers free them, per pair of tiles (m0 = 2k in
 * stage 0, m1 = 2k+1 in stage 1): rope m0 (consumer 0's S done), V half 0 of m0 (its P.V), half 1
 * of m1 (consumer 1's own P.V), half 1 of m0, half 0 and rope of m1 (the P.V from shared memory;
 * the rope chunk of m1 held P_m1), and S of the next tile (hd_s_chunk) takes its chunks in about
 * that order. Default precision: whole tiles once all three parts are free; S in order 0..8
 * (a first cut of part-by-part refills ran 1-3% slower there). Rows past seq_len inside a copied sub-block are copied too and zeroed by the
 * consumers (rows >= nvalid); a sub-block wholly past seq_len is not copied (its rows are >=
 * nvalid); a sub-block on an out-of-range page is copied from page coordinate num_pages: wholly out
 * of the tensor, TMA fills it with zeros (and still counts its bytes), and its keys are masked out of S. */
typedef struct hd_tma_tile {
    uint32_t dst;               /* the tile's stage */
    int st, row, pg, copy;      /* copy = 0: nothing to copy (past seq_len): plain arrivals */
} hd_tma_tile;
MLA_DEV hd_tma_tile hd_tma_prep(const hd_params &p, const hd_job &J, hd_small *sm, uint32_t sbase, int m, int w,
                                const int pt = 0) {
    const int box = p.box, t = J.t_begin + m;
    /* pt (page-aligned tiles, hd_pt_tiles): the tile's keys start at page row r0 of page t / ptile and
       run for vk rows at most; rows past the page land as zeros */
    int pi = 0, r0 = 0;
    const int key0 = pt ? hd_pt_start(p, t, &pi, &r0) : t * HD_KEYS;
    const int vk = pt ? min(HD_KEYS, p.page_size - r0) : HD_KEYS;
    const int nv = max(0, min(vk, J.seq - key0));
    const int kk = key0 + w * box; /* this issuer's sub-block: rows w*box .. of the tile */
    int32_t page = -1;
    if (pt) {
        if (w * box < nv) page = p.bt[(int64_t)J.b * p.bt_stride + pi];
    } else if (kk < J.seq) {
        page = (m < 2 && J.pg[m] != -2) ? J.pg[m] : p.bt[(int64_t)J.b * p.bt_stride + kk / p.page_size];
    }
    const int ok = page >= 0 && page < p.num_pages;
    /* the sub-block's bits of kv_valid (all 64, or 32 / 16 of them: a piece of its own), nvalid by
       issuer 0; slot m & 3 (its last readers, of tile m-4, are done: tile m-2 was issued) */
    const int sl = m & 3;
    const uint64_t all = hd_valid_bits(nv, 0) | ((uint64_t)hd_valid_bits(nv, 1) << 32);
    const uint64_t mine = ok ? all >> (w * box) : 0ull;
    if (box == 16) ((uint16_t *)sm->kv_valid[sl])[w] = (uint16_t)mine;
    else if (box == 32) sm->kv_valid[sl][w] = (uint32_t)mine;
    else {
        sm->kv_valid[sl][0] = (uint32_t)mine;
        sm->kv_valid[sl][1] = (uint32_t)(mine >> 32);
    }
    /* pt: a tile that holds all vk rows of its page needs no zeroing (its rows up to the last copied
       sub-block past the page are zeros) */
    if (w == 0) sm->nvalid[sl] = pt && nv == vk ? min(HD_KEYS, (vk + box - 1) / box * box) : nv;
    hd_tma_tile T;
    T.st = m & 1;
    T.dst = sbase + (T.st ? HD_SK1 : HD_SK0) + (uint32_t)(w * box * 128);
    T.copy = pt ? w * box < nv : kk < J.seq; /* a bad page: page coordinate num_pages, wholly out of bounds -> zeros */
    T.row = ok ? (pt ? r0 + w * box : kk % p.page_size) : 0;
    T.pg = ok ? page : p.num_pages;
    return T;
}
/* the box copies of part q of a tile (stage T.st) onto its chunks' full barriers */
MLA_DEV void hd_tma_issue(const hd_params &p, const hd_tma_tile &T, uint32_t full0, int q, const int pt = 0) {
    for (int c = hd_part_lo(q); c < hd_part_hi(q); c++) {
        const uint32_t bar = hd_fullc(full0, T.st, c);
        if (T.copy) {
            hd_mbar_expect_tx(bar, (uint32_t)(p.box * 128));
            hd_tma_3d(T.dst + c * HD_CHUNK, &p.kv_map, 64 * c, T.row, T.pg, bar);
        } else {
            hd_mbar_arrive(bar); /* rows past seq_len: >= nvalid, zeroed by the consumers */
        }
    }
}
/* part q of tile m once its last reader of tile m-2 is done */
MLA_DEV void hd_tma_part(const hd_params &p, const hd_tma_tile &T, uint32_t full0, uint32_t empty0, int m, int q,
                         const int pt = 0) {
    if (m >= 2) hd_mbar_wait(hd_emptyp(empty0, T.st, q), (uint32_t)(((m >> 1) - 1) & 1));
    HD_T(2, 4 + q, m);
    hd_tma_issue(p, T, full0, q, pt);
}
/* pt = 1: page-aligned tiles (p.ptile, the general-page kernels), one 64-row box a chunk as page 64's (kv_map) */
MLA_DEV void hd_producer_tma(const hd_params &p, const hd_job &J, hd_small *sm, uint32_t sbase, uint32_t sm_u32, int w,
                             const int p1, const int pt = 0) {
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&p.kv_map) : "memory");
    for (int m0 = J.qpre == 2 ? 2 : 0; m0 < J.nt; m0 += 2) { /* qpre 2: tiles 0, 1 issued (hd_start_early) */
        const int m1 = m0 + 1, two = m1 < J.nt;
        HD_T(2, 1, m0);
        if (m0 == 0 && w == 0) HD_CT1(11, clock64());
        const hd_tma_tile A = hd_tma_prep(p, J, sm, sbase, m0, w, pt);
        if (m0 == 0 && w == 0) HD_CT1(13, clock64());
        /* the last segment's out stores from stage 0 (thread 0's bulk group, box 64: see hd_decode_body) */
        if (m0 == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        hd_tma_tile B = A;
        if (two) B = hd_tma_prep(p, J, sm, sbase, m1, w, pt);
        if (p1) { /* in the order hd_consumer_p1 frees the parts */
            hd_tma_part(p, A, full0, empty0, m0, 2, pt);          /* consumer 0's S_m0 done */
            hd_tma_part(p, A, full0, empty0, m0, 0, pt);          /* consumer 0's P.V of m0 (registers) */
            hd_tma_part(p, A, full0, empty0, m0, 1, pt);          /* consumer 1's P.V of m0 (smem) */
            if (two) hd_tma_part(p, B, full0, empty0, m1, 1, pt); /* consumer 1's P.V of m1 (registers) */
            if (two) hd_tma_part(p, B, full0, empty0, m1, 0, pt); /* consumer 0's P.V of m1 (smem) */
            if (two) hd_tma_part(p, B, full0, empty0, m1, 2, pt); /* (the same: the rope chunk held P_m1) */
        } else { /* whole tiles (refilling the parts as they free measured 1-3% slower here) */
            if (m0 >= 2) hd_wait_free(empty0, 0, (uint32_t)(((m0 >> 1) - 1) & 1));
            for (int q = 0; q < HD_PARTS; q++) hd_tma_issue(p, A, full0, q, pt);
            if (two) {
                if (m1 >= 2) hd_wait_free(empty0, 1, (uint32_t)(((m1 >> 1) - 1) & 1));
                for (int q = 0; q < HD_PARTS; q++) hd_tma_issue(p, B, full0, q, pt);
            }
        }
    }
}

/* ---- Rows by cp.async for BF16 pages that are not multiples of 16 (hd_decode_kernel_*_r, v62, v63) ---
 * TMA cannot gather these well: a box lies inside one page, so a tile of page 1 would be 576 boxes of one
 * 128-byte row piece, and the TMA unit takes ~25-60 cycles a small request (session 36's store probe,
 * the FP8 raw tile's per-row bulk copies at page 1: 283 against 444 TF). Instead all four producer
 * warps copy every tile with 16-byte cp.async: warp w rows 16w..16w+15, lane l rows 16w + 4i + l/8
 * (i < 4) and piece l % 8 of every 128-byte chunk, so that one warp instruction reads four whole
 * 128-byte lines (eight lanes a line). A row without a key (past seq_len, an out-of-range page) is
 * copied from hd_zero_row, so nvalid is 64 and the consumers zero nothing. Each thread closes a
 * chunk with cp.async.mbarrier.arrive (no .noinc: a zero-net arrival that holds the chunk's phase open
 * until the thread's copies land, which also makes them visible to whoever waits on it), then lane 0
 * arrives for the warp after __syncwarp (release: kv_valid): the full barriers count 4 arrivals, as
 * for 16-row TMA boxes (the host sets p.tma, box 16). The parts go out in hd_producer_tma's order,
 * each once its empty barrier completes; the warps never wait for their own copies.
 * The block table is read once a row a tile (lane l: row 16w + l % 16; hd_rows_prep). The old path (a warp
 * pair a tile, copies awaited before the arrival, the whole stage awaited under bf16p) ran 170 TF
 * under bf16p and 237 under the default precision at b=128 h=128 s_q=2 8K, page 64 654 / 490
 * (bench/results.md, session 44). */
/* a row of zeros for the rows without a key (static storage: zero from the module's load), so that every copy
   is an unpredicated 16-byte cp.async */
__device__ __align__(128) uint8_t hd_zero_row[HD_ROW_BYTES];
typedef struct hd_rows_tile {
    const uint8_t *src[4]; /* row 16w + 4i + l/8 of the tile: its piece l % 8 of chunk 0 (of hd_zero_row where no key) */
} hd_rows_tile;
/* lane l looks up row 16w + l % 16 (one block-table load and division a lane, not four) and takes its four
   rows' addresses from the lanes that looked them up */
MLA_DEV hd_rows_tile hd_rows_prep(const hd_params &p, const hd_job &J, hd_small *sm, int m, int w, int l) {
    const int key = (J.t_begin + m) * HD_KEYS + 16 * w + (l & 15);
    const uint8_t *s = NULL;
    if (key < J.seq) {
        const int pi = key / p.page_size;
        const int32_t page = p.bt[(int64_t)J.b * p.bt_stride + pi];
        if (page >= 0 && page < p.num_pages) s = p.kv + (int64_t)page * p.page_stride + (int64_t)(key - pi * p.page_size) * HD_ROW_BYTES;
    }
    const uint32_t bits = __ballot_sync(0xffffffffu, s != NULL) & 0xffffu;
    if (!s) s = hd_zero_row;
    hd_rows_tile T;
#pragma unroll
    for (int i = 0; i < 4; i++)
        T.src[i] = (const uint8_t *)__shfl_sync(0xffffffffu, (unsigned long long)s, 4 * i + (l >> 3)) + 16 * (l & 7);
    /* slot m & 3: its last readers, of tile m - 4, are done (tile m - 2 was issued) */
    if (l == 0) ((uint16_t *)sm->kv_valid[m & 3])[w] = (uint16_t)bits;
    if (l == 0 && w == 0) sm->nvalid[m & 3] = HD_KEYS;
    return T;
}
/* chunks [c0, c1) of a tile (compile-time: each copy one instruction on precomputed addresses, the chunk's
 * offsets as immediates; session 44's first cut computed them per copy and its producer warps issued at
 * ~13 cycles an instruction, ~330 TF wherever it ran) into the stage at d (this thread's row 16w + l/8 of
 * chunk 0), then each chunk's arrivals */
MLA_DEV void hd_rows_chunks(const hd_rows_tile &T, uint32_t d, uint32_t dsw0, uint32_t dsw1, uint32_t bar0, int l,
                            const int c0, const int c1) {
#pragma unroll
    for (int c = c0; c < c1; c++) {
#pragma unroll
        for (int i = 0; i < 4; i++) /* row r = 16w + 4i + l/8: r & 7 = 4 (i & 1) + l/8 */
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d + (uint32_t)(c * HD_CHUNK + 4 * i * 128) +
                                                                             ((i & 1) ? dsw1 : dsw0)),
                         "l"(T.src[i] + 128 * c) : "memory");
        hd_cp_arrive_warp(bar0 + 8u * (uint32_t)c, l);
    }
}
/* part q of tile m (stage st, compile-time) once its last reader of tile m - 2 is done (bf16p) or (whole: the
 * default precision, part 0) once the whole stage is */
MLA_DEV void hd_rows_part(const hd_rows_tile &T, uint32_t sbase, uint32_t full0, uint32_t empty0, int m, int w, int l,
                          const int st, const int q, const int whole) {
    /* (tiles 0, 1 wait on parity 1 of a barrier at an even phase, fresh or re-armed: at once; unconditional, so
       that the compiler does not peel the first pair: 2x the code) */
    const uint32_t par = (uint32_t)(((m >> 1) - 1) & 1);
    if (!whole) hd_mbar_wait(hd_emptyp(empty0, st, q), par);
    else if (q == 0) hd_wait_free(empty0, st, par);
    const uint32_t d = sbase + (st ? HD_SK1 : HD_SK0) + (uint32_t)((16 * w + (l >> 3)) * 128);
    const uint32_t dsw0 = (uint32_t)(((l & 7) ^ (l >> 3)) << 4), dsw1 = (uint32_t)(((l & 7) ^ (4 + (l >> 3))) << 4);
    hd_rows_chunks(T, d, dsw0, dsw1, hd_fullc(full0, st, 0), l, hd_part_lo(q), hd_part_hi(q));
}
MLA_DEV void hd_producer_rows(const hd_params &p, const hd_job &J, hd_small *sm, uint32_t sbase, uint32_t sm_u32, int tid,
                              const int p1) {
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    const int w = tid >> 5, l = tid & 31;
#pragma unroll 1
    for (int m0 = 0; m0 < J.nt; m0 += 2) {
        const int m1 = m0 + 1;
        const hd_rows_tile A = hd_rows_prep(p, J, sm, m0, w, l);
        hd_rows_tile B = A;
        if (m1 < J.nt) B = hd_rows_prep(p, J, sm, m1, w, l);
        if (p1) { /* hd_producer_tma's order */
            hd_rows_part(A, sbase, full0, empty0, m0, w, l, 0, 2, 0);
            hd_rows_part(A, sbase, full0, empty0, m0, w, l, 0, 0, 0);
            hd_rows_part(A, sbase, full0, empty0, m0, w, l, 0, 1, 0);
            if (m1 >= J.nt) break;
            hd_rows_part(B, sbase, full0, empty0, m1, w, l, 1, 1, 0);
            hd_rows_part(B, sbase, full0, empty0, m1, w, l, 1, 0, 0);
            hd_rows_part(B, sbase, full0, empty0, m1, w, l, 1, 2, 0);
        } else {
#pragma unroll
            for (int q = 0; q < HD_PARTS; q++) hd_rows_part(A, sbase, full0, empty0, m0, w, l, 0, q, 1);
            if (m1 >= J.nt) break;
#pragma unroll
            for (int q = 0; q < HD_PARTS; q++) hd_rows_part(B, sbase, full0, empty0, m1, w, l, 1, q, 1);
        }
    }
}

/* ---- TMA for page sizes that are not multiples of 16 (BF16 caches, p.gpage; page_size >= 16) --
 * A tile's 64 keys are runs of rows, each inside one page: at most 5 runs when page_size >= 16 (run
 * r: page pg0 + r, from row 0; run 0 from the tile's first row). A run of L rows goes out as one box
 * of B rows, B the largest power of two <= L (one tensor map per height, kv_gmap[log2 B]), at the
 * run's start and, when L > B, a second box at its end (offset L - B): the two overlap by 2B - L
 * rows, which both copies write with the same bytes. The 128-byte swizzle is a function of the
 * shared address (bits 7-9 select the 16-byte permutation of a 128-byte row), so a box landing at
 * any row composes into the 64-row layout. Box j of the tile (runs in order, at most 10) goes to
 * issuer j % 4 (lane 0 of producer warp w: at most HD_GB boxes); per chunk every issuer arrives
 * once, expecting the bytes of its boxes, or plainly when it has none (the full barriers count 4
 * arrivals, as with 16-row boxes). A run that starts at or past seq_len is not copied (its rows are
 * >= nvalid); a run on an out-of-range page is copied from page coordinate num_pages (wholly out of
 * the tensor: zeros) and its keys are masked. Issuer 0 writes the tile's kv_valid (the keys below
 * seq_len on pages that exist) and nvalid.
 * Cost (H100, bench/results.md sessions 24-25): bf16p 8K at page 61 / 100 / 17 ~558 / ~562 / ~415 TF
 * against ~170 by cp.async and ~643 at page 64; spec ~452 / ~452 / ~384 against ~479; h=16 s_q=1
 * 16K at page 61 ~2.87 TB/s, page 64's rate. The loss is this producer's instructions, not the
 * boxes: in session 24's build (each part's chunk copies unrolled: 54 copy sites, a pair's loop of
 * ~2.7K instructions) page 61 ran ~380 TF, and the same copies forced onto page 64 (MLA_HD_GPAGE=2)
 * ~350; today's forced onto page 64 run ~564 against 643. How the copies are issued is in
 * hd_gtma_issue (roll = 1). Those copies live in the general-page kernels only
 * (hd_decode_kernel_*_g, which have no other producer): rolled inside the standard kernels they cost
 * them 2-4% (bf16p 4K -4%, s_q=1 -2%), and taking session 24's unrolled copies out of the standard
 * kernels altogether moved ptxas's registers there (a spill in the standard producer's pair loop;
 * s_q=1 -2.4%), so the standard kernels keep those, reachable as MLA_HD_GPAGE=3, and their SASS is
 * session 24's. Measured and not kept (session 25): a box-by-box prep with fewer instructions that
 * reads the block table after working out the runs (bf16p -5 to -10%), the same with tile m1's boxes
 * worked out after tile m0's copies (h16 -14%), and the block table read first there (12-14 LDL/STL
 * in the pair loop; not run). */
#define HD_GB 3
/* v61: hd_gtma_prep_c (kernels _g) where a page's tiles take at most 4.4 boxes on average (hd_gtile_boxes100),
   hd_gtma_prep (kernels _gs) where they take more: pages 17..39 but 40, and 41, 42, 43, 45, 47. H100 bf16p 8K,
   _gs / _g TF (session 43): 36 (4.44 boxes) 533.5 / 520, 41 (4.78) 545.5 / 535, 42 (4.48) 548 / 544; 44 (4.00)
   560 / 566, 46 (4.26) 557.5 / 561.5, 49 (4.33) 557.5 / 560, 51 (4.24) 558.5 / 567.5, 40 (3.60) 570 / 583 */
#define HD_GPREP_BOXES 440
typedef struct hd_gtile {
    uint32_t dst;               /* the tile's stage */
    int st;
    int pg[HD_GB];              /* this issuer's boxes: page coordinate, -1 = no box */
    uint32_t rw[HD_GB];         /* page row | shared row << 20 | log2 rows << 27 */
} hd_gtile;
/* a tile's runs: nv keys below seq_len; run 0 from page row row0, L0 rows long */
typedef struct hd_gruns {
    int nv, row0, L0;
} hd_gruns;
/* tile m's runs and the block-table entries of their pages (-1: a run at or past seq_len), loaded
 * first and all in flight together */
MLA_DEV hd_gruns hd_gtma_pages(const hd_params &p, const hd_job &J, int m, int32_t page[5]) {
    const int P = p.page_size, key0 = (J.t_begin + m) * HD_KEYS, pg0 = key0 / P;
    hd_gruns R;
    R.nv = max(0, min(HD_KEYS, J.seq - key0));
    R.row0 = key0 - pg0 * P;
    R.L0 = min(P - R.row0, HD_KEYS);
    const int32_t *bt = p.bt + (int64_t)J.b * p.bt_stride + pg0;
#pragma unroll
    for (int r = 0; r < 5; r++) page[r] = (r == 0 ? 0 : R.L0 + (r - 1) * P) < R.nv ? bt[r] : -1;
    return R;
}
/* a tile's box list with no box yet (stage m & 1) */
MLA_DEV hd_gtile hd_gtile_none(uint32_t sbase, int m) {
    hd_gtile T;
    T.st = m & 1;
    T.dst = sbase + (T.st ? HD_SK1 : HD_SK0);
#pragma unroll
    for (int i = 0; i < HD_GB; i++) {
        T.pg[i] = -1;
        T.rw[i] = 0u;
    }
    return T;
}
/* issuer 0 publishes tile m's key bits and nvalid in slot m & 3: its last readers (tile m-4) are done, tile m-2
   was issued */
MLA_DEV void hd_gtile_valid(hd_small *sm, int m, int w, uint64_t valid, int nv) {
    if (w != 0) return;
    sm->kv_valid[m & 3][0] = (uint32_t)valid;
    sm->kv_valid[m & 3][1] = (uint32_t)(valid >> 32);
    sm->nvalid[m & 3] = nv;
}
/* tile m's boxes for issuer w: box j of the tile (runs in order) goes to issuer j % 4 */
MLA_DEV hd_gtile hd_gtma_prep(const hd_params &p, hd_small *sm, uint32_t sbase, int m, int w, const hd_gruns &R,
                              const int32_t page[5]) {
    const int P = p.page_size, nv = R.nv, row0 = R.row0, L0 = R.L0;
    hd_gtile T = hd_gtile_none(sbase, m);
    uint64_t valid = 0ull;
    int j = 0; /* the run's first box's index in the tile */
#pragma unroll
    for (int r = 0; r < 5; r++) {
        const int s = r == 0 ? 0 : L0 + (r - 1) * P;
        if (s < nv) {
            const int row = r == 0 ? row0 : 0, L = r == 0 ? L0 : min(P, HD_KEYS - s);
            const int h = 31 - __clz(L), two = L > (1 << h), o = L - (1 << h);
            const int ok = page[r] >= 0 && page[r] < p.num_pages;
            if (ok) valid |= (~0ull >> (64 - min(L, nv - s))) << s; /* keys below seq_len only */
            const int pgc = ok ? page[r] : p.num_pages, prow = ok ? row : 0;
#pragma unroll
            for (int i = 0; i < HD_GB; i++) {
                if (w + 4 * i == j) {
                    T.pg[i] = pgc;
                    T.rw[i] = (uint32_t)prow | (uint32_t)s << 20 | (uint32_t)h << 27;
                }
                if (two && w + 4 * i == j + 1) {
                    T.pg[i] = pgc;
                    T.rw[i] = (uint32_t)(prow + o) | (uint32_t)(s + o) << 20 | (uint32_t)h << 27;
                }
            }
            j += 1 + two;
        }
    }
    hd_gtile_valid(sm, m, w, valid, nv);
    return T;
}
/* v61: hd_gtma_prep as a rolled loop over the runs (kernels _g: pages whose tiles take few boxes, HD_GPREP_BOXES).
 * The unrolled prep was most of the general-page producer's pair loop, whose code pushed the consumers' out of
 * the instruction cache (Nsight Compute, page 64 through these copies: stall_no_inst 15.5% of the samples
 * against 4.2% on page 64's own producer; 7.6% with this prep). Where tiles take more boxes (three to five
 * runs), this loop's chain cost more than the fetch saved. The block-table entries pass through registers,
 * shifted one a run. */
MLA_DEV hd_gtile hd_gtma_prep_c(const hd_params &p, hd_small *sm, uint32_t sbase, int m, int w, const hd_gruns &R,
                                const int32_t page[5]) {
    const int P = p.page_size, nv = R.nv;
    hd_gtile T = hd_gtile_none(sbase, m);
    uint64_t valid = 0ull;
    int j = 0, s = 0, row = R.row0, L = R.L0; /* box j: the run's first box's index in the tile */
    int32_t q0 = page[0], q1 = page[1], q2 = page[2], q3 = page[3], q4 = page[4];
#pragma unroll 1
    for (int r = 0; r < 5 && s < nv; r++) {
        const int32_t pr = q0;
        q0 = q1;
        q1 = q2;
        q2 = q3;
        q3 = q4;
        const int h = 31 - __clz(L), two = L > (1 << h), o = L - (1 << h);
        const int ok = pr >= 0 && pr < p.num_pages;
        if (ok) valid |= (~0ull >> (64 - min(L, nv - s))) << s; /* keys below seq_len only */
        const int pgc = ok ? pr : p.num_pages, prow = ok ? row : 0;
#pragma unroll
        for (int b = 0; b < 2; b++) {
            const int d = j + b - w;
            if ((b == 0 || two) && d >= 0 && (d & 3) == 0) {
                const uint32_t v = (uint32_t)(prow + b * o) | (uint32_t)(s + b * o) << 20 | (uint32_t)h << 27;
                if (d == 0) {
                    T.pg[0] = pgc;
                    T.rw[0] = v;
                } else if (d == 4) {
                    T.pg[1] = pgc;
                    T.rw[1] = v;
                } else {
                    T.pg[2] = pgc;
                    T.rw[2] = v;
                }
            }
        }
        j += 1 + two;
        s += L;
        row = 0;
        L = min(P, HD_KEYS - s);
    }
    hd_gtile_valid(sm, m, w, valid, nv);
    return T;
}
/* this issuer's boxes of part q of a tile onto its chunks' full barriers */
MLA_DEV void hd_gtma_chunk(const hd_params &p, const hd_gtile &T, uint32_t full0, int c, uint32_t bytes) {
    const uint32_t bar = hd_fullc(full0, T.st, c);
    if (bytes) {
        hd_mbar_expect_tx(bar, bytes);
#pragma unroll
        for (int i = 0; i < HD_GB; i++)
            if (T.pg[i] >= 0)
                hd_tma_3d(T.dst + c * HD_CHUNK + ((T.rw[i] >> 20) & 63u) * 128u, &p.kv_gmap[T.rw[i] >> 27], 64 * c,
                          (int)(T.rw[i] & 0xfffffu), T.pg[i], bar);
    } else {
        hd_mbar_arrive(bar);
    }
}
/* roll != 0 (the general-page kernels): the part's arrivals, then a rolled loop over this issuer's
   boxes, each copying its chunks of the part (unrolled: the barrier, chunk column and shared offset
   are constants of the copy, and the box's map, page and row are set once). Session 25 measured
   three forms (H100, bf16p 8K page 61): every chunk's boxes unrolled (session 24's, 54 copy sites)
   384 TF; a rolled chunk loop with the three box slots in its body 502; this one 558.
   roll = 0: session 24's, the MLA_HD_GPAGE=3 path inside the standard kernels (see hd_run). */
MLA_DEV void hd_gtma_issue(const hd_params &p, const hd_gtile &T, uint32_t full0, int q, const int roll) {
    uint32_t bytes = 0u;
#pragma unroll
    for (int i = 0; i < HD_GB; i++)
        if (T.pg[i] >= 0) bytes += 128u << (T.rw[i] >> 27);
    if (roll) { /* the part's arrivals first, then box by box (a rolled loop) its chunks' copies (unrolled) */
        for (int c = hd_part_lo(q); c < hd_part_hi(q); c++) {
            const uint32_t bar = hd_fullc(full0, T.st, c);
            if (bytes) hd_mbar_expect_tx(bar, bytes);
            else hd_mbar_arrive(bar);
        }
        static_assert(HD_GB == 3, "the slot selects below name three slots");
#pragma unroll 1
        for (int i = 0; i < HD_GB; i++) { /* issuer w's boxes fill its slots in order */
            const int pg = i == 0 ? T.pg[0] : i == 1 ? T.pg[1] : T.pg[2];
            if (pg < 0) break;
            const uint32_t rw = i == 0 ? T.rw[0] : i == 1 ? T.rw[1] : T.rw[2];
            const CUtensorMap *map = &p.kv_gmap[rw >> 27];
            const uint32_t dst = T.dst + ((rw >> 20) & 63u) * 128u;
            const int row = (int)(rw & 0xfffffu);
            for (int c = hd_part_lo(q); c < hd_part_hi(q); c++)
                hd_tma_3d(dst + c * HD_CHUNK, map, 64 * c, row, pg, hd_fullc(full0, T.st, c));
        }
    } else {
        for (int c = hd_part_lo(q); c < hd_part_hi(q); c++) hd_gtma_chunk(p, T, full0, c, bytes);
    }
}
MLA_DEV void hd_gtma_part(const hd_params &p, const hd_gtile &T, uint32_t full0, uint32_t empty0, int m, int q,
                          const int roll) {
    if (m >= 2) hd_mbar_wait(hd_emptyp(empty0, T.st, q), (uint32_t)(((m >> 1) - 1) & 1));
    hd_gtma_issue(p, T, full0, q, roll);
}
/* all three parts of a tile (the spec kernels' whole-tile refill); roll = 1 unrolls the parts so that
   each part's chunk copies are unrolled too (a rolled part loop kept a rolled chunk loop and 10
   LDL/STL in the pair loop: spec page 17 295 against 384 TF, session 25) */
MLA_DEV void hd_gtma_whole(const hd_params &p, const hd_gtile &T, uint32_t full0, const int roll) {
    if (roll) {
#pragma unroll
        for (int q = 0; q < HD_PARTS; q++) hd_gtma_issue(p, T, full0, q, 1);
    } else {
        for (int q = 0; q < HD_PARTS; q++) hd_gtma_issue(p, T, full0, q, 0);
    }
}
/* hd_producer_tma's schedule with the general page's boxes (no early tiles: hd_start_early needs
 * 64-row boxes). roll 1 (kernels _g, HD_GPREP_BOXES): rolled copies, the rolled prep, and under
 * MLA_PRECISION_BF16_P tile m1 prepared after m0's parts; roll 2 (kernels _gs): rolled copies, the unrolled
 * prep; roll 0: session 24's unrolled copies (MLA_HD_GPAGE=3, inside the standard kernels). */
MLA_DEV void hd_producer_gtma(const hd_params &p, const hd_job &J, hd_small *sm, uint32_t sbase, uint32_t sm_u32, int w,
                              const int p1, const int roll) {
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    for (int m0 = 0; m0 < J.nt; m0 += 2) {
        const int m1 = m0 + 1, two = m1 < J.nt;
        int32_t pa[5], pb[5];
        const hd_gruns ra = hd_gtma_pages(p, J, m0, pa), rb = hd_gtma_pages(p, J, two ? m1 : m0, pb);
        const int rp = roll == 1; /* the rolled prep */
        const hd_gtile A = rp ? hd_gtma_prep_c(p, sm, sbase, m0, w, ra, pa) : hd_gtma_prep(p, sm, sbase, m0, w, ra, pa);
        if (m0 == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); /* (as hd_producer_tma) */
        hd_gtile B = A;
        if (two && !(rp && p1)) B = rp ? hd_gtma_prep_c(p, sm, sbase, m1, w, rb, pb) : hd_gtma_prep(p, sm, sbase, m1, w, rb, pb);
        if (p1) {
            hd_gtma_part(p, A, full0, empty0, m0, 2, roll);
            hd_gtma_part(p, A, full0, empty0, m0, 0, roll);
            hd_gtma_part(p, A, full0, empty0, m0, 1, roll);
            if (two && rp) B = hd_gtma_prep_c(p, sm, sbase, m1, w, rb, pb); /* (under the wait for m1's first part) */
            if (two) hd_gtma_part(p, B, full0, empty0, m1, 1, roll);
            if (two) hd_gtma_part(p, B, full0, empty0, m1, 0, roll);
            if (two) hd_gtma_part(p, B, full0, empty0, m1, 2, roll);
        } else {
            if (m0 >= 2) hd_wait_free(empty0, 0, (uint32_t)(((m0 >> 1) - 1) & 1));
            hd_gtma_whole(p, A, full0, roll);
            if (two) {
                if (m1 >= 2) hd_wait_free(empty0, 1, (uint32_t)(((m1 >> 1) - 1) & 1));
                hd_gtma_whole(p, B, full0, roll);
            }
        }
    }
}

/* ---- FP8 (MLA_KV_FP8) key tiles: all 128 producer threads ---------------------------------
 * Per tile n (stage st = n & 1), once the stage's "empty" says both consumers are done with tile
 * n-2, the raw rows land inside the stage itself: latent slot j (the 64 rows x 64 B of latent
 * columns 64j..64j+63) at HD_F8_RAW + 4096 j, the rope straight into chunk 8 in its final
 * swizzled layout, the scales (16 B per row) at the stage's start. TMA when page_size % 16 == 0
 * or on group tiles (gt, p.f8g: sub-block w = 16-row group 4t + w, hd_f8_grow) (per sub-block of box rows: 8 slot boxes, the rope box and the scales box on landed[st], issued
 * by the sub-block's producer issuer as soon as the stage is free, polled between conversion phases,
 * or, in the FP8 kernel's seesaw program, by consumer 1 (hd_pos_refill, warp w sub-block w); an L2
 * prefetch of tile n+2's rows), else cp.async (41 pieces per row through the block table, zero-filled where no key).
 * Then thread tid reads the scales of its rows r = tid / 4 and r + 32 (a barrier: chunk 0 is
 * written next) and dequantizes columns 16 (tid % 4) .. + 15 of every slot of both rows into the
 * bf16 chunks in place, in two phases so that no raw slot is overwritten before everyone has
 * read it: chunks 0-3 lie below the slots; chunks 4-7 over them, written once every slot is in
 * registers (v7 had four phases, a barrier each). Rows without a key become
 * zeros (the consumers zero nothing; NaN bytes in unused slots never reach a product).
 * Exactness: e4m3 * scale is exact in bf16 when the scale is a power of two (DeepSeek's writer
 * and ours): such CTAs hold bf16(e4m3 * scale) (hd_e4m3x2) and run the seesaw program unchanged.
 * Any other scale among the CTA's keys (a pre-scan of all their 16-byte scales while tiles 0 and
 * 1 land) puts the whole CTA on the exact program: the tiles hold the raw values bf16(e4m3), the
 * scales go to the P tile region ([64 keys][4] f32 per stage; the seesaw never uses it then) and
 * mode[st] = 1 tells the consumers (hd_consumer_exact). The consumers check mode[] at every pair,
 * so a producer that switched mid-way at a pair boundary would work too (an earlier version did;
 * the P tile then needs the last seesaw reader done). bf16(e4m3 * scale) for other scales (one
 * rounding, 2^-9) fails SPEC 5: lse off by ~1e-2 and out by ~2e-2 on the test's data (float64
 * simulation of both K and V rounded), hence the exact program. */

MLA_DEV int hd_pow2_scale(float s) { /* +-2^k, k in [-100, 15], or +-0: see hd_e4m3x2 */
    const uint32_t u = __float_as_uint(s), e = (u >> 23) & 0xffu;
    return (u & 0x7fffffu) == 0u && (e == 0u || (e >= 27u && e <= 142u));
}
MLA_DEV int hd_pow2_4(float4 s) {
    return hd_pow2_scale(s.x) & hd_pow2_scale(s.y) & hd_pow2_scale(s.z) & hd_pow2_scale(s.w);
}
/* global address of cache row `key` of the CTA's request; NULL when it holds no key */
MLA_DEV const uint8_t *hd_f8_row(const hd_params &p, const hd_job &J, int key) {
    if (key >= J.seq) return NULL;
    const int32_t page = p.bt[(int64_t)J.b * p.bt_stride + key / p.page_size];
    if (page < 0 || page >= p.num_pages) return NULL;
    return p.kv + (int64_t)page * p.page_stride + (int64_t)(key % p.page_size) * p.row_bytes;
}
/* rope-aware: sigma of cache row `key` of the CTA's request (the row exists: hd_f8_row != NULL) */
MLA_DEV float hd_ra_sigma(const hd_params &p, const hd_job &J, int key) {
    const int32_t page = p.bt[(int64_t)J.b * p.bt_stride + key / p.page_size];
    return __ldg(p.sigma + (int64_t)page * p.sig_st + key % p.page_size);
}
/* 16 raw bytes (latent columns 64j + 16q ..) of row rr -> two bf16 pieces of chunk j */
MLA_DEV void hd_f8_put(uint8_t *g, int j, int rr, int q, uint4 w, uint32_t sc) {
    const uint4 a = make_uint4(hd_e4m3x2(w.x, sc), hd_e4m3x2(w.x >> 16, sc), hd_e4m3x2(w.y, sc), hd_e4m3x2(w.y >> 16, sc));
    const uint4 b = make_uint4(hd_e4m3x2(w.z, sc), hd_e4m3x2(w.z >> 16, sc), hd_e4m3x2(w.w, sc), hd_e4m3x2(w.w >> 16, sc));
    uint8_t *row = g + j * HD_CHUNK + rr * 128;
    *(uint4 *)(row + (((2 * q) ^ (rr & 7)) << 4)) = a;
    *(uint4 *)(row + (((2 * q + 1) ^ (rr & 7)) << 4)) = b;
}
MLA_DEV uint4 hd_f8_get(const uint8_t *g, int j, int rr, int q, int ok) {
    const uint4 w = *(const uint4 *)(g + HD_F8_RAW + j * HD_F8_SLOT + rr * 64 + q * 16);
    return ok ? w : make_uint4(0u, 0u, 0u, 0u);
}
MLA_DEV void hd_prefetch_l2(const void *src, uint32_t bytes) {
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"((uint64_t)src), "r"(bytes) : "memory");
}
/* TMA path, issuer w (lane 0 of producer warp w < 64 / box): its sub-block (rows w*box.., inside
 * one page) of the raw tile m into its stage (free: tile m-2 paid) on landed[m & 1] (one arrival
 * per issuer): the 8 latent slot boxes, the rope box and the scales box at the sub-block's row
 * offset; a plain arrival when the sub-block is past seq_len or on an out-of-range page (its rows
 * have no key: the dequantization writes zeros there). Its sub-block of tile m+2 into L2. */
/* the first key of sub-block w of tile m (gt: group tiles, p.f8g: group 4 t + w) */
MLA_DEV int hd_f8_key0(const hd_params &p, const hd_job &J, int m, int w, const int gt) {
    return gt ? hd_g_start(p, 4 * (J.t_begin + m) + w) : (J.t_begin + m) * HD_KEYS + w * p.box;
}
MLA_DEV int32_t hd_f8_page(const hd_params &p, const hd_job &J, int m, int w, const int gt = 0) {
    const int key0 = hd_f8_key0(p, J, m, w, gt);
    return key0 < J.seq ? p.bt[(int64_t)J.b * p.bt_stride + key0 / p.page_size] : -1;
}
MLA_DEV void hd_f8_issue(const hd_params &p, const hd_job &J, uint32_t sbase, uint32_t landed0, int m, int w,
                         const int gt = 0) {
    const int box = p.box, key0 = hd_f8_key0(p, J, m, w, gt);
    const uint32_t bar = landed0 + 8u * (uint32_t)(m & 1);
    const int32_t page = hd_f8_page(p, J, m, w, gt);
    if (page >= 0 && page < p.num_pages) {
        const int row = key0 % p.page_size;
        const uint32_t dst = sbase + ((m & 1) ? HD_SK1 : HD_SK0);
        hd_mbar_expect_tx(bar, (uint32_t)(box * p.row_bytes));
#pragma unroll
        for (int j = 0; j < 8; j++) hd_tma_3d(dst + HD_F8_RAW + j * HD_F8_SLOT + w * box * 64, &p.kv_map, 64 * j, row, page, bar);
        hd_tma_3d(dst + 8 * HD_CHUNK + w * box * 128, &p.kv_map2, p.rope_off, row, page, bar);
        if (!p.ra) hd_tma_3d(dst + w * box * 16, &p.kv_map3, HD_F8_SCALES, row, page, bar);
    } else {
        hd_mbar_arrive(bar);
    }
    const int key2 = gt ? hd_f8_key0(p, J, m + 2, w, 1) : key0 + 2 * HD_KEYS;
    if (p.f8_pf && key2 < J.seq && m + 2 < J.nt) {
        const int32_t pg2 = p.bt[(int64_t)J.b * p.bt_stride + key2 / p.page_size];
        if (pg2 >= 0 && pg2 < p.num_pages) /* (gt: the rows inside the page) */
            hd_prefetch_l2(p.kv + (int64_t)pg2 * p.page_stride + (int64_t)(key2 % p.page_size) * p.row_bytes,
                           (uint32_t)((gt ? min(box, p.page_size - key2 % p.page_size) : box) * p.row_bytes));
    }
}
/* the copies of hd_f8_issue_rows (below) given this lane's row r (row 16w + l % 16 of tile m; NULL: no key), onto
   the stage's landed barrier bar; also consumer 1's refills where rw (v67, hd_pos_refill) */
MLA_DEV void hd_f8_gather(const hd_params &p, const uint8_t *r, uint32_t sbase, uint32_t bar, int m, int w, int l) {
    if (!r) r = hd_zero_row; /* (its kv_valid bit is 0) */
    /* rows 16w + 4i + l/8 (i = 0..3), lane jj = l % 8: latent pieces 8c + jj (c = 0..3: slot 2c + jj/4), then
       piece 32 + jj (jj = 0 the scales, else the rope's piece jj - 1) and piece 40 (jj = 0: the rope's piece 7);
       every address a base a lane plus an immediate, as hd_rows_chunks (a row a lane step, rolled: 173-183 TF at
       pages 1..17 against 130-142 unrolled, whose five inlined copies spilled in the producer; session 45) */
    const int jj = l & 7, rq = 16 * w + (l >> 3);
    const uint8_t *src[4];
#pragma unroll
    for (int i = 0; i < 4; i++) src[i] = (const uint8_t *)__shfl_sync(0xffffffffu, (unsigned long long)r, 4 * i + (l >> 3));
    const uint32_t dst = sbase + ((m & 1) ? HD_SK1 : HD_SK0);
    const uint32_t dl = dst + (uint32_t)(HD_F8_RAW + (jj >> 2) * HD_F8_SLOT + (jj & 3) * 16 + rq * 64);
#pragma unroll
    for (int c = 0; c < 4; c++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dl + (uint32_t)(2 * c * HD_F8_SLOT + i * 256)),
                         "l"(src[i] + 128 * c + 16 * jj) : "memory");
    /* the rope chunk: row rr at rr * 128, its pieces swizzled by rr & 7 = 4 (i & 1) + l / 8 */
    const uint32_t dr = dst + (uint32_t)(8 * HD_CHUNK + rq * 128);
    const uint32_t sw0 = (uint32_t)(((jj - 1) ^ (l >> 3)) << 4), sw1 = (uint32_t)(((jj - 1) ^ (4 + (l >> 3))) << 4);
    const uint32_t t0 = (uint32_t)((7 ^ (l >> 3)) << 4), t1 = (uint32_t)((7 ^ (4 + (l >> 3))) << 4);
    const int ro = p.rope_off + 16 * (jj - 1);
    if (jj == 0) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            if (!p.ra)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst + (uint32_t)((rq + 4 * i) * 16)),
                             "l"(src[i] + HD_F8_SCALES) : "memory");
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dr + (uint32_t)(i * 512) + ((i & 1) ? t1 : t0)),
                         "l"(src[i] + p.rope_off + 112) : "memory");
        }
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dr + (uint32_t)(i * 512) + ((i & 1) ? sw1 : sw0)),
                         "l"(src[i] + ro) : "memory");
    }
    hd_cp_arrive_warp(bar, l);
}
/* Consumer 1's refills (v33): sub-block w of tile m as (page index pi, row in that page), stepped 64
 * rows a tile by the caller (hd_pos_tile) over pages of span rows (page_size; on group tiles 16 f8g,
 * the groups' rows), so that they divide nothing: the page of its keys (hd_pos_page, -1 past
 * seq_len) and its copies (hd_pos_refill: hd_f8_issue's at that row; the L2 prefetch of tile m + 2
 * two tiles on). With the divisions of hd_f8_key0 and key % page (seven a refill on group tiles, two
 * on the others) the refills held consumer 1 between its P.V and its S: on group tiles ~8% of the
 * kernel's time (page-64 tiles forced onto that kernel, MLA_HD_F8G=3: 226 against 246 TF; HD_TRACE
 * put it in the pair's chain, ncu in the consumers' integer instructions). */
MLA_DEV void hd_pos_add(int span, int *pi, int *row, int d) {
    *row += d;
    while (*row >= span) {
        *row -= span;
        (*pi)++;
    }
}
/* group tiles: (page index *gpg, group *gr) moved on by d groups (a few steps: d <= 8) */
MLA_DEV void hd_g_add(const hd_params &p, int *gpg, int *gr, int d) { hd_pos_add(p.f8g, gpg, gr, d); }
/* one tile on (64 rows) in O(1): 64 rows = pq pages of span rows + pr rows, worked out once a segment
   (hd_pos_add's loop ran 8 times a pair at page 16: 2M warp instructions, page 16 -8% against 64) */
MLA_DEV void hd_pos_tile(int span, int pq, int pr, int *pi, int *row) {
    *row += pr;
    *pi += pq;
    if (*row >= span) {
        *row -= span;
        (*pi)++;
    }
}
MLA_DEV int32_t hd_pos_page(const hd_params &p, const hd_job &J, int pi, int row) {
    return pi * p.page_size + row < J.seq ? p.bt[(int64_t)J.b * p.bt_stride + pi] : -1;
}
/* FP8 kernel (v22, v29), TMA path: consumer 1's warp w (lane 0) issues sub-block w of tile m >= 2
 * once its stage is free. That consumer is the last reader of most stages and idle while its next
 * tile dequantizes; the producer's issuers, polling between their conversion phases, often found the
 * stage still busy and stalled their warps (the page lookup) inside the next tile's conversion. One
 * thread issuing the 4 sub-blocks of page 16 measured -28% (serial page lookups), four lanes of one
 * warp +1%, a warp each +13%. Its copies repeat hd_f8_issue's: one helper for both moved ptxas's
 * allocation of the BF16 kernels' producer (stack frame, +32 instructions; session 29), whose SASS
 * is kept as measured. */
MLA_DEV void hd_pos_refill(const hd_params &p, const hd_job &J, uint32_t sbase, uint32_t empty0, uint32_t landed0, int m,
                           int w, int pi, int row, int32_t page, int span, const int gt, const int rw = 0) {
    if (m >= J.nt) return;
    hd_wait_free(empty0, m & 1, (uint32_t)(((m >> 1) - 1) & 1));
    const int box = p.box;
    const uint32_t bar = landed0 + 8u * (uint32_t)(m & 1);
    if (rw) { /* (v67: every lane of warp w, (pi, row) its own key's: the row gather) */
        const uint8_t *r = page >= 0 && page < p.num_pages ? p.kv + (int64_t)page * p.page_stride + (int64_t)row * p.row_bytes : NULL;
        hd_f8_gather(p, r, sbase, bar, m, w, threadIdx.x & 31);
        return;
    }
    if (page >= 0 && page < p.num_pages) {
        const uint32_t dst = sbase + ((m & 1) ? HD_SK1 : HD_SK0);
        hd_mbar_expect_tx(bar, (uint32_t)(box * p.row_bytes));
#pragma unroll
        for (int j = 0; j < 8; j++) hd_tma_3d(dst + HD_F8_RAW + j * HD_F8_SLOT + w * box * 64, &p.kv_map, 64 * j, row, page, bar);
        hd_tma_3d(dst + 8 * HD_CHUNK + w * box * 128, &p.kv_map2, p.rope_off, row, page, bar);
        if (!p.ra) hd_tma_3d(dst + w * box * 16, &p.kv_map3, HD_F8_SCALES, row, page, bar);
    } else {
        hd_mbar_arrive(bar);
    }
    if (p.f8_pf && m + 2 < J.nt) {
        hd_pos_add(span, &pi, &row, 2 * HD_KEYS);
        const int32_t pg2 = hd_pos_page(p, J, pi, row);
        if (pg2 >= 0 && pg2 < p.num_pages) /* (gt: the rows inside the page) */
            hd_prefetch_l2(p.kv + (int64_t)pg2 * p.page_stride + (int64_t)row * p.row_bytes,
                           (uint32_t)((gt ? min(box, p.page_size - row) : box) * p.row_bytes));
    }
}
/* v66 (the _f8_r kernel; session 45): FP8 pages that neither TMA nor the group tiles take (hd_run's rule; it sets
 * p.tma, box 16): producer warp w gathers sub-block w (rows 16w..16w+15) of tile m by 16-byte cp.async
 * into the layout hd_f8_issue's boxes give (below: eight lanes a row's 128 bytes, four rows an instruction);
 * rows without a key are copied from hd_zero_row (their kv_valid bit is 0: the dequantization writes zeros
 * there anyway). Closed as the raw-tile kernels' gather (decode_narrow.cu, hn_issue_rows): every lane's zero-net
 * cp.async.mbarrier.arrive on landed[m & 1], then lane 0's plain arrival: four a phase, as four 16-row boxes.
 * Before, these pages loaded each tile by cp.async from all 128 producer threads and waited for it before
 * dequantizing: 138-147 TF at pages 1..8 against 257 at page 64 (8K, session 44). */
MLA_DEV void hd_f8_issue_rows(const hd_params &p, const hd_job &J, uint32_t sbase, uint32_t landed0, int m, int w, int l) {
    hd_f8_gather(p, hd_f8_row(p, J, (J.t_begin + m) * HD_KEYS + 16 * w + (l & 15)), sbase, landed0 + 8u * (uint32_t)(m & 1), m, w, l);
}
/* 1 when every part of stage st has been paid for the phase of parity par (hd_wait_free without waiting) */
MLA_DEV int hd_stage_free(uint32_t empty0, int st, uint32_t par) {
    return hd_mbar_test(hd_emptyp(empty0, st, 0), par) && hd_mbar_test(hd_emptyp(empty0, st, 1), par) &&
           hd_mbar_test(hd_emptyp(empty0, st, 2), par);
}
/* issuer w: issue its sub-block of tile *next if the stage is free (block: wait for it); 1 when issued
   (rw: every lane of producer warp w, hd_f8_issue_rows; the lanes agree on the test) */
MLA_DEV int hd_f8_try(const hd_params &p, const hd_job &J, uint32_t sbase, uint32_t empty0, uint32_t landed0, int *next,
                      int block, int w, const int gt, const int rw = 0) {
    const int m = *next;
    if (m >= J.nt) return 0;
    if (m >= 2) { /* the whole stage: the dequantization rewrites all of it */
        const int st = m & 1;
        const uint32_t par = (uint32_t)(((m >> 1) - 1) & 1);
        if (block) hd_wait_free(empty0, st, par);
        else if (rw) {
            if (!__all_sync(0xffffffffu, hd_stage_free(empty0, st, par))) return 0;
        } else if (!(hd_mbar_test(hd_emptyp(empty0, st, 0), par) && hd_mbar_test(hd_emptyp(empty0, st, 1), par) &&
                     hd_mbar_test(hd_emptyp(empty0, st, 2), par)))
            return 0; /* (spelled out: the helper's form moved the base kernels' SASS, session 45) */
    }
    if (rw) hd_f8_issue_rows(p, J, sbase, landed0, m, w, threadIdx.x & 31);
    else hd_f8_issue(p, J, sbase, landed0, m, w, gt);
    *next = m + 1;
    return 1;
}

/* barrier over the 128 producer threads: an mbarrier (pbar, 128 arrivals; each thread flips its own
 * parity pph), not bar.sync 2, 128: both order the same, but compute-sanitizer racecheck (2025.3)
 * does not credit the named barrier (it reported ~19 WAR hazards between the phases of one tile,
 * hd_f8_get / the scale loads vs hd_f8_put, also with barrier.sync or a __syncwarp before it) and
 * reports 0 with the mbarrier; speed unchanged (H200 bench within 1%) */
#define HD_F8_BAR() do { hd_mbar_arrive(pbar); hd_mbar_wait(pbar, pph); pph ^= 1u; } while (0)
/* group tiles: the cache row at row r of the tile whose first group is group gr of page index gpg
   (NULL: no key there), *key its key; no division (the producer steps gpg, gr a tile: hd_g_add) */
MLA_DEV const uint8_t *hd_f8_grow(const hd_params &p, const hd_job &J, int gpg, int gr, int r, int *key) {
    hd_g_add(p, &gpg, &gr, r >> 4);
    const int row = 16 * gr + (r & 15);
    *key = row < p.page_size ? gpg * p.page_size + row : -1;
    if (*key < 0 || *key >= J.seq) return NULL;
    const int32_t page = p.bt[(int64_t)J.b * p.bt_stride + gpg];
    if (page < 0 || page >= p.num_pages) return NULL;
    return p.kv + (int64_t)page * p.page_stride + (int64_t)row * p.row_bytes;
}
MLA_DEV void hd_producer_fp8(const hd_params &p, const hd_job &J, hd_small *sm, uint8_t *gbase, uint32_t sbase,
                             uint32_t sm_u32, int tid, const int f8, const int gt, const int causal = 0, const int rw = 0) {
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    const uint32_t landed0 = sm_u32 + (uint32_t)offsetof(hd_small, landed);
    const int r = tid >> 2, q = tid & 3;
    const uint32_t pbar = sm_u32 + (uint32_t)offsetof(hd_small, pbar);
    uint32_t pph = 0; /* parity of pbar's current phase (HD_F8_BAR) */
    int next = 0; /* TMA path, each issuer: the next tile to issue (tiles 0 and 1 at once, then tile n+1
                     as soon as tile n-1 is paid, polled between the conversion phases of tile n) */
    /* one per sub-block (rw: a whole warp per 16-row sub-block, hd_f8_issue_rows) */
    const int iw = tid >> 5, issuer = p.tma && (rw || ((tid & 31) == 0 && iw < HD_KEYS / p.box));
    if (issuer) {
        if (!rw) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&p.kv_map) : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&p.kv_map2) : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&p.kv_map3) : "memory");
        }
        hd_f8_try(p, J, sbase, empty0, landed0, &next, 1, iw, gt, rw);
        hd_f8_try(p, J, sbase, empty0, landed0, &next, 1, iw, gt, rw);
    }
#define HD_F8_POLL() do { if (issuer && !ci) hd_f8_try(p, J, sbase, empty0, landed0, &next, 0, iw, gt, rw); } while (0)
    int exact = 1; /* rope-aware: always the exact program (one scale per key: its sigma) */
    if (!p.ra) { /* the CTA's program: every scale of its keys a power of two (one pass over the 16-byte
         scales while tiles 0 and 1 land) */
        uint32_t bad = 0;
        /* (gt: the tiles' groups cover the keys between their first and the next tile's first) */
        const int key00 = gt ? hd_g_start(p, 4 * J.t_begin) : J.t_begin * HD_KEYS;
        const int nkeys = gt ? hd_g_start(p, 4 * (J.t_begin + J.nt)) - key00 : J.nt * HD_KEYS;
#pragma unroll 8
        for (int i = tid; i < nkeys; i += 128) {
            const uint8_t *row = hd_f8_row(p, J, key00 + i);
            if (row) bad |= !hd_pow2_4(__ldg((const float4 *)(row + HD_F8_SCALES)));
        }
        HD_BAR_OR(7, 128, bad, exact);
    }
    /* the FP8 kernel's seesaw program: consumer 1 issues tiles 2.. (hd_pos_refill); the exact program's
       consumers do not */
    const int ci = f8 && p.tma && !exact && J.nt > 1;
    /* gt: tile n's first group is group gr of page gpg (one division a segment; then four groups a tile) */
    int gpg = 0, gr = 0;
    if (gt) {
        gpg = 4 * J.t_begin / p.f8g;
        gr = 4 * J.t_begin - gpg * p.f8g;
    }
    for (int n = 0; n < J.nt; n++) {
        const int st = n & 1, k = n >> 1;
        const int key0 = (J.t_begin + n) * HD_KEYS;
        HD_T(2, 0, n);
        int ka = key0 + r, kb = key0 + r + 32; /* rows r, r + 32: their keys (gt: group tiles) */
        const int oa = (gt ? hd_f8_grow(p, J, gpg, gr, r, &ka) : hd_f8_row(p, J, key0 + r)) != NULL;
        const int ob = (gt ? hd_f8_grow(p, J, gpg, gr, r + 32, &kb) : hd_f8_row(p, J, key0 + r + 32)) != NULL;
        if (p.tma) { /* the issuers issued tile n after the stage's "empty"; landed orders us after it */
            if (issuer && !ci) while (next <= n) hd_f8_try(p, J, sbase, empty0, landed0, &next, 1, iw, gt, rw);
            hd_mbar_wait(landed0 + 8u * st, (uint32_t)(k & 1));
        } else if (k >= 1) {
            hd_wait_free(empty0, st, (uint32_t)((k - 1) & 1)); /* consumers done with tile n-2 */
        }
        HD_T(2, 1, n);
        if (tid < 64) { /* the tile's metadata (its last readers, of tile n-4, are done) */
            int kt;
            const uint8_t *row = gt ? hd_f8_grow(p, J, gpg, gr, tid, &kt) : hd_f8_row(p, J, key0 + tid);
            const uint32_t v = __ballot_sync(0xffffffffu, row != NULL);
            if ((tid & 31) == 0) sm->kv_valid[n & 3][tid >> 5] = v;
            if (tid == 0) {
                sm->nvalid[n & 3] = HD_KEYS; /* rows without a key are zeros: nothing to zero */
                sm->mode[st] = exact;
            }
            if (gt && causal && tid < 4) {
                int pw = gpg, rw = gr;
                hd_g_add(p, &pw, &rw, tid);
                HD_KGRP(sm)[n & 3][tid] = pw * p.page_size + 16 * rw;
            }
            if (!gt) sm->rows[0][tid] = row; /* (gt: rows[0] holds HD_KGRP) */
        }
        uint8_t *g = gbase + (st ? HD_SK1 : HD_SK0);
        if (!p.tma) {
            HD_F8_BAR(); /* rows[] */
            const uint32_t dst = sbase + (st ? HD_SK1 : HD_SK0);
#pragma unroll 3
            for (int it = 0; it < 21; it++) { /* 64 rows x 41 pieces: 32 latent, the scales, 8 rope */
                const int idx = it * 128 + tid, rr = idx / 41, kk = idx - rr * 41;
                if (idx >= 64 * 41) break;
                const uint8_t *src = sm->rows[0][rr];
                if (p.ra && kk == 32) continue; /* rope-aware rows hold no scales */
                const int so = kk < 32 ? kk * 16 : p.rope_off + (kk - 33) * 16;
                const uint32_t d = kk < 32 ? dst + HD_F8_RAW + (kk >> 2) * HD_F8_SLOT + rr * 64 + (kk & 3) * 16
                                           : (kk == 32 ? dst + rr * 16
                                                       : dst + 8 * HD_CHUNK + rr * 128 + ((((kk - 33) ^ (rr & 7))) << 4));
                hd_cp16(d, src ? (const void *)(src + so) : (const void *)p.kv, src ? 16 : 0);
            }
            cp_async_commit();
            CP_ASYNC_WAIT(0);
            HD_F8_BAR(); /* everyone's pieces landed */
        }
        HD_T(2, 2, n);
        /* the scales of rows r, r+32 (landed with the tile at the stage's start); garbage where no key */
        float4 sa, sb;
        if (p.ra) { /* one scale per key: its sigma */
            const float xa = oa ? hd_ra_sigma(p, J, ka) : 0.f, xb = ob ? hd_ra_sigma(p, J, kb) : 0.f;
            sa = make_float4(xa, xa, xa, xa);
            sb = make_float4(xb, xb, xb, xb);
        } else {
            sa = *(const float4 *)(g + r * 16);
            sb = *(const float4 *)(g + (r + 32) * 16);
        }
        if (exact && q == 0) { /* scales of the exact program: [64 keys][4] f32 per stage (0 for no key) */
            float4 *ds = (float4 *)(gbase + HD_SP + 1024 * st);
            ds[r] = oa ? sa : make_float4(0.f, 0.f, 0.f, 0.f);
            ds[r + 32] = ob ? sb : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        const int ua = oa && !exact, ub = ob && !exact; /* apply the scale (else 1) */
        const uint32_t ca0 = hd_f8_mul(ua ? sa.x : 1.f), ca1 = hd_f8_mul(ua ? sa.y : 1.f);
        const uint32_t ca2 = hd_f8_mul(ua ? sa.z : 1.f), ca3 = hd_f8_mul(ua ? sa.w : 1.f);
        const uint32_t cb0 = hd_f8_mul(ub ? sb.x : 1.f), cb1 = hd_f8_mul(ub ? sb.y : 1.f);
        const uint32_t cb2 = hd_f8_mul(ub ? sb.z : 1.f), cb3 = hd_f8_mul(ub ? sb.w : 1.f);
        { /* dequantize in place, in two phases: slots 0-3 (in registers before the scales' barrier) into
             chunks 0-3, which lie below the raw slots; then slots 4-7 into registers, a barrier (every slot
             read by everyone) and chunks 4-7 over the slots. Each phase loads all its raw words first
             (shared-memory latency grows while the consumers' wgmma stream the other stage: one load per
             unit in flight made the phases latency-bound, 2x slower); v7's four phases (a barrier each)
             measured slower (see the header, v20) */
            uint4 w[8];
#pragma unroll
            for (int j = 0; j < 4; j++) {
                w[2 * j] = hd_f8_get(g, j, r, q, oa);
                w[2 * j + 1] = hd_f8_get(g, j, r + 32, q, ob);
            }
            HD_F8_BAR(); /* everyone has read the scales: chunk 0 may be written */
            HD_T(2, 7, n);
            hd_chunks_done(full0, st, 8, HD_NCH, tid); /* chunk 8, the rope, landed with the raw tile */
#pragma unroll
            for (int j = 0; j < 4; j++) { /* chunks 0-3: below the raw slots */
                hd_f8_put(g, j, r, q, w[2 * j], j < 2 ? ca0 : ca1);
                hd_f8_put(g, j, r + 32, q, w[2 * j + 1], j < 2 ? cb0 : cb1);
            }
            hd_chunks_done(full0, st, 0, 4, tid);
            HD_T(2, 8, n);
            HD_F8_POLL();
#pragma unroll
            for (int j = 0; j < 4; j++) {
                w[2 * j] = hd_f8_get(g, 4 + j, r, q, oa);
                w[2 * j + 1] = hd_f8_get(g, 4 + j, r + 32, q, ob);
            }
            HD_F8_BAR(); /* every slot read by everyone */
            HD_T(2, 9, n);
#pragma unroll
            for (int j = 0; j < 4; j++) { /* chunks 4-7 over the slots */
                hd_f8_put(g, 4 + j, r, q, w[2 * j], j < 2 ? ca2 : ca3);
                hd_f8_put(g, 4 + j, r + 32, q, w[2 * j + 1], j < 2 ? cb2 : cb3);
            }
        }
        /* v67d: where consumer 1 may gather the refills (rw 2), the stage's next writer is not the producer, and
           every producer thread closes chunks 4-7 with its own arrival (their count is 128 in that kernel,
           hd_init_bars). __syncwarp then lane 0's arrival orders the other lanes' stores by the memory model,
           but racecheck credits only each thread's own mbarrier arrivals: 48 write-write hazards against
           consumer 1's copies without them (session 45 v67; bench/race_probe.cu modes 4, 5). v67c passed pbar
           first instead (-4%) */
        if (rw == 2) {
            hd_fence_proxy_async();
            hd_arrive_chunks(full0, st, 4, 8);
        } else {
            hd_chunks_done(full0, st, 4, 8, tid);
        }
        HD_F8_POLL();
        HD_T(2, 3, n);
        if (gt) hd_g_add(p, &gpg, &gr, 4); /* the next tile's first group */
    }
#undef HD_F8_POLL
#undef HD_F8_BAR
}

MLA_DEV void hd_producer(const hd_params &p, const hd_job &J, hd_small *sm, uint8_t *gbase, uint32_t sbase, uint32_t sm_u32,
                         int tid, const int p1, const int f8, const int gp, const int gs = 0, const int rw = 0) {
    const int pair = tid >> 6, pt = tid & 63;
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    const uint32_t qfull_bar = sm_u32 + (uint32_t)offsetof(hd_small, qfull);
    const uint32_t stage = sbase + (pair ? HD_SK1 : HD_SK0);
    const uint8_t **rows = sm->rows[pair];
    if (J.nt == 0) return;

    if (pair == 1 && !J.qpre) { /* Q rows: R = row0 + pt -> (token i, head h); rows past q_len*H are zero */
        const int R = J.row0 + pt;
        const uint8_t *src = NULL;
        if (R < J.nrows) {
            const int i = R / p.H, h = R - i * p.H;
            src = p.ra ? p.q8 + (int64_t)(J.q_start + i) * p.q_st + (int64_t)h * p.q_sh
                       : (const uint8_t *)(p.q + (int64_t)(J.q_start + i) * p.q_st + (int64_t)h * p.q_sh);
        }
        if (hd_q_by_tma(p, J)) { /* (a row block's cp.async copy took ~10K cycles to land, 73 KB at ~7 B/clock; TMA ~3K) */
            if (pt == 0) {
                HD_CT1(9, clock64());
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(qfull_bar), "r"(HD_TILE)
                             : "memory");
                hd_q_boxes(p, J, sbase, qfull_bar);
            } else {
                hd_mbar_arrive(qfull_bar);
            }
            goto q_done;
        }
        rows[pt] = src;
        HD_PAIR_BAR(pair);
        if (pt == 0) HD_CT1(9, clock64());
        if (p.ra) { /* packed rope-aware q: the raw e4m3 latent -> bf16 (exact), the rope as is */
            const uint32_t one = hd_f8_mul(1.f);
            for (int idx = pt; idx < 64 * 40; idx += 64) {
                const int rr = idx / 40, kk = idx - rr * 40;
                const uint8_t *s = rows[rr];
                const uint4 w = s ? __ldg((const uint4 *)(s + (kk < 32 ? kk * 16 : 512 + (kk - 32) * 16)))
                                  : make_uint4(0u, 0u, 0u, 0u);
                if (kk < 32) hd_f8_put(gbase + HD_SQ, kk >> 2, rr, kk & 3, w, one);
                else *(uint4 *)(gbase + HD_SQ + 8 * HD_CHUNK + rr * 128 + (((kk - 32) ^ (rr & 7)) << 4)) = w;
            }
        } else {
            hd_copy_rows(sbase + HD_SQ, rows, pt, p.kv);
            cp_async_commit();
            CP_ASYNC_WAIT(0);
        }
        hd_fence_proxy_async();
        if (pt == 0) HD_CT1(10, clock64());
        hd_mbar_arrive(qfull_bar);
        HD_PAIR_BAR(pair); /* everyone done reading rows[] */
    }
q_done:
    if (rw && !f8) { /* (the _r kernels: BF16 pages that are not multiples of 16, v62, v63) */
        hd_producer_rows(p, J, sm, sbase, sm_u32, tid, p1);
        return;
    }
    if ((!gp || f8) && p.fp8) { /* (the general-page kernels: BF16 caches, or gp 2, 3: the FP8 kernel's group tiles) */
        hd_producer_fp8(p, J, sm, gbase, sbase, sm_u32, tid, f8, gp >= 2, gp == 3, rw);
        return;
    }
    if (gp || p.tma) { /* (the general-page kernels always have p.tma: hd_run) */
        /* one issuer per sub-block (lane 0 of producer warp w): 36 box copies from one thread made
           the 16-row case issue-bound (H200 page 16: 302 TF against 459 for 64-row boxes) */
        if ((tid & 31) == 0 && (tid >> 5) < HD_KEYS / p.box) {
            if (gp && p1 && p.ptile) hd_producer_tma(p, J, sm, sbase, sm_u32, tid >> 5, p1, 1); /* (p1: hd_decode_body) */
            else if (gp) hd_producer_gtma(p, J, sm, sbase, sm_u32, tid >> 5, p1, gs ? 2 : 1);
            else if (!f8 && p.gpage) hd_producer_gtma(p, J, sm, sbase, sm_u32, tid >> 5, p1, 0); /* MLA_HD_GPAGE=3 */
            else hd_producer_tma(p, J, sm, sbase, sm_u32, tid >> 5, p1);
        }
        return;
    }

    for (int n = pair; n < J.nt; n += 2) {
        const int k = n >> 1; /* k-th use of this stage */
        const int key = (J.t_begin + n) * HD_KEYS + pt;
        const uint8_t *src = NULL;
        if (key < J.seq) {
            const int32_t page = p.bt[(int64_t)J.b * p.bt_stride + key / p.page_size];
            if (page >= 0 && page < p.num_pages)
                src = p.kv + (int64_t)page * p.page_stride + (int64_t)(key % p.page_size) * HD_ROW_BYTES;
        }
        const uint32_t valid = __ballot_sync(0xffffffffu, src != NULL);
        if (k >= 1) hd_wait_free(empty0, pair, (uint32_t)((k - 1) & 1)); /* consumers done with tile n-2 */
        rows[pt] = src;
        if ((pt & 31) == 0) sm->kv_valid[n & 3][pt >> 5] = valid;
        if (pt == 0) sm->nvalid[n & 3] = HD_KEYS; /* cp.async zero-fills the rows without a key */
        HD_PAIR_BAR(pair);
        hd_copy_rows(stage, rows, pt, p.kv);
        cp_async_commit();
        CP_ASYNC_WAIT(0);
        hd_chunks_done(full0, pair, 0, HD_NCH, pt); /* the warp's copies landed */
        HD_PAIR_BAR(pair); /* rows[] may be rewritten */
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Consumers (warpgroups 1, 2)                                                                 */

/* hide a value from the optimizer, so that descriptor arithmetic happens next to each wgmma
 * (computed ahead, 36 descriptors of 2 registers each push the consumer into spills) */
MLA_DEV void hd_opaque(uint32_t &x) { asm volatile("" : "+r"(x)); }
MLA_DEV uint64_t hd_opaque64(uint64_t x) {
    asm volatile("" : "+l"(x));
    return x;
}

/* The chunk orders of S = Q K^T (each a compile-time constant: computed at run time, the chunk
 * offsets pushed the consumer into spills inside the S loop):
 *   HD_ORD_N   0..8 (the default precision: tiles land whole);
 *   HD_ORD_A   8, 0..7 (hd_consumer_p1's consumer 0, and both consumers on FP8 tiles: the rope
 *              chunk is refilled first, then V half 0, then half 1);
 *   HD_ORD_B   4..7, 0..3, 8 (hd_consumer_p1's consumer 1 on TMA tiles: V half 1 is refilled
 *              first, half 0 and the rope chunk last). */
#define HD_ORD_N 0
#define HD_ORD_A 1
#define HD_ORD_B 2
MLA_DEV int hd_s_chunk(int j, const int ord) {
    if (ord == HD_ORD_A) return j == 0 ? 8 : j - 1;
    if (ord == HD_ORD_B) return j < 4 ? 4 + j : (j < 8 ? j - 4 : 8);
    return j;
}

/* S = Q . K^T over chunks j0..j1-1 (of the order ord) of a tile: 4 k-steps of m64n64k16 per 64-column
 * chunk (j0 = 0: the first overwrites s), each chunk after its "full" barrier (fc: chunk 0's of the
 * stage; parity par), committed as one group: the first chunks' products run while the later
 * chunks of the tile still land. nowait: the caller waited for the chunks (the FP8 kernel's consumer
 * 1: its waits between the wgmmas made ptxas serialize every wgmma of the kernel, C7520). */
MLA_DEV void hd_issue_s_part(float s[32], uint32_t sq, uint32_t sk, uint32_t fc, uint32_t par, const int ord, const int j0,
                             const int j1, const int nowait = 0) {
    hd_opaque(sq); /* recompute the descriptors per call: hoisted out of the loop they take 72 registers */
    const uint64_t dq = hd_desc(sq, 16, 1024), dk = hd_desc(sk, 16, 1024);
    hd_wgmma_fence();
#pragma unroll
    for (int ks = 4 * j0; ks < 4 * j1; ks++) {
        const int ch = hd_s_chunk(ks >> 2, ord);
        if (!nowait && (ks & 3) == 0) hd_mbar_wait(fc + 8u * (uint32_t)ch, par);
        const uint32_t off = (uint32_t)(ch * HD_CHUNK + (ks & 3) * 32);
        if (ks == 0) hd_wgmma_n64_first(s, dq + (off >> 4), dk + (off >> 4));
        else hd_wgmma_n64(s, hd_desc_add(dq, off >> 4), hd_desc_add(dk, off >> 4));
    }
    hd_wgmma_commit();
}
MLA_DEV void hd_issue_s(float s[32], uint32_t sq, uint32_t sk, uint32_t fc, uint32_t par) {
    hd_issue_s_part(s, sq, sk, fc, par, HD_ORD_N, 0, HD_NCH);
}

/* P (ph, 4 k-steps of m64k16 A fragments) -> the 64 x 64 bf16 tile at dst (128B swizzle) by stmatrix */
MLA_DEV void hd_store_p(uint32_t dst, const uint32_t ph[16], int tid) {
    const int lane = tid & 31, m = lane >> 3;
    const int row = (tid >> 5) * 16 + (lane & 7) + 8 * (m & 1), ub = m >> 1;
#pragma unroll
    for (int ks = 0; ks < 4; ks++) hd_stmatrix_x4(dst + (uint32_t)(row * 128 + (((2 * ks + ub) ^ (row & 7)) << 4)), ph + 4 * ks);
}
/* O_c += P . V[:, 256c, 256c+256) with P (64 x 64 bf16) at sp in smem (the other consumer's tile),
 * 4 k-steps of 16 keys, committed as one group */
MLA_DEV void hd_issue_pv_sp(float o[128], uint32_t sp, uint32_t sk, int c) {
    hd_opaque(sp);
    const uint64_t dl = hd_desc(sp, 16, 1024), dv = hd_desc(sk + (uint32_t)c * 4 * HD_CHUNK, HD_CHUNK, 1024);
    hd_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < HD_KEYS / 16; ks++)
        hd_wgmma_n256t(o, hd_opaque64(dl) + (uint64_t)((ks * 32) >> 4), hd_opaque64(dv) + (uint64_t)((ks * 2048) >> 4));
    hd_wgmma_commit();
}
/* the default precision's P.V of the other consumer's tile: P_lo (the P tile), then P_hi (the stage's
 * rope chunk), one group each (once the first is done the P tile may be rewritten) */
MLA_DEV void hd_issue_pv_smem(float o[128], uint32_t sp, uint32_t sk, int c) {
    hd_issue_pv_sp(o, sp, sk, c);
    hd_issue_pv_sp(o, sk + 8 * HD_CHUNK, sk, c);
}

/* the same with P from registers (the consumer's own tile): ph / pl hold 4 fragments of 4 words.
 * lw (hd_consumer_p1's base kernel): in the same group, the rounded P's row sums / 4, P . B with B
 * 16 x 8 of 0.25 (a no-swizzle descriptor of the 256 bytes at `ones` in hd_decode_body), each quad
 * thread a quarter of its rows' sums (hd_finish sums the quad); the caller adds lw to l_run once
 * the group is done (hd_add_lw) */
MLA_DEV void hd_issue_pv_regs(float o[128], const uint32_t ph[16], const uint32_t pl[16], uint32_t sk, int c,
                              const int p1, float *lw = nullptr, uint32_t ones = 0u) {
    hd_opaque(sk);
    uint64_t dones = 0;
    if (lw) {
        hd_opaque(ones);
        dones = (uint64_t)(((ones & 0x3FFFFu) >> 4) | (8u << 16)) | ((uint64_t)(256 >> 4) << 32);
    }
    const uint64_t dv = hd_desc(sk + (uint32_t)c * 4 * HD_CHUNK, HD_CHUNK, 1024);
    hd_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < HD_KEYS / 16; ks++) {
        hd_wgmma_n256t_r(o, ph + 4 * ks, hd_opaque64(dv) + (uint64_t)((ks * 2048) >> 4));
        if (!p1) hd_wgmma_n256t_r(o, pl + 4 * ks, hd_opaque64(dv) + (uint64_t)((ks * 2048) >> 4));
    }
    if (lw) {
#pragma unroll
        for (int ks = 0; ks < HD_KEYS / 16; ks++) hd_wgmma_n8_r(lw, ph + 4 * ks, dones, ks > 0);
    }
    hd_wgmma_commit();
}

MLA_DEV float hd_quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
MLA_DEV float hd_quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
/* What a consumer thread keeps between tiles. */
typedef struct hd_cstate {
    float o[128];               /* O[r0 | r0+8][256c + 8i + 2q4 + (0,1)] (wgmma accumulator layout) */
    float s[32];                /* S, then P, of the own tile (64 x 64 accumulator layout) */
    uint32_t ph[16], pl[16];    /* P_hi, P_lo as 4 A fragments (k-steps) of m64k16 */
    float m_run[2], l_run[2];   /* running max (log2 units) of rows r0, r0+8; own tiles' row sums */
    float lf_run[2];            /* the same sums in f32: MLA_PRECISION_BF16_P sums the rounded P in l_run
                                   (out's denominator) and keeps these for lse; else equal to l_run */
} hd_cstate;

MLA_DEV void hd_add_lw(hd_cstate &C, float lw[4]) {
    hd_pin(lw, 4);
    C.l_run[0] += lw[0];
    C.l_run[1] += lw[2];
}
MLA_DEV void hd_rescale(hd_cstate &C, const float al[2]) {
    if (__any_sync(0xffffffffu, al[0] != 1.f || al[1] != 1.f)) { /* skipped once the max settles */
#pragma unroll
        for (int i = 0; i < 32; i++) {
            C.o[4 * i + 0] *= al[0];
            C.o[4 * i + 1] *= al[0];
            C.o[4 * i + 2] *= al[1];
            C.o[4 * i + 3] *= al[1];
        }
    }
}

/* Rows [nv, 64) of the stage hold no key (TMA copied whatever the page held there, or nothing):
 * zero them in this consumer's V half (0 * NaN would poison P.V); then fence + own barrier. */
MLA_DEV void hd_zero_rows(uint8_t *gk, int nv, int c, int tid) {
    const int nz = (HD_KEYS - nv) * 8; /* 16-byte pieces per chunk */
    for (int u = tid; u < 4 * nz; u += 128) {
        const int k = u / nz, x = u - k * nz;
        *(uint4 *)(gk + (4 * c + k) * HD_CHUNK + nv * 128 + x * 16) = make_uint4(0, 0, 0, 0);
    }
    hd_fence_proxy_async();
    HD_BAR_R(5 + c, 128);
}

/* Softmax of the own tile t (S in C.s, done): mask, running max, alpha, P = exp2(S - m) split
 * into P_hi + P_lo fragments (bf16 P alone errs by 2^-9 relative, past SPEC 5; two terms: 2^-17),
 * row sums. Returns alpha in al. */
MLA_DEV void hd_softmax(const hd_params &p, const hd_job &J, const hd_small *sm, hd_cstate &C, int t, int st,
                        const int pos[2], int pos_min, int r0, int q4, float al[2], const int frags = 1, int addsum = 1,
                        const int p1 = 0, const int lf = 0, const int lwg = 0, const int gp = 0) {
    const int key0 = (J.t_begin + t) * HD_KEYS;
    const uint32_t vm0 = sm->kv_valid[t & 3][0], vm1 = sm->kv_valid[t & 3][1];
    /* gp 2 / 3: the FP8 kernel's group tiles without / with a causal mask (3: sub-block w's keys start at
       kgrp[w], the producer's hd_g_start of group 4 (t_begin + t) + w; 2 runs without a causal mask only) */
    int all = (vm0 & vm1) == 0xffffffffu && (!p.causal || key0 + HD_KEYS - 1 <= pos_min); /* nothing masked */
    int gvis = 0; /* gp 3: every key of the tile visible to every row (its last group's keys below its start + 16) */
    if (gp == 3 && p.causal) {
        gvis = HD_KGRP(sm)[t & 3][3] + 15 <= pos_min;
        all = (vm0 & vm1) == 0xffffffffu && gvis;
    }
    /* The bf16p kernel (p1; lf: its exact program too) with a positive scale (every real one):
     * the order of the scores is the scale's, so the max is taken over the raw scores and scaled
     * once, and the scale goes into the FFMA of P = exp2(s sc - m): 32 multiplies fewer on the
     * critical chain of every tile (H100 bf16p 4K / 8K +1.5 / +2%). The default program measured
     * ~1% slower with it and keeps scaling the scores first (sc = 1). */
    const int raw = (p1 || lf) && p.scale_log2 > 0.f;
    /* Its domain: m = fl(max s * sc) is off the exact product by up to ulp(m) / 2, so the row's largest
       P is 2^(that): exact enough while the scaled scores stay below ~2^29 (P <= 2^40), inf or 0 past
       ~2^31 (hd_finish writes NaN where no P survived: brk; a test at ~2^31 also saw finite wrong rows,
       before brk, not retested since). A vote that scaled the scores first past 2^24 fixed it
       and cost 2.5-4% (session 31); the default program scales first and has no such limit. */
    const float sc = raw ? p.scale_log2 : 1.f;
    /* gp (the bf16p general-page kernels; the FP8 kernel's group tiles), no causal mask: when only keys 56.. of the tile can be
       missing (page-aligned tiles: the rows past a page of 56..63 keys), the unmasked program with
       those four elements of the last key group set to -inf (tm: bit e for key 56 + 2 q4 + e); the
       masked program there cost 6.5% (bf16p page 61 8K) */
    const int tl = gp && !all && (!p.causal || (gp == 3 && gvis)) && vm0 == 0xffffffffu && (vm1 & (vm1 + 1u)) == 0u &&
                   vm1 >= 0x00ffffffu;
    const uint32_t tm = tl ? vm1 >> (24 + 2 * q4) : 3u;
    float mx[2] = {-INFINITY, -INFINITY};
    if (raw && (all || tl)) {
        if (gp) {
#pragma unroll
            for (int i = 28; i < 32; i++) C.s[i] = (tm >> (i & 1)) & 1u ? C.s[i] : -INFINITY;
        }
#pragma unroll
        for (int i = 0; i < 32; i++) mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], C.s[i]);
    } else if (!(p1 || lf) && (all || tl)) { /* (tl: gp, the FP8 kernel's group tiles, v32) */
#pragma unroll
        for (int i = 0; i < 32; i++) {
            C.s[i] *= p.scale_log2;
            if (gp && i >= 28) C.s[i] = (tm >> (i & 1)) & 1u ? C.s[i] : -INFINITY;
            mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], C.s[i]);
        }
    } else if (p1 || lf) {
        /* masked keys -> -inf (a select, never arithmetic on the raw value). The key test is bit
         * arithmetic with no short-circuit: written with || and &&, it compiled to a branch around
         * each element's multiply (~400 instructions, ~3.3K cycles for the last tile of a causal
         * s_q = 2 segment against ~1.3K for a full one: bench/results.md, session 21) */
        const float pre = raw ? 1.f : p.scale_log2;
        /* element i (key 8j + 2 q4 + e, j = i / 4, e = i % 2, row (i / 2) % 2) kept: bit i of ok */
        const int x0 = (p.causal ? pos[0] - key0 : HD_KEYS) - 2 * q4, x1 = (p.causal ? pos[1] - key0 : HD_KEYS) - 2 * q4;
        const uint32_t w0 = vm0 >> (2 * q4), w1 = vm1 >> (2 * q4); /* bit 8j + e: key 8j + 2 q4 + e */
        uint32_t ok = 0u;
#pragma unroll
        for (int i = 0; i < 32; i++) {
            const int j = i >> 2, e = i & 1;
            const uint32_t bit = ((j < 4 ? w0 : w1) >> (8 * (j & 3) + e)) & 1u;
            ok |= (bit & (uint32_t)(8 * j + e <= (((i >> 1) & 1) ? x1 : x0))) << i;
        }
        hd_opaque(ok);
#pragma unroll
        for (int i = 0; i < 32; i++) {
            C.s[i] = (ok >> i) & 1u ? C.s[i] * pre : -INFINITY;
            mx[(i >> 1) & 1] = fmaxf(mx[(i >> 1) & 1], C.s[i]);
        }
    } else { /* the default program (the bit-mask form above put 69 LDL/STL into the FP8 kernel's loops) */
#pragma unroll
        for (int i = 0; i < 32; i++) {
            const int kl = 8 * (i >> 2) + 2 * q4 + (i & 1), rr = (i >> 1) & 1;
            const uint32_t vm = i < 16 ? vm0 : vm1;
            const int ok = gp == 3 ? ((vm >> (kl & 31)) & 1u) &&
                                         (!p.causal || HD_KGRP(sm)[t & 3][i >> 3] + (kl & 15) <= pos[rr]) /* sub-block i / 8 */
                                   : ((vm >> (kl & 31)) & 1u) && (!p.causal || key0 + kl <= pos[rr]);
            C.s[i] = ok ? C.s[i] * p.scale_log2 : -INFINITY;
            mx[rr] = fmaxf(mx[rr], C.s[i]);
        }
    }
    /* The max used for P moves only when the row max passes it by more than HD_LAZY (log2
     * units; P <= 2^HD_LAZY then): alpha is then exactly 1 and O is not rescaled, most tiles. */
    float mu[2];
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const float mt = hd_quad_max(mx[e]) * sc; /* -inf stays -inf (sc > 0) */
        const float mn = mt > C.m_run[e] + HD_LAZY ? mt : C.m_run[e]; /* -inf + x = -inf */
        mu[e] = mn == -INFINITY ? 0.f : mn;
        al[e] = hd_ex2(C.m_run[e] - mu[e]);
        C.m_run[e] = mn;
    }
    float ps[2] = {0.f, 0.f}, pr[2] = {0.f, 0.f}; /* row sums of P in f32; of the rounded P (p1) */
    /* the bf16p base kernel (lwg: a wgmma sums the rounded P) adds the f32 sums after P's hand-over
       (hd_late_sums): 32 FADDs fewer between S and P (v34) */
    const int late = p1 && lwg;
#pragma unroll
    for (int i = 0; i < 32; i++) {
        C.s[i] = hd_ex2(fmaf(C.s[i], sc, -mu[(i >> 1) & 1])); /* masked: -inf; sc = 1: s - m */
        if (!late) ps[(i >> 1) & 1] += C.s[i];
    }
    if (!p1 && p.dbg) { /* stage test (default program only): P := identity */
#pragma unroll
        for (int i = 0; i < 32; i++) C.s[i] = r0 + 8 * ((i >> 1) & 1) == 8 * (i >> 2) + 2 * q4 + (i & 1) ? 1.f : 0.f;
    }
    /* fragment word f of k-step ks = i/2: {row r0 keys 16ks+2q4.., row r0+8, row r0 keys +8, row r0+8 +8} */
    if (frags) {
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int h2 = 0; h2 < 2; h2++) {
                const float a = C.s[4 * i + 2 * h2], b = C.s[4 * i + 2 * h2 + 1];
                const uint32_t hi = pack_bf16x2(a, b);
                const int f = 4 * (i >> 1) + 2 * (i & 1) + h2;
                C.ph[f] = hi;
                /* one bf16 term: the row sums add the rounded values, so that numerator and
                   denominator agree (the error then scales with v - out, not with v) */
                if (p1 && !lwg) pr[h2] += __uint_as_float(hi << 16) + __uint_as_float(hi & 0xffff0000u);
                if (!p1) C.pl[f] = pack_bf16x2(a - __uint_as_float(hi << 16), b - __uint_as_float(hi & 0xffff0000u));
            }
    }
#pragma unroll
    for (int e = 0; e < 2; e++) {
        C.l_run[e] = C.l_run[e] * al[e] + (addsum && !lwg ? (p1 && frags ? pr[e] : ps[e]) : 0.f);
        /* lwg: the rounded P's sums come from hd_issue_pv_regs (hd_add_lw; 64 instructions fewer here) */
        if (lf) C.lf_run[e] = C.lf_run[e] * al[e] + (addsum ? ps[e] : 0.f); /* p1 kernels, exact program too */
    }
}

/* The bf16p base kernel's f32 row sums of its own tile's P (for lse; out's denominator sums the
 * rounded P by a wgmma, hd_issue_pv_regs), added once the consumer has published P and issued its
 * P.V: under that wgmma instead of on the chain from S to the P hand-over, which each instruction
 * there lengthens (C.s holds P until the next S). Same sums, one rounding more (lf * al, then + ps). */
MLA_DEV void hd_late_sums(hd_cstate &C, const int ep) {
    if (ep) return; /* the _ep kernel sums in its softmax (after its P.V they cost it 1.5%) */
    float ps[2] = {0.f, 0.f};
#pragma unroll
    for (int i = 0; i < 32; i++) ps[(i >> 1) & 1] += C.s[i];
    C.lf_run[0] += ps[0];
    C.lf_run[1] += ps[1];
}

/* P_hi -> the stage's rope chunk, P_lo -> the P tile (hd_store_p), m -> xm[st]; fence; signal the
 * other consumer. The P tile's last reader must be done. */
MLA_DEV void hd_publish(hd_small *sm, uint32_t sp, uint32_t sk, const hd_cstate &C, int st, int r0, int q4, int tid,
                        uint32_t pready) {
    hd_store_p(sk + 8 * HD_CHUNK, C.ph, tid);
    hd_store_p(sp, C.pl, tid);
    if (q4 == 0) {
        sm->xm[st][r0] = C.m_run[0];
        sm->xm[st][r0 + 8] = C.m_run[1];
    }
    hd_fence_proxy_async(); /* generic stores before the other consumer's wgmma reads */
    hd_mbar_arrive(pready);
}

/* The other consumer's tile t (stage st): wait for its P and m; alpha from m (the owner's value,
 * bit for bit: same inputs, same instruction); row sums rescaled. The loads of this consumer's V
 * half of the stage completed long ago: waiting for them orders the TMA writes here too. */
MLA_DEV void hd_take(hd_small *sm, hd_cstate &C, int t, int st, int r0, uint32_t pready, uint32_t full0, int c,
                     float al[2]) {
    hd_mbar_wait(pready, (uint32_t)((t >> 1) & 1));
    hd_wait_chunks(full0, st, 4 * c, 4 * c + 4, (uint32_t)((t >> 1) & 1));
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const float mn = sm->xm[st][r0 + 8 * e];
        al[e] = hd_ex2(C.m_run[e] - (mn == -INFINITY ? 0.f : mn));
        C.m_run[e] = mn;
        C.l_run[e] *= al[e];
    }
}

/* a stage part read only by this consumer's wgmma (async proxy) is free: arrive on its "empty"
 * barrier, no proxy fence (the TMA refill is async proxy too; generic writes to a stage, the P
 * stores and hd_zero_rows, fence themselves). A fence here cost ~1% (H100 bf16p 8K 595 -> 600 TF
 * without it) */
MLA_DEV void hd_pay(uint32_t empty) { hd_mbar_arrive(empty); }
/* default precision: consumer c is done with its P.V of the tile in stage st: its V half; the
 * other consumer's tile: the rope chunk too (it held P_hi) */
MLA_DEV void hd_pay_pv(uint32_t empty0, int st, int c) {
    hd_fence_proxy_async();
    hd_mbar_arrive(hd_emptyp(empty0, st, c));
    if (c != st) hd_mbar_arrive(hd_emptyp(empty0, st, 2));
}
/* default precision: consumer c takes the other's tile t in stage st (its P, alpha, the V chunks of
 * half c), zeroes its keyless rows in half c, rescales O and issues the P.V from shared memory:
 * [PV_t P tile, PV_t rest] */
MLA_DEV void hd_take_pv(hd_small *sm, hd_cstate &C, int t, int st, int r0, uint32_t pready, uint32_t full0, uint32_t sp,
                        uint32_t sk, uint8_t *gk, int c, int tid, float al[2]) {
    hd_take(sm, C, t, st, r0, pready, full0, c, al);
    HD_T(c, 15, t);
    const int nv = sm->nvalid[t & 3];
    if (nv < HD_KEYS) hd_zero_rows(gk, nv, c, tid);
    hd_rescale(C, al);
    hd_pin(C.o, 128);
    hd_issue_pv_smem(C.o, sp, sk, c);
}
/* default precision, nothing in flight: consumer c's P.V of its own tile (stage st = c, P in
 * registers) into its V half, then the half paid at once (its reload is on the critical path) */
MLA_DEV void hd_pv_own(hd_cstate &C, const float al[2], uint32_t sk, uint32_t empty0, int c) {
    hd_rescale(C, al);
    hd_pin(C.o, 128);
    hd_issue_pv_regs(C.o, C.ph, C.pl, sk, c, 0); /* [PV] */
    HD_WGMMA_WAIT(0);                          /* [] */
    hd_pin(C.o, 128);
    hd_pay_pv(empty0, c, c);
}

/* ---- the exact program (FP8 tiles whose scales are not all powers of two) ---------------------
 * The stage holds raw values bf16(e4m3) (exact) and the scales sit at the P tile + 1024 st as
 * [64 keys][4] f32. Both consumers take every tile (no P exchange): S = Q_rope K_rope^T +
 * sum_i s_i(key) (Q_i K_i^T) over the four 128-column latent tiles i (one wgmma group each, scaled
 * in f32), the same softmax in both (bit-identical S, m and alpha; only consumer 0 adds row sums),
 * then O_c += (P s_i)_hi V_i + (P s_i)_lo V_i for its two column tiles i = 2c, 2c+1 (m64n128). */

/* n k-steps of S from ks0 (first one overwrites d) */
MLA_DEV void hd_s_steps(float d[32], uint64_t dq, uint64_t dk, const int ks0, const int n) {
#pragma unroll
    for (int ks = ks0; ks < ks0 + n; ks++) {
        const uint32_t off = (uint32_t)((ks >> 2) * HD_CHUNK + (ks & 3) * 32);
        if (ks == ks0) hd_wgmma_n64_first(d, hd_opaque64(dq) + (off >> 4), hd_opaque64(dk) + (off >> 4));
        else hd_wgmma_n64(d, hd_opaque64(dq) + (off >> 4), hd_opaque64(dk) + (off >> 4));
    }
}

/* scale of key j (0..63) for latent tile i */
#define HD_XSC(scl, j, i) (scl)[(j) * 4 + (i)]

MLA_DEV void hd_exact_s(hd_cstate &C, uint32_t sq, uint32_t sk, const float *scl, int q4, int ra, const float qs[2]) {
    float a[32];
    hd_opaque(sq);
    const uint64_t dq = hd_desc(sq, 16, 1024), dk = hd_desc(sk, 16, 1024);
    hd_wgmma_fence();
    if (ra) { /* rope-aware: S = q_sigma sigma_j (raw q . raw k over all 576 columns) */
        hd_s_steps(C.s, dq, dk, 0, 36);
        hd_wgmma_commit();
        HD_WGMMA_WAIT(0);
        hd_pin(C.s, 32);
#pragma unroll
        for (int e = 0; e < 32; e++) C.s[e] = C.s[e] * HD_XSC(scl, 8 * (e >> 2) + 2 * q4 + (e & 1), 0) * qs[(e >> 1) & 1];
        return;
    }
    hd_s_steps(C.s, dq, dk, 32, 4); /* rope, scale 1 */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        if (i) hd_wgmma_fence();
        hd_s_steps(a, dq, dk, 8 * i, 8);
        hd_wgmma_commit();
        HD_WGMMA_WAIT(0);
        hd_pin(C.s, 32);
        hd_pin(a, 32);
#pragma unroll
        for (int e = 0; e < 32; e++) C.s[e] += a[e] * HD_XSC(scl, 8 * (e >> 2) + 2 * q4 + (e & 1), i);
    }
}

/* (P s_ti)_hi and (P s_ti)_lo of the 64 x 64 P in C.s as A fragments (ti: latent tile) */
MLA_DEV void hd_exact_frags(const float sv[32], const float *scl, int ti, int q4, uint32_t ph[16], uint32_t pl[16]) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float s0 = HD_XSC(scl, 8 * i + 2 * q4, ti), s1 = HD_XSC(scl, 8 * i + 2 * q4 + 1, ti);
#pragma unroll
        for (int h2 = 0; h2 < 2; h2++) {
            const float a = sv[4 * i + 2 * h2] * s0, b = sv[4 * i + 2 * h2 + 1] * s1;
            const uint32_t hi = pack_bf16x2(a, b);
            const int f = 4 * (i >> 1) + 2 * (i & 1) + h2;
            ph[f] = hi;
            pl[f] = pack_bf16x2(a - __uint_as_float(hi << 16), b - __uint_as_float(hi & 0xffff0000u));
        }
    }
}

/* O_c += P V with the keys' scales: columns 0..127 of O_c (latent tile 2c) accumulate straight in
 * o[0..63] (m64n128); columns 128..255 (tile 2c+1) go through a 64-column temporary added after
 * each group (an m64n128 or m64n64 accumulator block at o[64..] makes ptxas serialize every wgmma
 * of the kernel, C7511) */
MLA_DEV void hd_exact_pv(hd_cstate &C, uint32_t sk, const float *scl, int c, int q4) {
    hd_exact_frags(C.s, scl, 2 * c, q4, C.ph, C.pl);
    uint32_t skk = sk;
    hd_opaque(skk);
    const uint64_t dv = hd_desc(skk + (uint32_t)(4 * c) * HD_CHUNK, HD_CHUNK, 1024);
    hd_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < HD_KEYS / 16; ks++) {
        hd_wgmma_n128t_r(C.o, C.ph + 4 * ks, hd_opaque64(dv) + (uint64_t)((ks * 2048) >> 4));
        hd_wgmma_n128t_r(C.o, C.pl + 4 * ks, hd_opaque64(dv) + (uint64_t)((ks * 2048) >> 4));
    }
    hd_wgmma_commit();
    HD_WGMMA_WAIT(0); /* the fragments are rebuilt next */
    hd_pin(C.o, 128);
    hd_exact_frags(C.s, scl, 2 * c + 1, q4, C.ph, C.pl);
#pragma unroll
    for (int qq = 0; qq < 2; qq++) {
        float tmp[32];
        const uint64_t dq = hd_desc(skk + (uint32_t)(4 * c + 2 + qq) * HD_CHUNK, HD_CHUNK, 1024);
        hd_wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < HD_KEYS / 16; ks++) {
            hd_wgmma_n64t_r(tmp, C.ph + 4 * ks, hd_opaque64(dq) + (uint64_t)((ks * 2048) >> 4), ks > 0);
            hd_wgmma_n64t_r(tmp, C.pl + 4 * ks, hd_opaque64(dq) + (uint64_t)((ks * 2048) >> 4), 1);
        }
        hd_wgmma_commit();
        HD_WGMMA_WAIT(0);
        hd_pin(tmp, 32);
#pragma unroll
        for (int i = 0; i < 32; i++) C.o[64 + 32 * qq + i] += tmp[i];
    }
}

MLA_DEV void hd_consumer_exact(const hd_params &p, const hd_job &J, hd_small *sm, const uint8_t *gbase, uint32_t sbase,
                               uint32_t sm_u32, hd_cstate &C, int c, int t0, const int pos[2], int pos_min, int r0,
                               int q4, const int p1, const int gp = 0) {
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    float qs[2] = {1.f, 1.f}; /* rope-aware: q_sigma of rows r0, r0 + 8 (1 past the block's rows) */
    if (p.ra) {
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const int R = J.row0 + r0 + 8 * k;
            if (R < J.nrows) qs[k] = __ldg(p.qsig + J.q_start + R / p.H);
        }
    }
    for (int t = t0; t < J.nt; t++) {
        const int st = t & 1;
        const uint32_t sk = sbase + (st ? HD_SK1 : HD_SK0);
        const float *scl = (const float *)(gbase + HD_SP + 1024 * st);
        hd_wait_chunks(full0, st, 0, HD_NCH, (uint32_t)((t >> 1) & 1));
        HD_T(c, 16, t);
        hd_exact_s(C, sbase + HD_SQ, sk, scl, q4, p.ra, qs);
        if (p.dbg && c == 0) {
#pragma unroll
            for (int i = 0; i < 32; i++)
                p.dbg_out[(r0 + 8 * ((i >> 1) & 1)) * 64 + 8 * (i >> 2) + 2 * q4 + (i & 1)] = C.s[i];
        }
        float al[2];
        hd_softmax(p, J, sm, C, t, st, pos, pos_min, r0, q4, al, 0, c == 0, 0, p1, 0, gp); /* (gp 2, 3: group tiles) */
        hd_rescale(C, al);
        hd_pin(C.o, 128);
        hd_exact_pv(C, sk, scl, c, q4);
        /* both consumers read every chunk: each frees its V half, and half of each (64 + 64
           arrivals) the rope chunk */
        hd_fence_proxy_async();
        hd_mbar_arrive(hd_emptyp(empty0, st, c));
        if (r0 < 32) hd_mbar_arrive(hd_emptyp(empty0, st, 2)); /* warps 0, 1 */
        HD_T(c, 14, t);
    }
}

MLA_DEV int hd_mode(const hd_small *sm, int st) { return *(const volatile int32_t *)&sm->mode[st]; }

/* A consumer thread's rows r0, r0 + 8 of the block: valid (rv), token (tt), head (hh), bottom-right
 * causal position (pos); returns the position every row of the block sees (keys <= it: visible) */
MLA_DEV int hd_rows(const hd_params &p, const hd_job &J, int r0, int pos[2], int tt[2], int hh[2], int rv[2]) {
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const int R = J.row0 + r0 + 8 * e;
        rv[e] = R < J.nrows;
        const int i = rv[e] ? R / p.H : 0;
        hh[e] = rv[e] ? R - i * p.H : 0;
        tt[e] = J.q_start + i;
        pos[e] = J.seq - J.q_len + i;
    }
    return J.seq - J.q_len + J.row0 / p.H;
}
MLA_DEV void hd_cstate_init(hd_cstate &C) {
#pragma unroll
    for (int i = 0; i < 128; i++) C.o[i] = 0.f;
#pragma unroll
    for (int i = 0; i < 32; i++) C.s[i] = 0.f;
    C.m_run[0] = C.m_run[1] = -INFINITY;
    C.l_run[0] = C.l_run[1] = 0.f;
    C.lf_run[0] = C.lf_run[1] = 0.f;
}
/* stage test: raw S out (keys past seq_len: whatever the rows held) */
MLA_DEV void hd_dbg_s(const hd_params &p, const hd_cstate &C, int r0, int q4) {
#pragma unroll
    for (int i = 0; i < 32; i++) p.dbg_out[(r0 + 8 * ((i >> 1) & 1)) * 64 + 8 * (i >> 2) + 2 * q4 + (i & 1)] = C.s[i];
}

/* The CTA's result: out = O / l (times the sink factor) in bf16 and lse, or (split) the f32
 * partials O / l and lse2 = m + log2 l; the row sums of both consumers added through xm (and, p1,
 * the f32 sums for lse through the P tile). dbg: O to dbg_out. */
/* A full row block's out (the whole block, written here) goes through shared memory: the
 * consumers put it in stage 0 as 8 swizzled 64-column bf16 chunks (free by then: both are past
 * their last wgmma and every tile was consumed); after the segment's __syncthreads, producer
 * thread 0 stores the chunks by TMA (hd_store_out) and waits until they are read (the next
 * segment's tiles land there). Per-thread 4-byte global stores took ~7K cycles of the epilogue;
 * the TMA stores are issued from the producer because taking the tensor map's address in the
 * consumers' code made ptxas spill inside their loops (ptxas -v); a named barrier between the
 * consumers and producer warp 0 instead of the __syncthreads worked but racecheck does not credit
 * it (reported the job hand-over of the next segment). */
MLA_DEV int hd_out_smem(const hd_params &p, const hd_job &J) {
    return J.part == -1 && p.o_tma && J.row0 + HD_ROWS <= J.nrows;
}
MLA_DEV void hd_store_out(const hd_params &p, const hd_job &J, uint32_t sbase, int wait) {
    const int i0 = J.row0 / p.H, h0 = J.row0 - i0 * p.H;
    for (int g = 0; g < 8; g++) hd_tma_store_3d(&p.o_map, sbase + HD_SK0 + (uint32_t)g * HD_CHUNK, 64 * g, h0, J.q_start + i0);
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    if (wait) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); /* stage 0 read: reusable (next segment) */
}

/* Row r0 + 8 e of this thread (its 64 columns of consumer c's half: o[4 i + off], o[4 i + off + 1], i = 0..31;
 * t, h its token and head; lt, lft its two sums, m its running max) to out (through stage 0 where o_smem), or
 * as the f32 partial of a cut block or of a split. */
MLA_DEV void hd_finish_row(const hd_params &p, const hd_job &J, uint8_t *gbase, const float *o, const int off, int e, int r0,
                           int c, int q4, int t, int h, float lt, float lft, float m, int o_smem) {
    /* brk: a key was seen (m finite) yet no probability survived. Only MLA_PRECISION_BF16_P's raw
       scores can do that, past their domain (hd_softmax: scaled scores beyond ~2^29, where P at
       the row's max is 2^(ulp(m) / 2) either way); NaN then, not a row of zeros */
    const int brk = !(lt > 0.f) && m > -INFINITY;
    const float inv_l = lt > 0.f ? 1.f / lt : (brk ? NAN : 0.f);
    const int cbase = 256 * c + 2 * q4;
    if (J.part >= 0) { /* balanced schedule, a cut row block: partial row (part, r) */
        const int64_t prow = (int64_t)J.part * HD_ROWS + r0 + 8 * e;
        float *po = p.ws_po + prow * HD_DV + cbase;
#pragma unroll
        for (int i = 0; i < 32; i++)
            *(float2 *)(po + 8 * i) = make_float2(o[4 * i + off] * inv_l, o[4 * i + off + 1] * inv_l);
        if (c == 0 && q4 == 0) p.ws_plse[prow] = lt > 0.f ? m + log2f(lft) : (brk ? NAN : -INFINITY);
    } else if (J.part == -1) {
        float f = inv_l, lse = brk ? NAN : INFINITY;
        if (lt > 0.f) {
            lse = (m + log2f(lft)) * 0.69314718055994531f;
            if (p.sink) f *= 1.f / (1.f + expf(p.sink[h] - lse));
        }
        if (o_smem) { /* column 8i + 2q4 of the half: chunk i / 8, 16-byte unit (i % 8) ^ (r % 8) */
            const int r = r0 + 8 * e;
            uint8_t *const row = gbase + HD_SK0 + 4 * c * HD_CHUNK + r * 128 + 4 * q4;
#pragma unroll
            for (int i = 0; i < 32; i++)
                *(uint32_t *)(row + (i >> 3) * HD_CHUNK + (((i & 7) ^ (r & 7)) << 4)) =
                    pack_bf16x2(o[4 * i + off] * f, o[4 * i + off + 1] * f);
        } else {
            uint16_t *orow = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh + cbase;
#pragma unroll
            for (int i = 0; i < 32; i++)
                *(uint32_t *)(orow + 8 * i) = pack_bf16x2(o[4 * i + off] * f, o[4 * i + off + 1] * f);
        }
        if (p.lse && c == 0 && q4 == 0) p.lse[(int64_t)t * p.lse_st + h] = lse;
    } else {
        const int64_t prow = ((int64_t)J.split * p.T + t) * p.H + h;
        float *po = p.ws_o + prow * HD_DV + cbase;
#pragma unroll
        for (int i = 0; i < 32; i++)
            *(float2 *)(po + 8 * i) = make_float2(o[4 * i + off] * inv_l, o[4 * i + off + 1] * inv_l);
        if (c == 0 && q4 == 0) p.ws_lse[prow] = lt > 0.f ? m + log2f(lft) : (brk ? NAN : -INFINITY);
    }
}

MLA_DEV void hd_finish(const hd_params &p, const hd_job &J, hd_small *sm, uint8_t *gbase, hd_cstate &C, int c, int r0,
                       int q4, const int rv_in[2], const int tt_in[2], const int hh_in[2], const int p1, const int roll) {
    /* roll: both rows through one rolled pass of hd_finish_row (compile-time; the bf16p base kernel and the
       default program's BF16 kernels).
       p1: this thread's rows recomputed here rather than kept live across the loops (the staging
       below took ~3.7K cycles with them, ~2.4K without: their copies were spilled); the default
       precision's kernel keeps them (recomputing there made ptxas serialize its wgmmas, C7512) */
    int pos_[2], tt[2], hh[2], rv[2];
    if (p1) hd_rows(p, J, r0, pos_, tt, hh, rv);
    else
        for (int e = 0; e < 2; e++) {
            tt[e] = tt_in[e];
            hh[e] = hh_in[e];
            rv[e] = rv_in[e];
        }
    if (c == 0) HD_CT(4, clock64());
    if (c == 1) HD_CT(15, clock64());
    if (p.dbg) {
        if (J.nt > 0) {
#pragma unroll
            for (int i = 0; i < 32; i++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    p.dbg_out[4096 + (r0 + 8 * (e >> 1)) * 512 + 256 * c + 8 * i + 2 * q4 + (e & 1)] = C.o[4 * i + e];
        }
        return;
    }
    float *const o = C.o, *const m_run = C.m_run, *const l_run = C.l_run;

    /* row sums: the quad, then both consumers (same m in both) */
    float l0 = hd_quad_sum(l_run[0]), l1 = hd_quad_sum(l_run[1]);
    HD_BAR(1, 256); /* both consumers are past their last read of xm */
    if (q4 == 0) {
        sm->xm[c][r0] = l0;
        sm->xm[c][r0 + 8] = l1;
    }
    float *const xl = (float *)(gbase + HD_SP); /* p1: the f32 sums, through the P tile (no longer read) */
    const float lf0 = p1 ? hd_quad_sum(C.lf_run[0]) : 0.f, lf1 = p1 ? hd_quad_sum(C.lf_run[1]) : 0.f;
    if (p1 && q4 == 0) {
        xl[64 * c + r0] = lf0;
        xl[64 * c + r0 + 8] = lf1;
    }
    HD_BAR(1, 256);
    if (c == 0) HD_CT(14, clock64());
    float lt[2], lft[2]; /* out's denominator; lse's sum */
    lt[0] = l0 + sm->xm[1 - c][r0];
    lt[1] = l1 + sm->xm[1 - c][r0 + 8];
    lft[0] = p1 ? lf0 + xl[64 * (1 - c) + r0] : lt[0];
    lft[1] = p1 ? lf1 + xl[64 * (1 - c) + r0 + 8] : lt[1];

    /* a full block's out goes through shared memory (hd_out_smem): bf16 into four swizzled
       64-column chunks of stage 0 per consumer; the lanes of a warp hit 32 distinct banks */
    const int o_smem = hd_out_smem(p, J);
    if (roll) {
        /* the bf16p base kernel and the default program's BF16 kernels: one pass of code for both rows
           (row r0 + 8's values moved into row r0's registers for the second), since that code runs once a
           segment and is fetched cold each time (session 38); H100, order-alternating A/B: bf16p 4K / 8K /
           varlen +0.3-0.4%, spec 4K +0.9% (session 41) */
#pragma unroll 1
        for (int e = 0; e < 2; e++) {
            if (e ? rv[1] : rv[0])
                hd_finish_row(p, J, gbase, o, 0, e, r0, c, q4, e ? tt[1] : tt[0], e ? hh[1] : hh[0], e ? lt[1] : lt[0],
                              e ? lft[1] : lft[0], e ? m_run[1] : m_run[0], o_smem);
#pragma unroll
            for (int i = 0; i < 32; i++) {
                o[4 * i] = o[4 * i + 2];
                o[4 * i + 1] = o[4 * i + 3];
            }
        }
    } else {
#pragma unroll
        for (int e = 0; e < 2; e++)
            if (rv[e]) hd_finish_row(p, J, gbase, o, 2 * e, e, r0, c, q4, tt[e], hh[e], lt[e], lft[e], m_run[e], o_smem);
    }
    if (c == 0) HD_CT(16, clock64());
    if (o_smem) {
        hd_fence_proxy_async(); /* the generic stores before the TMA unit reads them (hd_store_out, after
                                   the segment's __syncthreads) */
    }
    if (c == 0) HD_CT(5, clock64());
#ifdef HD_TRACE
    if (c == 0) HD_CT(12, hd_gtime());
#endif
}

/* The default precision's program (MLA_PRECISION_BF16_P runs hd_consumer_p1).
 * Consumer c (warpgroup 1 + c, tid = 0..127 inside it) owns O[:, 256c, 256c+256) and the tiles
 * t with t % 2 == c ("seesaw"; tile t also sits in stage t & 1). Own tile t: S_t = Q K_t^T
 * (N = 64), softmax with the running max m_{t-1} that came with tile t-1, P_t = P_hi + P_lo and
 * m_t to smem for the other consumer (P_hi into the stage's rope chunk, dead after S_t; P_lo into
 * the P tile), then O_c = O_c * alpha_t + P_t V_t from registers. Other's tile t: wait for its P
 * and m, O_c = O_c * alpha_t + P_t V_t from smem. Both consumers apply every tile in order, so
 * both halves see the same m and alphas; each keeps the row sums of its own tiles (rescaled by
 * every alpha), added at the end. Per pair of tiles (t, u = t+1) the issue order is
 *   consumer 0: S_t | softmax_t, PV_t (regs) | PV_u (smem) | S_{t+2}
 *   consumer 1: S_u | PV_t (smem) | softmax_u | PV_u (regs) | S_{u+2}
 * so both S of a pair run back to back, a softmax overlaps the other consumer's matrix work, and a
 * stage is paid ("empty") as soon as the consumer's P.V of it ends. The P tile has one writer at a
 * time: the owner of tile t writes it after its own P.V of tile t-1 (the last reader) is done.
 * The wgmma groups pending at every control-flow join are the same on all paths (ptxas would
 * otherwise serialize the wgmmas), hence the two explicit programs below. */
MLA_DEV void hd_consumer(const hd_params &p, const hd_job &J, hd_small *sm, uint8_t *gbase, uint32_t sbase,
                         uint32_t sm_u32, int c, int tid, const int f8, const int gt = 0, const int rw = 0) { /* gt: 0, or gp 2 / 3 */
    const int q4 = tid & 3, r0 = (tid >> 5) * 16 + ((tid & 31) >> 2); /* this thread's rows: r0 and r0 + 8 */
    int pos[2], tt[2], hh[2], rv[2];
    const int pos_min = hd_rows(p, J, r0, pos, tt, hh, rv);
    const uint32_t sq = sbase + HD_SQ, sp = sbase + HD_SP;
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    const uint32_t pready0 = sm_u32 + (uint32_t)offsetof(hd_small, pready);
    const uint32_t landed0 = sm_u32 + (uint32_t)offsetof(hd_small, landed);
    const uint32_t sk0 = sbase + HD_SK0, sk1 = sbase + HD_SK1;
    uint8_t *const gk0 = gbase + HD_SK0, *const gk1 = gbase + HD_SK1;

    hd_cstate C;
    hd_cstate_init(C);
    float al[2];

    if (J.nt > 0) hd_mbar_wait(sm_u32 + (uint32_t)offsetof(hd_small, qfull), (uint32_t)(J.qk & 1));
    if (c == 0) HD_CT(2, clock64());
    int xt = J.nt; /* FP8: first tile of the exact program (mode[] of its stage says so), nt = none */
    if (c == 0) {
        /* ---------------- consumer 0: even tiles ---------------- */
        if (J.nt > 0) {
          hd_mbar_wait(hd_fullc(full0, 0, 0), 0); /* mode[] comes with chunk 0 */
          if (hd_mode(sm, 0)) xt = 0;
          if (xt) {
          HD_T(0, 16, 0);
          HD_CT(3, clock64());
          hd_issue_s(C.s, sq, sk0, full0, 0); /* [S_0] */
          for (int t = 0;; t += 2) { /* pending: [S_t]; leaves only by the breaks, with [] */
            const int u = t + 1;
            HD_WGMMA_WAIT(0); /* [] */
            hd_pin(C.s, 32);
            HD_T(0, 11, t);
            if (p.dbg) hd_dbg_s(p, C, r0, q4);
            hd_softmax(p, J, sm, C, t, 0, pos, pos_min, r0, q4, al, 1, 1, 0, 0, 0, gt);
            HD_T(0, 19, t);
            const int nv = sm->nvalid[t & 3];
            if (nv < HD_KEYS) hd_zero_rows(gk0, nv, 0, tid);
            hd_publish(sm, sp, sk0, C, 0, r0, q4, tid, pready0);
            HD_T(0, 12, t);
            hd_pv_own(C, al, sk0, empty0, 0); /* [PV_t] -> [], paid */
            HD_T(0, 14, t);
            if (u >= J.nt) break;
            HD_T(0, 13, u);
            hd_take_pv(sm, C, u, 1, r0, pready0 + 8u, full0, sp, sk1, gk1, 0, tid, al); /* [PV_u P tile, PV_u rest] */
            if (t + 2 >= J.nt) {
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.o, 128);
                hd_pay_pv(empty0, 1, 0);
                break;
            }
            const uint32_t par = (uint32_t)(((t + 2) >> 1) & 1);
            if (hd_mbar_test(hd_fullc(full0, 0, HD_NCH - 1), par) &&
                hd_mbar_test(hd_fullc(full0, 0, 0), par) &&
                !hd_mode(sm, 0)) { /* tile t+2 is (most likely all) in: S_{t+2} right behind P.V */
                HD_T(0, 16, t + 2);
                hd_issue_s(C.s, sq, sk0, full0, par); /* [PV_u, PV_u, S_{t+2}] */
                HD_WGMMA_WAIT(1);         /* [S_{t+2}] */
                hd_pin(C.o, 128);
                hd_pay_pv(empty0, 1, 0);
                HD_T(0, 14, u);
            } else { /* not yet: pay stage 1 first (consumer 1 waits for its reload) */
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.o, 128);
                hd_pay_pv(empty0, 1, 0);
                HD_T(0, 14, u);
                HD_T(0, 17, t + 2);
                hd_mbar_wait(hd_fullc(full0, 0, 0), par);
                HD_T(0, 18, t + 2);
                if (hd_mode(sm, 0)) { /* FP8: the exact program from tile t+2 on */
                    xt = t + 2;
                    break;
                }
                HD_T(0, 16, t + 2);
                hd_issue_s(C.s, sq, sk0, full0, par); /* [S_{t+2}]: chunk by chunk as they land */
            }
          }
          }
        }
    } else {
        /* ---------------- consumer 1: odd tiles ---------------- */
        int t = 0;
        if (J.nt > 1) {
            hd_mbar_wait(hd_fullc(full0, 1, 0), 0);
            if (hd_mode(sm, 1)) xt = 0;
        }
        if (f8 && J.nt > 1 && xt) {
            /* FP8 kernel (v21): P.V of the other's tile first. Its P is published long before this
               consumer's next tile is dequantized, and stage t (tile t + 2's landing, then its
               dequantization) is free only once this P.V is done; S_u, its softmax and P.V after */
            /* warp w's lane 0 issues sub-block w (v29: four lanes of one warp issuing the four 16-row
               sub-blocks of page 16 serialize their copies: +1% against the producer's issuers; a warp
               each: +13%) */
            /* (rw 2, v67: every lane of warp fw gathers its row of sub-block fw, hd_f8_gather) */
            const int fw = tid >> 5, refill = p.tma && (rw == 2 || ((tid & 31) == 0 && fw < HD_KEYS / p.box));
            /* sub-block fw of tile t + 2 as (page index, row), stepped a pair at a time (v33) */
            const int span = gt ? 16 * p.f8g : p.page_size, pq = HD_KEYS / span, pr = HD_KEYS - pq * span;
            int spi = 0, srow = 0;
            if (refill) {
                const int k2 = gt ? 4 * (J.t_begin + 2) + fw : (J.t_begin + 2) * HD_KEYS + fw * p.box + (rw ? (tid & 15) : 0); /* group / key */
                spi = gt ? k2 / p.f8g : k2 / p.page_size;
                srow = gt ? 16 * (k2 - spi * p.f8g) : k2 - spi * p.page_size;
            }
            for (;; t += 2) { /* pending: [] */
                const int u = t + 1;
                int upi = spi, urow = srow; /* tile u + 2's */
                hd_pos_tile(span, pq, pr, &upi, &urow);
                /* the pages of tiles t+2, u+2 (hd_pos_refill below), looked up while P_t comes */
                const int32_t pgt = refill && t + 2 < J.nt ? hd_pos_page(p, J, spi, srow) : -1;
                const int32_t pgu = refill && u + 2 < J.nt ? hd_pos_page(p, J, upi, urow) : -1;
                HD_T(1, 13, t);
                hd_take_pv(sm, C, t, 0, r0, pready0, full0, sp, sk0, gk0, 1, tid, al); /* [PV_t P tile, PV_t rest] */
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.o, 128);
                hd_pay_pv(empty0, 0, 1);
                HD_T(1, 14, t);
                if (refill) hd_pos_refill(p, J, sbase, empty0, landed0, t + 2, fw, spi, srow, pgt, span, gt, rw);
                HD_T(1, 16, u);
                const uint32_t pu = (uint32_t)((u >> 1) & 1);
                hd_wait_chunks(full0, 1, 0, 4, pu);
                hd_wait_chunks(full0, 1, 8, HD_NCH, pu);
                hd_issue_s_part(C.s, sq, sk1, full0 + 8u * HD_NCH, pu, HD_ORD_A, 0, 5, 1); /* [S_u rope, 0-3] */
                hd_wait_chunks(full0, 1, 4, 8, pu);
                hd_issue_s_part(C.s, sq, sk1, full0 + 8u * HD_NCH, pu, HD_ORD_A, 5, HD_NCH, 1); /* [.., S_u 4-7] */
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.s, 32);
                hd_pin(C.o, 128);
                HD_T(1, 11, u);
                hd_softmax(p, J, sm, C, u, 1, pos, pos_min, r0, q4, al, 1, 1, 0, 0, 0, gt);
                HD_T(1, 19, u);
                const int nv1 = sm->nvalid[u & 3];
                if (nv1 < HD_KEYS) hd_zero_rows(gk1, nv1, 1, tid);
                hd_publish(sm, sp, sk1, C, 1, r0, q4, tid, pready0 + 8u); /* the P tile: PV_t is done */
                HD_T(1, 12, u);
                hd_pv_own(C, al, sk1, empty0, 1); /* [PV_u] -> [], paid */
                HD_T(1, 14, u);
                if (refill) hd_pos_refill(p, J, sbase, empty0, landed0, u + 2, fw, upi, urow, pgu, span, gt, rw);
                spi = upi; /* tile t + 4's: u + 2's one tile on */
                srow = urow;
                hd_pos_tile(span, pq, pr, &spi, &srow);
                if (u + 2 >= J.nt) { /* tile t + 2, if any, has no partner: the tail below */
                    t += 2;
                    break;
                }
            }
        } else if (J.nt > 1 && xt) {
            HD_T(1, 16, 1);
            hd_issue_s(C.s, sq, sk1, full0 + 8u * HD_NCH, 0); /* [S_1] */
            for (;; t += 2) { /* pending: [S_u] */
                const int u = t + 1;
                HD_T(1, 13, t);
                hd_take(sm, C, t, 0, r0, pready0, full0, 1, al);
                HD_T(1, 15, t);
                const int nv = sm->nvalid[t & 3];
                if (nv < HD_KEYS) hd_zero_rows(gk0, nv, 1, tid);
                /* S_u first: touching O with any wgmma in flight makes ptxas serialize them all
                 * (S_u ends about when P_t is ready anyway: both S of the pair run first) */
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.s, 32);
                hd_pin(C.o, 128);
                HD_T(1, 11, u);
                hd_rescale(C, al);
                hd_pin(C.o, 128);
                /* P.V of t before the softmax of u: the softmax overlaps matrix work (running both
                   softmaxes of the pair side by side, u's fed by an early m_t, ran 10% slower) */
                hd_issue_pv_smem(C.o, sp, sk0, 1); /* [PV_t P tile, PV_t rest] */
                HD_T(1, 20, u);
                hd_softmax(p, J, sm, C, u, 1, pos, pos_min, r0, q4, al, 1, 1, 0, 0, 0, gt);
                HD_T(1, 19, u);
                const int nv1 = sm->nvalid[u & 3];
                if (nv1 < HD_KEYS) hd_zero_rows(gk1, nv1, 1, tid);
                HD_WGMMA_WAIT(1); /* [PV_t rest]: the P tile is free */
                hd_publish(sm, sp, sk1, C, 1, r0, q4, tid, pready0 + 8u);
                HD_T(1, 12, u);
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.o, 128);
                hd_pay_pv(empty0, 0, 1);
                HD_T(1, 14, t);
                hd_pv_own(C, al, sk1, empty0, 1); /* [PV_u] -> [], paid */
                HD_T(1, 14, u);
                if (u + 2 >= J.nt) {
                    t += 2;
                    break;
                }
                const uint32_t par = (uint32_t)(((u + 2) >> 1) & 1);
                HD_T(1, 17, u + 2);
                hd_mbar_wait(hd_fullc(full0, 1, 0), par);
                HD_T(1, 18, u + 2);
                if (hd_mode(sm, 1)) { /* FP8: the exact program from the pair (u+1, u+2) on */
                    t += 2;
                    xt = t;
                    break;
                }
                HD_T(1, 16, u + 2);
                hd_issue_s(C.s, sq, sk1, full0 + 8u * HD_NCH, par); /* [S_{u+2}]: chunk by chunk */
            }
        }
        if (xt == J.nt && t < J.nt) { /* a last even tile without a partner: [] */
            hd_mbar_wait(hd_fullc(full0, 0, 0), (uint32_t)((t >> 1) & 1));
            if (hd_mode(sm, 0)) xt = t;
        }
        if (xt == J.nt && t < J.nt) {
            hd_take_pv(sm, C, t, 0, r0, pready0, full0, sp, sk0, gk0, 1, tid, al); /* [PV_t] */
            HD_WGMMA_WAIT(0);
            hd_pin(C.o, 128);
            hd_pay_pv(empty0, 0, 1);
        }
    }

    if (xt < J.nt) hd_consumer_exact(p, J, sm, gbase, sbase, sm_u32, C, c, xt, pos, pos_min, r0, q4, 0, gt);
    hd_finish(p, J, sm, gbase, C, c, r0, q4, rv, tt, hh, 0, !f8);
}

/* ---- MLA_PRECISION_BF16_P: the seesaw with the row max passed ahead of P -------------------
 * (FlashMLA's schedule, read from its design notes and source; no code taken.) Consumer c owns
 * O[:, 256c, 256c+256) and the tiles t with t % 2 == c, as in hd_consumer, but a pair of tiles
 * (t in stage 0, u = t+1 in stage 1) runs as (m: the running max, the same in both consumers after
 * every pair; xm[c] + mready[c] pass it on, pready[c] says P of c's tile is in shared memory):
 *   consumer 0: [S_t done] softmax_t, m0 = max(m, rowmax S_t) (lazy) -> m0 to xm[0], mready[0]
 *               -> P_t (relative to m0) to the P tile, pready[0] -> O_0 = O_0 a0 + P_t V_t[:, half
 *               0] (registers) -> wait mready[1]: O_0 *= 2^(m0 - m1) -> wait pready[1] -> O_0 +=
 *               P_u V_u[:, half 0] (P_u from the rope chunk of stage 1) -> S_{t+2} (rope + half 0
 *               queued behind that P.V, then stage 1 paid, then half 1)
 *   consumer 1: wait mready[0]: O_1 *= 2^(m - m0) -> wait pready[0] -> O_1 += P_t V_t[:, half 1]
 *               (P tile) -> under it: softmax_u, m1 = max(m0, rowmax S_u) -> m1 to xm[1],
 *               mready[1] -> P_u to the rope chunk of stage 1 (dead after S_u), pready[1] -> O_1
 *               *= 2^(m0 - m1) -> O_1 += P_u V_u[:, half 1] (registers) -> S_{u+2}
 * Consumer 1's softmax starts as soon as m0 is known (hd_consumer: after consumer 0 published P_t
 * and consumer 1 took it) and runs under matrix work, and half 1 of stage 0, which S_{t+2} takes
 * last, refills once that softmax ends. Tried (bench/results.md, session 4): P_t stored after m1
 * and scaled to it (consumer 1's P.V of t after its softmax): 589 / 619 TF (8K / 32K) against 595
 * / ~600; consumer 0 paying stage 1 before issuing S_{t+2}: -4% (8K), -10% (32K) then, -2% at
 * s_q=2 8K and +2.2% at s_q=1 in session 21, which made it the ep = 1 kernel's order (requests of
 * at most two row blocks: hd_decode_kernel_v7_bf16p_ep). Row sums: each consumer sums its own
 * tiles' rounded P (l, out's denominator; ep = 0: by an m64n8 wgmma in the P.V group,
 * hd_issue_pv_regs) and f32 P (lf, lse), scaled like its O. Stage parts paid (the TMA producer's
 * refill order): stage 0: the rope by consumer 0 after S_t, half 0 by consumer 0 after its P.V,
 * half 1 by consumer 1 after its; stage 1: half 1 by consumer 1 after its P.V, half 0 and the rope
 * (P_u) by consumer 0 after its P.V. The FP8 exact program (mode[], decided once per CTA) runs
 * hd_consumer_exact for all tiles. */

/* the running max after consumer src's tile of pair k: wait for it (mready of src), a = 2^(m - m'),
 * m = m', the row sums scaled by a (O is the caller's: hd_rescale once no wgmma is in flight) */
MLA_DEV void hd_take_m(const hd_small *sm, hd_cstate &C, int src, int r0, uint32_t mready, int k, float a[2]) {
    hd_mbar_wait(mready, (uint32_t)(k & 1));
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const float mn = sm->xm[src][r0 + 8 * e];
        a[e] = hd_ex2(C.m_run[e] - (mn == -INFINITY ? 0.f : mn));
        C.m_run[e] = mn;
        C.l_run[e] *= a[e];
        C.lf_run[e] *= a[e];
    }
}

MLA_DEV void hd_consumer_p1(const hd_params &p, const hd_job &J, hd_small *sm, uint8_t *gbase, uint32_t sbase,
                            uint32_t sm_u32, int c, int tid, const int ep, uint32_t ones, const int gp = 0) {
    const int q4 = tid & 3, r0 = (tid >> 5) * 16 + ((tid & 31) >> 2); /* this thread's rows: r0 and r0 + 8 */
    int pos[2], tt[2], hh[2], rv[2];
    const int pos_min = hd_rows(p, J, r0, pos, tt, hh, rv);
    const uint32_t sq = sbase + HD_SQ, sp = sbase + HD_SP;
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full), full1 = full0 + 8u * HD_NCH;
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    const uint32_t pready0 = sm_u32 + (uint32_t)offsetof(hd_small, pready);
    const uint32_t mready0 = sm_u32 + (uint32_t)offsetof(hd_small, mready);
    const uint32_t sk0 = sbase + HD_SK0, sk1 = sbase + HD_SK1;
    const uint32_t pu = sk1 + 8 * HD_CHUNK; /* P_u: the rope chunk of stage 1 */
    uint8_t *const gk0 = gbase + HD_SK0, *const gk1 = gbase + HD_SK1;

    hd_cstate C;
    hd_cstate_init(C);
    float al[2];

    int exact = 0;
    if (J.nt > 0) {
        hd_mbar_wait(sm_u32 + (uint32_t)offsetof(hd_small, qfull), (uint32_t)(J.qk & 1));
        if (c == 0) HD_CT(2, clock64());
        hd_mbar_wait(hd_fullc(full0, 0, 0), 0); /* mode[] comes with every chunk */
        exact = hd_mode(sm, 0);
        if (c == 0) HD_CT(3, clock64());
    }
    /* Every loop below is left only by a break with no wgmma pending, and entered and looped with
       the same groups pending (ptxas serializes all wgmmas of the kernel otherwise). */
    if (c == 0) {
        /* ---------------- consumer 0: even tiles ---------------- */
        if (!exact && J.nt > 0) {
            hd_issue_s_part(C.s, sq, sk0, full0, 0, HD_ORD_A, 0, 5);      /* [S_0 rope + half 0] */
            hd_issue_s_part(C.s, sq, sk0, full0, 0, HD_ORD_A, 5, HD_NCH); /* [.., S_0 half 1] */
            for (int k = 0;; k++) { /* pending: [S_t, S_t] */
                const int t = 2 * k, u = t + 1;
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.s, 32);
                hd_pay(hd_emptyp(empty0, 0, 2)); /* the rope chunk of stage 0 may refill */
                HD_T(0, 11, t);
                hd_softmax(p, J, sm, C, t, 0, pos, pos_min, r0, q4, al, 1, 1, 1, 1, !ep, gp);
                if (q4 == 0) {
                    sm->xm[0][r0] = C.m_run[0];
                    sm->xm[0][r0 + 8] = C.m_run[1];
                }
                hd_mbar_arrive(mready0); /* m0 */
                HD_T(0, 19, t);
                const int nv = sm->nvalid[t & 3];
                if (nv < HD_KEYS) hd_zero_rows(gk0, nv, 0, tid);
                hd_store_p(sp, C.ph, tid); /* P_t relative to m0: consumer 1's P.V of it runs under its softmax */
                hd_fence_proxy_async();
                hd_mbar_arrive(pready0);
                HD_T(0, 12, t);
                hd_rescale(C, al);
                hd_pin(C.o, 128);
                float lw[4] = {0.f, 0.f, 0.f, 0.f};
                hd_issue_pv_regs(C.o, C.ph, C.pl, sk0, 0, 1, ep ? nullptr : lw, ones); /* [PV_t] */
                hd_late_sums(C, ep);
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.o, 128);
                if (!ep) hd_add_lw(C, lw);
                hd_pay(hd_emptyp(empty0, 0, 0));
                HD_T(0, 14, t);
                if (u >= J.nt) break; /* the last tile, alone */
                /* m1 after consumer 1's tile: O_0 and the sums relative to it */
                hd_take_m(sm, C, 1, r0, mready0 + 8u, k, al);
                HD_T(0, 21, u);
                hd_rescale(C, al);
                hd_pin(C.o, 128);
                /* P_u (consumer 1's tile) from the rope chunk of stage 1; the V half 0 chunks landed
                   before S_u: waited for first (it orders their TMA writes here), off the hand-over */
                HD_T(0, 13, u);
                hd_wait_chunks(full0, 1, 0, 4, (uint32_t)(k & 1));
                const int nv1 = sm->nvalid[u & 3];
                hd_mbar_wait(pready0 + 8u, (uint32_t)(k & 1));
                HD_T(0, 15, u);
                if (nv1 < HD_KEYS) hd_zero_rows(gk1, nv1, 0, tid);
                hd_issue_pv_sp(C.o, pu, sk1, 0); /* [PV_u] */
                if (t + 2 >= J.nt) {
                    HD_WGMMA_WAIT(0); /* [] */
                    hd_pin(C.o, 128);
                    hd_pay(hd_emptyp(empty0, 1, 0));
                    hd_pay(hd_emptyp(empty0, 1, 2));
                    break;
                }
                const uint32_t par = (uint32_t)((k + 1) & 1);
                if (ep) {
                    /* stage 1 freed before S_{t+2}: its reload starts ~1.4K cycles earlier (S_{t+2}'s
                       chunk waits no longer delay it); where a tile is shared by 2 row blocks, one
                       of them from HBM, that beats keeping S_{t+2} queued behind this P.V
                       (H100: s_q=1 8K +2.5%, b=4 +1.2%; s_q=2 8K -2%: bench/results.md, session 21) */
                    HD_WGMMA_WAIT(0); /* [] */
                    hd_pin(C.o, 128);
                    hd_pay(hd_emptyp(empty0, 1, 0));
                    hd_pay(hd_emptyp(empty0, 1, 2));
                    HD_T(0, 14, u);
                    HD_T(0, 16, t + 2);
                    hd_issue_s_part(C.s, sq, sk0, full0, par, HD_ORD_A, 0, 5); /* [S_{t+2} rope + half 0] */
                } else {
                    HD_T(0, 16, t + 2);
                    hd_issue_s_part(C.s, sq, sk0, full0, par, HD_ORD_A, 0, 5); /* [PV_u, S_{t+2} rope + half 0] */
                    HD_WGMMA_WAIT(1);                                           /* [S_{t+2}] */
                    hd_pin(C.o, 128);
                    hd_pay(hd_emptyp(empty0, 1, 0));
                    hd_pay(hd_emptyp(empty0, 1, 2));
                    HD_T(0, 14, u);
                }
                hd_issue_s_part(C.s, sq, sk0, full0, par, HD_ORD_A, 5, HD_NCH); /* [S_{t+2}, S_{t+2} half 1] */
            }
        }
    } else {
        /* ---------------- consumer 1: odd tiles ---------------- */
        const int np = exact ? 0 : J.nt >> 1; /* full pairs; an odd last tile after them */
        if (np > 0) {
            if (p.fp8) hd_issue_s_part(C.s, sq, sk1, full1, 0, HD_ORD_A, 0, HD_NCH); /* [S_1] */
            else hd_issue_s_part(C.s, sq, sk1, full1, 0, HD_ORD_B, 0, HD_NCH);
            for (int k = 0;; k++) { /* pending: [S_u] */
                const int t = 2 * k, u = t + 1;
                /* m0 after consumer 0's tile: O_1 and the sums relative to it */
                hd_take_m(sm, C, 0, r0, mready0, k, al);
                HD_T(1, 21, t);
                HD_WGMMA_WAIT(0); /* []: S_u done (it ran under consumer 0's softmax) */
                hd_pin(C.s, 32);
                hd_pin(C.o, 128);
                HD_T(1, 11, u);
                hd_rescale(C, al);
                hd_pin(C.o, 128);
                /* P_t (relative to m0) from the P tile, its P.V under the softmax of u: V half 1
                   of stage 0, the last part S_{t+2} waits for, refills early */
                HD_T(1, 13, t);
                hd_wait_chunks(full0, 0, 4, 8, (uint32_t)(k & 1)); /* landed before S_t: off the hand-over */
                const int nv = sm->nvalid[t & 3];
                hd_mbar_wait(pready0, (uint32_t)(k & 1));
                HD_T(1, 15, t);
                if (nv < HD_KEYS) hd_zero_rows(gk0, nv, 1, tid);
                hd_issue_pv_sp(C.o, sp, sk0, 1); /* [PV_t] */
                hd_softmax(p, J, sm, C, u, 1, pos, pos_min, r0, q4, al, 1, 1, 1, 1, !ep, gp);
                if (q4 == 0) {
                    sm->xm[1][r0] = C.m_run[0];
                    sm->xm[1][r0 + 8] = C.m_run[1];
                }
                hd_mbar_arrive(mready0 + 8u); /* m1 */
                HD_T(1, 19, u);
                hd_store_p(pu, C.ph, tid);
                hd_fence_proxy_async();
                hd_mbar_arrive(pready0 + 8u);
                HD_T(1, 12, u);
                const int nv1 = sm->nvalid[u & 3];
                if (nv1 < HD_KEYS) hd_zero_rows(gk1, nv1, 1, tid);
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.o, 128);
                hd_pay(hd_emptyp(empty0, 0, 1));
                HD_T(1, 14, t);
                hd_rescale(C, al); /* m0 -> m1 */
                hd_pin(C.o, 128);
                float lw[4] = {0.f, 0.f, 0.f, 0.f};
                hd_issue_pv_regs(C.o, C.ph, C.pl, sk1, 1, 1, ep ? nullptr : lw, ones); /* [PV_u] */
                hd_late_sums(C, ep);
                HD_WGMMA_WAIT(0); /* [] */
                hd_pin(C.o, 128);
                if (!ep) hd_add_lw(C, lw);
                hd_pay(hd_emptyp(empty0, 1, 1));
                if (u + 2 >= J.nt) break;
                const uint32_t par = (uint32_t)((k + 1) & 1);
                HD_T(1, 16, u + 2);
                if (p.fp8) hd_issue_s_part(C.s, sq, sk1, full1, par, HD_ORD_A, 0, HD_NCH); /* [S_{u+2}] */
                else hd_issue_s_part(C.s, sq, sk1, full1, par, HD_ORD_B, 0, HD_NCH);
            }
        }
        if (!exact && (J.nt & 1)) { /* consumer 0's last tile t, alone: m0 as is, P_t V_t[:, half 1] */
            const int t = J.nt - 1, k = t >> 1;
            hd_take_m(sm, C, 0, r0, mready0, k, al);
            hd_rescale(C, al);
            hd_pin(C.o, 128);
            hd_mbar_wait(pready0, (uint32_t)(k & 1));
            hd_wait_chunks(full0, 0, 4, 8, (uint32_t)(k & 1));
            const int nv = sm->nvalid[t & 3];
            if (nv < HD_KEYS) hd_zero_rows(gk0, nv, 1, tid);
            hd_issue_pv_sp(C.o, sp, sk0, 1); /* [PV_t] */
            HD_WGMMA_WAIT(0);                /* [] */
            hd_pin(C.o, 128);
            hd_pay(hd_emptyp(empty0, 0, 1));
        }
    }
    if (exact) hd_consumer_exact(p, J, sm, gbase, sbase, sm_u32, C, c, 0, pos, pos_min, r0, q4, 1);
    hd_finish(p, J, sm, gbase, C, c, r0, q4, rv, tt, hh, 1, !ep && !gp);
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel                                                                                      */

/* Initializes the CTA's mbarriers (again = 0) or re-arms them for the next segment (again = 1): a
 * whole warp, one barrier per lane (lane k: full[st][c] for k < 18, empty[st][q] for k < 24, then
 * landed[2], pready[2], mready[2], pbar, qfull). A balanced-schedule or persistent CTA re-arms before
 * each later segment, once every barrier of the last one is quiet (all its arrivals and copies done),
 * except qfull, whose phases run on (J.qk). Re-arming completes the odd phases (see below): every
 * waiter counts its parities from 0 in each segment. */
MLA_DEV void hd_init_bars(const hd_params &p, hd_small *sm, uint32_t sm_u32, int again, const int rw = 0) {
    const int k = threadIdx.x & 31;
    uint32_t bar, count = 128;
    if (k < 2 * HD_NCH) {
        bar = sm_u32 + (uint32_t)offsetof(hd_small, full) + 8u * k;
        count = p.fp8 ? 4 : (p.tma ? HD_KEYS / p.box : 2); /* FP8 / cp.async: one per producer warp */
        const int c = k % HD_NCH;
        if (rw == 2 && c >= 4 && c < 8) count = 128; /* FP8 rows kernel: chunks 4-7 one per producer thread (v67d) */
    } else if (k < 2 * HD_NCH + 2 * HD_PARTS) {
        bar = sm_u32 + (uint32_t)offsetof(hd_small, empty) + 8u * (k - 2 * HD_NCH);
    } else if (k < 26) {
        bar = sm_u32 + (uint32_t)offsetof(hd_small, landed) + 8u * (k - 24);
        count = HD_KEYS / p.box;
    } else if (k < 28) {
        bar = sm_u32 + (uint32_t)offsetof(hd_small, pready) + 8u * (k - 26);
    } else if (k < 30) {
        bar = sm_u32 + (uint32_t)offsetof(hd_small, mready) + 8u * (k - 28);
    } else if (k == 30) {
        bar = sm_u32 + (uint32_t)offsetof(hd_small, pbar);
    } else {
        bar = sm_u32 + (uint32_t)offsetof(hd_small, qfull);
        count = 64;
    }
    if (!again) {
        hd_mbar_init(bar, count);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); /* visible to the TMA unit */
    } else if (k < 31 && hd_mbar_test(bar, 0u)) {
        /* re-arm: a quiet barrier (every phase of the segment complete, none begun) after an odd number
           of phases gets one more, all its arrivals at once, so that every barrier starts the next
           segment at an even phase, waited for with parity 0 as fresh. Re-initializing (inval, init,
           fence: one SYNCS.EXCH a barrier, serialized over the warp) took ~5.2K cycles a transition */
        hd_mbar_arrive_n(bar, count);
    }
    if (k < 2) sm->mode[k] = 0;
    __syncwarp();
}

/* The CTA's segment after J (producer warp 0, all lanes; lane 0 writes sm->job_next and
 * sm->more_next): under the balanced schedule's mode 1 the next of its list (hd_sched_next), in
 * mode 2 the next lane job (hd_lane_job), in mode 0 with persistent CTAs (p.persist) the next
 * row-block slot with rows (x + gridDim.x, ...); the uniform split has none. Runs while the
 * consumers finish the segment's last tiles. */
MLA_DEV int hd_next_job(const hd_params &p, hd_small *sm, const hd_job &J, const int gp = 0, const int cuts = 1) {
    hd_job J1;
    int has = 0;
    if (p.sched && sm->sc_mode == 1) {
        if ((threadIdx.x & 31) == 0) has = hd_sched_next(p, sm, blockIdx.x + blockIdx.y * gridDim.x, &J1, gp, cuts);
        has = __shfl_sync(0xffffffffu, has, 0);
    } else if (p.sched && sm->sc_mode == 2) {
        if ((threadIdx.x & 31) == 0) has = hd_first_lane(p, (int64_t)J.slot + gridDim.x, &J1, gp);
        has = __shfl_sync(0xffffffffu, has, 0);
    } else if (p.sched && p.persist) {
        has = hd_first_slot(p, (int64_t)J.slot + gridDim.x, &J1, gp);
    }
    if ((threadIdx.x & 31) == 0) {
        if (has) {
            J1.k = J.k + 1;
            J1.qk = J.qk + (J.nt > 0); /* the Q loads so far (a segment without tiles loads none) */
            J1.qpre = 0;
            J1.id = blockIdx.x + blockIdx.y * gridDim.x + J1.k * gridDim.x * gridDim.y;
            hd_job_ahead(p, &J1, gp == 1); /* (gp 1: the bf16p general-page kernels, where box 64 means p.ptile) */
            sm->job_next = J1;
        }
        sm->more_next = has;
    }
    return has;
}

/* Thread 0, once the consumers are past their last read of Q: the next segment's Q by TMA when it
 * is a full row block (the same 9 boxes as hd_producer, 64 arrivals at once), so that it lands
 * while the segment's epilogue runs. Q is dead once every part of the last two tiles is paid (each
 * consumer pays its own tile's parts after that tile's S, and its last S is on one of them): the
 * producer waits on those "empty" phases, no consumer code (an arrival in hd_finish made ptxas
 * spill in the consumers' loops). 1 when issued. */
MLA_DEV int hd_q_ahead(const hd_params &p, uint32_t sbase, uint32_t sm_u32, const hd_job &J, const hd_job &J1) {
    if (!p.persist || J1.nt == 0 || !hd_q_by_tma(p, J1)) return 0;
    const uint32_t qfull_bar = sm_u32 + (uint32_t)offsetof(hd_small, qfull);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);
    for (int m = max(0, J.nt - 2); m < J.nt; m++) hd_wait_free(empty0, m & 1, (uint32_t)((m >> 1) & 1));
    hd_q_issue(p, J1, sbase, qfull_bar);
    return 1;
}

/* A CTA's first segment (BF16 cache, TMA with 64-row boxes, Q by TMA; under the balanced schedule too
 * since v46, past the barrier that ends the plan): thread 0 issues its Q
 * and tiles 0 and 1 as soon as the barriers exist, before the roles split, and marks the job
 * (qpre = 2) so that the producer skips them. Issued by the producer, they went out ~6-8K cycles
 * after the job was known at b=4 h=128 32K (one wave, HD_TRACE): past the role split the producer's
 * code runs cold, ~3.7K cycles from its setmaxnreg to its first lines, 2.4K more to the tile loop.
 * First S 21.0K -> 17.0K cycles after entry, b=4 +1.2% (bench/results.md, session 19). Issuing
 * tile 1 later (Q and tile 0 alone in the first burst) reached the first S at 13.4K but measured
 * the same: the first pair then waited on tile 1. */
MLA_DEV void hd_start_early(const hd_params &p, hd_small *sm, uint32_t sbase, uint32_t sm_u32, const int pt = 0) {
    hd_job &J = sm->job;
    if (!p.tma || p.fp8 || p.box != HD_KEYS || J.nt == 0 || !hd_q_by_tma(p, J)) return;
    const uint32_t qfull_bar = sm_u32 + (uint32_t)offsetof(hd_small, qfull);
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    HD_CT1(9, clock64());
    hd_q_issue(p, J, sbase, qfull_bar);
    for (int m = 0; m < 2 && m < J.nt; m++) {
        if (m == 0) HD_CT1(11, clock64());
        const hd_tma_tile T = hd_tma_prep(p, J, sm, sbase, m, 0, pt);
        if (m == 0) HD_CT1(13, clock64());
        for (int q = 0; q < HD_PARTS; q++) hd_tma_issue(p, T, full0, q, pt);
    }
    J.qpre = 2;
}

/* A split's weight in a combined row: 2^(lse2_s - M), M the row's largest lse2; 0 for an empty split
 * (lse2 = -inf) or a row without keys (M = -inf). */
MLA_DEV float hd_split_weight(float l, float M) { return (M == -INFINITY || l == -INFINITY) ? 0.f : exp2f(l - M); }

/* A combined row's scale and lse: partial weights 2^(lse2_s - M) summing to W; f = 1 / W times the
 * sink factor; lse in natural-log units (+inf, f = 0 for a row without keys). */
MLA_DEV float hd_combine_factor(const hd_params &p, float M, float W, int h, float *lse) {
    *lse = INFINITY;
    if (!(W > 0.f)) return 0.f;
    *lse = (M + log2f(W)) * 0.69314718055994531f;
    float f = 1.f / W;
    if (p.sink) f *= 1.f / (1.f + expf(p.sink[h] - *lse));
    return f;
}

/* v55: the balanced schedule's cut row blocks merged inside the decode grid (p.cutm; the combine grid
 * merged them after the whole decode grid, ~22 us at varlen 8K, and was launched for every schedule
 * shape, its CTAs exiting at once where nothing was cut: ~4.5 us at 4K). A block's pieces run in
 * parts qa .. qa + n - 1 (J.split, hd_sched_next); each piece writes its f32 partial as before
 * (hd_finish) and producer thread 0 notes it in its CTA's slot (hd_cut_note: ws_mrec, epoch-tagged, at
 * most two: only a part's first and last requests are cut). At the CTA's end (hd_cut_merge) every
 * noted piece is counted in its block's word ws_cnt[piece 0] (the launch's epoch << 16 | pieces
 * counted: no clearing between launches), after a fence over the CTA's partial stores; the piece that
 * counts last sees every other piece's partial and its CTA merges the block. A part's first request
 * (slot 0) is its first segment: it is counted at the end of the second (hd_cut_count_early), so
 * that its block's other pieces, at the ends of earlier parts, count last and merge there; the
 * last request (slot 1) at the CTA's end. Counted right at its own segment's end, the fence (it
 * waits for the partials' 128 KB to drain) held the next segment back: varlen 8K decode 874 us;
 * counted at the CTA's end, CTAs merged both their blocks: 892 us (866 and 22 us of combine grid
 * before). No CTA waits for another, so no residency is assumed. Not in the _ep kernels (compiled
 * in, the code moved them -1.5..-2.5% where nothing is cut: s_q=1, h=64): they keep the combine grid. */
/* The partial index of piece k of lane l's cut block whose pieces start in part qa (first: the block's
 * request is part qa's first), as hd_sched_next numbers them (2q + (not the part's first request)) L + l:
 * piece 0 may be either, every later piece is its part's first request */
MLA_DEV int64_t hd_cut_piece(const hd_params &p, int qa, int first, int l, int k) {
    return (int64_t)(2 * (qa + k) + (k == 0 && !first ? 1 : 0)) * p.L + l;
}
/* this CTA's note slot (ws_mrec) */
MLA_DEV long long *hd_cut_rec(const hd_params &p, int slot) {
    return p.ws_mrec + ((int64_t)(blockIdx.x + blockIdx.y * gridDim.x) * 2 + slot) * 4;
}

MLA_DEV void hd_cut_note(const hd_params &p, const hd_job &J) {
    /* slot 0: the part's first request, 1: another (its last: only those two can be cut) */
    long long *r = hd_cut_rec(p, (J.part / p.L) & 1);
    r[1] = J.q_start;
    r[2] = (long long)J.nrows << 32 | (unsigned)J.row0;
    r[3] = J.split;
    r[0] = p.epoch;
}

/* One thread: count the piece noted in record r (this launch's); 1 when it is its block's last */
MLA_DEV int hd_cut_count(const hd_params &p, const long long *r) {
    const int cut = (int)(__ldcg(r + 3) & 0x7ffff), row0 = (int)(unsigned)(__ldcg(r + 2) & 0xffffffffll);
    const int qa = cut & 511, n = (cut >> 9) & 511, first = (cut >> 18) & 1;
    unsigned long long *w = p.ws_cnt + hd_cut_piece(p, qa, first, row0 / HD_ROWS, 0);
    const unsigned long long tag = ((unsigned long long)p.epoch & 0xffffffffffffull) << 16;
    unsigned long long v = __ldcg(w);
    for (;;) {
        const unsigned long long cur = (v & ~0xffffull) == tag ? v : tag; /* another launch's word: none yet */
        const unsigned long long was = atomicCAS(w, v, cur + 1);
        if (was == v) return (int)(cur & 0xffffull) == n - 1;
        v = was;
    }
}

/* Producer thread 0 at the end of the CTA's second segment: count the first segment's cut piece (slot
 * 0), if any; r[3] bit 20: counted, bit 21: the last, merge it at the CTA's end */
MLA_DEV void hd_cut_count_early(const hd_params &p) {
    long long *r = hd_cut_rec(p, 0);
    if (__ldcg(r) != p.epoch) return;
    __threadfence(); /* the consumers' partial stores, a segment ago */
    const int last = hd_cut_count(p, r);
    if (last) __threadfence(); /* the other pieces' partials before the merge's loads */
    r[3] = __ldcg(r + 3) | 1ll << 20 | (long long)last << 21;
}

/* The CTA's end (the 256 consumer threads, ct = 0..255; inlined after their loop: as a __noinline__
 * call, or one call with hd_fused_combine, ptxas moved spills into the general-page kernels' loops,
 * scripts/gmma_spills.sh). Thread 0 counts the CTA's pieces not counted yet (hd_cut_count); each block
 * whose last piece ran here is merged from its pieces' partials with hd_combine_rows_sched's weights
 * (M the row's largest lse2, weight 2^(lse2 - M), hd_combine_factor): the weights of (row, piece) in
 * stage 1 (free: no tile follows), then thread ct a float4 column (ct % 128) of every other row, 8 rows
 * a pass, out as bf16 rows. */
MLA_DEV void hd_cut_merge(const hd_params &p, uint8_t *gbase, int ct) {
    float *wt = (float *)(gbase + HD_SK1); /* [64 rows][n pieces] */
    int *last = (int *)(gbase + HD_SP);    /* per record: 1 = merge it here */
    if (ct == 0) {
        __threadfence(); /* the consumers' partial stores (before the barrier that ended their loop) */
        int any = 0;
        for (int m = 0; m < 2; m++) {
            const long long *r = hd_cut_rec(p, m);
            const long long w3 = __ldcg(r + 3);
            last[m] = __ldcg(r) == p.epoch && ((w3 >> 20 & 1) ? (int)(w3 >> 21 & 1) : hd_cut_count(p, r));
            any |= last[m];
        }
        if (any) __threadfence(); /* the other pieces' partials, seen through their counts, before the loads */
    }
    HD_BAR(1, 256);
    for (int m = 0; m < 2; m++) {
        const long long *r = hd_cut_rec(p, m);
        if (!last[m]) continue;
        const int q_start = (int)__ldcg(r + 1);
        const long long nr = __ldcg(r + 2);
        const int nrows = (int)(nr >> 32), row0 = (int)(unsigned)(nr & 0xffffffffll), cut = (int)(__ldcg(r + 3) & 0x7ffff);
        const int qa = cut & 511, n = (cut >> 9) & 511, first = (cut >> 18) & 1, l = row0 / HD_ROWS;
        const int nv = min(HD_ROWS, nrows - row0);
        for (int i = ct; i < nv * n; i += 256) {
            const int rr = i / n, k = i - rr * n;
            wt[i] = __ldcg(p.ws_plse + hd_cut_piece(p, qa, first, l, k) * HD_ROWS + rr);
        }
        HD_BAR(1, 256);
        if (ct < nv) { /* row ct: the weights times the row's factor, and its lse */
            float *wr = wt + ct * n, M = -INFINITY, W = 0.f;
            for (int k = 0; k < n; k++) M = fmaxf(M, wr[k]);
            for (int k = 0; k < n; k++) {
                wr[k] = hd_split_weight(wr[k], M);
                W += wr[k];
            }
            const int R = row0 + ct, t = q_start + R / p.H, h = R % p.H;
            float lse;
            const float f = hd_combine_factor(p, M, W, h, &lse);
            for (int k = 0; k < n; k++) wr[k] *= f;
            if (p.lse) p.lse[(int64_t)t * p.lse_st + h] = lse;
        }
        HD_BAR(1, 256);
        const int c4 = ct & 127;
        for (int r0 = ct >> 7; r0 < nv; r0 += 16) {
            float4 acc[8];
#pragma unroll
            for (int j = 0; j < 8; j++) acc[j] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 2 /* (1 moved spills into the general-page kernels' loops: bf16p_g 3 -> 165 LDL/STL) */
            for (int k = 0; k < n; k++) {
                const float *src = p.ws_po + hd_cut_piece(p, qa, first, l, k) * HD_ROWS * HD_DV + 4 * c4;
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const int rr = r0 + 2 * j;
                    const float wk = rr < nv ? wt[rr * n + k] : 0.f;
                    if (wk != 0.f) {
                        const float4 v = __ldcg((const float4 *)(src + (int64_t)rr * HD_DV));
                        acc[j].x += wk * v.x;
                        acc[j].y += wk * v.y;
                        acc[j].z += wk * v.z;
                        acc[j].w += wk * v.w;
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const int rr = r0 + 2 * j;
                if (rr >= nv) break;
                const int R = row0 + rr, t = q_start + R / p.H, h = R % p.H;
                uint16_t *orow = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh + 4 * c4;
                *(uint32_t *)orow = pack_bf16x2(acc[j].x, acc[j].y);
                *(uint32_t *)(orow + 2) = pack_bf16x2(acc[j].z, acc[j].w);
            }
        }
        HD_BAR(1, 256); /* wt is the next block's */
    }
}

/* v31: the split-KV combine inside the decode grid (p.fuse). A separate combine grid cost b=4 h=128
 * s_q=1 32K 10.5 us of ~96 (H100, the decode with the combine launch left out: 1574 -> 1766 GB/s),
 * b=1 16 us of 57: its launch waits for the whole decode grid, then each row waits on its lse, then
 * its partials. Here the consumers of every split CTA of a row block, once their partials are
 * written (hd_finish), set their flag ws_flag[slot][split] to the launch's epoch (no clearing between
 * launches: only this launch's epoch counts), wait until all nsplit flags hold it, and combine rows [y rp, (y + 1) rp) of the block, rp =
 * ceil(64 / nsplit), straight from L2. Waiting on other CTAs is safe only because the host launches
 * this grid cooperatively (all CTAs resident, or the launch fails and it falls back to the combine
 * grid). 256 consumer threads (ct); stage 0 is free (every tile consumed) and holds the weights.
 * Not inlined: its code kept out of the consumers' register allocation. Measured (H100, session 27):
 * the wait alone costs ~1 us at b=4, but the combine's own code, even with every global load taken
 * out, ~6 us (1736 -> 1614 GB/s): so it wins only where the combine grid is slowest (64 splits, b=1
 * +6%), hd_fuse_ok. Running the code once early to have it fetched cost more than it saved. */
__device__ __noinline__ void hd_fused_combine(const hd_params &p, const hd_job &J, uint8_t *gbase, int ct) {
    const int ns = p.nsplit, H = p.H;
    const int64_t TH = (int64_t)p.T * H;
    unsigned long long *const fl = p.ws_flag + (int64_t)J.slot * ns; /* the block's flags, one a split */
    const unsigned long long ep = (unsigned long long)p.epoch;
    __threadfence(); /* this thread's partial stores before the flag */
    HD_BAR(1, 256);
    if (ct == 0) asm volatile("st.release.gpu.global.u64 [%0], %1;\n" ::"l"(fl + J.split), "l"(ep) : "memory");
    if (ct < 32) /* a warp polls every split's flag (a shared count took ~0.5 us a CTA: its CAS serialized) */
        for (;;) {
            int ok = 1;
            for (int s = ct; s < ns; s += 32) {
                unsigned long long v;
                asm volatile("ld.acquire.gpu.global.u64 %0, [%1];\n" : "=l"(v) : "l"(fl + s) : "memory");
                ok &= v == ep;
            }
            if (__all_sync(0xffffffffu, ok)) break;
            __nanosleep(64);
        }
    HD_BAR(1, 256);
    const int nr = min(HD_ROWS, J.nrows - J.row0), rp = (nr + ns - 1) / ns;
    const int i0 = J.split * rp, nm = min(nr, i0 + rp) - i0; /* this CTA's rows of the block */
    if (nm <= 0) return;
    float *const wt = (float *)(gbase + HD_SK0);            /* [nm][ns] lse2, then weights */
    float *const fr = wt + nm * ns;                          /* [nm] 1 / W (times the sink factor) */
    float4 *const red = (float4 *)(gbase + HD_SK1);          /* [128] the second split group's sums (nm == 1) */
    for (int k = ct; k < nm * ns; k += 256) {
        const int i = k / ns, s = k - i * ns, R = J.row0 + i0 + i;
        const int64_t row = (int64_t)(J.q_start + R / H) * H + R % H;
        wt[k] = __ldcg(p.ws_lse + s * TH + row);
    }
    HD_BAR(1, 256);
    const int warp = ct >> 5, lane = ct & 31;
    for (int i = warp; i < nm; i += 8) { /* a warp a row: max, weights, their sum */
        float M = -INFINITY;
        for (int s = lane; s < ns; s += 32) M = fmaxf(M, wt[i * ns + s]);
#pragma unroll
        for (int d = 16; d >= 1; d >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, d));
        float W = 0.f;
        for (int s = lane; s < ns; s += 32) {
            const float l = wt[i * ns + s];
            const float w = hd_split_weight(l, M);
            wt[i * ns + s] = w;
            W += w;
        }
#pragma unroll
        for (int d = 16; d >= 1; d >>= 1) W += __shfl_xor_sync(0xffffffffu, W, d);
        const int R = J.row0 + i0 + i, t = J.q_start + R / H, h = R % H;
        float lse;
        const float f = hd_combine_factor(p, M, W, h, &lse);
        if (lane == 0) {
            fr[i] = f;
            if (p.lse) p.lse[(int64_t)t * p.lse_st + h] = lse;
        }
    }
    HD_BAR(1, 256);
    /* thread ct: float4 column c4 of row i; one row: two groups of threads take alternate splits */
    const int G = nm == 1 ? 2 : 1, g = nm == 1 ? ct >> 7 : 0;
    for (int k = (nm == 1 ? ct & 127 : ct); k < nm * 128; k += 256 / G) {
        const int i = k >> 7, c4 = k & 127, R = J.row0 + i0 + i;
        const int t = J.q_start + R / H, h = R % H;
        const float *src = p.ws_o + ((int64_t)t * H + h) * HD_DV + 4 * c4;
        float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
        /* 16 loads in flight a thread (a rolled loop over the splits kept one: each load waited for
           the last one's sums, b=1 ~11 us) */
        for (int s0 = g; s0 < ns; s0 += 16 * G) {
            float4 v[16];
            float w[16];
#pragma unroll
            for (int u = 0; u < 16; u++) {
                const int s = s0 + u * G;
                w[u] = 0.f;
                v[u] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (s < ns) {
                    w[u] = wt[i * ns + s];
                    v[u] = __ldcg((const float4 *)(src + (int64_t)s * TH * HD_DV));
                }
            }
#pragma unroll
            for (int u = 0; u < 16; u++)
                if (w[u] != 0.f) { /* an empty split's partial is never added (0 * NaN) */
                    acc.x += w[u] * v[u].x;
                    acc.y += w[u] * v[u].y;
                    acc.z += w[u] * v[u].z;
                    acc.w += w[u] * v[u].w;
                }
        }
        if (G == 2) {
            if (g == 1) red[c4] = acc;
            HD_BAR(1, 256);
            if (g == 1) break;
            const float4 o = red[c4];
            acc.x += o.x;
            acc.y += o.y;
            acc.z += o.z;
            acc.w += o.w;
        }
        const float f = fr[i];
        uint16_t *orow = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh + 4 * c4;
        *(uint32_t *)orow = pack_bf16x2(acc.x * f, acc.y * f);
        *(uint32_t *)(orow + 2) = pack_bf16x2(acc.z * f, acc.w * f);
    }
}

#ifdef HD_TRACE
/* per-CTA timeline: a segment starts (entry, SM, globaltimer) */
#define HD_SEG_MARK(J)                                                                            \
    do {                                                                                          \
        HD_CT(0, clock64());                                                                      \
        HD_CT(1, hd_smid());                                                                      \
        HD_CT(6, hd_gtime());                                                                     \
    } while (0)
#else
#define HD_SEG_MARK(J) do { } while (0)
#endif

/* p1 = 1: MLA_PRECISION_BF16_P (P as one bf16 term; the exact FP8 program keeps both terms).
 * One segment (row block x tile range) per pass; the uniform split has exactly one; a balanced-
 * schedule CTA runs its list (hd_sched_next), or in mode 0 with persistent CTAs the row-block slots
 * x, x + gridDim.x, ... Between passes: producer warp 0 finds the next segment as soon as the
 * tiles are issued (hd_next_job) and thread 0 loads its Q once the consumers are done with the
 * current one (hd_q_ahead; qfull keeps its phases across segments); then the segment's
 * __syncthreads (every other barrier quiet), the out stores, the other barriers re-armed. The job
 * goes through shared memory (no schedule state live in the roles). */
MLA_DEV void hd_decode_body(const hd_params &p, const int p1, const int f8, const int ep = 0, const int gp = 0,
                            const int gs = 0, const int rw = 0) {
    /* page-aligned tiles (p.ptile) exist in the bf16p general-page kernels only: compiled into the
       default program's, they moved its registers (spec -2.5..-3% at pages 61 and 100, same run);
       gp 2, 3: the FP8 kernel's group tiles (p.f8g; 3: under a causal mask) */
    const int pg = gp >= 2 ? 2 : gp && p1;
    extern __shared__ __align__(1024) uint8_t hd_smem_raw[];
    /* the combine grid (launched as a programmatic dependent) may start its launch now; it waits
       in griddepcontrol.wait for this whole grid to complete */
    if (p.nsplit > 1 || p.sched) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const uint32_t raw = smem_u32(hd_smem_raw);
    const uint32_t sbase = (raw + 1023u) & ~1023u; /* swizzle atoms need 1024-byte alignment */
    uint8_t *gbase = hd_smem_raw + (sbase - raw);
    hd_small *sm = (hd_small *)(gbase + HD_BIG);
    const uint32_t sm_u32 = sbase + HD_BIG;
    /* hd_consumer_p1's 256 bytes of bf16 0.25 (B of its row-sum wgmma, hd_issue_pv_regs) in the
       alignment slack: before the 1024-aligned base, or after hd_small (one side has >= 512 bytes) */
    const uint32_t lo16 = (raw + 15u) & ~15u;
    const uint32_t ones = sbase - lo16 >= 256u ? lo16 : ((sm_u32 + (uint32_t)sizeof(hd_small) + 15u) & ~15u);
    if (p1 && !ep && threadIdx.x >= 64 && threadIdx.x < 128) {
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(ones + 4u * (threadIdx.x - 64)), "r"(0x3E803E80u) : "memory");
        hd_fence_proxy_async(); /* read by wgmma (async proxy) after the first __syncthreads */
    }

#ifdef HD_TRACE
    {
        hd_job J;
        J.id = blockIdx.x + blockIdx.y * gridDim.x;
        HD_SEG_MARK(J);
    }
#endif
    int has = 0;
    if (p.sched) {
        has = hd_plan_cta(p, sm, gbase, pg, !ep);
        /* every thread has read the plan's scratch in the stages for the last time (mm[] is read past
           the plan's last barrier): hd_start_early may load tiles 0 and 1 over it */
        __syncthreads();
    } else if (threadIdx.x < 32) { /* warp 0 */
        hd_job J0;
        HD_CT_PRO(17);
        has = hd_find_job(p, blockIdx.x, blockIdx.y, &J0, pg);
        HD_CT_PRO(22);
        if (has && threadIdx.x == 0) sm->job = J0;
    }
    if (threadIdx.x < 32) { /* warp 0 (thread 0 has the answer) */
        has = __shfl_sync(0xffffffffu, has, 0);
        if (threadIdx.x == 0) {
            sm->sc_more = has;
            if (has) {
                sm->job.k = sm->job.qk = sm->job.qpre = 0;
                sm->job.pg[0] = sm->job.pg[1] = -2;
                sm->job.id = blockIdx.x + blockIdx.y * gridDim.x;
            }
        }
        if (has) hd_init_bars(p, sm, sm_u32, 0, rw);
        if (!p.sched) HD_CT_PRO(23);
        if (has && threadIdx.x == 0) hd_start_early(p, sm, sbase, sm_u32, pg == 1); /* (pg 1: p.ptile where box 64) */
    }
    __syncthreads();
    if (!sm->sc_more) return; /* uniform over the CTA */
#ifdef HD_TRACE
    {
        const hd_job &J = sm->job;
        HD_CT(7, ((unsigned long long)J.b << 16) | (unsigned)J.nt);
        HD_CT(8, clock64());
    }
#endif

    /* each role keeps its own loop under its setmaxnreg (code reached from both gets the 168-register
       cap: spills); the loop's exit comes from a barrier reduction, uniform for ptxas (a branch on a
       shared-memory value made it serialize every wgmma, C7520); the job is copied to registers */
    const int wg = threadIdx.x >> 7, tid = threadIdx.x & 127;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(HD_PRODUCER_REGS));
        for (;;) {
            const hd_job J = sm->job;
            if (J.k > 0) {
                HD_SEG_MARK(J);
                HD_CT(7, ((unsigned long long)J.b << 16) | (unsigned)J.nt);
                HD_CT(8, clock64());
            }
            hd_producer(p, J, sm, gbase, sbase, sm_u32, tid, p1, f8, gp, gs, rw);
            const int os = hd_out_smem(p, J);
            if (!p.sched) {
                if (os) {
                    __syncthreads(); /* out is staged */
                    if (tid == 0) hd_store_out(p, J, sbase, 1);
                }
                break;
            }
            if (tid < 32) { /* the next segment while the consumers finish this one */
                __syncwarp();
                if (hd_next_job(p, sm, J, pg, !ep) && tid == 0) {
                    if (hd_q_ahead(p, sbase, sm_u32, J, sm->job_next)) sm->job_next.qpre = 1;
                    HD_CT(20, clock64());
                }
            }
            __syncthreads(); /* the segment is over for everyone: its barriers are quiet, out is staged */
            if (!ep && p.cutm && tid == 0) { /* v55 */
                if (J.part >= 0) hd_cut_note(p, J);
                if (J.k == 1) hd_cut_count_early(p);
            }
            /* the out stores; with 64-row boxes thread 0 is tile 0's only issuer and waits for them to
               be read right before it refills stage 0 (hd_producer_tma), else here */
            if (os && tid == 0) hd_store_out(p, J, sbase, p.box != HD_KEYS || p.fp8 || !p.tma);
            HD_CT(18, clock64());
            int more = 0;
            if (tid < 32) {
                more = sm->more_next;
                if (more) {
                    if (tid == 0) sm->job = sm->job_next;
                    hd_init_bars(p, sm, sm_u32, 1, rw);
                }
            }
            HD_CT(19, clock64());
            if (!__syncthreads_or(more)) break;
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(HD_CONSUMER_REGS));
        for (;;) {
            const hd_job J = sm->job;
            if (p1) hd_consumer_p1(p, J, sm, gbase, sbase, sm_u32, wg - 1, tid, ep, ones, pg);
            else hd_consumer(p, J, sm, gbase, sbase, sm_u32, wg - 1, tid, f8, gp >= 2 ? gp : 0, rw);
            const int os = hd_out_smem(p, J);
            if (!p.sched && !os) break;
            __syncthreads();
            if (!p.sched) break;
            if (!__syncthreads_or(0)) break;
        }
        if (p.fuse) hd_fused_combine(p, sm->job, gbase, threadIdx.x - 128);
        if (!ep && p.cutm && sm->sc_mode == 1) hd_cut_merge(p, gbase, threadIdx.x - 128);
    }
}

__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 0, 0);
}
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_bf16p(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 1, 0);
}
/* the same with hd_consumer_p1's early stage-1 refill (picked in hd_run: requests of <= 2 row blocks) */
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_bf16p_ep(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 1, 0, 1);
}
/* FP8 caches, default precision: consumer 1 takes the other's tile before its own (v21) */
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_f8(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 0, 1);
}
/* the same on group tiles (p.f8g, v32): FP8 pages that are not multiples of 16, by 16-row TMA boxes; _gc
   under a causal mask (its key positions compiled into the other cost it 1-2%: 14 LDL/STL in its loops) */
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_f8_g(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 0, 1, 0, 2);
}
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_f8_gc(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 0, 1, 0, 3);
}
/* the same on FP8 pages that neither TMA nor the group tiles take (v66, v67): tiles gathered row by row, tiles 0, 1
   and the exact program's by the producer's four warps (hd_f8_issue_rows), the fast program's tiles 2.. by consumer
   1's (hd_pos_refill, hd_f8_gather). (v66's producer issuing every tile measured 10-13% slower, session 45 call 9.) */
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_f8_r(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 0, 1, 0, 0, 0, 2);
}
/* BF16 pages that are not multiples of 16 (p.gpage): the three BF16 kernels with hd_producer_gtma's
   rolled copies as their only producer (why kernels of their own: "Cost" in the comment before HD_GB) */
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_g(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 0, 0, 0, 1);
}
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_bf16p_g(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 1, 0, 0, 1);
}
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_bf16p_ep_g(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 1, 0, 1, 1);
}
/* the same three where a page's tiles take more than HD_GPREP_BOXES / 100 boxes (gs 1: hd_gtma_prep unrolled, roll 2) */
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_gs(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 0, 0, 0, 1, 1);
}
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_bf16p_gs(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 1, 0, 0, 1, 1);
}
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_bf16p_ep_gs(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 1, 0, 1, 1, 1);
}
/* BF16 pages that are not multiples of 16 (v62, v63): the three standard BF16 kernels with hd_producer_rows as their producer
   (a run-time branch in the standard producer would move their registers: sessions 24, 43) */
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_r(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 0, 0, 0, 0, 0, 1);
}
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_bf16p_r(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 1, 0, 0, 0, 0, 1);
}
__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v7_bf16p_ep_r(const __grid_constant__ hd_params p) {
    hd_decode_body(p, 1, 0, 1, 0, 0, 1);
}

/* Split-KV combine: one CTA of 128 threads per (t, h) row, thread i covers columns 4i..4i+3.
 * The split weights 2^(lse2_s - M) are computed once into shared memory; the loop over splits
 * then has no dependent global load, so 8 partial rows are in flight per thread (v1 was one warp
 * per row with the lse load inside the loop: latency-bound, ~1 us per split, 64 us at b=1).
 * lse2_s = -inf marks an empty split (weight 0; its partial is never read into the sum).
 * Launched with programmatic dependent launch: griddepcontrol.wait returns once the decode grid
 * has completed and its writes are visible, so this grid's launch overlaps the decode's tail. */
MLA_DEV void hd_combine_row_v2(const hd_params &p, int64_t row) {
    __shared__ float wsh[MLA_HD_MAX_SPLITS];
    __shared__ float red[4];
    const int tid = threadIdx.x, lane = tid & 31;
    const int64_t TH = (int64_t)p.T * p.H;
    const int t = (int)(row / p.H), h = (int)(row - (int64_t)t * p.H);
    const int ns = p.nsplit;
    float ls = tid < ns ? p.ws_lse[tid * TH + row] : -INFINITY; /* ns <= 128 */
    float M = ls;
#pragma unroll
    for (int k = 16; k >= 1; k >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, k));
    if (lane == 0) red[tid >> 5] = M;
    __syncthreads();
    M = fmaxf(fmaxf(red[0], red[1]), fmaxf(red[2], red[3]));
    const float w = hd_split_weight(ls, M);
    if (tid < ns) wsh[tid] = w;
    float W = w;
#pragma unroll
    for (int k = 16; k >= 1; k >>= 1) W += __shfl_xor_sync(0xffffffffu, W, k);
    __syncthreads(); /* red[] read by everyone, wsh[] written */
    if (lane == 0) red[tid >> 5] = W;
    __syncthreads();
    W = red[0] + red[1] + red[2] + red[3];
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    const float *src = p.ws_o + row * HD_DV + 4 * tid;
#pragma unroll 8
    for (int s = 0; s < ns; s++) {
        const float ws = wsh[s];
        const float4 v = __ldcs((const float4 *)(src + (int64_t)s * TH * HD_DV)); /* read once: stream */
        if (ws != 0.f) {
            acc.x += ws * v.x;
            acc.y += ws * v.y;
            acc.z += ws * v.z;
            acc.w += ws * v.w;
        }
    }
    float lse;
    const float f = hd_combine_factor(p, M, W, h, &lse);
    uint16_t *orow = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh + 4 * tid;
    *(uint32_t *)orow = pack_bf16x2(acc.x * f, acc.y * f);
    *(uint32_t *)(orow + 2) = pack_bf16x2(acc.z * f, acc.w * f);
    if (p.lse && tid == 0) p.lse[(int64_t)t * p.lse_st + h] = lse;
}

/* Balanced schedule combine: one warp per row, four rows a CTA, over (P' - 1) L 64 rows: part
 * boundary q = 1.., block (lane) r, row rr of the block. The request b holding s_q is merged by the
 * first boundary inside its tiles (q = q_a + 1, q_a the part of its first tile); its block r's
 * partials come from parts q_a .. q_r (the part of the block's last tile), index (2q + (q == q_a
 * and b is not q_a's first request)) L + r. Everything else exits at once. */
MLA_DEV void hd_combine_rows_sched(const hd_params &p) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * 4 + warp;
    const int64_t W = p.plan[0];
    const int P = (int)p.plan[1];
    const int q = (int)(row / (p.L * HD_ROWS)) + 1, r = (int)(row / HD_ROWS % p.L), rr = (int)(row % HD_ROWS);
    if (q >= P) return;
    const int64_t sq = hd_sched_s(q, W, P);
    const int b = hd_sched_req(p.cum, 0, p.B, sq);
    const int64_t c = p.cum[b], x0 = c + p.c0;
    if (sq <= x0) return; /* the boundary falls before b's tiles */
    const int qa = hd_sched_part(x0, W, P);
    if (q != qa + 1) return; /* merged from b's first cut */
    hd_job J;
    int ntiles;
    if (!hd_block_job(p, b, r, &J, &ntiles) || ntiles == 0) return;
    const int R = r * HD_ROWS + rr;
    if (R >= J.nrows) return;
    const int qr = hd_sched_part(x0 + ntiles - 1, W, P);
    if (qr == qa) return; /* block r written whole by part qa */
    const int qa_first = c <= hd_sched_s(qa, W, P);
    const int t = J.q_start + R / p.H, h = R % p.H;
    const int ns = qr - qa + 1;
#define HD_PIECE(k) (hd_cut_piece(p, qa, qa_first, r, (k)) * HD_ROWS + rr)
    /* piece k's weight 2^(lse2_k - M) in lane k % 32, register k / 32 (ns <= 256); every piece was
       written (parts hold >= min_units >= 1 of cost: none is empty; an empty split wrote zeros with
       lse2 = -inf, weight 0), so the loads below do not wait on the weights */
    float lsr[HD_SCHED_MAX_P / 32];
    float M = -INFINITY;
#pragma unroll
    for (int i = 0; i < HD_SCHED_MAX_P / 32; i++) {
        const int k = 32 * i + lane;
        lsr[i] = -INFINITY;
        if (k < ns) lsr[i] = p.ws_plse[HD_PIECE(k)];
        M = fmaxf(M, lsr[i]);
    }
#pragma unroll
    for (int d = 16; d >= 1; d >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, d));
    float wsum = 0.f;
#pragma unroll
    for (int i = 0; i < HD_SCHED_MAX_P / 32; i++) {
        lsr[i] = hd_split_weight(lsr[i], M);
        wsum += lsr[i];
    }
#pragma unroll
    for (int d = 16; d >= 1; d >>= 1) wsum += __shfl_xor_sync(0xffffffffu, wsum, d);
    float4 acc[4];
#pragma unroll
    for (int i = 0; i < 4; i++) acc[i] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (int k = 0; k < ns; k++) {
        float w = 0.f;
#pragma unroll
        for (int i = 0; i < HD_SCHED_MAX_P / 32; i++) {
            const float wi = __shfl_sync(0xffffffffu, lsr[i], k & 31);
            if ((k >> 5) == i) w = wi;
        }
        const float *src = p.ws_po + HD_PIECE(k) * HD_DV + 4 * lane;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float4 v = __ldcs((const float4 *)(src + 128 * i)); /* read once: stream */
            acc[i].x += w * v.x;
            acc[i].y += w * v.y;
            acc[i].z += w * v.z;
            acc[i].w += w * v.w;
        }
    }
#undef HD_PIECE
    float lse;
    const float f = hd_combine_factor(p, M, wsum, h, &lse);
    uint16_t *orow = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh + 4 * lane;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        *(uint32_t *)(orow + 128 * i) = pack_bf16x2(acc[i].x * f, acc[i].y * f);
        *(uint32_t *)(orow + 128 * i + 2) = pack_bf16x2(acc[i].z * f, acc[i].w * f);
    }
    if (p.lse && lane == 0) p.lse[(int64_t)t * p.lse_st + h] = lse;
}

/* The combine of either layout, launched as a programmatic dependent of the decode grid: it waits
 * in griddepcontrol.wait for that grid to complete (its writes, the published plan). Uniform
 * layout (plan mode 0, or no balanced schedule) with splits: one CTA per (t, h) row (v2); balanced:
 * one warp per row of the part boundaries' cut blocks. */
__global__ void __launch_bounds__(128) hd_combine_kernel_v3(const hd_params p) {
    HD_CMB_ENTRY();
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    HD_CMB(1, hd_gtime());
    if (p.sched && p.plan[2] == 1) hd_combine_rows_sched(p);
    else if (p.nsplit > 1 && (int64_t)blockIdx.x < (int64_t)p.T * p.H) hd_combine_row_v2(p, blockIdx.x);
    HD_CMB(2, hd_gtime()); /* (the balanced schedule's rows too: their exit went unrecorded) */
}

/* ------------------------------------------------------------------------------------------ */
/* Host side                                                                                   */

/* an integer from the environment, read once into *cache (-1: not read yet); def when unset */
static int hd_env_int_or(const char *name, int *cache, int def) {
    if (*cache < 0) {
        const char *e = getenv(name);
        *cache = e ? atoi(e) : def;
    }
    return *cache;
}
/* the same, 0 when unset */
static int hd_env_int(const char *name, int *cache) { return hd_env_int_or(name, cache, 0); }
/* an A/B switch that is on unless the variable is set to 0 (read once) */
static int hd_env_on(const char *name, int *cache) {
    if (*cache < 0) {
        const char *e = getenv(name);
        *cache = !(e && atoi(e) == 0);
    }
    return *cache;
}

/* Unsplit when the row blocks alone fill >= 3/4 of the SMs; else enough splits to fill them. */
static int hd_auto_splits_rows(const mla_ctx *ctx, const mla_decode_args *a, int rows) {
    const int64_t B = a->batch.num_requests > 0 ? a->batch.num_requests : 1;
    const int64_t TH = (int64_t)a->num_tokens * a->num_heads;
    if (TH <= 0) return 1;
    static int forced = -1; /* MLA_DECODE_SPLITS: tuning knob (bench sweeps), read once; workspace queries agree */
    const int fs = hd_env_int("MLA_DECODE_SPLITS", &forced);
    if (fs >= 1) return fs < MLA_HD_MAX_SPLITS ? fs : MLA_HD_MAX_SPLITS;
    const int64_t per_req = (TH + B - 1) / B;
    const int64_t est = B * ((per_req + rows - 1) / rows); /* row blocks of a uniform batch */
    const int64_t sms = ctx && ctx->sm_count > 0 ? ctx->sm_count : 132;
    if (est * 4 >= sms * 3) return 1;
    int64_t s = sms / est;
    if (s > MLA_HD_MAX_SPLITS) s = MLA_HD_MAX_SPLITS;
    return s < 2 ? 1 : (int)s;
}
static int hd_auto_splits(const mla_ctx *ctx, const mla_decode_args *a) { return hd_auto_splits_rows(ctx, a, HD_ROWS); }

static size_t hd_align(size_t x) { return (x + 255) & ~(size_t)255; }

/* cuTensorMapEncodeTiled through the runtime's driver entry point (no link against libcuda) */
typedef CUresult (*hd_encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
                                 const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
static hd_encode_fn hd_load_encode(void) {
    void *f = NULL;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return (hd_encode_fn)f;
}

/* The BF16 cache as a 3-D tensor [num_pages][page_size][576] (strides 1152 B, page_stride B), box 64
 * columns x rows x 1 page in the 128-byte swizzle. 1 when the driver accepted it. */
static int hd_encode_kv_bf16(hd_encode_fn encode, const mla_decode_args *a, int rows, CUtensorMap *map) {
    const cuuint64_t dim[3] = {(cuuint64_t)HD_DK, (cuuint64_t)a->cache.page_size, (cuuint64_t)a->cache.num_pages};
    const cuuint64_t stride[2] = {(cuuint64_t)HD_ROW_BYTES, (cuuint64_t)a->cache.page_stride};
    const cuuint32_t box[3] = {64, (cuuint32_t)rows, 1}, estride[3] = {1, 1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)a->cache.base, dim, stride, box, estride,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* 100 x the mean number of boxes a 64-key tile takes in hd_gtma_prep over a page of page_size rows (a run of L
   rows: one box when L is a power of two, else two; over the P / gcd(P, 64) tiles of a period); <= 400 from page 64
   up (at most two runs a tile). Cached per page size below 64 (racing writers store the same value). The
   general-page path needs page_size >= 16, so the < 1 guard only keeps the cache index in range. */
static int hd_gtile_boxes100(int page_size) {
    static int cache[64];
    if (page_size >= HD_KEYS) return 400;
    if (page_size < 1) return 100000;
    if (cache[page_size]) return cache[page_size];
    int g = page_size, b = HD_KEYS;
    while (b) { const int t = g % b; g = b; b = t; }
    const int n = page_size / g;
    int64_t boxes = 0;
    for (int t = 0; t < n; t++)
        for (int s = 0; s < HD_KEYS;) {
            const int r = (int)(((int64_t)HD_KEYS * t + s) % page_size), L = page_size - r < HD_KEYS - s ? page_size - r : HD_KEYS - s;
            boxes += (L & (L - 1)) ? 2 : 1;
            s += L;
        }
    cache[page_size] = (int)(100 * boxes / n);
    return cache[page_size];
}
/* rows per TMA box: the largest of 64, 32, 16 dividing page_size (page_size % 16 == 0) */
static int hd_box_rows(int page_size) { return page_size % 64 == 0 ? 64 : (page_size % 32 == 0 ? 32 : 16); }

/* The cache as a 3-D tensor [num_pages][page_size][576] bf16 (strides 1152 B, page_stride B),
 * box 64 columns x hd_box_rows rows x 1 page in the 128-byte swizzle: one box = one smem chunk
 * (or a band of it). 1 when the map was made (page_size % 16 == 0 and the driver accepts it; any
 * page size where `any`: the FP8 group tiles' 16-row boxes, rows past the page zero-filled). */
static int hd_make_kv_map(const mla_decode_args *a, int box_rows, CUtensorMap *map, CUtensorMap *map2, CUtensorMap *map3,
                          int any = 0) {
    static const hd_encode_fn encode = hd_load_encode();
    if (!encode || a->cache.num_pages < 1 || a->cache.page_size >= (1 << 20)) return 0;
    if (!any && (a->cache.page_size % 16 != 0 || a->cache.page_size % box_rows != 0)) return 0;
    const cuuint32_t rows = (cuuint32_t)box_rows;
    if (a->cache.format == MLA_KV_FP8 || a->cache.format == MLA_KV_FP8_ROPE_AWARE) {
        /* bytes [num_pages][page_size][656 or 640]: latent slots, the rope (and the FP8 scales) */
        const int ra = a->cache.format == MLA_KV_FP8_ROPE_AWARE;
        const cuuint64_t rb = ra ? (cuuint64_t)HD_RA_ROW : (cuuint64_t)HD_F8_ROW;
        const cuuint64_t dim[3] = {rb, (cuuint64_t)a->cache.page_size, (cuuint64_t)a->cache.num_pages};
        const cuuint64_t stride[2] = {rb, (cuuint64_t)a->cache.page_stride};
        const cuuint32_t box[3] = {64, rows, 1}, box2[3] = {128, rows, 1}, box3[3] = {16, rows, 1};
        const cuuint32_t estride[3] = {1, 1, 1};
        return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, (void *)a->cache.base, dim, stride, box, estride,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS &&
               encode(map2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, (void *)a->cache.base, dim, stride, box2, estride,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS &&
               (ra || encode(map3, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, (void *)a->cache.base, dim, stride, box3, estride,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS);
    }
    return hd_encode_kv_bf16(encode, a, rows, map);
}

/* The general page's maps (p.gpage): the BF16 cache as in hd_make_kv_map, box 64 columns x 2^i rows
 * for every 2^i <= min(page_size, 64) (the others zeroed: never used). 1 when every map was made. */
static int hd_make_kv_gmaps(const mla_decode_args *a, CUtensorMap *maps) {
    static const hd_encode_fn encode = hd_load_encode();
    if (!encode || a->cache.format != MLA_KV_BF16 || a->cache.page_size < 16 || a->cache.page_size >= (1 << 20) ||
        a->cache.num_pages < 1)
        return 0;
    for (int i = 0; i < 7; i++) {
        memset(&maps[i], 0, sizeof(CUtensorMap));
        if ((1 << i) <= a->cache.page_size && !hd_encode_kv_bf16(encode, a, 1 << i, &maps[i])) return 0;
    }
    return 1;
}

/* q [T][H][576] or out [T][H][512] bf16 (width columns, strides sh, st in elements) as a 3D tensor
 * map whose box is 64 consecutive rows R = i * H + h of a row block: 64 heads of one token
 * (H % 64 == 0) or all H heads of 64 / H tokens (64 % H == 0); 0 for other H or strides / bases TMA
 * cannot take (16-byte multiples): those blocks use cp.async / per-thread stores. Only blocks with
 * 64 rows use it (hd_producer, hd_out_smem). */
static int hd_make_rows_map(const void *base, int width, int64_t sh, int64_t st, int H, int64_t T, CUtensorMap *map) {
    static const hd_encode_fn encode = hd_load_encode();
    if (!encode || T < 1 || H < 1 || (H % 64 != 0 && 64 % H != 0)) return 0;
    if (((uintptr_t)base & 15) || (sh * 2) % 16 || (st * 2) % 16) return 0;
    const int bh = H % 64 == 0 ? 64 : H, bt = HD_ROWS / bh;
    const cuuint64_t dim[3] = {(cuuint64_t)width, (cuuint64_t)H, (cuuint64_t)T};
    const cuuint64_t stride[2] = {(cuuint64_t)sh * 2, (cuuint64_t)st * 2};
    const cuuint32_t box[3] = {64, (cuuint32_t)bh, (cuuint32_t)bt}, estride[3] = {1, 1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)base, dim, stride, box, estride,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/* The balanced schedule's shape: L lanes = the row blocks of a request of the batch's mean q_len
 * (rounded up), P = SMs / L parts; 0 when P < 2 (long q_len: the uniform split instead). */
static int hd_sched_shape(const mla_ctx *ctx, const mla_decode_args *a, int *L, int *P) {
    const int64_t B = a->batch.num_requests, T = a->num_tokens;
    if (B < 1 || T < 1) return 0;
    const int64_t qb = (T + B - 1) / B;
    const int64_t l = (qb * a->num_heads + HD_ROWS - 1) / HD_ROWS;
    const int sms = ctx && ctx->sm_count > 0 ? ctx->sm_count : 132;
    if (l < 1 || l * 2 > sms) return 0;
    if (B + 1 > HD_TILE / 8) return 0; /* the plan's prefix sums live in one K stage */
    *L = (int)l;
    *P = (int)(sms / l < HD_SCHED_MAX_P ? sms / l : HD_SCHED_MAX_P);
    return 1;
}
/* c0 and min_units in tile units (MLA_DECODE_SEG_COST, MLA_DECODE_MIN_UNITS: tuning knobs, read once).
 * c0 = 6: a segment's fixed cost (its transition ~15K cycles and the seesaw's fill, against ~3.3K a
 * bf16p tile; session 17's timeline); H100 varlen 8K bf16p c0 = 2 / 4 / 6 / 8: 591-595 / 600 / 600
 * / 602-603 TF, spec 2 / 6: 462 / 470 */
static int hd_sched_c0(void) {
    static int v = -1;
    const int e = hd_env_int("MLA_DECODE_SEG_COST", &v);
    return e > 0 ? e : 6;
}
static int hd_sched_min_units(void) {
    static int v = -1;
    const int e = hd_env_int("MLA_DECODE_MIN_UNITS", &v);
    return e > 0 ? e : 12;
}

/* 1 when an automatic call runs the balanced schedule (MLA_DECODE_SCHED=0 or a forced split count
 * through MLA_DECODE_SPLITS: the uniform split instead) */
/* The raw-tile kernels (decode_narrow.cu, FP8-656 caches, any page size): 16 query rows a CTA where
 * each request has at most 16 rows on average (the bytes-bound shapes: h <= 16, s_q = 1); under
 * MLA_PRECISION_BF16_P only (their V carries the scales rounded to f16: a few output elements in
 * 10^5 past SPEC 5's atol with scales that are not powers of two, within the bf16p bounds) 32 rows
 * where it has at most 32 (h = 16 with s_q = 2: MTP under tensor parallelism 8; h = 32) and the
 * 64-row seesaw kernel s1 beyond; the 64-row kernels of this file elsewhere. MLA_HD_NARROW: 0 (A/B)
 * keeps this file's 64-row kernels, 1 (default) the rule above, 2 / 3 / 4 force 16 / 32 / 64 rows
 * (s1) wherever they can run (tests; also mla_cuda_decode_hopper_force_rows). All are correct for
 * any q_len (a request of more rows takes several blocks, each reading its keys). Returns the rows a
 * CTA, 0 for this file's kernels. */
static int hd_raw_force = -1;
extern "C" void mla_cuda_decode_hopper_force_rows(int mode) { hd_raw_force = mode; }
static int hd_narrow(const mla_decode_args *a, int dbg) {
    static int env = -2;
    if (env == -2) {
        const char *e = getenv("MLA_HD_NARROW");
        env = e ? atoi(e) : 1;
    }
    const int mode = hd_raw_force >= 0 ? hd_raw_force : env;
    if (mode == 0 || dbg || a->cache.format != MLA_KV_FP8) return 0;
    if (mode == 2) return 16;
    if (mode == 3) return 32;
    if (mode == 4) return 64;
    const int64_t th = (int64_t)a->num_tokens * a->num_heads, b = a->batch.num_requests;
    if (th <= 16 * b) return 16;
    if (a->precision != MLA_PRECISION_BF16_P) return 0;
    return th <= 32 * b ? 32 : 64;
}
/* its split count: the uniform layout's rule over blocks of that many rows */
static int hd_narrow_splits(const mla_ctx *ctx, const mla_decode_args *a) { return hd_auto_splits_rows(ctx, a, hd_narrow(a, 0)); }

static int hd_use_sched(const mla_ctx *ctx, const mla_decode_args *a) {
    static int v = -1, fs = -1;
    int L, P;
    /* the balanced mode only replaces an unsplit uniform layout (see hd_plan_cta): a batch small
       enough to split runs the uniform split without the plan */
    return hd_env_on("MLA_DECODE_SCHED", &v) && hd_env_int("MLA_DECODE_SPLITS", &fs) < 1 && hd_auto_splits(ctx, a) == 1 && hd_sched_shape(ctx, a, &L, &P);
}

/* balanced schedule scratch: plan[3] | cum[B + 1] | partials [2 P L, 64, 512] f32 | lse2 [2 P L, 64] |
   the cut blocks' counts [2 P L] | the CTAs' noted pieces [P L][2][4] (v55, hd_cut_note) */
static size_t hd_sched_ws_bytes(const mla_ctx *ctx, const mla_decode_args *a) {
    int L = 1, P = 1;
    hd_sched_shape(ctx, a, &L, &P);
    const size_t n = 2 * (size_t)P * (size_t)L;
    return 256 + 256 + hd_align((size_t)(a->batch.num_requests + 1) * 8) + hd_align(n * HD_ROWS * HD_DV * 4) +
           hd_align(n * HD_ROWS * 4) + hd_align(n * 8) + hd_align(n * 4 * 8);
}

/* the uniform split's scratch: partials [nsplit][T H][512] f32, lse2 [nsplit][T H], then (hd_fused_combine)
   a flag per row-block slot and split */
static size_t hd_ws_bytes(const mla_decode_args *a, int nsplit) {
    if (nsplit <= 1 || a->num_tokens <= 0) return 0;
    const size_t rows = (size_t)a->num_tokens * (size_t)a->num_heads * (size_t)nsplit;
    const size_t slots = (size_t)a->num_tokens * (size_t)a->num_heads / HD_ROWS + (size_t)a->batch.num_requests;
    return 256 + hd_align(rows * HD_DV * sizeof(float)) + hd_align(rows * sizeof(float)) + hd_align(slots * (size_t)nsplit * 8);
}

/* The 64-row raw-tile kernel's one-chain program needs its scan (hn_scale_scan_kernel: ~32 bytes a
 * key, 10-20 us on H100 at 8K keys a request), which pays only where the kernel is long: at least
 * 3 row blocks of 64 an SM (b=128 h=128 s_q=2 8K: 432 -> 439 TF; s_q=1, 2 blocks an SM: 423 -> 420;
 * b=4: 341 -> 317, session 23). The flags follow the partials in the workspace: [B] u32. */
static int hd_redo_force = -1;
extern "C" void mla_cuda_decode_hopper_force_redo(int mode) { hd_redo_force = mode; }
static int hd_one_force = -1;
extern "C" void mla_cuda_decode_hopper_force_one(int mode) { hd_one_force = mode; }
static int hd_hs_one(const mla_ctx *ctx, const mla_decode_args *a, int narrow) {
    static int env = -1; /* MLA_HS_ONE=0 / 2 (A/B): never / always the one-chain program (with its scan) */
    const int e = hd_one_force >= 0 ? hd_one_force : hd_env_int_or("MLA_HS_ONE", &env, 1);
    if (narrow != 64 || e == 0 || a->batch.num_requests < 1) return 0;
    const int64_t sms = ctx && ctx->sm_count > 0 ? ctx->sm_count : 132;
    return e == 2 || ((int64_t)a->num_tokens * a->num_heads + 63) / 64 >= 3 * sms;
}
static size_t hd_hs_flag_bytes(const mla_ctx *ctx, const mla_decode_args *a, int narrow) {
    return hd_hs_one(ctx, a, narrow) ? 256 + hd_align((size_t)a->batch.num_requests * 4) : 0;
}

extern "C" int mla_cuda_decode_hopper_narrow(const mla_decode_args *a) { return a ? hd_narrow(a, 0) : 0; }
extern "C" int mla_cuda_decode_hopper_splits(const mla_ctx *ctx, const mla_decode_args *a) {
    return hd_auto_splits(ctx, a); /* the uniform layout's (a balanced plan may replace it) */
}

extern "C" size_t mla_cuda_decode_hopper_workspace_ex(const mla_ctx *ctx, const mla_decode_args *a, int num_splits) {
    if (!a || a->num_tokens <= 0 || a->batch.num_requests < 1) return 0;
    const size_t u = hd_ws_bytes(a, num_splits > 0 ? num_splits : hd_auto_splits(ctx, a));
    const size_t wide = u + (num_splits == 0 && hd_use_sched(ctx, a) ? hd_sched_ws_bytes(ctx, a) : 0);
    /* the raw-tile kernels run instead where hd_narrow picks them (hd_run does the same) */
    const int narrow = hd_narrow(a, 0);
    if (narrow) return hd_ws_bytes(a, num_splits > 0 ? num_splits : hd_narrow_splits(ctx, a)) + hd_hs_flag_bytes(ctx, a, narrow);
    return wide;
}

extern "C" size_t mla_cuda_decode_hopper_workspace(const mla_ctx *ctx, const mla_decode_args *a) {
    return mla_cuda_decode_hopper_workspace_ex(ctx, a, 0);
}

#define HD_WHY(...) do { if (why && why_n) snprintf(why, why_n, __VA_ARGS__); return 0; } while (0)

extern "C" int mla_cuda_decode_hopper_supported(const mla_ctx *ctx, const mla_decode_args *a, char *why, size_t why_n) {
    if (why && why_n) why[0] = 0;
    if (!ctx || !a) HD_WHY("no context or arguments");
    if (ctx->backend != MLA_BACKEND_CUDA) HD_WHY("backend %s (needs cuda)", mla_backend_name(ctx->backend));
    if (ctx->sm_major != 9 || ctx->sm_minor != 0)
        HD_WHY("device SM %d.%d (needs SM 9.0, sm_90a)", ctx->sm_major, ctx->sm_minor);
    const int ra = a->cache.format == MLA_KV_FP8_ROPE_AWARE;
    if (a->cache.format != MLA_KV_BF16 && a->cache.format != MLA_KV_FP8 && !ra)
        HD_WHY("format %s", mla_format_name(a->cache.format));
    if (ra && (!a->q_sigma || !a->cache.sigma)) HD_WHY("rope-aware without q_sigma / cache.sigma");
    if (a->num_heads < 1 || a->num_heads > MLA_MAX_HEADS) HD_WHY("num_heads %d", a->num_heads);
    if (a->cache.page_size < 1) HD_WHY("page_size %d", a->cache.page_size);
    if (((uintptr_t)a->cache.base & 15) || (a->cache.page_stride & 15))
        HD_WHY("cache.base / page_stride not 16-byte aligned");
    const int64_t qsh = a->q_stride_h ? a->q_stride_h : (ra ? HD_RA_ROW : MLA_KEY_DIM);
    const int64_t qst = a->q_stride_t ? a->q_stride_t : (int64_t)a->num_heads * qsh;
    if (ra && (((uintptr_t)a->q & 15) || (qsh & 15) || (qst & 15)))
        HD_WHY("packed q not 16-byte aligned (q and its strides in multiples of 16 bytes)");
    if (!ra && (((uintptr_t)a->q & 15) || (qsh & 7) || (qst & 7)))
        HD_WHY("q not 16-byte aligned (q and its strides in multiples of 8 elements)");
    const int64_t osh = a->out_stride_h ? a->out_stride_h : MLA_LATENT_DIM;
    const int64_t ost = a->out_stride_t ? a->out_stride_t : (int64_t)a->num_heads * osh;
    if (((uintptr_t)a->out & 3) || (osh & 1) || (ost & 1)) HD_WHY("out not 4-byte aligned (even strides)");
    return 1;
}

/* A launch's epoch (the published plan, hd_fused_combine's flags): unique in this process and, by
   its start from the clock, unlikely to meet a flag left in a reused workspace by another one. */
static int64_t hd_next_epoch(void) {
    static unsigned long long epoch = 0;
    if (epoch == 0) __sync_val_compare_and_swap(&epoch, 0ull, ((unsigned long long)time(NULL) & 0xffffffffull) << 20);
    return (int64_t)__sync_add_and_fetch(&epoch, 1ull);
}

/* hd_fused_combine where it can run: the uniform split (no balanced schedule, nsplit > 1) of the
   64-row kernels, H % 64 == 0 (dense slots), the whole grid resident at once (one CTA an SM); by
   default only from HD_FUSE_MIN_SPLITS splits, where it measured faster than the combine grid (H100
   same run, bf16p h=128 s_q=1 32K: b=1, 64 splits, 666 -> 706 GB/s; b=4, 16 splits, 1578 -> 1563;
   b=8 1954 -> 1931; b=16 8K 1572 -> 1528; b=2 s_q=2, 33 splits, 870 -> 858; bench/results.md,
   session 27). MLA_HD_FUSE=1 / 0 (A/B) or the test hook: wherever it can / never. */
#define HD_FUSE_MIN_SPLITS 64
static int hd_fuse_force = -1, hd_fused_last = 0;
extern "C" void mla_cuda_decode_hopper_force_fuse(int mode) { hd_fuse_force = mode; }
extern "C" int mla_cuda_decode_hopper_last_fused(void) { return hd_fused_last; }
static int hd_f8g_force = -1, hd_f8g_last = 0;
static int hd_rows_force = -1, hd_rows_last = 0;
extern "C" void mla_cuda_decode_hopper_force_gather(int mode) { hd_rows_force = mode; }
extern "C" int mla_cuda_decode_hopper_last_gather(void) { return hd_rows_last; }
static int hd_cutm_force = -1, hd_cutm_last = 0;
extern "C" void mla_cuda_decode_hopper_force_cutmerge(int mode) { hd_cutm_force = mode; }
extern "C" int mla_cuda_decode_hopper_last_cutmerge(void) { return hd_cutm_last; }
extern "C" void mla_cuda_decode_hopper_force_f8g(int mode) { hd_f8g_force = mode; }
extern "C" int mla_cuda_decode_hopper_last_f8g(void) { return hd_f8g_last; }
static const int64_t *hd_plan_last = NULL; /* the last call's plan (balanced schedule), for the tests */
extern "C" int mla_cuda_decode_hopper_last_mode(void) {
    int64_t m = -1;
    if (hd_plan_last && cudaMemcpy(&m, hd_plan_last + 2, sizeof m, cudaMemcpyDeviceToHost) != cudaSuccess) m = -2;
    return (int)m;
}
static int hd_fuse_ok(const mla_ctx *ctx, const hd_params *p, int nsplit, void (*kern)(const hd_params)) {
    static int env = -1;
    const int mode = hd_fuse_force >= 0 ? hd_fuse_force : hd_env_int_or("MLA_HD_FUSE", &env, 2);
    if (mode == 0 || (mode == 2 && nsplit < HD_FUSE_MIN_SPLITS)) return 0;
    if (p->sched || nsplit <= 1 || p->H % HD_ROWS != 0 || !p->ws_flag) return 0;
    int nb = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kern, HD_THREADS, HD_SMEM_BYTES) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const int64_t sms = ctx && ctx->sm_count > 0 ? ctx->sm_count : 0;
    return (int64_t)p->T * p->H / HD_ROWS * nsplit <= (int64_t)nb * sms;
}

static mla_status hd_run(mla_ctx *ctx, const mla_decode_args *a, int num_splits, float *dbg) {
    char why[160];
    if (!mla_cuda_decode_hopper_supported(ctx, a, why, sizeof why))
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "decode (hopper kernel): %s", why);
    hd_fused_last = hd_f8g_last = 0;
    hd_plan_last = NULL;
    if (a->num_tokens <= 0) return MLA_OK;
    if (num_splits < 0 || num_splits > MLA_HD_MAX_SPLITS)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "decode (hopper kernel): num_splits %d", num_splits);
    int narrow = hd_narrow(a, dbg != NULL);
    int sched = !narrow && !dbg && num_splits == 0 && hd_use_sched(ctx, a);
    int nsplit = dbg ? 1 : (num_splits > 0 ? num_splits : (narrow ? hd_narrow_splits(ctx, a) : hd_auto_splits(ctx, a))); /* the uniform layout's */

    hd_params p;
    memset(&p, 0, sizeof p);
    p.B = a->batch.num_requests;
    p.T = a->num_tokens;
    p.H = a->num_heads;
    p.causal = a->causal ? 1 : 0;
    p.nsplit = nsplit;
    p.page_size = a->cache.page_size;
    p.num_pages = a->cache.num_pages;
    p.dbg = dbg ? 1 : 0;
    p.q = (const uint16_t *)a->q;
    p.q_sh = a->q_stride_h ? a->q_stride_h : MLA_KEY_DIM;
    p.q_st = a->q_stride_t ? a->q_stride_t : (int64_t)p.H * p.q_sh;
    p.kv = (const uint8_t *)a->cache.base;
    p.page_stride = a->cache.page_stride;
    p.q_off = a->batch.q_offsets;
    p.seq = a->batch.seq_lens;
    p.bt = a->batch.block_table;
    p.bt_stride = a->batch.bt_stride;
    p.scale_log2 = a->scale * 1.4426950408889634f;
    p.sink = a->sink;
    p.out = a->out;
    p.o_sh = a->out_stride_h ? a->out_stride_h : MLA_LATENT_DIM;
    p.o_st = a->out_stride_t ? a->out_stride_t : (int64_t)p.H * p.o_sh;
    p.lse = a->lse;
    p.lse_st = a->lse_stride_t ? a->lse_stride_t : p.H;
    p.dbg_out = dbg;
    if (p.B < 1) return MLA_OK;
    p.ra = a->cache.format == MLA_KV_FP8_ROPE_AWARE;
    p.fp8 = a->cache.format == MLA_KV_FP8 || p.ra;
    p.row_bytes = p.ra ? HD_RA_ROW : HD_F8_ROW;
    p.rope_off = p.ra ? HD_RA_ROPE : HD_F8_ROPE;
    if (p.ra) {
        p.q8 = (const uint8_t *)a->q;
        p.q_sh = a->q_stride_h ? a->q_stride_h : HD_RA_ROW;
        p.q_st = a->q_stride_t ? a->q_stride_t : (int64_t)p.H * p.q_sh;
        p.sigma = a->cache.sigma;
        p.sig_st = a->cache.sigma_stride_page ? a->cache.sigma_stride_page : a->cache.page_size;
        p.qsig = a->q_sigma;
    }
    p.box = hd_box_rows(p.page_size);
    static int box_env = -1; /* MLA_HD_BOX (diagnosis): TMA boxes of 16 or 32 rows where the page allows more */
    const int fb = hd_env_int("MLA_HD_BOX", &box_env);
    if ((fb == 16 || fb == 32) && fb < p.box) p.box = fb;
    /* the raw-tile kernels load the cache's rows by bulk copies of box rows (no tensor map) */
    p.tma = !narrow && hd_make_kv_map(a, p.box, &p.kv_map, &p.kv_map2, &p.kv_map3);
    if (!p.tma && !narrow) p.box = HD_KEYS;
    /* MLA_HD_GPAGE=0 (A/B): cp.async for BF16 page sizes that are not multiples of 16; =2 (diagnosis):
       the general page's copies for every BF16 page size >= 16; =3 (A/B): those copies unrolled inside
       the standard kernels, session 24's build, instead of the general-page kernels */
    static int gpage_env = -1;
    const int gpe = hd_env_int_or("MLA_HD_GPAGE", &gpage_env, 1);
    /* MLA_HD_GATHER (v62, v63; the rule below): where the gather takes the page whatever the other paths
       find, their tensor maps are not made */
    static int rows_env = -1;
    const int rwe = hd_rows_force >= 0 ? hd_rows_force : hd_env_int_or("MLA_HD_GATHER", &rows_env, 1);
    const int rows_ok = !narrow && !p.fp8 && !dbg && rwe != 0;
    const int rows_sure = rows_ok && (rwe == 2 || (p.page_size % 16 != 0 && p.page_size % HD_KEYS != HD_KEYS - 1));
    p.gpage = 0;
    if (!rows_sure && (!p.tma || gpe == 2) && !narrow && !p.fp8 && (p.page_size % 16 != 0 || gpe == 2) && gpe != 0 &&
        hd_make_kv_gmaps(a, p.kv_gmap)) {
        p.gpage = p.tma = 1;
        p.box = 16;
    }
    /* page-aligned tiles (hd_pt_tiles) where a page's last tile holds at least 56 keys (pages 56..63,
       120..127, 184..191, ...: hd_softmax's tail mask, not its masked program), MLA_PRECISION_BF16_P, no causal
       mask; MLA_HD_PTILE=0 (A/B) keeps the runs of rows. Session 42, 8K bf16p TF, runs -> tiles: pages 56 / 57 /
       59 575.5 / 566 / 566 -> 580 / 590.5 / 607.5, 120 580 -> 614.5, 119 576.5 -> 577.5; 113 / 115
       (a 49- / 51-key last tile, the masked program every other tile; 7/8 of 128 rows was the rule before)
       577 -> 556.5 / 557. s_q=1 page 56 521 -> 507.5, but b=4 page 56 345.5 -> 357.5. */
    static int ptile_env = -1;
    p.ptile = 0;
    if (p.gpage && gpe == 1 && !p.causal && !dbg && a->precision == MLA_PRECISION_BF16_P && hd_env_on("MLA_HD_PTILE", &ptile_env)) {
        const int c = (p.page_size + HD_KEYS - 1) / HD_KEYS;
        /* one 64-row box a chunk, as page 64's (rows past the page land as zeros): 16-row boxes from four
           issuers measured 599 against 652 TF at page 61 (8K, session 41) */
        if (p.page_size - (c - 1) * HD_KEYS >= HD_KEYS - 8 && hd_make_kv_map(a, HD_KEYS, &p.kv_map, &p.kv_map2, &p.kv_map3, 1)) {
            p.ptile = c;
            p.box = HD_KEYS;
        }
    }
    /* v62, v63: BF16 pages that are not multiples of 16 gathered row by row (hd_producer_rows, the _r kernels),
       but for page-aligned tiles one key short of a multiple of 64 (pages 63, 127, ...: 98% of their rows keys).
       H100 8K bf16p, session 44 (runs of rows or page-aligned tiles -> gathered): page 17 416.5 -> 633.5 TF,
       33 509 -> 631.5, 40 580.5 -> 631.5, 61 616.5 -> 631, 100 609.5 -> 629.5, 120 608 -> 630, 127 643 -> 629;
       s_q=1 page 100 543.5 -> 574.5; default precision page 17 391 -> 469.5, 100 467.5 -> 466.5. Multiples of 16
       keep TMA (page 16 633.5 / 638.5, 48 635.5 / 630.5, 64 653 / 632). MLA_HD_GATHER=0 (A/B) keeps the TMA runs
       of rows, the page-aligned tiles and (pages under 16) the cp.async warp pairs; =2 (A/B, diagnosis) gathers
       every BF16 page. The rest of the kernel sees 16-row TMA boxes (p.tma, box 16: four arrivals a chunk,
       out's stores awaited where they are issued), so no other path changes. */
    const int rows = rows_sure || (rows_ok && (!p.tma || (p.page_size % 16 != 0 && !p.ptile)));
    if (rows) {
        p.tma = 1;
        p.box = 16;
        p.gpage = p.ptile = 0;
    }
    /* v65: the raw-tile kernels (FP8-656, decode_narrow.cu) gather pages of fewer than HN_GATHER_BELOW(rows) keys row by
       row (hn_issue_rows, their _r kernels) instead of one bulk copy a page piece; MLA_HD_GATHER=0 keeps the bulk
       copies, =2 gathers every page */
    p.hn_gather = narrow && rwe != 0 && (rwe == 2 || p.page_size < HN_GATHER_BELOW(narrow));
    hd_rows_last = rows || p.hn_gather;
    static int lpt_env = -1; /* MLA_HN_LPT=0 (A/B): the raw-tile kernels' slots in request order */
    p.hn_lpt = narrow && hd_env_on("MLA_HN_LPT", &lpt_env);
    p.hs_ovf = hd_redo_force == 1 ? -INFINITY : (float)HS_OVF_T;
    static int f8pf_env = -1; /* MLA_HD_F8_PF=0 (A/B): no L2 prefetch of FP8 tiles */
    p.f8_pf = hd_env_on("MLA_HD_F8_PF", &f8pf_env);
    static int qtma_env = -1; /* MLA_HD_Q_TMA=0 (A/B): Q by cp.async always */
    p.q_tma = hd_env_on("MLA_HD_Q_TMA", &qtma_env) && !p.ra && hd_make_rows_map(a->q, HD_DK, p.q_sh, p.q_st, p.H, a->num_tokens, &p.q_map);
    /* hd_consumer_p1's early stage-1 refill where a request has at most 2 row blocks (by the mean
       q_len); MLA_HD_EARLY_PAY=1 / 2 (A/B) forces it on / off */
    static int epay_env = -1;
    const int epay = hd_env_int("MLA_HD_EARLY_PAY", &epay_env);
    const int64_t qmean = (a->num_tokens + p.B - 1) / p.B;
    const int early_pay = epay == 1 || (epay != 2 && (qmean * p.H + HD_ROWS - 1) / HD_ROWS <= 2);
    static int otma_env = -1; /* MLA_HD_O_TMA=0 (A/B): out by per-thread stores always */
    /* BF16 caches only: the FP8 producer writes the stages with generic stores (dequantization),
       and racecheck does not credit the full-barrier chain between those and the out staging
       (reported as WAW hazards; FP8 is producer-bound, its epilogue is ~1% of a CTA) */
    p.o_tma = hd_env_on("MLA_HD_O_TMA", &otma_env) && !dbg && !p.fp8 && hd_make_rows_map(a->out, HD_DV, p.o_sh, p.o_st, p.H, a->num_tokens, &p.o_map);

    /* scratch: the uniform layout's partials (nsplit > 1), then the balanced schedule's */
    const size_t need_u = hd_ws_bytes(a, nsplit), need_f = hd_hs_flag_bytes(ctx, a, narrow);
    const size_t need = need_u + need_f + (sched ? hd_sched_ws_bytes(ctx, a) : 0); /* need_f and sched never both */
    if (need && (!a->workspace || a->workspace_bytes < need))
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                             "decode: workspace_bytes %zu < %zu needed (see mla_decode_workspace_size)",
                             a->workspace ? a->workspace_bytes : (size_t)0, need);
    if (need_u) {
        const size_t rows = (size_t)p.T * (size_t)p.H * (size_t)nsplit;
        uint8_t *w = (uint8_t *)(((uintptr_t)a->workspace + 255) & ~(uintptr_t)255);
        p.ws_o = (float *)w;
        p.ws_lse = (float *)(w + hd_align(rows * HD_DV * sizeof(float)));
        p.ws_flag = (unsigned long long *)(w + hd_align(rows * HD_DV * sizeof(float)) + hd_align(rows * sizeof(float)));
    }
    if (need_f) { /* s1's scan: a fresh nonzero epoch a launch; the flags need no clearing */
        static uint32_t hs_epoch = 0;
        uint32_t e;
        while ((e = __sync_add_and_fetch(&hs_epoch, 1u)) == 0u) {
        }
        p.hs_epoch = e;
        p.hs_flag = (uint32_t *)(((uintptr_t)a->workspace + need_u + 255) & ~(uintptr_t)255);
        const int sms = ctx && ctx->sm_count > 0 ? ctx->sm_count : 132;
        p.hs_scan_x = (4 * sms + p.B - 1) / p.B; /* about four scan CTAs an SM */
    }
    if (sched) {
        p.sched = 1;
        p.epoch = hd_next_epoch();
        hd_sched_shape(ctx, a, &p.L, &p.P);
        p.c0 = hd_sched_c0();
        static int persist_env = -1; /* MLA_HD_PERSIST=0 (A/B): one CTA per row block in mode 0, no Q ahead */
        p.persist = hd_env_on("MLA_HD_PERSIST", &persist_env);
        static int bal_env = -1;
        p.force_bal = hd_env_int("MLA_DECODE_BALANCE", &bal_env) == 1;
        p.min_units = hd_sched_min_units();
        const size_t n = 2 * (size_t)p.P * (size_t)p.L;
        uint8_t *w = (uint8_t *)(((uintptr_t)a->workspace + need_u + 255) & ~(uintptr_t)255);
        p.plan = (int64_t *)w;
        hd_plan_last = p.plan;
        p.cum = (int64_t *)(w + 256);
        p.ws_po = (float *)(w + 256 + hd_align((size_t)(p.B + 1) * 8));
        p.ws_plse = (float *)((uint8_t *)p.ws_po + hd_align(n * HD_ROWS * HD_DV * 4));
        p.ws_cnt = (unsigned long long *)((uint8_t *)p.ws_plse + hd_align(n * HD_ROWS * 4));
        p.ws_mrec = (long long *)((uint8_t *)p.ws_cnt + hd_align(n * 8));
        static int cutm_env = -1; /* v55: MLA_HD_CUTMERGE=0 (A/B) merges the cut blocks in the combine grid */
        p.cutm = hd_cutm_force >= 0 ? hd_cutm_force : hd_env_on("MLA_HD_CUTMERGE", &cutm_env);
    }

    cudaStream_t stream = mla_cuda_stream(ctx);
    static int f8o_env = -1; /* MLA_HD_F8_ORDER=0 (A/B): FP8 on the BF16 kernels' consumer order */
    const int f8k = p.fp8 && hd_env_on("MLA_HD_F8_ORDER", &f8o_env);
    /* MLA_PRECISION_BF16_P on FP8 caches runs the FP8 kernel's default program too: more accurate and,
       since v22, faster there (H100 8K: 245 against 214 TF for hd_consumer_p1 on FP8 tiles) */
    const int p1 = !dbg && a->precision == MLA_PRECISION_BF16_P && !f8k;
    void (*kern)(const hd_params) = p1 ? (early_pay ? hd_decode_kernel_v7_bf16p_ep : hd_decode_kernel_v7_bf16p)
                                       : (f8k ? hd_decode_kernel_v7_f8 : hd_decode_kernel_v7);
    if (rows) kern = p1 ? (early_pay ? hd_decode_kernel_v7_bf16p_ep_r : hd_decode_kernel_v7_bf16p_r) : hd_decode_kernel_v7_r;
    if (p.gpage && gpe != 3) { /* (BF16 only: never f8k) */
        static int gk_env = -1; /* MLA_HD_GKERN=1 / 2 (A/B): the _g / _gs kernels whatever the page */
        const int gk = hd_env_int("MLA_HD_GKERN", &gk_env);
        if (p.ptile || gk == 1 || (gk != 2 && hd_gtile_boxes100(p.page_size) <= HD_GPREP_BOXES))
            kern = p1 ? (early_pay ? hd_decode_kernel_v7_bf16p_ep_g : hd_decode_kernel_v7_bf16p_g) : hd_decode_kernel_v7_g;
        else /* (MLA_HD_GPAGE=2 sends page 16 here too) */
            kern = p1 ? (early_pay ? hd_decode_kernel_v7_bf16p_ep_gs : hd_decode_kernel_v7_bf16p_gs) : hd_decode_kernel_v7_gs;
    }
    if (p1 && early_pay) p.cutm = 0; /* the _ep kernels keep the combine grid (hd_cut_note) */
    hd_cutm_last = p.cutm;
    /* v32: the FP8 kernel on group tiles (hd_g_tiles) where its page is not a multiple of 16, since v67 only
       where a tile is one 64-row box of one page (g % 4 == 0) and at least 7/8 of its rows hold keys (pages
       56..63, 112..127, 168..191, ...; 3/4 of the rows at any g under MLA_HD_GATHER=0, as before); the rest are
       gathered row by row (v66, v67, below). A group tile runs at about page 64's rate times its share of key
       rows, less on 16-row boxes; the gather at ~226 TF whatever the page (H100 8K, session 45 calls 6 and 9,
       group tiles -> v66's gather -> v67's: page 12 182 -> 205.5, 15 218 -> 207, 24 185 -> 208.5 -> 226.5, 28
       210.5 -> 209.5, 40 203.5 -> 210, 50 194 -> 209 -> 227.5, 61 244.5 -> 209, 100 221.5 -> 210, 120 241 -> 210).
       MLA_HD_F8G=0 (A/B) sends them all to the gather, =2 (tests, diagnosis) takes them at any page size,
       =3 (diagnosis) at multiples of 16 too */
    static int f8g_env = -1;
    const int f8ge = hd_f8g_force >= 0 ? hd_f8g_force : hd_env_int_or("MLA_HD_F8G", &f8g_env, 1);
    if (f8k && (!p.tma || f8ge == 3) && !narrow && !dbg && f8ge != 0 && (p.page_size % 16 != 0 || f8ge == 3)) {
        /* g % 4 == 0 (pages 49..63, 113..127, ...): a tile is 64 rows of one page, one 64-row box */
        const int g = (p.page_size + 15) / 16, gbox = g % 4 == 0 ? HD_KEYS : 16;
        if ((f8ge == 2 || (rwe != 0 ? g % 4 == 0 && 8 * p.page_size >= 7 * 16 * g : 4 * p.page_size >= 3 * 16 * g)) && hd_make_kv_map(a, gbox, &p.kv_map, &p.kv_map2, &p.kv_map3, 1)) {
            p.tma = 1;
            p.box = gbox;
            p.f8g = g;
            kern = p.causal ? hd_decode_kernel_v7_f8_gc : hd_decode_kernel_v7_f8_g;
            hd_f8g_last = g;
        }
    }
    /* v66, v67: the FP8 pages left (neither TMA nor group tiles: 1..15, 17..31, 33..47, 49..55, 65..111, ...) gathered
       row by row (the _f8_r kernel); MLA_HD_GATHER=0 (A/B) keeps the producer's cp.async tile by tile, =2 (A/B,
       diagnosis) gathers every page */
    if (f8k && (!p.tma || rwe == 2) && !narrow && !dbg && rwe != 0) {
        p.tma = 1;
        p.box = 16;
        p.f8g = hd_f8g_last = 0;
        kern = hd_decode_kernel_v7_f8_r;
        hd_rows_last = 1;
    }
    const int64_t slots = (int64_t)p.T * p.H / HD_ROWS + p.B;
    /* the uniform layout's grid (slot, split); under the balanced schedule its first P L CTAs (linear
       index) are the lanes, and it has at least that many */
    int64_t gx = slots;
    if (sched && gx * nsplit < (int64_t)p.P * p.L) gx = ((int64_t)p.P * p.L + nsplit - 1) / nsplit;
    if (sched && p.persist) gx = (int64_t)p.P * p.L; /* one CTA per SM at most (P = SMs / L); nsplit is 1 */
    static int timing_env = -1; /* MLA_HD_TIMING=1 (diagnosis): events around the two grids, times to stderr */
    const int timing = sched && hd_env_int("MLA_HD_TIMING", &timing_env) == 1;
    cudaEvent_t ev[3];
    if (timing) {
        for (int i = 0; i < 3; i++) cudaEventCreate(&ev[i]);
        cudaEventRecord(ev[0], stream);
    }
    dim3 grid(dbg ? 1u : (unsigned)gx, (unsigned)nsplit, 1u);
    if (narrow) {
        if (!hn_prepare(narrow)) return mla_core_fail(ctx, MLA_ERR_DEVICE, "decode (hopper narrow): shared memory attribute");
        MLA_CUDA_TRY(ctx, hn_launch(&p, narrow, stream), "decode (hopper narrow) launch");
        MLA_CUDA_LAUNCHED(ctx, "decode (hopper narrow) kernel");
    } else {
        MLA_CUDA_TRY(ctx, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, HD_SMEM_BYTES),
                     "decode (hopper): shared memory attribute");
        if (!dbg && hd_fuse_ok(ctx, &p, nsplit, kern)) { /* v31: the combine inside, the grid cooperative */
            p.fuse = 1;
            p.epoch = hd_next_epoch();
            cudaLaunchAttribute attr;
            attr.id = cudaLaunchAttributeCooperative;
            attr.val.cooperative = 1;
            cudaLaunchConfig_t cfg;
            memset(&cfg, 0, sizeof cfg);
            cfg.gridDim = dim3((unsigned)((int64_t)p.T * p.H / HD_ROWS), (unsigned)nsplit, 1u);
            cfg.blockDim = dim3(HD_THREADS, 1u, 1u);
            cfg.dynamicSmemBytes = HD_SMEM_BYTES;
            cfg.stream = stream;
            cfg.attrs = &attr;
            cfg.numAttrs = 1;
            if (cudaLaunchKernelEx(&cfg, kern, p) != cudaSuccess) { /* not resident after all: the combine grid */
                (void)cudaGetLastError();
                p.fuse = 0;
            }
        }
        if (!p.fuse) kern<<<grid, HD_THREADS, HD_SMEM_BYTES, stream>>>(p);
        hd_fused_last = p.fuse;
        MLA_CUDA_LAUNCHED(ctx, "decode (hopper) kernel");
    }
    if (timing) cudaEventRecord(ev[1], stream);
    const int64_t rows_u = nsplit > 1 && !p.fuse ? (int64_t)p.T * p.H : 0,
                  rows_s = sched && !p.cutm ? (int64_t)(p.P - 1) * p.L * HD_ROWS / 4 : 0;
    if (rows_u || rows_s) { /* the combine, as a programmatic dependent of the decode grid */
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg = hd_pdl_config(dim3((unsigned)(rows_u > rows_s ? rows_u : rows_s), 1u, 1u), dim3(128u, 1u, 1u), 0, stream, &attr);
        MLA_CUDA_TRY(ctx, cudaLaunchKernelEx(&cfg, hd_combine_kernel_v3, p), "decode (hopper) combine launch");
        MLA_CUDA_LAUNCHED(ctx, "decode (hopper) combine");
    }
    if (timing) {
        cudaEventRecord(ev[2], stream);
        cudaEventSynchronize(ev[2]);
        float t[2];
        for (int i = 0; i < 2; i++) cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]);
        int64_t plan[3];
        cudaMemcpy(plan, p.plan, sizeof plan, cudaMemcpyDeviceToHost);
        fprintf(stderr, "hd timing: decode %.1f us, combine %.1f us; W %lld P' %lld of %d, L %d, mode %lld, splits %d\n",
                1e3f * t[0], 1e3f * t[1], (long long)plan[0], (long long)plan[1], p.P, p.L, (long long)plan[2], nsplit);
        for (int i = 0; i < 3; i++) cudaEventDestroy(ev[i]);
    }
    return MLA_OK;
}

extern "C" mla_status mla_cuda_decode_hopper_ex(mla_ctx *ctx, const mla_decode_args *a, int num_splits) {
    return hd_run(ctx, a, num_splits, NULL);
}

extern "C" mla_status mla_cuda_decode_hopper(mla_ctx *ctx, const mla_decode_args *a) { return hd_run(ctx, a, 0, NULL); }

extern "C" mla_status mla_cuda_decode_hopper_stage(mla_ctx *ctx, const mla_decode_args *a, float *dbg) {
    if (!dbg) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "decode (hopper stage test): dbg is NULL");
    return hd_run(ctx, a, 1, dbg);
}

/* Trace hook (tests): writes "role event tile clock" lines of the last traced launch to path.
 * -1 when the library was built without -DHD_TRACE. */
extern "C" int mla_cuda_decode_hopper_trace_dump(const char *path) {
#ifdef HD_TRACE
    static unsigned long long buf[3][HD_TRACE_TILES][HD_TRACE_EV];
    if (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpyFromSymbol(buf, hd_trace_buf, sizeof buf) != cudaSuccess)
        return -1;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int r = 0; r < 3; r++)
        for (int n = 0; n < HD_TRACE_TILES; n++)
            for (int e = 0; e < HD_TRACE_EV; e++)
                if (buf[r][n][e]) fprintf(f, "%d %d %d %llu\n", r, e, n, buf[r][n][e]);
    fclose(f);
    memset(buf, 0, sizeof buf);
    cudaMemcpyToSymbol(hd_trace_buf, buf, sizeof buf);
    /* the per-CTA timeline beside it: "cta slot0 .. slot7" per recorded CTA */
    static unsigned long long cb[HD_CTAS][HD_CT_SLOTS];
    if (cudaMemcpyFromSymbol(cb, hd_cta_buf, sizeof cb) != cudaSuccess) return -1;
    char p2[1024];
    snprintf(p2, sizeof p2, "%s.cta", path);
    if (strcmp(path, "/dev/null") != 0 && (f = fopen(p2, "w")) != NULL) {
        for (int i = 0; i < HD_CTAS; i++)
            if (cb[i][0]) {
                fprintf(f, "%d", i);
                for (int k = 0; k < HD_CT_SLOTS; k++) fprintf(f, " %llu", cb[i][k]);
                fprintf(f, "\n");
            }
        fclose(f);
    }
    memset(cb, 0, sizeof cb);
    cudaMemcpyToSymbol(hd_cta_buf, cb, sizeof cb);
    { /* the combine grid's: "cta entry wait_done exit smid" (globaltimer ns) */
        static unsigned long long mb[HD_CMBS][4];
        if (cudaMemcpyFromSymbol(mb, hd_cmb_buf, sizeof mb) == cudaSuccess) {
            snprintf(p2, sizeof p2, "%s.cmb", path);
            if (strcmp(path, "/dev/null") != 0 && (f = fopen(p2, "w")) != NULL) {
                for (int i = 0; i < HD_CMBS; i++)
                    if (mb[i][0]) fprintf(f, "%d %llu %llu %llu %llu\n", i, mb[i][0], mb[i][1], mb[i][2], mb[i][3]);
                fclose(f);
            }
            memset(mb, 0, sizeof mb);
            cudaMemcpyToSymbol(hd_cmb_buf, mb, sizeof mb);
        }
    }
    snprintf(p2, sizeof p2, "%s.s1", path); /* the 64-row raw-tile kernel's timeline, when it ran */
    hn_trace_dump(strcmp(path, "/dev/null") ? p2 : path);
    return 0;
#else
    (void)path;
    return -1;
#endif
}
