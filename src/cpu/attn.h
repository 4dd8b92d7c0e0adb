/* Internal (CPU backend): the absorbed-attention engine shared by mla_decode (decode.c, SPEC 4.1)
 * and mla_sparse (sparse.c, SPEC 4.2). Never installed.
 *
 * att_run computes, for M <= ATT_MB query rows that share one key list (the heads and MTP rows of
 * one request, or the heads of one sparse token), the un-normalized online-softmax state over n
 * keys: O[r] = sum_j exp(s_rj - m_r) v_j, m_r = max_j s_rj, l_r = sum_j exp(s_rj - m_r), with
 * s_rj = scale * q_r . k_j. Callers cut long key lists into chunks and merge the partial states
 * (att_merge), then write the rows (att_finish_row). Every sum is f32; only the key rows handed
 * to att_run are read, so NaN garbage in other slots never reaches a result.
 *
 * Kernels, chosen per call (figures: one core of the AMD EPYC Zen 4 dev box, single-core f32 FMA
 * peak 117 GFLOPS; decode b=2, h=128, 4096 keys, or h=1 streaming 75 MB from DRAM):
 *   rows    M >= ATT_ROWVEC_MIN: lanes over 16 rows. Keys in blocks of ATT_NB, each dequantized
 *           once into an f32 tile; S^T = K.Q^T and O^T = O^T*alpha + V^T.P^T with 24-accumulator
 *           register tiles (K/V broadcast, 16-row vectors); softmax with rows as lanes.
 *           f32 q.k                                                   106 GFLOPS (91% of peak)
 *           q.k by vdpbf16ps on bf16 pairs (bf16 cache straight from the rows; e4m3 caches via
 *           the e4m3->bf16 table, sums per 128-dim tile times the tile scale)   135 "GFLOPS" (115%)
 *   dims    M < ATT_ROWVEC_MIN: lanes over the 576/512 dimensions, keys in blocks of ATT_NBD.
 *           f32 tile, any cache                         bf16 ~12 GB/s, fp8 ~7 GB/s per core
 *           bf16 cache: q.k by vdpbf16ps straight from the rows         ~20 GB/s per core
 *           e4m3 caches: rows -> bf16 by table, q.k by vdpbf16ps        ~12 GB/s per core
 * The portable kernels use GCC/Clang vector extensions (64-byte vectors: one zmm with AVX-512,
 * split by the compiler elsewhere); the bf16/e4m3 ones are AVX-512 (BF16, VBMI) intrinsics behind
 * #if, with the portable path as fallback. Prefetching: rows of one page are one stream (a short
 * software prefetch distance, or the hardware prefetchers get confused); scattered rows (small
 * pages, sparse) are prefetched ATT_AHEAD_MAX keys ahead. */
#ifndef MLA_CPU_ATTN_H
#define MLA_CPU_ATTN_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#if defined(__AVX512F__) && defined(__AVX512BF16__)
#define ATT_DPBF16 1         /* vdpbf16ps: bf16 pair dot products with f32 accumulation */
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
#define ATT_E4M3LUT 1        /* vpermi2b: e4m3 -> bf16 through a 128-entry byte table */
#endif
#endif

#include "../core/numeric.h"
#include "../core/paged.h"
#include "../core/validate.h"
#include "cpu.h"

/* The kernels are written as a += b * c on vectors and need fused multiply-adds; -std=c11 turns
 * GCC's contraction off, so turn it back on for the files that include this header. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#pragma GCC diagnostic ignored "-Wpsabi" /* 64-byte vectors between static functions only */
#endif

#define ATT_D 576            /* key row: latent 512 | rope 64 */
#define ATT_V 512            /* value = latent */
#define ATT_NB 48            /* keys per block (multiple of ATT_NK1 and ATT_NK2) */
#define ATT_NBD 8            /* keys per block with lanes over dimensions */
#define ATT_AHEAD_MAX 8      /* most keys prefetched ahead */
#define ATT_MB 64            /* rows per att_run call (multiple of 16) */
#define ATT_ROWVEC_MIN 10    /* rows from which lanes run over rows (measured crossover) */
#define ATT_NK2 12           /* QK micro-tile: 12 keys x 32 rows (24 accumulators) */
#define ATT_NK1 24           /*                24 keys x 16 rows */
#define ATT_RD2 8            /* PV micro-tile:  8 dims x 32 rows */
#define ATT_RD1 16           /*                16 dims x 16 rows */
#define ATT_PART_ROW (ATT_V + 2) /* floats of one row's partial state: O[512], m, l */

typedef float att_vf __attribute__((vector_size(64), may_alias));
typedef int32_t att_vi __attribute__((vector_size(64), may_alias));
typedef float att_v8 __attribute__((vector_size(32), may_alias));
typedef float att_v4 __attribute__((vector_size(16), may_alias));

/* ---- vector helpers ------------------------------------------------------------------------ */

static inline att_vf att_splat(float x) { return (att_vf){0} + x; }
static inline att_vf att_ld(const float *p) { return *(const att_vf *)p; }   /* 64-byte aligned */
static inline void att_st(float *p, att_vf v) { *(att_vf *)p = v; }
static inline att_vf att_max(att_vf a, att_vf b) {
    att_vi m = a > b;
    return (att_vf)(((att_vi)a & m) | ((att_vi)b & ~m));
}
static inline float att_hsum(att_vf v) {
    att_v8 a = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
               __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    att_v4 c = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    return (c[0] + c[2]) + (c[1] + c[3]);
}
static inline float att_hmax(att_vf v) {
    float s = v[0];
    for (int i = 1; i < 16; i++) s = v[i] > s ? v[i] : s;
    return s;
}

/* exp(x) for x <= 0 (softmax arguments), f32 to about 2 ulp (Cephes' expf polynomial). x below
 * -86 gives 0 (the dropped weights are < 1e-37 of the row's largest); -inf gives 0; NaN stays NaN. */
static inline att_vf att_exp(att_vf x) {
    att_vf big = x * 1.44269504088896341f + 12582912.0f;   /* 1.5 * 2^23: round to nearest */
    att_vf n = big - 12582912.0f;
    att_vf r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    att_vf p = att_splat(1.9875691500e-4f);
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    att_vi e = ((att_vi)big - 0x4B400000) << 23;
    att_vf res = (att_vf)((att_vi)p + e);
    att_vi keep = ~(x < -86.0f);
    return (att_vf)((att_vi)res & keep);
}

/* One e4m3fn code -> f32, exactly as e4m3_to_f32_ref, without denormal floats on the way (they
 * cost microcode assists): a normal code is its bits moved to the f32 fields with the exponent
 * rebiased (+120); a subnormal m * 2^-9 is 2^-6 * (1 + m/8) - 2^-6, both exact; 0x7F / 0xFF are NaN.
 * Written per element so that gcc vectorizes the loops that call it. */
static inline float att_e4m3(uint8_t x) {
    uint32_t u = x, mag = u & 0x7f;
    uint32_t nb = (mag << 20) + (120u << 23), sb = (121u << 23) | ((mag & 7) << 20);
    float fn, fs;
    memcpy(&fn, &nb, 4);
    memcpy(&fs, &sb, 4);
    fs -= 0x1p-6f;
    float f = (mag >> 3) ? fn : fs;
    uint32_t b;
    memcpy(&b, &f, 4);
    b |= ((u & 0x80) << 24) | (mag == 0x7f ? 0x7fc00000u : 0u);
    memcpy(&f, &b, 4);
    return f;
}
/* bf16 at any byte address -> f32 */
static inline float att_bf16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* n (a multiple of 16) e4m3 codes -> f32 times s. With AVX-512 a code becomes the fp16 pattern
 * (sign, then the 7 magnitude bits shifted by 7: exactly the value * 2^-8, subnormals included)
 * and the hardware widens it: a third of the work of the portable bit manipulation, which is the
 * fallback. */
