/* mla_decode on CUDA: q [T,H,576] bf16 (rope-aware: [T,H,640] packed + q_sigma) x paged latent
   cache (BF16, FP8 656 B, FP8 rope-aware 640 B) -> out [T,H,512] bf16, lse [T,H] f32 (SPEC 4.1).
   v1  CTA = 64 (token, head) rows x one key split; Q in smem, 32-key K tiles by cp.async (2
       stages; FP8 widened to exact bf16 raw values, scales applied per 128-column chunk to S and
       to P), mma.sync m16n8k16, online softmax in f32, split-KV + combine.cu for small grids
       (where v2 declines: unaligned pointers, other SMs)  H100 b=128 h=128 s_q=2 8K: 118 TF
   v2  decode_hopper.cu: wgmma + TMA, producer warpgroup + two seesaw consumers, P as two bf16
       terms; BF16, FP8-656 and rope-aware FP8-640 (dequantized in shared memory), SM 9.0,
       16-byte aligned q; rope-aware 181 TF (H200);
       default where supported                            H100 BF16 459 TF; FP8 222 TF
       (MLA_PRECISION_BF16_P: one bf16 P term, its own compiled program: BF16 575 TF)
   Dispatch: v2 where it supports the call (BF16, FP8), else v1; MLA_KERNEL=decode:1 forces v1.
   Run alone: `mla check decode`, `build/tests/test_cuda_attn`, `build/tests/test_cuda_decode_hopper`.
   The v1 engine is attn.cuh. */
#include <stdlib.h>
#include <string.h>

#include "../core/paged.h"
#include "attn.cuh"
#include "decode_hopper.h"

/* 1 when the environment forces version v of this op (MLA_KERNEL=decode:v). */
static int forced_version(int v) {
    const char *e = getenv("MLA_KERNEL");
    if (!e || strncmp(e, "decode:", 7) != 0) return 0;
    return atoi(e + 7) == v;
}

/* ---- v1 ---- */
__global__ __launch_bounds__(ATT_THREADS, 1) void decode_kernel_v1(const __grid_constant__ mla_attn_params p) {
    att_body(&p, 0);
}

static mla_status decode_launch_v1(mla_ctx *ctx, const mla_attn_params *p) {
    MLA_CUDA_TRY(ctx, cudaFuncSetAttribute(decode_kernel_v1, cudaFuncAttributeMaxDynamicSharedMemorySize, ATT_SM_BYTES),
                 "decode: cudaFuncSetAttribute");
    const dim3 grid((unsigned)((int64_t)p->num_tokens * p->head_blocks), (unsigned)p->num_splits);
    decode_kernel_v1<<<grid, ATT_THREADS, ATT_SM_BYTES, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, "decode: decode_kernel_v1");
    return mla_cuda_attn_combine(ctx, p);
}

/* ---- host side ---- */

/* Row blocking and split count; only host-visible sizes (workspace query and call agree). */
static void decode_shape(const mla_ctx *ctx, const mla_decode_args *a, mla_attn_params *p) {
    const int H = a->num_heads;
    p->num_tokens = a->num_tokens;
    p->num_heads = H;
    p->num_requests = a->batch.num_requests;
    p->heads_per_cta = H < ATT_BM ? H : ATT_BM;
    p->head_blocks = (H + p->heads_per_cta - 1) / p->heads_per_cta;
    p->tokens_per_cta = ATT_BM / p->heads_per_cta;
    /* CTAs doing work: one per group of tokens_per_cta tokens of a request (at least one per
       request with tokens, at most one per token) and head block */
    int64_t groups = ((int64_t)a->num_tokens + p->tokens_per_cta - 1) / p->tokens_per_cta;
    const int64_t reqs = a->batch.num_requests < a->num_tokens ? a->batch.num_requests : a->num_tokens;
    if (groups < reqs) groups = reqs;
    p->num_splits = mla_cuda_attn_splits(groups * p->head_blocks, ctx->sm_count);
}

