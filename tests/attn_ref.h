/* Test helpers shared by test_decode.c and test_sparse.c: paged latent caches built from a seeded
 * generator with every unused byte poisoned (NaN patterns), a float64 reference of absorbed
 * attention over dequantized rows, guard-byte checks. */
#ifndef MLA_TEST_ATTN_REF_H
#define MLA_TEST_ATTN_REF_H

#include <dirent.h>
#include <limits.h>

#include "harness.h"
#include "core/numeric.h"

/* ---- caches -------------------------------------------------------------------------------- */

typedef struct t_cache {
    mla_paged_cache c;
    uint8_t *mem;
    size_t bytes;
    float *sigma_mem;
    size_t sigma_n;
    int64_t row_bytes;
} t_cache;

/* A pool of num_pages pages; page_stride = page bytes + extra; sigma pages sigma_extra floats
 * apart beyond page_size. Every byte starts poisoned: rows with their format's NaN patterns
 * (bf16 0x7FC0, e4m3 0x7F, f32 NaN), gaps with 0xFF. */
static inline void t_cache_make(t_cache *t, mla_format fmt, int page_size, int num_pages, int extra, int sigma_extra) {
    memset(t, 0, sizeof *t);
    t->row_bytes = (int64_t)mla_cache_row_bytes(fmt, 0);
    int64_t stride = (int64_t)mla_cache_page_bytes(fmt, page_size, 0) + extra;
    t->bytes = (size_t)(stride * num_pages);
    t->mem = (uint8_t *)h_alloc(t->bytes);
    memset(t->mem, 0xFF, t->bytes);
    for (int p = 0; p < num_pages; p++)
        for (int s = 0; s < page_size; s++) {
            uint8_t *row = t->mem + p * stride + s * t->row_bytes;
            if (fmt == MLA_KV_BF16) {
                for (int i = 0; i < 576; i++) { row[2 * i] = 0xC0; row[2 * i + 1] = 0x7F; }
            } else {
                memset(row, 0x7F, 512);
                if (fmt == MLA_KV_FP8) {
                    uint32_t nan = 0x7FC00000u;
                    for (int i = 0; i < 4; i++) memcpy(row + 512 + 4 * i, &nan, 4);
                }
                uint8_t *rope = row + (fmt == MLA_KV_FP8 ? 528 : 512);
                for (int i = 0; i < 64; i++) { rope[2 * i] = 0xC0; rope[2 * i + 1] = 0x7F; }
            }
        }
    t->c.base = t->mem;
    t->c.page_stride = stride;
    t->c.page_size = page_size;
    t->c.num_pages = num_pages;
    t->c.format = fmt;
    if (fmt == MLA_KV_FP8_ROPE_AWARE) {
        t->c.sigma_stride_page = sigma_extra ? page_size + sigma_extra : 0;
        int64_t ss = page_size + sigma_extra;
        t->sigma_n = (size_t)(ss * num_pages);
        t->sigma_mem = (float *)h_alloc(t->sigma_n * sizeof(float));
        for (size_t i = 0; i < t->sigma_n; i++) t->sigma_mem[i] = NAN;
        t->c.sigma = t->sigma_mem;
    }
}
static inline void t_cache_free(t_cache *t) { free(t->mem); free(t->sigma_mem); }

static inline uint8_t *t_row(const t_cache *t, int64_t page, int64_t slot) {
    return t->mem + page * t->c.page_stride + slot * t->row_bytes;
}
static inline float *t_sigma(const t_cache *t, int64_t page, int64_t slot) {
    int64_t ss = t->c.sigma_stride_page ? t->c.sigma_stride_page : t->c.page_size;
    return t->sigma_mem + page * ss + slot;
}

