/* A small test harness: cases, expectations, a seeded generator, and the closing line
 * `N passed, N failed, N skipped` with a non-zero exit on any failure. CTest runs each
 * tests/test_*.c executable; this header keeps each one readable without a framework. */
#ifndef MLA_TEST_HARNESS_H
#define MLA_TEST_HARNESS_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "mla.h"

static int h_passed, h_failed, h_skipped;
static int h_case_bad;
static char h_case_name[256], h_case_msg[1024];

static inline void h_begin(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h_case_name, sizeof h_case_name, fmt, ap);
    va_end(ap);
    h_case_bad = 0;
    h_case_msg[0] = 0;
}

/* Records the first failed expectation of the current case. */
static inline int h_expect_(int cond, const char *file, int line, const char *fmt, ...) {
    if (cond) return 1;
    if (!h_case_bad) {
        int k = snprintf(h_case_msg, sizeof h_case_msg, "%s:%d: ", file, line);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(h_case_msg + k, sizeof h_case_msg - (size_t)k, fmt, ap);
        va_end(ap);
    }
    h_case_bad = 1;
    return 0;
}
#define EXPECT(cond, ...) h_expect_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Ends the case: one line, PASS or FAIL with the first message. */
static inline void h_end(void) {
    if (h_case_bad) { h_failed++; printf("FAIL %s: %s\n", h_case_name, h_case_msg); }
    else { h_passed++; printf("PASS %s\n", h_case_name); }
    fflush(stdout);
}

static inline void h_skip(const char *why) {
    h_skipped++;
    printf("SKIP %s: %s\n", h_case_name, why);
    fflush(stdout);
}

static inline int h_finish(void) {
    printf("%d passed, %d failed, %d skipped\n", h_passed, h_failed, h_skipped);
    return h_failed ? 1 : 0;
}

/* Expect status rc == MLA_OK; else record status and the context's message. */
#define EXPECT_OK(ctx, rc)                                                                  \
    do {                                                                                    \
        mla_status r_ = (rc); /* evaluated once: rc is often the call itself */             \
        EXPECT(r_ == MLA_OK, "status %s: %s", mla_status_str(r_), mla_ctx_last_error(ctx)); \
    } while (0)

/* Compare a float tensor against a double reference by a SPEC section 5 tolerance. */
#define EXPECT_CLOSE(a, r, n, tol, what)                                                   \
    do {                                                                                   \
        mla_cmp c_;                                                                        \
        char s_[300];                                                                      \
        if (!mla_compare((a), (r), (n), (tol), &c_)) {                                     \
            mla_cmp_str(&c_, s_, sizeof s_);                                               \
            EXPECT(0, "%s: %s", (what), s_);                                               \
        }                                                                                  \
    } while (0)

/* ---- seeded generator (splitmix64) ---- */
typedef struct { uint64_t s; } h_rng;
static inline uint64_t h_next(h_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline double h_uniform(h_rng *r) { return (double)(h_next(r) >> 11) * (1.0 / 9007199254740992.0); }
static inline int h_int(h_rng *r, int lo, int hi) { return lo + (int)(h_next(r) % (uint64_t)(hi - lo + 1)); } /* [lo, hi] */
static inline double h_normal(h_rng *r) {
    double u = h_uniform(r) + 1e-300, v = h_uniform(r);
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* A CPU context; aborts the test program if it cannot be made (a harness bug, not a case). */
static inline mla_ctx *h_cpu_ctx(void) {
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = MLA_BACKEND_CPU;
    mla_ctx *c = NULL;
    if (mla_ctx_create(&p, &c) != MLA_OK) { fprintf(stderr, "cannot create a CPU context\n"); exit(2); }
    return c;
}

static inline void *h_alloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", n); exit(2); }
    return p;
}

/* NaN-heavy garbage for memory a correct op never reads: f32 NaN, bf16 NaN pairs, e4m3 NaN
 * bytes, random words. */
static inline void h_fill_garbage(h_rng *r, void *buf, size_t n) {
    uint8_t *p = (uint8_t *)buf;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t w;
        switch (h_next(r) % 4) {
        case 0: w = 0x7fc00000u; break;
        case 1: w = 0x7fc07fc0u; break;
        case 2: w = 0x7f7f7f7fu; break;
        default: w = (uint32_t)h_next(r); break;
        }
        for (size_t k = 0; k < 4 && i + k < n; k++) p[i + k] = (uint8_t)(w >> (8 * k));
    }
}

/* Index of the first differing byte, -1 when equal. */
static inline int64_t h_first_diff(const void *a, const void *b, size_t n) {
    const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return (int64_t)i;
    return -1;
}

/* Backend memory for tests: n bytes (at least 16) on ctx's backend, filled from host when given.
 * A failure here is the harness's, not a case's: the program stops. */
static inline void *h_dev_put(mla_ctx *ctx, const void *host, size_t n) {
    void *d = NULL;
    if (mla_malloc(ctx, n ? n : 16, &d) != MLA_OK) {
        fprintf(stderr, "backend malloc of %zu bytes failed: %s\n", n, mla_ctx_last_error(ctx));
        exit(2);
    }
    if (n && host && mla_memcpy_to_backend(ctx, d, host, n) != MLA_OK) {
        fprintf(stderr, "copy to backend failed: %s\n", mla_ctx_last_error(ctx));
        exit(2);
    }
    return d;
}
static inline void h_dev_get(mla_ctx *ctx, void *host, const void *d, size_t n) {
    if (n && mla_memcpy_to_host(ctx, host, d, n) != MLA_OK) {
        fprintf(stderr, "copy to host failed: %s\n", mla_ctx_last_error(ctx));
        exit(2);
    }
}

#endif
