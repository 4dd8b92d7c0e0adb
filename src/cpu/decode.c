/* mla_decode on the CPU: paged latent cache (any format) -> out [T,H,512] bf16, lse [T,H] f32
 * (SPEC 4.1). The rows of one request (q_len x H) share its keys; they are cut into blocks of
 * ATT_MB rows ("items"), and when the items are too few for the threads an item's keys are cut
 * into chunks whose partial softmax states are merged afterwards (split-KV). The engine (attn.h)
 * dequantizes each key block once per item and runs register-blocked kernels; OpenMP spreads the
 * (item, chunk) tasks over the context's threads.
 * Measured on the dev box (AMD EPYC Zen 4, 2 cores shared with other jobs; f32 FMA peak 117
 * GFLOPS per core, 230 for two; streaming read 27 GB/s one core, 55 GB/s two when quiet), best
 * of a few runs, FLOPs counted as 2*b*s_q*h*(576+512)*keys:
 *   b=16 h=128 s_q=1 4096 keys, bf16 / fp8 / rope-aware: 260 GFLOPS on two cores (113% of the
 *     f32 peak: q.k runs on vdpbf16ps), 135 on one
 *   b=1 h=128 32768 keys (split-KV): 265 GFLOPS; b=16 h=128 s_q=2: 273; b=16 h=16: 192
 *   b=16 h=1 4096 keys bf16 (75 MB read): 39 GB/s on two cores (72% of 55), 18-20 on one;
 *     fp8 (43 MB): 23 GB/s
 * The timing program calls mla_decode through the public API on synthetic data. */
#include <omp.h>

#include "attn.h"

typedef struct dec_item {
    int32_t b, r0, nr;   /* request, first row (i * H + h) and row count */
    int32_t kmax;        /* keys the rows can see at most */
    int32_t nsplit;      /* chunks along the keys */
    int64_t chunk;       /* keys per chunk */
    int64_t part;        /* first partial row (in ATT_PART_ROW units) when nsplit > 1 */
} dec_item;

typedef struct dec_task {
    int32_t item, split;
} dec_task;

/* keys visible to query row i of a request: [0, lim) */
static int32_t dec_limit(const mla_decode_args *a, int32_t seq, int32_t qlen, int32_t i) {
    if (!a->causal) return seq;
    int64_t lim = (int64_t)seq - qlen + i + 1;
    return lim < 0 ? 0 : lim > seq ? seq : (int32_t)lim;
}

static void dec_row_ptrs(const mla_decode_args *a, int32_t t, int32_t h, uint16_t **out, float **lse) {
    int64_t H = a->num_heads;
    int64_t osh = mla_core_stride(a->out_stride_h, ATT_V), ost = mla_core_stride(a->out_stride_t, H * osh);
    *out = a->out + t * ost + h * osh;
    *lse = a->lse ? a->lse + t * mla_core_stride(a->lse_stride_t, H) + h : NULL;
}

/* Prepares item rows in w->q (scale and q_sigma folded in) and their key limits (chunk-relative). */
static void dec_prepare(const mla_decode_args *a, const dec_item *it, int64_t k0, int64_t nk, att_ws *w) {
    const mla_batch *bt = &a->batch;
    int32_t H = a->num_heads, seq = bt->seq_lens[it->b];
    int32_t qo = bt->q_offsets[it->b], qlen = bt->q_offsets[it->b + 1] - qo;
    int ra = a->cache.format == MLA_KV_FP8_ROPE_AWARE;
    int64_t row = ra ? 640 : ATT_D;
    int64_t qsh = mla_core_stride(a->q_stride_h, row), qst = mla_core_stride(a->q_stride_t, H * qsh);
    w->has_qraw = !ra;
    w->has_qra = ra;
    w->qscale = a->scale;
    for (int r = 0; r < it->nr; r++) {
        int32_t i = (it->r0 + r) / H, h = (it->r0 + r) % H, t = qo + i;
        float *dst = w->q + (size_t)r * ATT_D;
        if (ra) {
            w->qra[r] = (const uint8_t *)a->q + t * qst + h * qsh;
            w->qfac[r] = a->scale * a->q_sigma[t];
            att_q_ra(w->qra[r], w->qfac[r], dst);
        } else {
            w->qraw[r] = (const uint16_t *)a->q + t * qst + h * qsh;
            att_q_bf16(w->qraw[r], a->scale, dst);
        }
        int64_t lim = (int64_t)dec_limit(a, seq, qlen, i) - k0;
        w->lim[r] = (int32_t)(lim < 0 ? 0 : lim > nk ? nk : lim);
    }
}

static void dec_finish(const mla_decode_args *a, const dec_item *it, int r, const float *o, float m, float l) {
    int32_t H = a->num_heads, qo = a->batch.q_offsets[it->b];
    int32_t i = (it->r0 + r) / H, h = (it->r0 + r) % H;
    uint16_t *out;
    float *lse;
    dec_row_ptrs(a, qo + i, h, &out, &lse);
    att_finish_row(o, m, l, a->sink ? a->sink + h : NULL, out, lse, NULL);
}

