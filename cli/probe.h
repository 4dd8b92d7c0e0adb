/* This machine's CPU ceilings, measured: peak f32 FMA rate (all OpenMP threads, independent FMA
 * chains on 64-byte vectors) and memory bandwidth (STREAM-style copy and triad over ~768 MiB,
 * bytes read + written, best of several passes). `mla bench probe` prints them; the CPU bench
 * reports every figure as a fraction of them. */
#ifndef MLA_PROBE_H
#define MLA_PROBE_H

typedef struct mla_probe_result {
    int threads;            /* omp_get_max_threads() */
    char simd[64];          /* "avx512f avx2 fma" as __builtin_cpu_supports reports */
    double fma_gflops;      /* f32, 2 flops per FMA lane */
    double copy_gbps;       /* a[i] = b[i]: 8 bytes per element */
    double triad_gbps;      /* a[i] = b[i] + s * c[i]: 12 bytes per element */
} mla_probe_result;

/* Runs both probes (about two seconds). progress: print a line per probe to stderr.
 * Returns 0, or -1 when the bandwidth arrays cannot be allocated (bandwidth left 0). */
int mla_probe_run(mla_probe_result *r, int progress);
/* The SIMD features the CPU reports (avx512f, avx2, fma), space-separated. */
void mla_probe_simd(char *buf, int n);

#endif
