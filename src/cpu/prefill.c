/* mla_prefill on CPU: q [T,H,192], k_nope/v [S,H,128], k_rope [S,64] (bf16, or e4m3 with descales)
 * -> out [T,H,128] bf16, lse [T,H] f32 (SPEC 4.3).
 *
 * Flash-style, memory O(tile): one task is (query tile of up to 96 rows of one request, head).
 * The tile's q is converted once to f32, transposed (Qt [192][96]) and pre-multiplied by
 * scale * log2(e) (* descale_q); the task then walks the request's key blocks of 64 rows,
 * converting each to f32 (Kf [64][192] = k_nope | k_rope, Vf [64][128]), computes the scores
 * transposed (St [64][96] = Kf Qt), masks, updates the online softmax in base 2 (vectorized over
 * the tile's queries), and accumulates the output transposed (Ot [128][96] += Vf^T St). Both
 * products run the 8 x 48 register-blocked micro-kernel of prefill_simd.h, twice per row group
 * for tiles wider than 48 (96-row tiles halve the K/V conversions: 4% faster than 48). Causal key
 * blocks past the tile's last visible key are never touched; the next block's rows are
 * prefetched. Tasks run under OpenMP with dynamic scheduling, head by head (a head's K/V stays in
 * the shared L3 while the threads walk its tiles: 20% faster than tile by tile at H=8), heaviest
 * tile first.
 *
 * Measured on the 2-core AMD EPYC (Zen 4, AVX-512) dev machine, shared with other jobs: bf16,
 * one request, q_len = kv_len = 4096, causal, H=128, FLOPs 0.5 * 2 * T * S * H * 320 = 687 G:
 * 181 GFLOPS per busy core-second x 2, 75% of the f32 FMA peak measured the same way (233-245).
 *
 * lse = ln2 * (m + log2 l) with m the running max of the base-2 scores and l the sum of 2^(s - m).
 * A row with no visible key gets out = 0 and lse = +inf. */
#include <math.h>
#include <stdlib.h>

#include <omp.h>

#include "../core/numeric.h"
#include "cpu.h"
#include "prefill_simd.h"

#define BQ 96            /* query rows per tile: 6 vectors, two micro-kernel calls per row group */
#define TV (BQ / PF_VL)
#define BK 64            /* keys per block: a multiple of PF_MR */
#define QK MLA_QK_DIM    /* 192 */
#define DV MLA_NOPE_DIM  /* 128 */

typedef struct tile {
    int32_t b, i0, nq;   /* request, first row within the request, rows */
    int64_t cost;        /* keys the tile visits (for ordering) */
} tile;

/* The call's constants, resolved once. */
typedef struct plan {
    const mla_prefill_args *a;
    int e4m3;
    int64_t qst, qsh, kst, ksh, vst, vsh, rst, ost, osh, lst;
    float mul_q, mul_k, mul_v; /* input value -> f32 operand: scale * log2(e) (* descale_q), descale_k, descale_v */
} plan;

typedef struct scratch {
    float *qt;           /* [QK][BQ] */
    float *kf;           /* [BK][QK] */
    float *vf;           /* [BK][DV] */
    float *st;           /* [BK][BQ] scores, then probabilities */
    float *ot;           /* [DV][BQ] */
} scratch;

/* n values of a bf16 or e4m3 row to f32, times mul (vectorized loops). */
static void load_row(const plan *p, const void *src, int n, float mul, float *dst) {
    if (p->e4m3) {
        const uint8_t *s = (const uint8_t *)src;
        for (int d = 0; d < n; d++) dst[d] = pf_e4m3_to_f32(s[d]) * mul;
    } else {
        const uint16_t *s = (const uint16_t *)src;
        for (int d = 0; d < n; d++) dst[d] = bf16_to_f32_ref(s[d]) * mul;
    }
}

static const void *elem(const plan *p, const void *base, int64_t idx) {
    return p->e4m3 ? (const void *)((const uint8_t *)base + idx) : (const void *)((const uint16_t *)base + idx);
}

