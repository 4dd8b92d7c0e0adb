/* The Hopper wgmma decode kernel (src/cuda/decode_hopper.cu, SPEC 4.1, MLA_KV_BF16, MLA_KV_FP8 and
 * MLA_KV_FP8_ROPE_AWARE: packed q, sigma pool; reference over e4m3 * sigma, bf16 rope * sigma)
 * against a float64 reference written here (not the CPU backend; FP8: over the dequantized cache
 * e4m3 * scale), on inputs from a seeded generator:
 *   - stage tests first: raw S = Q K^T of one tile (K-major wgmma descriptors, the cp.async
 *     swizzled loads, the accumulator layout) and raw O after P.V with P = identity (the
 *     transposed V descriptor), so a layout bug is named before the full cases fail;
 *   - full cases: H 1, 16, 64, 100, 128; q_len 1, 2 and ragged with 0; seq_len 0, 1, 63, 64, 65,
 *     1000, 4097; page 64, 128, 192 (TMA, 64-row boxes), 16, 32, 48 (TMA, 16/32-row boxes), 61,
 *     100, 17, 23, 33, 127 (gathered row by row since v63; TMA runs of rows as power-of-two boxes
 *     forced with MLA_HD_GATHER's hook) and 1, 7, 13 (gathered; the cp.async warp pairs forced);
 *     causal and not; sink (with +-inf); padded strides; an out-of-range page id (pages 64, 16, 32,
 *     100, 17); NaN in every unused slot, page and padding; automatic and
 *     forced split counts; out bf16 by MLA_TOL_OUT, lse by MLA_TOL_LSE (+inf rows identical),
 *     padding of out and lse untouched, one case run twice for identical bytes;
 *   - FP8 (656-byte rows): the same checks with the writer's power-of-two scales (the kernel's fast
 *     path), with scales that are not powers of two everywhere (its exact program) or only in two
 *     tiles of each request (the CTAs holding them take the exact program, the others not), pages
 *     64, 128, 16, 32 (TMA) and 1, 61, 100 (cp.async), NaN bytes (e4m3 NaN, NaN scales, NaN rope) in
 *     every unused slot and page; group tiles (run_f8g: 16-row TMA boxes at pages 61, 100, 120-style
 *     rules, 23, 13, 1, forced and by the default rule, with the path taken checked).
 *   - the raw-tile FP8 kernels (decode_narrow.cu), each forced on its own suite: 16 rows (run_narrow),
 *     32 and 64 rows under MLA_PRECISION_BF16_P (run_wide): pages 1, 7, 16, 32, 61, 64, 128,
 *     partial row blocks, scales not powers of two and over many binades, an out-of-range page;
 *     their tiles gathered row by row (run_narrow_gather: pages 1 and 3 by default, 64, 61, 16 forced,
 *     pages 1 and 7 kept on the bulk copies; the path taken checked);
 * No CUDA device or no SM 9.0: one SKIP line. MLA_TEST_QUICK=1: a reduced set.
 * MLA_BENCH_HOPPER=1: also times BF16 and FP8 at b=128 h=128 s_q=2 seq 4K/8K/32K, b=128 h=16 s_q=1
 * seq 16K and small batches (cudaEvents, 256 MB L2 flush between runs, median of 20): TFLOPS and
 * TB/s (1152 or 656 B/token);
 * MLA_BENCH_HOPPER=2 times without the tests; MLA_BENCH_SEL=mask picks configurations, MLA_BENCH_BATCH=b overrides their batch;
 * MLA_HD_TRACE=prefix writes one CTA's timeline per configuration (library built -DHD_TRACE);
 * MLA_BENCH_PRECISION=bf16p times MLA_PRECISION_BF16_P; MLA_BENCH_VARLEN=1 draws the seq_lens as mla bench --varlen. */
#include <limits.h>

#include "harness.h"
#include "core/numeric.h"

#ifdef MLA_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "cuda/decode_hopper.h"

static mla_ctx *g_gpu;
static int g_quick;

#define MAXB 128
#define DK 576
#define DV 512
#define BF16_NAN 0x7fc0u
#define F8_ROW 656

/* ------------------------------------------------------------------------------------------ */
/* device memory (abort on failure: a harness problem, not a case result)                       */


static uint16_t bf16_of(double v) { return mla_f32_to_bf16((float)v); }
static void *dup_bytes(const void *p, size_t n) {
    void *q = h_alloc(n);
    memcpy(q, p, n);
    return q;
}
static void fill_u16(uint16_t *p, size_t n, uint16_t v) {
    for (size_t i = 0; i < n; i++) p[i] = v;
}

/* ------------------------------------------------------------------------------------------ */
/* A case: shapes and options                                                                   */

typedef struct hcase {
    int B, qlen[MAXB], seq[MAXB];
    int H, page, causal;
    int sink_mode;           /* 0 none, 1 finite, 2 finite with sink[0] = -inf, sink[1] = +inf */
    int pad_q, pad_out, pad_lse, page_pad; /* pad_q multiple of 8, page_pad multiple of 16 */
    int bad_page;            /* one used block-table entry out of range: its keys are skipped */
    int no_lse;
    double scale;
    int nsplits, splits[4];  /* split settings to run (0 = automatic) */
    int twice;               /* run the first setting again: identical bytes */
    int fp8;                 /* 1: MLA_KV_FP8 cache */
    int scales;              /* FP8: 0 writer's powers of two; 1 amax/448 times a random factor (not powers
                                of two) everywhere; 2 like 1 in tiles [x_tile, x_tile + 1] of each request only;
                                3 like 1 with each key's values scaled by 2^u, u in -6..5 (per-key exponents);
                                4 like 1 with the keys' values times 2^20 and q's latent part times 2^-20
                                (scales ~2^17: f16 of e4m3 * scale would overflow); 5 powers of two, but in request 0
                                block 1 of every key 2^20 below the others (its values times 2^-20) and q's dims
                                128..255 times 2^20 in request 0's tokens: the 64-row kernel's one-chain program
                                would flush block 1 in f16, so its scan must send request 0 (only) to the exact one */
    int x_tile;
    int ra;                  /* 1: MLA_KV_FP8_ROPE_AWARE (640-byte rows, sigma pool, packed q + q_sigma);
                                scales 0: sigma a power of two (SPEC 3), 1: sigma = amax / 448 * (1 + u) */
    int sig_pad;             /* ra: sigma_stride_page = page + sig_pad (NaN in the padding); 0: stride 0 */
    int p1;                  /* MLA_PRECISION_BF16_P: out within TOL_BF16P_OUT, lse within SPEC 5 */
    int grow;                /* BF16 and FP8: the rope columns of the keys of tiles 3, 7 and 11 (64 keys each) times
                                2^(2 tile): their scores pass the running max by ~2^4, ~2^12 and ~2^20 in log2
                                units (the lazy max's moves; exp2 of a score overflows past the old max).
                                Scaled scores stay below ~2^25: MLA_PRECISION_BF16_P's domain is ~2^29 (tile 15,
                                2^30, broke it: hd_softmax's raw scores, session 31) */
    int narrow;              /* 16 / 32: the raw-tile kernel of that many rows (decode_narrow.cu) must take it */
    int fused;               /* 0 / 1: every run must (not) have combined its splits inside the decode grid
                                (mla_cuda_decode_hopper_last_fused); -1 (mk): either */
    int f8g;                 /* >= 0: every run must have had that many groups a page on the FP8 kernel's group
                                tiles (mla_cuda_decode_hopper_last_f8g; 0: not on them); -1 (mk): either */
    int mode;                /* >= 0: every automatic run (split count 0) must have run the balanced schedule's
                                plan in that mode (mla_cuda_decode_hopper_last_mode: 1 parts, 2 lanes); -1 (mk):
                                any */
    int gather;              /* 0 / 1: every run must (not) have gathered its BF16 tiles row by row, the _r kernels
                                (mla_cuda_decode_hopper_last_gather); -1 (mk): either */
} hcase;

/* MLA_PRECISION_BF16_P (one bf16 P term): per probability 2^-9 relative, out off by up to ~2^-9 of
 * the values' spread (the misses against SPEC 5 are printed per case: "bf16p vs SPEC 5"); lse comes
 * from the f32 row sums and keeps SPEC 5 */
/* atol: each P off by up to 2^-9 relative moves out by up to 2^-9 (max v - min v); the tests' N(0, 1)
 * values spread ~8 over a request's keys: 2^-9 * 8 = 0.0156 (8e-3 until session 31, when one element in
 * 5.2M of a 80-request case missed it by 3%: 8.3e-3) */
static const mla_tol TOL_BF16P_OUT = {1.6e-2, 2.0 / 128, 1e-4};
#define TOL_BF16P_LSE MLA_TOL_LSE

static void case_name(const hcase *c, char *buf, size_t n) {
    int k = snprintf(buf, n, "decode_hopper %s H=%d page=%d causal=%d q_len=[", c->ra ? "fp8-rope-aware" : (c->fp8 ? "fp8" : "bf16"), c->H, c->page,
                     c->causal);
    for (int i = 0; i < c->B && k > 0 && (size_t)k < n; i++) k += snprintf(buf + k, n - (size_t)k, "%s%d", i ? "," : "", c->qlen[i]);
    if (k > 0 && (size_t)k < n) k += snprintf(buf + k, n - (size_t)k, "] seq=[");
    for (int i = 0; i < c->B && k > 0 && (size_t)k < n; i++) k += snprintf(buf + k, n - (size_t)k, "%s%d", i ? "," : "", c->seq[i]);
    if (k > 0 && (size_t)k < n)
        k += snprintf(buf + k, n - (size_t)k, "]%s%s sink=%d pads=%d/%d/%d/%d bad_page=%d%s splits=", c->p1 ? " bf16p" : "",
                      c->grow ? " grow" : "", c->sink_mode, c->pad_q, c->pad_out, c->pad_lse, c->page_pad, c->bad_page, c->no_lse ? " no_lse" : "");
    for (int i = 0; i < c->nsplits && k > 0 && (size_t)k < n; i++)
        k += snprintf(buf + k, n - (size_t)k, "%s%s", i ? "," : "", c->splits[i] ? "" : "auto");
    for (int i = 0; i < c->nsplits && k > 0 && (size_t)k < n; i++)
        if (c->splits[i]) k += snprintf(buf + k, n - (size_t)k, "%d ", c->splits[i]);
    if (c->fused >= 0 && k > 0 && (size_t)k < n) k += snprintf(buf + k, n - (size_t)k, " fused=%d", c->fused);
    if ((c->fp8 || c->ra) && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, " scales=%s", c->scales == 0 ? "pow2" : (c->scales == 1 ? "any" : (c->scales == 2 ? "mixed" : (c->scales == 3 ? "per-key" : (c->scales == 4 ? "2^17" : "req0-2^-20")))));
}

/* The host side of a case: every input in host memory plus its float copy for the reference. */
typedef struct hdata {
    int T;
    int32_t q_off[MAXB + 1];
    int64_t q_sh, q_st, o_sh, o_st, lse_st, page_stride, bt_stride;
    int num_pages;
    uint16_t *q;             /* [T, q_st] (ra: bytes, q_st / q_sh in bytes) */
    size_t q_bytes;
    float *qsig;             /* ra: [T] */
    float *sig;              /* ra: [num_pages, sig_st] (NaN where unused) */
    int64_t sig_st;
    float *qf;               /* [T, H, 576] */
    uint8_t *pool;           /* [num_pages, page_stride] */
    float *kvf;              /* [num_pages, page, 576] (NaN where unused) */
    int32_t *bt;             /* [B, bt_stride] */
    float *sink;             /* [H] or NULL */
} hdata;

/* hcase.grow: key j's rope columns times 2^(2 tile) in tiles 3, 7 and 11, else 1 */
static double grow_factor(const hcase *c, int j) {
    const int t = j / 64;
    return c->grow && t % 4 == 3 && t <= 11 ? ldexp(1.0, 2 * t) : 1.0;
}

/* One MLA_KV_FP8 row of token j (656 B at row) and its dequantized values (rf[576]): latent
 * quantized per 128-column tile as SPEC 3 (scale = pow2_scale(amax), e = e4m3(x / scale)) or, for
 * the other scale modes, with scale = amax / 448 * (1 + u), u random in [0, 1) (not a power of
 * two); rope bf16. Value = e4m3 * scale. */
static void make_fp8_row(h_rng *r, const hcase *c, int b, int j, uint8_t *row, float *rf) {
    const int any = c->scales == 1 || c->scales == 3 || c->scales == 4 || (c->scales == 2 && j / 64 >= c->x_tile && j / 64 <= c->x_tile + 1);
    const double kmag = c->scales == 3 ? ldexp(1.0, h_int(r, -6, 5)) : (c->scales == 4 ? ldexp(1.0, 20) : 1.0);
    for (int t = 0; t < 4; t++) {
        float x[128], amax = 0.f;
        const double mag = (0.25 + 2.0 * h_uniform(r)) * kmag * (c->scales == 5 && b == 0 && t == 1 ? ldexp(1.0, -20) : 1.0);
        for (int i = 0; i < 128; i++) {
            x[i] = (float)(h_normal(r) * mag);
            if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
        }
        const float s = any ? amax / 448.0f * (float)(1.0 + h_uniform(r)) : pow2_scale_ref(amax);
        memcpy(row + 512 + 4 * t, &s, 4);
        for (int i = 0; i < 128; i++) {
            const uint8_t e = f32_to_e4m3_ref(x[i] / s);
            row[128 * t + i] = e;
            rf[128 * t + i] = (float)((double)e4m3_to_f32_ref(e) * (double)s);
        }
    }
    const double g = grow_factor(c, j);
    for (int x = 0; x < 64; x++) {
        const uint16_t v = bf16_of(h_normal(r) * (c->scales == 4 ? ldexp(1.0, 20) : 1.0) * g);
        memcpy(row + 528 + 2 * x, &v, 2);
        rf[512 + x] = mla_bf16_to_f32(v);
    }
}

#define RA_ROW 640
/* One MLA_KV_FP8_ROPE_AWARE row of token j (640 B at row), its sigma and dequantized values rf[576]:
 * sigma over all 512 latent dims (SPEC 3, or amax / 448 * (1 + u) for scales 1), latent e4m3(x / sigma),
 * rope bf16(rope / sigma); values e4m3 * sigma and bf16 * sigma. */
