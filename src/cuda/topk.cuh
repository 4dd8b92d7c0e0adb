/* Row-wise top-k of f32 scores on the GPU, one CTA per row (used by mla_indexer, spec 4.5).
 *
 * Output: the positions of the min(top_k, valid) best scores, highest first, ties to the lower
 * position, then -1. Valid = neither -inf nor NaN (the indexer writes -inf at invisible keys).
 *
 * Method, per row of n scores (read from global memory on every pass; L2 holds them):
 *  - key(f): the order-preserving uint32 of a score (-0 folded to +0); -inf and NaN map to 0,
 *    every valid score to >= 1. A candidate's full order key is the 64-bit composite
 *    (key << 32) | ~pos: larger composite = better (higher score, then lower position), and no
 *    two candidates share one, so "the r best" is a well-defined set.
 *  - The output is produced in segments of at most TOPK_CAP ranks. A segment selects, among the
 *    candidates ranked below the previous segment's last one ("eligible"), the cnt best:
 *      radix select, 4 passes of 8 bits over the key: 256-bin shared histogram of the eligible
 *      keys that match the digits chosen so far, suffix sums, pick the digit where the running
 *      count crosses the rank wanted. This yields tau (the cnt-th best key) and need_eq, how many
 *      candidates with key == tau belong to the segment (the lowest positions among them);
 *      collect: every eligible key > tau, plus the need_eq lowest-position keys == tau (taken in
 *      position order by a block-wide ballot scan, or all of them when all are needed);
 *      bitonic sort of the segment's composites in shared memory, descending; write positions.
 *    top_k <= TOPK_CAP (the DSA 2048 included) is one segment; larger top_k takes several, each
 *    one more set of passes over the row. No global scratch.
 */
#ifndef MLA_CUDA_TOPK_CUH
#define MLA_CUDA_TOPK_CUH

#include <stdint.h>

#include "indexer_common.cuh"

#define TOPK_THREADS 1024
#define TOPK_WARPS (TOPK_THREADS / 32)
#define TOPK_CAP 4096 /* ranks sorted per segment: TOPK_CAP * 8 bytes of shared memory */

typedef struct topk_params {
    int32_t T, B;
    const float *scores;   /* row t at scores + t * scores_stride, positions [0, row_len) */
    int64_t scores_stride;
    int64_t row_len;
    const int32_t *q_offsets, *seq_lens; /* device: positions >= the row's visible end are skipped */
    int causal;
    int32_t top_k;
    int32_t *indices;      /* [T, top_k] */
    int64_t indices_stride;
} topk_params;

/* order-preserving key; 0 for -inf and NaN (not candidates) */
MLA_DEV uint32_t topk_key(float f) {
    if (f != f || f == -INFINITY) return 0u;
    if (f == 0.0f) f = 0.0f; /* -0 and +0 are the same score */
    uint32_t u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
MLA_DEV unsigned long long topk_composite(uint32_t key, int64_t pos) {
    return ((unsigned long long)key << 32) | (unsigned long long)(~(uint32_t)pos);
}
MLA_DEV int32_t topk_pos(unsigned long long c) { return (int32_t)(~(uint32_t)(c & 0xffffffffull)); }

/* ranked strictly below the previous segment's last candidate (kprev, pprev)? */
MLA_DEV bool topk_eligible(uint32_t k, int64_t i, bool have_prev, uint32_t kprev, int64_t pprev) {
    return !have_prev || k < kprev || (k == kprev && i > pprev);
}

/* descending bitonic sort of s[0, P), P a power of two; all threads of the CTA call it */
MLA_DEV void topk_bitonic_desc(unsigned long long *s, int P) {
    for (int k = 2; k <= P; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = threadIdx.x; i < P; i += TOPK_THREADS) {
                const int ixj = i ^ j;
                if (ixj > i) {
                    const unsigned long long a = s[i], b = s[ixj];
                    const bool desc = (i & k) == 0;
                    if (desc ? (a < b) : (a > b)) {
                        s[i] = b;
                        s[ixj] = a;
                    }
                }
            }
            __syncthreads();
        }
    }
}

