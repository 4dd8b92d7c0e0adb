/* Internal (CPU writers): which request a packed query row belongs to, and where its new token
 * lands in the paged cache (SPEC section 2 and 3). Header-only: used inside per-token loops. */
#ifndef MLA_CPU_TOKEN_REQUEST_H
#define MLA_CPU_TOKEN_REQUEST_H

#include <stdint.h>

#include "mla.h"

/* The request b with q_offsets[b] <= t < q_offsets[b+1] (empty requests are passed over):
 * the largest b in [0, B) with q_offsets[b] <= t. Requires 0 <= t < q_offsets[B]. */
static inline int32_t mla_cpu_request_of(const int32_t *q_offsets, int32_t B, int32_t t) {
    int32_t lo = 0, hi = B - 1;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (q_offsets[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Page id and slot of query row t's new token: position seq_lens[b] - q_len[b] + i. Returns 0
 * (nothing to write) when the position or its page id is out of range; never dereferences a bad
 * page. */
static inline int mla_cpu_new_token_slot(const mla_batch *bt, int32_t page_size, int32_t num_pages, int32_t t,
                                         int32_t *page_out, int32_t *slot_out) {
    int32_t b = mla_cpu_request_of(bt->q_offsets, bt->num_requests, t);
    int64_t q_len = (int64_t)bt->q_offsets[b + 1] - bt->q_offsets[b];
    int64_t pos = (int64_t)bt->seq_lens[b] - q_len + (t - bt->q_offsets[b]);
    if (pos < 0 || pos >= bt->seq_lens[b]) return 0;
    int32_t page = bt->block_table[(int64_t)b * bt->bt_stride + pos / page_size];
    if (page < 0 || page >= num_pages) return 0;
    *page_out = page;
    *slot_out = (int32_t)(pos % page_size);
    return 1;
}

#endif
