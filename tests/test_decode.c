/* mla_decode (SPEC 4.1) on the CPU backend against a float64 reference: every latent format,
 * H across 1..128, page sizes 1/16/61/64, ragged q_len with 0, causal and not, sinks with finite,
 * -inf and +inf entries, non-default strides everywhere, NaN-poisoned unused memory, guard bytes,
 * split-KV (long sequences, few requests) and several thread counts. (The golden cases run in test_golden.) */
#include "attn_ref.h"
#include "cpu/attn.h"
#include "cpu/cpu.h"

typedef struct dcfg {
    mla_format fmt;
    int H, B, ps, causal, sink, threads;
    int qlen[6], seq[6];
    int q_pad_h, q_pad_t, o_pad_h, o_pad_t, lse_pad, page_extra, sigma_extra, bt_extra;
    int no_lse;
    float scale;
    double amp;
} dcfg;

static const char *fmt_short(mla_format f) {
    return f == MLA_KV_BF16 ? "bf16" : f == MLA_KV_FP8 ? "fp8" : "ropeaware";
}

static mla_ctx *ctx_threads(int n) {
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = MLA_BACKEND_CPU;
    p.num_threads = n;
    mla_ctx *c = NULL;
    if (mla_ctx_create(&p, &c) != MLA_OK) { fprintf(stderr, "cannot create a CPU context\n"); exit(2); }
    return c;
}

