/* mla_indexer on CUDA: e4m3 q [T,H,D], q_s [T,H], MLA_IDX_FP8 paged keys -> top-k indices [T,top_k]
   and optional logits [T,logits_stride] (spec 4.5):
   score[t,j] = k_s[j] * sum_h q_s[t,h] * max(0, q[t,h,:] . k[j,:]), -inf where j is not visible.
   v1  scores: one CTA (4 warps) per (token, run of 128-key tiles); q of the token in shared
       memory, key tiles gathered through the block table with cp.async, double-buffered;
       mma.sync m16n8k32 e4m3 -> f32 (heads = M, keys = N, D = K), ReLU and the q_s weighting
       on the accumulators, head sum by xor shuffles. Top-k: topk.cuh (radix select + bitonic
       sort, one CTA per row). Scores go to the caller's logits or to the workspace.
       Not yet timed (written without a GPU at hand).                                    (default)
   Rows are clamped to the caller's logits_stride, or to max_seq_len when the scores go to the
   workspace: a seq_len above it (a broken promise) drops keys, never writes past the row.
   Keys on block-table entries outside [0, num_pages) are treated as invisible (-inf).
   Run alone: build/tests/test_cuda_misc (CUDA against the CPU backend: logits within
   1e-4 * row max, identical -inf positions; indices by mla_topk_row_check). */
#include "cuda.h"
#include "indexer_common.cuh"
#include "topk.cuh"

/* ---- v1 tile constants ---- */
#define IDX_WARPS 4
#define IDX_THREADS (IDX_WARPS * 32)
#define IDX_BN 128                 /* keys per tile: 32 per warp = 4 mma n-tiles */
#define IDX_PAD 16                 /* row pitch D + 16 bytes: conflict-free ldmatrix (D = 64, 128) */
#define IDX_MAX_TILES_PER_CTA 8
static_assert(IDX_BN == IDX_THREADS, "thread r loads scale/validity of tile row r and writes key r");
static_assert(IDX_BN == IDX_WARPS * 32, "each warp owns 32 keys of a tile");

typedef struct idx_score_params {
    int32_t T, B, H, D;
    const uint8_t *q;       /* [T, H, D] e4m3; token t at q + t * q_stride */
    int64_t q_stride;       /* bytes */
    const float *q_s;       /* [T, H] */
    const uint8_t *base;    /* MLA_IDX_FP8 pages */
    int64_t page_stride;
    int32_t page_size, num_pages;
    const int32_t *q_offsets, *seq_lens, *block_table; /* device */
    int64_t bt_stride;
    int causal;
    float *scores;          /* row t at scores + t * scores_stride; positions [0, row_len) written */
    int64_t scores_stride;
    int64_t row_len;
    int tiles_per_cta;
    int q_align, k_align;   /* see indexer_common.cuh */
} idx_score_params;

/* ---- async copies of 4 and 8 bytes (cp.async.ca; the 16-byte .cg one is in common.cuh) ---- */
static __device__ __forceinline__ void cp_async_8(void *smem, const void *gmem) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(smem_u32(smem)), "l"(gmem));
}
static __device__ __forceinline__ void cp_async_4(void *smem, const void *gmem) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_u32(smem)), "l"(gmem));
}

