/* The exact operations (SPEC 3, 4.2, 4.5, 4.6, section 5 "exact, byte for byte"):
 * mla_cache_store (all three latent formats), mla_quantize_q_rope_aware, mla_indices_to_slots,
 * mla_indexer_cache_store. Cases are generated here from a seeded generator (nothing is read from
 * disk); the expected bytes come from an independent reference in this file (double precision,
 * the SPEC formulas, e4m3 and bf16 rounding by nearest-value search), and every byte the call
 * must not write (NaN garbage in other slots, pages, stride padding) must come back unchanged. */
#include <limits.h>

#include "harness.h"
#include "cpu/cpu.h" /* backend entries, to reach the page-id guards validation would reject */

/* ------------------------------------------------------------------------------------------ */
/* Independent reference conversions (double in, codes out)                                     */

static double e4m3_val[127]; /* magnitudes of codes 0x00..0x7e, ascending */

static void ref_init(void) {
    for (int c = 0; c < 127; c++) {
        int e = c >> 3, m = c & 7;
        e4m3_val[c] = e == 0 ? m * ldexp(1, -9) : (1 + m / 8.0) * ldexp(1, e - 7);
    }
}

/* nearest e4m3 code, ties to the even code, saturating at 448; sign kept (also for zero) */
static uint8_t ref_e4m3(double v) {
    uint8_t s = signbit(v) ? 0x80 : 0;
    double a = fabs(v);
    if (isnan(v)) return (uint8_t)(s | 0x7f);
    if (a >= 448) return (uint8_t)(s | 0x7e);
    int lo = 0, hi = 126; /* largest c with e4m3_val[c] <= a */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (e4m3_val[mid] <= a) lo = mid;
        else hi = mid - 1;
    }
    double d_lo = a - e4m3_val[lo], d_hi = e4m3_val[lo + 1] - a;
    int c = d_lo < d_hi ? lo : d_hi < d_lo ? lo + 1 : ((lo & 1) ? lo + 1 : lo);
    return (uint8_t)(s | c);
}

/* nearest bf16 (8 significant bits, subnormal quantum 2^-133), ties to even */
static uint16_t ref_bf16(double v) {
    uint16_t s = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    if (a == 0) return s;
    int e;
    frexp(a, &e); /* leading bit at 2^(e-1) */
    int lead = e - 1 < -126 ? -126 : e - 1;
    double q = ldexp(1, lead - 7);
    float f = (float)(rint(a / q) * q); /* exact: at most 8 significant bits */
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(s | (u >> 16));
}

static double bf(uint16_t x) {
    uint32_t u = (uint32_t)x << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* SPEC 3: 2^ceil(log2(max(amax / 448, 1e-4))) */
static double ref_scale(double amax) {
    double r = amax / 448.0;
    if (r < 1e-4) r = 1e-4;
    int e;
    double m = frexp(r, &e); /* r = m * 2^e, m in [0.5, 1) */
    return m == 0.5 ? ldexp(1, e - 1) : ldexp(1, e);
}

static double ref_amax(const uint16_t *x, int n) {
    double m = 0;
    for (int i = 0; i < n; i++)
        if (fabs(bf(x[i])) > m) m = fabs(bf(x[i]));
    return m;
}

static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v & 0xff); p[1] = (uint8_t)(v >> 8); }
static void put_f32(uint8_t *p, float v) { memcpy(p, &v, 4); }

/* ------------------------------------------------------------------------------------------ */
/* Generated inputs                                                                            */


/* A value that sits exactly on the midpoint of two neighbouring e4m3 codes (times 2^k). */
static double e4m3_midpoint(h_rng *r, int k) {
    int c = h_int(r, 0, 125);
    double v = (e4m3_val[c] + e4m3_val[c + 1]) / 2 * ldexp(1, k);
    return (h_next(r) & 1) ? -v : v;
}

enum {
    ROW_NORMAL,
    ROW_ZERO_LATENT,   /* every latent value 0 (an all-zero tile for FP8, sigma 2^-13 for rope-aware) */
    ROW_BIG_TILE,      /* one tile with amax ~1e4 */
    ROW_TINY_TILE,     /* one tile of ~1e-6 values */
    ROW_TINY_ALL,      /* the whole latent ~1e-6 */
    ROW_MIDPOINTS,     /* x / scale lands exactly on e4m3 rounding midpoints */
    ROW_ROPE_SUBNORMAL,/* amax 1e4 and rope ~1e-38: rope / sigma falls in bf16's subnormal range */
    ROW_SIGNED_ZEROS,  /* -0, +0 and bf16 subnormal inputs */
    ROW_KINDS
};

