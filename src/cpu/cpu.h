/* Internal: the CPU backend's entry points, one file per operation (src/cpu/<op>.c). */
#ifndef MLA_CPU_H
#define MLA_CPU_H

#include "../core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

mla_status mla_cpu_decode(mla_ctx *ctx, const mla_decode_args *a);              /* decode.c */
mla_status mla_cpu_sparse(mla_ctx *ctx, const mla_sparse_args *a);              /* sparse.c */
mla_status mla_cpu_indices_to_slots(mla_ctx *ctx, const mla_indices_to_slots_args *a); /* indices_to_slots.c */
mla_status mla_cpu_cache_store(mla_ctx *ctx, const mla_cache_store_args *a);    /* cache_store.c */
mla_status mla_cpu_quantize_q_rope_aware(mla_ctx *ctx, const mla_quantize_q_rope_aware_args *a); /* cache_store.c */
mla_status mla_cpu_indexer(mla_ctx *ctx, const mla_indexer_args *a);            /* indexer.c */
mla_status mla_cpu_indexer_cache_store(mla_ctx *ctx, const mla_indexer_cache_store_args *a); /* indexer_cache_store.c */
mla_status mla_cpu_prefill(mla_ctx *ctx, const mla_prefill_args *a);            /* prefill.c */
mla_status mla_cpu_prefill_fp8_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a); /* prefill_fused.c */
mla_status mla_cpu_rope(mla_ctx *ctx, const mla_rope_args *a);                  /* prefill_fused.c */
mla_status mla_cpu_rmsnorm(mla_ctx *ctx, const mla_rmsnorm_args *a);            /* prefill_fused.c */
mla_status mla_cpu_quantize_fp8_1x128(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *a); /* prefill_fused.c */
mla_status mla_cpu_gemm_fp8_block_scaled(mla_ctx *ctx, const mla_gemm_fp8_args *a); /* prefill_fused.c */

/* OpenMP thread count for a context (0 = all cores). */
int mla_cpu_threads(const mla_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
