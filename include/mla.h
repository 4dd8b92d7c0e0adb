/* libmla: DeepSeek-V3/V3.2 Multi-head Latent Attention (MLA) and DeepSeek Sparse Attention (DSA)
 * kernels behind one C ABI. CPU backend (portable C11 + OpenMP) and CUDA backend (Hopper).
 *
 * This header is the whole public API and its reference documentation. The contract of every
 * operation is docs/SPEC.md (a copy of the project's shared SPEC.md); section numbers below point
 * there.
 *
 * Conventions (all operations):
 *  - Every call takes a context, validates its arguments first, and returns an mla_status.
 *    A bad argument returns MLA_ERR_INVALID_ARG, writes nothing, and leaves a message naming the
 *    argument and the rule in mla_ctx_last_error(ctx). A combination the backend lacks returns
 *    MLA_ERR_UNSUPPORTED with a message naming what is missing: never a wrong answer.
 *  - Pointers live where the context's backend computes: host memory for MLA_BACKEND_CPU, device
 *    memory for MLA_BACKEND_CUDA (including q_offsets, seq_lens, block tables and indices). The
 *    CUDA backend therefore validates only what the host can see (sizes, strides, pointers) and
 *    its kernels skip out-of-range page ids and indices instead of dereferencing them.
 *  - Strides are counted in elements of the tensor's own type (bytes for e4m3 and packed tensors)
 *    and named <tensor>_stride_<dim>. A stride of 0 means "contiguous" (the product of the
 *    trailing dimensions). The last dimension is always contiguous.
 *  - bf16 values travel as uint16_t bit patterns; e4m3 (OCP e4m3fn) values as uint8_t.
 *  - Query rows are ragged: q_offsets[B+1]; seq_lens[b] counts request b's keys including its new
 *    tokens; query i of request b sits at pos = seq_lens[b] - q_len[b] + i (SPEC section 2).
 *  - Optional outputs (lse, max_logits, logits) are not written when NULL.
 *  - A call with no work (zero tokens) succeeds and writes nothing.
 *  - Argument structs only ever gain fields at their end; zero-initialize them ({0}) so that new
 *    fields take their default.
 */
#ifndef MLA_H
#define MLA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MLA_VERSION_MAJOR 0
#define MLA_VERSION_MINOR 1
#define MLA_VERSION_PATCH 0
#define MLA_VERSION_NUMBER (MLA_VERSION_MAJOR * 10000 + MLA_VERSION_MINOR * 100 + MLA_VERSION_PATCH)

/* DeepSeek-V3 / V3.2 dimensions. */
#define MLA_LATENT_DIM 512     /* kv_lora_rank: the value width of absorbed attention */
#define MLA_ROPE_DIM 64
#define MLA_KEY_DIM 576        /* absorbed key row: latent | rope */
#define MLA_NOPE_DIM 128       /* non-absorbed per-head key (nope part) and value width */
#define MLA_QK_DIM 192         /* non-absorbed q: nope 128 | rope 64 */
#define MLA_MAX_HEADS 128

/* Status codes: values are pinned; new ones are appended. */
typedef enum mla_status {
    MLA_OK = 0,
    MLA_ERR_INVALID_ARG = 1,   /* an argument broke a rule; nothing was written */
    MLA_ERR_UNSUPPORTED = 2,   /* this backend lacks the operation or combination */
    MLA_ERR_NO_DEVICE = 3,     /* CUDA requested but built without it, or no GPU present */
    MLA_ERR_DEVICE = 4,        /* a CUDA runtime call failed; the message has cudaGetErrorString */
    MLA_ERR_OUT_OF_MEMORY = 5,
    MLA_ERR_INTERNAL = 6       /* a bug in libmla */
} mla_status;

typedef enum mla_backend {
    MLA_BACKEND_AUTO = 0,      /* CUDA when built in and a device is present, else CPU */
    MLA_BACKEND_CPU = 1,
    MLA_BACKEND_CUDA = 2
} mla_backend;

