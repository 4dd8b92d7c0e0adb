/* mla_sparse (SPEC 4.2) on the CPU backend against a float64 reference: MLA_KV_BF16 and
 * MLA_KV_FP8, H across 1..128, page sizes 1/16/61/64, invalid ids (-1, INT_MIN, num_slots,
 * num_slots+1, huge), duplicates, topk_len with 0 / short / NULL / past topk, index strides whose
 * gaps point at poisoned slots, every unused slot NaN-poisoned, sinks with finite/-inf/+inf,
 * non-default strides, guard bytes, split chunks (topk 2048 with few tokens), several thread
 * counts. (The golden cases run in test_golden.) */
#include "attn_ref.h"

typedef struct scfg {
    mla_format fmt;
    int H, T, ps, topk, sink, threads;
    int use_topk_len;
    int idx_pad, q_pad_h, q_pad_t, o_pad_h, o_pad_t, lse_pad, page_extra;
    int no_lse, no_max;
    int dup_heavy;       /* few distinct slots: many duplicates */
    float scale;
    double amp;
} scfg;

static mla_ctx *ctx_threads(int n) {
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = MLA_BACKEND_CPU;
    p.num_threads = n;
    mla_ctx *c = NULL;
    if (mla_ctx_create(&p, &c) != MLA_OK) { fprintf(stderr, "cannot create a CPU context\n"); exit(2); }
    return c;
}

