/* CUDA mla_decode (SPEC 4.1) and mla_sparse (SPEC 4.2) against two oracles on the same bytes: the
 * CPU backend (when it runs the case) and a float64 reference written here from SPEC.md.
 * Randomized, seeded cases: H from 1 to 128, page sizes 1/16/61/64, ragged q_len with 0, seq_len
 * 0, long sequences (split-KV), causal or not, sinks with finite/-inf/+inf, every latent format,
 * sparse ids that are invalid / duplicated / past topk_len; unused slots, pages, block-table
 * entries and q padding hold NaN garbage. Outputs are compared by SPEC section 5 (MLA_TOL_OUT,
 * MLA_TOL_LSE) and every byte around them on the device must keep its guard pattern.
 * Without a GPU (or a CUDA build) the whole test is one SKIP line.
 *   MLA_TEST_QUICK=1: a reduced set (for compute-sanitizer); argv[1]: run cases whose name contains it. */
#include "harness.h"

#define GUARD 64           /* guard bytes after each output tensor */
#define PAT 0xA5           /* guard / untouched-byte pattern */
#define NAN_BF16 0x7FC0
#define NAN_E4M3 0x7F

static int quick;
static const char *filter;

/* ---- small helpers ------------------------------------------------------------------------ */

static float bf(uint16_t x) { return mla_bf16_to_f32(x); }
static uint16_t tobf(double x) { return mla_f32_to_bf16((float)x); }
static double e4(uint8_t x) { return mla_e4m3_to_f32(x); }
/* the writers' scale: 2^ceil(log2(max(amax / 448, 1e-4))) */
static float pow2_scale(float amax) {
    float r = amax / 448.0f;
    if (!(r > 1e-4f)) r = 1e-4f;
    int e;
    float m = frexpf(r, &e);
    return m == 0.5f ? ldexpf(1.0f, e - 1) : ldexpf(1.0f, e);
}
static void put_f32(uint8_t *p, float v) { memcpy(p, &v, 4); }
static float get_f32(const uint8_t *p) { float v; memcpy(&v, p, 4); return v; }
static void put_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static uint16_t get_u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

static int row_bytes(mla_format f) { return (int)mla_cache_row_bytes(f, 0); }
static const char *fmt_short(mla_format f) {
    return f == MLA_KV_BF16 ? "bf16" : f == MLA_KV_FP8 ? "fp8" : f == MLA_KV_FP8_ROPE_AWARE ? "fp8ra" : "?";
}

/* device allocations of one case, freed together */
typedef struct { mla_ctx *cu; void *p[24]; int n; int ok; } devset;
static void *dev_put(devset *d, const void *host, size_t bytes) {
    void *ptr = NULL;
    if (mla_malloc(d->cu, bytes ? bytes : 16, &ptr) != MLA_OK) { d->ok = 0; return NULL; }
    d->p[d->n++] = ptr;
    if (host && mla_memcpy_to_backend(d->cu, ptr, host, bytes) != MLA_OK) d->ok = 0;
    return ptr;
}
static void dev_free(devset *d) {
    for (int i = 0; i < d->n; i++) mla_free(d->cu, d->p[i]);
    d->n = 0;
}

/* ---- the latent pool: NaN garbage everywhere, real rows where a test puts them ------------- */

typedef struct {
    mla_format fmt;
    int page_size, num_pages, row;
    int64_t page_stride;       /* bytes */
    int64_t sigma_stride;      /* floats between pages of sigma */
    uint8_t *base;             /* host copy */
    float *sigma;              /* host copy (rope-aware) */
} pool;

static void pool_init(pool *P, mla_format fmt, int page_size, int num_pages, int64_t stride_pad, int64_t sigma_pad) {
    P->fmt = fmt;
    P->page_size = page_size;
    P->num_pages = num_pages;
    P->row = row_bytes(fmt);
    P->page_stride = (int64_t)page_size * P->row + stride_pad;
    P->sigma_stride = page_size + sigma_pad;
    P->base = h_alloc((size_t)(P->page_stride * num_pages));
    memset(P->base, 0xff, (size_t)(P->page_stride * num_pages)); /* padding between pages: e4m3 NaN bytes */
    for (int pg = 0; pg < num_pages; pg++)
        for (int s = 0; s < page_size; s++) {
            uint8_t *r = P->base + pg * P->page_stride + (int64_t)s * P->row;
            if (fmt == MLA_KV_BF16) {
                for (int d = 0; d < 576; d++) put_u16(r + 2 * d, NAN_BF16);
            } else {
                memset(r, NAN_E4M3, 512);
                int rope = fmt == MLA_KV_FP8 ? 528 : 512;
                if (fmt == MLA_KV_FP8)
                    for (int i = 0; i < 4; i++) put_f32(r + 512 + 4 * i, NAN);
                for (int d = 0; d < 64; d++) put_u16(r + rope + 2 * d, NAN_BF16);
            }
        }
    P->sigma = NULL;
    if (fmt == MLA_KV_FP8_ROPE_AWARE) {
        P->sigma = h_alloc(sizeof(float) * (size_t)(P->sigma_stride * num_pages));
        for (int64_t i = 0; i < P->sigma_stride * num_pages; i++) P->sigma[i] = NAN;
    }
}
static void pool_free(pool *P) { free(P->base); free(P->sigma); }
static uint8_t *pool_row(const pool *P, int64_t page, int64_t slot) { return P->base + page * P->page_stride + slot * P->row; }

/* A real key row: latent/rope ~ N(0,1), quantized as the writers do (SPEC 3); every 5th tile /
 * token gets a scale that is not a power of two, as other producers store. */