/* Cache formats (SPEC section 3). Values are pinned; new ones are appended. */
typedef enum mla_format {
    MLA_KV_BF16 = 1,           /* 1152 B/token: 576 bf16 (latent | rope) */
    MLA_KV_FP8 = 2,            /* 656 B/token: 512 e4m3, 4 f32 tile scales, 64 bf16 rope */
    MLA_KV_FP8_ROPE_AWARE = 3, /* 640 B/token: 512 e4m3, 64 bf16 rope/sigma; sigma pool apart */
    MLA_IDX_FP8 = 4            /* indexer: page = page_size*D e4m3, then page_size f32 scales */
} mla_format;

typedef enum mla_dtype {
    MLA_DTYPE_BF16 = 1,
    MLA_DTYPE_E4M3 = 2,
    MLA_DTYPE_F32 = 3
} mla_dtype;

/* ------------------------------------------------------------------------------------------ */
/* Library and context                                                                         */

int mla_version_number(void);                    /* MLA_VERSION_NUMBER the library was built as */
const char *mla_version_string(void);            /* "0.1.0" */
const char *mla_status_str(mla_status s);        /* fixed text of a code */
const char *mla_format_name(mla_format f);       /* "MLA_KV_BF16", ...; "?" when unknown */
const char *mla_backend_name(mla_backend b);     /* "auto", "cpu", "cuda" */
/* 1 when the backend was compiled in (CUDA: built with nvcc). Says nothing about a GPU. */
int mla_has_backend(mla_backend b);
/* Number of CUDA devices present (0 when built without CUDA or none is visible). */
int mla_cuda_device_count(void);

typedef struct mla_ctx mla_ctx;                  /* opaque */

typedef struct mla_ctx_params {
    mla_backend backend;       /* default MLA_BACKEND_AUTO */
    int num_threads;           /* CPU threads; 0 = all cores (OpenMP default) */
    int device;                /* CUDA device ordinal; default 0 */
    void *stream;              /* cudaStream_t the CUDA backend launches on; NULL = default */
} mla_ctx_params;

mla_ctx_params mla_ctx_params_default(void);
/* Creates a context. MLA_ERR_NO_DEVICE when CUDA is asked for and cannot be used. */
mla_status mla_ctx_create(const mla_ctx_params *params, mla_ctx **out);
void mla_ctx_destroy(mla_ctx *ctx);              /* NULL: does nothing */
mla_backend mla_ctx_backend(const mla_ctx *ctx); /* the backend actually chosen (never AUTO) */
/* Message of the latest failed call on ctx ("" after a success); valid until the next call. */
const char *mla_ctx_last_error(const mla_ctx *ctx);
/* Writes a one-paragraph description (backend, threads, device name, SM) into buf. */
void mla_ctx_describe(const mla_ctx *ctx, char *buf, size_t buf_size);

/* Memory where the context's backend computes (host for CPU, device for CUDA). Tools and tests
 * use these to stay backend-agnostic; engines may pass their own allocations instead. */
mla_status mla_malloc(mla_ctx *ctx, size_t bytes, void **ptr);
void mla_free(mla_ctx *ctx, void *ptr);
mla_status mla_memcpy_to_backend(mla_ctx *ctx, void *dst, const void *src_host, size_t bytes);
mla_status mla_memcpy_to_host(mla_ctx *ctx, void *dst_host, const void *src, size_t bytes);
mla_status mla_memset(mla_ctx *ctx, void *dst, int value, size_t bytes);
/* Waits for all work queued on the context's stream (no-op on CPU). */
mla_status mla_synchronize(mla_ctx *ctx);

/* ------------------------------------------------------------------------------------------ */
/* Paged caches (SPEC section 3)                                                               */

/* Bytes of one token row: 1152, 656, 640 for the latent formats; D for MLA_IDX_FP8 (its scales
 * sit after all rows of a page). 0 for an unknown format. */
