/* Internal: top-k selection of one row of float scores (used by the CPU indexer, SPEC 4.5).
 * Radix select on order-preserving uint32 keys, then a stable radix sort of the k selected only:
 * O(n + k) per row, never a full sort of the n scores. */
#ifndef MLA_CPU_TOPK_H
#define MLA_CPU_TOPK_H

#include <stddef.h>
#include <stdint.h>

/* uint32 words of scratch mla_cpu_topk_row needs for a row of n scores and this top_k. */
size_t mla_cpu_topk_scratch_words(int64_t n, int64_t top_k);

/* Writes to out[0..top_k) the positions of the k = min(top_k, valid) largest scores[0..n),
 * highest first, equal scores to the lower position, then -1 up to top_k. Entries equal to -inf
 * are not candidates (invisible); -0 and +0 are equal. Returns k. */
int64_t mla_cpu_topk_row(const float *scores, int64_t n, int64_t top_k, int32_t *out, uint32_t *scratch);

#endif
