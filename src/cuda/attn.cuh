/* Internal (CUDA backend): the absorbed-MLA attention engine shared by mla_decode (decode.cu,
 * SPEC 4.1) and mla_sparse (sparse.cu, SPEC 4.2), and the split-KV plan and combine (combine.cu).
 *
 * One CTA = 8 warps = one row block of up to 64 query rows (a row is one (token, head) pair)
 * against one contiguous range of its key list (one split):
 *   - rows: heads [hb*HB, hb*HB + HB) of tokens [t0, t0 + ntok); decode groups the MTP tokens of
 *     one request when H < 64 (HB = H, ntok <= 64 / H), sparse always has ntok = 1;
 *   - keys: decode key j is logical token j of the request (page through the block table), sparse
 *     key j is column j of the token's indices row (a slot id). A key whose page or slot id is
 *     out of range is skipped: never dereferenced, masked for every row;
 *   - Q [64 x 576] bf16 sits in shared memory for the whole CTA; K tiles of 32 keys stream through
 *     two cp.async stages; V = K[:, :512]. FP8 rows are widened to their raw values bf16(e4m3),
 *     which is exact, into a third buffer: the scales never touch bf16. Each key has one scale per
 *     column chunk c (latent 128-column tiles c = 0..3, rope c = 4): 1 for BF16, the tile scale
 *     (rope 1) for MLA_KV_FP8, sigma_k for every chunk of the rope-aware format (its rope is
 *     stored divided by sigma_k);
 *   - warp w: row group rg = w % 4 (rows 16 rg .. 16 rg + 15), half ch = w / 4. S = Q K^T of the
 *     warp's 16 rows x the tile's keys [16 ch, 16 ch + 16) (mma.sync m16n8k16 bf16, f32 acc),
 *     accumulated chunk by chunk, each chunk's partial dot product times the key's chunk scale;
 *     the two warps of a row group swap row maxima through shared memory and write P into four
 *     copies, copy c multiplied by the keys' scales of latent tile c, each as two bf16 terms
 *     hi + lo (bf16 P alone errs by 2^-9 relative, which breaks SPEC 5's atol 1e-3 wherever
 *     weighted values cancel); each warp computes O[16 rows, 256 ch .. 256 ch + 255] +=
 *     P_c,hi V + P_c,lo V over all 32 keys, c = its column tile;
 *   - online softmax in f32, log2 domain: s2 = (q . k) * scale * log2(e) (* q_sigma for the
 *     rope-aware q, whose latent is e4m3 * q_sigma and rope bf16 * q_sigma);
 *   - one split: out (bf16, sink applied), lse and max_logits are written here; several: f32
 *     partials go to the workspace and mla_cuda_attn_combine merges them.
 * Never installed. */
#ifndef MLA_CUDA_ATTN_CUH
#define MLA_CUDA_ATTN_CUH

#include <math.h>
#include <stdint.h>

#include "attn_params.h"
#include "common.cuh"
#include "cuda.h"

/* ---- tile constants: edit here only ---- */
#define ATT_BM 64                /* query rows per CTA */
#define ATT_BN 32                /* keys per tile */
#define ATT_WARPS 8
#define ATT_THREADS (ATT_WARPS * 32)
#define ATT_D 576                /* key row: latent 512 | rope 64 */
#define ATT_DV 512               /* value = latent */
#define ATT_LD 584               /* bf16 per shared row of Q, K tiles (1168 B: ldmatrix rows hit distinct banks) */
#define ATT_PLD 40               /* bf16 per shared row of P (80 B: same reason) */
#define ATT_MAX_SPLITS 64

