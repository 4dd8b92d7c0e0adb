/* mla_prefill_fp8_fused and its building blocks on the CPU backend (SPEC 4.4): mla_rope,
 * mla_rmsnorm, mla_quantize_fp8_1x128 (byte-exact), mla_gemm_fp8_block_scaled (against float64),
 * the golden cases, and randomized fused calls against a float64 pipeline written here (ragged
 * q_len with 0, prefixes, page sizes 1..64, NaN garbage in unused slots, padded strides). */
#include "harness.h"
#include "prefill_npy.h"
#include "core/numeric.h"
#include "cpu/prefill_simd.h"

#define ROW576 576

/* ---- references ---- */

static float bf(uint16_t x) { return mla_bf16_to_f32(x); }

/* The bf16 nearest to x (ties to even), found by comparing neighbours in long double. */
static uint16_t nearest_bf16(long double x) {
    uint16_t c = mla_f32_to_bf16((float)x); /* within one step of the answer */
    uint16_t best = c;
    long double bd = -1;
    for (int k = -2; k <= 2; k++) {
        uint16_t cand = (uint16_t)(c + k);
        if (((c ^ cand) & 0x8000) || (cand & 0x7f80) == 0x7f80) continue; /* stay on one side, finite */
        long double d = fabsl((long double)bf(cand) - x);
        if (bd < 0 || d < bd || (d == bd && !(cand & 1))) { bd = d; best = cand; }
    }
    return best;
}

static void ref_rope_row(uint16_t *x, const float *fc) {
    for (int k = 0; k < 32; k++) {
        long double x0 = bf(x[2 * k]), x1 = bf(x[2 * k + 1]), c = fc[2 * k], s = fc[2 * k + 1];
        x[2 * k] = nearest_bf16(x0 * c - x1 * s);
        x[2 * k + 1] = nearest_bf16(x0 * s + x1 * c);
    }
}

/* SPEC 4.4 step 2 literally: mean and rsqrt in f32 (mean of the exact squares, rounded once). */
static void ref_rmsnorm_row(uint16_t *x, int dim, const uint16_t *g, float eps) {
    double ss = 0;
    for (int d = 0; d < dim; d++) ss += (double)bf(x[d]) * bf(x[d]);
    float r = 1.0f / sqrtf((float)(ss / dim) + eps);
    for (int d = 0; d < dim; d++) {
        uint16_t y = mla_f32_to_bf16(bf(x[d]) * r);
        x[d] = mla_f32_to_bf16(bf(y) * bf(g[d]));
    }
}

static void ref_quantize_row(const uint16_t *x, int dim, uint8_t *q, float *s) {
    for (int g = 0; g < dim / 128; g++) {
        float amax = 0;
        for (int k = 0; k < 128; k++) {
            float v = fabsf(bf(x[g * 128 + k]));
            if (v > amax) amax = v;
        }
        float sc = (amax < 1200.0f ? amax : 1200.0f) / 448.0f;
        s[g] = sc;
        for (int k = 0; k < 128; k++) q[g * 128 + k] = sc == 0 ? 0 : mla_f32_to_e4m3(bf(x[g * 128 + k]) / sc);
    }
}

/* ---- building blocks ---- */

static void random_freqs(h_rng *r, float *fc, int max_pos) {
    for (int p = 0; p < max_pos; p++)
        for (int k = 0; k < 32; k++) {
            double theta = p * pow(10000.0, -2.0 * k / 64) * (1 + 0.1 * h_uniform(r));
            fc[p * 64 + 2 * k] = (float)cos(theta);
            fc[p * 64 + 2 * k + 1] = (float)sin(theta);
        }
}

static void test_rope(void) {
    h_begin("rope: 300 rows, stride 100, exact against the nearest bf16 of the exact rotation");
    h_rng r = {11};
    int n = 300, xs = 100, max_pos = 4000;
    uint16_t *x = (uint16_t *)h_alloc((size_t)n * xs * 2), *ref = (uint16_t *)h_alloc((size_t)n * xs * 2);
    float *fc = (float *)h_alloc((size_t)max_pos * 64 * 4);
    int32_t *pos = (int32_t *)h_alloc((size_t)n * 4);
    random_freqs(&r, fc, max_pos);
    for (int i = 0; i < n * xs; i++) x[i] = mla_f32_to_bf16((float)(h_normal(&r) * (i % 7 == 0 ? 100 : 1)));
    for (int i = 0; i < n; i++) pos[i] = h_int(&r, 0, max_pos - 1);
    memcpy(ref, x, (size_t)n * xs * 2);
    for (int i = 0; i < n; i++) ref_rope_row(ref + i * xs, fc + pos[i] * 64);
    mla_ctx *ctx = h_cpu_ctx();
    mla_rope_args a = {.num_rows = n, .x = x, .x_stride = xs, .pos = pos, .freqs_cis = fc, .max_pos = max_pos};
    mla_status rc = mla_rope(ctx, &a);
    EXPECT_OK(ctx, rc);
    int bad = 0;
    for (int i = 0; i < n * xs; i++) bad += x[i] != ref[i];
    EXPECT(bad == 0, "%d values differ (columns 64.. of each row must be untouched too)", bad);
    pos[7] = max_pos;
    EXPECT(mla_rope(ctx, &a) == MLA_ERR_INVALID_ARG, "pos >= max_pos must be refused");
    mla_ctx_destroy(ctx);
    free(x); free(ref); free(fc); free(pos);
    h_end();
}

