/* CUDA mla_prefill (SPEC 4.3), mla_prefill_fp8_fused (4.4) and its building blocks (mla_rope,
 * mla_rmsnorm, mla_quantize_fp8_1x128, mla_gemm_fp8_block_scaled) against an oracle: the CPU
 * backend run on identical input bytes. Where the CPU backend refuses an op (a branch without it),
 * the oracle is this file's float64 reference, which follows SPEC.md and the golden README's
 * readings literally; each case line names its oracle. Comparison by SPEC section 5; output
 * buffers start as NaN bytes with guard bytes after them, and everything outside the logical
 * elements (stride gaps, guards, untouched cache bytes) must come back unchanged.
 * No CUDA device: one SKIP line. */
#include "harness.h"

static mla_ctx *cpu, *gpu;
static h_rng rng = {0x5eedcafe1234ull};

#define GUARD 64
/* The fused lse has no SPEC tolerance (its intermediate roundings move it; golden README): both
 * backends round the same values, so a loose bound still catches a wrong softmax. */
static const mla_tol TOL_LSE_FUSED = {1e-3, 1e-3, 0};

/* ---- small helpers ---- */

static float bf(uint16_t x) { return mla_bf16_to_f32(x); }
static uint16_t to_bf(double x) { return mla_f32_to_bf16((float)x); }
static uint16_t rand_bf(double sd) { return to_bf(h_normal(&rng) * sd); }

static void *dput(const void *host, size_t n) {
    void *d = NULL;
    if (mla_malloc(gpu, n ? n : 16, &d) != MLA_OK) { fprintf(stderr, "mla_malloc(%zu): %s\n", n, mla_ctx_last_error(gpu)); exit(2); }
    if (host && n && mla_memcpy_to_backend(gpu, d, host, n) != MLA_OK) { fprintf(stderr, "copy: %s\n", mla_ctx_last_error(gpu)); exit(2); }
    return d;
}
static void dget(void *host, const void *d, size_t n) {
    if (n && mla_memcpy_to_host(gpu, host, d, n) != MLA_OK) { fprintf(stderr, "copy back: %s\n", mla_ctx_last_error(gpu)); exit(2); }
}
static void *dupmem(const void *p, size_t n) { void *q = h_alloc(n); memcpy(q, p, n); return q; }

/* Compares n logical values a (under test) with r (oracle) by tol; records the first failure. */
static void expect_close(const float *a, const double *r, int64_t n, mla_tol tol, const char *what) {
    EXPECT_CLOSE(a, r, n, tol, what);
}

/* Every byte of got outside the marked logical elements equals the original. */
static void expect_untouched(const uint8_t *got, const uint8_t *orig, const uint8_t *mark, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (!mark[i] && got[i] != orig[i]) {
            EXPECT(0, "%s: byte %zu outside the logical elements changed (%02x -> %02x)", what, i, orig[i], got[i]);
            return;
        }
}

/* ================================ mla_prefill ================================ */

typedef struct {
    mla_dtype dt;
    int H, causal, B;
    int q[6], kv[6];
    int pad; /* strides with gaps (NaN-filled) instead of contiguous */
} pf_case;

/* f64 reference of SPEC 4.3 on host arrays (strides resolved), writes r_out [T,H,128], r_lse [T,H].
 * Inputs are first widened to double per head (value = e4m3 * descale for e4m3). */
static double pf_val(const mla_prefill_args *a, const void *base, int64_t i, double descale) {
    if (a->dtype == MLA_DTYPE_BF16) return bf(((const uint16_t *)base)[i]);
    return mla_e4m3_to_f32(((const uint8_t *)base)[i]) * descale;
}
static void ref_prefill(const mla_prefill_args *a, double *r_out, double *r_lse) {
    const int H = a->num_heads, T = a->num_tokens, S = a->num_kv;
    double *Q = h_alloc(sizeof(double) * (size_t)T * 192), *K = h_alloc(sizeof(double) * ((size_t)S * 192 + 1));
    double *V = h_alloc(sizeof(double) * ((size_t)S * 128 + 1)), *sc = h_alloc(sizeof(double) * ((size_t)S + 1));
    for (int h = 0; h < H; h++) {
        for (int64_t t = 0; t < T; t++)
            for (int d = 0; d < 192; d++) Q[t * 192 + d] = pf_val(a, a->q, t * a->q_stride_t + h * a->q_stride_h + d, a->descale_q);
        for (int64_t s = 0; s < S; s++) {
            for (int d = 0; d < 128; d++) {
                K[s * 192 + d] = pf_val(a, a->k_nope, s * a->k_nope_stride_s + h * a->k_nope_stride_h + d, a->descale_k);
                V[s * 128 + d] = pf_val(a, a->v, s * a->v_stride_s + h * a->v_stride_h + d, a->descale_v);
            }
            for (int d = 0; d < 64; d++) K[s * 192 + 128 + d] = pf_val(a, a->k_rope, s * a->k_rope_stride_s + d, a->descale_k);
        }
        for (int b = 0; b < a->num_requests; b++) {
            int q0 = a->q_offsets[b], ql = a->q_offsets[b + 1] - q0, k0 = a->kv_offsets[b], kl = a->kv_offsets[b + 1] - k0;
            for (int i = 0; i < ql; i++) {
                const int64_t t = q0 + i;
                int lim = a->causal ? kl - ql + i + 1 : kl;
                if (lim > kl) lim = kl;
                double mx = -INFINITY, sum = 0, acc[128] = {0};
                for (int j = 0; j < lim; j++) {
                    const double *k = K + (int64_t)(k0 + j) * 192, *q = Q + t * 192;
                    double dot = 0;
                    for (int d = 0; d < 192; d++) dot += q[d] * k[d];
                    sc[j] = a->scale * dot;
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j < lim; j++) {
                    const double p = exp(sc[j] - mx), *v = V + (int64_t)(k0 + j) * 128;
                    sum += p;
                    for (int d = 0; d < 128; d++) acc[d] += p * v[d];
                }
                for (int d = 0; d < 128; d++) r_out[(t * H + h) * 128 + d] = sum > 0 ? acc[d] / sum : 0.0;
                r_lse[t * H + h] = sum > 0 ? mx + log(sum) : INFINITY;
            }
        }
    }
    free(Q); free(K); free(V); free(sc);
}