/* shared memory carve-up, bytes */
#define ATT_SM_Q 0                                              /* Q [64][ATT_LD] bf16 */
#define ATT_SM_Q_BYTES (ATT_BM * ATT_LD * 2)
#define ATT_SM_STAGE_BYTES (ATT_BN * ATT_LD * 2)                /* one raw stage: 32 rows at 1168 B */
#define ATT_SM_RAW (ATT_SM_Q + ATT_SM_Q_BYTES)                  /* 2 stages of raw cache rows */
#define ATT_SM_KB (ATT_SM_RAW + 2 * ATT_SM_STAGE_BYTES)         /* dequantized K [32][ATT_LD] bf16 (FP8 formats) */
#define ATT_SM_P (ATT_SM_KB + ATT_SM_STAGE_BYTES)               /* P [4 tiles][hi, lo][64][ATT_PLD] bf16 */
#define ATT_SM_P_COPY (ATT_BM * ATT_PLD)                        /* bf16 elements of one P copy */
#define ATT_SM_RED (ATT_SM_P + 8 * ATT_SM_P_COPY * 2)           /* f32 row max [2][64], row sum [2][64] */
#define ATT_SM_ROW (ATT_SM_RED + 4 * ATT_BM * 4)                /* key row pointers [2 stages][32] */
#define ATT_SM_FAC (ATT_SM_ROW + 2 * ATT_BN * 8)                /* key factors [2 stages][32] f32 */
#define ATT_SM_BYTES (ATT_SM_FAC + 2 * ATT_BN * 4)

static_assert(ATT_BM == 4 * 16 && ATT_WARPS == 8, "4 row groups of 16 x 2 halves");
static_assert(ATT_BN == 32, "each warp's S covers 16 keys = half a tile; PV runs 2 k-steps of 16");
static_assert(ATT_DV == 2 * 256, "each half of the warps owns 256 output columns = 2 scale tiles of 128");
static_assert((ATT_LD * 2) % 16 == 0 && ATT_LD * 2 >= 1152, "rows hold 1152 B and stay 16-byte aligned");
static_assert((ATT_PLD * 2) % 16 == 0 && ATT_PLD >= ATT_BN, "P rows are 16-byte aligned");
static_assert(ATT_SM_RAW % 16 == 0 && ATT_SM_KB % 16 == 0 && ATT_SM_P % 16 == 0 && ATT_SM_ROW % 8 == 0,
              "aligned regions");
static_assert(ATT_SM_BYTES <= 227 * 1024, "fits the 227 KB a Hopper CTA may use");

#define ATT_LOG2E 1.4426950408889634f
#define ATT_LN2 0.6931471805599453f

/* ---- host side (combine.cu) ---- */
/* Split count for `work_ctas` CTAs of one split: enough for ~2 CTAs per SM, at most
 * ATT_MAX_SPLITS. Depends only on host-visible sizes, so the workspace query and the call agree. */
int mla_cuda_attn_splits(int64_t work_ctas, int sm_count);
/* Workspace bytes for T * H rows and `splits` splits (0 when splits == 1). */
size_t mla_cuda_attn_workspace_bytes(int64_t rows, int splits);
/* Points p->part_* into the caller's workspace; MLA_ERR_INVALID_ARG naming workspace_bytes when
 * it is NULL, too small or not 16-byte aligned. */
mla_status mla_cuda_attn_bind_workspace(mla_ctx *ctx, const char *op, mla_attn_params *p, void *ws, size_t bytes);
/* Merges the splits' partials into out / lse / max_logits (sink applied), on the ctx's stream. */
mla_status mla_cuda_attn_combine(mla_ctx *ctx, const mla_attn_params *p);

/* ---- device side ---- */

/* out *= 1 / (1 + exp(sink - lse)) for a row with at least one key (lse finite) */
MLA_DEV float att_sink_factor(float sink, float lse) { return 1.0f / (1.0f + expf(sink - lse)); }

/* Key j of the CTA's list -> an id for att_key_meta, or -1 when the key is skipped:
 * decode: the page id of logical token j of request b; sparse: the slot id in indices[t][j].
 * Reads only the block-table row / indices row of this CTA, and only for j < je. */
