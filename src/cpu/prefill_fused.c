/* STUB: replaced by the real implementation. */
#include "cpu.h"
mla_status mla_cpu_prefill_fp8_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) { (void)a; return mla_core_refuse(ctx, "prefill_fp8_fused"); }
mla_status mla_cpu_rope(mla_ctx *ctx, const mla_rope_args *a) { (void)a; return mla_core_refuse(ctx, "rope"); }
mla_status mla_cpu_rmsnorm(mla_ctx *ctx, const mla_rmsnorm_args *a) { (void)a; return mla_core_refuse(ctx, "rmsnorm"); }
mla_status mla_cpu_quantize_fp8_1x128(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *a) { (void)a; return mla_core_refuse(ctx, "quantize_fp8_1x128"); }
mla_status mla_cpu_gemm_fp8_block_scaled(mla_ctx *ctx, const mla_gemm_fp8_args *a) { (void)a; return mla_core_refuse(ctx, "gemm_fp8_block_scaled"); }
