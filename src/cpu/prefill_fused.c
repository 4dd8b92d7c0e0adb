/* mla_prefill_fp8_fused on CPU and its building blocks (SPEC 4.4): q [T,H,192] bf16 and the new
 * MLA_KV_BF16 cache rows (raw kv_a output) -> q and rows roped/normed in place, out [T,H,128] bf16,
 * lse [T,H] f32.
 *
 * Row operations, each the one implementation behind a public op and the fused step:
 *   rope_row      interleaved RoPE of 64 bf16: exact products in f64, one rounding to bf16
 *   rmsnorm_row   y = bf16(bf16(x * rsqrt(mean(x^2) + eps)) * gamma), mean and rsqrt in f32
 *   quantize_row  1x128 e4m3: s = min(amax, 1200) / 448 (f32), q = e4m3(x / s); amax 0 gives s = 0, q = 0
 * and the block-scaled e4m3 GEMM (gemm_f32a): operands decoded to f32 with their scales applied
 * (a * a_s, b * b_s, one f32 rounding each), f32 accumulation on the 8 x 48 micro-kernel of
 * prefill_simd.h, c rounded to bf16.
 *
 * The fused call: 1-2. RoPE q (every head) and the new rows' [512,576), RMSNorm the new rows'
 * [0,512), at pos = seq_len - q_len + i; 3-4. gather and quantize every request's rows [0, seq_len)
 * (A, [sum seq_len, 512]) and their roped k_rope; 5-7. head chunk by head chunk (at most 32 heads,
 * K/V scratch at most 64 MiB unless one head needs more): K/V = bf16(A @ kv_b_proj[chunk]^T),
 * then the CPU mla_prefill (bf16, causal) on those heads.
 * Scratch is malloc'd and freed here; workspace is not used. */
#include <math.h>
#include <stdlib.h>

#include <omp.h>

#include "../core/numeric.h"
#include "../core/paged.h"
#include "cpu.h"
#include "prefill_simd.h"

#define LAT MLA_LATENT_DIM   /* 512 */
#define ROPE MLA_ROPE_DIM    /* 64 */
#define NP (PF_NVMAX * PF_VL) /* GEMM panel width: 48 output columns */
#define MC 256               /* GEMM rows per task */
#define KV_CHUNK_BYTES ((int64_t)64 << 20)
#define KV_CHUNK_HEADS 32    /* at most per chunk: every chunk still has ample parallel work */

/* ------------------------------------------------------------------------------------------ */
/* Row operations                                                                             */

/* f64 -> bf16 with a single rounding (to nearest even): round to odd at f32, then to bf16. */
static uint16_t f64_to_bf16(double x) {
    float f = (float)x;
    if ((double)f != x && isfinite(f)) {
        uint32_t u = mla_f32_to_bits(f);
        if (fabs((double)f) > fabs(x)) u -= 1; /* truncate toward zero (f != 0 here) ... */
        f = mla_bits_to_f32(u | 1u);           /* ... and make it odd: the sticky bit */
    }
    return f32_to_bf16_ref(f);
}

/* x[0..64) rotated in pairs by fc = freqs_cis[pos] (cos, sin interleaved). */
static void rope_row(uint16_t *x, const float *fc) {
    for (int k = 0; k < ROPE / 2; k++) {
        double x0 = bf16_to_f32_ref(x[2 * k]), x1 = bf16_to_f32_ref(x[2 * k + 1]);
        double c = fc[2 * k], s = fc[2 * k + 1];
        x[2 * k] = f64_to_bf16(x0 * c - x1 * s); /* bf16 * f32 products are exact in f64 */
        x[2 * k + 1] = f64_to_bf16(x0 * s + x1 * c);
    }
}

static void rmsnorm_row(uint16_t *x, int dim, const uint16_t *gamma, float eps) {
    double ss = 0;
    for (int d = 0; d < dim; d++) {
        double v = bf16_to_f32_ref(x[d]);
        ss += v * v;
    }
    float mean = (float)(ss / dim);
    float r = 1.0f / sqrtf(mean + eps);
    for (int d = 0; d < dim; d++) {
        float y = bf16_to_f32_ref(f32_to_bf16_ref(bf16_to_f32_ref(x[d]) * r));
        x[d] = f32_to_bf16_ref(y * bf16_to_f32_ref(gamma[d]));
    }
}

