/* Internal: the CUDA backend's entry points, one file per operation (src/cuda/<op>.cu), and the
 * helpers they share. Plain C declarations: the .cu files read as C with CUDA extensions. */
#ifndef MLA_CUDA_H
#define MLA_CUDA_H

#include <cuda_runtime.h>

#include "../core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cudaError_t -> MLA_ERR_DEVICE with the op name, file and line in the context's message. */
mla_status mla_cuda_check(mla_ctx *ctx, cudaError_t e, const char *what, const char *file, int line);
#define MLA_CUDA_TRY(ctx, call, what)                                                      \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) return mla_cuda_check((ctx), e_, (what), __FILE__, __LINE__); \
    } while (0)
/* After a launch: the launch error, as MLA_ERR_DEVICE. */
#define MLA_CUDA_LAUNCHED(ctx, what) MLA_CUDA_TRY(ctx, cudaGetLastError(), what)

static inline cudaStream_t mla_cuda_stream(const mla_ctx *ctx) { return (cudaStream_t)ctx->stream; }

#ifdef __cplusplus
}
#endif
#endif
