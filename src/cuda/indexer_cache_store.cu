/* STUB: replaced by the real implementation. */
#include "cuda.h"

extern "C" mla_status mla_cuda_indexer_cache_store(mla_ctx *ctx, const mla_indexer_cache_store_args *a) { (void)a; return mla_core_refuse(ctx, "indexer_cache_store"); }
