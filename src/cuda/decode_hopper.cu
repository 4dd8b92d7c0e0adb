/* mla_decode on CUDA, Hopper (sm_90a) path: paged MLA_KV_BF16 latent cache -> out [T,H,512]
   bf16, lse [T,H] f32 (spec 4.1). Entry points in decode_hopper.h; decode.cu dispatches here.
     v1  wgmma (HGMMA) from shared memory, cp.async producer warpgroup (two pairs of warps, one
         per stage), two consumer warpgroups; split-KV with its own combine.   untimed
   Run alone: build/tests/test_cuda_decode_hopper (MLA_BENCH_HOPPER=1 times it).

   ---- v1 design -------------------------------------------------------------------------------
   Work unit (one CTA, 384 threads = 3 warpgroups): 64 query rows of ONE request x a contiguous
   range of 64-key tiles (a split). The rows of request b are its q_len*H (token, head) pairs,
   row R = i*H + h (token i of the request, head h), cut into blocks of 64 (last block masked).
   grid.x = "row-block slots": request b owns slots [g_b, g_b + ceil(q_len*H/64)) with
   g_b = floor(q_offsets[b]*H/64) + b, which are disjoint and increasing, so a CTA finds b by a
   binary search over q_offsets (no plan kernel) and slots past a request's blocks exit at once;
   grid.x = floor(T*H/64) + B. grid.y = split: the block's visible keys [0, key_end) (key_end =
   seq_len, or under causal the last row's pos + 1) are cut into 64-key tiles and split y takes
   tiles [y*tps, (y+1)*tps), tps = ceil(tiles / nsplit).

   Warpgroup 0 = producer (setmaxnreg 56): warps 0-1 ("pair 0") load the even tiles into stage 0,
   warps 2-3 ("pair 1") load Q, then the odd tiles into stage 1. A pair looks up the 64 rows'
   addresses (block table per row, so any page_size works), writes them to smem, then each of
   its 64 threads issues 72 cp.async of 16 bytes (zero-fill for rows past seq_len or on pages
   outside [0, num_pages): such rows are never read and are exactly 0 in smem, so 0*NaN cannot
   happen), waits for its own copies, fence.proxy.async (cp.async writes through the generic
   proxy, wgmma reads through the async proxy), and arrives on the stage's "full" mbarrier.
   Warpgroups 1, 2 = consumers w = 0, 1 (setmaxnreg 224), per tile n (stage s = n & 1):
     S_w  = Q K[32w, 32w+32)^T      36 x wgmma m64n32k16 (A = Q, B = K tile, both K-major smem)
     mask (key valid bit from the producer, causal key <= pos, row < q_len*H), scale*log2(e),
     row max of the own 32 columns -> smem red[w]; bar 1 (256 threads); m = max(m, both halves)
     P_w = exp2(S - m) -> bf16 into the shared P tile (columns 32w..); fence.proxy.async; bar 2
     O_w = O_w * exp2(m_old - m) + P V[:, 256w, 256w+256)   4 x wgmma m64n256k16 (A = P smem,
          B = the same K tile read N-major through the transpose bit: V = first 512 columns)
     then S_{n+1} is issued right behind P.V (other stage), wait_group 1 -> P.V done -> arrive on
     the stage's "empty" mbarrier (producer may overwrite), wait_group 0 -> S_{n+1} ready.
   Each consumer keeps its own partial row sum l (same m in both halves); the halves are added
   once at the end. Unsplit: out = O / l (times the sink factor) in bf16, lse. Split: f32
   partials O / l and lse2 = m + log2 l per (split, t, h) in the workspace; combine kernel.

   ---- shared memory (dynamic, base rounded up to 1024 B; all offsets from that base) ---------
   A "chunk" is 64 rows x 64 bf16 columns = 64 x 128 B = 8192 B in the 128-byte swizzle layout
   that wgmma descriptors (swizzle mode 1) and TMA SWIZZLE_128B use: element (r, c) of chunk k
   sits at k*8192 + r*128 + (((c/8) ^ (r%8)) * 16) + (c%8)*2. A 576-wide row block is 9 chunks.
     Q      [0,      73728)   64 rows x 576, 9 chunks (row r = query row of the block)
     K[0]   [73728,  147456)  stage 0: 64 keys x 576, 9 chunks (row r = key key0 + r)
     K[1]   [147456, 221184)  stage 1
     P      [221184, 229376)  64 rows x 64 keys bf16, one chunk
     small  [229376, ...)     mbarriers, key-valid bits, row-reduction scratch, row addresses
   wgmma descriptors (64-bit): bits 0-13 addr>>4, 16-29 LBO>>4, 32-45 SBO>>4, 62-63 = 1 (128B).
     K-major operand (Q, K for S; P for P.V): SBO = 1024 (next 8 rows), LBO unused (16);
       k-step ks of 16 columns: start + (ks/4)*8192 + (ks%4)*32 (inside the 128 B row; the
       hardware applies the XOR on the address bits, so the atom must be 1024-aligned).
     N-major operand (V for P.V, transpose bit 1): LBO = 8192 (next 64 columns = next chunk),
       SBO = 1024 (next 8 keys); k-step ks of 16 keys: start + ks*2048; columns 256w: +4*w*8192.
   wgmma accumulator layout (m64nN, f32): thread t of the warpgroup, warp = t/32, lane = t%32,
   holds d[4i + e], i < N/8: row = 16*warp + lane/4 + 8*(e/2), col = 8*i + 2*(lane%4) + (e%2). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "common.cuh"
#include "cuda.h"
#include "decode_hopper.h"

/* ------------------------------------------------------------------------------------------ */
/* Tile constants (one block: change together)                                                 */

