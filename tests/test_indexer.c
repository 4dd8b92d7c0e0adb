/* mla_indexer on the CPU backend (SPEC 4.5) against a float64 reference: logits by the section 5
 * rule, top-k through the shared checker (cli/topk_check.c), the exact tie rule against the op's
 * own logits, -inf past the visible keys up to logits_stride, untouched padding, NaN garbage in
 * every unused slot and page. (The golden cases run in test_golden.) */
#include "harness.h"
#include "topk_check.h"
#include "core/numeric.h"
#include "cpu/cpu.h"
#include "cpu/topk.h"

#define MAXB 6

typedef struct {
    int H, D, B, page_size, causal, top_k;
    int ties;      /* duplicated keys, all-zero keys, keys whose every head dot is <= 0 (score 0) */
    int neg_qs;    /* q_s of both signs */
    int pow2;      /* power-of-two key scales (writer style) or arbitrary positive floats */
    int pad;       /* extra q / indices / logits / page stride */
    int qlen[MAXB], seq[MAXB];
    uint64_t seed;
} icase;

typedef struct {
    int T, num_pages, bt_stride, smax;
    int64_t q_st, i_st, ls, page_stride;
    uint8_t *cache, *q;
    float *qs;
    int32_t *bt, qo[MAXB + 1];
} ibuild;

static const int32_t SENT = 0x5a5a5a5a;

static float nan_f32(void) { return mla_bits_to_f32(0x7fc00000u); }

