/* Comparison by SPEC.md section 5, shared by `mla check`, the golden test and the unit tests. */
#ifndef MLA_COMPARE_H
#define MLA_COMPARE_H

#include <stddef.h>
#include <stdint.h>

typedef struct mla_tol {
    double atol, rtol;   /* per element: |a-r| <= atol OR |a-r| <= rtol*|r| */
    double cos_max;      /* whole tensor: 1 - 2<a,r>/(|a|^2+|r|^2) <= cos_max; 0 = not checked */
} mla_tol;

extern const mla_tol MLA_TOL_OUT;        /* bf16 attention outputs: 1e-3, 2/128, 1e-5 */
extern const mla_tol MLA_TOL_OUT_FUSED;  /* fused prefill out: 5e-3, 4/128, 1e-4 */
extern const mla_tol MLA_TOL_LSE;        /* lse, max_logits: 1e-4, 1e-4 */

typedef struct mla_cmp {
    int ok;
    int64_t n, nbad;       /* elements, elements out of tolerance (inf/NaN mismatches included) */
    int64_t first_bad;     /* flat index of the first bad element, -1 if none */
    double bad_a, bad_r;   /* its two values */
    double max_abs, max_rel; /* over finite pairs */
    double cos_dist;
    int64_t nonfinite_mismatch;
} mla_cmp;

/* a: values under test, r: reference (double). Identical inf/NaN positions required. */
int mla_compare(const float *a, const double *r, int64_t n, mla_tol tol, mla_cmp *res);
int mla_compare_f32(const float *a, const float *r, int64_t n, mla_tol tol, mla_cmp *res);
/* "max_abs 1.2e-04 max_rel 3.1e-03 cos 2.0e-08" plus the first bad element when not ok */
void mla_cmp_str(const mla_cmp *c, char *buf, size_t n);

#endif
