/* mla_indexer_cache_store on CPU (SPEC 3, 4.5): bf16 k [T, D] -> MLA_IDX_FP8 at the new tokens'
 * positions. A page holds page_size * D e4m3 values (token-major), then page_size f32 scales;
 * scale = pow2_scale_ref(amax over the token's D values), q = e4m3(x / scale). Exact. */
#include <math.h>
#include <string.h>

#include "core/numeric.h"
#include "cpu.h"
#include "token_request.h"

#define PAR_MIN_TOKENS 128

mla_status mla_cpu_indexer_cache_store(mla_ctx *ctx, const mla_indexer_cache_store_args *a) {
    const mla_paged_cache *c = &a->cache;
    const int32_t T = a->num_tokens, D = c->dim;
    const int64_t ks = a->k_stride_t ? a->k_stride_t : D;
#pragma omp parallel for schedule(static) num_threads(mla_cpu_threads(ctx)) if (T >= PAR_MIN_TOKENS)
    for (int32_t t = 0; t < T; t++) {
        int32_t page, slot;
        if (!mla_cpu_new_token_slot(&a->batch, c->page_size, c->num_pages, t, &page, &slot)) continue;
        uint8_t *pg = (uint8_t *)c->base + (int64_t)page * c->page_stride;
        const uint16_t *k = a->k + (int64_t)t * ks;
        float amax = 0.0f;
        for (int32_t d = 0; d < D; d++) {
            float v = fabsf(bf16_to_f32_ref(k[d]));
            amax = v > amax ? v : amax;
        }
        float scale = pow2_scale_ref(amax);
        uint8_t *q = pg + (int64_t)slot * D;
        for (int32_t d = 0; d < D; d++) q[d] = f32_to_e4m3_ref(bf16_to_f32_ref(k[d]) / scale);
        memcpy(pg + (int64_t)c->page_size * D + (int64_t)slot * 4, &scale, 4);
    }
    return MLA_OK;
}
