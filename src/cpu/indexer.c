/* mla_indexer on CPU: e4m3 q [T,H,D], q_s [T,H], MLA_IDX_FP8 paged keys -> top-k logical positions
 * [T, top_k] and optional logits [T, logits_stride] (SPEC 4.5).
 *
 * Scoring is a GEMM of the T*H query rows against the keys with a ReLU and a head reduction in its
 * epilogue. Per request, query rows go in chunks of up to CHUNK_T tokens:
 *  - q of the chunk is converted to f32 once (256-entry table), packed [t][head group][d][HG]
 *    (heads padded with zero rows and zero weights to a multiple of HG, which add exact zeros);
 *  - tasks (block of KBLK keys) x (group of query rows) run in parallel; a task converts its keys
 *    once (vectorized bit arithmetic, 16 x 16 transposes) into panels [d][PANEL] of PANEL keys,
 *    zero-padded;
 *  - the micro-kernel keeps HG heads x PANEL keys in registers over d, then adds
 *    q_s * max(0, dot) head by head into PANEL running sums; every key goes through the same
 *    arithmetic, so identical keys get identical scores;
 *  - score = sum * k_s, written to the logits row (or a scratch row when logits is NULL).
 * Top-k per row then runs on the visible prefix [0, n_vis) (src/cpu/topk.c, radix select).
 * Keys on an out-of-range page are skipped: score -inf, never selected. A NaN head dot product
 * (only possible from NaN codes in a used key or q) counts as 0 through the ReLU.
 * Measured (2 Zen 4 cores, T=64 H=64 D=128, 32K keys, top_k 2048): scoring 0.152 s = 227 GFLOPS,
 * 98% of the 232 GFLOPS FMA peak; top-k 3.6 ms. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "cpu.h"
#include "topk.h"
#include "../core/numeric.h"

#define HG 8                  /* heads per micro-tile */
#define NV 2                  /* vectors of 16 keys per micro-tile */
#define PANEL (16 * NV)       /* keys per panel */
#define KBLK (4 * PANEL)      /* keys per task */
#define CHUNK_T 64            /* query tokens per chunk */

/* -DMLA_INDEXER_PROFILE: seconds spent packing q, scoring and selecting, printed per call. */
#ifdef MLA_INDEXER_PROFILE
#include <stdio.h>
#define PROF_MARK(i) do { _Pragma("omp master") { double t_ = omp_get_wtime(); prof[i] += t_ - prof_t; prof_t = t_; } } while (0)
#else
#define PROF_MARK(i) do { } while (0)
#endif

typedef float v16 __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));

/* One query token against one panel: out[PANEL] = sum over heads of qs[h] * max(0, q[h] . k).
 * qp: [ng][D][HG] packed f32; kt: [D][PANEL] f32 (64-byte aligned). ISO C mode turns off FMA
 * contraction; this loop wants it. */
__attribute__((optimize("fp-contract=fast"))) static void score_panel(const float *qp, const float *qs, int ng,
                                                                     const float *kt, int D, float *out) {
    v16 o[NV];
    for (int v = 0; v < NV; v++) o[v] = (v16){0};
    for (int g = 0; g < ng; g++) {
        const float *q = qp + (size_t)g * D * HG;
        v16 acc[HG][NV];
        for (int r = 0; r < HG; r++)
            for (int v = 0; v < NV; v++) acc[r][v] = (v16){0};
        for (int d = 0; d < D; d++) {
            v16 k[NV];
            for (int v = 0; v < NV; v++) k[v] = *(const v16 *)(kt + d * PANEL + 16 * v);
            for (int r = 0; r < HG; r++) {
                float s = q[d * HG + r];
                for (int v = 0; v < NV; v++) acc[r][v] += s * k[v];
            }
        }
        const v16 zero = {0};
        for (int r = 0; r < HG; r++) {
            float w = qs[g * HG + r];
            for (int v = 0; v < NV; v++) { /* ReLU by mask (NaN -> 0 as well) */
                v16 relu = (v16)((v16i)acc[r][v] & (v16i)(acc[r][v] > zero));
                o[v] += w * relu;
            }
        }
    }
    for (int v = 0; v < NV; v++) *(v16 *)(out + 16 * v) = o[v];
}