/* Random tensor of `rows` x `inner` logical elements at the given strides; gaps hold NaN. */
static void *make_tensor(mla_dtype dt, int64_t rows, int64_t heads, int64_t inner, int64_t s_row, int64_t s_head,
                         size_t *bytes, double sd) {
    size_t es = dt == MLA_DTYPE_BF16 ? 2 : 1;
    int64_t n = rows > 0 ? (rows - 1) * s_row + (heads - 1) * s_head + inner : 0;
    *bytes = (size_t)n * es;
    uint8_t *p = h_alloc(*bytes + 16);
    if (es == 2) for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = 0x7FC0;
    else memset(p, 0x7F, (size_t)n);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t d = 0; d < inner; d++) {
                int64_t i = r * s_row + h * s_head + d;
                double x = h_normal(&rng) * sd;
                if (es == 2) ((uint16_t *)p)[i] = to_bf(x);
                else p[i] = mla_f32_to_e4m3((float)x);
            }
    return p;
}

static void run_prefill_case(const pf_case *c) {
    const int H = c->H, B = c->B, e8 = c->dt == MLA_DTYPE_E4M3;
    int32_t qo[7] = {0}, ko[7] = {0};
    for (int b = 0; b < B; b++) { qo[b + 1] = qo[b] + c->q[b]; ko[b + 1] = ko[b] + c->kv[b]; }
    const int T = qo[B], S = ko[B];
    mla_prefill_args a;
    memset(&a, 0, sizeof a);
    a.dtype = c->dt;
    a.num_tokens = T;
    a.num_kv = S;
    a.num_heads = H;
    a.num_requests = B;
    a.causal = c->causal;
    a.scale = 0.1352338f;
    const double sd = e8 ? 16.0 : 1.0; /* e4m3 codes around 16, descales bring values to ~1 */
    if (e8) { a.descale_q = 0.055f; a.descale_k = 0.06f; a.descale_v = 0.07f; }
    const int64_t pad = c->pad ? 16 : 0;
    a.q_stride_h = 192 + pad;
    a.q_stride_t = H * a.q_stride_h + 2 * pad;
    a.k_nope_stride_h = 128 + pad;
    a.k_nope_stride_s = H * a.k_nope_stride_h + 2 * pad;
    a.v_stride_h = 128 + pad;
    a.v_stride_s = H * a.v_stride_h + pad;
    a.k_rope_stride_s = 64 + pad;
    a.out_stride_h = 128 + (c->pad ? 8 : 0);
    a.out_stride_t = H * a.out_stride_h + (c->pad ? 8 : 0);
    a.lse_stride_t = H + (c->pad ? 3 : 0);
    size_t qb, knb, vb, krb;
    void *q = make_tensor(c->dt, T, H, 192, a.q_stride_t, a.q_stride_h, &qb, sd);
    void *kn = make_tensor(c->dt, S, H, 128, a.k_nope_stride_s, a.k_nope_stride_h, &knb, sd);
    void *v = make_tensor(c->dt, S, H, 128, a.v_stride_s, a.v_stride_h, &vb, sd);
    void *kr = make_tensor(c->dt, S, 1, 64, a.k_rope_stride_s, 0, &krb, sd);
    const size_t out_n = (size_t)((T - 1) * a.out_stride_t + (H - 1) * a.out_stride_h + 128);
    const size_t lse_n = (size_t)((T - 1) * a.lse_stride_t + H);
    const size_t ob = out_n * 2 + GUARD, lb = lse_n * 4 + GUARD;
    uint8_t *out_init = h_alloc(ob), *lse_init = h_alloc(lb);
    memset(out_init, 0xFF, ob);
    memset(lse_init, 0xFF, lb);

    /* oracle */
    double *r_out = h_alloc(sizeof(double) * (size_t)T * H * 128), *r_lse = h_alloc(sizeof(double) * (size_t)T * H);
    const char *oracle = "cpu";
    {
        mla_prefill_args ca = a;
        ca.q_offsets = qo;
        ca.kv_offsets = ko;
        ca.q = q;
        ca.k_nope = kn;
        ca.v = v;
        ca.k_rope = kr;
        uint16_t *co = dupmem(out_init, ob);
        float *cl = dupmem(lse_init, lb);
        ca.out = co;
        ca.lse = cl;
        mla_status rc = mla_prefill(cpu, &ca);
        if (rc == MLA_ERR_UNSUPPORTED) {
            oracle = "f64-ref";
            ref_prefill(&ca, r_out, r_lse);
        } else if (rc == MLA_OK) {
            for (int t = 0; t < T; t++)
                for (int h = 0; h < H; h++) {
                    for (int d = 0; d < 128; d++)
                        r_out[((int64_t)t * H + h) * 128 + d] = bf(co[t * a.out_stride_t + h * a.out_stride_h + d]);
                    r_lse[(int64_t)t * H + h] = cl[t * a.lse_stride_t + h];
                }
        } else {
            oracle = NULL;
            fprintf(stderr, "CPU oracle failed: %s: %s\n", mla_status_str(rc), mla_ctx_last_error(cpu));
        }
        free(co);
        free(cl);
    }

    char qs[64] = "", ks[64] = "";
    for (int b = 0; b < B; b++) {
        snprintf(qs + strlen(qs), sizeof qs - strlen(qs), "%s%d", b ? "," : "", c->q[b]);
        snprintf(ks + strlen(ks), sizeof ks - strlen(ks), "%s%d", b ? "," : "", c->kv[b]);
    }
    h_begin("prefill %s H=%d q_len=[%s] kv_len=[%s] causal=%d%s oracle=%s", e8 ? "e4m3" : "bf16", H, qs, ks, c->causal,
            c->pad ? " strided" : "", oracle ? oracle : "FAILED");
    EXPECT(oracle != NULL, "the CPU oracle failed");

    mla_prefill_args g = a;
    g.q_offsets = dput(qo, sizeof(int32_t) * (B + 1));
    g.kv_offsets = dput(ko, sizeof(int32_t) * (B + 1));
    g.q = dput(q, qb);
    g.k_nope = dput(kn, knb);
    g.v = dput(v, vb);
    g.k_rope = dput(kr, krb);
    g.out = dput(out_init, ob);
    g.lse = dput(lse_init, lb);
    size_t wsb = mla_prefill_workspace_size(gpu, &g);
    g.workspace = wsb ? dput(NULL, wsb) : NULL;
    g.workspace_bytes = wsb;
    mla_status rc = mla_prefill(gpu, &g);
    EXPECT_OK(gpu, rc);
    if (rc == MLA_OK) { rc = mla_synchronize(gpu); EXPECT_OK(gpu, rc); }
    uint8_t *go = h_alloc(ob), *gl = h_alloc(lb);
    dget(go, g.out, ob);
    dget(gl, g.lse, lb);
    if (oracle && rc == MLA_OK) {
        float *ao = h_alloc(sizeof(float) * (size_t)T * H * 128), *al = h_alloc(sizeof(float) * (size_t)T * H);
        uint8_t *mo = h_alloc(ob), *ml = h_alloc(lb);
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++) {
                for (int d = 0; d < 128; d++) {
                    int64_t i = t * a.out_stride_t + h * a.out_stride_h + d;
                    ao[((int64_t)t * H + h) * 128 + d] = bf(((uint16_t *)go)[i]);
                    mo[2 * i] = mo[2 * i + 1] = 1;
                }
                int64_t i = t * a.lse_stride_t + h;
                memcpy(&al[(int64_t)t * H + h], gl + 4 * i, 4);
                memset(ml + 4 * i, 1, 4);
            }
        expect_close(ao, r_out, (int64_t)T * H * 128, MLA_TOL_OUT, "out");
        expect_close(al, r_lse, (int64_t)T * H, MLA_TOL_LSE, "lse");
        expect_untouched(go, out_init, mo, ob, "out");
        expect_untouched(gl, lse_init, ml, lb, "lse");
        free(ao); free(al); free(mo); free(ml);
    }
    h_end();
    mla_free(gpu, (void *)g.q_offsets); mla_free(gpu, (void *)g.kv_offsets); mla_free(gpu, (void *)g.q);
    mla_free(gpu, (void *)g.k_nope); mla_free(gpu, (void *)g.v); mla_free(gpu, (void *)g.k_rope);
    mla_free(gpu, g.out); mla_free(gpu, g.lse);
    if (g.workspace) mla_free(gpu, g.workspace);
    free(q); free(kn); free(v); free(kr); free(out_init); free(lse_init); free(r_out); free(r_lse); free(go); free(gl);
}

