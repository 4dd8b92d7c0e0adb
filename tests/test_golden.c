/* Every golden case (../shared/golden, or $MLA_GOLDEN) through the same loader, runner and checker
 * as `mla check`. Backend from $MLA_TEST_BACKEND (cpu by default; cuda: skipped without a GPU).
 * On CUDA an unsupported op is skipped; on CPU it fails. */
#include <sys/stat.h>

#include "golden.h"
#include "harness.h"

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int main(void) {
    const char *env = getenv("MLA_GOLDEN");
    const char *root = NULL;
    if (env && *env) root = env;
    else if (is_dir(MLA_SOURCE_DIR "/golden")) root = MLA_SOURCE_DIR "/golden";
    else root = MLA_SOURCE_DIR "/../shared/golden";

    const char *be = getenv("MLA_TEST_BACKEND");
    int cuda = be && !strcmp(be, "cuda");
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = cuda ? MLA_BACKEND_CUDA : MLA_BACKEND_CPU;
    mla_ctx *ctx = NULL;
    if (cuda && (!mla_has_backend(MLA_BACKEND_CUDA) || mla_cuda_device_count() == 0)) {
        h_begin("golden cases on cuda");
        h_skip(mla_has_backend(MLA_BACKEND_CUDA) ? "no GPU present" : "built without CUDA");
        return h_finish();
    }
    mla_status rc = mla_ctx_create(&p, &ctx);
    if (rc != MLA_OK) {
        h_begin("golden: %s context", cuda ? "cuda" : "cpu");
        EXPECT(0, "cannot create the context: %s", mla_status_str(rc));
        h_end();
        return h_finish();
    }

    char **dirs = NULL, err[1200];
    int n = mla_golden_find_cases(root, &dirs, err, sizeof err);
    h_begin("golden root %s", root);
    EXPECT(n > 0, "no golden cases found (%s); set MLA_GOLDEN", n < 0 ? err : "no params.txt below it");
    h_end();
    printf("golden: %d cases on %s\n", n > 0 ? n : 0, cuda ? "cuda" : "cpu");
    for (int i = 0; i < n; i++) {
        char label[256], line[2048], *detail = NULL;
        size_t detail_n = 0;
        FILE *df = open_memstream(&detail, &detail_n);
        mla_golden_outcome o = mla_golden_check_dir(ctx, dirs[i], label, sizeof label, line, sizeof line, df);
        if (df) fclose(df);
        h_begin("%s", label);
        if (o == MLA_GOLDEN_UNSUPPORTED && cuda) h_skip(line);
        else {
            EXPECT(o == MLA_GOLDEN_PASS, "%s%s", o == MLA_GOLDEN_UNSUPPORTED ? "UNSUPPORTED: " : "", line);
            h_end();
            if (o == MLA_GOLDEN_PASS) printf("     %s\n", line);
            if (o == MLA_GOLDEN_FAIL && detail) fputs(detail, stdout);
        }
        free(detail);
    }
    mla_golden_free_list(dirs, n);
    mla_ctx_destroy(ctx);
    return h_finish();
}
