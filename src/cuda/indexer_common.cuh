/* Device helpers shared by the indexer and the exact writers (cache_store, indexer_cache_store,
 * indices_to_slots): the ragged-batch lookup (token -> request -> position -> page) done on the
 * device, and chunk loads/stores that take the widest access the alignment allows.
 *
 * Alignment: a kernel receives `align`, the largest power of two <= 16 that divides every base
 * pointer and byte stride that leads to an access (computed on the host by align_of()). Every
 * chunk offset inside a row is a multiple of its chunk size, so a chunk starts at a multiple of
 * min(align, chunk bytes). align < 4 takes the byte path: slow, rare, still exact. */
#ifndef MLA_CUDA_INDEXER_COMMON_CUH
#define MLA_CUDA_INDEXER_COMMON_CUH

#include <stdint.h>

#include "common.cuh"

/* ---- host: alignment of pointers and byte strides ---- */

/* largest power of two <= 16 dividing v (v = 0 divides by everything: 16) */
static inline int align_pow2_16(uint64_t v) {
    int a = 16;
    while (a > 1 && (v % (uint64_t)a) != 0) a >>= 1;
    return a;
}
/* min over the given byte quantities (pointers cast to integers, byte strides) */
static inline int align_of(uint64_t a, uint64_t b, uint64_t c) {
    int x = align_pow2_16(a), y = align_pow2_16(b), z = align_pow2_16(c);
    int m = x < y ? x : y;
    return m < z ? m : z;
}

/* ---- device: ragged batch (SPEC section 2) ---- */

/* The request b with q_offsets[b] <= t < q_offsets[b+1]: the largest b in [0, B) with
 * q_offsets[b] <= t (empty requests share their offset with the next one and are passed over).
 * Returns -1 when no request holds row t (metadata inconsistent with num_tokens). */
