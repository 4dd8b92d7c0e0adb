/* `mla bench`: synthetic inputs for each operation, a timing loop, figures counted as FlashMLA
 * counts them and divided by ceilings measured in the same run.
 *
 * FLOPs and bytes (per call):
 *   decode       2 * s_q * h * (576 + 512) * sum(seqlen)       cache rows read + q + out
 *   sparse       2 * T * h * (576 + 512) * topk                T * topk rows read + q + out
 *   indexer      2 * h * D * sum over tokens of visible keys   index cache + q + q_s + indices
 *   prefill      2 * h * (192 + 128) * visible (q, k) pairs    q + k_nope + v + k_rope + out
 *   fused        prefill FLOPs + 2 * kv_total * 512 * h * 256  cache rows + weight + q (r+w) + out
 *   cache_store  -                                             bf16 rows read + cache rows written
 * Timing: CPU, clock_gettime(CLOCK_MONOTONIC) around each call, warm-up then the median of N;
 * CUDA, bench_cuda.c (events, L2 flush before every run, median of N >= 20). */
#include "bench.h"

#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe.h"

/* ------------------------------------------------------------------------------------------ */
/* Configurations                                                                               */

enum { OP_DECODE, OP_SPARSE, OP_INDEXER, OP_PREFILL, OP_FUSED, OP_CACHE_STORE, OP_PROBE };
static const char *const OP_NAMES[] = {"decode", "sparse", "indexer", "prefill", "fused", "cache_store", "probe"};
#define NUM_OPS 7

typedef struct bench_cfg {
    int op;
    int batch, heads, seqlen, sq, topk, page_size, dim, causal, varlen;
    mla_format format;         /* decode, sparse, cache_store */
    mla_dtype dtype;           /* prefill */
    mla_precision precision;   /* decode */
} bench_cfg;

typedef struct bench_row {
    char op[16], config[160];
    int state;                 /* ROW_OK, ROW_SKIP, ROW_FAIL */
    char note[400];
    double ms, flops, bytes;
    int fp8;                   /* compute ceiling: 1 = FP8 GEMM, 0 = BF16 GEMM */
} bench_row;
enum { ROW_OK, ROW_SKIP, ROW_FAIL };

static const char *fmt_short(mla_format f) {
    return f == MLA_KV_FP8 ? "fp8" : f == MLA_KV_FP8_ROPE_AWARE ? "ropeaware" : "bf16";
}

static void cfg_str(const bench_cfg *c, char *buf, size_t n) {
    switch (c->op) {
    case OP_DECODE:
        snprintf(buf, n, "%s b=%d h=%d s_q=%d seqlen=%d p=%d%s%s%s", fmt_short(c->format), c->batch, c->heads, c->sq,
                 c->seqlen, c->page_size, c->causal ? " causal" : "", c->varlen ? " varlen" : "",
                 c->precision == MLA_PRECISION_BF16_P ? " bf16p" : "");
        break;
    case OP_SPARSE:
        snprintf(buf, n, "%s b=%d h=%d s_q=%d seqlen=%d topk=%d p=%d", fmt_short(c->format), c->batch, c->heads, c->sq,
                 c->seqlen, c->topk, c->page_size);
        break;
    case OP_INDEXER:
        snprintf(buf, n, "b=%d h=%d D=%d q=%d keys=%d topk=%d p=%d%s", c->batch, c->heads, c->dim, c->sq, c->seqlen, c->topk,
                 c->page_size, c->causal ? " causal" : "");
        break;
    case OP_PREFILL:
        snprintf(buf, n, "%s b=%d h=%d q=%d kv=%d%s", c->dtype == MLA_DTYPE_E4M3 ? "fp8" : "bf16", c->batch, c->heads, c->sq,
                 c->seqlen, c->causal ? " causal" : "");
        break;
    case OP_FUSED:
        snprintf(buf, n, "b=%d h=%d q=%d kv=%d p=%d causal", c->batch, c->heads, c->sq, c->seqlen, c->page_size);
        break;
    case OP_CACHE_STORE:
        snprintf(buf, n, "%s b=%d tokens=%d seqlen=%d p=%d", fmt_short(c->format), c->batch, c->sq, c->seqlen, c->page_size);
        break;
    default: snprintf(buf, n, "-");
    }
}

/* Defaults of `mla bench OP` per backend (the first configuration of each op's --all list). */
static bench_cfg default_cfg(int op, int cuda) {
    bench_cfg c = {0};
    c.op = op;
    c.page_size = 64;
    c.format = MLA_KV_BF16;
    c.dtype = MLA_DTYPE_BF16;
    c.dim = 128;
    c.topk = 2048;
    switch (op) {
    case OP_DECODE:
        c.batch = cuda ? 128 : 16; c.heads = 128; c.sq = cuda ? 2 : 1; c.seqlen = cuda ? 8192 : 4096;
        break;
    case OP_SPARSE:
        c.batch = 1; c.heads = 128; c.sq = cuda ? 4096 : 16; c.seqlen = cuda ? 32768 : 8192;
        break;
    case OP_INDEXER:
        c.batch = 1; c.heads = 64; c.sq = cuda ? 4096 : 64; c.seqlen = 32768; c.causal = 1;
        break;
    case OP_PREFILL:
        c.batch = 1; c.heads = 128; c.sq = c.seqlen = cuda ? 8192 : 4096; c.causal = 1;
        break;
    case OP_FUSED:
        c.batch = 1; c.heads = cuda ? 128 : 16; c.sq = c.seqlen = cuda ? 8192 : 512; c.causal = 1;
        break;
    case OP_CACHE_STORE:
        c.batch = cuda ? 1 : 1; c.sq = c.seqlen = cuda ? 8192 : 1024; c.format = MLA_KV_FP8; c.heads = 1;
        break;
    }
    return c;
}

static bench_cfg mk(int op, mla_format f, int b, int h, int sq, int s, int causal, int varlen) {
    bench_cfg c = default_cfg(op, 1);
    c.format = f; c.batch = b; c.heads = h; c.sq = sq; c.seqlen = s; c.causal = causal; c.varlen = varlen;
    return c;
}

