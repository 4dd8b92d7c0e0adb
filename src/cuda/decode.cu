/* STUB: replaced by the real implementation. */
#include "cuda.h"

extern "C" mla_status mla_cuda_decode(mla_ctx *ctx, const mla_decode_args *a) { (void)a; return mla_core_refuse(ctx, "decode"); }
extern "C" size_t mla_cuda_decode_workspace(const mla_ctx *ctx, const mla_decode_args *a) { (void)ctx; (void)a; return 0; }