/* n latent values (in tiles of `tile`) then n_rope rope values, as bf16 */
static void gen_row(h_rng *r, uint16_t *x, int n, int tile, int n_rope, int kind) {
    double mag = pow(10, h_uniform(r) * 4 - 2);
    int special_tile = h_int(r, 0, n / tile - 1);
    int k = h_int(r, -4, 4);
    for (int d = 0; d < n; d++) {
        double v = h_normal(r) * mag;
        int in_special = d / tile == special_tile;
        switch (kind) {
        case ROW_ZERO_LATENT: v = 0; break;
        case ROW_BIG_TILE: if (in_special) v = h_normal(r) * 2000; break;
        case ROW_TINY_TILE: if (in_special) v = h_normal(r) * 1e-6; break;
        case ROW_TINY_ALL: v = h_normal(r) * 1e-6; break;
        case ROW_MIDPOINTS: v = e4m3_midpoint(r, k); break;
        case ROW_ROPE_SUBNORMAL: if (in_special) v = h_normal(r) * 3000; break;
        case ROW_SIGNED_ZEROS: {
            int u = h_int(r, 0, 3);
            v = u == 0 ? -0.0 : u == 1 ? 0.0 : u == 2 ? h_normal(r) * 1e-39 : v;
            break;
        }
        default: break;
        }
        x[d] = ref_bf16(v);
    }
    if (kind == ROW_BIG_TILE) x[special_tile * tile + h_int(r, 0, tile - 1)] = ref_bf16(h_next(r) & 1 ? 1e4 : -1.0001e4);
    if (kind == ROW_ROPE_SUBNORMAL) x[special_tile * tile] = ref_bf16(9984);
    if (kind == ROW_MIDPOINTS) /* pin the scale: amax = 448 * 2^k in every tile */
        for (int t0 = 0; t0 < n; t0 += tile) x[t0 + h_int(r, 0, tile - 1)] = ref_bf16((h_next(r) & 1 ? 448 : -448) * ldexp(1, k));
    for (int d = 0; d < n_rope; d++) {
        double v = h_normal(r) * (kind == ROW_ROPE_SUBNORMAL ? 1e-38 : pow(10, h_uniform(r) * 2 - 1));
        if (kind == ROW_MIDPOINTS && (d & 1)) v = e4m3_midpoint(r, k);
        x[n + d] = ref_bf16(v);
    }
}

/* A ragged batch over a paged pool: pages shuffled, spare pages, garbage past each request's
 * pages in the block table, q_len 0 included. */
typedef struct {
    int32_t B, T, num_pages, page_size;
    int64_t bt_stride;
    int32_t *q_offsets, *seq_lens, *block_table;
} tbatch;

static void make_batch(h_rng *r, tbatch *tb, int page_size, int B, int max_qlen, int max_prefix) {
    tb->B = B;
    tb->page_size = page_size;
    tb->q_offsets = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)(B + 1));
    tb->seq_lens = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)B);
    int used = 0, max_pages = 1;
    for (int b = 0; b < B; b++) {
        int ql = h_int(r, 0, max_qlen);
        if (b == 0 && ql < (max_qlen + 1) / 2) ql = (max_qlen + 1) / 2; /* at least one token; many for prefill */
        if (b == 1) ql = 0;                 /* a request with no new token */
        tb->q_offsets[b + 1] = tb->q_offsets[b] + ql;
        tb->seq_lens[b] = ql + h_int(r, 0, max_prefix);
        int pages = (tb->seq_lens[b] + page_size - 1) / page_size;
        used += pages;
        if (pages > max_pages) max_pages = pages;
    }
    tb->T = tb->q_offsets[B];
    tb->num_pages = used + h_int(r, 1, 3);
    tb->bt_stride = max_pages + h_int(r, 0, 2);
    int32_t *perm = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)tb->num_pages);
    for (int i = 0; i < tb->num_pages; i++) perm[i] = i;
    for (int i = tb->num_pages - 1; i > 0; i--) {
        int j = h_int(r, 0, i);
        int32_t s = perm[i]; perm[i] = perm[j]; perm[j] = s;
    }
    tb->block_table = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)(B * tb->bt_stride));
    int next = 0;
    for (int b = 0; b < B; b++) {
        int pages = (tb->seq_lens[b] + page_size - 1) / page_size;
        for (int64_t p = 0; p < tb->bt_stride; p++)
            tb->block_table[b * tb->bt_stride + p] = p < pages ? perm[next++] : (p & 1 ? INT32_MAX : 2147480000);
    }
    free(perm);
}

