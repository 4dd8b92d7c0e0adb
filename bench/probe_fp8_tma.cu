/* Probe (diagnosis, not part of the library): how fast can CTAs stream an FP8-656 paged cache into
   shared memory, by the raw-tile kernels' ten TMA boxes per 64-key tile (8 latent slots of 64 B, the
   rope 128 B, the scales 16 B; rows 656 B apart, half of them 16 B off a 32-byte sector) against one
   1D bulk copy of the page's 41984 contiguous bytes. A 4-stage ring per CTA, one CTA per SM, a
   consumer warp that frees each stage as soon as it lands (no compute): the bytes-only ceiling of
   decode_narrow.cu's n1 at b=128 h=16 s_q=1 16K (128 requests x 256 pages).
     nvcc -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude bench/probe_fp8_tma.cu -o probe -lcuda
     ./probe                  (prints GB/s per variant, median of 9 runs, L2 flushed before each) */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <algorithm>
#include <vector>

#include "cuda/hopper.cuh"

#define ROW 656
#define KEYS 64
#define TILE (ROW * KEYS) /* 41984 */
#define STG 4

__global__ void __launch_bounds__(96, 1) probe(const __grid_constant__ CUtensorMap m1, const __grid_constant__ CUtensorMap m2,
                                               const __grid_constant__ CUtensorMap m3, const uint8_t *base, int pages, int reqs,
                                               int mode, int grid_cover, int delay) {
    extern __shared__ __align__(1024) uint8_t smem[];
    __shared__ uint64_t landed[STG], empty[STG];
    const uint32_t sb = smem_u32(smem);
    if (threadIdx.x == 0) {
        for (int s = 0; s < STG; s++) { hd_mbar_init(smem_u32(&landed[s]), 1); hd_mbar_init(smem_u32(&empty[s]), 1); }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    /* the CTA's pages: request r = blockIdx.x (grid_cover 0: one CTA a request) or an even share of all */
    const int per = pages / reqs;
    int p0, p1;
    if (!grid_cover) { p0 = blockIdx.x * per; p1 = p0 + per; if (blockIdx.x >= reqs) return; }
    else { p0 = (int)((int64_t)blockIdx.x * pages / gridDim.x); p1 = (int)((int64_t)(blockIdx.x + 1) * pages / gridDim.x); }
    const int nt = p1 - p0;
    if (threadIdx.x == 0) {
        for (int n = 0; n < nt; n++) {
            const int s = n % STG;
            if (n >= STG) hd_mbar_wait(smem_u32(&empty[s]), (uint32_t)((n / STG - 1) & 1));
            const uint32_t bar = smem_u32(&landed[s]), dst = sb + s * 43008;
            hd_mbar_expect_tx(bar, TILE);
            const int pg = p0 + n;
            if (mode == 0) {
                for (int j = 0; j < 8; j++) hd_tma_3d(dst + j * 4096, &m1, 64 * j, 0, pg, bar);
                hd_tma_3d(dst + 32768, &m2, 528, 0, pg, bar);
                hd_tma_3d(dst + 40960, &m3, 512, 0, pg, bar);
            } else {
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                             "l"(base + (int64_t)pg * TILE), "r"(TILE), "r"(bar) : "memory");
            }
        }
    } else if (threadIdx.x == 32 || threadIdx.x == 64) { /* two consumers, alternate tiles, each holding its stage `delay` cycles */
        for (int n = threadIdx.x / 32 - 1; n < nt; n += 2) {
            const int s = n % STG;
            hd_mbar_wait(smem_u32(&landed[s]), (uint32_t)((n / STG) & 1));
            const long long t0 = clock64();
            while (clock64() - t0 < delay) { }
            hd_mbar_arrive(smem_u32(&empty[s]));
        }
    }
}

typedef CUresult (*enc_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
                           const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                           CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

int main(void) {
    const int reqs = 128, per = 256, pages = reqs * per;
    uint8_t *base;
    cudaMalloc(&base, (size_t)pages * TILE);
    cudaMemset(base, 0x11, (size_t)pages * TILE);
    void *flush;
    cudaMalloc(&flush, 256 << 20);
    void *f = NULL;
    cudaDriverEntryPointQueryResult q;
    cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q);
    enc_fn enc = (enc_fn)f;
    CUtensorMap m1, m1s, m2, m3;
    const cuuint64_t dim[3] = {ROW, KEYS, (cuuint64_t)pages}, str[2] = {ROW, TILE};
    const cuuint32_t b1[3] = {64, KEYS, 1}, b2[3] = {128, KEYS, 1}, b3[3] = {16, KEYS, 1}, es[3] = {1, 1, 1};
    enc(&m1, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, base, dim, str, b1, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    enc(&m1s, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, base, dim, str, b1, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    enc(&m2, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, base, dim, str, b2, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    enc(&m3, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, base, dim, str, b3, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    const int smem = STG * 43008;
    cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const int delays[3] = {0, 6500, 7000};
    for (int d : delays) {
    printf("consumer delay %d cycles a tile (two consumers, alternate tiles)\n", d);
    struct { const char *name; int mode, cover, grid; const CUtensorMap *a; } v[] = {
        {"10 boxes, 1 CTA a request (128)", 0, 0, reqs, &m1},
        {"10 boxes, swizzle-64 slots (128)", 0, 0, reqs, &m1s},
        {"10 boxes, even share over all SMs", 0, 1, sms, &m1},
        {"1D bulk 41984 B, 1 CTA a request", 1, 0, reqs, &m1},
        {"1D bulk 41984 B, all SMs", 1, 1, sms, &m1},
    };
    for (auto &x : v) {
        std::vector<float> ms;
        for (int r = 0; r < 10; r++) {
            cudaMemset(flush, r, 256 << 20);
            cudaEventRecord(e0);
            probe<<<x.grid, 96, smem>>>(*x.a, m2, m3, base, pages, reqs, x.mode, x.cover, d);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float t;
            cudaEventElapsedTime(&t, e0, e1);
            if (r) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const double med = ms[ms.size() / 2];
        printf("%-40s %8.3f ms %8.0f GB/s  (%s)\n", x.name, med, (double)pages * TILE / med / 1e6, cudaGetErrorString(cudaGetLastError()));
    }
    }
    return 0;
}