/* The named configurations of `--all` (CUDA and CPU). Returns the count. */
static int all_configs(int cuda, bench_cfg *v, int cap) {
    int n = 0;
#define ADD(cfg) do { if (n < cap) v[n++] = (cfg); } while (0)
    if (cuda) {
        static const mla_format fmts[3] = {MLA_KV_BF16, MLA_KV_FP8, MLA_KV_FP8_ROPE_AWARE};
        for (int f = 0; f < 3; f++) {
            for (int s = 4096; s <= 32768; s *= 2) ADD(mk(OP_DECODE, fmts[f], 128, 128, 2, s, 0, 0));
            ADD(mk(OP_DECODE, fmts[f], 128, 128, 2, 8192, 0, 1));
            ADD(mk(OP_DECODE, fmts[f], 128, 128, 2, 8192, 1, 0));
            ADD(mk(OP_DECODE, fmts[f], 128, 128, 1, 8192, 0, 0));
            ADD(mk(OP_DECODE, fmts[f], 128, 16, 1, 16384, 0, 0));
            ADD(mk(OP_DECODE, fmts[f], 4, 128, 1, 32768, 0, 0));
        }
        { /* MLA_PRECISION_BF16_P (FlashMLA's numerics): the compute-bound and small-batch shapes */
            bench_cfg c;
            for (int s = 4096; s <= 32768; s *= 2) { c = mk(OP_DECODE, MLA_KV_BF16, 128, 128, 2, s, 0, 0); c.precision = MLA_PRECISION_BF16_P; ADD(c); }
            c = mk(OP_DECODE, MLA_KV_BF16, 128, 128, 2, 8192, 0, 1); c.precision = MLA_PRECISION_BF16_P; ADD(c);
            c = mk(OP_DECODE, MLA_KV_BF16, 128, 128, 1, 8192, 0, 0); c.precision = MLA_PRECISION_BF16_P; ADD(c);
            c = mk(OP_DECODE, MLA_KV_BF16, 4, 128, 1, 32768, 0, 0); c.precision = MLA_PRECISION_BF16_P; ADD(c);
            c = mk(OP_DECODE, MLA_KV_FP8, 128, 128, 2, 8192, 0, 0); c.precision = MLA_PRECISION_BF16_P; ADD(c);
            c = mk(OP_DECODE, MLA_KV_FP8, 128, 128, 2, 8192, 0, 1); c.precision = MLA_PRECISION_BF16_P; ADD(c); /* (the FP8 target's varlen) */
            /* page sizes against page 64 (issue 5: within 5% from 16 keys up; 1 is SGLang's token pool) */
            static const int pss[5] = {1, 17, 33, 61, 100};
            for (int i = 0; i < 5; i++) {
                c = mk(OP_DECODE, MLA_KV_BF16, 128, 128, 2, 8192, 0, 0); c.precision = MLA_PRECISION_BF16_P; c.page_size = pss[i]; ADD(c);
            }
            c = mk(OP_DECODE, MLA_KV_BF16, 128, 16, 1, 16384, 0, 0); c.page_size = 1; ADD(c);
        }
        for (int s = 8192; s <= 131072; s *= 4) { bench_cfg c = mk(OP_SPARSE, MLA_KV_BF16, 1, 128, 4096, s, 0, 0); ADD(c); }
        { bench_cfg c = mk(OP_SPARSE, MLA_KV_FP8, 128, 128, 2, 32768, 0, 0); ADD(c); }
        for (int s = 8192; s <= 131072; s *= 4) {
            bench_cfg c = mk(OP_INDEXER, MLA_IDX_FP8, 1, 64, 4096, s, 1, 0);
            ADD(c);
        }
        for (int nn = 1; nn <= 2; nn++) { bench_cfg c = mk(OP_INDEXER, MLA_IDX_FP8, 128, 64, nn, 32768, 1, 0); ADD(c); }
        { bench_cfg c = mk(OP_PREFILL, MLA_KV_BF16, 1, 128, 8192, 8192, 1, 0); ADD(c); c.dtype = MLA_DTYPE_E4M3; ADD(c); }
        { bench_cfg c = mk(OP_FUSED, MLA_KV_BF16, 1, 128, 8192, 8192, 1, 0); ADD(c); }
        { bench_cfg c = mk(OP_CACHE_STORE, MLA_KV_FP8, 1, 1, 8192, 8192, 0, 0); ADD(c); }
    } else {
        ADD(mk(OP_DECODE, MLA_KV_BF16, 16, 128, 1, 4096, 0, 0));
        ADD(mk(OP_DECODE, MLA_KV_FP8, 16, 128, 1, 4096, 0, 0));
        ADD(mk(OP_DECODE, MLA_KV_FP8_ROPE_AWARE, 16, 128, 1, 4096, 0, 0));
        ADD(mk(OP_DECODE, MLA_KV_BF16, 16, 1, 1, 4096, 0, 0));
        ADD(mk(OP_SPARSE, MLA_KV_BF16, 1, 128, 16, 8192, 0, 0));
        ADD(mk(OP_SPARSE, MLA_KV_FP8, 1, 128, 16, 8192, 0, 0));
        ADD(mk(OP_INDEXER, MLA_IDX_FP8, 1, 64, 64, 32768, 1, 0));
        ADD(mk(OP_PREFILL, MLA_KV_BF16, 1, 128, 4096, 4096, 1, 0));
        ADD(mk(OP_FUSED, MLA_KV_BF16, 1, 16, 512, 512, 1, 0));
        ADD(mk(OP_CACHE_STORE, MLA_KV_FP8, 1, 1, 1024, 1024, 0, 0));
    }
#undef ADD
    return n;
}

/* ------------------------------------------------------------------------------------------ */
/* Synthetic data                                                                               */

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
/* approximately standard normal (Irwin-Hall of 4), cheap and bounded */
static float rnorm(rng *r) { return (float)((runif(r) + runif(r) + runif(r) + runif(r) - 2.0) * 1.7320508); }
static int rint_below(rng *r, int n) { return n > 0 ? (int)(rnext(r) % (uint64_t)n) : 0; }

/* A benchmark case: the op's arguments and the backend buffers they point to. */
#define CASE_BUFS 40
typedef struct bench_case {
    mla_ctx *ctx;
    bench_cfg cfg;
    rng r;
    void *bufs[CASE_BUFS];
    int nbufs;
    mla_status rc;             /* first setup failure */
    char err[400];
    mla_decode_args dec;
    mla_sparse_args sp;
    mla_indexer_args ix;
    mla_prefill_args pf;
    mla_prefill_fp8_fused_args fu;
    mla_cache_store_args cs;
    double flops, bytes;
    int fp8;
} bench_case;

static void case_fail(bench_case *b, mla_status rc, const char *fmt, ...) {
    if (b->rc != MLA_OK) return;
    b->rc = rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->err, sizeof b->err, fmt, ap);
    va_end(ap);
}

static void *dev_alloc(bench_case *b, size_t bytes) {
    if (b->rc != MLA_OK || bytes == 0) return NULL;
    if (b->nbufs >= CASE_BUFS) { case_fail(b, MLA_ERR_INTERNAL, "bench: too many buffers"); return NULL; }
    void *p = NULL;
    mla_status rc = mla_malloc(b->ctx, bytes, &p);
    if (rc != MLA_OK) {
        case_fail(b, rc, "allocating %.2f GiB: %s", (double)bytes / (1 << 30), mla_ctx_last_error(b->ctx));
        return NULL;
    }
    b->bufs[b->nbufs++] = p;
    return p;
}

/* A backend buffer of total bytes holding pattern repeated (pattern_bytes divides nothing in
 * particular; the tail gets a prefix of it). */
static void *upload_repeat(bench_case *b, size_t total, const void *pattern, size_t pattern_bytes) {
    void *d = dev_alloc(b, total);
    if (!d) return NULL;
    for (size_t at = 0; at < total && b->rc == MLA_OK; at += pattern_bytes) {
        size_t n = total - at < pattern_bytes ? total - at : pattern_bytes;
        mla_status rc = mla_memcpy_to_backend(b->ctx, (char *)d + at, pattern, n);
        if (rc != MLA_OK) case_fail(b, rc, "upload: %s", mla_ctx_last_error(b->ctx));
    }
    return d;
}

static void *upload(bench_case *b, const void *host, size_t bytes) { return upload_repeat(b, bytes, host, bytes ? bytes : 1); }

enum { EL_BF16, EL_E4M3 };
#define PATTERN_ELEMS ((size_t)4 << 20)

/* count random elements (bf16 ~ N(0, sd^2), or e4m3 codes of N(0, sd^2)), from a pattern of at
 * most 4 Mi elements repeated: the repetition does not change what the kernels do. */
