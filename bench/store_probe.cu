/* Shared -> global store probe (issue 5 diagnosis; not part of the library).
 * A decode segment's out (64 rows x 512 bf16 = 64 KB) is staged in a key stage and written by bulk
 * stores; the next segment's tile cannot land in that stage before the stores have read it. Session 33's
 * trace put that read at ~7K cycles after the stores' issue (64 KB at ~9 B/clock). This probe times the
 * same 64 KB leaving shared memory four ways, per CTA (one CTA per SM), `ctas` CTAs at once:
 *   bulk      8 cp.async.bulk of 8 KB, one group: cycles to wait_group.read 0, then to wait_group 0;
 *   bulk+ld   the same right after a 72 KB bulk load from HBM (9 x 8 KB on an mbarrier, the decode's next
 *             Q) was issued and not yet waited for (does the store queue behind the load?);
 *   st.global 128 threads copy the 64 KB by 16-byte ld.shared + st.global: cycles until every thread
 *             has issued its stores (the stage is free then), measured by thread 0 after bar.sync (its
 *             "done" column is not measured: 0).
 * Each CTA writes its own 64 KB region, a fresh one each iteration (regions cycle over `mb` MiB).
 * Build and run on the GPU machine (second table: see probe_busy):
 *   nvcc -O3 -gencode arch=compute_90a,code=sm_90a bench/store_probe.cu -o build-gpu/store_probe
 *   build-gpu/store_probe
 */
#include "probe.cuh"

#define OUTB 65536
#define QB 73728
#define PIECE 8192

/* the block's threads copy 64 KB from shared memory to d by 16-byte ld.shared + st.global */
__device__ __forceinline__ void copy_out(uint8_t *d, const uint8_t *sm) {
    for (int i = threadIdx.x; i < OUTB / 16; i += blockDim.x) {
        uint4 v;
        asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "r"(su32(sm + 16 * i)));
        *(uint4 *)(d + 16 * i) = v;
    }
}

/* mode 0: bulk, 1: bulk after a pending 72 KB bulk load, 2: st.global by 128 threads */
__global__ void __launch_bounds__(128, 1) probe(uint8_t *dst, const uint8_t *qsrc, size_t regions, int iters, int mode,
                                                unsigned long long *cyc) {
    extern __shared__ __align__(1024) uint8_t sm[]; /* [0, OUTB): out; [OUTB, OUTB + QB): the load's target */
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x == 0) probe_bars_init(&bar, 1);
    for (int i = threadIdx.x; i < OUTB / 16; i += blockDim.x) ((uint4 *)sm)[i] = make_uint4(i, i + 1, i + 2, i + 3);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    unsigned long long t_read = 0, t_done = 0;
    for (int it = 0; it < iters; it++) {
        const size_t reg = ((size_t)it * gridDim.x + blockIdx.x) % regions;
        uint8_t *d = dst + reg * OUTB;
        __syncthreads();
        if (mode < 2) {
            if (threadIdx.x == 0) {
                if (mode == 1) {
                    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(su32(&bar)), "r"(QB)
                                 : "memory");
                    for (int k = 0; k < QB / PIECE; k++)
                        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                                         su32(sm + OUTB + k * PIECE)),
                                     "l"(qsrc + (((size_t)it * gridDim.x + blockIdx.x) * QB + (size_t)k * PIECE) % (256u << 20)), "r"(PIECE),
                                     "r"(su32(&bar))
                                     : "memory");
                }
                const unsigned long long t0 = clock64();
                for (int k = 0; k < OUTB / PIECE; k++)
                    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(d + k * PIECE),
                                 "r"(su32(sm + k * PIECE)), "r"(PIECE)
                                 : "memory");
                asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
                asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
                const unsigned long long t1 = clock64();
                asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
                const unsigned long long t2 = clock64();
                t_read += t1 - t0;
                t_done += t2 - t0;
                if (mode == 1) probe_wait(&bar, (uint32_t)(it & 1)); /* the load's phase: the next iteration starts quiet */
            }
        } else {
            const unsigned long long t0 = clock64();
            copy_out(d, sm);
            __syncthreads();
            if (threadIdx.x == 0) t_read += clock64() - t0;
        }
    }
    if (threadIdx.x == 0) {
        cyc[2 * blockIdx.x] = t_read / iters;
        cyc[2 * blockIdx.x + 1] = t_done / iters;
    }
}