/* dim (a multiple of 128) bf16 -> e4m3 q[dim] and s[dim / 128]. */
static void quantize_row(const uint16_t *x, int dim, uint8_t *q, float *s) {
    for (int g = 0; g < dim / 128; g++) {
        const uint16_t *xg = x + g * 128;
        float amax = 0.0f;
        for (int k = 0; k < 128; k++) amax = fmaxf(amax, fabsf(bf16_to_f32_ref(xg[k])));
        float sc = fminf(amax, 1200.0f) / 448.0f;
        s[g] = sc;
        for (int k = 0; k < 128; k++) q[g * 128 + k] = sc > 0.0f ? f32_to_e4m3_ref(bf16_to_f32_ref(xg[k]) / sc) : 0;
    }
}

/* A row of the GEMM: out[d] = e4m3(q[d]) * s[d / 128] in f32. */
static void dequant_row(const uint8_t *q, const float *s, int k, float *out) {
    for (int g = 0; g < k / 128; g++) {
        float sc = s[g];
        for (int d = 0; d < 128; d++) out[g * 128 + d] = pf_e4m3_to_f32(q[g * 128 + d]) * sc;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Block-scaled GEMM                                                                          */

/* c[m, n] = bf16(sum_k A[m, k] * b[n, k] * b_s[n / 128, k / 128]) for m < M, n < N. A holds
 * ceil(M / 8) * 8 rows of K f32 (rows past M are read, never written out). */
static mla_status gemm_f32a(mla_ctx *ctx, const float *A, int64_t M, int N, int K, const uint8_t *b, const float *b_s,
                            uint16_t *c, int64_t ldc) {
    int64_t npan = (N + NP - 1) / NP, nmc = (M + MC - 1) / MC, ntasks = npan * nmc;
    int kb = K / 128, nth = mla_cpu_threads(ctx);
    int chunk = npan >= 4 * nth ? (int)nmc : 1; /* whole panels per grab when there are enough */
    int failed = 0;
#pragma omp parallel num_threads(nth)
    {
        float *bt = (float *)aligned_alloc(64, (size_t)K * NP * sizeof(float)); /* [K][NP] panel */
        float *brow = (float *)malloc((size_t)K * sizeof(float));
        float tmp[PF_MR * NP];
        int64_t have = -1; /* panel held in bt */
        if (!bt || !brow) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp barrier
        if (!failed) {
#pragma omp for schedule(dynamic, chunk)
            for (int64_t t = 0; t < ntasks; t++) {
                int64_t pan = t / nmc, m0 = (t % nmc) * MC, m1 = m0 + MC < M ? m0 + MC : M;
                int n0 = (int)(pan * NP), nn = N - n0 < NP ? N - n0 : NP, nv = (nn + PF_VL - 1) / PF_VL;
                if (pan != have) {
                    for (int j = 0; j < NP; j++) {
                        if (j >= nv * PF_VL) break;
                        if (j >= nn) {
                            for (int k = 0; k < K; k++) bt[k * NP + j] = 0.0f;
                            continue;
                        }
                        dequant_row(b + (int64_t)(n0 + j) * K, b_s + (int64_t)((n0 + j) / 128) * kb, K, brow);
                        for (int k = 0; k < K; k++) bt[k * NP + j] = brow[k];
                    }
                    have = pan;
                }
                for (int64_t m = m0; m < m1; m += PF_MR) {
                    pf_mk8(nv, A + m * K, K, 1, bt, NP, K, tmp, NP, 0);
                    for (int r = 0; r < PF_MR && m + r < m1; r++) {
                        uint16_t *cr = c + (m + r) * ldc + n0;
                        for (int j = 0; j < nn; j++) cr[j] = f32_to_bf16_ref(tmp[r * NP + j]);
                    }
                }
            }
        }
        free(bt);
        free(brow);
    }
    if (failed) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "gemm_fp8_block_scaled: panel allocation failed");
    return MLA_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Public building blocks                                                                     */

mla_status mla_cpu_rope(mla_ctx *ctx, const mla_rope_args *a) {
    int64_t xs = a->x_stride ? a->x_stride : ROPE;
#pragma omp parallel for num_threads(mla_cpu_threads(ctx)) schedule(static)
    for (int32_t i = 0; i < a->num_rows; i++) rope_row(a->x + i * xs, a->freqs_cis + (int64_t)a->pos[i] * 64);
    return MLA_OK;
}

mla_status mla_cpu_rmsnorm(mla_ctx *ctx, const mla_rmsnorm_args *a) {
    int64_t xs = a->x_stride ? a->x_stride : a->dim;
#pragma omp parallel for num_threads(mla_cpu_threads(ctx)) schedule(static)
    for (int32_t i = 0; i < a->num_rows; i++) rmsnorm_row(a->x + i * xs, a->dim, a->gamma, a->eps);
    return MLA_OK;
}

mla_status mla_cpu_quantize_fp8_1x128(mla_ctx *ctx, const mla_quantize_fp8_1x128_args *a) {
    int64_t xs = a->x_stride ? a->x_stride : a->dim;
#pragma omp parallel for num_threads(mla_cpu_threads(ctx)) schedule(static)
    for (int32_t i = 0; i < a->num_rows; i++)
        quantize_row(a->x + i * xs, a->dim, a->q + (int64_t)i * a->dim, a->s + (int64_t)i * (a->dim / 128));
    return MLA_OK;
}

mla_status mla_cpu_gemm_fp8_block_scaled(mla_ctx *ctx, const mla_gemm_fp8_args *a) {
    int64_t M = a->m, M8 = (M + PF_MR - 1) / PF_MR * PF_MR, K = a->k;
    float *A = (float *)malloc((size_t)(M8 * K) * sizeof(float));
    if (!A) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "gemm_fp8_block_scaled: %lld x %lld f32 scratch failed",
                                 (long long)M8, (long long)K);
#pragma omp parallel for num_threads(mla_cpu_threads(ctx)) schedule(static)
    for (int64_t m = 0; m < M8; m++) {
        if (m < M) dequant_row(a->a + m * K, a->a_s + m * (K / 128), (int)K, A + m * K);
        else memset(A + m * K, 0, (size_t)K * sizeof(float));
    }
    mla_status rc = gemm_f32a(ctx, A, M, a->n, (int)K, a->b, a->b_s, a->c, a->c_stride ? a->c_stride : a->n);
    free(A);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* The fused branch                                                                           */

mla_status mla_cpu_prefill_fp8_fused(mla_ctx *ctx, const mla_prefill_fp8_fused_args *a) {
    const mla_batch *bt = &a->batch;
    int32_t B = bt->num_requests, T = a->num_tokens, H = a->num_heads;
    int64_t qsh = a->q_stride_h ? a->q_stride_h : MLA_QK_DIM, qst = a->q_stride_t ? a->q_stride_t : H * qsh;
    int64_t osh = a->out_stride_h ? a->out_stride_h : MLA_NOPE_DIM, ost = a->out_stride_t ? a->out_stride_t : H * osh;
    int nth = mla_cpu_threads(ctx);

    /* key offsets of the gathered rows; request of every query token */
    int32_t *kvo = (int32_t *)malloc((size_t)(B + 1) * sizeof(int32_t));
    int32_t *tok_b = (int32_t *)malloc((size_t)(T > 0 ? T : 1) * sizeof(int32_t));
    if (!kvo || !tok_b) {
        free(kvo); free(tok_b);
        return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "prefill_fp8_fused: metadata allocation failed");
    }
    int64_t S = 0;
    kvo[0] = 0;
    for (int32_t b = 0; b < B; b++) {
        S += bt->seq_lens[b];
        if (S > INT32_MAX) {
            free(kvo); free(tok_b);
            return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "prefill_fp8_fused: sum of seq_lens exceeds INT32_MAX");
        }
        kvo[b + 1] = (int32_t)S;
        for (int32_t t = bt->q_offsets[b]; t < bt->q_offsets[b + 1]; t++) tok_b[t] = b;
    }

    /* 1-2: RoPE on q and the new rows, RMSNorm on the new rows, in place */
#pragma omp parallel for num_threads(nth) schedule(static)
    for (int32_t t = 0; t < T; t++) {
        int32_t b = tok_b[t], ql = bt->q_offsets[b + 1] - bt->q_offsets[b];
        int64_t pos = (int64_t)bt->seq_lens[b] - ql + (t - bt->q_offsets[b]);
        if (pos < 0) continue; /* an empty request (seq_len 0): nothing stored, q left as is */
        const float *fc = a->freqs_cis + pos * 64;
        for (int32_t h = 0; h < H; h++) rope_row(a->q + t * qst + h * qsh + MLA_NOPE_DIM, fc);
        uint16_t *row = (uint16_t *)mla_paged_row(&a->cache, bt, b, pos, MLA_ROW_BF16);
        if (row) {
            rope_row(row + LAT, fc);
            rmsnorm_row(row, LAT, a->kv_norm_gamma, a->eps);
        }
    }

    /* 3-4: gather + 1x128 quantization of rows [0, seq_len), decoded for the GEMM; k_rope */
    int64_t S8 = (S + PF_MR - 1) / PF_MR * PF_MR;
    float *A = (float *)malloc((size_t)(S8 > 0 ? S8 : 1) * LAT * sizeof(float));
    uint16_t *krope = (uint16_t *)malloc((size_t)(S > 0 ? S : 1) * ROPE * sizeof(uint16_t));
    int hc = (int)(KV_CHUNK_BYTES / ((S > 0 ? S : 1) * 2 * MLA_NOPE_DIM * 2));
    if (hc < 1) hc = 1;
    if (hc > KV_CHUNK_HEADS) hc = KV_CHUNK_HEADS;
    if (hc > H) hc = H;
    uint16_t *kv = (uint16_t *)malloc((size_t)(S > 0 ? S : 1) * hc * 2 * MLA_NOPE_DIM * sizeof(uint16_t));
    if (!A || !krope || !kv) {
        free(kvo); free(tok_b); free(A); free(krope); free(kv);
        return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "prefill_fp8_fused: scratch for %lld keys failed", (long long)S);
    }
