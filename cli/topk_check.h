/* Top-k comparison by SPEC.md section 5 (sets within the near-tie band, order, -1 fill). */
#ifndef MLA_TOPK_CHECK_H
#define MLA_TOPK_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* Checks one row of top-k output.
 * got[top_k]: positions under test; ref_scores[n_keys]: the reference score of every position of
 * the row (-inf = invisible; positions >= n_keys are invisible). A correct row holds exactly
 * min(top_k, visible) distinct visible positions, then -1; its set equals the true top set except
 * for keys whose score is within 1e-4 * (row max |score|) of the k-th score; its order is
 * descending score, ties to the lower position, near-ties (same band) in either order.
 * Returns 1 when the row is correct, else 0 with a reason in msg. */
int mla_topk_row_check(const int32_t *got, int top_k, const float *ref_scores, int64_t n_keys, char *msg,
                       size_t msg_n);

#endif