/* 16 bytes global -> shared by the widest access `align` allows (align < 4: plain byte loads) */
static __device__ __forceinline__ void copy16_async(uint8_t *dst, const uint8_t *src, int align) {
    if (align >= 16) {
        cp_async_16(dst, src);
    } else if (align >= 8) {
        cp_async_8(dst, src);
        cp_async_8(dst + 8, src + 8);
    } else if (align >= 4) {
#pragma unroll
        for (int i = 0; i < 4; i++) cp_async_4(dst + 4 * i, src + 4 * i);
    } else {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            w[i] = (uint32_t)src[4 * i] | ((uint32_t)src[4 * i + 1] << 8) | ((uint32_t)src[4 * i + 2] << 16) |
                   ((uint32_t)src[4 * i + 3] << 24);
        *reinterpret_cast<uint4 *>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

/* shared-memory carve-up of score_kernel_v1 (bytes) */
static inline int idx_pitch(int D) { return D + IDX_PAD; }
static inline size_t idx_smem_bytes(int H, int D) {
    const int Hp = (H + 15) & ~15;
    return (size_t)Hp * idx_pitch(D) + 2u * IDX_BN * idx_pitch(D) /* sQ, sK[2] */
           + 2u * IDX_BN * 4 + 2u * IDX_BN * 4                    /* sScale[2], sOk[2] */
           + IDX_BN * 4 + MLA_MAX_HEADS * 4;                      /* sOut, sQs */
}

/* Issues the loads of key tile `tile` into stage buffers: rows key0 .. key0+127 (zero rows for
 * keys past vis_end or on an out-of-range page), their scales and validity flags. */
static __device__ __forceinline__ void load_key_tile(const idx_score_params &p, int b, int64_t vis_end, int64_t tile,
                                                     uint8_t *sK, float *sScale, int *sOk) {
    const int pitch = p.D + IDX_PAD, cpr = p.D >> 4; /* 16-byte chunks per row */
    const int64_t key0 = tile * IDX_BN;
    for (int idx = threadIdx.x; idx < IDX_BN * cpr; idx += IDX_THREADS) {
        const int r = idx / cpr, c = idx % cpr;
        const int64_t key = key0 + r;
        uint8_t *dst = sK + r * pitch + 16 * c;
        int32_t page = -1;
        if (key < vis_end) page = page_of(p.block_table, p.bt_stride, b, key, p.page_size, p.num_pages);
        if (page >= 0) {
            const uint8_t *src = p.base + (int64_t)page * p.page_stride + (key % p.page_size) * p.D + 16 * c;
            copy16_async(dst, src, p.k_align);
        } else {
            *reinterpret_cast<uint4 *>(dst) = make_uint4(0, 0, 0, 0);
        }
    }
    {
        const int r = threadIdx.x; /* IDX_BN == IDX_THREADS */
        const int64_t key = key0 + r;
        int32_t page = -1;
        if (key < vis_end) page = page_of(p.block_table, p.bt_stride, b, key, p.page_size, p.num_pages);
        sOk[r] = page >= 0;
        if (page >= 0) {
            const uint8_t *src = p.base + (int64_t)page * p.page_stride + (int64_t)p.page_size * p.D +
                                 (key % p.page_size) * 4;
            if (p.k_align >= 4) {
                cp_async_4(&sScale[r], src);
            } else {
                const uint32_t w = (uint32_t)src[0] | ((uint32_t)src[1] << 8) | ((uint32_t)src[2] << 16) |
                                   ((uint32_t)src[3] << 24);
                sScale[r] = __uint_as_float(w);
            }
        } else {
            sScale[r] = 0.0f;
        }
    }
}

/* Warp w computes sum_h q_s[h] * relu(q[h] . k[j]) for the 32 keys j = 32w .. 32w+31 of the
 * staged tile into sOut[j]. Fragments of m16n8k32 (PTX ISA, e4m3): A row = head, 16x32 bytes,
 * ldmatrix.x4 of (rows 0-7 | 8-15) x (bytes 0-15 | 16-31); B col = key, a key row of the tile is
 * a B column, ldmatrix.x4 of 8 keys x 4 consecutive 16-byte chunks = two k-steps; C: c0,c1 at
 * (head g, keys 2*tig, 2*tig+1), c2,c3 at head g+8 (g = lane/4, tig = lane%4). */
static __device__ __forceinline__ void score_tile(const idx_score_params &p, const uint8_t *sQ, const uint8_t *sK,
                                                  const float *sQs, float *sOut) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, tig = lane & 3;
    const int pitch = p.D + IDX_PAD;
    const int ksteps = p.D >> 5;          /* 4 (D=128) or 2 (D=64) */
    const int mtiles = (p.H + 15) >> 4;   /* heads padded to 16 with zero rows, q_s = 0 */

    /* B fragments of this warp's 4 n-tiles, all k-steps: bfr[nt][kp] = k-steps 2kp, 2kp+1 */
    uint32_t bfr[4][2][4];
#pragma unroll
    for (int nt = 0; nt < 4; nt++) {
#pragma unroll
        for (int kp = 0; kp < 2; kp++) {
            if (2 * kp < ksteps) {
                const uint8_t *a = sK + (32 * warp + 8 * nt + (lane & 7)) * pitch + 64 * kp + 16 * (lane >> 3);
                ldmatrix_x4(bfr[nt][kp], a);
            }
        }
    }
    float part[4][2];
#pragma unroll
    for (int nt = 0; nt < 4; nt++) part[nt][0] = part[nt][1] = 0.0f;

    for (int mt = 0; mt < mtiles; mt++) {
        float acc[4][4];
#pragma unroll
        for (int nt = 0; nt < 4; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            if (ks < ksteps) {
                uint32_t afr[4];
                const uint8_t *a = sQ + (16 * mt + (lane & 7) + 8 * ((lane >> 3) & 1)) * pitch + 32 * ks + 16 * (lane >> 4);
                ldmatrix_x4(afr, a);
                /* each k-step from a zero accumulator, added in f32 here: the tensor core's
                 * reduced-precision fp8 accumulation then only spans 32 products */
#pragma unroll
                for (int nt = 0; nt < 4; nt++) {
                    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                    mma_e4m3_16832(d, afr, &bfr[nt][ks >> 1][(ks & 1) * 2]);
                    acc[nt][0] += d[0];
                    acc[nt][1] += d[1];
                    acc[nt][2] += d[2];
                    acc[nt][3] += d[3];
                }
            }
        }
        const float w0 = sQs[16 * mt + g], w1 = sQs[16 * mt + g + 8];
#pragma unroll
        for (int nt = 0; nt < 4; nt++) {
            part[nt][0] += w0 * fmaxf(acc[nt][0], 0.0f) + w1 * fmaxf(acc[nt][2], 0.0f);
            part[nt][1] += w0 * fmaxf(acc[nt][1], 0.0f) + w1 * fmaxf(acc[nt][3], 0.0f);
        }
    }
    /* sum over the 8 head rows g held by lanes tig, tig+4, ..., tig+28 */
#pragma unroll
    for (int nt = 0; nt < 4; nt++) {
#pragma unroll
        for (int c = 0; c < 2; c++) {
            float v = part[nt][c];
            v += __shfl_xor_sync(0xffffffffu, v, 4);
            v += __shfl_xor_sync(0xffffffffu, v, 8);
            v += __shfl_xor_sync(0xffffffffu, v, 16);
            if (g == 0) sOut[32 * warp + 8 * nt + 2 * tig + c] = v;
        }
    }
}

__global__ void __launch_bounds__(IDX_THREADS) score_kernel_v1(idx_score_params p) {
    extern __shared__ __align__(16) uint8_t smem[];
    const int pitch = p.D + IDX_PAD;
    const int Hp = (p.H + 15) & ~15;
    uint8_t *sQ = smem;
    uint8_t *sK = sQ + Hp * pitch;                              /* [2][IDX_BN][pitch] */
    float *sScale = reinterpret_cast<float *>(sK + 2 * IDX_BN * pitch); /* [2][IDX_BN] */
    int *sOk = reinterpret_cast<int *>(sScale + 2 * IDX_BN);    /* [2][IDX_BN] */
    float *sOut = reinterpret_cast<float *>(sOk + 2 * IDX_BN);  /* [IDX_BN] */
    float *sQs = sOut + IDX_BN;                                 /* [MLA_MAX_HEADS] */

    const int t = blockIdx.x;
    int b;
    const int64_t vis_end = visible_end(p.q_offsets, p.seq_lens, p.B, t, p.causal, p.row_len, &b);
    const int64_t n_tiles = (p.row_len + IDX_BN - 1) / IDX_BN;
    const int64_t tile0 = (int64_t)blockIdx.y * p.tiles_per_cta;
    const int64_t tile_end = min(tile0 + p.tiles_per_cta, n_tiles);
    const int64_t comp_end = min(tile_end, (vis_end + IDX_BN - 1) / IDX_BN); /* tiles with a visible key */
    float *srow = p.scores + (int64_t)t * p.scores_stride;

    /* tiles without a visible key: -inf only */
    {
        const int64_t from = max(tile0, comp_end) * IDX_BN, to = min(tile_end * IDX_BN, p.row_len);
        for (int64_t j = from + threadIdx.x; j < to; j += IDX_THREADS) srow[j] = -INFINITY;
    }
    if (tile0 >= comp_end) return; /* uniform */

    /* q of token t (heads past H: zero rows) and q_s */
    {
        const int cpr = p.D >> 4;
        const uint8_t *qt = p.q + (int64_t)t * p.q_stride;
        for (int idx = threadIdx.x; idx < Hp * cpr; idx += IDX_THREADS) {
            const int h = idx / cpr, c = idx % cpr;
            uint32_t w[4] = {0, 0, 0, 0};
            if (h < p.H) {
                const uint8_t *src = qt + (int64_t)h * p.D + 16 * c;
                if (p.q_align >= 16) {
                    const uint4 v = *reinterpret_cast<const uint4 *>(src);
                    w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
                } else if (p.q_align >= 4) {
#pragma unroll
                    for (int i = 0; i < 4; i++) w[i] = reinterpret_cast<const uint32_t *>(src)[i];
                } else {
#pragma unroll
                    for (int i = 0; i < 16; i++) w[i >> 2] |= (uint32_t)src[i] << (8 * (i & 3));
                }
            }
            *reinterpret_cast<uint4 *>(sQ + h * pitch + 16 * c) = make_uint4(w[0], w[1], w[2], w[3]);
        }
        for (int h = threadIdx.x; h < Hp; h += IDX_THREADS) sQs[h] = h < p.H ? p.q_s[(int64_t)t * p.H + h] : 0.0f;
    }

    /* double-buffered loop over the tiles [tile0, comp_end) */
    load_key_tile(p, b, vis_end, tile0, sK, sScale, sOk);
    cp_async_commit();
    for (int64_t tile = tile0; tile < comp_end; tile++) {
        const int st = (int)((tile - tile0) & 1);
        if (tile + 1 < comp_end)
            load_key_tile(p, b, vis_end, tile + 1, sK + (st ^ 1) * IDX_BN * pitch, sScale + (st ^ 1) * IDX_BN,
                          sOk + (st ^ 1) * IDX_BN);
        cp_async_commit(); /* possibly empty: keeps "all but the newest group" = this tile */
        CP_ASYNC_WAIT(1);
        __syncthreads();
        score_tile(p, sQ, sK + st * IDX_BN * pitch, sQs, sOut);
        __syncthreads();
        /* thread r owns key r of the tile: its own sScale/sOk entries, so the next iteration's
         * load_key_tile (same thread, same index) cannot race with this read */
        const int r = threadIdx.x;
        const int64_t j = tile * IDX_BN + r;
        if (j < p.row_len) {
            const bool ok = j < vis_end && sOk[st * IDX_BN + r];
            srow[j] = ok ? sScale[st * IDX_BN + r] * sOut[r] : -INFINITY;
        }
    }
}

static mla_status score_launch_v1(mla_ctx *ctx, idx_score_params *p) {
    const int64_t n_tiles = (p->row_len + IDX_BN - 1) / IDX_BN;
    /* runs of up to 8 tiles per CTA (q loaded once per run); shorter runs when that leaves too
     * few CTAs to fill the GPU; longer when the grid's y would pass 65535 */
    int64_t tpc = IDX_MAX_TILES_PER_CTA;
    const int64_t want = 2 * (int64_t)(ctx->sm_count > 0 ? ctx->sm_count : 132);
    while (tpc > 1 && (int64_t)p->T * ((n_tiles + tpc - 1) / tpc) < want) tpc >>= 1;
    while ((n_tiles + tpc - 1) / tpc > 65535) tpc <<= 1;
    p->tiles_per_cta = (int)tpc;
    const size_t smem = idx_smem_bytes(p->H, p->D);
    MLA_CUDA_TRY(ctx, cudaFuncSetAttribute(score_kernel_v1, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                 "indexer");
    dim3 grid((unsigned)p->T, (unsigned)((n_tiles + tpc - 1) / tpc));
    score_kernel_v1<<<grid, IDX_THREADS, smem, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, "indexer (scores)");
    return MLA_OK;
}

static mla_status topk_launch_v1(mla_ctx *ctx, const topk_params *p) {
    topk_kernel_v1<<<p->T, TOPK_THREADS, 0, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, "indexer (top-k)");
    return MLA_OK;
}

