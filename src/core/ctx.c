/* The context, status texts, memory helpers and the public scalar conversions. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "numeric.h"
#include "paged.h"

#define STR_(x) #x
#define STR(x) STR_(x)

int mla_version_number(void) { return MLA_VERSION_NUMBER; }
const char *mla_version_string(void) {
    return STR(MLA_VERSION_MAJOR) "." STR(MLA_VERSION_MINOR) "." STR(MLA_VERSION_PATCH);
}

const char *mla_status_str(mla_status s) {
    switch (s) {
    case MLA_OK: return "ok";
    case MLA_ERR_INVALID_ARG: return "invalid argument";
    case MLA_ERR_UNSUPPORTED: return "unsupported";
    case MLA_ERR_NO_DEVICE: return "no device";
    case MLA_ERR_DEVICE: return "device error";
    case MLA_ERR_OUT_OF_MEMORY: return "out of memory";
    case MLA_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *mla_format_name(mla_format f) {
    switch (f) {
    case MLA_KV_BF16: return "MLA_KV_BF16";
    case MLA_KV_FP8: return "MLA_KV_FP8";
    case MLA_KV_FP8_ROPE_AWARE: return "MLA_KV_FP8_ROPE_AWARE";
    case MLA_IDX_FP8: return "MLA_IDX_FP8";
    }
    return "?";
}

const char *mla_backend_name(mla_backend b) {
    switch (b) {
    case MLA_BACKEND_AUTO: return "auto";
    case MLA_BACKEND_CPU: return "cpu";
    case MLA_BACKEND_CUDA: return "cuda";
    }
    return "?";
}

int mla_has_backend(mla_backend b) {
    if (b == MLA_BACKEND_CPU || b == MLA_BACKEND_AUTO) return 1;
#ifdef MLA_HAVE_CUDA
    if (b == MLA_BACKEND_CUDA) return 1;
#endif
    return 0;
}

int mla_cuda_device_count(void) {
#ifdef MLA_HAVE_CUDA
    return mla_cuda_device_count_impl();
#else
    return 0;
#endif
}

size_t mla_cache_row_bytes(mla_format format, int dim) {
    switch (format) {
    case MLA_KV_BF16: return MLA_ROW_BF16;
    case MLA_KV_FP8: return MLA_ROW_FP8;
    case MLA_KV_FP8_ROPE_AWARE: return MLA_ROW_FP8_ROPE_AWARE;
    case MLA_IDX_FP8: return dim > 0 ? (size_t)dim : 0;
    }
    return 0;
}

size_t mla_cache_page_bytes(mla_format format, int page_size, int dim) {
    if (page_size <= 0) return 0;
    if (format == MLA_IDX_FP8) return dim > 0 ? (size_t)page_size * (size_t)(dim + 4) : 0;
    return (size_t)page_size * mla_cache_row_bytes(format, dim);
}

mla_ctx_params mla_ctx_params_default(void) {
    mla_ctx_params p;
    memset(&p, 0, sizeof p);
    p.backend = MLA_BACKEND_AUTO;
    return p;
}

mla_status mla_ctx_create(const mla_ctx_params *params, mla_ctx **out) {
    if (!out) return MLA_ERR_INVALID_ARG;
    *out = NULL;
    mla_ctx_params p = params ? *params : mla_ctx_params_default();
    if (p.num_threads < 0) return MLA_ERR_INVALID_ARG;
    mla_ctx *c = (mla_ctx *)calloc(1, sizeof *c);
    if (!c) return MLA_ERR_OUT_OF_MEMORY;
    c->num_threads = p.num_threads;
    c->device = p.device;
    c->stream = p.stream;
    mla_backend want = p.backend;
    if (want == MLA_BACKEND_AUTO) want = mla_cuda_device_count() > 0 ? MLA_BACKEND_CUDA : MLA_BACKEND_CPU;
    if (want == MLA_BACKEND_CUDA) {
#ifdef MLA_HAVE_CUDA
        c->backend = MLA_BACKEND_CUDA;
        c->ops = &mla_cuda_ops;
        mla_status rc = mla_cuda_ctx_init(c);
        if (rc != MLA_OK) { free(c); return rc; }
#else
        free(c);
        return MLA_ERR_NO_DEVICE;
#endif
    } else if (want == MLA_BACKEND_CPU) {
        c->backend = MLA_BACKEND_CPU;
        c->ops = &mla_cpu_ops;
        snprintf(c->device_name, sizeof c->device_name, "cpu");
    } else {
        free(c);
        return MLA_ERR_INVALID_ARG;
    }
    *out = c;
    return MLA_OK;
}

void mla_ctx_destroy(mla_ctx *ctx) { free(ctx); }
mla_backend mla_ctx_backend(const mla_ctx *ctx) { return ctx ? ctx->backend : MLA_BACKEND_CPU; }
const char *mla_ctx_last_error(const mla_ctx *ctx) { return ctx ? ctx->msg : "no context"; }

void mla_ctx_describe(const mla_ctx *ctx, char *buf, size_t n) {
    if (!buf || !n) return;
    if (!ctx) { snprintf(buf, n, "no context"); return; }
    if (ctx->backend == MLA_BACKEND_CUDA)
        snprintf(buf, n, "backend cuda: device %d %s, SM %d.%d, %d SMs", ctx->device, ctx->device_name,
                 ctx->sm_major, ctx->sm_minor, ctx->sm_count);
    else
        snprintf(buf, n, "backend cpu: %d threads requested (0 = all cores)", ctx->num_threads);
}

void mla_core_clear_error(mla_ctx *ctx) { if (ctx) ctx->msg[0] = 0; }

mla_status mla_core_fail(mla_ctx *ctx, mla_status rc, const char *fmt, ...) {
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->msg, sizeof ctx->msg, fmt, ap);
        va_end(ap);
    }
    return rc;
}

mla_status mla_core_refuse(mla_ctx *ctx, const char *op) {
    return mla_core_fail(ctx, MLA_ERR_UNSUPPORTED, "%s: not implemented by the %s backend", op,
                         ctx->ops->name);
}

void mla_core_assert_fail(const char *cond, const char *file, int line) {
    fprintf(stderr, "libmla internal error: %s at %s:%d\n", cond, file, line);
    abort();
}

/* ---- memory ---- */
#define NEED_CTX(ctx) do { if (!(ctx)) return MLA_ERR_INVALID_ARG; mla_core_clear_error(ctx); } while (0)