static inline void att_e4m3_block(const uint8_t *restrict src, int n, float s, float *restrict dst) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
    const __m256i keep = _mm256_set1_epi16((short)0xBF80);
    const __m512 sv = _mm512_set1_ps(s * 256.0f);
    for (int i = 0; i < n; i += 16) {
        __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + i)));
        w = _mm256_and_si256(_mm256_slli_epi16(w, 7), keep);
        _mm512_storeu_ps(dst + i, _mm512_mul_ps(_mm512_cvtph_ps(w), sv));
    }
    /* the NaN codes (0x7F, 0xFF) came out as +-480 * s: rare, patched afterwards */
    const __m128i m7f = _mm_set1_epi8(0x7f);
    __mmask16 any = 0;
    for (int i = 0; i < n; i += 16)
        any |= _mm_cmpeq_epi8_mask(_mm_and_si128(_mm_loadu_si128((const __m128i *)(src + i)), m7f), m7f);
    if (any)
        for (int i = 0; i < n; i++)
            if ((src[i] & 0x7f) == 0x7f) dst[i] = att_e4m3(src[i]);
#else
    for (int i = 0; i < n; i++) dst[i] = att_e4m3(src[i]) * s;
#endif
}

/* ---- dequantization of one key row into f32 [576] ------------------------------------------ */

static inline void att_deq_bf16(const uint8_t *restrict row, float *restrict dst) {
    for (int i = 0; i < ATT_D; i++) dst[i] = att_bf16(row + 2 * i);
}
static inline void att_deq_fp8(const uint8_t *restrict row, float *restrict dst) {
    float sc[4];
    memcpy(sc, row + MLA_FP8_SCALES_AT, sizeof sc);
    for (int c = 0; c < 4; c++) att_e4m3_block(row + 128 * c, 128, sc[c], dst + 128 * c);
    for (int i = 0; i < 64; i++) dst[ATT_V + i] = att_bf16(row + MLA_FP8_ROPE_AT + 2 * i);
}
/* rope-aware: latent e4m3 * sigma; rope stored as rope / sigma, so rope = stored * sigma */
static inline void att_deq_ra(const uint8_t *restrict row, float sigma, float *restrict dst) {
    att_e4m3_block(row, ATT_V, sigma, dst);
    for (int i = 0; i < 64; i++) dst[ATT_V + i] = att_bf16(row + MLA_RA_ROPE_AT + 2 * i) * sigma;
}

/* ---- query rows -> f32 [576] with a factor folded in (softmax scale, q_sigma) -------------- */

static inline void att_q_bf16(const uint16_t *q, float f, float *restrict dst) {
    const uint8_t *p = (const uint8_t *)q;
    for (int i = 0; i < ATT_D; i++) dst[i] = att_bf16(p + 2 * i) * f;
}
/* packed rope-aware q: 512 e4m3 then 64 bf16 (rope / q_sigma); f = scale * q_sigma */
static inline void att_q_ra(const uint8_t *restrict q, float f, float *restrict dst) {
    att_e4m3_block(q, ATT_V, f, dst);
    for (int i = 0; i < 64; i++) dst[ATT_V + i] = att_bf16(q + ATT_V + 2 * i) * f;
}

/* ---- where the keys come from ----------------------------------------------------------- */

typedef struct att_keys {
    const uint8_t *base;       /* cache page 0 */
    int64_t page_stride;       /* bytes */
    int64_t page_size;
    int64_t row_bytes;
    mla_format format;
    const float *sigma;        /* rope-aware sigma pool */
    int64_t sigma_stride;      /* floats between pages of sigma */
    const int32_t *bt;         /* decode: block-table row; key kk is logical token k0 + kk */
    int64_t k0;
    const int32_t *slots;      /* sparse (bt NULL): key kk is slot id slots[kk] (checked valid) */
    int ahead;                 /* keys ahead whose rows are prefetched (<= ATT_AHEAD_MAX) */
} att_keys;

static inline void att_keys_init(att_keys *ks, const mla_paged_cache *c) {
    memset(ks, 0, sizeof *ks);
    ks->base = (const uint8_t *)c->base;
    ks->page_stride = c->page_stride;
    ks->page_size = c->page_size;
    ks->row_bytes = (int64_t)mla_cache_row_bytes(c->format, c->dim);
    ks->format = c->format;
    ks->sigma = c->sigma;
    ks->sigma_stride = mla_sigma_page_stride(c);
    /* Rows of consecutive keys inside a page are one stream: asking for the row two keys ahead
     * keeps a few of its lines in flight, and farther prefetches only compete with the hardware
     * prefetchers (measured). Scattered rows (small pages, sparse) need more distance. */
    ks->ahead = (int64_t)c->page_size * ks->row_bytes >= 16384 ? 2 : ATT_AHEAD_MAX;
}

/* Row addresses of keys kk0 .. kk0+nb-1 (and their sigma for the rope-aware format, when sig is
 * not NULL). Decode walks the block table one page at a time; sparse divides each slot id. */
static inline void att_key_rows(const att_keys *ks, int64_t kk0, int nb, const uint8_t **rows, float *sig) {
    const int64_t ps = ks->page_size;
    const int ra = sig && ks->format == MLA_KV_FP8_ROPE_AWARE;
    if (ks->bt) {
        int64_t j = ks->k0 + kk0, pi = j / ps, slot = j % ps;
        int64_t page = nb > 0 ? ks->bt[pi] : 0;
        for (int i = 0; i < nb; i++) {
            rows[i] = ks->base + page * ks->page_stride + slot * ks->row_bytes;
            if (ra) sig[i] = ks->sigma[page * ks->sigma_stride + slot];
            if (++slot == ps && i + 1 < nb) {
                slot = 0;
                page = ks->bt[++pi];
            }
        }
    } else {
        for (int i = 0; i < nb; i++) {
            int64_t sid = ks->slots[kk0 + i], page = sid / ps, slot = sid - page * ps;
            rows[i] = ks->base + page * ks->page_stride + slot * ks->row_bytes;
            if (ra) sig[i] = ks->sigma[page * ks->sigma_stride + slot];
        }
    }
}

static inline void att_deq_row(const att_keys *ks, const uint8_t *row, float sigma, float *dst) {
    switch (ks->format) {
    case MLA_KV_FP8: att_deq_fp8(row, dst); break;
    case MLA_KV_FP8_ROPE_AWARE: att_deq_ra(row, sigma, dst); break;
    default: att_deq_bf16(row, dst); break;
    }
}

/* Asks for the cache lines of a key row (into L2) ahead of its use. Always inlined: GCC sees no
 * side effect in a function that only prefetches and would drop its calls. */
static inline __attribute__((always_inline)) void att_prefetch_row(const att_keys *ks, const uint8_t *row) {
    for (int64_t o = 0; o < ks->row_bytes; o += 64) __builtin_prefetch(row + o, 0, 2);
    __builtin_prefetch(row + ks->row_bytes - 1, 0, 2);
}

/* ---- per-thread scratch -------------------------------------------------------------------- */

