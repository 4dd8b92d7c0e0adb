#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "validate.h"

#define FAIL(...) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, __VA_ARGS__)

mla_status mla_core_check_range(mla_ctx *ctx, const char *op, const char *name, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi)
        FAIL("%s: %s = %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", op, name, v, lo, hi);
    return MLA_OK;
}

mla_status mla_core_check_ptr(mla_ctx *ctx, const char *op, const char *name, const void *p) {
    if (!p) FAIL("%s: %s is NULL (required)", op, name);
    return MLA_OK;
}

mla_status mla_core_check_stride(mla_ctx *ctx, const char *op, const char *name, int64_t stride, int64_t min) {
    if (stride != 0 && stride < min)
        FAIL("%s: %s = %" PRId64 " must be 0 (contiguous) or >= %" PRId64, op, name, stride, min);
    return MLA_OK;
}

mla_status mla_core_check_finite(mla_ctx *ctx, const char *op, const char *name, float v) {
    if (!isfinite(v)) FAIL("%s: %s = %g must be finite", op, name, (double)v);
    return MLA_OK;
}

mla_status mla_core_check_cache(mla_ctx *ctx, const char *op, const char *name, const mla_paged_cache *c,
                                unsigned mask) {
    unsigned f = (unsigned)c->format;
    if (f > 31 || !(mask & (1u << f))) {
        char list[160] = "";
        int n = 0;
        for (unsigned i = 1; i < 8; i++)
            if (mask & (1u << i)) n += snprintf(list + n, sizeof list - (size_t)n, "%s%s", n ? ", " : "", mla_format_name((mla_format)i));
        FAIL("%s: %s.format = %d (%s) is not accepted here (accepted: %s)", op, name, (int)c->format,
             mla_format_name(c->format), list);
    }
    if (!c->base) FAIL("%s: %s.base is NULL (required)", op, name);
    if (c->page_size < 1) FAIL("%s: %s.page_size = %d must be >= 1", op, name, c->page_size);
    if (c->num_pages < 1) FAIL("%s: %s.num_pages = %d must be >= 1", op, name, c->num_pages);
    if (c->format == MLA_IDX_FP8 && c->dim != 64 && c->dim != 128)
        FAIL("%s: %s.dim = %d must be 64 or 128 for MLA_IDX_FP8", op, name, c->dim);
    if ((int64_t)c->num_pages * c->page_size > INT32_MAX)
        FAIL("%s: %s.num_pages * page_size = %" PRId64 " exceeds int32 slot ids", op, name,
             (int64_t)c->num_pages * c->page_size);
    int64_t need = (int64_t)mla_cache_page_bytes(c->format, c->page_size, c->dim);
    if (c->page_stride < need)
        FAIL("%s: %s.page_stride = %" PRId64 " bytes is below one page (%d tokens x %s = %" PRId64 " bytes)", op,
             name, c->page_stride, c->page_size, mla_format_name(c->format), need);
    if (c->format == MLA_KV_FP8_ROPE_AWARE) {
        if (!c->sigma) FAIL("%s: %s.sigma is NULL (MLA_KV_FP8_ROPE_AWARE needs the per-token sigma pool)", op, name);
        if (c->sigma_stride_page != 0 && c->sigma_stride_page < c->page_size)
            FAIL("%s: %s.sigma_stride_page = %" PRId64 " must be 0 or >= page_size %d", op, name,
                 c->sigma_stride_page, c->page_size);
    }
    return MLA_OK;
}

mla_status mla_core_check_offsets(mla_ctx *ctx, const char *op, const char *name, const int32_t *off,
                                  int32_t B, int32_t total) {
    if (!off) FAIL("%s: %s is NULL (required)", op, name);
    if (!mla_core_host_data(ctx)) return MLA_OK;
    if (off[0] != 0) FAIL("%s: %s[0] = %d must be 0", op, name, off[0]);
    for (int32_t b = 0; b < B; b++)
        if (off[b + 1] < off[b])
            FAIL("%s: %s[%d] = %d < %s[%d] = %d (offsets must ascend)", op, name, b + 1, off[b + 1], name, b, off[b]);
    if (off[B] != total) FAIL("%s: %s[%d] = %d must equal the row count %d", op, name, B, off[B], total);
    return MLA_OK;
}

mla_status mla_core_check_batch(mla_ctx *ctx, const char *op, const mla_batch *bt, int32_t num_tokens,
                                const mla_paged_cache *c, int need_seq_ge_qlen) {
    if (bt->num_requests < 0) FAIL("%s: batch.num_requests = %d must be >= 0", op, bt->num_requests);
    if (num_tokens > 0 && bt->num_requests == 0)
        FAIL("%s: num_tokens = %d but batch.num_requests = 0", op, num_tokens);
    MLA_TRY(mla_core_check_offsets(ctx, op, "batch.q_offsets", bt->q_offsets, bt->num_requests, num_tokens));
    if (!bt->seq_lens) FAIL("%s: batch.seq_lens is NULL (required)", op);
    if (!bt->block_table) FAIL("%s: batch.block_table is NULL (required)", op);
    if (bt->bt_stride < 1) FAIL("%s: batch.bt_stride = %" PRId64 " must be >= 1", op, bt->bt_stride);
    if (!mla_core_host_data(ctx)) return MLA_OK;
    for (int32_t b = 0; b < bt->num_requests; b++) {
        int32_t s = bt->seq_lens[b], ql = bt->q_offsets[b + 1] - bt->q_offsets[b];
        if (s < 0) FAIL("%s: seq_lens[%d] = %d must be >= 0", op, b, s);
        /* seq_len 0 with queries is an empty request (its rows see no key), as the golden cases use */
        if (need_seq_ge_qlen && s < ql && s != 0)
            FAIL("%s: seq_lens[%d] = %d < q_len[%d] = %d (%s needs seq_len >= q_len, or seq_len 0 for an empty request)",
                 op, b, s, b, ql, op);
        int64_t pages = ((int64_t)s + c->page_size - 1) / c->page_size;
        if (pages > bt->bt_stride)
            FAIL("%s: request %d uses %" PRId64 " pages (seq_len %d, page_size %d) but batch.bt_stride = %" PRId64, op,
                 b, pages, s, c->page_size, bt->bt_stride);
        for (int64_t p = 0; p < pages; p++) {
            int32_t id = bt->block_table[(int64_t)b * bt->bt_stride + p];
            if (id < 0 || id >= c->num_pages)
                FAIL("%s: block_table[%d][%" PRId64 "] = %d is outside [0, num_pages = %d) (page of tokens %" PRId64
                     "..%" PRId64 " of request %d)",
                     op, b, p, id, c->num_pages, p * c->page_size, (p + 1) * c->page_size - 1, b);
        }
    }
    return MLA_OK;
}