static void test_rmsnorm(void) {
    h_begin("rmsnorm: dim 512 and 200, padded stride, exact against the SPEC formula, close to f64");
    h_rng r = {12};
    mla_ctx *ctx = h_cpu_ctx();
    const int dims[2] = {512, 200};
    for (int di = 0; di < 2; di++) {
        int n = 37, dim = dims[di], xs = dim + 9;
        uint16_t *x = (uint16_t *)h_alloc((size_t)n * xs * 2), *ref = (uint16_t *)h_alloc((size_t)n * xs * 2);
        uint16_t *x0 = (uint16_t *)h_alloc((size_t)n * xs * 2), *g = (uint16_t *)h_alloc((size_t)dim * 2);
        for (int i = 0; i < n * xs; i++) x[i] = mla_f32_to_bf16((float)(h_normal(&r) * (1 + i / xs)));
        for (int d = 0; d < dim; d++) g[d] = mla_f32_to_bf16((float)(0.5 + h_uniform(&r)));
        memcpy(ref, x, (size_t)n * xs * 2);
        memcpy(x0, x, (size_t)n * xs * 2);
        for (int i = 0; i < n; i++) ref_rmsnorm_row(ref + i * xs, dim, g, 1e-6f);
        mla_rmsnorm_args a = {.num_rows = n, .dim = dim, .x = x, .x_stride = xs, .gamma = g, .eps = 1e-6f};
        mla_status rc = mla_rmsnorm(ctx, &a);
        EXPECT_OK(ctx, rc);
        int bad = 0;
        for (int i = 0; i < n * xs; i++) bad += x[i] != ref[i];
        EXPECT(bad == 0, "dim %d: %d values differ from the SPEC formula", dim, bad);
        /* and the formula is an RMSNorm: within two bf16 roundings of the f64 value */
        double worst = 0;
        for (int i = 0; i < n; i++) {
            double ss = 0;
            for (int d = 0; d < dim; d++) ss += (double)bf(x0[i * xs + d]) * bf(x0[i * xs + d]);
            double rr = 1 / sqrt(ss / dim + 1e-6);
            for (int d = 0; d < dim; d++) {
                double want = bf(x0[i * xs + d]) * rr * bf(g[d]), got = bf(x[i * xs + d]);
                double e = fabs(got - want) / (fabs(want) + 1e-30);
                if (e > worst) worst = e;
            }
        }
        EXPECT(worst <= 2.0 / 256 + 1e-6, "dim %d: relative error %.3g against f64", dim, worst);
        free(x); free(ref); free(x0); free(g);
    }
    mla_ctx_destroy(ctx);
    h_end();
}

static void test_quantize(void) {
    h_begin("quantize_fp8_1x128: byte-exact, amax above 1200 saturates, zero group, tiny values");
    h_rng r = {13};
    int n = 40, dim = 384, xs = 400;
    uint16_t *x = (uint16_t *)h_alloc((size_t)n * xs * 2);
    uint8_t *q = (uint8_t *)h_alloc((size_t)n * dim), *rq = (uint8_t *)h_alloc((size_t)n * dim);
    float *s = (float *)h_alloc((size_t)n * 3 * 4), *rs = (float *)h_alloc((size_t)n * 3 * 4);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < xs; d++) {
            double mag = i == 0 ? 1e-6 : i == 1 ? 3000 : i == 2 ? 1190 : exp(h_normal(&r) * 2);
            x[i * xs + d] = mla_f32_to_bf16((float)(h_normal(&r) * mag));
        }
    for (int d = 128; d < 256; d++) x[3 * xs + d] = 0;      /* an all-zero group */
    x[4 * xs + 5] = mla_f32_to_bf16(5000.0f);              /* one outlier above 1200 */
    for (int i = 0; i < n; i++) ref_quantize_row(x + i * xs, dim, rq + i * dim, rs + i * 3);
    mla_ctx *ctx = h_cpu_ctx();
    mla_quantize_fp8_1x128_args a = {.num_rows = n, .dim = dim, .x = x, .x_stride = xs, .q = q, .s = s};
    mla_status rc = mla_quantize_fp8_1x128(ctx, &a);
    EXPECT_OK(ctx, rc);
    EXPECT(memcmp(q, rq, (size_t)n * dim) == 0, "e4m3 bytes differ");
    EXPECT(memcmp(s, rs, (size_t)n * 3 * 4) == 0, "scales differ");
    EXPECT(s[3 * 3 + 1] == 0 && q[3 * dim + 200] == 0, "zero group: s = 0, q = 0");
    EXPECT(s[4 * 3] == 1200.0f / 448.0f, "outlier group scale is min(amax, 1200) / 448");
    EXPECT(q[4 * dim + 5] == 0x7e, "outlier saturates to 448");
    a.dim = 200;
    EXPECT(mla_quantize_fp8_1x128(ctx, &a) == MLA_ERR_INVALID_ARG, "dim not a multiple of 128 must be refused");
    mla_ctx_destroy(ctx);
    free(x); free(q); free(rq); free(s); free(rs);
    h_end();
}

