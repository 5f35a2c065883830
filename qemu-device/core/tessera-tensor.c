/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera tensors: operand checks, row blocks, and loading and storing
 * tensors between a job's memory and dense host buffers, converting
 * element types.  Shared by the MXU, VPU and the other tensor engines.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <stdlib.h>
#include <string.h>

#include "tessera-internal.h"
#include "tessera-numerics.h"

uint32_t tsr_tensor_check(const struct tsr_tensor *t, uint32_t dtypes)
{
    unsigned int esize = tsr_dtype_size(t->dtype);
    uint64_t elems, bytes, last;

    if (t->reserved) {
        return TSR_ERR_RESERVED;
    }
    if (!esize || !(dtypes & TSR_DTYPE_MASK(t->dtype))) {
        return TSR_ERR_BAD_DTYPE;
    }
    if (!t->rows || !t->cols || t->rows > TSR_MAX_DIM ||
        t->cols > TSR_MAX_DIM) {
        return TSR_ERR_BAD_SHAPE;
    }
    if (t->stride < t->cols) {
        return TSR_ERR_BAD_STRIDE;
    }
    if (t->va % esize) {
        return TSR_ERR_BAD_ALIGNMENT;
    }
    /* No row may wrap around the end of the address space. */
    if (!tsr_span(t->rows, t->stride, t->cols, &elems) ||
        !tsr_mul(elems, esize, &bytes) || !tsr_add(t->va, bytes - 1, &last)) {
        return TSR_ERR_BAD_STRIDE;
    }
    return TSR_ERR_NONE;
}

struct tsr_tensor tsr_tensor_block(const struct tsr_tensor *t, uint32_t row,
                                   uint32_t rows, uint32_t col,
                                   uint32_t cols)
{
    struct tsr_tensor b = *t;

    /* Inside a checked tensor: no overflow. */
    b.va += ((uint64_t)row * t->stride + col) * tsr_dtype_size(t->dtype);
    b.rows = rows;
    b.cols = cols;
    return b;
}

uint32_t tsr_block_rows(const struct tsr_tensor *t, uint64_t elems)
{
    uint64_t rows = elems / t->cols;

    rows = rows < t->rows ? rows : t->rows;
    return rows ? rows : 1;
}

bool tsr_tensor_is_zero(const struct tsr_tensor *t)
{
    static const struct tsr_tensor zero;

    return memcmp(t, &zero, sizeof(zero)) == 0;
}

/* Move a tensor between device memory and a dense host copy. */
static int tensor_rows(TsrMem *mem, const struct tsr_tensor *t, void *dense,
                       bool write)
{
    unsigned int esize = tsr_dtype_size(t->dtype);
    uint64_t row_bytes = (uint64_t)t->cols * esize;
    uint64_t pitch = (uint64_t)t->stride * esize;
    uint8_t *p = dense;
    uint32_t r;

    if (t->stride == t->cols) {
        uint64_t len = row_bytes * t->rows;

        return write ? tsr_mem_write(mem, t->va, p, len)
                     : tsr_mem_read(mem, t->va, p, len);
    }
    for (r = 0; r < t->rows; r++, p += row_bytes) {
        int ret = write ? tsr_mem_write(mem, t->va + r * pitch, p, row_bytes)
                        : tsr_mem_read(mem, t->va + r * pitch, p, row_bytes);
        if (ret) {
            return ret;
        }
    }
    return 0;
}

int tsr_tensor_load_raw(TsrMem *mem, const struct tsr_tensor *t, void *dense)
{
    return tensor_rows(mem, t, dense, false);
}

int tsr_tensor_store_raw(TsrMem *mem, const struct tsr_tensor *t,
                         const void *dense)
{
    return tensor_rows(mem, t, (void *)dense, true);
}

void tsr_convert_to_f32(uint32_t dtype, const void *src, float *dst,
                        size_t n)
{
    size_t i;

    switch (dtype) {
    case TSR_DTYPE_F32:
        memmove(dst, src, n * sizeof(float));
        break;
    case TSR_DTYPE_BF16:
        for (i = 0; i < n; i++) {
            dst[i] = tsr_bf16_to_f32(((const uint16_t *)src)[i]);
        }
        break;
    case TSR_DTYPE_I32:
        for (i = 0; i < n; i++) {
            dst[i] = (float)((const int32_t *)src)[i];
        }
        break;
    case TSR_DTYPE_I8:
        for (i = 0; i < n; i++) {
            dst[i] = (float)((const int8_t *)src)[i];
        }
        break;
    }
}

void tsr_convert_from_f32(uint32_t dtype, const float *src, void *dst,
                          size_t n)
{
    size_t i;

    switch (dtype) {
    case TSR_DTYPE_F32:
        memmove(dst, src, n * sizeof(float));
        break;
    case TSR_DTYPE_BF16:
        for (i = 0; i < n; i++) {
            ((uint16_t *)dst)[i] = tsr_f32_to_bf16(src[i]);
        }
        break;
    case TSR_DTYPE_I32:
        for (i = 0; i < n; i++) {
            ((int32_t *)dst)[i] = tsr_f32_to_i32(src[i]);
        }
        break;
    }
}

int tsr_tensor_load_f32(TsrMem *mem, const struct tsr_tensor *t, float *dst)
{
    size_t n = (size_t)t->rows * t->cols;

    if (t->dtype == TSR_DTYPE_F32) {
        return tsr_tensor_load_raw(mem, t, dst);
    }
    /* Narrower types load into the tail of @dst, then widen in place. */
    {
        unsigned int esize = tsr_dtype_size(t->dtype);
        uint8_t *tail = (uint8_t *)dst + n * (sizeof(float) - esize);

        if (tsr_tensor_load_raw(mem, t, tail)) {
            return -1;
        }
        tsr_convert_to_f32(t->dtype, tail, dst, n);
    }
    return 0;
}

int tsr_tensor_store_f32(TsrMem *mem, const struct tsr_tensor *t,
                         const float *src)
{
    size_t n = (size_t)t->rows * t->cols;
    void *buf;
    int ret;

    if (t->dtype == TSR_DTYPE_F32) {
        return tsr_tensor_store_raw(mem, t, src);
    }
    buf = malloc(n * tsr_dtype_size(t->dtype));
    if (!buf) {
        mem->error = mem->error ? mem->error : TSR_ERR_TOO_LARGE;
        return -1;
    }
    tsr_convert_from_f32(t->dtype, src, buf, n);
    ret = tsr_tensor_store_raw(mem, t, buf);
    free(buf);
    return ret;
}
