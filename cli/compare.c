#include "compare.h"

#include <math.h>
#include <stdio.h>

const mla_tol MLA_TOL_OUT = {1e-3, 2.0 / 128, 1e-5};
const mla_tol MLA_TOL_OUT_FUSED = {5e-3, 4.0 / 128, 1e-4};
const mla_tol MLA_TOL_LSE = {1e-4, 1e-4, 0};

static int same_nonfinite(double a, double r) {
    if (isnan(a) || isnan(r)) return isnan(a) && isnan(r);
    return a == r; /* both inf of the same sign */
}

static int compare_impl(const float *a, const double *rd, const float *rf, int64_t n, mla_tol tol, mla_cmp *c) {
    c->n = n; c->nbad = 0; c->first_bad = -1; c->bad_a = c->bad_r = 0;
    c->max_abs = c->max_rel = 0; c->cos_dist = 0; c->nonfinite_mismatch = 0;
    double dot = 0, aa = 0, rr = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = a[i], r = rd ? rd[i] : (double)rf[i];
        int bad;
        if (!isfinite(x) || !isfinite(r)) {
            bad = !same_nonfinite(x, r);
            if (bad) c->nonfinite_mismatch++;
        } else {
            double d = fabs(x - r), rel = d / (fabs(r) > 0 ? fabs(r) : 1e-300);
            if (d > c->max_abs) c->max_abs = d;
            if (fabs(r) > 0 && rel > c->max_rel) c->max_rel = rel;
            bad = !(d <= tol.atol || d <= tol.rtol * fabs(r));
            dot += x * r; aa += x * x; rr += r * r;
        }
        if (bad) {
            if (c->first_bad < 0) { c->first_bad = i; c->bad_a = x; c->bad_r = r; }
            c->nbad++;
        }
    }
    c->cos_dist = (aa + rr) > 0 ? 1.0 - 2.0 * dot / (aa + rr) : 0.0;
    c->ok = c->nbad == 0 && (tol.cos_max <= 0 || c->cos_dist <= tol.cos_max);
    return c->ok;
}

int mla_compare(const float *a, const double *r, int64_t n, mla_tol tol, mla_cmp *res) {
    return compare_impl(a, r, NULL, n, tol, res);
}
int mla_compare_f32(const float *a, const float *r, int64_t n, mla_tol tol, mla_cmp *res) {
    return compare_impl(a, NULL, r, n, tol, res);
}

void mla_cmp_str(const mla_cmp *c, char *buf, size_t n) {
    int k = snprintf(buf, n, "max_abs %.2e max_rel %.2e cos %.1e", c->max_abs, c->max_rel, c->cos_dist);
    if (!c->ok && c->first_bad >= 0 && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "; %lld of %lld bad, first at [%lld]: got %.9g want %.9g",
                 (long long)c->nbad, (long long)c->n, (long long)c->first_bad, c->bad_a, c->bad_r);
    else if (!c->ok && k > 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, "; cosine distance over its bound");
}