size_t mla_cache_row_bytes(mla_format format, int dim);
/* Smallest page_stride for page_size tokens (MLA_IDX_FP8: page_size * (dim + 4)). */
size_t mla_cache_page_bytes(mla_format format, int page_size, int dim);

typedef struct mla_paged_cache {
    void *base;                /* page 0; page p starts at base + p * page_stride bytes */
    int64_t page_stride;       /* bytes between pages; >= mla_cache_page_bytes(); may interleave layers */
    int32_t page_size;         /* token slots per page, >= 1 */
    int32_t num_pages;         /* pages in the pool */
    mla_format format;
    int32_t dim;               /* MLA_IDX_FP8 only: D (64 or 128); ignored otherwise */
    float *sigma;              /* MLA_KV_FP8_ROPE_AWARE only: per-token sigma [num_pages, sigma_stride_page] */
    int64_t sigma_stride_page; /* floats between pages of sigma; 0 = page_size */
} mla_paged_cache;

/* The ragged batch and its block table (SPEC section 2). */
typedef struct mla_batch {
    int32_t num_requests;      /* B >= 0 */
    const int32_t *q_offsets;  /* [B+1], ascending, q_offsets[0] = 0, q_offsets[B] = num_tokens */
    const int32_t *seq_lens;   /* [B], keys of request b including its new tokens */
    const int32_t *block_table;/* [B, bt_stride] page ids */
    int64_t bt_stride;         /* entries between rows of block_table (>= pages any request uses) */
} mla_batch;

/* ------------------------------------------------------------------------------------------ */
/* 4.1 mla_decode: dense absorbed MLA over the paged latent cache (decode, MTP)                 */

/* Accuracy contract of mla_decode (SPEC 5). */
typedef enum mla_precision {
    MLA_PRECISION_SPEC = 0,    /* default: SPEC 5 on every input (out: atol 1e-3 or rtol 2/128) */
    MLA_PRECISION_BF16_P = 1   /* the softmax probabilities P are rounded to one bf16 before P.V, as
                                  FlashMLA does: out errs by up to ~2^-9 of the values' spread (about
                                  4e-3 for unit-scale values, past SPEC 5's atol). The CUDA Hopper decode
                                  then skips its second P.V term (1.47x less tensor work) on BF16
                                  caches; FP8 caches and the other paths compute as with
                                  MLA_PRECISION_SPEC (on Hopper that program is the faster one there).
                                  Domain: |scale * log2(e) * q.k| below ~2^29 (FlashMLA's scaling: the
                                  scale inside P's FMA); past it results are not guaranteed (NaN where a
                                  row keeps no probability; a session-31 test at ~2^31 also saw finite
                                  wrong rows). MLA_PRECISION_SPEC has no such limit. */
} mla_precision;

typedef struct mla_decode_args {
    int32_t num_tokens;        /* T = q_offsets[B] */
    int32_t num_heads;         /* H, 1..128 */
    const void *q;             /* [T, H, 576] bf16; MLA_KV_FP8_ROPE_AWARE: [T, H, 640] bytes
                                  (512 e4m3 latent, 64 bf16 rope / q_sigma), see
                                  mla_quantize_q_rope_aware */
    int64_t q_stride_t;        /* elements (bytes for the packed q); 0 = H * row */
    int64_t q_stride_h;        /* 0 = row (576 or 640) */
    const float *q_sigma;      /* [T] rope-aware only: q latent value = e4m3 * q_sigma */
    mla_paged_cache cache;     /* MLA_KV_BF16, MLA_KV_FP8 or MLA_KV_FP8_ROPE_AWARE */
    mla_batch batch;
    int causal;                /* 1: key j visible iff j <= pos; 0: every j < seq_len */
    float scale;               /* softmax scale on q.k */
    const float *sink;         /* [H] natural-log sink logits, or NULL */
    uint16_t *out;             /* [T, H, 512] bf16 */
    int64_t out_stride_t;      /* 0 = H * 512 */
    int64_t out_stride_h;      /* 0 = 512 */
    float *lse;                /* [T, H] natural log, sink excluded, or NULL */
    int64_t lse_stride_t;      /* 0 = H */
    mla_precision precision;   /* 0 = MLA_PRECISION_SPEC; MLA_PRECISION_BF16_P trades accuracy for speed */
    void *workspace;           /* CUDA scratch of mla_decode_workspace_size() bytes; CPU: unused */
    size_t workspace_bytes;
} mla_decode_args;