/* Second table (session 36): out leaving a few SMs while the others pull tiles, as in the running decode.
 * CTAs [0, ns) are storers: each iteration waits ~4K cycles, then sends its 64 KB (wmode 0: 8 bulk stores of
 * 8 KB, contiguous; 1: 64 rows x 8 pieces of 128 B, the rows 1 KB apart as out's rows are, 512 bulk stores;
 * 2: 128 threads, 16-byte ld.shared + st.global, contiguous) and times it to `wait_group.read 0` (mode 2:
 * until every thread has issued). CTAs [ns, grid) are loaders until the storers are done: groups of 4 pull the
 * same 73.7 KB tiles (9 bulk copies of 8 KB, two in flight) from a 1 GB buffer in HBM (the first of a group
 * misses L2, as the decode's row blocks of one request), `pace` cycles at least per tile (0: flat out). */
#define TILEB QB /* a key tile, 64 x 576 bf16, is Q's size */
__global__ void __launch_bounds__(128, 1) probe_busy(uint8_t *dst, const uint8_t *kv, size_t kv_tiles, int ns, int iters,
                                                     int wmode, int pace, volatile int *stop, unsigned long long *cyc) {
    extern __shared__ __align__(1024) uint8_t sm[];
    __shared__ __align__(8) uint64_t bar[2];
    if (threadIdx.x == 0) {
        probe_bars_init(bar, 2);
    }
    for (int i = threadIdx.x; i < OUTB / 16; i += blockDim.x) ((uint4 *)sm)[i] = make_uint4(i, i + 1, i + 2, i + 3);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if ((int)blockIdx.x < ns) { /* storer */
        unsigned long long tot = 0;
        for (int it = 0; it < iters; it++) {
            uint8_t *d = dst + ((size_t)it * ns + blockIdx.x) % 4096 * (OUTB * 2); /* rows 1 KB apart: 128 KB a region */
            if (threadIdx.x == 0) {
                const unsigned long long w = clock64();
                while (clock64() - w < 4000) { }
            }
            __syncthreads();
            const unsigned long long t0 = clock64();
            if (wmode < 2) {
                if (threadIdx.x == 0) {
                    if (wmode == 0)
                        for (int k = 0; k < OUTB / PIECE; k++)
                            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(d + k * PIECE),
                                         "r"(su32(sm + k * PIECE)), "r"(PIECE)
                                         : "memory");
                    else
                        for (int k = 0; k < 512; k++) /* chunk k / 64 (128 B of a row), row k % 64 */
                            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(
                                             d + (size_t)(k % 64) * 1024 + (k / 64) * 128),
                                         "r"(su32(sm + 128 * k)), "r"(128)
                                         : "memory");
                    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
                    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
                }
            } else {
                copy_out(d, sm);
            }
            __syncthreads();
            tot += clock64() - t0;
            if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
        }
        if (threadIdx.x == 0) {
            cyc[2 * blockIdx.x] = tot / iters;
            atomicAdd((int *)stop, 1);
        }
        return;
    }
    if (threadIdx.x != 0) return; /* loader: thread 0 */
    const int g = (blockIdx.x - ns) / 4;
    const unsigned long long t0 = clock64();
    unsigned long long tl = t0;
    int n = 0;
    for (int i = 0;; i++) {
        if (i >= 2) {
            const uint32_t par = (uint32_t)(((i - 2) / 2) & 1);
            probe_wait(&bar[i & 1], par);
            n++;
            if (*stop >= ns) break;
            while (clock64() - tl < (unsigned long long)pace) { }
            tl = clock64();
        }
        const size_t tile = ((size_t)g * 4099 + (size_t)i) % kv_tiles;
        const uint32_t b = su32(&bar[i & 1]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(TILEB) : "memory");
        for (int k = 0; k < TILEB / PIECE; k++)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                             su32(sm + (i & 1) * TILEB + k * PIECE)),
                         "l"(kv + tile * TILEB + k * PIECE), "r"(PIECE), "r"(b)
                         : "memory");
    }
    cyc[2 * blockIdx.x] = clock64() - t0;
    probe_wait(&bar[n & 1], (uint32_t)((n / 2) & 1)); /* the last tile issued (n) lands before the CTA exits */
    cyc[2 * blockIdx.x + 1] = (unsigned long long)n;
}