typedef struct att_ws {
    float *q;        /* [ATT_MB][576] query rows, prepared by the caller */
    float *o;        /* [ATT_MB][512] result of a call that is not split */
    float *qt;       /* [576][ATT_MB] */
    uint32_t *qt2;   /* [288][ATT_MB] bf16 pairs (d even, d odd) of each row, for vdpbf16ps */
    uint16_t *qb;    /* [ATT_MB][576] bf16 q rows (e4m3 caches: latent in converted order) */
    uint16_t *kb;    /* [ATT_NB][576] bf16 key rows converted from e4m3 */
    float *sx;       /* [5][ATT_NB][ATT_MB] per-tile partial scores (MLA_KV_FP8) */
    float *ot;       /* [512][ATT_MB] */
    float *k;        /* [ATT_NB][576] the dequantized key block */
    float *s;        /* [ATT_NB][ATT_MB] scores, then probabilities */
    float *m, *l, *alpha; /* [ATT_MB] */
    int32_t *lim;    /* [ATT_MB] */
    int32_t *slots;  /* [max_keys] sparse: the chunk's used slot ids */
    /* optional: the rows' raw bf16 q (set by the caller when q is bf16) and the softmax scale,
     * for kernels that take q.k straight from bf16 pairs */
    const uint16_t *qraw[ATT_MB];
    int has_qraw;
    float qscale;
    /* optional, rope-aware q: the rows' packed q (512 e4m3, 64 bf16) and scale * q_sigma[t] */
    const uint8_t *qra[ATT_MB];
    float qfac[ATT_MB];
    int has_qra;
    void *mem;
} att_ws;

static inline int att_ws_alloc(att_ws *w, int64_t max_keys) {
    size_t fl = (size_t)ATT_MB * ATT_D * 2 + (size_t)ATT_MB * ATT_D / 2 + (size_t)ATT_MB * ATT_V * 2 +
                (size_t)ATT_MB * ATT_D / 2 + (size_t)ATT_NB * ATT_D / 2 + 5 * (size_t)ATT_NB * ATT_MB + (size_t)ATT_NB * ATT_D +
                (size_t)ATT_NB * ATT_MB + 3 * ATT_MB;
    size_t bytes = fl * 4 + (size_t)ATT_MB * 4 + (size_t)max_keys * 4 + 64 * 12;
    bytes = (bytes + 63) & ~(size_t)63;
    uint8_t *p = (uint8_t *)aligned_alloc(64, bytes);
    memset(w, 0, sizeof *w);
    if (!p) return 0;
    w->mem = p;
#define ATT_TAKE(ptr, type, count) \
    do { ptr = (type *)p; p += (((size_t)(count) * sizeof(type)) + 63) & ~(size_t)63; } while (0)
    ATT_TAKE(w->q, float, ATT_MB * ATT_D);
    ATT_TAKE(w->o, float, ATT_MB * ATT_V);
    ATT_TAKE(w->qt, float, ATT_MB * ATT_D);
    ATT_TAKE(w->qt2, uint32_t, ATT_MB * ATT_D / 2);
    ATT_TAKE(w->qb, uint16_t, ATT_MB * ATT_D);
    ATT_TAKE(w->kb, uint16_t, ATT_NB * ATT_D);
    ATT_TAKE(w->sx, float, 5 * ATT_NB * ATT_MB);
    ATT_TAKE(w->ot, float, ATT_MB * ATT_V);
    ATT_TAKE(w->k, float, ATT_NB * ATT_D);
    ATT_TAKE(w->s, float, ATT_NB * ATT_MB);
    ATT_TAKE(w->m, float, ATT_MB);
    ATT_TAKE(w->l, float, ATT_MB);
    ATT_TAKE(w->alpha, float, ATT_MB);
    ATT_TAKE(w->lim, int32_t, ATT_MB);
    ATT_TAKE(w->slots, int32_t, max_keys);
#undef ATT_TAKE
    return 1;
}
static inline void att_ws_free(att_ws *w) { free(w->mem); w->mem = NULL; }

/* ---- micro-kernels (lanes over rows) ------------------------------------------------------- */

/* S[k][r] = sum_d K[k][d] Qt[d][r] for 12 keys x 32 rows; K rows 576 apart, Qt/S rows ATT_MB apart */
static inline void att_qk_2(const float *restrict qt, const float *restrict k, float *restrict s) {
    att_vf acc[ATT_NK2][2];
#pragma GCC unroll 32
    for (int j = 0; j < ATT_NK2; j++) acc[j][0] = acc[j][1] = (att_vf){0};
    for (int d = 0; d < ATT_D; d++) {
        att_vf q0 = att_ld(qt + d * ATT_MB), q1 = att_ld(qt + d * ATT_MB + 16);
#pragma GCC unroll 32
        for (int j = 0; j < ATT_NK2; j++) {
            float kv = k[j * ATT_D + d];
            acc[j][0] += kv * q0;
            acc[j][1] += kv * q1;
        }
    }
#pragma GCC unroll 32
    for (int j = 0; j < ATT_NK2; j++) {
        att_st(s + j * ATT_MB, acc[j][0]);
        att_st(s + j * ATT_MB + 16, acc[j][1]);
    }
}
/* 24 keys x 16 rows */
static inline void att_qk_1(const float *restrict qt, const float *restrict k, float *restrict s) {
    att_vf acc[ATT_NK1];
#pragma GCC unroll 32
    for (int j = 0; j < ATT_NK1; j++) acc[j] = (att_vf){0};
    for (int d = 0; d < ATT_D; d++) {
        att_vf q0 = att_ld(qt + d * ATT_MB);
#pragma GCC unroll 32
        for (int j = 0; j < ATT_NK1; j++) acc[j] += k[j * ATT_D + d] * q0;
    }
#pragma GCC unroll 32
    for (int j = 0; j < ATT_NK1; j++) att_st(s + j * ATT_MB, acc[j]);
}
/* Ot[d][r] = Ot[d][r] * alpha[r] + sum_k K[k][d] P[k][r] for 8 dims x 32 rows over nk keys */
static inline void att_pv_2(float *restrict ot, const float *restrict k, const float *restrict p,
                            const float *restrict alpha, int nk) {
    att_vf acc[ATT_RD2][2];
    att_vf a0 = att_ld(alpha), a1 = att_ld(alpha + 16);
#pragma GCC unroll 32
    for (int i = 0; i < ATT_RD2; i++) {
        acc[i][0] = att_ld(ot + i * ATT_MB) * a0;
        acc[i][1] = att_ld(ot + i * ATT_MB + 16) * a1;
    }
    for (int j = 0; j < nk; j++) {
        att_vf p0 = att_ld(p + j * ATT_MB), p1 = att_ld(p + j * ATT_MB + 16);
#pragma GCC unroll 32
        for (int i = 0; i < ATT_RD2; i++) {
            float kv = k[j * ATT_D + i];
            acc[i][0] += kv * p0;
            acc[i][1] += kv * p1;
        }
    }
#pragma GCC unroll 32
    for (int i = 0; i < ATT_RD2; i++) {
        att_st(ot + i * ATT_MB, acc[i][0]);
        att_st(ot + i * ATT_MB + 16, acc[i][1]);
    }
}
/* 16 dims x 16 rows */
static inline void att_pv_1(float *restrict ot, const float *restrict k, const float *restrict p,
                            const float *restrict alpha, int nk) {
    att_vf acc[ATT_RD1];
    att_vf a0 = att_ld(alpha);
#pragma GCC unroll 32
    for (int i = 0; i < ATT_RD1; i++) acc[i] = att_ld(ot + i * ATT_MB) * a0;
    for (int j = 0; j < nk; j++) {
        att_vf p0 = att_ld(p + j * ATT_MB);
#pragma GCC unroll 32
        for (int i = 0; i < ATT_RD1; i++) acc[i] += k[j * ATT_D + i] * p0;
    }
#pragma GCC unroll 32
    for (int i = 0; i < ATT_RD1; i++) att_st(ot + i * ATT_MB, acc[i]);
}

