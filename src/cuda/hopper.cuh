/* Shared by the Hopper (sm_90a) decode kernels, decode_hopper.cu (64 query rows a CTA) and
 * decode_narrow.cu (16 rows a CTA, FP8 caches): their parameter block, which the host side of
 * decode_hopper.cu fills for both, and the thin PTX wrappers of the Hopper decode path (mbarriers,
 * TMA, wgmma fences, shared-memory descriptors; the 64-row kernel's e4m3 -> bf16 conversion). Plain
 * functions. */
#ifndef MLA_CUDA_HOPPER_CUH
#define MLA_CUDA_HOPPER_CUH

#include <cuda.h> /* CUtensorMap (the driver entry point is fetched through the runtime) */
#include <stdint.h>
#include <string.h> /* memset (hd_pdl_config) */

#include "common.cuh"

#ifndef HS_OVF_T
#define HS_OVF_T 15 /* s1's fast softmax keeps m_{n-1} while every score stays within 2^HS_OVF_T of it (P' <= 2^15 in f16) */
#endif

/* Kernel parameters: sizes, then pointers (shape in the comment), strides, derived values. */
typedef struct hd_params {
    CUtensorMap kv_map;         /* tma: the cache as [num_pages][page_size][576] bf16, box 64x64x1, 128B swizzle;
                                   FP8: [num_pages][page_size][656] bytes, box 64x64x1 (one latent slot), no swizzle */
    CUtensorMap kv_map2;        /* FP8 tma: the same bytes, box 128x64x1 at column 528 (the rope), 128B swizzle */
    CUtensorMap kv_map3;        /* FP8 tma: the same bytes, box 16x64x1 at column 512 (the scales), no swizzle */
    CUtensorMap q_map;          /* q_tma: q as [T][H][576] bf16 (its strides), box 64 columns x 64 rows, 128B swizzle */
    CUtensorMap o_map;          /* o_tma: out as [T][H][512] bf16 (its strides), box 64 columns x 64 rows, 128B swizzle */
    CUtensorMap kv_gmap[7];     /* gpage: the BF16 cache as kv_map, box 64 columns x 2^i rows (i = 0..6, those <= page_size) */
    int32_t q_tma;              /* 1: a full row block's Q by TMA (9 boxes; hd_make_rows_map), 0: cp.async only */
    int32_t o_tma;              /* 1: a full row block's out through shared memory and TMA stores (hd_finish) */
    int32_t tma;                /* 1: key tiles by TMA (page_size % 16 == 0, or gpage), 0: cp.async by two producer pairs */
    int32_t box;                /* tma: rows per box (64, 32 or 16: the largest dividing page_size); a tile is
                                   64 / box sub-blocks, each inside one page */
    int32_t gpage;              /* 1: BF16, page_size >= 16 not a multiple of 16: tma with box 16 (four issuers) whose
                                   copies are the runs of rows of each page in a tile (hd_producer_gtma, kv_gmap) */
    int32_t fp8;                /* 1: MLA_KV_FP8 cache (656-byte rows), 0: MLA_KV_BF16 */
    int32_t f8_pf;              /* FP8 TMA: 1 = each issuer prefetches its sub-block of tile m + 2 into L2 (MLA_HD_F8_PF) */
    int32_t B, T, H, causal;
    int32_t nsplit;             /* >= 1 */
    int32_t page_size, num_pages;
    int32_t dbg;                /* stage test: one tile, identity P, raw S and O to dbg_out */
    const uint16_t *q;          /* [T, H, 576] bf16 */
    int64_t q_st, q_sh;         /* elements */
    const uint8_t *kv;          /* page p at kv + p * page_stride */
    int64_t page_stride;        /* bytes */
    const int32_t *q_off;       /* [B+1] device */
    const int32_t *seq;         /* [B] device */
    const int32_t *bt;          /* [B, bt_stride] device */
    int64_t bt_stride;
    float scale_log2;           /* scale * log2(e) */
    const float *sink;          /* [H] or NULL */
    uint16_t *out;              /* [T, H, 512] bf16 */
    int64_t o_st, o_sh;
    float *lse;                 /* [T, H] or NULL */
    int64_t lse_st;
    float *ws_o;                /* nsplit > 1: [nsplit, T, H, 512] f32 partial out (already / l) */
    float *ws_lse;              /* nsplit > 1: [nsplit, T, H] f32 partial lse, log2 units, -inf empty */
    float *dbg_out;             /* dbg: [64*64 + 64*512] */
    /* MLA_KV_FP8_ROPE_AWARE (ra = 1, fp8 = 1 too): 640-byte rows (512 e4m3, 64 bf16 rope / sigma),
       sigma per key in a pool apart, q packed [T, H, 640] bytes + q_sigma [T]; always the exact program */
    int32_t ra;
    int32_t row_bytes, rope_off; /* cache row bytes (656 / 640) and the rope's byte offset (528 / 512) */
    const uint8_t *q8;          /* ra: q as bytes; q_st, q_sh in bytes */
    const float *sigma;         /* ra: [num_pages, sig_st] */
    int64_t sig_st;
    const float *qsig;          /* ra: [T] */
    /* balanced schedule (sched = 1; see hd_sched_next): the plan in the workspace */
    int32_t sched;
    int32_t persist;            /* 1 (MLA_HD_PERSIST, default): grid P L persistent CTAs; the plan's even layout
                                   runs lane jobs (mode 2, hd_lane_job) or, ragged q_len, slots x, x + gridDim.x,
                                   ... (mode 0); every CTA of the schedule loads the next segment's Q ahead */
    int32_t force_bal;          /* MLA_DECODE_BALANCE=1 (diagnosis): mode 1 even where every request costs the same */
    int32_t L, P;               /* lanes (row blocks of a request), parts (the plan may use fewer: plan[1]) */
    int32_t c0;                 /* a segment's fixed cost in tile units */
    int32_t min_units;          /* the plan gives each part at least this much cost */
    int64_t *cum;               /* [B + 1] prefix sums of the requests' costs (CTA 0 publishes them) */
    int64_t *plan;              /* [4]: W = cum[B], P' (parts used), mode (1 balanced, 0 uniform layout),
                                   the launch's epoch once CTA 0 has written the rest */
    int64_t epoch;              /* unique per launch: a published plan belongs to this launch */
    float *ws_po;               /* [2 P L, 64, 512] f32 partials (already / l) */
    float *ws_plse;             /* [2 P L, 64] f32 partial lse2 */
    /* the cut row blocks merged inside the decode grid (cutm = 1, MLA_HD_CUTMERGE, default; 0: the combine
       grid): a CTA notes its cut pieces in ws_mrec[CTA][0..1] (epoch-tagged) and at its end counts each in
       ws_cnt[its block's first piece] (epoch << 16 | pieces so far); the last count merges (hd_cut_merge) */
    int32_t cutm;
    unsigned long long *ws_cnt; /* [2 P L] */
    long long *ws_mrec;         /* [P L][2][4]: epoch, q_start, nrows << 32 | row0, cut */
    /* the 64-row raw-tile kernel's one-chain program (decode_narrow.cu, hs_scores_1c): before it,
       hn_scale_scan_kernel stores hs_epoch into hs_flag[b] where request b has a key whose scales the
       one chain cannot take exactly; a CTA whose request's flag differs from hs_epoch runs it */
    uint32_t hs_epoch;          /* unique per launch, never 0; 0: no scan, every CTA runs the exact program */
    uint32_t *hs_flag;          /* [B] in the workspace; needs no clearing (only hs_epoch means anything) */
    int32_t hs_scan_x;          /* the scan's CTAs per request */
    int32_t ptile;              /* gpage, page-aligned tiles (hd_pt_tiles): tiles a page (1 or 2), 0: 64 consecutive
                                   keys a tile */
    /* the split-KV combine inside the decode grid (hd_fused_combine; uniform split, H % 64 == 0, the grid
       launched cooperatively: every CTA resident at once) */
    int32_t fuse;               /* 1: on; the row-block slots are then dense (hd_slot_of without + b) */
    unsigned long long *ws_flag; /* [row-block slots][nsplit]: the epoch of the launch whose split wrote its partial */
    int32_t f8g;                /* FP8 kernel, group tiles (hd_g_tiles): 16-row groups a page, ceil(page_size / 16);
                                   0: 64 consecutive keys a tile */
    int32_t hn_gather;          /* the raw-tile kernels (decode_narrow.cu): 1 = tiles gathered row by row by cp.async
                                   (hn_issue_rows, the _r kernels), 0 = one bulk copy a page piece (hn_issue) */
    int32_t hn_lpt;             /* the 64-row raw-tile kernel (s1; the others ignore it): 1 = row-block slots in order of
                                   the requests' seq_len, longest first (hn_lpt_slot; B <= HN_LPT_MAX), 0 = request
                                   order (MLA_HN_LPT=0) */
    float hs_ovf;               /* s1's fast softmax flags a tile for its slow redo where a score passes m_{n-1} + hs_ovf
                                   (HS_OVF_T; -inf: every tile with a score, mla_cuda_decode_hopper_force_redo) */
} hd_params;