/* ================================ building blocks: f64 references ================================ */

static void ref_rope_row(uint16_t *x, const float *fc) {
    for (int k = 0; k < 32; k++) {
        double c = fc[2 * k], s = fc[2 * k + 1], a = bf(x[2 * k]), b = bf(x[2 * k + 1]);
        x[2 * k] = to_bf(a * c - b * s);
        x[2 * k + 1] = to_bf(a * s + b * c);
    }
}
static void ref_rmsnorm_row(uint16_t *x, int dim, const uint16_t *gamma, float eps) {
    float ss = 0; /* f32, as SPEC: mean and rsqrt in f32 */
    for (int i = 0; i < dim; i++) ss += bf(x[i]) * bf(x[i]);
    float r = 1.0f / sqrtf(ss / (float)dim + eps);
    for (int i = 0; i < dim; i++) x[i] = mla_f32_to_bf16(bf(mla_f32_to_bf16(bf(x[i]) * r)) * bf(gamma[i]));
}
/* s = min(amax, 1200) / 448 in f32, q = e4m3(x / s); an all-zero group gives s = 0, q = 0 */
static void ref_quant_row(const uint16_t *x, int dim, uint8_t *q, float *s) {
    for (int g = 0; g < dim / 128; g++) {
        float amax = 0;
        for (int i = 0; i < 128; i++) amax = fmaxf(amax, fabsf(bf(x[g * 128 + i])));
        float sc = fminf(amax, 1200.0f) / 448.0f;
        s[g] = sc;
        for (int i = 0; i < 128; i++) q[g * 128 + i] = sc > 0 ? mla_f32_to_e4m3(bf(x[g * 128 + i]) / sc) : 0;
    }
}
/* c[m, n] = sum over k blocks of (sum of the block's e4m3 products) * a_s * b_s, all of c in f64 */
static void ref_gemm(const mla_gemm_fp8_args *a, double *c) {
    const int nk = a->k / 128;
    float lut[256];
    for (int i = 0; i < 256; i++) lut[i] = mla_e4m3_to_f32((uint8_t)i);
    double *bk = h_alloc(sizeof(double) * (size_t)a->k);
    for (int64_t n = 0; n < a->n; n++) {
        for (int k = 0; k < a->k; k++) bk[k] = lut[a->b[n * a->k + k]];
        for (int64_t m = 0; m < a->m; m++) {
            const uint8_t *am = a->a + m * a->k;
            double acc = 0;
            for (int kb = 0; kb < nk; kb++) {
                double part = 0;
                for (int i = kb * 128; i < kb * 128 + 128; i++) part += lut[am[i]] * bk[i];
                acc += part * a->a_s[m * nk + kb] * a->b_s[(n / 128) * nk + kb];
            }
            c[m * a->n + n] = acc;
        }
    }
    free(bk);
}

/* ---- mla_rope ---- */
static void run_rope_case(int n, int64_t stride, int max_pos) {
    const int64_t st = stride ? stride : 64;
    const size_t ne = (size_t)((n - 1) * st + 64), xb = ne * 2 + GUARD;
    uint16_t *x = h_alloc(xb);
    memset(x, 0xFF, xb);
    for (int i = 0; i < n; i++) for (int d = 0; d < 64; d++) x[i * st + d] = rand_bf(2.0);
    int32_t *pos = h_alloc(sizeof(int32_t) * n);
    for (int i = 0; i < n; i++) pos[i] = i == n - 1 ? max_pos - 1 : h_int(&rng, 0, max_pos - 1);
    float *fc = h_alloc(sizeof(float) * (size_t)max_pos * 64);
    for (int p = 0; p < max_pos; p++)
        for (int k = 0; k < 32; k++) {
            double ang = p * pow(10000.0, -k / 32.0);
            fc[p * 64 + 2 * k] = (float)cos(ang);
            fc[p * 64 + 2 * k + 1] = (float)sin(ang);
        }
    mla_rope_args a = {n, NULL, stride, NULL, NULL, max_pos};
    uint16_t *rx = dupmem(x, xb);
    const char *oracle = "cpu";
    a.x = rx; a.pos = pos; a.freqs_cis = fc;
    mla_status rc = mla_rope(cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        oracle = "f64-ref";
        memcpy(rx, x, xb);
        for (int i = 0; i < n; i++) ref_rope_row(rx + i * st, fc + (int64_t)pos[i] * 64);
    }
    h_begin("rope rows=%d x_stride=%lld max_pos=%d oracle=%s", n, (long long)stride, max_pos, oracle);
    if (rc != MLA_ERR_UNSUPPORTED) EXPECT_OK(cpu, rc);
    mla_rope_args g = a;
    g.x = dput(x, xb);
    g.pos = dput(pos, sizeof(int32_t) * n);
    g.freqs_cis = dput(fc, sizeof(float) * (size_t)max_pos * 64);
    rc = mla_rope(gpu, &g);
    EXPECT_OK(gpu, rc);
    uint16_t *gx = h_alloc(xb);
    dget(gx, g.x, xb);
    float *av = h_alloc(sizeof(float) * n * 64);
    double *rv = h_alloc(sizeof(double) * n * 64);
    uint8_t *mark = h_alloc(xb);
    for (int i = 0; i < n; i++)
        for (int d = 0; d < 64; d++) {
            int64_t j = i * st + d;
            av[i * 64 + d] = bf(gx[j]);
            rv[i * 64 + d] = bf(rx[j]);
            mark[2 * j] = mark[2 * j + 1] = 1;
        }
    expect_close(av, rv, (int64_t)n * 64, MLA_TOL_OUT, "x");
    expect_untouched((uint8_t *)gx, (uint8_t *)x, mark, xb, "x");
    h_end();
    mla_free(gpu, g.x); mla_free(gpu, (void *)g.pos); mla_free(gpu, (void *)g.freqs_cis);
    free(x); free(pos); free(fc); free(rx); free(gx); free(av); free(rv); free(mark);
}