/* Reads q, cache, batch; writes out and lse. Any H in 1..128, any page_size, q_len and seq_len
 * 0 included. Rows with no visible key get out = 0, lse = +inf. */
mla_status mla_decode(mla_ctx *ctx, const mla_decode_args *args);
/* Scratch the call needs for these shapes (0 on CPU). Only num_tokens, num_heads, cache.format
 * and batch.num_requests are read. On CUDA it holds split-KV partials, the balanced
 * schedule's plan (decode batches of up to 9215 requests: about 35 MB on 132
 * SMs) and, for MLA_KV_FP8 under MLA_PRECISION_BF16_P, a 4-byte flag per request (the check of
 * the scales), so it is not 0 for large batches either; the same workspace serves every layer of a step. */
size_t mla_decode_workspace_size(const mla_ctx *ctx, const mla_decode_args *args);

/* ------------------------------------------------------------------------------------------ */
/* 4.2 mla_sparse: sparse (DSA) absorbed attention over top-k slot ids, prefill and decode      */

typedef struct mla_sparse_args {
    int32_t num_tokens;        /* T */
    int32_t num_heads;         /* H, 1..128 */
    const uint16_t *q;         /* [T, H, 576] bf16 */
    int64_t q_stride_t;        /* 0 = H * 576 */
    int64_t q_stride_h;        /* 0 = 576 */
    mla_paged_cache cache;     /* MLA_KV_BF16 or MLA_KV_FP8 */
    const int32_t *indices;    /* [T, topk] slot ids (page * page_size + slot) */
    int32_t topk;              /* columns of indices that may be used, >= 1 */
    int64_t indices_stride_t;  /* 0 = topk */
    const int32_t *topk_len;   /* [T] or NULL (= topk): entry j used iff j < topk_len[t] and
                                  0 <= id < num_pages * page_size; everything else skipped */
    float scale;
    const float *sink;         /* [H] or NULL */
    uint16_t *out;             /* [T, H, 512] bf16 */
    int64_t out_stride_t;      /* 0 = H * 512 */
    int64_t out_stride_h;      /* 0 = 512 */
    float *lse;                /* [T, H] or NULL; +inf for rows with no used index */
    float *max_logits;         /* [T, H] or NULL; max of scale*q.k over used keys, -inf if none */
    int64_t lse_stride_t;      /* for lse and max_logits; 0 = H */
    void *workspace;
    size_t workspace_bytes;
} mla_sparse_args;

mla_status mla_sparse(mla_ctx *ctx, const mla_sparse_args *args);
size_t mla_sparse_workspace_size(const mla_ctx *ctx, const mla_sparse_args *args);

/* Logical positions (as the indexer emits them; negative = none) -> slot ids through the block
 * table. Every negative input and every position >= seq_lens[b] becomes -1. Exact. */
typedef struct mla_indices_to_slots_args {
    int32_t num_tokens;        /* T */
    int32_t topk;              /* columns */
    mla_batch batch;
    int32_t page_size;
    int32_t num_pages;         /* page ids in the block table must be below this */
    const int32_t *indices;    /* [T, topk] */
    int64_t indices_stride_t;  /* 0 = topk */
    int32_t *slots;            /* [T, topk] out */
    int64_t slots_stride_t;    /* 0 = topk */
} mla_indices_to_slots_args;

mla_status mla_indices_to_slots(mla_ctx *ctx, const mla_indices_to_slots_args *args);

