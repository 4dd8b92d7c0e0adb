/* mla_prefill_fp8_fused on CUDA: bf16 q [T,H,192] and a MLA_KV_BF16 cache with raw kv_a rows,
   kv_b_proj [H*256,512] e4m3 with 128x128 block scales -> out [T,H,128] bf16, lse [T,H]; q and the
   new cache rows left roped / normed (spec 4.4). Also its building blocks mla_rope, mla_rmsnorm,
   mla_quantize_fp8_1x128 and mla_gemm_fp8_block_scaled.
   v1  five launches on the context's stream: plan (active requests, kv prefix sums, on the device)
       -> RoPE + RMSNorm of the new rows and RoPE of q -> gather + 1x128 e4m3 quantize of every
       active request's rows [0, seq_len) -> block-scaled GEMM on mma.sync m16n8k32 e4m3 (f32
       promotion every 128 k) -> K_nope | V bf16 -> prefill v1 (src/cuda/prefill.cu)
                                                                          (not yet measured)
   Run alone: build/tests/test_cuda_prefill (checks against the CPU backend). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common.cuh"
#include "cuda.h"
#include "prefill.cuh"

/* ---- tile constants ---- */
/* block-scaled GEMM v1: 64 x 128 CTA tile, 4 warps of 32 x 64, k in blocks of 128 (one scale) */
#define GM_BM 64
#define GM_BN 128                /* = the weight's scale block: one b_s per CTA and k block */
#define GM_BK 128                /* = the scale block along k */
#define GM_THREADS 128
#define GM_LD (GM_BK + 16)       /* smem row in bytes: 144, 8 ldmatrix rows hit 8 bank groups */
#define GM_A_BYTES (GM_BM * GM_LD)
#define GM_B_BYTES (GM_BN * GM_LD)
#define GM_STAGES 2
#define GM_SMEM (GM_STAGES * (GM_A_BYTES + GM_B_BYTES))
static_assert(GM_BM == 2 * 32 && GM_BN == 2 * 64 && GM_THREADS == 4 * 32, "2 x 2 warps of 32 x 64");
static_assert(GM_A_BYTES % 16 == 0 && GM_B_BYTES % 16 == 0, "16-byte aligned regions");
static_assert(GM_SMEM <= 227 * 1024, "GEMM tiles fit in shared memory");
/* row kernels */
#define RN_THREADS 128           /* RMSNorm: one CTA per row */
#define RP_THREADS 256           /* RoPE: one thread per pair */
#define QZ_WARPS 4               /* quantize / gather: one warp per row, 4 rows per CTA */
#define PL_THREADS 256           /* plan: one CTA */
#define LAT 512                  /* latent width */
#define ROPE 64
#define ROW_ELEMS 576            /* MLA_KV_BF16 row: latent | rope */
#define KVW 256                  /* kv_b_proj rows per head: K_nope 128 | V 128 */

/* ---- device helpers ---- */

static __device__ __forceinline__ int clampi(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }

static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* interleaved RoPE of the pair x[0], x[1] (bf16) with (cos, sin) = fc[2k], fc[2k+1]: the exact
 * value (bf16 x f32 products are exact in f64) rounded to bf16 once */
static __device__ __forceinline__ void rope_pair(uint16_t *x, const float *fc, int k) {
    const double c = fc[2 * k], s = fc[2 * k + 1];
    const double a = bf16_to_f32_dev(x[0]), b = bf16_to_f32_dev(x[1]);
    const double y0 = a * c - b * s, y1 = a * s + b * c;
    x[0] = __bfloat16_as_ushort(__double2bfloat16(y0));
    x[1] = __bfloat16_as_ushort(__double2bfloat16(y1));
}

/* RMSNorm of one row in place by the whole CTA: y = bf16(bf16(x * r) * gamma), r =
 * 1 / sqrt(mean(x^2) + eps) in f32. Each thread rewrites only the elements it read. */
static __device__ void rmsnorm_row(uint16_t *x, int dim, const uint16_t *gamma, float eps, float *red /* [32] */) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    float ss = 0.f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = bf16_to_f32_dev(x[i]);
        ss += v * v;
    }
    ss = warp_sum(ss);
    if (lane == 0) red[w] = ss;
    __syncthreads();
    float tot = 0.f;
    for (int i = 0; i < nw; i++) tot += red[i];
    const float r = 1.0f / sqrtf(tot / (float)dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float y = bf16_to_f32_dev(f32_to_bf16_dev(bf16_to_f32_dev(x[i]) * r));
        x[i] = f32_to_bf16_dev(y * bf16_to_f32_dev(gamma[i]));
    }
}