MLA_DEV int64_t att_key_fetch(const mla_attn_params *p, const int sparse, int64_t t, int b, int64_t j, int64_t je) {
    if (j >= je) return -1;
    if (sparse) {
        const int32_t id = p->indices[t * p->indices_stride_t + j];
        if (id < 0 || (int64_t)id >= (int64_t)p->num_pages * p->page_size) return -1;
        return id;
    }
    const int64_t lp = j / p->page_size;
    if (lp >= p->bt_stride) return -1;
    const int32_t page = p->block_table[(int64_t)b * p->bt_stride + lp];
    if (page < 0 || page >= p->num_pages) return -1;
    return page;
}

/* id from att_key_fetch -> the key's row address (NULL: skipped) and its factor (rope-aware:
 * sigma_k, else 1; 0 when skipped). */
MLA_DEV void att_key_meta(const mla_attn_params *p, const int sparse, int64_t id, int64_t j, const uint8_t **row,
                          float *fac) {
    if (id < 0) {
        *row = 0;
        *fac = 0.0f;
        return;
    }
    const int64_t page = sparse ? id / p->page_size : id;
    const int64_t slot = sparse ? id % p->page_size : j % p->page_size;
    *row = p->kv_base + page * p->page_stride + slot * p->row_bytes;
    *fac = p->format == MLA_KV_FP8_ROPE_AWARE ? p->kv_sigma[page * p->sigma_stride_page + slot] : 1.0f;
}

/* cp.async of one tile's rows into a raw stage: warp w copies keys w, w + 8, ...; skipped keys
 * are zero-filled (source not read). Row r of the stage starts at r * ATT_LD * 2 bytes. */
MLA_DEV void att_issue_tile(const mla_attn_params *p, uint8_t *stage, const uint8_t *const *rows, int warp, int lane) {
    const int chunks = p->row_bytes / 16;
    for (int jj = warp; jj < ATT_BN; jj += ATT_WARPS) {
        const uint8_t *src = rows[jj];
        uint8_t *dst = stage + jj * (ATT_LD * 2);
        for (int c = lane; c < chunks; c += 32)
            cp_async_16_zfill(dst + 16 * c, src ? src + 16 * c : p->kv_base, src != 0);
    }
}

/* FP8 formats: raw stage -> bf16 K [32][ATT_LD] of raw values: latent bf16(e4m3) (exact), rope
 * copied; the scales are applied by att_key_scale. Zero-filled (skipped) rows become zeros. Each
 * thread makes 16-byte chunks of 8 values. */
MLA_DEV void att_widen_tile(const mla_attn_params *p, const uint8_t *stage, uint16_t *kb, int tid) {
    const int rope_at = p->format == MLA_KV_FP8 ? 528 : 512;
    for (int c = tid; c < ATT_BN * (ATT_D / 8); c += ATT_THREADS) {
        const int jj = c / (ATT_D / 8), k = c % (ATT_D / 8);
        const uint8_t *row = stage + jj * (ATT_LD * 2);
        uint4 v;
        if (k < ATT_DV / 8) {
            const uint2 e = *reinterpret_cast<const uint2 *>(row + 8 * k);
            uint32_t w[8];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                w[i] = (e.x >> (8 * i)) & 0xffu;
                w[4 + i] = (e.y >> (8 * i)) & 0xffu;
            }
            v.x = pack_bf16x2(e4m3_to_f32_dev((uint8_t)w[0]), e4m3_to_f32_dev((uint8_t)w[1]));
            v.y = pack_bf16x2(e4m3_to_f32_dev((uint8_t)w[2]), e4m3_to_f32_dev((uint8_t)w[3]));
            v.z = pack_bf16x2(e4m3_to_f32_dev((uint8_t)w[4]), e4m3_to_f32_dev((uint8_t)w[5]));
            v.w = pack_bf16x2(e4m3_to_f32_dev((uint8_t)w[6]), e4m3_to_f32_dev((uint8_t)w[7]));
        } else {
            v = *reinterpret_cast<const uint4 *>(row + rope_at + 16 * (k - ATT_DV / 8));
        }
        *reinterpret_cast<uint4 *>(reinterpret_cast<uint8_t *>(kb) + jj * (ATT_LD * 2) + 16 * k) = v;
    }
}

