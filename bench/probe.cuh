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
#endif