#pragma omp parallel num_threads(nth)
    {
        uint8_t q8[LAT];
        float s8[LAT / 128];
#pragma omp for schedule(static)
        for (int64_t r = 0; r < S; r++) {
            int32_t lo = 0, hi = B - 1; /* request of row r: the last b with kvo[b] <= r */
            while (lo < hi) {
                int32_t mid = (lo + hi + 1) / 2;
                if (kvo[mid] <= r) lo = mid;
                else hi = mid - 1;
            }
            int32_t b = lo;
            const uint16_t *row = (const uint16_t *)mla_paged_row(&a->cache, bt, b, r - kvo[b], MLA_ROW_BF16);
            if (!row) { /* page id out of range: skipped (the CPU validation already refuses it) */
                memset(A + r * LAT, 0, LAT * sizeof(float));
                memset(krope + r * ROPE, 0, ROPE * sizeof(uint16_t));
                continue;
            }
            quantize_row(row, LAT, q8, s8);
            dequant_row(q8, s8, LAT, A + r * LAT);
            memcpy(krope + r * ROPE, row + LAT, ROPE * sizeof(uint16_t));
        }
    }
    if (S8 > S) memset(A + S * LAT, 0, (size_t)(S8 - S) * LAT * sizeof(float));

    /* 5-7: per head chunk, K/V = bf16(A @ W^T), then causal bf16 prefill */
    mla_status rc = MLA_OK;
    for (int32_t h0 = 0; h0 < H && rc == MLA_OK; h0 += hc) {
        int32_t nh = H - h0 < hc ? H - h0 : hc;
        int ncol = nh * 2 * MLA_NOPE_DIM;
        if (S > 0)
            rc = gemm_f32a(ctx, A, S, ncol, LAT, a->kv_b_proj + (int64_t)h0 * 2 * MLA_NOPE_DIM * LAT,
                           a->kv_b_proj_scale + (int64_t)h0 * 2 * (LAT / 128), kv, ncol);
        if (rc != MLA_OK) break;
        mla_prefill_args p = {0};
        p.dtype = MLA_DTYPE_BF16;
        p.num_tokens = T;
        p.num_kv = (int32_t)S;
        p.num_heads = nh;
        p.num_requests = B;
        p.q_offsets = bt->q_offsets;
        p.kv_offsets = kvo;
        p.q = a->q + h0 * qsh;
        p.q_stride_t = qst;
        p.q_stride_h = qsh;
        p.k_nope = kv;
        p.k_nope_stride_s = ncol;
        p.k_nope_stride_h = 2 * MLA_NOPE_DIM;
        p.v = kv + MLA_NOPE_DIM;
        p.v_stride_s = ncol;
        p.v_stride_h = 2 * MLA_NOPE_DIM;
        p.k_rope = krope;
        p.k_rope_stride_s = ROPE;
        p.causal = 1;
        p.scale = a->scale;
        p.out = a->out + h0 * osh;
        p.out_stride_t = ost;
        p.out_stride_h = osh;
        p.lse = a->lse ? a->lse + h0 : NULL;
        p.lse_stride_t = a->lse_stride_t ? a->lse_stride_t : H;
        rc = mla_cpu_prefill(ctx, &p);
    }
    free(kvo); free(tok_b); free(A); free(krope); free(kv);
    return rc;
}