static void run_case(const dcfg *c, uint64_t seed) {
    char qs[64] = "", ss[64] = "";
    int T = 0;
    for (int b = 0; b < c->B; b++) {
        T += c->qlen[b];
        snprintf(qs + strlen(qs), sizeof qs - strlen(qs), "%s%d", b ? "," : "", c->qlen[b]);
        snprintf(ss + strlen(ss), sizeof ss - strlen(ss), "%s%d", b ? "," : "", c->seq[b]);
    }
    h_begin("decode %s H=%d page=%d q_len=[%s] seq=[%s] causal=%d sink=%d threads=%d strides=%d/%d/%d/%d/%d/%d/%d",
            fmt_short(c->fmt), c->H, c->ps, qs, ss, c->causal, c->sink, c->threads, c->q_pad_h, c->q_pad_t,
            c->o_pad_h, c->o_pad_t, c->lse_pad, c->page_extra, c->bt_extra);
    h_rng g = {seed};
    const int H = c->H, ra = c->fmt == MLA_KV_FP8_ROPE_AWARE;

    /* pages: a shuffled pool with a few pages nobody owns */
    int np[6], total = 0, maxp = 0;
    for (int b = 0; b < c->B; b++) {
        np[b] = (c->seq[b] + c->ps - 1) / c->ps;
        total += np[b];
        if (np[b] > maxp) maxp = np[b];
    }
    int num_pages = total + 2;
    int *perm = (int *)h_alloc((size_t)num_pages * sizeof(int));
    for (int i = 0; i < num_pages; i++) perm[i] = i;
    for (int i = num_pages - 1; i > 0; i--) { int j = h_int(&g, 0, i), x = perm[i]; perm[i] = perm[j]; perm[j] = x; }
    int64_t bt_stride = maxp + c->bt_extra;
    if (bt_stride < 1) bt_stride = 1;
    int32_t *bt = (int32_t *)h_alloc((size_t)(c->B * bt_stride) * sizeof(int32_t));
    int next = 0;
    for (int b = 0; b < c->B; b++)
        for (int64_t p = 0; p < bt_stride; p++)
            bt[b * bt_stride + p] = p < np[b] ? perm[next++] : (p & 1 ? INT_MAX : 2147480000);
    t_cache tc;
    t_cache_make(&tc, c->fmt, c->ps, num_pages, c->page_extra, c->sigma_extra);
    for (int b = 0; b < c->B; b++)
        for (int j = 0; j < c->seq[b]; j++) t_write_row(&tc, &g, bt[b * bt_stride + j / c->ps], j % c->ps, c->amp);

    /* q, poisoned around its rows */
    int64_t row = ra ? 640 : 576;
    int64_t qsh = row + c->q_pad_h, qst = H * qsh + c->q_pad_t;
    int64_t esz = ra ? 1 : 2;
    size_t qbytes = (size_t)(T * qst * esz) + 64;
    uint8_t *q = (uint8_t *)h_alloc(qbytes);
    memset(q, 0xFF, qbytes);
    float *q_sigma = (float *)h_alloc((size_t)(T + 1) * sizeof(float));
    double *qd = (double *)h_alloc((size_t)T * H * 576 * sizeof(double));
    for (int t = 0; t < T; t++) {
        float x[MLA_MAX_HEADS][576];
        float amax = 0;
        for (int h = 0; h < H; h++)
            for (int d = 0; d < 576; d++) {
                x[h][d] = (float)h_normal(&g);
                if (d < 512) amax = fmaxf(amax, fabsf(x[h][d]));
            }
        float s = pow2_scale_ref(amax);
        q_sigma[t] = s;
        for (int h = 0; h < H; h++) {
            double *o = qd + ((size_t)t * H + h) * 576;
            if (ra) {
                uint8_t *dst = q + t * qst + h * qsh;
                for (int d = 0; d < 512; d++) { dst[d] = f32_to_e4m3_ref(x[h][d] / s); o[d] = (double)e4m3_to_f32_ref(dst[d]) * s; }
                for (int d = 0; d < 64; d++) {
                    uint16_t v = f32_to_bf16_ref(x[h][512 + d] / s);
                    memcpy(dst + 512 + 2 * d, &v, 2);
                    o[512 + d] = t_bf16(v) * s;
                }
            } else {
                uint16_t *dst = (uint16_t *)q + t * qst + h * qsh;
                for (int d = 0; d < 576; d++) { dst[d] = f32_to_bf16_ref(x[h][d]); o[d] = t_bf16(dst[d]); }
            }
        }
    }
    float *sink = NULL;
    if (c->sink) {
        sink = (float *)h_alloc((size_t)H * sizeof(float));
        for (int h = 0; h < H; h++) {
            int k = h_int(&g, 0, 5);
            sink[h] = k == 0 ? -INFINITY : k == 1 ? INFINITY : (float)(h_uniform(&g) * 12 - 3);
        }
    }
    int32_t qo[7], seq[6];
    qo[0] = 0;
    for (int b = 0; b < c->B; b++) { qo[b + 1] = qo[b] + c->qlen[b]; seq[b] = c->seq[b]; }

    /* outputs with guards */
    int64_t osh = 512 + c->o_pad_h, ost = H * osh + c->o_pad_t, lst = H + c->lse_pad;
    size_t obytes = (size_t)(T * ost) * 2 + 256, lbytes = (size_t)(T * lst) * 4 + 256;
    uint8_t *out = (uint8_t *)h_alloc(obytes), *lse = (uint8_t *)h_alloc(lbytes);
    uint8_t *omask = (uint8_t *)h_alloc(obytes), *lmask = (uint8_t *)h_alloc(lbytes);
    memset(out, T_GUARD, obytes);
    memset(lse, T_GUARD, lbytes);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            memset(omask + (size_t)(t * ost + h * osh) * 2, 1, 1024);
            if (!c->no_lse) memset(lmask + (size_t)(t * lst + h) * 4, 1, 4);
        }

    mla_decode_args a = {0};
    a.num_tokens = T;
    a.num_heads = H;
    a.q = q;
    a.q_stride_t = (c->q_pad_h || c->q_pad_t) ? qst : 0;
    a.q_stride_h = c->q_pad_h ? qsh : 0;
    a.q_sigma = ra ? q_sigma : NULL;
    a.cache = tc.c;
    a.batch = (mla_batch){c->B, qo, seq, bt, bt_stride};
    a.causal = c->causal;
    a.scale = c->scale;
    a.sink = sink;
    a.out = (uint16_t *)out;
    a.out_stride_t = (c->o_pad_h || c->o_pad_t) ? ost : 0;
    a.out_stride_h = c->o_pad_h ? osh : 0;
    a.lse = c->no_lse ? NULL : (float *)lse;
    a.lse_stride_t = c->lse_pad ? lst : 0;
    mla_ctx *ctx = ctx_threads(c->threads);
    mla_status rc = mla_decode(ctx, &a);
    EXPECT_OK(ctx, rc);
    if (rc == MLA_OK && c->B <= 2) { /* the CPU computes MLA_PRECISION_BF16_P as MLA_PRECISION_SPEC: same bytes */
        uint8_t *out2 = (uint8_t *)h_alloc(obytes);
        memcpy(out2, out, obytes);
        a.precision = MLA_PRECISION_BF16_P;
        EXPECT_OK(ctx, mla_decode(ctx, &a));
        EXPECT(memcmp(out2, out, obytes) == 0, "MLA_PRECISION_BF16_P changed the CPU output");
        a.precision = MLA_PRECISION_SPEC;
        free(out2);
    }
    mla_ctx_destroy(ctx);

    /* reference */
    float *got = (float *)h_alloc((size_t)T * H * 512 * sizeof(float) + 4);
    double *want = (double *)h_alloc((size_t)T * H * 512 * sizeof(double) + 8);
    float *got_lse = (float *)h_alloc((size_t)T * H * sizeof(float) + 4);
    double *want_lse = (double *)h_alloc((size_t)T * H * sizeof(double) + 8);
    for (int b = 0; b < c->B; b++) {
        double *k = (double *)h_alloc((size_t)(c->seq[b] + 1) * 576 * sizeof(double));
        for (int j = 0; j < c->seq[b]; j++) {
            int64_t page = bt[b * bt_stride + j / c->ps], slot = j % c->ps;
            t_deq_row(&tc.c, t_row(&tc, page, slot), ra ? *t_sigma(&tc, page, slot) : 0.0f, k + (size_t)j * 576);
        }
        for (int i = 0; i < c->qlen[b]; i++) {
            int t = qo[b] + i;
            int64_t lim = c->causal ? c->seq[b] - c->qlen[b] + i + 1 : c->seq[b];
            if (lim < 0) lim = 0;
            for (int h = 0; h < H; h++) {
                double mx;
                size_t o = (size_t)t * H + h;
                t_ref_row(qd + o * 576, c->scale, lim, k, sink ? sink + h : NULL, want + o * 512, want_lse + o, &mx);
                const uint16_t *src = (const uint16_t *)out + t * ost + h * osh;
                for (int d = 0; d < 512; d++) got[o * 512 + d] = (float)t_bf16(src[d]);
                got_lse[o] = c->no_lse ? (float)want_lse[o] : ((float *)lse)[t * lst + h];
            }
        }
        free(k);
    }
    EXPECT_CLOSE(got, want, (int64_t)T * H * 512, MLA_TOL_OUT, "out");
    EXPECT_CLOSE(got_lse, want_lse, (int64_t)T * H, MLA_TOL_LSE, "lse");
    int64_t gb = t_guard_bad(out, omask, obytes);
    EXPECT(gb == 0, "%lld bytes of out outside the rows changed", (long long)gb);
    gb = t_guard_bad(lse, lmask, lbytes);
    EXPECT(gb == 0, "%lld bytes of lse outside the rows changed", (long long)gb);
    h_end();

    free(got); free(want); free(got_lse); free(want_lse);
    free(out); free(lse); free(omask); free(lmask);
    free(q); free(q_sigma); free(qd); free(sink); free(bt); free(perm);
    t_cache_free(&tc);
}

