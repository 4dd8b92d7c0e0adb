/* mla_prefill on the CPU backend (SPEC 4.3): golden cases, then randomized shapes against a
 * float64 reference written here (H across 1..128, ragged q_len with 0, prefix kv, causal and
 * not, multi-tile lengths, bf16 and e4m3 with descales, padded strides, empty rows), output
 * guards, thread-count determinism. */
#include "harness.h"
#include "prefill_npy.h"

/* ---- float64 reference, straight from SPEC 4.3 ---- */

static double ref_val(mla_dtype dt, const void *base, int64_t idx, double descale) {
    if (dt == MLA_DTYPE_E4M3) return (double)mla_e4m3_to_f32(((const uint8_t *)base)[idx]) * descale;
    return (double)mla_bf16_to_f32(((const uint16_t *)base)[idx]);
}

/* out [T,H,128], lse [T,H] contiguous doubles */
static void ref_prefill(const mla_prefill_args *a, double *out, double *lse) {
    int64_t H = a->num_heads;
    int64_t qsh = a->q_stride_h ? a->q_stride_h : 192, qst = a->q_stride_t ? a->q_stride_t : H * qsh;
    int64_t ksh = a->k_nope_stride_h ? a->k_nope_stride_h : 128, kst = a->k_nope_stride_s ? a->k_nope_stride_s : H * ksh;
    int64_t vsh = a->v_stride_h ? a->v_stride_h : 128, vst = a->v_stride_s ? a->v_stride_s : H * vsh;
    int64_t rst = a->k_rope_stride_s ? a->k_rope_stride_s : 64;
    int e = a->dtype == MLA_DTYPE_E4M3;
    double dq = e ? a->descale_q : 1, dk = e ? a->descale_k : 1, dv = e ? a->descale_v : 1;
    int64_t maxk = a->num_kv > 0 ? a->num_kv : 1;
    double *s = (double *)h_alloc((size_t)maxk * sizeof(double));
    for (int b = 0; b < a->num_requests; b++) {
        int ql = a->q_offsets[b + 1] - a->q_offsets[b], kl = a->kv_offsets[b + 1] - a->kv_offsets[b];
        for (int i = 0; i < ql; i++) {
            int64_t t = a->q_offsets[b] + i;
            for (int64_t h = 0; h < H; h++) {
                double mx = -INFINITY;
                int nvis = 0;
                for (int j = 0; j < kl; j++) {
                    if (a->causal && j > kl - ql + i) { s[j] = -INFINITY; continue; }
                    int64_t r = a->kv_offsets[b] + j;
                    double acc = 0;
                    for (int d = 0; d < 128; d++)
                        acc += ref_val(a->dtype, a->q, t * qst + h * qsh + d, dq) *
                               ref_val(a->dtype, a->k_nope, r * kst + h * ksh + d, dk);
                    for (int d = 0; d < 64; d++)
                        acc += ref_val(a->dtype, a->q, t * qst + h * qsh + 128 + d, dq) *
                               ref_val(a->dtype, a->k_rope, r * rst + d, dk);
                    s[j] = acc * (double)a->scale;
                    if (s[j] > mx) mx = s[j];
                    nvis++;
                }
                double *o = out + (t * H + h) * 128;
                for (int d = 0; d < 128; d++) o[d] = 0;
                if (!nvis) { lse[t * H + h] = INFINITY; continue; }
                double sum = 0;
                for (int j = 0; j < kl; j++) {
                    if (s[j] == -INFINITY) continue;
                    double p = exp(s[j] - mx);
                    sum += p;
                    int64_t r = a->kv_offsets[b] + j;
                    for (int d = 0; d < 128; d++) o[d] += p * ref_val(a->dtype, a->v, r * vst + h * vsh + d, dv);
                }
                for (int d = 0; d < 128; d++) o[d] /= sum;
                lse[t * H + h] = mx + log(sum);
            }
        }
    }
    free(s);
}

/* ---- one randomized case ---- */

typedef struct pcase {
    int H, B, causal, e4m3, pad;   /* pad: extra elements in every stride */
    int ql[8], kl[8];
    float scale;
    double mag;                    /* input magnitude: large values stress the running max */
} pcase;

static void fill(h_rng *r, int e4m3, void *p, int64_t n, double mag) {
    for (int64_t i = 0; i < n; i++) {
        double x = h_normal(r) * mag;
        if (e4m3) ((uint8_t *)p)[i] = mla_f32_to_e4m3((float)(x * 16));
        else ((uint16_t *)p)[i] = mla_f32_to_bf16((float)x);
    }
}

