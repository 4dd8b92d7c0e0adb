/* Internal: the context and the table of functions every backend fills (never installed).
 * An empty slot means the backend lacks the operation; the core refuses it by name. */
#ifndef MLA_CORE_BACKEND_H
#define MLA_CORE_BACKEND_H

#include "mla.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mla_backend_ops {
    const char *name;
    /* memory where the backend computes */
    mla_status (*malloc_)(mla_ctx *ctx, size_t bytes, void **ptr);
    void (*free_)(mla_ctx *ctx, void *ptr);
    mla_status (*to_backend)(mla_ctx *ctx, void *dst, const void *src_host, size_t bytes);
    mla_status (*to_host)(mla_ctx *ctx, void *dst_host, const void *src, size_t bytes);
    mla_status (*memset_)(mla_ctx *ctx, void *dst, int value, size_t bytes);
    mla_status (*synchronize)(mla_ctx *ctx);
    /* operations (SPEC section 4) */
    mla_status (*decode)(mla_ctx *ctx, const mla_decode_args *a);
    size_t (*decode_workspace)(const mla_ctx *ctx, const mla_decode_args *a);
    mla_status (*sparse)(mla_ctx *ctx, const mla_sparse_args *a);
    size_t (*sparse_workspace)(const mla_ctx *ctx, const mla_sparse_args *a);
    mla_status (*indices_to_slots)(mla_ctx *ctx, const mla_indices_to_slots_args *a);
    mla_status (*prefill)(mla_ctx *ctx, const mla_prefill_args *a);
    size_t (*prefill_workspace)(const mla_ctx *ctx, const mla_prefill_args *a);
    mla_status (*prefill_fp8_fused)(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a);
    size_t (*prefill_fp8_fused_workspace)(const mla_ctx *ctx, const mla_prefill_fp8_fused_args *a);
    mla_status (*rope)(mla_ctx *ctx, const mla_rope_args *a);
    mla_status (*rmsnorm)(mla_ctx *ctx, const mla_rmsnorm_args *a);
    mla_status (*quantize_fp8_1x128)(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *a);
    mla_status (*gemm_fp8_block_scaled)(mla_ctx *ctx, const mla_gemm_fp8_args *a);
    mla_status (*indexer)(mla_ctx *ctx, const mla_indexer_args *a);
    size_t (*indexer_workspace)(const mla_ctx *ctx, const mla_indexer_args *a);
    mla_status (*indexer_cache_store)(mla_ctx *ctx, const mla_indexer_cache_store_args *a);
    mla_status (*cache_store)(mla_ctx *ctx, const mla_cache_store_args *a);
    mla_status (*quantize_q_rope_aware)(mla_ctx *ctx, const mla_quantize_q_rope_aware_args *a);
} mla_backend_ops;

struct mla_ctx {
    mla_backend backend;            /* never AUTO */
    const mla_backend_ops *ops;
    int num_threads;                /* CPU: 0 = OpenMP default */
    int device;                     /* CUDA ordinal */
    void *stream;                   /* cudaStream_t */
    int sm_count, sm_major, sm_minor; /* CUDA device facts read at create */
    char device_name[128];
    char msg[1024];                 /* last error */
};

extern const mla_backend_ops mla_cpu_ops;
#ifdef MLA_HAVE_CUDA
extern const mla_backend_ops mla_cuda_ops;
/* CUDA-side context setup (src/cuda/backend.cu): checks the device, fills sm_count etc. */
mla_status mla_cuda_ctx_init(mla_ctx *ctx);
int mla_cuda_device_count_impl(void);
#endif

/* Records a message on ctx and returns rc. printf-style. */
mla_status mla_core_fail(mla_ctx *ctx, mla_status rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* MLA_ERR_UNSUPPORTED naming the operation and the backend. */
mla_status mla_core_refuse(mla_ctx *ctx, const char *op);
void mla_core_clear_error(mla_ctx *ctx);

#define MLA_TRY(expr) do { mla_status rc_ = (expr); if (rc_ != MLA_OK) return rc_; } while (0)
/* A bug inside libmla: file, line, abort. Never for user input. */
#define MLA_ASSERT(cond) do { if (!(cond)) mla_core_assert_fail(#cond, __FILE__, __LINE__); } while (0)
void mla_core_assert_fail(const char *cond, const char *file, int line);

#ifdef __cplusplus
}
#endif
#endif
