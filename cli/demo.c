/* `mla demo`: one attention-layer step of DeepSeek-V3.2 on synthetic data, through the public API.
 *
 * Three requests with cached prefixes (1888, 0, 3968 tokens) receive 160, 96, 128 new tokens
 * (chunked prefill). 16 MLA heads (V3.2's 128 under 8-way tensor parallelism), the lightning
 * indexer with 64 heads of dim 128, top-k 2048, page size 64. Stages, in data-flow order:
 *   1 indexer cache store   new tokens' index keys -> MLA_IDX_FP8 pages
 *   2 indexer top-k         FP8 scores of every new token over its visible keys, top 2048
 *   3 indices to slots      logical positions -> slot ids through the block table
 *   4 fused FP8 prefill     the dense branch: RoPE + RMSNorm of the new latent rows in place,
 *                           FP8 up-projection, causal MHA prefill
 *   5 cache store           the normed/roped new rows -> the deployed MLA_KV_FP8 cache
 *   6 sparse attention      absorbed sparse prefill over the top-k slots of the FP8 cache
 *   7 dense decode          the next token of every request over its whole FP8 cache
 * Unused cache memory holds NaN patterns (as in FlashMLA's tests): a stage that read it would
 * fail its check. Checks: on CPU, float64 recomputations (sampled rows for the attention
 * stages, exact writers); on CUDA, the CPU backend run on the same inputs. */
#include "demo.h"

#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compare.h"
#include "core/numeric.h"
#include "mla.h"
#include "topk_check.h"

/* ---- the step's shape ---- */
#define NB 3
static const int PREFIX[NB] = {1888, 0, 3968};
static const int NEWTOK[NB] = {160, 96, 128};
enum {
    HEADS = 16,        /* MLA heads */
    IDX_HEADS = 64,
    IDX_DIM = 128,
    TOPK = 2048,       /* V3.2's top-k */
    PS = 64,           /* page size */
    BT_STRIDE = 64,    /* block-table row: pages of the longest request */
    NUM_PAGES = 104,
    LSTRIDE = 4096,    /* logits row: the longest request */
    MAX_POS = 4096
};
static const float SCALE = 0.1352338f; /* V3.2's softmax scale */
static const float EPS = 1e-6f;

/* ---- host tensors, by id ---- */
enum {
    T_QOFF, T_SEQ, T_BT, T_DEC_QOFF,
    T_IDX_K, T_IDX_CACHE, T_IDX_Q, T_IDX_QS, T_TOPK, T_LOGITS, T_SLOTS,
    T_Q_MHA, T_FREQS, T_GAMMA, T_BF16_CACHE, T_WKV, T_WKV_S, T_FUSED_OUT,
    T_NEW_ROWS, T_FP8_CACHE, T_Q_ABS, T_SP_OUT, T_SP_LSE, T_Q_DEC, T_DEC_OUT, T_DEC_LSE,
    NT
};

typedef struct hbuf {
    void *p;
    size_t bytes;
} hbuf;

typedef struct demo {
    int T;                     /* new tokens */
    int32_t qoff[NB + 1], seq[NB];
    int64_t sum_seq;
    hbuf t[NT];
} demo;

static size_t tensor_bytes(const demo *d, int id) {
    size_t T = (size_t)d->T;
    switch (id) {
    case T_QOFF: case T_DEC_QOFF: return (NB + 1) * 4;
    case T_SEQ: return NB * 4;
    case T_BT: return NB * BT_STRIDE * 4;
    case T_IDX_K: return T * IDX_DIM * 2;
    case T_IDX_CACHE: return (size_t)NUM_PAGES * PS * (IDX_DIM + 4);
    case T_IDX_Q: return T * IDX_HEADS * IDX_DIM;
    case T_IDX_QS: return T * IDX_HEADS * 4;
    case T_TOPK: case T_SLOTS: return T * TOPK * 4;
    case T_LOGITS: return T * LSTRIDE * 4;
    case T_Q_MHA: return T * HEADS * 192 * 2;
    case T_FREQS: return (size_t)MAX_POS * 64 * 4;
    case T_GAMMA: return 512 * 2;
    case T_BF16_CACHE: return (size_t)NUM_PAGES * PS * 1152;
    case T_WKV: return (size_t)HEADS * 256 * 512;
    case T_WKV_S: return (size_t)HEADS * 2 * 4 * 4;
    case T_FUSED_OUT: return T * HEADS * 128 * 2;
    case T_NEW_ROWS: return T * 576 * 2;
    case T_FP8_CACHE: return (size_t)NUM_PAGES * PS * 656;
    case T_Q_ABS: return T * HEADS * 576 * 2;
    case T_SP_OUT: return T * HEADS * 512 * 2;
    case T_SP_LSE: return T * HEADS * 4;
    case T_Q_DEC: return NB * HEADS * 576 * 2;
    case T_DEC_OUT: return NB * HEADS * 512 * 2;
    case T_DEC_LSE: return NB * HEADS * 4;
    }
    return 0;
}

static const char *tensor_name(int id) {
    static const char *const n[NT] = {"q_offsets", "seq_lens", "block_table", "decode q_offsets", "index k",
                                      "index cache", "index q", "index weights", "top-k positions", "index logits",
                                      "slots", "q (MHA)", "freqs_cis", "kv_norm_gamma", "bf16 cache", "kv_b_proj",
                                      "kv_b_proj scales", "prefill out", "new latent rows", "fp8 cache", "q (absorbed)",
                                      "sparse out", "sparse lse", "decode q", "decode out", "decode lse"};
    return id >= 0 && id < NT ? n[id] : "?";
}

