/* What the standalone GPU probes in bench/ share (l2_probe.cu, store_probe.cu; not part of the library). */
#ifndef MLA_BENCH_PROBE_CUH
#define MLA_BENCH_PROBE_CUH
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* a CUDA runtime call that must succeed, else the probe exits naming it */
#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__device__ __forceinline__ uint32_t su32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
/* n mbarriers of one arrival each, visible to the async proxy (the bulk copies complete on them); one thread */
__device__ __forceinline__ void probe_bars_init(uint64_t *bar, int n) {
    for (int d = 0; d < n; d++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(su32(&bar[d])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/* spins until the phase of parity par of bar has completed */
__device__ __forceinline__ void probe_wait(uint64_t *bar, uint32_t par) {
    asm volatile("{\n .reg .pred P;\n W: mbarrier.try_wait.parity.shared::cta.b64 P, [%0], %1;\n @!P bra W;\n}\n" ::"r"(su32(bar)),
                 "r"(par)
                 : "memory");
}
/* ms since e0 was recorded, the work queued since then done (records e1) */
static inline float probe_stop(cudaEvent_t e0, cudaEvent_t e1) {
    float ms;
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return ms;
}
/* the mean over n CTAs of the cycles each wrote to d_cyc[] (n <= 4096) */
static inline double probe_mean_cycles(const unsigned long long *d_cyc, int n) {
    static unsigned long long h[4096];
    CK(cudaMemcpy(h, d_cyc, n * sizeof *h, cudaMemcpyDeviceToHost));
    double m = 0;
    for (int i = 0; i < n; i++) m += (double)h[i] / n;
    return m;
}
/* a launch of grid CTAs of block threads with smem bytes of dynamic shared memory, in clusters of cs
 * CTAs along x; *at (one attribute) must live as long as the config */
static inline cudaLaunchConfig_t probe_cluster_cfg(cudaLaunchAttribute *at, int cs, int grid, int block, size_t smem) {
    cudaLaunchConfig_t cfg = {};
    at->id = cudaLaunchAttributeClusterDimension;
    at->val.clusterDim.x = cs;
    at->val.clusterDim.y = 1;
    at->val.clusterDim.z = 1;
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    return cfg;
}
#endif
