/* Entries of mla_prefill, mla_prefill_fp8_fused and its building blocks (SPEC 4.3, 4.4). */
#include "validate.h"

#define OP "prefill"

static mla_status check_prefill(mla_ctx *ctx, const mla_prefill_args *a) {
    if (a->dtype != MLA_DTYPE_BF16 && a->dtype != MLA_DTYPE_E4M3)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: dtype = %d must be MLA_DTYPE_BF16 or MLA_DTYPE_E4M3", OP,
                             (int)a->dtype);
    MLA_TRY(mla_core_check_range(ctx, OP, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, OP, "num_kv", a->num_kv, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, OP, "num_heads", a->num_heads, 1, MLA_MAX_HEADS));
    MLA_TRY(mla_core_check_range(ctx, OP, "num_requests", a->num_requests, 0, INT32_MAX));
    if (a->num_tokens > 0 && a->num_requests == 0)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: num_tokens = %d but num_requests = 0", OP, a->num_tokens);
    MLA_TRY(mla_core_check_offsets(ctx, OP, "q_offsets", a->q_offsets, a->num_requests, a->num_tokens));
    MLA_TRY(mla_core_check_offsets(ctx, OP, "kv_offsets", a->kv_offsets, a->num_requests, a->num_kv));
    if (a->causal && mla_core_host_data(ctx))
        for (int32_t b = 0; b < a->num_requests; b++) {
            int32_t ql = a->q_offsets[b + 1] - a->q_offsets[b], kl = a->kv_offsets[b + 1] - a->kv_offsets[b];
            if (kl < ql)
                return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                                     "%s: kv_len[%d] = %d < q_len[%d] = %d (causal prefill needs kv_len >= q_len)", OP,
                                     b, kl, b, ql);
        }
    if (a->num_tokens == 0) return MLA_OK;
    int64_t H = a->num_heads;
    MLA_TRY(mla_core_check_ptr(ctx, OP, "q", a->q));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_h", a->q_stride_h, MLA_QK_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_t", a->q_stride_t, H * mla_core_stride(a->q_stride_h, MLA_QK_DIM)));
    if (a->num_kv > 0) {
        MLA_TRY(mla_core_check_ptr(ctx, OP, "k_nope", a->k_nope));
        MLA_TRY(mla_core_check_ptr(ctx, OP, "v", a->v));
        MLA_TRY(mla_core_check_ptr(ctx, OP, "k_rope", a->k_rope));
    }
    MLA_TRY(mla_core_check_stride(ctx, OP, "k_nope_stride_h", a->k_nope_stride_h, MLA_NOPE_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "k_nope_stride_s", a->k_nope_stride_s,
                                  H * mla_core_stride(a->k_nope_stride_h, MLA_NOPE_DIM)));
    MLA_TRY(mla_core_check_stride(ctx, OP, "v_stride_h", a->v_stride_h, MLA_NOPE_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "v_stride_s", a->v_stride_s, H * mla_core_stride(a->v_stride_h, MLA_NOPE_DIM)));
    MLA_TRY(mla_core_check_stride(ctx, OP, "k_rope_stride_s", a->k_rope_stride_s, MLA_ROPE_DIM));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "out", a->out));
    MLA_TRY(mla_core_check_stride(ctx, OP, "out_stride_h", a->out_stride_h, MLA_NOPE_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "out_stride_t", a->out_stride_t, H * mla_core_stride(a->out_stride_h, MLA_NOPE_DIM)));
    MLA_TRY(mla_core_check_stride(ctx, OP, "lse_stride_t", a->lse_stride_t, H));
    MLA_TRY(mla_core_check_finite(ctx, OP, "scale", a->scale));
    if (a->dtype == MLA_DTYPE_E4M3) {
        MLA_TRY(mla_core_check_finite(ctx, OP, "descale_q", a->descale_q));
        MLA_TRY(mla_core_check_finite(ctx, OP, "descale_k", a->descale_k));
        MLA_TRY(mla_core_check_finite(ctx, OP, "descale_v", a->descale_v));
    }
    return MLA_OK;
}