static void run_case(const scfg *c, uint64_t seed) {
    h_begin("sparse %s H=%d T=%d page=%d topk=%d topk_len=%d sink=%d threads=%d dup=%d strides=%d/%d/%d/%d/%d/%d/%d",
            c->fmt == MLA_KV_BF16 ? "bf16" : "fp8", c->H, c->T, c->ps, c->topk, c->use_topk_len, c->sink, c->threads,
            c->dup_heavy, c->idx_pad, c->q_pad_h, c->q_pad_t, c->o_pad_h, c->o_pad_t, c->lse_pad, c->page_extra);
    h_rng g = {seed};
    const int H = c->H, T = c->T, topk = c->topk;
    int num_pages = h_int(&g, 2, 6) + (c->topk + c->ps - 1) / c->ps;
    int64_t nslots = (int64_t)num_pages * c->ps;
    t_cache tc;
    t_cache_make(&tc, c->fmt, c->ps, num_pages, c->page_extra, 0);
    uint8_t *written = (uint8_t *)h_alloc((size_t)nslots);

    /* indices: used entries mix valid ids (duplicates too) and invalid ones; entries past
     * topk_len and in the stride gap point at valid but poisoned slots */
    int64_t ist = topk + c->idx_pad;
    int32_t *idx = (int32_t *)h_alloc((size_t)(T * ist) * sizeof(int32_t));
    int32_t *tl = (int32_t *)h_alloc((size_t)T * sizeof(int32_t));
    int64_t distinct = c->dup_heavy ? 3 : nslots;
    for (int t = 0; t < T; t++) {
        int k = h_int(&g, 0, 6);
        tl[t] = !c->use_topk_len ? topk : k == 0 ? 0 : k == 1 ? topk : k == 2 ? topk + 5 : k == 3 && t == 1 ? -3
                                                  : h_int(&g, 1, topk);
        int64_t used = !c->use_topk_len ? topk : tl[t] < 0 ? 0 : tl[t] > topk ? topk : tl[t];
        for (int64_t j = 0; j < ist; j++) {
            int32_t v;
            if (j < used) {
                int kind = h_int(&g, 0, 15);
                static const int32_t bad[] = {-1, INT_MIN, -123456, 2147480000, INT_MAX};
                if (kind == 0) v = bad[h_int(&g, 0, 4)];
                else if (kind == 1) v = (int32_t)nslots;
                else if (kind == 2) v = (int32_t)nslots + 1;
                else if (kind == 3 && j > 0) v = idx[t * ist + h_int(&g, 0, (int)j - 1)]; /* duplicate */
                else v = (int32_t)(h_next(&g) % (uint64_t)distinct) * (c->dup_heavy ? (int32_t)(nslots / 3) : 1);
                if (v >= 0 && v < nslots && !written[v]) {
                    t_write_row(&tc, &g, v / c->ps, v % c->ps, c->amp);
                    written[v] = 1;
                }
            } else {
                v = -7; /* filled below with a poisoned slot when one exists */
            }
            idx[t * ist + j] = v;
        }
    }
    /* past topk_len / stride gaps: point at poisoned slots */
    for (int t = 0; t < T; t++) {
        int64_t used = !c->use_topk_len ? topk : tl[t] < 0 ? 0 : tl[t] > topk ? topk : tl[t];
        for (int64_t j = used; j < ist; j++) {
            int64_t s = (int64_t)(h_next(&g) % (uint64_t)nslots);
            for (int64_t tries = 0; tries < nslots && written[s]; tries++) s = (s + 1) % nslots;
            idx[t * ist + j] = (int32_t)s;
        }
    }

    int64_t qsh = 576 + c->q_pad_h, qst = H * qsh + c->q_pad_t;
    size_t qbytes = (size_t)(T * qst) * 2 + 64;
    uint16_t *q = (uint16_t *)h_alloc(qbytes);
    memset(q, 0xFF, qbytes);
    double *qd = (double *)h_alloc((size_t)T * H * 576 * sizeof(double));
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < 576; d++) {
                uint16_t v = f32_to_bf16_ref((float)h_normal(&g));
                q[t * qst + h * qsh + d] = v;
                qd[((size_t)t * H + h) * 576 + d] = t_bf16(v);
            }
    float *sink = NULL;
    if (c->sink) {
        sink = (float *)h_alloc((size_t)H * sizeof(float));
        for (int h = 0; h < H; h++) {
            int k = h_int(&g, 0, 5);
            sink[h] = k == 0 ? -INFINITY : k == 1 ? INFINITY : (float)(h_uniform(&g) * 12 - 3);
        }
    }

    int64_t osh = 512 + c->o_pad_h, ost = H * osh + c->o_pad_t, lst = H + c->lse_pad;
    size_t obytes = (size_t)(T * ost) * 2 + 256, lbytes = (size_t)(T * lst) * 4 + 256;
    uint8_t *out = (uint8_t *)h_alloc(obytes), *lse = (uint8_t *)h_alloc(lbytes), *mxl = (uint8_t *)h_alloc(lbytes);
    uint8_t *omask = (uint8_t *)h_alloc(obytes), *lmask = (uint8_t *)h_alloc(lbytes), *mmask = (uint8_t *)h_alloc(lbytes);
    memset(out, T_GUARD, obytes);
    memset(lse, T_GUARD, lbytes);
    memset(mxl, T_GUARD, lbytes);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            memset(omask + (size_t)(t * ost + h * osh) * 2, 1, 1024);
            if (!c->no_lse) memset(lmask + (size_t)(t * lst + h) * 4, 1, 4);
            if (!c->no_max) memset(mmask + (size_t)(t * lst + h) * 4, 1, 4);
        }

    mla_sparse_args a = {0};
    a.num_tokens = T;
    a.num_heads = H;
    a.q = q;
    a.q_stride_t = (c->q_pad_h || c->q_pad_t) ? qst : 0;
    a.q_stride_h = c->q_pad_h ? qsh : 0;
    a.cache = tc.c;
    a.indices = idx;
    a.topk = topk;
    a.indices_stride_t = c->idx_pad ? ist : 0;
    a.topk_len = c->use_topk_len ? tl : NULL;
    a.scale = c->scale;
    a.sink = sink;
    a.out = (uint16_t *)out;
    a.out_stride_t = (c->o_pad_h || c->o_pad_t) ? ost : 0;
    a.out_stride_h = c->o_pad_h ? osh : 0;
    a.lse = c->no_lse ? NULL : (float *)lse;
    a.max_logits = c->no_max ? NULL : (float *)mxl;
    a.lse_stride_t = c->lse_pad ? lst : 0;
    mla_ctx *ctx = ctx_threads(c->threads);
    mla_status rc = mla_sparse(ctx, &a);
    EXPECT_OK(ctx, rc);
    mla_ctx_destroy(ctx);

    size_t nr = (size_t)T * H;
    float *got = (float *)h_alloc(nr * 512 * sizeof(float)), *got_l = (float *)h_alloc(nr * 4), *got_m = (float *)h_alloc(nr * 4);
    double *want = (double *)h_alloc(nr * 512 * sizeof(double)), *want_l = (double *)h_alloc(nr * 8),
           *want_m = (double *)h_alloc(nr * 8);
    double *k = (double *)h_alloc((size_t)(topk + 1) * 576 * sizeof(double));
    for (int t = 0; t < T; t++) {
        int64_t used = !c->use_topk_len ? topk : tl[t] < 0 ? 0 : tl[t] > topk ? topk : tl[t], n = 0;
        for (int64_t j = 0; j < used; j++) {
            int32_t s = idx[t * ist + j];
            if (s < 0 || s >= nslots) continue;
            t_deq_row(&tc.c, t_row(&tc, s / c->ps, s % c->ps), 0.0f, k + (size_t)n * 576);
            n++;
        }
        for (int h = 0; h < H; h++) {
            size_t o = (size_t)t * H + h;
            t_ref_row(qd + o * 576, c->scale, n, k, sink ? sink + h : NULL, want + o * 512, want_l + o, want_m + o);
            const uint16_t *src = (const uint16_t *)out + t * ost + h * osh;
            for (int d = 0; d < 512; d++) got[o * 512 + d] = (float)t_bf16(src[d]);
            got_l[o] = c->no_lse ? (float)want_l[o] : ((float *)lse)[t * lst + h];
            got_m[o] = c->no_max ? (float)want_m[o] : ((float *)mxl)[t * lst + h];
        }
    }
    EXPECT_CLOSE(got, want, (int64_t)nr * 512, MLA_TOL_OUT, "out");
    EXPECT_CLOSE(got_l, want_l, (int64_t)nr, MLA_TOL_LSE, "lse");
    EXPECT_CLOSE(got_m, want_m, (int64_t)nr, MLA_TOL_LSE, "max_logits");
    int64_t gb = t_guard_bad(out, omask, obytes);
    EXPECT(gb == 0, "%lld bytes of out outside the rows changed", (long long)gb);
    gb = t_guard_bad(lse, lmask, lbytes);
    EXPECT(gb == 0, "%lld bytes of lse outside the rows changed", (long long)gb);
    gb = t_guard_bad(mxl, mmask, lbytes);
    EXPECT(gb == 0, "%lld bytes of max_logits outside the rows changed", (long long)gb);
    h_end();

    free(got); free(got_l); free(got_m); free(want); free(want_l); free(want_m); free(k);
    free(out); free(lse); free(mxl); free(omask); free(lmask); free(mmask);
    free(q); free(qd); free(sink); free(idx); free(tl); free(written);
    t_cache_free(&tc);
}


