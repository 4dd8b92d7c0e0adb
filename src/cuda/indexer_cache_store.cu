/* mla_indexer_cache_store on CUDA: bf16 k [T,D] -> MLA_IDX_FP8 pages at the new tokens' positions
   (spec 3, 4.5): scale = pow2_scale(amax over the token's D values), q = e4m3(k / scale). Exact.
   v1  D/16 lanes per token (a warp holds 2 tokens of D=128, 4 of D=64), lane owns 16 dims,
       amax by xor shuffles inside the token's lanes; 16-byte accesses when aligned      (default)
   Not yet timed (written without a GPU at hand).
   Run alone: build/tests/test_cuda_misc (CUDA against the CPU backend, byte for byte). */
#include "cuda.h"
#include "indexer_common.cuh"

#define ICS_THREADS 256

typedef struct idx_store_params {
    int32_t T, B, D;
    const uint16_t *k;   /* [T, D] bf16 */
    int64_t k_stride;    /* elements */
    uint8_t *base;       /* page p: base + p * page_stride; page_size*D e4m3, then page_size f32 */
    int64_t page_stride; /* bytes */
    int32_t page_size, num_pages;
    const int32_t *q_offsets, *seq_lens, *block_table; /* device */
    int64_t bt_stride;
    int in_align, out_align;
} idx_store_params;

__global__ void __launch_bounds__(ICS_THREADS) idx_store_kernel_v1(idx_store_params p) {
    const int lpt = p.D >> 4;                    /* lanes per token: 8 (D=128) or 4 (D=64) */
    const int64_t gtid = (int64_t)blockIdx.x * ICS_THREADS + threadIdx.x;
    const int64_t tt = gtid / lpt;               /* a token's lanes are consecutive, inside one warp */
    const int part = (int)(gtid % lpt);          /* dims 16*part .. 16*part+15 */

    int ok = tt < p.T;
    const int t = ok ? (int)tt : 0;
    int b = 0;
    int64_t pos = 0;
    int32_t seq = 0, page = -1;
    if (ok) ok = token_position(p.q_offsets, p.seq_lens, p.B, t, &b, &pos, &seq);
    if (ok) ok = pos >= 0 && pos < seq;
    if (ok) page = page_of(p.block_table, p.bt_stride, b, pos, p.page_size, p.num_pages);
    if (page < 0) ok = 0;

    uint32_t x0[4] = {0, 0, 0, 0}, x1[4] = {0, 0, 0, 0};
    if (ok) {
        const uint16_t *src = p.k + (int64_t)t * p.k_stride + 16 * part;
        load_bf16x8(src, p.in_align, x0);
        load_bf16x8(src + 8, p.in_align, x1);
    }
    /* every lane takes part in the shuffles (tokens of one warp may differ in validity) */
    float amax = fmaxf(absmax_bf16x8(x0), absmax_bf16x8(x1));
    for (int o = lpt >> 1; o >= 1; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (!ok) return;

    const float scale = pow2_scale_dev(amax);
    const int32_t slot = (int32_t)(pos % p.page_size);
    uint8_t *pg = p.base + (int64_t)page * p.page_stride;
    uint32_t q[4];
    quant_bf16x8(x0, scale, q);
    quant_bf16x8(x1, scale, q + 2);
    store_words(pg + (int64_t)slot * p.D + 16 * part, q, 4, p.out_align);
    if (part == 0) store_f32(pg + (int64_t)p.page_size * p.D + (int64_t)slot * 4, scale, p.out_align);
}

static mla_status idx_store_launch_v1(mla_ctx *ctx, const idx_store_params *p) {
    const int64_t threads = (int64_t)p->T * (p->D >> 4);
    const int blocks = (int)((threads + ICS_THREADS - 1) / ICS_THREADS);
    idx_store_kernel_v1<<<blocks, ICS_THREADS, 0, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, "indexer_cache_store");
    return MLA_OK;
}

extern "C" mla_status mla_cuda_indexer_cache_store(mla_ctx *ctx, const mla_indexer_cache_store_args *a) {
    const mla_paged_cache *c = &a->cache;
    idx_store_params p;
    p.T = a->num_tokens;
    p.B = a->batch.num_requests;
    p.D = c->dim;
    p.k = a->k;
    p.k_stride = a->k_stride_t ? a->k_stride_t : c->dim;
    p.base = (uint8_t *)c->base;
    p.page_stride = c->page_stride;
    p.page_size = c->page_size;
    p.num_pages = c->num_pages;
    p.q_offsets = a->batch.q_offsets;
    p.seq_lens = a->batch.seq_lens;
    p.block_table = a->batch.block_table;
    p.bt_stride = a->batch.bt_stride;
    p.in_align = align_of((uintptr_t)a->k, (uint64_t)p.k_stride * 2, 16);
    p.out_align = align_of((uintptr_t)c->base, (uint64_t)c->page_stride, 16);
    if (p.T == 0) return MLA_OK;
    return idx_store_launch_v1(ctx, &p);
}