#define HD_ROWS 64              /* query rows per CTA (wgmma M) */
#define HD_KEYS 64              /* keys per tile */
#define HD_DK 576               /* key / q width */
#define HD_DV 512               /* value width */
#define HD_ROW_BYTES 1152       /* one bf16 cache row */
#define HD_C16 72               /* 16-byte pieces per row */
#define HD_CHUNK 8192           /* 64 rows x 128 B */
#define HD_TILE (9 * HD_CHUNK)  /* 73728: 64 rows x 576 bf16 */
#define HD_SQ 0
#define HD_SK0 HD_TILE
#define HD_SK1 (2 * HD_TILE)
#define HD_SP (3 * HD_TILE)
#define HD_BIG (HD_SP + HD_CHUNK) /* 229376 */
#define HD_THREADS 384
#define HD_PRODUCER_REGS 56
#define HD_CONSUMER_REGS 224
#define HD_SMEM_LIMIT 232448    /* sharedMemPerBlockOptin on H100 / H200 (227 KB) */

typedef struct hd_small {
    uint64_t full[2];           /* mbarrier: stage loaded (64 producer-pair arrivals) */
    uint64_t empty[2];          /* mbarrier: stage consumed (256 consumer arrivals) */
    uint64_t qfull;             /* mbarrier: Q loaded (64 arrivals of pair 1) */
    uint32_t kv_valid[2][2];    /* per stage, bit r of word k: key key0 + 32k + r is readable */
    float red[2][HD_ROWS];      /* per consumer: row max (per tile), then row sum (at the end) */
    const uint8_t *rows[2][HD_ROWS]; /* per producer pair: global address of each row or NULL */
} hd_small;

#define HD_SMEM_BYTES (1024 + HD_BIG + (int)sizeof(hd_small)) /* 1024: alignment slack */

static_assert(HD_DK == MLA_KEY_DIM && HD_DV == MLA_LATENT_DIM, "MLA dims");
static_assert(HD_DK == 9 * 64 && HD_C16 * 16 == HD_ROW_BYTES && HD_ROW_BYTES == 2 * HD_DK, "row = 9 chunks of 64 columns");
static_assert(HD_TILE == HD_ROWS * HD_DK * 2 && HD_TILE == HD_KEYS * HD_DK * 2, "tile bytes");
static_assert(HD_SK0 % 1024 == 0 && HD_SK1 % 1024 == 0 && HD_SP % 1024 == 0, "1024-byte swizzle atoms");
static_assert(HD_SMEM_BYTES <= HD_SMEM_LIMIT, "shared memory budget (227 KB per block)");
static_assert(sizeof(hd_small) % 8 == 0 && HD_BIG % 8 == 0, "mbarrier alignment");
static_assert(HD_ROWS * HD_C16 == 64 * 72, "a producer pair (64 threads) issues 72 copies each per tile");
static_assert(HD_PRODUCER_REGS + 2 * HD_CONSUMER_REGS <= 65536 / 128 && HD_PRODUCER_REGS % 8 == 0 &&
                  HD_CONSUMER_REGS % 8 == 0,
              "setmaxnreg budget: 128 * (producer + 2 consumers) <= 64K registers");

/* Kernel parameters: sizes, then pointers (shape in the comment), strides, derived values. */
typedef struct hd_params {
    int32_t B, T, H, causal;
    int32_t nsplit;             /* >= 1 */
    int32_t page_size, num_pages;
    int32_t dbg;                /* stage test: one tile, identity P, raw S and O to dbg_out */
    const uint16_t *q;          /* [T, H, 576] bf16 */
    int64_t q_st, q_sh;         /* elements */
    const uint8_t *kv;          /* page p at kv + p * page_stride */
    int64_t page_stride;        /* bytes */
    const int32_t *q_off;       /* [B+1] device */
    const int32_t *seq;         /* [B] device */
    const int32_t *bt;          /* [B, bt_stride] device */
    int64_t bt_stride;
    float scale_log2;           /* scale * log2(e) */
    const float *sink;          /* [H] or NULL */
    uint16_t *out;              /* [T, H, 512] bf16 */
    int64_t o_st, o_sh;
    float *lse;                 /* [T, H] or NULL */
    int64_t lse_st;
    float *ws_o;                /* nsplit > 1: [nsplit, T, H, 512] f32 partial out (already / l) */
    float *ws_lse;              /* nsplit > 1: [nsplit, T, H] f32 partial lse, log2 units, -inf empty */
    float *dbg_out;             /* dbg: [64*64 + 64*512] */
} hd_params;

/* What one CTA works on (every thread computes the same values). */
typedef struct hd_job {
    int b, q_start, q_len, nrows, row0, seq, t_begin, nt, split;
} hd_job;