static uint8_t rand_e4m3(h_rng *r) {
    uint8_t c;
    do c = (uint8_t)h_next(r); while ((c & 0x7f) == 0x7f);
    return c;
}

static void test_gemm(int m, int n, int k, int pad) {
    h_begin("gemm_fp8_block_scaled: m=%d n=%d k=%d c_stride pad %d, against f64", m, n, k, pad);
    h_rng r = {(uint64_t)(m * 1000003 + n * 1009 + k)};
    int kb = k / 128, nb = (n + 127) / 128;
    int64_t ldc = n + pad;
    uint8_t *a = (uint8_t *)h_alloc((size_t)m * k), *b = (uint8_t *)h_alloc((size_t)n * k);
    float *as = (float *)h_alloc((size_t)m * kb * 4), *bs = (float *)h_alloc((size_t)nb * kb * 4);
    uint16_t *c = (uint16_t *)h_alloc((size_t)(m * ldc + 8) * 2);
    for (int i = 0; i < m * k; i++) a[i] = rand_e4m3(&r);
    for (int i = 0; i < n * k; i++) b[i] = rand_e4m3(&r);
    for (int i = 0; i < m * kb; i++) as[i] = (float)(exp(h_normal(&r)) / 448);
    for (int i = 0; i < nb * kb; i++) bs[i] = (float)(exp(h_normal(&r)) / 4000);
    for (int64_t i = 0; i < m * ldc + 8; i++) c[i] = 0x7fc1;
    mla_ctx *ctx = h_cpu_ctx();
    mla_gemm_fp8_args g = {.m = m, .n = n, .k = k, .a = a, .a_s = as, .b = b, .b_s = bs, .c = c, .c_stride = pad ? ldc : 0};
    mla_status rc = mla_gemm_fp8_block_scaled(ctx, &g);
    EXPECT_OK(ctx, rc);
    int64_t bad = 0, guard = 0;
    double worst = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = 0, mag = 0;
            for (int t = 0; t < k; t++) {
                double p = (double)mla_e4m3_to_f32(a[i * k + t]) * as[i * kb + t / 128] * mla_e4m3_to_f32(b[j * k + t]) *
                           bs[(j / 128) * kb + t / 128];
                acc += p;
                mag += fabs(p);
            }
            double got = bf(c[i * ldc + j]), err = fabs(got - acc);
            /* one bf16 rounding of the f32 sum, plus f32 rounding of the operands and the sum */
            double bound = fabs(acc) / 256 + 1e-6 * mag;
            if (err > bound) bad++;
            if (err / (bound + 1e-300) > worst) worst = err / bound;
        }
    for (int i = 0; i < m; i++)
        for (int64_t j = n; j < ldc; j++) guard += c[i * ldc + j] != 0x7fc1;
    for (int j = 0; j < 8; j++) guard += c[m * ldc + j] != 0x7fc1;
    EXPECT(bad == 0, "%lld of %d values off by more than a bf16 rounding (worst %.2f of the bound)", (long long)bad, m * n,
           worst);
    EXPECT(guard == 0, "%lld values written outside c", (long long)guard);
    mla_ctx_destroy(ctx);
    free(a); free(b); free(as); free(bs); free(c);
    h_end();
}

/* ---- the fused branch: float64 pipeline ---- */

typedef struct fcase {
    int H, B, page, pad, with_lse;
    int ql[6], sl[6];
    float scale, eps;
} fcase;

typedef struct fdata { /* one problem; the library and the reference each get a copy of q and cache */
    int H, B, T, page, num_pages, bt_stride, max_pos;
    int32_t qo[7], sl[6], *bt;
    int64_t page_bytes, qst, qsh;
    uint16_t *q;          /* [T * qst] */
    uint8_t *cache;       /* [num_pages * page_bytes] */
    float *fc;
    uint16_t *gamma;
    uint8_t *w;           /* [H*256, 512] */
    float *ws;            /* [H*2, 4] */
    float scale, eps;
} fdata;

