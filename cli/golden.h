/* Golden cases (../shared/golden/README.md): load a case directory, run its operation on any
 * backend through the public API, and check the outputs by the README's section 3 rules.
 * Shared by `mla run`, `mla check` and tests/test_golden.c, so users and CI read cases alike.
 *
 *   mla_golden_case *c = mla_golden_load(dir, err, sizeof err);
 *   mla_tensor_list out = {0};
 *   mla_status rc = mla_golden_run(ctx, c, &out, err, sizeof err);   // outputs on the host
 *   mla_golden_report rep;
 *   mla_golden_check(c, &out, &rep);                                   // rep.ok, per-output detail
 */
#ifndef MLA_GOLDEN_H
#define MLA_GOLDEN_H

#include <stdio.h>

#include "mla.h"
#include "npy.h"

#define MLA_TENSORS_MAX 24
#define MLA_GOLDEN_PARAMS_MAX 64
#define MLA_GOLDEN_BAD_MAX 10   /* bad elements listed per output */

typedef struct mla_named_tensor {
    char name[64];
    mla_npy t;
} mla_named_tensor;

/* A small set of host tensors addressed by name. */
typedef struct mla_tensor_list {
    int n;
    mla_named_tensor items[MLA_TENSORS_MAX];
} mla_tensor_list;

const mla_npy *mla_tensor_find(const mla_tensor_list *l, const char *name); /* NULL if absent */
/* Adds (takes ownership of) t under name; -1 when the list is full or the name is taken. */
int mla_tensor_add(mla_tensor_list *l, const char *name, mla_npy *t);
void mla_tensor_list_free(mla_tensor_list *l);

typedef struct mla_golden_case {
    char dir[1024];
    char op[64], name[128];    /* params "op" and "case" (the directory names when absent) */
    int nparams;
    char keys[MLA_GOLDEN_PARAMS_MAX][64];
    char values[MLA_GOLDEN_PARAMS_MAX][512];
    mla_tensor_list inputs;    /* every <name>.npy */
    mla_tensor_list expected;  /* every expected_<name>.npy, stored under <name> */
} mla_golden_case;

/* Reads params.txt and every .npy file of dir. NULL on failure with the reason in err. */
mla_golden_case *mla_golden_load(const char *dir, char *err, size_t err_n);
void mla_golden_free(mla_golden_case *c);   /* NULL-safe */
const char *mla_golden_param(const mla_golden_case *c, const char *key); /* NULL when absent */

/* Runs the case's operation on ctx: inputs are copied to the backend (every pointer, metadata
 * included), outputs copied back into out as host tensors named like the expected files without
 * "expected_", same shape and dtype (bf16 results converted to f32). Returns MLA_OK, the op's own
 * status (err holds mla_ctx_last_error), or MLA_ERR_INVALID_ARG for a malformed case (err says
 * which parameter or file). */
mla_status mla_golden_run(mla_ctx *ctx, const mla_golden_case *c, mla_tensor_list *out, char *err, size_t err_n);

typedef struct mla_golden_output {
    char name[64];
    const char *rule;          /* "out", "out_fused", "lse", "indices", "logits", "exact", "fused_cache" */
    int ok;
    char summary[200];         /* "out: max_abs 1.2e-04 max_rel 3.1e-03 cos 2.0e-08" */
    int nbad;                  /* entries of bad[] in use */
    char bad[MLA_GOLDEN_BAD_MAX][240]; /* "out[0, 3, 17]: got 0.1 want 0.2" */
} mla_golden_output;

typedef struct mla_golden_report {
    int ok;
    int n;
    mla_golden_output outs[MLA_TENSORS_MAX];
} mla_golden_report;

/* Compares out with the case's expected tensors (every expected file must have an output).
 * Returns rep->ok. */
int mla_golden_check(const mla_golden_case *c, const mla_tensor_list *out, mla_golden_report *rep);

/* "out: max_abs ... | lse: ..." : every output's summary on one line. */
void mla_golden_summary(const mla_golden_report *rep, char *buf, size_t n);
/* The failing outputs' bad elements, one per line, indented. */
void mla_golden_print_failures(FILE *f, const mla_golden_report *rep);

/* Outcome of one case through load + run + check. */
typedef enum mla_golden_outcome {
    MLA_GOLDEN_PASS = 0,
    MLA_GOLDEN_FAIL = 1,
    MLA_GOLDEN_UNSUPPORTED = 2, /* the backend refused the op (MLA_ERR_UNSUPPORTED) */
    MLA_GOLDEN_ERROR = 3        /* the case could not be loaded, or the op failed otherwise */
} mla_golden_outcome;

/* Load, run and check dir. label gets "op/case"; line gets the summary (or the error message);
 * details (failing elements) go to detail when not NULL. */
mla_golden_outcome mla_golden_check_dir(mla_ctx *ctx, const char *dir, char *label, size_t label_n, char *line,
                                        size_t line_n, FILE *detail);

/* Case directories under path (path itself when it holds params.txt; else its subdirectories,
 * recursively, in name order). Returns the count (list is malloc'ed, free with
 * mla_golden_free_list) or -1 when path cannot be read (err says why). */
int mla_golden_find_cases(const char *path, char ***list, char *err, size_t err_n);
void mla_golden_free_list(char **list, int n);

#endif
