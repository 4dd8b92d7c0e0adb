/* STUB: replaced by the real implementation. */
#include "cpu.h"
mla_status mla_cpu_indexer(mla_ctx *ctx, const mla_indexer_args *a) { (void)a; return mla_core_refuse(ctx, "indexer"); }
