/* Internal (CPU prefill and its GEMM): 16-lane f32 vectors and the register-blocked micro-kernel
 * C[8, 16*nv] (+)= A[8, k] * B[k, 16*nv] shared by the attention (S = K Q^T, O^T += V^T P^T) and
 * the block-scaled e4m3 GEMM of the fused branch (SPEC 4.3, 4.4).
 *
 * The vectors are GCC/Clang vector extensions (vector_size(64)): gcc -O3 -march=native maps them
 * to one zmm register with AVX-512 and to two ymm registers with AVX2. Plain C loops over local
 * accumulator arrays do not stay in registers under gcc, and -std=c11 turns off FMA contraction;
 * hence the explicit pf_fma. */
#ifndef MLA_CPU_PREFILL_SIMD_H
#define MLA_CPU_PREFILL_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#if !defined(__GNUC__)
#error "the CPU prefill kernels need GCC or Clang vector extensions"
#endif
#if !defined(__clang__)
/* without AVX-512 gcc notes that 64-byte vector returns change the ABI: every function here is
 * static, so no call crosses an ABI boundary */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define PF_VL 16   /* f32 lanes of one vector */
#define PF_MR 8    /* rows of the micro-kernel */
#define PF_NVMAX 3 /* vectors per row: the micro-kernel is 8 x 48 at most (24 accumulators) */

typedef float pf_v16 __attribute__((vector_size(64)));
typedef int32_t pf_i16 __attribute__((vector_size(64)));