/* 1x128 activation quantization: s = min(amax, 1200) / 448, q = e4m3(x / s) saturating; an
 * all-zero group (s = 0) gives q = 0 */
static __device__ __forceinline__ float quant_scale(float amax) { return fminf(amax, 1200.f) / 448.f; }
static __device__ __forceinline__ uint32_t quant4(float x0, float x1, float x2, float x3, float s) {
    if (!(s > 0.f)) return 0u;
    return (uint32_t)f32_to_e4m3_dev(x0 / s) | (uint32_t)f32_to_e4m3_dev(x1 / s) << 8 |
           (uint32_t)f32_to_e4m3_dev(x2 / s) << 16 | (uint32_t)f32_to_e4m3_dev(x3 / s) << 24;
}


/* ================================ building blocks ================================ */

/* ---- mla_rope: one thread per (row, pair) ---- */
__global__ void __launch_bounds__(RP_THREADS) rope_kernel_v1(int32_t n, uint16_t *x, int64_t stride, const int32_t *pos,
                                                             const float *freqs, int32_t max_pos) {
    const int64_t g = (int64_t)blockIdx.x * RP_THREADS + threadIdx.x;
    if (g >= (int64_t)n * 32) return;
    const int64_t i = g >> 5;
    const int k = (int)(g & 31);
    const int32_t ps = pos[i];
    if (ps < 0 || ps >= max_pos) return; /* out of range: skipped */
    rope_pair(x + i * stride + 2 * k, freqs + (int64_t)ps * ROPE, k);
}

extern "C" mla_status mla_cuda_rope(mla_ctx *ctx, const mla_rope_args *a) {
    const int64_t stride = a->x_stride ? a->x_stride : ROPE;
    const int64_t blocks = ((int64_t)a->num_rows * 32 + RP_THREADS - 1) / RP_THREADS;
    rope_kernel_v1<<<(unsigned)blocks, RP_THREADS, 0, mla_cuda_stream(ctx)>>>(a->num_rows, a->x, stride, a->pos,
                                                                              a->freqs_cis, a->max_pos);
    MLA_CUDA_LAUNCHED(ctx, "rope");
    return MLA_OK;
}

/* ---- mla_rmsnorm: one CTA per row ---- */
__global__ void __launch_bounds__(RN_THREADS) rmsnorm_kernel_v1(int32_t dim, uint16_t *x, int64_t stride,
                                                                const uint16_t *gamma, float eps) {
    __shared__ float red[32];
    rmsnorm_row(x + (int64_t)blockIdx.x * stride, dim, gamma, eps, red);
}

extern "C" mla_status mla_cuda_rmsnorm(mla_ctx *ctx, const mla_rmsnorm_args *a) {
    const int64_t stride = a->x_stride ? a->x_stride : a->dim;
    rmsnorm_kernel_v1<<<(unsigned)a->num_rows, RN_THREADS, 0, mla_cuda_stream(ctx)>>>(a->dim, a->x, stride, a->gamma,
                                                                                     a->eps);
    MLA_CUDA_LAUNCHED(ctx, "rmsnorm");
    return MLA_OK;
}

/* ---- mla_quantize_fp8_1x128: one warp per row, 128-groups in turn, 4 elements per lane ---- */
__global__ void __launch_bounds__(QZ_WARPS * 32) quantize_kernel_v1(int32_t n, int32_t dim, const uint16_t *x,
                                                                    int64_t stride, uint8_t *q, float *s) {
    const int lane = threadIdx.x & 31;
    const int64_t row = (int64_t)blockIdx.x * QZ_WARPS + (threadIdx.x >> 5);
    if (row >= n) return;
    const uint16_t *xr = x + row * stride;
    const int groups = dim / 128;
    for (int gi = 0; gi < groups; gi++) {
        const uint16_t *xg = xr + gi * 128 + lane * 4;
        float v0 = bf16_to_f32_dev(xg[0]), v1 = bf16_to_f32_dev(xg[1]), v2 = bf16_to_f32_dev(xg[2]),
              v3 = bf16_to_f32_dev(xg[3]);
        float amax = fmaxf(fmaxf(fabsf(v0), fabsf(v1)), fmaxf(fabsf(v2), fabsf(v3)));
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        const float sc = quant_scale(amax);
        uint32_t w = quant4(v0, v1, v2, v3, sc);
        uint8_t *qg = q + row * dim + gi * 128 + lane * 4;
        qg[0] = (uint8_t)w;
        qg[1] = (uint8_t)(w >> 8);
        qg[2] = (uint8_t)(w >> 16);
        qg[3] = (uint8_t)(w >> 24);
        if (lane == 0) s[row * groups + gi] = sc;
    }
}

