/* mla_sparse on CUDA: q [T,H,576] bf16 x top-k slot ids into a BF16 / FP8 (656 B) latent cache
   -> out [T,H,512] bf16, lse and max_logits [T,H] f32 (SPEC 4.2).
   v1  decode's engine (attn.cuh) with keys gathered by slot id: CTA = 64 heads of one token x one
       split of its top-k list; invalid ids skipped, duplicates counted per occurrence (default)
                                                                                  not yet timed
   Run alone: `mla check sparse`, `build/tests/test_cuda_attn`. */
#include "attn.cuh"

/* ---- v1 ---- */
__global__ __launch_bounds__(ATT_THREADS, 1) void sparse_kernel_v1(const __grid_constant__ mla_attn_params p) {
    att_body(&p, 1);
}

static mla_status sparse_launch_v1(mla_ctx *ctx, const mla_attn_params *p) {
    MLA_CUDA_TRY(ctx, cudaFuncSetAttribute(sparse_kernel_v1, cudaFuncAttributeMaxDynamicSharedMemorySize, ATT_SM_BYTES),
                 "sparse: cudaFuncSetAttribute");
    const dim3 grid((unsigned)((int64_t)p->num_tokens * p->head_blocks), (unsigned)p->num_splits);
    sparse_kernel_v1<<<grid, ATT_THREADS, ATT_SM_BYTES, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, "sparse: sparse_kernel_v1");
    return mla_cuda_attn_combine(ctx, p);
}

/* ---- host side ---- */

/* Row blocking and split count; only num_tokens, num_heads and the SM count. */
static void sparse_shape(const mla_ctx *ctx, const mla_sparse_args *a, mla_attn_params *p) {
    const int H = a->num_heads;
    p->num_tokens = a->num_tokens;
    p->num_heads = H;
    p->num_requests = 0;
    p->heads_per_cta = H < ATT_BM ? H : ATT_BM;
    p->head_blocks = (H + p->heads_per_cta - 1) / p->heads_per_cta;
    p->tokens_per_cta = 1; /* every token has its own key list */
    p->num_splits = mla_cuda_attn_splits((int64_t)a->num_tokens * p->head_blocks, ctx->sm_count);
}

extern "C" size_t mla_cuda_sparse_workspace(const mla_ctx *ctx, const mla_sparse_args *a) {
    if (a->num_tokens <= 0 || a->num_heads <= 0 || a->num_heads > MLA_MAX_HEADS) return 0;
    mla_attn_params p = {};
    sparse_shape(ctx, a, &p);
    return mla_cuda_attn_workspace_bytes((int64_t)a->num_tokens * a->num_heads, p.num_splits);
}

extern "C" mla_status mla_cuda_sparse(mla_ctx *ctx, const mla_sparse_args *a) {
    const mla_paged_cache *c = &a->cache;
    mla_attn_params p = {};
    sparse_shape(ctx, a, &p);
    if ((int64_t)a->num_tokens * p.head_blocks > 0x7fffffff)
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "sparse: num_tokens = %d x %d head blocks exceeds the CUDA grid",
                             a->num_tokens, p.head_blocks);
    if ((uintptr_t)c->base % 16 != 0 || c->page_stride % 16 != 0)
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED,
                             "sparse: cuda needs cache.base and cache.page_stride (%lld) 16-byte aligned (cp.async rows)",
                             (long long)c->page_stride);
    p.format = c->format;
    p.sparse = 1;
    p.causal = 0;
    p.page_size = c->page_size;
    p.num_pages = c->num_pages;
    p.row_bytes = (int32_t)mla_cache_row_bytes(c->format, 0);
    p.topk = a->topk;

    p.q = a->q;
    p.q_sigma = 0;
    p.kv_base = (const uint8_t *)c->base;
    p.kv_sigma = 0;
    p.indices = a->indices;
    p.topk_len = a->topk_len;
    p.sink = a->sink;
    p.out = a->out;
    p.lse = a->lse;
    p.max_logits = a->max_logits;

    p.q_stride_h = a->q_stride_h ? a->q_stride_h : MLA_KEY_DIM;
    p.q_stride_t = a->q_stride_t ? a->q_stride_t : (int64_t)a->num_heads * p.q_stride_h;
    p.page_stride = c->page_stride;
    p.sigma_stride_page = 0;
    p.bt_stride = 0;
    p.indices_stride_t = a->indices_stride_t ? a->indices_stride_t : a->topk;
    p.out_stride_h = a->out_stride_h ? a->out_stride_h : MLA_LATENT_DIM;
    p.out_stride_t = a->out_stride_t ? a->out_stride_t : (int64_t)a->num_heads * p.out_stride_h;
    p.lse_stride_t = a->lse_stride_t ? a->lse_stride_t : a->num_heads;

    p.scale_log2 = a->scale * ATT_LOG2E;
    p.out_pairs = (uintptr_t)a->out % 4 == 0 && p.out_stride_t % 2 == 0 && p.out_stride_h % 2 == 0;
    MLA_TRY(mla_cuda_attn_bind_workspace(ctx, "sparse", &p, a->workspace, a->workspace_bytes));
    return sparse_launch_v1(ctx, &p);
}
