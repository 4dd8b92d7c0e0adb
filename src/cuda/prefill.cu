/* mla_prefill on CUDA: q [T,H,192], k_nope/v [S,H,128], k_rope [S,64] (all bf16, or all e4m3 with
   descales) -> out [T,H,128] bf16, lse [T,H] f32; ragged, causal bottom-right or not (spec 4.3).
   v1  flash attention on mma.sync m16n8k16 bf16: one CTA per (64 query rows, head), 4 warps x 16
       rows, 64-key K/V tiles double-buffered by cp.async, online softmax in f32 (exp2), fully
       masked causal tiles skipped; P enters the PV product as bf16 hi + lo (SPEC 5 accuracy);
       e4m3 tiles staged and widened to bf16 in shared memory (exact), descales folded into the
       scale and the output                                              (not yet measured)
   Run alone: build/tests/test_cuda_prefill (checks against the CPU backend). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common.cuh"
#include "cuda.h"
#include "prefill.cuh"

/* ---- tile constants (v1) ---- */
#define PF_BM 64                 /* query rows per CTA: 4 warps x 16 */
#define PF_BN 64                 /* keys per K/V tile */
#define PF_THREADS 128
#define PF_QK 192                /* q/k width: nope 128 | rope 64 */
#define PF_NOPE 128
#define PF_ROPE 64
#define PF_DV 128                /* value / output width */
#define PF_LDK (PF_QK + 8)       /* smem row of Q and K in bf16: 400 B, 8 ldmatrix rows hit 8 bank groups */
#define PF_LDV (PF_DV + 8)       /* smem row of V in bf16: 272 B, same reason */
#define PF_Q_BYTES (PF_BM * PF_LDK * 2)
#define PF_K_BYTES (PF_BN * PF_LDK * 2)
#define PF_V_BYTES (PF_BN * PF_LDV * 2)
#define PF_KS_BYTES (PF_BN * PF_QK) /* e4m3 staging of one K tile (unpadded) */
#define PF_VS_BYTES (PF_BN * PF_DV) /* e4m3 staging of one V tile */
/* bf16: Q | K0 V0 | K1 V1.  e4m3: Q | K V (bf16, widened) | KS0 VS0 | KS1 VS1 (e4m3 staging) */
#define PF_SMEM (PF_Q_BYTES + 2 * (PF_K_BYTES + PF_V_BYTES))
static_assert(PF_BM == 4 * 16 && PF_THREADS == 128, "4 warps of 16 query rows");
static_assert(PF_K_BYTES + PF_V_BYTES + 2 * (PF_KS_BYTES + PF_VS_BYTES) <= 2 * (PF_K_BYTES + PF_V_BYTES),
              "e4m3 staging fits in the bf16 double buffer");
static_assert(PF_Q_BYTES % 16 == 0 && PF_K_BYTES % 16 == 0 && PF_V_BYTES % 16 == 0 && PF_KS_BYTES % 16 == 0 &&
                  PF_VS_BYTES % 16 == 0,
              "16-byte aligned regions");
static_assert(2 * (PF_SMEM + 1024) <= 228 * 1024, "two CTAs per SM");

#define PF_LOG2E 1.4426950408889634f
#define PF_LN2 0.6931471805599453f

/* ---- device helpers ---- */

static __device__ __forceinline__ int clampi(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* two e4m3 (low byte first) -> bf16x2, exact: e4m3 -> f16 -> f32 -> bf16 loses nothing */
static __device__ __forceinline__ uint32_t e4m3x2_to_bf16x2(uint32_t two) {
    __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(two & 0xffffu), __NV_E4M3);
    float2 f = __half22float2(__half2(hr));
    return pack_bf16x2(f.x, f.y);
}

/* x0, x1 -> bf16x2 hi = bf16(x) and lo = bf16(x - hi); x - hi is exact in f32 */
static __device__ __forceinline__ void split_bf16x2(float x0, float x1, uint32_t *hi, uint32_t *lo) {
    const uint32_t h = pack_bf16x2(x0, x1);
    *hi = h;
    *lo = pack_bf16x2(x0 - __uint_as_float(h << 16), x1 - __uint_as_float(h & 0xffff0000u));
}