/* ---- synthetic data ---- */
typedef struct rng {
    uint64_t s;
} rng;
static uint64_t rnext(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double runif(rng *r) { return (double)(rnext(r) >> 11) * (1.0 / 9007199254740992.0); }
static float rnorm(rng *r) {
    double u = runif(r) + 1e-300, v = runif(r);
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

static float bf(uint16_t x) { return bf16_to_f32_ref(x); }

/* Host writers, the SPEC section 3 rules (src/core/numeric.h): the demo's setup uses them for the
 * cached prefixes, and the CPU checks of stages 1 and 5 compare against them byte for byte. */
static void write_fp8_row(uint8_t *dst, const uint16_t *row) {
    for (int tile = 0; tile < 4; tile++) {
        float amax = 0;
        for (int i = 0; i < 128; i++) amax = fmaxf(amax, fabsf(bf(row[tile * 128 + i])));
        float s = pow2_scale_ref(amax);
        for (int i = 0; i < 128; i++) dst[tile * 128 + i] = f32_to_e4m3_ref(bf(row[tile * 128 + i]) / s);
        memcpy(dst + 512 + 4 * tile, &s, 4);
    }
    memcpy(dst + 528, row + 512, 128);
}

static void write_idx_row(uint8_t *page, int slot, const uint16_t *k) {
    float amax = 0;
    for (int i = 0; i < IDX_DIM; i++) amax = fmaxf(amax, fabsf(bf(k[i])));
    float s = pow2_scale_ref(amax);
    for (int i = 0; i < IDX_DIM; i++) page[(size_t)slot * IDX_DIM + i] = f32_to_e4m3_ref(bf(k[i]) / s);
    memcpy(page + (size_t)PS * IDX_DIM + 4 * slot, &s, 4);
}

static const int32_t *BT(const demo *d) { return (const int32_t *)d->t[T_BT].p; }
static int page_of(const demo *d, int b, int pos) { return BT(d)[b * BT_STRIDE + pos / PS]; }
static size_t latent_at(const demo *d, int b, int pos, size_t row) { return ((size_t)page_of(d, b, pos) * PS + pos % PS) * row; }

/* The request of new token t and its position. */
static int token_req(const demo *d, int t, int *pos) {
    int b = 0;
    while (b + 1 < NB && t >= d->qoff[b + 1]) b++;
    *pos = d->seq[b] - (d->qoff[b + 1] - d->qoff[b]) + (t - d->qoff[b]);
    return b;
}

/* Copies the new tokens' latent rows (576 bf16) out of the bf16 cache: the cache-store input. */
static void gather_new_rows(demo *d) {
    const uint8_t *c = (const uint8_t *)d->t[T_BF16_CACHE].p;
    uint16_t *rows = (uint16_t *)d->t[T_NEW_ROWS].p;
    for (int t = 0; t < d->T; t++) {
        int pos, b = token_req(d, t, &pos);
        memcpy(rows + (size_t)t * 576, c + latent_at(d, b, pos, 1152), 1152);
    }
}

static int demo_init(demo *d) {
    memset(d, 0, sizeof *d);
    for (int b = 0; b < NB; b++) {
        d->seq[b] = PREFIX[b] + NEWTOK[b];
        d->qoff[b + 1] = d->qoff[b] + NEWTOK[b];
        d->sum_seq += d->seq[b];
    }
    d->T = d->qoff[NB];
    for (int id = 0; id < NT; id++) {
        d->t[id].bytes = tensor_bytes(d, id);
        d->t[id].p = calloc(1, d->t[id].bytes);
        if (!d->t[id].p) return -1;
    }
    rng r = {20251121};
    memcpy(d->t[T_QOFF].p, d->qoff, sizeof d->qoff);
    memcpy(d->t[T_SEQ].p, d->seq, sizeof d->seq);
    int32_t *dq = (int32_t *)d->t[T_DEC_QOFF].p;
    for (int b = 0; b <= NB; b++) dq[b] = b;
    /* block table over a shuffled pool; entries past a request's pages are -1 (never read) */
    int perm[NUM_PAGES];
    for (int i = 0; i < NUM_PAGES; i++) perm[i] = i;
    for (int i = NUM_PAGES - 1; i > 0; i--) { int j = (int)(rnext(&r) % (uint64_t)(i + 1)), x = perm[i]; perm[i] = perm[j]; perm[j] = x; }
    int32_t *bt = (int32_t *)d->t[T_BT].p;
    int k = 0;
    for (int b = 0; b < NB; b++)
        for (int p = 0; p < BT_STRIDE; p++) bt[b * BT_STRIDE + p] = p < (d->seq[b] + PS - 1) / PS ? perm[k++] : -1;
    /* pools start as NaN garbage (0xFF: NaN as bf16, e4m3 and f32) */
    memset(d->t[T_IDX_CACHE].p, 0xff, d->t[T_IDX_CACHE].bytes);
    memset(d->t[T_BF16_CACHE].p, 0xff, d->t[T_BF16_CACHE].bytes);
    memset(d->t[T_FP8_CACHE].p, 0xff, d->t[T_FP8_CACHE].bytes);
    /* cached prefixes: latent rows (already normed and roped by earlier steps) and index keys */
    uint16_t row[576], key[IDX_DIM];
    for (int b = 0; b < NB; b++)
        for (int pos = 0; pos < PREFIX[b]; pos++) {
            for (int i = 0; i < 576; i++) row[i] = f32_to_bf16_ref(rnorm(&r));
            memcpy((uint8_t *)d->t[T_BF16_CACHE].p + latent_at(d, b, pos, 1152), row, 1152);
            write_fp8_row((uint8_t *)d->t[T_FP8_CACHE].p + latent_at(d, b, pos, 656), row);
            for (int i = 0; i < IDX_DIM; i++) key[i] = f32_to_bf16_ref(rnorm(&r));
            write_idx_row((uint8_t *)d->t[T_IDX_CACHE].p + (size_t)page_of(d, b, pos) * PS * (IDX_DIM + 4), pos % PS, key);
        }
    /* new tokens: raw kv_a output in the bf16 cache (latent not normed, rope not applied) */
    for (int t = 0; t < d->T; t++) {
        int pos, b = token_req(d, t, &pos);
        for (int i = 0; i < 576; i++) row[i] = f32_to_bf16_ref(rnorm(&r) * (i < 512 ? 3.0f : 1.0f));
        memcpy((uint8_t *)d->t[T_BF16_CACHE].p + latent_at(d, b, pos, 1152), row, 1152);
    }
    gather_new_rows(d);
    uint16_t *u16;
    u16 = (uint16_t *)d->t[T_IDX_K].p;
    for (size_t i = 0; i < d->t[T_IDX_K].bytes / 2; i++) u16[i] = f32_to_bf16_ref(rnorm(&r));
    uint8_t *u8 = (uint8_t *)d->t[T_IDX_Q].p;
    for (size_t i = 0; i < d->t[T_IDX_Q].bytes; i++) u8[i] = f32_to_e4m3_ref(rnorm(&r) * 16.0f);
    float *f = (float *)d->t[T_IDX_QS].p;
    for (size_t i = 0; i < d->t[T_IDX_QS].bytes / 4; i++) f[i] = rnorm(&r) / IDX_HEADS;
    int32_t *i32 = (int32_t *)d->t[T_TOPK].p;
    for (size_t i = 0; i < d->t[T_TOPK].bytes / 4; i++) i32[i] = -1;
    i32 = (int32_t *)d->t[T_SLOTS].p;
    for (size_t i = 0; i < d->t[T_SLOTS].bytes / 4; i++) i32[i] = -1;
    u16 = (uint16_t *)d->t[T_Q_MHA].p;
    for (size_t i = 0; i < d->t[T_Q_MHA].bytes / 2; i++) u16[i] = f32_to_bf16_ref(rnorm(&r));
    f = (float *)d->t[T_FREQS].p;
    for (int p = 0; p < MAX_POS; p++)
        for (int j = 0; j < 32; j++) {
            double th = p * pow(10000.0, -2.0 * j / 64.0);
            f[p * 64 + 2 * j] = (float)cos(th);
            f[p * 64 + 2 * j + 1] = (float)sin(th);
        }
    u16 = (uint16_t *)d->t[T_GAMMA].p;
    for (int i = 0; i < 512; i++) u16[i] = f32_to_bf16_ref(1.0f + 0.1f * rnorm(&r));
    u8 = (uint8_t *)d->t[T_WKV].p;
    for (size_t i = 0; i < d->t[T_WKV].bytes; i++) u8[i] = f32_to_e4m3_ref(rnorm(&r) * 64.0f);
    f = (float *)d->t[T_WKV_S].p;
    for (size_t i = 0; i < d->t[T_WKV_S].bytes / 4; i++) f[i] = (1.0f / 64.0f) / sqrtf(512.0f);
    u16 = (uint16_t *)d->t[T_Q_ABS].p;
    for (size_t i = 0; i < d->t[T_Q_ABS].bytes / 2; i++) u16[i] = f32_to_bf16_ref(rnorm(&r));
    u16 = (uint16_t *)d->t[T_Q_DEC].p;
    for (size_t i = 0; i < d->t[T_Q_DEC].bytes / 2; i++) u16[i] = f32_to_bf16_ref(rnorm(&r));
    return 0;
}

static void demo_free(demo *d) {
    for (int id = 0; id < NT; id++) free(d->t[id].p);
    memset(d, 0, sizeof *d);
}

/* ---- stages ---- */
#define NSTAGES 7
typedef struct stage_def {
    const char *name;
    int in[10], out[4];        /* tensor ids, -1 terminated */
} stage_def;

static const stage_def STAGES[NSTAGES] = {
    {"indexer cache store", {T_IDX_K, T_IDX_CACHE, T_QOFF, T_SEQ, T_BT, -1}, {T_IDX_CACHE, -1}},
    {"indexer top-k", {T_IDX_Q, T_IDX_QS, T_IDX_CACHE, T_QOFF, T_SEQ, T_BT, -1}, {T_TOPK, T_LOGITS, -1}},
    {"indices to slots", {T_TOPK, T_QOFF, T_SEQ, T_BT, -1}, {T_SLOTS, -1}},
    {"fused FP8 prefill (dense)", {T_Q_MHA, T_FREQS, T_GAMMA, T_BF16_CACHE, T_QOFF, T_SEQ, T_BT, T_WKV, T_WKV_S, -1},
     {T_Q_MHA, T_BF16_CACHE, T_FUSED_OUT, -1}},
    {"cache store (FP8)", {T_NEW_ROWS, T_FP8_CACHE, T_QOFF, T_SEQ, T_BT, -1}, {T_FP8_CACHE, -1}},
    {"sparse attention (top-k)", {T_Q_ABS, T_FP8_CACHE, T_SLOTS, -1}, {T_SP_OUT, T_SP_LSE, -1}},
    {"dense decode (next token)", {T_Q_DEC, T_FP8_CACHE, T_DEC_QOFF, T_SEQ, T_BT, -1}, {T_DEC_OUT, T_DEC_LSE, -1}},
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static mla_paged_cache pool(void *base, mla_format f) {
    mla_paged_cache c = {0};
    c.base = base;
    c.format = f;
    c.dim = f == MLA_IDX_FP8 ? IDX_DIM : 0;
    c.page_size = PS;
    c.num_pages = NUM_PAGES;
    c.page_stride = (int64_t)mla_cache_page_bytes(f, PS, c.dim);
    return c;
}

typedef struct stage_call {
    mla_ctx *ctx;
    void **dev;
    void *ws;
    size_t ws_bytes;
} stage_call;

static mla_status workspace(stage_call *s, size_t bytes) {
    s->ws_bytes = bytes;
    return bytes ? mla_malloc(s->ctx, bytes, &s->ws) : MLA_OK;
}

/* Builds the stage's arguments from the backend copies in dev, then runs and times the op. */
static mla_status stage_op(const demo *d, int stage, mla_ctx *ctx, void **dev, double *ms) {
    stage_call s = {ctx, dev, NULL, 0};
    mla_batch batch = {NB, (const int32_t *)dev[T_QOFF], (const int32_t *)dev[T_SEQ], (const int32_t *)dev[T_BT], BT_STRIDE};
    mla_status rc = MLA_OK;
    double t0 = 0;
    switch (stage) {
    case 0: {
        mla_indexer_cache_store_args a = {0};
        a.num_tokens = d->T;
        a.k = (const uint16_t *)dev[T_IDX_K];
        a.cache = pool(dev[T_IDX_CACHE], MLA_IDX_FP8);
        a.batch = batch;
        t0 = now_s();
        rc = mla_indexer_cache_store(ctx, &a);
        break;
    }
    case 1: {
        mla_indexer_args a = {0};
        a.num_tokens = d->T;
        a.num_heads = IDX_HEADS;
        a.dim = IDX_DIM;
        a.q = (const uint8_t *)dev[T_IDX_Q];
        a.q_s = (const float *)dev[T_IDX_QS];
        a.cache = pool(dev[T_IDX_CACHE], MLA_IDX_FP8);
        a.batch = batch;
        a.causal = 1;
        a.top_k = TOPK;
        a.indices = (int32_t *)dev[T_TOPK];
        a.logits = (float *)dev[T_LOGITS];
        a.logits_stride = LSTRIDE;
        a.max_seq_len = LSTRIDE;
        if ((rc = workspace(&s, mla_indexer_workspace_size(ctx, &a))) != MLA_OK) break;
        a.workspace = s.ws;
        a.workspace_bytes = s.ws_bytes;
        t0 = now_s();
        rc = mla_indexer(ctx, &a);
        break;
    }
    case 2: {
        mla_indices_to_slots_args a = {0};
        a.num_tokens = d->T;
        a.topk = TOPK;
        a.batch = batch;
        a.page_size = PS;
        a.num_pages = NUM_PAGES;
        a.indices = (const int32_t *)dev[T_TOPK];
        a.slots = (int32_t *)dev[T_SLOTS];
        t0 = now_s();
        rc = mla_indices_to_slots(ctx, &a);
        break;
    }
    case 3: {
        mla_prefill_fp8_fused_args a = {0};
        a.num_tokens = d->T;
        a.num_heads = HEADS;
        a.q = (uint16_t *)dev[T_Q_MHA];
        a.freqs_cis = (const float *)dev[T_FREQS];
        a.max_pos = MAX_POS;
        a.kv_norm_gamma = (const uint16_t *)dev[T_GAMMA];
        a.cache = pool(dev[T_BF16_CACHE], MLA_KV_BF16);
        a.batch = batch;
        a.kv_b_proj = (const uint8_t *)dev[T_WKV];
        a.kv_b_proj_scale = (const float *)dev[T_WKV_S];
        a.scale = SCALE;
        a.eps = EPS;
        a.out = (uint16_t *)dev[T_FUSED_OUT];
        a.max_kv_total = d->sum_seq;
        if ((rc = workspace(&s, mla_prefill_fp8_fused_workspace_size(ctx, &a))) != MLA_OK) break;
        a.workspace = s.ws;
        a.workspace_bytes = s.ws_bytes;
        t0 = now_s();
        rc = mla_prefill_fp8_fused(ctx, &a);
        break;
    }
    case 4: {
        mla_cache_store_args a = {0};
        a.num_tokens = d->T;
        a.rows = (const uint16_t *)dev[T_NEW_ROWS];
        a.cache = pool(dev[T_FP8_CACHE], MLA_KV_FP8);
        a.batch = batch;
        t0 = now_s();
        rc = mla_cache_store(ctx, &a);
        break;
    }
    case 5: {
        mla_sparse_args a = {0};
        a.num_tokens = d->T;
        a.num_heads = HEADS;
        a.q = (const uint16_t *)dev[T_Q_ABS];
        a.cache = pool(dev[T_FP8_CACHE], MLA_KV_FP8);
        a.indices = (const int32_t *)dev[T_SLOTS];
        a.topk = TOPK;
        a.scale = SCALE;
        a.out = (uint16_t *)dev[T_SP_OUT];
        a.lse = (float *)dev[T_SP_LSE];
        if ((rc = workspace(&s, mla_sparse_workspace_size(ctx, &a))) != MLA_OK) break;
        a.workspace = s.ws;
        a.workspace_bytes = s.ws_bytes;
        t0 = now_s();
        rc = mla_sparse(ctx, &a);
        break;
    }
    case 6: {
        mla_decode_args a = {0};
        a.num_tokens = NB;
        a.num_heads = HEADS;
        a.q = dev[T_Q_DEC];
        a.cache = pool(dev[T_FP8_CACHE], MLA_KV_FP8);
        a.batch = batch;
        a.batch.q_offsets = (const int32_t *)dev[T_DEC_QOFF];
        a.causal = 1;
        a.scale = SCALE;
        a.out = (uint16_t *)dev[T_DEC_OUT];
        a.lse = (float *)dev[T_DEC_LSE];
        if ((rc = workspace(&s, mla_decode_workspace_size(ctx, &a))) != MLA_OK) break;
        a.workspace = s.ws;
        a.workspace_bytes = s.ws_bytes;
        t0 = now_s();
        rc = mla_decode(ctx, &a);
        break;
    }
    }
    if (rc == MLA_OK) rc = mla_synchronize(ctx);
    *ms = (now_s() - t0) * 1e3;
    if (s.ws) mla_free(ctx, s.ws);
    return rc;
}

static int in_list(const int *v, int id) {
    for (int i = 0; v[i] >= 0; i++)
        if (v[i] == id) return 1;
    return 0;
}

/* Runs stage on ctx with d's tensors as inputs; the outputs land in fresh host buffers out[id]. */
static mla_status stage_exec(const demo *d, int stage, mla_ctx *ctx, hbuf *out, double *ms, char *err, size_t err_n) {
    const stage_def *sd = &STAGES[stage];
    void *dev[NT] = {0};
    mla_status rc = MLA_OK;
    for (int i = 0; sd->in[i] >= 0 && rc == MLA_OK; i++) {
        int id = sd->in[i];
        rc = mla_malloc(ctx, d->t[id].bytes, &dev[id]);
        if (rc == MLA_OK) rc = mla_memcpy_to_backend(ctx, dev[id], d->t[id].p, d->t[id].bytes);
    }
    for (int i = 0; sd->out[i] >= 0 && rc == MLA_OK; i++) {
        int id = sd->out[i];
        if (in_list(sd->in, id)) continue;
        rc = mla_malloc(ctx, d->t[id].bytes, &dev[id]);
        if (rc == MLA_OK) rc = mla_memset(ctx, dev[id], 0xff, d->t[id].bytes); /* NaN / 0xffffffff: unwritten shows */
    }
    if (rc == MLA_OK) rc = stage_op(d, stage, ctx, dev, ms);
    if (rc != MLA_OK) snprintf(err, err_n, "%s: %s", mla_status_str(rc), mla_ctx_last_error(ctx));
    for (int i = 0; sd->out[i] >= 0 && rc == MLA_OK; i++) {
        int id = sd->out[i];
        out[id].bytes = d->t[id].bytes;
        out[id].p = malloc(out[id].bytes);
        if (!out[id].p) { rc = MLA_ERR_OUT_OF_MEMORY; snprintf(err, err_n, "out of host memory"); break; }
        rc = mla_memcpy_to_host(ctx, out[id].p, dev[id], out[id].bytes);
        if (rc != MLA_OK) snprintf(err, err_n, "%s: %s", mla_status_str(rc), mla_ctx_last_error(ctx));
    }
    for (int id = 0; id < NT; id++) mla_free(ctx, dev[id]);
    return rc;
}

static void free_outs(hbuf *o) {
    for (int id = 0; id < NT; id++) { free(o[id].p); o[id].p = NULL; }
}

/* ---- checks ---- */
typedef struct verdict {
    int ok;
    char what[240];
} verdict;

static void say(verdict *v, int ok, const char *fmt, ...) {
    if (!ok) v->ok = 0;
    size_t k = strlen(v->what);
    if (k >= sizeof v->what - 2) return;
    if (k) { v->what[k++] = ';'; v->what[k++] = ' '; v->what[k] = 0; }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->what + k, sizeof v->what - k, fmt, ap);
    va_end(ap);
}

static void bf16_to_f32_array(const uint16_t *s, float *d, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = bf(s[i]);
}

/* Tolerance comparison of bf16 (is_bf16) or f32 tensors, a against r. */
static void tol_check(verdict *v, const char *name, const void *a, const void *r, size_t n, int is_bf16, mla_tol tol) {
    float *fa = (float *)malloc((n ? n : 1) * 4), *fr = (float *)malloc((n ? n : 1) * 4);
    if (!fa || !fr) { free(fa); free(fr); say(v, 0, "%s: out of memory", name); return; }
    if (is_bf16) { bf16_to_f32_array((const uint16_t *)a, fa, n); bf16_to_f32_array((const uint16_t *)r, fr, n); }
    else { memcpy(fa, a, n * 4); memcpy(fr, r, n * 4); }
    mla_cmp c;
    int ok = mla_compare_f32(fa, fr, (int64_t)n, tol, &c);
    char s[240];
    mla_cmp_str(&c, s, sizeof s);
    say(v, ok, "%s %s", name, s);
    free(fa);
    free(fr);
}

static void exact_check(verdict *v, const char *name, const void *a, const void *r, size_t bytes) {
    size_t nbad = 0, first = 0;
    for (size_t i = 0; i < bytes; i++)
        if (((const uint8_t *)a)[i] != ((const uint8_t *)r)[i]) { if (!nbad) first = i; nbad++; }
    if (nbad) say(v, 0, "%s: %zu of %zu bytes differ (first at byte %zu)", name, nbad, bytes, first);
    else say(v, 1, "%s exact (%zu bytes)", name, bytes);
}

/* Top-k rows against reference scores (rows given by list, or every row when list is NULL). */
static void topk_check(verdict *v, const int32_t *got, const float *scores, const int *rows, int nrows) {
    int bad = 0;
    char msg[200] = "", first[220] = "";
    for (int i = 0; i < nrows; i++) {
        int t = rows ? rows[i] : i;
        if (!mla_topk_row_check(got + (size_t)t * TOPK, TOPK, scores + (size_t)i * LSTRIDE, LSTRIDE, msg, sizeof msg)) {
            if (!bad) snprintf(first, sizeof first, " (row %d: %s)", t, msg);
            bad++;
        }
    }
    say(v, bad == 0, "top-k %d/%d rows ok%s", nrows - bad, nrows, first);
}

/* Logits rows: identical -inf positions, |a - r| <= 1e-4 * row max |r|. */
static void logits_check(verdict *v, const float *got, const float *ref, const int *rows, int nrows) {
    int bad = 0;
    double worst = 0;
    for (int i = 0; i < nrows; i++) {
        int t = rows ? rows[i] : i;
        const float *a = got + (size_t)t * LSTRIDE, *r = ref + (size_t)i * LSTRIDE;
        double rmax = 0;
        for (int j = 0; j < LSTRIDE; j++)
            if (isfinite(r[j])) rmax = fmax(rmax, fabs(r[j]));
        for (int j = 0; j < LSTRIDE; j++) {
            if (!isfinite(r[j]) || !isfinite(a[j])) { if (!(a[j] == r[j])) bad++; continue; }
            double e = fabs((double)a[j] - r[j]);
            if (rmax > 0) worst = fmax(worst, e / rmax);
            if (e > 1e-4 * rmax) bad++;
        }
    }
    say(v, bad == 0, "logits %s (max err %.1e of row max)", bad ? "BAD" : "ok", worst);
}

/* A handful of new tokens: first, middle and last of each request. */
static int sample_tokens(const demo *d, int *rows) {
    int n = 0;
    for (int b = 0; b < NB; b++) {
        int lo = d->qoff[b], hi = d->qoff[b + 1];
        if (hi <= lo) continue;
        rows[n++] = lo;
        if (hi - lo > 2) rows[n++] = (lo + hi) / 2;
        if (hi - lo > 1) rows[n++] = hi - 1;
    }
    return n;
}
static const int SAMPLE_HEADS[4] = {0, 5, 10, 15};

/* f64 indexer scores of token t over its request's positions (-inf where invisible). */
static void ref_scores(const demo *d, const uint8_t *idx_cache, int t, float *out) {
    int pos, b = token_req(d, t, &pos);
    const uint8_t *q = (const uint8_t *)d->t[T_IDX_Q].p + (size_t)t * IDX_HEADS * IDX_DIM;
    const float *w = (const float *)d->t[T_IDX_QS].p + (size_t)t * IDX_HEADS;
    for (int j = 0; j < LSTRIDE; j++) {
        if (j > pos || j >= d->seq[b]) { out[j] = -INFINITY; continue; }
        const uint8_t *page = idx_cache + (size_t)page_of(d, b, j) * PS * (IDX_DIM + 4);
        const uint8_t *k = page + (size_t)(j % PS) * IDX_DIM;
        float ks;
        memcpy(&ks, page + (size_t)PS * IDX_DIM + 4 * (j % PS), 4);
        double s = 0;
        for (int h = 0; h < IDX_HEADS; h++) {
            double dot = 0;
            for (int i = 0; i < IDX_DIM; i++) dot += (double)e4m3_to_f32_ref(q[h * IDX_DIM + i]) * e4m3_to_f32_ref(k[i]);
            s += w[h] * (dot > 0 ? dot : 0);
        }
        out[j] = (float)(s * ks);
    }
}

/* Dequantized MLA_KV_FP8 row (576 values). */
static void fp8_row(const uint8_t *r, double *out) {
    float sc[4];
    memcpy(sc, r + 512, 16);
    for (int i = 0; i < 512; i++) out[i] = (double)e4m3_to_f32_ref(r[i]) * sc[i / 128];
    for (int i = 0; i < 64; i++) { uint16_t x; memcpy(&x, r + 528 + 2 * i, 2); out[512 + i] = bf(x); }
}

/* f64 attention of one query row over n keys (576 each): out[512], lse (+inf without keys). */
static void ref_attention(const uint16_t *q, const double *keys, int n, double *out, double *lse) {
    double *s = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1)), m = -INFINITY;
    for (int j = 0; j < n; j++) {
        double dot = 0;
        for (int i = 0; i < 576; i++) dot += (double)bf(q[i]) * keys[(size_t)j * 576 + i];
        s[j] = SCALE * dot;
        m = fmax(m, s[j]);
    }
    for (int i = 0; i < 512; i++) out[i] = 0;
    if (n == 0) { *lse = INFINITY; free(s); return; }
    double z = 0;
    for (int j = 0; j < n; j++) z += exp(s[j] - m);
    for (int j = 0; j < n; j++) {
        double p = exp(s[j] - m) / z;
        for (int i = 0; i < 512; i++) out[i] += p * keys[(size_t)j * 576 + i];
    }
    *lse = m + log(z);
    free(s);
}

