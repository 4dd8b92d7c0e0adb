/* Argument validation of every public operation (SPEC 4 preamble, section 5 preconditions, the
 * conventions of include/mla.h): one case per rule. Each case starts from a valid argument set,
 * breaks one rule, and requires MLA_ERR_INVALID_ARG, a message that starts with the operation and
 * names the argument, and every output byte unchanged (outputs are pattern-filled first). Each
 * operation also gets: its valid set accepted (MLA_OK, or MLA_ERR_UNSUPPORTED where the CPU
 * backend lacks the op), a NULL context, NULL args, and a zero-work call that succeeds and
 * writes nothing. Shapes are tiny: B = 2 requests, q_len [1, 2], seq_lens [5, 3], page_size 4. */
#include <ctype.h>
#include <limits.h>

#include "harness.h"

#define NT 3   /* tokens */
#define NH 2   /* heads */
#define PS 4   /* page_size */
#define NP 4   /* num_pages */
#define NB 2   /* requests */
#define BTS 2  /* bt_stride */
#define NKV 8  /* prefill keys */
#define MAXPOS 16

typedef struct {
    void *p;
    size_t n;
    uint8_t *snap;
} region;

/* Every argument struct, the shared batch arrays, and what was allocated. Views (count, bt,
 * cache) point into the argument struct of the operation under test, for the shared rules. */
typedef struct fx {
    int32_t q_offsets[NB + 1], seq_lens[NB], block_table[NB * BTS], kv_offsets[NB + 1];
    void *allocs[32];
    int nalloc;
    region outs[8];
    int nouts;
    int null_ctx, null_args;
    int32_t *count;          /* num_tokens / num_rows / m */
    mla_batch *bt;           /* NULL: the op has no batch */
    mla_paged_cache *cache;  /* NULL: the op has no cache */
    mla_decode_args decode;
    mla_sparse_args sparse;
    mla_indices_to_slots_args i2s;
    mla_prefill_args prefill;
    mla_prefill_fp8_fused_args fused;
    mla_rope_args rope;
    mla_rmsnorm_args rmsnorm;
    mla_quantize_fp8_1x128_args q1x128;
    mla_gemm_fp8_args gemm;
    mla_indexer_args indexer;
    mla_indexer_cache_store_args istore;
    mla_cache_store_args store;
    mla_quantize_q_rope_aware_args qra;
} fx;

static void fx_begin(fx *f) {
    memset(f, 0, sizeof *f);
    f->q_offsets[0] = 0; f->q_offsets[1] = 1; f->q_offsets[2] = 3;        /* q_len [1, 2] */
    f->seq_lens[0] = 5; f->seq_lens[1] = 3;                               /* pages: 2 and 1 */
    f->block_table[0] = 3; f->block_table[1] = 0;
    f->block_table[2] = 2; f->block_table[3] = INT32_MAX;                 /* past the used pages: never read */
    f->kv_offsets[0] = 0; f->kv_offsets[1] = 5; f->kv_offsets[2] = NKV;  /* kv_len [5, 3] */
}

static void fx_end(fx *f) {
    for (int i = 0; i < f->nalloc; i++) free(f->allocs[i]);
    for (int i = 0; i < f->nouts; i++) free(f->outs[i].snap);
}

static void *in_buf(fx *f, size_t n) {
    void *p = h_alloc(n);
    f->allocs[f->nalloc++] = p;
    return p;
}

/* an output: pattern-filled, snapshotted */
static void *out_buf(fx *f, size_t n) {
    uint8_t *p = (uint8_t *)in_buf(f, n);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(0xa5 ^ (i * 7));
    region *r = &f->outs[f->nouts++];
    r->p = p;
    r->n = n;
    r->snap = (uint8_t *)h_alloc(n);
    memcpy(r->snap, p, n);
    return p;
}

static int outputs_unchanged(const fx *f, char *what, size_t wn) {
    for (int i = 0; i < f->nouts; i++)
        for (size_t k = 0; k < f->outs[i].n; k++)
            if (((const uint8_t *)f->outs[i].p)[k] != f->outs[i].snap[k]) {
                snprintf(what, wn, "output %d byte %zu changed", i, k);
                return 0;
            }
    return 1;
}

static void batch_init(fx *f, mla_batch *b) {
    b->num_requests = NB;
    b->q_offsets = f->q_offsets;
    b->seq_lens = f->seq_lens;
    b->block_table = f->block_table;
    b->bt_stride = BTS;
    f->bt = b;
}

/* MLA_KV_BF16 pool (room for any latent format), sigma pool beside it */
static void latent_cache(fx *f, mla_paged_cache *c, int is_output) {
    size_t bytes = (size_t)NP * PS * 1152, sig = (size_t)NP * PS * 4;
    c->base = is_output ? out_buf(f, bytes) : in_buf(f, bytes);
    c->sigma = (float *)(is_output ? out_buf(f, sig) : in_buf(f, sig));
    c->page_stride = PS * 1152;
    c->page_size = PS;
    c->num_pages = NP;
    c->format = MLA_KV_BF16;
    f->cache = c;
}

/* MLA_IDX_FP8 pool, D = 64 (room for D = 128) */
static void idx_cache(fx *f, mla_paged_cache *c, int is_output) {
    size_t bytes = (size_t)NP * PS * 132;
    c->base = is_output ? out_buf(f, bytes) : in_buf(f, bytes);
    c->page_stride = PS * 68;
    c->page_size = PS;
    c->num_pages = NP;
    c->format = MLA_IDX_FP8;
    c->dim = 64;
    f->cache = c;
}

/* ------------------------------------------------------------------------------------------ */
/* Valid argument sets, one per operation                                                      */

static void decode_init(fx *f) {
    mla_decode_args *a = &f->decode;
    a->num_tokens = NT;
    a->num_heads = NH;
    a->q = in_buf(f, NT * NH * 1152);
    a->q_sigma = (const float *)in_buf(f, NT * 4);
    latent_cache(f, &a->cache, 0);
    batch_init(f, &a->batch);
    a->causal = 1;
    a->scale = 0.1f;
    a->out = (uint16_t *)out_buf(f, NT * NH * 512 * 2);
    a->lse = (float *)out_buf(f, NT * NH * 4);
    f->count = &a->num_tokens;
}
static mla_status decode_call(mla_ctx *c, fx *f) { return mla_decode(c, f->null_args ? NULL : &f->decode); }