/* the raw-tile kernels of `rows` rows a CTA gather pages of fewer keys than this row by row (p.hn_gather;
   MLA_HD_GATHER). H100, session 45 calls 2-3, bulk copies -> gathered: 16 rows (n1, h=16 s_q=1 16K, GB/s) page 1
   1426 -> 2465, 2 2162 -> 2641.5, 3 2242 -> 2587, 4 2374 -> 2715.5, 7 2605 -> 2619, 8 2786.5 -> 2770; 32 rows (w1,
   h=16 s_q=2 bf16p 16K, GB/s) page 1 1385 -> 1822, 2 2006 -> 1906, 4 2027 -> 1945, 7 2021 -> 1886; 64 rows (s1,
   bf16p 8K, TF) s_q=2 page 1 282.5 -> 389.5, 2 404 -> 407, 3 430 -> 394, 4 438.5 -> 419, 7 437 -> 401.5; s_q=1
   page 1 286 -> 380, 2 408 -> 401. (The compute-bound kernels lose the producer warps' issue slots.) */
#define HN_GATHER_BELOW(rows) ((rows) == 16 ? 8 : 2)

/* named barrier (ids: 0 __syncthreads, 1 both consumers, 3-4 the producer pairs, 5-6 one consumer) */
#define HD_BAR(id, n) asm volatile("bar.sync %0, %1;\n" ::"n"(id), "n"(n) : "memory")
#define HD_BAR_R(id, n) asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(n) : "memory")

