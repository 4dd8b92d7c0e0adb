/* Bit-exact scalar conversions and the writers' scale rules (SPEC sections 1 and 3). Every
 * backend and test matches these byte for byte. Header-only so hot loops inline them. The CUDA
 * backend has device twins in src/cuda/common.cuh. */
#ifndef MLA_CORE_NUMERIC_H
#define MLA_CORE_NUMERIC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float mla_bits_to_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t mla_f32_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static inline float bf16_to_f32_ref(uint16_t x) { return mla_bits_to_f32((uint32_t)x << 16); }

/* Round to nearest even; NaN stays NaN (quiet, sign kept). */
static inline uint16_t f32_to_bf16_ref(float f) {
    uint32_t u = mla_f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* e4m3fn: bias 7, no infinities, S.1111.111 is NaN, max finite 448. */
static inline float e4m3_to_f32_ref(uint8_t x) {
    uint32_t s = (uint32_t)(x & 0x80) << 24, e = (x >> 3) & 0xf, m = x & 7;
    if (e == 0xf && m == 7) return mla_bits_to_f32(s | 0x7fc00000u);
    if (e == 0) return mla_bits_to_f32(s) + (s ? -1.0f : 1.0f) * (float)m * 0.001953125f; /* m * 2^-9 */
    return mla_bits_to_f32(s | ((e + 120u) << 23) | (m << 20));
}

/* Round to nearest even, saturate to +-448, NaN -> 0x7F (sign kept). */
static inline uint8_t f32_to_e4m3_ref(float f) {
    uint32_t u = mla_f32_to_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint8_t)(sign | 0x7f);
    if (a >= 0x43e00000u) return (uint8_t)(sign | 0x7e);           /* >= 448 (and inf): saturate */
    if (a < 0x3c800000u) {                                          /* < 2^-6: subnormal range */
        /* value / 2^-9 rounded to nearest even gives the mantissa count 0..8 */
        float v = mla_bits_to_f32(a) * 512.0f;                      /* exact scaling */
        float r = nearbyintf(v);                                    /* current mode: nearest even */
        uint32_t m = (uint32_t)r;                                   /* 8 means 2^-6: e=1,m=0 */
        return (uint8_t)(sign | m);
    }
    /* normal: keep 3 mantissa bits with round to nearest even */
    uint32_t e = (a >> 23) - 120u;                                  /* 1..15 */
    uint32_t mant = a & 0x7fffffu;
    uint32_t keep = mant >> 20, rest = mant & 0xfffffu;
    if (rest > 0x80000u || (rest == 0x80000u && (keep & 1u))) { keep++; if (keep == 8) { keep = 0; e++; } }
    if (e > 15 || (e == 15 && keep == 7)) return (uint8_t)(sign | 0x7e); /* rounded past 448 */
    return (uint8_t)(sign | (e << 3) | keep);
}

/* Writers' scale: 2^ceil(log2(max(amax / 448, 1e-4))), computed exactly on the bits. */
static inline float pow2_scale_ref(float amax) {
    float r = amax / 448.0f;
    if (!(r > 1e-4f)) r = 1e-4f;                                    /* also catches NaN */
    int e; float m = frexpf(r, &e);                                 /* r = m * 2^e, m in [0.5,1) */
    return (m == 0.5f) ? ldexpf(1.0f, e - 1) : ldexpf(1.0f, e);
}

#endif
