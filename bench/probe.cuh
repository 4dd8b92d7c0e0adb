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
#endif