MLA_DEV void hd_mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/* release (cta): orders this thread's earlier memory accesses before the phase completes */
MLA_DEV void hd_mbar_arrive(uint32_t bar) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
/* a warp's cp.async copies closed on bar as one arrival (the row gathers, v62, v65, v66): every lane's zero-net
   cp.async.mbarrier.arrive holds the phase open until its copies land, then lane l == 0 arrives (release) */
MLA_DEV void hd_cp_arrive_warp(uint32_t bar, int l) {
    asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
    __syncwarp();
    if (l == 0) hd_mbar_arrive(bar);
}

/* acquire (cta): returns once the phase with this parity has completed */
MLA_DEV void hd_mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

/* 1 if the phase with this parity has completed (never blocks; acquire when it returns 1) */
MLA_DEV int hd_mbar_test(uint32_t bar, uint32_t parity) {
    uint32_t done;
    asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
    return (int)done;
}

/* count arrivals at once (release, cta): completes a quiet barrier's current phase when count is its
   expected count (hd_init_bars' re-arm) */
MLA_DEV void hd_mbar_arrive_n(uint32_t bar, uint32_t count) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(count) : "memory");
}

/* arrive (count 1) and expect tx bytes of asynchronous copies on the current phase */
MLA_DEV void hd_mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}