static void free_batch(tbatch *tb) { free(tb->q_offsets); free(tb->seq_lens); free(tb->block_table); }

static mla_batch as_batch(const tbatch *tb) {
    mla_batch b = {0};
    b.num_requests = tb->B;
    b.q_offsets = tb->q_offsets;
    b.seq_lens = tb->seq_lens;
    b.block_table = tb->block_table;
    b.bt_stride = tb->bt_stride;
    return b;
}


/* ------------------------------------------------------------------------------------------ */
/* mla_cache_store                                                                             */

static const char *fmt_short(mla_format f) {
    return f == MLA_KV_BF16 ? "bf16" : f == MLA_KV_FP8 ? "fp8" : f == MLA_KV_FP8_ROPE_AWARE ? "ropeaware" : "idx";
}

/* Writes the reference row of token t (request b, position pos) into the expected pool. */
static void ref_store_row(uint8_t *row, float *sigma_out, mla_format fmt, const uint16_t *x) {
    if (fmt == MLA_KV_BF16) {
        for (int d = 0; d < MLA_KEY_DIM; d++) put_u16(row + 2 * d, x[d]);
    } else if (fmt == MLA_KV_FP8) {
        for (int k = 0; k < 4; k++) {
            double s = ref_scale(ref_amax(x + 128 * k, 128));
            for (int d = 0; d < 128; d++) row[128 * k + d] = ref_e4m3(bf(x[128 * k + d]) / s);
            put_f32(row + 512 + 4 * k, (float)s);
        }
        for (int d = 0; d < MLA_ROPE_DIM; d++) put_u16(row + 528 + 2 * d, x[512 + d]);
    } else {
        double s = ref_scale(ref_amax(x, 512));
        for (int d = 0; d < 512; d++) row[d] = ref_e4m3(bf(x[d]) / s);
        for (int d = 0; d < MLA_ROPE_DIM; d++) put_u16(row + 512 + 2 * d, ref_bf16(bf(x[512 + d]) / s));
        *sigma_out = (float)s;
    }
}

typedef struct {
    mla_format fmt;
    int page_size, B, max_qlen, max_prefix;
    int pad_page, pad_rows, sigma_pad; /* extra bytes per page, extra elements per row, extra sigma per page */
    int bad_page_request;              /* >= 0: that request's first page id is out of range (guard test) */
} store_case;