static uint16_t *cache_row(const fdata *d, uint8_t *cache, int b, int j) {
    int page = d->bt[b * d->bt_stride + j / d->page];
    return (uint16_t *)(cache + (int64_t)page * d->page_bytes + (int64_t)(j % d->page) * 1152);
}

/* out [T,H,128] and lse [T,H] in f64; q and cache modified as the op does. */
static void ref_fused(const fdata *d, uint16_t *q, uint8_t *cache, double *out, double *lse) {
    int H = d->H;
    /* 1-2 */
    for (int b = 0; b < d->B; b++) {
        int ql = d->qo[b + 1] - d->qo[b];
        for (int i = 0; i < ql; i++) {
            int t = d->qo[b] + i, pos = d->sl[b] - ql + i;
            for (int h = 0; h < H; h++) ref_rope_row(q + t * d->qst + h * d->qsh + 128, d->fc + pos * 64);
            uint16_t *row = cache_row(d, cache, b, pos);
            ref_rope_row(row + 512, d->fc + pos * 64);
            ref_rmsnorm_row(row, 512, d->gamma, d->eps);
        }
    }
    /* 3-7, request by request */
    for (int b = 0; b < d->B; b++) {
        int sl = d->sl[b], ql = d->qo[b + 1] - d->qo[b];
        if (ql == 0) continue;
        double *act = (double *)h_alloc((size_t)sl * 512 * 8);
        uint16_t *kv = (uint16_t *)h_alloc((size_t)sl * H * 256 * 2);
        for (int j = 0; j < sl; j++) {
            uint8_t q8[512];
            float s8[4];
            ref_quantize_row(cache_row(d, cache, b, j), 512, q8, s8);
            for (int k = 0; k < 512; k++) act[j * 512 + k] = (double)mla_e4m3_to_f32(q8[k]) * s8[k / 128];
        }
        for (int n = 0; n < H * 256; n++) {
            double wrow[512];
            for (int k = 0; k < 512; k++) wrow[k] = (double)mla_e4m3_to_f32(d->w[n * 512 + k]) * d->ws[(n / 128) * 4 + k / 128];
            for (int j = 0; j < sl; j++) {
                double acc = 0;
                for (int k = 0; k < 512; k++) acc += act[j * 512 + k] * wrow[k];
                kv[(j * H) * 256 + n] = nearest_bf16(acc);
            }
        }
        double *s = (double *)h_alloc((size_t)sl * 8);
        for (int i = 0; i < ql; i++) {
            int t = d->qo[b] + i;
            for (int h = 0; h < H; h++) {
                const uint16_t *qh = q + t * d->qst + h * d->qsh;
                double mx = -INFINITY;
                int nvis = sl - ql + i + 1;
                for (int j = 0; j < nvis; j++) {
                    const uint16_t *kr = cache_row(d, cache, b, j) + 512;
                    double acc = 0;
                    for (int e = 0; e < 128; e++) acc += (double)bf(qh[e]) * bf(kv[j * H * 256 + h * 256 + e]);
                    for (int e = 0; e < 64; e++) acc += (double)bf(qh[128 + e]) * bf(kr[e]);
                    s[j] = acc * d->scale;
                    if (s[j] > mx) mx = s[j];
                }
                double sum = 0, *o = out + ((int64_t)t * H + h) * 128;
                for (int e = 0; e < 128; e++) o[e] = 0;
                for (int j = 0; j < nvis; j++) {
                    double p = exp(s[j] - mx);
                    sum += p;
                    for (int e = 0; e < 128; e++) o[e] += p * bf(kv[j * H * 256 + h * 256 + 128 + e]);
                }
                for (int e = 0; e < 128; e++) o[e] /= sum;
                lse[t * H + h] = mx + log(sum);
            }
        }
        free(act); free(kv); free(s);
    }
}

/* Compares q and the cache after the call against expected copies: the new rows and q by the
 * bf16 rule, every other cache byte identical. */
