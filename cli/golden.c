/* Golden cases: loader, runner (one function per operation) and checker (README section 3). */
#include "golden.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compare.h"
#include "topk_check.h"

/* ------------------------------------------------------------------------------------------ */
/* Tensor lists                                                                                 */

const mla_npy *mla_tensor_find(const mla_tensor_list *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->items[i].name, name)) return &l->items[i].t;
    return NULL;
}

int mla_tensor_add(mla_tensor_list *l, const char *name, mla_npy *t) {
    if (l->n >= MLA_TENSORS_MAX || mla_tensor_find(l, name) || strlen(name) >= sizeof l->items[0].name) return -1;
    mla_named_tensor *it = &l->items[l->n++];
    snprintf(it->name, sizeof it->name, "%s", name);
    it->t = *t;
    memset(t, 0, sizeof *t);
    return 0;
}

void mla_tensor_list_free(mla_tensor_list *l) {
    if (!l) return;
    for (int i = 0; i < l->n; i++) mla_npy_free(&l->items[i].t);
    l->n = 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Loader                                                                                       */

static int set_err(char *err, size_t n, const char *fmt, ...) {
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static char *trim(char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

static int load_params(mla_golden_case *c, char *err, size_t err_n) {
    char path[1100];
    snprintf(path, sizeof path, "%s/params.txt", c->dir);
    FILE *f = fopen(path, "r");
    if (!f) return set_err(err, err_n, "%s: %s", path, strerror(errno));
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *s = trim(line);
        if (!*s || *s == '#') continue;
        char *eq = strchr(s, '=');
        if (!eq) { fclose(f); return set_err(err, err_n, "%s:%d: no '=' in \"%s\"", path, lineno, s); }
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        if (c->nparams >= MLA_GOLDEN_PARAMS_MAX) { fclose(f); return set_err(err, err_n, "%s: too many parameters", path); }
        snprintf(c->keys[c->nparams], sizeof c->keys[0], "%s", k);
        snprintf(c->values[c->nparams], sizeof c->values[0], "%s", v);
        c->nparams++;
    }
    fclose(f);
    return 0;
}

static int has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int load_tensors(mla_golden_case *c, char *err, size_t err_n) {
    struct dirent **ents = NULL;
    int n = scandir(c->dir, &ents, NULL, alphasort);
    if (n < 0) return set_err(err, err_n, "%s: %s", c->dir, strerror(errno));
    int rc = 0;
    for (int e = 0; e < n && rc == 0; e++) {
        const struct dirent *de = ents[e];
        if (!has_suffix(de->d_name, ".npy")) continue;
        char path[1400], name[256];
        snprintf(path, sizeof path, "%s/%s", c->dir, de->d_name);
        snprintf(name, sizeof name, "%.*s", (int)(strlen(de->d_name) - 4), de->d_name);
        mla_npy t;
        if (mla_npy_read(path, &t, err, err_n)) { rc = -1; break; }
        int expected = !strncmp(name, "expected_", 9);
        mla_tensor_list *l = expected ? &c->expected : &c->inputs;
        if (mla_tensor_add(l, expected ? name + 9 : name, &t)) {
            mla_npy_free(&t);
            rc = set_err(err, err_n, "%s: too many tensors or a duplicate name", path);
        }
    }
    for (int e = 0; e < n; e++) free(ents[e]);
    free(ents);
    return rc;
}

static const char *base_name(const char *path, char *buf, size_t n, int up) {
    /* the last (up = 0) or second-to-last (up = 1) component of path */
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    size_t len = strlen(tmp);
    while (len > 1 && tmp[len - 1] == '/') tmp[--len] = 0;
    for (int i = 0; i <= up; i++) {
        char *s = strrchr(tmp, '/');
        if (i == up) { snprintf(buf, n, "%s", s ? s + 1 : tmp); break; }
        if (!s) { snprintf(buf, n, "?"); break; }
        *s = 0;
    }
    return buf;
}

mla_golden_case *mla_golden_load(const char *dir, char *err, size_t err_n) {
    mla_golden_case *c = (mla_golden_case *)calloc(1, sizeof *c);
    if (!c) { set_err(err, err_n, "out of memory"); return NULL; }
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    if (load_params(c, err, err_n) || load_tensors(c, err, err_n)) { mla_golden_free(c); return NULL; }
    const char *op = mla_golden_param(c, "op"), *name = mla_golden_param(c, "case");
    char tmp[256];
    snprintf(c->op, sizeof c->op, "%.63s", op ? op : base_name(dir, tmp, sizeof tmp, 1));
    snprintf(c->name, sizeof c->name, "%.127s", name ? name : base_name(dir, tmp, sizeof tmp, 0));
    return c;
}

void mla_golden_free(mla_golden_case *c) {
    if (!c) return;
    mla_tensor_list_free(&c->inputs);
    mla_tensor_list_free(&c->expected);
    free(c);
}

const char *mla_golden_param(const mla_golden_case *c, const char *key) {
    for (int i = 0; i < c->nparams; i++)
        if (!strcmp(c->keys[i], key)) return c->values[i];
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Runner environment: parameters, uploads, output buffers, downloads                           */

#define ENV_BUFS_MAX 48

typedef struct run_env {
    mla_ctx *ctx;
    const mla_golden_case *c;
    mla_tensor_list *out;
    char *err;
    size_t err_n;
    mla_status rc;             /* the first failure; MLA_OK while all is well */
    void *bufs[ENV_BUFS_MAX];  /* backend allocations, freed at the end */
    int nbufs;
} run_env;

#define ENV_OK(e) ((e)->rc == MLA_OK)

static void env_fail(run_env *e, mla_status rc, const char *fmt, ...) {
    if (!ENV_OK(e)) return;
    e->rc = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, e->err_n, fmt, ap);
    va_end(ap);
}

static int64_t p_int(run_env *e, const char *key) {
    const char *v = mla_golden_param(e->c, key);
    if (!v) { env_fail(e, MLA_ERR_INVALID_ARG, "params.txt lacks '%s'", key); return 0; }
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end) { env_fail(e, MLA_ERR_INVALID_ARG, "params.txt: %s = '%s' is not an integer", key, v); return 0; }
    return x;
}

static int p_int_range(run_env *e, const char *key, int64_t lo, int64_t hi) {
    int64_t v = p_int(e, key);
    if (ENV_OK(e) && (v < lo || v > hi))
        env_fail(e, MLA_ERR_INVALID_ARG, "params.txt: %s = %lld is outside [%lld, %lld]", key, (long long)v, (long long)lo,
                 (long long)hi);
    return ENV_OK(e) ? (int)v : 0;
}

static float p_float(run_env *e, const char *key) {
    const char *v = mla_golden_param(e->c, key);
    if (!v) { env_fail(e, MLA_ERR_INVALID_ARG, "params.txt lacks '%s'", key); return 0; }
    char *end;
    float x = strtof(v, &end);
    if (end == v || *end) { env_fail(e, MLA_ERR_INVALID_ARG, "params.txt: %s = '%s' is not a number", key, v); return 0; }
    return x;
}

static mla_format p_format(run_env *e) {
    const char *v = mla_golden_param(e->c, "format");
    if (!v) { env_fail(e, MLA_ERR_INVALID_ARG, "params.txt lacks 'format'"); return MLA_KV_BF16; }
    static const mla_format all[] = {MLA_KV_BF16, MLA_KV_FP8, MLA_KV_FP8_ROPE_AWARE, MLA_IDX_FP8};
    for (int i = 0; i < 4; i++)
        if (!strcmp(v, mla_format_name(all[i]))) return all[i];
    env_fail(e, MLA_ERR_INVALID_ARG, "params.txt: format = '%s' is unknown", v);
    return MLA_KV_BF16;
}

/* The input tensor name, which must have this dtype and element count. */
static const mla_npy *input(run_env *e, const char *name, mla_npy_dtype dtype, int64_t count) {
    if (!ENV_OK(e)) return NULL;
    const mla_npy *t = mla_tensor_find(&e->c->inputs, name);
    if (!t) { env_fail(e, MLA_ERR_INVALID_ARG, "%s.npy is missing", name); return NULL; }
    if (t->dtype != dtype) {
        env_fail(e, MLA_ERR_INVALID_ARG, "%s.npy has dtype %s, expected %s", name, mla_npy_descr(t->dtype), mla_npy_descr(dtype));
        return NULL;
    }
    if (t->count != count) {
        char s[96];
        mla_npy_shape_str(t, s, sizeof s);
        env_fail(e, MLA_ERR_INVALID_ARG, "%s.npy has %lld elements (%s), the parameters need %lld", name,
                 (long long)t->count, s, (long long)count);
        return NULL;
    }
    return t;
}

/* A backend allocation of bytes, filled with poison (a byte value) unless poison < 0. */
static void *backend_buf(run_env *e, size_t bytes, int poison) {
    if (!ENV_OK(e) || bytes == 0) return NULL;
    if (e->nbufs >= ENV_BUFS_MAX) { env_fail(e, MLA_ERR_INTERNAL, "golden runner: too many buffers"); return NULL; }
    void *p = NULL;
    mla_status rc = mla_malloc(e->ctx, bytes, &p);
    if (rc != MLA_OK) { env_fail(e, rc, "%s", mla_ctx_last_error(e->ctx)); return NULL; }
    e->bufs[e->nbufs++] = p;
    if (poison >= 0) {
        rc = mla_memset(e->ctx, p, poison, bytes);
        if (rc != MLA_OK) env_fail(e, rc, "%s", mla_ctx_last_error(e->ctx));
    }
    return p;
}

/* Copies a host tensor to a fresh backend allocation. NULL for an empty or absent tensor. */
static void *to_backend(run_env *e, const mla_npy *t) {
    if (!ENV_OK(e) || !t || t->nbytes == 0) return NULL;
    void *p = backend_buf(e, t->nbytes, -1);
    if (!p) return NULL;
    mla_status rc = mla_memcpy_to_backend(e->ctx, p, t->data, t->nbytes);
    if (rc != MLA_OK) env_fail(e, rc, "%s", mla_ctx_last_error(e->ctx));
    return p;
}

static void *upload(run_env *e, const char *name, mla_npy_dtype dtype, int64_t count) {
    return to_backend(e, input(e, name, dtype, count));
}

enum { AS_STORED = 0, BF16_TO_F32 = 1 };

/* Copies a backend buffer back as output name: stored as dtype (MLA_NPY_U2 data converted to
 * f32 with BF16_TO_F32), shape given. */
static void download(run_env *e, const char *name, const void *src, mla_npy_dtype dtype, int conv, int ndim, int64_t d0,
                     int64_t d1, int64_t d2) {
    if (!ENV_OK(e)) return;
    int64_t shape[3] = {d0, d1, d2};
    mla_npy raw, outt;
    char msg[160];
    if (mla_npy_alloc(&raw, dtype, ndim, shape, msg, sizeof msg)) { env_fail(e, MLA_ERR_OUT_OF_MEMORY, "%s: %s", name, msg); return; }
    if (raw.nbytes && src) {
        mla_status rc = mla_memcpy_to_host(e->ctx, raw.data, src, raw.nbytes);
        if (rc != MLA_OK) { mla_npy_free(&raw); env_fail(e, rc, "%s", mla_ctx_last_error(e->ctx)); return; }
    }
    if (conv == BF16_TO_F32) {
        if (mla_npy_alloc(&outt, MLA_NPY_F4, ndim, shape, msg, sizeof msg)) {
            mla_npy_free(&raw);
            env_fail(e, MLA_ERR_OUT_OF_MEMORY, "%s: %s", name, msg);
            return;
        }
        const uint16_t *s = (const uint16_t *)raw.data;
        float *d = (float *)outt.data;
        for (int64_t i = 0; i < raw.count; i++) d[i] = mla_bf16_to_f32(s[i]);
        mla_npy_free(&raw);
    } else {
        outt = raw;
    }
    if (mla_tensor_add(e->out, name, &outt)) {
        mla_npy_free(&outt);
        env_fail(e, MLA_ERR_INTERNAL, "output %s: list full or duplicate", name);
    }
}

/* Ragged batch: q_offsets [B+1], seq_lens [B], block_table [B, bt_stride] to the backend. The
 * host copies are returned for the hints (max_seq_len, max_kv_total). */
typedef struct host_batch {
    int32_t B;
    int64_t bt_stride;
    const int32_t *q_offsets, *seq_lens, *block_table; /* host */
} host_batch;

static mla_batch upload_batch(run_env *e, host_batch *h) {
    mla_batch b = {0};
    h->B = p_int_range(e, "B", 0, INT32_MAX);
    h->bt_stride = p_int_range(e, "bt_stride", 1, INT32_MAX);
    const mla_npy *qo = input(e, "q_offsets", MLA_NPY_I4, (int64_t)h->B + 1);
    const mla_npy *sl = input(e, "seq_lens", MLA_NPY_I4, h->B);
    const mla_npy *bt = input(e, "block_table", MLA_NPY_I4, h->B * h->bt_stride);
    if (!ENV_OK(e)) return b;
    h->q_offsets = (const int32_t *)qo->data;
    h->seq_lens = (const int32_t *)sl->data;
    h->block_table = (const int32_t *)bt->data;
    b.num_requests = h->B;
    b.q_offsets = (const int32_t *)to_backend(e, qo);
    b.seq_lens = (const int32_t *)to_backend(e, sl);
    b.block_table = (const int32_t *)to_backend(e, bt);
    b.bt_stride = h->bt_stride;
    return b;
}

/* The page pool cache.npy (and cache_sigma.npy for the rope-aware format). */
static mla_paged_cache upload_cache(run_env *e, mla_format fmt, int dim) {
    mla_paged_cache c = {0};
    c.format = fmt;
    c.dim = dim;
    c.page_size = p_int_range(e, "page_size", 1, INT32_MAX);
    c.num_pages = p_int_range(e, "num_pages", 1, INT32_MAX);
    c.page_stride = p_int(e, "page_bytes");
    c.base = upload(e, "cache", MLA_NPY_U1, (int64_t)c.num_pages * c.page_stride);
    if (fmt == MLA_KV_FP8_ROPE_AWARE)
        c.sigma = (float *)upload(e, "cache_sigma", MLA_NPY_F4, (int64_t)c.num_pages * c.page_size);
    return c;
}

static void *workspace(run_env *e, size_t bytes) { return bytes ? backend_buf(e, bytes, -1) : NULL; }

static void op_status(run_env *e, mla_status rc) {
    if (rc != MLA_OK) env_fail(e, rc, "%s", mla_ctx_last_error(e->ctx));
}

#define POISON_FLOAT 0xFF /* NaN as f32 and as bf16 */
#define POISON_INT 0x7F   /* 0x7F7F7F7F: far outside any index range */

/* ------------------------------------------------------------------------------------------ */
/* One runner per operation                                                                     */

static void run_decode(run_env *e) {
    mla_decode_args a = {0};
    host_batch hb;
    mla_format fmt = p_format(e);
    int ra = fmt == MLA_KV_FP8_ROPE_AWARE;
    int64_t H = p_int_range(e, "H", 1, MLA_MAX_HEADS), T = p_int_range(e, "T", 0, INT32_MAX);
    a.num_tokens = (int32_t)T;
    a.num_heads = (int32_t)H;
    a.q = ra ? upload(e, "q", MLA_NPY_U1, T * H * 640) : upload(e, "q", MLA_NPY_U2, T * H * MLA_KEY_DIM);
    if (ra) a.q_sigma = (const float *)upload(e, "q_sigma", MLA_NPY_F4, T);
    a.cache = upload_cache(e, fmt, 0);
    a.batch = upload_batch(e, &hb);
    a.causal = (int)p_int(e, "causal");
    a.scale = p_float(e, "scale");
    if (p_int(e, "has_sink")) a.sink = (const float *)upload(e, "sink", MLA_NPY_F4, H);
    a.out = (uint16_t *)backend_buf(e, (size_t)(T * H * MLA_LATENT_DIM * 2), POISON_FLOAT);
    a.lse = (float *)backend_buf(e, (size_t)(T * H * 4), POISON_FLOAT);
    if (!ENV_OK(e)) return;
    a.workspace_bytes = mla_decode_workspace_size(e->ctx, &a);
    a.workspace = workspace(e, a.workspace_bytes);
    if (ENV_OK(e)) op_status(e, mla_decode(e->ctx, &a));
    download(e, "out", a.out, MLA_NPY_U2, BF16_TO_F32, 3, T, H, MLA_LATENT_DIM);
    download(e, "lse", a.lse, MLA_NPY_F4, AS_STORED, 2, T, H, 0);
}

static void run_sparse(run_env *e) {
    mla_sparse_args a = {0};
    mla_format fmt = p_format(e);
    int64_t H = p_int_range(e, "H", 1, MLA_MAX_HEADS), T = p_int_range(e, "T", 0, INT32_MAX);
    int64_t K = p_int_range(e, "topk_stride", 1, INT32_MAX);
    a.num_tokens = (int32_t)T;
    a.num_heads = (int32_t)H;
    a.q = (const uint16_t *)upload(e, "q", MLA_NPY_U2, T * H * MLA_KEY_DIM);
    a.cache = upload_cache(e, fmt, 0);
    a.indices = (const int32_t *)upload(e, "indices", MLA_NPY_I4, T * K);
    a.topk = (int32_t)K;
    if (p_int(e, "has_topk_len")) a.topk_len = (const int32_t *)upload(e, "topk_len", MLA_NPY_I4, T);
    if (p_int(e, "has_sink")) a.sink = (const float *)upload(e, "sink", MLA_NPY_F4, H);
    a.scale = p_float(e, "scale");
    a.out = (uint16_t *)backend_buf(e, (size_t)(T * H * MLA_LATENT_DIM * 2), POISON_FLOAT);
    a.lse = (float *)backend_buf(e, (size_t)(T * H * 4), POISON_FLOAT);
    a.max_logits = (float *)backend_buf(e, (size_t)(T * H * 4), POISON_FLOAT);
    if (!ENV_OK(e)) return;
    a.workspace_bytes = mla_sparse_workspace_size(e->ctx, &a);
    a.workspace = workspace(e, a.workspace_bytes);
    if (ENV_OK(e)) op_status(e, mla_sparse(e->ctx, &a));
    download(e, "out", a.out, MLA_NPY_U2, BF16_TO_F32, 3, T, H, MLA_LATENT_DIM);
    download(e, "lse", a.lse, MLA_NPY_F4, AS_STORED, 2, T, H, 0);
    download(e, "max_logits", a.max_logits, MLA_NPY_F4, AS_STORED, 2, T, H, 0);
}

static void run_indices_to_slots(run_env *e) {
    mla_indices_to_slots_args a = {0};
    host_batch hb;
    int64_t T = p_int_range(e, "T", 0, INT32_MAX), K = p_int_range(e, "topk", 1, INT32_MAX);
    a.num_tokens = (int32_t)T;
    a.topk = (int32_t)K;
    a.batch = upload_batch(e, &hb);
    a.page_size = p_int_range(e, "page_size", 1, INT32_MAX);
    a.num_pages = p_int_range(e, "num_pages", 1, INT32_MAX);
    a.indices = (const int32_t *)upload(e, "indices", MLA_NPY_I4, T * K);
    a.slots = (int32_t *)backend_buf(e, (size_t)(T * K * 4), POISON_INT);
    if (ENV_OK(e)) op_status(e, mla_indices_to_slots(e->ctx, &a));
    download(e, "slots", a.slots, MLA_NPY_I4, AS_STORED, 2, T, K, 0);
}

static void run_prefill(run_env *e) {
    mla_prefill_args a = {0};
    const char *dt = mla_golden_param(e->c, "dtype");
    if (!dt || (strcmp(dt, "bf16") && strcmp(dt, "e4m3"))) {
        env_fail(e, MLA_ERR_INVALID_ARG, "params.txt: dtype = '%s' (bf16 or e4m3)", dt ? dt : "(missing)");
        return;
    }
    int fp8 = !strcmp(dt, "e4m3");
    mla_npy_dtype el = fp8 ? MLA_NPY_U1 : MLA_NPY_U2;
    int64_t H = p_int_range(e, "H", 1, MLA_MAX_HEADS), T = p_int_range(e, "T", 0, INT32_MAX);
    int64_t S = p_int_range(e, "S", 0, INT32_MAX), B = p_int_range(e, "B", 0, INT32_MAX);
    a.dtype = fp8 ? MLA_DTYPE_E4M3 : MLA_DTYPE_BF16;
    a.num_tokens = (int32_t)T;
    a.num_kv = (int32_t)S;
    a.num_heads = (int32_t)H;
    a.num_requests = (int32_t)B;
    a.q_offsets = (const int32_t *)upload(e, "q_offsets", MLA_NPY_I4, B + 1);
    a.kv_offsets = (const int32_t *)upload(e, "kv_offsets", MLA_NPY_I4, B + 1);
    a.q = upload(e, "q", el, T * H * MLA_QK_DIM);
    a.k_nope = upload(e, "k_nope", el, S * H * MLA_NOPE_DIM);
    a.v = upload(e, "v", el, S * H * MLA_NOPE_DIM);
    a.k_rope = upload(e, "k_rope", el, S * MLA_ROPE_DIM);
    if (fp8) {
        a.descale_q = p_float(e, "descale_q");
        a.descale_k = p_float(e, "descale_k");
        a.descale_v = p_float(e, "descale_v");
    }
    a.causal = (int)p_int(e, "causal");
    a.scale = p_float(e, "scale");
    a.out = (uint16_t *)backend_buf(e, (size_t)(T * H * MLA_NOPE_DIM * 2), POISON_FLOAT);
    a.lse = (float *)backend_buf(e, (size_t)(T * H * 4), POISON_FLOAT);
    if (!ENV_OK(e)) return;
    a.workspace_bytes = mla_prefill_workspace_size(e->ctx, &a);
    a.workspace = workspace(e, a.workspace_bytes);
    if (ENV_OK(e)) op_status(e, mla_prefill(e->ctx, &a));
    download(e, "out", a.out, MLA_NPY_U2, BF16_TO_F32, 3, T, H, MLA_NOPE_DIM);
    download(e, "lse", a.lse, MLA_NPY_F4, AS_STORED, 2, T, H, 0);
}

static void run_prefill_fp8_fused(run_env *e) {
    mla_prefill_fp8_fused_args a = {0};
    host_batch hb;
    mla_format fmt = p_format(e);
    int64_t H = p_int_range(e, "H", 1, MLA_MAX_HEADS), T = p_int_range(e, "T", 0, INT32_MAX);
    a.num_tokens = (int32_t)T;
    a.num_heads = (int32_t)H;
    a.q = (uint16_t *)upload(e, "q", MLA_NPY_U2, T * H * MLA_QK_DIM);
    a.max_pos = p_int_range(e, "max_pos", 1, INT32_MAX);
    a.freqs_cis = (const float *)upload(e, "freqs_cis", MLA_NPY_F4, (int64_t)a.max_pos * 64);
    a.kv_norm_gamma = (const uint16_t *)upload(e, "kv_norm_gamma", MLA_NPY_U2, MLA_LATENT_DIM);
    a.cache = upload_cache(e, fmt, 0);
    a.batch = upload_batch(e, &hb);
    a.kv_b_proj = (const uint8_t *)upload(e, "kv_b_proj", MLA_NPY_U1, H * 256 * MLA_LATENT_DIM);
    a.kv_b_proj_scale = (const float *)upload(e, "kv_b_proj_scale", MLA_NPY_F4, H * 2 * 4);
    a.scale = p_float(e, "scale");
    a.eps = p_float(e, "eps");
    a.out = (uint16_t *)backend_buf(e, (size_t)(T * H * MLA_NOPE_DIM * 2), POISON_FLOAT);
    if (!ENV_OK(e)) return;
    for (int32_t b = 0; b < hb.B; b++) a.max_kv_total += hb.seq_lens[b] > 0 ? hb.seq_lens[b] : 0;
    a.workspace_bytes = mla_prefill_fp8_fused_workspace_size(e->ctx, &a);
    a.workspace = workspace(e, a.workspace_bytes);
    if (ENV_OK(e)) op_status(e, mla_prefill_fp8_fused(e->ctx, &a));
    download(e, "out", a.out, MLA_NPY_U2, BF16_TO_F32, 3, T, H, MLA_NOPE_DIM);
    download(e, "q", a.q, MLA_NPY_U2, BF16_TO_F32, 3, T, H, MLA_QK_DIM);
    download(e, "cache", a.cache.base, MLA_NPY_U1, AS_STORED, 2, a.cache.num_pages, a.cache.page_stride, 0);
}

static void run_indexer(run_env *e) {
    mla_indexer_args a = {0};
    host_batch hb;
    int64_t H = p_int_range(e, "H", 1, MLA_MAX_HEADS), T = p_int_range(e, "T", 0, INT32_MAX);
    int64_t D = p_int_range(e, "D", 1, 1024), K = p_int_range(e, "top_k", 1, INT32_MAX);
    int64_t L = p_int_range(e, "logits_stride", 1, INT32_MAX);
    a.num_tokens = (int32_t)T;
    a.num_heads = (int32_t)H;
    a.dim = (int32_t)D;
    a.q = (const uint8_t *)upload(e, "q", MLA_NPY_U1, T * H * D);
    a.q_s = (const float *)upload(e, "q_s", MLA_NPY_F4, T * H);
    a.cache = upload_cache(e, MLA_IDX_FP8, (int)D);
    a.batch = upload_batch(e, &hb);
    a.causal = (int)p_int(e, "causal");
    a.top_k = (int32_t)K;
    a.indices = (int32_t *)backend_buf(e, (size_t)(T * K * 4), POISON_INT);
    a.logits = (float *)backend_buf(e, (size_t)(T * L * 4), POISON_FLOAT);
    a.logits_stride = L;
    if (!ENV_OK(e)) return;
    a.max_seq_len = 1;
    for (int32_t b = 0; b < hb.B; b++)
        if (hb.seq_lens[b] > a.max_seq_len) a.max_seq_len = hb.seq_lens[b];
    a.workspace_bytes = mla_indexer_workspace_size(e->ctx, &a);
    a.workspace = workspace(e, a.workspace_bytes);
    if (ENV_OK(e)) op_status(e, mla_indexer(e->ctx, &a));
    download(e, "indices", a.indices, MLA_NPY_I4, AS_STORED, 2, T, K, 0);
    download(e, "logits", a.logits, MLA_NPY_F4, AS_STORED, 2, T, L, 0);
}

static void run_cache_store(run_env *e) {
    mla_cache_store_args a = {0};
    host_batch hb;
    mla_format fmt = p_format(e);
    int64_t T = p_int_range(e, "T", 0, INT32_MAX);
    a.num_tokens = (int32_t)T;
    a.rows = (const uint16_t *)upload(e, "rows", MLA_NPY_U2, T * MLA_KEY_DIM);
    a.cache = upload_cache(e, fmt, 0);
    a.batch = upload_batch(e, &hb);
    if (ENV_OK(e)) op_status(e, mla_cache_store(e->ctx, &a));
    download(e, "cache", a.cache.base, MLA_NPY_U1, AS_STORED, 2, a.cache.num_pages, a.cache.page_stride, 0);
    if (fmt == MLA_KV_FP8_ROPE_AWARE)
        download(e, "cache_sigma", a.cache.sigma, MLA_NPY_F4, AS_STORED, 2, a.cache.num_pages, a.cache.page_size, 0);
}

static void run_indexer_cache_store(run_env *e) {
    mla_indexer_cache_store_args a = {0};
    host_batch hb;
    int64_t T = p_int_range(e, "T", 0, INT32_MAX), D = p_int_range(e, "D", 1, 1024);
    a.num_tokens = (int32_t)T;
    a.k = (const uint16_t *)upload(e, "k", MLA_NPY_U2, T * D);
    a.cache = upload_cache(e, MLA_IDX_FP8, (int)D);
    a.batch = upload_batch(e, &hb);
    if (ENV_OK(e)) op_status(e, mla_indexer_cache_store(e->ctx, &a));
    download(e, "cache", a.cache.base, MLA_NPY_U1, AS_STORED, 2, a.cache.num_pages, a.cache.page_stride, 0);
}

static void run_quantize_q_rope_aware(run_env *e) {
    mla_quantize_q_rope_aware_args a = {0};
    int64_t H = p_int_range(e, "H", 1, MLA_MAX_HEADS), T = p_int_range(e, "T", 0, INT32_MAX);
    a.num_tokens = (int32_t)T;
    a.num_heads = (int32_t)H;
    a.q = (const uint16_t *)upload(e, "q", MLA_NPY_U2, T * H * MLA_KEY_DIM);
    a.q_out = (uint8_t *)backend_buf(e, (size_t)(T * H * 640), POISON_FLOAT);
    a.q_sigma = (float *)backend_buf(e, (size_t)(T * 4), POISON_FLOAT);
    if (ENV_OK(e)) op_status(e, mla_quantize_q_rope_aware(e->ctx, &a));
    download(e, "q", a.q_out, MLA_NPY_U1, AS_STORED, 3, T, H, 640);
    download(e, "q_sigma", a.q_sigma, MLA_NPY_F4, AS_STORED, 1, T, 0, 0);
}

typedef struct op_entry {
    const char *op;
    void (*run)(run_env *e);
} op_entry;

static const op_entry OPS[] = {
    {"decode", run_decode},
    {"sparse", run_sparse},
    {"indices_to_slots", run_indices_to_slots},
    {"prefill", run_prefill},
    {"prefill_fp8_fused", run_prefill_fp8_fused},
    {"indexer", run_indexer},
    {"cache_store", run_cache_store},
    {"indexer_cache_store", run_indexer_cache_store},
    {"quantize_q_rope_aware", run_quantize_q_rope_aware},
};

mla_status mla_golden_run(mla_ctx *ctx, const mla_golden_case *c, mla_tensor_list *out, char *err, size_t err_n) {
    run_env e = {0};
    e.ctx = ctx;
    e.c = c;
    e.out = out;
    e.err = err;
    e.err_n = err_n;
    if (err && err_n) err[0] = 0;
    const op_entry *op = NULL;
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (!strcmp(OPS[i].op, c->op)) op = &OPS[i];
    if (!op) env_fail(&e, MLA_ERR_INVALID_ARG, "unknown op '%s'", c->op);
    else op->run(&e);
    for (int i = e.nbufs - 1; i >= 0; i--) mla_free(ctx, e.bufs[i]);
    if (!ENV_OK(&e)) mla_tensor_list_free(out);
    return e.rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Checker (README section 3)                                                                   */

static void add_bad(mla_golden_output *o, const char *fmt, ...) {
    if (o->nbad >= MLA_GOLDEN_BAD_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->bad[o->nbad++], sizeof o->bad[0], fmt, ap);
    va_end(ap);
}

static int elem_bad(double a, double r, mla_tol tol) {
    if (!isfinite(a) || !isfinite(r)) {
        if (isnan(a) || isnan(r)) return !(isnan(a) && isnan(r));
        return a != r;
    }
    double d = fabs(a - r);
    return !(d <= tol.atol || d <= tol.rtol * fabs(r));
}

/* Tolerance rule over f32 tensors (attention out, lse, max_logits, the fused q). */
static void check_tol(mla_golden_output *o, const char *nm, const mla_npy *got, const mla_npy *want, mla_tol tol, int with_cos) {
    const float *a = (const float *)got->data, *r = (const float *)want->data;
    mla_cmp cmp;
    o->ok = mla_compare_f32(a, r, got->count, tol, &cmp);
    if (with_cos)
        snprintf(o->summary, sizeof o->summary, "%s: max_abs %.2e max_rel %.2e cos %.1e", nm, cmp.max_abs, cmp.max_rel,
                 cmp.cos_dist);
    else
        snprintf(o->summary, sizeof o->summary, "%s: max_abs %.2e max_rel %.2e", nm, cmp.max_abs, cmp.max_rel);
    if (o->ok) return;
    for (int64_t i = 0; i < got->count && o->nbad < MLA_GOLDEN_BAD_MAX; i++)
        if (elem_bad(a[i], r[i], tol)) {
            char co[96];
            mla_npy_coord_str(want, i, co, sizeof co);
            add_bad(o, "%s%s: got %.9g want %.9g (|diff| %.3g)", nm, co, a[i], r[i], fabs((double)a[i] - r[i]));
        }
    if (cmp.nbad)
        add_bad(o, "%s: %lld of %lld elements out of tolerance (atol %g, rtol %g)", nm, (long long)cmp.nbad,
                (long long)cmp.n, tol.atol, tol.rtol);
    if (tol.cos_max > 0 && cmp.cos_dist > tol.cos_max)
        add_bad(o, "%s: cosine distance %.3g exceeds %.3g", nm, cmp.cos_dist, tol.cos_max);
}

/* Byte-exact rule; values printed by dtype. */
static void value_str(const mla_npy *t, int64_t i, char *buf, size_t n) {
    switch (t->dtype) {
    case MLA_NPY_U1: snprintf(buf, n, "0x%02x", ((const uint8_t *)t->data)[i]); break;
    case MLA_NPY_U2: snprintf(buf, n, "0x%04x", ((const uint16_t *)t->data)[i]); break;
    case MLA_NPY_I4: snprintf(buf, n, "%d", ((const int32_t *)t->data)[i]); break;
    case MLA_NPY_F4: {
        float f = ((const float *)t->data)[i];
        uint32_t u;
        memcpy(&u, &f, 4);
        snprintf(buf, n, "%.9g (0x%08x)", f, u);
        break;
    }
    }
}

static void check_exact(mla_golden_output *o, const char *nm, const mla_npy *got, const mla_npy *want) {
    size_t es = mla_npy_dtype_size(want->dtype);
    const uint8_t *a = (const uint8_t *)got->data, *r = (const uint8_t *)want->data;
    int64_t nbad = 0;
    for (int64_t i = 0; i < want->count; i++) {
        if (memcmp(a + i * es, r + i * es, es) == 0) continue;
        if (nbad++ < MLA_GOLDEN_BAD_MAX - 1) {
            char co[96], va[48], vr[48];
            mla_npy_coord_str(want, i, co, sizeof co);
            value_str(got, i, va, sizeof va);
            value_str(want, i, vr, sizeof vr);
            add_bad(o, "%s%s: got %s want %s", nm, co, va, vr);
        }
    }
    o->ok = nbad == 0;
    if (o->ok) snprintf(o->summary, sizeof o->summary, "%s: exact", nm);
    else {
        snprintf(o->summary, sizeof o->summary, "%s: %lld of %lld elements differ", nm, (long long)nbad,
                 (long long)want->count);
        add_bad(o, "%s: %lld of %lld elements differ (byte-exact rule)", nm, (long long)nbad, (long long)want->count);
    }
}

/* Indexer top-k: each row by mla_topk_row_check against the reference logits. */
static void check_indices(mla_golden_output *o, const char *nm, const mla_golden_case *c, const mla_npy *got, const mla_npy *want) {
    const mla_npy *ref = mla_tensor_find(&c->expected, "logits");
    if (!ref || ref->dtype != MLA_NPY_F4 || ref->ndim != 2 || ref->shape[0] != want->shape[0]) {
        o->ok = 0;
        snprintf(o->summary, sizeof o->summary, "%s: no usable expected_logits to judge by", nm);
        add_bad(o, "%s", o->summary);
        return;
    }
    int64_t rows = want->shape[0], k = want->shape[1], L = ref->shape[1];
    int64_t nbad = 0;
    for (int64_t t = 0; t < rows; t++) {
        char msg[200] = "";
        const int32_t *row = (const int32_t *)got->data + t * k;
        if (mla_topk_row_check(row, (int)k, (const float *)ref->data + t * L, L, msg, sizeof msg)) continue;
        if (nbad++ < MLA_GOLDEN_BAD_MAX - 1) add_bad(o, "%s row %lld: %s", nm, (long long)t, msg);
    }
    o->ok = nbad == 0;
    snprintf(o->summary, sizeof o->summary, "%s: %lld of %lld rows ok", nm, (long long)(rows - nbad), (long long)rows);
    if (nbad) add_bad(o, "%s: %lld of %lld rows fail the top-k rule", nm, (long long)nbad, (long long)rows);
}

/* Indexer logits: identical -inf (and any non-finite) positions; |a - r| <= 1e-4 * row max |r|. */
static void check_logits(mla_golden_output *o, const char *nm, const mla_npy *got, const mla_npy *want) {
    int64_t rows = want->ndim == 2 ? want->shape[0] : 1, L = want->count / (rows ? rows : 1);
    const float *a = (const float *)got->data, *r = (const float *)want->data;
    double max_abs = 0, max_rel_row = 0;
    int64_t nbad = 0;
    for (int64_t t = 0; t < rows; t++) {
        double rmax = 0;
        for (int64_t j = 0; j < L; j++)
            if (isfinite(r[t * L + j]) && fabs(r[t * L + j]) > rmax) rmax = fabs(r[t * L + j]);
        for (int64_t j = 0; j < L; j++) {
            double x = a[t * L + j], y = r[t * L + j];
            int bad;
            if (!isfinite(x) || !isfinite(y)) bad = elem_bad(x, y, (mla_tol){0, 0, 0});
            else {
                double d = fabs(x - y);
                if (d > max_abs) max_abs = d;
                if (rmax > 0 && d / rmax > max_rel_row) max_rel_row = d / rmax;
                bad = d > 1e-4 * rmax;
            }
            if (bad && nbad++ < MLA_GOLDEN_BAD_MAX - 1)
                add_bad(o, "%s[%lld, %lld]: got %.9g want %.9g (row max |r| %.6g)", nm, (long long)t, (long long)j, x, y,
                        rmax);
        }
    }
    o->ok = nbad == 0;
    snprintf(o->summary, sizeof o->summary, "%s: max_abs %.2e max_rel_to_row_max %.2e", nm, max_abs, max_rel_row);
    if (nbad) add_bad(o, "%s: %lld of %lld elements out of tolerance (1e-4 * row max)", nm, (long long)nbad, (long long)want->count);
}

/* Fused prefill cache: as bf16, the new tokens' rows by the attention-output rule, the rest
 * bit-identical. */
static void check_fused_cache(mla_golden_output *o, const char *nm, const mla_golden_case *c, const mla_npy *got, const mla_npy *want) {
    const mla_npy *bt = mla_tensor_find(&c->inputs, "block_table"), *sl = mla_tensor_find(&c->inputs, "seq_lens"),
                  *qo = mla_tensor_find(&c->inputs, "q_offsets");
    const char *ps_s = mla_golden_param(c, "page_size"), *pb_s = mla_golden_param(c, "page_bytes");
    if (!bt || !sl || !qo || !ps_s || !pb_s || qo->count != sl->count + 1 || sl->count == 0 ||
        bt->count % sl->count != 0 || want->nbytes % 2) {
        o->ok = 0;
        snprintf(o->summary, sizeof o->summary, "%s: cannot locate the new rows (batch inputs missing)", nm);
        add_bad(o, "%s", o->summary);
        return;
    }
    int64_t ps = atoll(ps_s), pb = atoll(pb_s), B = sl->count, bts = bt->count / B, n16 = (int64_t)want->nbytes / 2;
    unsigned char *is_new = (unsigned char *)calloc((size_t)n16 + 1, 1);
    float *na = (float *)malloc(sizeof(float) * ((size_t)n16 + 1)), *nr = (float *)malloc(sizeof(float) * ((size_t)n16 + 1));
    if (!is_new || !na || !nr) {
        free(is_new); free(na); free(nr);
        o->ok = 0;
        snprintf(o->summary, sizeof o->summary, "%s: out of memory", nm);
        return;
    }
    const int32_t *seq = (const int32_t *)sl->data, *off = (const int32_t *)qo->data, *tab = (const int32_t *)bt->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0, ql = off[b + 1] - off[b]; i < ql; i++) {
            int64_t pos = seq[b] - ql + i;
            if (pos < 0 || ps <= 0 || pos / ps >= bts) continue;
            int64_t page = tab[b * bts + pos / ps];
            int64_t at = (page * pb + (pos % ps) * 1152) / 2;
            if (page < 0 || at < 0 || at + 576 > n16) continue;
            memset(is_new + at, 1, 576);
        }
    const uint16_t *a = (const uint16_t *)got->data, *r = (const uint16_t *)want->data;
    int64_t nn = 0, nbad_old = 0;
    for (int64_t i = 0; i < n16; i++) {
        if (is_new[i]) { na[nn] = mla_bf16_to_f32(a[i]); nr[nn] = mla_bf16_to_f32(r[i]); nn++; continue; }
        if (a[i] == r[i]) continue;
        if (nbad_old++ < MLA_GOLDEN_BAD_MAX - 1)
            add_bad(o, "%s untouched bf16 #%lld (page %lld, byte %lld): got 0x%04x want 0x%04x", nm, (long long)i,
                    (long long)(2 * i / pb), (long long)(2 * i % pb), a[i], r[i]);
    }
    mla_cmp cmp;
    int ok_new = mla_compare_f32(na, nr, nn, MLA_TOL_OUT, &cmp);
    if (!ok_new)
        for (int64_t i = 0, k = 0; i < n16 && o->nbad < MLA_GOLDEN_BAD_MAX; i++) {
            if (!is_new[i]) continue;
            if (elem_bad(na[k], nr[k], MLA_TOL_OUT))
                add_bad(o, "%s new-row bf16 #%lld (page %lld, slot %lld, col %lld): got %.9g want %.9g", nm, (long long)i,
                        (long long)(2 * i / pb), (long long)(2 * i % pb / 1152), (long long)(i % 576), na[k], nr[k]);
            k++;
        }
    o->ok = ok_new && nbad_old == 0;
    snprintf(o->summary, sizeof o->summary, "%s: untouched %s, new rows max_abs %.2e max_rel %.2e cos %.1e", nm,
             nbad_old ? "DIFFER" : "exact", cmp.max_abs, cmp.max_rel, cmp.cos_dist);
    if (nbad_old) add_bad(o, "%s: %lld untouched bf16 values differ", nm, (long long)nbad_old);
    if (!ok_new && cmp.cos_dist > MLA_TOL_OUT.cos_max)
        add_bad(o, "%s: new rows' cosine distance %.3g exceeds %.3g", nm, cmp.cos_dist, MLA_TOL_OUT.cos_max);
    free(is_new);
    free(na);
    free(nr);
}

/* Which rule applies to an expected file of an op (README section 3). */
static const char *rule_for(const char *op, const char *name) {
    int attn = !strcmp(op, "decode") || !strcmp(op, "sparse") || !strcmp(op, "prefill");
    if (attn && !strcmp(name, "out")) return "out";
    if (attn && (!strcmp(name, "lse") || !strcmp(name, "max_logits"))) return "lse";
    if (!strcmp(op, "prefill_fp8_fused")) {
        if (!strcmp(name, "out")) return "out_fused";
        if (!strcmp(name, "q")) return "out";
        if (!strcmp(name, "cache")) return "fused_cache";
    }
    if (!strcmp(op, "indexer")) {
        if (!strcmp(name, "indices")) return "indices";
        if (!strcmp(name, "logits")) return "logits";
    }
    if (!strcmp(op, "indices_to_slots") || !strcmp(op, "cache_store") || !strcmp(op, "indexer_cache_store") ||
        !strcmp(op, "quantize_q_rope_aware"))
        return "exact";
    return NULL;
}

static int same_shape(const mla_npy *a, const mla_npy *b) {
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

int mla_golden_check(const mla_golden_case *c, const mla_tensor_list *out, mla_golden_report *rep) {
    memset(rep, 0, sizeof *rep);
    rep->ok = c->expected.n > 0;
    for (int i = 0; i < c->expected.n && rep->n < MLA_TENSORS_MAX; i++) {
        const char *name = c->expected.items[i].name;
        const mla_npy *want = &c->expected.items[i].t, *got = mla_tensor_find(out, name);
        mla_golden_output *o = &rep->outs[rep->n++];
        snprintf(o->name, sizeof o->name, "%s", name);
        o->rule = rule_for(c->op, name);
        if (!o->rule) {
            snprintf(o->summary, sizeof o->summary, "%s: no comparison rule for expected_%s of %s", name, name, c->op);
            add_bad(o, "%s", o->summary);
        } else if (!got) {
            snprintf(o->summary, sizeof o->summary, "%s: not produced", name);
            add_bad(o, "%s", o->summary);
        } else if (!same_shape(got, want)) {
            char s1[96], s2[96];
            mla_npy_shape_str(got, s1, sizeof s1);
            mla_npy_shape_str(want, s2, sizeof s2);
            snprintf(o->summary, sizeof o->summary, "%s: shape %.70s, expected %.70s", name, s1, s2);
            add_bad(o, "%s", o->summary);
        } else if (!strcmp(o->rule, "out")) check_tol(o, name, got, want, MLA_TOL_OUT, 1);
        else if (!strcmp(o->rule, "out_fused")) check_tol(o, name, got, want, MLA_TOL_OUT_FUSED, 1);
        else if (!strcmp(o->rule, "lse")) check_tol(o, name, got, want, MLA_TOL_LSE, 0);
        else if (!strcmp(o->rule, "exact")) check_exact(o, name, got, want);
        else if (!strcmp(o->rule, "indices")) check_indices(o, name, c, got, want);
        else if (!strcmp(o->rule, "logits")) check_logits(o, name, got, want);
        else if (!strcmp(o->rule, "fused_cache")) check_fused_cache(o, name, c, got, want);
        if (!o->ok) rep->ok = 0;
    }
    return rep->ok;
}

void mla_golden_summary(const mla_golden_report *rep, char *buf, size_t n) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < rep->n && k < n; i++) {
        int w = snprintf(buf + k, n - k, "%s%s%s", i ? " | " : "", rep->outs[i].summary, rep->outs[i].ok ? "" : " (BAD)");
        if (w < 0) break;
        k += (size_t)w;
    }
}