mla_status mla_malloc(mla_ctx *ctx, size_t bytes, void **ptr) {
    NEED_CTX(ctx);
    if (!ptr) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "malloc: ptr is NULL");
    *ptr = NULL;
    if (bytes == 0) return MLA_OK;
    return ctx->ops->malloc_(ctx, bytes, ptr);
}
void mla_free(mla_ctx *ctx, void *ptr) { if (ctx && ptr) ctx->ops->free_(ctx, ptr); }
mla_status mla_memcpy_to_backend(mla_ctx *ctx, void *dst, const void *src, size_t bytes) {
    NEED_CTX(ctx);
    if (!bytes) return MLA_OK;
    if (!dst || !src) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "memcpy_to_backend: NULL pointer");
    return ctx->ops->to_backend(ctx, dst, src, bytes);
}
mla_status mla_memcpy_to_host(mla_ctx *ctx, void *dst, const void *src, size_t bytes) {
    NEED_CTX(ctx);
    if (!bytes) return MLA_OK;
    if (!dst || !src) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "memcpy_to_host: NULL pointer");
    return ctx->ops->to_host(ctx, dst, src, bytes);
}
mla_status mla_memset(mla_ctx *ctx, void *dst, int value, size_t bytes) {
    NEED_CTX(ctx);
    if (!bytes) return MLA_OK;
    if (!dst) return mla_core_fail(ctx, MLA_ERR_INVALID_ARG, "memset: dst is NULL");
    return ctx->ops->memset_(ctx, dst, value, bytes);
}
mla_status mla_synchronize(mla_ctx *ctx) {
    NEED_CTX(ctx);
    return ctx->ops->synchronize(ctx);
}

/* ---- public scalar conversions ---- */
float mla_bf16_to_f32(uint16_t x) { return bf16_to_f32_ref(x); }
uint16_t mla_f32_to_bf16(float x) { return f32_to_bf16_ref(x); }
float mla_e4m3_to_f32(uint8_t x) { return e4m3_to_f32_ref(x); }
uint8_t mla_f32_to_e4m3(float x) { return f32_to_e4m3_ref(x); }