/* Sampled attention rows against f64: rows = (token, head) pairs, keys gathered per token. */
static void attention_check(verdict *v, const demo *d, int stage, const hbuf *o) {
    int sparse = stage == 5;
    const uint8_t *cache = (const uint8_t *)d->t[T_FP8_CACHE].p;
    int toks[3 * NB], nt = 0;
    if (sparse) nt = sample_tokens(d, toks);
    else for (int b = 0; b < NB; b++) toks[nt++] = b;
    size_t nrows = (size_t)nt * 4;
    float *ga = (float *)malloc(nrows * 512 * 4), *gl = (float *)malloc(nrows * 4);
    double *ra = (double *)malloc(nrows * 512 * 8), *rl = (double *)malloc(nrows * 8);
    double *keys = (double *)malloc(sizeof(double) * 576 * (size_t)(TOPK > LSTRIDE ? TOPK : LSTRIDE));
    if (!ga || !gl || !ra || !rl || !keys) { say(v, 0, "out of memory"); goto done; }
    for (int i = 0; i < nt; i++) {
        int t = toks[i], n = 0;
        if (sparse) {
            const int32_t *sl = (const int32_t *)d->t[T_SLOTS].p + (size_t)t * TOPK;
            for (int j = 0; j < TOPK; j++)
                if (sl[j] >= 0 && sl[j] < NUM_PAGES * PS) fp8_row(cache + (size_t)sl[j] * 656, keys + (size_t)576 * n++);
        } else {
            for (int j = 0; j < d->seq[t]; j++) fp8_row(cache + latent_at(d, t, j, 656), keys + (size_t)576 * n++);
        }
        for (int hh = 0; hh < 4; hh++) {
            int h = SAMPLE_HEADS[hh];
            size_t row = (size_t)i * 4 + hh, qi = ((size_t)t * HEADS + h);
            const uint16_t *q = (const uint16_t *)d->t[sparse ? T_Q_ABS : T_Q_DEC].p + qi * 576;
            ref_attention(q, keys, n, ra + row * 512, rl + row);
            const uint16_t *go = (const uint16_t *)o[sparse ? T_SP_OUT : T_DEC_OUT].p + qi * 512;
            bf16_to_f32_array(go, ga + row * 512, 512);
            gl[row] = ((const float *)o[sparse ? T_SP_LSE : T_DEC_LSE].p)[qi];
        }
    }
    {
        mla_cmp c;
        char s[240];
        int ok = mla_compare(ga, ra, (int64_t)nrows * 512, MLA_TOL_OUT, &c);
        mla_cmp_str(&c, s, sizeof s);
        say(v, ok, "%zu rows vs f64: out %s", nrows, s);
        ok = mla_compare(gl, rl, (int64_t)nrows, MLA_TOL_LSE, &c);
        say(v, ok, "lse max_abs %.1e", c.max_abs);
    }
done:
    free(ga); free(gl); free(ra); free(rl); free(keys);
}

