/* mla_cache_store on CUDA: bf16 rows [T,576] -> the paged latent cache in any format (spec 3, 4.6);
   mla_quantize_q_rope_aware: bf16 q [T,H,576] -> packed [T,H,640] + q_sigma [T] (spec 4.6). Exact.
   v1  cache_store: one warp per token, lane l owns latent dims 16l..16l+15 (FP8 tile = 8 lanes,
       amax by xor shuffles), lanes 0..7 own the rope; 16-byte accesses when aligned    (default)
   v1  quantize_q_rope_aware: one CTA per token, amax over all heads by block reduction, then a
       second pass quantizes; 16-byte accesses when aligned                               (default)
   Not yet timed (written without a GPU at hand).
   Run alone: build/tests/test_cuda_misc (CUDA against the CPU backend, byte for byte).

   Exactness: every scale is a power of two (pow2_scale_dev, the bit twin of pow2_scale_ref), so
   x / scale is exact in f32 and the only rounding is the final e4m3 (RNE, saturating) or bf16
   (RNE), the same single rounding the CPU performs. */
#include "cuda.h"
#include "indexer_common.cuh"
#include "../core/paged.h"

#define CS_WARPS 8 /* tokens per CTA of cache_store_kernel_v1 */

typedef struct cache_store_params {
    int32_t T, B;
    const uint16_t *rows; /* [T, 576] bf16 */
    int64_t rows_stride;  /* elements */
    uint8_t *base;        /* page 0 */
    int64_t page_stride;  /* bytes */
    int32_t page_size, num_pages;
    int format;           /* mla_format */
    float *sigma;         /* rope-aware: [num_pages, sigma_stride] */
    int64_t sigma_stride;
    const int32_t *q_offsets, *seq_lens, *block_table; /* device */
    int64_t bt_stride;
    int in_align, out_align; /* see indexer_common.cuh */
} cache_store_params;

__global__ void __launch_bounds__(CS_WARPS * 32) cache_store_kernel_v1(cache_store_params p) {
    const int lane = threadIdx.x & 31;
    const int t = blockIdx.x * CS_WARPS + (threadIdx.x >> 5);
    if (t >= p.T) return; /* whole warp: no shuffle partner is lost */
    int b;
    int64_t pos;
    int32_t seq;
    if (!token_position(p.q_offsets, p.seq_lens, p.B, t, &b, &pos, &seq)) return;
    if (pos < 0 || pos >= seq) return;
    const int32_t page = page_of(p.block_table, p.bt_stride, b, pos, p.page_size, p.num_pages);
    if (page < 0) return;
    const int32_t slot = (int32_t)(pos % p.page_size);
    const int64_t row_bytes = p.format == MLA_KV_BF16 ? MLA_ROW_BF16
                              : p.format == MLA_KV_FP8 ? MLA_ROW_FP8
                                                       : MLA_ROW_FP8_ROPE_AWARE;
    uint8_t *row = p.base + (int64_t)page * p.page_stride + (int64_t)slot * row_bytes;
    const uint16_t *src = p.rows + (int64_t)t * p.rows_stride;

    /* latent dims 16*lane .. 16*lane+15 as two chunks of 8 bf16 */
    uint32_t x0[4], x1[4];
    load_bf16x8(src + 16 * lane, p.in_align, x0);
    load_bf16x8(src + 16 * lane + 8, p.in_align, x1);
    /* rope chunk (8 bf16) of lanes 0..7 */
    uint32_t r[4] = {0, 0, 0, 0};
    if (lane < 8) load_bf16x8(src + MLA_LATENT_DIM + 8 * lane, p.in_align, r);

    if (p.format == MLA_KV_BF16) {
        store_words(row + 32 * lane, x0, 4, p.out_align);
        store_words(row + 32 * lane + 16, x1, 4, p.out_align);
        if (lane < 8) store_words(row + 2 * MLA_LATENT_DIM + 16 * lane, r, 4, p.out_align);
        return;
    }

    float amax = fmaxf(absmax_bf16x8(x0), absmax_bf16x8(x1));
    if (p.format == MLA_KV_FP8) {
        /* tile k = dims [128k, 128k+128) = lanes 8k..8k+7 */
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
        const float scale = pow2_scale_dev(amax);
        uint32_t q[4];
        quant_bf16x8(x0, scale, q);
        quant_bf16x8(x1, scale, q + 2);
        store_words(row + 16 * lane, q, 4, p.out_align);
        if ((lane & 7) == 0) store_f32(row + MLA_FP8_SCALES_AT + 4 * (lane >> 3), scale, p.out_align);
        if (lane < 8) store_words(row + MLA_FP8_ROPE_AT + 16 * lane, r, 4, p.out_align);
        return;
    }

    /* MLA_KV_FP8_ROPE_AWARE: one sigma over all 512 latent dims */
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float sigma = pow2_scale_dev(amax);
    uint32_t q[4];
    quant_bf16x8(x0, sigma, q);
    quant_bf16x8(x1, sigma, q + 2);
    store_words(row + 16 * lane, q, 4, p.out_align);
    if (lane < 8) {
        div_bf16x8(r, sigma);
        store_words(row + MLA_RA_ROPE_AT + 16 * lane, r, 4, p.out_align);
    }
    if (lane == 0) p.sigma[(int64_t)page * p.sigma_stride + slot] = sigma;
}

static mla_status cache_store_launch_v1(mla_ctx *ctx, const cache_store_params *p) {
    const int blocks = (int)(((int64_t)p->T + CS_WARPS - 1) / CS_WARPS);
    cache_store_kernel_v1<<<blocks, CS_WARPS * 32, 0, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, "cache_store");
    return MLA_OK;
}