/* ------------------------------------------------------------------------------------------ */
/* PTX wrappers                                                                                */

/* named barrier (ids: 0 __syncthreads, 1-2 the consumers, 3-4 the producer pairs) */
#define HD_BAR(id, n) asm volatile("bar.sync %0, %1;\n" ::"n"(id), "n"(n) : "memory")
MLA_DEV void hd_mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/* release (cta): orders this thread's earlier memory accesses before the phase completes */
MLA_DEV void hd_mbar_arrive(uint32_t bar) {
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
/* acquire (cta): returns once the phase with this parity has completed */
MLA_DEV void hd_mbar_wait(uint32_t bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}
/* 16 bytes global -> shared; n = 0 writes 16 zero bytes and reads nothing */
MLA_DEV void hd_cp16(uint32_t dst, const void *src, int n) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n) : "memory");
}
MLA_DEV void hd_fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
MLA_DEV void hd_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
MLA_DEV void hd_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
#define HD_WGMMA_WAIT(n) asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory")
/* keeps the compiler from moving accumulator accesses across the wgmma wait / fence */
MLA_DEV void hd_pin(float *d, int n) {
#pragma unroll
    for (int i = 0; i < n; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* 128B-swizzle shared-memory matrix descriptor */
MLA_DEV uint64_t hd_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32) |
           (1ull << 62);
}

/* D[64x32] (+)= A[64x16] B[16x32]; A, B K-major in smem; scale_d 0 overwrites D */
MLA_DEV void hd_wgmma_n32(float d[16], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(da), "l"(db), "r"(scale_d));
}

/* D[64x256] += A[64x16] B[16x256]; A K-major, B N-major (transpose bit), both in smem */
MLA_DEV void hd_wgmma_n256t(float d[128], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(1));
}

/* ------------------------------------------------------------------------------------------ */
/* v1: the CTA's job                                                                           */

MLA_DEV int hd_clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }
MLA_DEV int64_t hd_slot_of(const hd_params &p, int b) {
    return (int64_t)hd_clamp(p.q_off[b], 0, p.T) * p.H / HD_ROWS + b;
}

/* 0 when this CTA has no rows (slot past its request's blocks) */
MLA_DEV int hd_find_job(const hd_params &p, hd_job *J) {
    const int64_t slot = blockIdx.x;
    if (p.B < 1) return 0;
    int lo = 0, hi = p.B - 1; /* largest b with slot_of(b) <= slot (slot_of strictly increasing) */
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (hd_slot_of(p, mid) <= slot) lo = mid;
        else hi = mid - 1;
    }
    const int b = lo;
    const int64_t g = hd_slot_of(p, b);
    if (slot < g) return 0;
    J->b = b;
    J->q_start = hd_clamp(p.q_off[b], 0, p.T);
    J->q_len = hd_clamp(p.q_off[b + 1], J->q_start, p.T) - J->q_start;
    J->nrows = J->q_len * p.H;
    J->row0 = (int)(slot - g) * HD_ROWS;
    if (J->row0 >= J->nrows) return 0;
    J->seq = p.seq[b] > 0 ? p.seq[b] : 0;
    const int rows_here = min(HD_ROWS, J->nrows - J->row0);
    const int i_last = (J->row0 + rows_here - 1) / p.H;
    int key_end = J->seq;
    if (p.causal) key_end = min(key_end, J->seq - J->q_len + i_last + 1);
    if (key_end < 0) key_end = 0;
    const int ntiles = (key_end + HD_KEYS - 1) / HD_KEYS;
    const int tps = (ntiles + p.nsplit - 1) / p.nsplit;
    J->split = blockIdx.y;
    J->t_begin = J->split * tps;
    J->nt = max(0, min(ntiles, J->t_begin + tps) - J->t_begin);
    if (p.dbg) J->nt = min(J->nt, 1);
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* v1: producer pair (64 threads, pt = 0..63)                                                  */

/* 64 rows x 1152 B -> 9 swizzled chunks at dst. Thread pt issues pieces pt, pt+64, ... so a warp
 * reads 512 contiguous bytes per instruction; rows[r] NULL = 16 zero bytes, nothing read. */
MLA_DEV void hd_copy_rows(uint32_t dst, const uint8_t *const *rows, int pt, const void *dummy) {
#pragma unroll 4
    for (int it = 0; it < HD_C16; it++) {
        const int c = it * 64 + pt;
        const int r = c / HD_C16, k = c - r * HD_C16;
        const uint8_t *src = rows[r];
        const uint32_t d = dst + (uint32_t)((k >> 3) * HD_CHUNK + r * 128 + (((k & 7) ^ (r & 7)) << 4));
        hd_cp16(d, src ? (const void *)(src + k * 16) : dummy, src ? 16 : 0);
    }
}

#define HD_PAIR_BAR(pair) do { if (pair) HD_BAR(4, 64); else HD_BAR(3, 64); } while (0)

