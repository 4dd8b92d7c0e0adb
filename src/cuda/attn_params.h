/* Parameters of the absorbed-MLA attention kernels on CUDA: mla_decode (SPEC 4.1), mla_sparse
 * (SPEC 4.2) and their split-KV combine. One plain struct, filled once on the host from the
 * public argument struct (which never reaches device code) and passed by value to every kernel.
 * Order: sizes, pointers (shape and dtype in the comment), strides grouped by tensor (every one
 * resolved: no 0 = contiguous left), values derived on the host, workspace. */
#ifndef MLA_CUDA_ATTN_PARAMS_H
#define MLA_CUDA_ATTN_PARAMS_H

#include <stdint.h>

typedef struct mla_attn_params {
    /* ---- sizes and modes ---- */
    int32_t num_tokens;        /* T: query tokens */
    int32_t num_heads;         /* H: 1..128 */
    int32_t num_requests;      /* B (decode) */
    int32_t heads_per_cta;     /* HB = min(H, 64): heads of one token in a CTA's row block */
    int32_t head_blocks;       /* ceil(H / HB) */
    int32_t tokens_per_cta;    /* decode: 64 / HB tokens of one request share a CTA; sparse: 1 */
    int32_t num_splits;        /* key-range splits per (token group, head block); 1: no combine */
    int32_t format;            /* mla_format of the cache */
    int32_t sparse;            /* 0: decode (keys through the block table), 1: sparse (slot ids) */
    int32_t causal;            /* decode: key j visible iff j <= pos */
    int32_t page_size;         /* tokens per page */
    int32_t num_pages;         /* pages in the pool */
    int32_t row_bytes;         /* bytes of one cache row: 1152, 656 or 640 */
    int32_t topk;              /* sparse: columns of indices that may be used */

    /* ---- pointers (device) ---- */
    const void *q;             /* [T, H, 576] bf16; rope-aware: [T, H, 640] bytes (512 e4m3, 64 bf16) */
    const float *q_sigma;      /* [T] rope-aware only: q latent = e4m3 * q_sigma, q rope = bf16 * q_sigma */
    const uint8_t *kv_base;    /* page 0 of the latent pool; page p at kv_base + p * page_stride */
    const float *kv_sigma;     /* [num_pages, sigma_stride_page] rope-aware only */
    const int32_t *q_offsets;  /* [B + 1] decode */
    const int32_t *seq_lens;   /* [B] decode */
    const int32_t *block_table;/* [B, bt_stride] decode */
    const int32_t *indices;    /* [T, indices_stride_t] sparse slot ids */
    const int32_t *topk_len;   /* [T] sparse, or NULL (= topk) */
    const float *sink;         /* [H] natural-log sink logits, or NULL */
    uint16_t *out;             /* [T, H, 512] bf16 */
    float *lse;                /* [T, H] natural log, or NULL: not written */
    float *max_logits;         /* [T, H] sparse, or NULL: not written */

    /* ---- strides (resolved) ---- */
    int64_t q_stride_t, q_stride_h;        /* elements (bytes for the rope-aware packed q) */
    int64_t page_stride;                   /* bytes between pages */
    int64_t sigma_stride_page;             /* floats between pages of kv_sigma */
    int64_t bt_stride;                     /* entries between rows of block_table */
    int64_t indices_stride_t;              /* entries between rows of indices */
    int64_t out_stride_t, out_stride_h;    /* elements */
    int64_t lse_stride_t;                  /* floats, for lse and max_logits */

    /* ---- derived on the host ---- */
    float scale_log2;          /* scale * log2(e): scores live in the log2 domain */
    int32_t out_pairs;         /* 1: out and its strides allow 4-byte bf16x2 stores */

    /* ---- workspace (num_splits > 1 only) ---- */
    float *part_o;             /* [num_splits, T * H, 512] each split's normalized output; unwritten for a split without keys */
    float *part_lse;           /* [num_splits, T * H] log2(sum exp2) of the split; -inf: no key */
    float *part_max;           /* [num_splits, T * H] max score of the split, log2 units; -inf: none */
} mla_attn_params;

#endif