MLA_DEV int request_of_token(const int32_t *q_offsets, int B, int t) {
    if (B <= 0) return -1;
    int lo = 0, hi = B - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (q_offsets[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    if (t < q_offsets[lo] || t >= q_offsets[lo + 1]) return -1;
    return lo;
}

/* Position pos = seq_lens[b] - q_len[b] + i of query row t, its request b and seq_len.
 * Returns 0 when row t has no request. pos may be negative when seq_len < q_len (bad data the
 * host could not check): callers treat such a row as having no key and no slot. */
MLA_DEV int token_position(const int32_t *q_offsets, const int32_t *seq_lens, int B, int t, int *b_out,
                           int64_t *pos_out, int32_t *seq_out) {
    int b = request_of_token(q_offsets, B, t);
    if (b < 0) return 0;
    int64_t q_len = (int64_t)q_offsets[b + 1] - q_offsets[b];
    int32_t seq = seq_lens[b];
    *b_out = b;
    *seq_out = seq;
    *pos_out = (int64_t)seq - q_len + (t - q_offsets[b]);
    return 1;
}

/* Page id holding logical token p of request b, or -1 when the block-table entry is outside
 * [0, num_pages) (skipped, never dereferenced). p must be >= 0. */
MLA_DEV int32_t page_of(const int32_t *block_table, int64_t bt_stride, int b, int64_t p, int32_t page_size,
                        int32_t num_pages) {
    int32_t page = block_table[(int64_t)b * bt_stride + p / page_size];
    return (page >= 0 && page < num_pages) ? page : -1;
}

/* End of the keys query row t sees, clamped to [0, row_len): causal j <= pos, else j < seq_len
 * (SPEC section 2). 0 for a row without a request or with seq_len < q_len garbage. */
MLA_DEV int64_t visible_end(const int32_t *q_offsets, const int32_t *seq_lens, int B, int t, int causal,
                            int64_t row_len, int *b_out) {
    int b = 0;
    int64_t pos = 0;
    int32_t seq = 0;
    *b_out = -1;
    if (!token_position(q_offsets, seq_lens, B, t, &b, &pos, &seq)) return 0;
    *b_out = b;
    int64_t end = causal ? pos + 1 : (int64_t)seq;
    if (end > seq) end = seq;
    if (end < 0) end = 0;
    return end < row_len ? end : row_len;
}

/* ---- device: chunk loads and stores by alignment ---- */

/* 8 bf16 (16 bytes) from src (2-byte aligned at least) */
MLA_DEV void load_bf16x8(const uint16_t *src, int align, uint32_t w[4]) {
    if (align >= 16) {
        uint4 v = *reinterpret_cast<const uint4 *>(src);
        w[0] = v.x; w[1] = v.y; w[2] = v.z; w[3] = v.w;
    } else if (align >= 8) {
        uint2 a = reinterpret_cast<const uint2 *>(src)[0], b = reinterpret_cast<const uint2 *>(src)[1];
        w[0] = a.x; w[1] = a.y; w[2] = b.x; w[3] = b.y;
    } else if (align >= 4) {
#pragma unroll
        for (int i = 0; i < 4; i++) w[i] = reinterpret_cast<const uint32_t *>(src)[i];
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) w[i] = (uint32_t)src[2 * i] | ((uint32_t)src[2 * i + 1] << 16);
    }
}

/* nwords 32-bit words (little-endian bytes) to dst; nwords is 1, 2 or 4 */
MLA_DEV void store_words(uint8_t *dst, const uint32_t *w, int nwords, int align) {
    if (align >= 16 && nwords == 4) {
        *reinterpret_cast<uint4 *>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
    } else if (align >= 8 && (nwords & 1) == 0) {
        for (int i = 0; i < nwords; i += 2) *reinterpret_cast<uint2 *>(dst + 4 * i) = make_uint2(w[i], w[i + 1]);
    } else if (align >= 4) {
        for (int i = 0; i < nwords; i++) *reinterpret_cast<uint32_t *>(dst + 4 * i) = w[i];
    } else {
        for (int i = 0; i < 4 * nwords; i++) dst[i] = (uint8_t)(w[i >> 2] >> (8 * (i & 3)));
    }
}

MLA_DEV void store_f32(uint8_t *dst, float v, int align) {
    uint32_t w = __float_as_uint(v);
    store_words(dst, &w, 1, align);
}

/* two bf16 values (low half = first) of a packed word, as floats */
MLA_DEV float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
MLA_DEV float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

MLA_DEV float absmax4(float m, uint32_t w0, uint32_t w1) {
    m = fmaxf(m, fabsf(bf16_lo(w0)));
    m = fmaxf(m, fabsf(bf16_hi(w0)));
    m = fmaxf(m, fabsf(bf16_lo(w1)));
    m = fmaxf(m, fabsf(bf16_hi(w1)));
    return m;
}
/* max |x| over the 8 bf16 of a chunk; NaN is ignored (fmaxf), as the CPU's `v > m ? v : m` */
MLA_DEV float absmax_bf16x8(const uint32_t w[4]) {
    float m = absmax4(0.0f, w[0], w[1]);
    return absmax4(m, w[2], w[3]);
}

/* e4m3(x / scale) of the 8 bf16 of a chunk -> 8 bytes in two words (element 0 in the low byte) */
MLA_DEV void quant_bf16x8(const uint32_t w[4], float scale, uint32_t out[2]) {
    uint32_t b[8];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        b[2 * i] = f32_to_e4m3_dev(bf16_lo(w[i]) / scale);
        b[2 * i + 1] = f32_to_e4m3_dev(bf16_hi(w[i]) / scale);
    }
    out[0] = b[0] | (b[1] << 8) | (b[2] << 16) | (b[3] << 24);
    out[1] = b[4] | (b[5] << 8) | (b[6] << 16) | (b[7] << 24);
}

/* bf16(x / sigma) of the 8 bf16 of a chunk, in place */
MLA_DEV void div_bf16x8(uint32_t w[4], float sigma) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint32_t lo = f32_to_bf16_dev(bf16_lo(w[i]) / sigma), hi = f32_to_bf16_dev(bf16_hi(w[i]) / sigma);
        w[i] = lo | (hi << 16);
    }
}

#endif
