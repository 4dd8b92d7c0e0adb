/* Split-KV plan and combine for mla_decode / mla_sparse on CUDA: f32 partials of S splits
   [S, T*H, 512] + per-split log2-sum-exp -> out [T,H,512] bf16 (sink applied), lse, max_logits.
   v1  one CTA of 128 threads per (token, head) row, 4 columns per thread (default)
   Run alone: `mla check decode` with a small batch and long seq_lens (splits > 1). */
#include "attn.cuh"

int mla_cuda_attn_splits(int64_t work_ctas, int sm_count) {
    if (sm_count <= 0) sm_count = 132;
    const int64_t target = 2 * (int64_t)sm_count; /* one CTA per SM is resident: aim for two waves */
    if (work_ctas <= 0 || work_ctas >= target) return 1;
    int64_t n = (target + work_ctas - 1) / work_ctas;
    return (int)(n > ATT_MAX_SPLITS ? ATT_MAX_SPLITS : n);
}

size_t mla_cuda_attn_workspace_bytes(int64_t rows, int splits) {
    if (splits <= 1 || rows <= 0) return 0;
    /* part_o [S, rows, 512], part_lse [S, rows], part_max [S, rows] */
    return (size_t)splits * (size_t)rows * (ATT_DV + 2) * sizeof(float);
}

mla_status mla_cuda_attn_bind_workspace(mla_ctx *ctx, const char *op, mla_attn_params *p, void *ws, size_t bytes) {
    const int64_t rows = (int64_t)p->num_tokens * p->num_heads;
    const size_t need = mla_cuda_attn_workspace_bytes(rows, p->num_splits);
    p->part_o = p->part_lse = p->part_max = 0;
    if (need == 0) return MLA_OK;
    if (!ws || bytes < need)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                             "%s: workspace_bytes = %zu (workspace %s) is below the %zu bytes this call needs "
                             "(%d key splits; ask mla_%s_workspace_size)",
                             op, bytes, ws ? "given" : "NULL", need, p->num_splits, op);
    if ((uintptr_t)ws % 16 != 0)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "%s: workspace must be 16-byte aligned", op);
    float *f = (float *)ws;
    p->part_o = f;
    p->part_lse = f + (size_t)p->num_splits * rows * ATT_DV;
    p->part_max = p->part_lse + (size_t)p->num_splits * rows;
    return MLA_OK;
}

#define CMB_THREADS 128
static_assert(CMB_THREADS * 4 == ATT_DV, "4 columns per thread");

/* Row (t, h): weights w_s = 2^(lse_s - M), out = sum w_s o_s / sum w_s, lse = (M + log2 sum w_s) ln 2. */
__global__ __launch_bounds__(CMB_THREADS) void combine_kernel_v1(const __grid_constant__ mla_attn_params p) {
    const int64_t rows = (int64_t)p.num_tokens * p.num_heads;
    const int S = p.num_splits;
    const int c = 4 * threadIdx.x;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const int64_t t = row / p.num_heads, h = row % p.num_heads;
        float M = -INFINITY, mx = -INFINITY;
        for (int s = 0; s < S; s++) {
            M = fmaxf(M, p.part_lse[s * rows + row]);
            mx = fmaxf(mx, p.part_max[s * rows + row]);
        }
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        float lse = INFINITY, f = 0.0f;
        if (M != -INFINITY) {
            float W = 0.0f;
            for (int s = 0; s < S; s++) {
                const float w = exp2f(p.part_lse[s * rows + row] - M); /* -inf (empty split) -> 0 */
                if (w == 0.0f) continue;                               /* no key (o never written) or negligible */
                const float4 v = *reinterpret_cast<const float4 *>(p.part_o + (s * rows + row) * ATT_DV + c);
                W += w;
                acc[0] += w * v.x;
                acc[1] += w * v.y;
                acc[2] += w * v.z;
                acc[3] += w * v.w;
            }
            lse = (M + log2f(W)) * ATT_LN2;
            f = 1.0f / W;
            if (p.sink) f *= att_sink_factor(p.sink[h], lse);
        }
        uint16_t *orow = p.out + t * p.out_stride_t + h * p.out_stride_h + c;
#pragma unroll
        for (int i = 0; i < 4; i++) orow[i] = f32_to_bf16_dev(acc[i] * f);
        if (threadIdx.x == 0) {
            if (p.lse) p.lse[t * p.lse_stride_t + h] = lse;
            if (p.max_logits) p.max_logits[t * p.lse_stride_t + h] = M != -INFINITY ? mx * ATT_LN2 : -INFINITY;
        }
    }
}

mla_status mla_cuda_attn_combine(mla_ctx *ctx, const mla_attn_params *p) {
    const int64_t rows = (int64_t)p->num_tokens * p->num_heads;
    if (rows <= 0 || p->num_splits <= 1) return MLA_OK;
    const unsigned grid = (unsigned)(rows < (1 << 30) ? rows : (1 << 30));
    combine_kernel_v1<<<grid, CMB_THREADS, 0, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, p->sparse ? "sparse: combine" : "decode: combine");
    return MLA_OK;
}