static void pool_fill(pool *P, int64_t page, int64_t slot, h_rng *g) {
    uint8_t *r = pool_row(P, page, slot);
    double x[576];
    for (int d = 0; d < 576; d++) x[d] = h_normal(g);
    if (P->fmt == MLA_KV_BF16) {
        for (int d = 0; d < 576; d++) put_u16(r + 2 * d, tobf(x[d]));
    } else if (P->fmt == MLA_KV_FP8) {
        for (int i = 0; i < 4; i++) {
            float amax = 0;
            for (int d = 128 * i; d < 128 * i + 128; d++) amax = fmaxf(amax, (float)fabs(x[d]));
            float s = pow2_scale(amax);
            if (h_int(g, 0, 4) == 0) s *= 1.37f;
            put_f32(r + 512 + 4 * i, s);
            for (int d = 128 * i; d < 128 * i + 128; d++) r[d] = mla_f32_to_e4m3((float)x[d] / s);
        }
        for (int d = 0; d < 64; d++) put_u16(r + 528 + 2 * d, tobf(x[512 + d]));
    } else {
        float amax = 0;
        for (int d = 0; d < 512; d++) amax = fmaxf(amax, (float)fabs(x[d]));
        float s = pow2_scale(amax);
        if (h_int(g, 0, 4) == 0) s *= 1.37f;
        P->sigma[page * P->sigma_stride + slot] = s;
        for (int d = 0; d < 512; d++) r[d] = mla_f32_to_e4m3((float)x[d] / s);
        for (int d = 0; d < 64; d++) put_u16(r + 512 + 2 * d, tobf(x[512 + d] / s));
    }
}

/* dequantized key row (SPEC 3) */
static void pool_deq(const pool *P, int64_t page, int64_t slot, double k[576]) {
    const uint8_t *r = pool_row(P, page, slot);
    if (P->fmt == MLA_KV_BF16) {
        for (int d = 0; d < 576; d++) k[d] = bf(get_u16(r + 2 * d));
    } else if (P->fmt == MLA_KV_FP8) {
        for (int d = 0; d < 512; d++) k[d] = e4(r[d]) * get_f32(r + 512 + 4 * (d / 128));
        for (int d = 0; d < 64; d++) k[512 + d] = bf(get_u16(r + 528 + 2 * d));
    } else {
        double s = P->sigma[page * P->sigma_stride + slot];
        for (int d = 0; d < 512; d++) k[d] = e4(r[d]) * s;
        for (int d = 0; d < 64; d++) k[512 + d] = bf(get_u16(r + 512 + 2 * d)) * s;
    }
}

/* ---- q: bf16 [T,H,576] or the packed rope-aware [T,H,640] + q_sigma; padding is NaN --------- */

typedef struct {
    int T, H, ra;
    int64_t st, sh;            /* strides in elements (bytes when ra) */
    size_t bytes;
    uint8_t *buf;
    float *sigma;              /* [T] when ra */
} qbuf;

static void q_make(qbuf *Q, int T, int H, int ra, int strided, h_rng *g) {
    Q->T = T; Q->H = H; Q->ra = ra;
    int64_t row = ra ? 640 : 576, esz = ra ? 1 : 2;
    Q->sh = strided ? row + (ra ? 48 : 24) : row;
    Q->st = strided ? H * Q->sh + (ra ? 80 : 40) : H * Q->sh;
    Q->bytes = (size_t)(((int64_t)(T - 1) * Q->st + (int64_t)(H - 1) * Q->sh + row) * esz);
    Q->buf = h_alloc(Q->bytes);
    for (size_t i = 0; i + 1 < Q->bytes; i += 2) put_u16(Q->buf + i, NAN_BF16);
    Q->sigma = ra ? h_alloc(sizeof(float) * (size_t)T) : NULL;
    double *x = h_alloc(sizeof(double) * (size_t)H * 576);
    for (int t = 0; t < T; t++) {
        float amax = 0;
        for (int i = 0; i < H * 576; i++) x[i] = h_normal(g);
        for (int h = 0; h < H; h++)
            for (int d = 0; d < 512; d++) amax = fmaxf(amax, (float)fabs(x[h * 576 + d]));
        float s = ra ? pow2_scale(amax) * (t % 3 == 1 ? 1.37f : 1.0f) : 1.0f;
        if (ra) Q->sigma[t] = s;
        for (int h = 0; h < H; h++) {
            uint8_t *dst = Q->buf + (t * Q->st + h * Q->sh) * esz;
            const double *xs = x + h * 576;
            if (ra) {
                for (int d = 0; d < 512; d++) dst[d] = mla_f32_to_e4m3((float)xs[d] / s);
                for (int d = 0; d < 64; d++) put_u16(dst + 512 + 2 * d, tobf(xs[512 + d] / s));
            } else {
                for (int d = 0; d < 576; d++) put_u16(dst + 2 * d, tobf(xs[d]));
            }
        }
    }
    free(x);
}
static void q_deq(const qbuf *Q, int t, int h, double q[576]) {
    if (Q->ra) {
        const uint8_t *r = Q->buf + t * Q->st + h * Q->sh;
        double s = Q->sigma[t];
        for (int d = 0; d < 512; d++) q[d] = e4(r[d]) * s;
        for (int d = 0; d < 64; d++) q[512 + d] = bf(get_u16(r + 512 + 2 * d)) * s;
    } else {
        const uint8_t *r = Q->buf + 2 * (t * Q->st + h * Q->sh);
        for (int d = 0; d < 576; d++) q[d] = bf(get_u16(r + 2 * d));
    }
}
static void q_free(qbuf *Q) { free(Q->buf); free(Q->sigma); }

/* ---- outputs: strided, guard-patterned buffers --------------------------------------------- */

typedef struct {
    int T, H;
    int64_t ost, osh, lst;     /* out strides (elements), lse / max_logits stride */
    size_t out_bytes, lse_bytes; /* extents + GUARD */
} outs;