static float make_ra_row(h_rng *r, const hcase *c, uint8_t *row, float *rf) {
    float x[512], amax = 0.f;
    const double mag = 0.25 + 2.0 * h_uniform(r);
    for (int i = 0; i < 512; i++) {
        x[i] = (float)(h_normal(r) * mag * (i < 128 ? 2.0 : 1.0));
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
    }
    const float s = c->scales ? amax / 448.0f * (float)(1.0 + h_uniform(r)) : pow2_scale_ref(amax);
    for (int i = 0; i < 512; i++) {
        const uint8_t e = f32_to_e4m3_ref(x[i] / s);
        row[i] = e;
        rf[i] = (float)((double)e4m3_to_f32_ref(e) * (double)s);
    }
    for (int i = 0; i < 64; i++) {
        const uint16_t v = bf16_of(h_normal(r) / s);
        memcpy(row + 512 + 2 * i, &v, 2);
        rf[512 + i] = (float)((double)mla_bf16_to_f32(v) * (double)s);
    }
    return s;
}

static void make_data(h_rng *r, const hcase *c, hdata *d) {
    memset(d, 0, sizeof *d);
    const int H = c->H, P = c->page;
    d->q_off[0] = 0;
    for (int b = 0; b < c->B; b++) d->q_off[b + 1] = d->q_off[b] + c->qlen[b];
    d->T = d->q_off[c->B];
    d->q_sh = DK + c->pad_q;
    d->q_st = (int64_t)H * d->q_sh + (c->pad_q ? 8 : 0);
    d->o_sh = DV + c->pad_out;
    d->o_st = (int64_t)H * d->o_sh + (c->pad_out ? (c->pad_out % 8 ? 2 : 8) : 0); /* pad_out % 8 == 0: TMA-aligned */
    d->lse_st = H + c->pad_lse;
    const int T1 = d->T ? d->T : 1;
    d->q_bytes = sizeof(uint16_t) * (size_t)T1 * (size_t)d->q_st;
    if (c->ra) { /* packed q in bytes: 640 per head (+ 2 pad_q), per token + 16 when padded */
        d->q_sh = RA_ROW + 2 * c->pad_q;
        d->q_st = (int64_t)H * d->q_sh + (c->pad_q ? 16 : 0);
        d->q_bytes = (size_t)T1 * (size_t)d->q_st;
    }
    d->q = (uint16_t *)h_alloc(d->q_bytes);
    fill_u16(d->q, d->q_bytes / 2, BF16_NAN);
    d->qf = (float *)h_alloc(sizeof(float) * (size_t)T1 * H * DK);
    if (c->ra) { /* q_sigma over all heads' latent parts of the token (power of two, or any for scales 1) */
        d->qsig = (float *)h_alloc(sizeof(float) * (size_t)T1);
        float *x = (float *)h_alloc(sizeof(float) * (size_t)H * DK);
        for (int t = 0; t < d->T; t++) {
            float amax = 0.f;
            for (int i = 0; i < H * DK; i++) {
                x[i] = (float)h_normal(r);
                if (i % DK < 512 && fabsf(x[i]) > amax) amax = fabsf(x[i]);
            }
            const float qs = c->scales ? amax / 448.0f * (float)(1.0 + h_uniform(r)) : pow2_scale_ref(amax);
            d->qsig[t] = qs;
            for (int h = 0; h < H; h++) {
                uint8_t *qr = (uint8_t *)d->q + t * d->q_st + h * d->q_sh;
                float *qf = d->qf + ((int64_t)t * H + h) * DK;
                for (int k = 0; k < 512; k++) {
                    qr[k] = f32_to_e4m3_ref(x[h * DK + k] / qs);
                    qf[k] = (float)((double)e4m3_to_f32_ref(qr[k]) * (double)qs);
                }
                for (int k = 0; k < 64; k++) {
                    const uint16_t v = bf16_of(x[h * DK + 512 + k] / qs);
                    memcpy(qr + 512 + 2 * k, &v, 2);
                    qf[512 + k] = (float)((double)mla_bf16_to_f32(v) * (double)qs);
                }
            }
        }
        free(x);
    }
    for (int t = 0; t < d->T && !c->ra; t++)
        for (int h = 0; h < H; h++)
            for (int k = 0; k < DK; k++) {
                uint16_t v = bf16_of(h_normal(r) * (c->scales == 4 ? ldexp(1.0, -20) : 1.0) *
                                     (c->scales == 5 && t < d->q_off[1] && k >= 128 && k < 256 ? ldexp(1.0, 20) : 1.0));
                d->q[t * d->q_st + h * d->q_sh + k] = v;
                d->qf[((int64_t)t * H + h) * DK + k] = mla_bf16_to_f32(v);
            }
    /* pages: each request's pages are a random permutation of the pool, plus 2 unused pages */
    int np[MAXB], used = 0, maxp = 1;
    for (int b = 0; b < c->B; b++) {
        np[b] = (c->seq[b] + P - 1) / P;
        used += np[b];
        if (np[b] > maxp) maxp = np[b];
    }
    d->num_pages = used + 2;
    d->bt_stride = maxp + 1;
    int32_t *perm = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)d->num_pages);
    for (int i = 0; i < d->num_pages; i++) perm[i] = i;
    for (int i = d->num_pages - 1; i > 0; i--) {
        int j = h_int(r, 0, i);
        int32_t x = perm[i]; perm[i] = perm[j]; perm[j] = x;
    }
    d->bt = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)(c->B * d->bt_stride));
    int k = 0;
    for (int b = 0; b < c->B; b++)
        for (int64_t p = 0; p < d->bt_stride; p++)
            d->bt[b * d->bt_stride + p] = p < np[b] ? perm[k++] : (int32_t)(INT32_MAX - p); /* never read */
    free(perm);
    if (c->bad_page) { /* the longest request gets one page id outside [0, num_pages) */
        int bb = 0;
        for (int b = 1; b < c->B; b++) if (np[b] > np[bb]) bb = b;
        if (np[bb] > 0) d->bt[bb * d->bt_stride + np[bb] / 2] = (np[bb] & 1) ? -1 : d->num_pages + 5;
    }
    const int rowb = c->ra ? RA_ROW : (c->fp8 ? F8_ROW : 1152);
    d->page_stride = (int64_t)P * rowb + c->page_pad;
    const size_t pool_n = (size_t)d->num_pages * (size_t)d->page_stride;
    d->pool = (uint8_t *)h_alloc(pool_n);
    if (c->ra) { /* sigma pool: NaN everywhere but the keys' entries */
        d->sig_st = P + c->sig_pad;
        d->sig = (float *)h_alloc(sizeof(float) * (size_t)d->num_pages * (size_t)d->sig_st);
        for (int64_t i = 0; i < (int64_t)d->num_pages * d->sig_st; i++) d->sig[i] = NAN;
    }
    if (c->fp8 || c->ra) memset(d->pool, 0xff, pool_n); /* e4m3 NaN, f32 NaN scales, bf16 NaN rope */
    else fill_u16((uint16_t *)d->pool, pool_n / 2, BF16_NAN);
    const size_t kvf_n = (size_t)d->num_pages * P * DK;
    d->kvf = (float *)h_alloc(sizeof(float) * kvf_n);
    for (size_t i = 0; i < kvf_n; i++) d->kvf[i] = NAN;
    for (int b = 0; b < c->B; b++)
        for (int j = 0; j < c->seq[b]; j++) {
            int32_t pg = d->bt[b * d->bt_stride + j / P];
            if (pg < 0 || pg >= d->num_pages) continue;
            uint8_t *rowp = d->pool + (int64_t)pg * d->page_stride + (int64_t)(j % P) * rowb;
            float *rf = d->kvf + ((int64_t)pg * P + j % P) * DK;
            if (c->ra) {
                d->sig[(int64_t)pg * d->sig_st + j % P] = make_ra_row(r, c, rowp, rf);
                continue;
            }
            if (c->fp8) {
                make_fp8_row(r, c, b, j, rowp, rf);
                continue;
            }
            uint16_t *row = (uint16_t *)rowp;
            const double g = grow_factor(c, j);
            for (int x = 0; x < DK; x++) {
                row[x] = bf16_of(h_normal(r) * (x >= 512 ? g : 1.0));
                rf[x] = mla_bf16_to_f32(row[x]);
            }
        }
    if (c->sink_mode) {
        d->sink = (float *)h_alloc(sizeof(float) * (size_t)H);
        for (int h = 0; h < H; h++) d->sink[h] = (float)(h_normal(r) * 2.0);
        if (c->sink_mode == 2) {
            d->sink[0] = -INFINITY;
            if (H > 1) d->sink[1] = INFINITY;
        }
    }
}

static void free_data(hdata *d) {
    free(d->qsig); free(d->sig);
    free(d->q); free(d->qf); free(d->pool); free(d->kvf); free(d->bt); free(d->sink);
}