/* (a, b) -> bf16x2 hi and the bf16x2 of what hi misses: a = hi.a + lo.a to 2^-17 relative */
MLA_DEV void att_split_bf16x2(float a, float b, uint32_t *hi, uint32_t *lo) {
    const uint32_t h = pack_bf16x2(a, b);
    *hi = h;
    *lo = pack_bf16x2(a - bf16_to_f32_dev((uint16_t)(h & 0xffffu)), b - bf16_to_f32_dev((uint16_t)(h >> 16)));
}

/* Scale of key jj (row jj of the landed raw stage) for column chunk c (0..3: latent tile, 4: rope).
 * Skipped keys: 0 (FP8: zero-filled scales; rope-aware: factor 0) or 1 (BF16); they are masked. */
MLA_DEV float att_key_scale(const mla_attn_params *p, const uint8_t *stage, const float *facs, int jj, int c) {
    if (p->format == MLA_KV_FP8)
        return c < 4 ? *reinterpret_cast<const float *>(stage + jj * (ATT_LD * 2) + 512 + 4 * c) : 1.0f;
    if (p->format == MLA_KV_FP8_ROPE_AWARE) return facs[jj];
    return 1.0f;
}

/* Q rows of the CTA -> shared bf16 [64][ATT_LD]; rows >= nrows are zeros. Row r is head
 * hb * HB + r % HB of token t0 + r / HB. Warp w loads rows w, w + 8, ... */
MLA_DEV void att_load_q(const mla_attn_params *p, uint16_t *sQ, int64_t t0, int hb, int nrows, int warp, int lane) {
    const int HB = p->heads_per_cta;
    for (int r = warp; r < ATT_BM; r += ATT_WARPS) {
        uint16_t *dst = sQ + r * ATT_LD;
        if (r >= nrows) {
            for (int c = lane; c < ATT_D / 8; c += 32) *reinterpret_cast<uint4 *>(dst + 8 * c) = make_uint4(0, 0, 0, 0);
            continue;
        }
        const int64_t t = t0 + r / HB;
        const int64_t h = (int64_t)hb * HB + r % HB;
        if (p->format == MLA_KV_FP8_ROPE_AWARE) {
            const uint8_t *src = static_cast<const uint8_t *>(p->q) + t * p->q_stride_t + h * p->q_stride_h;
            for (int d = lane; d < ATT_DV; d += 32) dst[d] = f32_to_bf16_dev(e4m3_to_f32_dev(src[d])); /* exact */
            for (int d = lane; d < ATT_D - ATT_DV; d += 32)
                dst[ATT_DV + d] = (uint16_t)(src[ATT_DV + 2 * d] | (src[ATT_DV + 2 * d + 1] << 8));
        } else {
            const uint16_t *src = static_cast<const uint16_t *>(p->q) + t * p->q_stride_t + h * p->q_stride_h;
            if ((reinterpret_cast<uintptr_t>(src) & 15) == 0) {
                for (int c = lane; c < ATT_D / 8; c += 32)
                    *reinterpret_cast<uint4 *>(dst + 8 * c) = *reinterpret_cast<const uint4 *>(src + 8 * c);
            } else {
                for (int d = lane; d < ATT_D; d += 32) dst[d] = src[d];
            }
        }
    }
}

/* The whole CTA: see the file comment. `sparse` is a literal at each call site, so the compiler
 * keeps one path per kernel. */