/* Writes a random token row (values ~ N(0, amp)) as a writer would (SPEC 3). */
static inline void t_write_row(t_cache *t, h_rng *g, int64_t page, int64_t slot, double amp) {
    uint8_t *row = t_row(t, page, slot);
    float x[576];
    for (int i = 0; i < 576; i++) x[i] = (float)(h_normal(g) * amp);
    if (t->c.format == MLA_KV_BF16) {
        for (int i = 0; i < 576; i++) { uint16_t v = f32_to_bf16_ref(x[i]); memcpy(row + 2 * i, &v, 2); }
    } else if (t->c.format == MLA_KV_FP8) {
        for (int c = 0; c < 4; c++) {
            float amax = 0;
            for (int i = 0; i < 128; i++) amax = fmaxf(amax, fabsf(x[128 * c + i]));
            float s = pow2_scale_ref(amax);
            for (int i = 0; i < 128; i++) row[128 * c + i] = f32_to_e4m3_ref(x[128 * c + i] / s);
            memcpy(row + 512 + 4 * c, &s, 4);
        }
        for (int i = 0; i < 64; i++) { uint16_t v = f32_to_bf16_ref(x[512 + i]); memcpy(row + 528 + 2 * i, &v, 2); }
    } else {
        float amax = 0;
        for (int i = 0; i < 512; i++) amax = fmaxf(amax, fabsf(x[i]));
        float s = pow2_scale_ref(amax);
        for (int i = 0; i < 512; i++) row[i] = f32_to_e4m3_ref(x[i] / s);
        for (int i = 0; i < 64; i++) { uint16_t v = f32_to_bf16_ref(x[512 + i] / s); memcpy(row + 512 + 2 * i, &v, 2); }
        *t_sigma(t, page, slot) = s;
    }
}

/* Dequantizes a cache row (SPEC 3) into double [576]. */
static inline void t_deq_row(const mla_paged_cache *c, const uint8_t *row, float sigma, double *k) {
    if (c->format == MLA_KV_BF16) {
        for (int i = 0; i < 576; i++) { uint16_t v; memcpy(&v, row + 2 * i, 2); k[i] = bf16_to_f32_ref(v); }
    } else if (c->format == MLA_KV_FP8) {
        float s[4];
        memcpy(s, row + 512, 16);
        for (int i = 0; i < 512; i++) k[i] = (double)e4m3_to_f32_ref(row[i]) * s[i / 128];
        for (int i = 0; i < 64; i++) { uint16_t v; memcpy(&v, row + 528 + 2 * i, 2); k[512 + i] = bf16_to_f32_ref(v); }
    } else {
        for (int i = 0; i < 512; i++) k[i] = (double)e4m3_to_f32_ref(row[i]) * sigma;
        for (int i = 0; i < 64; i++) { uint16_t v; memcpy(&v, row + 512 + 2 * i, 2); k[512 + i] = (double)bf16_to_f32_ref(v) * sigma; }
    }
}

/* ---- the float64 reference ------------------------------------------------------------------ */

/* Attention of one query row q[576] over n keys k[n][576] (v = k[:512]) with the SPEC 4 output
 * rules: out[512], lse (+inf when n = 0), max logit (-inf when n = 0). */
static inline void t_ref_row(const double *q, double scale, int64_t n, const double *k, const float *sink_h,
                             double *out, double *lse, double *mx) {
    for (int d = 0; d < 512; d++) out[d] = 0;
    if (n == 0) { *lse = INFINITY; *mx = -INFINITY; return; }
    double *s = (double *)h_alloc((size_t)n * sizeof(double));
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        double acc = 0;
        for (int d = 0; d < 576; d++) acc += q[d] * k[j * 576 + d];
        s[j] = scale * acc;
        if (s[j] > m) m = s[j];
    }
    double l = 0;
    for (int64_t j = 0; j < n; j++) {
        double p = exp(s[j] - m);
        l += p;
        for (int d = 0; d < 512; d++) out[d] += p * k[j * 576 + d];
    }
    *lse = m + log(l);
    *mx = m;
    double f = 1.0 / l;
    if (sink_h) f *= 1.0 / (1.0 + exp((double)*sink_h - *lse));
    for (int d = 0; d < 512; d++) out[d] *= f;
    free(s);
}

/* ---- guards ----------------------------------------------------------------------------------- */

#define T_GUARD 0xA5
/* Byte i of buf (n bytes) may change only where mask[i] is set; counts the others that did. */
static inline int64_t t_guard_bad(const uint8_t *buf, const uint8_t *mask, size_t n) {
    int64_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!mask[i] && buf[i] != T_GUARD) bad++;
    return bad;
}

static inline double t_bf16(uint16_t v) { return bf16_to_f32_ref(v); }


static int t_cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Sorted case names under dir (caller frees); count in *n. NULL when dir is missing. */
static inline char **t_list_cases(const char *dir, int *n) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **names = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (*n == cap) { cap = cap ? 2 * cap : 16; names = (char **)realloc(names, (size_t)cap * sizeof *names); }
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (*n) qsort(names, (size_t)*n, sizeof *names, t_cmp_name);
    return names;
}

#endif