extern "C" mla_status mla_cuda_quantize_fp8_1x128(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *a) {
    const int64_t stride = a->x_stride ? a->x_stride : a->dim;
    const int64_t blocks = ((int64_t)a->num_rows + QZ_WARPS - 1) / QZ_WARPS;
    quantize_kernel_v1<<<(unsigned)blocks, QZ_WARPS * 32, 0, mla_cuda_stream(ctx)>>>(a->num_rows, a->dim, a->x, stride,
                                                                                    a->q, a->s);
    MLA_CUDA_LAUNCHED(ctx, "quantize_fp8_1x128");
    return MLA_OK;
}

/* ---- mla_gemm_fp8_block_scaled v1 ----
 * CTA (blockIdx.x, blockIdx.y) computes c rows [m0, m0+64), columns [n0, n0+128). Warp w owns rows
 * (w&1)*32 + [0,32) and columns (w>>1)*64 + [0,64): 2 x 8 mma tiles of 16 x 8. Per k block of 128
 * the e4m3 products accumulate in `part` (f32, tensor cores), then acc += part * a_s * b_s. */
typedef struct gemm_params {
    int32_t m, n, k;           /* k % 128 == 0 */
    const int32_t *m_dev;      /* NULL, or the rows present, read on the device (<= m) */
    const uint8_t *a;          /* [m, k] e4m3, 16-byte aligned */
    const float *a_s;          /* [m, k/128] */
    const uint8_t *b;          /* [n, k] e4m3, 16-byte aligned */
    const float *b_s;          /* [ceil(n/128), k/128] */
    uint16_t *c;               /* [m, c_stride] bf16 */
    int64_t c_stride;
    int c_pairs;               /* 1: c and c_stride allow 4-byte stores of column pairs */
} gemm_params;

static __device__ __forceinline__ void gemm_load_v1(const gemm_params &p, int m, int m0, int n0, int kb, uint8_t *sA,
                                                    uint8_t *sB) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int it = 0; it < GM_BM * 8 / GM_THREADS; it++) { /* 8 chunks of 16 bytes per 128-byte row */
        int c = tid + it * GM_THREADS, r = c >> 3, cc = c & 7;
        bool ok = m0 + r < m;
        int64_t row = ok ? m0 + r : m0;
        cp_async_16_zfill(sA + r * GM_LD + cc * 16, p.a + row * p.k + (int64_t)kb * GM_BK + cc * 16, ok);
    }
#pragma unroll
    for (int it = 0; it < GM_BN * 8 / GM_THREADS; it++) {
        int c = tid + it * GM_THREADS, r = c >> 3, cc = c & 7;
        bool ok = n0 + r < p.n;
        int64_t row = ok ? n0 + r : n0;
        cp_async_16_zfill(sB + r * GM_LD + cc * 16, p.b + row * p.k + (int64_t)kb * GM_BK + cc * 16, ok);
    }
}

static __device__ __forceinline__ void store_pair(const gemm_params &p, int64_t row, int col, float v0, float v1) {
    uint16_t *dst = p.c + row * p.c_stride + col;
    if (p.c_pairs && col + 1 < p.n) {
        *(uint32_t *)dst = pack_bf16x2(v0, v1);
    } else {
        if (col < p.n) dst[0] = f32_to_bf16_dev(v0);
        if (col + 1 < p.n) dst[1] = f32_to_bf16_dev(v1);
    }
}