/* One interleaved RoPE pair, computed exactly (f64) from the bf16 input and f32 (cos, sin),
 * rounded to bf16 once. */
static void rope_pair(uint16_t *dst, const uint16_t *src, const float *cs) {
    double a = bf(src[0]), c = bf(src[1]);
    uint16_t x = f32_to_bf16_ref((float)(a * cs[0] - c * cs[1])), y = f32_to_bf16_ref((float)(a * cs[1] + c * cs[0]));
    dst[0] = x;
    dst[1] = y;
}

/* The fused stage's first two steps, recomputed: RoPE of q and of the new rows, RMSNorm. */
static void fused_check(verdict *v, const demo *d, const hbuf *o) {
    const uint16_t *q0 = (const uint16_t *)d->t[T_Q_MHA].p, *q1 = (const uint16_t *)o[T_Q_MHA].p;
    const float *fc = (const float *)d->t[T_FREQS].p;
    const uint16_t *gamma = (const uint16_t *)d->t[T_GAMMA].p;
    size_t nq = (size_t)d->T * HEADS * 192, nr = (size_t)d->T * 576;
    uint16_t *qref = (uint16_t *)malloc(nq * 2), *rows_ref = (uint16_t *)malloc(nr * 2), *rows_got = (uint16_t *)malloc(nr * 2);
    if (!qref || !rows_ref || !rows_got) { say(v, 0, "out of memory"); free(qref); free(rows_ref); free(rows_got); return; }
    memcpy(qref, q0, nq * 2);
    for (int t = 0; t < d->T; t++) {
        int pos, b = token_req(d, t, &pos);
        const float *f = fc + (size_t)pos * 64;
        for (int h = 0; h < HEADS; h++) {
            uint16_t *x = qref + ((size_t)t * HEADS + h) * 192 + 128;
            for (int k = 0; k < 32; k++) rope_pair(x + 2 * k, x + 2 * k, f + 2 * k);
        }
        const uint16_t *raw = (const uint16_t *)((const uint8_t *)d->t[T_BF16_CACHE].p + latent_at(d, b, pos, 1152));
        uint16_t *y = rows_ref + (size_t)t * 576;
        float ss = 0;
        for (int i = 0; i < 512; i++) ss += bf(raw[i]) * bf(raw[i]);
        float r = 1.0f / sqrtf(ss / 512 + EPS);
        for (int i = 0; i < 512; i++) y[i] = f32_to_bf16_ref(bf(f32_to_bf16_ref(bf(raw[i]) * r)) * bf(gamma[i]));
        for (int k = 0; k < 32; k++) rope_pair(y + 512 + 2 * k, raw + 512 + 2 * k, f + 2 * k);
        memcpy(rows_got + (size_t)t * 576, (const uint8_t *)o[T_BF16_CACHE].p + latent_at(d, b, pos, 1152), 1152);
    }
    tol_check(v, "q", q1, qref, nq, 1, MLA_TOL_OUT);
    tol_check(v, "new rows", rows_got, rows_ref, nr, 1, MLA_TOL_OUT);
    const uint16_t *out = (const uint16_t *)o[T_FUSED_OUT].p;
    size_t nonfinite = 0, n = (size_t)d->T * HEADS * 128;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(bf(out[i]))) nonfinite++;
    say(v, nonfinite == 0, "out %s (attention not recomputed)", nonfinite ? "has NaN/inf" : "finite");
    free(qref);
    free(rows_ref);
    free(rows_got);
}

