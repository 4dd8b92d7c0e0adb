/* `mla bench`: synthetic-data timing of every operation, figures counted the way FlashMLA counts
 * them, each reported as a fraction of a ceiling measured in the same run (CUDA: copy bandwidth
 * and cuBLASLt GEMMs; CPU: the probe of probe.h). The CUDA parts (events, L2 flush, ceilings)
 * live in bench_cuda.c. */
#ifndef MLA_BENCH_H
#define MLA_BENCH_H

#include <stddef.h>

#include "mla.h"

/* `mla bench ...` (argv[0] = "bench"); returns the process exit code (0, 1 on a failed op, 2 on
 * wrong usage). */
int mla_bench_command(int argc, char **argv);

/* Ceilings the figures are divided by. */
typedef struct mla_bench_ceilings {
    int have_mem, have_bf16, have_fp8;
    double mem_gbps;           /* CUDA: D2D cudaMemcpyAsync of 1 GiB (read + write); CPU: triad */
    double bf16_tflops;        /* CUDA: cuBLASLt BF16 GEMM 8192^3; CPU: f32 FMA peak */
    double fp8_tflops;         /* CUDA: cuBLASLt FP8 e4m3 GEMM 8192^3 (TN, bf16 out); CPU: f32 FMA peak */
    char mem_name[32], bf16_name[32], fp8_name[32]; /* "D2D copy", "cuBLASLt BF16 GEMM", ... */
    char mem_tag[16], bf16_tag[16], fp8_tag[16];    /* short: "copy", "bf16 GEMM", "fp8 GEMM" */
} mla_bench_ceilings;

/* One timed call of an op; returns its status. */
typedef mla_status (*mla_bench_fn)(void *arg);

/* ---- bench_cuda.c (each returns MLA_ERR_NO_DEVICE when built without CUDA) ---- */

/* Times fn on the default stream: warmup calls, then iters calls, each preceded by an L2 flush
 * (cudaMemsetAsync over twice the L2 size) and bracketed by cudaEvents. Writes the median ms.
 * A failing fn stops the timing and returns its status. progress: a stderr line per second. */
mla_status mla_bench_cuda_time(mla_ctx *ctx, mla_bench_fn fn, void *arg, int warmup, int iters, double *median_ms,
                               int progress, char *err, size_t err_n);
/* Measures the copy bandwidth, the BF16 and the FP8 GEMM ceilings on the current device. */
mla_status mla_bench_cuda_ceilings(mla_bench_ceilings *c, int progress, char *err, size_t err_n);
/* Free and total device memory in bytes. */
mla_status mla_bench_cuda_mem_info(size_t *free_bytes, size_t *total_bytes);

#endif