static void *upload_random(bench_case *b, int el, size_t count, float sd) {
    if (b->rc != MLA_OK || count == 0) return NULL;
    size_t n = count < PATTERN_ELEMS ? count : PATTERN_ELEMS, es = el == EL_BF16 ? 2 : 1;
    void *h = malloc(n * es);
    if (!h) { case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); return NULL; }
    for (size_t i = 0; i < n; i++) {
        float x = rnorm(&b->r) * sd;
        if (el == EL_BF16) ((uint16_t *)h)[i] = mla_f32_to_bf16(x);
        else ((uint8_t *)h)[i] = mla_f32_to_e4m3(x);
    }
    void *d = upload_repeat(b, count * es, h, n * es);
    free(h);
    return d;
}

static void *upload_const_f32(bench_case *b, size_t count, float v) {
    if (b->rc != MLA_OK || count == 0) return NULL;
    size_t n = count < PATTERN_ELEMS ? count : PATTERN_ELEMS;
    float *h = (float *)malloc(n * 4);
    if (!h) { case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); return NULL; }
    for (size_t i = 0; i < n; i++) h[i] = v;
    void *d = upload_repeat(b, count * 4, h, n * 4);
    free(h);
    return d;
}

/* Dequantized values of the latent/index caches are ~N(0,1): e4m3 codes of N(0, 64^2) with scale
 * (or sigma) 1/64, which is a power of two as the writers make it. */
#define FP8_SD 64.0f
#define FP8_SCALE (1.0f / 64.0f)

/* MLA_BENCH_KV_SCALE=x (diagnosis): MLA_KV_FP8 rows' scales are FP8_SCALE * x (x not a power of two:
 * the scales a writer other than FlashMLA's or this library's might leave; decode's 64-row kernel then
 * runs its exact program). */
static float kv_scale_factor(void) {
    static float f = -1.f;
    if (f < 0.f) {
        const char *e = getenv("MLA_BENCH_KV_SCALE");
        f = e && atof(e) > 0.0 ? (float)atof(e) : 1.f;
    }
    return f;
}

/* Host image of npages pages of a cache in format fmt. */
static uint8_t *cache_pattern(bench_case *b, mla_format fmt, int ps, int dim, int npages, size_t page_bytes) {
    uint8_t *h = (uint8_t *)malloc((size_t)npages * page_bytes);
    if (!h) { case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); return NULL; }
    for (int p = 0; p < npages; p++) {
        uint8_t *page = h + (size_t)p * page_bytes;
        if (fmt == MLA_IDX_FP8) {
            for (int i = 0; i < ps * dim; i++) page[i] = mla_f32_to_e4m3(rnorm(&b->r) * FP8_SD);
            for (int s = 0; s < ps; s++) { float sc = FP8_SCALE; memcpy(page + (size_t)ps * dim + 4 * s, &sc, 4); }
            continue;
        }
        size_t row = mla_cache_row_bytes(fmt, 0);
        for (int s = 0; s < ps; s++) {
            uint8_t *r = page + (size_t)s * row;
            if (fmt == MLA_KV_BF16) {
                for (int i = 0; i < 576; i++) { uint16_t v = mla_f32_to_bf16(rnorm(&b->r)); memcpy(r + 2 * i, &v, 2); }
                continue;
            }
            for (int i = 0; i < 512; i++) r[i] = mla_f32_to_e4m3(rnorm(&b->r) * FP8_SD);
            int rope_at = 512;
            if (fmt == MLA_KV_FP8) {
                for (int i = 0; i < 4; i++) { float sc = FP8_SCALE * kv_scale_factor(); memcpy(r + 512 + 4 * i, &sc, 4); }
                rope_at = 528;
            }
            float rope_div = fmt == MLA_KV_FP8_ROPE_AWARE ? FP8_SCALE : 1.0f; /* rope / sigma */
            for (int i = 0; i < 64; i++) {
                uint16_t v = mla_f32_to_bf16(rnorm(&b->r) / rope_div);
                memcpy(r + rope_at + 2 * i, &v, 2);
            }
        }
    }
    return h;
}

/* The ragged batch on the host: seq_lens (varlen as FlashMLA draws them: N(mean, mean/2),
 * at least s_q), q_offsets, and a block table over a shuffled page pool. */
typedef struct host_batch {
    int B, T, pages, max_pages;
    int32_t *seq_lens, *q_offsets, *block_table;
    int64_t sum_seq;
} host_batch;

static void free_host_batch(host_batch *h) {
    free(h->seq_lens);
    free(h->q_offsets);
    free(h->block_table);
    memset(h, 0, sizeof *h);
}

static int make_batch(bench_case *b, host_batch *h, int ps) {
    const bench_cfg *c = &b->cfg;
    memset(h, 0, sizeof *h);
    h->B = c->batch;
    h->seq_lens = (int32_t *)calloc((size_t)h->B, 4);
    h->q_offsets = (int32_t *)calloc((size_t)h->B + 1, 4);
    if (!h->seq_lens || !h->q_offsets) { case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); return -1; }
    for (int i = 0; i < h->B; i++) {
        int s = c->seqlen;
        if (c->varlen) {
            double v = c->seqlen + rnorm(&b->r) * c->seqlen / 2.0;
            s = v < c->sq ? c->sq : (int)v;
        }
        if (s < c->sq) s = c->sq;
        h->seq_lens[i] = s;
        h->sum_seq += s;
        h->q_offsets[i + 1] = h->q_offsets[i] + c->sq;
        int np = (s + ps - 1) / ps;
        h->pages += np;
        if (np > h->max_pages) h->max_pages = np;
    }
    h->T = h->q_offsets[h->B];
    if (h->max_pages < 1) h->max_pages = 1;
    if (h->pages < 1) h->pages = 1;
    int *perm = (int *)malloc(sizeof(int) * (size_t)h->pages);
    h->block_table = (int32_t *)calloc((size_t)h->B * (size_t)h->max_pages, 4);
    if (!perm || !h->block_table) { free(perm); case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); return -1; }
    for (int i = 0; i < h->pages; i++) perm[i] = i;
    const char *seqp = getenv("MLA_BENCH_SEQ_PAGES"); /* diagnosis: 1 = pages in pool order (no shuffle) */
    if (!(seqp && atoi(seqp) == 1))
        for (int i = h->pages - 1; i > 0; i--) { int j = rint_below(&b->r, i + 1), t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
    /* diagnosis: MLA_BENCH_POOL_PAGES=n maps every page to one of the first n of the pool (with
       MLA_BENCH_NOFLUSH=1 the keys stay in L2 from run to run: the kernel without HBM latency) */
    const char *poolp = getenv("MLA_BENCH_POOL_PAGES");
    const int pool = poolp ? atoi(poolp) : 0;
    int k = 0;
    for (int i = 0; i < h->B; i++)
        for (int p = 0; p < (h->seq_lens[i] + ps - 1) / ps; p++) {
            const int pg = perm[k++];
            h->block_table[(size_t)i * h->max_pages + p] = pool > 0 ? pg % pool : pg;
        }
    free(perm);
    return 0;
}

static mla_batch upload_batch(bench_case *b, const host_batch *h) {
    mla_batch m = {0};
    m.num_requests = h->B;
    m.q_offsets = (const int32_t *)upload(b, h->q_offsets, (size_t)(h->B + 1) * 4);
    m.seq_lens = (const int32_t *)upload(b, h->seq_lens, (size_t)h->B * 4);
    m.block_table = (const int32_t *)upload(b, h->block_table, (size_t)h->B * (size_t)h->max_pages * 4);
    m.bt_stride = h->max_pages;
    return m;
}