/* Rows with no visible key (seq_len 0 below q_len, which validation refuses but the backend must
 * survive): out = 0, lse = +inf, and a +inf sink makes no NaN. Calls the backend directly. */
static void empty_rows(void) {
    h_begin("decode backend: rows with no visible key -> out 0, lse +inf (sink +inf, -inf, finite)");
    mla_ctx *ctx = h_cpu_ctx();
    t_cache tc;
    t_cache_make(&tc, MLA_KV_BF16, 16, 2, 0, 0);
    uint16_t q[3 * 576];
    for (int i = 0; i < 3 * 576; i++) q[i] = f32_to_bf16_ref(0.5f);
    int32_t qo[3] = {0, 2, 3}, seq[2] = {0, 0}, bt[2] = {0, 1};
    float sink[1] = {INFINITY};
    uint16_t out[3 * 512];
    float lse[3];
    memset(out, 0x55, sizeof out);
    for (int causal = 0; causal < 2; causal++)
        for (int s = 0; s < 3; s++) {
            sink[0] = s == 0 ? INFINITY : s == 1 ? -INFINITY : 1.0f;
            mla_decode_args a = {0};
            a.num_tokens = 3;
            a.num_heads = 1;
            a.q = q;
            a.cache = tc.c;
            a.batch = (mla_batch){2, qo, seq, bt, 1};
            a.causal = causal;
            a.scale = 0.1f;
            a.sink = sink;
            a.out = out;
            a.lse = lse;
            mla_status rc = mla_cpu_decode(ctx, &a);
            EXPECT_OK(ctx, rc);
            int bad = 0;
            for (int i = 0; i < 3 * 512; i++) bad += out[i] != 0;
            EXPECT(bad == 0, "%d out values are not +0", bad);
            EXPECT(lse[0] == INFINITY && lse[1] == INFINITY && lse[2] == INFINITY, "lse must be +inf");
        }
    t_cache_free(&tc);
    mla_ctx_destroy(ctx);
    h_end();
}