/* ------------------------------------------------------------------------------------------ */
/* 4.3 mla_prefill: dense non-absorbed MLA prefill (MHA form, ragged, causal or not)            */

typedef struct mla_prefill_args {
    mla_dtype dtype;           /* MLA_DTYPE_BF16 (all inputs bf16) or MLA_DTYPE_E4M3 (all e4m3) */
    int32_t num_tokens;        /* T = q_offsets[B] */
    int32_t num_kv;            /* S = kv_offsets[B] */
    int32_t num_heads;         /* H, 1..128 */
    int32_t num_requests;      /* B */
    const int32_t *q_offsets;  /* [B+1] */
    const int32_t *kv_offsets; /* [B+1]: request b's keys are rows [kv_offsets[b], kv_offsets[b+1]) */
    const void *q;             /* [T, H, 192]: nope 0..127, rope 128..191 */
    int64_t q_stride_t, q_stride_h;       /* 0 = H*192, 192 */
    const void *k_nope;        /* [S, H, 128] */
    int64_t k_nope_stride_s, k_nope_stride_h; /* 0 = H*128, 128 */
    const void *v;             /* [S, H, 128] */
    int64_t v_stride_s, v_stride_h;       /* 0 = H*128, 128 */
    const void *k_rope;        /* [S, 64], shared by all heads */
    int64_t k_rope_stride_s;   /* 0 = 64 */
    float descale_q, descale_k, descale_v;/* e4m3 only: value = e4m3 * descale (k: k_nope and k_rope) */
    int causal;                /* bottom-right: key j visible iff j <= kv_len - q_len + i */
    float scale;
    uint16_t *out;             /* [T, H, 128] bf16 */
    int64_t out_stride_t, out_stride_h;   /* 0 = H*128, 128 */
    float *lse;                /* [T, H] or NULL */
    int64_t lse_stride_t;      /* 0 = H */
    void *workspace;
    size_t workspace_bytes;
} mla_prefill_args;

mla_status mla_prefill(mla_ctx *ctx, const mla_prefill_args *args);
size_t mla_prefill_workspace_size(const mla_ctx *ctx, const mla_prefill_args *args);

/* ------------------------------------------------------------------------------------------ */
/* 4.4 mla_prefill_fp8_fused: RoPE + RMSNorm in place, gather, 1x128 e4m3 quantize, 128x128
 * block-scaled e4m3 up-projection, split, causal prefill. All inside one call.                */

typedef struct mla_prefill_fp8_fused_args {
    int32_t num_tokens;        /* T */
    int32_t num_heads;         /* H, 1..128 */
    uint16_t *q;               /* [T, H, 192] bf16, roped in place on 128..191 */
    int64_t q_stride_t, q_stride_h;       /* 0 = H*192, 192 */
    const float *freqs_cis;    /* [max_pos, 64]: 32 interleaved (cos, sin) pairs per position */
    int32_t max_pos;           /* rows of freqs_cis; every pos must be below it */
    const uint16_t *kv_norm_gamma; /* [512] bf16 */
    mla_paged_cache cache;     /* MLA_KV_BF16; the new rows hold raw kv_a output, roped/normed in place */
    mla_batch batch;
    const uint8_t *kv_b_proj;  /* [H*256, 512] e4m3: rows h*256.. +128 K_nope[h], next 128 V[h] */
    const float *kv_b_proj_scale; /* [H*2, 4] f32, one per 128x128 block */
    float scale;
    float eps;
    uint16_t *out;             /* [T, H, 128] bf16 */
    int64_t out_stride_t, out_stride_h;   /* 0 = H*128, 128 */
    float *lse;                /* [T, H] or NULL */
    int64_t lse_stride_t;      /* 0 = H */
    void *workspace;           /* gather/quantize/K/V buffers: mla_prefill_fp8_fused_workspace_size() */
    size_t workspace_bytes;
    int64_t max_kv_total;      /* CUDA: an upper bound of sum(seq_lens) for workspace sizing and
                                  the gather (the host cannot read device seq_lens); CPU: ignored */
} mla_prefill_fp8_fused_args;

