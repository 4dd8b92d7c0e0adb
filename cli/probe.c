/* CPU peak probes (see probe.h). */
#include "probe.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef float v16f __attribute__((vector_size(64)));

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mla_probe_simd(char *buf, int n) {
    buf[0] = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    int k = 0;
    if (__builtin_cpu_supports("avx512f")) k += snprintf(buf + k, (size_t)(n - k), "%savx512f", k ? " " : "");
    if (__builtin_cpu_supports("avx2") && k < n) k += snprintf(buf + k, (size_t)(n - k), "%savx2", k ? " " : "");
    if (__builtin_cpu_supports("fma") && k < n) k += snprintf(buf + k, (size_t)(n - k), "%sfma", k ? " " : "");
    if (!k) snprintf(buf, (size_t)n, "none of avx512f/avx2/fma");
#else
    snprintf(buf, (size_t)n, "(not x86)");
#endif
}

/* 12 independent chains of a = a * m + c, 16 lanes each: enough in flight to cover the FMA
 * latency on two ports. Contraction into FMA instructions is asked for explicitly (ISO C mode
 * turns it off by default). */
#define CHAINS 12
#if defined(__clang__)
#define FMA_FN
#else
#define FMA_FN __attribute__((optimize("fp-contract=fast")))
#endif
FMA_FN static float fma_chains(long iters, float seed) {
#if defined(__clang__)
#pragma clang fp contract(fast)
#endif
    v16f a[CHAINS];
    v16f m, c;
    for (int l = 0; l < 16; l++) { m[l] = 0.9999999f; c[l] = 1e-7f * seed; }
    for (int k = 0; k < CHAINS; k++)
        for (int l = 0; l < 16; l++) a[k][l] = seed + 0.001f * (float)(k * 16 + l);
    for (long i = 0; i < iters; i++) {
        a[0] = a[0] * m + c; a[1] = a[1] * m + c; a[2] = a[2] * m + c; a[3] = a[3] * m + c;
        a[4] = a[4] * m + c; a[5] = a[5] * m + c; a[6] = a[6] * m + c; a[7] = a[7] * m + c;
        a[8] = a[8] * m + c; a[9] = a[9] * m + c; a[10] = a[10] * m + c; a[11] = a[11] * m + c;
    }
    float s = 0;
    for (int k = 0; k < CHAINS; k++)
        for (int l = 0; l < 16; l++) s += a[k][l];
    return s;
}

/* Seconds for every thread to run iters iterations (they start together). */
static double fma_pass(long iters, volatile float *sink) {
    double t0 = 0, t1 = 0;
#pragma omp parallel
    {
#pragma omp barrier
#pragma omp master
        t0 = now_s();
        float s = fma_chains(iters, 1.0f + 0.01f * (float)omp_get_thread_num());
#pragma omp atomic
        *sink += s;
#pragma omp barrier
#pragma omp master
        t1 = now_s();
    }
    return t1 - t0;
}

static double probe_fma(int threads) {
    volatile float sink = 0;
    long iters = 1 << 16;
    /* calibrate to about 0.25 s per pass */
    for (;;) {
        double t = fma_pass(iters, &sink);
        if (t > 0.05 || iters > (1L << 34)) { iters = (long)((double)iters * 0.25 / (t > 1e-6 ? t : 1e-6)) + 1; break; }
        iters *= 4;
    }
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t = fma_pass(iters, &sink);
        if (t < best) best = t;
    }
    double flops = (double)iters * CHAINS * 16 * 2 * threads;
    return flops / best * 1e-9;
}

/* STREAM-style passes over three arrays of n floats, first-touched by the threads that use them. */
static int probe_bw(double *copy_gbps, double *triad_gbps) {
    const size_t n = (size_t)64 << 20; /* 64 Mi floats = 256 MiB per array, 768 MiB in all */
    float *a = (float *)aligned_alloc(64, n * 4), *b = (float *)aligned_alloc(64, n * 4),
          *c = (float *)aligned_alloc(64, n * 4);
    if (!a || !b || !c) { free(a); free(b); free(c); return -1; }
    long nn = (long)n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < nn; i++) { a[i] = 0; b[i] = 1.0f + (float)(i & 7); c[i] = 0.5f; }
    double best_copy = 1e30, best_triad = 1e30;
    const float s = 3.0f;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < nn; i++) a[i] = b[i];
        double t1 = now_s();
#pragma omp parallel for schedule(static)
        for (long i = 0; i < nn; i++) a[i] = b[i] + s * c[i];
        double t2 = now_s();
        if (t1 - t0 < best_copy) best_copy = t1 - t0;
        if (t2 - t1 < best_triad) best_triad = t2 - t1;
    }
    volatile float keep = a[nn / 3];
    (void)keep;
    *copy_gbps = 8.0 * (double)n / best_copy * 1e-9;
    *triad_gbps = 12.0 * (double)n / best_triad * 1e-9;
    free(a);
    free(b);
    free(c);
    return 0;
}

int mla_probe_run(mla_probe_result *r, int progress) {
    memset(r, 0, sizeof *r);
    r->threads = omp_get_max_threads();
    mla_probe_simd(r->simd, (int)sizeof r->simd);
    if (progress) fprintf(stderr, "probe: f32 FMA peak on %d threads...\n", r->threads);
    r->fma_gflops = probe_fma(r->threads);
    if (progress) fprintf(stderr, "probe: memory bandwidth (copy, triad over 768 MiB)...\n");
    return probe_bw(&r->copy_gbps, &r->triad_gbps);
}