/* The engine's e4m3 and bf16 conversions against the reference ones, every code. */
static void conversions(void) {
    h_begin("engine conversions: all 256 e4m3 codes (block and scalar) and bf16 bit for bit; exp");
    uint8_t codes[256];
    for (int i = 0; i < 256; i++) codes[i] = (uint8_t)i;
    float blk[256], blk2[256];
    att_e4m3_block(codes, 256, 1.0f, blk);
    att_e4m3_block(codes, 256, 0.0625f, blk2);
    int bad = 0;
    for (int i = 0; i < 256; i++) {
        float r = e4m3_to_f32_ref((uint8_t)i), s = att_e4m3((uint8_t)i);
        if (isnan(r)) {
            bad += !isnan(blk[i]) + !isnan(blk2[i]) + !isnan(s);
        } else {
            bad += mla_f32_to_bits(blk[i]) != mla_f32_to_bits(r);
            bad += mla_f32_to_bits(blk2[i]) != mla_f32_to_bits(r * 0.0625f);
            bad += mla_f32_to_bits(s) != mla_f32_to_bits(r);
        }
    }
    EXPECT(bad == 0, "%d e4m3 conversions differ from e4m3_to_f32_ref", bad);
    bad = 0;
    for (uint32_t u = 0; u < 65536; u++) {
        uint16_t v = (uint16_t)u;
        float a = att_bf16((const uint8_t *)&v), r = bf16_to_f32_ref(v);
        bad += mla_f32_to_bits(a) != mla_f32_to_bits(r);
    }
    EXPECT(bad == 0, "%d bf16 conversions differ", bad);
    /* the softmax exponential: relative error against exp() in double over [-86, 0], 0 below */
    double worst = 0;
    for (int i = 0; i < 200000; i += 16) {
        att_vf x;
        for (int k = 0; k < 16; k++) x[k] = -86.0f * (float)(i + k) / 200000.0f;
        att_vf y = att_exp(x);
        for (int k = 0; k < 16; k++) {
            double r = exp((double)x[k]), e = fabs(y[k] - r) / r;
            if (e > worst) worst = e;
        }
    }
    EXPECT(worst < 4e-7, "att_exp relative error %.3g", worst);
    att_vf lo = att_splat(-INFINITY);
    lo[1] = -100.0f;
    lo[2] = NAN;
    att_vf ylo = att_exp(lo);
    EXPECT(ylo[0] == 0.0f && ylo[1] == 0.0f && isnan(ylo[2]), "att_exp(-inf) = 0, tiny = 0, NaN stays NaN");
    h_end();
}