void mla_golden_print_failures(FILE *f, const mla_golden_report *rep) {
    for (int i = 0; i < rep->n; i++) {
        const mla_golden_output *o = &rep->outs[i];
        if (o->ok) continue;
        for (int j = 0; j < o->nbad; j++) fprintf(f, "    %s\n", o->bad[j]);
    }
}

mla_golden_outcome mla_golden_check_dir(mla_ctx *ctx, const char *dir, char *label, size_t label_n, char *line,
                                        size_t line_n, FILE *detail) {
    char err[1024];
    snprintf(label, label_n, "%s", dir);
    mla_golden_case *c = mla_golden_load(dir, err, sizeof err);
    if (!c) { snprintf(line, line_n, "cannot load: %s", err); return MLA_GOLDEN_ERROR; }
    snprintf(label, label_n, "%s/%s", c->op, c->name);
    mla_tensor_list out = {0};
    mla_status rc = mla_golden_run(ctx, c, &out, err, sizeof err);
    mla_golden_outcome res;
    if (rc == MLA_ERR_UNSUPPORTED) {
        snprintf(line, line_n, "%s", err);
        res = MLA_GOLDEN_UNSUPPORTED;
    } else if (rc != MLA_OK) {
        snprintf(line, line_n, "%s: %s", mla_status_str(rc), err);
        res = MLA_GOLDEN_ERROR;
    } else {
        mla_golden_report *rep = (mla_golden_report *)malloc(sizeof *rep);
        if (!rep) { snprintf(line, line_n, "out of memory"); res = MLA_GOLDEN_ERROR; }
        else {
            res = mla_golden_check(c, &out, rep) ? MLA_GOLDEN_PASS : MLA_GOLDEN_FAIL;
            mla_golden_summary(rep, line, line_n);
            if (res == MLA_GOLDEN_FAIL && detail) mla_golden_print_failures(detail, rep);
            free(rep);
        }
    }
    mla_tensor_list_free(&out);
    mla_golden_free(c);
    return res;
}

