/* mla_decode on CUDA, Hopper (sm_90a), narrow path: MLA_KV_FP8 (656-byte rows) with few query rows
   per request (h = 16, s_q = 1: DeepSeek-V3 under tensor parallelism 8), where decode is bound by
   the cache bytes. decode_hopper.cu's host side picks it (hd_narrow) and fills the same hd_params.
     n1  16 query rows a CTA; S^T = K Q^T and O^T = V^T P^T, the keys as the wgmma M dimension, so
         that Q takes 18 KB instead of 73 KB and the raw tiles get a four-stage ring; K and V reach
         the tensor cores from registers, dequantized straight from the raw e4m3 bytes (no bf16 copy
         of the tile in shared memory); two consumer warpgroups take alternate tiles, each with its
         own running max, merged at the end.
         H100 (scripts/narrow_check.sh, against the 64-row FP8 kernel, GB/s at 656 B per key):
           b=128 h=16 s_q=1 16K 1135 -> 1885; b=4 h=16 32K 657 -> 1199
     n2  S in f16: K is exact in f16 (one cvt per pair instead of cvt, three integer ops and a bf16x2
         multiply), Q's latent part stored as f16(q 2^-qexp) per row; ncu had put the issue slots at
         53% busy with half the instructions in the conversions                  1885 -> 2250
     n3  P.V in f16: V exact in f16, the scales in P (P_b = P s_b 2^cexp, f16 hi + lo; cexp lowered
         as tiles bring larger scales, O^T rescaled with alpha); keys that do not exist are zeroed
         in the raw tile first (f16 keeps e4m3 NaN)                              2250 -> 2640
         (h=8 4K 2210, h=16 page 16 2215; the 64-row kernel 980 / 945)
     w1  32 rows a CTA (hn_decode_kernel_w1, below): 17-32 rows a request under MLA_PRECISION_BF16_P
         (h = 16 s_q = 2, h = 32 s_q = 1); H100, against the 64-row FP8 kernel, GB/s: h16 s_q=2 16K
         1138 -> 1885, h32 16K 1145 -> 1890, b=4 h16 s_q=2 32K 659 -> 900; at h = 128 s_q = 2 8K it
         ran 209 against 243 TF (ncu: issue slots 40% busy, IPC 1.64, stalls wait 26%, shared-memory
         scoreboard 20%, long scoreboard 12%: each consumer's S and P.V chains wait on their wgmmas)
     r1  (both kernels) the raw tile as the cache's rows, one bulk copy of 656-byte rows per page
         piece instead of ten TMA boxes (8 latent slots, rope, scales); the rope's A fragment from
         registers. A bytes-only probe (bench/probe_fp8_tma.cu) streams the boxes at 2.91 and the
         rows at 3.05 TB/s; P.V's 4-byte A loads become conflict-free (rows 656 B apart). H100
         (narrow_check.sh, GB/s): h16 16K 2634 -> 2759, h16 page 16 2240 -> 2742, h8 4K 2218 ->
         2286; w1 h16 s_q=2 bf16p 1885 -> 1976 (the 64-byte TMA swizzle alone, tried first: n1
         unchanged, w1 2022)
     s1  64 rows a CTA (hn_decode_kernel_s1, the end of this file): more than 32 rows a request under
         MLA_PRECISION_BF16_P (h = 128); the two consumers on FlashMLA's seesaw (each owns half of
         O^T, they take turns on S and the softmax). H100, against the 64-row FP8 kernel, TFLOPS:
         h128 s_q=2 4K / 8K / 32K bf16p 226 / 245 / 258 -> 370 / 411 / 444 (first version 230 /
         267 / 336; then Q at once, lazy max, ex2.approx, one P.V call site), s_q=1 236 -> 411;
         pages 16 / 32 / 61 within 2% of page 64
     q1  (all three) Q loaded at once, 16 bytes a piece, the row max by shuffles (a pair at a time with
         a shared atomic max cost ~100 us a CTA at 64 rows): n1 h16 16K 2.77 -> 2.85 TB/s, b=4 h16
         32K 1.25 -> 1.43; w1 h16 s_q=2 1.96 -> 2.06, b=4 0.92 -> 1.28
     c1  (s1, session 16) code that runs once a CTA made small: a per-CTA timeline (HD_TRACE, HN_CT,
         scripts/s1_diag.sh) put ~35K cycles of a 64-row CTA's ~58K fixed cycles in the end (16 rows a
         thread written by unrolled code, ~4700 SASS instructions fetched cold every CTA) and ~18K in
         Q. The end now stages the rows in shared memory and writes them in a rolled loop
         (hn_write_rows; 35K -> 5.9K cycles); Q lands by cp.async in its chunks' lines and is
         converted in place with bank-conflict-free rotated accesses (Q ready 21K -> 14K cycles after
         entry). s1 bf16p h128 s_q=2 4K / 8K / 32K 371 / 412 / 442 -> 410 / 430 / 444 TF, s_q=1 412 ->
         422, b=4 32K 696 -> 817 GB/s (same-run A/B); n1 unchanged, w1 within -2% (its end keeps the
         direct stores: staged, ptxas spilled more inside its loop)
     l1  (s1, session 30) the owner's row sums (16 multiplies and a reduce-scatter of 14 shuffles) after
         its pready arrival, not before: the other consumer waits for P, not for them. H100 same run,
         3 rounds: s1 bf16p h128 s_q=2 4K / 8K / 16K 411 -> 414 / 433 -> 439 / 451 -> 456 TF, s_q=1 8K
         423 -> 430, b=4 32K 813 -> 822 GB/s, page 16 432 -> 438
     g1  (all three, session 45, v65) pages under HN_GATHER_BELOW(rows) keys (1..7 on n1, 1 on w1 and s1) gathered
         row by row by the four producer warps with 16-byte cp.async, eight lanes a 128-byte line of a row
         (hn_issue_rows, the _r kernels) instead of up to 64 bulk copies of one row a tile (the TMA unit's
         cost a small request). H100 same run, bulk -> gathered: n1 h16 16K page 1 1426 -> 2465 GB/s, page 4
         2374 -> 2716; w1 h16 s_q=2 page 1 1385 -> 1822; s1 bf16p 8K page 1 282.5 -> 389.5 TF. Pieces at row
         offsets (each 128-byte piece across two lines) had reached 2212 / 357 on page 1
     o1  (s1, session 46) the row-block slots in order of the requests' seq_len, longest first (hn_lpt_slot; the
         16- and 32-row kernels keep request order): in request order a long request's CTAs could be handed
         out last and run alone. H100 same run, 3 rounds, bf16p h128: varlen 8K s_q=2 344 -> 415, s_q=1 268 -> 348,
         4K 327 -> 390 TF; fixed 8K / 16K 439 / 453 unchanged (MLA_HN_LPT=0 for A/B)
     m1  (s1, session 48, v68) the softmax takes m_n = m_{n-1} on speculation (no max exchange, no barrier),
         flags a tile where a score passes m_{n-1} + 15, and the owner redoes a flagged tile the old way
         (hs_softmax). A per-tile trace (HD_TRACE, scripts/s1_tiles.py) had put ~3.3K of the ~4.9K cycles
         a tile in the owner's softmax, beside the other consumer's S. H100 same run, 3 rounds (two runs),
         bf16p h128: s_q=2 8K 440 -> 446 / 439 -> 442, 4K 413 -> 421 / 413 -> 418, varlen 420 -> 426 /
         423 -> 424, s_q=1 429 / 430 unchanged, page 1 386 -> 397 TF. The flag at 2^8 (the old rule):
         29 of 128 tiles redone, 418 TF
   TFLOPS / bytes as decode_hopper.cu counts them (656 B per key).

   ---- design -----------------------------------------------------------------------------------
   Work unit (one CTA, 384 threads): 16 rows of ONE request (row R = i*H + h, as decode_hopper.cu,
   blocks of 16: slot g_b = floor(q_offsets[b]*H/16) + b, grid.x = floor(T*H/16) + B) x split y of
   its 64-key tiles (grid.y, the uniform layout: partials go to the same workspace and combine).
   Warpgroup 2 = producer (its warp 8 works): its lanes issue a tile into stage n % 4 once its last
   reader freed it, one bulk copy of the cache's contiguous 656-byte rows per page piece (any page
   size: pages of one key make 64 pieces, two a lane), and a bit per key whose page exists.
   Warpgroups 0, 1 = consumers c: tiles n = c, c + 2, ...; per tile:
     S^T[64 keys x 16 rows] = sum_b s_b(key) * 2^qexp K_b Q_b^T + K_rope Q_rope^T: K_b (latent
       columns 128b..128b+127, raw e4m3) from registers (m64n16k16 f16, the A fragment loaded 16
       bytes a row and converted exactly to f16), one accumulator per scale block b, the rope by a
       bf16 wgmma from registers (hn_rope_frags: the rope's bytes as they are);
     the tile max per row crosses the warpgroup's four warps through shared memory; P = exp2(S -
       m), O^T and the row sums rescaled by exp2(m_old - m);
     P^T scaled per block, P_b = P s_b(key) 2^cexp, as two f16 terms (P_hi + P_lo, SPEC 5), stored
       transposed by stmatrix into 8 [16 rows][64 keys] tiles;
     O^T[512 x 16] += V^T P_b^T: V^T from registers (two keys' bytes of one latent column paired
       by a byte permute, converted exactly to f16), 8 m-blocks x 4 k-steps x (hi, lo).
   Output: consumer 1 hands its O^T, max and sums to consumer 0 through shared memory; consumer 0
   writes out (or the f32 partial and its lse2 for the combine).

   A fragment row <-> latent column: m-block 2b + jj, row g (+8) of warp w holds column
   128b + 32w + 4g + 2jj (+1), so each thread's four columns of block b are contiguous (one 4-byte
   load per key) and its output is 4 contiguous columns. K index of S: in chunk j (64 columns),
   k-step kk, the A fragment's k = 2c + e (+8) reads column 64j + 16c + 4kk + e (+2), so a thread
   loads 16 contiguous bytes per key and chunk; Q is stored in that order (hn_load_q).

   ---- shared memory (base rounded up to 1024 B) -------------------------------------------------
     Q      [0, 18432)        9 chunks of 16 rows x 128 B (128-byte swizzle; every chunk in the A
                              fragments' K order; chunks 0-7 f16, the rope bf16)
     raw s  18432 + s*41984   64 keys x 656 B (latent [0, 512), scales [512, 528), rope [528, 656)),
                              s = 0..3; P.V's 4-byte loads of rows 16ks + 2cq (+1, +8, +9) fall in
                              32 different banks (656 = 4 words mod 32)
     P^T    186368 + c*16384  consumer c: 8 tiles (block b, hi / lo) of 16 rows x 128 B (swizzled)
     small  219136            mbarriers, the tile-max exchange, per-stage sub-block flags */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda.h"
#include "decode_hopper.h"
#include "hopper.cuh"

#define HN_ROWS 16
#define HN_RMAX 64                      /* the small struct's row arrays: the 16-, 32- and 64-row kernels share it */
#define HN_KEYS 64
#define HN_STAGES 4
#define HN_THREADS 384                 /* 2 consumer warpgroups + the producer warpgroup (one warp works) */
#define HN_PRODUCER_REGS 40
#define HN_CONSUMER_REGS 232            /* 40 + 2 x 232 = 3 x 168, the registers at entry */
#define HN_QCH 2048                     /* one Q chunk: 16 rows x 128 B */
#define HN_RAW0 (9 * HN_QCH)            /* 18432 */
#define HN_ROW 656                      /* one key's bytes, as in the cache: latent e4m3 [0, 512), scales [512, 528), rope [528, 656) */
#define HN_STAGE (HN_KEYS * HN_ROW)     /* 41984: a tile's rows, contiguous (one bulk copy per page piece) */
#define HN_SCL 512
#define HN_ROPE 528
#define HN_P0 (HN_RAW0 + HN_STAGES * HN_STAGE) /* 186368 */
#define HN_PT 2048                      /* one P^T tile */
#define HN_BIG (HN_P0 + 2 * 8 * HN_PT)  /* 219136 */

typedef struct hn_small {
    uint64_t landed[HN_STAGES];  /* raw tile landed: one arrival per issuing lane (+ tx bytes) */
    uint64_t empty[HN_STAGES];   /* its consumer is done reading it: one arrival per thread (128) */
    uint64_t okm[HN_STAGES];     /* per stage, bit k: key k's page exists (its row was loaded) */
    uint64_t done0, oxready;     /* the end: consumer 0 done with its tiles; consumer 1's O^T handed over (128 each; 64-row kernel: done0 256) */
    uint64_t pready[2];          /* 64-row kernel, per tile parity: the owner's P, scale table and running max published (128) */
    float red[2][2][4][HN_RMAX]; /* per consumer, tile parity, warp: the warp's max per row */
    float lsum[2][4][HN_RMAX];   /* per consumer, warp: row sums at the end */
    float smx[2][2][4];          /* per consumer, tile parity, warp: max |scale| of the warp's 16 keys */
    float mx[HN_RMAX], lx[HN_RMAX]; /* consumer 1's max and sums for the merge (64-row kernel: each consumer's max) */
    int32_t qexp[HN_RMAX];       /* per row: Q's latent columns are stored as f16(q 2^-qexp) */
    int32_t kend[HN_RMAX];       /* 32-row kernel: per row, its key limit (causal) */
    float qs[HN_RMAX];           /* 32-row kernel: per row, scale_log2 2^qexp */
    uint16_t sv[2][2][4][HN_KEYS]; /* 32-row kernel: per consumer, tile parity, scale block, key: f16 of s 2^-e(key) */
    int32_t b, q_start, q_len, nrows, row0, seq, t_begin, nt;
    int32_t job_ok;              /* 0: the CTA's slot holds no rows */
    int32_t cx;                  /* consumer 1's scale exponent C (after the row arrays: 8-byte pair loads of those) */
    int32_t moved[4];            /* 64-row kernel, tile n % 4: some row's running max moved (O^T needs rescaling) */
    int32_t kmin;                /* 64-row kernel: the smallest key limit over the block's rows (tiles below it need no mask) */
    int32_t ovf[4];              /* 64-row kernel, tile n % 4: n + 1 where a score of tile n passed m_{n-1} + p.hs_ovf (hs_softmax) */
    uint64_t pfix;               /* 64-row kernel: a flagged tile's redone P, scale table and max published (128) */
} hn_small;

#define HN_SMEM_BYTES (1024 + HN_BIG + (int)sizeof(hn_small))
#define HN_OPITCH_H 1040                /* staged out rows at the end: 512 bf16 + 16 B (4 words mod 32: no bank conflicts) */
#define HN_OPITCH_F 2064                /* the same for the f32 partials of a split */
static_assert(HN_SMEM_BYTES <= 232448, "shared memory budget (227 KB per block)");
static_assert(HN_RAW0 % 1024 == 0 && HN_STAGE % 1024 == 0 && HN_P0 % 1024 == 0, "1024-byte swizzle atoms");
static_assert(128 * 64 * 4 <= HN_STAGE, "consumer 1's O^T (128 threads x 64 f32) fits in stage 0 at the end");


/* Per-CTA timeline of the 64-row kernel (build with -DHD_TRACE; hn_trace_dump writes it beside
 * decode_hopper's trace as <path>.s1; scripts/s1_summary.py reads it): [cta][slot], thread 0 of a
 * role: 0 entry clock, 1 smid, 2 globaltimer at entry, 3 job known (after hn_start), 4 nt,
 * 5 consumer 0 has Q, 6 consumer 0 past tile 0's landing, 7 consumer 0's P.V of tile 0 done,
 * 8 consumer 0 leaves the loop, 9 consumer 1 leaves it, 10 consumer 0's stores issued,
 * 11 globaltimer there, 12 the producer issued tile 0, 13 it issued its last tile, 14 consumer 0
 * past setmaxnreg, 15 its Q bytes landed (hn_load_q). */
#ifdef HD_TRACE
#define HN_CTAS 4096
#define HN_CT_SLOTS 16
__device__ unsigned long long hn_cta_buf[HN_CTAS][HN_CT_SLOTS];
#define HN_CT(slot, val)                                                                          \
    do {                                                                                          \
        const unsigned hn_i_ = blockIdx.x + blockIdx.y * gridDim.x;                               \
        hd_trace_st(&hn_cta_buf[hn_i_ & (HN_CTAS - 1)][slot], hn_i_ < HN_CTAS && (threadIdx.x & 127) == 0, (val)); \
    } while (0)