/* float64 reference: out [T, H, 512], lse [T, H] (SPEC 4.1 and the shared output rules) */
static void reference(const hcase *c, const hdata *d, double *out, double *lse) {
    const int H = c->H, P = c->page;
    const int64_t nrow = (int64_t)d->T * H;
#pragma omp parallel for schedule(dynamic, 4)
    for (int64_t row = 0; row < nrow; row++) {
        const int t = (int)(row / H), h = (int)(row % H);
        int b = 0;
        while (!(d->q_off[b] <= t && t < d->q_off[b + 1])) b++;
        const int qlen = c->qlen[b], seq = c->seq[b], i = t - d->q_off[b];
        const int64_t pos = (int64_t)seq - qlen + i;
        const float *qr = d->qf + row * DK;
        double *sc = (double *)malloc(sizeof(double) * (size_t)(seq > 0 ? seq : 1));
        const float **kr = (const float **)malloc(sizeof(float *) * (size_t)(seq > 0 ? seq : 1));
        double m = -INFINITY;
        int any = 0;
        for (int j = 0; j < seq; j++) {
            sc[j] = -INFINITY;
            kr[j] = NULL;
            if (c->causal && j > pos) continue;
            int32_t pg = d->bt[b * d->bt_stride + j / P];
            if (pg < 0 || pg >= d->num_pages) continue;
            const float *k = d->kvf + ((int64_t)pg * P + j % P) * DK;
            double s = 0;
            for (int x = 0; x < DK; x++) s += (double)qr[x] * (double)k[x];
            sc[j] = c->scale * s;
            kr[j] = k;
            if (sc[j] > m) m = sc[j];
            any = 1;
        }
        double *o = out + row * DV;
        for (int x = 0; x < DV; x++) o[x] = 0;
        if (!any) {
            lse[row] = INFINITY;
        } else {
            double l = 0;
            for (int j = 0; j < seq; j++) {
                if (!kr[j]) continue;
                double p = exp(sc[j] - m);
                l += p;
                for (int x = 0; x < DV; x++) o[x] += p * (double)kr[j][x];
            }
            lse[row] = m + log(l);
            double f = 1.0 / l;
            if (d->sink) f *= 1.0 / (1.0 + exp((double)d->sink[h] - lse[row]));
            for (int x = 0; x < DV; x++) o[x] *= f;
        }
        free(sc);
        free(kr);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Full cases                                                                                   */

static void run_case(h_rng *r, const hcase *c) {
    char name[400];
    case_name(c, name, sizeof name);
    h_begin("%s", name);
    hdata d;
    make_data(r, c, &d);
    const int H = c->H, T = d.T;
    const int64_t TH = (int64_t)T * H;
    double *out_ref = (double *)h_alloc(sizeof(double) * (size_t)(TH ? TH : 1) * DV);
    double *lse_ref = (double *)h_alloc(sizeof(double) * (size_t)(TH ? TH : 1));
    reference(c, &d, out_ref, lse_ref);

    const int T1 = T ? T : 1;
    const size_t out_n = (size_t)T1 * (size_t)d.o_st, lse_n = (size_t)T1 * (size_t)d.lse_st;
    void *d_q = h_dev_put(g_gpu, d.q, d.q_bytes);
    void *d_qsig = c->ra ? h_dev_put(g_gpu, d.qsig, sizeof(float) * (size_t)T1) : NULL;
    void *d_sig = c->ra ? h_dev_put(g_gpu, d.sig, sizeof(float) * (size_t)d.num_pages * (size_t)d.sig_st) : NULL;
    void *d_pool = h_dev_put(g_gpu, d.pool, (size_t)d.num_pages * (size_t)d.page_stride);
    void *d_bt = h_dev_put(g_gpu, d.bt, sizeof(int32_t) * (size_t)(c->B * d.bt_stride));
    void *d_qoff = h_dev_put(g_gpu, d.q_off, sizeof(int32_t) * (size_t)(c->B + 1));
    int32_t seq32[MAXB];
    for (int b = 0; b < c->B; b++) seq32[b] = c->seq[b];
    void *d_seq = h_dev_put(g_gpu, seq32, sizeof(int32_t) * (size_t)c->B);
    void *d_sink = d.sink ? h_dev_put(g_gpu, d.sink, sizeof(float) * (size_t)H) : NULL;
    uint16_t *out_poison = (uint16_t *)h_alloc(sizeof(uint16_t) * out_n);
    fill_u16(out_poison, out_n, 0xffffu);
    float *lse_poison = (float *)h_alloc(sizeof(float) * lse_n);
    for (size_t i = 0; i < lse_n; i++) lse_poison[i] = -12345.0f;
    void *d_out = h_dev_put(g_gpu, NULL, sizeof(uint16_t) * out_n);
    void *d_lse = h_dev_put(g_gpu, NULL, sizeof(float) * lse_n);
    uint16_t *out_h = (uint16_t *)h_alloc(sizeof(uint16_t) * out_n), *out_first = NULL;
    float *lse_h = (float *)h_alloc(sizeof(float) * lse_n);
    float *out_f = (float *)h_alloc(sizeof(float) * (size_t)(TH ? TH : 1) * DV);
    float *lse_f = (float *)h_alloc(sizeof(float) * (size_t)(TH ? TH : 1));

    mla_decode_args a;
    memset(&a, 0, sizeof a);
    a.num_tokens = T;
    a.num_heads = H;
    a.q = d_q;
    a.q_stride_t = c->pad_q ? d.q_st : 0;
    a.q_stride_h = c->pad_q ? d.q_sh : 0;
    a.cache.base = d_pool;
    a.cache.page_stride = d.page_stride;
    a.cache.page_size = c->page;
    a.cache.num_pages = d.num_pages;
    a.cache.format = c->ra ? MLA_KV_FP8_ROPE_AWARE : (c->fp8 ? MLA_KV_FP8 : MLA_KV_BF16);
    if (c->ra) {
        a.q_sigma = (const float *)d_qsig;
        a.cache.sigma = (float *)d_sig;
        a.cache.sigma_stride_page = c->sig_pad ? d.sig_st : 0;
    }
    a.batch.num_requests = c->B;
    a.batch.q_offsets = (const int32_t *)d_qoff;
    a.batch.seq_lens = (const int32_t *)d_seq;
    a.batch.block_table = (const int32_t *)d_bt;
    a.batch.bt_stride = d.bt_stride;
    a.causal = c->causal;
    a.scale = (float)c->scale;
    a.sink = (const float *)d_sink;
    a.out = (uint16_t *)d_out;
    a.out_stride_t = c->pad_out ? d.o_st : 0;
    a.out_stride_h = c->pad_out ? d.o_sh : 0;
    a.lse = c->no_lse ? NULL : (float *)d_lse;
    a.lse_stride_t = c->pad_lse ? d.lse_st : 0;
    a.precision = c->p1 ? MLA_PRECISION_BF16_P : MLA_PRECISION_SPEC;

    char why[200];
    if (!mla_cuda_decode_hopper_supported(g_gpu, &a, why, sizeof why)) EXPECT(0, "unsupported: %s", why);
    const char *ne = getenv("MLA_HD_NARROW");
    if (c->narrow && !ne) EXPECT(mla_cuda_decode_hopper_narrow(&a) == c->narrow, "the %d-row kernel does not take it (%d)", c->narrow,
                                 mla_cuda_decode_hopper_narrow(&a));
    const int runs = c->nsplits + (c->twice ? 1 : 0);
    for (int run = 0; run < runs && !h_case_bad; run++) {
        const int ns = run < c->nsplits ? c->splits[run] : c->splits[0];
        const size_t ws = mla_cuda_decode_hopper_workspace_ex(g_gpu, &a, ns);
        void *d_ws = ws ? h_dev_put(g_gpu, NULL, ws) : NULL;
        if (ws) mla_memset(g_gpu, d_ws, 0xff, ws); /* NaN: a read of an unwritten partial shows */
        a.workspace = d_ws;
        a.workspace_bytes = ws;
        if (ws >= 16) { /* one byte short must be refused, naming workspace_bytes */
            a.workspace_bytes = ws - 1;
            mla_status rc = mla_cuda_decode_hopper_ex(g_gpu, &a, ns);
            EXPECT(rc == MLA_ERR_INVALID_ARG && strstr(mla_ctx_last_error(g_gpu), "workspace_bytes"),
                   "short workspace: status %s (%s)", mla_status_str(rc), mla_ctx_last_error(g_gpu));
            a.workspace_bytes = ws;
        }
        mla_memcpy_to_backend(g_gpu, d_out, out_poison, sizeof(uint16_t) * out_n);
        mla_memcpy_to_backend(g_gpu, d_lse, lse_poison, sizeof(float) * lse_n);
        mla_status rc = mla_cuda_decode_hopper_ex(g_gpu, &a, ns);
        EXPECT_OK(g_gpu, rc);
        if (c->fused >= 0)
            EXPECT(mla_cuda_decode_hopper_last_fused() == c->fused, "splits=%d: combined inside the grid %d, expected %d", ns,
                   mla_cuda_decode_hopper_last_fused(), c->fused);
        if (c->gather >= 0)
            EXPECT(mla_cuda_decode_hopper_last_gather() == c->gather, "splits=%d: tiles gathered row by row %d, expected %d", ns,
                   mla_cuda_decode_hopper_last_gather(), c->gather);
        if (c->f8g >= 0)
            EXPECT(mla_cuda_decode_hopper_last_f8g() == c->f8g, "splits=%d: group tiles of %d groups a page, expected %d", ns,
                   mla_cuda_decode_hopper_last_f8g(), c->f8g);
        mla_status rs = mla_synchronize(g_gpu);
        EXPECT_OK(g_gpu, rs);
        if (c->mode >= 0 && ns == 0)
            EXPECT(mla_cuda_decode_hopper_last_mode() == c->mode, "automatic run: plan mode %d, expected %d",
                   mla_cuda_decode_hopper_last_mode(), c->mode);
        if (d_ws) mla_free(g_gpu, d_ws);
        if (rc != MLA_OK || rs != MLA_OK) break;
        h_dev_get(g_gpu, out_h, d_out, sizeof(uint16_t) * out_n);
        h_dev_get(g_gpu, lse_h, d_lse, sizeof(float) * lse_n);
        const int used_splits = ns ? ns : mla_cuda_decode_hopper_splits(g_gpu, &a);

        if (run == c->nsplits) { /* the repeat: bit-identical */
            EXPECT(memcmp(out_h, out_first, sizeof(uint16_t) * out_n) == 0, "second run (splits=%d) differs from the first",
                   used_splits);
            break;
        }
        if (run == 0 && c->twice) out_first = (uint16_t *)dup_bytes(out_h, sizeof(uint16_t) * out_n);

        /* padding untouched, data gathered densely */
        int64_t pad_bad = -1, lse_pad_bad = -1;
        for (int t = 0; t < T; t++) {
            for (int64_t x = 0; x < d.o_st; x++) {
                const int64_t h = x / d.o_sh, k = x % d.o_sh;
                if (h < H && k < DV) out_f[((int64_t)t * H + h) * DV + k] = mla_bf16_to_f32(out_h[t * d.o_st + x]);
                else if (out_h[t * d.o_st + x] != 0xffffu && pad_bad < 0) pad_bad = t * d.o_st + x;
            }
            for (int64_t x = 0; x < d.lse_st; x++) {
                if (x < H) lse_f[(int64_t)t * H + x] = lse_h[t * d.lse_st + x];
                else if (lse_h[t * d.lse_st + x] != -12345.0f && lse_pad_bad < 0) lse_pad_bad = t * d.lse_st + x;
            }
        }
        EXPECT(pad_bad < 0, "splits=%d: out padding written at element %lld", used_splits, (long long)pad_bad);
        EXPECT(lse_pad_bad < 0, "splits=%d: lse padding written at element %lld", used_splits, (long long)lse_pad_bad);
        mla_cmp cm;
        char s[320];
        mla_tol tol_out = c->p1 ? TOL_BF16P_OUT : MLA_TOL_OUT;
        const mla_tol tol_lse = c->p1 ? TOL_BF16P_LSE : MLA_TOL_LSE;
        /* SPEC 5's atol is for values of unit scale: these are up to 2^5 (per-key) or 2^20 times that */
        if (c->scales == 3) tol_out.atol *= 32.0;
        if (c->scales == 4) tol_out.atol *= 1048576.0;
        if (TH && c->p1) { /* the error this mode makes against SPEC 5, for the docs */
            mla_cmp co, cl;
            mla_compare(out_f, out_ref, TH * DV, MLA_TOL_OUT, &co);
            mla_compare(lse_f, lse_ref, TH, MLA_TOL_LSE, &cl);
            double worst = 0; /* the largest |a - r| past SPEC 5's bound, and its |r| */
            double worst_r = 0;
            for (int64_t i = 0; i < TH * DV; i++) {
                const double e = fabs(out_f[i] - out_ref[i]), bound = fmax(1e-3, 2.0 / 128 * fabs(out_ref[i]));
                if (isfinite(e) && e > bound && e > worst) { worst = e; worst_r = out_ref[i]; }
            }
            printf("  bf16p vs SPEC 5 (splits=%d): out %lld of %lld elements past it (worst |err| %.2e at r=%.3f), cos %.1e;"
                   " lse %lld past it (max_abs %.2e)\n", used_splits, (long long)co.nbad, (long long)co.n, worst, worst_r,
                   co.cos_dist, (long long)cl.nbad, cl.max_abs);
        }
        if (TH && !mla_compare(out_f, out_ref, TH * DV, tol_out, &cm)) {
            mla_cmp_str(&cm, s, sizeof s);
            const int64_t fb = cm.first_bad >= 0 ? cm.first_bad : 0;
            EXPECT(0, "splits=%d out: %s (t=%lld h=%lld d=%lld)", used_splits, s, (long long)(fb / DV / H),
                   (long long)(fb / DV % H), (long long)(fb % DV));
        }
        if (TH && !c->no_lse && !mla_compare(lse_f, lse_ref, TH, tol_lse, &cm)) {
            mla_cmp_str(&cm, s, sizeof s);
            const int64_t fb = cm.first_bad >= 0 ? cm.first_bad : 0;
            EXPECT(0, "splits=%d lse: %s (t=%lld h=%lld)", used_splits, s, (long long)(fb / H), (long long)(fb % H));
        }
        if (c->no_lse) {
            int untouched = 1;
            for (size_t i = 0; i < lse_n; i++) untouched &= lse_h[i] == -12345.0f;
            EXPECT(untouched, "splits=%d: lse written although NULL", used_splits);
        }
    }
    h_end();

    free(out_first);
    mla_free(g_gpu, d_q); mla_free(g_gpu, d_pool); mla_free(g_gpu, d_bt); mla_free(g_gpu, d_qoff);
    mla_free(g_gpu, d_seq); mla_free(g_gpu, d_sink); mla_free(g_gpu, d_out); mla_free(g_gpu, d_lse);
    mla_free(g_gpu, d_qsig); mla_free(g_gpu, d_sig);
    free(out_poison); free(lse_poison); free(out_h); free(lse_h); free(out_f); free(lse_f);
    free(out_ref); free(lse_ref);
    free_data(&d);
}

/* ------------------------------------------------------------------------------------------ */
/* Stage test: one CTA, one tile, raw S and O = identity . V (see decode_hopper.h)              */

static void print_corner(const char *what, const float *g, const double *ref, int ld) {
    printf("  %s, rows 0..3, cols 0..7 (gpu | ref):\n", what);
    for (int i = 0; i < 4; i++) {
        printf("   ");
        for (int j = 0; j < 8; j++) printf(" %8.3f", g[i * ld + j]);
        printf("  |");
        for (int j = 0; j < 8; j++) printf(" %8.3f", ref[i * ld + j]);
        printf("\n");
    }
}

static void stage_test(h_rng *r, int H, int qlen, int seq, int fp8, int scales) {
    hcase c;
    memset(&c, 0, sizeof c);
    c.B = 1; c.qlen[0] = qlen; c.seq[0] = seq; c.H = H; c.page = 64; c.scale = 0.1;
    c.fp8 = fp8; c.scales = scales;
    h_begin("decode_hopper stage: S = Q K^T and O = I.V of one tile (%s%s H=%d q_len=%d seq=%d)", fp8 ? "fp8" : "bf16",
            fp8 ? (scales ? " scales=any" : " scales=pow2") : "", H, qlen, seq);
    hdata d;
    make_data(r, &c, &d);
    const int nq = qlen * H < 64 ? qlen * H : 64;
    double *s_ref = (double *)h_alloc(sizeof(double) * 64 * 64);
    double *o_ref = (double *)h_alloc(sizeof(double) * 64 * DV);
    for (int rr = 0; rr < 64; rr++) {
        for (int j = 0; j < 64; j++) {
            double s = 0;
            if (rr < nq && j < seq) {
                const float *qr = d.qf + (int64_t)rr * DK; /* row rr = (token rr / H, head rr % H) */
                const int32_t pg = d.bt[j / 64];
                const float *k = d.kvf + ((int64_t)pg * 64 + j % 64) * DK;
                for (int x = 0; x < DK; x++) s += (double)qr[x] * (double)k[x];
            }
            s_ref[rr * 64 + j] = s;
        }
        for (int x = 0; x < DV; x++)
            o_ref[rr * DV + x] = rr < seq ? (double)d.kvf[((int64_t)d.bt[0] * 64 + rr) * DK + x] : 0.0;
    }
    void *d_q = h_dev_put(g_gpu, d.q, sizeof(uint16_t) * (size_t)d.T * (size_t)d.q_st);
    void *d_pool = h_dev_put(g_gpu, d.pool, (size_t)d.num_pages * (size_t)d.page_stride);
    void *d_bt = h_dev_put(g_gpu, d.bt, sizeof(int32_t) * (size_t)d.bt_stride);
    void *d_qoff = h_dev_put(g_gpu, d.q_off, sizeof(int32_t) * 2);
    int32_t seq32 = seq;
    void *d_seq = h_dev_put(g_gpu, &seq32, sizeof(int32_t));
    void *d_out = h_dev_put(g_gpu, NULL, sizeof(uint16_t) * (size_t)d.T * (size_t)d.o_st);
    const size_t dbg_n = 64 * 64 + 64 * DV;
    float *d_dbg = (float *)h_dev_put(g_gpu, NULL, sizeof(float) * dbg_n);
    mla_memset(g_gpu, d_dbg, 0xff, sizeof(float) * dbg_n);
    mla_decode_args a;
    memset(&a, 0, sizeof a);
    a.num_tokens = d.T; a.num_heads = H; a.q = d_q;
    a.cache.base = d_pool; a.cache.page_stride = d.page_stride; a.cache.page_size = 64;
    a.cache.num_pages = d.num_pages; a.cache.format = fp8 ? MLA_KV_FP8 : MLA_KV_BF16;
    a.batch.num_requests = 1; a.batch.q_offsets = (const int32_t *)d_qoff; a.batch.seq_lens = (const int32_t *)d_seq;
    a.batch.block_table = (const int32_t *)d_bt; a.batch.bt_stride = d.bt_stride;
    a.scale = 0.1f; a.out = (uint16_t *)d_out;
    mla_status rc = mla_cuda_decode_hopper_stage(g_gpu, &a, d_dbg);
    EXPECT_OK(g_gpu, rc);
    mla_status rs = mla_synchronize(g_gpu);
    EXPECT_OK(g_gpu, rs);
    if (rc == MLA_OK && rs == MLA_OK) {
        float *g = (float *)h_alloc(sizeof(float) * dbg_n);
        h_dev_get(g_gpu, g, d_dbg, sizeof(float) * dbg_n);
        /* raw S of keys past seq_len is unspecified (the TMA path copies whatever the page holds
         * there; those keys are masked before the softmax): compare keys < seq_len only */
        for (int rr = 0; rr < 64; rr++)
            for (int j = seq; j < 64; j++) g[rr * 64 + j] = 0.0f;
        /* O exact, except with scales that are not powers of two (the exact program's P = 1 * scale
         * as two bf16 terms: 2^-17 relative) */
        const mla_tol tol_s = {1e-2, 1e-3, 1e-6}, tol_o = {fp8 && scales ? 1e-5 : 0, fp8 && scales ? 1e-5 : 0, 0};
        mla_cmp cm;
        char s[320];
        if (!mla_compare(g, s_ref, 64 * 64, tol_s, &cm)) {
            mla_cmp_str(&cm, s, sizeof s);
            EXPECT(0, "S (K-major descriptors / swizzled loads / accumulator layout): %s (row %lld key %lld)", s,
                   (long long)(cm.first_bad >= 0 ? cm.first_bad / 64 : -1), (long long)(cm.first_bad >= 0 ? cm.first_bad % 64 : -1));
            print_corner("S", g, s_ref, 64);
        }
        if (!mla_compare(g + 4096, o_ref, 64 * DV, tol_o, &cm)) {
            mla_cmp_str(&cm, s, sizeof s);
            EXPECT(0, "O = I.V (transposed V descriptor / P tile): %s (row %lld col %lld)", s,
                   (long long)(cm.first_bad >= 0 ? cm.first_bad / DV : -1), (long long)(cm.first_bad >= 0 ? cm.first_bad % DV : -1));
            print_corner("O", g + 4096, o_ref, DV);
        }
        free(g);
    }
    h_end();
    mla_free(g_gpu, d_q); mla_free(g_gpu, d_pool); mla_free(g_gpu, d_bt); mla_free(g_gpu, d_qoff);
    mla_free(g_gpu, d_seq); mla_free(g_gpu, d_out); mla_free(g_gpu, d_dbg);
    free(s_ref); free(o_ref);
    free_data(&d);
}

/* ------------------------------------------------------------------------------------------ */
/* Case list                                                                                    */

static hcase mk(int H, int page, int causal, int B, const int *qlen, const int *seq) {
    hcase c;
    memset(&c, 0, sizeof c);
    c.H = H; c.page = page; c.causal = causal; c.B = B;
    for (int b = 0; b < B; b++) { c.qlen[b] = qlen[b]; c.seq[b] = seq[b]; }
    c.scale = 0.1352338;
    c.nsplits = 1;
    c.splits[0] = 0;
    c.fused = -1;
    c.f8g = -1;
    c.mode = -1;
    c.gather = -1;
    return c;
}

/* case k of an H x seq_len sweep (FP8, rope-aware): two requests, the first of seq_len S with
 * q_len 1 or 2, the second of S / 2 + 1 with q_len 1 or 0; causal except every fourth */
static hcase mk_sweep(int H, int S, int k, int page) {
    const int sq = 1 + (k & 1);
    int q[2], s[2];
    s[0] = S;
    q[0] = sq < S ? sq : S;
    q[1] = (k % 3 == 1) ? 0 : 1;
    s[1] = S / 2 + 1;
    return mk(H, page, (k % 4) != 3, 2, q, s);
}

static void run_fp8(h_rng *r) {
    /* sweep with the writer's power-of-two scales: H x seq_len, pages rotating over TMA (64, 128,
     * 16, 32) and cp.async (61) */
    static const int Hs[4] = {1, 16, 64, 128};
    static const int Ss[5] = {1, 63, 65, 1000, 4097};
    static const int Ps[5] = {64, 61, 128, 16, 32};
    int k = 0;
    for (int hi = 0; hi < 4; hi++)
        for (int si = 0; si < 5; si++, k++) {
            const int H = Hs[hi], S = Ss[si];
            if (g_quick && !((H == 16 && S == 65) || (H == 128 && S == 1000))) continue;
            hcase c = mk_sweep(H, S, k, Ps[k % 5]);
            c.fp8 = 1;
            c.sink_mode = (k % 3 == 0);
            c.splits[0] = (k % 5 == 4) ? 1 : 0;
            run_case(r, &c);
        }
    { /* scales not powers of two everywhere: the exact program from the first tile (TMA, cp.async) */
        const int q[2] = {2, 1}, s[2] = {1000, 130};
        hcase c = mk(16, 64, 1, 2, q, s);
        c.fp8 = 1; c.scales = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        c.H = 128; c.page = 61;
        if (!g_quick) run_case(r, &c);
    }
    { /* mixed (unsplit first): tiles x_tile, x_tile + 1 of each request (request 0: 13 tiles,
       * request 1: 8) have scales that are not powers of two: tiles 5, 6; 6, 7; and the unpaired
       * last tile 12 of request 0 only (request 1 stays on the seesaw). The split runs put the
       * other tiles in CTAs of their own. */
        const int q[2] = {2, 1}, s[2] = {800, 500};
        hcase c = mk(128, 64, 1, 2, q, s);
        c.fp8 = 1; c.scales = 2; c.x_tile = 5;
        c.nsplits = 2; c.splits[0] = 1; c.splits[1] = 0;
        c.twice = 1;
        run_case(r, &c);
        if (g_quick) return;
        c.x_tile = 6; c.H = 16; c.page = 128;
        run_case(r, &c);
        c.x_tile = 12; c.page = 16;
        run_case(r, &c);
    }
    { /* ragged with q_len 0 and empty requests, an out-of-range page id, page 1 */
        const int q[5] = {2, 0, 1, 3, 1}, s[5] = {70, 0, 1, 300, 0};
        hcase c = mk(16, 64, 1, 5, q, s);
        c.fp8 = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        c.twice = 1;
        run_case(r, &c);
        c.page = 1;
        run_case(r, &c);
    }
    { /* an out-of-range page id inside the used range (TMA and cp.async) */
        const int q[2] = {2, 1}, s[2] = {1000, 130};
        hcase c = mk(64, 64, 1, 2, q, s);
        c.fp8 = 1; c.bad_page = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        c.page = 100; c.scales = 1;
        run_case(r, &c);
        c.page = 16; c.scales = 0; /* TMA sub-blocks of 16 rows, one on the bad page */
        run_case(r, &c);
    }
    { /* padded strides everywhere, sink with -inf / +inf; page 128 non-causal */
        const int q[3] = {1, 2, 1}, s[3] = {129, 64, 700};
        hcase c = mk(16, 64, 1, 3, q, s);
        c.fp8 = 1;
        c.pad_q = 8; c.pad_out = 6; c.pad_lse = 3; c.page_pad = 48;
        c.sink_mode = 2;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        c.causal = 0; c.page = 128; c.scales = 2; c.x_tile = 2;
        run_case(r, &c);
    }
    { /* one long request, H 128, s_q 2: automatic (many splits), unsplit, 7 splits */
        const int q[1] = {2}, s[1] = {4097};
        hcase c = mk(128, 64, 1, 1, q, s);
        c.fp8 = 1;
        c.nsplits = 3; c.splits[0] = 0; c.splits[1] = 1; c.splits[2] = 7;
        run_case(r, &c);
    }
}

/* BF16 tiles gathered row by row by cp.async (the _r kernels, v62, v63): pages 1, 7 and 13 by default (no TMA
 * path takes them), pages that are not multiples of 16 (v63's rule, page-aligned tiles at 127), then every page through them (mla_cuda_decode_hopper_force_gather(2): 64, 16 and 100),
 * and page 7 kept off them (0: the cp.async warp pairs); both precisions; H 128 with s_q 2 (the base
 * kernels) and 1 (the early-pay one under bf16p), H 16 and 100 (a masked last row block), causal and
 * not, an out-of-range page and a padded page stride, sinks, splits; the balanced schedule over unequal
 * requests (every part's tiles through the producer's segment loop). The path taken is checked. */
static void run_gather(h_rng *r) {
    { /* the base and early-pay kernels: q_len 2 and 1 at H 128; both precisions; causal, split */
        const int q[3] = {2, 2, 1}, s[3] = {1000, 130, 65};
        hcase c = mk(128, 1, 1, 3, q, s);
        c.p1 = 1; c.sink_mode = 1; c.gather = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 3;
        run_case(r, &c);
        if (!g_quick) { /* (the quick set stays small: racecheck's time) */
            c.p1 = 0; c.page = 7;
            run_case(r, &c);
            const int q1[2] = {1, 1}, s1[2] = {700, 64};
            hcase e = mk(128, 13, 0, 2, q1, s1);
            e.p1 = 1; e.gather = 1;
            run_case(r, &e);
            e.p1 = 0; e.page = 1;
            run_case(r, &e);
        }
    }
    { /* H 16 and 100 (partial row blocks), an out-of-range page, a padded page stride, non-causal */
        const int q[3] = {3, 0, 2}, s[3] = {513, 0, 77};
        hcase c = mk(16, 7, 1, 3, q, s);
        c.bad_page = 1; c.page_pad = 32; c.gather = 1; c.sink_mode = 2;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        mla_cuda_decode_hopper_force_gather(0); /* the cp.async warp pairs (MLA_HD_GATHER=0) */
        c.gather = 0;
        run_case(r, &c);
        mla_cuda_decode_hopper_force_gather(-1);
        if (g_quick) return;
        c.H = 100; c.p1 = 1; c.causal = 0; c.page = 1; c.gather = 1;
        run_case(r, &c);
    }
    { /* the default rule past 16 keys (v63): pages that are not multiples of 16 gathered (61, 100, 17; both
         precisions, s_q 1 and 2), but page-aligned tiles one key short of a multiple of 64 (127 under bf16p,
         no causal mask); page 48 keeps TMA */
        const int q[3] = {2, 1, 2}, s[3] = {1000, 254, 64 * 5 + 3};
        hcase c = mk(128, 61, 1, 3, q, s);
        c.p1 = 1; c.gather = 1;
        run_case(r, &c);
        c.page = 100; c.p1 = 0; c.causal = 0;
        run_case(r, &c);
        c.page = 127; c.p1 = 1; c.gather = 0; /* page-aligned tiles */
        run_case(r, &c);
        c.causal = 1; c.gather = 1; /* (none under a causal mask) */
        run_case(r, &c);
        c.page = 48; c.gather = 0;
        run_case(r, &c);
        const int q1[2] = {1, 1}, s1[2] = {900, 77};
        hcase e = mk(128, 17, 1, 2, q1, s1);
        e.p1 = 1; e.gather = 1;
        run_case(r, &e);
    }
    { /* forced onto every BF16 page (2) and kept off (0) */
        const int q[2] = {2, 1}, s[2] = {900, 200};
        hcase c = mk(128, 64, 1, 2, q, s);
        c.p1 = 1; c.gather = 1;
        mla_cuda_decode_hopper_force_gather(2);
        run_case(r, &c);
        c.page = 100; c.p1 = 0; c.bad_page = 1;
        run_case(r, &c);
        c.page = 16; c.p1 = 1; c.bad_page = 0; c.causal = 0;
        run_case(r, &c);
        mla_cuda_decode_hopper_force_gather(-1);
    }
    { /* the balanced schedule (automatic split count): 40 unequal requests, q_len 2, H 128, page 3 */
        int q[40], s[40];
        for (int b = 0; b < 40; b++) { q[b] = 2; s[b] = 64 + (int)((b * 7919u) % 900u); }
        hcase c = mk(128, 3, 1, 40, q, s);
        c.p1 = 1; c.gather = 1;
        run_case(r, &c);
        c.p1 = 0;
        run_case(r, &c);
    }
}

/* an out-of-range page (c.bad_page) on pages of 64 keys (one copy a tile), 16 (four) and 61 (pieces
 * that straddle tiles) */
static void run_bad_page(h_rng *r, hcase c) {
    static const int ps[3] = {64, 16, 61};
    for (int i = 0; i < 3; i++) {
        c.page = ps[i];
        run_case(r, &c);
    }
}

/* The narrow kernel (16 rows a CTA, FP8, any page size): requests of at most 16 rows on
 * average. H x seq_len x page (pages of 1, 7 and 61 keys: up to 64 bulk copies a tile), causal with two tokens where 2 H <= 16, sinks, splits; scales not
 * powers of two (all, some tiles); q_len 0 and empty requests; an out-of-range page; padded
 * strides; one long request split many ways. NaN fills every unused byte of the pool. */
static void run_narrow(h_rng *r) {
    static const int Hs[4] = {1, 4, 8, 16};
    static const int Ss[5] = {1, 63, 65, 1000, 4097};
    static const int Ps[6] = {64, 16, 61, 1, 32, 7};
    int k = 0;
    for (int hi = 0; hi < 4; hi++)
        for (int si = 0; si < 5; si++, k++) {
            const int H = Hs[hi], S = Ss[si];
            if (g_quick && !((H == 16 && S == 1000) || (H == 8 && S == 65) || (H == 4 && S == 1000))) continue; /* pages 64, 64, 61 */
            int q[2] = {H <= 8 && S >= 2 ? 2 : 1, (k % 3 == 1) ? 0 : 1}, s[2] = {S, S / 2 + 1};
            hcase c = mk(H, Ps[k % 6], (k % 4) != 3, 2, q, s);
            c.fp8 = 1; c.narrow = 16;
            c.sink_mode = (k % 3 == 0);
            c.nsplits = 2; c.splits[0] = 0; c.splits[1] = (k % 2) ? 1 : 7;
            run_case(r, &c);
        }
    { /* scales not powers of two everywhere; then in tiles 5, 6 only */
        const int q[2] = {1, 1}, s[2] = {1000, 130};
        hcase c = mk(16, 64, 1, 2, q, s);
        c.fp8 = 1; c.narrow = 16; c.scales = 1; c.sink_mode = 1;
        c.nsplits = 3; c.splits[0] = 0; c.splits[1] = 1; c.splits[2] = 3;
        run_case(r, &c);
        c.scales = 2; c.x_tile = 5; c.page = 16; c.twice = 1;
        run_case(r, &c);
        c.scales = 4; c.x_tile = 0; c.page = 64; c.twice = 0;
        run_case(r, &c);
    }
    { /* ragged with q_len 0 and empty requests; an out-of-range page (64- and 16-row boxes) */
        const int q[5] = {1, 0, 1, 1, 1}, s[5] = {70, 0, 1, 300, 0};
        hcase c = mk(16, 64, 1, 5, q, s);
        c.fp8 = 1; c.narrow = 16; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        const int q2[2] = {1, 1}, s2[2] = {1000, 130};
        c = mk(16, 64, 1, 2, q2, s2);
        c.fp8 = 1; c.narrow = 16; c.bad_page = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_bad_page(r, c);
    }
    { /* padded strides, sinks of -inf / +inf */
        const int q[3] = {1, 1, 1}, s[3] = {129, 64, 700};
        hcase c = mk(16, 64, 1, 3, q, s);
        c.fp8 = 1; c.narrow = 16;
        c.pad_q = 8; c.pad_out = 6; c.pad_lse = 3; c.page_pad = 48;
        c.sink_mode = 2;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
    }
    { /* one long request: automatic (many splits), unsplit, 5 splits; H 12 (a partial block) */
        const int q[1] = {1}, s[1] = {9000};
        hcase c = mk(16, 64, 1, 1, q, s);
        c.fp8 = 1; c.narrow = 16;
        c.nsplits = 3; c.splits[0] = 0; c.splits[1] = 1; c.splits[2] = 5;
        run_case(r, &c);
        c.H = 12; c.page = 32; c.sink_mode = 1;
        run_case(r, &c);
    }
}

/* FP8-656 raw tiles gathered row by row by cp.async (hn_issue_rows, the raw-tile kernels' _r variants, v65):
 * pages under HN_GATHER_BELOW(rows) keys by default (pages 1 and 3 on the 16-row kernel, page 1 on the others;
 * run_narrow's pages 1 and 7 too), every page when forced (2: 64,
 * 61, 16), and pages 1 and 7 kept on the bulk copies (0). Each of the 16-, 32- and 64-row kernels (the last
 * with the scan's one-chain program, then the exact one); causal, sinks, splits, an out-of-range page, a
 * padded page stride, q_len 0 and an empty request. The path taken is checked. */
static void run_narrow_gather(h_rng *r) {
    static const int rows[3] = {16, 32, 64};
    for (int k = 0; k < 3; k++) {
        const char *ne = getenv("MLA_HD_NARROW");
        if (!ne && rows[k] > 16) mla_cuda_decode_hopper_force_rows(rows[k] == 64 ? 4 : 3);
        if (rows[k] == 64) mla_cuda_decode_hopper_force_one(2); /* the one-chain program with its scan */
        const int H = rows[k] == 16 ? 8 : rows[k] == 32 ? 32 : 128;
        const int q[4] = {2, 0, 1, 2}, s[4] = {1000, 0, 130, 64 * 5 + 3};
        hcase c = mk(H, 1, 1, 4, q, s);
        c.fp8 = 1; c.narrow = rows[k]; c.p1 = rows[k] > 16; c.gather = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 3;
        run_case(r, &c);
        c.page = rows[k] == 16 ? 3 : 1; c.bad_page = 1; c.page_pad = 48; c.causal = 0; c.sink_mode = 2;
        run_case(r, &c);
        if (rows[k] == 64) { /* the exact program alone from here on */
            mla_cuda_decode_hopper_force_one(0);
            run_case(r, &c);
        }
        c.page_pad = 0; c.sink_mode = 0;
        mla_cuda_decode_hopper_force_gather(2);
        for (int i = 0; i < 3 && !(g_quick && i > 0); i++) {
            static const int ps[3] = {64, 61, 16};
            c.page = ps[i]; c.bad_page = i == 1; c.causal = i != 1;
            run_case(r, &c);
        }
        mla_cuda_decode_hopper_force_gather(0);
        c.gather = 0; c.bad_page = 1;
        c.page = 1;
        run_case(r, &c);
        c.page = 7; c.bad_page = 0;
        if (!g_quick) run_case(r, &c);
        mla_cuda_decode_hopper_force_gather(-1);
        mla_cuda_decode_hopper_force_rows(-1);
        mla_cuda_decode_hopper_force_one(-1);
    }
}

/* The 32- and 64-row raw-tile kernels (FP8, any page size, MLA_PRECISION_BF16_P; 17-32 and more
 * rows a request on average; forced here on every case (rows = 32 or 64), bf16p tolerances):
 * H x q_len x seq_len x page, causal, sinks, splits; scales not powers of two (all, some tiles) and
 * scales spread over many binades (per-key exponents); q_len 0 and empty requests; an out-of-range
 * page; padded strides; partial row blocks (H 20, 48, q_len 3). NaN fills every unused byte. */
static void run_wide(h_rng *r, const int rows) {
    const char *ne = getenv("MLA_HD_NARROW");
    if (!ne) mla_cuda_decode_hopper_force_rows(rows == 64 ? 4 : 3);
    static const int Hs[5] = {128, 64, 32, 20, 16};
    static const int Ss[4] = {3, 63, 1000, 4097};
    static const int Ps[6] = {64, 16, 61, 128, 32, 7};
    int k = 0;
    for (int hi = 0; hi < 5; hi++)
        for (int si = 0; si < 4; si++, k++) {
            const int H = Hs[hi], S = Ss[si];
            if (g_quick && !((H == 128 && S == 1000) || (H == 20 && S == 63))) continue;
            int q[2] = {H == 16 ? 2 : 1 + (k % 3), (k % 3 == 1 && H > 16) ? 0 : 2}, s[2] = {S, S / 2 + 2};
            hcase c = mk(H, Ps[k % 6], (k % 4) != 3, 2, q, s);
            c.fp8 = 1; c.narrow = rows; c.p1 = 1;
            c.sink_mode = (k % 3 == 0);
            c.nsplits = 2; c.splits[0] = 0; c.splits[1] = (k % 2) ? 1 : 7;
            run_case(r, &c);
        }
    { /* scales not powers of two everywhere; then in tiles 5, 6 only; causal s_q = 2 */
        const int q[2] = {2, 2}, s[2] = {1000, 130};
        hcase c = mk(64, 64, 1, 2, q, s);
        c.fp8 = 1; c.narrow = rows; c.p1 = 1; c.scales = 1; c.sink_mode = 1; c.causal = 1;
        c.nsplits = 3; c.splits[0] = 1; c.splits[1] = 3; c.splits[2] = 0;
        run_case(r, &c);
        c.scales = 2; c.x_tile = 5; c.page = 16; c.twice = 1;
        run_case(r, &c);
        c.scales = 3; c.x_tile = 0; c.page = 64; c.twice = 0;
        run_case(r, &c);
        c.scales = 4;
        run_case(r, &c);
        c.scales = 5; /* request 0 on the exact program, request 1 on the one chain (64 rows), one launch */
        run_case(r, &c);
        c.H = 16; c.scales = 1; /* the default choice for h = 16, s_q = 2 */
        run_case(r, &c);
        c.scales = 3;
        run_case(r, &c);
        c.scales = 0;
        c.H = 64;
        run_case(r, &c);
        c.causal = 0; c.scales = 1;
        run_case(r, &c);
    }
    { /* ragged with q_len 0 and empty requests; an out-of-range page (64- and 16-row boxes) */
        const int q[5] = {2, 0, 1, 3, 2}, s[5] = {70, 0, 1, 300, 0};
        hcase c = mk(48, 64, 1, 5, q, s);
        c.fp8 = 1; c.narrow = rows; c.p1 = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        const int q2[2] = {1, 1}, s2[2] = {1000, 130};
        c = mk(128, 64, 1, 2, q2, s2);
        c.fp8 = 1; c.narrow = rows; c.p1 = 1; c.bad_page = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_bad_page(r, c);
    }
    { /* padded strides, sinks of -inf / +inf */
        const int q[3] = {2, 1, 2}, s[3] = {129, 64, 700};
        hcase c = mk(32, 64, 1, 3, q, s);
        c.fp8 = 1; c.narrow = rows; c.p1 = 1;
        c.pad_q = 8; c.pad_out = 6; c.pad_lse = 3; c.page_pad = 48;
        c.sink_mode = 2;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
    }
    { /* many requests of drawn lengths (0..900, some equal) and q_len (0..3): the slots go longest request first
         (hn_lpt_slot), so a CTA's row block is far from its request's place; unsplit and 2 splits */
        int q[37], s[37];
        for (int b = 0; b < 37; b++) {
            q[b] = h_int(r, 0, 3);
            s[b] = b % 5 == 4 ? s[b - 1] : h_int(r, 0, 900);
            if (s[b] < q[b]) s[b] = q[b];
        }
        hcase c = mk(rows == 64 ? 64 : 16, 64, 1, 37, q, s);
        c.fp8 = 1; c.narrow = rows; c.p1 = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 1; c.splits[1] = 2;
        run_case(r, &c);
    }
    { /* one long request: automatic (many splits), unsplit, 5 splits */
        const int q[1] = {1}, s[1] = {9000};
        hcase c = mk(128, 64, 1, 1, q, s);
        c.fp8 = 1; c.narrow = rows; c.p1 = 1;
        c.nsplits = 3; c.splits[0] = 0; c.splits[1] = 1; c.splits[2] = 5;
        run_case(r, &c);
    }
    if (rows == 64) { /* v68: every tile past the first flagged by the fast softmax and redone the slow way (the
                         second publication through pfix, both consumers' phase count): ragged causal with
                         sinks, splits and a page of 7; the one-chain program, then the exact one */
        mla_cuda_decode_hopper_force_redo(1);
        const int q[3] = {2, 1, 2}, s[3] = {1000, 0, 333};
        hcase c = mk(128, 7, 1, 3, q, s);
        c.fp8 = 1; c.narrow = rows; c.p1 = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 3;
        mla_cuda_decode_hopper_force_one(2);
        run_case(r, &c);
        mla_cuda_decode_hopper_force_one(0);
        c.page = 64; c.scales = 3;
        run_case(r, &c);
        mla_cuda_decode_hopper_force_one(-1);
        mla_cuda_decode_hopper_force_redo(-1);
    }
    mla_cuda_decode_hopper_force_rows(-1);
}

static void run_ra(h_rng *r) {
    /* MLA_KV_FP8_ROPE_AWARE: sweep H x seq_len over pages 64 and 16 (TMA boxes of 64 / 16 rows), causal and not,
     * sinks, automatic and unsplit */
    static const int Hs[3] = {1, 16, 128};
    static const int Ss[4] = {1, 65, 1000, 4097};
    int k = 0;
    for (int hi = 0; hi < 3; hi++)
        for (int si = 0; si < 4; si++, k++) {
            const int H = Hs[hi], S = Ss[si];
            if (g_quick && !((H == 16 && S == 65) || (H == 128 && S == 1000))) continue;
            hcase c = mk_sweep(H, S, k, (k & 1) ? 16 : 64);
            c.ra = 1;
            c.sig_pad = (k % 3 == 2) ? 5 : 0;
            c.sink_mode = (k % 3 == 0);
            c.nsplits = 2; c.splits[0] = 0; c.splits[1] = (k % 5 == 4) ? 3 : 1;
            run_case(r, &c);
        }
    { /* sigma not a power of two, sinks with -inf / +inf, padded strides, a bad page; twice */
        const int q[3] = {2, 1, 3}, s[3] = {1000, 130, 300};
        hcase c = mk(16, 64, 1, 3, q, s);
        c.ra = 1; c.scales = 1; c.sink_mode = 2; c.bad_page = 1; c.sig_pad = 3;
        c.pad_q = 8; c.pad_out = 6; c.pad_lse = 3; c.page_pad = 48;
        c.nsplits = 3; c.splits[0] = 0; c.splits[1] = 1; c.splits[2] = 5;
        c.twice = 1;
        run_case(r, &c);
        c.page = 16; c.H = 128; c.causal = 0;
        if (!g_quick) run_case(r, &c);
    }
    { /* ragged with q_len 0 and empty requests */
        const int q[5] = {2, 0, 1, 3, 1}, s[5] = {70, 0, 1, 300, 0};
        hcase c = mk(64, 16, 1, 5, q, s);
        c.ra = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
    }
}

/* v31: the uniform split's combine inside the decode grid (hd_fused_combine; H % 64 == 0, the grid
 * resident at once): each case with the fusion forced on (it must be taken) and off (the combine
 * grid), both against the reference. Rows per split CTA: 64 / nsplit rounded up (one row: two thread
 * groups over the splits; more splits than rows: CTAs with none); splits without tiles; a request
 * without keys (lse +inf, zeros); q_len 0 between requests (dense slots); sinks; padded out / lse; no
 * lse; bf16p and the default precision; FP8; page 61 (page-aligned tiles); a grid too large to fuse. */
static void run_fused(h_rng *r) {
    for (int on = 1; on >= 0; on--) {
        mla_cuda_decode_hopper_force_fuse(on);
        { /* one row block, 128 splits of 65 tiles: splits 0..63 one row each, 65.. no tiles */
            const int q[1] = {1}, s[1] = {4097};
            hcase c = mk(64, 64, 0, 1, q, s);
            c.p1 = 1; c.fused = on;
            c.splits[0] = 128;
            run_case(r, &c);
        }
        { /* ragged: 4 + 0 + 2 row blocks, the last request without keys; sinks, padding */
            const int q[3] = {2, 0, 1}, s[3] = {1000, 5, 0};
            hcase c = mk(128, 64, 1, 3, q, s);
            c.sink_mode = 1; c.pad_out = 6; c.pad_lse = 3; c.fused = on;
            c.splits[0] = 5;
            run_case(r, &c);
            c.p1 = 1; c.splits[0] = 0; /* automatic: as many splits as fit */
            run_case(r, &c);
            c.p1 = 0; c.no_lse = 1; c.sink_mode = 2; c.splits[0] = 3;
            if (!g_quick) run_case(r, &c);
        }
        { /* FP8, default precision; page 61 under bf16p (page-aligned tiles), non-causal */
            const int q[2] = {1, 1}, s[2] = {700, 1300};
            hcase c = mk(128, 64, 0, 2, q, s);
            c.fp8 = 1; c.fused = on;
            c.splits[0] = 9;
            run_case(r, &c);
            c.fp8 = 0; c.p1 = 1; c.page = 61; c.H = 64; c.splits[0] = 17;
            run_case(r, &c);
        }
    }
    { /* too large a grid for one wave (40 requests x 4 row blocks x 4 splits): the combine grid */
        int q[40], s[40];
        for (int b = 0; b < 40; b++) { q[b] = 2; s[b] = 130 + 7 * b; }
        mla_cuda_decode_hopper_force_fuse(1);
        hcase c = mk(128, 64, 1, 40, q, s);
        c.p1 = 1; c.fused = 0;
        c.splits[0] = 4;
        if (!g_quick) run_case(r, &c);
    }
    mla_cuda_decode_hopper_force_fuse(-1);
}

/* v32: the FP8 kernel's group tiles (p.f8g: 16-row TMA boxes at pages that are not multiples of 16,
 * the rows past a page zero-filled; a kernel of their own under a causal mask). Forced on every such page (MLA_HD_F8G=2) for
 * pages 61, 100, 23, 13, 1: requests ending inside a page, on a page's last key and one page long,
 * a group of one row; automatic and forced splits (the fused combine from 64 splits), the exact
 * program (scales not powers of two, everywhere or in two tiles), an out-of-range page with a padded
 * page stride, sinks, q_len 0, the rope-aware format, the balanced schedule over unequal requests;
 * causal masks across groups and pages; then the default rule (page 61 and 100 on them, 17 not). */
static void run_f8g(h_rng *r) {
    mla_cuda_decode_hopper_force_rows(0); /* FP8 at 16 rows a request: the 64-row kernels, not decode_narrow.cu */
    mla_cuda_decode_hopper_force_f8g(2);
    {
        const int q[4] = {2, 1, 0, 1}, s[4] = {1000, 130, 61 * 5, 61};
        hcase c = mk(128, 61, 0, 4, q, s);
        c.fp8 = 1; c.sink_mode = 1; c.f8g = 4;
        c.nsplits = 3; c.splits[0] = 0; c.splits[1] = 1; c.splits[2] = 7;
        c.twice = 1;
        run_case(r, &c);
        c.twice = 0; c.nsplits = 2;
        c.page = 100; c.f8g = 7; c.H = 16; c.scales = 1;
        run_case(r, &c);
        c.page = 23; c.f8g = 2; c.H = 64; c.scales = 2; c.x_tile = 3;
        run_case(r, &c);
        c.page = 13; c.f8g = 1; c.H = 128; c.scales = 0; c.bad_page = 1; c.page_pad = 48;
        if (!g_quick) run_case(r, &c);
        c.page = 1; c.f8g = 1; c.H = 16; c.bad_page = 0; c.page_pad = 0; c.sink_mode = 2;
        if (!g_quick) run_case(r, &c);
    }
    { /* causal: the key positions of group tiles (a request ending inside a page's short group, one on a
         page's last key, q_len up to 3 so that the mask crosses groups and pages), splits */
        const int q[4] = {3, 2, 1, 2}, s[4] = {1000, 61 * 3, 62, 100 * 4 + 97};
        hcase c = mk(128, 61, 1, 4, q, s);
        c.fp8 = 1; c.f8g = 4; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 5;
        run_case(r, &c);
        c.page = 100; c.f8g = 7; c.H = 64; c.scales = 2; c.x_tile = 4;
        run_case(r, &c);
        c.page = 23; c.f8g = 2; c.H = 16; c.scales = 1; c.splits[1] = 1;
        if (!g_quick) run_case(r, &c);
    }
    { /* one long request: 128 splits of 65 tiles combined inside the grid (H 64); FP8 rope-aware */
        const int q[1] = {1}, s[1] = {61 * 70 + 17};
        hcase c = mk(64, 61, 0, 1, q, s);
        c.fp8 = 1; c.f8g = 4;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 128;
        mla_cuda_decode_hopper_force_fuse(1);
        c.fused = 1;
        run_case(r, &c);
        mla_cuda_decode_hopper_force_fuse(-1);
        c.fused = -1; c.fp8 = 0; c.ra = 1; c.sig_pad = 5; c.H = 16; c.splits[1] = 3;
        run_case(r, &c);
    }
    { /* pages of 4k groups (a tile = 64 rows of one page, one 64-row box): 120 (two tiles a page, the
         second of 56 rows), 50 (14 rows past the page), causal and not */
        const int q[3] = {2, 1, 2}, s[3] = {1000, 120 * 3, 51};
        hcase c = mk(128, 120, 0, 3, q, s);
        c.fp8 = 1; c.f8g = 8; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 3;
        run_case(r, &c);
        c.page = 50; c.f8g = 4; c.causal = 1; c.H = 64;
        run_case(r, &c);
        c.page = 120; c.f8g = 8; c.scales = 1; c.bad_page = 1; c.H = 16;
        if (!g_quick) run_case(r, &c);
    }
    if (!g_quick) { /* the balanced schedule over unequal requests (its plan counts group tiles) */
        int qb[40], sb[40];
        for (int b = 0; b < 40; b++) { qb[b] = 2; sb[b] = 61 * (1 + (b * 7) % 23) + (b * 13) % 61; }
        hcase c = mk(128, 61, 0, 40, qb, sb);
        c.fp8 = 1; c.f8g = 4;
        run_case(r, &c);
    }
    mla_cuda_decode_hopper_force_f8g(-1);
    { /* the default rule: tiles of one 64-row box, at least 7/8 of their rows keys (v67; else gathered row by row) */
        const int q[2] = {2, 1}, s[2] = {1000, 130};
        hcase c = mk(128, 61, 0, 2, q, s);
        c.fp8 = 1; c.f8g = 4; c.gather = 0;
        run_case(r, &c);
        c.page = 120; c.f8g = 8;
        if (!g_quick) run_case(r, &c);
        c.page = 100; c.f8g = 0; c.gather = 1;
        if (!g_quick) run_case(r, &c);
        c.page = 15; c.f8g = 0; c.gather = 1;
        run_case(r, &c);
        c.page = 17; c.f8g = 0; c.gather = 1;
        run_case(r, &c);
        c.page = 50; c.f8g = 0; c.gather = 1; /* (4 groups of 16 rows a page: 78% keys) */
        if (!g_quick) run_case(r, &c);
        mla_cuda_decode_hopper_force_gather(0); /* session 44's rule: 3/4 */
        c.gather = 0; c.f8g = 4;
        run_case(r, &c);
        mla_cuda_decode_hopper_force_gather(-1);
    }
    { /* v66, v67: the pages neither TMA nor the group tiles take, gathered row by row (the _f8_r kernel: the
         producer's warps, consumer 1's for the fast program's refills): pages 1, 7, 17, 3; the fast and the exact programs (scales
         not powers of two in every tile, in one tile), causal q_len up to 3, sinks, splits, an out-of-range
         page with a padded page stride, rope-aware rows (no scales), the balanced schedule over unequal
         requests; page 7 kept on the producer's cp.async (MLA_HD_GATHER=0). The path taken is checked. */
        const int q[4] = {2, 1, 0, 3}, s[4] = {1000, 130, 0, 64 * 4 + 5};
        hcase c = mk(128, 1, 1, 4, q, s);
        c.fp8 = 1; c.f8g = 0; c.gather = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 3;
        run_case(r, &c);
        c.page = 7; c.scales = 1; c.H = 64;
        run_case(r, &c);
        c.page = 17; c.scales = 2; c.x_tile = 2; c.H = 16; c.causal = 0;
        run_case(r, &c);
        c.page = 7; c.scales = 0; c.bad_page = 1; c.page_pad = 48; c.H = 128; c.sink_mode = 2;
        run_case(r, &c);
        c.fp8 = 0; c.ra = 1; c.bad_page = 0; c.page_pad = 0; c.sig_pad = 5; c.causal = 1; c.sink_mode = 0;
        run_case(r, &c);
        c.ra = 0; c.fp8 = 1; c.sig_pad = 0;
        mla_cuda_decode_hopper_force_gather(0);
        c.gather = 0;
        if (!g_quick) run_case(r, &c);
        mla_cuda_decode_hopper_force_gather(-1);
        if (!g_quick) { /* the balanced schedule (automatic split count) */
            int qb[40], sb[40];
            for (int b = 0; b < 40; b++) { qb[b] = 2; sb[b] = 64 + (int)((b * 7919u) % 900u); }
            hcase e = mk(128, 3, 1, 40, qb, sb);
            e.fp8 = 1; e.f8g = 0; e.gather = 1;
            run_case(r, &e);
        }
    }
    mla_cuda_decode_hopper_force_rows(-1);
}

static void run_all(h_rng *r) {
    stage_test(r, 64, 1, 64, 0, 0);  /* a full tile */
    stage_test(r, 16, 2, 40, 0, 0);  /* 32 query rows, 40 keys: zero rows on both sides */
    stage_test(r, 64, 1, 64, 1, 0);  /* FP8: dequantized in shared memory */
    stage_test(r, 16, 2, 40, 1, 0);
    stage_test(r, 64, 1, 50, 1, 1);  /* FP8, scales not powers of two: the exact program */

    /* sweep: every H x every seq_len, two requests, the options rotating */
    static const int Hs[5] = {1, 16, 64, 100, 128};
    static const int Ss[7] = {0, 1, 63, 64, 65, 1000, 4097};
    int k = 0;
    for (int hi = 0; hi < 5; hi++)
        for (int si = 0; si < 7; si++, k++) {
            const int H = Hs[hi], S = Ss[si];
            if (g_quick && !((H == 16 || H == 128) && (S == 0 || S == 65 || S == 1000))) continue;
            const int sq = 1 + (k & 1);
            int q[2], s[2];
            s[0] = S;
            q[0] = S == 0 ? sq : (sq < S ? sq : S);
            q[1] = (k % 3 == 1) ? 0 : 1;
            s[1] = S == 0 ? 0 : S / 2 + 1;
            static const int Ps[6] = {64, 16, 128, 32, 61, 48}; /* TMA boxes of 64 / 16 / 32 rows, cp.async */
            hcase c = mk(H, Ps[k % 6], (k % 4) != 3, 2, q, s);
            c.sink_mode = (k % 3 == 0);
            c.splits[0] = (k % 5 == 4) ? 1 : 0;
            run_case(r, &c);
        }

    { /* ragged with q_len 0 and empty requests; automatic and unsplit, run twice */
        const int q[5] = {2, 0, 1, 3, 1}, s[5] = {70, 0, 1, 300, 0};
        hcase c = mk(16, 64, 1, 5, q, s);
        c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        c.twice = 1;
        run_case(r, &c);
    }
    { /* an out-of-range page id inside the used range: its keys are skipped */
        const int q[2] = {2, 1}, s[2] = {1000, 130};
        hcase c = mk(64, 64, 1, 2, q, s);
        c.bad_page = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        c.page = 16; /* a 16-row sub-block of a tile on the bad page: zero-filled by TMA, masked */
        run_case(r, &c);
        c.page = 32;
        c.causal = 0;
        if (!g_quick) run_case(r, &c);
    }
    { /* page 16, H 128 */
        const int q[2] = {2, 1}, s[2] = {300, 17};
        hcase c = mk(128, 16, 1, 2, q, s);
        run_case(r, &c);
    }
    { /* scores that pass the running max by a lot in later tiles (grow): the lazy max's moves, and
         exponentials that would overflow relative to the old max; the base bf16p kernel (q_len 2 at H 128), the _ep one (q_len 1), page
         100 (general pages), causal and not, split; the default precision on the same data */
        const int q[3] = {2, 1, 2}, s[3] = {1000, 830, 200};
        hcase c = mk(128, 64, 1, 3, q, s);
        c.grow = 1; c.p1 = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 2;
        run_case(r, &c);
        const int q1[2] = {1, 1}, s1[2] = {1000, 900};
        hcase e = mk(128, 64, 0, 2, q1, s1);
        e.grow = 1; e.p1 = 1;
        run_case(r, &e);
        c.page = 100; c.causal = 0;
        run_case(r, &c);
        c.p1 = 0; c.page = 64; c.causal = 1;
        run_case(r, &c);
        c.fp8 = 1; /* FP8: the default precision's 64-row kernel; under bf16p the raw-tile ones (64 rows
                      at H 128, 16 rows at H 16) */
        run_case(r, &c);
        c.p1 = 1;
        run_case(r, &c);
        c.H = 16;
        run_case(r, &c);
        c.H = 128; c.scales = 1; /* this file's 64-row FP8 kernel under bf16p, scales not powers of two:
                                    the exact program (hd_consumer_exact, the raw scores' FFMA too) */
        mla_cuda_decode_hopper_force_rows(0);
        run_case(r, &c);
        mla_cuda_decode_hopper_force_rows(-1);
    }
    { /* MLA_PRECISION_BF16_P: one bf16 P term (BF16, FP8 powers of two, FP8 exact program), split and not */
        const int q[3] = {2, 1, 1}, s[3] = {4097, 1000, 3};
        hcase c = mk(128, 64, 1, 3, q, s);
        c.p1 = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        c.H = 16; c.page = 16; c.causal = 0; c.fp8 = 1;
        run_case(r, &c);
        c.scales = 1;
        if (!g_quick) run_case(r, &c);
    }
    { /* the balanced schedule (automatic), q_len 2 everywhere (four lanes): very unequal requests,
         seq_len 0 with queries (a row block without tiles on the line), short requests packed
         several to a part, long ones cut across many; both precisions, FP8; against a uniform
         split; run twice (bit-identical) */
        const int q[8] = {2, 2, 2, 2, 2, 2, 2, 2}, s[8] = {9000, 0, 1, 64, 3000, 130, 5, 2049};
        hcase c = mk(128, 64, 1, 8, q, s);
        c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 3;
        c.twice = 1;
        run_case(r, &c);
        c.p1 = 1; c.H = 100; c.page = 16; c.twice = 0;
        run_case(r, &c);
        c.p1 = 0; c.fp8 = 1; c.H = 16; c.page = 64;
        run_case(r, &c);
    }
    { /* the balanced schedule proper (a batch that fills the GPU unsplit, unequal requests: parts
         across requests, cuts, a seq_len 0 request with queries); one cost everywhere (the plan
         keeps the uniform layout); both precisions, FP8; against a uniform split; fewer equal
         requests than parts (the uniform split, no plan) */
        int q[104], s[104];
        for (int b = 0; b < 104; b++) { q[b] = 2; s[b] = b == 7 ? 0 : h_int(r, 2, 700); }
        {
            hcase c = mk(16, 64, 1, 104, q, s);
            c.sink_mode = 1;
            c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 2;
            c.twice = 1;
            c.mode = 1;
            run_case(r, &c);
            c.p1 = 1; c.H = 32; c.page = 16; c.twice = 0; c.nsplits = 1;
            run_case(r, &c);
            c.p1 = 0; c.fp8 = 1; c.H = 16; c.page = 64;
            run_case(r, &c);
        }
        { /* v55: the cut blocks merged by the combine grid (MLA_HD_CUTMERGE=0) and inside the decode grid
             (the default; not in the _ep kernels: H 64 under bf16p keeps the combine grid), against the
             reference, run twice (bit-identical), in a workspace of 0xff bytes (counts of no launch) */
            for (int on = 0; on <= 1; on++) {
                mla_cuda_decode_hopper_force_cutmerge(on);
                for (int v = 0; v < 3; v++) {
                    hcase c = mk(v == 0 ? 128 : 64, 64, 1, 104, q, s);
                    c.p1 = v != 1; c.sink_mode = 1; c.mode = 1; c.twice = v == 0;
                    run_case(r, &c);
                    const int want = on && v != 2;
                    EXPECT(mla_cuda_decode_hopper_last_cutmerge() == want, "H %d p1 %d: cut blocks merged inside the grid: %d, expected %d",
                           c.H, c.p1, mla_cuda_decode_hopper_last_cutmerge(), want);
                }
            }
            mla_cuda_decode_hopper_force_cutmerge(-1);
        }
        { /* parts with four row blocks a request (H 128, q_len 2: four lanes), a request without keys;
             bf16p, then FP8 */
            int q4[40], s4[40];
            for (int b = 0; b < 40; b++) { q4[b] = 2; s4[b] = b == 3 ? 0 : h_int(r, 2, 900); }
            hcase c = mk(128, 64, 1, 40, q4, s4);
            c.p1 = 1; c.sink_mode = 1; c.mode = 1;
            run_case(r, &c);
            c.p1 = 0; c.fp8 = 1;
            if (!g_quick) run_case(r, &c);
        }
        for (int b = 0; b < 104; b++) s[b] = 300;
        hcase c = mk(16, 64, 1, 104, q, s);
        c.mode = 2;
        run_case(r, &c);
        for (int b = 0; b < 3; b++) { q[b] = 1; s[b] = 3000; }
        c = mk(128, 64, 0, 3, q, s);
        run_case(r, &c);
    }
    { /* persistent CTAs: 160 full row blocks (H 64, q_len 2) of one cost, more than the grid's CTAs, so
         a CTA runs lane jobs x, x + gridDim.x (mode 2) and loads the next block's Q by TMA while the last
         one ends (hd_q_ahead); both precisions, FP8, run twice; then unequal requests (mode 1, the
         same Q ahead between a part's segments), against a uniform split; then a ragged q_len */
        int q[80], s[80];
        for (int b = 0; b < 80; b++) { q[b] = 2; s[b] = 200; }
        hcase c = mk(64, 64, 1, 80, q, s);
        c.sink_mode = 1;
        c.twice = 1;
        run_case(r, &c);
        c.p1 = 1; c.twice = 0;
        run_case(r, &c);
        c.p1 = 0; c.fp8 = 1;
        run_case(r, &c);
        for (int b = 0; b < 80; b++) s[b] = b == 5 ? 0 : h_int(r, 1, 400);
        c = mk(64, 64, 1, 80, q, s);
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 2;
        run_case(r, &c);
        c.p1 = 1; c.nsplits = 1;
        run_case(r, &c);
        q[3] = 6; /* a request of more row blocks than lanes: mode 0, persistent CTAs over the slots */
        for (int b = 0; b < 80; b++) s[b] = 200;
        c = mk(64, 64, 1, 80, q, s);
        run_case(r, &c);
    }
    { /* BF16 pages that are not multiples of 16, by TMA (p.gpage: each page's run of rows inside a tile
         as one box of a power of two rows, or two overlapping ones, landing at any row): page 61 (a
         run of 1-3 rows next to most tiles' page boundary), 17 (up to five runs a tile); both
         precisions, splits; then (full runs) page 100 with an out-of-range page and a padded page
         stride, 23, 33 and 127 with H 64 / 100 / 128, causal and not. Since v63 these pages are gathered
         row by row (run_gather); the runs of rows stay MLA_HD_GATHER=0's baseline, forced here */
        mla_cuda_decode_hopper_force_gather(0);
        const int q[3] = {2, 1, 2}, s[3] = {1000, 130, 64 * 5 + 3};
        hcase c = mk(128, 61, 1, 3, q, s);
        c.p1 = 1; c.sink_mode = 1; c.gather = 0;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        c.page = 17; c.p1 = 0;
        run_case(r, &c);
        if (!g_quick) {
            c.page = 100; c.p1 = 1; c.page_pad = 32; c.bad_page = 1;
            run_case(r, &c);
            c.page = 17; c.p1 = 0; /* the bad page's run between good ones in a tile */
            run_case(r, &c);
            c.page = 23; c.H = 64; c.page_pad = 0; c.bad_page = 0; c.causal = 0;
            run_case(r, &c);
            c.page = 33; c.H = 100; c.p1 = 1;
            run_case(r, &c);
            c.page = 127; c.H = 128; c.causal = 1; c.splits[1] = 3;
            run_case(r, &c);
        }
        mla_cuda_decode_hopper_force_gather(-1);
    }
    { /* page-aligned tiles (p.ptile: BF16 under MLA_PRECISION_BF16_P, no causal mask, pages 56..63 and
         120..127 that are not multiples of 16): tile t holds one page's keys (two tiles a page past
         64), the rows past the page zeros. Page 61 with requests ending inside a page, on a page's
         last key, and one page long, splits; then (full runs) an out-of-range page with a padded page
         stride, page 120 (two tiles a page, the second of 56 rows), page 56 (the 7/8 line) with H 100,
         and the balanced schedule over unequal requests (its plan counts page-aligned tiles). Each
         beside the default precision on the same shape, which keeps the runs of rows (its own
         page-aligned kernel measured no better: bench/results.md, session 42). Since v63 only pages one key
         short of a multiple of 64 take them by default (run_gather), so the rest is forced here
         (MLA_HD_GATHER=0) */
        mla_cuda_decode_hopper_force_gather(0);
        const int q[4] = {2, 1, 2, 1}, s[4] = {1000, 130, 61 * 5, 61};
        hcase c = mk(128, 61, 0, 4, q, s);
        c.p1 = 1; c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 3;
        run_case(r, &c);
        c.p1 = 0; c.H = 16;
        run_case(r, &c);
        { /* s_q = 1 at H 128 (two row blocks a request): the _ep general-page kernel on page-aligned tiles */
            const int q1[4] = {1, 1, 1, 1};
            hcase e = mk(128, 61, 0, 4, q1, s);
            e.p1 = 1;
            e.nsplits = 2; e.splits[0] = 0; e.splits[1] = 3;
            run_case(r, &e);
        }
        if (!g_quick) {
            c.H = 128; c.page_pad = 32; c.bad_page = 1; c.p1 = 1;
            run_case(r, &c);
            c.p1 = 0;
            run_case(r, &c);
            c.page = 120; c.page_pad = 0; c.bad_page = 0; c.p1 = 1;
            run_case(r, &c);
            c.page = 120; c.p1 = 0; c.splits[1] = 1;
            run_case(r, &c);
            c.page = 56; c.H = 100; c.p1 = 1;
            run_case(r, &c);
            c.p1 = 0;
            run_case(r, &c);
            int qb[40], sb[40];
            for (int b = 0; b < 40; b++) { qb[b] = 2; sb[b] = 61 * (1 + (b * 7) % 23) + (b * 13) % 61; }
            c = mk(128, 61, 0, 40, qb, sb);
            c.p1 = 1;
            run_case(r, &c);
            c.p1 = 0;
            run_case(r, &c);
        }
        mla_cuda_decode_hopper_force_gather(-1);
    }
    if (g_quick) return;
    { /* MLA_PRECISION_BF16_P on the other producers and shapes: page 48 (TMA, 16-row boxes: four
         issuers refill the parts), page 61 (TMA by runs), H 100 (a masked last row block), causal
         s_q = 3 (masked keys inside the last tiles), an odd and an even number of tiles */
        const int q[3] = {3, 1, 2}, s[3] = {1500, 130, 64 * 7};
        hcase c = mk(100, 48, 1, 3, q, s);
        c.p1 = 1;
        run_case(r, &c);
        c.page = 61; c.H = 128;
        run_case(r, &c);
    }
    { /* page 1 */
        const int q[2] = {2, 1}, s[2] = {100, 3};
        hcase c = mk(16, 1, 1, 2, q, s);
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
    }
    { /* page 100 (not a multiple of 64), H 64, non-causal */
        const int q[2] = {2, 2}, s[2] = {1000, 257};
        hcase c = mk(64, 100, 0, 2, q, s);
        c.sink_mode = 1;
        run_case(r, &c);
    }
    { /* page 192, H 100 */
        const int q[2] = {1, 2}, s[2] = {700, 450};
        hcase c = mk(100, 192, 1, 2, q, s);
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
    }
    { /* padded strides everywhere, sink with -inf / +inf */
        const int q[3] = {1, 2, 1}, s[3] = {129, 64, 700};
        hcase c = mk(16, 64, 1, 3, q, s);
        c.pad_q = 8; c.pad_out = 6; c.pad_lse = 3; c.page_pad = 64;
        c.sink_mode = 2;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
    }
    { /* Q by TMA and out by TMA stores (full row blocks of 64 / H tokens) beside cp.async and
         per-thread stores (the partial last blocks, unaligned strides): H 16, 32, 128 with q_len
         4..8, padded strides, sinks, causal, splits */
        const int q[3] = {5, 4, 8}, s[3] = {300, 64, 1000};
        hcase c = mk(16, 64, 1, 3, q, s);
        c.pad_q = 8; c.pad_out = 8; c.page_pad = 16;
        c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
        c.H = 32; c.pad_q = 0; c.pad_out = 2; /* out by per-thread stores (unaligned stride) */
        run_case(r, &c);
        c.H = 128; c.pad_out = 8; c.sink_mode = 2; /* H 128, both through TMA, padded out */
        run_case(r, &c);
    }
    { /* padded strides, H 128, lse NULL */
        const int q[2] = {2, 1}, s[2] = {500, 65};
        hcase c = mk(128, 128, 1, 2, q, s);
        c.pad_q = 16; c.pad_out = 2; c.page_pad = 16;
        c.no_lse = 1;
        run_case(r, &c);
    }
    { /* non-causal with q_len = seq_len, H 1 and 100 */
        const int q[2] = {3, 5}, s[2] = {3, 5};
        hcase c = mk(1, 64, 0, 2, q, s);
        run_case(r, &c);
        c.H = 100;
        run_case(r, &c);
    }
    { /* other scales */
        const int q[1] = {2}, s[1] = {900};
        hcase c = mk(64, 64, 1, 1, q, s);
        c.scale = 0.5;
        run_case(r, &c);
        c.scale = 0.01;
        c.splits[0] = 1;
        run_case(r, &c);
    }
    { /* one long request, H 128, s_q 2: automatic (many splits), unsplit, 7 splits; run twice */
        const int q[1] = {2}, s[1] = {4097};
        hcase c = mk(128, 64, 1, 1, q, s);
        c.nsplits = 3; c.splits[0] = 0; c.splits[1] = 1; c.splits[2] = 7;
        c.twice = 1;
        run_case(r, &c);
    }
    { /* eight requests of H 128, random lengths and q_len 1..3 */
        int q[8], s[8];
        for (int b = 0; b < 8; b++) { q[b] = h_int(r, 1, 3); s[b] = h_int(r, q[b], 2500); }
        hcase c = mk(128, 64, 1, 8, q, s);
        c.sink_mode = 1;
        c.nsplits = 2; c.splits[0] = 0; c.splits[1] = 1;
        run_case(r, &c);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Benchmark (MLA_BENCH_HOPPER=1)                                                              */

#define BCHECK(call)                                                                              \
    do {                                                                                          \
        cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                  \
            printf("bench: %s failed: %s\n", #call, cudaGetErrorString(e_));                      \
            ok = 0;                                                                               \
            goto done;                                                                            \
        }                                                                                         \
    } while (0)

static int cmp_float(const void *x, const void *y) {
    float a = *(const float *)x, b = *(const float *)y;
    return a < b ? -1 : a > b;
}

/* fmt: 0 BF16, 1 FP8 (power-of-two scales: the fast path), 2 FP8 (other scales: the exact program),
 * 3 FP8 rope-aware (sigma a power of two; packed q) */
static void bench_one(h_rng *r, int B, int H, int sq, int seq, int fmt) {
    const char *pge = getenv("MLA_BENCH_PAGE"); /* diagnosis (decode_trace.sh): another page size than 64 */
    /* MLA_BENCH_VARLEN=1 (diagnosis, traces): seq_lens N(seq, seq / 2) clipped to [s_q, 2 seq], as mla bench --varlen
       draws them (without the clip) */
    const char *vle = getenv("MLA_BENCH_VARLEN");
    const int varlen = vle && atoi(vle) == 1, seqmax = varlen ? 2 * seq : seq;
    const int T = B * sq, page = pge && atoi(pge) > 0 ? atoi(pge) : 64, ppr = (seqmax + page - 1) / page, npages = B * ppr;
    const int rowb = fmt == 3 ? RA_ROW : (fmt ? F8_ROW : 1152);
    const size_t pool_bytes = (size_t)npages * page * rowb, q_n = (size_t)T * H * (fmt == 3 ? RA_ROW / 2 : DK);
    void *d_qsig = NULL, *d_sig = NULL;
    const size_t flush_bytes = (size_t)256 << 20, chunk = (size_t)rowb << 16; /* whole rows */
    int ok = 1;
    void *d_q = NULL, *d_pool = NULL, *d_bt = NULL, *d_qoff = NULL, *d_seq = NULL, *d_out = NULL, *d_lse = NULL;
    void *d_ws = NULL, *d_flush = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float ms[20];
    uint16_t *hq = (uint16_t *)h_alloc(q_n * 2), *hc = (uint16_t *)h_alloc(chunk), ho[1024];
    int32_t *bt = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)npages), *perm = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)npages);
    int32_t *qoff = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)(B + 1)), *seqs = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)B);
    for (size_t i = 0; i < q_n; i++) hq[i] = bf16_of(h_uniform(r) * 4 - 2);
    if (fmt == 3) { /* rope-aware rows: sigma 2^-6, e4m3 of uniform values, rope / sigma */
        for (size_t row = 0; row < chunk / RA_ROW; row++) {
            uint8_t *rp = (uint8_t *)hc + row * RA_ROW;
            for (int i = 0; i < 512; i++) rp[i] = f32_to_e4m3_ref((float)(h_uniform(r) * 4 - 2) * 64.0f);
            for (int x = 0; x < 64; x++) {
                const uint16_t v = bf16_of((h_uniform(r) * 4 - 2) * 64.0);
                memcpy(rp + 512 + 2 * x, &v, 2);
            }
        }
        for (size_t i = 0; i < (size_t)T * H; i++) {
            uint8_t *qr = (uint8_t *)hq + i * RA_ROW;
            for (int k = 0; k < 512; k++) qr[k] = f32_to_e4m3_ref((float)(h_uniform(r) * 4 - 2) * 64.0f);
            for (int k = 0; k < 64; k++) {
                const uint16_t v = bf16_of((h_uniform(r) * 4 - 2) * 64.0);
                memcpy(qr + 512 + 2 * k, &v, 2);
            }
        }
    } else if (fmt) { /* FP8 rows: the writer's quantization of uniform values (or scales times 1.37) */
        for (size_t row = 0; row < chunk / F8_ROW; row++) {
            uint8_t *rp = (uint8_t *)hc + row * F8_ROW;
            for (int t = 0; t < 4; t++) {
                const float sc = pow2_scale_ref(2.0f) * (fmt == 2 ? 1.37f : 1.0f);
                memcpy(rp + 512 + 4 * t, &sc, 4);
                for (int i = 0; i < 128; i++) rp[128 * t + i] = f32_to_e4m3_ref((float)(h_uniform(r) * 4 - 2) / sc);
            }
            for (int x = 0; x < 64; x++) {
                const uint16_t v = bf16_of(h_uniform(r) * 4 - 2);
                memcpy(rp + 528 + 2 * x, &v, 2);
            }
        }
    } else {
        for (size_t i = 0; i < chunk / 2; i++) hc[i] = bf16_of(h_uniform(r) * 4 - 2);
    }
    for (int i = 0; i < npages; i++) perm[i] = i;
    for (int i = npages - 1; i > 0; i--) {
        int j = h_int(r, 0, i);
        int32_t x = perm[i]; perm[i] = perm[j]; perm[j] = x;
    }
    /* diagnosis (as mla bench): MLA_BENCH_POOL_PAGES=n maps every page to one of the first n;
       with MLA_BENCH_NOFLUSH=1 they stay in L2 */
    const char *poolp = getenv("MLA_BENCH_POOL_PAGES"), *nfp = getenv("MLA_BENCH_NOFLUSH");
    const int pool = poolp ? atoi(poolp) : 0, noflush = nfp && atoi(nfp) == 1;
    for (int i = 0; i < npages; i++) bt[i] = pool > 0 ? perm[i] % pool : perm[i];
    for (int b = 0; b <= B; b++) qoff[b] = b * sq;
    double sumseq = 0;
    for (int b = 0; b < B; b++) {
        seqs[b] = seq;
        if (varlen) {
            const double v = seq + h_normal(r) * seq / 2.0;
            seqs[b] = v < sq ? sq : (v > seqmax ? seqmax : (int)v);
        }
        sumseq += seqs[b];
    }

    BCHECK(cudaMalloc(&d_q, q_n * 2));
    BCHECK(cudaMalloc(&d_pool, pool_bytes));
    BCHECK(cudaMalloc(&d_bt, sizeof(int32_t) * (size_t)npages));
    BCHECK(cudaMalloc(&d_qoff, sizeof(int32_t) * (size_t)(B + 1)));
    BCHECK(cudaMalloc(&d_seq, sizeof(int32_t) * (size_t)B));
    BCHECK(cudaMalloc(&d_out, (size_t)T * H * DV * 2));
    BCHECK(cudaMalloc(&d_lse, (size_t)T * H * 4));
    BCHECK(cudaMalloc(&d_flush, flush_bytes));
    BCHECK(cudaMemcpy(d_q, hq, q_n * 2, cudaMemcpyHostToDevice));
    BCHECK(cudaMemcpy(d_pool, hc, pool_bytes < chunk ? pool_bytes : chunk, cudaMemcpyHostToDevice));
    for (size_t off = chunk; off < pool_bytes; off += chunk) /* replicate the random chunk */
        BCHECK(cudaMemcpy((uint8_t *)d_pool + off, d_pool, pool_bytes - off < chunk ? pool_bytes - off : chunk,
                          cudaMemcpyDeviceToDevice));
    BCHECK(cudaMemcpy(d_bt, bt, sizeof(int32_t) * (size_t)npages, cudaMemcpyHostToDevice));
    BCHECK(cudaMemcpy(d_qoff, qoff, sizeof(int32_t) * (size_t)(B + 1), cudaMemcpyHostToDevice));
    BCHECK(cudaMemcpy(d_seq, seqs, sizeof(int32_t) * (size_t)B, cudaMemcpyHostToDevice));
    if (fmt == 3) {
        float *hs = (float *)h_alloc(sizeof(float) * ((size_t)npages * page + (size_t)T));
        for (size_t i = 0; i < (size_t)npages * page + (size_t)T; i++) hs[i] = 1.0f / 64.0f;
        BCHECK(cudaMalloc(&d_sig, sizeof(float) * (size_t)npages * page));
        BCHECK(cudaMalloc(&d_qsig, sizeof(float) * (size_t)T));
        BCHECK(cudaMemcpy(d_sig, hs, sizeof(float) * (size_t)npages * page, cudaMemcpyHostToDevice));
        BCHECK(cudaMemcpy(d_qsig, hs, sizeof(float) * (size_t)T, cudaMemcpyHostToDevice));
        free(hs);
    }
    {
        mla_decode_args a;
        memset(&a, 0, sizeof a);
        a.num_tokens = T; a.num_heads = H; a.q = d_q;
        a.cache.base = d_pool; a.cache.page_stride = (int64_t)page * rowb; a.cache.page_size = page;
        a.cache.num_pages = npages; a.cache.format = fmt == 3 ? MLA_KV_FP8_ROPE_AWARE : (fmt ? MLA_KV_FP8 : MLA_KV_BF16);
        a.q_sigma = (const float *)d_qsig; a.cache.sigma = (float *)d_sig;
        a.batch.num_requests = B; a.batch.q_offsets = (const int32_t *)d_qoff; a.batch.seq_lens = (const int32_t *)d_seq;
        a.batch.block_table = (const int32_t *)d_bt; a.batch.bt_stride = ppr;
        a.causal = 1; a.scale = 0.1352338f; a.out = (uint16_t *)d_out; a.lse = (float *)d_lse;
        const char *pe = getenv("MLA_BENCH_PRECISION"); /* bf16p: MLA_PRECISION_BF16_P */
        a.precision = pe && !strcmp(pe, "bf16p") ? MLA_PRECISION_BF16_P : MLA_PRECISION_SPEC;
        const size_t ws = mla_cuda_decode_hopper_workspace(g_gpu, &a);
        if (ws) BCHECK(cudaMalloc(&d_ws, ws));
        a.workspace = d_ws; a.workspace_bytes = ws;
        const int splits = mla_cuda_decode_hopper_splits(g_gpu, &a);
        BCHECK(cudaEventCreate(&e0));
        BCHECK(cudaEventCreate(&e1));
        for (int it = 0; it < 3; it++)
            if (mla_cuda_decode_hopper(g_gpu, &a) != MLA_OK) { printf("bench: %s\n", mla_ctx_last_error(g_gpu)); ok = 0; goto done; }
        BCHECK(cudaDeviceSynchronize());
        for (int it = 0; it < 20; it++) {
            if (!noflush) BCHECK(cudaMemsetAsync(d_flush, it & 0xff, flush_bytes, 0)); /* evict the cache from L2 */
            BCHECK(cudaEventRecord(e0, 0));
            mla_status rc = mla_cuda_decode_hopper(g_gpu, &a);
            BCHECK(cudaEventRecord(e1, 0));
            if (rc != MLA_OK) { printf("bench: %s\n", mla_ctx_last_error(g_gpu)); ok = 0; goto done; }
            BCHECK(cudaEventSynchronize(e1));
            BCHECK(cudaEventElapsedTime(&ms[it], e0, e1));
        }
        const char *tr = getenv("MLA_HD_TRACE"); /* timeline of one launch (needs a -DHD_TRACE build) */
        if (tr && *tr) {
            mla_cuda_decode_hopper_trace_dump("/dev/null"); /* drops the earlier launches */
            if (!noflush) BCHECK(cudaMemsetAsync(d_flush, 1, flush_bytes, 0));
            BCHECK(cudaEventRecord(e0, 0));
            if (mla_cuda_decode_hopper(g_gpu, &a) != MLA_OK) { printf("bench: %s\n", mla_ctx_last_error(g_gpu)); ok = 0; goto done; }
            BCHECK(cudaEventRecord(e1, 0));
            BCHECK(cudaEventSynchronize(e1));
            float tms = 0;
            BCHECK(cudaEventElapsedTime(&tms, e0, e1));
            printf("trace launch: %.1f us (events)\n", tms * 1e3);
            char path[512];
            snprintf(path, sizeof path, "%s.%s_b%d_h%d_sq%d_s%d.txt", tr, fmt == 3 ? "fp8ra" : (fmt ? "fp8" : "bf16"), B, H, sq, seq);
            printf("trace %s: %s\n", path, mla_cuda_decode_hopper_trace_dump(path) == 0 ? "written" : "not available");
        }
        BCHECK(cudaMemcpy(ho, d_out, sizeof ho, cudaMemcpyDeviceToHost));
        int finite = 1;
        for (int i = 0; i < 1024; i++) finite &= isfinite(mla_bf16_to_f32(ho[i]));
        qsort(ms, 20, sizeof(float), cmp_float);
        const double t = 0.5 * (ms[9] + ms[10]) * 1e-3;
        const double flops = 2.0 * sq * H * (double)(DK + DV) * sumseq;
        const double bytes = sumseq * (rowb + (fmt == 3 ? 4 : 0)) + (double)q_n * 2 + (double)T * H * DV * 2;
        printf("bench %-9s b=%d h=%d s_q=%d seq=%d splits=%d: %.3f ms (min %.3f)  %.1f TFLOPS  %.2f TB/s%s\n",
               fmt == 0 ? "bf16" : (fmt == 1 ? "fp8" : (fmt == 2 ? "fp8-exact" : "fp8-ra")), B, H, sq, seq, splits, t * 1e3, ms[0],
               flops / t * 1e-12, bytes / t * 1e-12, finite ? "" : "  NON-FINITE OUTPUT");
        fflush(stdout);
    }