static void outs_make(outs *O, int T, int H, int strided, int odd) {
    O->T = T; O->H = H;
    O->osh = odd ? 513 : strided ? 512 + 64 : 512;
    O->ost = (odd || strided) ? H * O->osh + 8 : H * O->osh;
    O->lst = strided ? H + 3 : H;
    O->out_bytes = (size_t)(((int64_t)(T - 1) * O->ost + (int64_t)(H - 1) * O->osh + 512) * 2) + GUARD;
    O->lse_bytes = (size_t)(((int64_t)(T - 1) * O->lst + H) * 4) + GUARD;
}
/* dense f32 [T,H,512] / [T,H] views of the strided results */
static void outs_out(const outs *O, const uint8_t *buf, float *dst) {
    for (int t = 0; t < O->T; t++)
        for (int h = 0; h < O->H; h++)
            for (int d = 0; d < 512; d++)
                dst[((int64_t)t * O->H + h) * 512 + d] = bf(get_u16(buf + 2 * (t * O->ost + h * O->osh + d)));
}
static void outs_lse(const outs *O, const uint8_t *buf, float *dst) {
    for (int t = 0; t < O->T; t++)
        for (int h = 0; h < O->H; h++) dst[(int64_t)t * O->H + h] = get_f32(buf + 4 * (t * O->lst + h));
}
/* bytes outside the written elements still hold PAT: returns the first changed offset or -1 */
static int64_t outs_guard(const outs *O, const uint8_t *buf, size_t bytes, int is_out) {
    uint8_t *mask = h_alloc(bytes);
    for (int t = 0; t < O->T; t++)
        for (int h = 0; h < O->H; h++) {
            if (is_out) memset(mask + 2 * (t * O->ost + h * O->osh), 1, 1024);
            else memset(mask + 4 * (t * O->lst + h), 1, 4);
        }
    int64_t bad = -1;
    for (size_t i = 0; i < bytes && bad < 0; i++)
        if (!mask[i] && buf[i] != PAT) bad = (int64_t)i;
    free(mask);
    return bad;
}

/* ---- the float64 attention of one row over a key list (SPEC 4.1 / 4.2 output rules) -------- */

static void ref_row(const double q[576], const double *keys, const int *use, int n, double scale, const float *sink,
                    double *out, double *lse, double *maxl) {
    double m = -INFINITY, l = 0;
    double *s = h_alloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int j = 0; j < n; j++) {
        if (!use[j]) continue;
        const double *k = keys + (int64_t)j * 576;
        double dot = 0;
        for (int d = 0; d < 576; d++) dot += q[d] * k[d];
        s[j] = scale * dot;
        if (s[j] > m) m = s[j];
    }
    for (int d = 0; d < 512; d++) out[d] = 0;
    for (int j = 0; j < n; j++) {
        if (!use[j]) continue;
        double p = exp(s[j] - m);
        l += p;
        const double *k = keys + (int64_t)j * 576;
        for (int d = 0; d < 512; d++) out[d] += p * k[d];
    }
    free(s);
    *maxl = m;
    if (l == 0) {
        *lse = INFINITY;
        return;
    }
    *lse = m + log(l);
    double f = 1.0 / l;
    if (sink) f *= 1.0 / (1.0 + exp((double)*sink - *lse));
    for (int d = 0; d < 512; d++) out[d] *= f;
}

static float *make_sinks(int H, int mode, h_rng *g) {
    if (!mode) return NULL;
    float *s = h_alloc(sizeof(float) * (size_t)H);
    for (int h = 0; h < H; h++) {
        int k = h % 5;
        s[h] = k == 1 ? -INFINITY : (k == 3 && H > 3) ? INFINITY : (float)(4.0 + 3.0 * h_normal(g));
    }
    return s;
}

/* Compares CUDA results with the reference (and the CPU's when it ran); checks the guards. */
static void check_results(const outs *O, const uint8_t *cu_out, const uint8_t *cu_lse, const uint8_t *cu_max,
                          const uint8_t *cpu_out, const uint8_t *cpu_lse, const double *r_out, const double *r_lse,
                          const double *r_max) {
    int64_t R = (int64_t)O->T * O->H;
    float *a = h_alloc(sizeof(float) * (size_t)R * 512);
    double *rc = h_alloc(sizeof(double) * (size_t)R * 512);
    outs_out(O, cu_out, a);
    EXPECT_CLOSE(a, r_out, R * 512, MLA_TOL_OUT, "out vs float64 reference");
    int64_t g = outs_guard(O, cu_out, O->out_bytes, 1);
    EXPECT(g < 0, "out: byte %lld outside the written elements changed", (long long)g);
    if (cpu_out) {
        float *c = h_alloc(sizeof(float) * (size_t)R * 512);
        outs_out(O, cpu_out, c);
        for (int64_t i = 0; i < R * 512; i++) rc[i] = c[i];
        EXPECT_CLOSE(a, rc, R * 512, MLA_TOL_OUT, "out vs CPU backend");
        free(c);
    }
    if (cu_lse) {
        outs_lse(O, cu_lse, a);
        EXPECT_CLOSE(a, r_lse, R, MLA_TOL_LSE, "lse vs float64 reference");
        g = outs_guard(O, cu_lse, O->lse_bytes, 0);
        EXPECT(g < 0, "lse: byte %lld outside the written elements changed", (long long)g);
        if (cpu_lse) {
            float *c = h_alloc(sizeof(float) * (size_t)R);
            outs_lse(O, cpu_lse, c);
            for (int64_t i = 0; i < R; i++) rc[i] = c[i];
            EXPECT_CLOSE(a, rc, R, MLA_TOL_LSE, "lse vs CPU backend");
            free(c);
        }
    }
    if (cu_max) {
        outs_lse(O, cu_max, a);
        EXPECT_CLOSE(a, r_max, R, MLA_TOL_LSE, "max_logits vs float64 reference");
        g = outs_guard(O, cu_max, O->lse_bytes, 0);
        EXPECT(g < 0, "max_logits: byte %lld outside the written elements changed", (long long)g);
    }
    free(a);
    free(rc);
}