static void run_cache_store(mla_ctx *ctx, h_rng *r, const store_case *sc, const char *name) {
    h_begin("%s", name);
    tbatch tb;
    make_batch(r, &tb, sc->page_size, sc->B, sc->max_qlen, sc->max_prefix);
    int64_t row_bytes = (int64_t)mla_cache_row_bytes(sc->fmt, 0);
    int64_t page_stride = row_bytes * sc->page_size + sc->pad_page;
    size_t pool = (size_t)(page_stride * tb.num_pages);
    int64_t sig_stride = sc->sigma_pad ? sc->page_size + sc->sigma_pad : 0;
    int64_t sig_eff = sig_stride ? sig_stride : sc->page_size;
    size_t sig_n = (size_t)(sig_eff * tb.num_pages);
    int64_t rs = MLA_KEY_DIM + sc->pad_rows;

    uint8_t *cache = (uint8_t *)h_alloc(pool), *want = (uint8_t *)h_alloc(pool);
    float *sig = (float *)h_alloc(sig_n * 4), *want_sig = (float *)h_alloc(sig_n * 4);
    uint16_t *rows = (uint16_t *)h_alloc(sizeof(uint16_t) * (size_t)(tb.T * rs));
    h_fill_garbage(r, cache, pool);
    h_fill_garbage(r, sig, sig_n * 4);
    h_fill_garbage(r, rows, sizeof(uint16_t) * (size_t)(tb.T * rs)); /* stride padding: never read */
    for (int t = 0; t < tb.T; t++) gen_row(r, rows + t * rs, 512, 128, 64, t % ROW_KINDS);
    memcpy(want, cache, pool);
    memcpy(want_sig, sig, sig_n * 4);

    int bad_page = -1;
    if (sc->bad_page_request >= 0) { /* guard: the backend must skip the page of this request's last token */
        int64_t e = sc->bad_page_request * tb.bt_stride + (tb.seq_lens[sc->bad_page_request] - 1) / sc->page_size;
        bad_page = tb.block_table[e];
        tb.block_table[e] = tb.num_pages;
    }
    int written = 0;
    for (int b = 0; b < tb.B; b++) {
        int ql = tb.q_offsets[b + 1] - tb.q_offsets[b];
        for (int i = 0; i < ql; i++) {
            int pos = tb.seq_lens[b] - ql + i;
            int32_t page = tb.block_table[b * tb.bt_stride + pos / sc->page_size];
            if (page < 0 || page >= tb.num_pages) continue;
            int slot = pos % sc->page_size;
            ref_store_row(want + page * page_stride + slot * row_bytes, want_sig + page * sig_eff + slot, sc->fmt,
                          rows + (tb.q_offsets[b] + i) * rs);
            written++;
        }
    }

    mla_cache_store_args a = {0};
    a.num_tokens = tb.T;
    a.rows = rows;
    a.rows_stride_t = sc->pad_rows ? rs : 0;
    a.cache.base = cache;
    a.cache.page_stride = page_stride;
    a.cache.page_size = sc->page_size;
    a.cache.num_pages = tb.num_pages;
    a.cache.format = sc->fmt;
    if (sc->fmt == MLA_KV_FP8_ROPE_AWARE) {
        a.cache.sigma = sig;
        a.cache.sigma_stride_page = sig_stride;
    }
    a.batch = as_batch(&tb);
    mla_status rc = sc->bad_page_request >= 0 ? mla_cpu_cache_store(ctx, &a) : mla_cache_store(ctx, &a);
    EXPECT_OK(ctx, rc);
    int64_t at = h_first_diff(cache, want, pool);
    if (at >= 0)
        EXPECT(0, "cache byte %lld (page %lld, byte %lld of the page) is %02x, want %02x (T=%d, %d rows written)",
               (long long)at, (long long)(at / page_stride), (long long)(at % page_stride), cache[at], want[at], tb.T,
               written);
    at = h_first_diff(sig, want_sig, sig_n * 4);
    EXPECT(at < 0, "sigma pool differs at float %lld", (long long)(at / 4));
    if (bad_page >= 0) EXPECT(written < tb.T, "the guard case must have a skipped token");
    free(cache); free(want); free(sig); free(want_sig); free(rows);
    free_batch(&tb);
    h_end();
}

static void test_cache_store(mla_ctx *ctx, h_rng *r) {
    const mla_format fmts[3] = {MLA_KV_BF16, MLA_KV_FP8, MLA_KV_FP8_ROPE_AWARE};
    const int pages[4] = {1, 16, 61, 64};
    char name[200];
    for (int f = 0; f < 3; f++)
        for (int p = 0; p < 4; p++) {
            store_case sc = {fmts[f], pages[p], h_int(r, 2, 5), 6, 150, 0, 0, 0, -1};
            if (p & 1) { sc.pad_page = 48; sc.pad_rows = 8; sc.sigma_pad = 3; }
            snprintf(name, sizeof name, "cache_store %s page=%d B=%d%s", fmt_short(fmts[f]), pages[p], sc.B,
                     sc.pad_page ? " padded strides" : "");
            run_cache_store(ctx, r, &sc, name);
        }
    for (int f = 0; f < 3; f++) { /* prefill-sized: the OpenMP path */
        store_case sc = {fmts[f], 64, 2, 300, 100, 0, 0, 0, -1};
        snprintf(name, sizeof name, "cache_store %s page=64 prefill (150-300 tokens, parallel)", fmt_short(fmts[f]));
        run_cache_store(ctx, r, &sc, name);
    }
    for (int f = 0; f < 3; f++) { /* backend guard: validation would refuse, the backend must still skip */
        store_case sc = {fmts[f], 16, 3, 5, 40, 0, 0, 1, 0};
        snprintf(name, sizeof name, "cache_store %s backend skips an out-of-range page id", fmt_short(fmts[f]));
        run_cache_store(ctx, r, &sc, name);
    }

    h_begin("cache_store: zero tokens writes nothing");
    {
        uint8_t cache[1152 * 2], before[sizeof cache];
        h_fill_garbage(r, cache, sizeof cache);
        memcpy(before, cache, sizeof cache);
        int32_t qo[2] = {0, 0}, sl[1] = {2}, bt[1] = {0};
        mla_cache_store_args a = {0};
        a.cache.base = cache;
        a.cache.page_stride = sizeof cache;
        a.cache.page_size = 2;
        a.cache.num_pages = 1;
        a.cache.format = MLA_KV_BF16;
        a.batch.num_requests = 1;
        a.batch.q_offsets = qo;
        a.batch.seq_lens = sl;
        a.batch.block_table = bt;
        a.batch.bt_stride = 1;
        mla_status rc = mla_cache_store(ctx, &a);
        EXPECT_OK(ctx, rc);
        EXPECT(memcmp(cache, before, sizeof cache) == 0, "cache changed");
    }
    h_end();
}

