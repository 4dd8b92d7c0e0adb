/* STUB: replaced by the real implementation. */
#include "cuda.h"

extern "C" mla_status mla_cuda_prefill_fp8_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) { (void)a; return mla_core_refuse(ctx, "prefill_fp8_fused"); }
extern "C" size_t mla_cuda_prefill_fp8_fused_workspace(const mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) { (void)ctx; (void)a; return 0; }
extern "C" mla_status mla_cuda_rope(mla_ctx *ctx, const mla_rope_args *a) { (void)a; return mla_core_refuse(ctx, "rope"); }
extern "C" mla_status mla_cuda_rmsnorm(mla_ctx *ctx, const mla_rmsnorm_args *a) { (void)a; return mla_core_refuse(ctx, "rmsnorm"); }
extern "C" mla_status mla_cuda_quantize_fp8_1x128(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *a) { (void)a; return mla_core_refuse(ctx, "quantize_fp8_1x128"); }
extern "C" mla_status mla_cuda_gemm_fp8_block_scaled(mla_ctx *ctx, const mla_gemm_fp8_args *a) { (void)a; return mla_core_refuse(ctx, "gemm_fp8_block_scaled"); }
