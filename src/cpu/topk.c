/* Top-k of one row by radix select (SPEC 4.5 order: score descending, ties to the lower position).
 *  1. key(x): float bits mapped so that unsigned order is float order (-0 folded into +0).
 *  2. Histogram of the top 11 key bits; the bin holding the k-th key splits the row into "surely
 *     selected" (higher bins) and candidates (that bin); the next 11 and the last 10 bits refine
 *     the candidates until the k-th key is exact. Keys equal to it are taken in position order.
 *  3. A stable LSD radix sort of the k selected by key descending: positions were collected in
 *     ascending order within each group of equal keys, so ties stay lowest position first. */
#include "topk.h"

#include <string.h>

#include "../core/numeric.h"

#define KEY_NEG_INF 0x007fffffu /* key(-inf): such entries are invisible */

static inline uint32_t order_key(float x) {
    uint32_t u = mla_f32_to_bits(x + 0.0f); /* -0 + 0 = +0: both zeros give one key */
    return u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u);
}

size_t mla_cpu_topk_scratch_words(int64_t n, int64_t top_k) {
    int64_t k = top_k < n ? top_k : n;
    if (n < 0) n = 0;
    if (k < 0) k = 0;
    return (size_t)(2 * n + 4 * k + 8);
}

/* Highest bin b such that the count of keys in bins above b is < need <= that plus hist[b]. */
static int find_bin(const uint32_t *hist, int nbins, int64_t need, int64_t *above) {
    int64_t acc = 0;
    for (int b = nbins - 1; b > 0; b--) {
        if (acc + hist[b] >= need) { *above = acc; return b; }
        acc += hist[b];
    }
    *above = acc;
    return 0;
}

/* Stable sort of (key, pos) pairs by key descending; result ends in (k0, p0). */
static void sort_desc(uint32_t *k0, int32_t *p0, uint32_t *k1, int32_t *p1, int64_t n) {
    uint32_t hist[256];
    for (int shift = 0; shift < 32; shift += 8) {
        memset(hist, 0, sizeof hist);
        for (int64_t i = 0; i < n; i++) hist[(~k0[i] >> shift) & 255u]++;
        if (hist[(~k0[0] >> shift) & 255u] == (uint32_t)n) continue; /* digit constant: pass is a no-op */
        uint32_t sum = 0;
        for (int b = 0; b < 256; b++) { uint32_t c = hist[b]; hist[b] = sum; sum += c; }
        for (int64_t i = 0; i < n; i++) {
            uint32_t dst = hist[(~k0[i] >> shift) & 255u]++;
            k1[dst] = k0[i];
            p1[dst] = p0[i];
        }
        memcpy(k0, k1, (size_t)n * sizeof *k0);
        memcpy(p0, p1, (size_t)n * sizeof *p0);
    }
}

int64_t mla_cpu_topk_row(const float *scores, int64_t n, int64_t top_k, int32_t *out, uint32_t *scratch) {
    if (n < 0) n = 0;
    int64_t kmax = top_k < n ? top_k : n;
    uint32_t *cand_k = scratch;                      /* [n] */
    int32_t *cand_p = (int32_t *)(scratch + n);      /* [n] */
    uint32_t *sel_k = scratch + 2 * n;               /* [kmax] */
    int32_t *sel_p = (int32_t *)(sel_k + kmax);      /* [kmax] */
    uint32_t *tmp_k = sel_k + 2 * kmax;              /* [kmax] */
    int32_t *tmp_p = (int32_t *)(sel_k + 3 * kmax);  /* [kmax] */

    /* pass 1: top 11 bits, count of candidates */
    uint32_t hist[2048];
    memset(hist, 0, sizeof hist);
    int64_t valid = 0;
    for (int64_t j = 0; j < n; j++) {
        uint32_t key = order_key(scores[j]);
        if (key == KEY_NEG_INF) continue;
        hist[key >> 21]++;
        valid++;
    }
    int64_t k = top_k < valid ? top_k : valid;
    int64_t ns = 0;
    if (k == valid) { /* every candidate is selected */
        for (int64_t j = 0; j < n; j++) {
            uint32_t key = order_key(scores[j]);
            if (key == KEY_NEG_INF) continue;
            sel_k[ns] = key;
            sel_p[ns++] = (int32_t)j;
        }
    } else if (k > 0) {
        int64_t above;
        uint32_t b = (uint32_t)find_bin(hist, 2048, k, &above);
        int64_t nc = 0;
        for (int64_t j = 0; j < n; j++) { /* pass 2: split */
            uint32_t key = order_key(scores[j]);
            if (key == KEY_NEG_INF) continue;
            uint32_t kb = key >> 21;
            if (kb > b) { sel_k[ns] = key; sel_p[ns++] = (int32_t)j; }
            else if (kb == b) { cand_k[nc] = key; cand_p[nc++] = (int32_t)j; }
        }
        /* refine the candidates on bits 20..10, then 9..0 */
        static const int shifts[2] = {10, 0}, widths[2] = {11, 10};
        for (int lv = 0; lv < 2; lv++) {
            int shift = shifts[lv], nbins = 1 << widths[lv];
            uint32_t mask = (uint32_t)nbins - 1u;
            memset(hist, 0, (size_t)nbins * sizeof *hist);
            for (int64_t i = 0; i < nc; i++) hist[(cand_k[i] >> shift) & mask]++;
            uint32_t bb = (uint32_t)find_bin(hist, nbins, k - ns, &above);
            int64_t keep = 0;
            for (int64_t i = 0; i < nc; i++) {
                uint32_t d = (cand_k[i] >> shift) & mask;
                if (d > bb) { sel_k[ns] = cand_k[i]; sel_p[ns++] = cand_p[i]; }
                else if (d == bb) { cand_k[keep] = cand_k[i]; cand_p[keep++] = cand_p[i]; }
            }
            nc = keep;
        }
        /* the remaining candidates all equal the k-th key: lowest positions first */
        for (int64_t i = 0; ns < k && i < nc; i++) { sel_k[ns] = cand_k[i]; sel_p[ns++] = cand_p[i]; }
    }
    if (ns > 1) sort_desc(sel_k, sel_p, tmp_k, tmp_p, ns);
    memcpy(out, sel_p, (size_t)ns * sizeof *out);
    for (int64_t i = ns; i < top_k; i++) out[i] = -1;
    return ns;
}