__global__ void __launch_bounds__(GM_THREADS) gemm_kernel_v1(const gemm_params p) {
    extern __shared__ __align__(16) uint8_t smem[];
    int m = p.m;
    if (p.m_dev) m = min(m, max(*p.m_dev, 0));
    const int m0 = blockIdx.x * GM_BM, n0 = blockIdx.y * GM_BN;
    if (m0 >= m) return;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, wm = warp & 1, wn = warp >> 1;
    const int nkb = p.k / GM_BK;
    const float *bs_row = p.b_s + (int64_t)(n0 / GM_BN) * nkb;

    float acc[2][8][4];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int nb = 0; nb < 8; nb++) acc[mi][nb][0] = acc[mi][nb][1] = acc[mi][nb][2] = acc[mi][nb][3] = 0.f;

    /* ldmatrix lane addresses: A 16x32 e4m3 = four 8x16-byte matrices (rows lane&15, bytes
     * (lane>>4)*16); B (weight rows = n) as for K in prefill.cu, in 16-byte units */
    const int a_row = wm * 32 + (lane & 15), a_col = (lane >> 4) * 16;
    const int b_row = wn * 64 + (lane & 7) + ((lane >> 4) << 3), b_col = ((lane >> 3) & 1) * 16;

    gemm_load_v1(p, m, m0, n0, 0, smem, smem + GM_A_BYTES);
    cp_async_commit();
    for (int kb = 0; kb < nkb; kb++) {
        if (kb + 1 < nkb) {
            uint8_t *st = smem + ((kb + 1) & 1) * (GM_A_BYTES + GM_B_BYTES);
            gemm_load_v1(p, m, m0, n0, kb + 1, st, st + GM_A_BYTES);
        }
        cp_async_commit();
        CP_ASYNC_WAIT(1);
        __syncthreads();
        const uint8_t *sA = smem + (kb & 1) * (GM_A_BYTES + GM_B_BYTES), *sB = sA + GM_A_BYTES;

        float part[2][8][4];
#pragma unroll
        for (int mi = 0; mi < 2; mi++)
#pragma unroll
            for (int nb = 0; nb < 8; nb++) part[mi][nb][0] = part[mi][nb][1] = part[mi][nb][2] = part[mi][nb][3] = 0.f;
#pragma unroll 1
        for (int ks = 0; ks < GM_BK / 32; ks++) { /* not unrolled: keeps the fragments' registers few */
            uint32_t af[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) ldmatrix_x4(af[mi], sA + (a_row + mi * 16) * GM_LD + ks * 32 + a_col);
#pragma unroll
            for (int np = 0; np < 4; np++) {
                uint32_t bf[4];
                ldmatrix_x4(bf, sB + (b_row + np * 16) * GM_LD + ks * 32 + b_col);
#pragma unroll
                for (int mi = 0; mi < 2; mi++) {
                    mma_e4m3_16832(part[mi][2 * np], af[mi], bf);
                    mma_e4m3_16832(part[mi][2 * np + 1], af[mi], bf + 2);
                }
            }
        }
        /* promote: acc += part * a_s[row, kb] * b_s[n0/128, kb] */
        const float bsc = bs_row[kb];
#pragma unroll
        for (int mi = 0; mi < 2; mi++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                const int row = m0 + wm * 32 + mi * 16 + (lane >> 2) + hf * 8;
                const float sc = row < m ? p.a_s[(int64_t)row * nkb + kb] * bsc : 0.f;
#pragma unroll
                for (int nb = 0; nb < 8; nb++) {
                    acc[mi][nb][2 * hf] += part[mi][nb][2 * hf] * sc;
                    acc[mi][nb][2 * hf + 1] += part[mi][nb][2 * hf + 1] * sc;
                }
            }
        __syncthreads(); /* this stage is refilled next iteration */
    }

#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            const int row = m0 + wm * 32 + mi * 16 + (lane >> 2) + hf * 8;
            if (row >= m) continue;
#pragma unroll
            for (int nb = 0; nb < 8; nb++)
                store_pair(p, row, n0 + wn * 64 + nb * 8 + 2 * (lane & 3), acc[mi][nb][2 * hf], acc[mi][nb][2 * hf + 1]);
        }
}