static void expect_q_cache(const fdata *d, const uint16_t *q, const uint16_t *rq, const uint8_t *cache,
                           const uint8_t *rcache) {
    int H = d->H, T = d->T;
    float *a = (float *)h_alloc((size_t)T * H * 192 * 4);
    double *r = (double *)h_alloc((size_t)T * H * 192 * 8);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int e = 0; e < 192; e++) {
                a[(t * H + h) * 192 + e] = bf(q[t * d->qst + h * d->qsh + e]);
                r[(t * H + h) * 192 + e] = bf(rq[t * d->qst + h * d->qsh + e]);
            }
    EXPECT_CLOSE(a, r, (int64_t)T * H * 192, MLA_TOL_OUT, "q after the call");
    int64_t words = (int64_t)d->num_pages * d->page_bytes / 2;
    uint8_t *is_new = (uint8_t *)h_alloc((size_t)words);
    int nrows = 0;
    for (int b = 0; b < d->B; b++) {
        int ql = d->qo[b + 1] - d->qo[b];
        for (int i = 0; i < ql; i++) {
            uint16_t *row = cache_row(d, (uint8_t *)cache, b, d->sl[b] - ql + i);
            int64_t w0 = row - (const uint16_t *)cache;
            for (int e = 0; e < 576; e++) is_new[w0 + e] = 1;
            nrows++;
        }
    }
    const uint16_t *c16 = (const uint16_t *)cache, *r16 = (const uint16_t *)rcache;
    int64_t bad = 0, k = 0;
    float *na = (float *)h_alloc((size_t)(nrows > 0 ? nrows : 1) * 576 * 4);
    double *nr = (double *)h_alloc((size_t)(nrows > 0 ? nrows : 1) * 576 * 8);
    for (int64_t i = 0; i < words; i++) {
        if (is_new[i]) { na[k] = bf(c16[i]); nr[k] = bf(r16[i]); k++; }
        else if (c16[i] != r16[i]) bad++;
    }
    EXPECT(bad == 0, "%lld untouched cache values changed", (long long)bad);
    EXPECT_CLOSE(na, nr, k, MLA_TOL_OUT, "new cache rows");
    free(a); free(r); free(is_new); free(na); free(nr);
}