/* The page pool for the batch: a random image of up to ~8 MiB of pages, repeated. */
static mla_paged_cache make_cache(bench_case *b, mla_format fmt, int ps, int dim, int pages) {
    mla_paged_cache c = {0};
    c.format = fmt;
    c.dim = dim;
    c.page_size = ps;
    c.num_pages = pages;
    size_t pb = mla_cache_page_bytes(fmt, ps, dim);
    c.page_stride = (int64_t)pb;
    int np = (int)((8u << 20) / pb);
    if (np < 1) np = 1;
    if (np > pages) np = pages;
    uint8_t *pat = cache_pattern(b, fmt, ps, dim, np, pb);
    if (!pat) return c;
    c.base = upload_repeat(b, (size_t)pages * pb, pat, (size_t)np * pb);
    free(pat);
    if (fmt == MLA_KV_FP8_ROPE_AWARE) c.sigma = (float *)upload_const_f32(b, (size_t)pages * ps, FP8_SCALE);
    return c;
}

/* Visible keys of every query token (causal: pos + 1; else seq_len), summed. */
static double visible_pairs(const host_batch *h, int causal) {
    double sum = 0;
    for (int i = 0; i < h->B; i++) {
        int ql = h->q_offsets[i + 1] - h->q_offsets[i], s = h->seq_lens[i];
        for (int t = 0; t < ql; t++) sum += causal ? (double)(s - ql + t + 1) : (double)s;
    }
    return sum;
}

/* ------------------------------------------------------------------------------------------ */
/* One setup per operation                                                                      */

static void setup_decode(bench_case *b) {
    const bench_cfg *c = &b->cfg;
    host_batch h;
    if (make_batch(b, &h, c->page_size)) return;
    mla_decode_args *a = &b->dec;
    int ra = c->format == MLA_KV_FP8_ROPE_AWARE;
    size_t row = mla_cache_row_bytes(c->format, 0);
    a->num_tokens = h.T;
    a->num_heads = c->heads;
    a->precision = c->precision;
    size_t TH = (size_t)h.T * (size_t)c->heads;
    if (ra) {
        /* packed q: per head 512 e4m3, then 64 bf16 (rope / q_sigma) */
        size_t n = TH < 8192 ? TH : 8192;
        uint8_t *pat = (uint8_t *)malloc(n * 640);
        if (!pat) { case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); free_host_batch(&h); return; }
        for (size_t i = 0; i < n; i++) {
            for (int d = 0; d < 512; d++) pat[i * 640 + d] = mla_f32_to_e4m3(rnorm(&b->r) * FP8_SD);
            for (int d = 0; d < 64; d++) {
                uint16_t v = mla_f32_to_bf16(rnorm(&b->r) / FP8_SCALE);
                memcpy(pat + i * 640 + 512 + 2 * d, &v, 2);
            }
        }
        a->q = upload_repeat(b, TH * 640, pat, n * 640);
        free(pat);
        a->q_sigma = (const float *)upload_const_f32(b, (size_t)h.T, FP8_SCALE);
    } else {
        a->q = upload_random(b, EL_BF16, TH * 576, 1.0f);
    }
    a->cache = make_cache(b, c->format, c->page_size, 0, h.pages);
    a->batch = upload_batch(b, &h);
    a->causal = c->causal;
    a->scale = 0.1352338f;
    a->out = (uint16_t *)dev_alloc(b, TH * 512 * 2);
    a->lse = (float *)dev_alloc(b, TH * 4);
    if (b->rc == MLA_OK) {
        a->workspace_bytes = mla_decode_workspace_size(b->ctx, a);
        a->workspace = dev_alloc(b, a->workspace_bytes);
    }
    b->flops = 2.0 * c->sq * c->heads * (576 + 512) * (double)h.sum_seq;
    b->bytes = (double)h.sum_seq * (double)row + (double)TH * (ra ? 640 : 1152) + (double)TH * 1024;
    b->fp8 = ra;
    free_host_batch(&h);
}

static void setup_sparse(bench_case *b) {
    const bench_cfg *c = &b->cfg;
    host_batch h;
    if (make_batch(b, &h, c->page_size)) return;
    mla_sparse_args *a = &b->sp;
    size_t row = mla_cache_row_bytes(c->format, 0), TH = (size_t)h.T * (size_t)c->heads;
    a->num_tokens = h.T;
    a->num_heads = c->heads;
    a->q = (const uint16_t *)upload_random(b, EL_BF16, TH * 576, 1.0f);
    a->cache = make_cache(b, c->format, c->page_size, 0, h.pages);
    /* indices: for each token, topk random positions of its request, as slot ids (-1 past seq_len) */
    int32_t *idx = (int32_t *)malloc((size_t)h.T * (size_t)c->topk * 4);
    if (!idx) { case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); free_host_batch(&h); return; }
    double used = 0;
    for (int r = 0; r < h.B; r++)
        for (int t = h.q_offsets[r]; t < h.q_offsets[r + 1]; t++)
            for (int j = 0; j < c->topk; j++) {
                int s = h.seq_lens[r];
                int32_t *o = idx + (size_t)t * c->topk + j;
                if (j >= s) { *o = -1; continue; }
                int pos = rint_below(&b->r, s);
                *o = h.block_table[(size_t)r * h.max_pages + pos / c->page_size] * c->page_size + pos % c->page_size;
                used += 1;
            }
    a->indices = (const int32_t *)upload(b, idx, (size_t)h.T * (size_t)c->topk * 4);
    free(idx);
    a->topk = c->topk;
    a->scale = 0.1352338f;
    a->out = (uint16_t *)dev_alloc(b, TH * 512 * 2);
    a->lse = (float *)dev_alloc(b, TH * 4);
    if (b->rc == MLA_OK) {
        a->workspace_bytes = mla_sparse_workspace_size(b->ctx, a);
        a->workspace = dev_alloc(b, a->workspace_bytes);
    }
    b->flops = 2.0 * c->heads * (576 + 512) * used;
    b->bytes = used * (double)row + (double)TH * 1152 + (double)TH * 1024;
    free_host_batch(&h);
}

static void setup_indexer(bench_case *b) {
    const bench_cfg *c = &b->cfg;
    host_batch h;
    if (make_batch(b, &h, c->page_size)) return;
    mla_indexer_args *a = &b->ix;
    size_t TH = (size_t)h.T * (size_t)c->heads;
    a->num_tokens = h.T;
    a->num_heads = c->heads;
    a->dim = c->dim;
    a->q = (const uint8_t *)upload_random(b, EL_E4M3, TH * (size_t)c->dim, FP8_SD);
    a->q_s = (const float *)upload_const_f32(b, TH, 1.0f / (float)c->heads);
    a->cache = make_cache(b, MLA_IDX_FP8, c->page_size, c->dim, h.pages);
    a->batch = upload_batch(b, &h);
    a->causal = c->causal;
    a->top_k = c->topk;
    a->indices = (int32_t *)dev_alloc(b, (size_t)h.T * (size_t)c->topk * 4);
    a->max_seq_len = 1;
    for (int i = 0; i < h.B; i++)
        if (h.seq_lens[i] > a->max_seq_len) a->max_seq_len = h.seq_lens[i];
    if (b->rc == MLA_OK) {
        a->workspace_bytes = mla_indexer_workspace_size(b->ctx, a);
        a->workspace = dev_alloc(b, a->workspace_bytes);
    }
    b->flops = 2.0 * c->heads * c->dim * visible_pairs(&h, c->causal);
    b->bytes = (double)h.sum_seq * (c->dim + 4) + (double)TH * (c->dim + 4) + (double)h.T * c->topk * 4;
    b->fp8 = 1;
    free_host_batch(&h);
}

