/* Distributed shared memory probe (issue 5, FP8-656 lead; not part of the library).
 * The question: can the row blocks of one request (2 at s_q=1, 4 at h=128 s_q=2), run as a
 * cluster, dequantize each 64-key FP8 tile once between them instead of once each? Each CTA would
 * convert a quarter of the tile (16 keys x 576 bf16 = 18 KB, rows 16 r .. 16 r + 15 of each of the
 * 9 swizzled chunks: 9 contiguous pieces of 2 KB) into its own stage and send those pieces to the
 * other CTAs' stages. This probe times only that exchange, against the ~3.1K cycles a bf16p tile
 * takes in the decode:
 *   mode 0: every CTA writes its quarter into its own stage (st.shared, 16 B a store) and nothing
 *           else (the local cost alone);
 *   mode 1: mode 0, then thread 0 sends the 9 pieces to each peer by bulk copy shared::cta ->
 *           shared::cluster, completing on the peer's "full" mbarrier (tx bytes);
 *   mode 2: every thread stores its 16-byte pieces straight into each peer's stage
 *           (st.shared::cluster), then one release arrive a peer.
 * Two stages; a stage is refilled only once every CTA of the cluster has arrived on the producer's
 * "empty" barrier (remote arrives), as a decode would. Also printed: the most clusters of 2 / 4
 * that fit with the decode's 384 threads and 227 KB of shared memory.
 * Build and run on the GPU machine:
 *   nvcc -O3 -gencode arch=compute_90a,code=sm_90a bench/dsmem_probe.cu -o build-gpu/dsmem_probe
 *   build-gpu/dsmem_probe
 */
#include "probe.cuh"

#define STAGE 73728 /* 9 chunks of 64 rows x 128 B */
#define CHUNK 8192
#define SMEM (2 * STAGE)

__device__ __forceinline__ uint32_t mapa(uint32_t a, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}

__global__ void __launch_bounds__(128, 1) dsm(int iters, int mode, unsigned long long *cyc, unsigned *sink) {
    extern __shared__ __align__(1024) uint8_t sm[];
    __shared__ __align__(8) uint64_t full[2], empty[2];
    uint32_t rank, cs;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(cs));
    const int tid = threadIdx.x;
    const uint32_t qb = 16 * 128 * rank; /* this CTA's 16 rows inside each chunk: 2 KB */
    if (tid == 0) {
        for (int d = 0; d < 2; d++) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(su32(&full[d])), "r"(mode == 2 ? cs : 1u) : "memory");
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(su32(&empty[d])), "r"(cs) : "memory");
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
    const unsigned long long t0 = clock64();
    unsigned acc = 0;
    for (int i = 0; i < iters; i++) {
        const int d = i & 1;
        const uint32_t stage = su32(sm + d * STAGE);
        /* every CTA of the cluster done with stage d (its last use, tile i - 2) */
        if (i >= 2) probe_wait(&empty[d], (uint32_t)(((i - 2) >> 1) & 1));
        if (tid == 0) {
            const uint32_t tx = mode == 1 ? (cs - 1) * 9 * 2048 : 0;
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(su32(&full[d])), "r"(tx) : "memory");
        }
        /* the quarter: 9 chunks x 2 KB = 1152 pieces of 16 B, 9 a thread (the "converted" values) */
        for (int k = 0; k < 9; k++) {
            const uint32_t off = k * CHUNK + qb + tid * 16;
            const uint32_t v = (uint32_t)(i * 131 + k * 7 + tid);
            asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(stage + off), "r"(v) : "memory");
            if (mode == 2)
                for (uint32_t pr = 1; pr < cs; pr++) {
                    const uint32_t peer = (rank + pr) % cs;
                    asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(mapa(stage + off, peer)), "r"(v)
                                 : "memory");
                }
        }
        if (mode == 1) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        if (tid == 0) {
            if (mode == 1)
                for (uint32_t pr = 1; pr < cs; pr++) {
                    const uint32_t peer = (rank + pr) % cs;
                    const uint32_t rb = mapa(su32(&full[d]), peer);
                    for (int k = 0; k < 9; k++) {
                        const uint32_t off = k * CHUNK + qb;
                        asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                                         mapa(stage + off, peer)),
                                     "r"(stage + off), "r"(2048), "r"(rb)
                                     : "memory");
                    }
                }
            if (mode == 2)
                for (uint32_t pr = 1; pr < cs; pr++) {
                    const uint32_t peer = (rank + pr) % cs;
                    /* (mode 2's stores are each thread's; the CTA barrier above orders them before this
                       release at cluster scope) */
                    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(mapa(su32(&full[d]), peer))
                                 : "memory");
                }
        }
        /* the tile is whole: own quarter and every peer's (mode 2: full[d] counts cs arrivals) */
        probe_wait(&full[d], (uint32_t)((i >> 1) & 1));
        /* "read" the stage: one 16-byte load a thread of another CTA's quarter */
        {
            uint32_t x;
            asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(x) : "r"(stage + ((rank + 1) % cs) * 2048 + tid * 16));
            acc += x;
        }
        __syncthreads();
        /* free stage d in every CTA of the cluster (one arrive a CTA) */
        if (tid == 0)
            for (uint32_t pr = 0; pr < cs; pr++)
                asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(mapa(su32(&empty[d]), pr))
                             : "memory");
    }
    if (tid == 0) cyc[blockIdx.x] = clock64() - t0;
    if (acc == 0x12345678u) sink[0] = acc;
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}