static mla_status gemm_launch_v1(mla_ctx *ctx, const char *op, const gemm_params *p) {
    if (p->m <= 0 || p->n <= 0) return MLA_OK;
    MLA_CUDA_TRY(ctx, cudaFuncSetAttribute(gemm_kernel_v1, cudaFuncAttributeMaxDynamicSharedMemorySize, GM_SMEM), op);
    dim3 grid((unsigned)((p->m + GM_BM - 1) / GM_BM), (unsigned)((p->n + GM_BN - 1) / GM_BN));
    gemm_kernel_v1<<<grid, GM_THREADS, GM_SMEM, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, op);
    return MLA_OK;
}

static int aligned16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

extern "C" mla_status mla_cuda_gemm_fp8_block_scaled(mla_ctx *ctx, const mla_gemm_fp8_args *a) {
    const char *op = "gemm_fp8_block_scaled";
    if (!aligned16(a->a) || !aligned16(a->b))
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "%s: %s must be 16-byte aligned on the cuda backend (gemm v1)", op,
                             aligned16(a->a) ? "b" : "a");
    if ((int64_t)(a->n + GM_BN - 1) / GM_BN > 65535)
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "%s: n = %d exceeds %d on the cuda backend (gemm v1)", op, a->n,
                             65535 * GM_BN);
    gemm_params p;
    memset(&p, 0, sizeof p);
    p.m = a->m;
    p.n = a->n;
    p.k = a->k;
    p.a = a->a;
    p.a_s = a->a_s;
    p.b = a->b;
    p.b_s = a->b_s;
    p.c = a->c;
    p.c_stride = a->c_stride ? a->c_stride : a->n;
    p.c_pairs = ((uintptr_t)a->c & 3u) == 0 && p.c_stride % 2 == 0;
    return gemm_launch_v1(ctx, op, &p);
}

/* ================================ the fused branch ================================ */

/* Workspace (host sizes T, H, S = max_kv_total), each region 256-byte aligned:
 *   n_act, kv_total       active requests (q_len > 0) and their key rows, clamped to S
 *   act_b [T]             request id of active request k
 *   act_q_off [T+1]       q row offsets of the active requests (compacted q_offsets)
 *   act_kv_off [T+1]      prefix sums of their seq_lens: rows of the gathered buffers
 *   xq [S, 512] e4m3, xs [S, 4] f32   the gathered, quantized latent rows
 *   rope [S, 64] bf16     the gathered roped columns (the prefill's k_rope)
 *   kv [S, H*256] bf16    the up-projection: K_nope[h] at column h*256, V[h] at h*256 + 128
 * Requests with q_len = 0 have no query to serve: they are neither gathered nor projected. */
typedef struct fused_ws {
    int32_t *n_act, *kv_total, *act_b, *act_q_off, *act_kv_off;
    uint8_t *xq;
    float *xs;
    uint16_t *rope;
    uint16_t *kv;
} fused_ws;

static size_t carve(size_t *off, size_t bytes) {
    size_t at = *off;
    *off = (at + bytes + 255) & ~(size_t)255;
    return at;
}

/* Bytes of the layout; fills w from the 256-aligned base when base != NULL. */
static size_t fused_layout(int64_t T, int64_t H, int64_t S, uint8_t *base, fused_ws *w) {
    size_t off = 0;
    size_t o_n = carve(&off, 2 * sizeof(int32_t));
    size_t o_b = carve(&off, (size_t)T * sizeof(int32_t));
    size_t o_q = carve(&off, (size_t)(T + 1) * sizeof(int32_t));
    size_t o_kv = carve(&off, (size_t)(T + 1) * sizeof(int32_t));
    size_t o_xq = carve(&off, (size_t)S * LAT);
    size_t o_xs = carve(&off, (size_t)S * (LAT / 128) * sizeof(float));
    size_t o_r = carve(&off, (size_t)S * ROPE * sizeof(uint16_t));
    size_t o_c = carve(&off, (size_t)S * H * KVW * sizeof(uint16_t));
    if (base) {
        w->n_act = (int32_t *)(base + o_n);
        w->kv_total = w->n_act + 1;
        w->act_b = (int32_t *)(base + o_b);
        w->act_q_off = (int32_t *)(base + o_q);
        w->act_kv_off = (int32_t *)(base + o_kv);
        w->xq = base + o_xq;
        w->xs = (float *)(base + o_xs);
        w->rope = (uint16_t *)(base + o_r);
        w->kv = (uint16_t *)(base + o_c);
    }
    return off + 256; /* slack to align the caller's pointer */
}