/* ---- mla_rmsnorm ---- */
static void run_rmsnorm_case(int n, int dim, int64_t stride) {
    const int64_t st = stride ? stride : dim;
    const size_t ne = (size_t)((n - 1) * st + dim), xb = ne * 2 + GUARD;
    uint16_t *x = h_alloc(xb), *gamma = h_alloc(sizeof(uint16_t) * dim);
    memset(x, 0xFF, xb);
    for (int i = 0; i < n; i++) {
        double sd = i % 3 == 0 ? 5.0 : (i % 3 == 1 ? 0.01 : 1.0);
        for (int d = 0; d < dim; d++) x[i * st + d] = rand_bf(sd);
    }
    for (int d = 0; d < dim; d++) gamma[d] = to_bf(1.0 + 0.2 * h_normal(&rng));
    const float eps = 1e-6f;
    mla_rmsnorm_args a = {n, dim, NULL, stride, gamma, eps};
    uint16_t *rx = dupmem(x, xb);
    a.x = rx;
    const char *oracle = "cpu";
    mla_status rc = mla_rmsnorm(cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        oracle = "f64-ref";
        memcpy(rx, x, xb);
        for (int i = 0; i < n; i++) ref_rmsnorm_row(rx + i * st, dim, gamma, eps);
    }
    h_begin("rmsnorm rows=%d dim=%d x_stride=%lld oracle=%s", n, dim, (long long)stride, oracle);
    if (rc != MLA_ERR_UNSUPPORTED) EXPECT_OK(cpu, rc);
    mla_rmsnorm_args g = a;
    g.x = dput(x, xb);
    g.gamma = dput(gamma, sizeof(uint16_t) * dim);
    mla_status rc2 = mla_rmsnorm(gpu, &g); /* one call: EXPECT_OK evaluates its argument twice */
    EXPECT_OK(gpu, rc2);
    uint16_t *gx = h_alloc(xb);
    dget(gx, g.x, xb);
    float *av = h_alloc(sizeof(float) * ne);
    double *rv = h_alloc(sizeof(double) * ne);
    uint8_t *mark = h_alloc(xb);
    int64_t k = 0;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < dim; d++, k++) {
            int64_t j = i * st + d;
            av[k] = bf(gx[j]);
            rv[k] = bf(rx[j]);
            mark[2 * j] = mark[2 * j + 1] = 1;
        }
    expect_close(av, rv, k, MLA_TOL_OUT, "x");
    expect_untouched((uint8_t *)gx, (uint8_t *)x, mark, xb, "x");
    h_end();
    mla_free(gpu, g.x); mla_free(gpu, (void *)g.gamma);
    free(x); free(gamma); free(rx); free(gx); free(av); free(rv); free(mark);
}

/* ---- mla_quantize_fp8_1x128: exact ---- */
static void run_quant_case(int n, int dim, int64_t stride) {
    const int64_t st = stride ? stride : dim;
    const size_t xb = (size_t)((n - 1) * st + dim) * 2, qb = (size_t)n * dim + GUARD, sb = (size_t)n * (dim / 128) * 4 + GUARD;
    uint16_t *x = h_alloc(xb);
    for (size_t i = 0; i < xb / 2; i++) x[i] = 0x7FC0; /* gaps: NaN, never read */
    for (int i = 0; i < n; i++)
        for (int d = 0; d < dim; d++) {
            double v;
            switch (i % 5) {
            case 0: v = h_normal(&rng); break;
            case 1: v = 0; break;                                         /* all-zero row */
            case 2: v = h_normal(&rng) * 3000; break;                     /* amax above the 1200 cap */
            case 3: v = h_normal(&rng) * 1e-6; break;                     /* tiny */
            default: v = (d / 128) % 2 ? 0 : h_normal(&rng) * 10; break;  /* zero and non-zero groups */
            }
            x[i * st + d] = to_bf(v);
        }
    uint8_t *q_init = h_alloc(qb), *s_init = h_alloc(sb);
    memset(q_init, 0xFF, qb);
    memset(s_init, 0xFF, sb);
    uint8_t *rq = dupmem(q_init, qb), *rs = dupmem(s_init, sb);
    mla_quantize_fp8_1x128_args a = {n, dim, x, stride, rq, (float *)rs};
    const char *oracle = "cpu";
    mla_status rc = mla_quantize_fp8_1x128(cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        oracle = "f64-ref";
        for (int i = 0; i < n; i++) ref_quant_row(x + i * st, dim, rq + (size_t)i * dim, (float *)rs + (size_t)i * (dim / 128));
    }
    h_begin("quantize_fp8_1x128 rows=%d dim=%d x_stride=%lld oracle=%s", n, dim, (long long)stride, oracle);
    if (rc != MLA_ERR_UNSUPPORTED) EXPECT_OK(cpu, rc);
    mla_quantize_fp8_1x128_args g = a;
    g.x = dput(x, xb);
    g.q = dput(q_init, qb);
    g.s = dput(s_init, sb);
    mla_status rc2 = mla_quantize_fp8_1x128(gpu, &g);
    EXPECT_OK(gpu, rc2);
    uint8_t *gq = h_alloc(qb), *gs = h_alloc(sb);
    dget(gq, g.q, qb);
    dget(gs, g.s, sb);
    for (size_t i = 0; i < qb; i++)
        if (gq[i] != rq[i]) { EXPECT(0, "q byte %zu (row %zu col %zu): %02x, oracle %02x", i, i / dim, i % dim, gq[i], rq[i]); break; }
    for (size_t i = 0; i < sb; i++)
        if (gs[i] != rs[i]) {
            float u, w;
            memcpy(&u, gs + (i & ~(size_t)3), 4);
            memcpy(&w, rs + (i & ~(size_t)3), 4);
            EXPECT(0, "s[%zu] = %.9g, oracle %.9g (bits differ)", i / 4, u, w);
            break;
        }
    h_end();
    mla_free(gpu, (void *)g.x); mla_free(gpu, g.q); mla_free(gpu, g.s);
    free(x); free(q_init); free(s_init); free(rq); free(rs); free(gq); free(gs);
}