/* 16 e4m3 -> 16 bf16 (32 bytes) */
static __device__ __forceinline__ void widen16(const uint4 in, uint4 *out /* [2] */) {
    uint32_t w[4] = {in.x, in.y, in.z, in.w};
    uint32_t r[8];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        r[2 * i] = e4m3x2_to_bf16x2(w[i] & 0xffffu);
        r[2 * i + 1] = e4m3x2_to_bf16x2(w[i] >> 16);
    }
    out[0] = make_uint4(r[0], r[1], r[2], r[3]);
    out[1] = make_uint4(r[4], r[5], r[6], r[7]);
}

/* Which (request, 64-row tile) this CTA takes. Request b owns the virtual tiles
 * [vs(b), vs(b+1)) with vs(b) = b + q_offsets[b] / 64; vs(b+1) - vs(b) >= ceil(q_len[b] / 64), so
 * every tile has a CTA and the grid needs B + T/64 of them. Returns 0 when this CTA has no rows. */
static __device__ __forceinline__ int find_tile(const mla_cuda_prefill_params &p, int vi, int *b_out, int *tile_out) {
    int nb = p.num_requests;
    if (p.num_requests_dev) nb = min(nb, *p.num_requests_dev);
    if (nb <= 0) return 0;
    int lo = 0, hi = nb - 1; /* largest b with vs(b) <= vi; vs(0) = 0 <= vi */
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        int vs = mid + clampi(p.q_offsets[mid], 0, p.num_tokens) / PF_BM;
        if (vs <= vi) lo = mid;
        else hi = mid - 1;
    }
    *b_out = lo;
    *tile_out = vi - (lo + clampi(p.q_offsets[lo], 0, p.num_tokens) / PF_BM);
    return 1;
}

/* Issues the cp.async copies of K/V tile rows [j0, j0+64) of the request (rows past kv_len are
 * zero-filled, never read). bf16: straight into the padded tiles. e4m3: into the unpadded staging
 * buffers; the same thread later widens the same chunks (widen_kv), so its own wait suffices. */
static __device__ __forceinline__ void load_kv(const mla_cuda_prefill_params &p, bool fp8, int h, int64_t kv_start,
                                               int kv_len, int j0, uint8_t *dK, uint8_t *dV) {
    const int tid = threadIdx.x;
    if (!fp8) {
        const uint16_t *kn = (const uint16_t *)p.k_nope, *kr = (const uint16_t *)p.k_rope, *vv = (const uint16_t *)p.v;
        uint16_t *sK = (uint16_t *)dK, *sV = (uint16_t *)dV;
#pragma unroll
        for (int it = 0; it < PF_BN * 24 / PF_THREADS; it++) { /* 24 chunks of 8 bf16 per K row */
            int c = tid + it * PF_THREADS, r = c / 24, cc = c % 24;
            int j = j0 + r;
            bool ok = j < kv_len;
            int64_t row = kv_start + (ok ? j : 0);
            const uint16_t *src = cc < 16 ? kn + row * p.k_nope_stride_s + h * p.k_nope_stride_h + cc * 8
                                          : kr + row * p.k_rope_stride_s + (cc - 16) * 8;
            cp_async_16_zfill(sK + r * PF_LDK + cc * 8, src, ok);
        }
#pragma unroll
        for (int it = 0; it < PF_BN * 16 / PF_THREADS; it++) { /* 16 chunks per V row */
            int c = tid + it * PF_THREADS, r = c / 16, cc = c % 16;
            int j = j0 + r;
            bool ok = j < kv_len;
            int64_t row = kv_start + (ok ? j : 0);
            cp_async_16_zfill(sV + r * PF_LDV + cc * 8, vv + row * p.v_stride_s + h * p.v_stride_h + cc * 8, ok);
        }
    } else {
        const uint8_t *kn = (const uint8_t *)p.k_nope, *kr = (const uint8_t *)p.k_rope, *vv = (const uint8_t *)p.v;
#pragma unroll
        for (int it = 0; it < PF_BN * 12 / PF_THREADS; it++) { /* 12 chunks of 16 e4m3 per K row */
            int c = tid + it * PF_THREADS, r = c / 12, cc = c % 12;
            int j = j0 + r;
            bool ok = j < kv_len;
            int64_t row = kv_start + (ok ? j : 0);
            const uint8_t *src = cc < 8 ? kn + row * p.k_nope_stride_s + h * p.k_nope_stride_h + cc * 16
                                        : kr + row * p.k_rope_stride_s + (cc - 8) * 16;
            cp_async_16_zfill(dK + r * PF_QK + cc * 16, src, ok);
        }
#pragma unroll
        for (int it = 0; it < PF_BN * 8 / PF_THREADS; it++) { /* 8 chunks per V row */
            int c = tid + it * PF_THREADS, r = c / 8, cc = c % 8;
            int j = j0 + r;
            bool ok = j < kv_len;
            int64_t row = kv_start + (ok ? j : 0);
            cp_async_16_zfill(dV + r * PF_DV + cc * 16, vv + row * p.v_stride_s + h * p.v_stride_h + cc * 16, ok);
        }
    }
}