/* ------------------------------------------------------------------------------------------ */
/* mla_quantize_q_rope_aware                                                                   */

enum { Q_NORMAL, Q_ZERO_TOKEN, Q_OUTLIER_5000, Q_TINY, Q_MIDPOINTS, Q_ROPE_SUBNORMAL, Q_KINDS };

static void run_quantize_q(mla_ctx *ctx, h_rng *r, int T, int H, int padded) {
    h_begin("quantize_q_rope_aware T=%d H=%d%s", T, H, padded ? " padded strides" : "");
    int64_t qh = MLA_KEY_DIM + (padded ? 16 : 0), qt = H * qh + (padded ? 40 : 0);
    int64_t oh = 640 + (padded ? 24 : 0), ot = H * oh + (padded ? 64 : 0);
    size_t qn = (size_t)(T * qt), on = (size_t)(T * ot);
    uint16_t *q = (uint16_t *)h_alloc(qn * 2);
    uint8_t *out = (uint8_t *)h_alloc(on), *want = (uint8_t *)h_alloc(on);
    float *sig = (float *)h_alloc((size_t)(T + 4) * 4), *want_sig = (float *)h_alloc((size_t)(T + 4) * 4);
    h_fill_garbage(r, q, qn * 2);
    h_fill_garbage(r, out, on);
    h_fill_garbage(r, sig, (size_t)(T + 4) * 4);
    memcpy(want_sig, sig, (size_t)(T + 4) * 4);
    for (int t = 0; t < T; t++) {
        int kind = t % Q_KINDS, k = h_int(r, -3, 3);
        int hot = h_int(r, 0, H - 1);
        for (int h = 0; h < H; h++) {
            uint16_t *x = q + t * qt + h * qh;
            int row_kind = kind == Q_ZERO_TOKEN ? ROW_ZERO_LATENT : kind == Q_TINY ? ROW_TINY_ALL : ROW_NORMAL;
            gen_row(r, x, 512, 512, 64, row_kind);
            if (kind == Q_MIDPOINTS) { /* every head on midpoints of 2^k; amax 448 * 2^k in head `hot` */
                for (int d = 0; d < 512; d++) x[d] = ref_bf16(e4m3_midpoint(r, k));
                if (h == hot) x[h_int(r, 0, 511)] = ref_bf16(-448 * ldexp(1, k));
            }
            if (kind == Q_OUTLIER_5000 && h == hot) x[h_int(r, 0, 511)] = ref_bf16(5000);
            if (kind == Q_ROPE_SUBNORMAL) {
                if (h == hot) x[h_int(r, 0, 511)] = ref_bf16(9000);
                for (int d = 0; d < 64; d++) x[512 + d] = ref_bf16(h_normal(r) * 1e-38);
            }
        }
    }
    memcpy(want, out, on);
    for (int t = 0; t < T; t++) {
        double amax = 0;
        for (int h = 0; h < H; h++) {
            double m = ref_amax(q + t * qt + h * qh, 512);
            if (m > amax) amax = m;
        }
        double s = ref_scale(amax);
        for (int h = 0; h < H; h++) {
            const uint16_t *x = q + t * qt + h * qh;
            uint8_t *o = want + t * ot + h * oh;
            for (int d = 0; d < 512; d++) o[d] = ref_e4m3(bf(x[d]) / s);
            for (int d = 0; d < 64; d++) put_u16(o + 512 + 2 * d, ref_bf16(bf(x[512 + d]) / s));
        }
        want_sig[t] = (float)s;
    }
    mla_quantize_q_rope_aware_args a = {0};
    a.num_tokens = T;
    a.num_heads = H;
    a.q = q;
    a.q_out = out;
    a.q_sigma = sig;
    if (padded) { a.q_stride_t = qt; a.q_stride_h = qh; a.q_out_stride_t = ot; a.q_out_stride_h = oh; }
    mla_status rc = mla_quantize_q_rope_aware(ctx, &a);
    EXPECT_OK(ctx, rc);
    int64_t at = h_first_diff(out, want, on);
    if (at >= 0)
        EXPECT(0, "q_out byte %lld (t %lld, h %lld, byte %lld) is %02x, want %02x", (long long)at, (long long)(at / ot),
               (long long)(at % ot / oh), (long long)(at % ot % oh), out[at], want[at]);
    at = h_first_diff(sig, want_sig, (size_t)(T + 4) * 4);
    EXPECT(at < 0, "q_sigma differs at float %lld (T = %d; entries >= T must stay)", (long long)(at / 4), T);
    /* the special tokens did what they are for */
    if (T > Q_ZERO_TOKEN) EXPECT(sig[Q_ZERO_TOKEN] == ldexpf(1, -13), "all-zero token: sigma %g, want 2^-13", sig[Q_ZERO_TOKEN]);
    if (T > Q_OUTLIER_5000) EXPECT(sig[Q_OUTLIER_5000] == 16.0f, "5000 outlier: sigma %g, want 16", sig[Q_OUTLIER_5000]);
    free(q); free(out); free(want); free(sig); free(want_sig);
    h_end();
}