#ifdef ATT_DPBF16
static const uint8_t att_zero_row[MLA_ROW_BF16];

/* S[k][r] = sum over the d pairs [i0, i1) of bf16 K[k] . Q[r] (vdpbf16ps, K pairs broadcast from
 * bf16 rows) for 12 keys x 32 rows; qt2 rows ATT_MB apart */
static inline void att_qk_2_bf16(const uint32_t *restrict qt2, const uint8_t *const *rows, float *restrict s, int i0,
                                 int i1) {
    __m512 acc[ATT_NK2][2];
    const uint8_t *k[ATT_NK2];
    for (int j = 0; j < ATT_NK2; j++) {
        acc[j][0] = acc[j][1] = _mm512_setzero_ps();
        k[j] = rows[j];
    }
    for (int i = i0; i < i1; i++) {
        __m512bh q0 = (__m512bh)_mm512_load_si512(qt2 + i * ATT_MB);
        __m512bh q1 = (__m512bh)_mm512_load_si512(qt2 + i * ATT_MB + 16);
#pragma GCC unroll 32
        for (int j = 0; j < ATT_NK2; j++) {
            int32_t pair;
            memcpy(&pair, k[j] + 4 * i, 4);
            __m512bh kv = (__m512bh)_mm512_set1_epi32(pair);
            acc[j][0] = _mm512_dpbf16_ps(acc[j][0], q0, kv);
            acc[j][1] = _mm512_dpbf16_ps(acc[j][1], q1, kv);
        }
    }
    for (int j = 0; j < ATT_NK2; j++) {
        _mm512_store_ps(s + j * ATT_MB, acc[j][0]);
        _mm512_store_ps(s + j * ATT_MB + 16, acc[j][1]);
    }
}
/* 24 keys x 16 rows */
static inline void att_qk_1_bf16(const uint32_t *restrict qt2, const uint8_t *const *rows, float *restrict s, int i0,
                                 int i1) {
    __m512 acc[ATT_NK1];
    const uint8_t *k[ATT_NK1];
    for (int j = 0; j < ATT_NK1; j++) {
        acc[j] = _mm512_setzero_ps();
        k[j] = rows[j];
    }
    for (int i = i0; i < i1; i++) {
        __m512bh q0 = (__m512bh)_mm512_load_si512(qt2 + i * ATT_MB);
#pragma GCC unroll 32
        for (int j = 0; j < ATT_NK1; j++) {
            int32_t pair;
            memcpy(&pair, k[j] + 4 * i, 4);
            acc[j] = _mm512_dpbf16_ps(acc[j], q0, (__m512bh)_mm512_set1_epi32(pair));
        }
    }
    for (int j = 0; j < ATT_NK1; j++) _mm512_store_ps(s + j * ATT_MB, acc[j]);
}
#endif

#ifdef ATT_E4M3LUT
#define ATT_LAT_WORD(p) ((p) < 32 ? 16 * ((p) / 8) + (p) % 8 : 16 * (((p)-32) / 8) + 8 + ((p)-32) % 8)

typedef struct att_e4m3_lut {
    __m512i lo0, lo1, hi0, hi1;
    int16_t word[64];   /* bf16 word p of a converted group holds code word[p] */
    int16_t f32[64];    /* f32 lane p of a widened group holds code f32[p] */
} att_e4m3_lut;

static void att_lut_init(att_e4m3_lut *t) {
    uint8_t lo[128], hi[128];
    for (int c = 0; c < 128; c++) {
        uint32_t b = mla_f32_to_bits(e4m3_to_f32_ref((uint8_t)c));
        if ((c & 0x7f) == 0x7f) b = 0x7FC00000u;
        lo[c] = (uint8_t)(b >> 16);
        hi[c] = (uint8_t)(b >> 24);
    }
    t->lo0 = _mm512_loadu_si512(lo);
    t->lo1 = _mm512_loadu_si512(lo + 64);
    t->hi0 = _mm512_loadu_si512(hi);
    t->hi1 = _mm512_loadu_si512(hi + 64);
    for (int p = 0; p < 64; p++) t->word[p] = (int16_t)ATT_LAT_WORD(p);
    /* widening: lane f of unpacklo16 (unpackhi16) of 32 words takes word 8*(f/4) + f%4 (+4) */
    for (int h = 0; h < 2; h++)
        for (int q = 0; q < 2; q++)
            for (int f = 0; f < 16; f++) t->f32[32 * h + 16 * q + f] = t->word[32 * h + 8 * (f / 4) + f % 4 + 4 * q];
}

/* 64 e4m3 codes -> 64 bf16 in two vectors (word order t->word) */
static inline void att_lut64(const att_e4m3_lut *t, const uint8_t *src, __m512i *a, __m512i *b) {
    __m512i c = _mm512_loadu_si512(src);
    __m512i lo = _mm512_permutex2var_epi8(t->lo0, c, t->lo1);
    __m512i hi = _mm512_permutex2var_epi8(t->hi0, c, t->hi1);
    hi = _mm512_or_si512(hi, _mm512_and_si512(c, _mm512_set1_epi8((char)0x80)));
    *a = _mm512_unpacklo_epi8(lo, hi);
    *b = _mm512_unpackhi_epi8(lo, hi);
}

#endif

/* ---- the engine ---------------------------------------------------------------------------- */

/* Loads keys [kb, kb+nb) of the n keys into w->k and zero-fills rows [nb, nfill); while key kk
 * is converted, the row ks->ahead keys later is prefetched. */
static inline void att_load_block(att_ws *w, const att_keys *ks, int64_t kb, int nb, int nfill, int64_t n) {
    const uint8_t *rows[ATT_NB + ATT_AHEAD_MAX];
    float sig[ATT_NB + ATT_AHEAD_MAX];
    int64_t left = n - kb;
    int nr = left < nb + ks->ahead ? (int)left : nb + ks->ahead;
    att_key_rows(ks, kb, nr, rows, sig);
    for (int kk = 0; kk < nb; kk++) {
        if (kk + ks->ahead < nr) att_prefetch_row(ks, rows[kk + ks->ahead]);
        att_deq_row(ks, rows[kk], sig[kk], w->k + (size_t)kk * ATT_D);
    }
    if (nfill > nb) memset(w->k + (size_t)nb * ATT_D, 0, (size_t)(nfill - nb) * ATT_D * sizeof(float));
}