/* ---- mla_decode ----------------------------------------------------------------------------- */

typedef struct {
    mla_format fmt;
    int H, page_size, causal, sink, strided, lse_null, odd_out;
    int B, qmax, seqmax;
    int long_seq;              /* request 0 gets 3000 keys (700 when quick) */
    int seq0;                  /* a request with seq_len 0 and q_len 2 (rows see no key) */
    int64_t page_pad;          /* bytes added to page_stride (a multiple of 16, or not) */
    int ws_null;               /* also check that a NULL workspace is refused (when one is needed) */
    uint64_t seed;
} dcase;

static void run_decode(mla_ctx *cpu, mla_ctx *cu, const dcase *c) {
    char name[200];
    snprintf(name, sizeof name, "decode fmt=%s H=%d page=%d B=%d causal=%d sink=%d%s%s%s%s%s%s seed=%llu",
             fmt_short(c->fmt), c->H, c->page_size, c->B, c->causal, c->sink, c->strided ? " strided" : "",
             c->odd_out ? " odd_out" : "", c->lse_null ? " lse=NULL" : "", c->long_seq ? " long" : "",
             c->seq0 ? " seq0" : "", c->page_pad % 16 ? " page_stride%16!=0" : "", (unsigned long long)c->seed);
    if (filter && !strstr(name, filter)) return;
    h_rng g = {c->seed};
    const int B = c->B, H = c->H, ps = c->page_size, ra = c->fmt == MLA_KV_FP8_ROPE_AWARE;

    /* the batch */
    int32_t *qo = h_alloc(sizeof(int32_t) * (size_t)(B + 1)), *seq = h_alloc(sizeof(int32_t) * (size_t)B);
    qo[0] = 0;
    for (int b = 0; b < B; b++) {
        int ql = h_int(&g, 0, c->qmax);
        if (b == 0 && ql == 0) ql = 1;
        int s = ql + h_int(&g, 0, c->seqmax);
        if (b == 0 && c->long_seq) s = quick ? 700 : 3000;
        if (b == 1 && B > 2) { ql = 0; s = h_int(&g, 0, 1) ? 0 : 5; } /* no queries (and maybe no keys) */
        if (b == 2 && c->seq0) { ql = 2; s = 0; }
        qo[b + 1] = qo[b] + ql;
        seq[b] = s;
    }
    const int T = qo[B];
    int64_t max_pages = 1, total_pages = 0;
    for (int b = 0; b < B; b++) {
        int64_t np = (seq[b] + ps - 1) / ps;
        total_pages += np;
        if (np > max_pages) max_pages = np;
    }
    const int64_t bt_stride = max_pages + 2;
    const int num_pages = (int)total_pages + 3;
    pool P;
    pool_init(&P, c->fmt, ps, num_pages, c->page_pad, c->strided ? 5 : 0);
    int *perm = h_alloc(sizeof(int) * (size_t)num_pages);
    for (int i = 0; i < num_pages; i++) perm[i] = i;
    for (int i = num_pages - 1; i > 0; i--) { int k = h_int(&g, 0, i), x = perm[i]; perm[i] = perm[k]; perm[k] = x; }
    int32_t *bt = h_alloc(sizeof(int32_t) * (size_t)(B * bt_stride));
    int next = 0;
    for (int b = 0; b < B; b++)
        for (int64_t i = 0; i < bt_stride; i++) {
            int64_t used = (seq[b] + ps - 1) / ps;
            bt[b * bt_stride + i] = i < used ? perm[next++] : (i % 2 ? 2147483647 : 2147480000);
        }
    for (int b = 0; b < B; b++)
        for (int j = 0; j < seq[b]; j++) pool_fill(&P, bt[b * bt_stride + j / ps], j % ps, &g);

    qbuf Q;
    q_make(&Q, T, H, ra, c->strided, &g);
    float *sink = make_sinks(H, c->sink, &g);
    const float scale = 0.1352338f;

    /* float64 reference */
    double *r_out = h_alloc(sizeof(double) * (size_t)T * H * 512), *r_lse = h_alloc(sizeof(double) * (size_t)T * H);
    double qd[576], dummy;
    for (int b = 0; b < B; b++) {
        int ql = qo[b + 1] - qo[b];
        if (ql == 0) continue;
        double *keys = h_alloc(sizeof(double) * 576 * (size_t)(seq[b] ? seq[b] : 1));
        int *use = h_alloc(sizeof(int) * (size_t)(seq[b] ? seq[b] : 1));
        for (int j = 0; j < seq[b]; j++) pool_deq(&P, bt[b * bt_stride + j / ps], j % ps, keys + (int64_t)j * 576);
        for (int i = 0; i < ql; i++) {
            int t = qo[b] + i, pos = seq[b] - ql + i;
            int end = c->causal ? pos + 1 : seq[b];
            if (end < 0) end = 0;
            if (end > seq[b]) end = seq[b];
            for (int j = 0; j < seq[b]; j++) use[j] = j < end;
            for (int h = 0; h < H; h++) {
                q_deq(&Q, t, h, qd);
                ref_row(qd, keys, use, seq[b], scale, sink ? sink + h : NULL, r_out + ((int64_t)t * H + h) * 512,
                        r_lse + (int64_t)t * H + h, &dummy);
            }
        }
        free(keys);
        free(use);
    }

    outs O;
    outs_make(&O, T, H, c->strided, c->odd_out);
    uint8_t *pat_out = h_alloc(O.out_bytes), *pat_lse = h_alloc(O.lse_bytes);
    memset(pat_out, PAT, O.out_bytes);
    memset(pat_lse, PAT, O.lse_bytes);

    mla_decode_args a = {0};
    a.num_tokens = T;
    a.num_heads = H;
    a.q_stride_t = c->strided ? Q.st : 0;
    a.q_stride_h = c->strided ? Q.sh : 0;
    a.cache.page_stride = P.page_stride;
    a.cache.page_size = ps;
    a.cache.num_pages = num_pages;
    a.cache.format = c->fmt;
    a.cache.sigma_stride_page = c->strided ? P.sigma_stride : 0;
    a.batch.num_requests = B;
    a.batch.bt_stride = bt_stride;
    a.causal = c->causal;
    a.scale = scale;
    a.out_stride_t = (c->strided || c->odd_out) ? O.ost : 0;
    a.out_stride_h = (c->strided || c->odd_out) ? O.osh : 0;
    a.lse_stride_t = c->strided ? O.lst : 0;

    /* CPU oracle: host pointers */
    uint8_t *cpu_out = h_alloc(O.out_bytes), *cpu_lse = h_alloc(O.lse_bytes);
    memcpy(cpu_out, pat_out, O.out_bytes);
    memcpy(cpu_lse, pat_lse, O.lse_bytes);
    mla_decode_args ah = a;
    ah.q = Q.buf;
    ah.q_sigma = Q.sigma;
    ah.cache.base = P.base;
    ah.cache.sigma = P.sigma;
    ah.batch.q_offsets = qo;
    ah.batch.seq_lens = seq;
    ah.batch.block_table = bt;
    ah.sink = sink;
    ah.out = (uint16_t *)cpu_out;
    ah.lse = c->lse_null ? NULL : (float *)cpu_lse;
    mla_status cpu_rc = mla_decode(cpu, &ah);

    /* CUDA: the same bytes on the device */
    devset d = {cu, {0}, 0, 1};
    mla_decode_args ad = a;
    ad.q = dev_put(&d, Q.buf, Q.bytes);
    ad.q_sigma = ra ? dev_put(&d, Q.sigma, sizeof(float) * (size_t)T) : NULL;
    ad.cache.base = dev_put(&d, P.base, (size_t)(P.page_stride * num_pages));
    ad.cache.sigma = ra ? dev_put(&d, P.sigma, sizeof(float) * (size_t)(P.sigma_stride * num_pages)) : NULL;
    ad.batch.q_offsets = dev_put(&d, qo, sizeof(int32_t) * (size_t)(B + 1));
    ad.batch.seq_lens = dev_put(&d, seq, sizeof(int32_t) * (size_t)B);
    ad.batch.block_table = dev_put(&d, bt, sizeof(int32_t) * (size_t)(B * bt_stride));
    ad.sink = sink ? dev_put(&d, sink, sizeof(float) * (size_t)H) : NULL;
    void *d_out = dev_put(&d, pat_out, O.out_bytes), *d_lse = dev_put(&d, pat_lse, O.lse_bytes);
    ad.out = d_out;
    ad.lse = c->lse_null ? NULL : d_lse;
    size_t ws = mla_decode_workspace_size(cu, &ad);

    h_begin("%s%s", name, cpu_rc == MLA_OK ? "" : " [cpu oracle unavailable]");
    EXPECT(d.ok, "device allocation or copy failed: %s", mla_ctx_last_error(cu));
    if (d.ok && c->ws_null && ws > 0) {
        ad.workspace = NULL;
        ad.workspace_bytes = ws;
        mla_status rc = mla_decode(cu, &ad);
        EXPECT(rc == MLA_ERR_INVALID_ARG && strstr(mla_ctx_last_error(cu), "workspace_bytes"),
               "NULL workspace (%zu bytes needed) gave %s: %s", ws, mla_status_str(rc), mla_ctx_last_error(cu));
    }
    if (d.ok) {
        ad.workspace = ws ? dev_put(&d, NULL, ws) : NULL;
        ad.workspace_bytes = ws;
        mla_status rc = d.ok ? mla_decode(cu, &ad) : MLA_ERR_OUT_OF_MEMORY;
        if (rc == MLA_ERR_UNSUPPORTED && c->page_pad % 16) {
            h_skip(mla_ctx_last_error(cu));
            goto done;
        }
        EXPECT_OK(cu, rc);
        if (rc == MLA_OK) {
            uint8_t *g_out = h_alloc(O.out_bytes), *g_lse = h_alloc(O.lse_bytes);
            EXPECT_OK(cu, mla_memcpy_to_host(cu, g_out, d_out, O.out_bytes));
            EXPECT_OK(cu, mla_memcpy_to_host(cu, g_lse, d_lse, O.lse_bytes));
            if (c->lse_null) {
                EXPECT(memcmp(g_lse, pat_lse, O.lse_bytes) == 0, "lse = NULL but the buffer changed");
            }
            check_results(&O, g_out, c->lse_null ? NULL : g_lse, NULL, cpu_rc == MLA_OK ? cpu_out : NULL,
                          cpu_rc == MLA_OK && !c->lse_null ? cpu_lse : NULL, r_out, r_lse, NULL);
            free(g_out);
            free(g_lse);
        }
    }
    h_end();
done:
    dev_free(&d);
    free(cpu_out); free(cpu_lse); free(pat_out); free(pat_lse);
    free(r_out); free(r_lse); free(sink);
    q_free(&Q);
    free(bt); free(perm); pool_free(&P); free(qo); free(seq);
}

