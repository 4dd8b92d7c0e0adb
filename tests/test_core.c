/* Core: conversions (SPEC 1), scale rule (SPEC 3), context, status texts. */
#include "harness.h"
#include "core/numeric.h"

int main(void) {
    h_begin("bf16 round to nearest even, NaN kept");
    EXPECT(mla_f32_to_bf16(1.0f) == 0x3f80, "1.0");
    EXPECT(mla_f32_to_bf16(mla_bits_to_f32(0x3f808000u)) == 0x3f80, "tie to even (down)");
    EXPECT(mla_f32_to_bf16(mla_bits_to_f32(0x3f818000u)) == 0x3f82, "tie to even (up)");
    EXPECT(mla_f32_to_bf16(mla_bits_to_f32(0x3f808001u)) == 0x3f81, "above tie");
    EXPECT((mla_f32_to_bf16(NAN) & 0x7fff) > 0x7f80, "NaN stays NaN");
    EXPECT(mla_f32_to_bf16(INFINITY) == 0x7f80, "inf");
    EXPECT(mla_f32_to_bf16(mla_bits_to_f32(0x7f7fffffu)) == 0x7f80, "max float rounds to inf");
    h_end();

    h_begin("e4m3 decode: all 256 codes");
    int bad = 0;
    for (int c = 0; c < 256; c++) {
        float v = mla_e4m3_to_f32((uint8_t)c);
        int e = (c >> 3) & 15, m = c & 7;
        double want = e == 0 ? m * ldexp(1, -9) : (1 + m / 8.0) * ldexp(1, e - 7);
        if (c & 0x80) want = -want;
        if (e == 15 && m == 7) { if (!isnan(v)) bad++; }
        else if (v != (float)want) bad++;
    }
    EXPECT(bad == 0, "%d codes decode wrong", bad);
    EXPECT(mla_e4m3_to_f32(0x7e) == 448.0f, "max finite 448");
    h_end();

    h_begin("e4m3 encode: round trip, ties to even, saturation, NaN");
    bad = 0;
    for (int c = 0; c < 256; c++) {
        if ((c & 0x7f) == 0x7f) continue;
        float v = mla_e4m3_to_f32((uint8_t)c);
        uint8_t back = mla_f32_to_e4m3(v);
        if (back != c && !(v == 0 && (back & 0x7f) == 0)) bad++;
    }
    EXPECT(bad == 0, "%d codes do not round-trip", bad);
    /* midpoints between neighbours round to the even code, brute force against double search */
    for (int c = 0; c < 0x7e; c++) {
        float lo = mla_e4m3_to_f32((uint8_t)c), hi = mla_e4m3_to_f32((uint8_t)(c + 1));
        float mid = (lo + hi) / 2;  /* exact in f32 */
        uint8_t got = mla_f32_to_e4m3(mid), want = (c & 1) ? (uint8_t)(c + 1) : (uint8_t)c;
        if (got != want) { bad++; if (bad < 3) EXPECT(0, "mid of %02x/%02x gave %02x", c, c + 1, got); }
    }
    EXPECT(mla_f32_to_e4m3(1000.0f) == 0x7e, "saturate +");
    EXPECT(mla_f32_to_e4m3(-1e30f) == 0xfe, "saturate -");
    EXPECT(mla_f32_to_e4m3(INFINITY) == 0x7e, "inf saturates");
    EXPECT(mla_f32_to_e4m3(460.0f) == 0x7e, "460 saturates");
    EXPECT((mla_f32_to_e4m3(NAN) & 0x7f) == 0x7f, "NaN");
    EXPECT(mla_f32_to_e4m3(ldexpf(1, -10)) == 0x00, "2^-10 ties to 0");
    EXPECT(mla_f32_to_e4m3(ldexpf(3, -10)) == 0x02, "3*2^-10 ties to 2*2^-9");
    h_end();

    h_begin("power-of-two scale rule");
    EXPECT(pow2_scale_ref(448.0f) == 1.0f, "448 -> 1");
    EXPECT(pow2_scale_ref(449.0f) == 2.0f, "449 -> 2");
    EXPECT(pow2_scale_ref(0.0f) == ldexpf(1, -13), "0 -> 2^-13 (1e-4 clamp)");
    EXPECT(pow2_scale_ref(224.0f) == 0.5f, "224 -> 0.5");
    EXPECT(pow2_scale_ref(1e4f) == 32.0f, "1e4 -> 32");
    h_end();

    h_begin("context, status and format names");
    mla_ctx *ctx = h_cpu_ctx();
    EXPECT(mla_ctx_backend(ctx) == MLA_BACKEND_CPU, "backend");
    EXPECT(strcmp(mla_status_str(MLA_ERR_INVALID_ARG), "invalid argument") == 0, "status text");
    EXPECT(strcmp(mla_format_name(MLA_KV_FP8), "MLA_KV_FP8") == 0, "format name");
    EXPECT(mla_cache_page_bytes(MLA_KV_FP8, 64, 0) == 64 * 656, "fp8 page bytes");
    EXPECT(mla_cache_page_bytes(MLA_IDX_FP8, 64, 128) == 64 * 132, "idx page bytes");
    EXPECT(mla_version_number() == MLA_VERSION_NUMBER, "version");
    mla_ctx_params p = mla_ctx_params_default();
    p.backend = MLA_BACKEND_CUDA;
    mla_ctx *cu = NULL;
    mla_status rc = mla_ctx_create(&p, &cu);
    if (!mla_has_backend(MLA_BACKEND_CUDA) || mla_cuda_device_count() == 0)
        EXPECT(rc == MLA_ERR_NO_DEVICE && cu == NULL, "CUDA context without a GPU must be refused");
    mla_ctx_destroy(cu);
    mla_ctx_destroy(NULL);
    mla_ctx_destroy(ctx);
    h_end();
    return h_finish();
}