done:
    if (!ok) printf("bench fmt=%d b=%d h=%d s_q=%d seq=%d: not timed\n", fmt, B, H, sq, seq);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(d_q); cudaFree(d_pool); cudaFree(d_bt); cudaFree(d_qoff); cudaFree(d_seq); cudaFree(d_out);
    cudaFree(d_lse); cudaFree(d_ws); cudaFree(d_flush); cudaFree(d_qsig); cudaFree(d_sig);
    free(hq); free(hc); free(bt); free(perm); free(qoff); free(seqs);
}

/* MLA_BENCH_SEL: bit mask of the configurations below (default 0x1ff47: the BF16 and FP8
 * sets, one exact-program run and the two rope-aware runs; bits 17-18: 1K and 2K, with bits 0, 1,
 * 5, 6 the seqlen line whose intercept is the per-launch fixed cost) */
#define NCFG 19
static void bench_all(h_rng *r) {
    static const int cfg[NCFG][5] = { /* B, H, s_q, seq, fmt */
        {128, 128, 2, 4096, 0}, {128, 128, 2, 8192, 0}, {128, 16, 1, 16384, 0}, {2, 128, 1, 32768, 0},
        {8, 16, 1, 32768, 0},   {128, 128, 2, 16384, 0}, {128, 128, 2, 32768, 0}, {128, 128, 1, 8192, 0},
        {4, 128, 1, 32768, 0},  {128, 128, 2, 4096, 1}, {128, 128, 2, 8192, 1}, {128, 128, 2, 32768, 1},
        {128, 16, 1, 16384, 1}, {4, 128, 1, 32768, 1},  {128, 128, 2, 8192, 2}, {128, 128, 2, 8192, 3},
        {128, 16, 1, 16384, 3}, {128, 128, 2, 1024, 0}, {128, 128, 2, 2048, 0}};
    const char *se = getenv("MLA_BENCH_SEL");
    const int sel = se ? (int)strtol(se, NULL, 0) : 0x1ff47;
    const char *be = getenv("MLA_BENCH_BATCH"); /* overrides the batch of the selected configurations */
    const int bo = be ? atoi(be) : 0;
    for (int i = 0; i < NCFG; i++)
        if (sel & (1 << i)) bench_one(r, bo > 0 ? bo : cfg[i][0], cfg[i][1], cfg[i][2], cfg[i][3], cfg[i][4]);
}