/* e4m3: widens the chunks this thread staged (same indices as load_kv) into the bf16 tiles. */
static __device__ __forceinline__ void widen_kv(const uint8_t *stK, const uint8_t *stV, uint16_t *sK, uint16_t *sV) {
    const int tid = threadIdx.x;
#pragma unroll
    for (int it = 0; it < PF_BN * 12 / PF_THREADS; it++) {
        int c = tid + it * PF_THREADS, r = c / 12, cc = c % 12;
        uint4 w[2];
        widen16(*(const uint4 *)(stK + r * PF_QK + cc * 16), w);
        *(uint4 *)(sK + r * PF_LDK + cc * 16) = w[0];
        *(uint4 *)(sK + r * PF_LDK + cc * 16 + 8) = w[1];
    }
#pragma unroll
    for (int it = 0; it < PF_BN * 8 / PF_THREADS; it++) {
        int c = tid + it * PF_THREADS, r = c / 8, cc = c % 8;
        uint4 w[2];
        widen16(*(const uint4 *)(stV + r * PF_DV + cc * 16), w);
        *(uint4 *)(sV + r * PF_LDV + cc * 16) = w[0];
        *(uint4 *)(sV + r * PF_LDV + cc * 16 + 8) = w[1];
    }
}

/* ---- v1 ---- */

/* One CTA: query rows [i0, i0+64) of request b (local indices), head h. Warp w owns rows
 * w*16 .. w*16+15; in the mma layouts a thread holds rows g = lane/4 and g+8 of its warp's 16 and
 * columns 2*(lane%4), +1 of each 8-wide block. `fp8` is a compile-time constant after inlining. */
static __device__ __forceinline__ void prefill_body_v1(const mla_cuda_prefill_params &p, bool fp8) {
    extern __shared__ __align__(16) uint8_t smem[];
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int h = blockIdx.y;
    int b, tile;
    if (!find_tile(p, (int)(gridDim.x - 1 - blockIdx.x), &b, &tile)) return; /* heaviest tiles first */
    const int q_start = clampi(p.q_offsets[b], 0, p.num_tokens);
    const int q_len = clampi(p.q_offsets[b + 1], 0, p.num_tokens) - q_start;
    const int i0 = tile * PF_BM;
    if (q_len <= 0 || i0 >= q_len) return;
    const int kv_start = clampi(p.kv_offsets[b], 0, p.num_kv);
    const int kv_len = max(clampi(p.kv_offsets[b + 1], 0, p.num_kv) - kv_start, 0);

    /* keys the last row of the tile sees (bounds the tiles), and the keys every row sees (tiles
     * below it need no mask); bottom-right: row i sees j < kv_len - q_len + i + 1 */
    const int i_last = min(i0 + PF_BM, q_len) - 1;
    const int kv_vis = p.causal ? min(kv_len, kv_len - q_len + i_last + 1) : kv_len;
    const int kv_all = p.causal ? min(kv_len, kv_len - q_len + i0 + 1) : kv_len;
    const int n_tiles = kv_vis > 0 ? (kv_vis + PF_BN - 1) / PF_BN : 0;

    uint16_t *sQ = (uint16_t *)smem;
    uint8_t *buf = smem + PF_Q_BYTES;
    /* this thread's two rows' key limit: j visible iff j < lim */
    int lim[2];
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        int i = i0 + warp * 16 + (lane >> 2) + hf * 8;
        lim[hf] = p.causal ? min(kv_len, kv_len - q_len + i + 1) : kv_len;
    }

    float o[16][4];