MLA_DEV void hd_producer(const hd_params &p, const hd_job &J, hd_small *sm, uint32_t sbase, uint32_t sm_u32, int tid) {
    const int pair = tid >> 6, pt = tid & 63;
    const uint32_t full_bar = sm_u32 + (uint32_t)offsetof(hd_small, full) + 8u * pair;
    const uint32_t empty_bar = sm_u32 + (uint32_t)offsetof(hd_small, empty) + 8u * pair;
    const uint32_t qfull_bar = sm_u32 + (uint32_t)offsetof(hd_small, qfull);
    const uint32_t stage = sbase + (pair ? HD_SK1 : HD_SK0);
    const uint8_t **rows = sm->rows[pair];
    if (J.nt == 0) return;

    if (pair == 1) { /* Q rows: R = row0 + pt -> (token i, head h); rows past q_len*H are zero */
        const int R = J.row0 + pt;
        const uint8_t *src = NULL;
        if (R < J.nrows) {
            const int i = R / p.H, h = R - i * p.H;
            src = (const uint8_t *)(p.q + (int64_t)(J.q_start + i) * p.q_st + (int64_t)h * p.q_sh);
        }
        rows[pt] = src;
        HD_PAIR_BAR(pair);
        hd_copy_rows(sbase + HD_SQ, rows, pt, p.kv);
        cp_async_commit();
        CP_ASYNC_WAIT(0);
        hd_fence_proxy_async();
        hd_mbar_arrive(qfull_bar);
        HD_PAIR_BAR(pair); /* everyone done reading rows[] */
    }

    for (int n = pair; n < J.nt; n += 2) {
        const int k = n >> 1; /* k-th use of this stage */
        const int key = (J.t_begin + n) * HD_KEYS + pt;
        const uint8_t *src = NULL;
        if (key < J.seq) {
            const int32_t page = p.bt[(int64_t)J.b * p.bt_stride + key / p.page_size];
            if (page >= 0 && page < p.num_pages)
                src = p.kv + (int64_t)page * p.page_stride + (int64_t)(key % p.page_size) * HD_ROW_BYTES;
        }
        const uint32_t valid = __ballot_sync(0xffffffffu, src != NULL);
        if (k >= 1) hd_mbar_wait(empty_bar, (uint32_t)((k - 1) & 1)); /* consumers done with tile n-2 */
        rows[pt] = src;
        if ((pt & 31) == 0) sm->kv_valid[pair][pt >> 5] = valid;
        HD_PAIR_BAR(pair);
        hd_copy_rows(stage, rows, pt, p.kv);
        cp_async_commit();
        CP_ASYNC_WAIT(0);
        hd_fence_proxy_async(); /* generic-proxy (cp.async) writes before async-proxy (wgmma) reads */
        hd_mbar_arrive(full_bar);
        HD_PAIR_BAR(pair); /* rows[] may be rewritten */
    }
}

/* ------------------------------------------------------------------------------------------ */
/* v1: consumer warpgroup w (tid = 0..127 inside it)                                           */

/* S_w = Q . K[32w..32w+32)^T over 576 columns: 36 k-steps; committed as one group */
MLA_DEV void hd_issue_s(float s[16], uint32_t sq, uint32_t sk, int w) {
    const uint64_t dq = hd_desc(sq, 16, 1024);
    const uint64_t dk = hd_desc(sk + (uint32_t)w * 32 * 128, 16, 1024);
    hd_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < HD_DK / 16; ks++) {
        const uint32_t off = (uint32_t)((ks >> 2) * HD_CHUNK + (ks & 3) * 32);
        hd_wgmma_n32(s, dq + (off >> 4), dk + (off >> 4), ks > 0);
    }
    hd_wgmma_commit();
}

/* O_w += P . V[:, 256w, 256w+256): 4 k-steps of 16 keys; committed as one group */
MLA_DEV void hd_issue_pv(float o[128], uint32_t sp, uint32_t sk, int w) {
    const uint64_t dp = hd_desc(sp, 16, 1024);
    const uint64_t dv = hd_desc(sk + (uint32_t)w * 4 * HD_CHUNK, HD_CHUNK, 1024);
    hd_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < HD_KEYS / 16; ks++) hd_wgmma_n256t(o, dp + (uint64_t)((ks * 32) >> 4), dv + (uint64_t)((ks * 2048) >> 4));
    hd_wgmma_commit();
}

MLA_DEV float hd_quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
MLA_DEV float hd_quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

MLA_DEV void hd_consumer(const hd_params &p, const hd_job &J, hd_small *sm, uint8_t *gbase, uint32_t sbase,
                         uint32_t sm_u32, int w, int tid) {
    const int warp = tid >> 5, lane = tid & 31, q4 = lane & 3;
    const int r0 = warp * 16 + (lane >> 2); /* this thread's rows: r0 and r0 + 8 */
    int rv[2], pos[2], tt[2], hh[2];
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const int R = J.row0 + r0 + 8 * e;
        rv[e] = R < J.nrows;
        const int i = rv[e] ? R / p.H : 0;
        hh[e] = rv[e] ? R - i * p.H : 0;
        tt[e] = J.q_start + i;
        pos[e] = J.seq - J.q_len + i; /* bottom-right causal position */
    }
    const uint32_t sq = sbase + HD_SQ, sp = sbase + HD_SP;
    const uint32_t full0 = sm_u32 + (uint32_t)offsetof(hd_small, full);
    const uint32_t empty0 = sm_u32 + (uint32_t)offsetof(hd_small, empty);

    float o[128], s[16];