int main(void) {
    const char *qe = getenv("MLA_TEST_QUICK");
    g_quick = qe && atoi(qe) != 0;
    if (mla_cuda_device_count() == 0) {
        h_begin("decode_hopper");
        h_skip("no CUDA device");
        return h_finish();
    }
    mla_ctx_params cp = mla_ctx_params_default();
    cp.backend = MLA_BACKEND_CUDA;
    if (mla_ctx_create(&cp, &g_gpu) != MLA_OK) {
        h_begin("decode_hopper");
        h_skip("cannot create a CUDA context");
        return h_finish();
    }
    { /* the kernel needs SM 9.0: elsewhere the whole file is skipped */
        mla_decode_args a;
        memset(&a, 0, sizeof a);
        a.num_heads = 1;
        a.cache.format = MLA_KV_BF16;
        a.cache.page_size = 64;
        char why[200];
        if (!mla_cuda_decode_hopper_supported(g_gpu, &a, why, sizeof why)) {
            h_begin("decode_hopper");
            h_skip(why);
            mla_ctx_destroy(g_gpu);
            return h_finish();
        }
    }
    h_rng r = {0x5eedd0c0de0001ull};
    const char *be = getenv("MLA_BENCH_HOPPER");
    const int bench = be ? atoi(be) : 0;
    if (bench != 2) { /* MLA_BENCH_HOPPER=2: timing only */
        run_all(&r);
        run_gather(&r);
        run_fused(&r);
        run_f8g(&r);
        run_fp8(&r);
        run_narrow(&r);
        run_narrow_gather(&r);
        run_wide(&r, 32);
        /* 64 rows: the one-chain program with its scan on every launch (these are too short for the
           automatic rule), then the exact program alone */
        mla_cuda_decode_hopper_force_one(2);
        run_wide(&r, 64);
        mla_cuda_decode_hopper_force_one(0);
        if (!g_quick) run_wide(&r, 64);
        mla_cuda_decode_hopper_force_one(-1);
        run_ra(&r);
    }
    if (bench) bench_all(&r);
    mla_ctx_destroy(g_gpu);
    return h_finish();
}

#else /* built without CUDA */

int main(void) {
    h_begin("decode_hopper");
    h_skip("built without CUDA");
    return h_finish();
}

#endif
