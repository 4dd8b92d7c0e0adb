/* NumPy .npy reader and writer (see npy.h). The header is a Python dict literal; this file parses
 * the small subset NumPy writes: string keys, a string, True/False and a tuple of integers. */
#include "npy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char MAGIC[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static int fail(char *err, size_t n, const char *fmt, ...) {
    if (err && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

size_t mla_npy_dtype_size(mla_npy_dtype t) {
    switch (t) {
    case MLA_NPY_U1: return 1;
    case MLA_NPY_U2: return 2;
    case MLA_NPY_I4: return 4;
    case MLA_NPY_F4: return 4;
    }
    return 0;
}

const char *mla_npy_descr(mla_npy_dtype t) {
    switch (t) {
    case MLA_NPY_U1: return "|u1";
    case MLA_NPY_U2: return "<u2";
    case MLA_NPY_I4: return "<i4";
    case MLA_NPY_F4: return "<f4";
    }
    return "?";
}

/* Element count and byte size of a shape, refusing negative dims and overflow. */
static int shape_size(mla_npy_dtype dtype, int ndim, const int64_t *shape, int64_t *count, size_t *nbytes,
                      char *err, size_t err_n) {
    if (ndim < 0 || ndim > MLA_NPY_MAX_DIMS)
        return fail(err, err_n, "%d dimensions (at most %d supported)", ndim, MLA_NPY_MAX_DIMS);
    size_t es = mla_npy_dtype_size(dtype);
    if (!es) return fail(err, err_n, "unknown element type %d", (int)dtype);
    int64_t c = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return fail(err, err_n, "dimension %d is negative (%lld)", i, (long long)shape[i]);
        if (shape[i] > 0 && c > (INT64_MAX / 8) / shape[i])
            return fail(err, err_n, "shape too large (dimension %d = %lld)", i, (long long)shape[i]);
        c *= shape[i];
    }
    if ((uint64_t)c > (uint64_t)(SIZE_MAX / es)) return fail(err, err_n, "shape too large for memory");
    *count = c;
    *nbytes = (size_t)c * es;
    return 0;
}

int mla_npy_alloc(mla_npy *t, mla_npy_dtype dtype, int ndim, const int64_t *shape, char *err, size_t err_n) {
    memset(t, 0, sizeof *t);
    int64_t count;
    size_t nbytes;
    if (shape_size(dtype, ndim, shape, &count, &nbytes, err, err_n)) return -1;
    void *p = calloc(1, nbytes ? nbytes : 1);
    if (!p) return fail(err, err_n, "out of memory (%zu bytes)", nbytes);
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->count = count;
    t->nbytes = nbytes;
    t->data = p;
    return 0;
}

void mla_npy_free(mla_npy *t) {
    if (!t) return;
    free(t->data);
    memset(t, 0, sizeof *t);
}

/* ---- header dict parser ---- */

typedef struct {
    const char *s, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->s < c->end && (*c->s == ' ' || *c->s == '\t' || *c->s == '\n' || *c->s == '\r')) c->s++;
}

static int eat(cursor *c, char ch) {
    skip_ws(c);
    if (c->s < c->end && *c->s == ch) { c->s++; return 1; }
    return 0;
}

/* A quoted Python string ('...' or "...") without escapes, into out. */
static int parse_str(cursor *c, char *out, size_t n) {
    skip_ws(c);
    if (c->s >= c->end || (*c->s != '\'' && *c->s != '"')) return -1;
    char q = *c->s++;
    size_t k = 0;
    while (c->s < c->end && *c->s != q) {
        if (*c->s == '\\' || k + 1 >= n) return -1;
        out[k++] = *c->s++;
    }
    if (c->s >= c->end) return -1;
    c->s++;
    out[k] = 0;
    return 0;
}

static int parse_word(cursor *c, const char *w) {
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->s) >= n && memcmp(c->s, w, n) == 0) { c->s += n; return 1; }
    return 0;
}