mla_status mla_cpu_decode(mla_ctx *ctx, const mla_decode_args *a) {
    const mla_batch *bt = &a->batch;
    const int32_t H = a->num_heads;
    const int nth = mla_cpu_threads(ctx);

    /* items: blocks of up to ATT_MB rows of each request */
    int64_t nitems = 0;
    for (int32_t b = 0; b < bt->num_requests; b++) {
        int64_t rows = (int64_t)(bt->q_offsets[b + 1] - bt->q_offsets[b]) * H;
        nitems += (rows + ATT_MB - 1) / ATT_MB;
    }
    if (nitems == 0) return MLA_OK;
    dec_item *items = (dec_item *)malloc((size_t)nitems * sizeof *items);
    if (!items) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "decode: out of host memory");
    double work = 0;
    int64_t n = 0;
    for (int32_t b = 0; b < bt->num_requests; b++) {
        int32_t qlen = bt->q_offsets[b + 1] - bt->q_offsets[b], seq = bt->seq_lens[b];
        int64_t rows = (int64_t)qlen * H;
        for (int64_t r0 = 0; r0 < rows; r0 += ATT_MB) {
            dec_item *it = &items[n++];
            it->b = b;
            it->r0 = (int32_t)r0;
            it->nr = (int32_t)(rows - r0 < ATT_MB ? rows - r0 : ATT_MB);
            /* the last row of the block sees the most keys */
            it->kmax = dec_limit(a, seq, qlen, (it->r0 + it->nr - 1) / H);
            work += (double)((it->nr + 15) / 16 * 16) * it->kmax;
        }
    }
    /* split-KV: aim at >= 4 tasks per thread when the items alone are too few */
    double target = work / (4.0 * nth);
    int64_t ntasks = 0, nparts = 0;
    for (int64_t x = 0; x < nitems; x++) {
        dec_item *it = &items[x];
        double rows = (double)((it->nr + 15) / 16 * 16);
        int64_t chunk = (int64_t)ceil(target / rows);
        if (chunk < 512) chunk = 512;
        chunk = (chunk + ATT_NB - 1) / ATT_NB * ATT_NB;
        it->nsplit = it->kmax <= chunk ? 1 : (int32_t)((it->kmax + chunk - 1) / chunk);
        it->chunk = it->nsplit == 1 ? (it->kmax > 0 ? it->kmax : 1) : chunk;
        it->part = nparts;
        if (it->nsplit > 1) nparts += (int64_t)it->nsplit * it->nr;
        ntasks += it->nsplit;
    }
    dec_task *tasks = (dec_task *)malloc((size_t)ntasks * sizeof *tasks);
    float *parts = nparts ? (float *)malloc((size_t)nparts * ATT_PART_ROW * sizeof(float)) : NULL;
    if (!tasks || (nparts && !parts)) {
        free(items); free(tasks); free(parts);
        return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "decode: out of host memory");
    }
    n = 0;
    for (int64_t x = 0; x < nitems; x++)
        for (int32_t s = 0; s < items[x].nsplit; s++) tasks[n++] = (dec_task){(int32_t)x, s};

    int failed = 0;
#pragma omp parallel num_threads(nth)
    {
        att_ws w;
        int ok = att_ws_alloc(&w, 0);
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t x = 0; x < ntasks; x++) {
            if (!ok) continue;
            const dec_item *it = &items[tasks[x].item];
            int64_t k0 = (int64_t)tasks[x].split * it->chunk;
            int64_t nk = it->kmax - k0 < it->chunk ? it->kmax - k0 : it->chunk;
            if (nk < 0) nk = 0;
            att_keys ks;
            att_keys_init(&ks, &a->cache);
            ks.bt = bt->block_table + (int64_t)it->b * bt->bt_stride;
            ks.k0 = k0;
            dec_prepare(a, it, k0, nk, &w);
            att_run(&w, it->nr, w.lim, &ks, nk, w.o, w.m, w.l);
            if (it->nsplit == 1) {
                for (int r = 0; r < it->nr; r++) dec_finish(a, it, r, w.o + (size_t)r * ATT_V, w.m[r], w.l[r]);
            } else {
                /* partial state of row r of chunk s: parts[(part + s * nr + r) * ATT_PART_ROW]: O[512], m, l */
                float *p = parts + (it->part + (int64_t)tasks[x].split * it->nr) * ATT_PART_ROW;
                att_save_partial(p, it->nr, w.o, w.m, w.l);
            }
        }
        /* merge the chunks of split items, one row at a time */
#pragma omp for schedule(dynamic, 4)
        for (int64_t x = 0; x < nitems; x++) {
            const dec_item *it = &items[x];
            if (it->nsplit == 1 || !ok) continue;
            for (int r = 0; r < it->nr; r++) {
                float *p0 = parts + (it->part + r) * ATT_PART_ROW;
                att_merge(p0, it->nsplit, (int64_t)it->nr * ATT_PART_ROW);
                dec_finish(a, it, r, p0, p0[ATT_V], p0[ATT_V + 1]);
            }
        }
        att_ws_free(&w);
    }
    free(items);
    free(tasks);
    free(parts);
    if (failed) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "decode: out of host memory (thread scratch)");
    return MLA_OK;
}