typedef struct {
    const mla_indexer_args *a;
    int b;                 /* request */
    int64_t q0, qlen;      /* first row of the request, its query count */
    int64_t seq;           /* keys of the request */
    int64_t c0, rows;      /* chunk: request-local first row, row count */
    int D, ng;             /* dim, head groups */
    float *const *row_out; /* [rows] score rows */
    const float *qp;       /* [rows][ng][D][HG] */
    const float *qs;       /* [rows][ng*HG] */
} chunk_ctx;

/* Visible keys of request-local row i: causal j <= pos, else j < seq. */
static inline int64_t visible(const mla_indexer_args *a, int64_t seq, int64_t qlen, int64_t i) {
    if (!a->causal) return seq;
    int64_t n = seq - qlen + i + 1;
    return n < 0 ? 0 : n > seq ? seq : n;
}

typedef uint32_t v16u __attribute__((vector_size(64)));

/* e4m3 codes -> f32 bit patterns, bit for bit e4m3_to_f32_ref: normal codes by moving the bits
 * into place, subnormals as m * 2^-9, 0x7F/0xFF NaN. Branch-free integer code that gcc
 * vectorizes. */
static void e4m3_bits(const uint8_t *restrict src, uint32_t *restrict dst, int n) {
    for (int i = 0; i < n; i++) {
        int32_t x = src[i], em = x & 0x7f;
        float sub = (float)em * (1.0f / 512.0f);
        int32_t sb;
        memcpy(&sb, &sub, 4);
        int32_t normal = -(em >= 8), nan = -(em == 0x7f);
        int32_t bits = (((em << 20) + (120 << 23)) & normal) | (sb & ~normal);
        bits = (bits & ~nan) | (0x7fc00000 & nan);
        dst[i] = (uint32_t)bits | ((uint32_t)x & 0x80u) << 24;
    }
}

/* In-place transpose of 16 rows of 16 floats: for b = 8, 4, 2, 1 swap the off-diagonal b x b
 * blocks of every 2b x 2b block (two-source shuffles). */