static void build(const icase *c, ibuild *o) {
    h_rng r = {c->seed};
    const int D = c->D, H = c->H, ps = c->page_size;
    o->qo[0] = 0;
    o->smax = 0;
    int pages = 0, maxp = 0;
    for (int b = 0; b < c->B; b++) {
        o->qo[b + 1] = o->qo[b] + c->qlen[b];
        if (c->seq[b] > o->smax) o->smax = c->seq[b];
        int p = (c->seq[b] + ps - 1) / ps;
        pages += p;
        if (p > maxp) maxp = p;
    }
    o->T = o->qo[c->B];
    o->num_pages = pages + 2; /* two pages nobody owns */
    o->bt_stride = maxp + 2;
    int64_t page_bytes = (int64_t)ps * (D + 4);
    o->page_stride = page_bytes + (c->pad ? 12 : 0);
    o->cache = h_alloc((size_t)(o->page_stride * o->num_pages));
    for (int p = 0; p < o->num_pages; p++) { /* NaN garbage everywhere first */
        uint8_t *pg = o->cache + p * o->page_stride;
        memset(pg, 0x7f, (size_t)o->page_stride);
        float nan = nan_f32();
        for (int s = 0; s < ps; s++) memcpy(pg + (int64_t)ps * D + 4 * s, &nan, 4);
    }
    /* a random permutation of the page ids */
    int *perm = h_alloc(sizeof(int) * (size_t)o->num_pages);
    for (int i = 0; i < o->num_pages; i++) perm[i] = i;
    for (int i = o->num_pages - 1; i > 0; i--) { int j = h_int(&r, 0, i), t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
    o->bt = h_alloc(sizeof(int32_t) * (size_t)(c->B * o->bt_stride));
    int next = 0;
    for (int b = 0; b < c->B; b++) {
        int p = (c->seq[b] + ps - 1) / ps;
        for (int i = 0; i < o->bt_stride; i++)
            o->bt[b * o->bt_stride + i] = i < p ? perm[next++] : (i % 2 ? 2147483647 : -5); /* never read */
    }
    free(perm);
    /* keys */
    float *kv = h_alloc(sizeof(float) * (size_t)D);
    for (int b = 0; b < c->B; b++) {
        for (int j = 0; j < c->seq[b]; j++) {
            int32_t page = o->bt[b * o->bt_stride + j / ps];
            uint8_t *pg = o->cache + page * o->page_stride;
            uint8_t *row = pg + (int64_t)(j % ps) * D;
            float scale;
            int kind = c->ties ? h_int(&r, 0, 9) : 9;
            if (kind <= 1 && j > 0) { /* duplicate of an earlier key, scale included */
                int j2 = h_int(&r, 0, j - 1);
                int32_t page2 = o->bt[b * o->bt_stride + j2 / ps];
                uint8_t *pg2 = o->cache + page2 * o->page_stride;
                memcpy(row, pg2 + (int64_t)(j2 % ps) * D, (size_t)D);
                memcpy(&scale, pg2 + (int64_t)ps * D + 4 * (j2 % ps), 4);
            } else {
                double amp = 0.5 + 3 * h_uniform(&r);
                float amax = 0;
                for (int d = 0; d < D; d++) {
                    kv[d] = (float)(h_normal(&r) * amp);
                    if (kind == 2) kv[d] = 0.0f;                       /* all-zero key: score 0 */
                    if (kind == 3 || kind == 4) kv[d] = -fabsf(kv[d]); /* every dot <= 0 (q >= 0 below) */
                    if (fabsf(kv[d]) > amax) amax = fabsf(kv[d]);
                }
                scale = c->pow2 ? pow2_scale_ref(amax) : (float)(amax / 448.0 + 1e-3 * h_uniform(&r) + 1e-6);
                for (int d = 0; d < D; d++) row[d] = f32_to_e4m3_ref(kv[d] / scale);
            }
            memcpy(pg + (int64_t)ps * D + 4 * (j % ps), &scale, 4);
        }
    }
    free(kv);
    /* queries: padding between rows is NaN garbage */
    o->q_st = (int64_t)H * D + (c->pad ? 40 : 0);
    o->q = h_alloc((size_t)(o->q_st * (o->T ? o->T : 1)));
    memset(o->q, 0x7f, (size_t)(o->q_st * (o->T ? o->T : 1)));
    o->qs = h_alloc(sizeof(float) * (size_t)(H * (o->T ? o->T : 1)));
    for (int t = 0; t < o->T; t++) {
        for (int i = 0; i < H * D; i++) {
            float v = (float)(h_normal(&r) * 200.0);
            o->q[t * o->q_st + i] = f32_to_e4m3_ref(c->ties ? fabsf(v) : v);
        }
        for (int h = 0; h < H; h++) {
            float w = (float)(0.05 + h_uniform(&r)) / (float)H;
            o->qs[t * H + h] = c->neg_qs && h_uniform(&r) < 0.4 ? -w : w;
        }
    }
    o->i_st = c->top_k + (c->pad ? 3 : 0);
    o->ls = (o->smax > 0 ? o->smax : 1) + (c->pad ? 5 : 0);
}

static void release(ibuild *o) { free(o->cache); free(o->q); free(o->qs); free(o->bt); }

/* Reference scores of row t of request b (-inf where invisible), float64, n = seq. */
static int64_t ref_row(const icase *c, const ibuild *o, int b, int i, double *out) {
    const int D = c->D, H = c->H, ps = c->page_size, seq = c->seq[b];
    const int t = o->qo[b] + i;
    int64_t nv = c->causal ? (int64_t)seq - c->qlen[b] + i + 1 : seq;
    if (nv < 0) nv = 0;
    if (nv > seq) nv = seq;
    for (int j = 0; j < seq; j++) {
        if (j >= nv) { out[j] = -INFINITY; continue; }
        int32_t page = o->bt[b * o->bt_stride + j / ps];
        const uint8_t *pg = o->cache + page * o->page_stride, *k = pg + (int64_t)(j % ps) * D;
        float ks;
        memcpy(&ks, pg + (int64_t)ps * D + 4 * (j % ps), 4);
        double s = 0;
        for (int h = 0; h < H; h++) {
            const uint8_t *q = o->q + t * o->q_st + (int64_t)h * D;
            double dot = 0;
            for (int d = 0; d < D; d++) dot += (double)e4m3_to_f32_ref(q[d]) * (double)e4m3_to_f32_ref(k[d]);
            s += (double)o->qs[t * H + h] * (dot > 0 ? dot : 0);
        }
        out[j] = (double)ks * s;
    }
    return nv;
}

static mla_indexer_args make_args(const icase *c, ibuild *o, int32_t *idx, float *logits) {
    mla_indexer_args a = {0};
    a.num_tokens = o->T;
    a.num_heads = c->H;
    a.dim = c->D;
    a.q = o->q;
    a.q_stride_t = c->pad ? o->q_st : 0;
    a.q_s = o->qs;
    a.cache = (mla_paged_cache){o->cache, o->page_stride, c->page_size, o->num_pages, MLA_IDX_FP8, c->D, NULL, 0};
    a.batch = (mla_batch){c->B, o->qo, c->seq, o->bt, o->bt_stride};
    a.causal = c->causal;
    a.top_k = c->top_k;
    a.indices = idx;
    a.indices_stride_t = c->pad ? o->i_st : 0;
    a.logits = logits;
    a.logits_stride = o->ls;
    return a;
}

/* SPEC's order rule applied to the op's own logits, exactly: strictly descending, ties to the
 * lower position, and among keys equal to the last one taken the lowest positions were taken. */
static int own_order_ok(const int32_t *g, int64_t m, const float *L, int64_t nv, char *why, size_t n) {
    for (int64_t i = 0; i + 1 < m; i++) {
        float a = L[g[i]], b = L[g[i + 1]];
        if (a < b || (a == b && g[i] > g[i + 1])) {
            snprintf(why, n, "own logits out of order at %lld: %d (%.9g) then %d (%.9g)", (long long)i, g[i], a, g[i + 1], b);
            return 0;
        }
    }
    if (m == 0 || m == nv) return 1;
    float kth = L[g[m - 1]];
    int32_t maxpos = -1;
    unsigned char *in = h_alloc((size_t)nv);
    for (int64_t i = 0; i < m; i++) {
        in[g[i]] = 1;
        if (L[g[i]] == kth && g[i] > maxpos) maxpos = g[i];
    }
    int ok = 1;
    for (int64_t j = 0; j < nv && ok; j++) {
        if (in[j]) continue;
        if (L[j] > kth || (L[j] == kth && j < maxpos)) {
            snprintf(why, n, "own logits: key %lld (%.9g) left out for %d (%.9g)", (long long)j, L[j], maxpos, kth);
            ok = 0;
        }
    }
    free(in);
    return ok;
}

static void run_case(mla_ctx *ctx, const icase *c) {
    char name[200];
    int n = snprintf(name, sizeof name, "H=%d D=%d page=%d causal=%d top_k=%d ties=%d neg_qs=%d pad=%d q_len=[", c->H,
                     c->D, c->page_size, c->causal, c->top_k, c->ties, c->neg_qs, c->pad);
    for (int b = 0; b < c->B; b++) n += snprintf(name + n, sizeof name - (size_t)n, "%s%d", b ? "," : "", c->qlen[b]);
    n += snprintf(name + n, sizeof name - (size_t)n, "] seq=[");
    for (int b = 0; b < c->B; b++) n += snprintf(name + n, sizeof name - (size_t)n, "%s%d", b ? "," : "", c->seq[b]);
    snprintf(name + n, sizeof name - (size_t)n, "]");
    h_begin("%s", name);

    ibuild o;
    build(c, &o);
    const int T = o.T;
    int32_t *idx = h_alloc(sizeof(int32_t) * (size_t)((T ? T : 1) * o.i_st));
    int32_t *idx2 = h_alloc(sizeof(int32_t) * (size_t)((T ? T : 1) * o.i_st));
    float *lg = h_alloc(sizeof(float) * (size_t)((T ? T : 1) * o.ls));
    for (int64_t i = 0; i < T * o.i_st; i++) idx[i] = idx2[i] = SENT;
    for (int64_t i = 0; i < T * o.ls; i++) lg[i] = nan_f32();

    mla_indexer_args a = make_args(c, &o, idx, lg);
    mla_status rc = mla_indexer(ctx, &a);
    EXPECT_OK(ctx, rc);
    mla_indexer_args a2 = make_args(c, &o, idx2, NULL);
    rc = mla_indexer(ctx, &a2);
    EXPECT_OK(ctx, rc);

    double *refd = h_alloc(sizeof(double) * (size_t)(o.ls + 1));
    float *reff = h_alloc(sizeof(float) * (size_t)(o.smax + 1));
    char msg[600];
    for (int b = 0; b < c->B && !h_case_bad; b++) {
        for (int i = 0; i < c->qlen[b] && !h_case_bad; i++) {
            const int t = o.qo[b] + i;
            for (int64_t j = 0; j < o.ls; j++) refd[j] = -INFINITY;
            int64_t nv = ref_row(c, &o, b, i, refd);
            double rowmax = 0;
            for (int j = 0; j < c->seq[b]; j++) {
                reff[j] = (float)refd[j];
                if (isfinite(refd[j]) && fabs(refd[j]) > rowmax) rowmax = fabs(refd[j]);
            }
            /* logits: every entry up to logits_stride, -inf past the visible keys */
            mla_tol tol = {1e-4 * rowmax, 0, 0};
            char what[80];
            snprintf(what, sizeof what, "logits row %d (request %d, visible %lld)", t, b, (long long)nv);
            EXPECT_CLOSE(lg + t * o.ls, refd, o.ls, tol, what);
            /* top-k against the reference */
            const int32_t *g = idx + t * o.i_st;
            EXPECT(mla_topk_row_check(g, c->top_k, reff, c->seq[b], msg, sizeof msg), "row %d: %s", t, msg);
            /* the exact tie rule on the op's own logits */
            int64_t m = nv < c->top_k ? nv : c->top_k;
            EXPECT(own_order_ok(g, m, lg + t * o.ls, nv, msg, sizeof msg), "row %d: %s", t, msg);
            /* without logits: the same indices */
            EXPECT(memcmp(g, idx2 + t * o.i_st, sizeof(int32_t) * (size_t)c->top_k) == 0,
                   "row %d: indices differ when logits is NULL", t);
            for (int64_t j = c->top_k; j < o.i_st; j++)
                EXPECT(g[j] == SENT && idx2[t * o.i_st + j] == SENT, "row %d: indices padding [%lld] written", t,
                       (long long)j);
        }
    }
    free(refd); free(reff); free(idx); free(idx2); free(lg);
    release(&o);
    h_end();
}

/* ---- the selection routine alone (src/cpu/topk.c) against a stable sort ---- */

static const float *g_sel_scores;
static int cmp_ref(const void *x, const void *y) { /* score descending (-0 == +0), position ascending */
    int32_t i = *(const int32_t *)x, j = *(const int32_t *)y;
    float a = g_sel_scores[i], b = g_sel_scores[j];
    if (a != b) return a > b ? -1 : 1;
    return (i > j) - (i < j);
}

static void topk_routine_cases(void) {
    h_begin("top-k routine: random rows with heavy ties, -0/+0, -inf holes, every k regime");
    h_rng r = {777};
    int bad = 0;
    for (int it = 0; it < 300 && !bad; it++) {
        int n = it < 5 ? it : h_int(&r, 0, it < 200 ? 300 : 20000);
        int mode = h_int(&r, 0, 4);
        float *s = h_alloc(sizeof(float) * (size_t)(n + 1));
        for (int j = 0; j < n; j++) {
            double u = h_uniform(&r);
            switch (mode) {
            case 0: s[j] = (float)h_normal(&r); break;                                   /* distinct */
            case 1: s[j] = (float)h_int(&r, -3, 3); break;                               /* few values */
            case 2: s[j] = u < 0.5 ? 0.0f : u < 0.8 ? -0.0f : (float)h_normal(&r); break; /* zeros of both signs */
            case 3: s[j] = (float)(1.0 + h_int(&r, 0, 7) * 1e-7); break;                 /* ulp-close keys */
            default: s[j] = u < 0.3 ? -INFINITY : (float)h_normal(&r) * 1e30f; break;    /* holes, huge */
            }
            if (mode != 4 && h_uniform(&r) < 0.05) s[j] = -INFINITY;
        }
        int valid = 0;
        int32_t *ref = h_alloc(sizeof(int32_t) * (size_t)(n + 1));
        for (int j = 0; j < n; j++)
            if (s[j] != -INFINITY) ref[valid++] = j;
        g_sel_scores = s;
        qsort(ref, (size_t)valid, sizeof *ref, cmp_ref);
        int kk = h_int(&r, 0, 3);
        int top_k = kk == 0 ? 1 : kk == 1 ? h_int(&r, 1, n + 1) : kk == 2 ? valid + h_int(&r, 0, 5) : (valid > 1 ? valid - 1 : 1);
        if (top_k < 1) top_k = 1;
        int32_t *got = h_alloc(sizeof(int32_t) * (size_t)top_k);
        uint32_t *scr = h_alloc(sizeof(uint32_t) * mla_cpu_topk_scratch_words(n, top_k));
        int64_t k = mla_cpu_topk_row(s, n, top_k, got, scr);
        int64_t want = valid < top_k ? valid : top_k;
        if (k != want) { EXPECT(0, "n %d mode %d top_k %d: returned %lld, want %lld", n, mode, top_k, (long long)k, (long long)want); bad = 1; }
        for (int i = 0; i < top_k && !bad; i++) {
            int32_t w = i < want ? ref[i] : -1;
            if (got[i] != w) {
                EXPECT(0, "n %d mode %d top_k %d: entry %d is %d, want %d", n, mode, top_k, i, got[i], w);
                bad = 1;
            }
        }
        free(s); free(ref); free(got); free(scr);
    }
    h_end();
}


int main(void) {
    mla_ctx *ctx = h_cpu_ctx();

    topk_routine_cases();

    /* hand-picked corners */
    const icase fixed[] = {
        {64, 128, 2, 64, 1, 2048, 0, 1, 1, 0, {8, 1}, {5000, 700}, 11},       /* top_k 2048 out of thousands */
        {64, 128, 1, 61, 1, 48, 1, 1, 0, 1, {5}, {90}, 12},                     /* zero ties at the k-th place */
        {1, 64, 3, 1, 1, 5, 0, 0, 1, 0, {2, 0, 1}, {2, 0, 1}, 13},              /* H=1, seq 0 and 1 */
        {128, 128, 2, 16, 0, 3, 1, 1, 1, 1, {3, 1}, {40, 1}, 14},               /* H=128, seq 1 */
        {64, 64, 2, 16, 0, 100, 0, 1, 0, 0, {1, 2}, {50, 3}, 15},               /* top_k above every row's keys */
        {7, 128, 1, 64, 1, 1, 1, 0, 0, 1, {4}, {64}, 16},                       /* top_k 1, one full page */
        {16, 64, 2, 1, 1, 30, 1, 1, 1, 0, {3, 2}, {300, 2}, 17},                /* page_size 1 */
        {64, 128, 1, 64, 0, 64, 1, 1, 1, 0, {2}, {129}, 18},                    /* one key past a panel */
    };
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) run_case(ctx, &fixed[i]);

    /* randomized shapes */
    h_rng r = {20250601};
    static const int heads[] = {1, 64, 16, 128, 3, 32};
    static const int pages[] = {1, 16, 61, 64};
    for (int it = 0; it < 40; it++) {
        icase c = {0};
        c.H = it < 12 ? heads[it % 6] : h_int(&r, 1, 128);
        c.D = h_int(&r, 0, 1) ? 128 : 64;
        c.page_size = pages[h_int(&r, 0, 3)];
        c.causal = h_int(&r, 0, 1);
        c.B = h_int(&r, 1, 4);
        int maxv = 0;
        for (int b = 0; b < c.B; b++) {
            int kind = h_int(&r, 0, 5);
            c.qlen[b] = kind == 0 ? 0 : h_int(&r, 1, 4);
            c.seq[b] = kind == 1 ? c.qlen[b] : c.qlen[b] + (kind == 2 ? h_int(&r, 0, 1) : h_int(&r, 0, 400));
            if (c.seq[b] > maxv) maxv = c.seq[b];
        }
        int tk = h_int(&r, 0, 3);
        c.top_k = tk == 0 ? 1 : tk == 1 ? h_int(&r, 2, 20) : tk == 2 ? h_int(&r, 20, 200) : maxv + h_int(&r, 1, 50);
        c.ties = h_int(&r, 0, 1);
        c.neg_qs = h_int(&r, 0, 1);
        c.pow2 = h_int(&r, 0, 1);
        c.pad = h_int(&r, 0, 1);
        c.seed = 1000 + (uint64_t)it;
        run_case(ctx, &c);
    }

    /* the golden cases run in test_golden, through the shared loader and checker */
    mla_ctx_destroy(ctx);
    return h_finish();
}