static void sparse_init(fx *f) {
    mla_sparse_args *a = &f->sparse;
    a->num_tokens = NT;
    a->num_heads = NH;
    a->q = (const uint16_t *)in_buf(f, NT * NH * 576 * 2);
    latent_cache(f, &a->cache, 0);
    a->indices = (const int32_t *)in_buf(f, NT * 4 * 4);
    a->topk = 4;
    a->scale = 0.1f;
    a->out = (uint16_t *)out_buf(f, NT * NH * 512 * 2);
    a->lse = (float *)out_buf(f, NT * NH * 4);
    a->max_logits = (float *)out_buf(f, NT * NH * 4);
    f->count = &a->num_tokens;
}
static mla_status sparse_call(mla_ctx *c, fx *f) { return mla_sparse(c, f->null_args ? NULL : &f->sparse); }

static void i2s_init(fx *f) {
    mla_indices_to_slots_args *a = &f->i2s;
    a->num_tokens = NT;
    a->topk = 4;
    batch_init(f, &a->batch);
    a->page_size = PS;
    a->num_pages = NP;
    int32_t *ind = (int32_t *)in_buf(f, NT * 4 * 4);
    for (int i = 0; i < NT * 4; i++) ind[i] = i - 2;
    a->indices = ind;
    a->slots = (int32_t *)out_buf(f, NT * 4 * 4);
    f->count = &a->num_tokens;
}
static mla_status i2s_call(mla_ctx *c, fx *f) { return mla_indices_to_slots(c, f->null_args ? NULL : &f->i2s); }

static void prefill_init(fx *f) {
    mla_prefill_args *a = &f->prefill;
    a->dtype = MLA_DTYPE_BF16;
    a->num_tokens = NT;
    a->num_kv = NKV;
    a->num_heads = NH;
    a->num_requests = NB;
    a->q_offsets = f->q_offsets;
    a->kv_offsets = f->kv_offsets;
    a->q = in_buf(f, NT * NH * 192 * 2);
    a->k_nope = in_buf(f, NKV * NH * 128 * 2);
    a->v = in_buf(f, NKV * NH * 128 * 2);
    a->k_rope = in_buf(f, NKV * 64 * 2);
    a->descale_q = a->descale_k = a->descale_v = 1.0f;
    a->causal = 1;
    a->scale = 0.1f;
    a->out = (uint16_t *)out_buf(f, NT * NH * 128 * 2);
    a->lse = (float *)out_buf(f, NT * NH * 4);
    f->count = &a->num_tokens;
}
static mla_status prefill_call(mla_ctx *c, fx *f) { return mla_prefill(c, f->null_args ? NULL : &f->prefill); }

static void fused_init(fx *f) {
    mla_prefill_fp8_fused_args *a = &f->fused;
    a->num_tokens = NT;
    a->num_heads = NH;
    a->q = (uint16_t *)out_buf(f, NT * NH * 192 * 2); /* roped in place */
    a->freqs_cis = (const float *)in_buf(f, MAXPOS * 64 * 4);
    a->max_pos = MAXPOS;
    a->kv_norm_gamma = (const uint16_t *)in_buf(f, 512 * 2);
    latent_cache(f, &a->cache, 1); /* roped and normed in place */
    batch_init(f, &a->batch);
    a->kv_b_proj = (const uint8_t *)in_buf(f, NH * 256 * 512);
    a->kv_b_proj_scale = (const float *)in_buf(f, NH * 2 * 4 * 4);
    a->scale = 0.1f;
    a->eps = 1e-6f;
    a->out = (uint16_t *)out_buf(f, NT * NH * 128 * 2);
    a->lse = (float *)out_buf(f, NT * NH * 4);
    a->max_kv_total = 8;
    f->count = &a->num_tokens;
}
static mla_status fused_call(mla_ctx *c, fx *f) { return mla_prefill_fp8_fused(c, f->null_args ? NULL : &f->fused); }

static void rope_init(fx *f) {
    mla_rope_args *a = &f->rope;
    a->num_rows = NT;
    a->x = (uint16_t *)out_buf(f, NT * 64 * 2);
    int32_t *pos = (int32_t *)in_buf(f, NT * 4);
    for (int i = 0; i < NT; i++) pos[i] = 2 * i;
    a->pos = pos;
    a->freqs_cis = (const float *)in_buf(f, 8 * 64 * 4);
    a->max_pos = 8;
    f->count = &a->num_rows;
}
static mla_status rope_call(mla_ctx *c, fx *f) { return mla_rope(c, f->null_args ? NULL : &f->rope); }

static void rmsnorm_init(fx *f) {
    mla_rmsnorm_args *a = &f->rmsnorm;
    a->num_rows = NT;
    a->dim = 512;
    a->x = (uint16_t *)out_buf(f, NT * 512 * 2);
    a->gamma = (const uint16_t *)in_buf(f, 512 * 2);
    a->eps = 1e-6f;
    f->count = &a->num_rows;
}
static mla_status rmsnorm_call(mla_ctx *c, fx *f) { return mla_rmsnorm(c, f->null_args ? NULL : &f->rmsnorm); }

static void q1x128_init(fx *f) {
    mla_quantize_fp8_1x128_args *a = &f->q1x128;
    a->num_rows = NT;
    a->dim = 256;
    a->x = (const uint16_t *)in_buf(f, NT * 256 * 2);
    a->q = (uint8_t *)out_buf(f, NT * 256);
    a->s = (float *)out_buf(f, NT * 2 * 4);
    f->count = &a->num_rows;
}
static mla_status q1x128_call(mla_ctx *c, fx *f) { return mla_quantize_fp8_1x128(c, f->null_args ? NULL : &f->q1x128); }

static void gemm_init(fx *f) {
    mla_gemm_fp8_args *a = &f->gemm;
    a->m = NT;
    a->n = 130;
    a->k = 256;
    a->a = (const uint8_t *)in_buf(f, NT * 256);
    a->a_s = (const float *)in_buf(f, NT * 2 * 4);
    a->b = (const uint8_t *)in_buf(f, 130 * 256);
    a->b_s = (const float *)in_buf(f, 2 * 2 * 4);
    a->c = (uint16_t *)out_buf(f, NT * 130 * 2);
    f->count = &a->m;
}
static mla_status gemm_call(mla_ctx *c, fx *f) { return mla_gemm_fp8_block_scaled(c, f->null_args ? NULL : &f->gemm); }