static inline __attribute__((always_inline)) void transpose16(v16 *m) {
    static const v16i lo_mask[4] = {
        {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
        {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
        {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
        {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30}};
    static const v16i hi_mask[4] = {
        {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31},
        {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31},
        {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31},
        {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}};
#pragma GCC unroll 4
    for (int s = 0; s < 4; s++) {
        const int b = 8 >> s;
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) {
            if (i & b) continue;
            v16 lo = m[i], hi = m[i + b];
            m[i] = __builtin_shuffle(lo, hi, lo_mask[s]);
            m[i + b] = __builtin_shuffle(lo, hi, hi_mask[s]);
        }
    }
}

/* Converts keys [k0, k0 + nk) of the request into panels kt [KBLK/PANEL][D][PANEL] (zeros past
 * nk and for keys on an out-of-range page), their scales into ks and whether their page exists
 * into ok. 16 keys at a time: convert their rows into rowbits [16][D], then transpose 16 x 16
 * tiles into the panel. */
static void load_keys(const chunk_ctx *c, int64_t k0, int nk, float *kt, float *ks, uint8_t *ok, uint32_t *rowbits) {
    static const uint8_t zero_row[128];
    const mla_paged_cache *pc = &c->a->cache;
    const int D = c->D;
    const uint8_t *rows[KBLK];
    for (int jj = 0; jj < KBLK; jj++) {
        rows[jj] = zero_row;
        ks[jj] = 0.0f;
        ok[jj] = 0;
    }
    for (int jj = 0; jj < nk; jj++) {
        int64_t j = k0 + jj;
        int32_t page = c->a->batch.block_table[(int64_t)c->b * c->a->batch.bt_stride + j / pc->page_size];
        if (page < 0 || page >= pc->num_pages) continue;
        const uint8_t *pg = (const uint8_t *)pc->base + (int64_t)page * pc->page_stride;
        int64_t slot = j % pc->page_size;
        rows[jj] = pg + slot * D;
        memcpy(&ks[jj], pg + (int64_t)pc->page_size * D + slot * 4, 4);
        ok[jj] = 1;
    }
    const int used = (nk + PANEL - 1) / PANEL * PANEL; /* panels the scorer reads */
    for (int k16 = 0; k16 < used; k16 += 16) {
        float *dst = kt + (size_t)(k16 / PANEL) * D * PANEL + k16 % PANEL;
        for (int i = 0; i < 16; i++) e4m3_bits(rows[k16 + i], rowbits + (size_t)i * D, D);
        for (int d0 = 0; d0 < D; d0 += 16) {
            v16 m[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) m[i] = (v16) * (const v16u *)(rowbits + (size_t)i * D + d0);
            transpose16(m);
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) *(v16 *)(dst + (size_t)(d0 + i) * PANEL) = m[i];
        }
    }
}

/* Scores rows [r0, r1) of the chunk against keys [k0, k0 + KBLK) where visible. */
static void score_task(const chunk_ctx *c, int64_t k0, int64_t r0, int64_t r1, float *kt, float *ks, uint8_t *ok) {
    const mla_indexer_args *a = c->a;
    int64_t kmax = visible(a, c->seq, c->qlen, c->c0 + r1 - 1); /* visibility grows with the row */
    if (k0 >= kmax) return;
    int nk = (int)(kmax - k0 < KBLK ? kmax - k0 : KBLK);
    load_keys(c, k0, nk, kt, ks, ok, (uint32_t *)(kt + (size_t)KBLK * c->D));
    float tile[PANEL] __attribute__((aligned(64)));
    const int HP = c->ng * HG;
    for (int64_t r = r0; r < r1; r++) {
        int64_t nv = visible(a, c->seq, c->qlen, c->c0 + r);
        float *out = c->row_out[r];
        for (int p = 0; p * PANEL < nk; p++) {
            int64_t pk0 = k0 + (int64_t)p * PANEL;
            if (pk0 >= nv) break;
            score_panel(c->qp + (size_t)r * HP * c->D, c->qs + (size_t)r * HP, c->ng, kt + (size_t)p * c->D * PANEL,
                        c->D, tile);
            int64_t n = nv - pk0 < PANEL ? nv - pk0 : PANEL;
            for (int64_t jj = 0; jj < n; jj++) {
                int idx = p * PANEL + (int)jj;
                out[pk0 + jj] = ok[idx] ? tile[jj] * ks[idx] : -INFINITY;
            }
        }
    }
}

mla_status mla_cpu_indexer(mla_ctx *ctx, const mla_indexer_args *a) {
    const int D = a->dim, H = a->num_heads;
    const int ng = (H + HG - 1) / HG, HP = ng * HG;
    const int64_t q_st = a->q_stride_t ? a->q_stride_t : (int64_t)H * D;
    const int64_t i_st = a->indices_stride_t ? a->indices_stride_t : a->top_k;
    const int nt = mla_cpu_threads(ctx);
    const mla_batch *bt = &a->batch;

    int64_t smax = 0;
    for (int b = 0; b < bt->num_requests; b++)
        if (bt->seq_lens[b] > smax) smax = bt->seq_lens[b];
    /* Without logits, scores live in a scratch of crows rows x smax. */
    int64_t crows = CHUNK_T;
    if (!a->logits && smax > 0) {
        int64_t lim = ((int64_t)1 << 22) / smax; /* 16 MiB of scores */
        crows = lim < 4 ? 4 : lim < CHUNK_T ? lim : CHUNK_T;
    }
    size_t tk_words = mla_cpu_topk_scratch_words(smax, a->top_k);
    size_t kt_floats = (size_t)(KBLK + 16) * D; /* panels, then 16 converted rows */
    float lut[256];
    for (int i = 0; i < 256; i++) lut[i] = e4m3_to_f32_ref((uint8_t)i);

    float *qp = aligned_alloc(64, (size_t)crows * HP * D * sizeof(float));
    float *qs = malloc((size_t)crows * HP * sizeof(float));
    float **row_out = malloc((size_t)crows * sizeof(float *));
    float *scratch = a->logits ? NULL : malloc((size_t)crows * (size_t)(smax ? smax : 1) * sizeof(float));
    float *kt = aligned_alloc(64, (size_t)nt * kt_floats * sizeof(float));
    float *ks = malloc((size_t)nt * KBLK * sizeof(float));
    uint8_t *ok = malloc((size_t)nt * KBLK);
    uint32_t *tk = malloc((size_t)nt * tk_words * sizeof(uint32_t));
    mla_status rc = MLA_OK;
#ifdef MLA_INDEXER_PROFILE
    double prof[3] = {0, 0, 0}, prof_t = omp_get_wtime();
#endif
    if (!qp || !qs || !row_out || (!a->logits && !scratch) || !kt || !ks || !ok || !tk) {
        rc = mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "indexer: cannot allocate CPU scratch");
        goto done;
    }

    for (int b = 0; b < bt->num_requests; b++) {
        const int64_t q0 = bt->q_offsets[b], qlen = bt->q_offsets[b + 1] - q0, seq = bt->seq_lens[b];
        for (int64_t c0 = 0; c0 < qlen; c0 += crows) {
            const int64_t rows = qlen - c0 < crows ? qlen - c0 : crows;
            for (int64_t r = 0; r < rows; r++)
                row_out[r] = a->logits ? a->logits + (q0 + c0 + r) * a->logits_stride : scratch + r * smax;
            const chunk_ctx c = {a, b, q0, qlen, seq, c0, rows, D, ng, row_out, qp, qs};
            const int64_t kmax = visible(a, seq, qlen, c0 + rows - 1);
            const int64_t nkb = (kmax + KBLK - 1) / KBLK;
            /* enough tasks for the threads: split rows when there are few key blocks */
            int64_t rgroups = nkb >= 4 * nt ? 1 : (4 * nt + (nkb ? nkb : 1) - 1) / (nkb ? nkb : 1);
            if (rgroups > rows) rgroups = rows;
            const int64_t rg = (rows + rgroups - 1) / rgroups;
            rgroups = (rows + rg - 1) / rg;
            const int64_t ntask = nkb * rgroups;

#pragma omp parallel num_threads(nt)
            {
                const int tid = omp_get_thread_num();
#pragma omp for schedule(static)
                for (int64_t r = 0; r < rows; r++) {
                    const uint8_t *qr = a->q + (q0 + c0 + r) * q_st;
                    const float *w = a->q_s + (q0 + c0 + r) * H;
                    float *dst = qp + (size_t)r * HP * D;
                    for (int h = 0; h < HP; h++) {
                        float *col = dst + (size_t)(h / HG) * D * HG + h % HG;
                        if (h < H)
                            for (int d = 0; d < D; d++) col[d * HG] = lut[qr[(int64_t)h * D + d]];
                        else
                            for (int d = 0; d < D; d++) col[d * HG] = 0.0f;
                        qs[r * HP + h] = h < H ? w[h] : 0.0f;
                    }
                }
                PROF_MARK(0);
#pragma omp for schedule(dynamic, 1)
                for (int64_t task = 0; task < ntask; task++) {
                    int64_t kb = task / rgroups, g = task % rgroups;
                    int64_t r0 = g * rg, r1 = r0 + rg < rows ? r0 + rg : rows;
                    score_task(&c, kb * KBLK, r0, r1, kt + (size_t)tid * kt_floats, ks + (size_t)tid * KBLK,
                               ok + (size_t)tid * KBLK);
                }
                PROF_MARK(1);
#pragma omp for schedule(dynamic, 1)
                for (int64_t r = 0; r < rows; r++) {
                    const int64_t t = q0 + c0 + r, nv = visible(a, seq, qlen, c0 + r);
                    if (a->logits)
                        for (int64_t j = nv; j < a->logits_stride; j++) row_out[r][j] = -INFINITY;
                    mla_cpu_topk_row(row_out[r], nv, a->top_k, a->indices + t * i_st, tk + (size_t)tid * tk_words);
                }
                PROF_MARK(2);
            }
        }
    }
#ifdef MLA_INDEXER_PROFILE
    fprintf(stderr, "indexer profile: pack q %.4f s, score %.4f s, top-k %.4f s\n", prof[0], prof[1], prof[2]);
#endif
done:
    free(qp); free(qs); free(row_out); free(scratch); free(kt); free(ks); free(ok); free(tk);
    return rc;
}