/* Runs c through the library (with the given thread count, 0 = default) and the reference. */
static void run_case(const pcase *c, uint64_t seed) {
    h_rng rng = {seed};
    int H = c->H, B = c->B, es = c->e4m3 ? 1 : 2, pad = c->pad;
    int32_t qo[9] = {0}, ko[9] = {0};
    for (int b = 0; b < B; b++) { qo[b + 1] = qo[b] + c->ql[b]; ko[b + 1] = ko[b] + c->kl[b]; }
    int T = qo[B], S = ko[B];
    char ql_s[64] = "", kl_s[64] = "";
    for (int b = 0; b < B; b++) {
        snprintf(ql_s + strlen(ql_s), sizeof ql_s - strlen(ql_s), "%s%d", b ? "," : "", c->ql[b]);
        snprintf(kl_s + strlen(kl_s), sizeof kl_s - strlen(kl_s), "%s%d", b ? "," : "", c->kl[b]);
    }
    h_begin("prefill %s H=%d q_len=[%s] kv_len=[%s] causal=%d pad=%d mag=%g", c->e4m3 ? "e4m3" : "bf16", H, ql_s, kl_s,
            c->causal, pad, c->mag);

    mla_prefill_args a = {0};
    a.dtype = c->e4m3 ? MLA_DTYPE_E4M3 : MLA_DTYPE_BF16;
    a.num_tokens = T;
    a.num_kv = S;
    a.num_heads = H;
    a.num_requests = B;
    a.q_offsets = qo;
    a.kv_offsets = ko;
    a.causal = c->causal;
    a.scale = c->scale;
    if (pad) {
        a.q_stride_h = 192 + pad; a.q_stride_t = (int64_t)H * a.q_stride_h + 3 * pad;
        a.k_nope_stride_h = 128 + pad; a.k_nope_stride_s = (int64_t)H * a.k_nope_stride_h + pad;
        a.v_stride_h = 128 + 2 * pad; a.v_stride_s = (int64_t)H * a.v_stride_h + 5;
        a.k_rope_stride_s = 64 + pad;
        a.out_stride_h = 128 + pad; a.out_stride_t = (int64_t)H * a.out_stride_h + pad;
        a.lse_stride_t = H + pad;
    }
    int64_t qst = a.q_stride_t ? a.q_stride_t : H * 192, kst = a.k_nope_stride_s ? a.k_nope_stride_s : H * 128;
    int64_t vst = a.v_stride_s ? a.v_stride_s : H * 128, rst = a.k_rope_stride_s ? a.k_rope_stride_s : 64;
    int64_t ost = a.out_stride_t ? a.out_stride_t : H * 128, osh = a.out_stride_h ? a.out_stride_h : 128;
    int64_t lst = a.lse_stride_t ? a.lse_stride_t : H;
    int64_t nq = (int64_t)T * qst, nk = (int64_t)S * kst, nv = (int64_t)S * vst, nr = (int64_t)S * rst;
    void *q = h_alloc((size_t)(nq * es)), *kn = h_alloc((size_t)(nk * es)), *v = h_alloc((size_t)(nv * es));
    void *kr = h_alloc((size_t)(nr * es));
    fill(&rng, c->e4m3, q, nq, c->mag);
    fill(&rng, c->e4m3, kn, nk, c->mag);
    fill(&rng, c->e4m3, v, nv, 1.0);
    fill(&rng, c->e4m3, kr, nr, c->mag);
    if (c->e4m3) { a.descale_q = 1.0f / 16; a.descale_k = 0.7f / 16; a.descale_v = 1.3f / 16; }
    else { a.descale_q = a.descale_k = a.descale_v = 123.0f; /* ignored for bf16 */ }
    a.q = q; a.k_nope = kn; a.v = v; a.k_rope = kr;

    int64_t no = (int64_t)T * ost + 64, nl = (int64_t)T * lst + 16;
    uint16_t *out = (uint16_t *)h_alloc((size_t)no * 2), *out1 = (uint16_t *)h_alloc((size_t)no * 2);
    float *lse = (float *)h_alloc((size_t)nl * 4), *lse1 = (float *)h_alloc((size_t)nl * 4);
    for (int64_t i = 0; i < no; i++) out[i] = out1[i] = 0x7fc1; /* guard / padding pattern */
    for (int64_t i = 0; i < nl; i++) lse[i] = lse1[i] = -777.0f;
    a.out = out; a.lse = lse;

    mla_ctx *ctx = h_cpu_ctx();
    mla_status rc = mla_prefill(ctx, &a);
    EXPECT_OK(ctx, rc);

    double *ro = (double *)h_alloc((size_t)T * H * 128 * sizeof(double)), *rl = (double *)h_alloc((size_t)T * H * sizeof(double));
    ref_prefill(&a, ro, rl);
    float *go = (float *)h_alloc((size_t)T * H * 128 * 4), *gl = (float *)h_alloc((size_t)T * H * 4);
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < H; h++) {
            for (int d = 0; d < 128; d++) go[(t * H + h) * 128 + d] = mla_bf16_to_f32(out[t * ost + h * osh + d]);
            gl[t * H + h] = lse[t * lst + h];
        }
    EXPECT_CLOSE(go, ro, (int64_t)T * H * 128, MLA_TOL_OUT, "out");
    EXPECT_CLOSE(gl, rl, (int64_t)T * H, MLA_TOL_LSE, "lse");

    /* nothing written outside out's rows and lse's entries */
    int64_t bad = 0;
    for (int64_t i = 0; i < no; i++) {
        int64_t t = i / ost, rem = i % ost, h = rem / osh, d = rem % osh;
        int inside = t < T && h < H && d < 128;
        if (!inside && out[i] != 0x7fc1) bad++;
    }
    for (int64_t i = 0; i < nl; i++)
        if (!(i / lst < T && i % lst < H) && lse[i] != -777.0f) bad++;
    EXPECT(bad == 0, "%lld elements written outside the outputs", (long long)bad);

    /* one thread gives the same bits (tasks are independent) */
    mla_ctx_params pp = mla_ctx_params_default();
    pp.backend = MLA_BACKEND_CPU;
    pp.num_threads = 1;
    mla_ctx *c1 = NULL;
    if (mla_ctx_create(&pp, &c1) == MLA_OK) {
        a.out = out1; a.lse = lse1;
        rc = mla_prefill(c1, &a);
        EXPECT_OK(c1, rc);
        EXPECT(memcmp(out, out1, (size_t)no * 2) == 0 && memcmp(lse, lse1, (size_t)nl * 4) == 0,
               "1 thread and default threads differ");
        mla_ctx_destroy(c1);
    }
    mla_ctx_destroy(ctx);
    h_end();
    free(q); free(kn); free(v); free(kr); free(out); free(out1); free(lse); free(lse1);
    free(ro); free(rl); free(go); free(gl);
}

