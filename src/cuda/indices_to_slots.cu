/* STUB: replaced by the real implementation. */
#include "cuda.h"

extern "C" mla_status mla_cuda_indices_to_slots(mla_ctx *ctx, const mla_indices_to_slots_args *a) { (void)a; return mla_core_refuse(ctx, "indices_to_slots"); }