#pragma unroll
    for (int d = 0; d < 16; d++) o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

    if (n_tiles > 0) {
        /* Q tile (rows past q_len zero) */
        if (!fp8) {
            const uint16_t *q = (const uint16_t *)p.q;
#pragma unroll
            for (int it = 0; it < PF_BM * 24 / PF_THREADS; it++) {
                int c = tid + it * PF_THREADS, r = c / 24, cc = c % 24;
                bool ok = i0 + r < q_len;
                int64_t t = q_start + (ok ? i0 + r : 0);
                cp_async_16_zfill(sQ + r * PF_LDK + cc * 8, q + t * p.q_stride_t + h * p.q_stride_h + cc * 8, ok);
            }
        } else {
            const uint8_t *q = (const uint8_t *)p.q;
#pragma unroll
            for (int it = 0; it < PF_BM * 12 / PF_THREADS; it++) {
                int c = tid + it * PF_THREADS, r = c / 12, cc = c % 12;
                uint4 raw = make_uint4(0, 0, 0, 0);
                if (i0 + r < q_len)
                    raw = *(const uint4 *)(q + (int64_t)(q_start + i0 + r) * p.q_stride_t + h * p.q_stride_h + cc * 16);
                uint4 w[2];
                widen16(raw, w);
                *(uint4 *)(sQ + r * PF_LDK + cc * 16) = w[0];
                *(uint4 *)(sQ + r * PF_LDK + cc * 16 + 8) = w[1];
            }
        }
        if (!fp8) load_kv(p, false, h, kv_start, kv_len, 0, buf, buf + PF_K_BYTES);
        else load_kv(p, true, h, kv_start, kv_len, 0, buf + PF_K_BYTES + PF_V_BYTES,
                     buf + PF_K_BYTES + PF_V_BYTES + PF_KS_BYTES);
        cp_async_commit();
    }

    /* ldmatrix lane addresses (see common.cuh): A of Q, B of K (non-transposed), B of V (transposed) */
    const int a_row = warp * 16 + (lane & 15), a_col = (lane >> 4) * 8;
    const int kb_row = (lane & 7) + ((lane >> 4) << 3), kb_col = ((lane >> 3) & 1) * 8;
    const int vb_row = (lane & 7) + ((lane >> 3) & 1) * 8, vb_col = (lane >> 4) * 8;
    const int tq = lane & 3;

    for (int t = 0; t < n_tiles; t++) {
        const int j0 = t * PF_BN;
        if (t + 1 < n_tiles) {
            if (!fp8) {
                uint8_t *nb = buf + ((t + 1) & 1) * (PF_K_BYTES + PF_V_BYTES);
                load_kv(p, false, h, kv_start, kv_len, j0 + PF_BN, nb, nb + PF_K_BYTES);
            } else {
                uint8_t *ns = buf + PF_K_BYTES + PF_V_BYTES + ((t + 1) & 1) * (PF_KS_BYTES + PF_VS_BYTES);
                load_kv(p, true, h, kv_start, kv_len, j0 + PF_BN, ns, ns + PF_KS_BYTES);
            }
        }
        cp_async_commit();
        CP_ASYNC_WAIT(1); /* tile t (and Q) landed, for this thread's copies */
        const uint16_t *sK, *sV;
        if (!fp8) {
            sK = (const uint16_t *)(buf + (t & 1) * (PF_K_BYTES + PF_V_BYTES));
            sV = (const uint16_t *)(buf + (t & 1) * (PF_K_BYTES + PF_V_BYTES) + PF_K_BYTES);
        } else {
            const uint8_t *st = buf + PF_K_BYTES + PF_V_BYTES + (t & 1) * (PF_KS_BYTES + PF_VS_BYTES);
            widen_kv(st, st + PF_KS_BYTES, (uint16_t *)buf, (uint16_t *)(buf + PF_K_BYTES));
            sK = (const uint16_t *)buf;
            sV = (const uint16_t *)(buf + PF_K_BYTES);
        }
        __syncthreads();

        /* S = Q K^T: 16 rows x 64 keys per warp, 8 blocks of 8 keys */
        float s[8][4];
#pragma unroll
        for (int nb = 0; nb < 8; nb++) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < PF_QK / 16; kk++) {
            uint32_t a[4];
            ldmatrix_x4(a, sQ + a_row * PF_LDK + kk * 16 + a_col);
#pragma unroll
            for (int np = 0; np < 4; np++) {
                uint32_t bb[4];
                ldmatrix_x4(bb, sK + (np * 16 + kb_row) * PF_LDK + kk * 16 + kb_col);
                mma_bf16_16816(s[2 * np], a, bb);
                mma_bf16_16816(s[2 * np + 1], a, bb + 2);
            }
        }

        /* scale (log2 units), mask, online softmax */
        const bool need_mask = j0 + PF_BN > kv_all;
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nb = 0; nb < 8; nb++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float v = s[nb][e] * p.scale_log2;
                if (need_mask && j0 + nb * 8 + 2 * tq + (e & 1) >= lim[e >> 1]) v = -INFINITY;
                s[nb][e] = v;
                mx[e >> 1] = fmaxf(mx[e >> 1], v);
            }
        float alpha[2], m_use[2];
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            mx[hf] = fmaxf(mx[hf], __shfl_xor_sync(0xffffffffu, mx[hf], 1));
            mx[hf] = fmaxf(mx[hf], __shfl_xor_sync(0xffffffffu, mx[hf], 2));
            float m_new = fmaxf(m_run[hf], mx[hf]);
            m_use[hf] = m_new == -INFINITY ? 0.f : m_new; /* a row with nothing visible yet stays at 0 */
            alpha[hf] = exp2f(m_run[hf] - m_use[hf]);
            m_run[hf] = m_new;
        }
        float rs[2] = {0.f, 0.f};