__global__ void __launch_bounds__(TOPK_THREADS) topk_kernel_v1(topk_params p) {
    __shared__ unsigned long long s_buf[TOPK_CAP];
    __shared__ uint32_t s_hist[256];
    __shared__ uint32_t s_suf[256];
    __shared__ uint32_t s_warp[TOPK_WARPS];
    __shared__ uint32_t s_digit, s_rem, s_eq_total, s_count, s_chunk_total;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int t = blockIdx.x;
    int b;
    const int64_t n = visible_end(p.q_offsets, p.seq_lens, p.B, t, p.causal, p.row_len, &b);
    const float *row = p.scores + (int64_t)t * p.scores_stride;
    int32_t *out = p.indices + (int64_t)t * p.indices_stride;

    int64_t K = 0, done = 0;           /* K = min(top_k, valid), known after the first histogram */
    bool have_prev = false;
    uint32_t kprev = 0;
    int64_t pprev = -1;

    for (;;) {
        if (have_prev && done >= K) break; /* uniform; saves the pass that would find it out */
        /* ---- radix select of the segment's boundary key tau ---- */
        uint32_t prefix = 0, mask = 0, rem = 0, eq_total = 0;
        int cnt = 0;
        bool finished = false;
        for (int pass = 0; pass < 4; pass++) {
            const int shift = 24 - 8 * pass;
            for (int i = tid; i < 256; i += TOPK_THREADS) s_hist[i] = 0;
            __syncthreads();
            for (int64_t base = 0; base < n; base += TOPK_THREADS) {
                const int64_t i = base + tid;
                uint32_t bin = 0xffffffffu;
                if (i < n) {
                    const uint32_t k = topk_key(row[i]);
                    if (k != 0 && (k & mask) == prefix && topk_eligible(k, i, have_prev, kprev, pprev))
                        bin = (k >> shift) & 255u;
                }
                /* warp-aggregated increment: one atomic per distinct bin in the warp */
                const unsigned same = __match_any_sync(0xffffffffu, bin);
                if (bin != 0xffffffffu && lane == __ffs(same) - 1) atomicAdd(&s_hist[bin], (uint32_t)__popc(same));
            }
            __syncthreads();
            /* inclusive suffix sums: s_suf[d] = sum of s_hist[d..255] */
            if (tid < 256) s_suf[tid] = s_hist[tid];
            __syncthreads();
            for (int off = 1; off < 256; off <<= 1) {
                uint32_t v = 0;
                if (tid < 256) v = s_suf[tid] + (tid + off < 256 ? s_suf[tid + off] : 0u);
                __syncthreads();
                if (tid < 256) s_suf[tid] = v;
                __syncthreads();
            }
            if (pass == 0) {
                const int64_t eligible = s_suf[0];
                if (!have_prev) K = eligible < (int64_t)p.top_k ? eligible : (int64_t)p.top_k;
                if (done >= K) { finished = true; break; } /* uniform: every thread read the same */
                const int64_t left = K - done;
                cnt = (int)(left < TOPK_CAP ? left : TOPK_CAP);
                rem = (uint32_t)cnt;
            }
            /* the digit d with sum(hist[> d]) < rem <= sum(hist[>= d]): exactly one thread */
            if (tid < 256) {
                const uint32_t above = tid < 255 ? s_suf[tid + 1] : 0u;
                if (above < rem && s_suf[tid] >= rem) {
                    s_digit = (uint32_t)tid;
                    s_rem = rem - above;
                    s_eq_total = s_hist[tid];
                }
            }
            __syncthreads();
            prefix |= s_digit << shift;
            mask |= 255u << shift;
            rem = s_rem;
            eq_total = s_eq_total;
            __syncthreads();
        }
        if (finished) break;
        const uint32_t tau = prefix;
        const uint32_t need_eq = rem; /* >= 1: tau itself is in the segment */

        /* ---- collect the segment: keys > tau, and the need_eq lowest positions with key == tau ---- */
        if (tid == 0) s_count = 0;
        __syncthreads();
        const bool take_all_eq = need_eq == eq_total;
        uint32_t running = 0; /* keys == tau met in earlier chunks (same value in every thread) */
        for (int64_t base = 0; base < n; base += TOPK_THREADS) {
            const int64_t i = base + tid;
            uint32_t k = 0;
            bool el = false;
            if (i < n) {
                k = topk_key(row[i]);
                el = k != 0 && topk_eligible(k, i, have_prev, kprev, pprev);
            }
            const bool gt = el && k > tau, eq = el && k == tau;
            if (gt || (eq && take_all_eq)) s_buf[atomicAdd(&s_count, 1u)] = topk_composite(k, i);
            if (!take_all_eq) {
                const unsigned bal = __ballot_sync(0xffffffffu, eq);
                const uint32_t lane_rank = (uint32_t)__popc(bal & ((1u << lane) - 1u));
                if (lane == 0) s_warp[warp] = (uint32_t)__popc(bal);
                __syncthreads();
                if (warp == 0) { /* exclusive scan of the warp counts, in warp order */
                    const uint32_t v = lane < TOPK_WARPS ? s_warp[lane] : 0u;
                    uint32_t incl = v;
#pragma unroll
                    for (int o = 1; o < 32; o <<= 1) {
                        const uint32_t y = __shfl_up_sync(0xffffffffu, incl, o);
                        if (lane >= o) incl += y;
                    }
                    __syncwarp();
                    if (lane < TOPK_WARPS) s_warp[lane] = incl - v;
                    if (lane == 31) s_chunk_total = incl;
                }
                __syncthreads();
                const uint32_t rank = running + s_warp[warp] + lane_rank;
                if (eq && rank < need_eq) s_buf[atomicAdd(&s_count, 1u)] = topk_composite(k, i);
                running += s_chunk_total;
                __syncthreads();
            }
        }
        __syncthreads();

        /* ---- sort the segment (s_count == cnt) and write it ---- */
        int P = 1;
        while (P < cnt) P <<= 1;
        for (int i = cnt + tid; i < P; i += TOPK_THREADS) s_buf[i] = 0ull; /* below every candidate */
        __syncthreads();
        topk_bitonic_desc(s_buf, P);
        for (int i = tid; i < cnt; i += TOPK_THREADS) out[done + i] = topk_pos(s_buf[i]);
        const unsigned long long last = s_buf[cnt - 1];
        kprev = (uint32_t)(last >> 32);
        pprev = topk_pos(last);
        have_prev = true;
        done += cnt;
        __syncthreads(); /* s_buf is rewritten by the next segment */
    }
    for (int64_t i = K + tid; i < p.top_k; i += TOPK_THREADS) out[i] = -1;
}

#endif
