/* mla_cache_store and mla_quantize_q_rope_aware on CPU (SPEC 3, 4.6): bf16 rows -> the latent
 * cache in any format, and bf16 q -> the packed rope-aware q. Exact: every scale is a power of
 * two (pow2_scale_ref), so x / scale is exact and only the final e4m3 / bf16 rounding happens.
 * One token per iteration, OpenMP over tokens; the ops are memory-bound. */
#include <math.h>
#include <string.h>

#include "core/numeric.h"
#include "core/paged.h"
#include "cpu.h"
#include "token_request.h"

/* tokens below which a single thread is faster than waking the team */
#define PAR_MIN_TOKENS 64

/* max |x| over n bf16 values (NaN ignored) */
static float amax_bf16(const uint16_t *x, int n) {
    float m = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = fabsf(bf16_to_f32_ref(x[i]));
        m = v > m ? v : m;
    }
    return m;
}

/* e4m3(x / scale) for n bf16 values */
static void quantize_e4m3(uint8_t *dst, const uint16_t *x, int n, float scale) {
    for (int i = 0; i < n; i++) dst[i] = f32_to_e4m3_ref(bf16_to_f32_ref(x[i]) / scale);
}

/* bf16(x / sigma) for n bf16 values, stored little-endian */
static void rope_div_bf16(uint8_t *dst, const uint16_t *x, int n, float sigma) {
    for (int i = 0; i < n; i++) {
        uint16_t v = f32_to_bf16_ref(bf16_to_f32_ref(x[i]) / sigma);
        dst[2 * i] = (uint8_t)(v & 0xff);
        dst[2 * i + 1] = (uint8_t)(v >> 8);
    }
}

static void store_bf16(uint8_t *row, const uint16_t *src) {
    for (int i = 0; i < MLA_KEY_DIM; i++) {
        row[2 * i] = (uint8_t)(src[i] & 0xff);
        row[2 * i + 1] = (uint8_t)(src[i] >> 8);
    }
}

static void store_fp8(uint8_t *row, const uint16_t *src) {
    for (int k = 0; k < 4; k++) {
        float scale = pow2_scale_ref(amax_bf16(src + 128 * k, 128));
        quantize_e4m3(row + 128 * k, src + 128 * k, 128, scale);
        memcpy(row + MLA_FP8_SCALES_AT + 4 * k, &scale, 4);
    }
    uint8_t *rope = row + MLA_FP8_ROPE_AT;
    for (int i = 0; i < MLA_ROPE_DIM; i++) {
        uint16_t v = src[MLA_LATENT_DIM + i];
        rope[2 * i] = (uint8_t)(v & 0xff);
        rope[2 * i + 1] = (uint8_t)(v >> 8);
    }
}

static float store_rope_aware(uint8_t *row, const uint16_t *src) {
    float sigma = pow2_scale_ref(amax_bf16(src, MLA_LATENT_DIM));
    quantize_e4m3(row, src, MLA_LATENT_DIM, sigma);
    rope_div_bf16(row + MLA_RA_ROPE_AT, src + MLA_LATENT_DIM, MLA_ROPE_DIM, sigma);
    return sigma;
}

mla_status mla_cpu_cache_store(mla_ctx *ctx, const mla_cache_store_args *a) {
    const mla_paged_cache *c = &a->cache;
    const int32_t T = a->num_tokens;
    const int64_t rs = a->rows_stride_t ? a->rows_stride_t : MLA_KEY_DIM;
    const int64_t row_bytes = (int64_t)mla_cache_row_bytes(c->format, 0);
    const int64_t sig_stride = mla_sigma_page_stride(c);
#pragma omp parallel for schedule(static) num_threads(mla_cpu_threads(ctx)) if (T >= PAR_MIN_TOKENS)
    for (int32_t t = 0; t < T; t++) {
        int32_t page, slot;
        if (!mla_cpu_new_token_slot(&a->batch, c->page_size, c->num_pages, t, &page, &slot)) continue;
        uint8_t *row = (uint8_t *)c->base + (int64_t)page * c->page_stride + (int64_t)slot * row_bytes;
        const uint16_t *src = a->rows + (int64_t)t * rs;
        switch (c->format) {
        case MLA_KV_BF16: store_bf16(row, src); break;
        case MLA_KV_FP8: store_fp8(row, src); break;
        case MLA_KV_FP8_ROPE_AWARE: c->sigma[(int64_t)page * sig_stride + slot] = store_rope_aware(row, src); break;
        default: break; /* validation admits only the latent formats */
        }
    }
    return MLA_OK;
}

mla_status mla_cpu_quantize_q_rope_aware(mla_ctx *ctx, const mla_quantize_q_rope_aware_args *a) {
    const int32_t T = a->num_tokens, H = a->num_heads;
    const int64_t qh = a->q_stride_h ? a->q_stride_h : MLA_KEY_DIM;
    const int64_t qt = a->q_stride_t ? a->q_stride_t : H * qh;
    const int64_t oh = a->q_out_stride_h ? a->q_out_stride_h : 640;
    const int64_t ot = a->q_out_stride_t ? a->q_out_stride_t : H * oh;
#pragma omp parallel for schedule(static) num_threads(mla_cpu_threads(ctx)) if ((int64_t)T * H >= PAR_MIN_TOKENS)
    for (int32_t t = 0; t < T; t++) {
        const uint16_t *qtok = a->q + (int64_t)t * qt;
        float amax = 0.0f;
        for (int32_t h = 0; h < H; h++) {
            float m = amax_bf16(qtok + h * qh, MLA_LATENT_DIM);
            amax = m > amax ? m : amax;
        }
        float sigma = pow2_scale_ref(amax);
        for (int32_t h = 0; h < H; h++) {
            uint8_t *dst = a->q_out + (int64_t)t * ot + h * oh;
            quantize_e4m3(dst, qtok + h * qh, MLA_LATENT_DIM, sigma);
            rope_div_bf16(dst + MLA_LATENT_DIM, qtok + h * qh + MLA_LATENT_DIM, MLA_ROPE_DIM, sigma);
        }
        a->q_sigma[t] = sigma;
    }
    return MLA_OK;
}