#pragma unroll
        for (int nb = 0; nb < 8; nb++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float pv = exp2f(s[nb][e] - m_use[e >> 1]);
                s[nb][e] = pv;
                rs[e >> 1] += pv;
            }
#pragma unroll
        for (int hf = 0; hf < 2; hf++) l_run[hf] = l_run[hf] * alpha[hf] + rs[hf];
#pragma unroll
        for (int d = 0; d < 16; d++) {
            o[d][0] *= alpha[0];
            o[d][1] *= alpha[0];
            o[d][2] *= alpha[1];
            o[d][3] *= alpha[1];
        }

        /* O += P V, 4 steps of 16 keys. P (f32, in the S accumulators' layout, which is the A
         * layout of m16n8k16) goes in as bf16 hi + lo: 16 bits of P, so the product is accurate
         * to f32 level (one bf16 P alone misses SPEC 5's atol when few keys carry the row) */
#pragma unroll
        for (int ks = 0; ks < 4; ks++) {
            uint32_t ah[4], al[4];
            split_bf16x2(s[2 * ks][0], s[2 * ks][1], &ah[0], &al[0]);
            split_bf16x2(s[2 * ks][2], s[2 * ks][3], &ah[1], &al[1]);
            split_bf16x2(s[2 * ks + 1][0], s[2 * ks + 1][1], &ah[2], &al[2]);
            split_bf16x2(s[2 * ks + 1][2], s[2 * ks + 1][3], &ah[3], &al[3]);
#pragma unroll
            for (int dp = 0; dp < 8; dp++) {
                uint32_t bb[4];
                ldmatrix_x4_trans(bb, sV + (ks * 16 + vb_row) * PF_LDV + dp * 16 + vb_col);
                mma_bf16_16816(o[2 * dp], ah, bb);
                mma_bf16_16816(o[2 * dp], al, bb);
                mma_bf16_16816(o[2 * dp + 1], ah, bb + 2);
                mma_bf16_16816(o[2 * dp + 1], al, bb + 2);
            }
        }
        __syncthreads(); /* the buffers of tile t are refilled next iteration */
    }

    /* finish: full row sums across the quad, out = O / l (times descale_v), lse = ln(sum) */
    float inv[2], lse[2];
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        float l = l_run[hf];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        inv[hf] = l > 0.f ? p.out_mul / l : 0.f;
        lse[hf] = l > 0.f ? (m_run[hf] + log2f(l)) * PF_LN2 : INFINITY;
    }
    /* stage the warp's 16 x 128 bf16 rows in its own Q rows, then 16-byte stores */
    __syncwarp();
    uint16_t *sO = sQ + warp * 16 * PF_LDK;
