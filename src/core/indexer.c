/* Entry of mla_indexer (SPEC 4.5). */
#include "validate.h"

#define OP "indexer"

static mla_status check_indexer(mla_ctx *ctx, const mla_indexer_args *a) {
    MLA_TRY(mla_core_check_range(ctx, OP, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, OP, "num_heads", a->num_heads, 1, MLA_MAX_HEADS));
    if (a->dim != 64 && a->dim != 128)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: dim = %d must be 64 or 128", OP, a->dim);
    MLA_TRY(mla_core_check_cache(ctx, OP, "cache", &a->cache, MLA_FMT_BIT(MLA_IDX_FP8)));
    if (a->cache.dim != a->dim)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: cache.dim = %d must equal dim = %d", OP, a->cache.dim, a->dim);
    MLA_TRY(mla_core_check_batch(ctx, OP, &a->batch, a->num_tokens, &a->cache, 1));
    MLA_TRY(mla_core_check_range(ctx, OP, "top_k", a->top_k, 1, INT32_MAX));
    if (a->num_tokens == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, OP, "q", a->q));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_t", a->q_stride_t, (int64_t)a->num_heads * a->dim));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "q_s", a->q_s));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "indices", a->indices));
    MLA_TRY(mla_core_check_stride(ctx, OP, "indices_stride_t", a->indices_stride_t, a->top_k));
    if (a->logits) {
        MLA_TRY(mla_core_check_range(ctx, OP, "logits_stride", a->logits_stride, 1, INT64_MAX));
        if (mla_core_host_data(ctx))
            for (int32_t b = 0; b < a->batch.num_requests; b++)
                if (a->batch.seq_lens[b] > a->logits_stride)
                    return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                                         "%s: seq_lens[%d] = %d exceeds logits_stride = %lld (a logits row holds every key)",
                                         OP, b, a->batch.seq_lens[b], (long long)a->logits_stride);
    }
    if (!mla_core_host_data(ctx))
        MLA_TRY(mla_core_check_range(ctx, OP, "max_seq_len (CUDA needs an upper bound of seq_lens)", a->max_seq_len, 1,
                                     INT32_MAX));
    return MLA_OK;
}

mla_status mla_indexer(mla_ctx *ctx, const mla_indexer_args *a) {
    MLA_ENTRY(ctx, a, OP);
    MLA_TRY(check_indexer(ctx, a));
    if (a->num_tokens == 0) return MLA_OK;
    if (!ctx->ops->indexer) return mla_core_refuse(ctx, OP);
    return ctx->ops->indexer(ctx, a);
}

size_t mla_indexer_workspace_size(const mla_ctx *ctx, const mla_indexer_args *a) {
    if (!ctx || !a || !ctx->ops->indexer_workspace) return 0;
    return ctx->ops->indexer_workspace(ctx, a);
}