/* TMA: box (c0.., c1.., c2) of the 3-D tensor map -> shared dst; completes tx bytes on bar */
MLA_DEV void hd_tma_3d(uint32_t dst, const CUtensorMap *map, int c0, int c1, int c2, uint32_t bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
        "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}

/* shared -> global tensor copy (bulk group of the issuing thread) */
MLA_DEV void hd_tma_store_3d(const CUtensorMap *map, uint32_t src, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"((uint64_t)map),
                 "r"(c0), "r"(c1), "r"(c2), "r"(src)
                 : "memory");
}

/* 16 bytes global -> shared; n = 0 writes 16 zero bytes and reads nothing */
MLA_DEV void hd_cp16(uint32_t dst, const void *src, int n) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}

/* four 8x8 bf16 matrices (the mma fragment layout: register j = matrix j) to shared memory; lane l
 * gives the address of row l%8 of matrix l/8 (16 contiguous bytes) */
MLA_DEV void hd_stmatrix_x4(uint32_t addr, const uint32_t r[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]), "r"(r[1]),
                 "r"(r[2]), "r"(r[3])
                 : "memory");
}

MLA_DEV void hd_fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

/* named barrier id over n threads that also ORs a predicate over them (all get the result) */
#define HD_BAR_OR(id, n, x, out)                                                                   \
    asm volatile("{\n .reg .pred a, b;\n setp.ne.u32 a, %1, 0;\n bar.red.or.pred b, %2, %3, a;\n selp.u32 %0, 1, 0, b;\n}\n" \
                 : "=r"(out)                                                                      \
                 : "r"(x), "n"(id), "n"(n)                                                        \
                 : "memory")

/* eight accumulator operands d[i] .. d[i + 7] of a wgmma asm statement, constraint c ("+f" or "=f") */
#define HD_ACC8(c, i) c(d[i]), c(d[(i) + 1]), c(d[(i) + 2]), c(d[(i) + 3]), c(d[(i) + 4]), c(d[(i) + 5]), c(d[(i) + 6]), c(d[(i) + 7])
/* Defines NAME(d, a, db, acc): D[64x64] = (acc == 0) / += A[64x16] B[16x64], A from registers (4 words
 * of TY x 2), B in shared memory by descriptor, K-major (TB = 0) or N-major (TB = 1, transpose bit);
 * TY = f16 or bf16. One asm text for the kernels' register-A m64n64 products. */
#define HD_WGMMA_M64N64_RS(NAME, TY, TB)                                                          \
    MLA_DEV void NAME(float d[32], const uint32_t a[4], uint64_t db, int acc) {                    \
        asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %37, 0;\n"                               \
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32." #TY "." #TY " {"                \
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "     \
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
                     "}, {%32, %33, %34, %35}, %36, p, 1, 1, " #TB ";\n}\n"                      \
                     : HD_ACC8("+f", 0), HD_ACC8("+f", 8), HD_ACC8("+f", 16), HD_ACC8("+f", 24)  \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc));           \
    }

MLA_DEV void hd_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
MLA_DEV void hd_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
#define HD_WGMMA_WAIT(n) asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory")

