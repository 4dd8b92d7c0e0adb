/* STUB: replaced by the real implementation. */
#include "cpu.h"
mla_status mla_cpu_sparse(mla_ctx *ctx, const mla_sparse_args *a) { (void)a; return mla_core_refuse(ctx, "sparse"); }
