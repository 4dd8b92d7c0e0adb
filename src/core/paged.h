/* Paged-cache addressing for every format of SPEC section 3. Header-only (hot loops). */
#ifndef MLA_CORE_PAGED_H
#define MLA_CORE_PAGED_H

#include <stdint.h>
#include "mla.h"

#define MLA_ROW_BF16 1152
#define MLA_ROW_FP8 656
#define MLA_ROW_FP8_ROPE_AWARE 640
/* byte offsets inside an MLA_KV_FP8 row */
#define MLA_FP8_SCALES_AT 512   /* 4 f32 */
#define MLA_FP8_ROPE_AT 528     /* 64 bf16 */
/* byte offset of the rope inside an MLA_KV_FP8_ROPE_AWARE row */
#define MLA_RA_ROPE_AT 512

/* Address of logical token t of request b, or NULL when its page id is out of range. */
static inline uint8_t *mla_paged_row(const mla_paged_cache *c, const mla_batch *bt, int b, int64_t t,
                                     int64_t row_bytes) {
    int32_t page = bt->block_table[(int64_t)b * bt->bt_stride + t / c->page_size];
    if (page < 0 || page >= c->num_pages) return 0;
    return (uint8_t *)c->base + (int64_t)page * c->page_stride + (t % c->page_size) * row_bytes;
}

/* Address of slot id s (page * page_size + slot); caller has checked 0 <= s < num_pages*page_size. */
static inline uint8_t *mla_slot_row(const mla_paged_cache *c, int64_t s, int64_t row_bytes) {
    return (uint8_t *)c->base + (s / c->page_size) * c->page_stride + (s % c->page_size) * row_bytes;
}

static inline int64_t mla_sigma_page_stride(const mla_paged_cache *c) {
    return c->sigma_stride_page ? c->sigma_stride_page : c->page_size;
}

#endif