MLA_DEV unsigned long long hn_gtimer(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
MLA_DEV unsigned hn_smid(void) {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}
/* s1's per-tile events of one CTA (HS_TRACE_CTA), thread 0 of each consumer: [c][tile][ev] = clock64;
 * ev 0 S begins (tile landed), 1 S done, 2 softmax begins, 3 softmax done, 4 P.V begins (its waits
 * passed), 5 P.V done, 6 the tile redone (v68), 8-13 inside the softmax (scores, m_n, exp2, P' stored,
 * pready arrived, row sums; the last pass where redone); hn_trace_dump writes them as <path>t (scripts/s1_tiles.py reads them) */
#ifndef HS_TRACE_CTA
#define HS_TRACE_CTA 100
#endif
#define HS_TTILES 512
__device__ unsigned long long hs_trace_buf[2][HS_TTILES][16];
#define HS_T(c, ev, n)                                                                            \
    hd_trace_st(&hs_trace_buf[(c) & 1][(unsigned)(n) & (HS_TTILES - 1)][ev],                      \
                blockIdx.x + blockIdx.y * gridDim.x == HS_TRACE_CTA && (threadIdx.x & 127) == 0 &&  \
                    (unsigned)(n) < HS_TTILES,                                                    \
                clock64())
#else
#define HN_CT(slot, val) do { } while (0)
#define HS_T(c, ev, n) do { } while (0)
#endif

/* D[64x16] (+)= A[64x16] B[16x16], f16: A from registers (m64k16 fragment), B K-major in smem */
MLA_DEV void hn_mma_rs_h(float d[8], const uint32_t a[4], uint64_t db, int acc) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, "
        "{%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
}
/* two e4m3 (low 16 bits) -> f16x2, exact */
MLA_DEV uint32_t hn_e4m3x2_h(uint32_t two) {
    uint32_t h;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h) : "h"((unsigned short)(two & 0xffffu)));
    return h;
}
/* the high 16 bits' two e4m3 -> f16x2 (the cvt reads the register's upper half: no shift) */
MLA_DEV uint32_t hn_e4m3x2_hi(uint32_t four) {
    uint32_t h;
    asm("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, hi;\n}\n" : "=r"(h) : "r"(four));
    return h;
}
/* D[64x16] (+)= A[64x16] B[16x16], bf16: A from registers, B K-major in smem (the rope) */
MLA_DEV void hn_mma_rs_b(float d[8], const uint32_t a[4], uint64_t db, int acc) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7}, "
        "{%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
}
/* The rope of keys t0, t0 + 8 as bf16 A fragments of S^T's four rope k-steps: k-step kk, k = 2cq
 * (+1) and 2cq + 8 (+9) hold rope columns 16cq + 4kk (+1) and + 2 (+3) (hn_load_q stores Q's rope
 * in that order), so each key's 32 bytes come in two 16-byte loads. */
MLA_DEV void hn_rope_frags(const uint8_t *raw, int t0, int cq, uint32_t ar[4][4]) {
    const uint4 a = *(const uint4 *)(raw + t0 * HN_ROW + HN_ROPE + 32 * cq), b = *(const uint4 *)(raw + t0 * HN_ROW + HN_ROPE + 32 * cq + 16);
    const uint4 c = *(const uint4 *)(raw + (t0 + 8) * HN_ROW + HN_ROPE + 32 * cq), d = *(const uint4 *)(raw + (t0 + 8) * HN_ROW + HN_ROPE + 32 * cq + 16);
    ar[0][0] = a.x; ar[0][1] = c.x; ar[0][2] = a.y; ar[0][3] = c.y;
    ar[1][0] = a.z; ar[1][1] = c.z; ar[1][2] = a.w; ar[1][3] = c.w;
    ar[2][0] = b.x; ar[2][1] = d.x; ar[2][2] = b.y; ar[2][3] = d.y;
    ar[3][0] = b.z; ar[3][1] = d.z; ar[3][2] = b.w; ar[3][3] = d.w;
}
/* bytes of a and b interleaved by the selector (prmt.b32) */
MLA_DEV uint32_t hn_prmt(uint32_t a, uint32_t b, uint32_t sel) {
    uint32_t r;
    asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
    return r;
}

/* Q of the block's NR rows (16, 32 or 64; zeros past nrows) into 9 swizzled chunks of NR x 128 B. The
 * latent columns (chunks 0-7, in the K order of the S A fragments: see the design note) as f16 of
 * q 2^-qexp[r], qexp[r] = floor(log2 max |q_r|) - 14, so that the row's largest value lands in
 * [2^14, 2^15): exact (bf16 has 8 significant bits, f16 11) down to 2^-28 of the row's max; the
 * rope (chunk 8) stays bf16, times 2^-qexp[r] too when rope_scaled (exact: bf16 has f32's
 * exponents), so that both parts of S share one accumulator. Ends with named barrier 3 over the 256
 * consumer threads (qexp in sh).
 * Chunk j's line of row r (128 B) holds exactly columns 64j .. 64j + 63 of the row, only permuted, so
 * the row's raw bytes land there first (cp.async, every piece in flight at once; 256 / NR threads a
 * row, lines j = sub, sub + 256 / NR, ...), the row max comes from the same threads' pieces, and after
 * a barrier each thread converts whole lines in place (line tid, tid + 256, ...: a warp's lanes take
 * consecutive rows). Every 16-byte access of a quarter warp goes to 8 different bank groups: the
 * pieces are visited in an order rotated by the lane (rows are 128 B apart, so without the rotation
 * the 8 lanes hit one group: the first in-place version measured ~11K cycles here, its conflicts).
 * The loops stay rolled: this runs once a CTA from a cold instruction cache (unrolled, 18 global
 * pieces a thread converted word by word, it cost the 64-row kernel ~15K cycles a CTA). */
MLA_DEV void hn_load_q(const hd_params &p, hn_small *sh, uint8_t *sm, int tid, const int NR, const int rope_scaled) {
    const int TPR = 256 / NR; /* threads a row: 4, 8, 16 */
    const int r = tid / TPR, sub = tid % TPR, rot = tid & 7;
    const uint16_t *qrow = 0;
    if (r < sh->nrows) {
        const int R = sh->row0 + r, t = sh->q_start + R / p.H, h = R % p.H;
        qrow = p.q + (int64_t)t * p.q_st + (int64_t)h * p.q_sh;
    }
#pragma unroll 1
    for (int j = sub; j < 9; j += TPR) {
        uint8_t *line = sm + j * (NR * 128) + r * 128;
#pragma unroll
        for (int k0 = 0; k0 < 8; k0++) {
            const int k = (k0 + rot) & 7;
            if (qrow) cp_async_16(line + 16 * k, qrow + 64 * j + 8 * k);
            else *(uint4 *)(line + 16 * k) = make_uint4(0u, 0u, 0u, 0u);
        }
    }
    cp_async_commit();
    CP_ASYNC_WAIT(0);
    if (NR == 64 && tid == 0) HN_CT(15, clock64());
    /* max |q| over the latent columns (this thread's own pieces): the magnitudes' bits compare as
       integers (NaN and inf come out above every number: qexp 0 below) */
    uint32_t mb = 0u;
#pragma unroll 1
    for (int j = sub; j < 8; j += TPR) {
        const uint8_t *line = sm + j * (NR * 128) + r * 128;
#pragma unroll
        for (int k0 = 0; k0 < 8; k0++) {
            const uint4 x = *(const uint4 *)(line + 16 * ((k0 + rot) & 7));
            mb = __vmaxu2(mb, __vmaxu2(__vmaxu2(x.x & 0x7fff7fffu, x.y & 0x7fff7fffu), __vmaxu2(x.z & 0x7fff7fffu, x.w & 0x7fff7fffu)));
        }
    }
    for (int o = 1; o < TPR; o <<= 1) mb = __vmaxu2(mb, __shfl_xor_sync(0xffffffffu, mb, o));
    const uint32_t hm = (mb >> 16) > (mb & 0xffffu) ? (mb >> 16) : (mb & 0xffffu);
    const int eb = (int)((hm >> 7) & 0xffu); /* biased exponent of the max (0: zero or subnormal) */
    if (sub == 0) sh->qexp[r] = (eb == 0 || eb == 255) ? 0 : eb - 127 - 14;
    HD_BAR(3, 256); /* every line landed and read; qexp */
    /* in place: word k of piece m (columns 8m + 2k, + 1) goes to word m >> 1 of 16-byte group
       4 (m & 1) + k (the K order: column 16 kk + 2c + 8 hi of dd = 8m + 2k), groups swizzled by the
       row. Piece i of the line is read from slot (i + rr) & 7 and rotated back in registers. */
#pragma unroll 1
    for (int L = tid; L < 9 * NR; L += 256) {
        const int j = L / NR, rr = L % NR;
        uint8_t *line = sm + j * (NR * 128) + rr * 128;
        const float f = exp2f((float)-sh->qexp[rr]);
        uint4 x[8];
#pragma unroll
        for (int i = 0; i < 8; i++) x[i] = *(const uint4 *)(line + 16 * ((i + rr) & 7));
        /* x[i] holds piece (i + rr) & 7: rotate right by rr & 7 so that x[m] holds piece m */
#pragma unroll
        for (int b = 1; b < 8; b <<= 1)
            if (rr & b) {
                uint4 t[8];
#pragma unroll
                for (int i = 0; i < 8; i++) t[i] = x[(i - b) & 7];
#pragma unroll
                for (int i = 0; i < 8; i++) x[i] = t[i];
            }
        const int lat = j < 8, conv = lat || rope_scaled;
#pragma unroll
        for (int G = 0; G < 8; G++) {
            uint32_t y[4];
#pragma unroll
            for (int wd = 0; wd < 4; wd++) {
                const uint4 v = x[2 * wd + (G >> 2)];
                const uint32_t u = (G & 3) == 0 ? v.x : (G & 3) == 1 ? v.y : (G & 3) == 2 ? v.z : v.w;
                const float lo = __uint_as_float(u << 16) * f, hi = __uint_as_float(u & 0xffff0000u) * f;
                if (lat) {
                    __half2 hv = __floats2half2_rn(lo, hi);
                    y[wd] = *(uint32_t *)&hv;
                } else {
                    y[wd] = conv ? pack_bf16x2(lo, hi) : u;
                }
            }
            *(uint4 *)(line + (((G ^ rr) & 7) << 4)) = make_uint4(y[0], y[1], y[2], y[3]);
        }
    }
    HD_BAR(3, 256);
}

/* The longest requests first (p.hn_lpt, session 46): request b owns g_{b+1} - g_b row-block slots (g_b =
 * q_off[b] H / NR + b: a slot more than its blocks), and the hardware hands out CTAs in blockIdx order, so
 * that in request order a long request's CTAs may start last and run alone (FP8 bf16p varlen 8K, seq_len
 * drawn from N(8K, 4K): 332 TF against 438 at a fixed 8K). Here the slots go to the requests by
 * decreasing seq_len (ties: lower b first; equal lengths keep request order): slot x belongs to the request
 * whose run [start, start + slots) in that order holds it, start the slots of every request before it.
 * Thread b of the CTA takes request b: seq_len and slots of all requests staged in scr (2 B words of shared
 * memory, free before the tiles and Q land), then one pass over them; the thread whose run holds x writes
 * (b, x - start) to *lb, *lx. B passes of a few instructions each: up to HN_LPT_MAX = the CTA's threads
 * (more requests keep request order: many CTAs a request's length share the SMs more evenly anyway). */
#define HN_LPT_MAX HN_THREADS
static_assert(8 * HN_LPT_MAX <= HN_RAW0, "hn_lpt_slot's words fit below the smallest kernel's raw ring");
MLA_DEV void hn_lpt_slot(const hd_params &p, const int NR, int32_t *scr, int32_t *lb, int32_t *lx) {
    const int B = p.B, b = threadIdx.x; /* (B <= HN_LPT_MAX: a request a thread at most) */
    if (b < B) {
        const int q0 = p.q_off[b], q1 = p.q_off[b + 1], sq = p.seq[b];
        scr[b] = sq > 0 ? sq : 0;
        scr[B + b] = (int32_t)((int64_t)q1 * p.H / NR - (int64_t)q0 * p.H / NR + 1);
    }
    __syncthreads();
    const int64_t x = blockIdx.x;
    if (b < B) {
        const int cb = scr[b];
        int64_t start = 0;
#pragma unroll 4
        for (int j = 0; j < B; j++) {
            const int cj = scr[j];
            if (cj > cb || (cj == cb && j < b)) start += scr[B + j];
        }
        if (x >= start && x < start + scr[B + b]) {
            *lb = b;
            *lx = (int32_t)(x - start);
        }
    }
    __syncthreads();
}

/* The CTA's row block (x = blockIdx.x; lb >= 0: request lb's slot lx, from hn_lpt_slot) and split: 0 when the
 * slot holds no rows */
MLA_DEV int hn_find_job(const hd_params &p, hn_small *sh, const int NR, int lb, int lx) {
    const int64_t x = blockIdx.x;
    int lo = 0, hi = p.B - 1; /* largest b with g_b <= x */
    while (lb < 0 && lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        const int64_t g = (int64_t)p.q_off[mid] * p.H / NR + mid;
        if (g <= x) lo = mid; else hi = mid - 1;
    }
    const int b = lb >= 0 ? lb : lo;
    const int q0 = p.q_off[b], ql = p.q_off[b + 1] - q0;
    const int64_t blk = lb >= 0 ? (int64_t)lx : x - ((int64_t)q0 * p.H / NR + b);
    const int64_t rows = (int64_t)ql * p.H;
    if (blk < 0 || blk * NR >= rows) return 0;
    const int row0 = (int)(blk * NR), nrows = (int)(rows - row0 < NR ? rows - row0 : NR);
    const int seq = p.seq[b];
    const int last_i = (row0 + nrows - 1) / p.H;
    int kend = p.causal ? seq - ql + last_i + 1 : seq;
    if (kend > seq) kend = seq;
    if (kend < 0) kend = 0;
    const int ntile = (kend + HN_KEYS - 1) / HN_KEYS, tps = (ntile + p.nsplit - 1) / p.nsplit;
    const int tb = (int)blockIdx.y * tps;
    int nt = ntile - tb < tps ? ntile - tb : tps;
    if (nt < 0) nt = 0;
    sh->b = b; sh->q_start = q0; sh->q_len = ql; sh->nrows = nrows; sh->row0 = row0; sh->seq = seq;
    sh->t_begin = tb; sh->nt = nt;
    return 1;
}

/* Producer warp 8, lane l: tile n's keys (up to seq_len) into stage n % 4 of the raw ring at sbase +
 * raw0, one bulk copy of the cache's contiguous 656-byte rows per page piece: lane l takes pieces l
 * and l + 32 (a 64-key tile has at most 64: pages of one key). Every lane arrives once on landed,
 * expecting its bytes; lane 0 first writes sh->okm[s], a bit per key whose page exists (in range). */
MLA_DEV void hn_issue(const hd_params &p, hn_small *sh, uint32_t sbase, uint32_t raw0, uint32_t landed, int n, int l, const int NS) {
    const int ps = p.page_size, k0 = (sh->t_begin + n) * HN_KEYS, s = n % NS;
    const int ke = k0 + HN_KEYS < sh->seq ? k0 + HN_KEYS : sh->seq;
    const int p0 = k0 / ps, np = k0 < ke ? (ke - 1) / ps - p0 + 1 : 0;
    int32_t pg[2];
    int lo[2], cnt[2];
    uint64_t bits = 0;
    uint32_t bytes = 0;
#pragma unroll
    for (int u = 0; u < 2; u++) {
        const int pi = l + 32 * u;
        pg[u] = -1; lo[u] = 0; cnt[u] = 0;
        if (pi < np) {
            const int a = k0 > (p0 + pi) * ps ? k0 : (p0 + pi) * ps, b = ke < (p0 + pi + 1) * ps ? ke : (p0 + pi + 1) * ps;
            const int32_t page = p.bt[(int64_t)sh->b * p.bt_stride + p0 + pi];
            if (page >= 0 && page < p.num_pages) {
                pg[u] = page; lo[u] = a; cnt[u] = b - a;
                bytes += (uint32_t)((b - a) * HN_ROW);
                bits |= (b - a == 64 ? ~0ull : ((1ull << (b - a)) - 1ull)) << (a - k0);
            }
        }
    }
    const uint32_t blo = __reduce_or_sync(0xffffffffu, (uint32_t)bits), bhi = __reduce_or_sync(0xffffffffu, (uint32_t)(bits >> 32));
    if (l == 0) sh->okm[s] = (uint64_t)bhi << 32 | blo;
    hd_mbar_expect_tx(landed, bytes); /* arrive (release: okm above) and expect this lane's bytes */
#pragma unroll
    for (int u = 0; u < 2; u++) {
        if (pg[u] < 0) continue;
        const uint32_t dst = sbase + raw0 + s * HN_STAGE + (lo[u] - k0) * HN_ROW, nb = (uint32_t)(cnt[u] * HN_ROW);
        const uint8_t *src = p.kv + (int64_t)pg[u] * p.page_stride + (int64_t)(lo[u] % ps) * HN_ROW;
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                     "l"(src), "r"(nb), "r"(landed) : "memory");
    }
}

/* Pages of fewer than HN_GATHER_BELOW(rows) keys (p.hn_gather, the _r kernels; session 45): hn_issue would send up
 * to 64 bulk copies of one 656-byte row a tile, and the TMA unit takes ~25-60 cycles a small request (s1 bf16p
 * 8K page 1 283 against 444 TF at page 64; n1 h=16 16K page 1 1426 against 2872 GB/s). Instead the four
 * producer warps copy the tile by 16-byte cp.async, warp w its rows 16w..16w+15, as hd_producer_rows copies
 * BF16 rows: eight lanes a 128-byte line of a row, so that a warp instruction reads four rows' lines (v64, a
 * row a lane, read 32 rows an instruction and ran at half speed). Lane j < 16 looks row 16w + j up; each lane gets its four rows'
 * addresses by shfl, once a tile. Rows without a key are copied from a zero row (okm says so and the
 * consumers zero them, as for hn_issue). Every lane closes its copies with the zero-net
 * cp.async.mbarrier.arrive (the phase stays open until they land); lane 0 then writes the warp's 16 bits of
 * okm and arrives, so that landed counts 4 arrivals a phase (hn_start). */
