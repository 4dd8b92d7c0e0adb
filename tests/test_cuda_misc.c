/* CUDA backend against the CPU backend (the oracle) for the exact ops and the DSA indexer:
 * mla_cache_store (three latent formats), mla_quantize_q_rope_aware, mla_indexer_cache_store,
 * mla_indices_to_slots (SPEC 3, 4.2, 4.5, 4.6: byte for byte, NaN garbage in untouched memory
 * included) and mla_indexer (logits within 1e-4 * row max with identical -inf positions; indices
 * by mla_topk_row_check against the CPU logits; SPEC section 5).
 * Both contexts get identical input bytes from a seeded generator. One line per case.
 * No CUDA device: one SKIP line. MLA_TEST_QUICK=1 runs a reduced set (for the sanitizers). */
#include <limits.h>

#include "harness.h"
#include "topk_check.h"

static mla_ctx *g_cpu, *g_gpu;
static int g_quick;

/* ------------------------------------------------------------------------------------------ */
/* Device memory helpers (abort on failure: a harness problem, not a case result)               */

static void *dup_host(const void *p, size_t n) {
    void *q = h_alloc(n);
    if (n) memcpy(q, p, n);
    return q;
}


#define EXPECT_SAME_BYTES(gpu, cpu, n, what)                                                          \
    do {                                                                                              \
        int64_t d_ = h_first_diff((gpu), (cpu), (n));                                                   \
        EXPECT(d_ < 0, "%s differs at byte %lld of %zu: cuda %02x cpu %02x", (what), (long long)d_,   \
               (size_t)(n), d_ < 0 ? 0 : ((const uint8_t *)(gpu))[d_], d_ < 0 ? 0 : ((const uint8_t *)(cpu))[d_]); \
    } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Ragged batch with a paged block table                                                        */

#define MAXB 8
typedef struct tbatch {
    int B, T;
    int32_t q_off[MAXB + 1], seq[MAXB];
    int32_t *bt;        /* [B, bt_stride] */
    int64_t bt_stride;
    int32_t page_size, num_pages;
    int32_t *d_q_off, *d_seq, *d_bt; /* device copies */
} tbatch;

/* Pages of every request are a random permutation of the pool (plus unused pages); block-table
 * entries past a request's pages hold huge ids (never to be read). */
static void batch_make(h_rng *r, tbatch *b, int B, const int *qlen, const int *seq, int page_size, int extra_pages) {
    memset(b, 0, sizeof *b);
    b->B = B;
    b->page_size = page_size;
    int used = 0, max_pages = 1;
    b->q_off[0] = 0;
    for (int i = 0; i < B; i++) {
        b->q_off[i + 1] = b->q_off[i] + qlen[i];
        b->seq[i] = seq[i];
        int pg = (seq[i] + page_size - 1) / page_size;
        used += pg;
        if (pg > max_pages) max_pages = pg;
    }
    b->T = b->q_off[B];
    b->num_pages = used + extra_pages;
    if (b->num_pages < 1) b->num_pages = 1;
    b->bt_stride = max_pages + h_int(r, 0, 2);
    int32_t *perm = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)b->num_pages);
    for (int i = 0; i < b->num_pages; i++) perm[i] = i;
    for (int i = b->num_pages - 1; i > 0; i--) {
        int j = h_int(r, 0, i);
        int32_t x = perm[i]; perm[i] = perm[j]; perm[j] = x;
    }
    b->bt = (int32_t *)h_alloc(sizeof(int32_t) * (size_t)(B * b->bt_stride));
    int k = 0;
    for (int i = 0; i < B; i++) {
        int pg = (seq[i] + page_size - 1) / page_size;
        for (int64_t p = 0; p < b->bt_stride; p++)
            b->bt[i * b->bt_stride + p] = p < pg ? perm[k++] : ((p & 1) ? INT32_MAX : 2147480000);
    }
    free(perm);
    b->d_q_off = (int32_t *)h_dev_put(g_gpu, b->q_off, sizeof(int32_t) * (size_t)(B + 1));
    b->d_seq = (int32_t *)h_dev_put(g_gpu, b->seq, sizeof(int32_t) * (size_t)B);
    b->d_bt = (int32_t *)h_dev_put(g_gpu, b->bt, sizeof(int32_t) * (size_t)(B * b->bt_stride));
}
static void batch_free(tbatch *b) {
    free(b->bt);
    mla_free(g_gpu, b->d_q_off);
    mla_free(g_gpu, b->d_seq);
    mla_free(g_gpu, b->d_bt);
}
static mla_batch batch_host(const tbatch *b) {
    mla_batch m = {b->B, b->q_off, b->seq, b->bt, b->bt_stride};
    return m;
}
static mla_batch batch_dev(const tbatch *b) {
    mla_batch m = {b->B, b->d_q_off, b->d_seq, b->d_bt, b->bt_stride};
    return m;
}
/* page and slot of logical token p of request i */
static uint8_t *batch_page(const tbatch *b, uint8_t *base, int64_t page_stride, int i, int64_t p, int32_t *slot) {
    *slot = (int32_t)(p % b->page_size);
    return base + (int64_t)b->bt[i * b->bt_stride + p / b->page_size] * page_stride;
}
static void qlen_str(const tbatch *b, char *buf, size_t n) {
    int k = snprintf(buf, n, "q_len=[");
    for (int i = 0; i < b->B && k > 0 && (size_t)k < n; i++)
        k += snprintf(buf + k, n - (size_t)k, "%s%d", i ? "," : "", b->q_off[i + 1] - b->q_off[i]);
    if (k > 0 && (size_t)k < n) k += snprintf(buf + k, n - (size_t)k, "] seq=[");
    for (int i = 0; i < b->B && k > 0 && (size_t)k < n; i++)
        k += snprintf(buf + k, n - (size_t)k, "%s%d", i ? "," : "", b->seq[i]);
    if (k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, "]");
}

/* random ragged shape: B requests, some q_len 0, some seq_len 0 (with q_len 0) */
static int random_shape(h_rng *r, int *qlen, int *seq, int max_q, int max_ctx) {
    int B = h_int(r, 1, 4);
    for (int i = 0; i < B; i++) {
        int kind = h_int(r, 0, 5);
        qlen[i] = kind == 0 ? 0 : h_int(r, 1, max_q);
        seq[i] = (kind == 0 && h_int(r, 0, 1)) ? 0 : qlen[i] + h_int(r, 0, max_ctx);
    }
    return B;
}

/* ------------------------------------------------------------------------------------------ */
/* bf16 inputs of the writers                                                                  */

static uint16_t bf16_of(double v) { return mla_f32_to_bf16((float)v); }