int main(void) {
    h_rng g = {20240611};
    static const int Hs[] = {1, 16, 64, 128, 3, 7, 8, 15, 17, 33, 100, 127, 2, 31, 5};
    static const int PSs[] = {1, 16, 61, 64};
    static const float scales[] = {0.135233805f, 0.0721687824f, 0.3f, 0.030322684f};
    const int nH = (int)(sizeof Hs / sizeof Hs[0]);
    int ncase = 0;
    for (int i = 0; i < 80; i++) {
        dcfg c;
        memset(&c, 0, sizeof c);
        c.fmt = (mla_format)(1 + i % 3);
        c.H = Hs[(i / 3 + i) % nH];
        c.ps = PSs[h_int(&g, 0, 3)];
        c.B = h_int(&g, 1, 4);
        c.causal = h_int(&g, 0, 1);
        c.sink = h_int(&g, 0, 2) == 0;
        c.threads = i % 7 == 3 ? 1 : i % 7 == 5 ? 3 : 0;
        int maxq = c.H >= 64 ? 2 : 4, maxs = c.H >= 64 ? 160 : 260;
        for (int b = 0; b < c.B; b++) {
            c.qlen[b] = h_int(&g, 0, 3) == 0 ? 0 : h_int(&g, 1, maxq);
            c.seq[b] = c.qlen[b] + (h_int(&g, 0, 5) == 0 ? 0 : h_int(&g, 0, maxs));
        }
        if (i % 9 == 4) c.seq[0] = c.qlen[0] = 0; /* an empty request */
        if (h_int(&g, 0, 1)) {
            c.q_pad_h = 8 * h_int(&g, 0, 3);
            c.q_pad_t = h_int(&g, 0, 40);
            c.o_pad_h = 8 * h_int(&g, 0, 3);
            c.o_pad_t = h_int(&g, 0, 40);
            c.lse_pad = h_int(&g, 0, 5);
            c.page_extra = h_int(&g, 0, 1) ? 64 : 3;
            c.sigma_extra = h_int(&g, 0, 3);
            c.bt_extra = h_int(&g, 0, 3);
        }
        c.no_lse = i % 11 == 7;
        c.scale = scales[h_int(&g, 0, 3)];
        c.amp = i % 10 == 6 ? 3.0 : i % 10 == 8 ? 0.1 : 1.0;
        run_case(&c, 1000 + (uint64_t)i);
        ncase++;
    }
    /* split-KV: one request, long sequence, several thread counts */
    for (int f = 1; f <= 3; f++) {
        dcfg c;
        memset(&c, 0, sizeof c);
        c.fmt = (mla_format)f;
        c.H = f == 1 ? 16 : f == 2 ? 1 : 128;
        c.ps = f == 2 ? 61 : 64;
        c.B = f == 3 ? 2 : 1;
        c.qlen[0] = f == 2 ? 3 : 1;
        c.seq[0] = f == 3 ? 1300 : 3000;
        c.qlen[1] = 1;
        c.seq[1] = 77;
        c.causal = 1;
        c.sink = f == 1;
        c.scale = 0.135233805f;
        c.amp = 1.0;
        c.threads = f == 2 ? 3 : 0;
        run_case(&c, 5000 + (uint64_t)f);
    }
    /* around the kernel switch (9 / 10 / 16 rows of one request) and a 1-head MTP block */
    static const int edge[][2] = {{3, 3}, {5, 2}, {1, 16}, {16, 1}};
    for (int f = 1; f <= 3; f++)
        for (int e = 0; e < 4; e++) {
            dcfg c;
            memset(&c, 0, sizeof c);
            c.fmt = (mla_format)f;
            c.H = edge[e][0];
            c.ps = e == 2 ? 1 : 16;
            c.B = 2;
            c.qlen[0] = edge[e][1];
            c.seq[0] = edge[e][1] + 90;
            c.qlen[1] = 1;
            c.seq[1] = 33;
            c.causal = e != 3;
            c.sink = e == 1;
            c.scale = 0.135233805f;
            c.amp = 1.0;
            run_case(&c, 6000 + (uint64_t)(f * 4 + e));
        }
    conversions();
    empty_rows();
    /* the golden cases run in test_golden, through the shared loader and checker */
    return h_finish();
}