/* ---- mla_gemm_fp8_block_scaled ---- */
static void run_gemm_case(int m, int n, int k, int64_t c_stride) {
    const int64_t cs = c_stride ? c_stride : n;
    const int nk = k / 128, nb = (n + 127) / 128;
    uint8_t *A = h_alloc((size_t)m * k), *Bw = h_alloc((size_t)n * k);
    float *as = h_alloc(sizeof(float) * (size_t)m * nk), *bs = h_alloc(sizeof(float) * (size_t)nb * nk);
    for (size_t i = 0; i < (size_t)m * k; i++) A[i] = mla_f32_to_e4m3((float)(h_normal(&rng) * 32));
    for (size_t i = 0; i < (size_t)n * k; i++) Bw[i] = mla_f32_to_e4m3((float)(h_normal(&rng) * 32));
    for (size_t i = 0; i < (size_t)m * nk; i++) as[i] = (float)(0.004 * (0.5 + h_uniform(&rng)));
    for (size_t i = 0; i < (size_t)nb * nk; i++) bs[i] = (float)(0.008 * (0.5 + h_uniform(&rng)));
    const size_t cb = (size_t)((m - 1) * cs + n) * 2 + GUARD;
    uint8_t *c_init = h_alloc(cb);
    memset(c_init, 0xFF, cb);
    uint16_t *rc_ = dupmem(c_init, cb);
    mla_gemm_fp8_args a = {m, n, k, A, as, Bw, bs, rc_, c_stride};
    double *rv = h_alloc(sizeof(double) * (size_t)m * n);
    const char *oracle = "cpu";
    mla_status rc = mla_gemm_fp8_block_scaled(cpu, &a);
    if (rc == MLA_ERR_UNSUPPORTED) {
        oracle = "f64-ref";
        ref_gemm(&a, rv);
    } else {
        for (int i = 0; i < m; i++) for (int j = 0; j < n; j++) rv[(size_t)i * n + j] = bf(rc_[i * cs + j]);
    }
    h_begin("gemm_fp8_block_scaled m=%d n=%d k=%d c_stride=%lld oracle=%s", m, n, k, (long long)c_stride, oracle);
    if (rc != MLA_ERR_UNSUPPORTED) EXPECT_OK(cpu, rc);
    mla_gemm_fp8_args g = a;
    g.a = dput(A, (size_t)m * k);
    g.a_s = dput(as, sizeof(float) * (size_t)m * nk);
    g.b = dput(Bw, (size_t)n * k);
    g.b_s = dput(bs, sizeof(float) * (size_t)nb * nk);
    g.c = dput(c_init, cb);
    mla_status rc2 = mla_gemm_fp8_block_scaled(gpu, &g);
    EXPECT_OK(gpu, rc2);
    uint8_t *gc = h_alloc(cb), *mark = h_alloc(cb);
    dget(gc, g.c, cb);
    float *av = h_alloc(sizeof(float) * (size_t)m * n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int64_t e = i * cs + j;
            av[(size_t)i * n + j] = bf(((uint16_t *)gc)[e]);
            mark[2 * e] = mark[2 * e + 1] = 1;
        }
    expect_close(av, rv, (int64_t)m * n, MLA_TOL_OUT, "c");
    expect_untouched(gc, c_init, mark, cb, "c");
    h_end();
    mla_free(gpu, (void *)g.a); mla_free(gpu, (void *)g.a_s); mla_free(gpu, (void *)g.b); mla_free(gpu, (void *)g.b_s);
    mla_free(gpu, g.c);
    free(A); free(Bw); free(as); free(bs); free(c_init); free(rc_); free(rv); free(gc); free(mark); free(av);
}

/* ================================ mla_prefill_fp8_fused ================================ */

typedef struct {
    int H, page_size, B;
    int q[4], seq[4];
    int pad;      /* page_stride and q strides with gaps */
    int bad_page; /* request 0's first page id out of range (CUDA only: the CPU validation refuses
                     it; the kernels must skip it: status OK, no NaN in out/lse, nothing outside
                     the new rows written) */
} fu_case;