static void run_fused(const fcase *c, uint64_t seed) {
    h_rng r = {seed};
    fdata d;
    memset(&d, 0, sizeof d);
    d.H = c->H; d.B = c->B; d.page = c->page; d.scale = c->scale; d.eps = c->eps;
    char ql_s[64] = "", sl_s[64] = "";
    int max_sl = 1, pages = 0;
    for (int b = 0; b < c->B; b++) {
        d.qo[b + 1] = d.qo[b] + c->ql[b];
        d.sl[b] = c->sl[b];
        if (c->sl[b] > max_sl) max_sl = c->sl[b];
        pages += (c->sl[b] + c->page - 1) / c->page;
        snprintf(ql_s + strlen(ql_s), sizeof ql_s - strlen(ql_s), "%s%d", b ? "," : "", c->ql[b]);
        snprintf(sl_s + strlen(sl_s), sizeof sl_s - strlen(sl_s), "%s%d", b ? "," : "", c->sl[b]);
    }
    h_begin("fused H=%d page=%d q_len=[%s] seq_len=[%s] pad=%d lse=%d", c->H, c->page, ql_s, sl_s, c->pad, c->with_lse);
    d.T = d.qo[c->B];
    int H = d.H, T = d.T;
    d.max_pos = max_sl + 3;
    d.bt_stride = (max_sl + c->page - 1) / c->page + 2;
    d.num_pages = pages + 3; /* spare pages nobody owns: garbage */
    d.page_bytes = (int64_t)c->page * 1152 + (c->pad ? 64 : 0);
    d.qsh = 192 + c->pad;
    d.qst = H * d.qsh + 2 * c->pad;
    d.bt = (int32_t *)h_alloc((size_t)c->B * d.bt_stride * 4);
    /* pages handed out in a shuffled order */
    int *perm = (int *)h_alloc((size_t)d.num_pages * sizeof(int));
    for (int i = 0; i < d.num_pages; i++) perm[i] = i;
    for (int i = d.num_pages - 1; i > 0; i--) { int j = h_int(&r, 0, i), t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
    int next = 0;
    for (int b = 0; b < c->B; b++)
        for (int p = 0; p < d.bt_stride; p++)
            d.bt[b * d.bt_stride + p] = p < (c->sl[b] + c->page - 1) / c->page ? perm[next++] : 2147483647;
    int64_t cache_bytes = d.num_pages * d.page_bytes;
    d.cache = (uint8_t *)h_alloc((size_t)cache_bytes);
    uint16_t *c16 = (uint16_t *)d.cache;
    for (int64_t i = 0; i < cache_bytes / 2; i++) c16[i] = 0x7fc0; /* NaN garbage everywhere ... */
    for (int b = 0; b < c->B; b++)                                 /* ... but in the used rows */
        for (int j = 0; j < c->sl[b]; j++) {
            uint16_t *row = cache_row(&d, d.cache, b, j);
            int is_new = j >= c->sl[b] - c->ql[b];
            for (int e = 0; e < 576; e++) {
                double x = h_normal(&r);
                if (!is_new && e < 512) x *= 0.8 + 0.4 * h_uniform(&r); /* old rows: already normed scale */
                if (is_new) x *= 3;                                       /* raw kv_a output */
                row[e] = mla_f32_to_bf16((float)x);
            }
        }
    d.q = (uint16_t *)h_alloc((size_t)T * d.qst * 2 + 2);
    for (int64_t i = 0; i < (int64_t)T * d.qst; i++) d.q[i] = mla_f32_to_bf16((float)h_normal(&r));
    d.fc = (float *)h_alloc((size_t)d.max_pos * 64 * 4);
    random_freqs(&r, d.fc, d.max_pos);
    d.gamma = (uint16_t *)h_alloc(512 * 2);
    for (int e = 0; e < 512; e++) d.gamma[e] = mla_f32_to_bf16((float)(0.5 + h_uniform(&r)));
    d.w = (uint8_t *)h_alloc((size_t)H * 256 * 512);
    d.ws = (float *)h_alloc((size_t)H * 2 * 4 * 4);
    for (int64_t i = 0; i < (int64_t)H * 256 * 512; i++) d.w[i] = mla_f32_to_e4m3((float)(h_normal(&r) * 100));
    for (int i = 0; i < H * 8; i++) d.ws[i] = (float)((0.5 + h_uniform(&r)) / (100 * sqrt(512.0)) * 2);

    /* reference on copies */
    uint16_t *rq = (uint16_t *)h_alloc((size_t)T * d.qst * 2 + 2);
    uint8_t *rcache = (uint8_t *)h_alloc((size_t)cache_bytes);
    memcpy(rq, d.q, (size_t)T * d.qst * 2);
    memcpy(rcache, d.cache, (size_t)cache_bytes);
    double *ro = (double *)h_alloc((size_t)T * H * 128 * 8), *rl = (double *)h_alloc((size_t)T * H * 8);
    ref_fused(&d, rq, rcache, ro, rl);

    int64_t osh = 128 + c->pad, ost = H * osh + c->pad, lst = H + c->pad;
    uint16_t *out = (uint16_t *)h_alloc((size_t)(T * ost + 16) * 2);
    float *lse = (float *)h_alloc((size_t)(T * lst + 4) * 4);
    for (int64_t i = 0; i < T * ost + 16; i++) out[i] = 0x7fc1;
    mla_prefill_fp8_fused_args a = {0};
    a.num_tokens = T;
    a.num_heads = H;
    a.q = d.q;
    a.q_stride_t = c->pad ? d.qst : 0;
    a.q_stride_h = c->pad ? d.qsh : 0;
    a.freqs_cis = d.fc;
    a.max_pos = d.max_pos;
    a.kv_norm_gamma = d.gamma;
    a.cache = (mla_paged_cache){.base = d.cache, .page_stride = d.page_bytes, .page_size = d.page, .num_pages = d.num_pages,
                                .format = MLA_KV_BF16};
    a.batch = (mla_batch){.num_requests = d.B, .q_offsets = d.qo, .seq_lens = d.sl, .block_table = d.bt, .bt_stride = d.bt_stride};
    a.kv_b_proj = d.w;
    a.kv_b_proj_scale = d.ws;
    a.scale = d.scale;
    a.eps = d.eps;
    a.out = out;
    a.out_stride_t = c->pad ? ost : 0;
    a.out_stride_h = c->pad ? osh : 0;
    if (!c->pad) { ost = H * 128; osh = 128; lst = H; }
    a.lse = c->with_lse ? lse : NULL;
    a.lse_stride_t = c->pad ? lst : 0;
    mla_ctx *ctx = h_cpu_ctx();
    mla_status rc = mla_prefill_fp8_fused(ctx, &a);
    EXPECT_OK(ctx, rc);

    float *go = (float *)h_alloc((size_t)T * H * 128 * 4), *gl = (float *)h_alloc((size_t)T * H * 4);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            for (int e = 0; e < 128; e++) go[(t * H + h) * 128 + e] = bf(out[t * ost + h * osh + e]);
            gl[t * H + h] = lse[t * lst + h];
        }
    EXPECT_CLOSE(go, ro, (int64_t)T * H * 128, MLA_TOL_OUT_FUSED, "out");
    if (c->with_lse) {
        mla_tol tl = {MLA_TOL_OUT_FUSED.atol, MLA_TOL_OUT_FUSED.rtol, 0};
        EXPECT_CLOSE(gl, rl, (int64_t)T * H, tl, "lse");
    }
    int64_t guard = 0;
    for (int64_t i = 0; i < T * ost + 16; i++) {
        int64_t t = i / ost, h = (i % ost) / osh, e = (i % ost) % osh;
        if (!(t < T && h < H && e < 128) && out[i] != 0x7fc1) guard++;
    }
    EXPECT(guard == 0, "%lld values written outside out", (long long)guard);
    expect_q_cache(&d, d.q, rq, d.cache, rcache);
    mla_ctx_destroy(ctx);
    h_end();
    free(d.bt); free(perm); free(d.cache); free(d.q); free(d.fc); free(d.gamma); free(d.w); free(d.ws);
    free(rq); free(rcache); free(ro); free(rl); free(out); free(lse); free(go); free(gl);
}