mla_status mla_prefill(mla_ctx *ctx, const mla_prefill_args *a) {
    MLA_ENTRY(ctx, a, OP);
    MLA_TRY(check_prefill(ctx, a));
    if (a->num_tokens == 0) return MLA_OK;
    if (!ctx->ops->prefill) return mla_core_refuse(ctx, OP);
    return ctx->ops->prefill(ctx, a);
}

size_t mla_prefill_workspace_size(const mla_ctx *ctx, const mla_prefill_args *a) {
    if (!ctx || !a || !ctx->ops->prefill_workspace) return 0;
    return ctx->ops->prefill_workspace(ctx, a);
}

#undef OP
#define OP "prefill_fp8_fused"

static mla_status check_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) {
    MLA_TRY(mla_core_check_range(ctx, OP, "num_tokens", a->num_tokens, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, OP, "num_heads", a->num_heads, 1, MLA_MAX_HEADS));
    MLA_TRY(mla_core_check_cache(ctx, OP, "cache", &a->cache, MLA_FMT_BIT(MLA_KV_BF16)));
    MLA_TRY(mla_core_check_batch(ctx, OP, &a->batch, a->num_tokens, &a->cache, 1));
    if (a->num_tokens == 0) return MLA_OK;
    int64_t H = a->num_heads;
    MLA_TRY(mla_core_check_ptr(ctx, OP, "q", a->q));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_h", a->q_stride_h, MLA_QK_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "q_stride_t", a->q_stride_t, H * mla_core_stride(a->q_stride_h, MLA_QK_DIM)));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "freqs_cis", a->freqs_cis));
    MLA_TRY(mla_core_check_range(ctx, OP, "max_pos", a->max_pos, 1, INT32_MAX));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "kv_norm_gamma", a->kv_norm_gamma));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "kv_b_proj", a->kv_b_proj));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "kv_b_proj_scale", a->kv_b_proj_scale));
    MLA_TRY(mla_core_check_ptr(ctx, OP, "out", a->out));
    MLA_TRY(mla_core_check_stride(ctx, OP, "out_stride_h", a->out_stride_h, MLA_NOPE_DIM));
    MLA_TRY(mla_core_check_stride(ctx, OP, "out_stride_t", a->out_stride_t, H * mla_core_stride(a->out_stride_h, MLA_NOPE_DIM)));
    MLA_TRY(mla_core_check_stride(ctx, OP, "lse_stride_t", a->lse_stride_t, H));
    MLA_TRY(mla_core_check_finite(ctx, OP, "scale", a->scale));
    MLA_TRY(mla_core_check_finite(ctx, OP, "eps", a->eps));
    if (mla_core_host_data(ctx))
        for (int32_t b = 0; b < a->batch.num_requests; b++)
            if (a->batch.seq_lens[b] > a->max_pos)
                return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                                     "%s: seq_lens[%d] = %d exceeds max_pos = %d (freqs_cis has no row for its positions)",
                                     OP, b, a->batch.seq_lens[b], a->max_pos);
    return MLA_OK;
}

mla_status mla_prefill_fp8_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) {
    MLA_ENTRY(ctx, a, OP);
    MLA_TRY(check_fused(ctx, a));
    if (a->num_tokens == 0) return MLA_OK;
    if (!ctx->ops->prefill_fp8_fused) return mla_core_refuse(ctx, OP);
    return ctx->ops->prefill_fp8_fused(ctx, a);
}

size_t mla_prefill_fp8_fused_workspace_size(const mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) {
    if (!ctx || !a || !ctx->ops->prefill_fp8_fused_workspace) return 0;
    return ctx->ops->prefill_fp8_fused_workspace(ctx, a);
}

