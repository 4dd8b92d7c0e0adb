/* Argument validation shared by the operations. Each check names the operation, the argument and
 * the rule, records it on the context and returns MLA_ERR_INVALID_ARG; nothing is written.
 * Data checks (offsets, lengths, block tables) run only when that data is host-resident, i.e. on
 * the CPU backend; on CUDA the kernels guard it (SPEC section 5). */
#ifndef MLA_CORE_VALIDATE_H
#define MLA_CORE_VALIDATE_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* bit mask of accepted formats for mla_core_check_cache */
#define MLA_FMT_BIT(f) (1u << (unsigned)(f))
#define MLA_FMT_LATENT (MLA_FMT_BIT(MLA_KV_BF16) | MLA_FMT_BIT(MLA_KV_FP8) | MLA_FMT_BIT(MLA_KV_FP8_ROPE_AWARE))

static inline int64_t mla_core_stride(int64_t given, int64_t dflt) { return given ? given : dflt; }
static inline int mla_core_host_data(const mla_ctx *ctx) { return ctx->backend == MLA_BACKEND_CPU; }

/* Start of every public entry: ctx and args non-NULL, error cleared. */
#define MLA_ENTRY(ctx, args, op)                                                         \
    do {                                                                                 \
        if (!(ctx)) return MLA_ERR_INVALID_ARG;                                          \
        mla_core_clear_error(ctx);                                                       \
        if (!(args)) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: args is NULL", op); \
    } while (0)

mla_status mla_core_check_range(mla_ctx *ctx, const char *op, const char *name, int64_t v, int64_t lo, int64_t hi);
mla_status mla_core_check_ptr(mla_ctx *ctx, const char *op, const char *name, const void *p);
/* stride 0 (default) is fine; otherwise it must be >= min */
mla_status mla_core_check_stride(mla_ctx *ctx, const char *op, const char *name, int64_t stride, int64_t min);
mla_status mla_core_check_finite(mla_ctx *ctx, const char *op, const char *name, float v);
/* base, page_size >= 1, num_pages >= 1, format in mask, page_stride >= page bytes, sigma for
 * rope-aware, dim 64/128 for MLA_IDX_FP8. `name` is the argument ("cache"). */
mla_status mla_core_check_cache(mla_ctx *ctx, const char *op, const char *name, const mla_paged_cache *c,
                                unsigned format_mask);
/* The ragged batch: B >= 0, pointers, and on host data: q_offsets[0] = 0, ascending,
 * q_offsets[B] = num_tokens, seq_lens >= 0, (need_seq_ge_qlen) seq_lens[b] >= q_len[b] unless seq_lens[b] = 0 (an empty request), every
 * block-table entry a request uses in [0, num_pages), bt_stride >= pages used. */
mla_status mla_core_check_batch(mla_ctx *ctx, const char *op, const mla_batch *bt, int32_t num_tokens,
                                const mla_paged_cache *c, int need_seq_ge_qlen);
/* Ragged offsets alone (prefill): off[0] = 0, ascending, off[B] = total. */
mla_status mla_core_check_offsets(mla_ctx *ctx, const char *op, const char *name, const int32_t *off,
                                  int32_t B, int32_t total);

#ifdef __cplusplus
}
#endif
#endif