static void setup_prefill(bench_case *b) {
    const bench_cfg *c = &b->cfg;
    host_batch h; /* seq_lens = kv_len, q_offsets; the block table is unused */
    if (make_batch(b, &h, 1 << 30)) return;
    mla_prefill_args *a = &b->pf;
    int fp8 = c->dtype == MLA_DTYPE_E4M3, el = fp8 ? EL_E4M3 : EL_BF16;
    float sd = fp8 ? FP8_SD : 1.0f;
    size_t es = fp8 ? 1 : 2, H = (size_t)c->heads, T = (size_t)h.T, S = (size_t)h.sum_seq;
    int32_t *kvo = (int32_t *)calloc((size_t)h.B + 1, 4);
    if (!kvo) { case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); free_host_batch(&h); return; }
    for (int i = 0; i < h.B; i++) kvo[i + 1] = kvo[i] + h.seq_lens[i];
    a->dtype = c->dtype;
    a->num_tokens = h.T;
    a->num_kv = (int32_t)S;
    a->num_heads = c->heads;
    a->num_requests = h.B;
    a->q_offsets = (const int32_t *)upload(b, h.q_offsets, (size_t)(h.B + 1) * 4);
    a->kv_offsets = (const int32_t *)upload(b, kvo, (size_t)(h.B + 1) * 4);
    free(kvo);
    a->q = upload_random(b, el, T * H * 192, sd);
    a->k_nope = upload_random(b, el, S * H * 128, sd);
    a->v = upload_random(b, el, S * H * 128, sd);
    a->k_rope = upload_random(b, el, S * 64, sd);
    if (fp8) a->descale_q = a->descale_k = a->descale_v = FP8_SCALE;
    a->causal = c->causal;
    a->scale = 0.1352338f;
    a->out = (uint16_t *)dev_alloc(b, T * H * 128 * 2);
    a->lse = (float *)dev_alloc(b, T * H * 4);
    if (b->rc == MLA_OK) {
        a->workspace_bytes = mla_prefill_workspace_size(b->ctx, a);
        a->workspace = dev_alloc(b, a->workspace_bytes);
    }
    b->flops = 2.0 * (double)H * (192 + 128) * visible_pairs(&h, c->causal);
    b->bytes = (double)es * ((double)T * H * 192 + 2.0 * S * H * 128 + (double)S * 64) + (double)T * H * 128 * 2;
    b->fp8 = fp8;
    free_host_batch(&h);
}

static void setup_fused(bench_case *b) {
    const bench_cfg *c = &b->cfg;
    host_batch h;
    if (make_batch(b, &h, c->page_size)) return;
    mla_prefill_fp8_fused_args *a = &b->fu;
    size_t H = (size_t)c->heads, T = (size_t)h.T;
    int max_pos = 1;
    for (int i = 0; i < h.B; i++)
        if (h.seq_lens[i] > max_pos) max_pos = h.seq_lens[i];
    /* freqs_cis: DeepSeek's rope base 10000 over 64 dims, (cos, sin) interleaved */
    float *fc = (float *)malloc((size_t)max_pos * 64 * 4);
    uint16_t gamma[512];
    if (!fc) { case_fail(b, MLA_ERR_OUT_OF_MEMORY, "host memory"); free_host_batch(&h); return; }
    for (int p = 0; p < max_pos; p++)
        for (int k = 0; k < 32; k++) {
            double th = p * pow(10000.0, -2.0 * k / 64.0);
            fc[(size_t)p * 64 + 2 * k] = (float)cos(th);
            fc[(size_t)p * 64 + 2 * k + 1] = (float)sin(th);
        }
    for (int i = 0; i < 512; i++) gamma[i] = mla_f32_to_bf16(1.0f + 0.1f * rnorm(&b->r));
    a->num_tokens = h.T;
    a->num_heads = c->heads;
    a->q = (uint16_t *)upload_random(b, EL_BF16, T * H * 192, 1.0f);
    a->freqs_cis = (const float *)upload(b, fc, (size_t)max_pos * 64 * 4);
    a->max_pos = max_pos;
    free(fc);
    a->kv_norm_gamma = (const uint16_t *)upload(b, gamma, sizeof gamma);
    a->cache = make_cache(b, MLA_KV_BF16, c->page_size, 0, h.pages);
    a->batch = upload_batch(b, &h);
    /* weights: e4m3 codes of N(0, 64^2) times 1/(64 sqrt(512)): K and V come out ~N(0, 1) */
    a->kv_b_proj = (const uint8_t *)upload_random(b, EL_E4M3, H * 256 * 512, FP8_SD);
    a->kv_b_proj_scale = (const float *)upload_const_f32(b, H * 2 * 4, FP8_SCALE / sqrtf(512.0f));
    a->scale = 0.1352338f;
    a->eps = 1e-6f;
    a->out = (uint16_t *)dev_alloc(b, T * H * 128 * 2);
    a->max_kv_total = h.sum_seq;
    if (b->rc == MLA_OK) {
        a->workspace_bytes = mla_prefill_fp8_fused_workspace_size(b->ctx, a);
        a->workspace = dev_alloc(b, a->workspace_bytes);
    }
    b->flops = 2.0 * (double)H * (192 + 128) * visible_pairs(&h, 1) + 2.0 * (double)h.sum_seq * 512 * (double)H * 256;
    b->bytes = (double)h.sum_seq * 1152 + (double)H * 256 * 512 + 2.0 * T * H * 192 * 2 + (double)T * H * 128 * 2;
    free_host_batch(&h);
}

static void setup_cache_store(bench_case *b) {
    const bench_cfg *c = &b->cfg;
    host_batch h;
    if (make_batch(b, &h, c->page_size)) return;
    mla_cache_store_args *a = &b->cs;
    size_t row = mla_cache_row_bytes(c->format, 0);
    a->num_tokens = h.T;
    a->rows = (const uint16_t *)upload_random(b, EL_BF16, (size_t)h.T * 576, 1.0f);
    a->cache = make_cache(b, c->format, c->page_size, 0, h.pages);
    a->batch = upload_batch(b, &h);
    b->flops = 0;
    b->bytes = (double)h.T * (1152 + row + (c->format == MLA_KV_FP8_ROPE_AWARE ? 4 : 0));
    free_host_batch(&h);
}

static mla_status call_op(void *arg) {
    bench_case *b = (bench_case *)arg;
    switch (b->cfg.op) {
    case OP_DECODE: return mla_decode(b->ctx, &b->dec);
    case OP_SPARSE: return mla_sparse(b->ctx, &b->sp);
    case OP_INDEXER: return mla_indexer(b->ctx, &b->ix);
    case OP_PREFILL: return mla_prefill(b->ctx, &b->pf);
    case OP_FUSED: return mla_prefill_fp8_fused(b->ctx, &b->fu);
    case OP_CACHE_STORE: return mla_cache_store(b->ctx, &b->cs);
    }
    return MLA_ERR_INTERNAL;
}

/* ------------------------------------------------------------------------------------------ */
/* Timing                                                                                       */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* CPU: warm-up, then the median of iters calls. Slow calls shrink iters to keep a run near 20 s
 * (at least 3 timed calls). */
