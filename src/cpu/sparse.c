/* mla_sparse on the CPU: top-k slot ids -> out [T,H,512] bf16, lse and max_logits [T,H] f32
 * (SPEC 4.2), caches MLA_KV_BF16 and MLA_KV_FP8. The heads of one token share its index row;
 * they are cut into blocks of ATT_MB rows ("items"); when the items are too few for the threads,
 * an item's index row is cut into chunks whose partial softmax states are merged afterwards.
 * Each task first keeps the used entries of its chunk (j < topk_len[t], 0 <= id < slots; every
 * occurrence of a duplicate counts), then runs the engine of attn.h on them; the rows of the
 * scattered slots are prefetched ATT_AHEAD_MAX keys ahead.
 * Measured (dev box of decode.c): 16 tokens, h=128, top-k 2048: 260 GFLOPS (bf16) / 251 (fp8)
 * on two cores; h=1: 25 GB/s (bf16) / 21 GB/s (fp8) of random rows. */
#include <omp.h>

#include "attn.h"

typedef struct sp_item {
    int32_t t, r0, nr;   /* token, first head, head count */
    int32_t len;         /* entries of the index row that may be used */
    int32_t nsplit;
    int64_t chunk;       /* entries per chunk */
    int64_t part;        /* first partial row (ATT_PART_ROW units) when nsplit > 1 */
} sp_item;

typedef struct sp_task {
    int32_t item, split;
} sp_task;

static void sp_finish(const mla_sparse_args *a, const sp_item *it, int r, const float *o, float m, float l) {
    int64_t H = a->num_heads, t = it->t, h = it->r0 + r;
    int64_t osh = mla_core_stride(a->out_stride_h, ATT_V), ost = mla_core_stride(a->out_stride_t, H * osh);
    int64_t lst = mla_core_stride(a->lse_stride_t, H);
    att_finish_row(o, m, l, a->sink ? a->sink + h : NULL, a->out + t * ost + h * osh,
                   a->lse ? a->lse + t * lst + h : NULL, a->max_logits ? a->max_logits + t * lst + h : NULL);
}

mla_status mla_cpu_sparse(mla_ctx *ctx, const mla_sparse_args *a) {
    const int32_t T = a->num_tokens, H = a->num_heads;
    const int nth = mla_cpu_threads(ctx);
    const int64_t nslots = (int64_t)a->cache.num_pages * a->cache.page_size;
    const int64_t ist = mla_core_stride(a->indices_stride_t, a->topk);
    const int64_t qsh = mla_core_stride(a->q_stride_h, ATT_D), qst = mla_core_stride(a->q_stride_t, H * qsh);

    const int64_t per_tok = (H + ATT_MB - 1) / ATT_MB;
    const int64_t nitems = (int64_t)T * per_tok;
    if (nitems == 0) return MLA_OK;
    sp_item *items = (sp_item *)malloc((size_t)nitems * sizeof *items);
    if (!items) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "sparse: out of host memory");
    double work = 0;
    int64_t n = 0;
    for (int32_t t = 0; t < T; t++) {
        int32_t len = a->topk;
        if (a->topk_len) len = a->topk_len[t] < 0 ? 0 : a->topk_len[t] < a->topk ? a->topk_len[t] : a->topk;
        for (int32_t r0 = 0; r0 < H; r0 += ATT_MB) {
            sp_item *it = &items[n++];
            it->t = t;
            it->r0 = r0;
            it->nr = H - r0 < ATT_MB ? H - r0 : ATT_MB;
            it->len = len;
            work += (double)((it->nr + 15) / 16 * 16) * len;
        }
    }
    double target = work / (4.0 * nth);
    int64_t ntasks = 0, nparts = 0, maxchunk = 1;
    for (int64_t x = 0; x < nitems; x++) {
        sp_item *it = &items[x];
        double rows = (double)((it->nr + 15) / 16 * 16);
        int64_t chunk = (int64_t)ceil(target / rows);
        if (chunk < 512) chunk = 512;
        chunk = (chunk + ATT_NB - 1) / ATT_NB * ATT_NB;
        it->nsplit = it->len <= chunk ? 1 : (int32_t)((it->len + chunk - 1) / chunk);
        it->chunk = it->nsplit == 1 ? (it->len > 0 ? it->len : 1) : chunk;
        if (it->chunk > maxchunk) maxchunk = it->chunk;
        it->part = nparts;
        if (it->nsplit > 1) nparts += (int64_t)it->nsplit * it->nr;
        ntasks += it->nsplit;
    }
    sp_task *tasks = (sp_task *)malloc((size_t)ntasks * sizeof *tasks);
    float *parts = nparts ? (float *)malloc((size_t)nparts * ATT_PART_ROW * sizeof(float)) : NULL;
    if (!tasks || (nparts && !parts)) {
        free(items); free(tasks); free(parts);
        return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "sparse: out of host memory");
    }
    n = 0;
    for (int64_t x = 0; x < nitems; x++)
        for (int32_t s = 0; s < items[x].nsplit; s++) tasks[n++] = (sp_task){(int32_t)x, s};

    int failed = 0;