/* C[8, 16*nv] (+)= A[8, k] B[k, 16*nv] with B and C of row stride BQ: nv > 3 is split in two
 * micro-kernel calls (2+2, 3+2, 3+3) that share the A rows while they sit in L1. */
static void mk_rows(int nv, const float *a, int64_t ars, int64_t aks, const float *b, int k, float *c, int acc) {
    int first = nv <= PF_NVMAX ? nv : (nv + 1) / 2;
    pf_mk8(first, a, ars, aks, b, BQ, k, c, BQ, acc);
    if (nv > first) pf_mk8(nv - first, a, ars, aks, b + first * PF_VL, BQ, k, c + first * PF_VL, BQ, acc);
}

/* Asks for key rows [s, s + n) of head h (k_nope, k_rope, v) ahead of use: with H heads the rows
 * of one head sit H * 256 bytes apart, too far for the hardware prefetchers. */
static void prefetch_keys(const plan *p, int h, int64_t s, int n) {
    const mla_prefill_args *a = p->a;
    int es = p->e4m3 ? 1 : 2;
    for (int j = 0; j < n; j++) {
        const char *kn = (const char *)elem(p, a->k_nope, (s + j) * p->kst + h * p->ksh);
        const char *vv = (const char *)elem(p, a->v, (s + j) * p->vst + h * p->vsh);
        const char *kr = (const char *)elem(p, a->k_rope, (s + j) * p->rst);
        for (int c = 0; c < DV * es; c += 64) {
            __builtin_prefetch(kn + c, 0, 3);
            __builtin_prefetch(vv + c, 0, 3);
        }
        for (int c = 0; c < MLA_ROPE_DIM * es; c += 64) __builtin_prefetch(kr + c, 0, 3);
    }
}

