/* Internal: the Hopper (sm_90a) wgmma kernel of mla_decode for the MLA_KV_BF16, MLA_KV_FP8 and
 * MLA_KV_FP8_ROPE_AWARE latent caches (src/cuda/decode_hopper.cu). Plain C with mla.h types only, so that C tests can include it.
 * The dispatcher in decode.cu calls mla_cuda_decode_hopper_supported() first and takes this
 * kernel when it returns 1. Host-visible arguments are assumed validated (src/core/decode.c). */
#ifndef MLA_CUDA_DECODE_HOPPER_H
#define MLA_CUDA_DECODE_HOPPER_H

#include <stddef.h>

#include "mla.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if this kernel handles the call; else 0 with the missing feature named in why (e.g.
 * "format MLA_IDX_FP8", "device SM 8.0 (needs SM 9.0)", "q not 16-byte aligned"). */
int mla_cuda_decode_hopper_supported(const mla_ctx *ctx, const mla_decode_args *a, char *why, size_t why_n);
/* Scratch bytes for the automatic split count (0 when the call runs unsplit). Reads only
 * num_tokens, num_heads and batch.num_requests (and the context's SM count). */
size_t mla_cuda_decode_hopper_workspace(const mla_ctx *ctx, const mla_decode_args *a);
/* Launches on mla_cuda_stream(ctx); allocates nothing. MLA_ERR_INVALID_ARG naming
 * workspace_bytes when the workspace is too small; MLA_ERR_UNSUPPORTED when !supported. */
mla_status mla_cuda_decode_hopper(mla_ctx *ctx, const mla_decode_args *a);

/* ---- testing hooks (tests/test_cuda_decode_hopper.c) ---- */
/* The split count the automatic plan picks for these shapes (1 = unsplit). */
int mla_cuda_decode_hopper_splits(const mla_ctx *ctx, const mla_decode_args *a);
/* As above with a forced split count (0 = automatic; 1..MLA_HD_MAX_SPLITS). */
#define MLA_HD_MAX_SPLITS 128
size_t mla_cuda_decode_hopper_workspace_ex(const mla_ctx *ctx, const mla_decode_args *a, int num_splits);
mla_status mla_cuda_decode_hopper_ex(mla_ctx *ctx, const mla_decode_args *a, int num_splits);
/* Query rows a CTA of the raw-tile kernels (decode_narrow.cu) that would take the call: 16 (at most 16
 * rows a request on average), 32 (at most 32) or 64 (more; both MLA_PRECISION_BF16_P only), else 0
 * for decode_hopper.cu's 64-row kernels (also where not MLA_KV_FP8; MLA_HD_NARROW=0 / 2 / 3 / 4
 * force those / 16 / 32 / 64 rows). */
int mla_cuda_decode_hopper_narrow(const mla_decode_args *a);
/* Overrides MLA_HD_NARROW for the calls that follow (0 / 1 / 2 / 3 / 4 as above; -1: back to the variable). */
void mla_cuda_decode_hopper_force_rows(int mode);
/* Overrides MLA_HS_ONE for the calls that follow: the 64-row raw-tile kernel's one-chain program (with
 * its scan of the scales) 0 never, 1 where the launch is long enough, 2 always; -1: back to the variable. */
void mla_cuda_decode_hopper_force_one(int mode);
/* 1: the 64-row raw-tile kernel's fast softmax flags every tile that has a score, so each takes the slow
 * way again (v68's redo, for the tests); -1 (or 0): only where a score passes the running max by 2^15. */
void mla_cuda_decode_hopper_force_redo(int mode);
/* Overrides MLA_HD_FUSE for the calls that follow: the uniform split's combine inside the decode grid
 * (cooperative launch, H % 64 == 0) 0 never, 1 wherever the grid fits, 2 (the default) where it also
 * has at least 64 splits; -1: back to the variable. */
void mla_cuda_decode_hopper_force_fuse(int mode);
/* The last call's plan mode under the balanced schedule (0 uniform layout, 1 parts with cuts and a
 * combine, 2 lanes; read from its workspace, which must still be allocated; synchronizes), -1 when it
 * ran without the schedule. */
int mla_cuda_decode_hopper_last_mode(void);
/* 1 when the last call (in this process) ran hd_fused_combine (for the tests). */
int mla_cuda_decode_hopper_last_fused(void);
/* Overrides MLA_HD_CUTMERGE for the calls that follow: the balanced schedule's cut row blocks merged
 * inside the decode grid (1, the default) or by the combine grid (0); -1: back to the variable. */
void mla_cuda_decode_hopper_force_cutmerge(int mode);
/* 1 when the last call ran the balanced schedule with its cut blocks merged inside the grid. */
int mla_cuda_decode_hopper_last_cutmerge(void);
/* Overrides MLA_HD_F8G for the calls that follow: the FP8 kernel's group tiles (16-row TMA boxes at pages
 * that are not multiples of 16) 0 never (cp.async), 1 (the default) where at least 3/4 of the tiles'
 * rows hold keys, 2 at every such page; -1: back to the variable. */
void mla_cuda_decode_hopper_force_f8g(int mode);
/* The last call's groups a page on group tiles (ceil(page_size / 16)), 0 when it ran without them. */
int mla_cuda_decode_hopper_last_f8g(void);
/* Overrides MLA_HD_GATHER for the calls that follow: tiles gathered row by row with cp.async by all four
 * producer warps (the _r kernels: BF16 hd_producer_rows, FP8-656 raw tiles hn_issue_rows) 0 never (session
 * 43's paths: TMA runs of rows, page-aligned tiles, under 16 keys the cp.async warp pairs; the raw tiles' bulk
 * copies a page piece), 1 (the default) at every BF16 page that is not a multiple of 16 but the page-aligned
 * tiles of pages 63, 127, ..., and on the raw-tile kernels at pages under HN_GATHER_BELOW(rows) keys, 2 at every
 * page size of both; -1: back to the variable. */
void mla_cuda_decode_hopper_force_gather(int mode);
/* 1 when the last call ran the _r kernels. */
int mla_cuda_decode_hopper_last_gather(void);
/* Stage test: runs one CTA (request 0, row block 0, first key tile only) and writes to the
 * device buffer dbg (f32, 64*64 + 64*512 values):
 *   dbg[r*64 + j]          = raw S = q_r . k_j over 576 dims (tensor cores, before scale/mask);
 *                            unspecified for keys j >= seq_len (masked later)
 *   dbg[4096 + r*512 + c]  = raw O after one P.V with P forced to the identity (P[r][j] = r==j),
 *                            i.e. the cache row of key r, column c (0 for keys past seq_len).
 * Row r of the block is (token r / H, head r % H) of request 0. Nothing else is written. */
mla_status mla_cuda_decode_hopper_stage(mla_ctx *ctx, const mla_decode_args *a, float *dbg);
/* Timeline of one CTA of the last launches ("role event tile clock" lines) into path; -1 unless
 * decode_hopper.cu was built with -DHD_TRACE (a profiling aid, off in normal builds). */
int mla_cuda_decode_hopper_trace_dump(const char *path);

#ifdef __cplusplus
}
#endif
#endif