static void indexer_init(fx *f) {
    mla_indexer_args *a = &f->indexer;
    a->num_tokens = NT;
    a->num_heads = NH;
    a->dim = 64;
    a->q = (const uint8_t *)in_buf(f, NT * NH * 64);
    a->q_s = (const float *)in_buf(f, NT * NH * 4);
    idx_cache(f, &a->cache, 0);
    batch_init(f, &a->batch);
    a->causal = 1;
    a->top_k = 4;
    a->indices = (int32_t *)out_buf(f, NT * 4 * 4);
    a->logits = (float *)out_buf(f, NT * 8 * 4);
    a->logits_stride = 8;
    a->max_seq_len = 8;
    f->count = &a->num_tokens;
}
static mla_status indexer_call(mla_ctx *c, fx *f) { return mla_indexer(c, f->null_args ? NULL : &f->indexer); }

static void istore_init(fx *f) {
    mla_indexer_cache_store_args *a = &f->istore;
    a->num_tokens = NT;
    a->k = (const uint16_t *)in_buf(f, NT * 64 * 2);
    idx_cache(f, &a->cache, 1);
    batch_init(f, &a->batch);
    f->count = &a->num_tokens;
}
static mla_status istore_call(mla_ctx *c, fx *f) { return mla_indexer_cache_store(c, f->null_args ? NULL : &f->istore); }

static void store_init(fx *f) {
    mla_cache_store_args *a = &f->store;
    a->num_tokens = NT;
    a->rows = (const uint16_t *)in_buf(f, NT * 576 * 2);
    latent_cache(f, &a->cache, 1);
    batch_init(f, &a->batch);
    f->count = &a->num_tokens;
}
static mla_status store_call(mla_ctx *c, fx *f) { return mla_cache_store(c, f->null_args ? NULL : &f->store); }

static void qra_init(fx *f) {
    mla_quantize_q_rope_aware_args *a = &f->qra;
    a->num_tokens = NT;
    a->num_heads = NH;
    a->q = (const uint16_t *)in_buf(f, NT * NH * 576 * 2);
    a->q_out = (uint8_t *)out_buf(f, NT * NH * 640);
    a->q_sigma = (float *)out_buf(f, NT * 4);
    f->count = &a->num_tokens;
}
static mla_status qra_call(mla_ctx *c, fx *f) { return mla_quantize_q_rope_aware(c, f->null_args ? NULL : &f->qra); }

/* ------------------------------------------------------------------------------------------ */
/* Operations and the checks every case makes                                                  */

enum { NO_CACHE, LATENT, IDX };

typedef struct opdesc {
    const char *name;        /* as the messages spell it */
    void (*init)(fx *f);
    mla_status (*call)(mla_ctx *ctx, fx *f);
    const char *count_name;  /* num_tokens / num_rows / m */
    int cache_kind;
    mla_format refused_format; /* a real format this op refuses */
    int rope_aware;          /* accepts MLA_KV_FP8_ROPE_AWARE */
    int has_batch, seq_ge_qlen;
    int cpu_exact;           /* implemented by the CPU backend now: a valid call must return MLA_OK */
} opdesc;

static const opdesc OP_DECODE = {"decode", decode_init, decode_call, "num_tokens", LATENT, MLA_IDX_FP8, 1, 1, 1, 0};
static const opdesc OP_SPARSE = {"sparse", sparse_init, sparse_call, "num_tokens", LATENT, MLA_KV_FP8_ROPE_AWARE, 0, 0, 0, 0};
static const opdesc OP_I2S = {"indices_to_slots", i2s_init, i2s_call, "num_tokens", NO_CACHE, 0, 0, 1, 0, 1};
static const opdesc OP_PREFILL = {"prefill", prefill_init, prefill_call, "num_tokens", NO_CACHE, 0, 0, 0, 0, 0};
static const opdesc OP_FUSED = {"prefill_fp8_fused", fused_init, fused_call, "num_tokens", LATENT, MLA_KV_FP8, 0, 1, 1, 0};
static const opdesc OP_ROPE = {"rope", rope_init, rope_call, "num_rows", NO_CACHE, 0, 0, 0, 0, 0};
static const opdesc OP_RMSNORM = {"rmsnorm", rmsnorm_init, rmsnorm_call, "num_rows", NO_CACHE, 0, 0, 0, 0, 0};
static const opdesc OP_Q1X128 = {"quantize_fp8_1x128", q1x128_init, q1x128_call, "num_rows", NO_CACHE, 0, 0, 0, 0, 0};
static const opdesc OP_GEMM = {"gemm_fp8_block_scaled", gemm_init, gemm_call, "m", NO_CACHE, 0, 0, 0, 0, 0};
static const opdesc OP_INDEXER = {"indexer", indexer_init, indexer_call, "num_tokens", IDX, MLA_KV_BF16, 0, 1, 1, 0};
static const opdesc OP_ISTORE = {"indexer_cache_store", istore_init, istore_call, "num_tokens", IDX, MLA_KV_BF16, 0, 1, 1, 1};
static const opdesc OP_STORE = {"cache_store", store_init, store_call, "num_tokens", LATENT, MLA_IDX_FP8, 1, 1, 1, 1};
static const opdesc OP_QRA = {"quantize_q_rope_aware", qra_init, qra_call, "num_tokens", NO_CACHE, 0, 0, 0, 0, 1};

/* `word` occurs in msg as a whole argument name (not inside a longer identifier) */
static int names_arg(const char *msg, const char *word) {
    size_t n = strlen(word);
    for (const char *p = strstr(msg, word); p; p = strstr(p + 1, word)) {
        char before = p == msg ? ' ' : p[-1], after = p[n];
        if (!(isalnum((unsigned char)before) || before == '_' || before == '.') &&
            !(isalnum((unsigned char)after) || after == '_'))
            return 1;
    }
    return 0;
}

/* word NULL: no message to read (NULL context) */
static void expect_invalid(mla_ctx *ctx, const opdesc *op, const char *title, const char *word, mla_status rc,
                           const fx *f) {
    h_begin("%s: %s", op->name, title);
    const char *msg = mla_ctx_last_error(ctx);
    EXPECT(rc == MLA_ERR_INVALID_ARG, "status %s, want invalid argument (message: %s)", mla_status_str(rc), msg);
    if (word) {
        char head[64];
        snprintf(head, sizeof head, "%s: ", op->name);
        EXPECT(strncmp(msg, head, strlen(head)) == 0, "message does not start with '%s': %s", head, msg);
        EXPECT(names_arg(msg, word), "message does not name '%s': %s", word, msg);
    }
    char what[128];
    EXPECT(outputs_unchanged(f, what, sizeof what), "%s", what);
    h_end();
}