/* the median of n values taken every stride-th from h (h is reordered) */
static unsigned long long median(unsigned long long *h, int stride, int n) {
    for (int i = 1; i < n; i++) /* insertion sort: n <= the SM count */
        for (int j = i; j > 0 && h[j * stride] < h[(j - 1) * stride]; j--) {
            const unsigned long long t = h[j * stride];
            h[j * stride] = h[(j - 1) * stride];
            h[(j - 1) * stride] = t;
        }
    return h[(n / 2) * stride];
}

int main(void) {
    const size_t mb = 512, regions = (mb << 20) / OUTB;
    int nsm = 0;
    CK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    uint8_t *dst, *q;
    unsigned long long *cyc, *h = (unsigned long long *)malloc(2 * nsm * sizeof(unsigned long long));
    CK(cudaMalloc(&dst, mb << 20));
    CK(cudaMalloc(&q, 256u << 20));
    CK(cudaMemset(q, 1, 256u << 20));
    CK(cudaMalloc(&cyc, 2 * nsm * sizeof(unsigned long long)));
    const int smem = OUTB + QB;
    CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const char *names[3] = {"bulk", "bulk+ld", "st.global"};
    const int sizes[4] = {1, 8, nsm / 2, nsm}; /* CTAs at once, one per SM */
    printf("64 KB out leaving shared memory, cycles per CTA (median over CTAs; read = the source free)\n");
    printf("%-10s %5s %10s %10s %8s\n", "mode", "ctas", "read", "done", "B/clk");
    for (int mode = 0; mode < 3; mode++)
        for (int k = 0; k < 4; k++) {
            const int ctas = sizes[k];
            probe<<<ctas, 128, smem>>>(dst, q, regions, 4, mode, cyc); /* warm-up */
            probe<<<ctas, 128, smem>>>(dst, q, regions, 64, mode, cyc);
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(h, cyc, 2 * ctas * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
            const unsigned long long r = median(h, 2, ctas), dn = median(h + 1, 2, ctas);
            printf("%-10s %5d %10llu %10llu %8.1f\n", names[mode], ctas, r, dn, (double)OUTB / (double)r);
        }

    { /* second table: a few storers while the other SMs pull tiles */
        const size_t kvb = (size_t)1 << 30, kv_tiles = kvb / TILEB;
        uint8_t *kv;
        int *stop;
        CK(cudaMalloc(&kv, kvb));
        CK(cudaMemset(kv, 2, kvb));
        CK(cudaMalloc(&stop, sizeof(int)));
        unsigned long long *c2, *h2 = (unsigned long long *)malloc(2 * nsm * sizeof(unsigned long long));
        CK(cudaMalloc(&c2, 2 * nsm * sizeof(unsigned long long)));
        const int smem2 = 2 * TILEB;
        CK(cudaFuncSetAttribute(probe_busy, cudaFuncAttributeMaxDynamicSharedMemorySize, smem2));
        const char *wn[3] = {"bulk 8KB", "bulk rows", "st.global"};
        printf("\n64 KB out from ns storers while the other SMs pull 73.7 KB tiles (groups of 4, from HBM)\n");
        printf("%-10s %3s %6s %10s %8s %14s\n", "mode", "ns", "pace", "read", "B/clk", "loader B/clk");
        const int nss[2] = {1, 4}, paces[3] = {-1, 3300, 0};
        for (int wm = 0; wm < 3; wm++)
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 3; b++) {
                    const int ns = nss[a], grid = paces[b] < 0 ? ns : nsm;
                    for (int rep = 0; rep < 2; rep++) { /* the first warms up */
                        CK(cudaMemset(stop, 0, sizeof(int)));
                        probe_busy<<<grid, 128, smem2>>>(dst, kv, kv_tiles, ns, 32, wm, paces[b] < 0 ? 0 : paces[b], stop, c2);
                        CK(cudaDeviceSynchronize());
                    }
                    CK(cudaMemcpy(h2, c2, 2 * grid * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
                    double lb = 0;
                    int nl = 0;
                    for (int i = ns; i < grid; i++)
                        if (h2[2 * i]) {
                            lb += (double)h2[2 * i + 1] * TILEB / (double)h2[2 * i];
                            nl++;
                        }
                    const unsigned long long r = median(h2, 2, ns);
                    printf("%-10s %3d %6d %10llu %8.1f %14.1f\n", wn[wm], ns, paces[b], r, (double)OUTB / (double)r,
                           nl ? lb / nl : 0.0);
                }
        CK(cudaFree(kv));
        CK(cudaFree(c2));
        free(h2);
    }
    free(h);
    return 0;
}
