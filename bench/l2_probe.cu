/* L2 -> shared memory bandwidth probe (issue 5 diagnosis; not part of the library).
 * The Hopper decode reads every 64-key tile (73728 B) of a request once per 64-row block, so at
 * b=128 h=128 s_q=2 (4 blocks a request) most of its reads hit L2, and each SM pulls 73.7 KB per
 * tile from L2 into shared memory. This probe measures what L2 can deliver that way: `ctas` CTAs
 * (one per SM: 3 x 73728 B of shared memory), each pulling `iters` tiles of 9 bulk copies of 8 KB
 * (cp.async.bulk on an mbarrier, as the decode's TMA does) with `depth` tiles in flight, from a
 * buffer of `mb` MiB that stays in L2 (warmed first); groups of `share` consecutive CTAs read the
 * same tiles in the same order (the decode's row blocks of one request).
 * Build and run on the GPU machine:
 *   nvcc -O3 -gencode arch=compute_90a,code=sm_90a bench/l2_probe.cu -o build-gpu/l2_probe
 *   build-gpu/l2_probe            (a table over ctas, depth, share)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TILE 73728
#define PIECE 8192
#define MAXD 3

#define CK(x)                                                                          \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

__device__ __forceinline__ uint32_t su32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__global__ void __launch_bounds__(128, 1) probe(const uint8_t *buf, int ntiles, int iters, int depth, int share,
                                                unsigned long long *cyc) {
    extern __shared__ __align__(1024) uint8_t sm[];
    __shared__ __align__(8) uint64_t bar[MAXD];
    const int g = blockIdx.x / share;
    if (threadIdx.x == 0) {
        for (int d = 0; d < depth; d++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(su32(&bar[d])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    const unsigned long long t0 = clock64();
    for (int i = 0; i < iters + depth; i++) {
        if (i >= depth) { /* tile i - depth landed */
            const int d = (i - depth) % depth;
            const uint32_t par = (uint32_t)(((i - depth) / depth) & 1);
            asm volatile("{\n .reg .pred P;\n W: mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n @!P bra W;\n}\n" ::"r"(
                             su32(&bar[d])),
                         "r"(par)
                         : "memory");
        }
        if (i < iters) {
            const int d = i % depth;
            const size_t tile = ((size_t)g * 37 + (size_t)i * 11) % (size_t)ntiles;
            const uint8_t *src = buf + tile * TILE;
            const uint32_t dst = su32(sm + d * TILE), b = su32(&bar[d]);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(TILE) : "memory");
            for (int k = 0; k < TILE / PIECE; k++)
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                                 dst + k * PIECE),
                             "l"(src + k * PIECE), "r"(PIECE), "r"(b)
                             : "memory");
        }
    }
    cyc[blockIdx.x] = clock64() - t0;
}

int main(int argc, char **argv) {
    const int mb = argc > 1 ? atoi(argv[1]) : 24;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    const size_t bytes = (size_t)mb << 20;
    const int ntiles = (int)(bytes / TILE);
    uint8_t *buf;
    unsigned long long *cyc;
    CK(cudaMalloc(&buf, bytes));
    CK(cudaMemset(buf, 1, bytes));
    CK(cudaMalloc(&cyc, 4096 * sizeof *cyc));
    CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, MAXD * TILE));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("%s, %d SMs, L2 %d MiB, buffer %d MiB (%d tiles of %d B)\n", prop.name, sms, prop.l2CacheSize >> 20, mb, ntiles,
           TILE);
    printf("%6s %5s %5s %10s %12s %12s\n", "ctas", "depth", "share", "TB/s", "B/clk/SM", "clk/tile");
    const int ctas_l[] = {sms, sms / 2, sms / 4};
    const int depth_l[] = {2, 3};
    const int share_l[] = {1, 4};
    const int iters = 400;
    for (int a = 0; a < 3; a++)
        for (int d = 0; d < 2; d++)
            for (int s = 0; s < 2; s++) {
                const int ctas = ctas_l[a], depth = depth_l[d], share = share_l[s];
                probe<<<ctas, 128, MAXD * TILE>>>(buf, ntiles, 50, depth, share, cyc); /* warm L2 */
                float best = 1e30f;
                for (int r = 0; r < 5; r++) {
                    CK(cudaEventRecord(e0));
                    probe<<<ctas, 128, MAXD * TILE>>>(buf, ntiles, iters, depth, share, cyc);
                    CK(cudaEventRecord(e1));
                    CK(cudaEventSynchronize(e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, e0, e1));
                    if (ms < best) best = ms;
                }
                unsigned long long h[4096];
                CK(cudaMemcpy(h, cyc, ctas * sizeof *h, cudaMemcpyDeviceToHost));
                double mc = 0;
                for (int i = 0; i < ctas; i++) mc += (double)h[i] / ctas;
                const double tot = (double)ctas * iters * TILE;
                printf("%6d %5d %5d %10.2f %12.1f %12.0f\n", ctas, depth, share, tot / (best * 1e-3) * 1e-12,
                       (double)iters * TILE / mc, mc / iters);
            }
    return 0;
}