/* accepted: MLA_OK (or MLA_ERR_UNSUPPORTED while the CPU backend lacks the op) and no message of
 * a validation failure */
static void expect_accepted(mla_ctx *ctx, const opdesc *op, const char *title, mla_status rc) {
    h_begin("%s: %s", op->name, title);
    const char *msg = mla_ctx_last_error(ctx);
    if (op->cpu_exact) EXPECT(rc == MLA_OK, "status %s: %s", mla_status_str(rc), msg);
    else EXPECT(rc == MLA_OK || rc == MLA_ERR_UNSUPPORTED, "status %s: %s", mla_status_str(rc), msg);
    if (rc == MLA_OK) EXPECT(msg[0] == 0, "message after success: %s", msg);
    h_end();
}

/* Build the valid set, apply the statements (with `f` in scope), call, check. */
#define RULE(OP, TITLE, WORD, ...)                                    \
    do {                                                              \
        fx f_;                                                        \
        fx_begin(&f_);                                                \
        (OP)->init(&f_);                                              \
        {                                                             \
            fx *f = &f_;                                              \
            (void)f;                                                  \
            __VA_ARGS__;                                              \
        }                                                             \
        mla_status rc_ = (OP)->call(f_.null_ctx ? NULL : ctx, &f_);   \
        expect_invalid(ctx, (OP), (TITLE), (WORD), rc_, &f_);         \
        fx_end(&f_);                                                  \
    } while (0)

#define ACCEPT(OP, TITLE, ...)                                        \
    do {                                                              \
        fx f_;                                                        \
        fx_begin(&f_);                                                \
        (OP)->init(&f_);                                              \
        {                                                             \
            fx *f = &f_;                                              \
            (void)f;                                                  \
            __VA_ARGS__;                                              \
        }                                                             \
        expect_accepted(ctx, (OP), (TITLE), (OP)->call(ctx, &f_));    \
        fx_end(&f_);                                                  \
    } while (0)

/* ------------------------------------------------------------------------------------------ */
/* Rules every operation shares: context, args, count, zero work; then the cache and the batch */

static void shared_rules(mla_ctx *ctx, const opdesc *op) {
    ACCEPT(op, "valid arguments accepted", (void)0);
    RULE(op, "ctx is NULL", NULL, f->null_ctx = 1);
    RULE(op, "args is NULL", "args", f->null_args = 1);
    char t[128];
    snprintf(t, sizeof t, "%s = -1", op->count_name);
    RULE(op, t, op->count_name, *f->count = -1);

    fx f0;
    fx_begin(&f0);
    op->init(&f0);
    *f0.count = 0;
    f0.q_offsets[1] = f0.q_offsets[2] = 0;
    mla_status rc = op->call(ctx, &f0);
    h_begin("%s: zero work (%s = 0) returns MLA_OK and writes nothing", op->name, op->count_name);
    char what[128];
    EXPECT_OK(ctx, rc);
    EXPECT(mla_ctx_last_error(ctx)[0] == 0, "message after success: %s", mla_ctx_last_error(ctx));
    EXPECT(outputs_unchanged(&f0, what, sizeof what), "%s", what);
    h_end();
    fx_end(&f0);
}

static void cache_rules(mla_ctx *ctx, const opdesc *op) {
    if (op->cache_kind == NO_CACHE) return;
    char t[160];
    snprintf(t, sizeof t, "cache.format = %s (not accepted here)", mla_format_name(op->refused_format));
    RULE(op, t, "cache.format", f->cache->format = op->refused_format);
    RULE(op, "cache.format = 0 (unknown)", "cache.format", f->cache->format = (mla_format)0);
    RULE(op, "cache.format = 99 (unknown)", "cache.format", f->cache->format = (mla_format)99);
    RULE(op, "cache.format = -1 (unknown)", "cache.format", f->cache->format = (mla_format)-1);
    RULE(op, "cache.base is NULL", "cache.base", f->cache->base = NULL);
    RULE(op, "cache.page_size = 0", "cache.page_size", f->cache->page_size = 0);
    RULE(op, "cache.page_size = -4", "cache.page_size", f->cache->page_size = -4);
    RULE(op, "cache.num_pages = 0", "cache.num_pages", f->cache->num_pages = 0);
    RULE(op, "cache.num_pages = -1", "cache.num_pages", f->cache->num_pages = -1);
    RULE(op, "cache.num_pages * page_size overflows int32 slot ids", "cache.num_pages",
         f->cache->num_pages = INT32_MAX / 2);
    RULE(op, "cache.page_stride one byte below a page", "cache.page_stride",
         f->cache->page_stride = (int64_t)mla_cache_page_bytes(f->cache->format, f->cache->page_size, f->cache->dim) - 1);
    RULE(op, "cache.page_stride = 0", "cache.page_stride", f->cache->page_stride = 0);
    RULE(op, "cache.page_stride negative", "cache.page_stride", f->cache->page_stride = -1152);
    if (op->rope_aware) {
        RULE(op, "MLA_KV_FP8_ROPE_AWARE without cache.sigma", "cache.sigma",
             f->cache->format = MLA_KV_FP8_ROPE_AWARE; f->cache->sigma = NULL);
        RULE(op, "cache.sigma_stride_page below page_size", "cache.sigma_stride_page",
             f->cache->format = MLA_KV_FP8_ROPE_AWARE; f->cache->sigma_stride_page = PS - 1);
        RULE(op, "cache.sigma_stride_page negative", "cache.sigma_stride_page",
             f->cache->format = MLA_KV_FP8_ROPE_AWARE; f->cache->sigma_stride_page = -1);
    }
    if (op->cache_kind == IDX) {
        RULE(op, "cache.dim = 32 (MLA_IDX_FP8 needs 64 or 128)", "cache.dim", f->cache->dim = 32);
        RULE(op, "cache.dim = 0", "cache.dim", f->cache->dim = 0);
    }
}