#pragma unroll
    for (int i = 0; i < 128; i++) o[i] = 0.f;
#pragma unroll
    for (int i = 0; i < 16; i++) s[i] = 0.f;
    float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};

    if (J.nt > 0) {
        hd_mbar_wait(sm_u32 + (uint32_t)offsetof(hd_small, qfull), 0);
        hd_mbar_wait(full0, 0);
        hd_issue_s(s, sq, sbase + HD_SK0, w);
        HD_WGMMA_WAIT(0);
        hd_pin(s, 16);
    }
    for (int n = 0; n < J.nt; n++) {
        const int st = n & 1;
        const uint32_t sk = sbase + (st ? HD_SK1 : HD_SK0);
        const int kbase = (J.t_begin + n) * HD_KEYS + 32 * w;
        const uint32_t vm = sm->kv_valid[st][w];

        /* mask and scale (log2 units); masked -> -inf, never arithmetic on the raw value */
        float sv[16];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int kl = 8 * i + 2 * q4 + (e & 1), rr = e >> 1;
                const int ok = ((vm >> kl) & 1u) && rv[rr] && (!p.causal || kbase + kl <= pos[rr]);
                sv[4 * i + e] = ok ? s[4 * i + e] * p.scale_log2 : -INFINITY;
            }
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            mx0 = fmaxf(mx0, fmaxf(sv[4 * i], sv[4 * i + 1]));
            mx1 = fmaxf(mx1, fmaxf(sv[4 * i + 2], sv[4 * i + 3]));
        }
        mx0 = hd_quad_max(mx0);
        mx1 = hd_quad_max(mx1);
        if (q4 == 0) {
            sm->red[w][r0] = mx0;
            sm->red[w][r0 + 8] = mx1;
        }
        HD_BAR(1, 256); /* both halves' maxima written; both P.V of tile n-1 done */
        const float mn0 = fmaxf(m_run[0], fmaxf(mx0, sm->red[1 - w][r0]));
        const float mn1 = fmaxf(m_run[1], fmaxf(mx1, sm->red[1 - w][r0 + 8]));
        const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
        const float al0 = exp2f(m_run[0] - mu0), al1 = exp2f(m_run[1] - mu1);
        m_run[0] = mn0;
        m_run[1] = mn1;
        float pv[16], ps0 = 0.f, ps1 = 0.f;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            pv[4 * i + 0] = exp2f(sv[4 * i + 0] - mu0);
            pv[4 * i + 1] = exp2f(sv[4 * i + 1] - mu0);
            pv[4 * i + 2] = exp2f(sv[4 * i + 2] - mu1);
            pv[4 * i + 3] = exp2f(sv[4 * i + 3] - mu1);
            ps0 += pv[4 * i] + pv[4 * i + 1];
            ps1 += pv[4 * i + 2] + pv[4 * i + 3];
        }
        l_run[0] = l_run[0] * al0 + ps0;
        l_run[1] = l_run[1] * al1 + ps1;

        if (p.dbg) { /* stage test: raw S out, P := identity */
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int r = r0 + 8 * (e >> 1), j = 32 * w + 8 * i + 2 * q4 + (e & 1);
                    p.dbg_out[r * 64 + j] = s[4 * i + e];
                    pv[4 * i + e] = r == j ? 1.f : 0.f;
                }
        }

        /* P (bf16) into the shared P tile: row r, key j at r*128 + ((j/8 ^ r%8) * 16) + (j%8)*2 */
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int sw = ((4 * w + i) ^ (r0 & 7)) << 4; /* (r0 + 8) % 8 == r0 % 8 */
            *(uint32_t *)(gbase + HD_SP + r0 * 128 + sw + q4 * 4) = pack_bf16x2(pv[4 * i], pv[4 * i + 1]);
            *(uint32_t *)(gbase + HD_SP + (r0 + 8) * 128 + sw + q4 * 4) = pack_bf16x2(pv[4 * i + 2], pv[4 * i + 3]);
        }
        hd_fence_proxy_async(); /* generic stores of P before the async-proxy (wgmma) reads */
        HD_BAR(2, 256);    /* both halves of P written */