/* keeps the compiler from moving accumulator accesses across the wgmma wait / fence */
MLA_DEV void hd_pin(float *d, int n) {
#pragma unroll
    for (int i = 0; i < n; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* HD_TRACE builds' timeline stores: v at addr where ok, the predicate inside one asm statement (a
 * divergent branch around the store, with wgmma in flight, made ptxas serialize every wgmma of the
 * kernel, C7520, so the trace showed another program) */
MLA_DEV void hd_trace_st(unsigned long long *addr, int ok, unsigned long long v) {
    asm volatile("{\n .reg .pred p;\n setp.ne.s32 p, %0, 0;\n @p st.global.u64 [%1], %2;\n}\n" ::"r"(ok), "l"(addr), "l"(v) : "memory");
}
/* 128B-swizzle shared-memory matrix descriptor */
MLA_DEV uint64_t hd_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           (1ull << 62);
}

/* descriptor d with its start address moved by o4 (16-byte units): the 14-bit address field cannot
 * carry into bit 14 for shared addresses below 256 KB, so one 32-bit add on the low word does it
 * (a 64-bit add is two uniform adds and moves per k-step; opaque to the compiler like hd_opaque64) */
MLA_DEV uint64_t hd_desc_add(uint64_t d, uint32_t o4) {
    uint64_t r;
    asm volatile("{\n .reg .b32 lo, hi;\n mov.b64 {lo, hi}, %1;\n add.u32 lo, lo, %2;\n mov.b64 %0, {lo, hi};\n}\n"
                 : "=l"(r) : "l"(d), "r"(o4));
    return r;
}
MLA_DEV float hd_ex2(float x) { /* 2^x; -inf -> +0 */
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* bf16x2 multiplier of hd_e4m3x2 for the scale sc (a power of two in range, or 1): 2^112 sc */
MLA_DEV uint32_t hd_f8_mul(float sc) {
    const uint32_t u = __float_as_uint(sc * 5.192296858534828e33f) >> 16; /* exact: powers of two */
    return u | (u << 16);
}

/* two e4m3 (low 16 bits: the first in the low byte) -> bf16x2 of e4m3 * sc, mul = hd_f8_mul(sc).
 * e4m3 -> f16 (cvt, exact; every e4m3 value is a normal f16 with the low 7 mantissa bits 0); the
 * f16 bits shifted right by 3 (sign kept) read as a bf16 of value f16 * 2^-112, normal and exact;
 * times 2^112 sc, exact for sc = +-2^k, k in [-100, 15] (result normal and below 2^128). One cvt,
 * three integer ops and one bf16x2 multiply per pair (cvt to f32, f32 multiply, pack: 6 of which
 * 2 conversions + 2 f16 -> f32). An e4m3 NaN (never stored by writers: they saturate) turns into
 * a finite value here; rows without a key are zeroed before. */
MLA_DEV uint32_t hd_e4m3x2(uint32_t two, uint32_t mul) {
    uint32_t h, r;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(h) : "h"((unsigned short)(two & 0xffffu)));
    const uint32_t b = (h & 0x80008000u) | ((h >> 3) & 0x0fff0fffu);
    asm("mul.rn.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(b), "r"(mul));
    return r;
}

/* The launch of a grid as the programmatic dependent of the stream's previous one (its
 * griddepcontrol.wait waits for that grid's memory): the combine after the decode, s1c after the
 * scan. attr is the caller's and must outlive the launch call. */
static inline cudaLaunchConfig_t hd_pdl_config(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, cudaLaunchAttribute *attr) {
    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof cfg);
    attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr->val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

/* decode_narrow.cu: the raw-tile kernels for FP8-656 caches, rows = 16 (n1) or 32 (w1) query rows a
 * CTA; hd_run fills p as for the 64-row kernels (uniform layout, nsplit splits, TMA maps) and
 * launches T H / rows + B x nsplit CTAs. */
int hn_prepare(int rows); /* the shared-memory attribute; 0 on failure */
cudaError_t hn_launch(const hd_params *p, int rows, cudaStream_t stream); /* the scan first where p->hs_epoch */
int hn_trace_dump(const char *path); /* HD_TRACE builds: the 64-row kernel's per-CTA timeline */

#endif