#pragma omp parallel num_threads(nth)
    {
        att_ws w;
        int ok = att_ws_alloc(&w, maxchunk);
        if (!ok) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t x = 0; x < ntasks; x++) {
            if (!ok) continue;
            const sp_item *it = &items[tasks[x].item];
            int64_t j0 = (int64_t)tasks[x].split * it->chunk;
            int64_t j1 = j0 + it->chunk < it->len ? j0 + it->chunk : it->len;
            /* the used entries of this chunk, in order */
            const int32_t *idx = a->indices + (int64_t)it->t * ist;
            int64_t nk = 0;
            for (int64_t j = j0; j < j1; j++)
                if (idx[j] >= 0 && idx[j] < nslots) w.slots[nk++] = idx[j];
            w.has_qraw = 1;
            w.qscale = a->scale;
            for (int r = 0; r < it->nr; r++) {
                w.qraw[r] = a->q + (int64_t)it->t * qst + (int64_t)(it->r0 + r) * qsh;
                att_q_bf16(w.qraw[r], a->scale, w.q + (size_t)r * ATT_D);
            }
            att_keys ks;
            att_keys_init(&ks, &a->cache);
            ks.slots = w.slots;
            ks.ahead = ATT_AHEAD_MAX; /* scattered rows */
            att_run(&w, it->nr, NULL, &ks, nk, w.o, w.m, w.l);
            if (it->nsplit == 1) {
                for (int r = 0; r < it->nr; r++) sp_finish(a, it, r, w.o + (size_t)r * ATT_V, w.m[r], w.l[r]);
            } else {
                /* partial state of row r of chunk s: parts[(part + s * nr + r) * ATT_PART_ROW] */
                float *p = parts + (it->part + (int64_t)tasks[x].split * it->nr) * ATT_PART_ROW;
                att_save_partial(p, it->nr, w.o, w.m, w.l);
            }
        }
#pragma omp for schedule(dynamic, 4)
        for (int64_t x = 0; x < nitems; x++) {
            const sp_item *it = &items[x];
            if (it->nsplit == 1 || !ok) continue;
            for (int r = 0; r < it->nr; r++) {
                float *p0 = parts + (it->part + r) * ATT_PART_ROW;
                att_merge(p0, it->nsplit, (int64_t)it->nr * ATT_PART_ROW);
                sp_finish(a, it, r, p0, p0[ATT_V], p0[ATT_V + 1]);
            }
        }
        att_ws_free(&w);
    }
    free(items);
    free(tasks);
    free(parts);
    if (failed) return mla_core_fail(ctx, MLA_ERR_OUT_OF_MEMORY, "sparse: out of host memory (thread scratch)");
    return MLA_OK;
}