/* One (tile, head): the whole online softmax over the request's visible keys. */
static void run_tile(const plan *p, const tile *tl, int h, scratch *w) {
    const mla_prefill_args *a = p->a;
    int32_t b = tl->b, i0 = tl->i0, nq = tl->nq;
    int32_t q0 = a->q_offsets[b], ql = a->q_offsets[b + 1] - q0;
    int32_t s0 = a->kv_offsets[b], kl = a->kv_offsets[b + 1] - s0;
    int64_t off = (int64_t)kl - ql; /* causal: row i sees keys j <= i + off */
    int nv = (nq + PF_VL - 1) / PF_VL;
    int w16 = nv * PF_VL;

    /* Qt: transposed, scaled; padding columns zero */
    float qrow[QK];
    for (int i = 0; i < w16; i++) {
        if (i < nq) load_row(p, elem(p, a->q, (int64_t)(q0 + i0 + i) * p->qst + h * p->qsh), QK, p->mul_q, qrow);
        for (int d = 0; d < QK; d++) w->qt[d * BQ + i] = i < nq ? qrow[d] : 0.0f;
    }
    pf_v16 m[TV], l[TV];
    for (int v = 0; v < nv; v++) { m[v] = pf_set1(-INFINITY); l[v] = pf_set1(0.0f); }
    for (int dv = 0; dv < DV; dv++)
        for (int v = 0; v < nv; v++) pf_st(w->ot + dv * BQ + v * PF_VL, pf_set1(0.0f));

    int64_t kend = kl;
    if (a->causal) {
        int64_t last = i0 + nq - 1 + off + 1;
        if (last < kend) kend = last;
    }
    prefetch_keys(p, h, s0, (int)(kend < BK ? kend : BK));
    for (int64_t j0 = 0; j0 < kend; j0 += BK) {
        int nk = (int)(kend - j0 < BK ? kend - j0 : BK);
        int nk8 = (nk + PF_MR - 1) / PF_MR * PF_MR;
        for (int j = 0; j < nk; j++) {
            int64_t s = s0 + j0 + j;
            load_row(p, elem(p, a->k_nope, s * p->kst + h * p->ksh), DV, p->mul_k, w->kf + j * QK);
            load_row(p, elem(p, a->k_rope, s * p->rst), MLA_ROPE_DIM, p->mul_k, w->kf + j * QK + DV);
            load_row(p, elem(p, a->v, s * p->vst + h * p->vsh), DV, p->mul_v, w->vf + j * DV);
        }
        for (int j = nk; j < nk8; j++)
            for (int d = 0; d < QK; d++) w->kf[j * QK + d] = 0.0f;

        /* St[j][i] = sum_d Kf[j][d] * Qt[d][i]; meanwhile the next block's rows are requested */
        int64_t nxt = kend - j0 - BK; /* rows of the next block */
        if (nxt > BK) nxt = BK;
        for (int j = 0; j < nk8; j += PF_MR) {
            mk_rows(nv, w->kf + j * QK, QK, 1, w->qt, QK, w->st + j * BQ, 0);
            if (j < nxt) prefetch_keys(p, h, s0 + j0 + BK + j, (int)(nxt - j < PF_MR ? nxt - j : PF_MR));
        }

        /* causal mask where the block crosses the tile's diagonal */
        if (a->causal && j0 + nk - 1 > i0 + off)
            for (int j = 0; j < nk; j++)
                for (int i = 0; i < w16; i++)
                    if (j0 + j > i0 + i + off) w->st[j * BQ + i] = -INFINITY;

        /* online softmax, base 2, per query lane */
        for (int v = 0; v < nv; v++) {
            float *col = w->st + v * PF_VL;
            pf_v16 mb = pf_set1(-INFINITY);
            for (int j = 0; j < nk; j++) mb = pf_max(mb, pf_ld(col + j * BQ));
            pf_v16 mn = pf_max(m[v], mb);
            pf_v16 mu = pf_sel(mn == pf_set1(-INFINITY), pf_set1(0.0f), mn); /* all masked so far: no NaN */
            pf_v16 alpha = pf_exp2(m[v] - mu);
            pf_v16 rs = pf_set1(0.0f);
            for (int j = 0; j < nk; j++) {
                pf_v16 e = pf_exp2(pf_ld(col + j * BQ) - mu);
                pf_st(col + j * BQ, e);
                rs += e;
            }
            l[v] = l[v] * alpha + rs;
            m[v] = mn;
            if (j0 > 0)
                for (int dv = 0; dv < DV; dv++) {
                    float *o = w->ot + dv * BQ + v * PF_VL;
                    pf_st(o, pf_ld(o) * alpha);
                }
        }

        /* Ot[dv][i] += sum_j Vf[j][dv] * P[j][i] */
        for (int dv = 0; dv < DV; dv += PF_MR) mk_rows(nv, w->vf + dv, 1, DV, w->st, nk, w->ot + dv * BQ, 1);
    }

    /* out = Ot^T / l; lse = ln2 * m + ln l */
    float mm[BQ], ll[BQ];
    for (int v = 0; v < nv; v++) { pf_st(mm + v * PF_VL, m[v]); pf_st(ll + v * PF_VL, l[v]); }
    for (int i = 0; i < nq; i++) {
        int64_t t = q0 + i0 + i;
        uint16_t *o = a->out + t * p->ost + h * p->osh;
        int empty = !(ll[i] > 0.0f);
        float inv = empty ? 0.0f : 1.0f / ll[i];
        for (int dv = 0; dv < DV; dv++) o[dv] = f32_to_bf16_ref(empty ? 0.0f : w->ot[dv * BQ + i] * inv);
        if (a->lse)
            a->lse[t * p->lst + h] = empty ? INFINITY : (float)((double)mm[i] * 0.6931471805599453 + log((double)ll[i]));
    }
}

static int by_cost_desc(const void *x, const void *y) {
    const tile *u = (const tile *)x, *w = (const tile *)y;
    if (u->cost != w->cost) return u->cost > w->cost ? -1 : 1;
    if (u->b != w->b) return u->b < w->b ? -1 : 1;
    return u->i0 < w->i0 ? -1 : (u->i0 > w->i0);
}

