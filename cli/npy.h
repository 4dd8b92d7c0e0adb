/* The one tensor loader: NumPy .npy files (format 1.0, 2.0 and 3.0), C order, little-endian,
 * four element types (golden README section 1): '<u2' (bf16 bit patterns), '|u1' (bytes: e4m3
 * codes, cache pages), '<f4', '<i4'. Up to MLA_NPY_MAX_DIMS dimensions. Anything else is refused
 * with a message naming the file and what is wrong with it. */
#ifndef MLA_NPY_H
#define MLA_NPY_H

#include <stddef.h>
#include <stdint.h>

#define MLA_NPY_MAX_DIMS 4

typedef enum mla_npy_dtype {
    MLA_NPY_U1 = 1, /* '|u1' */
    MLA_NPY_U2 = 2, /* '<u2' (bf16 bits) */
    MLA_NPY_I4 = 3, /* '<i4' */
    MLA_NPY_F4 = 4  /* '<f4' */
} mla_npy_dtype;

typedef struct mla_npy {
    mla_npy_dtype dtype;
    int ndim;                          /* 0..MLA_NPY_MAX_DIMS (0: a scalar, one element) */
    int64_t shape[MLA_NPY_MAX_DIMS];
    int64_t count;                     /* elements: the product of shape */
    size_t nbytes;                     /* count * element size */
    void *data;                        /* owned (malloc); at least 1 byte even when count = 0 */
} mla_npy;

size_t mla_npy_dtype_size(mla_npy_dtype t);   /* 1, 2, 4, 4; 0 for an unknown type */
const char *mla_npy_descr(mla_npy_dtype t);   /* "|u1", "<u2", "<i4", "<f4"; "?" when unknown */

/* Allocates a tensor of the given type and shape, zero-filled. 0 on success, -1 (out of memory
 * or a bad shape) with a message in err. */
int mla_npy_alloc(mla_npy *t, mla_npy_dtype dtype, int ndim, const int64_t *shape, char *err, size_t err_n);
void mla_npy_free(mla_npy *t);                 /* frees data and zeroes t; NULL-safe */

/* Parses a whole .npy file held in memory (buf, n bytes). 0 on success (t owns a copy of the
 * data), -1 with a message in err. */
int mla_npy_parse(const void *buf, size_t n, mla_npy *t, char *err, size_t err_n);
/* Reads a .npy file. 0 on success, -1 with "path: reason" in err. */
int mla_npy_read(const char *path, mla_npy *t, char *err, size_t err_n);
/* Writes t as a version 1.0 file (header padded to 64 bytes, as NumPy does). 0 or -1 with err. */
int mla_npy_write(const char *path, const mla_npy *t, char *err, size_t err_n);

/* "[4, 1, 576] <u2" into buf. */
void mla_npy_shape_str(const mla_npy *t, char *buf, size_t n);
/* Flat index -> "[i, j, k]" under t's shape. */
void mla_npy_coord_str(const mla_npy *t, int64_t flat, char *buf, size_t n);

#endif