extern "C" mla_status mla_cuda_cache_store(mla_ctx *ctx, const mla_cache_store_args *a) {
    const mla_paged_cache *c = &a->cache;
    cache_store_params p;
    p.T = a->num_tokens;
    p.B = a->batch.num_requests;
    p.rows = a->rows;
    p.rows_stride = a->rows_stride_t ? a->rows_stride_t : MLA_KEY_DIM;
    p.base = (uint8_t *)c->base;
    p.page_stride = c->page_stride;
    p.page_size = c->page_size;
    p.num_pages = c->num_pages;
    p.format = (int)c->format;
    p.sigma = c->sigma;
    p.sigma_stride = mla_sigma_page_stride(c);
    p.q_offsets = a->batch.q_offsets;
    p.seq_lens = a->batch.seq_lens;
    p.block_table = a->batch.block_table;
    p.bt_stride = a->batch.bt_stride;
    p.in_align = align_of((uintptr_t)a->rows, (uint64_t)p.rows_stride * 2, 16);
    p.out_align = align_of((uintptr_t)c->base, (uint64_t)c->page_stride, 16);
    if (p.T == 0) return MLA_OK;
    return cache_store_launch_v1(ctx, &p);
}

/* ------------------------------------------------------------------------------------------ */
/* mla_quantize_q_rope_aware                                                                   */

#define QQ_THREADS 256

typedef struct quantize_q_params {
    int32_t T, H;
    const uint16_t *q;      /* [T, H, 576] bf16 */
    int64_t q_st, q_sh;     /* elements */
    uint8_t *q_out;         /* [T, H, 640] */
    int64_t o_st, o_sh;     /* bytes */
    float *q_sigma;         /* [T] */
    int in_align, out_align;
} quantize_q_params;

/* One CTA per token. Item i of the latent pass: head i / 32, dims 16*(i%32) .. +15; item i of the
 * rope pass: head i / 8, rope dims 8*(i%8) .. +7. */
__global__ void __launch_bounds__(QQ_THREADS) quantize_q_kernel_v1(quantize_q_params p) {
    __shared__ float s_warp_max[QQ_THREADS / 32];
    const int t = blockIdx.x;
    const uint16_t *qt = p.q + (int64_t)t * p.q_st;
    uint8_t *ot = p.q_out + (int64_t)t * p.o_st;
    const int n_lat = p.H * 32, n_rope = p.H * 8;

    float amax = 0.0f;
    for (int i = threadIdx.x; i < n_lat; i += QQ_THREADS) {
        const uint16_t *src = qt + (int64_t)(i >> 5) * p.q_sh + 16 * (i & 31);
        uint32_t x0[4], x1[4];
        load_bf16x8(src, p.in_align, x0);
        load_bf16x8(src + 8, p.in_align, x1);
        amax = fmaxf(amax, fmaxf(absmax_bf16x8(x0), absmax_bf16x8(x1)));
    }
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if ((threadIdx.x & 31) == 0) s_warp_max[threadIdx.x >> 5] = amax;
    __syncthreads();
    amax = s_warp_max[0];
#pragma unroll
    for (int w = 1; w < QQ_THREADS / 32; w++) amax = fmaxf(amax, s_warp_max[w]);
    const float sigma = pow2_scale_dev(amax);

    for (int i = threadIdx.x; i < n_lat; i += QQ_THREADS) {
        const int h = i >> 5, part = i & 31;
        const uint16_t *src = qt + (int64_t)h * p.q_sh + 16 * part;
        uint32_t x0[4], x1[4], q[4];
        load_bf16x8(src, p.in_align, x0);
        load_bf16x8(src + 8, p.in_align, x1);
        quant_bf16x8(x0, sigma, q);
        quant_bf16x8(x1, sigma, q + 2);
        store_words(ot + (int64_t)h * p.o_sh + 16 * part, q, 4, p.out_align);
    }
    for (int i = threadIdx.x; i < n_rope; i += QQ_THREADS) {
        const int h = i >> 3, part = i & 7;
        uint32_t r[4];
        load_bf16x8(qt + (int64_t)h * p.q_sh + MLA_LATENT_DIM + 8 * part, p.in_align, r);
        div_bf16x8(r, sigma);
        store_words(ot + (int64_t)h * p.o_sh + MLA_LATENT_DIM + 16 * part, r, 4, p.out_align);
    }
    if (threadIdx.x == 0) p.q_sigma[t] = sigma;
}

static mla_status quantize_q_launch_v1(mla_ctx *ctx, const quantize_q_params *p) {
    quantize_q_kernel_v1<<<p->T, QQ_THREADS, 0, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, "quantize_q_rope_aware");
    return MLA_OK;
}

extern "C" mla_status mla_cuda_quantize_q_rope_aware(mla_ctx *ctx, const mla_quantize_q_rope_aware_args *a) {
    quantize_q_params p;
    p.T = a->num_tokens;
    p.H = a->num_heads;
    p.q = a->q;
    p.q_sh = a->q_stride_h ? a->q_stride_h : MLA_KEY_DIM;
    p.q_st = a->q_stride_t ? a->q_stride_t : (int64_t)p.H * p.q_sh;
    p.q_out = a->q_out;
    p.o_sh = a->q_out_stride_h ? a->q_out_stride_h : 640;
    p.o_st = a->q_out_stride_t ? a->q_out_stride_t : (int64_t)p.H * p.o_sh;
    p.q_sigma = a->q_sigma;
    p.in_align = align_of((uintptr_t)a->q, (uint64_t)p.q_st * 2, (uint64_t)p.q_sh * 2);
    p.out_align = align_of((uintptr_t)a->q_out, (uint64_t)p.o_st, (uint64_t)p.o_sh);
    if (p.T == 0) return MLA_OK;
    return quantize_q_launch_v1(ctx, &p);
}