/* Lanes over rows: M in [1, ATT_MB]. */
static void att_run_rows(att_ws *w, int M, const int32_t *lim, int32_t minlim, const att_keys *ks, int64_t n,
                         float *O, float *m_out, float *l_out) {
    const int nv = (M + 15) / 16, mp = nv * 16, nv2 = nv & ~1;
#ifdef ATT_DPBF16
    /* bf16 cache and bf16 q: q.k by vdpbf16ps on the raw pairs (twice the multiply-adds per
     * instruction, products exact in f32), the scale applied to the sums. e4m3 caches: the keys
     * and (rope-aware) q latents become bf16 through the table, dimensions permuted alike; the
     * sums are taken per 128-dim tile and scaled by the tile scales (MLA_KV_FP8) or by sigma. */
    const int bf = w->has_qraw && ks->format == MLA_KV_BF16;
#ifdef ATT_E4M3LUT
    const int e8 = (ks->format == MLA_KV_FP8 && w->has_qraw) || (ks->format == MLA_KV_FP8_ROPE_AWARE && w->has_qra);
    att_e4m3_lut t;
    if (e8) att_lut_init(&t);
#else
    const int e8 = 0;
#endif
    const int ra = ks->format == MLA_KV_FP8_ROPE_AWARE;
    const uint8_t *rows[ATT_NB], *raw[ATT_NB];
    float sig[ATT_NB], rowf[ATT_MB] __attribute__((aligned(64)));
    if (bf || e8) {
        for (int r = 0; r < mp; r++) {
            const uint16_t *q = w->qb + (size_t)r * ATT_D;
            if (r >= M) {
                memset(w->qb + (size_t)r * ATT_D, 0, ATT_D * 2);
            } else if (bf) {
                q = w->qraw[r];
            }
#ifdef ATT_E4M3LUT
            else if (ra) {
                for (int g = 0; g < 8; g++) {
                    __m512i a, b;
                    att_lut64(&t, w->qra[r] + 64 * g, &a, &b);
                    _mm512_storeu_si512(w->qb + (size_t)r * ATT_D + 64 * g, a);
                    _mm512_storeu_si512(w->qb + (size_t)r * ATT_D + 64 * g + 32, b);
                }
                memcpy(w->qb + (size_t)r * ATT_D + ATT_V, w->qra[r] + MLA_RA_ROPE_AT, 128);
            } else {
                for (int g = 0; g < 8; g++)
                    for (int p = 0; p < 64; p++) w->qb[(size_t)r * ATT_D + 64 * g + p] = w->qraw[r][64 * g + t.word[p]];
                memcpy(w->qb + (size_t)r * ATT_D + ATT_V, w->qraw[r] + ATT_V, 128);
            }
#endif
            for (int i = 0; i < ATT_D / 2; i++) {
                uint32_t pair;
                memcpy(&pair, q + 2 * i, 4);
                w->qt2[i * ATT_MB + r] = pair;
            }
            rowf[r] = r < M && ra ? w->qfac[r] : w->qscale;
        }
    } else
#endif
    {
        /* Q^T with zero padding rows */
        for (int r = 0; r < mp; r++)
            for (int d = 0; d < ATT_D; d++) w->qt[d * ATT_MB + r] = r < M ? w->q[(size_t)r * ATT_D + d] : 0.0f;
    }
    for (int d = 0; d < ATT_V; d++)
        for (int r = 0; r < mp; r++) w->ot[d * ATT_MB + r] = 0.0f;
    for (int r = 0; r < mp; r++) { w->m[r] = -INFINITY; w->l[r] = 0.0f; }

    for (int64_t kb = 0; kb < n; kb += ATT_NB) {
        int nb = (int)(n - kb < ATT_NB ? n - kb : ATT_NB);
        int ne = nv2 == nv ? (nb + ATT_NK2 - 1) / ATT_NK2 * ATT_NK2 : (nb + ATT_NK1 - 1) / ATT_NK1 * ATT_NK1;
        att_load_block(w, ks, kb, nb, ne, n);
#ifdef ATT_DPBF16
        if (bf || e8) {
            att_key_rows(ks, kb, nb, raw, sig);
            for (int j = 0; j < nb; j++) rows[j] = raw[j];
            int nseg = 1;
            float *sp = w->s;
            if (bf) {
                for (int j = nb; j < ne; j++) rows[j] = att_zero_row;
            }
#ifdef ATT_E4M3LUT
            else {
                for (int j = 0; j < ne; j++) {
                    uint16_t *kr = w->kb + (size_t)j * ATT_D;
                    if (j >= nb) { memset(kr, 0, ATT_D * 2); continue; }
                    for (int g = 0; g < 8; g++) {
                        __m512i a, b;
                        att_lut64(&t, raw[j] + 64 * g, &a, &b);
                        _mm512_storeu_si512(kr + 64 * g, a);
                        _mm512_storeu_si512(kr + 64 * g + 32, b);
                    }
                    memcpy(kr + ATT_V, raw[j] + (ra ? MLA_RA_ROPE_AT : MLA_FP8_ROPE_AT), 128);
                }
                for (int j = 0; j < ne; j++) rows[j] = (const uint8_t *)(w->kb + (size_t)j * ATT_D);
                if (!ra) { nseg = 5; sp = w->sx; }
            }
#endif
            /* segments: the whole row, or (MLA_KV_FP8) the four latent tiles and the rope */
            for (int g = 0; g < nseg; g++) {
                int i0 = nseg == 1 ? 0 : 64 * g, i1 = nseg == 1 ? ATT_D / 2 : g < 4 ? 64 * g + 64 : ATT_D / 2;
                float *sg = sp + (size_t)g * ATT_NB * ATT_MB;
                for (int j = 0; j < ne; j += ATT_NK2)
                    for (int c = 0; c < nv2; c += 2)
                        att_qk_2_bf16(w->qt2 + 16 * c, rows + j, sg + j * ATT_MB + 16 * c, i0, i1);
                if (nv2 != nv)
                    for (int j = 0; j < ne; j += ATT_NK1)
                        att_qk_1_bf16(w->qt2 + 16 * nv2, rows + j, sg + j * ATT_MB + 16 * nv2, i0, i1);
            }
            for (int j = 0; j < nb; j++) {
                float ksc[4] = {1.0f, 1.0f, 1.0f, 1.0f};
                if (e8 && !ra) memcpy(ksc, raw[j] + MLA_FP8_SCALES_AT, 16);
                for (int c = 0; c < nv; c++) {
                    size_t o = (size_t)j * ATT_MB + 16 * c;
                    att_vf v;
                    if (nseg == 5) {
                        v = att_ld(w->sx + 4 * ATT_NB * ATT_MB + o);
                        for (int g = 0; g < 4; g++) v += att_ld(w->sx + (size_t)g * ATT_NB * ATT_MB + o) * ksc[g];
                    } else {
                        v = att_ld(w->s + o);
                        if (ra) v *= sig[j];
                    }
                    att_st(w->s + o, v * att_ld(rowf + 16 * c));
                }
            }
        } else
#endif
        {
            /* S = K Q^T */
            for (int j = 0; j < ne; j += ATT_NK2)
                for (int c = 0; c < nv2; c += 2)
                    att_qk_2(w->qt + 16 * c, w->k + (size_t)j * ATT_D, w->s + j * ATT_MB + 16 * c);
            if (nv2 != nv)
                for (int j = 0; j < ne; j += ATT_NK1)
                    att_qk_1(w->qt + 16 * nv2, w->k + (size_t)j * ATT_D, w->s + j * ATT_MB + 16 * nv2);
        }
        /* masks: padding keys, and keys at or past a row's limit */
        for (int j = nb; j < ne; j++)
            for (int r = 0; r < mp; r++) w->s[j * ATT_MB + r] = -INFINITY;
        if (kb + nb > minlim) {
            for (int j = 0; j < nb; j++) {
                int32_t kj = (int32_t)(kb + j);
                if (kj < minlim) continue;
                for (int r = 0; r < M; r++)
                    if (kj >= lim[r]) w->s[j * ATT_MB + r] = -INFINITY;
            }
        }
        /* online softmax, 16 rows per vector */
        for (int c = 0; c < nv; c++) {
            float *sc = w->s + 16 * c;
            att_vf mx = att_ld(sc);
            for (int j = 1; j < ne; j++) mx = att_max(mx, att_ld(sc + j * ATT_MB));
            att_vf mold = att_ld(w->m + 16 * c);
            att_vf mnew = att_max(mold, mx);
            att_vf msafe = (att_vf)((att_vi)mnew & ~(mnew == -INFINITY)); /* -inf -> 0 */
            att_vf alpha = att_exp(mold - msafe);
            att_vf sum = (att_vf){0};
            for (int j = 0; j < ne; j++) {
                att_vf pj = att_exp(att_ld(sc + j * ATT_MB) - msafe);
                att_st(sc + j * ATT_MB, pj);
                sum += pj;
            }
            att_st(w->l + 16 * c, att_ld(w->l + 16 * c) * alpha + sum);
            att_st(w->m + 16 * c, mnew);
            att_st(w->alpha + 16 * c, alpha);
        }
        /* O^T = O^T * alpha + V^T P^T */
        for (int d = 0; d < ATT_V; d += ATT_RD2)
            for (int c = 0; c < nv2; c += 2)
                att_pv_2(w->ot + d * ATT_MB + 16 * c, w->k + d, w->s + 16 * c, w->alpha + 16 * c, ne);
        if (nv2 != nv)
            for (int d = 0; d < ATT_V; d += ATT_RD1)
                att_pv_1(w->ot + d * ATT_MB + 16 * nv2, w->k + d, w->s + 16 * nv2, w->alpha + 16 * nv2, ne);
    }
    for (int r = 0; r < M; r++) {
        for (int d = 0; d < ATT_V; d++) O[(size_t)r * ATT_V + d] = w->ot[d * ATT_MB + r];
        m_out[r] = w->m[r];
        l_out[r] = w->l[r];
    }
}