__device__ __align__(128) uint8_t hn_zero_row[HN_ROW];
MLA_DEV void hn_issue_rows(const hd_params &p, hn_small *sh, uint32_t sbase, uint32_t raw0, uint32_t landed, int n, int w, int l,
                           const int NS) {
    const int s = n % NS, key = (sh->t_begin + n) * HN_KEYS + 16 * w + (l & 15);
    const uint8_t *r = NULL;
    if (key < sh->seq) {
        const int pi = key / p.page_size;
        const int32_t page = p.bt[(int64_t)sh->b * p.bt_stride + pi];
        if (page >= 0 && page < p.num_pages) r = p.kv + (int64_t)page * p.page_stride + (int64_t)(key - pi * p.page_size) * HN_ROW;
    }
    const uint32_t ok = __ballot_sync(0xffffffffu, r != NULL) & 0xffffu;
    if (!r) r = hn_zero_row;
    /* row 16w + 4i + l/8, lane l & 7: its 16-byte piece jj = l & 7 of each 128-byte line the row touches (six:
       a row starts 16 ph bytes into its first line, ph = 0..7), at row offset 128 c + 16 (jj - ph); line 0
       from jj >= ph, line 5 up to jj <= ph, 41 pieces in all. So a warp instruction reads four whole lines
       (pieces at row offsets, 128 c + 16 jj, read five or six lines, two sectors twice: 402 against 442 TF on s1
       page 64 gathered, 2513 against 2864 GB/s on n1 h=16, session 45 call 1). */
    const int jj = l & 7;
    const uint8_t *src[4];
    uint32_t dst[4], first = 0, last = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint8_t *a = (const uint8_t *)__shfl_sync(0xffffffffu, (unsigned long long)r, 4 * i + (l >> 3));
        const int ph = (int)(((uintptr_t)a >> 4) & 7);
        src[i] = a + 16 * (jj - ph);
        dst[i] = sbase + raw0 + (uint32_t)(s * HN_STAGE + (16 * w + 4 * i + (l >> 3)) * HN_ROW + 16 * (jj - ph));
        first |= (uint32_t)(jj >= ph) << i;
        last |= (uint32_t)(jj <= ph) << i;
    }
#pragma unroll
    for (int c = 0; c < 6; c++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            if (c == 0 ? ((first >> i) & 1u) : c == 5 ? ((last >> i) & 1u) : 1u)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst[i] + (uint32_t)(128 * c)), "l"(src[i] + 128 * c)
                             : "memory");
    if (l == 0) ((volatile uint16_t *)&sh->okm[s])[w] = (uint16_t)ok; /* (released by its arrival) */
    hd_cp_arrive_warp(landed, l);
}

/* Every raw-tile kernel's start: thread 0 finds the job (blocks of NR rows) and initializes the
 * barriers (empty: `readers` arrivals, done0: `ends`; landed: the producer warp's 32 lanes, or the
 * four producer warps where G: hn_issue_rows); 0 (every thread, after the CTA barrier) when the slot
 * holds no rows. */
#define HN_LPT_ROWS 64 /* the kernel that takes the longest-first order: HS_ROWS (below) */
MLA_DEV int hn_start(const hd_params &p, hn_small *sh, uint8_t *sm, const int NR, const uint32_t readers, const uint32_t ends,
                     const int G) {
    /* (the 64-row kernel only: the 16- and 32-row kernels run a CTA a request at h s_q <= 32, one wave at B <=
       132, where the order does not matter; the code in their prologue moved their registers: h=16 16K -1.3%,
       varlen -5%, session 46) */
    const int lpt = NR == HN_LPT_ROWS && p.hn_lpt && p.B > 1 && p.B <= HN_LPT_MAX;
    if (lpt) { /* (scr: the start of shared memory, Q's place: 8 B a request, 3 KB at most, and nothing lands there
                  before the __syncthreads below; sh->b and sh->q_start carry the request and its slot to
                  thread 0, which then writes the job over them) */
        if (threadIdx.x == 0) sh->b = -1;
        hn_lpt_slot(p, NR, (int32_t *)sm, &sh->b, &sh->q_start);
    }
    if (threadIdx.x == 0) {
        sh->job_ok = hn_find_job(p, sh, NR, lpt ? sh->b : -1, sh->q_start);
        for (int s = 0; s < HN_STAGES; s++) {
            hd_mbar_init(smem_u32(&sh->landed[s]), G ? 4u : 32u);
            hd_mbar_init(smem_u32(&sh->empty[s]), readers);
        }
        hd_mbar_init(smem_u32(&sh->done0), ends);
        hd_mbar_init(smem_u32(&sh->oxready), 128u);
        hd_mbar_init(smem_u32(&sh->pready[0]), 128u);
        hd_mbar_init(smem_u32(&sh->pready[1]), 128u);
        hd_mbar_init(smem_u32(&sh->pfix), 128u);
        sh->ovf[0] = sh->ovf[1] = sh->ovf[2] = sh->ovf[3] = 0;
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    return sh->job_ok;
}
/* The producer warpgroup (threads 256..383, its registers already given back): its first warp issues
 * every tile into the NS-stage raw ring at sbase + raw0 (hn_issue), each stage once its readers freed it;
 * where G (the _r kernels), its four warps gather every tile (hn_issue_rows). */
MLA_DEV void hn_produce(const hd_params &p, hn_small *sh, uint32_t sbase, uint32_t raw0, int tid, const int NS, const int G) {
    const int l = tid & 31, w = (tid >> 5) & 3, nt = sh->nt;
    if (!G && tid >= 288) return;
    for (int n = 0; n < nt; n++) {
        const int s = n % NS;
        if (n >= NS) hd_mbar_wait(smem_u32(&sh->empty[s]), (uint32_t)((n / NS - 1) & 1));
        if (G) hn_issue_rows(p, sh, sbase, raw0, smem_u32(&sh->landed[s]), n, w, l, NS);
        else hn_issue(p, sh, sbase, raw0, smem_u32(&sh->landed[s]), n, l, NS);
        if (NS == 3 /* the 64-row kernel */ && (n == 0 || n == nt - 1) && tid == 256) HN_CT(n == 0 ? 12 : 13, clock64());
    }
}

/* The end of row q once its max M and sum L (log2 units) are known: *lse2 (-inf: no key) and the
 * factor of its O, 1 / L times the sink's factor when unsplit (0: no key). */
MLA_DEV float hn_row_scale(const hd_params &p, const hn_small *sh, int q, float M, float L, float *lse2) {
    *lse2 = L > 0.f ? M + log2f(L) : -INFINITY;
    float scl = L > 0.f ? 1.f / L : 0.f;
    if (p.nsplit == 1 && L > 0.f && p.sink) {
        const int h = (sh->row0 + q) % p.H;
        scl *= 1.f / (1.f + expf(p.sink[h] - *lse2 * 0.69314718055994531f));
    }
    return scl;
}
/* Row q's lse (q < nrows): unsplit to p.lse in natural log (+inf: no key), else lse2 to the split's
 * workspace row for the combine. */
MLA_DEV void hn_put_lse(const hd_params &p, const hn_small *sh, int q, float lse2) {
    const int H = p.H, R = sh->row0 + q, t = sh->q_start + R / H, h = R % H;
    if (p.nsplit == 1) {
        if (p.lse) p.lse[(int64_t)t * p.lse_st + h] = lse2 == -INFINITY ? INFINITY : lse2 * 0.69314718055994531f;
    } else {
        p.ws_lse[(int64_t)blockIdx.y * p.T * H + (int64_t)t * H + h] = lse2;
    }
}
/* The end of one row q (consumer 0): consumer 1's (max, sum) from sh merged with (m0, l0); *fa, *fb
 * weigh each consumer's O^T, *scl as hn_row_scale; returns lse2. */
MLA_DEV float hn_merge_row(const hd_params &p, const hn_small *sh, int q, float m0, float l0, float *fa, float *fb, float *scl) {
    const float m1 = sh->mx[q], l1 = sh->lx[q];
    const float M = fmaxf(m0, m1);
    *fa = M == -INFINITY ? 0.f : exp2f(m0 - M);
    *fb = M == -INFINITY ? 0.f : exp2f(m1 - M);
    float lse2;
    *scl = hn_row_scale(p, sh, q, M, l0 * *fa + l1 * *fb, &lse2);
    return lse2;
}
/* sum over the 8 lanes of a row group (lanes g = 0..7 with the same cq) */
MLA_DEV float hn_sum_g(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 4);
    v += __shfl_xor_sync(0xffffffffu, v, 8);
    return v + __shfl_xor_sync(0xffffffffu, v, 16);
}
/* The end's first half, both kernels (this thread's NQ rows: qi -> row 8 (qi >> 1) + 2cq + (qi & 1)):
 * each consumer's row sums over its four warps into lrow; consumer 0 then marks done0 (it no longer
 * reads the raw ring), and consumer 1 waits for that and leaves its max and sums in sh for the merge
 * (its O^T, laid out per kernel, follows; then oxready). */
MLA_DEV void hn_sum_rows(hn_small *sh, int c, int w, int g, int cq, const int NQ, const float *mrow, float *lrow) {
#pragma unroll
    for (int qi = 0; qi < NQ; qi++) {
        const float v = hn_sum_g(lrow[qi]);
        if (g == 0) sh->lsum[c][w][8 * (qi >> 1) + 2 * cq + (qi & 1)] = v;
    }
    /* hand-over through mbarriers (racecheck does not credit bar.sync 3, 256 between the consumers) */
    if (c == 0) hd_mbar_arrive(smem_u32(&sh->done0));
    HD_BAR_R(1 + c, 128); /* lsum of this consumer */
#pragma unroll
    for (int qi = 0; qi < NQ; qi++) {
        const int q = 8 * (qi >> 1) + 2 * cq + (qi & 1);
        lrow[qi] = sh->lsum[c][0][q] + sh->lsum[c][1][q] + sh->lsum[c][2][q] + sh->lsum[c][3][q];
    }
    if (c == 1) {
        hd_mbar_wait(smem_u32(&sh->done0), 0u);
        if (w == 0 && g == 0)
#pragma unroll
            for (int qi = 0; qi < NQ; qi++) {
                const int q = 8 * (qi >> 1) + 2 * cq + (qi & 1);
                sh->mx[q] = mrow[qi];
                sh->lx[q] = lrow[qi];
            }
    }
}
/* The end of row q once its max M and sum L are known: its lse written (when the row exists), its
 * factor returned (hn_row_scale). */
MLA_DEV float hn_row_end(const hd_params &p, const hn_small *sh, int q, float M, float L) {
    float lse2;
    const float scl = hn_row_scale(p, sh, q, M, L, &lse2);
    if (q < sh->nrows) hn_put_lse(p, sh, q, lse2);
    return scl;
}

/* Staged output rows (row q at stage + q HN_OPITCH_H bytes as bf16, or at q
 * HN_OPITCH_F as f32 when split; the pitches are 4 words mod 32, so that the staging stores of a
 * warp's rows 2cq apart fall in different banks) to out, or to the f32 partials of split
 * blockIdx.y, by nth threads in 16-byte pieces (4-byte stores where out's address or strides are
 * not 16-byte multiples). A rolled loop: it runs once a CTA from a cold instruction cache (unrolled
 * per thread and row, the 64-row kernel's end took ~30K cycles a CTA, HN_CT timeline, session 16). */
MLA_DEV void hn_write_rows(const hd_params &p, const hn_small *sh, const uint8_t *stage, int tid, int nth) {
    const int H = p.H, nrows = sh->nrows;
    if (p.nsplit == 1) {
        const int a16 = (((uintptr_t)p.out | (uintptr_t)(p.o_sh * 2) | (uintptr_t)(p.o_st * 2)) & 15u) == 0;
#pragma unroll 1
        for (int x = tid; x < nrows * 64; x += nth) {
            const int q = x >> 6, k = x & 63, R = sh->row0 + q, t = sh->q_start + R / H, h = R % H;
            const uint4 v = *(const uint4 *)(stage + q * HN_OPITCH_H + 16 * k);
            uint16_t *d = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh + 8 * k;
            if (a16) {
                *(uint4 *)d = v;
            } else {
                *(uint32_t *)d = v.x; *(uint32_t *)(d + 2) = v.y; *(uint32_t *)(d + 4) = v.z; *(uint32_t *)(d + 6) = v.w;
            }
        }
    } else {
#pragma unroll 1
        for (int x = tid; x < nrows * 128; x += nth) {
            const int q = x >> 7, k = x & 127, R = sh->row0 + q, t = sh->q_start + R / H, h = R % H;
            const int64_t row = (int64_t)blockIdx.y * p.T * H + (int64_t)t * H + h;
            *(float4 *)(p.ws_o + row * MLA_LATENT_DIM + 4 * k) = *(const float4 *)(stage + q * HN_OPITCH_F + 16 * k);
        }
    }
}
/* Row q's 16 output columns of this thread, v[4b + i] = column 128b + 32w + 4g + i: to out (bf16) and
 * lse when unsplit, else the f32 partial and its lse2 for the combine. */
MLA_DEV void hn_store_row(const hd_params &p, const hn_small *sh, int q, int w, int g, const float v[16], float lse2) {
    if (q >= sh->nrows) return;
    const int H = p.H, R = sh->row0 + q, t = sh->q_start + R / H, h = R % H;
    if (p.nsplit == 1) {
        uint16_t *orow = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh;
#pragma unroll
        for (int b = 0; b < 4; b++) {
            const int col = 128 * b + 32 * w + 4 * g;
            *(uint32_t *)(orow + col) = pack_bf16x2(v[4 * b], v[4 * b + 1]);
            *(uint32_t *)(orow + col + 2) = pack_bf16x2(v[4 * b + 2], v[4 * b + 3]);
        }
    } else {
        const int64_t row = (int64_t)blockIdx.y * p.T * H + (int64_t)t * H + h;
        float *orow = p.ws_o + row * MLA_LATENT_DIM;
#pragma unroll
        for (int b = 0; b < 4; b++)
            *(float4 *)(orow + 128 * b + 32 * w + 4 * g) = make_float4(v[4 * b], v[4 * b + 1], v[4 * b + 2], v[4 * b + 3]);
    }
    if (w == 0 && g == 0) hn_put_lse(p, sh, q, lse2);
}
/* The end's last step (consumer 0): this thread's NQ rows of the merged O^T (o[8][KS], S^T
 * accumulator order) to hn_store_row. */
MLA_DEV void hn_store_rows(const hd_params &p, const hn_small *sh, int w, int g, int cq, const int NQ, const float *o,
                           const int KS, const float *lse2) {
#pragma unroll
    for (int qi = 0; qi < NQ; qi++) {
        const int k0 = ((qi >> 1) << 2) | (qi & 1); /* o[m][k0]: column +0 (row g), o[m][k0 + 2]: +1 (row g + 8) */
        float v[16];
#pragma unroll
        for (int b = 0; b < 4; b++) {
            v[4 * b] = o[(2 * b) * KS + k0]; v[4 * b + 1] = o[(2 * b) * KS + k0 + 2];
            v[4 * b + 2] = o[(2 * b + 1) * KS + k0]; v[4 * b + 3] = o[(2 * b + 1) * KS + k0 + 2];
        }
        hn_store_row(p, sh, 8 * (qi >> 1) + 2 * cq + (qi & 1), w, g, v, lse2[qi]);
    }
}

/* The dynamic shared memory rounded up to 1024 B (the swizzle atoms) by an offset into the array (not
 * through an integer), so that the compiler keeps the shared state space: LDS, not generic loads. */
MLA_DEV uint8_t *hn_smem_base(uint8_t *raw) { return raw + ((1024u - (smem_u32(raw) & 1023u)) & 1023u); }

