/* Device helpers shared by the CUDA kernels: the bit-exact twins of src/core/numeric.h, and thin
 * wrappers over the PTX the kernels use (cp.async, ldmatrix, mma.sync). Plain functions, no
 * templates. */
#ifndef MLA_CUDA_COMMON_CUH
#define MLA_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#define MLA_DEV static __device__ __forceinline__

MLA_DEV float bf16_to_f32_dev(uint16_t x) { return __uint_as_float((uint32_t)x << 16); }
/* round to nearest even; NaN stays NaN (cvt.rn.bf16.f32 matches f32_to_bf16_ref) */
MLA_DEV uint16_t f32_to_bf16_dev(float f) {
    __nv_bfloat16 h = __float2bfloat16_rn(f);
    return *reinterpret_cast<uint16_t *>(&h);
}
MLA_DEV float e4m3_to_f32_dev(uint8_t x) {
    __nv_fp8_e4m3 v;
    v.__x = x;
    return (float)v;
}
/* round to nearest even, saturate to +-448 (cvt.rn.satfinite.e4m3x2.f32) */
MLA_DEV uint8_t f32_to_e4m3_dev(float f) { return (uint8_t)__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3); }

/* 2^ceil(log2(max(amax/448, 1e-4))) computed on the bits, as pow2_scale_ref */
MLA_DEV float pow2_scale_dev(float amax) {
    float r = amax / 448.0f;
    if (!(r > 1e-4f)) r = 1e-4f;
    uint32_t u = __float_as_uint(r);
    uint32_t mant = u & 0x7fffffu, e = u >> 23;
    if (mant) e++;  /* not a power of two: round the exponent up */
    return __uint_as_float(e << 23);
}

/* ---- async copies (sm_80+) ---- */
MLA_DEV uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
MLA_DEV void cp_async_16(void *smem, const void *gmem) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(smem)), "l"(gmem));
}
/* zero-fills the 16 bytes when pred is false (src not read) */
MLA_DEV void cp_async_16_zfill(void *smem, const void *gmem, bool pred) {
    int n = pred ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(n));
}
MLA_DEV void cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }
/* the "memory" clobber keeps the compiler from moving shared-memory reads of the landed bytes above it */
#define CP_ASYNC_WAIT(n) asm volatile("cp.async.wait_group %0;\n" ::"n"(n) : "memory")

/* ---- tensor cores, warp level (m16n8k16 bf16, m16n8k32 e4m3), f32 accumulators ---- */
MLA_DEV void ldmatrix_x4(uint32_t r[4], const void *smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(smem)));
}
MLA_DEV void ldmatrix_x4_trans(uint32_t r[4], const void *smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(smem)));
}
MLA_DEV void ldmatrix_x2(uint32_t r[2], const void *smem) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(smem_u32(smem)));
}
MLA_DEV void mma_bf16_16816(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
MLA_DEV void mma_e4m3_16832(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* two floats -> packed bf16x2 (lo in the low half), round to nearest even */
MLA_DEV uint32_t pack_bf16x2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* Exclusive prefix sum of v over the block (every thread calls it; sh: 32 shared slots, reusable
 * after the call); *total = the block's sum. */
MLA_DEV long long block_excl_scan(long long v, long long *total, long long *sh /* [32] */) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    long long x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        long long y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) sh[w] = x;
    __syncthreads();
    long long before = 0, all = 0;
    for (int i = 0; i < nw; i++) {
        long long s = sh[i];
        if (i < w) before += s;
        all += s;
    }
    __syncthreads(); /* sh is reused by the next call */
    *total = all;
    return before + x - v;
}

#endif