/* Lanes over dimensions: for a few rows. */
static void att_run_dims(att_ws *w, int M, const int32_t *lim, const att_keys *ks, int64_t n, float *O,
                         float *m_out, float *l_out) {
    for (int r = 0; r < M; r++) {
        memset(O + (size_t)r * ATT_V, 0, ATT_V * sizeof(float));
        m_out[r] = -INFINITY;
        l_out[r] = 0.0f;
    }
    float *sv = w->s; /* ATT_NB scores of one row, padded to vectors */
    for (int64_t kb = 0; kb < n; kb += ATT_NBD) {
        int nb = (int)(n - kb < ATT_NBD ? n - kb : ATT_NBD);
        if (kb == 0) {
            const uint8_t *first[ATT_AHEAD_MAX];
            int n0 = n < ks->ahead ? (int)n : ks->ahead;
            att_key_rows(ks, 0, n0, first, NULL);
            for (int kk = 0; kk < n0; kk++) att_prefetch_row(ks, first[kk]);
        }
        att_load_block(w, ks, kb, nb, nb, n);
        for (int r = 0; r < M; r++) {
            int64_t nvis = lim[r] - kb;
            int nk = nvis <= 0 ? 0 : nvis < nb ? (int)nvis : nb;
            if (nk == 0) continue;
            const float *q = w->q + (size_t)r * ATT_D;
            int j = 0;
            for (; j + 4 <= nk; j += 4) {
                const float *k0 = w->k + (size_t)j * ATT_D;
                att_vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
                for (int d = 0; d < ATT_D; d += 16) {
                    att_vf qv = att_ld(q + d);
                    a0 += qv * att_ld(k0 + d);
                    a1 += qv * att_ld(k0 + ATT_D + d);
                    a2 += qv * att_ld(k0 + 2 * ATT_D + d);
                    a3 += qv * att_ld(k0 + 3 * ATT_D + d);
                }
                sv[j] = att_hsum(a0);
                sv[j + 1] = att_hsum(a1);
                sv[j + 2] = att_hsum(a2);
                sv[j + 3] = att_hsum(a3);
            }
            for (; j < nk; j++) {
                const float *k0 = w->k + (size_t)j * ATT_D;
                att_vf a0 = {0};
                for (int d = 0; d < ATT_D; d += 16) a0 += att_ld(q + d) * att_ld(k0 + d);
                sv[j] = att_hsum(a0);
            }
            int nvk = (nk + 15) / 16;
            for (j = nk; j < nvk * 16; j++) sv[j] = -INFINITY;
            att_vf mx = att_ld(sv);
            for (int c = 1; c < nvk; c++) mx = att_max(mx, att_ld(sv + 16 * c));
            float mold = m_out[r], mnew = att_hmax(mx);
            if (mold > mnew) mnew = mold;
            /* nk >= 1 finite scores: mnew > -inf unless the data holds -inf/NaN */
            float msafe = mnew == -INFINITY ? 0.0f : mnew;
            float alpha = att_exp(att_splat(mold - msafe))[0];
            att_vf sum = {0};
            for (int c = 0; c < nvk; c++) {
                att_vf pj = att_exp(att_ld(sv + 16 * c) - msafe);
                att_st(sv + 16 * c, pj);
                sum += pj;
            }
            l_out[r] = l_out[r] * alpha + att_hsum(sum);
            m_out[r] = mnew;
            float *o = O + (size_t)r * ATT_V;
            for (int d = 0; d < ATT_V; d += 64) {
                att_vf o0, o1, o2, o3;
                memcpy(&o0, o + d, 64); memcpy(&o1, o + d + 16, 64);
                memcpy(&o2, o + d + 32, 64); memcpy(&o3, o + d + 48, 64);
                o0 *= alpha; o1 *= alpha; o2 *= alpha; o3 *= alpha;
                for (int jj = 0; jj < nk; jj++) {
                    const float *v = w->k + (size_t)jj * ATT_D + d;
                    float p = sv[jj];
                    o0 += p * att_ld(v);
                    o1 += p * att_ld(v + 16);
                    o2 += p * att_ld(v + 32);
                    o3 += p * att_ld(v + 48);
                }
                memcpy(o + d, &o0, 64); memcpy(o + d + 16, &o1, 64);
                memcpy(o + d + 32, &o2, 64); memcpy(o + d + 48, &o3, 64);
            }
        }
    }
}

#ifdef ATT_DPBF16
/* Lanes over dimensions, MLA_KV_BF16 cache and bf16 q: q.k with vdpbf16ps straight from the
 * cache rows (bf16 products are exact in f32; sums round as f32 FMAs do), no f32 key tile; the
 * values are widened to f32 as they are accumulated. The memory-bound case (one or a few rows). */
