/* The CUDA backend's table: device memory on the context's stream and one slot per operation.
 * A NULL slot is refused by the core with the op's name ("not implemented by the cuda backend"). */
#include <stdio.h>
#include <string.h>

#include "cuda.h"

extern "C" int mla_cuda_device_count_impl(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { cudaGetLastError(); return 0; }
    return n;
}

extern "C" mla_status mla_cuda_check(mla_ctx *ctx, cudaError_t e, const char *what, const char *file, int line) {
    return mla_core_fail(ctx, MLA_ERR_DEVICE, "%s: CUDA error %s (%s) at %s:%d", what, cudaGetErrorName(e),
                         cudaGetErrorString(e), file, line);
}

extern "C" mla_status mla_cuda_ctx_init(mla_ctx *ctx) {
    int n = mla_cuda_device_count_impl();
    if (n == 0) return MLA_ERR_NO_DEVICE;
    if (ctx->device < 0 || ctx->device >= n) return MLA_ERR_INVALID_ARG;
    if (cudaSetDevice(ctx->device) != cudaSuccess) return MLA_ERR_DEVICE;
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, ctx->device) != cudaSuccess) return MLA_ERR_DEVICE;
    ctx->sm_count = p.multiProcessorCount;
    ctx->sm_major = p.major;
    ctx->sm_minor = p.minor;
    snprintf(ctx->device_name, sizeof ctx->device_name, "%s", p.name);
    return MLA_OK;
}

static mla_status cu_malloc(mla_ctx *ctx, size_t bytes, void **ptr) {
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "malloc: cudaMalloc of %zu bytes failed", bytes);
    }
    MLA_CUDA_TRY(ctx, e, "malloc");
    return MLA_OK;
}
static void cu_free(mla_ctx *ctx, void *p) { (void)ctx; cudaFree(p); }
static mla_status cu_to_dev(mla_ctx *ctx, void *dst, const void *src, size_t n) {
    MLA_CUDA_TRY(ctx, cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, mla_cuda_stream(ctx)), "memcpy_to_backend");
    MLA_CUDA_TRY(ctx, cudaStreamSynchronize(mla_cuda_stream(ctx)), "memcpy_to_backend");
    return MLA_OK;
}
static mla_status cu_to_host(mla_ctx *ctx, void *dst, const void *src, size_t n) {
    MLA_CUDA_TRY(ctx, cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, mla_cuda_stream(ctx)), "memcpy_to_host");
    MLA_CUDA_TRY(ctx, cudaStreamSynchronize(mla_cuda_stream(ctx)), "memcpy_to_host");
    return MLA_OK;
}
static mla_status cu_memset(mla_ctx *ctx, void *dst, int v, size_t n) {
    MLA_CUDA_TRY(ctx, cudaMemsetAsync(dst, v, n, mla_cuda_stream(ctx)), "memset");
    return MLA_OK;
}
static mla_status cu_sync(mla_ctx *ctx) {
    MLA_CUDA_TRY(ctx, cudaStreamSynchronize(mla_cuda_stream(ctx)), "synchronize");
    return MLA_OK;
}

/* Declaration order of mla_backend_ops (C++20 designated initializers keep it). */
extern "C" const mla_backend_ops mla_cuda_ops = {
    .name = "cuda",
    .malloc_ = cu_malloc,
    .free_ = cu_free,
    .to_backend = cu_to_dev,
    .to_host = cu_to_host,
    .memset_ = cu_memset,
    .synchronize = cu_sync,
    .decode = mla_cuda_decode,
    .decode_workspace = mla_cuda_decode_workspace,
    .sparse = mla_cuda_sparse,
    .sparse_workspace = mla_cuda_sparse_workspace,
    .indices_to_slots = mla_cuda_indices_to_slots,
    .prefill = mla_cuda_prefill,
    .prefill_workspace = mla_cuda_prefill_workspace,
    .prefill_fp8_fused = mla_cuda_prefill_fp8_fused,
    .prefill_fp8_fused_workspace = mla_cuda_prefill_fp8_fused_workspace,
    .rope = mla_cuda_rope,
    .rmsnorm = mla_cuda_rmsnorm,
    .quantize_fp8_1x128 = mla_cuda_quantize_fp8_1x128,
    .gemm_fp8_block_scaled = mla_cuda_gemm_fp8_block_scaled,
    .indexer = mla_cuda_indexer,
    .indexer_workspace = mla_cuda_indexer_workspace,
    .indexer_cache_store = mla_cuda_indexer_cache_store,
    .cache_store = mla_cuda_cache_store,
    .quantize_q_rope_aware = mla_cuda_quantize_q_rope_aware,
};
