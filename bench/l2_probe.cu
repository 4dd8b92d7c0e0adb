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
 *   build-gpu/l2_probe            (a table over ctas, depth, share; then clusters of 2 / 4 with
 *                                  and without TMA multicast, keys in L2 and from HBM)
 */
#include "probe.cuh"

#define TILE 73728
#define PIECE 8192
#define MAXD 3

__global__ void __launch_bounds__(128, 1) probe(const uint8_t *buf, int ntiles, int iters, int depth, int share,
                                                unsigned long long *cyc) {
    extern __shared__ __align__(1024) uint8_t sm[];
    __shared__ __align__(8) uint64_t bar[MAXD];
    const int g = blockIdx.x / share;
    if (threadIdx.x == 0) {
        probe_bars_init(bar, depth);
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    const unsigned long long t0 = clock64();
    for (int i = 0; i < iters + depth; i++) {
        if (i >= depth) { /* tile i - depth landed */
            const int d = (i - depth) % depth;
            const uint32_t par = (uint32_t)(((i - depth) / depth) & 1);
            probe_wait(&bar[d], par);
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

/* The same pull through clusters of cs CTAs (cs = share): with mc = 1 the tile's 9 pieces are
 * split over the cluster's CTAs and each issues its pieces with .multicast::cluster into every
 * CTA's shared memory (one L2 read per piece for the whole group), else every CTA pulls the whole
 * tile itself. A cluster barrier per tile keeps a stage from being refilled while another CTA of
 * the cluster still waits on it (the price of multicast; measured alone with mc = 0). One warp. */
__global__ void __launch_bounds__(32, 1) probe_cl(const uint8_t *buf, int ntiles, int iters, int depth, int cs, int mc,
                                                   unsigned long long *cyc) {
    extern __shared__ __align__(1024) uint8_t sm[];
    __shared__ __align__(8) uint64_t bar[MAXD];
    const int g = blockIdx.x / cs;
    uint32_t rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
    const int lane = threadIdx.x;
    if (lane == 0) {
        probe_bars_init(bar, depth);
    }
    __syncwarp();
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
    const unsigned long long t0 = clock64();
    for (int i = 0; i < iters + depth; i++) {
        if (i >= depth) {
            const int d = (i - depth) % depth;
            const uint32_t par = (uint32_t)(((i - depth) / depth) & 1);
            if (lane == 0)
                probe_wait(&bar[d], par);
            __syncwarp();
            /* every CTA of the cluster is done with stage d before anyone refills it */
            asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
        }
        if (i < iters && lane == 0) {
            const int d = i % depth;
            const size_t tile = ((size_t)g * 37 + (size_t)i * 11) % (size_t)ntiles;
            const uint8_t *src = buf + tile * TILE;
            const uint32_t dst = su32(sm + d * TILE), b = su32(&bar[d]);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(TILE) : "memory");
            const uint16_t mask = (uint16_t)((1u << cs) - 1u);
            for (int k = 0; k < TILE / PIECE; k++) {
                if (mc) {
                    if ((uint32_t)(k % cs) != rank) continue;
                    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n" ::"r"(
                                     dst + k * PIECE),
                                 "l"(src + k * PIECE), "r"(PIECE), "r"(b), "h"(mask)
                                 : "memory");
                } else {
                    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                                     dst + k * PIECE),
                                 "l"(src + k * PIECE), "r"(PIECE), "r"(b)
                                 : "memory");
                }
            }
        }
    }
    /* no CTA leaves while a multicast into it may still be in flight from the others */
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
    if (lane == 0) cyc[blockIdx.x] = clock64() - t0;
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
                    const float ms = probe_stop(e0, e1);
                    if (ms < best) best = ms;
                }
                const double mc = probe_mean_cycles(cyc, ctas);
                const double tot = (double)ctas * iters * TILE;
                printf("%6d %5d %5d %10.2f %12.1f %12.0f\n", ctas, depth, share, tot / (best * 1e-3) * 1e-12,
                       (double)iters * TILE / mc, mc / iters);
            }
    /* clusters: the decode's sharing groups (s_q=1: 2 row blocks, s_q=2: 4) with and without
       multicast, keys in L2 (this buffer) and from HBM (a 4 GiB buffer, cold) */
    CK(cudaFuncSetAttribute(probe_cl, cudaFuncAttributeMaxDynamicSharedMemorySize, MAXD * TILE));
    uint8_t *big;
    const size_t big_bytes = (size_t)4 << 30;
    CK(cudaMalloc(&big, big_bytes));
    CK(cudaMemset(big, 2, big_bytes));
    const int big_tiles = (int)(big_bytes / TILE);
    printf("\n%6s %5s %5s %3s %5s %10s %12s %12s\n", "ctas", "depth", "clust", "mc", "keys", "TB/s", "B/clk/SM", "clk/tile");
    const int cs_l[] = {2, 4};
    for (int hbm = 0; hbm < 2; hbm++)
        for (int c = 0; c < 2; c++)
            for (int mc = 0; mc < 2; mc++)
                for (int depth = 2; depth <= 3; depth++) {
                    const int cs = cs_l[c], ctas = sms / cs * cs;
                    cudaLaunchAttribute at;
                    const cudaLaunchConfig_t cfg = probe_cluster_cfg(&at, cs, ctas, 32, MAXD * TILE);
                    const uint8_t *src = hbm ? big : buf;
                    const int nt = hbm ? big_tiles : ntiles;
                    const int it = hbm ? 200 : iters;
                    if (!hbm) CK(cudaLaunchKernelEx(&cfg, probe_cl, src, nt, 50, depth, cs, mc, cyc));
                    float best = 1e30f;
                    double mc_cyc = 0;
                    for (int r = 0; r < 5; r++) {
                        /* HBM: each round its own region of the buffer (nothing of it in L2) */
                        const uint8_t *s2 = hbm ? src + (size_t)r * (big_bytes / 5 / TILE) * TILE : src;
                        const int nt2 = hbm ? (int)(big_bytes / 5 / TILE) : nt;
                        CK(cudaEventRecord(e0));
                        CK(cudaLaunchKernelEx(&cfg, probe_cl, s2, nt2, it, depth, cs, mc, cyc));
                        const float ms = probe_stop(e0, e1);
                        if (ms < best) {
                            best = ms;
                            mc_cyc = probe_mean_cycles(cyc, ctas);
                        }
                    }
                    const double tot = (double)ctas * it * TILE;
                    printf("%6d %5d %5d %3d %5s %10.2f %12.1f %12.0f\n", ctas, depth, cs, mc, hbm ? "hbm" : "l2",
                           tot / (best * 1e-3) * 1e-12, (double)it * TILE / mc_cyc, mc_cyc / it);
                }
    return 0;
}
