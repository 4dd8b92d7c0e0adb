/* The CPU backend's table: host memory and one slot per operation. */
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "cpu.h"

int mla_cpu_threads(const mla_ctx *ctx) { return ctx->num_threads > 0 ? ctx->num_threads : omp_get_max_threads(); }

static mla_status cpu_malloc(mla_ctx *ctx, size_t bytes, void **ptr) {
    /* 64-byte aligned so vector loads never split cache lines */
    size_t n = (bytes + 63) & ~(size_t)63;
    *ptr = aligned_alloc(64, n);
    if (!*ptr) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "malloc: %zu bytes failed", bytes);
    return MLA_OK;
}
static void cpu_free(mla_ctx *ctx, void *p) { (void)ctx; free(p); }
static mla_status cpu_copy(mla_ctx *ctx, void *dst, const void *src, size_t n) {
    (void)ctx;
    memmove(dst, src, n);
    return MLA_OK;
}
static mla_status cpu_memset(mla_ctx *ctx, void *dst, int v, size_t n) {
    (void)ctx;
    memset(dst, v, n);
    return MLA_OK;
}
static mla_status cpu_sync(mla_ctx *ctx) { (void)ctx; return MLA_OK; }

const mla_backend_ops mla_cpu_ops = {
    .name = "cpu",
    .malloc_ = cpu_malloc,
    .free_ = cpu_free,
    .to_backend = cpu_copy,
    .to_host = cpu_copy,
    .memset_ = cpu_memset,
    .synchronize = cpu_sync,
    .decode = mla_cpu_decode,
    .sparse = mla_cpu_sparse,
    .indices_to_slots = mla_cpu_indices_to_slots,
    .cache_store = mla_cpu_cache_store,
    .quantize_q_rope_aware = mla_cpu_quantize_q_rope_aware,
    .indexer = mla_cpu_indexer,
    .indexer_cache_store = mla_cpu_indexer_cache_store,
    .prefill = mla_cpu_prefill,
    .prefill_fp8_fused = mla_cpu_prefill_fp8_fused,
    .rope = mla_cpu_rope,
    .rmsnorm = mla_cpu_rmsnorm,
    .quantize_fp8_1x128 = mla_cpu_quantize_fp8_1x128,
    .gemm_fp8_block_scaled = mla_cpu_gemm_fp8_block_scaled,
};