MLA_DEV void hn_n1(const hd_params &p, const int G) {
    extern __shared__ uint8_t hn_smem_raw[];
    uint8_t *sm = hn_smem_base(hn_smem_raw);
    hn_small *sh = (hn_small *)(sm + HN_BIG);
    const uint32_t sbase = smem_u32(sm);
    const int tid = threadIdx.x;
    if (!hn_start(p, sh, sm, HN_ROWS, 128u, 128u, G)) return;
    const int nt = sh->nt;
    if (tid >= 256) { /* ---- producer warpgroup ---- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(HN_PRODUCER_REGS));
        hn_produce(p, sh, sbase, HN_RAW0, tid, HN_STAGES, G);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(HN_CONSUMER_REGS));
    hn_load_q(p, sh, sm, tid, HN_ROWS, 0);
    hd_fence_proxy_async(); /* generic stores -> the wgmma reads */
    HD_BAR(3, 256);

    /* ---- consumers ---- */
    const int c = tid >> 7, w = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, cq = lane & 3;
    const int seq = sh->seq, H = p.H;
    /* this thread's 4 query rows: qi = 2i + e -> row 8i + 2cq + e; the key limit of each */
    int kend[4];
#pragma unroll
    for (int qi = 0; qi < 4; qi++) {
        const int q = 8 * (qi >> 1) + 2 * cq + (qi & 1);
        kend[qi] = 0;
        if (q < sh->nrows) {
            const int i = (sh->row0 + q) / H;
            const int ke = p.causal ? seq - sh->q_len + i + 1 : seq;
            kend[qi] = ke < seq ? ke : seq;
        }
    }
    float o[8][8];
#pragma unroll
    for (int m = 0; m < 8; m++)
#pragma unroll
        for (int k = 0; k < 8; k++) o[m][k] = 0.f;
    float mrow[4], lrow[4];
    int cexp = 126; /* P_b = P s_b 2^cexp in f16 (see below); O^T carries the factor 2^cexp */
#pragma unroll
    for (int qi = 0; qi < 4; qi++) { mrow[qi] = -INFINITY; lrow[qi] = 0.f; }
    const float sl2 = p.scale_log2;
    float qf[4]; /* 2^qexp of this thread's rows: the latent part of S back to q's scale */
#pragma unroll
    for (int qi = 0; qi < 4; qi++) qf[qi] = exp2f((float)sh->qexp[8 * (qi >> 1) + 2 * cq + (qi & 1)]);
    const uint32_t pt0 = sbase + HN_P0 + c * 8 * HN_PT;
    const int t0 = 16 * w + g; /* this thread's keys in S: t0, t0 + 8 */

    for (int n = c; n < nt; n += 2) {
        const int s = n % HN_STAGES;
        hd_mbar_wait(smem_u32(&sh->landed[s]), (uint32_t)((n / HN_STAGES) & 1));
        const uint8_t *raw = sm + HN_RAW0 + s * HN_STAGE;
        const int key0 = (sh->t_begin + n) * HN_KEYS;
        /* the scales of keys t0, t0 + 8 (zero where the key does not exist: NaN bytes never reach a product) */
        const uint64_t okm = sh->okm[s]; /* keys whose page exists */
        const int v0 = key0 + t0 < seq && ((okm >> t0) & 1), v1 = key0 + t0 + 8 < seq && ((okm >> (t0 + 8)) & 1);
        float4 sc0 = *(const float4 *)(raw + t0 * HN_ROW + HN_SCL), sc1 = *(const float4 *)(raw + (t0 + 8) * HN_ROW + HN_SCL);
        if (!v0) sc0 = make_float4(0.f, 0.f, 0.f, 0.f);
        if (!v1) sc1 = make_float4(0.f, 0.f, 0.f, 0.f);

        /* S^T: four scale blocks and the rope, all from registers */
        float sa[5][8];
        uint32_t af[2][4][4];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const uint4 w0 = *(const uint4 *)(raw + t0 * HN_ROW + 64 * j + 16 * cq);
            const uint4 w1 = *(const uint4 *)(raw + (t0 + 8) * HN_ROW + 64 * j + 16 * cq);
            const uint32_t x0[4] = {w0.x, w0.y, w0.z, w0.w}, x1[4] = {w1.x, w1.y, w1.z, w1.w};
            if (j >= 2) HD_WGMMA_WAIT(1); /* chunk j - 2's wgmmas (this buffer) are done */
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                af[j & 1][kk][0] = hn_e4m3x2_h(x0[kk]);
                af[j & 1][kk][1] = hn_e4m3x2_h(x1[kk]);
                af[j & 1][kk][2] = hn_e4m3x2_hi(x0[kk]);
                af[j & 1][kk][3] = hn_e4m3x2_hi(x1[kk]);
            }
            uint32_t ar[4][4]; /* the rope (with the last chunk; its registers written before the fence) */
            if (j == 7) hn_rope_frags(raw, t0, cq, ar);
            hd_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                hn_mma_rs_h(sa[j >> 1], af[j & 1][kk], hd_desc(sbase + j * HN_QCH + 32 * kk, 16, 1024), (j & 1) | kk);
            if (j == 7) {
#pragma unroll
                for (int kk = 0; kk < 4; kk++) hn_mma_rs_b(sa[4], ar[kk], hd_desc(sbase + 8 * HN_QCH + 32 * kk, 16, 1024), kk);
            }
            hd_wgmma_commit();
        }
        HD_WGMMA_WAIT(0);
#pragma unroll
        for (int b = 0; b < 5; b++) hd_pin(sa[b], 8);

        /* scores (log2 units), masked; the tile max per row across the warpgroup */
        float x[8], tmax[4];
        const float s0[4] = {sc0.x, sc0.y, sc0.z, sc0.w}, s1[4] = {sc1.x, sc1.y, sc1.z, sc1.w};
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float *sv = (k & 2) ? s1 : s0;
            const int key = key0 + t0 + ((k & 2) ? 8 : 0), qi = ((k >> 2) << 1) | (k & 1);
            const float v = (sa[0][k] * sv[0] + sa[1][k] * sv[1] + sa[2][k] * sv[2] + sa[3][k] * sv[3]) * qf[qi] + sa[4][k];
            const int ok = ((k & 2) ? v1 : v0) && key < kend[qi];
            x[k] = ok ? v * sl2 : -INFINITY;
        }
#pragma unroll
        for (int qi = 0; qi < 4; qi++) {
            const int k = ((qi >> 1) << 2) | (qi & 1);
            float mx = fmaxf(x[k], x[k + 2]);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
            tmax[qi] = mx;
        }
        float smax = fmaxf(fmaxf(fmaxf(fabsf(sc0.x), fabsf(sc0.y)), fmaxf(fabsf(sc0.z), fabsf(sc0.w))),
                           fmaxf(fmaxf(fabsf(sc1.x), fabsf(sc1.y)), fmaxf(fabsf(sc1.z), fabsf(sc1.w))));
        smax = fmaxf(smax, __shfl_xor_sync(0xffffffffu, smax, 4));
        smax = fmaxf(smax, __shfl_xor_sync(0xffffffffu, smax, 8));
        smax = fmaxf(smax, __shfl_xor_sync(0xffffffffu, smax, 16));
        const int par = (n >> 1) & 1;
        if (lane == 0) sh->smx[c][par][w] = smax;
        if (g == 0) {
#pragma unroll
            for (int qi = 0; qi < 4; qi++) sh->red[c][par][w][8 * (qi >> 1) + 2 * cq + (qi & 1)] = tmax[qi];
        }
        HD_BAR_R(1 + c, 128);
        /* keys that do not exist (past seq_len, on an out-of-range page) may hold any bytes, e4m3 NaN
           included, which the exact f16 conversion keeps: their latent bytes are zeroed before P.V
           (0 * NaN). Only on tiles that have such keys; S is done reading them (masked below) and
           the barriers around them order these stores after every warp's S loads and before the
           P.V loads. */
        {
            const int nval = seq - key0;
            if (nval < HN_KEYS || okm != ~0ull) {
                uint8_t *rw = sm + HN_RAW0 + s * HN_STAGE;
                for (int k = tid & 127; k < HN_KEYS * 32; k += 128) { /* 16-byte pieces: key k / 32, slot (k / 4) % 8 */
                    const int key = k >> 5, j = (k >> 2) & 7, q4 = k & 3;
                    if (key >= nval || !((okm >> key) & 1))
                        *(uint4 *)(rw + key * HN_ROW + 64 * j + 16 * q4) = make_uint4(0u, 0u, 0u, 0u);
                }
            }
        }
        /* the scale exponent: |P s_b| 2^cexp < 2^15 for every key so far (f16 holds it, lo keeps 2^-22 of
           it); when a tile lowers cexp, O^T is rescaled with the running max's alpha */
        float cscale = 1.f;
        {
            const float sm4 = fmaxf(fmaxf(sh->smx[c][par][0], sh->smx[c][par][1]), fmaxf(sh->smx[c][par][2], sh->smx[c][par][3]));
            const int e = (int)((__float_as_uint(sm4) >> 23) & 0xffu);
            if (sm4 > 0.f && e < 255) { /* zero: no key; inf / NaN: carried as they come */
                int ct = 14 - (e - 127);
                ct = ct < -100 ? -100 : ct;
                if (ct < cexp) { cscale = exp2f((float)(ct - cexp)); cexp = ct; }
            }
        }
        float alpha[4], base[4];
#pragma unroll
        for (int qi = 0; qi < 4; qi++) {
            const int q = 8 * (qi >> 1) + 2 * cq + (qi & 1);
            const float mt = fmaxf(fmaxf(sh->red[c][par][0][q], sh->red[c][par][1][q]), fmaxf(sh->red[c][par][2][q], sh->red[c][par][3][q]));
            const float mn = fmaxf(mrow[qi], mt);
            base[qi] = mn == -INFINITY ? 0.f : mn;
            alpha[qi] = exp2f(mrow[qi] - base[qi]);
            mrow[qi] = mn;
        }
        float pv[8];
        const float c2 = exp2f((float)cexp);
#pragma unroll
        for (int k = 0; k < 8; k++) pv[k] = exp2f(x[k] - base[((k >> 2) << 1) | (k & 1)]);
#pragma unroll
        for (int qi = 0; qi < 4; qi++) {
            const int k = ((qi >> 1) << 2) | (qi & 1);
            lrow[qi] = lrow[qi] * alpha[qi] + pv[k] + pv[k + 2];
        }
#pragma unroll
        for (int m = 0; m < 8; m++)
#pragma unroll
            for (int k = 0; k < 8; k++) o[m][k] *= alpha[((k >> 2) << 1) | (k & 1)] * cscale;

        /* P_b = P s_b(key) as hi + lo, transposed into [16 rows][64 keys] (stmatrix .trans) */
        {
            const int mi = lane >> 3, jr = lane & 7; /* this lane's address: row jr of matrix mi = 2i + th */
            const uint32_t off = (uint32_t)((8 * (mi >> 1) + jr) * 128 + ((((2 * w + (mi & 1)) ^ jr) & 7) << 4));
#pragma unroll
            for (int b = 0; b < 4; b++) {
                uint32_t hi[4], lo[4];
#pragma unroll
                for (int mtx = 0; mtx < 4; mtx++) { /* matrix 2i + th: elements 4i + 2th, + 1 */
                    const int k = 4 * (mtx >> 1) + 2 * (mtx & 1);
                    const float sv = ((mtx & 1) ? s1[b] : s0[b]) * c2;
                    const float a0 = pv[k] * sv, a1 = pv[k + 1] * sv;
                    const __half2 h = __floats2half2_rn(a0, a1);
                    const float2 hf = __half22float2(h);
                    const __half2 l2 = __floats2half2_rn(a0 - hf.x, a1 - hf.y);
                    hi[mtx] = *(const uint32_t *)&h;
                    lo[mtx] = *(const uint32_t *)&l2;
                }
                asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(pt0 + (2 * b) * HN_PT + off),
                             "r"(hi[0]), "r"(hi[1]), "r"(hi[2]), "r"(hi[3]) : "memory");
                asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(pt0 + (2 * b + 1) * HN_PT + off),
                             "r"(lo[0]), "r"(lo[1]), "r"(lo[2]), "r"(lo[3]) : "memory");
            }
        }
        hd_fence_proxy_async();
        HD_BAR_R(1 + c, 128);

        /* O^T += V^T P_b^T, V^T from registers: keys 16ks + 2cq (+1, +8, +9), columns 128b + 32w + 4g .. +3 */
        {
            const int off = 32 * w + 4 * g;
            uint32_t va[2][2][4];
#pragma unroll
            for (int it = 0; it < 16; it++) {
                const int b = it >> 2, ks = it & 3;
                const uint8_t *src = raw + 128 * b + off + (16 * ks + 2 * cq) * HN_ROW;
                const uint32_t r0 = *(const uint32_t *)src, r1 = *(const uint32_t *)(src + HN_ROW);
                const uint32_t r8 = *(const uint32_t *)(src + 8 * HN_ROW), r9 = *(const uint32_t *)(src + 9 * HN_ROW);
                const uint32_t a01 = hn_prmt(r0, r1, 0x5140u), b01 = hn_prmt(r0, r1, 0x7362u);
                const uint32_t a89 = hn_prmt(r8, r9, 0x5140u), b89 = hn_prmt(r8, r9, 0x7362u);
                if (it >= 2) HD_WGMMA_WAIT(1);
                uint32_t(*A)[4] = va[it & 1];
                A[0][0] = hn_e4m3x2_h(a01); A[0][1] = hn_e4m3x2_hi(a01); A[0][2] = hn_e4m3x2_h(a89); A[0][3] = hn_e4m3x2_hi(a89);
                A[1][0] = hn_e4m3x2_h(b01); A[1][1] = hn_e4m3x2_hi(b01); A[1][2] = hn_e4m3x2_h(b89); A[1][3] = hn_e4m3x2_hi(b89);
                hd_wgmma_fence();
                const uint64_t dh = hd_desc(pt0 + (2 * b) * HN_PT + 32 * ks, 16, 1024);
                const uint64_t dl = hd_desc(pt0 + (2 * b + 1) * HN_PT + 32 * ks, 16, 1024);
                hn_mma_rs_h(o[2 * b], A[0], dh, 1);
                hn_mma_rs_h(o[2 * b], A[0], dl, 1);
                hn_mma_rs_h(o[2 * b + 1], A[1], dh, 1);
                hn_mma_rs_h(o[2 * b + 1], A[1], dl, 1);
                hd_wgmma_commit();
            }
            HD_WGMMA_WAIT(0);
#pragma unroll
            for (int m = 0; m < 8; m++) hd_pin(o[m], 8);
        }
        hd_mbar_arrive(smem_u32(&sh->empty[s])); /* every reader arrives: racecheck does not credit a
                                                     __syncwarp before one lane's arrival here */
    }

    /* ---- row sums across the warpgroup; consumer 1 hands over; consumer 0 writes ---- */
    /* consumer 0 is done reading stage 0 (every tile consumed, nothing in flight) -> consumer 1 writes
       its O^T, max, sums and exponent there -> consumer 0 reads them */
    hn_sum_rows(sh, c, w, g, cq, 4, mrow, lrow);
    float *ox = (float *)(sm + HN_RAW0);
    if (c == 1) {
        if (tid == 128) sh->cx = cexp;
#pragma unroll
        for (int m = 0; m < 8; m++)
            *(float4 *)(ox + ((m * 2) * 128 + (tid - 128)) * 4) = make_float4(o[m][0], o[m][1], o[m][2], o[m][3]),
            *(float4 *)(ox + ((m * 2 + 1) * 128 + (tid - 128)) * 4) = make_float4(o[m][4], o[m][5], o[m][6], o[m][7]);
        hd_mbar_arrive(smem_u32(&sh->oxready));
        return;
    }
    hd_mbar_wait(smem_u32(&sh->oxready), 0u);
    float f0[4], f1[4], scl[4], lse2[4];
#pragma unroll
    for (int qi = 0; qi < 4; qi++) {
        lse2[qi] = hn_merge_row(p, sh, 8 * (qi >> 1) + 2 * cq + (qi & 1), mrow[qi], lrow[qi], &f0[qi], &f1[qi], &scl[qi]);
        f0[qi] *= exp2f((float)-cexp); /* O^T carries 2^cexp of its consumer */
        f1[qi] *= exp2f((float)-sh->cx);
    }
#pragma unroll
    for (int m = 0; m < 8; m++) {
        const float4 u = *(const float4 *)(ox + ((m * 2) * 128 + tid) * 4), v = *(const float4 *)(ox + ((m * 2 + 1) * 128 + tid) * 4);
        const float o1[8] = {u.x, u.y, u.z, u.w, v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const int qi = ((k >> 2) << 1) | (k & 1);
            o[m][k] = (o[m][k] * f0[qi] + o1[k] * f1[qi]) * scl[qi];
        }
    }
    hn_store_rows(p, sh, w, g, cq, 4, &o[0][0], 8, lse2);
}
__global__ void __launch_bounds__(HN_THREADS, 1) hn_decode_kernel_n1(const __grid_constant__ hd_params p) { hn_n1(p, 0); }
__global__ void __launch_bounds__(HN_THREADS, 1) hn_decode_kernel_n1_r(const __grid_constant__ hd_params p) { hn_n1(p, 1); }

/* ==== the 32-row kernel (w1): FP8-656 caches with more than 16 rows a request ===================
   The 16-row kernel's structure (S^T = K Q^T, O^T = V^T P^T, raw ring by bulk copies, K and V from
   registers, two consumers on alternate tiles) at N = 32, which doubles the tensor work per
   converted byte. O^T takes 128 registers a thread, so the 16-row kernel's per-block S accumulators
   and per-block P_b (8 P^T tiles) do not fit:
     S stays exact: K exact in f16 as before, each scale block's wgmmas into one accumulator that is
       folded into the f32 sum S with the exact scales once they are done (the next chunk's
       conversion runs under them); the rope by a bf16 wgmma from registers against Q's rope times
       2^-qexp, added last. (A rounded f16 scale in K put S 2^-12 of its size off per block, lse by
       ~4e-3 at scores of ~20; two block accumulators spilled.)
     V carries the scales: per key k, e_k = floor(log2 max_b |s_kb|) (clamped to [-126, 126]); V of
       block b converted as f16(e4m3) * f16(s_kb 2^-e_k) (|value| < 2 * 448: no f16 overflow; the f16
       scale is 2^-11 off per key and block, hence MLA_PRECISION_BF16_P only: hd_narrow);
     scores x = S (log2 units, masked); the running max and P are taken over y = x + e_k:
       P'_k = exp2(y_k - m) <= 1, so that P'_k V'_k = exp2(x_k - m) V_k s_k, the true term, and the
       row sums add P'_k 2^-e_k = exp2(x_k - m) (f32);
     P' goes to P.V as two f16 terms (hi + lo).
   Shared memory: Q 9 x 4096 | raw ring (as the 16-row kernel) | P^T 2 x 2 x [32 rows][64 keys] f16 |
   small (the f16 scale table sv per consumer and tile parity, for V's conversion). */