/* ---- mla_sparse ----------------------------------------------------------------------------- */

typedef struct {
    mla_format fmt;
    int H, page_size, T, topk, sink, strided, odd_out, null_outs;
    int topk_len_mode;         /* 0: NULL, 1: random with zeros, 2: all zero */
    int num_pages;
    uint64_t seed;
} scase;

static void run_sparse(mla_ctx *cpu, mla_ctx *cu, const scase *c) {
    char name[200];
    int topk = c->topk;
    if (quick && topk > 512) topk = 512;
    snprintf(name, sizeof name, "sparse fmt=%s H=%d page=%d T=%d topk=%d topk_len=%s sink=%d%s%s%s seed=%llu",
             fmt_short(c->fmt), c->H, c->page_size, c->T, topk,
             c->topk_len_mode == 0 ? "NULL" : c->topk_len_mode == 1 ? "random" : "zero", c->sink,
             c->strided ? " strided" : "", c->odd_out ? " odd_out" : "", c->null_outs ? " lse=max=NULL" : "",
             (unsigned long long)c->seed);
    if (filter && !strstr(name, filter)) return;
    h_rng g = {c->seed};
    const int T = c->T, H = c->H, ps = c->page_size;
    const int64_t slots = (int64_t)c->num_pages * ps;
    pool P;
    pool_init(&P, c->fmt, ps, c->num_pages, c->strided ? 32 : 0, 0);
    char *filled = h_alloc((size_t)slots);

    /* indices: valid ids, duplicates, -1, ids past the pool, huge negatives; garbage past topk_len
       points at (NaN) slots that no used entry references */
    const int64_t ist = c->strided ? topk + 7 : topk;
    int32_t *idx = h_alloc(sizeof(int32_t) * (size_t)(T * ist));
    int32_t *tl = c->topk_len_mode ? h_alloc(sizeof(int32_t) * (size_t)T) : NULL;
    for (int64_t i = 0; i < T * ist; i++) idx[i] = -7;
    for (int t = 0; t < T; t++) {
        int len = topk;
        if (c->topk_len_mode == 1) len = t % 4 == 1 ? 0 : t % 4 == 2 ? topk : h_int(&g, 0, topk);
        if (c->topk_len_mode == 2) len = 0;
        if (tl) tl[t] = t % 5 == 3 && c->topk_len_mode == 1 ? topk + 5 : len; /* above topk: clamps to topk */
        if (tl && tl[t] > topk) len = topk;
        for (int j = 0; j < topk; j++) {
            int k = h_int(&g, 0, 19);
            int32_t id;
            if (k < 14) id = (int32_t)(h_next(&g) % (uint64_t)slots);
            else if (k < 16 && j > 0) id = idx[t * ist + h_int(&g, 0, j - 1)]; /* duplicate */
            else if (k == 16) id = -1;
            else if (k == 17) id = (int32_t)slots + h_int(&g, 0, 3);
            else if (k == 18) id = INT32_MIN + h_int(&g, 0, 100);
            else id = 2147483647;
            idx[t * ist + j] = id;
            if (j < len && id >= 0 && id < slots && !filled[id]) {
                filled[id] = 1;
                pool_fill(&P, id / ps, id % ps, &g);
            }
        }
    }
    /* garbage past topk_len: ids of slots that stay NaN, when there are any */
    int64_t nan_slot = -1;
    for (int64_t s = 0; s < slots; s++)
        if (!filled[s]) { nan_slot = s; break; }
    if (tl && nan_slot >= 0)
        for (int t = 0; t < T; t++)
            for (int j = tl[t] < 0 ? 0 : tl[t]; j < topk; j++)
                if (h_int(&g, 0, 1)) idx[t * ist + j] = (int32_t)nan_slot;

    qbuf Q;
    q_make(&Q, T, H, 0, c->strided, &g);
    float *sink = make_sinks(H, c->sink, &g);
    const float scale = 0.0721688f + 0.05f * (float)h_uniform(&g);

    /* float64 reference */
    double *r_out = h_alloc(sizeof(double) * (size_t)T * H * 512), *r_lse = h_alloc(sizeof(double) * (size_t)T * H);
    double *r_max = h_alloc(sizeof(double) * (size_t)T * H);
    double *keys = h_alloc(sizeof(double) * 576 * (size_t)topk);
    int *use = h_alloc(sizeof(int) * (size_t)topk);
    double qd[576];
    for (int t = 0; t < T; t++) {
        int len = tl ? (tl[t] < 0 ? 0 : tl[t] > topk ? topk : tl[t]) : topk;
        for (int j = 0; j < topk; j++) {
            int32_t id = idx[t * ist + j];
            use[j] = j < len && id >= 0 && id < slots;
            if (use[j]) pool_deq(&P, id / ps, id % ps, keys + (int64_t)j * 576);
        }
        for (int h = 0; h < H; h++) {
            q_deq(&Q, t, h, qd);
            int64_t r = (int64_t)t * H + h;
            ref_row(qd, keys, use, topk, scale, sink ? sink + h : NULL, r_out + r * 512, r_lse + r, r_max + r);
        }
    }

    outs O;
    outs_make(&O, T, H, c->strided, c->odd_out);
    uint8_t *pat_out = h_alloc(O.out_bytes), *pat_lse = h_alloc(O.lse_bytes);
    memset(pat_out, PAT, O.out_bytes);
    memset(pat_lse, PAT, O.lse_bytes);

    mla_sparse_args a = {0};
    a.num_tokens = T;
    a.num_heads = H;
    a.q_stride_t = c->strided ? Q.st : 0;
    a.q_stride_h = c->strided ? Q.sh : 0;
    a.cache.page_stride = P.page_stride;
    a.cache.page_size = ps;
    a.cache.num_pages = c->num_pages;
    a.cache.format = c->fmt;
    a.topk = topk;
    a.indices_stride_t = c->strided ? ist : 0;
    a.scale = scale;
    a.out_stride_t = (c->strided || c->odd_out) ? O.ost : 0;
    a.out_stride_h = (c->strided || c->odd_out) ? O.osh : 0;
    a.lse_stride_t = c->strided ? O.lst : 0;

    uint8_t *cpu_out = h_alloc(O.out_bytes), *cpu_lse = h_alloc(O.lse_bytes), *cpu_max = h_alloc(O.lse_bytes);
    memcpy(cpu_out, pat_out, O.out_bytes);
    memcpy(cpu_lse, pat_lse, O.lse_bytes);
    memcpy(cpu_max, pat_lse, O.lse_bytes);
    mla_sparse_args ah = a;
    ah.q = (const uint16_t *)Q.buf;
    ah.cache.base = P.base;
    ah.indices = idx;
    ah.topk_len = tl;
    ah.sink = sink;
    ah.out = (uint16_t *)cpu_out;
    ah.lse = c->null_outs ? NULL : (float *)cpu_lse;
    ah.max_logits = c->null_outs ? NULL : (float *)cpu_max;
    mla_status cpu_rc = mla_sparse(cpu, &ah);

    devset d = {cu, {0}, 0, 1};
    mla_sparse_args ad = a;
    ad.q = dev_put(&d, Q.buf, Q.bytes);
    ad.cache.base = dev_put(&d, P.base, (size_t)(P.page_stride * c->num_pages));
    ad.indices = dev_put(&d, idx, sizeof(int32_t) * (size_t)(T * ist));
    ad.topk_len = tl ? dev_put(&d, tl, sizeof(int32_t) * (size_t)T) : NULL;
    ad.sink = sink ? dev_put(&d, sink, sizeof(float) * (size_t)H) : NULL;
    void *d_out = dev_put(&d, pat_out, O.out_bytes), *d_lse = dev_put(&d, pat_lse, O.lse_bytes);
    void *d_max = dev_put(&d, pat_lse, O.lse_bytes);
    ad.out = d_out;
    ad.lse = c->null_outs ? NULL : d_lse;
    ad.max_logits = c->null_outs ? NULL : d_max;
    size_t ws = mla_sparse_workspace_size(cu, &ad);
    ad.workspace = ws ? dev_put(&d, NULL, ws) : NULL;
    ad.workspace_bytes = ws;

    h_begin("%s%s", name, cpu_rc == MLA_OK ? "" : " [cpu oracle unavailable]");
    EXPECT(d.ok, "device allocation or copy failed: %s", mla_ctx_last_error(cu));
    if (d.ok) {
        mla_status rc = mla_sparse(cu, &ad);
        EXPECT_OK(cu, rc);
        if (rc == MLA_OK) {
            uint8_t *g_out = h_alloc(O.out_bytes), *g_lse = h_alloc(O.lse_bytes), *g_max = h_alloc(O.lse_bytes);
            EXPECT_OK(cu, mla_memcpy_to_host(cu, g_out, d_out, O.out_bytes));
            EXPECT_OK(cu, mla_memcpy_to_host(cu, g_lse, d_lse, O.lse_bytes));
            EXPECT_OK(cu, mla_memcpy_to_host(cu, g_max, d_max, O.lse_bytes));
            if (c->null_outs)
                EXPECT(memcmp(g_lse, pat_lse, O.lse_bytes) == 0 && memcmp(g_max, pat_lse, O.lse_bytes) == 0,
                       "lse / max_logits = NULL but a buffer changed");
            int cpu_ok = cpu_rc == MLA_OK;
            check_results(&O, g_out, c->null_outs ? NULL : g_lse, c->null_outs ? NULL : g_max, cpu_ok ? cpu_out : NULL,
                          cpu_ok && !c->null_outs ? cpu_lse : NULL, r_out, r_lse, r_max);
            if (cpu_ok && !c->null_outs) {
                float *x = h_alloc(sizeof(float) * (size_t)T * H), *y = h_alloc(sizeof(float) * (size_t)T * H);
                outs_lse(&O, g_max, x);
                outs_lse(&O, cpu_max, y);
                mla_cmp cm;
                char s[300];
                if (!mla_compare_f32(x, y, (int64_t)T * H, MLA_TOL_LSE, &cm)) {
                    mla_cmp_str(&cm, s, sizeof s);
                    EXPECT(0, "max_logits vs CPU backend: %s", s);
                }
                free(x);
                free(y);
            }
            free(g_out);
            free(g_lse);
            free(g_max);
        }
    }
    h_end();
    dev_free(&d);
    free(cpu_out); free(cpu_lse); free(cpu_max); free(pat_out); free(pat_lse);
    free(r_out); free(r_lse); free(r_max); free(keys); free(use); free(sink);
    q_free(&Q);
    free(idx); free(tl); free(filled); pool_free(&P);
}