/* ---- golden cases ---- */

static void golden(const char *name) {
    char dir[1024];
    h_begin("golden prefill/%s", name);
    if (!pn_case_dir(dir, sizeof dir, "prefill", name)) { h_skip("golden directory not found"); return; }
    pn_array q = pn_load(dir, "q"), kn = pn_load(dir, "k_nope"), v = pn_load(dir, "v"), kr = pn_load(dir, "k_rope");
    pn_array qo = pn_load(dir, "q_offsets"), ko = pn_load(dir, "kv_offsets");
    pn_array eo = pn_load(dir, "expected_out"), el = pn_load(dir, "expected_lse");
    if (!q.data || !kn.data || !v.data || !kr.data || !qo.data || !ko.data || !eo.data || !el.data) {
        EXPECT(0, "cannot read the case's files");
    } else {
        char dt[32] = "";
        pn_param_str(dir, "dtype", dt, sizeof dt);
        mla_prefill_args a = {0};
        a.dtype = strcmp(dt, "e4m3") == 0 ? MLA_DTYPE_E4M3 : MLA_DTYPE_BF16;
        a.num_heads = (int)pn_param(dir, "H", 0);
        a.num_tokens = (int)pn_param(dir, "T", 0);
        a.num_kv = (int)pn_param(dir, "S", 0);
        a.num_requests = (int)pn_param(dir, "B", 0);
        a.q_offsets = (const int32_t *)qo.data;
        a.kv_offsets = (const int32_t *)ko.data;
        a.q = q.data; a.k_nope = kn.data; a.v = v.data; a.k_rope = kr.data;
        a.causal = (int)pn_param(dir, "causal", 0);
        a.scale = pn_paramf(dir, "scale", 0);
        a.descale_q = pn_paramf(dir, "descale_q", 1);
        a.descale_k = pn_paramf(dir, "descale_k", 1);
        a.descale_v = pn_paramf(dir, "descale_v", 1);
        int64_t n = (int64_t)a.num_tokens * a.num_heads;
        uint16_t *out = (uint16_t *)h_alloc((size_t)n * 128 * 2);
        float *lse = (float *)h_alloc((size_t)n * 4), *go = (float *)h_alloc((size_t)n * 128 * 4);
        a.out = out; a.lse = lse;
        mla_ctx *ctx = h_cpu_ctx();
        mla_status rc = mla_prefill(ctx, &a);
        EXPECT_OK(ctx, rc);
        for (int64_t i = 0; i < n * 128; i++) go[i] = mla_bf16_to_f32(out[i]);
        EXPECT(eo.n == n * 128 && el.n == n, "expected shapes");
        if (eo.n == n * 128 && el.n == n) {
            mla_cmp cm;
            char s[300];
            EXPECT(mla_compare_f32(go, (const float *)eo.data, n * 128, MLA_TOL_OUT, &cm), "out: %s",
                   (mla_cmp_str(&cm, s, sizeof s), s));
            EXPECT(mla_compare_f32(lse, (const float *)el.data, n, MLA_TOL_LSE, &cm), "lse: %s",
                   (mla_cmp_str(&cm, s, sizeof s), s));
        }
        mla_ctx_destroy(ctx);
        free(out); free(lse); free(go);
    }
    free(q.data); free(kn.data); free(v.data); free(kr.data); free(qo.data); free(ko.data); free(eo.data); free(el.data);
    h_end();
}