static void test_quantize_q(mla_ctx *ctx, h_rng *r) {
    run_quantize_q(ctx, r, 7, 1, 0);
    run_quantize_q(ctx, r, 6, 3, 1);
    run_quantize_q(ctx, r, 12, 16, 0);
    run_quantize_q(ctx, r, 6, 128, 1);
    run_quantize_q(ctx, r, 70, 8, 0); /* parallel path */

    h_begin("quantize_q_rope_aware: zero tokens writes nothing");
    uint16_t q[576] = {0};
    uint8_t out[640];
    float s[2] = {1.5f, 2.5f};
    memset(out, 0xa5, sizeof out);
    mla_quantize_q_rope_aware_args a = {0};
    a.num_tokens = 0;
    a.num_heads = 1;
    a.q = q;
    a.q_out = out;
    a.q_sigma = s;
    mla_status rc = mla_quantize_q_rope_aware(ctx, &a);
    EXPECT_OK(ctx, rc);
    int untouched = 1;
    for (int i = 0; i < 640; i++) untouched &= out[i] == 0xa5;
    EXPECT(untouched && s[0] == 1.5f && s[1] == 2.5f, "outputs changed");
    h_end();
}

/* ------------------------------------------------------------------------------------------ */
/* mla_indices_to_slots                                                                        */

static void run_indices_to_slots(mla_ctx *ctx, h_rng *r, int page_size, int B, int topk, int padded, int guard) {
    h_begin("indices_to_slots page=%d B=%d topk=%d%s%s", page_size, B, topk, padded ? " padded strides" : "",
            guard ? " backend skips an out-of-range page id" : "");
    tbatch tb;
    make_batch(r, &tb, page_size, B, 5, 200);
    int T = tb.T;
    int64_t is = topk + (padded ? 5 : 0), ss = topk + (padded ? 3 : 0);
    int32_t *ind = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)(T * is));
    int32_t *slots = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)(T * ss));
    int32_t *want = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)(T * ss));
    h_fill_garbage(r, ind, sizeof(int32_t) * (size_t)(T * is));
    h_fill_garbage(r, slots, sizeof(int32_t) * (size_t)(T * ss));
    int kinds_seen[8] = {0};
    for (int t = 0; t < T; t++) {
        int b = 0;
        while (tb.q_offsets[b + 1] <= t) b++;
        int sl = tb.seq_lens[b];
        for (int j = 0; j < topk; j++) {
            int kind = j < 8 ? j : h_int(r, 0, 9);
            int32_t p;
            switch (kind) {
            case 0: p = -1; break;
            case 1: p = INT32_MIN; break;
            case 2: p = -h_int(r, 2, 1000000); break;
            case 3: p = sl; break;                     /* p == seq_len */
            case 4: p = sl + h_int(r, 1, 1000); break; /* p > seq_len */
            case 5: p = INT32_MAX; break;
            case 6: p = 0; break;
            case 7: p = sl - 1; break;
            default: p = sl > 0 ? h_int(r, 0, sl - 1) : -1; break;
            }
            if (kind < 8) kinds_seen[kind] = 1;
            ind[t * is + j] = p;
        }
    }
    if (guard) tb.block_table[0] = h_next(r) & 1 ? -3 : tb.num_pages; /* request 0's first page */
    memcpy(want, slots, sizeof(int32_t) * (size_t)(T * ss));
    for (int t = 0; t < T; t++) {
        int b = 0;
        while (tb.q_offsets[b + 1] <= t) b++;
        for (int j = 0; j < topk; j++) {
            int64_t p = ind[t * is + j], s = -1;
            if (p >= 0 && p < tb.seq_lens[b]) {
                int64_t page = tb.block_table[b * tb.bt_stride + p / page_size];
                if (page >= 0 && page < tb.num_pages) s = page * page_size + p % page_size;
            }
            want[t * ss + j] = (int32_t)s;
        }
    }
    mla_indices_to_slots_args a = {0};
    a.num_tokens = T;
    a.topk = topk;
    a.batch = as_batch(&tb);
    a.page_size = page_size;
    a.num_pages = tb.num_pages;
    a.indices = ind;
    a.slots = slots;
    if (padded) { a.indices_stride_t = is; a.slots_stride_t = ss; }
    mla_status rc = guard ? mla_cpu_indices_to_slots(ctx, &a) : mla_indices_to_slots(ctx, &a);
    EXPECT_OK(ctx, rc);
    int64_t at = h_first_diff(slots, want, sizeof(int32_t) * (size_t)(T * ss));
    if (at >= 0) {
        int64_t e = at / 4;
        EXPECT(0, "slots[%lld][%lld] = %d, want %d (index %d)", (long long)(e / ss), (long long)(e % ss), slots[e],
               want[e], e % ss < topk ? ind[e / ss * is + e % ss] : 0);
    }
    if (topk >= 8) EXPECT(kinds_seen[3] && kinds_seen[5], "corner positions were generated");
    free(ind); free(slots); free(want);
    free_batch(&tb);
    h_end();
}