/* f64 reference of SPEC 4.4 on host data: modifies q and the cache, writes r_out / r_lse */
static void ref_fused(const mla_prefill_fp8_fused_args *a, double *r_out, double *r_lse) {
    const int H = a->num_heads, B = a->batch.num_requests, ps = a->cache.page_size;
    const int64_t qsh = a->q_stride_h ? a->q_stride_h : 192, qst = a->q_stride_t ? a->q_stride_t : H * qsh;
    uint8_t *base = a->cache.base;
#define ROW(b, t) ((uint16_t *)(base + (int64_t)a->batch.block_table[(int64_t)(b) * a->batch.bt_stride + (t) / ps] * \
                                          a->cache.page_stride + (int64_t)((t) % ps) * 1152))
    /* 1-2: RoPE of q and the new rows, RMSNorm of the new rows */
    for (int b = 0; b < B; b++) {
        int q0 = a->batch.q_offsets[b], ql = a->batch.q_offsets[b + 1] - q0, sl = a->batch.seq_lens[b];
        for (int i = 0; i < ql; i++) {
            int pos = sl - ql + i;
            const float *fc = a->freqs_cis + (int64_t)pos * 64;
            for (int h = 0; h < H; h++) ref_rope_row(a->q + (q0 + i) * qst + h * qsh + 128, fc);
            uint16_t *row = ROW(b, pos);
            ref_rmsnorm_row(row, 512, a->kv_norm_gamma, a->eps);
            ref_rope_row(row + 512, fc);
        }
    }
    /* 3-7 per request: gather, quantize, up-project (K, V rounded to bf16), causal attention */
    for (int b = 0; b < B; b++) {
        int q0 = a->batch.q_offsets[b], ql = a->batch.q_offsets[b + 1] - q0, sl = a->batch.seq_lens[b];
        if (ql == 0) continue;
        uint8_t *xq = h_alloc((size_t)sl * 512);
        float *xs = h_alloc(sizeof(float) * (size_t)sl * 4);
        float *K = h_alloc(sizeof(float) * (size_t)sl * H * 192), *V = h_alloc(sizeof(float) * (size_t)sl * H * 128);
        for (int t = 0; t < sl; t++) ref_quant_row(ROW(b, t), 512, xq + (size_t)t * 512, xs + (size_t)t * 4);
        mla_gemm_fp8_args gm = {sl, H * 256, 512, xq, xs, a->kv_b_proj, a->kv_b_proj_scale, NULL, 0};
        double *kv = h_alloc(sizeof(double) * (size_t)sl * H * 256);
        ref_gemm(&gm, kv);
        for (int t = 0; t < sl; t++)
            for (int h = 0; h < H; h++) {
                for (int d = 0; d < 128; d++) {
                    K[((size_t)t * H + h) * 192 + d] = bf(to_bf(kv[((size_t)t * H + h) * 256 + d]));
                    V[((size_t)t * H + h) * 128 + d] = bf(to_bf(kv[((size_t)t * H + h) * 256 + 128 + d]));
                }
                for (int d = 0; d < 64; d++) K[((size_t)t * H + h) * 192 + 128 + d] = bf(ROW(b, t)[512 + d]);
            }
        double *sc = h_alloc(sizeof(double) * (size_t)sl);
        for (int i = 0; i < ql; i++)
            for (int h = 0; h < H; h++) {
                int64_t tq = q0 + i;
                int lim = sl - ql + i + 1;
                double mx = -INFINITY, sum = 0, acc[128] = {0};
                for (int j = 0; j < lim; j++) {
                    double dot = 0;
                    for (int d = 0; d < 192; d++) dot += (double)bf(a->q[tq * qst + h * qsh + d]) * K[((size_t)j * H + h) * 192 + d];
                    sc[j] = a->scale * dot;
                    if (sc[j] > mx) mx = sc[j];
                }
                for (int j = 0; j < lim; j++) {
                    double p = exp(sc[j] - mx);
                    sum += p;
                    for (int d = 0; d < 128; d++) acc[d] += p * V[((size_t)j * H + h) * 128 + d];
                }
                for (int d = 0; d < 128; d++) r_out[(tq * H + h) * 128 + d] = sum > 0 ? acc[d] / sum : 0.0;
                r_lse[tq * H + h] = sum > 0 ? mx + log(sum) : INFINITY;
            }
        free(xq); free(xs); free(K); free(V); free(sc); free(kv);
    }
#undef ROW
}