#define HW_ROWS 32
#define HW_QCH 4096                         /* one Q chunk: 32 rows x 128 B */
#define HW_RAW0 (9 * HW_QCH)                /* 36864 */
#define HW_P0 (HW_RAW0 + HN_STAGES * HN_STAGE) /* 204800 */
#define HW_PT 4096                          /* one P^T tile */
#define HW_BIG (HW_P0 + 4 * HW_PT)          /* 221184: P^T hi, lo per consumer */
#define HW_SMEM_BYTES (1024 + HW_BIG + (int)sizeof(hn_small))
static_assert(HW_SMEM_BYTES <= 232448, "shared memory budget (227 KB per block)");
static_assert(HW_RAW0 % 1024 == 0 && HW_P0 % 1024 == 0, "1024-byte swizzle atoms");
static_assert(128 * 128 * 4 <= 2 * HN_STAGE, "consumer 1's O^T (128 threads x 128 f32) fits in stages 0-1 at the end");

/* D[64x32] (+)= A[64x16] B[16x32], f16: A from registers, B K-major in smem */
MLA_DEV void hw_mma_h(float d[16], const uint32_t a[4], uint64_t db, int acc) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
}
MLA_DEV void hw_mma_rs_b(float d[16], const uint32_t a[4], uint64_t db, int acc) { /* bf16, A from registers (the rope) */
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
        "{%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
          "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));
}
MLA_DEV uint32_t hw_hmul2(uint32_t a, uint32_t b) {
    uint32_t r;
    asm("mul.rn.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
/* e_k of a key's four scales: floor(log2 max |s|) in [-126, 126]; 0 for zero, subnormal, inf, NaN
   (inf / NaN scales are carried into the products as they come) */
MLA_DEV int hw_kexp(float4 s) {
    const float m = fmaxf(fmaxf(fabsf(s.x), fabsf(s.y)), fmaxf(fabsf(s.z), fabsf(s.w)));
    const int e = (int)((__float_as_uint(m) >> 23) & 0xffu);
    if (e == 0 || e == 255) return 0;
    return e - 127 > 126 ? 126 : e - 127;
}
MLA_DEV float hw_f4(float4 v, int b) { return b == 0 ? v.x : b == 1 ? v.y : b == 2 ? v.z : v.w; } /* b compile-time */
MLA_DEV float hw_pow2(int e) { return __int_as_float((127 + e) << 23); } /* e in [-126, 127] */
/* The 32- and 64-row kernels' per-row state (threads tid < NR; after hn_load_q, before the consumers'
 * barrier): the key limit kend (causal: seq - q_len + i + 1), the scale of the row's scores qs =
 * scale_log2 2^qexp, and kmin, the block's smallest limit (its first row's: limits grow with the row). */
MLA_DEV void hn_row_limits(const hd_params &p, hn_small *sh, int tid, const int NR) {
    if (tid >= NR) return;
    const int seq = sh->seq;
    int ke = 0;
    if (tid < sh->nrows) {
        const int i = (sh->row0 + tid) / p.H;
        ke = p.causal ? seq - sh->q_len + i + 1 : seq;
        ke = ke < seq ? ke : seq;
    }
    sh->kend[tid] = ke;
    sh->qs[tid] = p.scale_log2 * exp2f((float)sh->qexp[tid]);
    if (tid == 0) sh->kmin = ke;
}
/* The 32- and 64-row kernels' consumers before their first tile: Q (its rope scaled too), the per-row
 * state (hn_row_limits), then the generic stores handed to the wgmma reads and barrier 3 over the 256. */
MLA_DEV void hn_consumers_start(const hd_params &p, hn_small *sh, uint8_t *sm, int tid, const int NR) {
    hn_load_q(p, sh, sm, tid, NR, 1);
    hn_row_limits(p, sh, tid, NR);
    hd_fence_proxy_async();
    HD_BAR(3, 256);
}
MLA_DEV void hn_w1(const hd_params &p, const int G) {
    extern __shared__ uint8_t hn_smem_raw[];
    uint8_t *sm = hn_smem_base(hn_smem_raw);
    hn_small *sh = (hn_small *)(sm + HW_BIG);
    const uint32_t sbase = smem_u32(sm);
    const int tid = threadIdx.x;
    if (!hn_start(p, sh, sm, HW_ROWS, 128u, 128u, G)) return;
    const int nt = sh->nt;
    if (tid >= 256) { /* ---- producer warpgroup ---- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(HN_PRODUCER_REGS));
        hn_produce(p, sh, sbase, HW_RAW0, tid, HN_STAGES, G);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(HN_CONSUMER_REGS));
    hn_consumers_start(p, sh, sm, tid, HW_ROWS);
    const int seq = sh->seq;

    /* ---- consumers ---- */
    /* this thread's 8 query rows: qi = 2j + e -> row 8j + 2cq + e (S^T accumulator k = 4j + 2h + e,
       key t0 + 8h) */
    const int c = tid >> 7, w = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, cq = lane & 3;
    float o[8][16];
#pragma unroll
    for (int m = 0; m < 8; m++)
#pragma unroll
        for (int k = 0; k < 16; k++) o[m][k] = 0.f;
    float mrow[8], lrow[8];
#pragma unroll
    for (int qi = 0; qi < 8; qi++) { mrow[qi] = -INFINITY; lrow[qi] = 0.f; }
    const uint32_t pt = sbase + HW_P0 + c * 2 * HW_PT; /* hi, then lo */
    const int t0 = 16 * w + g; /* this thread's keys in S: t0, t0 + 8 */

    for (int n = c; n < nt; n += 2) {
        const int s = n % HN_STAGES, par = (n >> 1) & 1;
        hd_mbar_wait(smem_u32(&sh->landed[s]), (uint32_t)((n / HN_STAGES) & 1));
        const uint8_t *raw = sm + HW_RAW0 + s * HN_STAGE;
        const int key0 = (sh->t_begin + n) * HN_KEYS;
        const uint64_t okm = sh->okm[s]; /* keys whose page exists */
        const int v0 = key0 + t0 < seq && ((okm >> t0) & 1), v1 = key0 + t0 + 8 < seq && ((okm >> (t0 + 8)) & 1);
        float4 sc0 = *(const float4 *)(raw + t0 * HN_ROW + HN_SCL), sc1 = *(const float4 *)(raw + (t0 + 8) * HN_ROW + HN_SCL);
        if (!v0) sc0 = make_float4(0.f, 0.f, 0.f, 0.f);
        if (!v1) sc1 = make_float4(0.f, 0.f, 0.f, 0.f);
        const int e0 = hw_kexp(sc0), e1 = hw_kexp(sc1);
        const float f0 = hw_pow2(-e0), f1 = hw_pow2(-e1);
        const float s0[4] = {sc0.x * f0, sc0.y * f0, sc0.z * f0, sc0.w * f0}, s1[4] = {sc1.x * f1, sc1.y * f1, sc1.z * f1, sc1.w * f1};
        /* V's scale table: thread cq writes block cq of its two keys */
        {
            const float u0 = cq == 0 ? s0[0] : cq == 1 ? s0[1] : cq == 2 ? s0[2] : s0[3];
            const float u1 = cq == 0 ? s1[0] : cq == 1 ? s1[1] : cq == 2 ? s1[2] : s1[3];
            sh->sv[c][par][cq][t0] = __half_as_ushort(__float2half_rn(u0));
            sh->sv[c][par][cq][t0 + 8] = __half_as_ushort(__float2half_rn(u1));
        }

        /* S^T 2^-qexp = sum_b s_b(key) K_b Q_b^T + K_rope Q_rope^T: K_b (chunks 2b, 2b + 1) exact in f16
           from the raw bytes into one accumulator, folded into S with the exact f32 scales before the
           next block starts (the next chunk's conversion runs under the block's wgmmas); the rope by
           a bf16 wgmma from registers, added last. (A rounded f16 scale in K was 2^-12 off per block:
           S off by 2^-12 of its size, lse by ~4e-3 at scores of ~20; two accumulators spilled.) */
        float sa[16], acc[16];
        uint32_t af[2][4][4];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            uint32_t(*A)[4] = af[j & 1];
            const uint4 w0 = *(const uint4 *)(raw + t0 * HN_ROW + 64 * j + 16 * cq);
            const uint4 w1 = *(const uint4 *)(raw + (t0 + 8) * HN_ROW + 64 * j + 16 * cq);
            const uint32_t x0[4] = {w0.x, w0.y, w0.z, w0.w}, x1[4] = {w1.x, w1.y, w1.z, w1.w};
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                A[kk][0] = hn_e4m3x2_h(x0[kk]);
                A[kk][1] = hn_e4m3x2_h(x1[kk]);
                A[kk][2] = hn_e4m3x2_hi(x0[kk]);
                A[kk][3] = hn_e4m3x2_hi(x1[kk]);
            }
            if (j >= 2 && (j & 1) == 0) { /* block j / 2 - 1 is done: fold it */
                const int b = j / 2 - 1;
                HD_WGMMA_WAIT(0);
                hd_pin(acc, 16);
#pragma unroll
                for (int k = 0; k < 16; k++) sa[k] = (b == 0 ? 0.f : sa[k]) + acc[k] * (((k >> 1) & 1) ? hw_f4(sc1, b) : hw_f4(sc0, b));
            }
            hd_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++) hw_mma_h(acc, A[kk], hd_desc(sbase + j * HW_QCH + 32 * kk, 16, 1024), (j & 1) | kk);
            hd_wgmma_commit();
        }
        HD_WGMMA_WAIT(0); /* block 3 */
        hd_pin(acc, 16);
#pragma unroll
        for (int k = 0; k < 16; k++) sa[k] += acc[k] * (((k >> 1) & 1) ? sc1.w : sc0.w);
        {
            uint32_t ar[4][4];
            hn_rope_frags(raw, t0, cq, ar);
            hd_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; kk++) hw_mma_rs_b(acc, ar[kk], hd_desc(sbase + 8 * HW_QCH + 32 * kk, 16, 1024), kk);
            hd_wgmma_commit();
            HD_WGMMA_WAIT(0);
            hd_pin(acc, 16);
        }
        hd_pin(acc, 16);
#pragma unroll
        for (int k = 0; k < 16; k++) sa[k] += acc[k];

        /* scores (log2 units, masked) and y = x + e_k; the tile max of y per row across the warpgroup */
        float y[16], tmax[8];
#pragma unroll
        for (int k = 0; k < 16; k++) {
            const int h = (k >> 1) & 1, qi = ((k >> 2) << 1) | (k & 1);
            const int key = key0 + t0 + 8 * h;
            const int q = 8 * (qi >> 1) + 2 * cq + (qi & 1);
            const int ok = (h ? v1 : v0) && key < sh->kend[q];
            y[k] = ok ? sa[k] * sh->qs[q] + (float)(h ? e1 : e0) : -INFINITY;
        }
#pragma unroll
        for (int qi = 0; qi < 8; qi++) {
            const int k = ((qi >> 1) << 2) | (qi & 1);
            float mx = fmaxf(y[k], y[k + 2]);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
            tmax[qi] = mx;
        }
        if (g == 0) {
#pragma unroll
            for (int qi = 0; qi < 8; qi++) sh->red[c][par][w][8 * (qi >> 1) + 2 * cq + (qi & 1)] = tmax[qi];
        }
        HD_BAR_R(1 + c, 128);
        /* keys that do not exist: latent bytes zeroed before P.V (f16 keeps e4m3 NaN; 0 * NaN) */
        {
            const int nval = seq - key0;
            if (nval < HN_KEYS || okm != ~0ull) {
                uint8_t *rw = sm + HW_RAW0 + s * HN_STAGE;
                for (int k = tid & 127; k < HN_KEYS * 32; k += 128) {
                    const int key = k >> 5, j = (k >> 2) & 7, q4 = k & 3;
                    if (key >= nval || !((okm >> key) & 1))
                        *(uint4 *)(rw + key * HN_ROW + 64 * j + 16 * q4) = make_uint4(0u, 0u, 0u, 0u);
                }
            }
        }
        float alpha[8], base[8];
#pragma unroll
        for (int qi = 0; qi < 8; qi++) {
            const int q = 8 * (qi >> 1) + 2 * cq + (qi & 1);
            const float mt = fmaxf(fmaxf(sh->red[c][par][0][q], sh->red[c][par][1][q]), fmaxf(sh->red[c][par][2][q], sh->red[c][par][3][q]));
            const float mn = fmaxf(mrow[qi], mt);
            base[qi] = mn == -INFINITY ? 0.f : mn;
            alpha[qi] = exp2f(mrow[qi] - base[qi]);
            mrow[qi] = mn;
        }
        float pv[16];
#pragma unroll
        for (int k = 0; k < 16; k++) pv[k] = exp2f(y[k] - base[((k >> 2) << 1) | (k & 1)]);
        const float g0 = hw_pow2(-e0), g1 = hw_pow2(-e1);
#pragma unroll
        for (int qi = 0; qi < 8; qi++) {
            const int k = ((qi >> 1) << 2) | (qi & 1);
            lrow[qi] = lrow[qi] * alpha[qi] + pv[k] * g0 + pv[k + 2] * g1;
        }
#pragma unroll
        for (int m = 0; m < 8; m++)
#pragma unroll
            for (int k = 0; k < 16; k++) o[m][k] *= alpha[((k >> 2) << 1) | (k & 1)];

        /* P' as f16 hi + lo, transposed into [32 rows][64 keys] by stmatrix .trans: matrix (j, h) =
           keys 16w + 8h .., rows 8j ..; two x4 stores a term (rows 0-15, 16-31) */
        {
            const int mi = lane >> 3, jr = lane & 7;
            const uint32_t off = (uint32_t)((8 * (mi >> 1) + jr) * 128 + ((((2 * w + (mi & 1)) ^ jr) & 7) << 4));
#pragma unroll
            for (int half = 0; half < 2; half++) {
                uint32_t hi[4], lo[4];
#pragma unroll
                for (int mtx = 0; mtx < 4; mtx++) {
                    const int k = 8 * half + 4 * (mtx >> 1) + 2 * (mtx & 1);
                    const __half2 h = __floats2half2_rn(pv[k], pv[k + 1]);
                    const float2 hf = __half22float2(h);
                    const __half2 l2 = __floats2half2_rn(pv[k] - hf.x, pv[k + 1] - hf.y);
                    hi[mtx] = *(const uint32_t *)&h;
                    lo[mtx] = *(const uint32_t *)&l2;
                }
                asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(pt + half * 2048 + off),
                             "r"(hi[0]), "r"(hi[1]), "r"(hi[2]), "r"(hi[3]) : "memory");
                asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(pt + HW_PT + half * 2048 + off),
                             "r"(lo[0]), "r"(lo[1]), "r"(lo[2]), "r"(lo[3]) : "memory");
            }
        }
        hd_fence_proxy_async();
        HD_BAR_R(1 + c, 128);

        /* O^T += V'^T P'^T: V' = f16(e4m3) * sv (keys 16ks + 2cq, +1 and +8, +9), columns 128b + 32w + 4g .. +3 */
        {
            const int off = 32 * w + 4 * g;
            const uint16_t *svp = &sh->sv[c][par][0][0];
            uint32_t va[2][2][4];
#pragma unroll
            for (int it = 0; it < 16; it++) {
                const int b = it >> 2, ks = it & 3;
                const uint8_t *src = raw + 128 * b + off + (16 * ks + 2 * cq) * HN_ROW;
                const uint32_t r0 = *(const uint32_t *)src, r1 = *(const uint32_t *)(src + HN_ROW);
                const uint32_t r8 = *(const uint32_t *)(src + 8 * HN_ROW), r9 = *(const uint32_t *)(src + 9 * HN_ROW);
                const uint32_t m01 = *(const uint32_t *)(svp + b * HN_KEYS + 16 * ks + 2 * cq);
                const uint32_t m89 = *(const uint32_t *)(svp + b * HN_KEYS + 16 * ks + 2 * cq + 8);
                const uint32_t a01 = hn_prmt(r0, r1, 0x5140u), b01 = hn_prmt(r0, r1, 0x7362u);
                const uint32_t a89 = hn_prmt(r8, r9, 0x5140u), b89 = hn_prmt(r8, r9, 0x7362u);
                if (it >= 2) HD_WGMMA_WAIT(1);
                uint32_t(*A)[4] = va[it & 1];
                A[0][0] = hw_hmul2(hn_e4m3x2_h(a01), m01); A[0][1] = hw_hmul2(hn_e4m3x2_hi(a01), m01);
                A[0][2] = hw_hmul2(hn_e4m3x2_h(a89), m89); A[0][3] = hw_hmul2(hn_e4m3x2_hi(a89), m89);
                A[1][0] = hw_hmul2(hn_e4m3x2_h(b01), m01); A[1][1] = hw_hmul2(hn_e4m3x2_hi(b01), m01);
                A[1][2] = hw_hmul2(hn_e4m3x2_h(b89), m89); A[1][3] = hw_hmul2(hn_e4m3x2_hi(b89), m89);
                hd_wgmma_fence();
                const uint64_t dh = hd_desc(pt + 32 * ks, 16, 1024), dl = hd_desc(pt + HW_PT + 32 * ks, 16, 1024);
                hw_mma_h(o[2 * b], A[0], dh, 1);
                hw_mma_h(o[2 * b], A[0], dl, 1);
                hw_mma_h(o[2 * b + 1], A[1], dh, 1);
                hw_mma_h(o[2 * b + 1], A[1], dl, 1);
                hd_wgmma_commit();
            }
            HD_WGMMA_WAIT(0);
#pragma unroll
            for (int m = 0; m < 8; m++) hd_pin(o[m], 16);
        }
        hd_mbar_arrive(smem_u32(&sh->empty[s]));
    }

    /* ---- row sums across the warpgroup; consumer 1 hands over; consumer 0 writes ---- */
    hn_sum_rows(sh, c, w, g, cq, 8, mrow, lrow);
    float *ox = (float *)(sm + HW_RAW0); /* stages 0-1 */
    if (c == 1) {
#pragma unroll
        for (int m = 0; m < 8; m++)
#pragma unroll
            for (int u = 0; u < 4; u++)
                *(float4 *)(ox + ((m * 4 + u) * 128 + (tid - 128)) * 4) = make_float4(o[m][4 * u], o[m][4 * u + 1], o[m][4 * u + 2], o[m][4 * u + 3]);
        hd_mbar_arrive(smem_u32(&sh->oxready));
        return;
    }
    hd_mbar_wait(smem_u32(&sh->oxready), 0u);
    float fa[8], fb[8], scl[8], lse2[8];