#pragma unroll
    for (int d = 0; d < 16; d++) {
        *(uint32_t *)(sO + (lane >> 2) * PF_LDK + d * 8 + 2 * tq) = pack_bf16x2(o[d][0] * inv[0], o[d][1] * inv[0]);
        *(uint32_t *)(sO + ((lane >> 2) + 8) * PF_LDK + d * 8 + 2 * tq) = pack_bf16x2(o[d][2] * inv[1], o[d][3] * inv[1]);
    }
    __syncwarp();
#pragma unroll
    for (int it = 0; it < 16 * 16 / 32; it++) {
        int c = lane + it * 32, r = c / 16, cc = c % 16;
        int i = i0 + warp * 16 + r;
        if (i < q_len)
            *(uint4 *)(p.out + (int64_t)(q_start + i) * p.out_stride_t + h * p.out_stride_h + cc * 8) =
                *(const uint4 *)(sO + r * PF_LDK + cc * 8);
    }
    if (p.lse && tq == 0) {
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            int i = i0 + warp * 16 + (lane >> 2) + hf * 8;
            if (i < q_len) p.lse[(int64_t)(q_start + i) * p.lse_stride_t + h] = lse[hf];
        }
    }
}

__global__ void __launch_bounds__(PF_THREADS, 2) prefill_kernel_v1_bf16(const mla_cuda_prefill_params p) {
    prefill_body_v1(p, false);
}
__global__ void __launch_bounds__(PF_THREADS, 2) prefill_kernel_v1_e4m3(const mla_cuda_prefill_params p) {
    prefill_body_v1(p, true);
}

static int aligned16(const void *ptr) { return ((uintptr_t)ptr & 15u) == 0; }

extern "C" mla_status mla_cuda_prefill_check(mla_ctx *ctx, const char *op, const mla_cuda_prefill_params *p) {
    const int64_t u = p->fp8 ? 16 : 8; /* elements per 16 bytes */
    struct { const char *name; const void *ptr; int64_t s1, s2, unit; } t[] = {
        {"q", p->q, p->q_stride_t, p->q_stride_h, u},
        {"k_nope", p->k_nope, p->k_nope_stride_s, p->k_nope_stride_h, u},
        {"v", p->v, p->v_stride_s, p->v_stride_h, u},
        {"k_rope", p->k_rope, p->k_rope_stride_s, 0, u},
        {"out", p->out, p->out_stride_t, p->out_stride_h, 8},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (p->num_kv == 0 && i >= 1 && i <= 3) continue; /* no keys: k_nope, v, k_rope never read */
        if (!aligned16(t[i].ptr) || t[i].s1 % t[i].unit || t[i].s2 % t[i].unit)
            return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED,
                                 "%s: %s needs a 16-byte aligned pointer and strides that are multiples of 16 bytes "
                                 "on the cuda backend (prefill v1)",
                                 op, t[i].name);
    }
    return MLA_OK;
}