/* CPU checks: float64 or exact recomputations from the stage's inputs (d) and outputs (o). */
static verdict check_f64(const demo *d, int stage, const hbuf *o) {
    verdict v = {1, ""};
    switch (stage) {
    case 0:
    case 4: {
        int id = stage == 0 ? T_IDX_CACHE : T_FP8_CACHE;
        uint8_t *want = (uint8_t *)malloc(d->t[id].bytes);
        if (!want) { say(&v, 0, "out of memory"); break; }
        memcpy(want, d->t[id].p, d->t[id].bytes);
        for (int t = 0; t < d->T; t++) {
            int pos, b = token_req(d, t, &pos);
            if (stage == 0)
                write_idx_row(want + (size_t)page_of(d, b, pos) * PS * (IDX_DIM + 4), pos % PS,
                              (const uint16_t *)d->t[T_IDX_K].p + (size_t)t * IDX_DIM);
            else
                write_fp8_row(want + latent_at(d, b, pos, 656), (const uint16_t *)d->t[T_NEW_ROWS].p + (size_t)t * 576);
        }
        exact_check(&v, "pool vs SPEC writer", o[id].p, want, d->t[id].bytes);
        free(want);
        break;
    }
    case 1: {
        int rows[3 * NB], n = sample_tokens(d, rows);
        float *sc = (float *)malloc(sizeof(float) * LSTRIDE * (size_t)n);
        if (!sc) { say(&v, 0, "out of memory"); break; }
        for (int i = 0; i < n; i++) ref_scores(d, (const uint8_t *)d->t[T_IDX_CACHE].p, rows[i], sc + (size_t)i * LSTRIDE);
        topk_check(&v, (const int32_t *)o[T_TOPK].p, sc, rows, n);
        logits_check(&v, (const float *)o[T_LOGITS].p, sc, rows, n);
        free(sc);
        break;
    }
    case 2: {
        int32_t *want = (int32_t *)malloc(d->t[T_SLOTS].bytes);
        if (!want) { say(&v, 0, "out of memory"); break; }
        const int32_t *in = (const int32_t *)d->t[T_TOPK].p;
        for (int t = 0; t < d->T; t++) {
            int pos, b = token_req(d, t, &pos);
            for (int j = 0; j < TOPK; j++) {
                int32_t p = in[(size_t)t * TOPK + j];
                want[(size_t)t * TOPK + j] = p >= 0 && p < d->seq[b] ? page_of(d, b, p) * PS + p % PS : -1;
            }
        }
        exact_check(&v, "slots", o[T_SLOTS].p, want, d->t[T_SLOTS].bytes);
        free(want);
        break;
    }
    case 3: fused_check(&v, d, o); break;
    case 5:
    case 6: attention_check(&v, d, stage, o); break;
    }
    return v;
}