#pragma unroll
    for (int qi = 0; qi < 8; qi++)
        lse2[qi] = hn_merge_row(p, sh, 8 * (qi >> 1) + 2 * cq + (qi & 1), mrow[qi], lrow[qi], &fa[qi], &fb[qi], &scl[qi]);
#pragma unroll
    for (int m = 0; m < 8; m++)
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const float4 v = *(const float4 *)(ox + ((m * 4 + u) * 128 + tid) * 4);
            const float o1[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int kk = 0; kk < 4; kk++) {
                const int k = 4 * u + kk, qi = ((k >> 2) << 1) | (k & 1);
                o[m][k] = (o[m][k] * fa[qi] + o1[kk] * fb[qi]) * scl[qi];
            }
        }
    hn_store_rows(p, sh, w, g, cq, 8, &o[0][0], 16, lse2);
}
__global__ void __launch_bounds__(HN_THREADS, 1) hn_decode_kernel_w1(const __grid_constant__ hd_params p) { hn_w1(p, 0); }
__global__ void __launch_bounds__(HN_THREADS, 1) hn_decode_kernel_w1_r(const __grid_constant__ hd_params p) { hn_w1(p, 1); }

/* ==== the 64-row kernel (s1): FP8-656 caches with more than 32 rows a request ====================
   Where h s_q is large (h = 128), decode on an FP8 cache is bound by the tensor work, and the 64-row
   kernel of decode_hopper.cu spends each tile's cycle dequantizing it into bf16 in shared memory.
   s1 keeps the raw-tile structure (the ring of the cache's 656-byte rows by bulk copies, any page
   size; K and V reach the tensor cores from registers, converted exactly to f16) at N = 64 rows,
   with the two consumers on FlashMLA's seesaw: each owns half of O^T (latent columns of scale
   blocks 2c, 2c + 1) for every tile, and they take turns computing S of a tile (tile n: consumer
   n % 2, its "owner"):
     S^T[64 keys x 64 rows] (owner) as the 32-row kernel: K exact in f16 from the raw bytes, each
       scale block's wgmmas into one accumulator folded into S with the exact f32 scales, the
       rope by a bf16 wgmma, Q in f16 times 2^-qexp per row (hn_load_q); or, in hn_decode_kernel_s1c
       where hn_scale_scan_kernel found every scale of the request a power of two close enough to
       the key's largest, as one chain with the scales folded into K' (hs_scores_1c, exact there);
     softmax (owner): y = x + e_k (the 32-row kernel's per-key exponent), the tile max per row
       across the four warps, the running max m_n published in a ring (lazy: it moves only when the
       tile max passes it by more than 2^8, and a per-tile flag says whether any row moved; since
       v68 the tile max is taken only on tile 0 and where a score passes m_{n-1} + 15, see hs_softmax),
       P' = exp2(y - m_n) as one f16 term (MLA_PRECISION_BF16_P only, as the 32-row kernel), the
       f16 scale table of V, and P'^T stored by stmatrix; then pready[n % 2];
     P.V (both consumers, every tile in order): O^T_c *= exp2(m_{n-1} - m_n) (only on tiles where a
       row moved), O^T_c += V'_c^T P'^T with V' = f16(e4m3) * f16(s 2^-e_k) from registers.
   Each consumer runs, for its own tiles n: S_n, P.V_{n-1} (the other's tile), softmax_n, P.V_n; so
   one consumer's S runs beside the other's softmax and P.V (written as one loop over the tiles u
   with one call site per stage: the instruction footprint matters, see the kernel). Row sums: each lane keeps two rows'
   sums over its warp's keys and its own tiles (a reduce-scatter across the 8 lanes of a column),
   merged at the end; each consumer writes its half of out. Registers: O^T 128 a thread.
   Shared memory: Q 9 x 8192 | raw ring of 3 stages | P'^T 2 x [64 rows][64 keys] f16 | the max
   ring (4 x 64 f32) | small. */
#define HS_ROWS 64
#define HS_QCH 8192                            /* one Q chunk: 64 rows x 128 B */
#define HS_RAW0 (9 * HS_QCH)                   /* 73728 */
#define HS_STAGES 3
#define HS_P0 (HS_RAW0 + HS_STAGES * HN_STAGE) /* 199680 */
#define HS_PT 8192                             /* one P'^T tile */
#define HS_MX (HS_P0 + 2 * HS_PT)              /* 216064: running max after tile n at (n % 4) * 64 + row */
#define HS_BIG (HS_MX + 4 * HS_ROWS * 4)       /* 217088 */
#define HS_SMEM_BYTES (1024 + HS_BIG + (int)sizeof(hn_small))
#define HS_PRODUCER_REGS 24
#define HS_CONSUMER_REGS 240                   /* 24 + 2 x 240 = 3 x 168 */
static_assert(HS_SMEM_BYTES <= 232448, "shared memory budget (227 KB per block)");
static_assert(HS_RAW0 % 1024 == 0 && HS_P0 % 1024 == 0, "1024-byte swizzle atoms");
static_assert(HS_STAGES <= HN_STAGES, "hn_small's per-stage barriers");
static_assert(HN_LPT_ROWS == HS_ROWS, "the longest-first slots are the 64-row kernel's (hn_start)");
static_assert(HS_ROWS * HN_OPITCH_F <= HS_P0, "the staged f32 partials fit below P'^T (Q and the ring are free at the end)");
static_assert(offsetof(hn_small, red) % 8 == 0 && offsetof(hn_small, lsum) % 8 == 0 && offsetof(hn_small, mx) % 8 == 0 &&
                  offsetof(hn_small, lx) % 8 == 0 && offsetof(hn_small, kend) % 8 == 0 && offsetof(hn_small, qs) % 8 == 0,
              "the 64-row kernel's 8-byte row-pair accesses");

/* D[64x64] (+)= A[64x16] B[16x64]: A from registers, B K-major in smem; f16 and bf16 */
HD_WGMMA_M64N64_RS(hs_mma_h, f16, 0)
HD_WGMMA_M64N64_RS(hs_mma_b, bf16, 0)

/* u[2j + e] (row 8j + 2cq + e, j = 0..7) reduced over the 8 lanes g of this cq (max, or the sum),
 * scattered so that lane g keeps rows 8g + 2cq + e: out[e]. 14 shuffles instead of 48. */
MLA_DEV void hs_rs(const float u[16], int g, const int is_max, float out[2]) {
    float v[8], x[4];
    const int g2 = g & 4, g1 = g & 2, g0 = g & 1;
#pragma unroll
    for (int t = 0; t < 8; t++) {
        const float keep = g2 ? u[8 + t] : u[t], send = g2 ? u[t] : u[8 + t];
        const float r = __shfl_xor_sync(0xffffffffu, send, 16);
        v[t] = is_max ? fmaxf(keep, r) : keep + r;
    }
#pragma unroll
    for (int t = 0; t < 4; t++) {
        const float keep = g1 ? v[4 + t] : v[t], send = g1 ? v[t] : v[4 + t];
        const float r = __shfl_xor_sync(0xffffffffu, send, 8);
        x[t] = is_max ? fmaxf(keep, r) : keep + r;
    }
#pragma unroll
    for (int t = 0; t < 2; t++) {
        const float keep = g0 ? x[2 + t] : x[t], send = g0 ? x[t] : x[2 + t];
        const float r = __shfl_xor_sync(0xffffffffu, send, 4);
        out[t] = is_max ? fmaxf(keep, r) : keep + r;
    }
}

/* The owner's S^T 2^-qexp of one tile (raw: its stage) into sa (accumulator order: sa[4j + 2h + e] =
 * key t0 + 8h, row 8j + 2cq + e): 16 groups of two k-steps (A double-buffered), block b's
 * accumulator folded with the scales of keys t0, t0 + 8 once its four groups are done; the rope last. */
MLA_DEV void hs_scores(const uint8_t *raw, uint32_t sbase, int t0, int cq, float sa[32]) {
    const uint64_t dq = hd_desc(sbase, 16, 1024); /* Q^T chunk j, k-step kk: + (j HS_QCH + 32 kk) / 16 */
    float acc[32];
    uint32_t af[2][2][4];
    uint4 w0 = make_uint4(0u, 0u, 0u, 0u), w1 = w0;
#pragma unroll
    for (int grp = 0; grp < 16; grp++) {
        const int j = grp >> 1, half = grp & 1;
        if (!half) {
            w0 = *(const uint4 *)(raw + t0 * HN_ROW + 64 * j + 16 * cq);
            w1 = *(const uint4 *)(raw + (t0 + 8) * HN_ROW + 64 * j + 16 * cq);
        }
        const uint32_t x0[4] = {w0.x, w0.y, w0.z, w0.w}, x1[4] = {w1.x, w1.y, w1.z, w1.w};
        if (grp >= 4 && (grp & 3) == 0) { /* block grp / 4 - 1 is done: fold it */
            const int b = grp / 4 - 1;
            const float s0 = *(const float *)(raw + t0 * HN_ROW + HN_SCL + 4 * b), s1 = *(const float *)(raw + (t0 + 8) * HN_ROW + HN_SCL + 4 * b);
            HD_WGMMA_WAIT(0);
            hd_pin(acc, 32);
#pragma unroll
            for (int i = 0; i < 32; i++) sa[i] = (b == 0 ? 0.f : sa[i]) + acc[i] * (((i >> 1) & 1) ? s1 : s0);
        } else if (grp >= 2) {
            HD_WGMMA_WAIT(1); /* group grp - 2 (this buffer) is done */
        }
        uint32_t(*A)[4] = af[grp & 1];
#pragma unroll
        for (int k2 = 0; k2 < 2; k2++) {
            const int kk = 2 * half + k2;
            A[k2][0] = hn_e4m3x2_h(x0[kk]);
            A[k2][1] = hn_e4m3x2_h(x1[kk]);
            A[k2][2] = hn_e4m3x2_hi(x0[kk]);
            A[k2][3] = hn_e4m3x2_hi(x1[kk]);
        }
        hd_wgmma_fence();
#pragma unroll
        for (int k2 = 0; k2 < 2; k2++)
            hs_mma_h(acc, A[k2], hd_desc_add(dq, (uint32_t)(j * HS_QCH + 32 * (2 * half + k2)) >> 4), (grp & 3) | k2);
        hd_wgmma_commit();
    }
    {
        uint32_t ar[4][4]; /* the rope (written before the fence) */
        hn_rope_frags(raw, t0, cq, ar);
        const float s0 = *(const float *)(raw + t0 * HN_ROW + HN_SCL + 12), s1 = *(const float *)(raw + (t0 + 8) * HN_ROW + HN_SCL + 12);
        HD_WGMMA_WAIT(0); /* block 3 */
        hd_pin(acc, 32);
#pragma unroll
        for (int i = 0; i < 32; i++) sa[i] += acc[i] * (((i >> 1) & 1) ? s1 : s0);
        hd_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++) hs_mma_b(acc, ar[kk], hd_desc_add(dq, (uint32_t)(8 * HS_QCH + 32 * kk) >> 4), kk);
        hd_wgmma_commit();
        HD_WGMMA_WAIT(0);
        hd_pin(acc, 32);
#pragma unroll
        for (int i = 0; i < 32; i++) sa[i] += acc[i];
    }
}

/* hs_scores as one chain (the one-chain program, HS_ONE): K' = f16(e4m3) * f16(s_b 2^-e_k), as V' in
 * hs_pv, so the four scale blocks run as one chain of 16 groups of two k-steps into one accumulator
 * (no fold drains); then sa *= 2^e_k and the rope (bf16, as stored) on top. K' is exact only where
 * every s_b of the key is 0 or a power of two at most 2^15 below the key's largest (f16 keeps e4m3's
 * 4 significant bits and its smallest subnormal 2^-9 times 2^-15); hn_scale_scan_kernel checks
 * that for every key of a request before the kernel runs, and a request with any other scale runs
 * hs_scores. */
MLA_DEV void hs_scores_1c(const uint8_t *raw, uint32_t sbase, int t0, int cq, float sa[32]) {
    const uint64_t dq = hd_desc(sbase, 16, 1024); /* Q^T chunk j, k-step kk: + (j HS_QCH + 32 kk) / 16 */
    const float4 sc0 = *(const float4 *)(raw + t0 * HN_ROW + HN_SCL), sc1 = *(const float4 *)(raw + (t0 + 8) * HN_ROW + HN_SCL);
    const int e0 = hw_kexp(sc0), e1 = hw_kexp(sc1);
    uint32_t m0[4], m1[4]; /* per block: f16x2 of s_b 2^-e_k, keys t0 and t0 + 8 */
    {
        const float f0 = hw_pow2(-e0), f1 = hw_pow2(-e1);
#pragma unroll
        for (int b = 0; b < 4; b++) {
            const uint32_t h0 = __half_as_ushort(__float2half_rn(hw_f4(sc0, b) * f0));
            const uint32_t h1 = __half_as_ushort(__float2half_rn(hw_f4(sc1, b) * f1));
            m0[b] = h0 | (h0 << 16);
            m1[b] = h1 | (h1 << 16);
        }
    }
    uint32_t af[2][2][4];
    uint4 w0 = make_uint4(0u, 0u, 0u, 0u), w1 = w0;
#pragma unroll
    for (int grp = 0; grp < 16; grp++) {
        const int j = grp >> 1, half = grp & 1, b = grp >> 2;
        if (!half) {
            w0 = *(const uint4 *)(raw + t0 * HN_ROW + 64 * j + 16 * cq);
            w1 = *(const uint4 *)(raw + (t0 + 8) * HN_ROW + 64 * j + 16 * cq);
        }
        const uint32_t x0[4] = {w0.x, w0.y, w0.z, w0.w}, x1[4] = {w1.x, w1.y, w1.z, w1.w};
        if (grp >= 2) HD_WGMMA_WAIT(1); /* group grp - 2 (this buffer) is done */
        uint32_t(*A)[4] = af[grp & 1];
#pragma unroll
        for (int k2 = 0; k2 < 2; k2++) {
            const int kk = 2 * half + k2;
            A[k2][0] = hw_hmul2(hn_e4m3x2_h(x0[kk]), m0[b]);
            A[k2][1] = hw_hmul2(hn_e4m3x2_h(x1[kk]), m1[b]);
            A[k2][2] = hw_hmul2(hn_e4m3x2_hi(x0[kk]), m0[b]);
            A[k2][3] = hw_hmul2(hn_e4m3x2_hi(x1[kk]), m1[b]);
        }
        hd_wgmma_fence();
#pragma unroll
        for (int k2 = 0; k2 < 2; k2++)
            hs_mma_h(sa, A[k2], hd_desc_add(dq, (uint32_t)(j * HS_QCH + 32 * (2 * half + k2)) >> 4), grp | k2);
        hd_wgmma_commit();
    }
    {
        uint32_t ar[4][4]; /* the rope (written before the fence) */
        hn_rope_frags(raw, t0, cq, ar);
        const float p0 = hw_pow2(e0), p1 = hw_pow2(e1);
        HD_WGMMA_WAIT(0);
        hd_pin(sa, 32);
#pragma unroll
        for (int i = 0; i < 32; i++) sa[i] *= ((i >> 1) & 1) ? p1 : p0;
        hd_wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++) hs_mma_b(sa, ar[kk], hd_desc_add(dq, (uint32_t)(8 * HS_QCH + 32 * kk) >> 4), 1);
        hd_wgmma_commit();
        HD_WGMMA_WAIT(0);
        hd_pin(sa, 32);
    }
}

/* hs_pv's group grp: the raw V words (keys 16ks + 2cq, +1, +8, +9 of the columns 128b + off ..) and
 * the scale-table pairs of its two k-steps */
MLA_DEV void hs_pv_load(const uint8_t *raw, const uint16_t *svp, int off, int c, int cq, int grp, uint32_t r[2][4], uint32_t mm[2][2]) {
    const int b = 2 * c + (grp >> 1);
#pragma unroll
    for (int i2 = 0; i2 < 2; i2++) {
        const int ks = 2 * (grp & 1) + i2;
        const uint8_t *src = raw + 128 * b + off + (16 * ks + 2 * cq) * HN_ROW;
        r[i2][0] = *(const uint32_t *)src; r[i2][1] = *(const uint32_t *)(src + HN_ROW);
        r[i2][2] = *(const uint32_t *)(src + 8 * HN_ROW); r[i2][3] = *(const uint32_t *)(src + 9 * HN_ROW);
        mm[i2][0] = *(const uint32_t *)(svp + b * HN_KEYS + 16 * ks + 2 * cq);
        mm[i2][1] = *(const uint32_t *)(svp + b * HN_KEYS + 16 * ks + 2 * cq + 8);
    }
}