static void att_run_dims_bf16(att_ws *w, int M, const int32_t *lim, const att_keys *ks, int64_t n, float *O,
                              float *m_out, float *l_out) {
    for (int r = 0; r < M; r++) {
        memset(O + (size_t)r * ATT_V, 0, ATT_V * sizeof(float));
        m_out[r] = -INFINITY;
        l_out[r] = 0.0f;
    }
    const uint8_t *rows[ATT_NBD + ATT_AHEAD_MAX];
    float *sv = w->s;
    {
        int n0 = n < ks->ahead ? (int)n : ks->ahead;
        att_key_rows(ks, 0, n0, rows, NULL);
        for (int kk = 0; kk < n0; kk++) att_prefetch_row(ks, rows[kk]);
    }
    for (int64_t kb = 0; kb < n; kb += ATT_NBD) {
        int nb = (int)(n - kb < ATT_NBD ? n - kb : ATT_NBD);
        int64_t left = n - kb;
        int nr = left < nb + ks->ahead ? (int)left : nb + ks->ahead;
        att_key_rows(ks, kb, nr, rows, NULL);
        for (int r = 0; r < M; r++) {
            int64_t nvis = lim[r] - kb;
            int nk = nvis <= 0 ? 0 : nvis < nb ? (int)nvis : nb;
            if (nk == 0) continue;
            const uint16_t *q = w->qraw[r];
            __m512bh qv[ATT_D / 32];
            for (int c = 0; c < ATT_D / 32; c++) qv[c] = (__m512bh)_mm512_loadu_si512(q + 32 * c);
            /* one key at a time, its row read front to back (three accumulator chains): the
             * hardware prefetchers follow such a stream, not several interleaved rows */
            int j;
            for (j = 0; j < nk; j++) {
                const uint8_t *row = rows[j];
                if (r == 0 && j + ks->ahead < nr) att_prefetch_row(ks, rows[j + ks->ahead]);
                __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0;
                for (int c = 0; c < ATT_D / 32; c += 3) {
                    a0 = _mm512_dpbf16_ps(a0, qv[c], (__m512bh)_mm512_loadu_si512(row + 64 * c));
                    a1 = _mm512_dpbf16_ps(a1, qv[c + 1], (__m512bh)_mm512_loadu_si512(row + 64 * c + 64));
                    a2 = _mm512_dpbf16_ps(a2, qv[c + 2], (__m512bh)_mm512_loadu_si512(row + 64 * c + 128));
                }
                sv[j] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), a2)) * w->qscale;
            }
            for (j = nk; j < 16; j++) sv[j] = -INFINITY;
            att_vf sc = att_ld(sv);
            float mold = m_out[r], mnew = att_hmax(sc);
            if (mold > mnew) mnew = mold;
            float msafe = mnew == -INFINITY ? 0.0f : mnew;
            float alpha = att_exp(att_splat(mold - msafe))[0];
            att_vf pv = att_exp(sc - msafe);
            att_st(sv, pv);
            l_out[r] = l_out[r] * alpha + att_hsum(pv);
            m_out[r] = mnew;
            float *o = O + (size_t)r * ATT_V;
            const __m512 av = _mm512_set1_ps(alpha);
            for (int d = 0; d < ATT_V; d += 128) {
                __m512 acc[8];
                for (int i = 0; i < 8; i++) acc[i] = _mm512_mul_ps(_mm512_loadu_ps(o + d + 16 * i), av);
                for (int kk = 0; kk < nk; kk++) {
                    const __m512 p = _mm512_set1_ps(sv[kk]);
                    const uint8_t *v = rows[kk] + 2 * d;
                    for (int i = 0; i < 8; i++) {
                        __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(v + 32 * i)));
                        acc[i] = _mm512_fmadd_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)), acc[i]);
                    }
                }
                for (int i = 0; i < 8; i++) _mm512_storeu_ps(o + d + 16 * i, acc[i]);
            }
        }
    }
}
#endif

#ifdef ATT_E4M3LUT
/* Lanes over dimensions for the e4m3 caches (MLA_KV_FP8, MLA_KV_FP8_ROPE_AWARE): each latent
 * row becomes bf16 through two 128-byte tables (vpermi2b: the high and low bytes of the bf16 of
 * every magnitude, e4m3 being exact in bf16, NaN codes included) and two byte interleaves, 64
 * codes at a time; q.k is then vdpbf16ps per 128-dim tile with the tile scale (or sigma) applied
 * to the sums, and the values are widened to f32 with one interleave per 16. The interleaves
 * permute the dimensions within each group of 64 in a fixed way: q is permuted alike and O is
 * put back in order at the end. */
static void att_run_dims_e4m3(att_ws *w, int M, const int32_t *lim, const att_keys *ks, int64_t n, float *O,
                              float *m_out, float *l_out) {
    att_e4m3_lut t;
    att_lut_init(&t);
    const int ra = ks->format == MLA_KV_FP8_ROPE_AWARE;
    const int rope_at = ra ? MLA_RA_ROPE_AT : MLA_FP8_ROPE_AT;
    /* q rows: latent in the converted word order, rope as is (bf16), permuted O accumulators */
    uint16_t *qp = (uint16_t *)w->qt;          /* [M][576] bf16 */
    float *op = w->ot;                          /* [M][512] f32, lanes in t.f32 order */
    for (int r = 0; r < M; r++) {
        uint16_t *dst = qp + (size_t)r * ATT_D;
        if (ra) {
            for (int g = 0; g < 8; g++) {
                __m512i a, b;
                att_lut64(&t, w->qra[r] + 64 * g, &a, &b);
                _mm512_storeu_si512(dst + 64 * g, a);
                _mm512_storeu_si512(dst + 64 * g + 32, b);
            }
            memcpy(dst + ATT_V, w->qra[r] + MLA_RA_ROPE_AT, 128);
        } else {
            for (int g = 0; g < 8; g++)
                for (int p = 0; p < 64; p++) dst[64 * g + p] = w->qraw[r][64 * g + t.word[p]];
            memcpy(dst + ATT_V, w->qraw[r] + ATT_V, 128);
        }
        memset(op + (size_t)r * ATT_V, 0, ATT_V * sizeof(float));
        m_out[r] = -INFINITY;
        l_out[r] = 0.0f;
    }
    const uint8_t *rows[ATT_NBD + ATT_AHEAD_MAX];
    float sig[ATT_NBD + ATT_AHEAD_MAX], sc[ATT_NBD][4];
    uint16_t *kt = (uint16_t *)w->k;            /* [ATT_NBD][512] converted latents */
    float *sv = w->s;
    {
        int n0 = n < ks->ahead ? (int)n : ks->ahead;
        att_key_rows(ks, 0, n0, rows, NULL);
        for (int kk = 0; kk < n0; kk++) att_prefetch_row(ks, rows[kk]);
    }
    for (int64_t kb = 0; kb < n; kb += ATT_NBD) {
        int nb = (int)(n - kb < ATT_NBD ? n - kb : ATT_NBD);
        int64_t left = n - kb;
        int nr = left < nb + ks->ahead ? (int)left : nb + ks->ahead;
        att_key_rows(ks, kb, nr, rows, sig);
        for (int kk = 0; kk < nb; kk++) {
            if (kk + ks->ahead < nr) att_prefetch_row(ks, rows[kk + ks->ahead]);
            for (int g = 0; g < 8; g++) {
                __m512i a, b;
                att_lut64(&t, rows[kk] + 64 * g, &a, &b);
                _mm512_store_si512(kt + (size_t)kk * ATT_V + 64 * g, a);
                _mm512_store_si512(kt + (size_t)kk * ATT_V + 64 * g + 32, b);
            }
            if (ra) sc[kk][0] = sc[kk][1] = sc[kk][2] = sc[kk][3] = sig[kk];
            else memcpy(sc[kk], rows[kk] + MLA_FP8_SCALES_AT, 16);
        }
        for (int r = 0; r < M; r++) {
            int64_t nvis = lim[r] - kb;
            int nk = nvis <= 0 ? 0 : nvis < nb ? (int)nvis : nb;
            if (nk == 0) continue;
            const uint16_t *q = qp + (size_t)r * ATT_D;
            const float qf = ra ? w->qfac[r] : w->qscale;
            __m512bh qv[ATT_D / 32];
            for (int c = 0; c < ATT_D / 32; c++) qv[c] = (__m512bh)_mm512_loadu_si512(q + 32 * c);
            for (int j = 0; j < nk; j++) {
                const __m512bh *k = (const __m512bh *)(kt + (size_t)j * ATT_V);
                __m512 tile[4];
                for (int c = 0; c < 4; c++) {
                    __m512 x = _mm512_dpbf16_ps(_mm512_setzero_ps(), qv[4 * c], k[4 * c]);
                    __m512 y = _mm512_dpbf16_ps(_mm512_setzero_ps(), qv[4 * c + 1], k[4 * c + 1]);
                    x = _mm512_dpbf16_ps(x, qv[4 * c + 2], k[4 * c + 2]);
                    y = _mm512_dpbf16_ps(y, qv[4 * c + 3], k[4 * c + 3]);
                    tile[c] = _mm512_add_ps(x, y);
                }
                __m512 rope = _mm512_dpbf16_ps(_mm512_setzero_ps(), qv[16],
                                               (__m512bh)_mm512_loadu_si512(rows[j] + rope_at));
                rope = _mm512_dpbf16_ps(rope, qv[17], (__m512bh)_mm512_loadu_si512(rows[j] + rope_at + 64));
                __m512 tot;
                if (ra) {
                    tot = _mm512_add_ps(_mm512_add_ps(tile[0], tile[1]), _mm512_add_ps(tile[2], tile[3]));
                    tot = _mm512_mul_ps(_mm512_add_ps(tot, rope), _mm512_set1_ps(sc[j][0]));
                } else {
                    tot = _mm512_fmadd_ps(tile[0], _mm512_set1_ps(sc[j][0]), rope);
                    tot = _mm512_fmadd_ps(tile[1], _mm512_set1_ps(sc[j][1]), tot);
                    tot = _mm512_fmadd_ps(tile[2], _mm512_set1_ps(sc[j][2]), tot);
                    tot = _mm512_fmadd_ps(tile[3], _mm512_set1_ps(sc[j][3]), tot);
                }
                sv[j] = _mm512_reduce_add_ps(tot) * qf;
            }
            for (int j = nk; j < 16; j++) sv[j] = -INFINITY;
            att_vf scv = att_ld(sv);
            float mold = m_out[r], mnew = att_hmax(scv);
            if (mold > mnew) mnew = mold;
            float msafe = mnew == -INFINITY ? 0.0f : mnew;
            float alpha = att_exp(att_splat(mold - msafe))[0];
            att_vf pv = att_exp(scv - msafe);
            att_st(sv, pv);
            l_out[r] = l_out[r] * alpha + att_hsum(pv);
            m_out[r] = mnew;
            float *o = op + (size_t)r * ATT_V;
            const __m512 av = _mm512_set1_ps(alpha);
            const __m512i zero = _mm512_setzero_si512();
            for (int c = 0; c < 4; c++) {
                __m512 acc[8];
                for (int i = 0; i < 8; i++) acc[i] = _mm512_mul_ps(_mm512_loadu_ps(o + 128 * c + 16 * i), av);
                for (int j = 0; j < nk; j++) {
                    const __m512 p = _mm512_set1_ps(sv[j] * sc[j][c]);
                    const __m512i *k = (const __m512i *)(kt + (size_t)j * ATT_V + 128 * c);
                    for (int i = 0; i < 4; i++) {
                        __m512i x = _mm512_load_si512(k + i);
                        acc[2 * i] = _mm512_fmadd_ps(p, _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, x)), acc[2 * i]);
                        acc[2 * i + 1] =
                            _mm512_fmadd_ps(p, _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, x)), acc[2 * i + 1]);
                    }
                }
                for (int i = 0; i < 8; i++) _mm512_storeu_ps(o + 128 * c + 16 * i, acc[i]);
            }
        }
    }
    /* O back in dimension order: vector i of a group holds lanes t.f32[16 i ..] */
    for (int r = 0; r < M; r++)
        for (int g = 0; g < 8; g++)
            for (int p = 0; p < 64; p++) O[(size_t)r * ATT_V + 64 * g + t.f32[p]] = op[(size_t)r * ATT_V + 64 * g + p];
}
#endif