static mla_status cpu_time(bench_case *b, int warmup, int iters, double *median_ms, int progress) {
    double t_last = 0;
    for (int i = 0; i < warmup; i++) {
        double t0 = now_s();
        mla_status rc = call_op(b);
        if (rc != MLA_OK) return rc;
        t_last = now_s() - t0;
        if (progress && t_last > 1.0) fprintf(stderr, "  warm-up %d/%d: %.2f s\n", i + 1, warmup, t_last);
    }
    if (t_last > 0 && iters > 3 && t_last * iters > 20.0) {
        iters = (int)(20.0 / t_last);
        if (iters < 3) iters = 3;
    }
    double *t = (double *)calloc((size_t)(iters > 0 ? iters : 1), sizeof(double));
    if (!t) return MLA_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < iters; i++) {
        double t0 = now_s();
        mla_status rc = call_op(b);
        if (rc != MLA_OK) { free(t); return rc; }
        t[i] = (now_s() - t0) * 1e3;
        if (progress && t[i] > 1000.0) fprintf(stderr, "  run %d/%d: %.2f s\n", i + 1, iters, t[i] * 1e-3);
    }
    qsort(t, (size_t)iters, sizeof(double), cmp_double);
    *median_ms = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
    free(t);
    return MLA_OK;
}

static void bench_one(mla_ctx *ctx, const bench_cfg *cfg, int warmup, int iters, bench_row *row, int progress) {
    int cuda = mla_ctx_backend(ctx) == MLA_BACKEND_CUDA;
    bench_case *b = (bench_case *)calloc(1, sizeof *b);
    memset(row, 0, sizeof *row);
    snprintf(row->op, sizeof row->op, "%s", OP_NAMES[cfg->op]);
    cfg_str(cfg, row->config, sizeof row->config);
    if (!b) { row->state = ROW_FAIL; snprintf(row->note, sizeof row->note, "out of memory"); return; }
    b->ctx = ctx;
    b->cfg = *cfg;
    b->r.s = 0x5eed0000u + (uint64_t)cfg->op;
    switch (cfg->op) {
    case OP_DECODE: setup_decode(b); break;
    case OP_SPARSE: setup_sparse(b); break;
    case OP_INDEXER: setup_indexer(b); break;
    case OP_PREFILL: setup_prefill(b); break;
    case OP_FUSED: setup_fused(b); break;
    case OP_CACHE_STORE: setup_cache_store(b); break;
    }
    if (b->rc == MLA_ERR_OUT_OF_MEMORY) {
        row->state = ROW_SKIP;
        size_t free_b = 0, total_b = 0;
        if (cuda) mla_bench_cuda_mem_info(&free_b, &total_b);
        snprintf(row->note, sizeof row->note, "skipped: does not fit in %s memory (%.300s; %.1f GiB free)",
                 cuda ? "device" : "host", b->err, (double)free_b / (1 << 30));
    } else if (b->rc != MLA_OK) {
        row->state = ROW_FAIL;
        snprintf(row->note, sizeof row->note, "setup failed: %s: %.300s", mla_status_str(b->rc), b->err);
    } else {
        double ms = 0;
        char err[300] = "";
        mla_status rc = cuda ? mla_bench_cuda_time(ctx, call_op, b, warmup, iters, &ms, progress, err, sizeof err)
                             : cpu_time(b, warmup, iters, &ms, progress);
        if (rc != MLA_OK) {
            row->state = ROW_FAIL;
            snprintf(row->note, sizeof row->note, "%s: %s", mla_status_str(rc), err[0] ? err : mla_ctx_last_error(ctx));
        } else {
            row->state = ROW_OK;
            row->ms = ms;
            row->flops = b->flops;
            row->bytes = b->bytes;
            row->fp8 = b->fp8;
        }
    }
    for (int i = b->nbufs - 1; i >= 0; i--) mla_free(ctx, b->bufs[i]);
    free(b);
}

/* ------------------------------------------------------------------------------------------ */
/* Report                                                                                       */

typedef struct bench_fig {
    double tflops, gbps, fc, fm; /* fc, fm: fractions of the compute and memory ceilings (< 0: none) */
    char bound[40];              /* the ceiling that bounds the time (roofline) */
} bench_fig;

static bench_fig figures(const bench_row *r, const mla_bench_ceilings *c) {
    bench_fig f = {0, 0, -1, -1, "-"};
    const char *ctag = r->fp8 ? c->fp8_tag : c->bf16_tag;
    if (r->state != ROW_OK || r->ms <= 0) return f;
    f.tflops = r->flops / (r->ms * 1e-3) * 1e-12;
    f.gbps = r->bytes / (r->ms * 1e-3) * 1e-9;
    double peak = r->fp8 ? c->fp8_tflops : c->bf16_tflops;
    int have_peak = r->fp8 ? c->have_fp8 : c->have_bf16;
    if (have_peak && peak > 0 && r->flops > 0) f.fc = f.tflops / peak;
    if (c->have_mem && c->mem_gbps > 0) f.fm = f.gbps / c->mem_gbps;
    /* roofline: the ceiling that bounds the time */
    if (f.fc >= 0 && (f.fm < 0 || f.fc >= f.fm)) snprintf(f.bound, sizeof f.bound, "compute (%s)", ctag);
    else if (f.fm >= 0) snprintf(f.bound, sizeof f.bound, "memory (%s)", c->mem_tag);
    return f;
}

/* 3 significant digits or so, whatever the scale (CPU figures are small, GPU ones large). */
static void num(char *buf, size_t n, double v) {
    if (v >= 100) snprintf(buf, n, "%.0f", v);
    else if (v >= 10) snprintf(buf, n, "%.1f", v);
    else if (v >= 1) snprintf(buf, n, "%.2f", v);
    else snprintf(buf, n, "%.3g", v);
}

static void pct(char *buf, size_t n, double f) {
    if (f < 0) snprintf(buf, n, "-");
    else snprintf(buf, n, "%.1f%%", 100 * f);
}

static void print_ceilings(FILE *f, const mla_bench_ceilings *c) {
    if (!c->have_mem && !c->have_bf16) { fprintf(f, "ceilings: not measured\n"); return; }
    char a[32], b[32];
    num(a, sizeof a, c->mem_gbps);
    fprintf(f, "ceilings: %s %s GB/s", c->mem_name, a);
    num(a, sizeof a, c->bf16_tflops);
    num(b, sizeof b, c->fp8_tflops);
    if (c->have_bf16) fprintf(f, ", %s %s TFLOPS", c->bf16_name, a);
    if (c->have_fp8 && strcmp(c->fp8_name, c->bf16_name) != 0) fprintf(f, ", %s %s TFLOPS", c->fp8_name, b);
    fprintf(f, "\n");
}

/* The columns of one row: ms, TFLOPS, % compute ceiling, GB/s, % memory ceiling. */
static void row_cols(const bench_row *r, const mla_bench_ceilings *c, bench_fig *g, char cols[5][24]) {
    *g = figures(r, c);
    snprintf(cols[0], 24, "%.4f", r->ms);
    if (r->flops > 0) num(cols[1], 24, g->tflops);
    else snprintf(cols[1], 24, "-");
    pct(cols[2], 24, g->fc);
    num(cols[3], 24, g->gbps);
    pct(cols[4], 24, g->fm);
}

static void print_table(FILE *f, const bench_row *rows, int n, const mla_bench_ceilings *c) {
    fprintf(f, "%-11s %-54s %10s %8s %7s %8s %7s  %s\n", "op", "config", "ms", "TFLOPS", "%peak", "GB/s", "%bw", "bound");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        if (r->state != ROW_OK) {
            fprintf(f, "%-11s %-54s %s\n", r->op, r->config, r->note);
            continue;
        }
        bench_fig g;
        char col[5][24];
        row_cols(r, c, &g, col);
        fprintf(f, "%-11s %-54s %10s %8s %7s %8s %7s  %s\n", r->op, r->config, col[0], col[1], col[2], col[3], col[4], g.bound);
    }
}