int main(void) {
    h_rng g = {777};
    static const int Hs[] = {1, 16, 64, 128, 3, 7, 8, 15, 17, 33, 100, 127, 2, 31, 5};
    static const int PSs[] = {1, 16, 61, 64};
    static const int topks[] = {1, 7, 40, 64, 129, 200, 50, 333};
    static const float scales[] = {0.135233805f, 0.0721687824f, 0.3f, 0.030322684f};
    const int nH = (int)(sizeof Hs / sizeof Hs[0]);
    for (int i = 0; i < 70; i++) {
        scfg c;
        memset(&c, 0, sizeof c);
        c.fmt = (mla_format)(1 + i % 2);
        c.H = Hs[(i / 2 + i) % nH];
        c.ps = PSs[h_int(&g, 0, 3)];
        c.T = h_int(&g, 1, c.H >= 64 ? 3 : 6);
        c.topk = topks[h_int(&g, 0, 7)];
        c.sink = h_int(&g, 0, 2) == 0;
        c.threads = i % 7 == 3 ? 1 : i % 7 == 5 ? 3 : 0;
        c.use_topk_len = h_int(&g, 0, 1);
        c.dup_heavy = i % 8 == 5;
        if (h_int(&g, 0, 1)) {
            c.idx_pad = h_int(&g, 1, 9);
            c.q_pad_h = 8 * h_int(&g, 0, 3);
            c.q_pad_t = h_int(&g, 0, 40);
            c.o_pad_h = 8 * h_int(&g, 0, 3);
            c.o_pad_t = h_int(&g, 0, 40);
            c.lse_pad = h_int(&g, 0, 5);
            c.page_extra = h_int(&g, 0, 1) ? 64 : 5;
        }
        c.no_lse = i % 11 == 7;
        c.no_max = i % 5 == 2;
        c.scale = scales[h_int(&g, 0, 3)];
        c.amp = i % 10 == 6 ? 3.0 : i % 10 == 8 ? 0.1 : 1.0;
        run_case(&c, 3000 + (uint64_t)i);
    }
    /* top-k 2048 with few tokens: split chunks, merged */
    for (int f = 1; f <= 2; f++)
        for (int v = 0; v < 2; v++) {
            scfg c;
            memset(&c, 0, sizeof c);
            c.fmt = (mla_format)f;
            c.H = v ? 128 : (f == 1 ? 16 : 1);
            c.T = v ? 1 : 2;
            c.ps = 64;
            c.topk = 2048;
            c.use_topk_len = v == 0;
            c.sink = f == 2;
            c.threads = v ? 0 : 3;
            c.scale = 0.135233805f;
            c.amp = 1.0;
            run_case(&c, 7000 + (uint64_t)(f * 2 + v));
        }
    /* the golden cases run in test_golden, through the shared loader and checker */
    return h_finish();
}
