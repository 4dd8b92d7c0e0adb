/* STUB: replaced by the real implementation. */
#include "cuda.h"

extern "C" mla_status mla_cuda_indexer(mla_ctx *ctx, const mla_indexer_args *a) { (void)a; return mla_core_refuse(ctx, "indexer"); }
extern "C" size_t mla_cuda_indexer_workspace(const mla_ctx *ctx, const mla_indexer_args *a) { (void)ctx; (void)a; return 0; }