static void test_indices_to_slots(mla_ctx *ctx, h_rng *r) {
    const int pages[4] = {1, 16, 61, 64};
    for (int p = 0; p < 4; p++) run_indices_to_slots(ctx, r, pages[p], h_int(r, 2, 5), 8 + 13 * p, p & 1, 0);
    run_indices_to_slots(ctx, r, 64, 3, 2048, 0, 0);  /* DSA top-k: parallel path */
    run_indices_to_slots(ctx, r, 16, 3, 40, 1, 1);

    h_begin("indices_to_slots: zero tokens writes nothing");
    int32_t qo[2] = {0, 0}, sl[1] = {0}, bt[1] = {0}, ind[4] = {0, 1, 2, 3}, out[4] = {7, 7, 7, 7};
    mla_indices_to_slots_args a = {0};
    a.topk = 4;
    a.batch.num_requests = 1;
    a.batch.q_offsets = qo;
    a.batch.seq_lens = sl;
    a.batch.block_table = bt;
    a.batch.bt_stride = 1;
    a.page_size = 1;
    a.num_pages = 1;
    a.indices = ind;
    a.slots = out;
    mla_status rc = mla_indices_to_slots(ctx, &a);
    EXPECT_OK(ctx, rc);
    EXPECT(out[0] == 7 && out[1] == 7 && out[2] == 7 && out[3] == 7, "slots changed");
    h_end();
}

/* ------------------------------------------------------------------------------------------ */
/* mla_indexer_cache_store                                                                     */

static void run_indexer_store(mla_ctx *ctx, h_rng *r, int D, int page_size, int B, int max_qlen, int padded,
                              int guard) {
    h_begin("indexer_cache_store D=%d page=%d B=%d%s%s", D, page_size, B, padded ? " padded strides" : "",
            guard ? " backend skips an out-of-range page id" : "");
    tbatch tb;
    make_batch(r, &tb, page_size, B, max_qlen, 150);
    int64_t page_stride = (int64_t)page_size * (D + 4) + (padded ? 40 : 0);
    size_t pool = (size_t)(page_stride * tb.num_pages);
    int64_t ks = D + (padded ? 8 : 0);
    uint8_t *cache = (uint8_t *)h_alloc(pool), *want = (uint8_t *)h_alloc(pool);
    uint16_t *k = (uint16_t *)h_alloc(sizeof(uint16_t) * (size_t)(tb.T * ks));
    h_fill_garbage(r, cache, pool);
    h_fill_garbage(r, k, sizeof(uint16_t) * (size_t)(tb.T * ks));
    for (int t = 0; t < tb.T; t++) gen_row(r, k + t * ks, D, D, 0, t % ROW_KINDS);
    if (guard) tb.block_table[(tb.seq_lens[0] - 1) / page_size] = tb.num_pages + 5; /* request 0's last token */
    memcpy(want, cache, pool);
    for (int b = 0; b < tb.B; b++) {
        int ql = tb.q_offsets[b + 1] - tb.q_offsets[b];
        for (int i = 0; i < ql; i++) {
            int pos = tb.seq_lens[b] - ql + i;
            int32_t page = tb.block_table[b * tb.bt_stride + pos / page_size];
            if (page < 0 || page >= tb.num_pages) continue;
            int slot = pos % page_size;
            const uint16_t *x = k + (tb.q_offsets[b] + i) * ks;
            double s = ref_scale(ref_amax(x, D));
            uint8_t *pg = want + page * page_stride;
            for (int d = 0; d < D; d++) pg[slot * D + d] = ref_e4m3(bf(x[d]) / s);
            put_f32(pg + page_size * D + 4 * slot, (float)s);
        }
    }
    mla_indexer_cache_store_args a = {0};
    a.num_tokens = tb.T;
    a.k = k;
    a.k_stride_t = padded ? ks : 0;
    a.cache.base = cache;
    a.cache.page_stride = page_stride;
    a.cache.page_size = page_size;
    a.cache.num_pages = tb.num_pages;
    a.cache.format = MLA_IDX_FP8;
    a.cache.dim = D;
    a.batch = as_batch(&tb);
    mla_status rc = guard ? mla_cpu_indexer_cache_store(ctx, &a) : mla_indexer_cache_store(ctx, &a);
    EXPECT_OK(ctx, rc);
    int64_t at = h_first_diff(cache, want, pool);
    if (at >= 0)
        EXPECT(0, "cache byte %lld (page %lld, byte %lld) is %02x, want %02x", (long long)at,
               (long long)(at / page_stride), (long long)(at % page_stride), cache[at], want[at]);
    free(cache); free(want); free(k);
    free_batch(&tb);
    h_end();
}

