/* mla_indices_to_slots on CPU (SPEC 4.2): logical positions -> slot ids through the block table.
 * Row t belongs to request b through q_offsets; position p maps to
 * block_table[b][p / page_size] * page_size + p % page_size when 0 <= p < seq_lens[b], else -1.
 * A page id outside [0, num_pages) also gives -1 (validation rejects it on CPU; kept as a guard). */
#include "cpu.h"
#include "token_request.h"

/* index entries below which a single thread is faster */
#define PAR_MIN_ENTRIES 16384

mla_status mla_cpu_indices_to_slots(mla_ctx *ctx, const mla_indices_to_slots_args *a) {
    const mla_batch *bt = &a->batch;
    const int32_t T = a->num_tokens, K = a->topk, ps = a->page_size, np = a->num_pages;
    const int64_t is = a->indices_stride_t ? a->indices_stride_t : K;
    const int64_t ss = a->slots_stride_t ? a->slots_stride_t : K;
#pragma omp parallel for schedule(static) num_threads(mla_cpu_threads(ctx)) if ((int64_t)T * K >= PAR_MIN_ENTRIES)
    for (int32_t t = 0; t < T; t++) {
        int32_t b = mla_cpu_request_of(bt->q_offsets, bt->num_requests, t);
        int32_t seq_len = bt->seq_lens[b];
        const int32_t *bt_row = bt->block_table + (int64_t)b * bt->bt_stride;
        const int32_t *in = a->indices + (int64_t)t * is;
        int32_t *out = a->slots + (int64_t)t * ss;
        for (int32_t j = 0; j < K; j++) {
            int32_t p = in[j], s = -1;
            if (p >= 0 && p < seq_len) {
                int32_t page = bt_row[p / ps];
                if (page >= 0 && page < np) s = (int32_t)((int64_t)page * ps + p % ps);
            }
            out[j] = s;
        }
    }
    return MLA_OK;
}
