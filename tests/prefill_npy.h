/* Test helper for test_prefill.c and test_prefill_fused.c: a minimal reader of the golden cases'
 * .npy files (version 1.0, C order, little-endian; '<u2', '|u1', '<f4', '<i4') and params.txt. */
#ifndef MLA_TEST_PREFILL_NPY_H
#define MLA_TEST_PREFILL_NPY_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MLA_SOURCE_DIR
#define MLA_SOURCE_DIR "."
#endif

typedef struct pn_array {
    void *data;          /* NULL when the file is missing or unreadable */
    int64_t n;           /* elements */
    int64_t shape[4];
    int ndim;
    int item;            /* bytes per element */
} pn_array;

/* Reads dir/name.npy; data NULL on any failure. */
static inline pn_array pn_load(const char *dir, const char *name) {
    pn_array a;
    memset(&a, 0, sizeof a);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return a;
    unsigned char head[10];
    if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0 || head[6] != 1) { fclose(f); return a; }
    int hl = head[8] | (head[9] << 8);
    char *hdr = (char *)calloc(1, (size_t)hl + 1);
    if (!hdr || fread(hdr, 1, (size_t)hl, f) != (size_t)hl) { free(hdr); fclose(f); return a; }
    a.item = strstr(hdr, "'<u2'") ? 2 : strstr(hdr, "'|u1'") ? 1 : (strstr(hdr, "'<f4'") || strstr(hdr, "'<i4'")) ? 4 : 0;
    const char *s = strstr(hdr, "'shape': (");
    if (!a.item || !s || strstr(hdr, "'fortran_order': True")) { free(hdr); fclose(f); a.item = 0; return a; }
    s += 10;
    a.n = 1;
    while (*s && *s != ')' && a.ndim < 4) {
        char *e;
        long long v = strtoll(s, &e, 10);
        if (e == s) break;
        a.shape[a.ndim++] = v;
        a.n *= v;
        s = e;
        while (*s == ',' || *s == ' ') s++;
    }
    free(hdr);
    a.data = malloc((size_t)(a.n * a.item) + 1);
    if (!a.data || fread(a.data, (size_t)a.item, (size_t)a.n, f) != (size_t)a.n) { free(a.data); a.data = NULL; }
    fclose(f);
    return a;
}

/* The text after `key =` in dir/params.txt (trimmed) into buf; 0 when absent. */
static inline int pn_param_str(const char *dir, const char *key, char *buf, size_t n) {
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/params.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int found = 0;
    size_t kl = strlen(key);
    while (!found && fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ') p++;
        if (strncmp(p, key, kl) != 0) continue;
        char *q = p + kl;
        while (*q == ' ') q++;
        if (*q != '=') continue;
        q++;
        while (*q == ' ') q++;
        size_t len = strcspn(q, "\r\n");
        while (len && q[len - 1] == ' ') len--;
        if (len >= n) len = n - 1;
        memcpy(buf, q, len);
        buf[len] = 0;
        found = 1;
    }
    fclose(f);
    return found;
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

/* The golden directory of an op's case, "" when the golden tree is not found. */
static inline int pn_case_dir(char *buf, size_t n, const char *op, const char *name) {
    const char *roots[] = {MLA_SOURCE_DIR "/../shared/golden", "/work/shared/golden"};
    for (int r = 0; r < 2; r++) {
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