int main(void) {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    unsigned long long *cyc;
    unsigned *sink;
    CK(cudaMalloc(&cyc, 4096 * sizeof *cyc));
    CK(cudaMalloc(&sink, 4));
    CK(cudaFuncSetAttribute(dsm, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM));
    CK(cudaFuncSetAttribute(dsm, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    printf("%s, %d SMs\n", prop.name, sms);
    for (int cs = 2; cs <= 4; cs += 2) {
        /* how many clusters fit at once with this probe's footprint (128 threads, 2 stages: the decode's
           227 KB fit no more) */
        cudaLaunchAttribute qa;
        const cudaLaunchConfig_t q = probe_cluster_cfg(&qa, cs, sms / cs * cs, 128, SMEM);
        int ncl = 0;
        CK(cudaOccupancyMaxActiveClusters(&ncl, (void *)dsm, &q));
        printf("cluster %d: at most %d clusters at once (%d CTAs) with %d B of shared memory\n", cs, ncl, ncl * cs, SMEM);
    }
    printf("\n%5s %5s %6s %12s %14s %16s\n", "clust", "mode", "ctas", "clk/tile", "B/clk/SM in", "(remote bytes)");
    const int iters = 2000;
    for (int cs = 2; cs <= 4; cs += 2)
        for (int mode = 0; mode <= 2; mode++) {
            cudaLaunchAttribute at;
            cudaLaunchConfig_t cfg = probe_cluster_cfg(&at, cs, sms / cs * cs, 128, SMEM);
            int ncl = 0;
            CK(cudaOccupancyMaxActiveClusters(&ncl, (void *)dsm, &cfg));
            const int ctas = ncl * cs; /* one wave */
            cfg.gridDim = dim3(ctas);
            CK(cudaLaunchKernelEx(&cfg, dsm, 50, mode, cyc, sink));
            float best = 1e30f;
            double mcyc = 0;
            for (int r = 0; r < 5; r++) {
                CK(cudaEventRecord(e0));
                CK(cudaLaunchKernelEx(&cfg, dsm, iters, mode, cyc, sink));
                const float ms = probe_stop(e0, e1);
                if (ms < best) {
                    best = ms;
                    mcyc = probe_mean_cycles(cyc, ctas);
                }
            }
            const double in = mode ? (double)(cs - 1) * 9 * 2048 : 0;
            printf("%5d %5d %6d %12.0f %14.1f %16.0f\n", cs, mode, ctas, mcyc / iters, in * iters / mcyc, in);
        }
    CK(cudaGetLastError());
    return 0;
}