typedef struct fused_params {
    int32_t num_tokens, num_heads, num_requests;
    int32_t max_kv;            /* S */
    uint16_t *q;               /* [T, H, 192] */
    int64_t q_stride_t, q_stride_h;
    const float *freqs;        /* [max_pos, 64] */
    int32_t max_pos;
    const uint16_t *gamma;     /* [512] */
    uint8_t *cache_base;       /* MLA_KV_BF16 pool, 16-byte aligned, page_stride % 16 == 0 */
    int64_t page_stride;
    int32_t page_size, num_pages;
    const int32_t *q_offsets, *seq_lens, *block_table;
    int64_t bt_stride;
    float eps;
    fused_ws ws;
} fused_params;

/* The cache row of request b's logical token t, or NULL (out-of-range page id: skipped). */
static __device__ __forceinline__ uint16_t *cache_row(const fused_params &f, int b, int64_t t) {
    if (t < 0) return NULL;
    const int64_t e = t / f.page_size;
    if (e >= f.bt_stride) return NULL;
    const int32_t page = f.block_table[(int64_t)b * f.bt_stride + e];
    if (page < 0 || page >= f.num_pages) return NULL;
    return (uint16_t *)(f.cache_base + (int64_t)page * f.page_stride + (t % f.page_size) * (ROW_ELEMS * 2));
}

/* largest k in [0, n) with off[k] <= x (off ascending, off[0] <= x) */
static __device__ __forceinline__ int search_le(const int32_t *off, int n, int64_t x) {
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (off[mid] <= x) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* plan: one CTA scans the B requests in chunks of PL_THREADS */
__global__ void __launch_bounds__(PL_THREADS) fused_plan_kernel_v1(const fused_params f) {
    __shared__ long long sh[32];
    const int tid = threadIdx.x, B = f.num_requests, T = f.num_tokens;
    long long n_base = 0, kv_base = 0;
    for (int b0 = 0; b0 < B; b0 += PL_THREADS) {
        const int b = b0 + tid;
        int qs = 0, qe = 0;
        long long sl = 0;
        if (b < B) {
            qs = clampi(f.q_offsets[b], 0, T);
            qe = clampi(f.q_offsets[b + 1], 0, T);
            sl = max(f.seq_lens[b], 0);
        }
        const int act = qe > qs;
        long long n_tot, kv_tot;
        const long long n_ex = block_excl_scan(act, &n_tot, sh);
        const long long kv_ex = block_excl_scan(act ? sl : 0, &kv_tot, sh);
        const long long k = n_base + n_ex;
        if (act && k < T) {
            f.ws.act_b[k] = b;
            f.ws.act_q_off[k] = qs;
            f.ws.act_kv_off[k] = (int32_t)min(kv_base + kv_ex, (long long)f.max_kv);
        }
        n_base += n_tot;
        kv_base += kv_tot;
    }
    if (tid == 0) {
        const int n = (int)min(n_base, (long long)T);
        const int32_t kv = (int32_t)min(kv_base, (long long)f.max_kv);
        *f.ws.n_act = n;
        *f.ws.kv_total = kv;
        f.ws.act_q_off[n] = T; /* the last active request ends at q_offsets[B] = T */
        f.ws.act_kv_off[n] = kv;
    }
}

/* RoPE of q (all heads) and RoPE + RMSNorm of the cache row of new token t = blockIdx.x */
__global__ void __launch_bounds__(RN_THREADS) fused_rope_norm_kernel_v1(const fused_params f) {
    __shared__ float red[32];
    const int t = blockIdx.x, tid = threadIdx.x;
    const int n_act = *f.ws.n_act;
    if (n_act <= 0) return;
    const int k = search_le(f.ws.act_q_off, n_act, t);
    const int qs = f.ws.act_q_off[k], qe = f.ws.act_q_off[k + 1];
    if (t < qs || t >= qe) return;
    const int b = f.ws.act_b[k];
    const int64_t pos = (int64_t)f.seq_lens[b] - (qe - qs) + (t - qs);
    if (pos < 0) return; /* seq_len < q_len: no position */
    const bool rope_ok = pos < f.max_pos;
    const float *fc = f.freqs + pos * ROPE;
    if (rope_ok)
        for (int i = tid; i < f.num_heads * 32; i += RN_THREADS)
            rope_pair(f.q + (int64_t)t * f.q_stride_t + (i >> 5) * f.q_stride_h + 128 + 2 * (i & 31), fc, i & 31);
    uint16_t *row = cache_row(f, b, pos);
    if (!row) return;
    rmsnorm_row(row, LAT, f.gamma, f.eps, red);
    if (rope_ok && tid < 32) rope_pair(row + LAT + 2 * tid, fc, tid);
}

/* gather + quantize: warp per gathered row r (request's token t = r - act_kv_off[k]); lane l
 * holds latent elements [16l, 16l+16), a 128-group is 8 lanes */
__global__ void __launch_bounds__(QZ_WARPS * 32) fused_gather_kernel_v1(const fused_params f) {
    const int lane = threadIdx.x & 31;
    const int64_t r = (int64_t)blockIdx.x * QZ_WARPS + (threadIdx.x >> 5);
    const int total = *f.ws.kv_total, n_act = *f.ws.n_act;
    if (r >= total || n_act <= 0) return;
    const int k = search_le(f.ws.act_kv_off, n_act, r);
    const int b = f.ws.act_b[k];
    const uint16_t *row = cache_row(f, b, r - f.ws.act_kv_off[k]);
    uint8_t *dq = f.ws.xq + r * LAT;
    float *ds = f.ws.xs + r * (LAT / 128);
    uint16_t *dr = f.ws.rope + r * ROPE;
    if (!row) { /* out-of-range page: a zero row (K = V = 0, rope 0) */
        *(uint4 *)(dq + lane * 16) = make_uint4(0, 0, 0, 0);
        if (lane < 4) ds[lane] = 0.f;
        if (lane < 8) *(uint4 *)(dr + lane * 8) = make_uint4(0, 0, 0, 0);
        return;
    }
    const uint4 u0 = *(const uint4 *)(row + lane * 16), u1 = *(const uint4 *)(row + lane * 16 + 8);
    const uint32_t w[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
    float x[16];
    float amax = 0.f;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        x[2 * i] = bf16_to_f32_dev((uint16_t)(w[i] & 0xffffu));
        x[2 * i + 1] = bf16_to_f32_dev((uint16_t)(w[i] >> 16));
        amax = fmaxf(amax, fmaxf(fabsf(x[2 * i]), fabsf(x[2 * i + 1])));
    }
#pragma unroll
    for (int o = 1; o < 8; o <<= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o)); /* 8-lane group */
    const float sc = quant_scale(amax);
    uint4 qv;
    qv.x = quant4(x[0], x[1], x[2], x[3], sc);
    qv.y = quant4(x[4], x[5], x[6], x[7], sc);
    qv.z = quant4(x[8], x[9], x[10], x[11], sc);
    qv.w = quant4(x[12], x[13], x[14], x[15], sc);
    *(uint4 *)(dq + lane * 16) = qv;
    if ((lane & 7) == 0) ds[lane >> 3] = sc;
    if (lane < 8) *(uint4 *)(dr + lane * 8) = *(const uint4 *)(row + LAT + lane * 8);
}

