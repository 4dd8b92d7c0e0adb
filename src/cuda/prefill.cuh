/* Internal: the flash-attention prefill kernel's parameters (src/cuda/prefill.cu), shared with the
 * fused branch (src/cuda/prefill_fused.cu), which runs it on the K/V it up-projected. */
#ifndef MLA_CUDA_PREFILL_CUH
#define MLA_CUDA_PREFILL_CUH

#include <stdint.h>

#include "cuda.h"

typedef struct mla_cuda_prefill_params {
    /* sizes (host-known bounds; the kernel clamps every device offset into them) */
    int32_t num_tokens;        /* T: rows of q, out, lse */
    int32_t num_kv;            /* S: rows of k_nope, v, k_rope */
    int32_t num_heads;         /* H */
    int32_t num_requests;      /* B: q_offsets / kv_offsets have B+1 entries (an upper bound when
                                  num_requests_dev is set) */
    const int32_t *num_requests_dev; /* NULL, or the request count read on the device (<= B) */
    const int32_t *q_offsets;  /* [B+1] device */
    const int32_t *kv_offsets; /* [B+1] device */
    /* tensors: bf16 (uint16_t) or e4m3 (uint8_t); strides in elements of the tensor's type */
    const void *q;             /* [T, H, 192] */
    int64_t q_stride_t, q_stride_h;
    const void *k_nope;        /* [S, H, 128] */
    int64_t k_nope_stride_s, k_nope_stride_h;
    const void *v;             /* [S, H, 128] */
    int64_t v_stride_s, v_stride_h;
    const void *k_rope;        /* [S, 64] */
    int64_t k_rope_stride_s;
    uint16_t *out;             /* [T, H, 128] bf16 */
    int64_t out_stride_t, out_stride_h;
    float *lse;                /* [T, H] f32, NULL: not written */
    int64_t lse_stride_t;
    /* derived on the host */
    int causal;
    int fp8;                   /* 1: q, k_nope, v, k_rope are e4m3 */
    float scale_log2;          /* scale * log2(e), times descale_q * descale_k for e4m3 */
    float out_mul;             /* descale_v for e4m3, 1 for bf16 */
} mla_cuda_prefill_params;

#ifdef __cplusplus
extern "C" {
#endif
/* Host checks the kernel needs beyond the core's validation (16-byte aligned pointers and
 * strides): MLA_ERR_UNSUPPORTED naming the tensor when one fails. `op` names the caller. */
mla_status mla_cuda_prefill_check(mla_ctx *ctx, const char *op, const mla_cuda_prefill_params *p);
/* Launches the kernel on the context's stream (no checks). */
mla_status mla_cuda_prefill_launch(mla_ctx *ctx, const char *op, const mla_cuda_prefill_params *p);
#ifdef __cplusplus
}
#endif

#endif