mla_status mla_prefill_fp8_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *args);
/* CPU: computes its own scratch; returns 0. CUDA: reads num_tokens, num_heads, max_kv_total. */
size_t mla_prefill_fp8_fused_workspace_size(const mla_ctx *ctx, const mla_prefill_fp8_fused_args *args);

/* Building blocks of the fused branch, usable on their own. */

/* Interleaved RoPE in place on x[n, 64] bf16 rows (row stride in elements), row i at position
 * pos[i]: pairs (x[2k], x[2k+1]) rotated by freqs_cis[pos, 2k:2k+2], f32 math, one bf16 rounding. */
typedef struct mla_rope_args {
    int32_t num_rows;
    uint16_t *x;               /* [num_rows, 64] bf16, in place */
    int64_t x_stride;          /* elements between rows; 0 = 64 */
    const int32_t *pos;        /* [num_rows] positions, 0 <= pos < max_pos */
    const float *freqs_cis;    /* [max_pos, 64] */
    int32_t max_pos;
} mla_rope_args;
mla_status mla_rope(mla_ctx *ctx, const mla_rope_args *args);

/* RMSNorm in place on x[n, dim] bf16: y = bf16(x * rsqrt(mean(x^2) + eps)) * gamma (bf16). */
typedef struct mla_rmsnorm_args {
    int32_t num_rows;
    int32_t dim;               /* multiple of 1; 512 for the latent */
    uint16_t *x;               /* [num_rows, dim] bf16, in place */
    int64_t x_stride;          /* 0 = dim */
    const uint16_t *gamma;     /* [dim] bf16 */
    float eps;
} mla_rmsnorm_args;
mla_status mla_rmsnorm(mla_ctx *ctx, const mla_rmsnorm_args *args);

/* 1x128 e4m3 quantization of bf16 rows: per row and 128-group s = min(amax, 1200) / 448,
 * q = e4m3(x / s). dim must be a multiple of 128. */
typedef struct mla_quantize_fp8_1x128_args {
    int32_t num_rows;
    int32_t dim;
    const uint16_t *x;         /* [num_rows, dim] bf16 */
    int64_t x_stride;          /* 0 = dim */
    uint8_t *q;                /* [num_rows, dim] e4m3 out */
    float *s;                  /* [num_rows, dim/128] f32 out */
} mla_quantize_fp8_1x128_args;
mla_status mla_quantize_fp8_1x128(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *args);

/* Block-scaled e4m3 GEMM: c[m, n] = sum_k a[m,k]*a_s[m, k/128] * b[n,k]*b_s[n/128, k/128],
 * f32 accumulation, c written as bf16. K must be a multiple of 128. */
typedef struct mla_gemm_fp8_args {
    int32_t m, n, k;
    const uint8_t *a;          /* [m, k] e4m3 */
    const float *a_s;          /* [m, k/128] */
    const uint8_t *b;          /* [n, k] e4m3 (the weight, row-major as stored) */
    const float *b_s;          /* [ceil(n/128), k/128] */
    uint16_t *c;               /* [m, n] bf16 */
    int64_t c_stride;          /* 0 = n */
} mla_gemm_fp8_args;
mla_status mla_gemm_fp8_block_scaled(mla_ctx *ctx, const mla_gemm_fp8_args *args);

/* ------------------------------------------------------------------------------------------ */
/* 4.5 mla_indexer: DSA lightning indexer, FP8 scores and top-k                                 */

