/* Entries of the exact ops: cache writers, q packing, indices_to_slots (SPEC 4.2, 4.5, 4.6). */
#include "validate.h"

mla_status mla_cache_store(mla_ctx *ctx, const mla_cache_store_args *a) {
    const char *op = "cache_store";
    MLA_ENTRY(ctx, a, op);
    MLA_TRY(mla_core_check_range(ctx, op, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_cache(ctx, op, "cache", &a->cache, MLA_FMT_LATENT));
    MLA_TRY(mla_core_check_batch(ctx, op, &a->batch, a->num_tokens, &a->cache, 1));
    if (a->num_tokens == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, op, "rows", a->rows));
    MLA_TRY(mla_core_check_stride(ctx, op, "rows_stride_t", a->rows_stride_t, MLA_KEY_DIM));
    if (!ctx->ops->cache_store) return mla_core_refuse(ctx, op);
    return ctx->ops->cache_store(ctx, a);
}

mla_status mla_indexer_cache_store(mla_ctx *ctx, const mla_indexer_cache_store_args *a) {
    const char *op = "indexer_cache_store";
    MLA_ENTRY(ctx, a, op);
    MLA_TRY(mla_core_check_range(ctx, op, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_cache(ctx, op, "cache", &a->cache, MLA_FMT_BIT(MLA_IDX_FP8)));
    MLA_TRY(mla_core_check_batch(ctx, op, &a->batch, a->num_tokens, &a->cache, 1));
    if (a->num_tokens == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, op, "k", a->k));
    MLA_TRY(mla_core_check_stride(ctx, op, "k_stride_t", a->k_stride_t, a->cache.dim));
    if (!ctx->ops->indexer_cache_store) return mla_core_refuse(ctx, op);
    return ctx->ops->indexer_cache_store(ctx, a);
}

mla_status mla_quantize_q_rope_aware(mla_ctx *ctx, const mla_quantize_q_rope_aware_args *a) {
    const char *op = "quantize_q_rope_aware";
    MLA_ENTRY(ctx, a, op);
    MLA_TRY(mla_core_check_range(ctx, op, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, op, "num_heads", a->num_heads, 1, MLA_MAX_HEADS));
    if (a->num_tokens == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, op, "q", a->q));
    MLA_TRY(mla_core_check_ptr(ctx, op, "q_out", a->q_out));
    MLA_TRY(mla_core_check_ptr(ctx, op, "q_sigma", a->q_sigma));
    MLA_TRY(mla_core_check_stride(ctx, op, "q_stride_h", a->q_stride_h, MLA_KEY_DIM));
    MLA_TRY(mla_core_check_stride(ctx, op, "q_stride_t", a->q_stride_t,
                                  (int64_t)a->num_heads * mla_core_stride(a->q_stride_h, MLA_KEY_DIM)));
    MLA_TRY(mla_core_check_stride(ctx, op, "q_out_stride_h", a->q_out_stride_h, 640));
    MLA_TRY(mla_core_check_stride(ctx, op, "q_out_stride_t", a->q_out_stride_t,
                                  (int64_t)a->num_heads * mla_core_stride(a->q_out_stride_h, 640)));
    if (!ctx->ops->quantize_q_rope_aware) return mla_core_refuse(ctx, op);
    return ctx->ops->quantize_q_rope_aware(ctx, a);
}

mla_status mla_indices_to_slots(mla_ctx *ctx, const mla_indices_to_slots_args *a) {
    const char *op = "indices_to_slots";
    MLA_ENTRY(ctx, a, op);
    MLA_TRY(mla_core_check_range(ctx, op, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, op, "topk", a->topk, 1, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, op, "page_size", a->page_size, 1, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, op, "num_pages", a->num_pages, 1, INT32_MAX));
    if ((int64_t)a->num_pages * a->page_size > INT32_MAX)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: num_pages * page_size exceeds int32 slot ids", op);
    /* the block table is checked like a cache's: a fake cache carries page_size and num_pages */
    mla_paged_cache c = {0};
    c.page_size = a->page_size;
    c.num_pages = a->num_pages;
    MLA_TRY(mla_core_check_batch(ctx, op, &a->batch, a->num_tokens, &c, 0));
    if (a->num_tokens == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, op, "indices", a->indices));
    MLA_TRY(mla_core_check_ptr(ctx, op, "slots", a->slots));
    MLA_TRY(mla_core_check_stride(ctx, op, "indices_stride_t", a->indices_stride_t, a->topk));
    MLA_TRY(mla_core_check_stride(ctx, op, "slots_stride_t", a->slots_stride_t, a->topk));
    if (!ctx->ops->indices_to_slots) return mla_core_refuse(ctx, op);
    return ctx->ops->indices_to_slots(ctx, a);
}