/* Scratch: the scores [T, max_seq_len] f32 when the caller passes no logits. The top-k needs
 * none (shared memory only). */
extern "C" size_t mla_cuda_indexer_workspace(const mla_ctx *ctx, const mla_indexer_args *a) {
    (void)ctx;
    if (a->num_tokens <= 0 || a->max_seq_len <= 0) return 0;
    return (size_t)a->num_tokens * (size_t)a->max_seq_len * sizeof(float);
}

extern "C" mla_status mla_cuda_indexer(mla_ctx *ctx, const mla_indexer_args *a) {
    const mla_paged_cache *c = &a->cache;
    idx_score_params p;
    p.T = a->num_tokens;
    p.B = a->batch.num_requests;
    p.H = a->num_heads;
    p.D = a->dim;
    p.q = a->q;
    p.q_stride = a->q_stride_t ? a->q_stride_t : (int64_t)a->num_heads * a->dim;
    p.q_s = a->q_s;
    p.base = (const uint8_t *)c->base;
    p.page_stride = c->page_stride;
    p.page_size = c->page_size;
    p.num_pages = c->num_pages;
    p.q_offsets = a->batch.q_offsets;
    p.seq_lens = a->batch.seq_lens;
    p.block_table = a->batch.block_table;
    p.bt_stride = a->batch.bt_stride;
    p.causal = a->causal != 0;
    p.q_align = align_of((uintptr_t)a->q, (uint64_t)p.q_stride, 16);
    p.k_align = align_of((uintptr_t)c->base, (uint64_t)c->page_stride, 16);
    if (a->logits) {
        p.scores = a->logits;
        p.scores_stride = a->logits_stride;
        p.row_len = a->logits_stride;
    } else {
        const size_t need = mla_cuda_indexer_workspace(ctx, a);
        if (!a->workspace || a->workspace_bytes < need)
            return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                                 "indexer: workspace_bytes = %zu is below the %zu bytes needed without logits "
                                 "(num_tokens * max_seq_len * 4; see mla_indexer_workspace_size)%s",
                                 a->workspace ? a->workspace_bytes : (size_t)0, need,
                                 a->workspace ? "" : " (workspace is NULL)");
        if (((uintptr_t)a->workspace & 3u) != 0)
            return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "indexer: workspace must be 4-byte aligned");
        p.scores = (float *)a->workspace;
        p.scores_stride = a->max_seq_len;
        p.row_len = a->max_seq_len;
    }
    if (p.T == 0) return MLA_OK;
    MLA_TRY(score_launch_v1(ctx, &p));

    topk_params k;
    k.T = p.T;
    k.B = p.B;
    k.scores = p.scores;
    k.scores_stride = p.scores_stride;
    k.row_len = p.row_len;
    k.q_offsets = p.q_offsets;
    k.seq_lens = p.seq_lens;
    k.causal = p.causal;
    k.top_k = a->top_k;
    k.indices = a->indices;
    k.indices_stride = a->indices_stride_t ? a->indices_stride_t : a->top_k;
    return topk_launch_v1(ctx, &k);
}
