/* The shared top-k checker (cli/topk_check.c, SPEC section 5): accepts what the spec allows
 * (near-tie permutations in the order and at the k-th place), rejects everything else. */
#include "harness.h"
#include "topk_check.h"

static char msg[512];

static int check(const int32_t *got, int top_k, const float *ref, int64_t n) {
    return mla_topk_row_check(got, top_k, ref, n, msg, sizeof msg);
}

#define ACCEPT(got, k, ref, n, what) EXPECT(check(got, k, ref, n), "%s: rejected: %s", what, msg)
#define REJECT(got, k, ref, n, what) EXPECT(!check(got, k, ref, n) && msg[0], "%s: accepted", what)

int main(void) {
    const float NI = -INFINITY;
    /* scores: row max 10, band 1e-3 */
    const float s[10] = {1.0f, 10.0f, 5.0f, 5.0005f, 3.0f, NI, 7.0f, 5.0f, 0.0f, 2.0f};

    h_begin("exact reference order accepted");
    { int32_t g[4] = {1, 6, 3, 2}; ACCEPT(g, 4, s, 10, "exact"); }
    { int32_t g[1] = {1}; ACCEPT(g, 1, s, 10, "top-1"); }
    { int32_t g[9] = {1, 6, 3, 2, 7, 4, 9, 0, 8}; ACCEPT(g, 9, s, 10, "all visible"); }
    h_end();

    h_begin("near-tie permutations accepted");
    { int32_t g[4] = {1, 6, 2, 3}; ACCEPT(g, 4, s, 10, "5.0 before 5.0005 (within band)"); }
    { int32_t g[4] = {1, 6, 3, 7}; ACCEPT(g, 4, s, 10, "k-th place: 7 instead of 2 (exact tie)"); }
    { int32_t g[5] = {1, 6, 3, 7, 2}; ACCEPT(g, 5, s, 10, "exact tie in either order when the band is positive"); }
    { int32_t g[3] = {1, 6, 2}; ACCEPT(g, 3, s, 10, "k-th place: 2 instead of 3 (near tie)"); }
    h_end();

    h_begin("-1 fill past the visible keys");
    { int32_t g[12] = {1, 6, 3, 2, 7, 4, 9, 0, 8, -1, -1, -1}; ACCEPT(g, 12, s, 10, "fill"); }
    { int32_t g[12] = {1, 6, 3, 2, 7, 4, 9, 0, 8, -1, -1, 5}; REJECT(g, 12, s, 10, "invisible key as fill"); }
    { int32_t g[12] = {1, 6, 3, 2, 7, 4, 9, 0, 8, -1, 0, -1}; REJECT(g, 12, s, 10, "garbage after the fill"); }
    { int32_t g[12] = {1, 6, 3, 2, 7, 4, 9, 0, 8, -1, -1, -2}; REJECT(g, 12, s, 10, "-2 instead of -1"); }
    { int32_t g[12] = {1, 6, 3, 2, 7, 4, 9, 0, -1, -1, -1, -1}; REJECT(g, 12, s, 10, "fill starts too early"); }
    { int32_t g[4] = {1, 6, -1, -1}; REJECT(g, 4, s, 10, "-1 before top_k entries"); }
    { float none[3] = {NI, NI, NI}; int32_t g[2] = {-1, -1}; ACCEPT(g, 2, none, 3, "no visible key"); }
    { float none[3] = {NI, NI, NI}; int32_t g[2] = {0, -1}; REJECT(g, 2, none, 3, "no visible key, entry given"); }
    { int32_t g[2] = {-1, -1}; ACCEPT(g, 2, s, 0, "empty row"); }
    h_end();

    h_begin("wrong sets rejected");
    { int32_t g[4] = {1, 6, 3, 4}; REJECT(g, 4, s, 10, "3.0 instead of 5.0"); }
    { int32_t g[2] = {1, 3}; REJECT(g, 2, s, 10, "7.0 missing"); }
    { int32_t g[4] = {1, 6, 3, 5}; REJECT(g, 4, s, 10, "invisible position"); }
    { int32_t g[4] = {1, 6, 3, 10}; REJECT(g, 4, s, 10, "position past the row"); }
    { int32_t g[4] = {1, 6, 3, -7}; REJECT(g, 4, s, 10, "negative position"); }
    { int32_t g[4] = {1, 6, 3, 3}; REJECT(g, 4, s, 10, "duplicate"); }
    { int32_t g[4] = {1, 1, 6, 3}; REJECT(g, 4, s, 10, "duplicate at the top"); }
    h_end();

    h_begin("wrong order rejected");
    { int32_t g[4] = {6, 1, 3, 2}; REJECT(g, 4, s, 10, "7 before 10"); }
    { int32_t g[4] = {1, 3, 6, 2}; REJECT(g, 4, s, 10, "5.0005 before 7"); }
    { int32_t g[4] = {1, 6, 2, 3}; ACCEPT(g, 4, s, 10, "control: near tie"); }
    { int32_t g[9] = {1, 6, 3, 2, 7, 4, 9, 8, 0}; REJECT(g, 9, s, 10, "0 before 1"); }
    h_end();

    h_begin("band chains: order against every later entry, not only the next");
    {
        /* row max 1, band 1e-4: adjacent steps of 0.6e-4 each stay inside the band but the first and
         * last differ by 1.2e-4 */
        float c[4] = {1.0f, 0.5f, 0.50006f, 0.50012f};
        int32_t good[4] = {0, 3, 2, 1}, chain[4] = {0, 1, 2, 3};
        ACCEPT(good, 4, c, 4, "descending");
        REJECT(chain, 4, c, 4, "ascending chain of near ties");
        int32_t swap[4] = {0, 2, 3, 1};
        ACCEPT(swap, 4, c, 4, "one near-tie swap");
    }
    h_end();

    h_begin("no band (all scores zero): exact ties to the lower position");
    {
        float z[6] = {0, 0, NI, 0, 0, 0};
        int32_t good[3] = {0, 1, 3}, late[3] = {0, 1, 4}, order[3] = {1, 0, 3}, all[6] = {0, 1, 3, 4, 5, -1};
        ACCEPT(good, 3, z, 6, "lowest positions in order");
        REJECT(late, 3, z, 6, "4 taken instead of 3");
        REJECT(order, 3, z, 6, "1 before 0");
        ACCEPT(all, 6, z, 6, "all visible, -1 fill");
    }
    h_end();

    h_begin("negative scores and infinities");
    {
        float n[5] = {-3.0f, -1.0f, -2.0f, NI, -1.00005f};
        int32_t good[3] = {1, 4, 2}, nt[3] = {4, 1, 2}, bad[3] = {1, 2, 4};
        ACCEPT(good, 3, n, 5, "negatives");
        ACCEPT(nt, 3, n, 5, "near tie -1 / -1.00005 swapped (band 3e-4)");
        REJECT(bad, 3, n, 5, "-2 before -1.00005");
    }
    h_end();

    h_begin("large row: random scores, shuffled near-ties only");
    {
        h_rng r = {42};
        const int n = 5000, k = 700;
        float *sc = h_alloc(sizeof(float) * n);
        for (int j = 0; j < n; j++) sc[j] = (j % 17 == 0) ? NI : (float)h_normal(&r);
        /* reference order by a selection sort of the top k (test code, clarity over speed) */
        int32_t *g = h_alloc(sizeof(int32_t) * k);
        unsigned char *used = h_alloc((size_t)n);
        for (int i = 0; i < k; i++) {
            int best = -1;
            for (int j = 0; j < n; j++)
                if (!used[j] && sc[j] != NI && (best < 0 || sc[j] > sc[best])) best = j;
            used[best] = 1;
            g[i] = best;
        }
        ACCEPT(g, k, sc, n, "reference");
        int32_t t = g[100]; g[100] = g[400]; g[400] = t;
        REJECT(g, k, sc, n, "two far entries swapped");
        t = g[100]; g[100] = g[400]; g[400] = t;
        int outside = -1;
        for (int j = 0; j < n; j++)
            if (!used[j] && sc[j] != NI && sc[j] < sc[g[k - 1]] - 0.01f) { outside = j; break; }
        int32_t keep = g[k / 2];
        g[k / 2] = outside;
        REJECT(g, k, sc, n, "an entry replaced by a clearly lower key");
        g[k / 2] = keep;
        ACCEPT(g, k, sc, n, "restored");
        free(sc); free(g); free(used);
    }
    h_end();

    return h_finish();
}