/* ------------------------------------------------------------------------------------------ */
/* Case discovery                                                                               */

typedef struct str_list {
    char **v;
    int n, cap;
} str_list;

static int push(str_list *l, const char *s) {
    if (l->n == l->cap) {
        int nc = l->cap ? l->cap * 2 : 16;
        char **nv = (char **)realloc(l->v, sizeof(char *) * (size_t)nc);
        if (!nv) return -1;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n] = strdup(s);
    return l->v[l->n] ? (l->n++, 0) : -1;
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int collect(const char *path, str_list *l, int depth) {
    char pp[1200];
    snprintf(pp, sizeof pp, "%s/params.txt", path);
    struct stat st;
    if (stat(pp, &st) == 0) return push(l, path);
    if (depth > 8) return 0;
    struct dirent **ents = NULL;
    int n = scandir(path, &ents, NULL, alphasort);
    if (n < 0) return -1;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (rc == 0 && ents[i]->d_name[0] != '.') {
            char sub[1200];
            snprintf(sub, sizeof sub, "%s/%s", path, ents[i]->d_name);
            if (is_dir(sub)) rc = collect(sub, l, depth + 1) < 0 ? -1 : 0;
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

int mla_golden_find_cases(const char *path, char ***list, char *err, size_t err_n) {
    *list = NULL;
    if (!is_dir(path)) return set_err(err, err_n, "%s: not a directory", path);
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/') p[--len] = 0;
    str_list l = {0};
    if (collect(p, &l, 0) < 0) {
        mla_golden_free_list(l.v, l.n);
        return set_err(err, err_n, "%s: cannot read (%s)", path, strerror(errno));
    }
    *list = l.v;
    return l.n;
}

void mla_golden_free_list(char **list, int n) {
    if (!list) return;
    for (int i = 0; i < n; i++) free(list[i]);
    free(list);
}