/* Online-softmax state of M rows (query rows in w->q) over keys [0, n) of ks. lim: NULL (every row
 * sees every key) or [M]: row r sees key kk iff kk < lim[r]. O [M][512] (any alignment), m, l [M]. */
static inline void att_run(att_ws *w, int M, const int32_t *lim, const att_keys *ks, int64_t n, float *O, float *m,
                           float *l) {
    int32_t minlim = INT32_MAX;
    if (!lim) {
        int32_t nn = n > INT32_MAX ? INT32_MAX : (int32_t)n;
        for (int r = 0; r < M; r++) w->lim[r] = nn;
        lim = w->lim;
    }
    for (int r = 0; r < M; r++) minlim = lim[r] < minlim ? lim[r] : minlim;
    if (M >= ATT_ROWVEC_MIN) att_run_rows(w, M, lim, minlim, ks, n, O, m, l);
#ifdef ATT_DPBF16
    else if (w->has_qraw && ks->format == MLA_KV_BF16) att_run_dims_bf16(w, M, lim, ks, n, O, m, l);
#endif
#ifdef ATT_E4M3LUT
    else if ((ks->format == MLA_KV_FP8 && w->has_qraw) || (ks->format == MLA_KV_FP8_ROPE_AWARE && w->has_qra))
        att_run_dims_e4m3(w, M, lim, ks, n, O, m, l);
#endif
    else att_run_dims(w, M, lim, ks, n, O, m, l);
}

/* ---- finishing ---------------------------------------------------------------------------- */

/* Merges ns partial states (part + i * stride floats, each O[512], m, l) into the first. */
/* Saves the running state (O[512], m, l) of nr rows as one split's partial rows at p
 * (ATT_PART_ROW floats per row), for att_merge. */
static inline void att_save_partial(float *p, int nr, const float *o, const float *m, const float *l) {
    for (int r = 0; r < nr; r++) {
        float *pr = p + (size_t)r * ATT_PART_ROW;
        memcpy(pr, o + (size_t)r * ATT_V, ATT_V * sizeof(float));
        pr[ATT_V] = m[r];
        pr[ATT_V + 1] = l[r];
    }
}

static inline void att_merge(float *part, int ns, int64_t stride) {
    float m = -INFINITY;
    for (int i = 0; i < ns; i++) {
        float mi = part[i * stride + ATT_V];
        if (mi > m) m = mi;
    }
    float *o = part;
    if (m == -INFINITY) { part[ATT_V + 1] = 0.0f; return; }
    float l = 0.0f;
    float w0 = part[ATT_V] == -INFINITY ? 0.0f : expf(part[ATT_V] - m);
    for (int d = 0; d < ATT_V; d++) o[d] *= w0;
    l = part[ATT_V + 1] * w0;
    for (int i = 1; i < ns; i++) {
        const float *pi = part + i * stride;
        if (pi[ATT_V] == -INFINITY) continue;
        float wi = expf(pi[ATT_V] - m);
        for (int d = 0; d < ATT_V; d++) o[d] += wi * pi[d];
        l += pi[ATT_V + 1] * wi;
    }
    part[ATT_V] = m;
    part[ATT_V + 1] = l;
}

/* Writes one output row: out = O / l (times the sink factor) as bf16, lse, max_logits. A row with
 * no used key gets out = 0, lse = +inf, max_logits = -inf. */
static inline void att_finish_row(const float *o, float m, float l, const float *sink_h, uint16_t *out, float *lse,
                                  float *max_logits) {
    if (m == -INFINITY) {
        memset(out, 0, ATT_V * sizeof(uint16_t));
        if (lse) *lse = INFINITY;
        if (max_logits) *max_logits = -INFINITY;
        return;
    }
    float lse_v = m + logf(l);
    float f = 1.0f / l;
    if (sink_h) f *= 1.0f / (1.0f + expf(*sink_h - lse_v));
    for (int d = 0; d < ATT_V; d++) out[d] = f32_to_bf16_ref(o[d] * f);
    if (lse) *lse = lse_v;
    if (max_logits) *max_logits = m;
}

#endif