#pragma unroll
        for (int i = 0; i < 32; i++) {
            o[4 * i + 0] *= al0;
            o[4 * i + 1] *= al0;
            o[4 * i + 2] *= al1;
            o[4 * i + 3] *= al1;
        }
        hd_pin(o, 128);
        hd_issue_pv(o, sp, sk, w);
        /* Each branch ends with no wgmma group pending, so ptxas sees no accumulator read
         * while a group is in flight on any path. */
        if (n + 1 < J.nt) { /* next S right behind P.V: the tensor cores stay busy */
            const int st1 = (n + 1) & 1;
            hd_mbar_wait(full0 + 8u * st1, (uint32_t)(((n + 1) >> 1) & 1));
            hd_issue_s(s, sq, sbase + (st1 ? HD_SK1 : HD_SK0), w);
            HD_WGMMA_WAIT(1); /* P.V of tile n done (groups complete in order) */
            hd_pin(o, 128);
            hd_fence_proxy_async();
            hd_mbar_arrive(empty0 + 8u * st); /* stage st free for the producer */
            HD_WGMMA_WAIT(0);                 /* S of tile n+1 done */
            hd_pin(s, 16);
        } else {
            HD_WGMMA_WAIT(0);
            hd_pin(o, 128);
            hd_fence_proxy_async();
            hd_mbar_arrive(empty0 + 8u * st);
        }
    }

    if (p.dbg) {
        if (J.nt > 0) {
#pragma unroll
            for (int i = 0; i < 32; i++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    p.dbg_out[4096 + (r0 + 8 * (e >> 1)) * 512 + 256 * w + 8 * i + 2 * q4 + (e & 1)] = o[4 * i + e];
        }
        return;
    }

    /* row sums: the quad, then both halves (each consumer has the same m) */
    float l0 = hd_quad_sum(l_run[0]), l1 = hd_quad_sum(l_run[1]);
    if (q4 == 0) {
        sm->red[w][r0] = l0;
        sm->red[w][r0 + 8] = l1;
    }
    HD_BAR(1, 256);
    float lt[2];
    lt[0] = l0 + sm->red[1 - w][r0];
    lt[1] = l1 + sm->red[1 - w][r0 + 8];

#pragma unroll
    for (int e = 0; e < 2; e++) {
        if (!rv[e]) continue;
        const int t = tt[e], h = hh[e];
        const float inv_l = lt[e] > 0.f ? 1.f / lt[e] : 0.f;
        const int cbase = 256 * w + 2 * q4;
        if (p.nsplit == 1) {
            float f = inv_l, lse = INFINITY;
            if (lt[e] > 0.f) {
                lse = (m_run[e] + log2f(lt[e])) * 0.69314718055994531f;
                if (p.sink) f *= 1.f / (1.f + expf(p.sink[h] - lse));
            }
            uint16_t *orow = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh + cbase;
#pragma unroll
            for (int i = 0; i < 32; i++)
                *(uint32_t *)(orow + 8 * i) = pack_bf16x2(o[4 * i + 2 * e] * f, o[4 * i + 2 * e + 1] * f);
            if (p.lse && w == 0 && q4 == 0) p.lse[(int64_t)t * p.lse_st + h] = lse;
        } else {
            const int64_t prow = ((int64_t)J.split * p.T + t) * p.H + h;
            float *po = p.ws_o + prow * HD_DV + cbase;
#pragma unroll
            for (int i = 0; i < 32; i++)
                *(float2 *)(po + 8 * i) = make_float2(o[4 * i + 2 * e] * inv_l, o[4 * i + 2 * e + 1] * inv_l);
            if (w == 0 && q4 == 0) p.ws_lse[prow] = lt[e] > 0.f ? m_run[e] + log2f(lt[e]) : -INFINITY;
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* v1: kernel                                                                                  */

__global__ void __launch_bounds__(HD_THREADS, 1) hd_decode_kernel_v1(const hd_params p) {
    extern __shared__ __align__(1024) uint8_t hd_smem_raw[];
    hd_job J;
    if (!hd_find_job(p, &J)) return; /* uniform over the CTA */

    const uint32_t raw = smem_u32(hd_smem_raw);
    const uint32_t sbase = (raw + 1023u) & ~1023u; /* swizzle atoms need 1024-byte alignment */
    uint8_t *gbase = hd_smem_raw + (sbase - raw);
    hd_small *sm = (hd_small *)(gbase + HD_BIG);
    const uint32_t sm_u32 = sbase + HD_BIG;

    if (threadIdx.x == 0) {
        for (int i = 0; i < 2; i++) {
            hd_mbar_init(sm_u32 + (uint32_t)offsetof(hd_small, full) + 8u * i, 64);
            hd_mbar_init(sm_u32 + (uint32_t)offsetof(hd_small, empty) + 8u * i, 256);
        }
        hd_mbar_init(sm_u32 + (uint32_t)offsetof(hd_small, qfull), 64);
    }
    __syncthreads();

    const int wg = threadIdx.x >> 7, tid = threadIdx.x & 127;
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(HD_PRODUCER_REGS));
        hd_producer(p, J, sm, sbase, sm_u32, tid);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(HD_CONSUMER_REGS));
        hd_consumer(p, J, sm, gbase, sbase, sm_u32, wg - 1, tid);
    }
}

/* Split-KV combine: one warp per (t, h) row, lane covers columns 4*lane + 128*k (k < 4).
 * lse2_s = -inf marks an empty split (its partial is 0 and is skipped). */
__global__ void __launch_bounds__(128) hd_combine_kernel_v1(const hd_params p) {
    const int64_t row = (int64_t)blockIdx.x * 4 + (threadIdx.x >> 5);
    const int lane = threadIdx.x & 31;
    const int64_t TH = (int64_t)p.T * p.H;
    if (row >= TH) return;
    const int t = (int)(row / p.H), h = (int)(row - (int64_t)t * p.H);
    float M = -INFINITY;
    for (int s = lane; s < p.nsplit; s += 32) M = fmaxf(M, p.ws_lse[s * TH + row]);
#pragma unroll
    for (int k = 16; k >= 1; k >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, k));
    float acc[16];