static void test_indexer_store(mla_ctx *ctx, h_rng *r) {
    const int pages[4] = {1, 16, 61, 64};
    for (int d = 0; d < 2; d++)
        for (int p = 0; p < 4; p++) run_indexer_store(ctx, r, d ? 128 : 64, pages[p], h_int(r, 2, 5), 6, p & 1, 0);
    run_indexer_store(ctx, r, 128, 64, 2, 300, 0, 0); /* parallel path */
    run_indexer_store(ctx, r, 64, 16, 3, 5, 1, 1);

    h_begin("indexer_cache_store: zero tokens writes nothing");
    uint8_t cache[2 * 68], before[sizeof cache];
    h_fill_garbage(r, cache, sizeof cache);
    memcpy(before, cache, sizeof cache);
    int32_t qo[3] = {0, 0, 0}, sl[2] = {1, 2}, bt[2] = {0, 0};
    mla_indexer_cache_store_args a = {0};
    a.cache.base = cache;
    a.cache.page_stride = sizeof cache;
    a.cache.page_size = 2;
    a.cache.num_pages = 1;
    a.cache.format = MLA_IDX_FP8;
    a.cache.dim = 64;
    a.batch.num_requests = 2;
    a.batch.q_offsets = qo;
    a.batch.seq_lens = sl;
    a.batch.block_table = bt;
    a.batch.bt_stride = 1;
    mla_status rc = mla_indexer_cache_store(ctx, &a);
    EXPECT_OK(ctx, rc);
    EXPECT(memcmp(cache, before, sizeof cache) == 0, "cache changed");
    h_end();
}

/* ------------------------------------------------------------------------------------------ */

int main(void) {
    ref_init();
    mla_ctx *ctx = h_cpu_ctx();
    h_rng r = {20250611u};

    h_begin("reference conversions agree with the library's on sample values");
    { /* a self-check of this file's reference against mla_f32_to_e4m3/bf16 (not a tautology:
         different algorithms) on random doubles that are exact floats */
        int bad = 0;
        for (int i = 0; i < 200000 && bad < 3; i++) {
            float v = (float)(h_normal(&r) * pow(10, h_uniform(&r) * 8 - 5));
            if (ref_e4m3(v) != mla_f32_to_e4m3(v)) { bad++; EXPECT(0, "e4m3(%a): ref %02x lib %02x", v, ref_e4m3(v), mla_f32_to_e4m3(v)); }
            if (ref_bf16(v) != mla_f32_to_bf16(v)) { bad++; EXPECT(0, "bf16(%a): ref %04x lib %04x", v, ref_bf16(v), mla_f32_to_bf16(v)); }
        }
        EXPECT(ref_scale(448) == 1 && ref_scale(449) == 2 && ref_scale(0) == ldexp(1, -13) && ref_scale(1e4) == 32,
               "scale rule");
    }
    h_end();

    test_cache_store(ctx, &r);
    test_quantize_q(ctx, &r);
    test_indices_to_slots(ctx, &r);
    test_indexer_store(ctx, &r);
    mla_ctx_destroy(ctx);
    return h_finish();
}