static void git_commit(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    const char *env = getenv("MLA_COMMIT"); /* set by scripts/gpu.sh where the tree has no .git */
    if (env && env[0]) { snprintf(buf, n, "%s", env); return; }
    FILE *p = popen("git -C '" MLA_SOURCE_DIR "' rev-parse --short HEAD 2>/dev/null", "r");
    if (!p) return;
    char line[64] = "";
    if (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0]) snprintf(buf, n, "%s", line);
    }
    pclose(p);
}

static void device_str(mla_ctx *ctx, char *buf, size_t n) {
    if (mla_ctx_backend(ctx) == MLA_BACKEND_CUDA) { mla_ctx_describe(ctx, buf, n); return; }
    char model[128] = "CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) { p++; while (*p == ' ') p++; p[strcspn(p, "\n")] = 0; snprintf(model, sizeof model, "%s", p); }
                break;
            }
        fclose(f);
    }
    snprintf(buf, n, "cpu: %s, %d threads", model, omp_get_max_threads());
}

static int append_md(const char *path, const char *command, mla_ctx *ctx, const bench_row *rows, int n,
                     const mla_bench_ceilings *c) {
    FILE *f = fopen(path, "a");
    if (!f) { fprintf(stderr, "mla bench: cannot open %s for appending\n", path); return -1; }
    char date[64], commit[64], dev[256];
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
    git_commit(commit, sizeof commit);
    device_str(ctx, dev, sizeof dev);
    fprintf(f, "\n### %s, commit %s, %s\n\n`%s`\n\n", date, commit, dev, command);
    print_ceilings(f, c);
    fprintf(f, "\n| op | config | ms | TFLOPS | %% of compute ceiling | GB/s | %% of memory ceiling | bound |\n");
    fprintf(f, "|---|---|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < n; i++) {
        const bench_row *r = &rows[i];
        if (r->state != ROW_OK) { fprintf(f, "| %s | %s | %s | | | | | |\n", r->op, r->config, r->note); continue; }
        bench_fig g;
        char col[5][24];
        row_cols(r, c, &g, col);
        fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r->op, r->config, col[0], col[1], col[2], col[3], col[4],
                g.bound);
    }
    fclose(f);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Command line                                                                                 */

static void usage(FILE *f) {
    fprintf(f,
            "usage: mla bench OP [options]      OP: decode sparse indexer prefill fused cache_store probe\n"
            "       mla bench --all [--backend cpu|cuda] [--md FILE]\n"
            "Times OP on synthetic data; prints ms (median), TFLOPS, GB/s and their fractions of ceilings\n"
            "measured in the same run (CUDA: D2D copy, cuBLASLt BF16/FP8 GEMM 8192^3; CPU: `mla bench probe`).\n"
            "options:\n"
            "  --backend cpu|cuda|auto   (default auto: CUDA when present)\n"
            "  --batch B --heads H --seqlen S (keys per request) --sq SQ (query tokens per request)\n"
            "  --topk K --page-size P --dim D (indexer) --causal 0|1 --varlen\n"
            "  --format bf16|fp8|ropeaware (decode, sparse, cache_store)   --dtype bf16|fp8 (prefill)\n"
            "  --precision spec|bf16p    (decode: SPEC 5 accuracy, default; or P as one bf16 term, FlashMLA's numerics)\n"
            "  --iters N --warmup N      (default CPU 5/1, CUDA 30/3; CUDA takes at least 20)\n"
            "  --md FILE                 append the table as markdown (date, commit, device, command)\n"
            "  --no-ceilings             skip the ceiling measurements\n");
}

static int parse_int(const char *opt, const char *v, int lo, int hi, int *out) {
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || x < lo || x > hi) {
        fprintf(stderr, "mla bench: %s needs an integer in [%d, %d] (got '%s')\n", opt, lo, hi, v ? v : "");
        return -1;
    }
    *out = (int)x;
    return 0;
}

/* v must be one of names[0..n): *out = vals[i]; else "needs a, b or c" and -1 */
static int parse_choice(const char *opt, const char *v, const char *const *names, const int *vals, int n, int *out) {
    for (int i = 0; v && i < n; i++)
        if (!strcmp(v, names[i])) {
            *out = vals[i];
            return 0;
        }
    fprintf(stderr, "mla bench: %s needs ", opt);
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", names[i], i + 2 < n ? ", " : (i + 1 < n ? " or " : "\n"));
    return -1;
}

typedef struct bench_opts {
    int all, op, backend_set;
    mla_backend backend;
    int iters, warmup, no_ceilings;
    const char *md;
    /* overrides; -1 = default */
    int batch, heads, seqlen, sq, topk, page_size, dim, causal, varlen;
    int format, dtype, precision;
} bench_opts;

/* Returns 0, or 2 on wrong usage (message printed), or 1 after --help. */
static int parse_opts(int argc, char **argv, bench_opts *o) {
    memset(o, 0, sizeof *o);
    o->op = -1;
    o->backend = MLA_BACKEND_AUTO;
    o->iters = o->warmup = -1;
    o->batch = o->heads = o->seqlen = o->sq = o->topk = o->page_size = o->dim = o->causal = o->varlen = -1;
    o->format = o->dtype = o->precision = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *slot = NULL, lo = 1, hi = 1 << 30;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 1; }
        else if (!strcmp(a, "--all")) { o->all = 1; continue; }
        else if (!strcmp(a, "--varlen")) { o->varlen = 1; continue; }
        else if (!strcmp(a, "--no-ceilings")) { o->no_ceilings = 1; continue; }
        else if (!strcmp(a, "--backend")) {
            static const char *const names[] = {"cpu", "cuda", "auto"};
            static const int vals[] = {MLA_BACKEND_CPU, MLA_BACKEND_CUDA, MLA_BACKEND_AUTO};
            int x;
            if (parse_choice(a, v, names, vals, 3, &x)) return 2;
            o->backend = (mla_backend)x;
            i++;
            continue;
        } else if (!strcmp(a, "--format")) {
            static const char *const names[] = {"bf16", "fp8", "ropeaware"};
            static const int vals[] = {MLA_KV_BF16, MLA_KV_FP8, MLA_KV_FP8_ROPE_AWARE};
            if (parse_choice(a, v, names, vals, 3, &o->format)) return 2;
            i++;
            continue;
        } else if (!strcmp(a, "--precision")) {
            static const char *const names[] = {"spec", "bf16p"};
            static const int vals[] = {MLA_PRECISION_SPEC, MLA_PRECISION_BF16_P};
            if (parse_choice(a, v, names, vals, 2, &o->precision)) return 2;
            i++;
            continue;
        } else if (!strcmp(a, "--dtype")) {
            static const char *const names[] = {"bf16", "fp8"};
            static const int vals[] = {MLA_DTYPE_BF16, MLA_DTYPE_E4M3};
            if (parse_choice(a, v, names, vals, 2, &o->dtype)) return 2;
            i++;
            continue;
        } else if (!strcmp(a, "--md")) {
            if (!v) { fprintf(stderr, "mla bench: --md needs a file name\n"); return 2; }
            o->md = v;
            i++;
            continue;
        }
        else if (!strcmp(a, "--batch")) slot = &o->batch;
        else if (!strcmp(a, "--heads")) { slot = &o->heads; hi = MLA_MAX_HEADS; }
        else if (!strcmp(a, "--seqlen")) slot = &o->seqlen;
        else if (!strcmp(a, "--sq")) slot = &o->sq;
        else if (!strcmp(a, "--topk")) slot = &o->topk;
        else if (!strcmp(a, "--page-size")) slot = &o->page_size;
        else if (!strcmp(a, "--dim")) { slot = &o->dim; lo = 64; hi = 128; }
        else if (!strcmp(a, "--causal")) { slot = &o->causal; lo = 0; hi = 1; }
        else if (!strcmp(a, "--iters")) slot = &o->iters;
        else if (!strcmp(a, "--warmup")) { slot = &o->warmup; lo = 0; }
        if (slot) {
            if (parse_int(a, v, lo, hi, slot)) return 2;
            i++;
            continue;
        }
        if (a[0] == '-') { fprintf(stderr, "mla bench: unknown option '%s' (see mla bench --help)\n", a); return 2; }
        if (o->op >= 0) { fprintf(stderr, "mla bench: more than one OP ('%s')\n", a); return 2; }
        for (int k = 0; k < NUM_OPS; k++)
            if (!strcmp(a, OP_NAMES[k])) o->op = k;
        if (o->op < 0) { fprintf(stderr, "mla bench: unknown OP '%s' (see mla bench --help)\n", a); return 2; }
    }
    if (!o->all && o->op < 0) { fprintf(stderr, "mla bench: name an OP or --all (see mla bench --help)\n"); return 2; }
    if (o->all && o->op >= 0) { fprintf(stderr, "mla bench: --all takes no OP\n"); return 2; }
    return 0;
}