static void batch_rules(mla_ctx *ctx, const opdesc *op) {
    if (!op->has_batch) return;
    RULE(op, "batch.num_requests = -1", "batch.num_requests", f->bt->num_requests = -1);
    RULE(op, "tokens but batch.num_requests = 0", "batch.num_requests", f->bt->num_requests = 0);
    RULE(op, "batch.q_offsets is NULL", "batch.q_offsets", f->bt->q_offsets = NULL);
    RULE(op, "batch.q_offsets[0] != 0", "batch.q_offsets", f->q_offsets[0] = 1);
    RULE(op, "batch.q_offsets descending", "batch.q_offsets", f->q_offsets[1] = 4);
    RULE(op, "batch.q_offsets[B] != num_tokens", "batch.q_offsets", f->q_offsets[2] = 2);
    RULE(op, "batch.seq_lens is NULL", "batch.seq_lens", f->bt->seq_lens = NULL);
    RULE(op, "batch.block_table is NULL", "batch.block_table", f->bt->block_table = NULL);
    RULE(op, "batch.bt_stride = 0", "batch.bt_stride", f->bt->bt_stride = 0);
    RULE(op, "batch.bt_stride = -2", "batch.bt_stride", f->bt->bt_stride = -2);
    RULE(op, "seq_lens[1] negative", "seq_lens", f->seq_lens[1] = -1);
    if (op->seq_ge_qlen) RULE(op, "seq_lens[1] < q_len[1]", "seq_lens", f->seq_lens[1] = 1);
    else ACCEPT(op, "seq_lens[1] < q_len[1] accepted (no such rule here)", f->seq_lens[1] = 1);
    ACCEPT(op, "seq_lens[1] = 0 with q_len[1] > 0 accepted (an empty request: its rows see no key)", f->seq_lens[1] = 0);
    RULE(op, "batch.bt_stride below the pages a request uses", "batch.bt_stride", f->bt->bt_stride = 1);
    RULE(op, "block-table page id = num_pages", "block_table", f->block_table[1] = NP);
    RULE(op, "block-table page id negative", "block_table", f->block_table[2] = -1);
    RULE(op, "block-table page id INT32_MIN", "block_table", f->block_table[0] = INT32_MIN);
    ACCEPT(op, "garbage past a request's pages is never read", f->block_table[3] = -7);
}

/* ------------------------------------------------------------------------------------------ */
/* Rules of each operation                                                                     */

static void decode_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_DECODE;
    RULE(op, "num_heads = 0", "num_heads", f->decode.num_heads = 0);
    RULE(op, "num_heads = 129", "num_heads", f->decode.num_heads = 129);
    RULE(op, "q is NULL", "q", f->decode.q = NULL);
    RULE(op, "rope-aware cache without q_sigma", "q_sigma",
         f->decode.cache.format = MLA_KV_FP8_ROPE_AWARE; f->decode.q_sigma = NULL);
    RULE(op, "q_stride_h = 575", "q_stride_h", f->decode.q_stride_h = 575);
    RULE(op, "rope-aware q_stride_h = 639 (packed rows are 640 bytes)", "q_stride_h",
         f->decode.cache.format = MLA_KV_FP8_ROPE_AWARE; f->decode.q_stride_h = 639);
    RULE(op, "q_stride_t below num_heads * 576", "q_stride_t", f->decode.q_stride_t = NH * 576 - 1);
    RULE(op, "q_stride_t below num_heads * q_stride_h", "q_stride_t",
         f->decode.q_stride_h = 600; f->decode.q_stride_t = NH * 600 - 1);
    RULE(op, "q_stride_t negative", "q_stride_t", f->decode.q_stride_t = -1);
    RULE(op, "out is NULL", "out", f->decode.out = NULL);
    RULE(op, "out_stride_h = 511", "out_stride_h", f->decode.out_stride_h = 511);
    RULE(op, "out_stride_t below num_heads * 512", "out_stride_t", f->decode.out_stride_t = NH * 512 - 1);
    RULE(op, "lse_stride_t below num_heads", "lse_stride_t", f->decode.lse_stride_t = NH - 1);
    RULE(op, "scale is NaN", "scale", f->decode.scale = NAN);
    RULE(op, "precision = 2", "precision", f->decode.precision = (mla_precision)2);
    RULE(op, "precision = -1", "precision", f->decode.precision = (mla_precision)-1);
    RULE(op, "scale is +inf", "scale", f->decode.scale = INFINITY);
    ACCEPT(op, "lse NULL accepted", f->decode.lse = NULL);
    ACCEPT(op, "MLA_KV_FP8 accepted", f->decode.cache.format = MLA_KV_FP8);
    ACCEPT(op, "MLA_KV_FP8_ROPE_AWARE with q_sigma accepted", f->decode.cache.format = MLA_KV_FP8_ROPE_AWARE);
}

static void sparse_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_SPARSE;
    RULE(op, "num_heads = 0", "num_heads", f->sparse.num_heads = 0);
    RULE(op, "num_heads = 129", "num_heads", f->sparse.num_heads = 129);
    RULE(op, "cache.format = MLA_IDX_FP8", "cache.format", f->sparse.cache.format = MLA_IDX_FP8);
    RULE(op, "topk = 0", "topk", f->sparse.topk = 0);
    RULE(op, "q is NULL", "q", f->sparse.q = NULL);
    RULE(op, "q_stride_h = 575", "q_stride_h", f->sparse.q_stride_h = 575);
    RULE(op, "q_stride_t below num_heads * 576", "q_stride_t", f->sparse.q_stride_t = NH * 576 - 1);
    RULE(op, "indices is NULL", "indices", f->sparse.indices = NULL);
    RULE(op, "indices_stride_t below topk", "indices_stride_t", f->sparse.indices_stride_t = 3);
    RULE(op, "out is NULL", "out", f->sparse.out = NULL);
    RULE(op, "out_stride_h = 511", "out_stride_h", f->sparse.out_stride_h = 511);
    RULE(op, "out_stride_t below num_heads * 512", "out_stride_t", f->sparse.out_stride_t = NH * 512 - 1);
    RULE(op, "lse_stride_t below num_heads", "lse_stride_t", f->sparse.lse_stride_t = 1);
    RULE(op, "scale is -inf", "scale", f->sparse.scale = -INFINITY);
    ACCEPT(op, "MLA_KV_FP8 accepted", f->sparse.cache.format = MLA_KV_FP8);
    ACCEPT(op, "lse, max_logits NULL accepted", f->sparse.lse = NULL; f->sparse.max_logits = NULL);
}

static void i2s_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_I2S;
    RULE(op, "topk = 0", "topk", f->i2s.topk = 0);
    RULE(op, "page_size = 0", "page_size", f->i2s.page_size = 0);
    RULE(op, "num_pages = 0", "num_pages", f->i2s.num_pages = 0);
    RULE(op, "num_pages * page_size overflows int32 slot ids", "num_pages", f->i2s.num_pages = INT32_MAX);
    RULE(op, "indices is NULL", "indices", f->i2s.indices = NULL);
    RULE(op, "slots is NULL", "slots", f->i2s.slots = NULL);
    RULE(op, "indices_stride_t below topk", "indices_stride_t", f->i2s.indices_stride_t = 3);
    RULE(op, "slots_stride_t below topk", "slots_stride_t", f->i2s.slots_stride_t = 3);
}