MLA_DEV void att_body(const mla_attn_params *p, const int sparse) {
    extern __shared__ __align__(16) uint8_t smem[];
    uint16_t *sQ = reinterpret_cast<uint16_t *>(smem + ATT_SM_Q);
    uint8_t *sRaw = smem + ATT_SM_RAW;
    uint16_t *sKb = reinterpret_cast<uint16_t *>(smem + ATT_SM_KB);
    uint16_t *sP = reinterpret_cast<uint16_t *>(smem + ATT_SM_P);
    float *sMax = reinterpret_cast<float *>(smem + ATT_SM_RED); /* [half][64 rows] */
    float *sSum = sMax + 2 * ATT_BM;                              /* [half][64 rows] */
    const uint8_t **sRow = reinterpret_cast<const uint8_t **>(smem + ATT_SM_ROW); /* [stage][32] */
    float *sFac = reinterpret_cast<float *>(smem + ATT_SM_FAC);                   /* [stage][32] */

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int rg = warp & 3, ch = warp >> 2;
    const int lr = lane & 7, lm = lane >> 3; /* ldmatrix: row within a 8x8 matrix, matrix index */
    const int H = p->num_heads, HB = p->heads_per_cta;
    const int hb = (int)(blockIdx.x % (unsigned)p->head_blocks);
    const int64_t t0 = blockIdx.x / (unsigned)p->head_blocks;
    const int split = blockIdx.y;
    const int ra = p->format == MLA_KV_FP8_ROPE_AWARE;

    /* ---- the CTA's tokens and key list: [0, kv_hi) ---- */
    int b = -1, ntok = 1;
    int64_t kv_hi = 0, q_start = 0, q_len = 0, seq_len = 0;
    if (!sparse) {
        /* request of t0: the largest b with q_offsets[b] <= t0, checked against q_offsets[b+1] */
        int lo = 0, hi = p->num_requests;
        while (hi - lo > 1) {
            const int mid = (lo + hi) >> 1;
            if (p->q_offsets[mid] <= t0) lo = mid; else hi = mid;
        }
        const int32_t qs = p->q_offsets[lo], qe = p->q_offsets[lo + 1];
        if (qs <= t0 && t0 < qe) {
            b = lo;
            q_start = qs;
            q_len = qe - qs;
            seq_len = p->seq_lens[b] > 0 ? p->seq_lens[b] : 0;
            const int64_t i = t0 - q_start;
            if (i % p->tokens_per_cta != 0) return; /* not a group leader: the leader covers t0 */
            ntok = (int)(q_len - i < p->tokens_per_cta ? q_len - i : p->tokens_per_cta);
            if (p->causal) {
                const int64_t last_end = seq_len - q_len + (i + ntok - 1) + 1; /* pos of the last token + 1 */
                kv_hi = last_end < 0 ? 0 : (last_end > seq_len ? seq_len : last_end);
            } else {
                kv_hi = seq_len;
            }
        }
    } else {
        const int64_t len = p->topk_len ? p->topk_len[t0] : p->topk;
        kv_hi = len < 0 ? 0 : (len > p->topk ? p->topk : len);
    }
    const int heads_here = H - hb * HB < HB ? H - hb * HB : HB;
    const int nrows = ntok * heads_here; /* rows [0, nrows) of the block are real */
    const bool active = rg * 16 < nrows; /* warp has real rows */

    /* ---- this split's keys [js, je) ---- */
    const int nsplit = p->num_splits;
    int64_t chunk = (kv_hi + nsplit - 1) / nsplit;
    chunk = (chunk + ATT_BN - 1) / ATT_BN * ATT_BN;
    const int64_t js = split * chunk;
    const int64_t je = js + chunk < kv_hi ? js + chunk : kv_hi;
    const int ntiles = je > js ? (int)((je - js + ATT_BN - 1) / ATT_BN) : 0;

    /* ---- the thread's two rows: local row, end of visible keys, score factor ---- */
    int row_l[2];
    int64_t row_end[2];
    float row_fac[2];
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        const int r = rg * 16 + (lane >> 2) + 8 * rr;
        row_l[rr] = r;
        row_end[rr] = 0;
        row_fac[rr] = 0.0f;
        if (r < nrows) {
            const int64_t t = t0 + r / HB;
            if (sparse) {
                row_end[rr] = kv_hi;
            } else if (b >= 0) {
                const int64_t pos = seq_len - q_len + (t - q_start);
                const int64_t e = p->causal ? pos + 1 : seq_len;
                row_end[rr] = e < 0 ? 0 : (e > seq_len ? seq_len : e);
            }
            row_fac[rr] = p->scale_log2 * (ra ? p->q_sigma[t] : 1.0f);
        }
    }

    float o[32][4];