int main(void) {
    const char *goldens[] = {"bf16_h128_causal", "bf16_h16_causal_ragged_prefix", "bf16_h1_causal_multitile",
                             "bf16_h1_noncausal", "bf16_h64_causal_sq4", "fp8_h16_causal_descale",
                             "fp8_h1_causal_prefix", "fp8_h64_noncausal_descale"};
    for (size_t i = 0; i < sizeof goldens / sizeof goldens[0]; i++) golden(goldens[i]);

    /* hand-picked corners */
    const pcase fixed[] = {
        {.H = 1, .B = 2, .causal = 1, .ql = {70, 33}, .kl = {150, 33}, .scale = 0.1352338f, .mag = 1},
        {.H = 2, .B = 4, .causal = 1, .ql = {5, 0, 8, 3}, .kl = {12, 4, 8, 20}, .scale = 0.1352338f, .mag = 1, .pad = 7},
        {.H = 128, .B = 2, .causal = 1, .ql = {3, 1}, .kl = {4, 6}, .scale = 0.0721688f, .mag = 1},
        {.H = 64, .B = 2, .causal = 0, .ql = {3, 2}, .kl = {5, 7}, .scale = 0.1f, .mag = 1, .e4m3 = 1},
        /* non-causal rows with no key at all, kv shorter than q */
        {.H = 3, .B = 3, .causal = 0, .ql = {4, 2, 60}, .kl = {0, 1, 9}, .scale = 0.2f, .mag = 1},
        /* long rows: many key blocks, large scores move the running max */
        {.H = 2, .B = 1, .causal = 1, .ql = {200}, .kl = {330}, .scale = 0.1352338f, .mag = 3, .pad = 1},
        {.H = 1, .B = 1, .causal = 0, .ql = {97}, .kl = {257}, .scale = 0.3f, .mag = 2, .e4m3 = 1, .pad = 2},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) run_case(&fixed[i], 1000 + i);

    /* randomized */
    h_rng r = {20240611};
    const int heads[] = {1, 2, 3, 5, 8, 16, 64, 128};
    for (int it = 0; it < 16; it++) {
        pcase c;
        memset(&c, 0, sizeof c);
        c.H = heads[h_int(&r, 0, 7)];
        c.B = h_int(&r, 1, 4);
        c.causal = h_int(&r, 0, 1);
        c.e4m3 = h_int(&r, 0, 1);
        c.pad = h_int(&r, 0, 1) ? h_int(&r, 1, 9) : 0;
        c.scale = (float)(0.05 + 0.2 * h_uniform(&r));
        c.mag = 1 + h_uniform(&r);
        int budget = c.H >= 64 ? 24 : 160; /* keep the float64 reference fast */
        for (int b = 0; b < c.B; b++) {
            c.ql[b] = h_int(&r, 0, 4) == 0 ? 0 : h_int(&r, 1, budget);
            int extra = h_int(&r, 0, 1) ? h_int(&r, 0, budget) : 0;
            c.kl[b] = c.causal ? c.ql[b] + extra : h_int(&r, 0, budget + 20);
        }
        run_case(&c, 5000 + it);
    }
    return h_finish();
}