static void prefill_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_PREFILL;
    RULE(op, "dtype = 0", "dtype", f->prefill.dtype = (mla_dtype)0);
    RULE(op, "dtype = MLA_DTYPE_F32", "dtype", f->prefill.dtype = MLA_DTYPE_F32);
    RULE(op, "num_kv = -1", "num_kv", f->prefill.num_kv = -1);
    RULE(op, "num_heads = 0", "num_heads", f->prefill.num_heads = 0);
    RULE(op, "num_heads = 129", "num_heads", f->prefill.num_heads = 129);
    RULE(op, "num_requests = -1", "num_requests", f->prefill.num_requests = -1);
    RULE(op, "tokens but num_requests = 0", "num_requests", f->prefill.num_requests = 0);
    RULE(op, "q_offsets is NULL", "q_offsets", f->prefill.q_offsets = NULL);
    RULE(op, "q_offsets[0] != 0", "q_offsets", f->q_offsets[0] = 1);
    RULE(op, "q_offsets descending", "q_offsets", f->q_offsets[1] = 4);
    RULE(op, "q_offsets[B] != num_tokens", "q_offsets", f->q_offsets[2] = 2);
    RULE(op, "kv_offsets is NULL", "kv_offsets", f->prefill.kv_offsets = NULL);
    RULE(op, "kv_offsets[0] != 0", "kv_offsets", f->kv_offsets[0] = 1);
    RULE(op, "kv_offsets descending", "kv_offsets", f->kv_offsets[1] = NKV + 1);
    RULE(op, "kv_offsets[B] != num_kv", "kv_offsets", f->kv_offsets[2] = NKV - 1);
    RULE(op, "causal with kv_len[1] < q_len[1]", "kv_len", f->kv_offsets[1] = NKV - 1);
    RULE(op, "q is NULL", "q", f->prefill.q = NULL);
    RULE(op, "q_stride_h = 191", "q_stride_h", f->prefill.q_stride_h = 191);
    RULE(op, "q_stride_t below num_heads * 192", "q_stride_t", f->prefill.q_stride_t = NH * 192 - 1);
    RULE(op, "k_nope is NULL", "k_nope", f->prefill.k_nope = NULL);
    RULE(op, "v is NULL", "v", f->prefill.v = NULL);
    RULE(op, "k_rope is NULL", "k_rope", f->prefill.k_rope = NULL);
    RULE(op, "k_nope_stride_h = 127", "k_nope_stride_h", f->prefill.k_nope_stride_h = 127);
    RULE(op, "k_nope_stride_s below num_heads * 128", "k_nope_stride_s", f->prefill.k_nope_stride_s = NH * 128 - 1);
    RULE(op, "v_stride_h = 127", "v_stride_h", f->prefill.v_stride_h = 127);
    RULE(op, "v_stride_s below num_heads * 128", "v_stride_s", f->prefill.v_stride_s = NH * 128 - 1);
    RULE(op, "k_rope_stride_s = 63", "k_rope_stride_s", f->prefill.k_rope_stride_s = 63);
    RULE(op, "out is NULL", "out", f->prefill.out = NULL);
    RULE(op, "out_stride_h = 127", "out_stride_h", f->prefill.out_stride_h = 127);
    RULE(op, "out_stride_t below num_heads * 128", "out_stride_t", f->prefill.out_stride_t = NH * 128 - 1);
    RULE(op, "lse_stride_t below num_heads", "lse_stride_t", f->prefill.lse_stride_t = 1);
    RULE(op, "scale is NaN", "scale", f->prefill.scale = NAN);
    RULE(op, "e4m3 with descale_q NaN", "descale_q", f->prefill.dtype = MLA_DTYPE_E4M3; f->prefill.descale_q = NAN);
    RULE(op, "e4m3 with descale_k +inf", "descale_k",
         f->prefill.dtype = MLA_DTYPE_E4M3; f->prefill.descale_k = INFINITY);
    RULE(op, "e4m3 with descale_v -inf", "descale_v",
         f->prefill.dtype = MLA_DTYPE_E4M3; f->prefill.descale_v = -INFINITY);
    ACCEPT(op, "e4m3 accepted", f->prefill.dtype = MLA_DTYPE_E4M3);
    ACCEPT(op, "non-causal with kv_len < q_len accepted", f->prefill.causal = 0; f->kv_offsets[1] = NKV - 1);
    ACCEPT(op, "bf16 ignores non-finite descales", f->prefill.descale_q = NAN);
    ACCEPT(op, "no keys: NULL k_nope, v, k_rope accepted (non-causal)",
           f->prefill.causal = 0; f->prefill.num_kv = 0; f->kv_offsets[1] = f->kv_offsets[2] = 0;
           f->prefill.k_nope = NULL; f->prefill.v = NULL; f->prefill.k_rope = NULL);
}

static void fused_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_FUSED;
    RULE(op, "num_heads = 0", "num_heads", f->fused.num_heads = 0);
    RULE(op, "num_heads = 129", "num_heads", f->fused.num_heads = 129);
    RULE(op, "cache.format = MLA_KV_FP8_ROPE_AWARE", "cache.format", f->fused.cache.format = MLA_KV_FP8_ROPE_AWARE);
    RULE(op, "q is NULL", "q", f->fused.q = NULL);
    RULE(op, "q_stride_h = 191", "q_stride_h", f->fused.q_stride_h = 191);
    RULE(op, "q_stride_t below num_heads * 192", "q_stride_t", f->fused.q_stride_t = NH * 192 - 1);
    RULE(op, "freqs_cis is NULL", "freqs_cis", f->fused.freqs_cis = NULL);
    RULE(op, "max_pos = 0", "max_pos", f->fused.max_pos = 0);
    RULE(op, "seq_lens[0] > max_pos", "max_pos", f->fused.max_pos = 4);
    RULE(op, "kv_norm_gamma is NULL", "kv_norm_gamma", f->fused.kv_norm_gamma = NULL);
    RULE(op, "kv_b_proj is NULL", "kv_b_proj", f->fused.kv_b_proj = NULL);
    RULE(op, "kv_b_proj_scale is NULL", "kv_b_proj_scale", f->fused.kv_b_proj_scale = NULL);
    RULE(op, "out is NULL", "out", f->fused.out = NULL);
    RULE(op, "out_stride_h = 127", "out_stride_h", f->fused.out_stride_h = 127);
    RULE(op, "out_stride_t below num_heads * 128", "out_stride_t", f->fused.out_stride_t = NH * 128 - 1);
    RULE(op, "lse_stride_t below num_heads", "lse_stride_t", f->fused.lse_stride_t = 1);
    RULE(op, "scale is +inf", "scale", f->fused.scale = INFINITY);
    RULE(op, "eps is NaN", "eps", f->fused.eps = NAN);
    ACCEPT(op, "seq_lens[0] == max_pos accepted", f->fused.max_pos = 5);
}

