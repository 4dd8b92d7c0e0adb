/* Test helper for test_prefill.c and test_prefill_fused.c: golden tensors and parameters read
 * through the project's one loader (cli/npy.h, cli/golden.h), under a small pn_ interface. */
#ifndef MLA_TEST_PREFILL_NPY_H
#define MLA_TEST_PREFILL_NPY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "npy.h"

typedef struct pn_array {
    void *data;          /* NULL when the file is missing or unreadable */
    int64_t n;           /* elements */
    int64_t shape[4];
    int ndim;
    int item;            /* bytes per element */
} pn_array;

/* Reads dir/name.npy; data NULL on any failure. The caller frees data. */
static inline pn_array pn_load(const char *dir, const char *name) {
    pn_array a;
    memset(&a, 0, sizeof a);
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    mla_npy t;
    if (mla_npy_read(path, &t, err, sizeof err) != 0) return a;
    a.data = t.data;                 /* ownership moves to the caller */
    a.n = t.count;
    a.ndim = t.ndim;
    for (int i = 0; i < t.ndim && i < 4; i++) a.shape[i] = t.shape[i];
    a.item = (int)mla_npy_dtype_size(t.dtype);
    return a;
}

/* The value of `key` in dir/params.txt into buf; 0 when absent. */
static inline int pn_param_str(const char *dir, const char *key, char *buf, size_t n) {
    char err[256];
    mla_golden_case *c = mla_golden_load(dir, err, sizeof err);
    const char *v = c ? mla_golden_param(c, key) : NULL;
    if (v) snprintf(buf, n, "%s", v);
    mla_golden_free(c);
    return v != NULL;
}
static inline double pn_param(const char *dir, const char *key, double dflt) {
    char v[256];
    return pn_param_str(dir, key, v, sizeof v) ? strtod(v, NULL) : dflt;
}
/* as a float read with strtof: the golden floats round-trip through it */
static inline float pn_paramf(const char *dir, const char *key, float dflt) {
    char v[256];
    return pn_param_str(dir, key, v, sizeof v) ? strtof(v, NULL) : dflt;
}

/* The golden directory of an op's case; 0 when the golden tree is not found. */
static inline int pn_case_dir(char *buf, size_t n, const char *op, const char *name) {
    const char *env = getenv("MLA_GOLDEN");
    const char *roots[] = {env ? env : MLA_SOURCE_DIR "/golden", MLA_SOURCE_DIR "/golden",
                           MLA_SOURCE_DIR "/../shared/golden"};
    for (int r = 0; r < 3; r++) {
        snprintf(buf, n, "%s/%s/%s/params.txt", roots[r], op, name);
        FILE *f = fopen(buf, "r");
        if (f) {
            fclose(f);
            snprintf(buf, n, "%s/%s/%s", roots[r], op, name);
            return 1;
        }
    }
    buf[0] = 0;
    return 0;
}

#endif