#pragma unroll
    for (int nt = 0; nt < 32; nt++) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};

    /* ---- prologue: tile 0's rows, its copies, Q ---- */
    int64_t next_id = -1; /* threads tid < 32: id of key tid of the next tile to describe */
    if (ntiles > 0) {
        if (tid < ATT_BN) {
            const int64_t j = js + tid;
            att_key_meta(p, sparse, att_key_fetch(p, sparse, t0, b, j, je), j, &sRow[tid], &sFac[tid]);
            next_id = att_key_fetch(p, sparse, t0, b, js + ATT_BN + tid, je);
        }
        __syncthreads();
        att_issue_tile(p, sRaw, sRow, warp, lane);
        cp_async_commit();
        att_load_q(p, sQ, t0, hb, nrows, warp, lane);
    }

    for (int it = 0; it < ntiles; it++) {
        const int st = it & 1;
        /* describe tile it+1 (its ids were fetched one tile ago), fetch the ids of tile it+2 */
        if (tid < ATT_BN && it + 1 < ntiles) {
            const int64_t j = js + (int64_t)(it + 1) * ATT_BN + tid;
            att_key_meta(p, sparse, next_id, j, &sRow[(st ^ 1) * ATT_BN + tid], &sFac[(st ^ 1) * ATT_BN + tid]);
            next_id = att_key_fetch(p, sparse, t0, b, j + ATT_BN, je);
        }
        __syncthreads(); /* A: rows of tile it+1 known; everyone is done with tile it-1's buffers */
        if (it + 1 < ntiles) att_issue_tile(p, sRaw + (st ^ 1) * ATT_SM_STAGE_BYTES, sRow + (st ^ 1) * ATT_BN, warp, lane);
        cp_async_commit();
        CP_ASYNC_WAIT(1);
        __syncthreads(); /* B: tile it (and Q) landed for every thread */

        const uint8_t *stage = sRaw + st * ATT_SM_STAGE_BYTES;
        const uint8_t *const *rows = sRow + st * ATT_BN;
        const float *facs = sFac + st * ATT_BN;
        const uint16_t *sK = reinterpret_cast<const uint16_t *>(stage);
        if (p->format != MLA_KV_BF16) {
            att_widen_tile(p, stage, sKb, tid);
            __syncthreads(); /* C: widened tile visible */
            sK = sKb;
        }

        /* S = Q K^T: 16 rows x keys [16 ch, 16 ch + 16), chunk by chunk (4 latent tiles of 128
           columns, then the 64 rope columns), each chunk times the key's scale for it */
        float s[2][4];
#pragma unroll
        for (int nt = 0; nt < 2; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
        if (active) {
            const uint16_t *qa = sQ + (rg * 16 + (lm & 1) * 8 + lr) * ATT_LD + (lm >> 1) * 8;
            const uint16_t *kb = sK + (ch * 16 + (lm >> 1) * 8 + lr) * ATT_LD + (lm & 1) * 8;
#pragma unroll
            for (int c = 0; c < 5; c++) {
                float acc[2][4];
#pragma unroll
                for (int nt = 0; nt < 2; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#pragma unroll
                for (int ks = 8 * c; ks < (c < 4 ? 8 * c + 8 : ATT_D / 16); ks++) {
                    uint32_t a[4], bk[4];
                    ldmatrix_x4(a, qa + ks * 16);
                    ldmatrix_x4(bk, kb + ks * 16);
                    mma_bf16_16816(acc[0], a, bk);
                    mma_bf16_16816(acc[1], a, bk + 2);
                }
#pragma unroll
                for (int nt = 0; nt < 2; nt++) {
                    const int jj = ch * 16 + nt * 8 + 2 * (lane & 3);
                    const float k0 = att_key_scale(p, stage, facs, jj, c), k1 = att_key_scale(p, stage, facs, jj + 1, c);
                    s[nt][0] += k0 * acc[nt][0];
                    s[nt][1] += k1 * acc[nt][1];
                    s[nt][2] += k0 * acc[nt][2];
                    s[nt][3] += k1 * acc[nt][3];
                }
            }
        }

        /* mask, scale into the log2 domain, row max over this half */
        const int64_t jbase = js + (int64_t)it * ATT_BN;
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nt = 0; nt < 2; nt++) {
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int rr = e >> 1;
                const int jj = ch * 16 + nt * 8 + 2 * (lane & 3) + (e & 1);
                const bool ok = rows[jj] != 0 && jbase + jj < row_end[rr];
                const float v = ok ? s[nt][e] * row_fac[rr] : -INFINITY;
                s[nt][e] = v;
                mx[rr] = fmaxf(mx[rr], v);
            }
        }
#pragma unroll
        for (int rr = 0; rr < 2; rr++) {
            mx[rr] = fmaxf(mx[rr], __shfl_xor_sync(0xffffffffu, mx[rr], 1));
            mx[rr] = fmaxf(mx[rr], __shfl_xor_sync(0xffffffffu, mx[rr], 2));
            if ((lane & 3) == 0) sMax[ch * ATT_BM + row_l[rr]] = mx[rr];
        }
        __syncthreads(); /* D: both halves' row maxima visible */

        /* online softmax: new max, rescale O and l, P times the keys' tile scales -> 4 shared copies
           of hi + lo bf16 terms */
        float m_use[2];
#pragma unroll
        for (int rr = 0; rr < 2; rr++) {
            const float m_tile = fmaxf(mx[rr], sMax[(ch ^ 1) * ATT_BM + row_l[rr]]);
            const float m_new = fmaxf(m_run[rr], m_tile);
            m_use[rr] = m_new == -INFINITY ? 0.0f : m_new; /* no key yet: keep exp2 away from -inf - -inf */
            const float alpha = exp2f(m_run[rr] - m_use[rr]);
            m_run[rr] = m_new;
            l_run[rr] *= alpha;
#pragma unroll
            for (int nt = 0; nt < 32; nt++) {
                o[nt][2 * rr] *= alpha;
                o[nt][2 * rr + 1] *= alpha;
            }
        }
#pragma unroll
        for (int nt = 0; nt < 2; nt++) {
            const int jj = ch * 16 + nt * 8 + 2 * (lane & 3);
            float pv[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                pv[e] = exp2f(s[nt][e] - m_use[e >> 1]);
                l_run[e >> 1] += pv[e];
            }
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const float k0 = att_key_scale(p, stage, facs, jj, c), k1 = att_key_scale(p, stage, facs, jj + 1, c);
                uint16_t *hi = sP + 2 * c * ATT_SM_P_COPY, *lo = hi + ATT_SM_P_COPY;
                att_split_bf16x2(pv[0] * k0, pv[1] * k1, reinterpret_cast<uint32_t *>(hi + row_l[0] * ATT_PLD + jj),
                                 reinterpret_cast<uint32_t *>(lo + row_l[0] * ATT_PLD + jj));
                att_split_bf16x2(pv[2] * k0, pv[3] * k1, reinterpret_cast<uint32_t *>(hi + row_l[1] * ATT_PLD + jj),
                                 reinterpret_cast<uint32_t *>(lo + row_l[1] * ATT_PLD + jj));
            }
        }
        __syncthreads(); /* E: P of both halves visible */

        /* O[16 rows, 256 ch ..] += (P_c,hi + P_c,lo)[16 rows, 32 keys] V[32 keys, 256 ch ..],
           c = 2 ch for the first 128 columns (np 0..7), 2 ch + 1 for the next (np 8..15) */
        if (active) {
            const uint16_t *pa = sP + (rg * 16 + (lm & 1) * 8 + lr) * ATT_PLD + (lm >> 1) * 8;
            const uint16_t *vb = sK + ((lm & 1) * 8 + lr) * ATT_LD + ch * 256 + (lm >> 1) * 8;
#pragma unroll
            for (int kk = 0; kk < ATT_BN / 16; kk++) {
#pragma unroll
                for (int half = 0; half < 2; half++) {
                    const uint16_t *pc = pa + 2 * (2 * ch + half) * ATT_SM_P_COPY + kk * 16;
                    uint32_t ah[4], al[4];
                    ldmatrix_x4(ah, pc);
                    ldmatrix_x4(al, pc + ATT_SM_P_COPY);
#pragma unroll
                    for (int np = 8 * half; np < 8 * half + 8; np++) {
                        uint32_t v[4];
                        ldmatrix_x4_trans(v, vb + kk * 16 * ATT_LD + np * 16);
                        mma_bf16_16816(o[2 * np], al, v);
                        mma_bf16_16816(o[2 * np], ah, v);
                        mma_bf16_16816(o[2 * np + 1], al, v + 2);
                        mma_bf16_16816(o[2 * np + 1], ah, v + 2);
                    }
                }
            }
        }
    }
    CP_ASYNC_WAIT(0);

    /* ---- row sums of both halves, then the outputs of the real rows ---- */