/* CUDA checks: every output against the CPU backend's on the same inputs. */
static verdict check_vs_cpu(const demo *d, int stage, const hbuf *o, mla_ctx *cpu) {
    verdict v = {1, ""};
    hbuf ref[NT];
    memset(ref, 0, sizeof ref);
    double ms;
    char err[400];
    mla_status rc = stage_exec(d, stage, cpu, ref, &ms, err, sizeof err);
    if (rc != MLA_OK) {
        say(&v, rc == MLA_ERR_UNSUPPORTED, "no CPU reference (%s)", err);
        if (rc == MLA_ERR_UNSUPPORTED) snprintf(v.what, sizeof v.what, "unchecked: CPU backend lacks it");
        free_outs(ref);
        return v;
    }
    const stage_def *sd = &STAGES[stage];
    for (int i = 0; sd->out[i] >= 0; i++) {
        int id = sd->out[i];
        const char *nm = tensor_name(id);
        switch (id) {
        case T_IDX_CACHE: case T_SLOTS: case T_FP8_CACHE: exact_check(&v, nm, o[id].p, ref[id].p, o[id].bytes); break;
        case T_TOPK: topk_check(&v, (const int32_t *)o[id].p, (const float *)ref[T_LOGITS].p, NULL, d->T); break;
        case T_LOGITS: logits_check(&v, (const float *)o[id].p, (const float *)ref[id].p, NULL, d->T); break;
        case T_FUSED_OUT: tol_check(&v, nm, o[id].p, ref[id].p, o[id].bytes / 2, 1, MLA_TOL_OUT_FUSED); break;
        case T_Q_MHA: case T_BF16_CACHE: case T_SP_OUT: case T_DEC_OUT:
            tol_check(&v, nm, o[id].p, ref[id].p, o[id].bytes / 2, 1, MLA_TOL_OUT);
            break;
        case T_SP_LSE: case T_DEC_LSE: tol_check(&v, nm, o[id].p, ref[id].p, o[id].bytes / 4, 0, MLA_TOL_LSE); break;
        }
    }
    free_outs(ref);
    return v;
}