static void run_fused_case(const fu_case *c) {
    const int H = c->H, B = c->B, ps = c->page_size;
    int32_t qo[5] = {0}, seq[4];
    int T = 0, max_seq = 0, pages_used = 0, max_pages = 0;
    int64_t kv_total = 0;
    for (int b = 0; b < B; b++) {
        qo[b + 1] = qo[b] + c->q[b];
        seq[b] = c->seq[b];
        kv_total += seq[b];
        if (seq[b] > max_seq) max_seq = seq[b];
        int np = (seq[b] + ps - 1) / ps;
        pages_used += np;
        if (np > max_pages) max_pages = np;
    }
    T = qo[B];
    const int num_pages = pages_used + 3, bt_stride = max_pages + 2, max_pos = max_seq + 5;
    const int64_t page_stride = (int64_t)ps * 1152 + (c->pad ? 64 : 0);
    const size_t cache_b = (size_t)num_pages * page_stride;
    /* pages in a shuffled order; entries past a request's pages are huge */
    int32_t *perm = h_alloc(sizeof(int32_t) * num_pages), *bt = h_alloc(sizeof(int32_t) * B * bt_stride);
    for (int i = 0; i < num_pages; i++) perm[i] = i;
    for (int i = num_pages - 1; i > 0; i--) { int j = h_int(&rng, 0, i), t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
    int next = 0;
    for (int b = 0; b < B; b++) {
        int np = (seq[b] + ps - 1) / ps;
        for (int p = 0; p < bt_stride; p++) bt[b * bt_stride + p] = p < np ? perm[next++] : (p % 2 ? 2147483647 : 2147480000);
    }
    /* the pool: NaN everywhere, then old rows (normed/roped already) and raw new rows */
    uint8_t *cache = h_alloc(cache_b), *newmark = h_alloc(cache_b);
    for (size_t i = 0; i < cache_b / 2; i++) ((uint16_t *)cache)[i] = 0x7FC0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < seq[b]; t++) {
            int is_new = t >= seq[b] - c->q[b];
            size_t off = (size_t)bt[b * bt_stride + t / ps] * page_stride + (size_t)(t % ps) * 1152;
            uint16_t *row = (uint16_t *)(cache + off);
            for (int d = 0; d < 576; d++) row[d] = rand_bf(is_new ? 2.5 : 1.0);
            if (is_new) memset(newmark + off, 1, 1152);
        }
    if (c->bad_page) bt[0] = num_pages + 7; /* a page of old tokens: gathered, never written */
    const int64_t qsh = 192 + (c->pad ? 8 : 0), qst = H * qsh + (c->pad ? 16 : 0);
    const size_t qn = (size_t)((T - 1) * qst + (H - 1) * qsh + 192), qb = qn * 2;
    uint16_t *q = h_alloc(qb);
    for (size_t i = 0; i < qn; i++) q[i] = 0x7FC0;
    for (int t = 0; t < T; t++) for (int h = 0; h < H; h++) for (int d = 0; d < 192; d++) q[t * qst + h * qsh + d] = rand_bf(1.0);
    float *fc = h_alloc(sizeof(float) * (size_t)max_pos * 64);
    for (int p = 0; p < max_pos; p++)
        for (int k = 0; k < 32; k++) {
            double ang = p * pow(10000.0, -k / 32.0);
            fc[p * 64 + 2 * k] = (float)cos(ang);
            fc[p * 64 + 2 * k + 1] = (float)sin(ang);
        }
    uint16_t *gamma = h_alloc(sizeof(uint16_t) * 512);
    for (int d = 0; d < 512; d++) gamma[d] = to_bf(1.0 + 0.2 * h_normal(&rng));
    const size_t wb_n = (size_t)H * 256 * 512, ws_n = (size_t)H * 2 * 4;
    uint8_t *w = h_alloc(wb_n);
    float *wsc = h_alloc(sizeof(float) * ws_n);
    for (size_t i = 0; i < wb_n; i++) w[i] = mla_f32_to_e4m3((float)(h_normal(&rng) * 64));
    for (size_t i = 0; i < ws_n; i++) wsc[i] = (float)(0.0008 * (0.5 + h_uniform(&rng)));
    const size_t ob = (size_t)T * H * 128 * 2 + GUARD, lb = (size_t)T * H * 4 + GUARD;
    uint8_t *out_init = h_alloc(ob), *lse_init = h_alloc(lb);
    memset(out_init, 0xFF, ob);
    memset(lse_init, 0xFF, lb);

    mla_prefill_fp8_fused_args a;
    memset(&a, 0, sizeof a);
    a.num_tokens = T;
    a.num_heads = H;
    a.q_stride_t = c->pad ? qst : 0;
    a.q_stride_h = c->pad ? qsh : 0;
    a.max_pos = max_pos;
    a.cache.page_stride = page_stride;
    a.cache.page_size = ps;
    a.cache.num_pages = num_pages;
    a.cache.format = MLA_KV_BF16;
    a.batch.num_requests = B;
    a.batch.bt_stride = bt_stride;
    a.scale = 0.1352338f;
    a.eps = 1e-6f;
    a.max_kv_total = kv_total + 5; /* an upper bound, not the exact sum */

    /* oracle */
    uint16_t *rq = dupmem(q, qb);
    uint8_t *rcache = dupmem(cache, cache_b);
    double *r_out = h_alloc(sizeof(double) * (size_t)T * H * 128), *r_lse = h_alloc(sizeof(double) * (size_t)T * H);
    const char *oracle = c->bad_page ? "none" : "cpu";
    if (!c->bad_page) {
        mla_prefill_fp8_fused_args ca = a;
        ca.q = rq;
        ca.freqs_cis = fc;
        ca.kv_norm_gamma = gamma;
        ca.cache.base = rcache;
        ca.batch.q_offsets = qo;
        ca.batch.seq_lens = seq;
        ca.batch.block_table = bt;
        ca.kv_b_proj = w;
        ca.kv_b_proj_scale = wsc;
        uint16_t *co = dupmem(out_init, ob);
        float *cl = dupmem(lse_init, lb);
        ca.out = co;
        ca.lse = cl;
        size_t cw = mla_prefill_fp8_fused_workspace_size(cpu, &ca);
        ca.workspace = cw ? h_alloc(cw) : NULL;
        ca.workspace_bytes = cw;
        mla_status rc = mla_prefill_fp8_fused(cpu, &ca);
        if (rc == MLA_ERR_UNSUPPORTED) {
            oracle = "f64-ref";
            memcpy(rq, q, qb);
            memcpy(rcache, cache, cache_b);
            ref_fused(&ca, r_out, r_lse);
        } else if (rc == MLA_OK) {
            for (size_t i = 0; i < (size_t)T * H * 128; i++) r_out[i] = bf(co[i]);
            for (size_t i = 0; i < (size_t)T * H; i++) r_lse[i] = cl[i];
        } else {
            oracle = NULL;
            fprintf(stderr, "CPU oracle failed: %s: %s\n", mla_status_str(rc), mla_ctx_last_error(cpu));
        }
        free(ca.workspace);
        free(co);
        free(cl);
    }

    char qs[48] = "", ss[48] = "";
    for (int b = 0; b < B; b++) {
        snprintf(qs + strlen(qs), sizeof qs - strlen(qs), "%s%d", b ? "," : "", c->q[b]);
        snprintf(ss + strlen(ss), sizeof ss - strlen(ss), "%s%d", b ? "," : "", seq[b]);
    }
    h_begin("prefill_fp8_fused H=%d page=%d q_len=[%s] seq_len=[%s]%s%s oracle=%s", H, ps, qs, ss,
            c->pad ? " strided" : "", c->bad_page ? " page_id_out_of_range" : "", oracle ? oracle : "FAILED");
    EXPECT(oracle != NULL, "the CPU oracle failed");

    mla_prefill_fp8_fused_args g = a;
    g.q = dput(q, qb);
    g.freqs_cis = dput(fc, sizeof(float) * (size_t)max_pos * 64);
    g.kv_norm_gamma = dput(gamma, 1024);
    g.cache.base = dput(cache, cache_b);
    g.batch.q_offsets = dput(qo, sizeof(int32_t) * (B + 1));
    g.batch.seq_lens = dput(seq, sizeof(int32_t) * B);
    g.batch.block_table = dput(bt, sizeof(int32_t) * B * bt_stride);
    g.kv_b_proj = dput(w, wb_n);
    g.kv_b_proj_scale = dput(wsc, sizeof(float) * ws_n);
    g.out = dput(out_init, ob);
    g.lse = dput(lse_init, lb);
    const size_t wsb = mla_prefill_fp8_fused_workspace_size(gpu, &g);
    EXPECT(wsb > 0, "the CUDA fused op asks for no workspace");
    /* a missing or short workspace is refused, naming workspace_bytes, and nothing is written */
    mla_status rc = mla_prefill_fp8_fused(gpu, &g);
    EXPECT(rc == MLA_ERR_INVALID_ARG && strstr(mla_ctx_last_error(gpu), "workspace_bytes"),
           "no workspace: status %s, message '%s'", mla_status_str(rc), mla_ctx_last_error(gpu));
    g.workspace = dput(NULL, wsb);
    g.workspace_bytes = wsb - 1;
    rc = mla_prefill_fp8_fused(gpu, &g);
    EXPECT(rc == MLA_ERR_INVALID_ARG && strstr(mla_ctx_last_error(gpu), "workspace_bytes"),
           "short workspace: status %s, message '%s'", mla_status_str(rc), mla_ctx_last_error(gpu));
    uint16_t *gq = h_alloc(qb);
    dget(gq, g.q, qb);
    EXPECT(memcmp(gq, q, qb) == 0, "a refused call modified q");
    g.workspace_bytes = wsb;
    rc = mla_prefill_fp8_fused(gpu, &g);
    EXPECT_OK(gpu, rc);
    if (rc == MLA_OK) { rc = mla_synchronize(gpu); EXPECT_OK(gpu, rc); }
    uint8_t *go = h_alloc(ob), *gl = h_alloc(lb), *gcache = h_alloc(cache_b);
    dget(go, g.out, ob);
    dget(gl, g.lse, lb);
    dget(gq, g.q, qb);
    dget(gcache, g.cache.base, cache_b);
    if (c->bad_page && rc == MLA_OK) {
        int64_t bad = 0;
        for (size_t i = 0; i < (size_t)T * H * 128; i++) bad += !isfinite(bf(((uint16_t *)go)[i]));
        for (size_t i = 0; i < (size_t)T * H; i++) {
            float l;
            memcpy(&l, gl + 4 * i, 4);
            bad += !isfinite(l);
        }
        EXPECT(bad == 0, "%lld non-finite values in out / lse", (long long)bad);
        expect_untouched(gcache, cache, newmark, cache_b, "cache");
    }
    if (oracle && !c->bad_page && rc == MLA_OK) {
        const size_t no = (size_t)T * H * 128, nl = (size_t)T * H;
        float *ao = h_alloc(sizeof(float) * no), *al = h_alloc(sizeof(float) * nl);
        uint8_t *mo = h_alloc(ob), *ml = h_alloc(lb);
        for (size_t i = 0; i < no; i++) ao[i] = bf(((uint16_t *)go)[i]);
        memcpy(al, gl, nl * 4);
        memset(mo, 1, no * 2);
        memset(ml, 1, nl * 4);
        expect_close(ao, r_out, (int64_t)no, MLA_TOL_OUT_FUSED, "out");
        expect_close(al, r_lse, (int64_t)nl, TOL_LSE_FUSED, "lse");
        expect_untouched(go, out_init, mo, ob, "out");
        expect_untouched(gl, lse_init, ml, lb, "lse");
        /* q after: the bf16 rule on its logical elements, gaps unchanged */
        const size_t nq = (size_t)T * H * 192;
        float *aq = h_alloc(sizeof(float) * nq);
        double *rqv = h_alloc(sizeof(double) * nq);
        uint8_t *mq = h_alloc(qb);
        size_t k = 0;
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                for (int d = 0; d < 192; d++, k++) {
                    int64_t e = t * qst + h * qsh + d;
                    aq[k] = bf(gq[e]);
                    rqv[k] = bf(rq[e]);
                    mq[2 * e] = mq[2 * e + 1] = 1;
                }
        expect_close(aq, rqv, (int64_t)nq, MLA_TOL_OUT, "q after");
        expect_untouched((uint8_t *)gq, (uint8_t *)q, mq, qb, "q");
        /* cache after: the new rows by the bf16 rule, every other byte as it was (NaN included) */
        size_t nn = 0;
        for (size_t i = 0; i < cache_b; i += 2) nn += newmark[i];
        float *ac = h_alloc(sizeof(float) * (nn + 1));
        double *rcv = h_alloc(sizeof(double) * (nn + 1));
        k = 0;
        for (size_t i = 0; i < cache_b; i += 2)
            if (newmark[i]) {
                ac[k] = bf(((uint16_t *)gcache)[i / 2]);
                rcv[k++] = bf(((uint16_t *)rcache)[i / 2]);
            }
        expect_close(ac, rcv, (int64_t)nn, MLA_TOL_OUT, "new cache rows");
        expect_untouched(gcache, cache, newmark, cache_b, "cache");
        free(ao); free(al); free(mo); free(ml); free(aq); free(rqv); free(mq); free(ac); free(rcv);
    }
    h_end();
    mla_free(gpu, g.q); mla_free(gpu, (void *)g.freqs_cis); mla_free(gpu, (void *)g.kv_norm_gamma);
    mla_free(gpu, g.cache.base); mla_free(gpu, (void *)g.batch.q_offsets); mla_free(gpu, (void *)g.batch.seq_lens);
    mla_free(gpu, (void *)g.batch.block_table); mla_free(gpu, (void *)g.kv_b_proj);
    mla_free(gpu, (void *)g.kv_b_proj_scale); mla_free(gpu, g.out); mla_free(gpu, g.lse); mla_free(gpu, g.workspace);
    free(perm); free(bt); free(cache); free(newmark); free(q); free(fc); free(gamma); free(w); free(wsc);
    free(out_init); free(lse_init); free(rq); free(rcache); free(r_out); free(r_lse); free(gq); free(go); free(gl);
    free(gcache);
}