#pragma unroll
    for (int i = 0; i < 16; i++) acc[i] = 0.f;
    float W = 0.f;
    if (M != -INFINITY) {
        for (int s = 0; s < p.nsplit; s++) {
            const float ls = p.ws_lse[s * TH + row];
            if (ls == -INFINITY) continue;
            const float wgt = exp2f(ls - M);
            W += wgt;
            const float *src = p.ws_o + (s * TH + row) * HD_DV + 4 * lane;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const float4 v = *(const float4 *)(src + 128 * k);
                acc[4 * k + 0] += wgt * v.x;
                acc[4 * k + 1] += wgt * v.y;
                acc[4 * k + 2] += wgt * v.z;
                acc[4 * k + 3] += wgt * v.w;
            }
        }
    }
    float f = 0.f, lse = INFINITY;
    if (W > 0.f) {
        lse = (M + log2f(W)) * 0.69314718055994531f;
        f = 1.f / W;
        if (p.sink) f *= 1.f / (1.f + expf(p.sink[h] - lse));
    }
    uint16_t *orow = p.out + (int64_t)t * p.o_st + (int64_t)h * p.o_sh + 4 * lane;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        *(uint32_t *)(orow + 128 * k) = pack_bf16x2(acc[4 * k] * f, acc[4 * k + 1] * f);
        *(uint32_t *)(orow + 128 * k + 2) = pack_bf16x2(acc[4 * k + 2] * f, acc[4 * k + 3] * f);
    }
    if (p.lse && lane == 0) p.lse[(int64_t)t * p.lse_st + h] = lse;
}

/* ------------------------------------------------------------------------------------------ */
/* Host side                                                                                   */

/* Unsplit when the row blocks alone fill >= 3/4 of the SMs; else enough splits to fill them. */
static int hd_auto_splits(const mla_ctx *ctx, const mla_decode_args *a) {
    const int64_t B = a->batch.num_requests > 0 ? a->batch.num_requests : 1;
    const int64_t TH = (int64_t)a->num_tokens * a->num_heads;
    if (TH <= 0) return 1;
    const int64_t per_req = (TH + B - 1) / B;
    const int64_t est = B * ((per_req + HD_ROWS - 1) / HD_ROWS); /* row blocks of a uniform batch */
    const int64_t sms = ctx && ctx->sm_count > 0 ? ctx->sm_count : 132;
    if (est * 4 >= sms * 3) return 1;
    int64_t s = sms / est;
    if (s > MLA_HD_MAX_SPLITS) s = MLA_HD_MAX_SPLITS;
    return s < 2 ? 1 : (int)s;
}

static size_t hd_align(size_t x) { return (x + 255) & ~(size_t)255; }

static size_t hd_ws_bytes(const mla_decode_args *a, int nsplit) {
    if (nsplit <= 1 || a->num_tokens <= 0) return 0;
    const size_t rows = (size_t)a->num_tokens * (size_t)a->num_heads * (size_t)nsplit;
    return 256 + hd_align(rows * HD_DV * sizeof(float)) + hd_align(rows * sizeof(float));
}

extern "C" int mla_cuda_decode_hopper_splits(const mla_ctx *ctx, const mla_decode_args *a) {
    return hd_auto_splits(ctx, a);
}

extern "C" size_t mla_cuda_decode_hopper_workspace_ex(const mla_ctx *ctx, const mla_decode_args *a, int num_splits) {
    if (!a) return 0;
    return hd_ws_bytes(a, num_splits > 0 ? num_splits : hd_auto_splits(ctx, a));
}

extern "C" size_t mla_cuda_decode_hopper_workspace(const mla_ctx *ctx, const mla_decode_args *a) {
    return mla_cuda_decode_hopper_workspace_ex(ctx, a, 0);
}

#define HD_WHY(...) do { if (why && why_n) snprintf(why, why_n, __VA_ARGS__); return 0; } while (0)

extern "C" int mla_cuda_decode_hopper_supported(const mla_ctx *ctx, const mla_decode_args *a, char *why, size_t why_n) {
    if (why && why_n) why[0] = 0;
    if (!ctx || !a) HD_WHY("no context or arguments");
    if (ctx->backend != MLA_BACKEND_CUDA) HD_WHY("backend %s (needs cuda)", mla_backend_name(ctx->backend));
    if (ctx->sm_major != 9 || ctx->sm_minor != 0)
        HD_WHY("device SM %d.%d (needs SM 9.0, sm_90a)", ctx->sm_major, ctx->sm_minor);
    if (a->cache.format != MLA_KV_BF16) HD_WHY("format %s", mla_format_name(a->cache.format));
    if (a->num_heads < 1 || a->num_heads > MLA_MAX_HEADS) HD_WHY("num_heads %d", a->num_heads);
    if (a->cache.page_size < 1) HD_WHY("page_size %d", a->cache.page_size);
    if (((uintptr_t)a->cache.base & 15) || (a->cache.page_stride & 15))
        HD_WHY("cache.base / page_stride not 16-byte aligned");
    const int64_t qsh = a->q_stride_h ? a->q_stride_h : MLA_KEY_DIM;
    const int64_t qst = a->q_stride_t ? a->q_stride_t : (int64_t)a->num_heads * qsh;
    if (((uintptr_t)a->q & 15) || (qsh & 7) || (qst & 7))
        HD_WHY("q not 16-byte aligned (q and its strides in multiples of 8 elements)");
    const int64_t osh = a->out_stride_h ? a->out_stride_h : MLA_LATENT_DIM;
    const int64_t ost = a->out_stride_t ? a->out_stride_t : (int64_t)a->num_heads * osh;
    if (((uintptr_t)a->out & 3) || (osh & 1) || (ost & 1)) HD_WHY("out not 4-byte aligned (even strides)");
    return 1;
}

