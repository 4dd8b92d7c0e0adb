/* STUB: replaced by the real implementation. */
#include "cuda.h"

extern "C" mla_status mla_cuda_cache_store(mla_ctx *ctx, const mla_cache_store_args *a) { (void)a; return mla_core_refuse(ctx, "cache_store"); }
extern "C" mla_status mla_cuda_quantize_q_rope_aware(mla_ctx *ctx, const mla_quantize_q_rope_aware_args *a) { (void)a; return mla_core_refuse(ctx, "quantize_q_rope_aware"); }