static void rope_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_ROPE;
    RULE(op, "x is NULL", "x", f->rope.x = NULL);
    RULE(op, "pos is NULL", "pos", f->rope.pos = NULL);
    RULE(op, "freqs_cis is NULL", "freqs_cis", f->rope.freqs_cis = NULL);
    RULE(op, "max_pos = 0", "max_pos", f->rope.max_pos = 0);
    RULE(op, "x_stride = 63", "x_stride", f->rope.x_stride = 63);
    RULE(op, "pos[1] negative", "pos", ((int32_t *)f->rope.pos)[1] = -1);
    RULE(op, "pos[2] = max_pos", "pos", ((int32_t *)f->rope.pos)[2] = 8);
    RULE(op, "pos[0] = INT32_MAX", "pos", ((int32_t *)f->rope.pos)[0] = INT32_MAX);
}

static void rmsnorm_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_RMSNORM;
    RULE(op, "dim = 0", "dim", f->rmsnorm.dim = 0);
    RULE(op, "dim = 2^20 + 1", "dim", f->rmsnorm.dim = (1 << 20) + 1);
    RULE(op, "x is NULL", "x", f->rmsnorm.x = NULL);
    RULE(op, "gamma is NULL", "gamma", f->rmsnorm.gamma = NULL);
    RULE(op, "x_stride below dim", "x_stride", f->rmsnorm.x_stride = 511);
    RULE(op, "eps is +inf", "eps", f->rmsnorm.eps = INFINITY);
}

static void q1x128_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_Q1X128;
    RULE(op, "dim = 64 (below 128)", "dim", f->q1x128.dim = 64);
    RULE(op, "dim = 200 (not a multiple of 128)", "dim", f->q1x128.dim = 200);
    RULE(op, "x is NULL", "x", f->q1x128.x = NULL);
    RULE(op, "q is NULL", "q", f->q1x128.q = NULL);
    RULE(op, "s is NULL", "s", f->q1x128.s = NULL);
    RULE(op, "x_stride below dim", "x_stride", f->q1x128.x_stride = 255);
}

static void gemm_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_GEMM;
    RULE(op, "n = 0", "n", f->gemm.n = 0);
    RULE(op, "k = 64 (below 128)", "k", f->gemm.k = 64);
    RULE(op, "k = 200 (not a multiple of 128)", "k", f->gemm.k = 200);
    RULE(op, "a is NULL", "a", f->gemm.a = NULL);
    RULE(op, "a_s is NULL", "a_s", f->gemm.a_s = NULL);
    RULE(op, "b is NULL", "b", f->gemm.b = NULL);
    RULE(op, "b_s is NULL", "b_s", f->gemm.b_s = NULL);
    RULE(op, "c is NULL", "c", f->gemm.c = NULL);
    RULE(op, "c_stride below n", "c_stride", f->gemm.c_stride = 129);
}

static void indexer_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_INDEXER;
    RULE(op, "num_heads = 0", "num_heads", f->indexer.num_heads = 0);
    RULE(op, "num_heads = 129", "num_heads", f->indexer.num_heads = 129);
    RULE(op, "dim = 96 (64 or 128)", "dim", f->indexer.dim = 96);
    RULE(op, "cache.dim != dim", "cache.dim", f->indexer.cache.dim = 128; f->indexer.cache.page_stride = PS * 132);
    RULE(op, "top_k = 0", "top_k", f->indexer.top_k = 0);
    RULE(op, "q is NULL", "q", f->indexer.q = NULL);
    RULE(op, "q_stride_t below num_heads * dim", "q_stride_t", f->indexer.q_stride_t = NH * 64 - 1);
    RULE(op, "q_s is NULL", "q_s", f->indexer.q_s = NULL);
    RULE(op, "indices is NULL", "indices", f->indexer.indices = NULL);
    RULE(op, "indices_stride_t below top_k", "indices_stride_t", f->indexer.indices_stride_t = 3);
    RULE(op, "logits_stride = 0 with logits", "logits_stride", f->indexer.logits_stride = 0);
    RULE(op, "logits_stride below seq_lens[0]", "logits_stride", f->indexer.logits_stride = 4);
    ACCEPT(op, "logits NULL with logits_stride 0 accepted", f->indexer.logits = NULL; f->indexer.logits_stride = 0);
    ACCEPT(op, "dim 128 accepted", f->indexer.dim = 128; f->indexer.cache.dim = 128;
           f->indexer.cache.page_stride = PS * 132; f->indexer.q = (const uint8_t *)in_buf(f, NT * NH * 128));
}

static void istore_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_ISTORE;
    RULE(op, "k is NULL", "k", f->istore.k = NULL);
    RULE(op, "k_stride_t below cache.dim", "k_stride_t", f->istore.k_stride_t = 63);
}

static void store_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_STORE;
    RULE(op, "rows is NULL", "rows", f->store.rows = NULL);
    RULE(op, "rows_stride_t = 575", "rows_stride_t", f->store.rows_stride_t = 575);
    ACCEPT(op, "MLA_KV_FP8 accepted", f->store.cache.format = MLA_KV_FP8);
    ACCEPT(op, "MLA_KV_FP8_ROPE_AWARE accepted", f->store.cache.format = MLA_KV_FP8_ROPE_AWARE);
    ACCEPT(op, "rope-aware sigma_stride_page = page_size + 1 accepted",
           f->store.cache.format = MLA_KV_FP8_ROPE_AWARE; f->store.cache.sigma_stride_page = PS + 1;
           f->store.cache.sigma = (float *)in_buf(f, NP * (PS + 1) * 4));
}