static inline pf_v16 pf_ld(const float *p) { pf_v16 v; memcpy(&v, p, sizeof v); return v; }
static inline void pf_st(float *p, pf_v16 v) { memcpy(p, &v, sizeof v); }
static inline pf_v16 pf_set1(float x) { return (pf_v16){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
static inline pf_i16 pf_iset1(int32_t x) { return (pf_i16){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }

/* c + a * b, one rounding */
static inline pf_v16 pf_fma(pf_v16 a, pf_v16 b, pf_v16 c) {
#if defined(__AVX512F__)
    return _mm512_fmadd_ps(a, b, c);
#else
    return c + a * b; /* contracted only where the compiler is allowed to: correct either way */
#endif
}

/* lane-wise select: m ? a : b (m from a vector comparison: all ones or zero per lane) */
static inline pf_v16 pf_sel(pf_i16 m, pf_v16 a, pf_v16 b) {
    return (pf_v16)(((pf_i16)a & m) | ((pf_i16)b & ~m));
}
static inline pf_v16 pf_max(pf_v16 a, pf_v16 b) { return pf_sel(a > b, a, b); }

/* 2^x for x <= 0 (x in [-127, 127] is clamped; below -126.5 and at -inf it gives 0). Degree-6
 * Taylor polynomial of 2^f on f in [-1/2, 1/2]: relative error below 2e-7. */
static inline pf_v16 pf_exp2(pf_v16 x) {
    const pf_v16 lo = pf_set1(-127.0f), hi = pf_set1(127.0f), magic = pf_set1(12582912.0f); /* 1.5 * 2^23 */
    x = pf_sel(x < lo, lo, x); /* -inf and very negative: n = -127 gives the exponent field 0 */
    x = pf_sel(x > hi, hi, x);
    pf_v16 t = x + magic;      /* round to nearest integer in the low mantissa bits */
    pf_v16 n = t - magic;
    pf_v16 f = x - n;          /* [-1/2, 1/2] */
    pf_i16 ni = (pf_i16)t - pf_iset1(0x4B400000);
    pf_v16 p = pf_set1(1.5403530e-4f);                      /* ln2^6 / 720 */
    p = pf_fma(p, f, pf_set1(1.3333558e-3f));               /* ln2^5 / 120 */
    p = pf_fma(p, f, pf_set1(9.6181291e-3f));               /* ln2^4 / 24 */
    p = pf_fma(p, f, pf_set1(5.5504109e-2f));               /* ln2^3 / 6 */
    p = pf_fma(p, f, pf_set1(2.4022651e-1f));               /* ln2^2 / 2 */
    p = pf_fma(p, f, pf_set1(6.9314718e-1f));               /* ln2 */
    p = pf_fma(p, f, pf_set1(1.0f));
    pf_v16 sc = (pf_v16)((ni + pf_iset1(127)) << 23);      /* 2^n; n = -127 gives +0 */
    return p * sc;
}

/* e4m3 -> f32 without branches, so that loops over it vectorize: the code's low 7 bits placed in
 * an f32's exponent/mantissa field are value * 2^-120, subnormal codes included; 0x7F/0xFF give
 * NaN. Equals e4m3_to_f32_ref (src/core/numeric.h) for all 256 codes. */
static inline float pf_e4m3_to_f32(uint8_t c) {
    uint32_t x = c, mag = x & 0x7fu, u = ((x & 0x80u) << 24) | (mag << 20);
    float f;
    memcpy(&f, &u, sizeof f);
    f *= 0x1p120f;
    return mag == 0x7fu ? __builtin_nanf("") : f;
}

/* C[r, 16v + l] (+)= sum_k A[r*ars + k*aks] * B[k*ldb + 16v + l] for r < 8, v < nv, l < 16.
 * A is read as broadcast scalars (any two strides), B and C as rows of nv vectors. */
static inline __attribute__((always_inline)) void pf_mk8_body(int nv, const float *restrict a, int64_t ars,
                                                               int64_t aks, const float *restrict b, int64_t ldb,
                                                               int k, float *restrict c, int64_t ldc, int accumulate) {
    pf_v16 acc[PF_MR][PF_NVMAX];
    for (int r = 0; r < PF_MR; r++)
        for (int v = 0; v < nv; v++) acc[r][v] = accumulate ? pf_ld(c + r * ldc + v * PF_VL) : pf_set1(0.0f);
    for (int kk = 0; kk < k; kk++) {
        const float *bk = b + (int64_t)kk * ldb;
        const float *ak = a + (int64_t)kk * aks;
        pf_v16 bv[PF_NVMAX];
        for (int v = 0; v < nv; v++) bv[v] = pf_ld(bk + v * PF_VL);
#pragma GCC unroll 8
        for (int r = 0; r < PF_MR; r++) {
            pf_v16 ar = pf_set1(ak[r * ars]);
            for (int v = 0; v < nv; v++) acc[r][v] = pf_fma(ar, bv[v], acc[r][v]);
        }
    }
    for (int r = 0; r < PF_MR; r++)
        for (int v = 0; v < nv; v++) pf_st(c + r * ldc + v * PF_VL, acc[r][v]);
}

static __attribute__((unused)) void pf_mk8_nv1(const float *a, int64_t ars, int64_t aks, const float *b, int64_t ldb, int k, float *c,
                       int64_t ldc, int acc) { pf_mk8_body(1, a, ars, aks, b, ldb, k, c, ldc, acc); }
static __attribute__((unused)) void pf_mk8_nv2(const float *a, int64_t ars, int64_t aks, const float *b, int64_t ldb, int k, float *c,
                       int64_t ldc, int acc) { pf_mk8_body(2, a, ars, aks, b, ldb, k, c, ldc, acc); }
static __attribute__((unused)) void pf_mk8_nv3(const float *a, int64_t ars, int64_t aks, const float *b, int64_t ldb, int k, float *c,
                       int64_t ldc, int acc) { pf_mk8_body(3, a, ars, aks, b, ldb, k, c, ldc, acc); }

/* The micro-kernel for nv in 1..3 vectors per row. */
static inline void pf_mk8(int nv, const float *a, int64_t ars, int64_t aks, const float *b, int64_t ldb, int k, float *c,
                          int64_t ldc, int accumulate) {
    if (nv == 3) pf_mk8_nv3(a, ars, aks, b, ldb, k, c, ldc, accumulate);
    else if (nv == 2) pf_mk8_nv2(a, ars, aks, b, ldb, k, c, ldc, accumulate);
    else pf_mk8_nv1(a, ars, aks, b, ldb, k, c, ldc, accumulate);
}

#endif