extern "C" size_t mla_cuda_decode_workspace(const mla_ctx *ctx, const mla_decode_args *a) {
    if (a->num_tokens <= 0 || a->num_heads <= 0 || a->num_heads > MLA_MAX_HEADS) return 0;
    mla_attn_params p = {};
    decode_shape(ctx, a, &p);
    size_t v1 = mla_cuda_attn_workspace_bytes((int64_t)a->num_tokens * a->num_heads, p.num_splits);
    size_t v2 = (a->cache.format == MLA_KV_BF16 || a->cache.format == MLA_KV_FP8 || a->cache.format == MLA_KV_FP8_ROPE_AWARE)
                    ? mla_cuda_decode_hopper_workspace(ctx, a) : 0;
    return v1 > v2 ? v1 : v2;  /* either version may run: the call decides from the pointers */
}

extern "C" mla_status mla_cuda_decode(mla_ctx *ctx, const mla_decode_args *a) {
    char why[160];
    if (!forced_version(1) && mla_cuda_decode_hopper_supported(ctx, a, why, sizeof why))
        return mla_cuda_decode_hopper(ctx, a);
    const mla_paged_cache *c = &a->cache;
    const int ra = c->format == MLA_KV_FP8_ROPE_AWARE;
    const int64_t qrow = ra ? MLA_ROW_FP8_ROPE_AWARE : MLA_KEY_DIM;
    mla_attn_params p = {};
    decode_shape(ctx, a, &p);
    if ((int64_t)a->num_tokens * p.head_blocks > 0x7fffffff)
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "decode: num_tokens = %d x %d head blocks exceeds the CUDA grid",
                             a->num_tokens, p.head_blocks);
    if ((uintptr_t)c->base % 16 != 0 || c->page_stride % 16 != 0)
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED,
                             "decode: cuda needs cache.base and cache.page_stride (%lld) 16-byte aligned (cp.async rows)",
                             (long long)c->page_stride);
    p.format = c->format;
    p.sparse = 0;
    p.causal = a->causal != 0;
    p.page_size = c->page_size;
    p.num_pages = c->num_pages;
    p.row_bytes = (int32_t)mla_cache_row_bytes(c->format, 0);
    p.topk = 0;

    p.q = a->q;
    p.q_sigma = a->q_sigma;
    p.kv_base = (const uint8_t *)c->base;
    p.kv_sigma = c->sigma;
    p.q_offsets = a->batch.q_offsets;
    p.seq_lens = a->batch.seq_lens;
    p.block_table = a->batch.block_table;
    p.sink = a->sink;
    p.out = a->out;
    p.lse = a->lse;
    p.max_logits = 0;

    p.q_stride_h = a->q_stride_h ? a->q_stride_h : qrow;
    p.q_stride_t = a->q_stride_t ? a->q_stride_t : (int64_t)a->num_heads * p.q_stride_h;
    p.page_stride = c->page_stride;
    p.sigma_stride_page = c->sigma_stride_page ? c->sigma_stride_page : c->page_size;
    p.bt_stride = a->batch.bt_stride;
    p.out_stride_h = a->out_stride_h ? a->out_stride_h : MLA_LATENT_DIM;
    p.out_stride_t = a->out_stride_t ? a->out_stride_t : (int64_t)a->num_heads * p.out_stride_h;
    p.lse_stride_t = a->lse_stride_t ? a->lse_stride_t : a->num_heads;

    p.scale_log2 = a->scale * ATT_LOG2E;
    p.out_pairs = (uintptr_t)a->out % 4 == 0 && p.out_stride_t % 2 == 0 && p.out_stride_h % 2 == 0;
    MLA_TRY(mla_cuda_attn_bind_workspace(ctx, "decode", &p, a->workspace, a->workspace_bytes));
    return decode_launch_v1(ctx, &p);
}