typedef struct mla_indexer_args {
    int32_t num_tokens;        /* T */
    int32_t num_heads;         /* H, 1..128 */
    int32_t dim;               /* D: 64 or 128 (must equal cache.dim) */
    const uint8_t *q;          /* [T, H, D] e4m3 */
    int64_t q_stride_t;        /* 0 = H*D */
    const float *q_s;          /* [T, H] head weights (q scale and softmax scale folded in) */
    mla_paged_cache cache;     /* MLA_IDX_FP8 */
    mla_batch batch;
    int causal;
    int32_t top_k;             /* >= 1 */
    int32_t *indices;          /* [T, top_k] logical positions, best first, -1 fill */
    int64_t indices_stride_t;  /* 0 = top_k */
    float *logits;             /* [T, logits_stride] or NULL; -inf at invisible positions */
    int64_t logits_stride;     /* >= the longest seq_len when logits != NULL */
    void *workspace;
    size_t workspace_bytes;
    int32_t max_seq_len;       /* CUDA: an upper bound of seq_lens (host cannot read them); CPU: ignored */
} mla_indexer_args;

mla_status mla_indexer(mla_ctx *ctx, const mla_indexer_args *args);
size_t mla_indexer_workspace_size(const mla_ctx *ctx, const mla_indexer_args *args);

/* bf16 k [T, D] of the new tokens -> MLA_IDX_FP8 at positions seq_lens[b] - q_len[b] + i:
 * scale = 2^ceil(log2(max(amax/448, 1e-4))), q = e4m3(x / scale). Exact. */
typedef struct mla_indexer_cache_store_args {
    int32_t num_tokens;        /* T */
    const uint16_t *k;         /* [T, D] bf16, D = cache.dim */
    int64_t k_stride_t;        /* 0 = D */
    mla_paged_cache cache;     /* MLA_IDX_FP8 */
    mla_batch batch;
} mla_indexer_cache_store_args;

mla_status mla_indexer_cache_store(mla_ctx *ctx, const mla_indexer_cache_store_args *args);

/* ------------------------------------------------------------------------------------------ */
/* 4.6 cache writers                                                                           */

/* bf16 rows [T, 576] (latent | rope) -> the latent cache in any format, at positions
 * seq_lens[b] - q_len[b] + i, quantized as SPEC section 3. Exact. */
typedef struct mla_cache_store_args {
    int32_t num_tokens;        /* T */
    const uint16_t *rows;      /* [T, 576] bf16 */
    int64_t rows_stride_t;     /* 0 = 576 */
    mla_paged_cache cache;     /* any latent format (rope-aware: cache.sigma written too) */
    mla_batch batch;
} mla_cache_store_args;

mla_status mla_cache_store(mla_ctx *ctx, const mla_cache_store_args *args);

/* bf16 q [T, H, 576] -> packed rope-aware q [T, H, 640] bytes and q_sigma [T]; sigma over all
 * heads' latent parts of token t. Exact. */
typedef struct mla_quantize_q_rope_aware_args {
    int32_t num_tokens;        /* T */
    int32_t num_heads;         /* H */
    const uint16_t *q;         /* [T, H, 576] bf16 */
    int64_t q_stride_t, q_stride_h;       /* 0 = H*576, 576 */
    uint8_t *q_out;            /* [T, H, 640] */
    int64_t q_out_stride_t, q_out_stride_h; /* bytes; 0 = H*640, 640 */
    float *q_sigma;            /* [T] */
} mla_quantize_q_rope_aware_args;

mla_status mla_quantize_q_rope_aware(mla_ctx *ctx, const mla_quantize_q_rope_aware_args *args);

/* ------------------------------------------------------------------------------------------ */
/* Scalar conversions, exactly as every backend performs them (SPEC section 1).                */

float mla_bf16_to_f32(uint16_t x);
uint16_t mla_f32_to_bf16(float x);               /* round to nearest even; NaN stays NaN */
float mla_e4m3_to_f32(uint8_t x);                /* 0x7F / 0xFF are NaN */
uint8_t mla_f32_to_e4m3(float x);                /* nearest even, saturates to +-448, NaN -> 0x7F */

#ifdef __cplusplus
}
#endif
#endif /* MLA_H */