int main(void) {
    if (!mla_has_backend(MLA_BACKEND_CUDA) || mla_cuda_device_count() == 0) {
        h_begin("cuda prefill, prefill_fp8_fused and building blocks");
        h_skip(mla_has_backend(MLA_BACKEND_CUDA) ? "no CUDA device" : "built without CUDA");
        return h_finish();
    }
    cpu = h_cpu_ctx();
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = MLA_BACKEND_CUDA;
    if (mla_ctx_create(&p, &gpu) != MLA_OK) { fprintf(stderr, "cannot create a CUDA context\n"); return 2; }

    static const pf_case pf[] = {
        {MLA_DTYPE_BF16, 1, 1, 2, {70, 33}, {150, 33}, 0},
        {MLA_DTYPE_BF16, 2, 1, 4, {5, 0, 8, 3}, {12, 4, 8, 20}, 0},
        {MLA_DTYPE_BF16, 16, 1, 2, {150, 1}, {1000, 1}, 0},
        {MLA_DTYPE_BF16, 64, 0, 3, {64, 65, 3}, {64, 200, 0}, 0},
        {MLA_DTYPE_BF16, 128, 1, 2, {3, 70}, {4, 150}, 0},
        {MLA_DTYPE_BF16, 8, 1, 3, {0, 129, 7}, {5, 129, 7}, 1},
        {MLA_DTYPE_E4M3, 1, 1, 2, {70, 9}, {150, 9}, 0},
        {MLA_DTYPE_E4M3, 16, 0, 3, {130, 0, 2}, {64, 5, 1000}, 0},
        {MLA_DTYPE_E4M3, 128, 1, 1, {65}, {300}, 0},
        {MLA_DTYPE_E4M3, 2, 1, 2, {64, 1}, {64, 1000}, 1},
    };
    for (size_t i = 0; i < sizeof pf / sizeof pf[0]; i++) run_prefill_case(&pf[i]);

    run_rope_case(300, 72, 1000);
    run_rope_case(5, 0, 7);
    run_rmsnorm_case(50, 512, 520);
    run_rmsnorm_case(7, 7, 0);
    run_rmsnorm_case(3, 1000, 1000);
    run_quant_case(40, 512, 0);
    run_quant_case(5, 256, 300);
    run_gemm_case(100, 300, 256, 0);
    run_gemm_case(1, 128, 512, 136);
    run_gemm_case(130, 257, 128, 259);

    static const fu_case fu[] = {
        {1, 16, 3, {3, 0, 4}, {10, 5, 4}, 0, 0},
        {2, 1, 2, {3, 2}, {3, 9}, 0, 0},
        {4, 64, 2, {6, 2}, {70, 2}, 1, 0},
        {8, 61, 3, {70, 1, 5}, {200, 1, 150}, 1, 0},
        {2, 16, 2, {4, 3}, {40, 3}, 0, 1},
    };
    for (size_t i = 0; i < sizeof fu / sizeof fu[0]; i++) run_fused_case(&fu[i]);

    mla_ctx_destroy(gpu);
    mla_ctx_destroy(cpu);
    return h_finish();
}