/* ---- golden cases ---- */

static void golden(const char *name) {
    char dir[1024];
    h_begin("golden prefill_fp8_fused/%s", name);
    if (!pn_case_dir(dir, sizeof dir, "prefill_fp8_fused", name)) { h_skip("golden directory not found"); return; }
    const char *files[] = {"q", "freqs_cis", "kv_norm_gamma", "cache", "block_table", "seq_lens", "q_offsets",
                           "kv_b_proj", "kv_b_proj_scale", "expected_out", "expected_q", "expected_cache"};
    pn_array f[12];
    int ok = 1;
    for (int i = 0; i < 12; i++) { f[i] = pn_load(dir, files[i]); ok &= f[i].data != NULL; }
    if (!ok) {
        EXPECT(0, "cannot read the case's files");
    } else {
        fdata d;
        memset(&d, 0, sizeof d);
        d.H = (int)pn_param(dir, "H", 0);
        d.T = (int)pn_param(dir, "T", 0);
        d.B = (int)pn_param(dir, "B", 0);
        d.page = (int)pn_param(dir, "page_size", 0);
        d.num_pages = (int)pn_param(dir, "num_pages", 0);
        d.page_bytes = (int64_t)pn_param(dir, "page_bytes", 0);
        d.bt_stride = (int)pn_param(dir, "bt_stride", 0);
        d.qsh = 192;
        d.qst = (int64_t)d.H * 192;
        d.bt = (int32_t *)f[4].data;
        memcpy(d.sl, f[5].data, (size_t)d.B * 4);
        memcpy(d.qo, f[6].data, (size_t)(d.B + 1) * 4);
        mla_prefill_fp8_fused_args a = {0};
        a.num_tokens = d.T;
        a.num_heads = d.H;
        a.q = (uint16_t *)f[0].data;
        a.freqs_cis = (const float *)f[1].data;
        a.max_pos = (int)pn_param(dir, "max_pos", 0);
        a.kv_norm_gamma = (const uint16_t *)f[2].data;
        a.cache = (mla_paged_cache){.base = f[3].data, .page_stride = d.page_bytes, .page_size = d.page,
                                    .num_pages = d.num_pages, .format = MLA_KV_BF16};
        a.batch = (mla_batch){.num_requests = d.B, .q_offsets = (const int32_t *)f[6].data,
                              .seq_lens = (const int32_t *)f[5].data, .block_table = d.bt, .bt_stride = d.bt_stride};
        a.kv_b_proj = (const uint8_t *)f[7].data;
        a.kv_b_proj_scale = (const float *)f[8].data;
        a.scale = pn_paramf(dir, "scale", 0);
        a.eps = pn_paramf(dir, "eps", 0);
        int64_t n = (int64_t)d.T * d.H;
        uint16_t *out = (uint16_t *)h_alloc((size_t)n * 128 * 2);
        float *go = (float *)h_alloc((size_t)n * 128 * 4), *gq = (float *)h_alloc((size_t)n * 192 * 4);
        a.out = out;
        mla_ctx *ctx = h_cpu_ctx();
        mla_status rc = mla_prefill_fp8_fused(ctx, &a);
        EXPECT_OK(ctx, rc);
        mla_cmp cm;
        char s[300];
        for (int64_t i = 0; i < n * 128; i++) go[i] = bf(out[i]);
        for (int64_t i = 0; i < n * 192; i++) gq[i] = bf(a.q[i]);
        EXPECT(f[9].n == n * 128 && f[10].n == n * 192 && f[11].n == f[3].n, "expected shapes");
        if (f[9].n == n * 128 && f[10].n == n * 192 && f[11].n == f[3].n) {
            EXPECT(mla_compare_f32(go, (const float *)f[9].data, n * 128, MLA_TOL_OUT_FUSED, &cm), "out: %s",
                   (mla_cmp_str(&cm, s, sizeof s), s));
            EXPECT(mla_compare_f32(gq, (const float *)f[10].data, n * 192, MLA_TOL_OUT, &cm), "q: %s",
                   (mla_cmp_str(&cm, s, sizeof s), s));
            int64_t qexact = 0;
            for (int64_t i = 0; i < n * 192; i++) qexact += gq[i] == ((const float *)f[10].data)[i];
            /* the expected cache as "reference" copies: new rows by the bf16 rule, the rest bit for bit */
            expect_q_cache(&d, a.q, a.q, (const uint8_t *)f[3].data, (const uint8_t *)f[11].data);
            int64_t cexact = 0, words = f[3].n / 2;
            for (int64_t i = 0; i < words; i++) cexact += ((uint16_t *)f[3].data)[i] == ((uint16_t *)f[11].data)[i];
            mla_compare_f32(go, (const float *)f[9].data, n * 128, MLA_TOL_OUT_FUSED, &cm);
            mla_cmp_str(&cm, s, sizeof s);
            double worst = 0; /* largest error as a fraction of what the tolerance allows */
            for (int64_t i = 0; i < n * 128; i++) {
                double r = ((const float *)f[9].data)[i], e = fabs(go[i] - r);
                double allowed = fmax(MLA_TOL_OUT_FUSED.atol, MLA_TOL_OUT_FUSED.rtol * fabs(r));
                if (e / allowed > worst) worst = e / allowed;
            }
            printf("     (worst error %.2f of the allowed)\n", worst);
            printf("     (out: %s; q: %lld of %lld values bit-identical; cache: %lld of %lld)\n", s, (long long)qexact,
                   (long long)(n * 192), (long long)cexact, (long long)words);
        }
        mla_ctx_destroy(ctx);
        free(out); free(go); free(gq);
    }
    for (int i = 0; i < 12; i++) free(f[i].data);
    h_end();
}