extern "C" mla_status mla_cuda_prefill_launch(mla_ctx *ctx, const char *op, const mla_cuda_prefill_params *p) {
    if (p->num_tokens <= 0 || p->num_requests <= 0) return MLA_OK;
    const void *kern = p->fp8 ? (const void *)prefill_kernel_v1_e4m3 : (const void *)prefill_kernel_v1_bf16;
    MLA_CUDA_TRY(ctx, cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, PF_SMEM), op);
    const int64_t tiles = (int64_t)p->num_requests + p->num_tokens / PF_BM; /* see find_tile */
    if (tiles > INT32_MAX)
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "%s: num_requests + num_tokens / 64 = %lld exceeds the grid (prefill v1)",
                             op, (long long)tiles);
    dim3 grid((unsigned)tiles, (unsigned)p->num_heads);
    if (p->fp8) prefill_kernel_v1_e4m3<<<grid, PF_THREADS, PF_SMEM, mla_cuda_stream(ctx)>>>(*p);
    else prefill_kernel_v1_bf16<<<grid, PF_THREADS, PF_SMEM, mla_cuda_stream(ctx)>>>(*p);
    MLA_CUDA_LAUNCHED(ctx, op);
    return MLA_OK;
}

extern "C" mla_status mla_cuda_prefill(mla_ctx *ctx, const mla_prefill_args *a) {
    const int64_t H = a->num_heads;
    mla_cuda_prefill_params p;
    memset(&p, 0, sizeof p);
    p.num_tokens = a->num_tokens;
    p.num_kv = a->num_kv;
    p.num_heads = a->num_heads;
    p.num_requests = a->num_requests;
    p.q_offsets = a->q_offsets;
    p.kv_offsets = a->kv_offsets;
    p.q = a->q;
    p.q_stride_h = a->q_stride_h ? a->q_stride_h : PF_QK;
    p.q_stride_t = a->q_stride_t ? a->q_stride_t : H * p.q_stride_h;
    p.k_nope = a->k_nope;
    p.k_nope_stride_h = a->k_nope_stride_h ? a->k_nope_stride_h : PF_NOPE;
    p.k_nope_stride_s = a->k_nope_stride_s ? a->k_nope_stride_s : H * p.k_nope_stride_h;
    p.v = a->v;
    p.v_stride_h = a->v_stride_h ? a->v_stride_h : PF_DV;
    p.v_stride_s = a->v_stride_s ? a->v_stride_s : H * p.v_stride_h;
    p.k_rope = a->k_rope;
    p.k_rope_stride_s = a->k_rope_stride_s ? a->k_rope_stride_s : PF_ROPE;
    p.out = a->out;
    p.out_stride_h = a->out_stride_h ? a->out_stride_h : PF_DV;
    p.out_stride_t = a->out_stride_t ? a->out_stride_t : H * p.out_stride_h;
    p.lse = a->lse;
    p.lse_stride_t = a->lse_stride_t ? a->lse_stride_t : H;
    p.causal = a->causal ? 1 : 0;
    p.fp8 = a->dtype == MLA_DTYPE_E4M3;
    p.scale_log2 = a->scale * PF_LOG2E;
    p.out_mul = 1.f;
    if (p.fp8) {
        p.scale_log2 = a->scale * a->descale_q * a->descale_k * PF_LOG2E;
        p.out_mul = a->descale_v;
    }
    MLA_TRY(mla_cuda_prefill_check(ctx, "prefill", &p));
    return mla_cuda_prefill_launch(ctx, "prefill", &p);
}

extern "C" size_t mla_cuda_prefill_workspace(const mla_ctx *ctx, const mla_prefill_args *a) {
    (void)ctx;
    (void)a;
    return 0; /* v1 needs no scratch */
}