/* FLOPs of a stage (0: a data-movement stage). */
static double stage_flops(const demo *d, int stage) {
    double pairs = 0;
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < NEWTOK[b]; i++) pairs += PREFIX[b] + i + 1;
    switch (stage) {
    case 1: return 2.0 * IDX_HEADS * IDX_DIM * pairs;
    case 3: return 2.0 * HEADS * (192 + 128) * pairs + 2.0 * (double)d->sum_seq * 512 * HEADS * 256;
    case 5: {
        double used = 0;
        const int32_t *s = (const int32_t *)d->t[T_SLOTS].p;
        for (size_t i = 0; i < (size_t)d->T * TOPK; i++) used += s[i] >= 0 && s[i] < NUM_PAGES * PS;
        return 2.0 * HEADS * (576 + 512) * used;
    }
    case 6: return 2.0 * HEADS * (576 + 512) * (double)d->sum_seq;
    }
    return 0;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: mla demo [--backend cpu|cuda|auto]\n"
            "Runs one DeepSeek-V3.2 attention-layer step on synthetic data: indexer cache store, indexer\n"
            "top-k, indices to slots, the fused dense FP8 prefill, FP8 cache store, sparse attention and\n"
            "dense decode. Each stage is timed and checked (CPU: float64 recomputation; CUDA: the CPU\n"
            "backend). Exit status 1 when a stage is unsupported, fails or does not check out.\n");
}