extern "C" size_t mla_cuda_prefill_fp8_fused_workspace(const mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) {
    (void)ctx;
    if (!a || a->num_tokens <= 0 || a->num_heads <= 0 || a->max_kv_total < 0) return 0;
    return fused_layout(a->num_tokens, a->num_heads, a->max_kv_total, NULL, NULL);
}

extern "C" mla_status mla_cuda_prefill_fp8_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) {
    const char *op = "prefill_fp8_fused";
    const int64_t T = a->num_tokens, H = a->num_heads, S = a->max_kv_total;
    if (S < T || S > INT32_MAX)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                             "%s: max_kv_total = %lld must be in [num_tokens = %lld, INT32_MAX] (an upper bound of "
                             "sum(seq_lens) >= sum(q_len))",
                             op, (long long)S, (long long)T);
    const size_t need = fused_layout(T, H, S, NULL, NULL);
    if (!a->workspace || a->workspace_bytes < need)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                             "%s: workspace_bytes = %zu (workspace %s) is below the %zu bytes "
                             "mla_prefill_fp8_fused_workspace_size() asks for",
                             op, a->workspace_bytes, a->workspace ? "set" : "NULL", need);
    if (!aligned16(a->cache.base) || a->cache.page_stride % 16)
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED,
                             "%s: cache.base and cache.page_stride must be multiples of 16 bytes on the cuda backend",
                             op);
    if (!aligned16(a->kv_b_proj))
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "%s: kv_b_proj must be 16-byte aligned on the cuda backend", op);

    fused_params f;
    memset(&f, 0, sizeof f);
    uint8_t *base = (uint8_t *)(((uintptr_t)a->workspace + 255) & ~(uintptr_t)255);
    fused_layout(T, H, S, base, &f.ws);
    f.num_tokens = a->num_tokens;
    f.num_heads = a->num_heads;
    f.num_requests = a->batch.num_requests;
    f.max_kv = (int32_t)S;
    f.q = a->q;
    f.q_stride_h = a->q_stride_h ? a->q_stride_h : MLA_QK_DIM;
    f.q_stride_t = a->q_stride_t ? a->q_stride_t : H * f.q_stride_h;
    f.freqs = a->freqs_cis;
    f.max_pos = a->max_pos;
    f.gamma = a->kv_norm_gamma;
    f.cache_base = (uint8_t *)a->cache.base;
    f.page_stride = a->cache.page_stride;
    f.page_size = a->cache.page_size;
    f.num_pages = a->cache.num_pages;
    f.q_offsets = a->batch.q_offsets;
    f.seq_lens = a->batch.seq_lens;
    f.block_table = a->batch.block_table;
    f.bt_stride = a->batch.bt_stride;
    f.eps = a->eps;

    gemm_params g;
    memset(&g, 0, sizeof g);
    g.m = (int32_t)S;
    g.n = (int32_t)(H * KVW);
    g.k = LAT;
    g.m_dev = f.ws.kv_total;
    g.a = f.ws.xq;
    g.a_s = f.ws.xs;
    g.b = a->kv_b_proj;
    g.b_s = a->kv_b_proj_scale;
    g.c = f.ws.kv;
    g.c_stride = H * KVW;
    g.c_pairs = 1;

    mla_cuda_prefill_params p;
    memset(&p, 0, sizeof p);
    p.num_tokens = a->num_tokens;
    p.num_kv = (int32_t)S;
    p.num_heads = a->num_heads;
    p.num_requests = (int32_t)(a->batch.num_requests < T ? a->batch.num_requests : T); /* active ones: <= T */
    p.num_requests_dev = f.ws.n_act;
    p.q_offsets = f.ws.act_q_off;
    p.kv_offsets = f.ws.act_kv_off;
    p.q = a->q;
    p.q_stride_t = f.q_stride_t;
    p.q_stride_h = f.q_stride_h;
    p.k_nope = f.ws.kv;
    p.k_nope_stride_s = H * KVW;
    p.k_nope_stride_h = KVW;
    p.v = f.ws.kv + 128;
    p.v_stride_s = H * KVW;
    p.v_stride_h = KVW;
    p.k_rope = f.ws.rope;
    p.k_rope_stride_s = ROPE;
    p.out = a->out;
    p.out_stride_h = a->out_stride_h ? a->out_stride_h : MLA_NOPE_DIM;
    p.out_stride_t = a->out_stride_t ? a->out_stride_t : H * p.out_stride_h;
    p.lse = a->lse;
    p.lse_stride_t = a->lse_stride_t ? a->lse_stride_t : H;
    p.causal = 1;
    p.fp8 = 0;
    p.scale_log2 = a->scale * 1.4426950408889634f;
    p.out_mul = 1.f;
    MLA_TRY(mla_cuda_prefill_check(ctx, op, &p)); /* before anything is written */

    cudaStream_t st = mla_cuda_stream(ctx);
    fused_plan_kernel_v1<<<1, PL_THREADS, 0, st>>>(f);
    MLA_CUDA_LAUNCHED(ctx, op);
    fused_rope_norm_kernel_v1<<<(unsigned)T, RN_THREADS, 0, st>>>(f);
    MLA_CUDA_LAUNCHED(ctx, op);
    if (S > 0) {
        fused_gather_kernel_v1<<<(unsigned)((S + QZ_WARPS - 1) / QZ_WARPS), QZ_WARPS * 32, 0, st>>>(f);
        MLA_CUDA_LAUNCHED(ctx, op);
        MLA_TRY(gemm_launch_v1(ctx, op, &g));
    }
    return mla_cuda_prefill_launch(ctx, op, &p);
}
