/* Issue rate of the e4m3 -> f16 conversions s1 runs in its S and P.V loops (decode_narrow.cu), against
 * integer formulations of the same conversion. Not part of the library.
 *
 * Each thread runs 8 independent chains of one operation, unrolled; 4 CTAs of 256 threads an SM.
 * Printed: conversions (e4m3 values) an SM a clock, and warp instructions an SM a clock of the
 * operation as written (from the SASS count per step, given by hand below).
 *   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o cvt_probe bench/cvt_probe.cu && ./cvt_probe
 *
 * Modes (one step turns one 32-bit word of four e4m3 values into two f16x2 words):
 *   0 cvt:  two cvt.rn.f16x2.e4m3x2 (F2FP), exact f16 values (s1's hn_e4m3x2_h / _hi)
 *   1 bits: six integer instructions, f16 = e4m3 * 2^-8 exactly (subnormals included; NaN not kept):
 *           s = q & 0x80808080; odd = lop3(q >> 1, s, C); even = lop3(q << 7, s << 8, C),
 *           lop3(a, b, C) = (a & C) | (b & ~C), C = 0x3F803F80 (the 7 magnitude bits at 7..13 of each
 *           half take a, every other bit b, where only the signs at 15 and 31 are set)
 *   2 hmul: one mul.f16x2 (the scale multiply of s1's V conversion), reference for its pipe
 *   3 lop:  one lop3 (xor), reference for the integer pipe */
#include <cuda_fp16.h>

#include "probe.cuh"

#define CHAINS 8
#define STEPS 256

__device__ __forceinline__ uint32_t cvt_lo(uint32_t q) {
    uint32_t h;
    asm volatile("{\n .reg .b16 l, u;\n mov.b32 {l, u}, %1;\n cvt.rn.f16x2.e4m3x2 %0, l;\n}\n" : "=r"(h) : "r"(q));
    return h;
}
__device__ __forceinline__ uint32_t cvt_hi(uint32_t q) {
    uint32_t h;
    asm volatile("{\n .reg .b16 l, u;\n mov.b32 {l, u}, %1;\n cvt.rn.f16x2.e4m3x2 %0, u;\n}\n" : "=r"(h) : "r"(q));
    return h;
}
/* bytes 1, 3 (odd) and 0, 2 (even) of q as f16x2 of e4m3 * 2^-8 */
__device__ __forceinline__ void bits2(uint32_t q, uint32_t *odd, uint32_t *even) {
    const uint32_t s = q & 0x80808080u;
    uint32_t o, e;
    asm volatile("lop3.b32 %0, %1, %2, %3, 0xe4;\n" : "=r"(o) : "r"(q >> 1), "r"(s), "r"(0x3F803F80u));
    asm volatile("lop3.b32 %0, %1, %2, %3, 0xe4;\n" : "=r"(e) : "r"(q << 7), "r"(s << 8), "r"(0x3F803F80u));
    *odd = o;
    *even = e;
}

__global__ void probe_kernel(int mode, uint32_t seed, uint32_t *sink, unsigned long long *cyc) {
    uint32_t x[CHAINS];
    for (int i = 0; i < CHAINS; i++) x[i] = seed * (threadIdx.x + 7 * i + 1);
    __syncthreads();
    const unsigned long long t0 = clock64();
    if (mode == 0) {
        for (int s = 0; s < STEPS; s++)
#pragma unroll
            for (int i = 0; i < CHAINS; i++) x[i] = cvt_lo(x[i]) ^ cvt_hi(x[i]);
    } else if (mode == 1) {
        for (int s = 0; s < STEPS; s++)
#pragma unroll
            for (int i = 0; i < CHAINS; i++) {
                uint32_t o, e;
                bits2(x[i], &o, &e);
                x[i] = o ^ e;
            }
    } else if (mode == 2) {
        for (int s = 0; s < STEPS; s++)
#pragma unroll
            for (int i = 0; i < CHAINS; i++) asm volatile("mul.rn.f16x2 %0, %0, %1;\n" : "+r"(x[i]) : "r"(0x3C003C01u));
    } else {
        for (int s = 0; s < STEPS; s++)
#pragma unroll
            for (int i = 0; i < CHAINS; i++) asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;\n" : "+r"(x[i]) : "r"(seed), "r"(s));
    }
    __syncthreads();
    const unsigned long long t1 = clock64();
    uint32_t a = 0;
    for (int i = 0; i < CHAINS; i++) a ^= x[i];
    if (a == 0x12345678u) sink[0] = a;
    if (threadIdx.x == 0) cyc[blockIdx.x] = t1 - t0;
}

/* check mode 1 against cvt for all 256 e4m3 codes but NaN: bits * 2^8 == cvt */
__global__ void check_kernel(int *bad) {
    const uint32_t b = threadIdx.x;
    if ((b & 0x7f) == 0x7f) return;
    const uint32_t q = b | (b << 8) | (b << 16) | (b << 24);
    uint32_t o, e;
    bits2(q, &o, &e);
    const uint32_t c = cvt_lo(q);
    const float want = __half2float(__ushort_as_half((unsigned short)(c & 0xffff)));
    const float got = __half2float(__ushort_as_half((unsigned short)(e & 0xffff))) * 256.f;
    const float got2 = __half2float(__ushort_as_half((unsigned short)(o >> 16))) * 256.f;
    if (!(want == got && want == got2)) atomicAdd(bad, 1);
}

int main(void) {
    int dev = 0, sms = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    int *bad;
    CK(cudaMalloc(&bad, sizeof(int)));
    CK(cudaMemset(bad, 0, sizeof(int)));
    check_kernel<<<1, 256>>>(bad);
    int hbad = -1;
    CK(cudaMemcpy(&hbad, bad, sizeof hbad, cudaMemcpyDeviceToHost));
    printf("bits vs cvt over the 254 non-NaN e4m3 codes: %d mismatches\n", hbad);
    const int per = 4, block = 256, grid = per * sms;
    uint32_t *sink;
    unsigned long long *cyc;
    CK(cudaMalloc(&sink, 4));
    CK(cudaMalloc(&cyc, grid * sizeof *cyc));
    const char *name[4] = {"cvt (2 F2FP + xor a step)", "bits (6 int + xor a step)", "mul.f16x2", "lop3"};
    const double conv[4] = {4, 4, 0, 0}, inst[4] = {3, 7, 1, 1};
    for (int mode = 0; mode < 4; mode++) {
        probe_kernel<<<grid, block>>>(mode, 12345u, sink, cyc); /* warm */
        CK(cudaDeviceSynchronize());
        probe_kernel<<<grid, block>>>(mode, 12345u, sink, cyc);
        CK(cudaDeviceSynchronize());
        const double c = probe_mean_cycles(cyc, grid);
        const double steps = (double)per * block * CHAINS * STEPS; /* per SM */
        printf("%-26s %8.0f cycles  %6.1f e4m3 values/clk/SM  %6.2f warp instr/clk/SM\n", name[mode], c, conv[mode] * steps / c,
               inst[mode] * steps / 32.0 / c);
    }
    return 0;
}
