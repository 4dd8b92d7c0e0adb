/* STUB: replaced by the real implementation. */
#include "cpu.h"
mla_status mla_cpu_decode(mla_ctx *ctx, const mla_decode_args *a) { (void)a; return mla_core_refuse(ctx, "decode"); }