static void qra_rules(mla_ctx *ctx) {
    const opdesc *op = &OP_QRA;
    RULE(op, "num_heads = 0", "num_heads", f->qra.num_heads = 0);
    RULE(op, "num_heads = 129", "num_heads", f->qra.num_heads = 129);
    RULE(op, "q is NULL", "q", f->qra.q = NULL);
    RULE(op, "q_out is NULL", "q_out", f->qra.q_out = NULL);
    RULE(op, "q_sigma is NULL", "q_sigma", f->qra.q_sigma = NULL);
    RULE(op, "q_stride_h = 575", "q_stride_h", f->qra.q_stride_h = 575);
    RULE(op, "q_stride_t below num_heads * 576", "q_stride_t", f->qra.q_stride_t = NH * 576 - 1);
    RULE(op, "q_out_stride_h = 639", "q_out_stride_h", f->qra.q_out_stride_h = 639);
    RULE(op, "q_out_stride_t below num_heads * 640", "q_out_stride_t", f->qra.q_out_stride_t = NH * 640 - 1);
    RULE(op, "q_out_stride_t below num_heads * q_out_stride_h", "q_out_stride_t",
         f->qra.q_out_stride_h = 700; f->qra.q_out_stride_t = NH * 640);
}

/* ------------------------------------------------------------------------------------------ */
/* Context and memory helpers                                                                  */

static void ctx_rules(mla_ctx *ctx) {
    h_begin("ctx_create: out is NULL");
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = MLA_BACKEND_CPU;
    EXPECT(mla_ctx_create(&p, NULL) == MLA_ERR_INVALID_ARG, "accepted");
    h_end();

    h_begin("ctx_create: num_threads = -1");
    mla_ctx *c = (mla_ctx *)&p; /* any non-NULL value: must be reset to NULL */
    p.num_threads = -1;
    EXPECT(mla_ctx_create(&p, &c) == MLA_ERR_INVALID_ARG, "accepted");
    EXPECT(c == NULL, "*out not cleared");
    h_end();

    h_begin("ctx_create: unknown backend 7");
    p = mla_ctx_params_default();
    p.backend = (mla_backend)7;
    c = (mla_ctx *)&p;
    EXPECT(mla_ctx_create(&p, &c) == MLA_ERR_INVALID_ARG, "accepted");
    EXPECT(c == NULL, "*out not cleared");
    h_end();

    h_begin("malloc: ptr is NULL");
    EXPECT(mla_malloc(ctx, 64, NULL) == MLA_ERR_INVALID_ARG, "accepted");
    EXPECT(names_arg(mla_ctx_last_error(ctx), "ptr"), "message: %s", mla_ctx_last_error(ctx));
    EXPECT(mla_malloc(NULL, 64, (void **)&c) == MLA_ERR_INVALID_ARG, "NULL ctx accepted");
    h_end();

    h_begin("memcpy and memset: NULL pointers refused, zero bytes accepted");
    char buf[8] = "abcdefg";
    EXPECT(mla_memcpy_to_backend(ctx, NULL, buf, 4) == MLA_ERR_INVALID_ARG, "to_backend dst NULL accepted");
    EXPECT(mla_memcpy_to_backend(ctx, buf, NULL, 4) == MLA_ERR_INVALID_ARG, "to_backend src NULL accepted");
    EXPECT(mla_memcpy_to_host(ctx, NULL, buf, 4) == MLA_ERR_INVALID_ARG, "to_host dst NULL accepted");
    EXPECT(mla_memset(ctx, NULL, 0, 4) == MLA_ERR_INVALID_ARG, "memset NULL accepted");
    EXPECT(mla_memset(NULL, buf, 0, 4) == MLA_ERR_INVALID_ARG, "memset NULL ctx accepted");
    EXPECT(mla_memcpy_to_host(ctx, NULL, NULL, 0) == MLA_OK, "zero bytes refused");
    EXPECT(strcmp(buf, "abcdefg") == 0, "buffer changed");
    EXPECT(mla_synchronize(NULL) == MLA_ERR_INVALID_ARG, "synchronize NULL ctx accepted");
    h_end();

    h_begin("workspace sizes: NULL ctx or args give 0");
    EXPECT(mla_decode_workspace_size(NULL, NULL) == 0 && mla_decode_workspace_size(ctx, NULL) == 0, "decode");
    EXPECT(mla_sparse_workspace_size(NULL, NULL) == 0 && mla_sparse_workspace_size(ctx, NULL) == 0, "sparse");
    EXPECT(mla_prefill_workspace_size(NULL, NULL) == 0 && mla_prefill_workspace_size(ctx, NULL) == 0, "prefill");
    EXPECT(mla_prefill_fp8_fused_workspace_size(NULL, NULL) == 0 && mla_prefill_fp8_fused_workspace_size(ctx, NULL) == 0,
           "fused");
    EXPECT(mla_indexer_workspace_size(NULL, NULL) == 0 && mla_indexer_workspace_size(ctx, NULL) == 0, "indexer");
    h_end();

    h_begin("last error: cleared by the next successful call");
    {
        fx f;
        fx_begin(&f);
        store_init(&f);
        f.store.rows = NULL;
        mla_status rc = store_call(ctx, &f);
        EXPECT(rc == MLA_ERR_INVALID_ARG && mla_ctx_last_error(ctx)[0] != 0, "invalid call left no message");
        f.store.rows = (const uint16_t *)in_buf(&f, NT * 576 * 2);
        rc = store_call(ctx, &f);
        EXPECT_OK(ctx, rc);
        EXPECT(mla_ctx_last_error(ctx)[0] == 0, "message kept after success: %s", mla_ctx_last_error(ctx));
        fx_end(&f);
    }
    h_end();
}

int main(void) {
    mla_ctx *ctx = h_cpu_ctx();
    const opdesc *ops[] = {&OP_DECODE, &OP_SPARSE, &OP_I2S, &OP_PREFILL, &OP_FUSED, &OP_ROPE, &OP_RMSNORM,
                           &OP_Q1X128, &OP_GEMM, &OP_INDEXER, &OP_ISTORE, &OP_STORE, &OP_QRA};
    void (*specific[])(mla_ctx *) = {decode_rules, sparse_rules, i2s_rules, prefill_rules, fused_rules,
                                     rope_rules, rmsnorm_rules, q1x128_rules, gemm_rules, indexer_rules,
                                     istore_rules, store_rules, qra_rules};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        shared_rules(ctx, ops[i]);
        cache_rules(ctx, ops[i]);
        batch_rules(ctx, ops[i]);
        specific[i](ctx);
    }
    ctx_rules(ctx);
    mla_ctx_destroy(ctx);
    return h_finish();
}