/* (d0, d1, ...) with an optional trailing comma; () is a scalar. */
static int parse_shape(cursor *c, int64_t *shape, int *ndim, char *err, size_t err_n) {
    if (!eat(c, '(')) return fail(err, err_n, "'shape' is not a tuple");
    int k = 0;
    for (;;) {
        skip_ws(c);
        if (eat(c, ')')) break;
        if (c->s >= c->end || *c->s < '0' || *c->s > '9') {
            if (c->s < c->end && *c->s == '-') return fail(err, err_n, "'shape' has a negative dimension");
            return fail(err, err_n, "'shape' holds something other than integers");
        }
        int64_t v = 0;
        while (c->s < c->end && *c->s >= '0' && *c->s <= '9') {
            if (v > (INT64_MAX - 9) / 10) return fail(err, err_n, "'shape' dimension too large");
            v = v * 10 + (*c->s++ - '0');
        }
        if (k >= MLA_NPY_MAX_DIMS) return fail(err, err_n, "more than %d dimensions", MLA_NPY_MAX_DIMS);
        shape[k++] = v;
        if (eat(c, ',')) continue;
        if (eat(c, ')')) break;
        return fail(err, err_n, "'shape' tuple is malformed");
    }
    *ndim = k;
    return 0;
}

static int parse_descr(const char *d, mla_npy_dtype *t, char *err, size_t err_n) {
    if (!strcmp(d, "|u1") || !strcmp(d, "<u1") || !strcmp(d, "u1")) *t = MLA_NPY_U1;
    else if (!strcmp(d, "<u2")) *t = MLA_NPY_U2;
    else if (!strcmp(d, "<i4")) *t = MLA_NPY_I4;
    else if (!strcmp(d, "<f4")) *t = MLA_NPY_F4;
    else if (d[0] == '>' && strcmp(d + 1, "u1") != 0)
        return fail(err, err_n, "descr '%s' is big-endian (only little-endian is supported)", d);
    else
        return fail(err, err_n, "descr '%s' is not supported (only '<u2', '|u1', '<f4', '<i4')", d);
    return 0;
}

static int parse_header(const char *h, size_t n, mla_npy_dtype *dtype, int *ndim, int64_t *shape, char *err,
                        size_t err_n) {
    cursor c = {h, h + n};
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    if (!eat(&c, '{')) return fail(err, err_n, "header is not a dict");
    for (;;) {
        if (eat(&c, '}')) break;
        char key[32], val[32];
        if (parse_str(&c, key, sizeof key)) return fail(err, err_n, "header dict: expected a quoted key");
        if (!eat(&c, ':')) return fail(err, err_n, "header dict: expected ':' after '%s'", key);
        if (!strcmp(key, "descr")) {
            if (parse_str(&c, val, sizeof val))
                return fail(err, err_n, "'descr' is not a plain type string (structured dtypes are not supported)");
            if (parse_descr(val, dtype, err, err_n)) return -1;
            have_descr = 1;
        } else if (!strcmp(key, "fortran_order")) {
            if (parse_word(&c, "True")) return fail(err, err_n, "fortran_order is True (only C order is supported)");
            if (!parse_word(&c, "False")) return fail(err, err_n, "'fortran_order' is neither True nor False");
            have_fortran = 1;
        } else if (!strcmp(key, "shape")) {
            if (parse_shape(&c, shape, ndim, err, err_n)) return -1;
            have_shape = 1;
        } else {
            return fail(err, err_n, "header has an unexpected key '%s'", key);
        }
        if (eat(&c, ',')) continue;
        if (eat(&c, '}')) break;
        return fail(err, err_n, "header dict is malformed after '%s'", key);
    }
    if (!have_descr) return fail(err, err_n, "header lacks 'descr'");
    if (!have_fortran) return fail(err, err_n, "header lacks 'fortran_order'");
    if (!have_shape) return fail(err, err_n, "header lacks 'shape'");
    return 0;
}

int mla_npy_parse(const void *buf, size_t n, mla_npy *t, char *err, size_t err_n) {
    const unsigned char *b = (const unsigned char *)buf;
    memset(t, 0, sizeof *t);
    if (n < 10 || memcmp(b, MAGIC, 6) != 0) return fail(err, err_n, "not a .npy file (bad magic)");
    int major = b[6];
    size_t hlen, hstart;
    if (major == 1) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (n < 12) return fail(err, err_n, "truncated header");
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hstart = 12;
    } else {
        return fail(err, err_n, "format version %d.%d is not supported (1.0, 2.0, 3.0)", b[6], b[7]);
    }
    if (hlen > n - hstart) return fail(err, err_n, "truncated header (%zu bytes announced, %zu present)", hlen, n - hstart);
    mla_npy_dtype dtype = MLA_NPY_U1;
    int ndim = 0;
    int64_t shape[MLA_NPY_MAX_DIMS] = {0};
    if (parse_header((const char *)b + hstart, hlen, &dtype, &ndim, shape, err, err_n)) return -1;
    int64_t count;
    size_t nbytes;
    if (shape_size(dtype, ndim, shape, &count, &nbytes, err, err_n)) return -1;
    size_t have = n - hstart - hlen;
    if (have < nbytes)
        return fail(err, err_n, "truncated data: %zu bytes present, shape needs %zu", have, nbytes);
    if (have > nbytes) return fail(err, err_n, "%zu unexpected bytes after the data", have - nbytes);
    if (mla_npy_alloc(t, dtype, ndim, shape, err, err_n)) return -1;
    memcpy(t->data, b + hstart + hlen, nbytes);
    return 0;
}

