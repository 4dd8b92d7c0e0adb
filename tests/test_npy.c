/* The .npy reader and writer: round trips of every dtype and rank, the exact header NumPy writes,
 * version 2.0 headers, a real NumPy file from the golden cases, and malformed files refused with
 * a message naming the problem. */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "npy.h"

static char tmpdir[256];

/* A .npy image in memory: magic, version major.0, the dict padded with spaces to 64 bytes and
 * '\n', then data. Returns its size. */
static size_t build(uint8_t *buf, int major, const char *dict, const void *data, size_t n) {
    size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
    size_t total = (pre + dl + 1 + 63) / 64 * 64, hlen = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = 0;
    if (major == 1) { buf[8] = (uint8_t)(hlen & 0xff); buf[9] = (uint8_t)(hlen >> 8); }
    else { buf[8] = (uint8_t)(hlen & 0xff); buf[9] = (uint8_t)(hlen >> 8); buf[10] = 0; buf[11] = 0; }
    memcpy(buf + pre, dict, dl);
    memset(buf + pre + dl, ' ', hlen - dl - 1);
    buf[total - 1] = '\n';
    if (n) memcpy(buf + total, data, n);
    return total + n;
}

static void expect_bad(const char *what, const uint8_t *buf, size_t n, const char *needle) {
    mla_npy t;
    char err[256] = "";
    int rc = mla_npy_parse(buf, n, &t, err, sizeof err);
    EXPECT(rc == -1, "%s: accepted", what);
    EXPECT(rc != -1 || strstr(err, needle) != NULL, "%s: message '%s' lacks '%s'", what, err, needle);
    if (rc == 0) mla_npy_free(&t);
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mla_test_npy_XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 2; }
    h_rng r = {42};

    h_begin("round trip: every dtype, ranks 0..4, empty dims");
    static const mla_npy_dtype types[4] = {MLA_NPY_U1, MLA_NPY_U2, MLA_NPY_I4, MLA_NPY_F4};
    static const int64_t shapes[6][4] = {{0}, {7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 2}, {4, 0, 3}};
    static const int ndims[6] = {0, 1, 2, 3, 4, 3};
    for (int ti = 0; ti < 4; ti++)
        for (int si = 0; si < 6; si++) {
            mla_npy a, b;
            char err[256], path[400];
            EXPECT(mla_npy_alloc(&a, types[ti], ndims[si], shapes[si], err, sizeof err) == 0, "alloc: %s", err);
            for (size_t i = 0; i < a.nbytes; i++) ((uint8_t *)a.data)[i] = (uint8_t)h_next(&r);
            snprintf(path, sizeof path, "%s/t%d_%d.npy", tmpdir, ti, si);
            EXPECT(mla_npy_write(path, &a, err, sizeof err) == 0, "write: %s", err);
            EXPECT(mla_npy_read(path, &b, err, sizeof err) == 0, "read back %s: %s", path, err);
            EXPECT(b.dtype == a.dtype && b.ndim == a.ndim && b.count == a.count && b.nbytes == a.nbytes,
                   "dtype/shape changed for %s", path);
            for (int k = 0; k < a.ndim; k++) EXPECT(a.shape[k] == b.shape[k], "dim %d of %s", k, path);
            EXPECT(a.nbytes == b.nbytes && memcmp(a.data, b.data, a.nbytes) == 0, "data changed for %s", path);
            mla_npy_free(&a);
            mla_npy_free(&b);
        }
    h_end();

    h_begin("writer: NumPy's exact header (version 1.0, padded to 64, 1-tuples)");
    {
        int64_t s2[2] = {2, 3}, s1[1] = {5};
        mla_npy a;
        char err[256], path[400];
        mla_npy_alloc(&a, MLA_NPY_F4, 2, s2, err, sizeof err);
        snprintf(path, sizeof path, "%s/h.npy", tmpdir);
        mla_npy_write(path, &a, err, sizeof err);
        mla_npy_free(&a);
        FILE *f = fopen(path, "rb");
        uint8_t buf[256] = {0};
        size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        EXPECT(n == 128 + 24, "file size %zu, want 152", n);
        EXPECT(memcmp(buf, "\x93NUMPY\x01\x00", 8) == 0, "magic/version");
        EXPECT(buf[8] + 256 * buf[9] == 118, "header length %d, want 118", buf[8] + 256 * buf[9]);
        EXPECT(memcmp(buf + 10, dict, strlen(dict)) == 0, "dict text '%.60s'", (const char *)buf + 10);
        EXPECT(buf[127] == '\n' && buf[126] == ' ', "padding");
        mla_npy_alloc(&a, MLA_NPY_I4, 1, s1, err, sizeof err);
        mla_npy_write(path, &a, err, sizeof err);
        mla_npy_free(&a);
        f = fopen(path, "rb");
        n = f ? fread(buf, 1, sizeof buf, f) : 0;
        if (f) fclose(f);
        EXPECT(n > 64 && strstr((const char *)buf + 10, "'shape': (5,), }") != NULL, "1-tuple written as (5,)");
    }
    h_end();

    h_begin("reader: version 2.0 and 3.0 headers, keys in any order, \"double\" quotes");
    {
        uint8_t buf[512];
        int32_t v[6] = {1, -2, 3, -4, 5, 2147483647};
        size_t n = build(buf, 2, "{'shape': (3, 2), 'fortran_order': False, 'descr': '<i4'}", v, sizeof v);
        mla_npy t;
        char err[256];
        EXPECT(mla_npy_parse(buf, n, &t, err, sizeof err) == 0, "v2.0: %s", err);
        EXPECT(t.dtype == MLA_NPY_I4 && t.ndim == 2 && t.shape[0] == 3 && t.shape[1] == 2, "v2.0 shape");
        EXPECT(t.data && memcmp(t.data, v, sizeof v) == 0, "v2.0 data");
        mla_npy_free(&t);
        n = build(buf, 3, "{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (24,)}", v, sizeof v);
        EXPECT(mla_npy_parse(buf, n, &t, err, sizeof err) == 0, "v3.0: %s", err);
        EXPECT(t.dtype == MLA_NPY_U1 && t.ndim == 1 && t.count == 24, "v3.0 shape");
        mla_npy_free(&t);
    }
    h_end();

    h_begin("reader: malformed files are refused with a reason");
    {
        uint8_t buf[512], data[64] = {0};
        size_t n;
        n = build(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data, 8);
        buf[1] = 'X';
        expect_bad("bad magic", buf, n, "magic");
        expect_bad("8 bytes", (const uint8_t *)"\x93NUMPY\x01\x00", 8, "magic");
        n = build(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data, 8);
        expect_bad("header cut", buf, 40, "truncated header");
        expect_bad("data cut", buf, n - 1, "truncated data");
        n = build(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data, 12);
        expect_bad("trailing bytes", buf, n, "after the data");
        n = build(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data, 8);
        expect_bad("fortran order", buf, n, "fortran_order");
        n = build(buf, 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data, 8);
        expect_bad("big-endian", buf, n, "big-endian");
        n = build(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", data, 16);
        expect_bad("float64", buf, n, "not supported");
        n = build(buf, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", data, 16);
        expect_bad("int64", buf, n, "not supported");
        n = build(buf, 1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", data, 8);
        expect_bad("structured dtype", buf, n, "structured");
        n = build(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 2), }", data, 2);
        expect_bad("5 dims", buf, n, "dimensions");
        n = build(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (-1, 2), }", data, 2);
        expect_bad("negative dim", buf, n, "negative");
        n = build(buf, 1, "{'descr': '|u1', 'fortran_order': False, }", data, 2);
        expect_bad("no shape", buf, n, "lacks 'shape'");
        n = build(buf, 1, "{'descr': '|u1', 'shape': (2,), }", data, 2);
        expect_bad("no fortran_order", buf, n, "fortran_order");
        n = build(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), 'extra': 1}", data, 2);
        expect_bad("unknown key", buf, n, "unexpected key");
        n = build(buf, 1, "['descr', '|u1']", data, 2);
        expect_bad("not a dict", buf, n, "not a dict");
        n = build(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999, 99999999999999), }", data, 2);
        expect_bad("huge shape", buf, n, "too large");
        n = build(buf, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", data, 2);
        buf[6] = 9;
        expect_bad("version 9", buf, n, "version");
        mla_npy t;
        char err[256];
        EXPECT(mla_npy_read("/nonexistent/x.npy", &t, err, sizeof err) == -1 && strstr(err, "/nonexistent/x.npy"),
               "missing file: '%s'", err);
    }
    h_end();

    h_begin("coordinates of a flat index");
    {
        mla_npy t;
        int64_t s[3] = {4, 3, 5};
        char err[64], c[64];
        mla_npy_alloc(&t, MLA_NPY_F4, 3, s, err, sizeof err);
        mla_npy_coord_str(&t, 2 * 15 + 1 * 5 + 4, c, sizeof c);
        EXPECT(!strcmp(c, "[2, 1, 4]"), "got %s", c);
        mla_npy_shape_str(&t, c, sizeof c);
        EXPECT(!strcmp(c, "[4, 3, 5] <f4"), "got %s", c);
        mla_npy_free(&t);
    }
    h_end();

    /* A file NumPy itself wrote: the golden decode q of a known shape. */
    h_begin("a NumPy-written golden file");
    {
        const char *env = getenv("MLA_GOLDEN");
        char path[1024];
        const char *root = env && *env ? env : is_dir(MLA_SOURCE_DIR "/golden") ? MLA_SOURCE_DIR "/golden" : MLA_SOURCE_DIR "/../shared/golden";
        snprintf(path, sizeof path, "%s/decode/fp8_h1_p1_seq0/q.npy", root);
        mla_npy t;
        char err[1200];
        if (access(path, R_OK) != 0) h_skip("golden cases not found");
        else {
            EXPECT(mla_npy_read(path, &t, err, sizeof err) == 0, "%s", err);
            EXPECT(t.dtype == MLA_NPY_U2 && t.ndim == 3 && t.shape[0] == 4 && t.shape[1] == 1 && t.shape[2] == 576,
                   "shape of %s", path);
            int nonzero = 0;
            for (int64_t i = 0; i < t.count; i++) nonzero += ((uint16_t *)t.data)[i] != 0;
            EXPECT(nonzero > t.count / 2, "data looks empty");
            /* written back, the file is byte-identical to NumPy's */
            char copy[400];
            snprintf(copy, sizeof copy, "%s/copy.npy", tmpdir);
            EXPECT(mla_npy_write(copy, &t, err, sizeof err) == 0, "%s", err);
            FILE *fa = fopen(path, "rb"), *fb = fopen(copy, "rb");
            int same = fa && fb;
            while (same) {
                int ca = fgetc(fa), cb = fgetc(fb);
                if (ca != cb) same = 0;
                if (ca == EOF || cb == EOF) break;
            }
            if (fa) fclose(fa);
            if (fb) fclose(fb);
            EXPECT(same, "rewritten %s differs from NumPy's bytes", path);
            mla_npy_free(&t);
            h_end();
        }
    }

    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return h_finish();
}
