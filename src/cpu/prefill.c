/* STUB: replaced by the real implementation. */
#include "cpu.h"
mla_status mla_cpu_prefill(mla_ctx *ctx, const mla_prefill_args *a) { (void)a; return mla_core_refuse(ctx, "prefill"); }
