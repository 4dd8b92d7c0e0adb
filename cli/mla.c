/* mla: the command-line tool. run / check golden cases, info, bench, demo. */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"
#include "demo.h"
#include "golden.h"
#include "mla.h"
#include "npy.h"
#include "probe.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: mla COMMAND [options]      (mla COMMAND --help for each)\n"
            "  run CASE_DIR OUT_DIR [--backend cpu|cuda|auto]   run one golden case, write its outputs as .npy\n"
            "  check PATH... [--backend cpu|cuda|auto]          check golden cases (case dirs, op dirs or the root)\n"
            "  info                                             version, backends, CPU threads and SIMD, GPUs\n"
            "  bench OP [options] | bench --all [--backend ...] time operations on synthetic data\n"
            "  demo [--backend cpu|cuda|auto]                   one DeepSeek-V3.2 attention-layer step, checked\n"
            "  --version                                        print the version\n");
}

/* Parses "--backend X" at argv[*i]; returns 0 (consumed), 1 (not a backend option), 2 (bad value). */
static int backend_opt(const char *cmd, int argc, char **argv, int *i, mla_backend *b) {
    if (strcmp(argv[*i], "--backend") != 0) return 1;
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (v && !strcmp(v, "cpu")) *b = MLA_BACKEND_CPU;
    else if (v && !strcmp(v, "cuda")) *b = MLA_BACKEND_CUDA;
    else if (v && !strcmp(v, "auto")) *b = MLA_BACKEND_AUTO;
    else {
        fprintf(stderr, "mla %s: --backend needs cpu, cuda or auto\n", cmd);
        return 2;
    }
    (*i)++;
    return 0;
}

static mla_ctx *make_ctx(const char *cmd, mla_backend b) {
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = b;
    mla_ctx *ctx = NULL;
    mla_status rc = mla_ctx_create(&p, &ctx);
    if (rc != MLA_OK) {
        fprintf(stderr, "mla %s: cannot create a %s context: %s%s\n", cmd, mla_backend_name(b), mla_status_str(rc),
                rc == MLA_ERR_NO_DEVICE ? (mla_has_backend(MLA_BACKEND_CUDA) ? " (no GPU visible)" : " (built without CUDA)")
                                        : "");
        return NULL;
    }
    return ctx;
}

/* mkdir -p */
static int make_dirs(const char *path) {
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0777) && errno != EEXIST) return -1;
        *s = '/';
    }
    if (mkdir(p, 0777) && errno != EEXIST) return -1;
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* ---- mla run ---- */
static int cmd_run(int argc, char **argv) {
    const char *pos[2] = {NULL, NULL};
    int npos = 0;
    mla_backend b = MLA_BACKEND_AUTO;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: mla run CASE_DIR OUT_DIR [--backend cpu|cuda|auto]\n"
                   "Runs the golden case in CASE_DIR (params.txt + inputs .npy) and writes every output as\n"
                   "OUT_DIR/<name>.npy, named like the case's expected_<name>.npy, same shape and dtype\n"
                   "(bf16 results as '<f4'). OUT_DIR is created.\n");
            return 0;
        }
        int r = backend_opt("run", argc, argv, &i, &b);
        if (r == 2) return 2;
        if (r == 0) continue;
        if (argv[i][0] == '-') { fprintf(stderr, "mla run: unknown option '%s' (see mla run --help)\n", argv[i]); return 2; }
        if (npos == 2) { fprintf(stderr, "mla run: too many arguments (see mla run --help)\n"); return 2; }
        pos[npos++] = argv[i];
    }
    if (npos != 2) { fprintf(stderr, "mla run: needs CASE_DIR and OUT_DIR (see mla run --help)\n"); return 2; }
    char err[1024];
    mla_golden_case *c = mla_golden_load(pos[0], err, sizeof err);
    if (!c) { fprintf(stderr, "mla run: %s\n", err); return 1; }
    mla_ctx *ctx = make_ctx("run", b);
    if (!ctx) { mla_golden_free(c); return 1; }
    mla_tensor_list out = {0};
    mla_status rc = mla_golden_run(ctx, c, &out, err, sizeof err);
    int code = 0;
    if (rc != MLA_OK) {
        fprintf(stderr, "mla run: %s/%s on %s: %s: %s\n", c->op, c->name, mla_backend_name(mla_ctx_backend(ctx)),
                mla_status_str(rc), err);
        code = 1;
    } else if (make_dirs(pos[1])) {
        fprintf(stderr, "mla run: cannot create %s: %s\n", pos[1], strerror(errno));
        code = 1;
    } else {
        for (int i = 0; i < out.n && !code; i++) {
            char path[1400], shape[96];
            snprintf(path, sizeof path, "%s/%s.npy", pos[1], out.items[i].name);
            if (mla_npy_write(path, &out.items[i].t, err, sizeof err)) { fprintf(stderr, "mla run: %s\n", err); code = 1; break; }
            mla_npy_shape_str(&out.items[i].t, shape, sizeof shape);
            printf("wrote %s %s\n", path, shape);
        }
    }
    mla_tensor_list_free(&out);
    mla_ctx_destroy(ctx);
    mla_golden_free(c);
    return code;
}

