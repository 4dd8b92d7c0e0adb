/* Top-k comparison by SPEC.md section 5, one row at a time.
 * Band = 1e-4 * (row max |score| over visible finite scores). Two scores are a near-tie when they
 * differ by at most the band and the band is positive; a row whose scores are all zero (band 0)
 * has no near-ties, so its exact ties must follow the lower-position rule.
 *  - count: exactly m = min(top_k, visible) entries, then -1 up to top_k;
 *  - entries: visible positions (0 <= p < n_keys, score != -inf), all distinct;
 *  - set: every entry scores >= kth - band; every visible key scoring > kth + band is present
 *    (kth = the m-th largest reference score);
 *  - order: no later entry scores more than an earlier one beyond the band; exact ties outside a
 *    near-tie band come lowest position first. */
#include "topk_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_desc(const void *x, const void *y) {
    float a = *(const float *)x, b = *(const float *)y;
    return (a < b) - (a > b);
}

int mla_topk_row_check(const int32_t *got, int top_k, const float *ref_scores, int64_t n_keys, char *msg,
                       size_t msg_n) {
    if (msg && msg_n) msg[0] = 0;
#define BAD(...) do { if (msg && msg_n) snprintf(msg, msg_n, __VA_ARGS__); free(seen); free(sorted); return 0; } while (0)
    unsigned char *seen = NULL;
    float *sorted = NULL;
    if (top_k < 0 || n_keys < 0) BAD("top_k = %d, n_keys = %lld: negative", top_k, (long long)n_keys);

    /* visible keys, band */
    int64_t nvis = 0;
    double rowmax = 0.0;
    for (int64_t j = 0; j < n_keys; j++) {
        float s = ref_scores[j];
        if (s == -INFINITY) continue;
        nvis++;
        if (isfinite(s) && fabs((double)s) > rowmax) rowmax = fabs((double)s);
    }
    const double band = 1e-4 * rowmax;
    const int64_t m = nvis < top_k ? nvis : top_k;

    /* count, -1 fill, validity, distinctness */
    seen = calloc((size_t)(n_keys > 0 ? n_keys : 1), 1);
    if (!seen) BAD("out of memory");
    for (int64_t i = 0; i < top_k; i++) {
        int32_t p = got[i];
        if (i >= m) {
            if (p != -1) BAD("entry %lld = %d: expected -1 (only %lld visible keys, top_k %d)", (long long)i, p,
                             (long long)nvis, top_k);
            continue;
        }
        if (p == -1) BAD("entry %lld is -1 but %lld entries are expected (visible %lld, top_k %d)", (long long)i,
                         (long long)m, (long long)nvis, top_k);
        if (p < 0 || p >= n_keys) BAD("entry %lld = %d is outside the row [0, %lld)", (long long)i, p, (long long)n_keys);
        if (ref_scores[p] == -INFINITY) BAD("entry %lld = %d is an invisible position", (long long)i, p);
        if (seen[p]) BAD("entry %lld = %d is a duplicate", (long long)i, p);
        seen[p] = 1;
    }
    if (m == 0) { free(seen); return 1; }

    /* the m-th largest visible reference score */
    sorted = malloc((size_t)nvis * sizeof *sorted);
    if (!sorted) BAD("out of memory");
    int64_t ns = 0;
    for (int64_t j = 0; j < n_keys; j++)
        if (ref_scores[j] != -INFINITY) sorted[ns++] = ref_scores[j];
    qsort(sorted, (size_t)ns, sizeof *sorted, cmp_desc);
    const double kth = sorted[m - 1];

    /* set */
    for (int64_t i = 0; i < m; i++) {
        double s = ref_scores[got[i]];
        if (s < kth - band)
            BAD("entry %lld = %d scores %.9g, below the k-th score %.9g by more than the band %.3g", (long long)i,
                got[i], s, kth, band);
    }
    for (int64_t j = 0; j < n_keys; j++) {
        double s = ref_scores[j];
        if (ref_scores[j] == -INFINITY || seen[j]) continue;
        if (s > kth + band)
            BAD("position %lld (score %.9g) is missing: above the k-th score %.9g by more than the band %.3g",
                (long long)j, s, kth, band);
    }
    /* with no band, exact ties at the k-th score go to the lowest positions */
    if (!(band > 0)) {
        int32_t maxpos = -1;
        for (int64_t i = 0; i < m; i++)
            if ((double)ref_scores[got[i]] == kth && got[i] > maxpos) maxpos = got[i];
        for (int64_t j = 0; j < maxpos; j++)
            if (!seen[j] && (double)ref_scores[j] == kth)
                BAD("position %lld ties the k-th score %.9g but %d was taken instead (ties go to the lower position)",
                    (long long)j, kth, maxpos);
    }

    /* order: against the highest score that follows */
    double later_max = -INFINITY;
    int64_t later_at = -1;
    for (int64_t i = m - 1; i >= 0; i--) {
        double s = ref_scores[got[i]];
        if (later_max > s + band || (!(band > 0) && later_max > s))
            BAD("order: entry %lld = %d (score %.9g) comes before entry %lld = %d (score %.9g)", (long long)i, got[i],
                s, (long long)later_at, got[later_at], later_max);
        if (s > later_max || later_at < 0) { later_max = s; later_at = i; }
        if (i + 1 < m) {
            double t = ref_scores[got[i + 1]];
            if (s == t && got[i] > got[i + 1] && !(band > 0))
                BAD("order: entries %lld = %d and %lld = %d tie at %.9g: the lower position comes first", (long long)i,
                    got[i], (long long)(i + 1), got[i + 1], s);
        }
    }
    free(seen);
    free(sorted);
    return 1;
#undef BAD
}