/* 1 when the owner's fast softmax flagged tile u (read after pready u: then the owner redoes it, pfix) */
MLA_DEV int hs_flagged(const hn_small *sh, int u) { return *(volatile const int32_t *)&sh->ovf[u & 3] == u + 1; }

/* P.V of tile u by consumer c (both consumers, every tile, in order): once the owner published it,
 * O^T (this consumer's blocks 2c, 2c + 1) rescaled by exp2(m_{u-1} - m_u) per row, then
 * O^T += V'^T P'^T (V' = f16(e4m3) * the f16 scale table; keys 16ks + 2cq, +1, +8, +9 of columns
 * 128b + 32w + 4g .. +3), two k-steps a group; frees the stage. ahead (compile-time, the one-chain
 * program): each group's shared-memory words loaded a group ahead (group 0's under the rescale);
 * alone, on the exact program, that measured 2.5% slower (session 22). */
MLA_DEV void hs_pv(hn_small *sh, const uint8_t *sm, uint32_t sbase, float (*o)[32], int u, int c, int w, int g, int cq,
                   const int ahead, int &nfix) {
    hd_mbar_wait(smem_u32(&sh->landed[u % HS_STAGES]), (uint32_t)((u / HS_STAGES) & 1)); /* passed (the owner's S waited) */
    hd_mbar_wait(smem_u32(&sh->pready[u & 1]), (uint32_t)((u >> 1) & 1));
    if (hs_flagged(sh, u)) { /* the owner redid the tile (rare): its second publication */
        hd_mbar_wait(smem_u32(&sh->pfix), (uint32_t)(nfix & 1));
        nfix++;
    }
    HS_T(c, 4, u);
    uint32_t r[2][4], mm[2][2];
    if (ahead) /* group 0's words under the rescale */
        hs_pv_load(sm + HS_RAW0 + (u % HS_STAGES) * HN_STAGE, &sh->sv[(u >> 1) & 1][u & 1][0][0], 32 * w + 4 * g, c, cq, 0, r, mm);
    const float *mxr = (const float *)(sm + HS_MX);
    if (sh->moved[u & 3]) {
        float al[16];
        int moved = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float2 mn = *(const float2 *)(mxr + (u & 3) * HS_ROWS + 8 * j + 2 * cq);
            const float2 mo = u > 0 ? *(const float2 *)(mxr + ((u - 1) & 3) * HS_ROWS + 8 * j + 2 * cq) : make_float2(-INFINITY, -INFINITY);
            al[2 * j] = mn.x == -INFINITY ? 1.f : hd_ex2(mo.x - mn.x);
            al[2 * j + 1] = mn.y == -INFINITY ? 1.f : hd_ex2(mo.y - mn.y);
            moved |= (al[2 * j] != 1.f) | (al[2 * j + 1] != 1.f);
        }
        if (__any_sync(0xffffffffu, moved)) { /* this warp's rows */
#pragma unroll
            for (int m = 0; m < 4; m++)
#pragma unroll
                for (int i = 0; i < 32; i++) o[m][i] *= al[2 * (i >> 2) + (i & 1)];
        }
    }
    const uint8_t *raw = sm + HS_RAW0 + (u % HS_STAGES) * HN_STAGE;
    const uint16_t *svp = &sh->sv[(u >> 1) & 1][u & 1][0][0];
    const uint64_t dpt = hd_desc(sbase + HS_P0 + (u & 1) * HS_PT, 16, 1024); /* k-step ks: + 32 ks / 16 */
    const int off = 32 * w + 4 * g;
    uint32_t va[2][4][4];
#pragma unroll
    for (int grp = 0; grp < 4; grp++) {
        const int bl = grp >> 1;
        if (!ahead) hs_pv_load(raw, svp, off, c, cq, grp, r, mm);
        if (grp >= 2) HD_WGMMA_WAIT(1);
        uint32_t(*A)[4] = va[grp & 1];
#pragma unroll
        for (int i2 = 0; i2 < 2; i2++) {
            const uint32_t a01 = hn_prmt(r[i2][0], r[i2][1], 0x5140u), b01 = hn_prmt(r[i2][0], r[i2][1], 0x7362u);
            const uint32_t a89 = hn_prmt(r[i2][2], r[i2][3], 0x5140u), b89 = hn_prmt(r[i2][2], r[i2][3], 0x7362u);
            const uint32_t m01 = mm[i2][0], m89 = mm[i2][1];
            A[2 * i2][0] = hw_hmul2(hn_e4m3x2_h(a01), m01); A[2 * i2][1] = hw_hmul2(hn_e4m3x2_hi(a01), m01);
            A[2 * i2][2] = hw_hmul2(hn_e4m3x2_h(a89), m89); A[2 * i2][3] = hw_hmul2(hn_e4m3x2_hi(a89), m89);
            A[2 * i2 + 1][0] = hw_hmul2(hn_e4m3x2_h(b01), m01); A[2 * i2 + 1][1] = hw_hmul2(hn_e4m3x2_hi(b01), m01);
            A[2 * i2 + 1][2] = hw_hmul2(hn_e4m3x2_h(b89), m89); A[2 * i2 + 1][3] = hw_hmul2(hn_e4m3x2_hi(b89), m89);
        }
        if (ahead && grp < 3) hs_pv_load(raw, svp, off, c, cq, grp + 1, r, mm); /* the next group's words */
        hd_wgmma_fence();
#pragma unroll
        for (int i2 = 0; i2 < 2; i2++) {
            const uint64_t dp = hd_desc_add(dpt, (uint32_t)(2 * (2 * (grp & 1) + i2)));
            hs_mma_h(o[2 * bl], A[2 * i2], dp, 1);
            hs_mma_h(o[2 * bl + 1], A[2 * i2 + 1], dp, 1);
        }
        hd_wgmma_commit();
    }
    HD_WGMMA_WAIT(0);
#pragma unroll
    for (int m = 0; m < 4; m++) hd_pin(o[m], 32);
    hd_mbar_arrive(smem_u32(&sh->empty[u % HS_STAGES]));
    HS_T(c, 5, u);
}

/* The owner's softmax of tile n (S^T 2^-qexp in sa): scores, the running max m_n (ring), P' by
 * stmatrix, the scale table; this lane's row sums (rows 8g + 2cq + e, at the max mown); then pready
 * (pfix where redo). Two ways to m_n (v68, session 48):
 *   slow (tile 0, and a redo): each warp's tile max per row, exchanged through shared memory, the
 *     lazy move (m_n = that max where it passes m_{n-1} by more than 2^8), and the consumer's OR of
 *     "some row moved", two barriers of the four warps;
 *   fast (every other tile): m_n = m_{n-1} taken on speculation, no barrier: each warp checks its own
 *     scores against m_{n-1} + p.hs_ovf (2^15 by default: P' <= 2^15 in f16, same relative rounding
 *     as below 2^8) and flags the tile (sh->ovf) where one passes it; the readers of P (hs_pv, and
 *     the owner's own check in hs_tiles) see the flag after pready, and the owner then redoes the
 *     tile the slow way (so a flagged tile moves the max as before).
 * With the flag at 2^8 (the slow way's own rule) 29 of 128 tiles were redone at 8K in the bench and
 * the kernel lost 5%; at 2^15, 3 of 128 (session 48). */
MLA_DEV void hs_softmax(const hd_params &p, hn_small *sh, uint8_t *sm, uint32_t sbase, const float sa[32], int n, int c, int w,
                        int g, int cq, int tid, float lrow[2], float mown[2], const int redo) {
    const int slow = redo || n == 0;
    const int s = n % HS_STAGES, t0 = 16 * w + g, seq = sh->seq, lane = tid & 31;
    uint8_t *raw = sm + HS_RAW0 + s * HN_STAGE;
    float *mxr = (float *)(sm + HS_MX);
    const int key0 = (sh->t_begin + n) * HN_KEYS;
    const uint64_t okm = sh->okm[s];
    const int v0 = key0 + t0 < seq && ((okm >> t0) & 1), v1 = key0 + t0 + 8 < seq && ((okm >> (t0 + 8)) & 1);
    float4 sc0 = *(const float4 *)(raw + t0 * HN_ROW + HN_SCL), sc1 = *(const float4 *)(raw + (t0 + 8) * HN_ROW + HN_SCL);
    if (!v0) sc0 = make_float4(0.f, 0.f, 0.f, 0.f);
    if (!v1) sc1 = make_float4(0.f, 0.f, 0.f, 0.f);
    const int e0 = hw_kexp(sc0), e1 = hw_kexp(sc1);
    /* y = x + e_k (log2 units, masked); the tile max per row */
    float y[32], u[16], mt[2];
    const float fe0 = (float)e0, fe1 = (float)e1;
    if (key0 + HN_KEYS <= sh->kmin && okm == ~0ull) { /* every key of the tile visible to every row */
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float2 qs = *(const float2 *)&sh->qs[8 * j + 2 * cq];
#pragma unroll
            for (int k = 0; k < 4; k++) y[4 * j + k] = fmaf(sa[4 * j + k], (k & 1) ? qs.y : qs.x, (k & 2) ? fe1 : fe0);
        }
    } else {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int q = 8 * j + 2 * cq;
            const int2 ke = *(const int2 *)&sh->kend[q];
            const float2 qs = *(const float2 *)&sh->qs[q];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int i = 4 * j + k, h = (k >> 1) & 1, e = k & 1;
                const int ok = (h ? v1 : v0) && key0 + t0 + 8 * h < (e ? ke.y : ke.x);
                y[i] = ok ? fmaf(sa[i], e ? qs.y : qs.x, h ? fe1 : fe0) : -INFINITY;
            }
        }
    }
    { /* V's scale table: thread cq writes block cq of its two keys, f16 of s 2^-e_k (four buffers: the
         readers of tile n - 4's, both consumers' P.V, are behind pready n - 1, which this consumer waited) */
        const float f0 = hw_pow2(-e0), f1 = hw_pow2(-e1);
        const float u0 = cq == 0 ? sc0.x : cq == 1 ? sc0.y : cq == 2 ? sc0.z : sc0.w;
        const float u1 = cq == 0 ? sc1.x : cq == 1 ? sc1.y : cq == 2 ? sc1.z : sc1.w;
        sh->sv[(n >> 1) & 1][n & 1][cq][t0] = __half_as_ushort(__float2half_rn(u0 * f0));
        sh->sv[(n >> 1) & 1][n & 1][cq][t0 + 8] = __half_as_ushort(__float2half_rn(u1 * f1));
    }
    /* keys that do not exist: latent bytes zeroed before P.V (f16 keeps e4m3 NaN; 0 * NaN); each warp its
       own 16 keys, whose K only its S read */
    {
        const int nval = seq - key0;
        if (nval < HN_KEYS || okm != ~0ull) {
            __syncwarp(); /* the warp's K loads (its S) before the stores */
            for (int k = lane; k < 16 * 32; k += 32) {
                const int key = 16 * w + (k >> 5), j = (k >> 2) & 7, q4 = k & 3;
                if (key >= nval || !((okm >> key) & 1)) *(uint4 *)(raw + key * HN_ROW + 64 * j + 16 * q4) = make_uint4(0u, 0u, 0u, 0u);
            }
        }
    }
    HS_T(c, 8, n);
    const int qr = 8 * g + 2 * cq; /* this lane's rows for the row sums: qr, qr + 1 */
    float base[16];
    if (!slow) { /* m_n = m_{n-1}; the flag where a score passes m_{n-1} + p.hs_ovf (the loads of m_{n-1}
                    hoisted above the scale table's stores, or those stores moved below: ptxas spilled
                    2-4x more in the loop, and the latter measured 3% slower, session 48) */
        const float *mo = mxr + ((n - 1) & 3) * HS_ROWS;
        const float2 mq = *(const float2 *)(mo + qr);
        int ov = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float2 m2 = *(const float2 *)(mo + 8 * j + 2 * cq);
#pragma unroll
            for (int k = 0; k < 4; k++) ov |= y[4 * j + k] > ((k & 1) ? m2.y : m2.x) + p.hs_ovf;
            base[2 * j] = m2.x == -INFINITY ? 0.f : m2.x;
            base[2 * j + 1] = m2.y == -INFINITY ? 0.f : m2.y;
        }
        if (__any_sync(0xffffffffu, ov) && lane == 0) *(volatile int32_t *)&sh->ovf[n & 3] = n + 1;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const float mn = e ? mq.y : mq.x;
            lrow[e] *= mn == -INFINITY ? 1.f : hd_ex2(mown[e] - mn);
            mown[e] = mn;
        }
        if (w == 0) *(float2 *)(mxr + (n & 3) * HS_ROWS + qr) = mq;
        if ((tid & 127) == 0) sh->moved[n & 3] = 0;
    } else { /* tile 0, or a redo: the tile max over the four warps */
#pragma unroll
        for (int j = 0; j < 8; j++) {
            u[2 * j] = fmaxf(y[4 * j], y[4 * j + 2]);
            u[2 * j + 1] = fmaxf(y[4 * j + 1], y[4 * j + 3]);
        }
        hs_rs(u, g, 1, mt);
        *(float2 *)&sh->red[0][n & 1][w][qr] = make_float2(mt[0], mt[1]);
        HD_BAR_R(1 + c, 128);
        uint32_t mv = 0u;
        {
            float mn[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int q = qr + e;
                const float m4 = fmaxf(fmaxf(sh->red[0][n & 1][0][q], sh->red[0][n & 1][1][q]), fmaxf(sh->red[0][n & 1][2][q], sh->red[0][n & 1][3][q]));
                const float mo = n > 0 ? mxr[((n - 1) & 3) * HS_ROWS + q] : -INFINITY;
                /* lazy: the max moves only when a score passes it by more than 2^8 (P' <= 2^8 in f16) */
                mn[e] = m4 > mo + 8.f ? m4 : mo;
                mv |= mn[e] != mo;
                lrow[e] *= mn[e] == -INFINITY ? 1.f : hd_ex2(mown[e] - mn[e]);
                mown[e] = mn[e];
            }
            if (w == 0) *(float2 *)(mxr + (n & 3) * HS_ROWS + qr) = make_float2(mn[0], mn[1]);
        }
        /* m_n of every row; whether any moved */
        if (c == 0) HD_BAR_OR(1, 128, mv, mv); else HD_BAR_OR(2, 128, mv, mv);
        if ((tid & 127) == 0) sh->moved[n & 3] = (int)mv;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const float2 b2 = *(const float2 *)(mxr + (n & 3) * HS_ROWS + 8 * j + 2 * cq);
            base[2 * j] = b2.x == -INFINITY ? 0.f : b2.x;
            base[2 * j + 1] = b2.y == -INFINITY ? 0.f : b2.y;
        }
    }
    HS_T(c, 9, n);
#pragma unroll
    for (int i = 0; i < 32; i++) y[i] = hd_ex2(y[i] - base[2 * (i >> 2) + (i & 1)]);
    HS_T(c, 10, n);
    { /* P' as f16, transposed into [64 rows][64 keys] by stmatrix .trans: matrix (j, h) = keys 16w + 8h ..,
         rows 8j ..; one x4 store per 16 rows */
        const int mi = lane >> 3, jr = lane & 7;
        const uint32_t off = (uint32_t)((8 * (mi >> 1) + jr) * 128 + ((((2 * w + (mi & 1)) ^ jr) & 7) << 4));
        const uint32_t pt = sbase + HS_P0 + (n & 1) * HS_PT;
#pragma unroll
        for (int qt = 0; qt < 4; qt++) {
            uint32_t hv[4];
#pragma unroll
            for (int mtx = 0; mtx < 4; mtx++) {
                const int k = 8 * qt + 4 * (mtx >> 1) + 2 * (mtx & 1);
                const __half2 h2 = __floats2half2_rn(y[k], y[k + 1]);
                hv[mtx] = *(const uint32_t *)&h2;
            }
            asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(pt + qt * 2048 + off),
                         "r"(hv[0]), "r"(hv[1]), "r"(hv[2]), "r"(hv[3]) : "memory");
        }
    }
    HS_T(c, 11, n);
    hd_fence_proxy_async();
    hd_mbar_arrive(smem_u32(redo ? &sh->pfix : &sh->pready[n & 1]));
    HS_T(c, 12, n);
    { /* row sums: P' 2^-e_k = exp2(x - m); after P's hand-over, off the other consumer's wait for it */
        const float g0 = hw_pow2(-e0), g1 = hw_pow2(-e1);
        float ls[2];
#pragma unroll
        for (int j = 0; j < 8; j++) {
            u[2 * j] = y[4 * j] * g0 + y[4 * j + 2] * g1;
            u[2 * j + 1] = y[4 * j + 1] * g0 + y[4 * j + 3] * g1;
        }
        hs_rs(u, g, 0, ls);
        lrow[0] += ls[0];
        lrow[1] += ls[1];
    }
    HS_T(c, 13, n);
}

/* 1 when hs_scores_1c's K' is exact for a key with these four scales: the largest |s| a normal float
 * below 2^127 (hw_kexp's e_k then is its exponent, unclamped), every other s_b 0 or a normal power of
 * two at most 2^15 below it (f16(s_b 2^-e_k) exact, and e4m3's smallest subnormal 2^-9 times it
 * still on f16's grid, 2^-24). FlashMLA's quantize_k_cache and this library's writer produce such
 * scales. */