int mla_npy_read(const char *path, mla_npy *t, char *err, size_t err_n) {
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, err_n, "%s: %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long sz = ftell(f);
        if (sz > 0) cap = (size_t)sz;
        rewind(f);
    }
    buf = (unsigned char *)malloc(cap + 1);
    if (!buf) { fclose(f); return fail(err, err_n, "%s: out of memory", path); }
    for (;;) {
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 4096;
            unsigned char *nb = (unsigned char *)realloc(buf, nc + 1);
            if (!nb) { free(buf); fclose(f); return fail(err, err_n, "%s: out of memory", path); }
            buf = nb;
            cap = nc;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); return fail(err, err_n, "%s: read error", path); }
    char msg[256];
    int rc = mla_npy_parse(buf, n, t, msg, sizeof msg);
    free(buf);
    if (rc) return fail(err, err_n, "%s: %s", path, msg);
    return 0;
}

int mla_npy_write(const char *path, const mla_npy *t, char *err, size_t err_n) {
    int64_t count;
    size_t nbytes;
    char msg[160];
    if (shape_size(t->dtype, t->ndim, t->shape, &count, &nbytes, msg, sizeof msg))
        return fail(err, err_n, "%s: %s", path, msg);
    char dict[256];
    int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", mla_npy_descr(t->dtype));
    for (int i = 0; i < t->ndim; i++)
        k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld%s", (long long)t->shape[i],
                      (t->ndim == 1 || i + 1 < t->ndim) ? ", " : "");
    if (t->ndim == 1) k -= 1; /* "(5,)" as NumPy writes a 1-tuple */
    k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
    /* magic + version + 2-byte length + dict + spaces + '\n', total a multiple of 64 */
    size_t total = 10 + (size_t)k + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hlen = padded - 10;
    unsigned char head[320];
    memcpy(head, MAGIC, 6);
    head[6] = 1;
    head[7] = 0;
    head[8] = (unsigned char)(hlen & 0xff);
    head[9] = (unsigned char)(hlen >> 8);
    memcpy(head + 10, dict, (size_t)k);
    memset(head + 10 + k, ' ', hlen - (size_t)k - 1);
    head[padded - 1] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return fail(err, err_n, "%s: %s", path, strerror(errno));
    int ok = fwrite(head, 1, padded, f) == padded && (nbytes == 0 || fwrite(t->data, 1, nbytes, f) == nbytes);
    if (fclose(f) != 0) ok = 0;
    if (!ok) return fail(err, err_n, "%s: write error", path);
    return 0;
}

void mla_npy_shape_str(const mla_npy *t, char *buf, size_t n) {
    int k = snprintf(buf, n, "[");
    for (int i = 0; i < t->ndim && k > 0 && (size_t)k < n; i++)
        k += snprintf(buf + k, n - (size_t)k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, "] %s", mla_npy_descr(t->dtype));
}

void mla_npy_coord_str(const mla_npy *t, int64_t flat, char *buf, size_t n) {
    int64_t idx[MLA_NPY_MAX_DIMS] = {0};
    for (int i = t->ndim - 1; i >= 0; i--) {
        int64_t d = t->shape[i] > 0 ? t->shape[i] : 1;
        idx[i] = flat % d;
        flat /= d;
    }
    int k = snprintf(buf, n, "[");
    for (int i = 0; i < t->ndim && k > 0 && (size_t)k < n; i++)
        k += snprintf(buf + k, n - (size_t)k, "%s%lld", i ? ", " : "", (long long)idx[i]);
    if (k > 0 && (size_t)k < n) snprintf(buf + k, n - (size_t)k, "]");
}
