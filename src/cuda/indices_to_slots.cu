/* mla_indices_to_slots on CUDA: logical positions [T,topk] -> slot ids [T,topk] through the block
   table (spec 4.2). p in [0, seq_lens[b]) with a page id in [0, num_pages) gives
   page * page_size + p % page_size; everything else (negatives, p >= seq_len, bad page) gives -1.
   v1  one thread per entry over the flat [T, topk] range (grid-stride), request by binary
       search of q_offsets                                                               (default)
   Not yet timed (written without a GPU at hand).
   Run alone: build/tests/test_cuda_misc (CUDA against the CPU backend, exact). */
#include "cuda.h"
#include "indexer_common.cuh"

#define I2S_THREADS 256
#define I2S_MAX_BLOCKS 65536

typedef struct i2s_params {
    int32_t T, K, B;
    int32_t page_size, num_pages;
    const int32_t *indices; /* [T, K] */
    int64_t in_stride;
    int32_t *slots;         /* [T, K] */
    int64_t out_stride;
    const int32_t *q_offsets, *seq_lens, *block_table; /* device */
    int64_t bt_stride;
} i2s_params;

__global__ void __launch_bounds__(I2S_THREADS) i2s_kernel_v1(i2s_params p) {
    const int64_t n = (int64_t)p.T * p.K;
    for (int64_t e = (int64_t)blockIdx.x * I2S_THREADS + threadIdx.x; e < n; e += (int64_t)gridDim.x * I2S_THREADS) {
        const int t = (int)(e / p.K), j = (int)(e % p.K);
        const int32_t pos = p.indices[(int64_t)t * p.in_stride + j];
        int32_t s = -1;
        const int b = request_of_token(p.q_offsets, p.B, t);
        if (b >= 0 && pos >= 0 && pos < p.seq_lens[b]) {
            const int32_t page = page_of(p.block_table, p.bt_stride, b, pos, p.page_size, p.num_pages);
            if (page >= 0) s = (int32_t)((int64_t)page * p.page_size + pos % p.page_size);
        }
        p.slots[(int64_t)t * p.out_stride + j] = s;
    }
}

static mla_status i2s_launch_v1(mla_ctx *ctx, const i2s_params *p) {
    const int64_t n = (int64_t)p->T * p->K;
    int64_t blocks = (n + I2S_THREADS - 1) / I2S_THREADS;
    if (blocks > I2S_MAX_BLOCKS) blocks = I2S_MAX_BLOCKS;
    i2s_kernel_v1<<<(int)blocks, I2S_THREADS, 0, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, "indices_to_slots");
    return MLA_OK;
}

extern "C" mla_status mla_cuda_indices_to_slots(mla_ctx *ctx, const mla_indices_to_slots_args *a) {
    i2s_params p;
    p.T = a->num_tokens;
    p.K = a->topk;
    p.B = a->batch.num_requests;
    p.page_size = a->page_size;
    p.num_pages = a->num_pages;
    p.indices = a->indices;
    p.in_stride = a->indices_stride_t ? a->indices_stride_t : a->topk;
    p.slots = a->slots;
    p.out_stride = a->slots_stride_t ? a->slots_stride_t : a->topk;
    p.q_offsets = a->batch.q_offsets;
    p.seq_lens = a->batch.seq_lens;
    p.block_table = a->batch.block_table;
    p.bt_stride = a->batch.bt_stride;
    if (p.T == 0) return MLA_OK;
    return i2s_launch_v1(ctx, &p);
}