#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        l_run[rr] += __shfl_xor_sync(0xffffffffu, l_run[rr], 1);
        l_run[rr] += __shfl_xor_sync(0xffffffffu, l_run[rr], 2);
        if ((lane & 3) == 0) sSum[ch * ATT_BM + row_l[rr]] = l_run[rr];
    }
    __syncthreads();

#pragma unroll
    for (int rr = 0; rr < 2; rr++) {
        const int r = row_l[rr];
        if (r >= nrows) continue;
        const int64_t t = t0 + r / HB;
        const int64_t h = (int64_t)hb * HB + r % HB;
        const float l = sSum[r] + sSum[ATT_BM + r];
        const float m = m_run[rr];
        const bool any = l > 0.0f; /* at least one visible key (then m is finite) */
        const int col0 = ch * 256 + 2 * (lane & 3);
        if (nsplit == 1) {
            const float lse = any ? (m + log2f(l)) * ATT_LN2 : INFINITY;
            float f = any ? 1.0f / l : 0.0f;
            if (any && p->sink) f *= att_sink_factor(p->sink[h], lse);
            uint16_t *orow = p->out + t * p->out_stride_t + h * p->out_stride_h + col0;
#pragma unroll
            for (int nt = 0; nt < 32; nt++) {
                const float lo = any ? o[nt][2 * rr] * f : 0.0f, hi = any ? o[nt][2 * rr + 1] * f : 0.0f;
                if (p->out_pairs) {
                    *reinterpret_cast<uint32_t *>(orow + nt * 8) = pack_bf16x2(lo, hi);
                } else {
                    orow[nt * 8] = f32_to_bf16_dev(lo);
                    orow[nt * 8 + 1] = f32_to_bf16_dev(hi);
                }
            }
            if (ch == 0 && (lane & 3) == 0) {
                if (p->lse) p->lse[t * p->lse_stride_t + h] = lse;
                if (p->max_logits) p->max_logits[t * p->lse_stride_t + h] = any ? m * ATT_LN2 : -INFINITY;
            }
        } else {
            const int64_t prow = (int64_t)split * p->num_tokens * H + t * H + h;
            if (any) { /* a split without keys leaves its o unwritten: the combine gives it weight 0, unread */
                const float inv = 1.0f / l;
                float *po = p->part_o + prow * ATT_DV + col0;
#pragma unroll
                for (int nt = 0; nt < 32; nt++)
                    *reinterpret_cast<float2 *>(po + nt * 8) = make_float2(o[nt][2 * rr] * inv, o[nt][2 * rr + 1] * inv);
            }
            if (ch == 0 && (lane & 3) == 0) {
                p->part_lse[prow] = any ? m + log2f(l) : -INFINITY;
                p->part_max[prow] = any ? m : -INFINITY;
            }
        }
    }
}

#endif