MLA_DEV int hs_scales_fit(float4 s) {
    const uint32_t u[4] = {__float_as_uint(s.x) & 0x7fffffffu, __float_as_uint(s.y) & 0x7fffffffu,
                           __float_as_uint(s.z) & 0x7fffffffu, __float_as_uint(s.w) & 0x7fffffffu};
    const uint32_t mx = max(max(u[0], u[1]), max(u[2], u[3])), emax = mx >> 23;
    int ok = emax >= 1u && emax <= 253u;
#pragma unroll
    for (int b = 0; b < 4; b++)
        ok &= u[b] == 0u || ((u[b] & 0x7fffffu) == 0u && (u[b] >> 23) + 15u >= emax);
    return ok;
}

/* Before s1 (grid: hs_scan_x CTAs per request, y = request): every key of request b below seq_len
 * whose page exists (the keys s1 loads) is checked by hs_scales_fit, 8 keys a thread a round (the
 * block-table entries, then the scale words, each batch in flight together); hs_flag[b] = hs_epoch
 * where one fails. Reads ~32 bytes a key (a sector of each 656-byte row). */
#define HS_SCAN_THREADS 256
#define HS_SCAN_UNROLL 8
__global__ void __launch_bounds__(HS_SCAN_THREADS) hn_scale_scan_kernel(const __grid_constant__ hd_params p) {
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory"); /* s1 may start its prologue */
    const int b = blockIdx.y, seq = p.seq[b], ps = p.page_size;
    const int32_t *bt = p.bt + (int64_t)b * p.bt_stride;
    int bad = 0;
    for (int k0 = blockIdx.x * HS_SCAN_THREADS * HS_SCAN_UNROLL + threadIdx.x; k0 < seq; k0 += gridDim.x * HS_SCAN_THREADS * HS_SCAN_UNROLL) {
        int32_t pg[HS_SCAN_UNROLL];
#pragma unroll
        for (int i = 0; i < HS_SCAN_UNROLL; i++) {
            const int k = k0 + i * HS_SCAN_THREADS;
            pg[i] = k < seq ? __ldg(bt + k / ps) : -1;
        }
        float4 sc[HS_SCAN_UNROLL];
#pragma unroll
        for (int i = 0; i < HS_SCAN_UNROLL; i++) {
            const int k = k0 + i * HS_SCAN_THREADS;
            sc[i] = make_float4(1.f, 1.f, 1.f, 1.f);
            if (pg[i] >= 0 && pg[i] < p.num_pages)
                sc[i] = __ldg((const float4 *)(p.kv + (int64_t)pg[i] * p.page_stride + (int64_t)(k % ps) * HN_ROW + HN_SCL));
        }
#pragma unroll
        for (int i = 0; i < HS_SCAN_UNROLL; i++) bad |= !hs_scales_fit(sc[i]);
    }
    if (__syncthreads_or(bad) && threadIdx.x == 0) p.hs_flag[b] = p.hs_epoch;
}

/* The consumers' loop: for every tile u in order, P.V_u; before it, the softmax of an own tile
 * (u % 2 = c), or S of the next own tile u + 1 (tile 0: consumer 0 first computes S_0). One call site
 * per stage: two copies of P.V had put a quarter of the issue stalls on instruction fetch. prog
 * (compile-time): HS_EXACT (S folded per scale block) or HS_ONE (hs_scores_1c, P.V's shared-memory
 * words a group ahead); hn_decode_kernel_s1c has one loop of each and a CTA runs one of them,
 * hn_decode_kernel_s1 the exact one only. */
#define HS_EXACT 0
#define HS_ONE 1
MLA_DEV void hs_tiles(const hd_params &p, hn_small *sh, uint8_t *sm, uint32_t sbase, float (*o)[32], float lrow[2], float mown[2],
                      int nt, int tid, const int prog) {
    const int c = tid >> 7, w = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, cq = lane & 3;
    float sa[32];
    int nfix = 0; /* flagged tiles seen (hs_pv): pfix's phase */
    for (int u = 0; u < nt; u++) {
        const int own = (u & 1) == c, sn = own ? (u == 0 ? 0 : -1) : u + 1;
        if (sn >= 0 && sn < nt) {
            const int s = sn % HS_STAGES;
            hd_mbar_wait(smem_u32(&sh->landed[s]), (uint32_t)((sn / HS_STAGES) & 1));
            HS_T(c, 0, sn);
            if (sn == 0 && tid == 0) HN_CT(6, clock64());
            if (prog == HS_ONE) hs_scores_1c(sm + HS_RAW0 + s * HN_STAGE, sbase, 16 * w + g, cq, sa);
            else hs_scores(sm + HS_RAW0 + s * HN_STAGE, sbase, 16 * w + g, cq, sa);
            HS_T(c, 1, sn);
        }
        if (own) { /* the softmax, and where its fast way flagged the tile (sh->ovf after pready), once more the slow way */
            HS_T(c, 2, u);
            const float l0 = lrow[0], l1 = lrow[1], m0 = mown[0], m1 = mown[1];
            for (int redo = 0;; redo = 1) {
                hs_softmax(p, sh, sm, sbase, sa, u, c, w, g, cq, tid, lrow, mown, redo);
                if (redo || u == 0) break;
                hd_mbar_wait(smem_u32(&sh->pready[u & 1]), (uint32_t)((u >> 1) & 1));
                if (!hs_flagged(sh, u)) break;
                lrow[0] = l0; lrow[1] = l1; mown[0] = m0; mown[1] = m1;
                HS_T(c, 6, u);
            }
            HS_T(c, 3, u);
        }
        hs_pv(sh, sm, sbase, o, u, c, w, g, cq, prog == HS_ONE, nfix);
        if (u == 0 && tid == 0) HN_CT(7, clock64());
    }
}

/* The consumers (threads 0..255) from their first tile to out: hs_tiles, then the end (row sums over
 * warps and consumers at the final max; each consumer writes its half). prog as hs_tiles; the kernel
 * calls it once for each program, so that only p, sh and tid are live across its choice. */
MLA_DEV void hs_consumer(const hd_params &p, hn_small *sh, uint8_t *sm, uint32_t sbase, int tid, int nt, const int prog) {
    const int c = tid >> 7, w = (tid >> 5) & 3, lane = tid & 31, g = lane >> 2, cq = lane & 3;
    float o[4][32];
#pragma unroll
    for (int m = 0; m < 4; m++)
#pragma unroll
        for (int i = 0; i < 32; i++) o[m][i] = 0.f;
    float lrow[2] = {0.f, 0.f}, mown[2] = {-INFINITY, -INFINITY};
    hs_tiles(p, sh, sm, sbase, o, lrow, mown, nt, tid, prog);
    HN_CT(8 + c, clock64());

    /* ---- the end: row sums over warps and consumers at the final max; each consumer writes its half ---- */
    {
        const int qr = 8 * g + 2 * cq;
        *(float2 *)&sh->lsum[c][w][qr] = make_float2(lrow[0], lrow[1]);
        if (w == 0) *(float2 *)((c ? sh->lx : sh->mx) + qr) = make_float2(mown[0], mown[1]);
    }
    hd_mbar_arrive(smem_u32(&sh->done0));
    hd_mbar_wait(smem_u32(&sh->done0), 0u); /* both consumers past their last P.V: Q and the ring are free */
    if (tid < HS_ROWS) { /* row tid: the final max M, L over both consumers; 1 / L (sh->qs) and the lse */
        const int q = tid;
        const float *mxr = (const float *)(sm + HS_MX);
        const float M = nt > 0 ? mxr[((nt - 1) & 3) * HS_ROWS + q] : -INFINITY;
        const float l0 = sh->lsum[0][0][q] + sh->lsum[0][1][q] + sh->lsum[0][2][q] + sh->lsum[0][3][q];
        const float l1 = sh->lsum[1][0][q] + sh->lsum[1][1][q] + sh->lsum[1][2][q] + sh->lsum[1][3][q];
        const float f0 = M == -INFINITY || sh->mx[q] == -INFINITY ? 0.f : exp2f(sh->mx[q] - M);
        const float f1 = M == -INFINITY || sh->lx[q] == -INFINITY ? 0.f : exp2f(sh->lx[q] - M);
        sh->qs[q] = hn_row_end(p, sh, q, M, l0 * f0 + l1 * f1);
    }
    /* the hand-overs of the end go through done0's next phases: racecheck does not credit bar.sync
       3, 256 here (151 hazards reported with it) */
    hd_mbar_arrive(smem_u32(&sh->done0));
    hd_mbar_wait(smem_u32(&sh->done0), 1u);
    /* this thread's 16 rows x 8 columns (128 (2c + bl) + 32w + 4g + i), scaled, into the staging rows
       at the start of shared memory (bf16, or the f32 partials when split) */
    const int split = p.nsplit > 1;
#pragma unroll
    for (int qi = 0; qi < 16; qi++) {
        const int j = qi >> 1, e = qi & 1, q = 8 * j + 2 * cq + e;
        const float scl = sh->qs[q];
#pragma unroll
        for (int bl = 0; bl < 2; bl++) {
            const int col = 128 * (2 * c + bl) + 32 * w + 4 * g;
            const float v0 = o[2 * bl][4 * j + e] * scl, v1 = o[2 * bl][4 * j + 2 + e] * scl;
            const float v2 = o[2 * bl + 1][4 * j + e] * scl, v3 = o[2 * bl + 1][4 * j + 2 + e] * scl;
            if (split) *(float4 *)(sm + q * HN_OPITCH_F + 4 * col) = make_float4(v0, v1, v2, v3);
            else *(uint2 *)(sm + q * HN_OPITCH_H + 2 * col) = make_uint2(pack_bf16x2(v0, v1), pack_bf16x2(v2, v3));
        }
    }
    hd_mbar_arrive(smem_u32(&sh->done0));
    hd_mbar_wait(smem_u32(&sh->done0), 0u); /* its third phase */
    hn_write_rows(p, sh, sm, tid, 256);
    if (tid == 0) { HN_CT(10, clock64()); HN_CT(11, hn_gtimer()); }
}

/* s1's body; both (compile-time): 1 = both programs, the one chain where the scan found the request's
 * scales fit (hn_decode_kernel_s1c), 0 = the exact program only (hn_decode_kernel_s1: where the scan
 * would not pay, a kernel of its own, since the one-chain loop beside it costs the exact one 1-3%) */
MLA_DEV void hs_kernel(const hd_params &p, const int both, const int G) {
    extern __shared__ uint8_t hn_smem_raw[];
    uint8_t *sm = hn_smem_base(hn_smem_raw);
    hn_small *sh = (hn_small *)(sm + HS_BIG);
    const uint32_t sbase = smem_u32(sm);
    const int tid = threadIdx.x;
#ifdef HD_TRACE
    if (tid == 0) { HN_CT(0, clock64()); HN_CT(1, hn_smid()); HN_CT(2, hn_gtimer()); }
#endif
    if (!hn_start(p, sh, sm, HS_ROWS, 256u, 256u, G)) return;
    const int nt = sh->nt;
    if (tid == 0) { HN_CT(3, clock64()); HN_CT(4, (unsigned long long)nt); }
    if (tid >= 256) { /* ---- producer warpgroup ---- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(HS_PRODUCER_REGS));
        hn_produce(p, sh, sbase, HS_RAW0, tid, HS_STAGES, G);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(HS_CONSUMER_REGS));
    if (tid == 0) HN_CT(14, clock64());
    hn_consumers_start(p, sh, sm, tid, HS_ROWS);
    if (tid == 0) HN_CT(5, clock64());

    /* ---- consumers: the program, once for the whole CTA: the one-chain S where the scan found
       every scale of the request fit for it (hn_scale_scan_kernel stores the launch's epoch otherwise) ---- */
    if (!both) {
        hs_consumer(p, sh, sm, sbase, tid, nt, HS_EXACT);
        return;
    }
    asm volatile("griddepcontrol.wait;\n" ::: "memory"); /* the scan is done */
    if (*(volatile const uint32_t *)&p.hs_flag[sh->b] != p.hs_epoch)
        hs_consumer(p, sh, sm, sbase, tid, nt, HS_ONE);
    else
        hs_consumer(p, sh, sm, sbase, tid, nt, HS_EXACT);
}
__global__ void __launch_bounds__(HN_THREADS, 1) hn_decode_kernel_s1(const __grid_constant__ hd_params p) { hs_kernel(p, 0, 0); }
__global__ void __launch_bounds__(HN_THREADS, 1) hn_decode_kernel_s1c(const __grid_constant__ hd_params p) { hs_kernel(p, 1, 0); }
__global__ void __launch_bounds__(HN_THREADS, 1) hn_decode_kernel_s1_r(const __grid_constant__ hd_params p) { hs_kernel(p, 0, 1); }
__global__ void __launch_bounds__(HN_THREADS, 1) hn_decode_kernel_s1c_r(const __grid_constant__ hd_params p) { hs_kernel(p, 1, 1); }

cudaError_t hn_launch(const hd_params *p, int rows, cudaStream_t stream) {
    const unsigned gx = (unsigned)((int64_t)p->T * p->H / rows + p->B);
    const int G = p->hn_gather;
    const dim3 grid(gx, (unsigned)p->nsplit, 1u);
    if (rows == HS_ROWS && p->hs_epoch) { /* the scan, then s1 as its programmatic dependent */
        hn_scale_scan_kernel<<<dim3((unsigned)p->hs_scan_x, (unsigned)p->B, 1u), HS_SCAN_THREADS, 0, stream>>>(*p);
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg = hd_pdl_config(grid, dim3(HN_THREADS, 1u, 1u), HS_SMEM_BYTES, stream, &attr);
        return cudaLaunchKernelEx(&cfg, G ? hn_decode_kernel_s1c_r : hn_decode_kernel_s1c, *p);
    }
    if (rows == HS_ROWS)
        (G ? hn_decode_kernel_s1_r : hn_decode_kernel_s1)<<<grid, HN_THREADS, HS_SMEM_BYTES, stream>>>(*p);
    else if (rows == HW_ROWS)
        (G ? hn_decode_kernel_w1_r : hn_decode_kernel_w1)<<<grid, HN_THREADS, HW_SMEM_BYTES, stream>>>(*p);
    else
        (G ? hn_decode_kernel_n1_r : hn_decode_kernel_n1)<<<grid, HN_THREADS, HN_SMEM_BYTES, stream>>>(*p);
    return cudaGetLastError();
}
static int hn_smem_attr(const void *k, int bytes) {
    return cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess;
}
int hn_prepare(int rows) {
    if (rows == HS_ROWS)
        return hn_smem_attr((const void *)hn_decode_kernel_s1, HS_SMEM_BYTES) && hn_smem_attr((const void *)hn_decode_kernel_s1c, HS_SMEM_BYTES) &&
               hn_smem_attr((const void *)hn_decode_kernel_s1_r, HS_SMEM_BYTES) && hn_smem_attr((const void *)hn_decode_kernel_s1c_r, HS_SMEM_BYTES);
    if (rows == HW_ROWS)
        return hn_smem_attr((const void *)hn_decode_kernel_w1, HW_SMEM_BYTES) && hn_smem_attr((const void *)hn_decode_kernel_w1_r, HW_SMEM_BYTES);
    return hn_smem_attr((const void *)hn_decode_kernel_n1, HN_SMEM_BYTES) && hn_smem_attr((const void *)hn_decode_kernel_n1_r, HN_SMEM_BYTES);
}

/* The 64-row kernel's per-CTA timeline (HD_TRACE builds) to path, "cta slot0 .. slot15" per recorded
 * CTA, and cleared; -1 in other builds or on an error. */
int hn_trace_dump(const char *path) {
#ifdef HD_TRACE
    static unsigned long long cb[HN_CTAS][HN_CT_SLOTS];
    if (cudaDeviceSynchronize() != cudaSuccess || cudaMemcpyFromSymbol(cb, hn_cta_buf, sizeof cb) != cudaSuccess) return -1;
    FILE *f = strcmp(path, "/dev/null") ? fopen(path, "w") : NULL;
    if (f) {
        for (int i = 0; i < HN_CTAS; i++)
            if (cb[i][0] && cb[i][3]) {
                fprintf(f, "%d", i);
                for (int k = 0; k < HN_CT_SLOTS; k++) fprintf(f, " %llu", cb[i][k]);
                fprintf(f, "\n");
            }
        fclose(f);
    }
    memset(cb, 0, sizeof cb);
    { /* s1's per-tile events: "c ev tile clock" */
        static unsigned long long tb[2][HS_TTILES][16];
        if (cudaMemcpyFromSymbol(tb, hs_trace_buf, sizeof tb) == cudaSuccess) {
            char pt[1024];
            snprintf(pt, sizeof pt, "%st", path);
            FILE *ft = strcmp(path, "/dev/null") ? fopen(pt, "w") : NULL;
            if (ft) {
                for (int r = 0; r < 2; r++)
                    for (int n = 0; n < HS_TTILES; n++)
                        for (int e = 0; e < 16; e++)
                            if (tb[r][n][e]) fprintf(ft, "%d %d %d %llu\n", r, e, n, tb[r][n][e]);
                fclose(ft);
            }
            memset(tb, 0, sizeof tb);
            cudaMemcpyToSymbol(hs_trace_buf, tb, sizeof tb);
        }
    }
    return cudaMemcpyToSymbol(hn_cta_buf, cb, sizeof cb) == cudaSuccess ? 0 : -1;
#else
    (void)path;
    return -1;
#endif
}
