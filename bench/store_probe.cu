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
 * Build and run on the GPU machine:
 *   nvcc -O3 -gencode arch=compute_90a,code=sm_90a bench/store_probe.cu -o build-gpu/store_probe
 *   build-gpu/store_probe
 */
#include "probe.cuh"

#define OUTB 65536
#define QB 73728
#define PIECE 8192

/* mode 0: bulk, 1: bulk after a pending 72 KB bulk load, 2: st.global by 128 threads */
__global__ void __launch_bounds__(128, 1) probe(uint8_t *dst, const uint8_t *qsrc, size_t regions, int iters, int mode,
                                                unsigned long long *cyc) {
    extern __shared__ __align__(1024) uint8_t sm[]; /* [0, OUTB): out; [OUTB, OUTB + QB): the load's target */
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(su32(&bar)) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
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
                if (mode == 1) { /* the load's phase, so that the next iteration starts quiet */
                    uint32_t ok = 0;
                    while (!ok)
                        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                                     : "=r"(ok)
                                     : "r"(su32(&bar)), "r"(it & 1)
                                     : "memory");
                }
            }
        } else {
            const unsigned long long t0 = clock64();
            for (int i = threadIdx.x; i < OUTB / 16; i += blockDim.x) {
                uint4 v;
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                             : "r"(su32(sm + 16 * i)));
                *(uint4 *)(d + 16 * i) = v;
            }
            __syncthreads();
            if (threadIdx.x == 0) t_read += clock64() - t0;
        }
    }
    if (threadIdx.x == 0) {
        cyc[2 * blockIdx.x] = t_read / iters;
        cyc[2 * blockIdx.x + 1] = t_done / iters;
    }
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
    free(h);
    return 0;
}