static void test_e4m3_decode(void) {
    h_begin("internal branch-free e4m3 decode equals e4m3_to_f32_ref on all 256 codes");
    int bad = 0;
    for (int c = 0; c < 256; c++) {
        float a = pf_e4m3_to_f32((uint8_t)c), r = e4m3_to_f32_ref((uint8_t)c);
        if (isnan(r) ? !isnan(a) : memcmp(&a, &r, 4) != 0) bad++;
    }
    EXPECT(bad == 0, "%d codes differ", bad);
    h_end();
}

int main(void) {
    test_e4m3_decode();
    test_rope();
    test_rmsnorm();
    test_quantize();
    test_gemm(1, 1, 128, 0);
    test_gemm(9, 200, 512, 5);
    test_gemm(300, 512, 256, 0);
    test_gemm(70, 1000, 384, 3);

    const char *goldens[] = {"h1_p16_ragged", "h2_p1", "h4_p64_prefix"};
    for (int i = 0; i < 3; i++) golden(goldens[i]);

    const fcase fixed[] = {
        {.H = 1, .B = 3, .page = 16, .ql = {3, 0, 4}, .sl = {10, 5, 4}, .scale = 0.1352338f, .eps = 1e-6f, .with_lse = 1},
        {.H = 2, .B = 2, .page = 1, .ql = {3, 2}, .sl = {3, 9}, .scale = 0.0721688f, .eps = 1e-6f, .pad = 3},
        {.H = 4, .B = 2, .page = 64, .ql = {6, 2}, .sl = {70, 2}, .scale = 0.1352338f, .eps = 1e-6f, .with_lse = 1},
        {.H = 3, .B = 1, .page = 61, .ql = {70}, .sl = {150}, .scale = 0.1352338f, .eps = 1e-5f, .pad = 1, .with_lse = 1},
        {.H = 16, .B = 2, .page = 64, .ql = {1, 20}, .sl = {33, 20}, .scale = 0.1352338f, .eps = 1e-6f, .with_lse = 1},
        /* several head chunks (32 heads each), a partial last one */
        {.H = 128, .B = 2, .page = 16, .ql = {3, 5}, .sl = {9, 5}, .scale = 0.1352338f, .eps = 1e-6f, .with_lse = 1, .pad = 2},
        {.H = 33, .B = 1, .page = 4, .ql = {7}, .sl = {12}, .scale = 0.1352338f, .eps = 1e-6f, .with_lse = 1},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) run_fused(&fixed[i], 77 + i);
    h_rng r = {4242};
    const int pages[] = {1, 2, 16, 61, 64};
    for (int it = 0; it < 6; it++) {
        fcase c;
        memset(&c, 0, sizeof c);
        c.H = h_int(&r, 1, 5);
        c.B = h_int(&r, 1, 4);
        c.page = pages[h_int(&r, 0, 4)];
        c.pad = h_int(&r, 0, 1) * h_int(&r, 1, 4);
        c.with_lse = h_int(&r, 0, 1);
        c.scale = (float)(0.05 + 0.15 * h_uniform(&r));
        c.eps = 1e-6f;
        for (int b = 0; b < c.B; b++) {
            c.ql[b] = h_int(&r, 0, 3) == 0 ? 0 : h_int(&r, 1, 60);
            c.sl[b] = c.ql[b] + (h_int(&r, 0, 1) ? h_int(&r, 0, 90) : 0);
        }
        run_fused(&c, 900 + it);
    }
    return h_finish();
}