static mla_status hd_run(mla_ctx *ctx, const mla_decode_args *a, int num_splits, float *dbg) {
    char why[160];
    if (!mla_cuda_decode_hopper_supported(ctx, a, why, sizeof why))
        return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "decode (hopper kernel): %s", why);
    if (a->num_tokens <= 0) return MLA_OK;
    if (num_splits < 0 || num_splits > MLA_HD_MAX_SPLITS)
        return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "decode (hopper kernel): num_splits %d", num_splits);
    const int nsplit = dbg ? 1 : (num_splits > 0 ? num_splits : hd_auto_splits(ctx, a));

    hd_params p;
    memset(&p, 0, sizeof p);
    p.B = a->batch.num_requests;
    p.T = a->num_tokens;
    p.H = a->num_heads;
    p.causal = a->causal ? 1 : 0;
    p.nsplit = nsplit;
    p.page_size = a->cache.page_size;
    p.num_pages = a->cache.num_pages;
    p.dbg = dbg ? 1 : 0;
    p.q = (const uint16_t *)a->q;
    p.q_sh = a->q_stride_h ? a->q_stride_h : MLA_KEY_DIM;
    p.q_st = a->q_stride_t ? a->q_stride_t : (int64_t)p.H * p.q_sh;
    p.kv = (const uint8_t *)a->cache.base;
    p.page_stride = a->cache.page_stride;
    p.q_off = a->batch.q_offsets;
    p.seq = a->batch.seq_lens;
    p.bt = a->batch.block_table;
    p.bt_stride = a->batch.bt_stride;
    p.scale_log2 = a->scale * 1.4426950408889634f;
    p.sink = a->sink;
    p.out = a->out;
    p.o_sh = a->out_stride_h ? a->out_stride_h : MLA_LATENT_DIM;
    p.o_st = a->out_stride_t ? a->out_stride_t : (int64_t)p.H * p.o_sh;
    p.lse = a->lse;
    p.lse_st = a->lse_stride_t ? a->lse_stride_t : p.H;
    p.dbg_out = dbg;
    if (p.B < 1) return MLA_OK;

    const size_t need = hd_ws_bytes(a, nsplit);
    if (need) {
        if (!a->workspace || a->workspace_bytes < need)
            return mla_core_fail(ctx, MLA_ERR_INVALID_ARG,
                                 "decode: workspace_bytes %zu < %zu needed (see mla_decode_workspace_size)",
                                 a->workspace ? a->workspace_bytes : (size_t)0, need);
        const size_t rows = (size_t)p.T * (size_t)p.H * (size_t)nsplit;
        uint8_t *w = (uint8_t *)(((uintptr_t)a->workspace + 255) & ~(uintptr_t)255);
        p.ws_o = (float *)w;
        p.ws_lse = (float *)(w + hd_align(rows * HD_DV * sizeof(float)));
    }

    cudaStream_t stream = mla_cuda_stream(ctx);
    MLA_CUDA_TRY(ctx, cudaFuncSetAttribute(hd_decode_kernel_v1, cudaFuncAttributeMaxDynamicSharedMemorySize, HD_SMEM_BYTES),
                 "decode (hopper): shared memory attribute");
    const int64_t slots = (int64_t)p.T * p.H / HD_ROWS + p.B;
    dim3 grid(dbg ? 1u : (unsigned)slots, (unsigned)nsplit, 1u);
    hd_decode_kernel_v1<<<grid, HD_THREADS, HD_SMEM_BYTES, stream>>>(p);
    MLA_CUDA_LAUNCHED(ctx, "decode (hopper) kernel");
    if (nsplit > 1) {
        const int64_t TH = (int64_t)p.T * p.H;
        hd_combine_kernel_v1<<<(unsigned)((TH + 3) / 4), 128, 0, stream>>>(p);
        MLA_CUDA_LAUNCHED(ctx, "decode (hopper) combine");
    }
    return MLA_OK;
}

extern "C" mla_status mla_cuda_decode_hopper_ex(mla_ctx *ctx, const mla_decode_args *a, int num_splits) {
    return hd_run(ctx, a, num_splits, NULL);
}

extern "C" mla_status mla_cuda_decode_hopper(mla_ctx *ctx, const mla_decode_args *a) { return hd_run(ctx, a, 0, NULL); }

extern "C" mla_status mla_cuda_decode_hopper_stage(mla_ctx *ctx, const mla_decode_args *a, float *dbg) {
    if (!dbg) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "decode (hopper stage test): dbg is NULL");
    return hd_run(ctx, a, 1, dbg);
}
