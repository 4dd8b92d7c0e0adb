/* Internal: the CUDA backend's entry points, one file per operation (src/cuda/<op>.cu), and the
 * helpers they share. Plain C declarations: the .cu files read as C with CUDA extensions. */
#ifndef MLA_CUDA_H
#define MLA_CUDA_H

#include <cuda_runtime.h>

#include "../core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cudaError_t -> MLA_ERR_DEVICE with the op name, file and line in the context's message. */
mla_status mla_cuda_check(mla_ctx *ctx, cudaError_t e, const char *what, const char *file, int line);
#define MLA_CUDA_TRY(ctx, call, what)                                                      \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) return mla_cuda_check((ctx), e_, (what), __FILE__, __LINE__); \
    } while (0)
/* After a launch: the launch error, as MLA_ERR_DEVICE. */
#define MLA_CUDA_LAUNCHED(ctx, what) MLA_CUDA_TRY(ctx, cudaGetLastError(), what)

mla_status mla_cuda_decode(mla_ctx *ctx, const mla_decode_args *a); /* decode.cu */
size_t mla_cuda_decode_workspace(const mla_ctx *ctx, const mla_decode_args *a); /* decode.cu */
mla_status mla_cuda_sparse(mla_ctx *ctx, const mla_sparse_args *a); /* sparse.cu */
size_t mla_cuda_sparse_workspace(const mla_ctx *ctx, const mla_sparse_args *a); /* sparse.cu */
mla_status mla_cuda_indices_to_slots(mla_ctx *ctx, const mla_indices_to_slots_args *a); /* indices_to_slots.cu */
mla_status mla_cuda_cache_store(mla_ctx *ctx, const mla_cache_store_args *a); /* cache_store.cu */
mla_status mla_cuda_quantize_q_rope_aware(mla_ctx *ctx, const mla_quantize_q_rope_aware_args *a); /* cache_store.cu */
mla_status mla_cuda_indexer(mla_ctx *ctx, const mla_indexer_args *a); /* indexer.cu */
size_t mla_cuda_indexer_workspace(const mla_ctx *ctx, const mla_indexer_args *a); /* indexer.cu */
mla_status mla_cuda_indexer_cache_store(mla_ctx *ctx, const mla_indexer_cache_store_args *a); /* indexer_cache_store.cu */
mla_status mla_cuda_prefill(mla_ctx *ctx, const mla_prefill_args *a); /* prefill.cu */
size_t mla_cuda_prefill_workspace(const mla_ctx *ctx, const mla_prefill_args *a); /* prefill.cu */
mla_status mla_cuda_prefill_fp8_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a); /* prefill_fused.cu */
size_t mla_cuda_prefill_fp8_fused_workspace(const mla_ctx *ctx, const mla_prefill_fp8_fused_args *a); /* prefill_fused.cu */
mla_status mla_cuda_rope(mla_ctx *ctx, const mla_rope_args *a); /* prefill_fused.cu */
mla_status mla_cuda_rmsnorm(mla_ctx *ctx, const mla_rmsnorm_args *a); /* prefill_fused.cu */
mla_status mla_cuda_quantize_fp8_1x128(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *a); /* prefill_fused.cu */
mla_status mla_cuda_gemm_fp8_block_scaled(mla_ctx *ctx, const mla_gemm_fp8_args *a); /* prefill_fused.cu */

static inline cudaStream_t mla_cuda_stream(const mla_ctx *ctx) { return (cudaStream_t)ctx->stream; }

#ifdef __cplusplus
}
#endif
#endif