/* ---- mla check ---- */
static int cmd_check(int argc, char **argv) {
    mla_backend b = MLA_BACKEND_AUTO;
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: mla check PATH... [--backend cpu|cuda|auto]\n"
                   "Runs and checks golden cases by ../shared/golden/README.md section 3. PATH is a case\n"
                   "directory, an op directory or the golden root (searched for directories holding\n"
                   "params.txt). One line per case (PASS/FAIL op/case, max abs/rel error, cosine distance,\n"
                   "the first bad elements on failure), then 'N passed, N failed'. Exit 1 on any failure.\n"
                   "A case the backend does not support prints UNSUPPORTED: a failure on CPU, skipped on CUDA.\n");
            return 0;
        }
        int r = backend_opt("check", argc, argv, &i, &b);
        if (r == 2) return 2;
        if (r == 0) continue;
        if (argv[i][0] == '-') { fprintf(stderr, "mla check: unknown option '%s' (see mla check --help)\n", argv[i]); return 2; }
        npaths++;
    }
    if (!npaths) { fprintf(stderr, "mla check: needs at least one case, op or golden directory (see mla check --help)\n"); return 2; }
    mla_ctx *ctx = make_ctx("check", b);
    if (!ctx) return 1;
    int cuda = mla_ctx_backend(ctx) == MLA_BACKEND_CUDA;
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend")) { i++; continue; }
        char **dirs = NULL, err[1200];
        int n = mla_golden_find_cases(argv[i], &dirs, err, sizeof err);
        if (n < 0) { printf("FAIL %s: %s\n", argv[i], err); failed++; continue; }
        if (n == 0) { printf("FAIL %s: no case directories (params.txt) found\n", argv[i]); failed++; }
        for (int k = 0; k < n; k++) {
            char label[256], line[2048], *detail = NULL;
            size_t detail_n = 0;
            FILE *df = open_memstream(&detail, &detail_n);
            mla_golden_outcome o = mla_golden_check_dir(ctx, dirs[k], label, sizeof label, line, sizeof line, df);
            if (df) fclose(df);
            if (o == MLA_GOLDEN_PASS) { printf("PASS %s  %s\n", label, line); passed++; }
            else if (o == MLA_GOLDEN_UNSUPPORTED) {
                printf("UNSUPPORTED %s  %s\n", label, line);
                if (cuda) skipped++;
                else failed++;
            } else {
                printf("FAIL %s  %s\n", label, line);
                if (detail) fputs(detail, stdout);
                failed++;
            }
            free(detail);
            fflush(stdout);
        }
        mla_golden_free_list(dirs, n);
    }
    if (skipped) printf("%d passed, %d failed, %d unsupported (skipped)\n", passed, failed, skipped);
    else printf("%d passed, %d failed\n", passed, failed);
    mla_ctx_destroy(ctx);
    return failed ? 1 : 0;
}

/* ---- mla info ---- */
static void cpu_model(char *buf, size_t n) {
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *p = strchr(line, ':');
            if (p) {
                p++;
                while (*p == ' ') p++;
                p[strcspn(p, "\n")] = 0;
                snprintf(buf, n, "%s", p);
            }
            break;
        }
    fclose(f);
}

static int cmd_info(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: mla info\nPrints the library version, the backends compiled in, the CPU's threads and SIMD\n"
                   "features, and the GPUs present.\n");
            return 0;
        }
        fprintf(stderr, "mla info: unexpected argument '%s' (see mla info --help)\n", argv[i]);
        return 2;
    }
    char model[160], simd[64];
    cpu_model(model, sizeof model);
    mla_probe_simd(simd, (int)sizeof simd);
    printf("libmla %s (version number %d)\n", mla_version_string(), mla_version_number());
    printf("backends: cpu (C11 + OpenMP)%s\n",
           mla_has_backend(MLA_BACKEND_CUDA) ? ", cuda (target sm_90a)" : "; cuda not compiled in (no nvcc at build time)");
    printf("cpu: %s, %d OpenMP threads, SIMD: %s\n", model, omp_get_max_threads(), simd);
    int n = mla_cuda_device_count();
    if (!mla_has_backend(MLA_BACKEND_CUDA)) {
        printf("gpus: - (built without CUDA)\n");
        return 0;
    }
    printf("gpus: %d\n", n);
    for (int d = 0; d < n; d++) {
        mla_ctx_params p = mla_ctx_params_default();
        p.backend = MLA_BACKEND_CUDA;
        p.device = d;
        mla_ctx *ctx = NULL;
        mla_status rc = mla_ctx_create(&p, &ctx);
        char desc[300];
        if (rc == MLA_OK) mla_ctx_describe(ctx, desc, sizeof desc);
        else snprintf(desc, sizeof desc, "device %d: cannot create a context (%s)", d, mla_status_str(rc));
        printf("  %s\n", desc);
        mla_ctx_destroy(ctx);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) { usage(stdout); return 0; }
    if (!strcmp(cmd, "--version")) { printf("libmla %s\n", mla_version_string()); return 0; }
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return mla_bench_command(argc - 1, argv + 1);
    if (!strcmp(cmd, "demo")) return mla_demo_command(argc - 1, argv + 1);
    fprintf(stderr, "mla: unknown command '%s' (see mla --help)\n", cmd);
    return 2;
}