mla_status mla_rope(mla_ctx *ctx, const mla_rope_args *a) {
    const char *op = "rope";
    MLA_ENTRY(ctx, a, op);
    MLA_TRY(mla_core_check_range(ctx, op, "num_rows", a->num_rows, 0, INT32_MAX));
    if (a->num_rows == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, op, "x", a->x));
    MLA_TRY(mla_core_check_ptr(ctx, op, "pos", a->pos));
    MLA_TRY(mla_core_check_ptr(ctx, op, "freqs_cis", a->freqs_cis));
    MLA_TRY(mla_core_check_range(ctx, op, "max_pos", a->max_pos, 1, INT32_MAX));
    MLA_TRY(mla_core_check_stride(ctx, op, "x_stride", a->x_stride, MLA_ROPE_DIM));
    if (mla_core_host_data(ctx))
        for (int32_t i = 0; i < a->num_rows; i++)
            if (a->pos[i] < 0 || a->pos[i] >= a->max_pos)
                return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: pos[%d] = %d is outside [0, max_pos = %d)", op, i,
                                     a->pos[i], a->max_pos);
    if (!ctx->ops->rope) return mla_core_refuse(ctx, op);
    return ctx->ops->rope(ctx, a);
}

mla_status mla_rmsnorm(mla_ctx *ctx, const mla_rmsnorm_args *a) {
    const char *op = "rmsnorm";
    MLA_ENTRY(ctx, a, op);
    MLA_TRY(mla_core_check_range(ctx, op, "num_rows", a->num_rows, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, op, "dim", a->dim, 1, 1 << 20));
    if (a->num_rows == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, op, "x", a->x));
    MLA_TRY(mla_core_check_ptr(ctx, op, "gamma", a->gamma));
    MLA_TRY(mla_core_check_stride(ctx, op, "x_stride", a->x_stride, a->dim));
    MLA_TRY(mla_core_check_finite(ctx, op, "eps", a->eps));
    if (!ctx->ops->rmsnorm) return mla_core_refuse(ctx, op);
    return ctx->ops->rmsnorm(ctx, a);
}

mla_status mla_quantize_fp8_1x128(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *a) {
    const char *op = "quantize_fp8_1x128";
    MLA_ENTRY(ctx, a, op);
    MLA_TRY(mla_core_check_range(ctx, op, "num_rows", a->num_rows, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, op, "dim", a->dim, 128, 1 << 20));
    if (a->dim % 128) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: dim = %d must be a multiple of 128", op, a->dim);
    if (a->num_rows == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, op, "x", a->x));
    MLA_TRY(mla_core_check_ptr(ctx, op, "q", a->q));
    MLA_TRY(mla_core_check_ptr(ctx, op, "s", a->s));
    MLA_TRY(mla_core_check_stride(ctx, op, "x_stride", a->x_stride, a->dim));
    if (!ctx->ops->quantize_fp8_1x128) return mla_core_refuse(ctx, op);
    return ctx->ops->quantize_fp8_1x128(ctx, a);
}

mla_status mla_gemm_fp8_block_scaled(mla_ctx *ctx, const mla_gemm_fp8_args *a) {
    const char *op = "gemm_fp8_block_scaled";
    MLA_ENTRY(ctx, a, op);
    MLA_TRY(mla_core_check_range(ctx, op, "m", a->m, 0, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, op, "n", a->n, 1, INT32_MAX));
    MLA_TRY(mla_core_check_range(ctx, op, "k", a->k, 128, INT32_MAX));
    if (a->k % 128) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: k = %d must be a multiple of 128", op, a->k);
    if (a->m == 0) return MLA_OK;
    MLA_TRY(mla_core_check_ptr(ctx, op, "a", a->a));
    MLA_TRY(mla_core_check_ptr(ctx, op, "a_s", a->a_s));
    MLA_TRY(mla_core_check_ptr(ctx, op, "b", a->b));
    MLA_TRY(mla_core_check_ptr(ctx, op, "b_s", a->b_s));
    MLA_TRY(mla_core_check_ptr(ctx, op, "c", a->c));
    MLA_TRY(mla_core_check_stride(ctx, op, "c_stride", a->c_stride, a->n));
    if (!ctx->ops->gemm_fp8_block_scaled) return mla_core_refuse(ctx, op);
    return ctx->ops->gemm_fp8_block_scaled(ctx, a);
}