/* n values in tiles of `tile`: per tile a random magnitude, sometimes an all-zero, a ~1e4 or a
 * ~1e-6 tile, sometimes values on e4m3 rounding midpoints (x / scale exactly between codes) */
static void gen_bf16(h_rng *r, uint16_t *x, int n, int tile) {
    for (int t0 = 0; t0 < n; t0 += tile) {
        int kind = h_int(r, 0, 9), m = tile < n - t0 ? tile : n - t0;
        double mag = ldexp(1.0, h_int(r, -12, 10));
        for (int i = 0; i < m; i++) {
            double v;
            switch (kind) {
            case 0: v = 0; break;
            case 1: v = h_normal(r) * 1e4; break;
            case 2: v = h_normal(r) * 1e-6; break;
            case 3: { /* small integers times a power of two: many exact midpoints */
                v = (double)h_int(r, -300, 300) * ldexp(1.0, h_int(r, -8, -2));
                break;
            }
            default: v = h_normal(r) * mag; break;
            }
            x[t0 + i] = bf16_of(v);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* mla_cache_store                                                                             */

static void case_cache_store(h_rng *r, mla_format fmt, int page_size, int B, const int *qlen, const int *seq,
                             int stride_pad, int page_pad) {
    tbatch b;
    batch_make(r, &b, B, qlen, seq, page_size, h_int(r, 0, 2));
    char shape[200];
    qlen_str(&b, shape, sizeof shape);
    h_begin("cache_store %s page=%d %s rows_pad=%d page_pad=%d", mla_format_name(fmt), page_size, shape, stride_pad,
            page_pad);
    const int T = b.T;
    const int64_t rs = MLA_KEY_DIM + stride_pad;
    const size_t rows_n = (size_t)(T ? T : 1) * (size_t)rs;
    uint16_t *rows = (uint16_t *)h_alloc(rows_n * 2);
    h_fill_garbage(r, rows, rows_n * 2);
    for (int t = 0; t < T; t++) gen_bf16(r, rows + (int64_t)t * rs, MLA_KEY_DIM, 128);
    const int64_t page_stride = (int64_t)mla_cache_page_bytes(fmt, page_size, 0) + page_pad;
    const size_t pool_n = (size_t)b.num_pages * (size_t)page_stride;
    uint8_t *pool = (uint8_t *)h_alloc(pool_n);
    h_fill_garbage(r, pool, pool_n);
    const int64_t sig_stride = page_size + h_int(r, 0, 1);
    const size_t sig_n = (size_t)b.num_pages * (size_t)sig_stride * 4;
    float *sigma = (float *)h_alloc(sig_n);
    h_fill_garbage(r, sigma, sig_n);

    /* CPU */
    uint8_t *pool_cpu = (uint8_t *)dup_host(pool, pool_n);
    float *sig_cpu = (float *)dup_host(sigma, sig_n);
    mla_cache_store_args a = {0};
    a.num_tokens = T;
    a.rows = rows;
    a.rows_stride_t = rs;
    a.cache.base = pool_cpu;
    a.cache.page_stride = page_stride;
    a.cache.page_size = page_size;
    a.cache.num_pages = b.num_pages;
    a.cache.format = fmt;
    a.cache.sigma = fmt == MLA_KV_FP8_ROPE_AWARE ? sig_cpu : NULL;
    a.cache.sigma_stride_page = sig_stride;
    a.batch = batch_host(&b);
    mla_status rc = mla_cache_store(g_cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        h_skip("CPU oracle not implemented");
    } else {
        EXPECT_OK(g_cpu, rc);
        /* CUDA */
        void *d_rows = h_dev_put(g_gpu, rows, rows_n * 2), *d_pool = h_dev_put(g_gpu, pool, pool_n), *d_sig = h_dev_put(g_gpu, sigma, sig_n);
        a.rows = (const uint16_t *)d_rows;
        a.cache.base = d_pool;
        a.cache.sigma = fmt == MLA_KV_FP8_ROPE_AWARE ? (float *)d_sig : NULL;
        a.batch = batch_dev(&b);
        rc = mla_cache_store(g_gpu, &a);
        EXPECT_OK(g_gpu, rc);
        uint8_t *pool_gpu = (uint8_t *)h_alloc(pool_n);
        float *sig_gpu = (float *)h_alloc(sig_n);
        h_dev_get(g_gpu, pool_gpu, d_pool, pool_n);
        h_dev_get(g_gpu, sig_gpu, d_sig, sig_n);
        EXPECT_SAME_BYTES(pool_gpu, pool_cpu, pool_n, "cache pool");
        EXPECT_SAME_BYTES(sig_gpu, sig_cpu, sig_n, "sigma pool");
        /* the CPU must have written something when a token was stored (the test tests) */
        if (T > 0) EXPECT(h_first_diff(pool_cpu, pool, pool_n) >= 0, "no byte changed: case stores nothing");
        free(pool_gpu);
        free(sig_gpu);
        mla_free(g_gpu, d_rows);
        mla_free(g_gpu, d_pool);
        mla_free(g_gpu, d_sig);
        h_end();
    }
    free(rows);
    free(pool);
    free(sigma);
    free(pool_cpu);
    free(sig_cpu);
    batch_free(&b);
}

/* ------------------------------------------------------------------------------------------ */
/* mla_quantize_q_rope_aware                                                                   */

static void case_quantize_q(h_rng *r, int T, int H, int pad_h, int pad_t, int out_pad_h, int out_pad_t) {
    h_begin("quantize_q_rope_aware T=%d H=%d q_pad=(%d,%d) out_pad=(%d,%d)", T, H, pad_h, pad_t, out_pad_h, out_pad_t);
    const int64_t qh = MLA_KEY_DIM + pad_h, qt = H * qh + pad_t;
    const int64_t oh = 640 + out_pad_h, ot = H * oh + out_pad_t;
    const size_t q_n = (size_t)T * (size_t)qt, o_n = (size_t)T * (size_t)ot;
    uint16_t *q = (uint16_t *)h_alloc(q_n * 2);
    h_fill_garbage(r, q, q_n * 2);
    for (int t = 0; t < T; t++) {
        int kind = h_int(r, 0, 5);
        for (int h = 0; h < H; h++) {
            uint16_t *x = q + t * qt + h * qh;
            gen_bf16(r, x, MLA_KEY_DIM, 64);
            if (kind == 0)
                for (int d = 0; d < MLA_LATENT_DIM; d++) x[d] = 0; /* all-zero latent: sigma 2^-13 */
        }
        if (kind == 1) q[t * qt + h_int(r, 0, H - 1) * qh + h_int(r, 0, 511)] = bf16_of(5000.0); /* outlier */
    }
    uint8_t *out = (uint8_t *)h_alloc(o_n);
    h_fill_garbage(r, out, o_n);
    float *sig = (float *)h_alloc((size_t)T * 4);
    h_fill_garbage(r, sig, (size_t)T * 4);

    uint8_t *out_cpu = (uint8_t *)dup_host(out, o_n);
    float *sig_cpu = (float *)dup_host(sig, (size_t)T * 4);
    mla_quantize_q_rope_aware_args a = {0};
    a.num_tokens = T;
    a.num_heads = H;
    a.q = q;
    a.q_stride_t = qt;
    a.q_stride_h = qh;
    a.q_out = out_cpu;
    a.q_out_stride_t = ot;
    a.q_out_stride_h = oh;
    a.q_sigma = sig_cpu;
    mla_status rc = mla_quantize_q_rope_aware(g_cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        h_skip("CPU oracle not implemented");
    } else {
        EXPECT_OK(g_cpu, rc);
        void *d_q = h_dev_put(g_gpu, q, q_n * 2), *d_out = h_dev_put(g_gpu, out, o_n), *d_sig = h_dev_put(g_gpu, sig, (size_t)T * 4);
        a.q = (const uint16_t *)d_q;
        a.q_out = (uint8_t *)d_out;
        a.q_sigma = (float *)d_sig;
        rc = mla_quantize_q_rope_aware(g_gpu, &a);
        EXPECT_OK(g_gpu, rc);
        uint8_t *out_gpu = (uint8_t *)h_alloc(o_n);
        float *sig_gpu = (float *)h_alloc((size_t)T * 4);
        h_dev_get(g_gpu, out_gpu, d_out, o_n);
        h_dev_get(g_gpu, sig_gpu, d_sig, (size_t)T * 4);
        EXPECT_SAME_BYTES(out_gpu, out_cpu, o_n, "q_out");
        EXPECT_SAME_BYTES(sig_gpu, sig_cpu, (size_t)T * 4, "q_sigma");
        free(out_gpu);
        free(sig_gpu);
        mla_free(g_gpu, d_q);
        mla_free(g_gpu, d_out);
        mla_free(g_gpu, d_sig);
        h_end();
    }
    free(q);
    free(out);
    free(sig);
    free(out_cpu);
    free(sig_cpu);
}

/* ------------------------------------------------------------------------------------------ */
/* mla_indexer_cache_store                                                                     */

static void case_indexer_cache_store(h_rng *r, int D, int page_size, int B, const int *qlen, const int *seq,
                                     int stride_pad, int page_pad) {
    tbatch b;
    batch_make(r, &b, B, qlen, seq, page_size, h_int(r, 0, 2));
    char shape[200];
    qlen_str(&b, shape, sizeof shape);
    h_begin("indexer_cache_store D=%d page=%d %s k_pad=%d page_pad=%d", D, page_size, shape, stride_pad, page_pad);
    const int T = b.T;
    const int64_t ks = D + stride_pad;
    const size_t k_n = (size_t)(T ? T : 1) * (size_t)ks;
    uint16_t *k = (uint16_t *)h_alloc(k_n * 2);
    h_fill_garbage(r, k, k_n * 2);
    for (int t = 0; t < T; t++) gen_bf16(r, k + (int64_t)t * ks, D, D);
    const int64_t page_stride = (int64_t)mla_cache_page_bytes(MLA_IDX_FP8, page_size, D) + page_pad;
    const size_t pool_n = (size_t)b.num_pages * (size_t)page_stride;
    uint8_t *pool = (uint8_t *)h_alloc(pool_n);
    h_fill_garbage(r, pool, pool_n);

    uint8_t *pool_cpu = (uint8_t *)dup_host(pool, pool_n);
    mla_indexer_cache_store_args a = {0};
    a.num_tokens = T;
    a.k = k;
    a.k_stride_t = ks;
    a.cache.base = pool_cpu;
    a.cache.page_stride = page_stride;
    a.cache.page_size = page_size;
    a.cache.num_pages = b.num_pages;
    a.cache.format = MLA_IDX_FP8;
    a.cache.dim = D;
    a.batch = batch_host(&b);
    mla_status rc = mla_indexer_cache_store(g_cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        h_skip("CPU oracle not implemented");
    } else {
        EXPECT_OK(g_cpu, rc);
        void *d_k = h_dev_put(g_gpu, k, k_n * 2), *d_pool = h_dev_put(g_gpu, pool, pool_n);
        a.k = (const uint16_t *)d_k;
        a.cache.base = d_pool;
        a.batch = batch_dev(&b);
        rc = mla_indexer_cache_store(g_gpu, &a);
        EXPECT_OK(g_gpu, rc);
        uint8_t *pool_gpu = (uint8_t *)h_alloc(pool_n);
        h_dev_get(g_gpu, pool_gpu, d_pool, pool_n);
        EXPECT_SAME_BYTES(pool_gpu, pool_cpu, pool_n, "indexer cache pool");
        if (T > 0) EXPECT(h_first_diff(pool_cpu, pool, pool_n) >= 0, "no byte changed: case stores nothing");
        free(pool_gpu);
        mla_free(g_gpu, d_k);
        mla_free(g_gpu, d_pool);
        h_end();
    }
    free(k);
    free(pool);
    free(pool_cpu);
    batch_free(&b);
}

/* ------------------------------------------------------------------------------------------ */
/* mla_indices_to_slots                                                                        */

static void case_indices_to_slots(h_rng *r, int page_size, int B, const int *qlen, const int *seq, int topk,
                                  int in_pad, int out_pad) {
    tbatch b;
    batch_make(r, &b, B, qlen, seq, page_size, h_int(r, 0, 3));
    char shape[200];
    qlen_str(&b, shape, sizeof shape);
    h_begin("indices_to_slots page=%d %s topk=%d pads=(%d,%d)", page_size, shape, topk, in_pad, out_pad);
    const int T = b.T;
    const int64_t is = topk + in_pad, os = topk + out_pad;
    const size_t in_n = (size_t)(T ? T : 1) * (size_t)is, out_n = (size_t)(T ? T : 1) * (size_t)os;
    int32_t *idx = (int32_t *)h_alloc(in_n * 4);
    for (size_t i = 0; i < in_n; i++) idx[i] = (int32_t)h_next(r);
    for (int i = 0; i < B; i++)
        for (int t = b.q_off[i]; t < b.q_off[i + 1]; t++)
            for (int j = 0; j < topk; j++) {
                int s = b.seq[i];
                int32_t v;
                switch (h_int(r, 0, 9)) {
                case 0: v = -1; break;
                case 1: v = (int32_t)h_int(r, 0, 2) == 0 ? INT32_MIN : -7; break;
                case 2: v = s + h_int(r, 0, 1); break;
                case 3: v = h_int(r, 0, 1) ? INT32_MAX : (1 << 30); break;
                case 4: v = s + 1000; break;
                default: v = s > 0 ? h_int(r, 0, s - 1) : -1; break;
                }
                idx[(int64_t)t * is + j] = v;
            }
    int32_t *slots = (int32_t *)h_alloc(out_n * 4);
    h_fill_garbage(r, slots, out_n * 4);
    int32_t *slots_cpu = (int32_t *)dup_host(slots, out_n * 4);

    mla_indices_to_slots_args a = {0};
    a.num_tokens = T;
    a.topk = topk;
    a.batch = batch_host(&b);
    a.page_size = page_size;
    a.num_pages = b.num_pages;
    a.indices = idx;
    a.indices_stride_t = is;
    a.slots = slots_cpu;
    a.slots_stride_t = os;
    mla_status rc = mla_indices_to_slots(g_cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        h_skip("CPU oracle not implemented");
    } else {
        EXPECT_OK(g_cpu, rc);
        void *d_idx = h_dev_put(g_gpu, idx, in_n * 4), *d_slots = h_dev_put(g_gpu, slots, out_n * 4);
        a.batch = batch_dev(&b);
        a.indices = (const int32_t *)d_idx;
        a.slots = (int32_t *)d_slots;
        rc = mla_indices_to_slots(g_gpu, &a);
        EXPECT_OK(g_gpu, rc);
        int32_t *slots_gpu = (int32_t *)h_alloc(out_n * 4);
        h_dev_get(g_gpu, slots_gpu, d_slots, out_n * 4);
        EXPECT_SAME_BYTES(slots_gpu, slots_cpu, out_n * 4, "slots");
        free(slots_gpu);
        mla_free(g_gpu, d_idx);
        mla_free(g_gpu, d_slots);
        h_end();
    }
    free(idx);
    free(slots);
    free(slots_cpu);
    batch_free(&b);
}

/* ------------------------------------------------------------------------------------------ */
/* mla_indexer                                                                                 */

typedef struct idx_case {
    const char *tag;
    int H, D, page_size, causal, top_k;
    int B;
    int qlen[MAXB], seq[MAXB];
    int use_logits;   /* 1: caller's logits on CUDA too; 0: CUDA writes scores to the workspace */
    int logits_pad;   /* logits_stride = longest seq + pad */
    int ties;         /* duplicate key rows (exact ties) and all-zero key rows (score exactly 0) */
    int q_pad, page_pad, idx_pad;
} idx_case;

static uint8_t rand_e4m3(h_rng *r, double sd) {
    uint8_t c = mla_f32_to_e4m3((float)(h_normal(r) * sd));
    return (c & 0x7f) == 0x7f ? 0 : c;
}

static void case_indexer(h_rng *r, const idx_case *c) {
    tbatch b;
    batch_make(r, &b, c->B, c->qlen, c->seq, c->page_size, h_int(r, 0, 2));
    char shape[300];
    qlen_str(&b, shape, sizeof shape);
    h_begin("indexer %s H=%d D=%d page=%d %s causal=%d top_k=%d logits=%s ties=%d pads=(%d,%d,%d)", c->tag, c->H,
            c->D, c->page_size, shape, c->causal, c->top_k, c->use_logits ? "caller" : "workspace", c->ties, c->q_pad,
            c->page_pad, c->idx_pad);
    const int T = b.T, H = c->H, D = c->D;
    int max_seq = 1;
    for (int i = 0; i < b.B; i++)
        if (b.seq[i] > max_seq) max_seq = b.seq[i];
    const int64_t ls = max_seq + c->logits_pad;

    /* q, q_s */
    const int64_t qst = (int64_t)H * D + c->q_pad;
    const size_t q_n = (size_t)(T ? T : 1) * (size_t)qst;
    uint8_t *q = (uint8_t *)h_alloc(q_n);
    h_fill_garbage(r, q, q_n);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < H * D; i++) q[t * qst + i] = rand_e4m3(r, 1.5);
    float *qs = (float *)h_alloc(sizeof(float) * (size_t)(T ? T : 1) * H);
    for (int i = 0; i < T * H; i++) qs[i] = (float)(h_normal(r) * 0.05);

    /* the key cache: visible rows and scales written, the rest NaN garbage */
    const int64_t page_stride = (int64_t)mla_cache_page_bytes(MLA_IDX_FP8, c->page_size, D) + c->page_pad;
    const size_t pool_n = (size_t)b.num_pages * (size_t)page_stride;
    uint8_t *pool = (uint8_t *)h_alloc(pool_n);
    h_fill_garbage(r, pool, pool_n);
    for (int i = 0; i < b.B; i++) {
        const int pow2_scales = h_int(r, 0, 1);
        for (int64_t p = 0; p < b.seq[i]; p++) {
            int32_t slot;
            uint8_t *pg = batch_page(&b, pool, page_stride, i, p, &slot);
            uint8_t *row = pg + (int64_t)slot * D;
            float s = pow2_scales ? ldexpf(1.0f, -h_int(r, 2, 9)) : (float)(h_uniform(r) * 0.01 + 1e-4);
            int kind = c->ties ? h_int(r, 0, 5) : 5;
            if (kind == 0 && p > 0) { /* duplicate of an earlier key: exact tie */
                int64_t src = h_int(r, 0, (int)p - 1);
                int32_t s2;
                uint8_t *pg2 = batch_page(&b, pool, page_stride, i, src, &s2);
                memmove(row, pg2 + (int64_t)s2 * D, (size_t)D);
                memcpy(&s, pg2 + (int64_t)c->page_size * D + (int64_t)s2 * 4, 4);
            } else if (kind == 1) { /* zero key: score exactly 0 for every query */
                memset(row, 0, (size_t)D);
            } else {
                for (int d = 0; d < D; d++) row[d] = rand_e4m3(r, 1.5);
            }
            memcpy(pg + (int64_t)c->page_size * D + (int64_t)slot * 4, &s, 4);
        }
    }

    /* CPU oracle: always with logits */
    const size_t lg_n = (size_t)(T ? T : 1) * (size_t)ls;
    float *lg_cpu = (float *)h_alloc(lg_n * 4);
    h_fill_garbage(r, lg_cpu, lg_n * 4);
    const int64_t ist = (int64_t)c->top_k + c->idx_pad;
    const size_t ind_n = (size_t)(T ? T : 1) * (size_t)ist;
    int32_t *ind_init = (int32_t *)h_alloc(ind_n * 4);
    for (size_t i = 0; i < ind_n; i++) ind_init[i] = 0x5a5a5a5a;
    int32_t *ind_cpu = (int32_t *)dup_host(ind_init, ind_n * 4);

    mla_indexer_args a = {0};
    a.num_tokens = T;
    a.num_heads = H;
    a.dim = D;
    a.q = q;
    a.q_stride_t = qst;
    a.q_s = qs;
    a.cache.base = pool;
    a.cache.page_stride = page_stride;
    a.cache.page_size = c->page_size;
    a.cache.num_pages = b.num_pages;
    a.cache.format = MLA_IDX_FP8;
    a.cache.dim = D;
    a.batch = batch_host(&b);
    a.causal = c->causal;
    a.top_k = c->top_k;
    a.indices = ind_cpu;
    a.indices_stride_t = ist;
    a.logits = lg_cpu;
    a.logits_stride = ls;
    a.max_seq_len = max_seq;
    mla_status rc = mla_indexer(g_cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        h_skip("CPU oracle not implemented");
    } else {
        EXPECT_OK(g_cpu, rc);
        void *d_q = h_dev_put(g_gpu, q, q_n), *d_qs = h_dev_put(g_gpu, qs, sizeof(float) * (size_t)(T ? T : 1) * H);
        void *d_pool = h_dev_put(g_gpu, pool, pool_n), *d_ind = h_dev_put(g_gpu, ind_init, ind_n * 4);
        void *d_lg = NULL, *d_ws = NULL;
        a.q = (const uint8_t *)d_q;
        a.q_s = (const float *)d_qs;
        a.cache.base = d_pool;
        a.batch = batch_dev(&b);
        a.indices = (int32_t *)d_ind;
        a.max_seq_len = max_seq + (c->use_logits ? 0 : h_int(r, 0, 5));
        if (c->use_logits) {
            float *init = (float *)h_alloc(lg_n * 4);
            h_fill_garbage(r, init, lg_n * 4);
            d_lg = h_dev_put(g_gpu, init, lg_n * 4);
            free(init);
            a.logits = (float *)d_lg;
        } else {
            a.logits = NULL;
            a.workspace = NULL;
            a.workspace_bytes = 0;
            /* no workspace: refused, naming workspace_bytes, nothing written */
            mla_status rc0 = mla_indexer(g_gpu, &a);
            if (T > 0)
                EXPECT(rc0 == MLA_ERR_INVALID_ARG && strstr(mla_ctx_last_error(g_gpu), "workspace_bytes"),
                       "missing workspace: status %s (%s)", mla_status_str(rc0), mla_ctx_last_error(g_gpu));
            size_t ws = mla_indexer_workspace_size(g_gpu, &a);
            EXPECT(ws >= (size_t)T * (size_t)a.max_seq_len * 4, "workspace size %zu below the scores", ws);
            a.workspace = d_ws = h_dev_put(g_gpu, NULL, ws);
            a.workspace_bytes = ws;
        }
        rc = mla_indexer(g_gpu, &a);
        EXPECT_OK(g_gpu, rc);
        int32_t *ind_gpu = (int32_t *)h_alloc(ind_n * 4);
        h_dev_get(g_gpu, ind_gpu, d_ind, ind_n * 4);
        if (rc == MLA_OK && c->use_logits) {
            float *lg_gpu = (float *)h_alloc(lg_n * 4);
            h_dev_get(g_gpu, lg_gpu, d_lg, lg_n * 4);
            for (int t = 0; t < T && !h_case_bad; t++) {
                const float *x = lg_gpu + t * ls, *y = lg_cpu + t * ls;
                double rmax = 0;
                for (int64_t j = 0; j < ls; j++)
                    if (isfinite(y[j]) && fabs(y[j]) > rmax) rmax = fabs(y[j]);
                for (int64_t j = 0; j < ls; j++) {
                    int yinf = isinf(y[j]) && y[j] < 0, xinf = isinf(x[j]) && x[j] < 0;
                    if (!EXPECT(xinf == yinf, "logits[%d][%lld]: cuda %g cpu %g (-inf positions differ)", t,
                                (long long)j, (double)x[j], (double)y[j]))
                        break;
                    if (!yinf && !EXPECT(isfinite(x[j]) && fabs((double)x[j] - y[j]) <= 1e-4 * rmax,
                                         "logits[%d][%lld]: cuda %.9g cpu %.9g (row max %.3g)", t, (long long)j,
                                         (double)x[j], (double)y[j], rmax))
                        break;
                }
            }
            free(lg_gpu);
        }
        if (rc == MLA_OK) {
            for (int t = 0; t < T && !h_case_bad; t++) {
                char msg[300];
                const int32_t *row = ind_gpu + t * ist;
                if (!mla_topk_row_check(row, c->top_k, lg_cpu + t * ls, ls, msg, sizeof msg)) EXPECT(0, "row %d: %s", t, msg);
                for (int j = c->top_k; j < ist; j++)
                    if (!EXPECT(row[j] == 0x5a5a5a5a, "row %d: stride padding [%d] overwritten", t, j)) break;
            }
        }
        free(ind_gpu);
        mla_free(g_gpu, d_q);
        mla_free(g_gpu, d_qs);
        mla_free(g_gpu, d_pool);
        mla_free(g_gpu, d_ind);
        if (d_lg) mla_free(g_gpu, d_lg);
        if (d_ws) mla_free(g_gpu, d_ws);
        h_end();
    }
    free(q);
    free(qs);
    free(pool);
    free(lg_cpu);
    free(ind_init);
    free(ind_cpu);
    batch_free(&b);
}

/* ------------------------------------------------------------------------------------------ */
/* Device-side guards: data the host cannot validate on CUDA. Request 2 has block-table entries
 * outside [0, num_pages) (its tokens are skipped, never dereferenced) and request 3 has
 * seq_len 0 with a query row (pos -1: nothing stored, no key visible). The CPU oracle sees the
 * valid prefix (requests 0 and 1, which own tokens 0..2); CUDA sees everything. */

static void case_guards(h_rng *r) {
    int qlen[4] = {2, 1, 3, 1}, seq[4] = {70, 33, 40, 0};
    tbatch b;
    batch_make(r, &b, 4, qlen, seq, 16, 1);
    const int32_t bad[4] = {-1, b.num_pages, INT32_MAX, -5};
    for (int64_t p = 0; p < b.bt_stride; p++) b.bt[2 * b.bt_stride + p] = bad[p & 3];
    if (mla_memcpy_to_backend(g_gpu, b.d_bt, b.bt, sizeof(int32_t) * (size_t)(4 * b.bt_stride)) != MLA_OK) exit(2);
    const int T = b.T, Tg = b.q_off[2];
    mla_batch bh = batch_host(&b), bd = batch_dev(&b);
    bh.num_requests = 2;

    { /* cache_store, rope-aware (sigma pool too) */
        h_begin("guards cache_store MLA_KV_FP8_ROPE_AWARE: bad page ids, seq_len 0 row");
        uint16_t *rows = (uint16_t *)h_alloc((size_t)T * MLA_KEY_DIM * 2);
        for (int t = 0; t < T; t++) gen_bf16(r, rows + t * MLA_KEY_DIM, MLA_KEY_DIM, 128);
        const int64_t ps = (int64_t)mla_cache_page_bytes(MLA_KV_FP8_ROPE_AWARE, 16, 0);
        const size_t pool_n = (size_t)b.num_pages * (size_t)ps, sig_n = (size_t)b.num_pages * 16 * 4;
        uint8_t *pool = (uint8_t *)h_alloc(pool_n);
        float *sig = (float *)h_alloc(sig_n);
        h_fill_garbage(r, pool, pool_n);
        h_fill_garbage(r, sig, sig_n);
        uint8_t *pool_cpu = (uint8_t *)dup_host(pool, pool_n);
        float *sig_cpu = (float *)dup_host(sig, sig_n);
        mla_cache_store_args a = {0};
        a.num_tokens = Tg;
        a.rows = rows;
        a.cache.base = pool_cpu;
        a.cache.page_stride = ps;
        a.cache.page_size = 16;
        a.cache.num_pages = b.num_pages;
        a.cache.format = MLA_KV_FP8_ROPE_AWARE;
        a.cache.sigma = sig_cpu;
        a.batch = bh;
        mla_status rc = mla_cache_store(g_cpu, &a);
        if (rc == MLA_ERR_UNSUPPORTED) h_skip("CPU oracle not implemented");
        else {
            EXPECT_OK(g_cpu, rc);
            void *d_rows = h_dev_put(g_gpu, rows, (size_t)T * MLA_KEY_DIM * 2), *d_pool = h_dev_put(g_gpu, pool, pool_n),
                 *d_sig = h_dev_put(g_gpu, sig, sig_n);
            a.num_tokens = T;
            a.rows = (const uint16_t *)d_rows;
            a.cache.base = d_pool;
            a.cache.sigma = (float *)d_sig;
            a.batch = bd;
            rc = mla_cache_store(g_gpu, &a);
            EXPECT_OK(g_gpu, rc);
            h_dev_get(g_gpu, pool, d_pool, pool_n);
            h_dev_get(g_gpu, sig, d_sig, sig_n);
            EXPECT_SAME_BYTES(pool, pool_cpu, pool_n, "cache pool");
            EXPECT_SAME_BYTES(sig, sig_cpu, sig_n, "sigma pool");
            mla_free(g_gpu, d_rows);
            mla_free(g_gpu, d_pool);
            mla_free(g_gpu, d_sig);
            h_end();
        }
        free(rows); free(pool); free(sig); free(pool_cpu); free(sig_cpu);
    }
    { /* indexer_cache_store, D = 128 */
        h_begin("guards indexer_cache_store D=128: bad page ids, seq_len 0 row");
        uint16_t *k = (uint16_t *)h_alloc((size_t)T * 128 * 2);
        for (int t = 0; t < T; t++) gen_bf16(r, k + t * 128, 128, 128);
        const int64_t ps = (int64_t)mla_cache_page_bytes(MLA_IDX_FP8, 16, 128);
        const size_t pool_n = (size_t)b.num_pages * (size_t)ps;
        uint8_t *pool = (uint8_t *)h_alloc(pool_n);
        h_fill_garbage(r, pool, pool_n);
        uint8_t *pool_cpu = (uint8_t *)dup_host(pool, pool_n);
        mla_indexer_cache_store_args a = {0};
        a.num_tokens = Tg;
        a.k = k;
        a.cache.base = pool_cpu;
        a.cache.page_stride = ps;
        a.cache.page_size = 16;
        a.cache.num_pages = b.num_pages;
        a.cache.format = MLA_IDX_FP8;
        a.cache.dim = 128;
        a.batch = bh;
        mla_status rc = mla_indexer_cache_store(g_cpu, &a);
        if (rc == MLA_ERR_UNSUPPORTED) h_skip("CPU oracle not implemented");
        else {
            EXPECT_OK(g_cpu, rc);
            void *d_k = h_dev_put(g_gpu, k, (size_t)T * 128 * 2), *d_pool = h_dev_put(g_gpu, pool, pool_n);
            a.num_tokens = T;
            a.k = (const uint16_t *)d_k;
            a.cache.base = d_pool;
            a.batch = bd;
            rc = mla_indexer_cache_store(g_gpu, &a);
            EXPECT_OK(g_gpu, rc);
            h_dev_get(g_gpu, pool, d_pool, pool_n);
            EXPECT_SAME_BYTES(pool, pool_cpu, pool_n, "indexer cache pool");
            mla_free(g_gpu, d_k);
            mla_free(g_gpu, d_pool);
            h_end();
        }
        free(k); free(pool); free(pool_cpu);
    }
    { /* indices_to_slots: the bad request's and the seq-0 row's entries all become -1 */
        h_begin("guards indices_to_slots: bad page ids, seq_len 0 row");
        const int K = 24;
        int32_t *idx = (int32_t *)h_alloc((size_t)T * K * 4), *sl_cpu = (int32_t *)h_alloc((size_t)T * K * 4);
        int32_t *sl_gpu = (int32_t *)h_alloc((size_t)T * K * 4);
        for (int t = 0; t < T; t++)
            for (int j = 0; j < K; j++) idx[t * K + j] = h_int(r, -2, 75);
        mla_indices_to_slots_args a = {0};
        a.num_tokens = Tg;
        a.topk = K;
        a.batch = bh;
        a.page_size = 16;
        a.num_pages = b.num_pages;
        a.indices = idx;
        a.slots = sl_cpu;
        mla_status rc = mla_indices_to_slots(g_cpu, &a);
        if (rc == MLA_ERR_UNSUPPORTED) h_skip("CPU oracle not implemented");
        else {
            EXPECT_OK(g_cpu, rc);
            void *d_idx = h_dev_put(g_gpu, idx, (size_t)T * K * 4), *d_sl = h_dev_put(g_gpu, NULL, (size_t)T * K * 4);
            a.num_tokens = T;
            a.batch = bd;
            a.indices = (const int32_t *)d_idx;
            a.slots = (int32_t *)d_sl;
            rc = mla_indices_to_slots(g_gpu, &a);
            EXPECT_OK(g_gpu, rc);
            h_dev_get(g_gpu, sl_gpu, d_sl, (size_t)T * K * 4);
            EXPECT_SAME_BYTES(sl_gpu, sl_cpu, (size_t)Tg * K * 4, "slots of the valid rows");
            for (int i = Tg * K; i < T * K; i++)
                if (!EXPECT(sl_gpu[i] == -1, "slots[%d][%d] = %d, want -1", i / K, i % K, sl_gpu[i])) break;
            mla_free(g_gpu, d_idx);
            mla_free(g_gpu, d_sl);
            h_end();
        }
        free(idx); free(sl_cpu); free(sl_gpu);
    }
    { /* indexer: rows of the bad request and the seq-0 row: logits all -inf, indices all -1 */
        h_begin("guards indexer H=16 D=64: bad page ids, seq_len 0 row");
        const int H = 16, D = 64, top_k = 20;
        const int64_t ls = 80;
        uint8_t *q = (uint8_t *)h_alloc((size_t)T * H * D);
        float *qs = (float *)h_alloc((size_t)T * H * 4);
        for (int i = 0; i < T * H * D; i++) q[i] = rand_e4m3(r, 1.5);
        for (int i = 0; i < T * H; i++) qs[i] = (float)(h_normal(r) * 0.05);
        const int64_t ps = (int64_t)mla_cache_page_bytes(MLA_IDX_FP8, 16, D);
        const size_t pool_n = (size_t)b.num_pages * (size_t)ps;
        uint8_t *pool = (uint8_t *)h_alloc(pool_n);
        h_fill_garbage(r, pool, pool_n);
        for (int i = 0; i < 2; i++)
            for (int64_t p = 0; p < b.seq[i]; p++) {
                int32_t slot;
                uint8_t *pg = batch_page(&b, pool, ps, i, p, &slot);
                for (int d = 0; d < D; d++) pg[slot * D + d] = rand_e4m3(r, 1.5);
                float s = ldexpf(1.0f, -h_int(r, 2, 9));
                memcpy(pg + 16 * D + slot * 4, &s, 4);
            }
        float *lg_cpu = (float *)h_alloc((size_t)T * ls * 4), *lg_gpu = (float *)h_alloc((size_t)T * ls * 4);
        int32_t *ind_cpu = (int32_t *)h_alloc((size_t)T * top_k * 4), *ind_gpu = (int32_t *)h_alloc((size_t)T * top_k * 4);
        mla_indexer_args a = {0};
        a.num_tokens = Tg;
        a.num_heads = H;
        a.dim = D;
        a.q = q;
        a.q_s = qs;
        a.cache.base = pool;
        a.cache.page_stride = ps;
        a.cache.page_size = 16;
        a.cache.num_pages = b.num_pages;
        a.cache.format = MLA_IDX_FP8;
        a.cache.dim = D;
        a.batch = bh;
        a.causal = 1;
        a.top_k = top_k;
        a.indices = ind_cpu;
        a.logits = lg_cpu;
        a.logits_stride = ls;
        a.max_seq_len = 70;
        mla_status rc = mla_indexer(g_cpu, &a);
        if (rc == MLA_ERR_UNSUPPORTED) h_skip("CPU oracle not implemented");
        else {
            EXPECT_OK(g_cpu, rc);
            void *d_q = h_dev_put(g_gpu, q, (size_t)T * H * D), *d_qs = h_dev_put(g_gpu, qs, (size_t)T * H * 4);
            void *d_pool = h_dev_put(g_gpu, pool, pool_n), *d_lg = h_dev_put(g_gpu, NULL, (size_t)T * ls * 4);
            void *d_ind = h_dev_put(g_gpu, NULL, (size_t)T * top_k * 4);
            a.num_tokens = T;
            a.q = (const uint8_t *)d_q;
            a.q_s = (const float *)d_qs;
            a.cache.base = d_pool;
            a.batch = bd;
            a.indices = (int32_t *)d_ind;
            a.logits = (float *)d_lg;
            rc = mla_indexer(g_gpu, &a);
            EXPECT_OK(g_gpu, rc);
            h_dev_get(g_gpu, lg_gpu, d_lg, (size_t)T * ls * 4);
            h_dev_get(g_gpu, ind_gpu, d_ind, (size_t)T * top_k * 4);
            for (int t = 0; t < Tg && !h_case_bad; t++) {
                char msg[300];
                double rmax = 0;
                for (int64_t j = 0; j < ls; j++)
                    if (isfinite(lg_cpu[t * ls + j]) && fabs(lg_cpu[t * ls + j]) > rmax) rmax = fabs(lg_cpu[t * ls + j]);
                for (int64_t j = 0; j < ls; j++) {
                    float x = lg_gpu[t * ls + j], y = lg_cpu[t * ls + j];
                    if (!EXPECT(isinf(y) ? x == y : fabs((double)x - y) <= 1e-4 * rmax, "logits[%d][%lld]: cuda %g cpu %g",
                                t, (long long)j, (double)x, (double)y))
                        break;
                }
                if (!mla_topk_row_check(ind_gpu + t * top_k, top_k, lg_cpu + t * ls, ls, msg, sizeof msg))
                    EXPECT(0, "row %d: %s", t, msg);
            }
            for (int t = Tg; t < T && !h_case_bad; t++)
                for (int64_t j = 0; j < ls; j++)
                    if (!EXPECT(isinf(lg_gpu[t * ls + j]) && lg_gpu[t * ls + j] < 0, "logits[%d][%lld] = %g, want -inf", t,
                                (long long)j, (double)lg_gpu[t * ls + j]))
                        break;
            for (int t = Tg; t < T && !h_case_bad; t++)
                for (int j = 0; j < top_k; j++)
                    if (!EXPECT(ind_gpu[t * top_k + j] == -1, "indices[%d][%d] = %d, want -1", t, j, ind_gpu[t * top_k + j]))
                        break;
            mla_free(g_gpu, d_q);
            mla_free(g_gpu, d_qs);
            mla_free(g_gpu, d_pool);
            mla_free(g_gpu, d_lg);
            mla_free(g_gpu, d_ind);
            h_end();
        }
        free(q); free(qs); free(pool); free(lg_cpu); free(lg_gpu); free(ind_cpu); free(ind_gpu);
    }
    batch_free(&b);
}

/* ------------------------------------------------------------------------------------------ */

static const int k_pages[4] = {1, 16, 61, 64};
static const int k_heads[] = {1, 2, 3, 7, 16, 17, 32, 48, 64, 100, 127, 128};

int main(void) {
    if (!mla_has_backend(MLA_BACKEND_CUDA) || mla_cuda_device_count() == 0) {
        printf("SKIP cuda_misc: no CUDA device (built with CUDA: %s)\n", mla_has_backend(MLA_BACKEND_CUDA) ? "yes" : "no");
        printf("0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    const char *qe = getenv("MLA_TEST_QUICK");
    g_quick = qe && *qe && strcmp(qe, "0") != 0;
    g_cpu = h_cpu_ctx();
    mla_ctx_params pp = mla_ctx_params_default();
    pp.backend = MLA_BACKEND_CUDA;
    if (mla_ctx_create(&pp, &g_gpu) != MLA_OK) {
        fprintf(stderr, "cannot create a CUDA context\n");
        return 2;
    }
    h_rng rng = {0x6d6c612d6d697363ull};
    h_rng *r = &rng;
    int qlen[MAXB], seq[MAXB];
    const int reps = g_quick ? 1 : 3;

    /* ---- writers: every format x every page size, ragged, strides and page paddings ---- */
    const mla_format fmts[3] = {MLA_KV_BF16, MLA_KV_FP8, MLA_KV_FP8_ROPE_AWARE};
    const int pads[4] = {0, 8, 3, 1};     /* rows stride pad in elements: 16 B, 4 B, 2 B alignment */
    const int ppads[4] = {0, 16, 4, 1};   /* page_stride pad in bytes */
    for (int f = 0; f < 3; f++)
        for (int pi = 0; pi < 4; pi++)
            for (int rep = 0; rep < reps; rep++) {
                int B = random_shape(r, qlen, seq, 4, 2 * k_pages[pi] + 5);
                case_cache_store(r, fmts[f], k_pages[pi], B, qlen, seq, pads[(pi + rep) & 3], ppads[(pi + 2 * rep + f) & 3]);
            }
    {   /* many tokens in one request (several CTAs) */
        int ql[2] = {300, 0}, sq[2] = {317, 0};
        case_cache_store(r, MLA_KV_FP8, 64, 2, ql, sq, 0, 0);
        case_cache_store(r, MLA_KV_FP8_ROPE_AWARE, 16, 2, ql, sq, 0, 0);
    }

    for (int rep = 0; rep < (g_quick ? 3 : 8); rep++) {
        int H = k_heads[h_int(r, 0, (int)(sizeof k_heads / sizeof k_heads[0]) - 1)];
        case_quantize_q(r, h_int(r, 1, 5), H, (rep & 1) ? 8 : 0, (rep & 2) ? 3 : 0, (rep & 1) ? 16 : 0, (rep & 4) ? 5 : 0);
    }
    case_quantize_q(r, 2, 128, 0, 0, 0, 0);

    for (int d = 0; d < 2; d++)
        for (int pi = 0; pi < 4; pi++)
            for (int rep = 0; rep < reps; rep++) {
                int B = random_shape(r, qlen, seq, 4, 2 * k_pages[pi] + 5);
                case_indexer_cache_store(r, d ? 128 : 64, k_pages[pi], B, qlen, seq, pads[(pi + rep) & 3],
                                         ppads[(pi + rep + d) & 3]);
            }

    for (int pi = 0; pi < 4; pi++)
        for (int rep = 0; rep < reps; rep++) {
            int B = random_shape(r, qlen, seq, 4, 3 * k_pages[pi] + 40);
            case_indices_to_slots(r, k_pages[pi], B, qlen, seq, h_int(r, 1, 70), rep ? h_int(r, 0, 3) : 0,
                                  rep ? h_int(r, 0, 3) : 0);
        }

    /* ---- the indexer ---- */
    for (int rep = 0; rep < (g_quick ? 4 : 14); rep++) {
        idx_case c;
        memset(&c, 0, sizeof c);
        c.tag = "random";
        c.H = k_heads[h_int(r, 0, (int)(sizeof k_heads / sizeof k_heads[0]) - 1)];
        c.D = h_int(r, 0, 1) ? 128 : 64;
        c.page_size = k_pages[rep & 3];
        c.causal = h_int(r, 0, 1);
        c.B = random_shape(r, c.qlen, c.seq, 4, 300);
        c.top_k = h_int(r, 0, 2) == 0 ? h_int(r, 200, 400) /* above most visible counts */ : h_int(r, 1, 64);
        c.use_logits = h_int(r, 0, 2) != 0;
        c.logits_pad = h_int(r, 0, 1) ? h_int(r, 1, 200) : 0;
        c.ties = h_int(r, 0, 1);
        c.q_pad = (rep % 3 == 1) ? 4 : (rep % 3 == 2) ? 1 : 0;
        c.page_pad = (rep % 4 == 1) ? 4 : (rep % 4 == 3) ? 1 : 0;
        c.idx_pad = h_int(r, 0, 3);
        case_indexer(r, &c);
    }
    {   /* DeepSeek-V3.2 shape: H=64, D=128, page 64, causal prefill chunk and decode rows */
        idx_case c = {"v32", 64, 128, 64, 1, 48, 3, {3, 1, 0}, {150, 90, 40}, 1, 0, 1, 0, 0, 0};
        case_indexer(r, &c);
        idx_case d = {"seq0-noncausal", 16, 64, 16, 0, 8, 4, {0, 2, 0, 1}, {0, 40, 5, 17}, 0, 3, 0, 0, 0, 1};
        case_indexer(r, &d);
        idx_case e = {"h128-p61", 128, 128, 61, 1, 100, 2, {2, 3}, {200, 3}, 1, 7, 1, 0, 4, 0};
        case_indexer(r, &e);
    }
    {   /* long rows: 20000 keys, top_k 2048 (one top-k segment); top_k 4096 and 5000 (two
         * segments, with ties across the boundary) */
        idx_case c = {"long", 64, 128, 64, 1, 2048, 1, {2}, {20000}, 1, 0, 1, 0, 0, 0};
        case_indexer(r, &c);
        if (!g_quick) {
            idx_case d = {"long-ws", 32, 64, 61, 0, 4096, 2, {1, 1}, {9000, 4100}, 0, 0, 1, 0, 0, 0};
            case_indexer(r, &d);
            idx_case e = {"topk5000", 16, 128, 16, 1, 5000, 2, {2, 1}, {7000, 4000}, 1, 0, 1, 0, 0, 3};
            case_indexer(r, &e);
        }
    }

    case_guards(r);

    mla_ctx_destroy(g_gpu);
    mla_ctx_destroy(g_cpu);
    return h_finish();
}