int mla_demo_command(int argc, char **argv) {
    mla_backend want = MLA_BACKEND_AUTO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "cpu")) want = MLA_BACKEND_CPU;
            else if (!strcmp(v, "cuda")) want = MLA_BACKEND_CUDA;
            else if (!strcmp(v, "auto")) want = MLA_BACKEND_AUTO;
            else { fprintf(stderr, "mla demo: --backend needs cpu, cuda or auto\n"); return 2; }
            continue;
        }
        fprintf(stderr, "mla demo: unexpected argument '%s' (see mla demo --help)\n", argv[i]);
        return 2;
    }
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = want;
    mla_ctx *ctx = NULL, *cpu = NULL;
    mla_status rc = mla_ctx_create(&p, &ctx);
    if (rc != MLA_OK) {
        fprintf(stderr, "mla demo: cannot create a %s context: %s\n", mla_backend_name(want), mla_status_str(rc));
        return 1;
    }
    int cuda = mla_ctx_backend(ctx) == MLA_BACKEND_CUDA;
    if (cuda) {
        p.backend = MLA_BACKEND_CPU;
        if (mla_ctx_create(&p, &cpu) != MLA_OK) { fprintf(stderr, "mla demo: cannot create the CPU reference context\n"); mla_ctx_destroy(ctx); return 1; }
    }
    demo *d = (demo *)calloc(1, sizeof *d);
    if (!d || demo_init(d)) { fprintf(stderr, "mla demo: out of memory\n"); if (d) demo_free(d); free(d); mla_ctx_destroy(ctx); mla_ctx_destroy(cpu); return 1; }

    char desc[300];
    if (cuda) mla_ctx_describe(ctx, desc, sizeof desc);
    else snprintf(desc, sizeof desc, "backend cpu, %d OpenMP threads", omp_get_max_threads());
    printf("libmla %s demo: one DeepSeek-V3.2 attention-layer step (%s)\n", mla_version_string(), desc);
    printf("  %d requests: cached %d/%d/%d + new %d/%d/%d tokens; %d MLA heads (128 / TP 8); indexer %d heads x %d,\n"
           "  top-k %d; page size %d; unused cache memory is NaN. Checks: %s.\n\n",
           NB, PREFIX[0], PREFIX[1], PREFIX[2], NEWTOK[0], NEWTOK[1], NEWTOK[2], HEADS, IDX_HEADS, IDX_DIM, TOPK, PS,
           cuda ? "the CPU backend on the same inputs" : "float64 / exact recomputation");
    printf("%-28s %10s %10s  %-6s %s\n", "stage", "ms", "GFLOP/s", "result", "check");
    fflush(stdout);
    int bad = 0;
    double total_ms = 0, t_start = now_s();
    for (int s = 0; s < NSTAGES; s++) {
        if (s == 4) gather_new_rows(d); /* the fused stage left the new rows normed and roped */
        hbuf out[NT];
        memset(out, 0, sizeof out);
        double ms = 0;
        char err[400] = "";
        rc = stage_exec(d, s, ctx, out, &ms, err, sizeof err);
        if (rc != MLA_OK) {
            printf("%-28s %10s %10s  %-6s %s\n", STAGES[s].name, "-", "-", rc == MLA_ERR_UNSUPPORTED ? "UNSUPP" : "ERROR", err);
            fflush(stdout);
            bad = 1;
            free_outs(out);
            continue;
        }
        verdict v = cuda ? check_vs_cpu(d, s, out, cpu) : check_f64(d, s, out);
        double fl = stage_flops(d, s);
        char gf[32];
        if (fl > 0 && ms > 0) snprintf(gf, sizeof gf, "%.1f", fl / (ms * 1e-3) * 1e-9);
        else snprintf(gf, sizeof gf, "-");
        printf("%-28s %10.3f %10s  %-6s %s\n", STAGES[s].name, ms, gf, v.ok ? "PASS" : "FAIL", v.what);
        fflush(stdout);
        if (!v.ok) bad = 1;
        total_ms += ms;
        /* commit: the next stages read these outputs */
        for (int i = 0; STAGES[s].out[i] >= 0; i++) {
            int id = STAGES[s].out[i];
            free(d->t[id].p);
            d->t[id] = out[id];
            out[id].p = NULL;
        }
        free_outs(out);
    }
    printf("\nops %.1f ms, whole run with checks %.1f s: %s\n", total_ms, now_s() - t_start,
           bad ? "some stages did not run or did not check out" : "every stage ran and checked out");
    demo_free(d);
    free(d);
    mla_ctx_destroy(cpu);
    mla_ctx_destroy(ctx);
    return bad ? 1 : 0;
}