mla_status mla_cpu_prefill(mla_ctx *ctx, const mla_prefill_args *a) {
    int64_t H = a->num_heads;
    plan pl, *p = &pl;
    p->a = a;
    p->e4m3 = a->dtype == MLA_DTYPE_E4M3;
    p->qsh = a->q_stride_h ? a->q_stride_h : QK;
    p->qst = a->q_stride_t ? a->q_stride_t : H * p->qsh;
    p->ksh = a->k_nope_stride_h ? a->k_nope_stride_h : DV;
    p->kst = a->k_nope_stride_s ? a->k_nope_stride_s : H * p->ksh;
    p->vsh = a->v_stride_h ? a->v_stride_h : DV;
    p->vst = a->v_stride_s ? a->v_stride_s : H * p->vsh;
    p->rst = a->k_rope_stride_s ? a->k_rope_stride_s : MLA_ROPE_DIM;
    p->osh = a->out_stride_h ? a->out_stride_h : DV;
    p->ost = a->out_stride_t ? a->out_stride_t : H * p->osh;
    p->lst = a->lse_stride_t ? a->lse_stride_t : H;
    p->mul_q = a->scale * 1.4426950408889634f; /* base-2 scores */
    p->mul_k = p->mul_v = 1.0f;
    if (p->e4m3) {
        p->mul_q *= a->descale_q;
        p->mul_k = a->descale_k;
        p->mul_v = a->descale_v;
    }

    /* tiles of every request, heaviest first (within each head, see below) */
    int64_t ntiles = 0;
    for (int32_t b = 0; b < a->num_requests; b++)
        ntiles += (a->q_offsets[b + 1] - a->q_offsets[b] + BQ - 1) / BQ;
    tile *tiles = (tile *)malloc((size_t)(ntiles ? ntiles : 1) * sizeof(tile));
    if (!tiles) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "prefill: tile list allocation failed");
    int64_t n = 0;
    for (int32_t b = 0; b < a->num_requests; b++) {
        int32_t ql = a->q_offsets[b + 1] - a->q_offsets[b], kl = a->kv_offsets[b + 1] - a->kv_offsets[b];
        for (int32_t i0 = 0; i0 < ql; i0 += BQ) {
            tile *t = &tiles[n++];
            t->b = b;
            t->i0 = i0;
            t->nq = ql - i0 < BQ ? ql - i0 : BQ;
            int64_t keys = kl;
            if (a->causal && (int64_t)kl - ql + i0 + t->nq < keys) keys = (int64_t)kl - ql + i0 + t->nq;
            t->cost = (keys > 0 ? keys : 0) + 64; /* + fixed per-tile work */
        }
    }
    qsort(tiles, (size_t)ntiles, sizeof(tile), by_cost_desc);

    int failed = 0;
    int64_t ntasks = ntiles * H;
#pragma omp parallel num_threads(mla_cpu_threads(ctx))
    {
        scratch w;
        size_t fl = (size_t)QK * BQ + (size_t)BK * QK + (size_t)BK * DV + (size_t)BK * BQ + (size_t)DV * BQ;
        float *buf = (float *)aligned_alloc(64, fl * sizeof(float));
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        } else {
            w.qt = buf;
            w.kf = w.qt + QK * BQ;
            w.vf = w.kf + BK * QK;
            w.st = w.vf + BK * DV;
            w.ot = w.st + BK * BQ;
        }
#pragma omp barrier
        if (!failed) {
#pragma omp for schedule(dynamic, 1)
            for (int64_t k = 0; k < ntasks; k++) run_tile(p, &tiles[k % ntiles], (int)(k / ntiles), &w); /* head-major */
        }
        free(buf);
    }
    free(tiles);
    if (failed) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "prefill: per-thread scratch allocation failed");
    return MLA_OK;
}