static void apply_overrides(const bench_opts *o, bench_cfg *c) {
    if (o->batch > 0) c->batch = o->batch;
    if (o->heads > 0) c->heads = o->heads;
    if (o->seqlen > 0) c->seqlen = o->seqlen;
    if (o->sq > 0) c->sq = o->sq;
    if (o->topk > 0) c->topk = o->topk;
    if (o->page_size > 0) c->page_size = o->page_size;
    if (o->dim > 0) c->dim = o->dim;
    if (o->causal >= 0) c->causal = o->causal;
    if (o->varlen > 0) c->varlen = 1;
    if (o->format > 0) c->format = (mla_format)o->format;
    if (o->dtype > 0) c->dtype = (mla_dtype)o->dtype;
    if (o->precision >= 0) c->precision = (mla_precision)o->precision;
}

static void print_probe(const mla_probe_result *p) {
    printf("probe: %d threads, SIMD %s\n", p->threads, p->simd);
    printf("probe: f32 FMA peak %.1f GFLOPS\n", p->fma_gflops);
    printf("probe: memory bandwidth copy %.1f GB/s, triad %.1f GB/s (bytes read + written)\n", p->copy_gbps, p->triad_gbps);
}

static void probe_ceilings(const mla_probe_result *p, mla_bench_ceilings *c) {
    memset(c, 0, sizeof *c);
    c->have_mem = p->triad_gbps > 0;
    c->mem_gbps = p->triad_gbps;
    c->have_bf16 = c->have_fp8 = p->fma_gflops > 0;
    c->bf16_tflops = c->fp8_tflops = p->fma_gflops * 1e-3;
    snprintf(c->mem_name, sizeof c->mem_name, "CPU triad");
    snprintf(c->bf16_name, sizeof c->bf16_name, "CPU f32 FMA peak");
    snprintf(c->fp8_name, sizeof c->fp8_name, "CPU f32 FMA peak");
    snprintf(c->mem_tag, sizeof c->mem_tag, "triad");
    snprintf(c->bf16_tag, sizeof c->bf16_tag, "f32 FMA");
    snprintf(c->fp8_tag, sizeof c->fp8_tag, "f32 FMA");
}

int mla_bench_command(int argc, char **argv) {
    bench_opts o;
    int prc = parse_opts(argc, argv, &o);
    if (prc == 1) return 0;
    if (prc) return prc;
    char command[1024] = "mla";
    for (int i = 0; i < argc; i++) {
        size_t k = strlen(command);
        snprintf(command + k, sizeof command - k, " %s", argv[i]);
    }
    if (!o.all && o.op == OP_PROBE) {
        mla_probe_result p;
        int rc = mla_probe_run(&p, 1);
        print_probe(&p);
        if (rc) fprintf(stderr, "mla bench probe: could not allocate the bandwidth arrays\n");
        return rc ? 1 : 0;
    }
    mla_ctx_params cp = mla_ctx_params_default();
    cp.backend = o.backend;
    mla_ctx *ctx = NULL;
    mla_status st = mla_ctx_create(&cp, &ctx);
    if (st != MLA_OK) {
        fprintf(stderr, "mla bench: cannot create a %s context: %s\n", mla_backend_name(o.backend), mla_status_str(st));
        return 1;
    }
    int cuda = mla_ctx_backend(ctx) == MLA_BACKEND_CUDA;
    int warmup = o.warmup >= 0 ? o.warmup : (cuda ? 3 : 1);
    int iters = o.iters > 0 ? o.iters : (cuda ? 30 : 5);
    if (cuda && iters < 20) {
        fprintf(stderr, "mla bench: CUDA timings take the median of at least 20 runs (--iters %d raised to 20)\n", iters);
        iters = 20;
    }
    char dev[256];
    device_str(ctx, dev, sizeof dev);
    printf("device: %s\n", dev);
    fflush(stdout);

    mla_bench_ceilings ceil;
    memset(&ceil, 0, sizeof ceil);
    int exit_code = 0;
    if (!o.no_ceilings) {
        if (cuda) {
            char err[300];
            if (mla_bench_cuda_ceilings(&ceil, 1, err, sizeof err) != MLA_OK) {
                fprintf(stderr, "mla bench: ceiling measurement failed: %s\n", err);
                exit_code = 1;
            }
        } else {
            mla_probe_result p;
            if (mla_probe_run(&p, 1) == 0) print_probe(&p);
            probe_ceilings(&p, &ceil);
        }
        print_ceilings(stdout, &ceil);
        fflush(stdout);
    }

    bench_cfg cfgs[64];
    int n = 0;
    if (o.all) n = all_configs(cuda, cfgs, 64);
    else {
        cfgs[0] = default_cfg(o.op, cuda);
        apply_overrides(&o, &cfgs[0]);
        n = 1;
    }
    bench_row *rows = (bench_row *)calloc((size_t)n, sizeof *rows);
    if (!rows) { mla_ctx_destroy(ctx); return 1; }
    for (int i = 0; i < n; i++) {
        char cs[160];
        cfg_str(&cfgs[i], cs, sizeof cs);
        fprintf(stderr, "[%d/%d] %s %s\n", i + 1, n, OP_NAMES[cfgs[i].op], cs);
        bench_one(ctx, &cfgs[i], warmup, iters, &rows[i], 1);
        if (rows[i].state == ROW_FAIL) {
            fprintf(stderr, "mla bench: %s %s failed: %s\n", rows[i].op, rows[i].config, rows[i].note);
            exit_code = 1;
        } else if (rows[i].state == ROW_SKIP) {
            fprintf(stderr, "mla bench: %s %s %s\n", rows[i].op, rows[i].config, rows[i].note);
        }
    }
    printf("\n");
    print_table(stdout, rows, n, &ceil);
    if (o.md && append_md(o.md, command, ctx, rows, n, &ceil)) exit_code = 1;
    free(rows);
    mla_ctx_destroy(ctx);
    return exit_code;
}
