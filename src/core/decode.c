/* mla_decode and mla_sparse entries: validation (SPEC 4.1, 4.2, 5), then the backend. */
#include "validate.h"

#define OP "decode"

static mla_status check_decode(mla_ctx *ctx, const mla_decode_args *a) {
    MLA_TRY(mla_core_check_range(ctx, OP, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, OP, "num_heads", a->num_heads, 1, MLA_MAX_HEADS));
    MLA_TRY(mla_core_check_range(ctx, OP, "precision (MLA_PRECISION_SPEC or MLA_PRECISION_BF16_P)", (int64_t)a->precision,
                                 MLA_PRECISION_SPEC, MLA_PRECISION_BF16_P));
    MLA_TRY(mla_core_check_cache(ctx, OP, "cache", &a->cache, MLA_FMT_LATENT));
    MLA_TRY(mla_core_check_batch(ctx, OP, &a->batch, a->num_tokens, &a->cache, 1));
    if (a->num_tokens == 0) return MLA_OK;
    int ra = a->cache.format == MLA_KV_FP8_ROPE_AWARE;
    int64_t row = ra ? 640 : MLA_KEY_DIM;
    MLA_TRY(mla_core_check_ptr(ctx, OP, "q", a->q));
    if (ra) MLA_TRY(mla_core_check_ptr(ctx, OP, "q_sigma (MLA_KV_FP8_ROPE_AWARE needs it)", a->q_sigma));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_h", a->q_stride_h, row));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_t", a->q_stride_t,
                                  (int64_t)a->num_heads * mla_core_stride(a->q_stride_h, row)));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "out", a->out));
    MLA_TRY(mla_core_check_stride(ctx, OP, "out_stride_h", a->out_stride_h, MLA_LATENT_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "out_stride_t", a->out_stride_t,
                                  (int64_t)a->num_heads * mla_core_stride(a->out_stride_h, MLA_LATENT_DIM)));
    MLA_TRY(mla_core_check_stride(ctx, OP, "lse_stride_t", a->lse_stride_t, a->num_heads));
    MLA_TRY(mla_core_check_finite(ctx, OP, "scale", a->scale));
    return MLA_OK;
}

mla_status mla_decode(mla_ctx *ctx, const mla_decode_args *a) {
    MLA_ENTRY(ctx, a, OP);
    MLA_TRY(check_decode(ctx, a));
    if (a->num_tokens == 0) return MLA_OK;
    if (!ctx->ops->decode) return mla_core_refuse(ctx, OP);
    return ctx->ops->decode(ctx, a);
}

size_t mla_decode_workspace_size(const mla_ctx *ctx, const mla_decode_args *a) {
    if (!ctx || !a || !ctx->ops->decode_workspace) return 0;
    return ctx->ops->decode_workspace(ctx, a);
}

#undef OP
#define OP "sparse"

static mla_status check_sparse(mla_ctx *ctx, const mla_sparse_args *a) {
    MLA_TRY(mla_core_check_range(ctx, OP, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, OP, "num_heads", a->num_heads, 1, MLA_MAX_HEADS));
    MLA_TRY(mla_core_check_cache(ctx, OP, "cache", &a->cache, MLA_FMT_BIT(MLA_KV_BF16) | MLA_FMT_BIT(MLA_KV_FP8)));
    MLA_TRY(mla_core_check_range(ctx, OP, "topk", a->topk, 1, INT32_MAX));
    if (a->num_tokens == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, OP, "q", a->q));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_h", a->q_stride_h, MLA_KEY_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_t", a->q_stride_t,
                                  (int64_t)a->num_heads * mla_core_stride(a->q_stride_h, MLA_KEY_DIM)));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "indices", a->indices));
    MLA_TRY(mla_core_check_stride(ctx, OP, "indices_stride_t", a->indices_stride_t, a->topk));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "out", a->out));
    MLA_TRY(mla_core_check_stride(ctx, OP, "out_stride_h", a->out_stride_h, MLA_LATENT_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "out_stride_t", a->out_stride_t,
                                  (int64_t)a->num_heads * mla_core_stride(a->out_stride_h, MLA_LATENT_DIM)));
    MLA_TRY(mla_core_check_stride(ctx, OP, "lse_stride_t", a->lse_stride_t, a->num_heads));
    MLA_TRY(mla_core_check_finite(ctx, OP, "scale", a->scale));
    return MLA_OK;
}

mla_status mla_sparse(mla_ctx *ctx, const mla_sparse_args *a) {
    MLA_ENTRY(ctx, a, OP);
    MLA_TRY(check_sparse(ctx, a));
    if (a->num_tokens == 0) return MLA_OK;
    if (!ctx->ops->sparse) return mla_core_refuse(ctx, OP);
    return ctx->ops->sparse(ctx, a);
}

size_t mla_sparse_workspace_size(const mla_ctx *ctx, const mla_sparse_args *a) {
    if (!ctx || !a || !ctx->ops->sparse_workspace) return 0;
    return ctx->ops->sparse_workspace(ctx, a);
}