/* ---- the case lists ------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    const char *qe = getenv("MLA_TEST_QUICK");
    quick = qe && *qe && strcmp(qe, "0") != 0;
    filter = argc > 1 ? argv[1] : NULL;

    if (!mla_has_backend(MLA_BACKEND_CUDA) || mla_cuda_device_count() == 0) {
        h_begin("cuda decode / sparse");
        h_skip(mla_has_backend(MLA_BACKEND_CUDA) ? "no CUDA device present" : "built without CUDA");
        return h_finish();
    }
    mla_ctx *cpu = h_cpu_ctx();
    mla_ctx_params pp = mla_ctx_params_default();
    pp.backend = MLA_BACKEND_CUDA;
    mla_ctx *cu = NULL;
    mla_status rc = mla_ctx_create(&pp, &cu);
    if (rc != MLA_OK) {
        h_begin("cuda context");
        EXPECT(0, "mla_ctx_create(CUDA) with %d devices: %s", mla_cuda_device_count(), mla_status_str(rc));
        h_end();
        mla_ctx_destroy(cpu);
        return h_finish();
    }

    /* fmt, H, page, causal, sink, strided, lse_null, odd_out, B, qmax, seqmax, long, seq0, page_pad, ws_null, seed */
    static const dcase dc[] = {
        {MLA_KV_BF16, 1, 1, 1, 0, 0, 0, 0, 3, 2, 40, 0, 0, 0, 0, 101},
        {MLA_KV_BF16, 7, 16, 1, 1, 0, 0, 0, 4, 3, 90, 0, 1, 0, 0, 102},
        {MLA_KV_BF16, 16, 61, 0, 1, 0, 0, 0, 3, 4, 150, 0, 0, 0, 0, 103},
        {MLA_KV_BF16, 64, 64, 1, 0, 0, 0, 0, 3, 2, 130, 0, 0, 0, 0, 104},
        {MLA_KV_BF16, 100, 16, 1, 1, 1, 0, 0, 2, 2, 70, 0, 0, 48, 0, 105},
        {MLA_KV_BF16, 128, 64, 1, 1, 0, 0, 0, 3, 2, 100, 0, 0, 0, 0, 106},
        {MLA_KV_BF16, 16, 16, 1, 0, 0, 0, 0, 2, 4, 60, 1, 0, 0, 1, 107},
        {MLA_KV_BF16, 128, 1, 0, 0, 0, 1, 0, 3, 1, 50, 0, 1, 0, 0, 108},
        {MLA_KV_BF16, 16, 16, 1, 0, 0, 0, 0, 40, 1, 80, 0, 0, 0, 0, 109},
        {MLA_KV_FP8, 1, 64, 1, 0, 0, 0, 0, 2, 1, 20, 1, 0, 0, 0, 201},
        {MLA_KV_FP8, 16, 1, 1, 1, 0, 0, 0, 3, 3, 60, 0, 0, 0, 0, 202},
        {MLA_KV_FP8, 100, 61, 0, 0, 1, 0, 0, 3, 2, 140, 0, 0, 16, 0, 203},
        {MLA_KV_FP8, 128, 16, 1, 1, 0, 1, 0, 2, 2, 120, 0, 1, 0, 0, 204},
        {MLA_KV_FP8, 7, 64, 1, 0, 0, 0, 1, 3, 4, 70, 0, 0, 0, 0, 205},
        {MLA_KV_FP8, 64, 16, 1, 1, 0, 0, 0, 2, 1, 30, 1, 0, 0, 1, 206},
        {MLA_KV_FP8_ROPE_AWARE, 7, 64, 1, 1, 0, 0, 0, 3, 3, 100, 0, 0, 0, 0, 301},
        {MLA_KV_FP8_ROPE_AWARE, 16, 16, 1, 0, 0, 0, 0, 2, 3, 50, 1, 0, 0, 0, 302},
        {MLA_KV_FP8_ROPE_AWARE, 64, 1, 0, 1, 0, 0, 0, 3, 2, 70, 0, 1, 0, 0, 303},
        {MLA_KV_FP8_ROPE_AWARE, 128, 61, 1, 1, 1, 0, 0, 2, 2, 150, 0, 0, 32, 0, 304},
        {MLA_KV_FP8_ROPE_AWARE, 1, 16, 1, 0, 0, 0, 1, 4, 4, 40, 0, 0, 0, 0, 305},
        {MLA_KV_BF16, 64, 16, 1, 0, 0, 0, 0, 2, 2, 50, 0, 0, 8, 0, 401}, /* page_stride % 16 != 0: ok or refused */
    };
    static const scase sc[] = {
        /* fmt, H, page, T, topk, sink, strided, odd_out, null_outs, topk_len_mode, num_pages, seed */
        {MLA_KV_BF16, 1, 1, 3, 64, 0, 0, 0, 0, 1, 300, 501},
        {MLA_KV_BF16, 7, 16, 4, 100, 1, 0, 0, 0, 0, 20, 502},
        {MLA_KV_BF16, 16, 61, 2, 2048, 0, 0, 0, 0, 1, 50, 503},
        {MLA_KV_BF16, 64, 64, 3, 300, 1, 0, 0, 0, 1, 12, 504},
        {MLA_KV_BF16, 100, 16, 2, 128, 1, 1, 0, 0, 1, 30, 505},
        {MLA_KV_BF16, 128, 64, 4, 256, 1, 0, 0, 0, 1, 10, 506},
        {MLA_KV_BF16, 16, 16, 3, 50, 0, 0, 0, 0, 2, 8, 507},
        {MLA_KV_FP8, 1, 64, 1, 2048, 0, 0, 0, 0, 0, 40, 601},
        {MLA_KV_FP8, 16, 1, 4, 200, 1, 0, 0, 1, 1, 500, 602},
        {MLA_KV_FP8, 100, 61, 2, 160, 0, 1, 0, 0, 1, 10, 603},
        {MLA_KV_FP8, 128, 16, 8, 128, 1, 0, 0, 0, 1, 30, 604},
        {MLA_KV_FP8, 7, 16, 5, 90, 0, 0, 1, 0, 1, 20, 605},
        {MLA_KV_BF16, 64, 16, 40, 64, 0, 0, 0, 0, 1, 40, 606},
    };
    int nd = (int)(sizeof dc / sizeof dc[0]), ns = (int)(sizeof sc / sizeof sc[0]);
    for (int i = 0; i < nd; i++)
        if (!quick || i % 3 == 0 || dc[i].long_seq) run_decode(cpu, cu, &dc[i]);
    for (int i = 0; i < ns; i++)
        if (!quick || i % 3 == 0) run_sparse(cpu, cu, &sc[i]);

    mla_ctx_destroy(cu);
    mla_ctx_destroy(cpu);
    return h_finish();
}
