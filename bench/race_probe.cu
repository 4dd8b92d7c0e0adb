/* Does compute-sanitizer racecheck credit an mbarrier that tracks cp.async (cp.async.mbarrier.arrive) as the
 * synchronization of a write-write pair between two warpgroups? Session 45's v67 (consumer 1 gathering the FP8
 * kernel's refills) drew 48 write-write hazards between its cp.async copies and the producer's stores of the
 * same shared memory, ordered by mbarriers both ways. Not part of the library.
 *   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -o race_probe bench/race_probe.cu
 *   compute-sanitizer --tool racecheck ./race_probe MODE
 * One CTA of 256 threads, an 8 KB buffer, ITERS rounds of: warpgroup A stores the buffer (generic), arrives on F;
 * warpgroup B waits F, copies 8 KB from global into the buffer by 16-byte cp.async and closes them on L; A waits L,
 * reads the buffer (MODE 3: reads only) and stores it again next round. B's copies close on L as:
 *   0 every lane's zero-net cp.async.mbarrier.arrive, __syncwarp, lane 0's plain arrival (4 a phase: v65-v67)
 *   1 every lane's cp.async.mbarrier.arrive.noinc (128 a phase)
 *   2 cp.async.wait_all, then every lane's plain arrival (128: a generic release; the control)
 *   3 as 0, A never stores after round 0's (read after write only: what v62 / v65 do)
 * and A's stores close on F (modes 0-3: every lane arrives, 128 a phase) as (session 46):
 *   4 __syncwarp, then lane 0's arrival (4 a phase: how the FP8 producer closes a chunk, hd_chunks_done)
 *   5 every lane's arrival on a barrier of A's own (128) and wait, then as 4 (v67c's credited chain)
 * Prints the buffer's checksum (the same in every mode). */
#include "probe.cuh"

#define ITERS 8
#define BYTES 8192

__global__ void __launch_bounds__(256, 1) race_kernel(const uint4 *src, unsigned long long *out, int mode) {
    __shared__ __align__(128) uint4 buf[BYTES / 16];
    __shared__ __align__(8) uint64_t bar[3]; /* F (A -> B), L (B's copies landed -> A), A's own (modes 5) */
    const int tid = threadIdx.x, wg = tid >> 7, t = tid & 127, l = tid & 31;
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(su32(&bar[0])), "r"(mode >= 4 ? 4 : 128) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(su32(&bar[1])), "r"(mode == 1 || mode == 2 ? 128 : 4) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 128;\n" ::"r"(su32(&bar[2])) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    unsigned long long sum = 0;
    for (int k = 0; k < ITERS; k++) {
        const uint32_t par = (uint32_t)(k & 1);
        if (wg == 0) {
            if (mode != 3 || k == 0)
                for (int i = t; i < BYTES / 16; i += 128) buf[i] = make_uint4(k, i, k * i, 7u);
            if (mode == 5) {
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(su32(&bar[2])) : "memory");
                probe_wait(&bar[2], par);
            }
            if (mode >= 4) {
                __syncwarp();
                if (l == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(su32(&bar[0])) : "memory");
            } else {
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(su32(&bar[0])) : "memory");
            }
            probe_wait(&bar[1], par);
            for (int i = t; i < BYTES / 16; i += 128) sum += buf[i].x + buf[i].w;
        } else {
            probe_wait(&bar[0], par);
            for (int i = t; i < BYTES / 16; i += 128)
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(su32(&buf[i])), "l"(src + k * (BYTES / 16) + i) : "memory");
            const uint32_t L = su32(&bar[1]);
            if (mode == 0 || mode >= 3) {
                asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];\n" ::"r"(L) : "memory");
                __syncwarp();
                if (l == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(L) : "memory");
            } else if (mode == 1) {
                asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(L) : "memory");
            } else {
                asm volatile("cp.async.wait_all;\n" ::: "memory");
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(L) : "memory");
            }
        }
    }
    if (wg == 0) atomicAdd(out, sum);
}

int main(int argc, char **argv) {
    const int mode = argc > 1 ? atoi(argv[1]) : 0;
    uint4 *src;
    unsigned long long *out, h = 0;
    CK(cudaMalloc(&src, ITERS * BYTES));
    CK(cudaMemset(src, 1, ITERS * BYTES));
    CK(cudaMalloc(&out, 8));
    CK(cudaMemset(out, 0, 8));
    race_kernel<<<1, 256>>>(src, out, mode);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&h, out, 8, cudaMemcpyDeviceToHost));
    printf("mode %d checksum %llu\n", mode, h);
    return 0;
}
