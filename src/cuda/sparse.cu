/* STUB: replaced by the real implementation. */
#include "cuda.h"

extern "C" mla_status mla_cuda_sparse(mla_ctx *ctx, const mla_sparse_args *a) { (void)a; return mla_core_refuse(ctx, "sparse"); }
extern "C" size_t mla_cuda_sparse_workspace(const mla_ctx *ctx, const mla_sparse_args *a) { (void)ctx; (void)a; return 0; }
