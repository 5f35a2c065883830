// SPDX-License-Identifier: MIT
/*
 * The command-buffer builder: encodes the chip's commands, checking each
 * as the chip would (qemu-device/core/tessera-cmd.c and friends, in the
 * same order) so that a mistake is a named error here rather than a
 * failed job, and records the buffers the commands use.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#include <accel/accel.h>

#include "internal.h"

#define DTYPE_BIT(d)		(1u << (d))
#define FLOAT_DTYPES		(DTYPE_BIT(TSR_DTYPE_F32) | DTYPE_BIT(TSR_DTYPE_BF16))
#define ALL_DTYPES		(FLOAT_DTYPES | DTYPE_BIT(TSR_DTYPE_I32) | \
				 DTYPE_BIT(TSR_DTYPE_I8))

/* Operands (addresses) of one command at most. */
#define MAX_OPERANDS		8
#define MIN_CAPACITY		512
#define MIN_BO_SIZE		4096
#define MESSAGE_LEN		256

struct buffer_use {
	struct accel_buffer *buf;
	uint32_t use;			/* ACCEL_USE_* */
};

struct accel_cmdbuf {
	struct accel_device *dev;
	uint8_t *data;
	size_t len, cap;
	uint32_t count;
	struct buffer_use *uses;	/* each buffer once, holding a reference */
	unsigned int nuses, uses_cap;
	/*
	 * The device copy of the commands: a piece of the device's command
	 * arena (@in_arena), or else @bo, with the jobs that may read it.
	 */
	bool in_arena;
	uint64_t piece;
	uint32_t piece_handle;
	uint64_t piece_offset;
	struct accel_buffer *bo;
	bool bo_current;		/* the copy holds exactly data[0, len) */
	uint64_t bo_jobs[ACCEL_CMD_COPY_JOBS];
	unsigned int bo_njobs;
	bool bo_untracked;		/* more jobs than bo_jobs holds */
	char message[MESSAGE_LEN];
};

/* A command being checked: its name and the buffers it will record. */
struct stage {
	struct accel_cmdbuf *cb;
	const char *cmd;
	unsigned int n;
	struct buffer_use uses[MAX_OPERANDS];
};

int accel_cmdbuf_fail(struct accel_cmdbuf *cb, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cb->message, sizeof(cb->message), fmt, ap);
	va_end(ap);
	return err;
}

int accel_cmdbuf_create(struct accel_device *dev, struct accel_cmdbuf **cb)
{
	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	*cb = calloc(1, sizeof(**cb));
	if (!*cb)
		return ACCEL_ERR_NO_MEMORY;
	(*cb)->dev = dev;
	return ACCEL_OK;
}

/* Whether a job among @jobs may still read the copy they ran from. */
static bool jobs_pending(struct accel_device *dev, const uint64_t *jobs,
			 unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (accel_job_may_be_pending(dev, jobs[i]))
			return true;
	return false;
}

/*
 * @cb gives up its device copy: to the device's pool, for a later upload
 * once its jobs are done; or freed, when the pool is full or the jobs are
 * too many to remember (jobs keep a copy alive as long as they need it).
 */
static void retire_copy(struct accel_cmdbuf *cb)
{
	struct accel_device *dev = cb->dev;
	struct accel_cmd_copy *c;

	if (!cb->bo)
		return;
	pthread_mutex_lock(&dev->cmd_pool_lock);
	if (!cb->bo_untracked && dev->cmd_pooled < ACCEL_CMD_POOL) {
		c = &dev->cmd_pool[dev->cmd_pooled++];
		c->bo = cb->bo;
		memcpy(c->jobs, cb->bo_jobs, sizeof(c->jobs));
		c->njobs = cb->bo_njobs;
		cb->bo = NULL;
	}
	pthread_mutex_unlock(&dev->cmd_pool_lock);
	accel_buffer_destroy(cb->bo);
	cb->bo = NULL;
}

/* A pooled copy of at least @len bytes that no job reads now, or NULL. */
static struct accel_buffer *reuse_copy(struct accel_device *dev, size_t len)
{
	struct accel_buffer *bo = NULL;
	unsigned int i;

	pthread_mutex_lock(&dev->cmd_pool_lock);
	for (i = 0; i < dev->cmd_pooled && !bo; i++) {
		struct accel_cmd_copy *c = &dev->cmd_pool[i];

		if (c->bo->size < len || jobs_pending(dev, c->jobs, c->njobs))
			continue;
		bo = c->bo;
		*c = dev->cmd_pool[--dev->cmd_pooled];
	}
	pthread_mutex_unlock(&dev->cmd_pool_lock);
	return bo;
}

void accel_cmd_pool_drain(struct accel_device *dev)
{
	pthread_mutex_lock(&dev->cmd_pool_lock);
	while (dev->cmd_pooled)
		accel_buffer_destroy(dev->cmd_pool[--dev->cmd_pooled].bo);
	pthread_mutex_unlock(&dev->cmd_pool_lock);
}

/* @cb gives its arena piece back: no job of its will take it again. */
static void drop_piece(struct accel_cmdbuf *cb)
{
	if (cb->in_arena)
		accel_arena_release(cb->dev, cb->piece);
	cb->in_arena = false;
}

static void release_uses(struct accel_cmdbuf *cb)
{
	unsigned int i;

	for (i = 0; i < cb->nuses; i++)
		accel_buffer_destroy(cb->uses[i].buf);
	cb->nuses = 0;
}

void accel_cmdbuf_destroy(struct accel_cmdbuf *cb)
{
	if (!cb)
		return;
	release_uses(cb);
	drop_piece(cb);
	retire_copy(cb);
	free(cb->uses);
	free(cb->data);
	free(cb);
}

int accel_cmdbuf_reset(struct accel_cmdbuf *cb)
{
	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	release_uses(cb);
	drop_piece(cb);
	cb->len = 0;
	cb->count = 0;
	cb->bo_current = false;
	cb->message[0] = '\0';
	return ACCEL_OK;
}

uint32_t accel_cmdbuf_count(const struct accel_cmdbuf *cb)
{
	return cb ? cb->count : 0;
}

int accel_cmdbuf_data(const struct accel_cmdbuf *cb, const void **data,
		      size_t *size)
{
	if (!cb || !data || !size)
		return ACCEL_ERR_INVALID_ARGUMENT;
	*data = cb->data;
	*size = cb->len;
	return ACCEL_OK;
}

const char *accel_cmdbuf_last_error(const struct accel_cmdbuf *cb)
{
	return cb ? cb->message : "";
}

void accel_cmdbuf_mark(const struct accel_cmdbuf *cb,
		       struct accel_cmdbuf_mark *mark)
{
	mark->len = cb->len;
	mark->count = cb->count;
	mark->nuses = cb->nuses;
}

void accel_cmdbuf_rollback(struct accel_cmdbuf *cb,
			   const struct accel_cmdbuf_mark *mark)
{
	while (cb->nuses > mark->nuses)
		accel_buffer_destroy(cb->uses[--cb->nuses].buf);
	if (cb->len != mark->len)
		cb->bo_current = false;
	cb->len = mark->len;
	cb->count = mark->count;
}

struct accel_device *accel_cmdbuf_device(const struct accel_cmdbuf *cb)
{
	return cb->dev;
}

unsigned int accel_cmdbuf_buffer_count(const struct accel_cmdbuf *cb)
{
	return cb->nuses;
}

void accel_cmdbuf_buffer_at(const struct accel_cmdbuf *cb, unsigned int i,
			    uint32_t *handle, uint32_t *use)
{
	*handle = cb->uses[i].buf->handle;
	*use = cb->uses[i].use;
}

/* ------------------------------------------------------- recording */

static struct buffer_use *find_use(struct accel_cmdbuf *cb,
				   const struct accel_buffer *buf)
{
	unsigned int i;

	for (i = 0; i < cb->nuses; i++)
		if (cb->uses[i].buf == buf)
			return &cb->uses[i];
	return NULL;
}

/* Make room for the stage's buffers and @size more bytes of commands. */
static int reserve(struct stage *st, size_t size)
{
	struct accel_cmdbuf *cb = st->cb;
	unsigned int i, fresh = 0;

	for (i = 0; i < st->n; i++) {
		unsigned int j = 0;

		while (j < i && st->uses[j].buf != st->uses[i].buf)
			j++;
		fresh += j == i && !find_use(cb, st->uses[i].buf);
	}
	if (cb->nuses + fresh > DRM_TESSERA_MAX_BOS)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_TOO_LARGE,
					 "%s: a job may use at most %u buffers",
					 st->cmd, DRM_TESSERA_MAX_BOS);
	if (cb->nuses + fresh > cb->uses_cap) {
		unsigned int cap = cb->uses_cap ? cb->uses_cap * 2 : 8;
		struct buffer_use *uses;

		while (cap < cb->nuses + fresh)
			cap *= 2;
		uses = realloc(cb->uses, cap * sizeof(*uses));
		if (!uses)
			return ACCEL_ERR_NO_MEMORY;
		cb->uses = uses;
		cb->uses_cap = cap;
	}
	if (cb->len + size > DRM_TESSERA_MAX_CMDBUF_SIZE)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_TOO_LARGE,
					 "%s: the command buffer is full (%u bytes at most)",
					 st->cmd, DRM_TESSERA_MAX_CMDBUF_SIZE);
	if (cb->len + size > cb->cap) {
		size_t cap = cb->cap ? cb->cap * 2 : MIN_CAPACITY;
		uint8_t *data;

		while (cap < cb->len + size)
			cap *= 2;
		data = realloc(cb->data, cap);
		if (!data)
			return ACCEL_ERR_NO_MEMORY;
		cb->data = data;
		cb->cap = cap;
	}
	return ACCEL_OK;
}

/* Record the stage's buffers; reserve() made room. */
static void record(struct stage *st)
{
	struct accel_cmdbuf *cb = st->cb;
	unsigned int i;

	for (i = 0; i < st->n; i++) {
		struct buffer_use *u = find_use(cb, st->uses[i].buf);

		if (u) {
			u->use |= st->uses[i].use;
			continue;
		}
		accel_buffer_ref(st->uses[i].buf);
		cb->uses[cb->nuses++] = st->uses[i];
	}
}

/* Append a checked command of @size bytes, its header filled in here. */
static int commit(struct stage *st, void *cmd, size_t size, uint8_t opcode,
		  uint16_t flags)
{
	struct accel_cmdbuf *cb = st->cb;
	struct tsr_cmd_header *hdr = cmd;
	int ret = reserve(st, size);

	if (ret)
		return ret;
	record(st);
	hdr->opcode = opcode;
	hdr->size_qw = size / 8;
	hdr->flags = flags;
	memcpy(cb->data + cb->len, cmd, size);
	cb->len += size;
	cb->count++;
	cb->bo_current = false;
	return ACCEL_OK;
}

/* ------------------------------------------------------- operands */

/*
 * Resolve @offset of @buf (a raw VA if @buf is NULL) to a device VA,
 * check its alignment to @align and that @extent bytes fit in @buf, and
 * stage the buffer's @use.
 */
static int address(struct stage *st, const char *name, struct accel_buffer *buf,
		   uint64_t offset, uint64_t extent, unsigned int align,
		   uint32_t use, __u64 *va)
{
	struct accel_cmdbuf *cb = st->cb;

	if (buf && buf->dev != cb->dev)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_WRONG_DEVICE,
					 "%s: %s is in a buffer of another device%s",
					 st->cmd, name,
					 cb->dev ? "" : " (this command buffer has none)");
	*va = buf ? buf->device_va + offset : offset;
	if (*va % align)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_ALIGNMENT,
					 "%s: %s is at VA 0x%llx, not a multiple of %u",
					 st->cmd, name, (unsigned long long)*va, align);
	if (!buf)
		return ACCEL_OK;
	if (offset > buf->size || extent > buf->size - offset)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_OUT_OF_BOUNDS,
					 "%s: %s spans bytes %llu to %llu of a %llu-byte buffer",
					 st->cmd, name, (unsigned long long)offset,
					 (unsigned long long)(offset + extent),
					 (unsigned long long)buf->size);
	st->uses[st->n++] = (struct buffer_use){ .buf = buf, .use = use };
	return ACCEL_OK;
}

static void dtype_list(uint32_t dtypes, char *out, size_t len)
{
	static const enum tsr_dtype all[] = {
		TSR_DTYPE_F32, TSR_DTYPE_BF16, TSR_DTYPE_I32, TSR_DTYPE_I8,
	};
	size_t used = 0, i;

	out[0] = '\0';
	for (i = 0; i < sizeof(all) / sizeof(all[0]) && used < len; i++)
		if (dtypes & DTYPE_BIT(all[i]))
			used += snprintf(out + used, len - used, "%s%s",
					 used ? ", " : "", accel_dtype_name(all[i]));
}

/* Check tensor @t as the chip does, then its bounds; encode it in @out. */
static int tensor(struct stage *st, const char *name,
		  const struct accel_tensor *t, uint32_t dtypes, uint32_t use,
		  struct tsr_tensor *out)
{
	struct accel_cmdbuf *cb = st->cb;
	unsigned int esize;
	uint64_t extent;
	uint32_t stride;
	char allowed[32];

	if (!t)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: %s is missing", st->cmd, name);
	esize = accel_dtype_size(t->dtype);
	if (!esize) {
		dtype_list(dtypes, allowed, sizeof(allowed));
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_DTYPE,
					 "%s: %s.dtype is unknown (%u); it must be %s",
					 st->cmd, name, t->dtype, allowed);
	}
	if (!(dtypes & DTYPE_BIT(t->dtype))) {
		dtype_list(dtypes, allowed, sizeof(allowed));
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_DTYPE,
					 "%s: %s.dtype is %s; it must be %s",
					 st->cmd, name, accel_dtype_name(t->dtype),
					 allowed);
	}
	if (!t->rows || !t->cols || t->rows > TSR_MAX_DIM || t->cols > TSR_MAX_DIM)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: %s is %ux%u; dimensions are 1 to %u",
					 st->cmd, name, t->rows, t->cols, TSR_MAX_DIM);
	stride = t->stride ? t->stride : t->cols;
	if (stride < t->cols)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_STRIDE,
					 "%s: %s.stride %u is less than its %u columns",
					 st->cmd, name, stride, t->cols);
	extent = ((uint64_t)(t->rows - 1) * stride + t->cols) * esize;
	*out = (struct tsr_tensor){
		.rows = t->rows, .cols = t->cols, .stride = stride,
		.dtype = t->dtype,
	};
	return address(st, name, t->buffer, t->offset, extent, esize, use,
		       &out->va);
}

static bool same_shape(const struct tsr_tensor *a, const struct tsr_tensor *b)
{
	return a->rows == b->rows && a->cols == b->cols;
}

/* The operands of a command with one input: @in, then @out. */
static int in_out(struct stage *st, const struct accel_tensor *in,
		  const struct accel_tensor *out, uint32_t dtypes,
		  struct tsr_tensor *enc_in, struct tsr_tensor *enc_out)
{
	int ret = tensor(st, "in", in, dtypes, ACCEL_USE_READ, enc_in);

	return ret ? ret : tensor(st, "out", out, dtypes, ACCEL_USE_WRITE,
				  enc_out);
}

/* ------------------------------------------------------- commands */

static int header_only(struct accel_cmdbuf *cb, const char *name,
		       uint8_t opcode)
{
	struct stage st = { .cb = cb, .cmd = name };
	struct tsr_cmd_header hdr = { 0 };

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	return commit(&st, &hdr, sizeof(hdr), opcode, 0);
}

int accel_cmdbuf_nop(struct accel_cmdbuf *cb)
{
	return header_only(cb, "nop", TSR_OP_NOP);
}

int accel_cmdbuf_interrupt(struct accel_cmdbuf *cb)
{
	return header_only(cb, "interrupt", TSR_OP_INTERRUPT);
}

int accel_cmdbuf_use_buffer(struct accel_cmdbuf *cb, struct accel_buffer *buf,
			    uint32_t use)
{
	struct stage st = { .cb = cb, .cmd = "use_buffer" };
	__u64 va;
	int ret;

	if (!cb || !buf)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!use || use & ~(ACCEL_USE_READ | ACCEL_USE_WRITE | ACCEL_USE_EXPLICIT))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_FLAGS,
					 "use_buffer: use 0x%x is no set of ACCEL_USE_* bits",
					 use);
	if (buf->dev != cb->dev)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_WRONG_DEVICE,
					 "use_buffer: the buffer belongs to another device");
	ret = address(&st, "the buffer", buf, 0, 0, 1, use, &va);
	if (!ret)
		ret = reserve(&st, 0);
	if (!ret)
		record(&st);
	return ret;
}

/* Bytes a region spans, or UINT64_MAX if that overflows. */
static uint64_t region_extent(uint32_t row_bytes, uint32_t rows,
			      uint32_t planes, uint64_t row_stride,
			      uint64_t plane_stride)
{
	unsigned __int128 n = (unsigned __int128)(planes - 1) * plane_stride +
			      (unsigned __int128)(rows - 1) * row_stride +
			      row_bytes;

	return n > UINT64_MAX ? UINT64_MAX : (uint64_t)n;
}

static int dma(struct accel_cmdbuf *cb, bool fill,
	       const struct accel_region *dst, const struct accel_region *src,
	       uint32_t pattern, uint32_t row_bytes, uint32_t rows,
	       uint32_t planes)
{
	struct stage st = { .cb = cb, .cmd = fill ? "dma_fill" : "dma_copy" };
	struct tsr_cmd_dma c = { .size = { row_bytes, rows, planes } };
	unsigned __int128 total = (unsigned __int128)row_bytes * rows * planes;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!dst || (!fill && !src))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: %s is missing", st.cmd,
					 dst ? "src" : "dst");
	if (!row_bytes || !rows || !planes)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: %u bytes x %u rows x %u planes; each must be at least 1",
					 st.cmd, row_bytes, rows, planes);
	if (fill && row_bytes % 4)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "dma_fill: row_bytes %u is not a multiple of 4",
					 row_bytes);
	if (total > TSR_MAX_TRANSFER)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_TOO_LARGE,
					 "%s: %llu bytes; a transfer moves at most %llu",
					 st.cmd, (unsigned long long)total,
					 (unsigned long long)TSR_MAX_TRANSFER);
	/* Strides of a single row or plane mean nothing: encode them as 0. */
	c.dst_stride[0] = rows > 1 ? dst->row_stride : 0;
	c.dst_stride[1] = planes > 1 ? dst->plane_stride : 0;
	if (rows > 1 && c.dst_stride[0] < row_bytes)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_STRIDE,
					 "%s: dst.row_stride %llu is less than a row (%u bytes)",
					 st.cmd, (unsigned long long)c.dst_stride[0],
					 row_bytes);
	if (planes > 1 && c.dst_stride[1] < region_extent(row_bytes, rows, 1,
							  c.dst_stride[0], 0))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_STRIDE,
					 "%s: dst.plane_stride %llu is less than a plane (%llu bytes)",
					 st.cmd, (unsigned long long)c.dst_stride[1],
					 (unsigned long long)region_extent(row_bytes, rows, 1,
									   c.dst_stride[0], 0));
	ret = address(&st, "dst", dst->buffer, dst->offset,
		      region_extent(row_bytes, rows, planes, c.dst_stride[0],
				    c.dst_stride[1]),
		      fill ? 4 : 1, ACCEL_USE_WRITE, &c.dst);
	if (ret)
		return ret;
	if (fill && (c.dst_stride[0] % 4 || c.dst_stride[1] % 4))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_ALIGNMENT,
					 "dma_fill: dst strides %llu and %llu must be multiples of 4",
					 (unsigned long long)c.dst_stride[0],
					 (unsigned long long)c.dst_stride[1]);
	if (fill) {
		c.src = pattern;
		return commit(&st, &c, sizeof(c), TSR_OP_DMA_FILL, 0);
	}
	c.src_stride[0] = rows > 1 ? src->row_stride : 0;
	c.src_stride[1] = planes > 1 ? src->plane_stride : 0;
	ret = address(&st, "src", src->buffer, src->offset,
		      region_extent(row_bytes, rows, planes, c.src_stride[0],
				    c.src_stride[1]),
		      1, ACCEL_USE_READ, &c.src);
	if (ret)
		return ret;
	return commit(&st, &c, sizeof(c), TSR_OP_DMA_COPY, 0);
}

int accel_cmdbuf_dma_copy(struct accel_cmdbuf *cb,
			  const struct accel_region *dst,
			  const struct accel_region *src, uint32_t row_bytes,
			  uint32_t rows, uint32_t planes)
{
	return dma(cb, false, dst, src, 0, row_bytes, rows, planes);
}

int accel_cmdbuf_dma_fill(struct accel_cmdbuf *cb,
			  const struct accel_region *dst, uint32_t pattern,
			  uint32_t row_bytes, uint32_t rows, uint32_t planes)
{
	return dma(cb, true, dst, NULL, pattern, row_bytes, rows, planes);
}

int accel_cmdbuf_copy(struct accel_cmdbuf *cb, struct accel_buffer *dst,
		      uint64_t dst_offset, struct accel_buffer *src,
		      uint64_t src_offset, uint32_t bytes)
{
	struct accel_region d = { .buffer = dst, .offset = dst_offset };
	struct accel_region s = { .buffer = src, .offset = src_offset };

	return dma(cb, false, &d, &s, 0, bytes, 1, 1);
}

int accel_cmdbuf_fill(struct accel_cmdbuf *cb, struct accel_buffer *dst,
		      uint64_t dst_offset, uint32_t pattern, uint32_t bytes)
{
	struct accel_region d = { .buffer = dst, .offset = dst_offset };

	return dma(cb, true, &d, NULL, pattern, bytes, 1, 1);
}

int accel_cmdbuf_matmul(struct accel_cmdbuf *cb, const struct accel_tensor *a,
			const struct accel_tensor *b,
			const struct accel_tensor *c, uint32_t flags)
{
	struct stage st = { .cb = cb, .cmd = "matmul" };
	struct tsr_cmd_matmul m = { 0 };
	uint32_t in = FLOAT_DTYPES | DTYPE_BIT(TSR_DTYPE_I8), out;
	uint32_t rows_a, cols_a, rows_b, cols_b;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (flags & ~TSR_MATMUL_FLAGS_ALL)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_FLAGS,
					 "matmul: flags 0x%x has unknown bits 0x%x",
					 flags, flags & ~TSR_MATMUL_FLAGS_ALL);
	ret = tensor(&st, "a", a, in, ACCEL_USE_READ, &m.a);
	if (!ret)
		ret = tensor(&st, "b", b, DTYPE_BIT(m.a.dtype), ACCEL_USE_READ,
			     &m.b);
	if (ret)
		return ret;
	out = m.a.dtype == TSR_DTYPE_I8 ? DTYPE_BIT(TSR_DTYPE_I32) : FLOAT_DTYPES;
	ret = tensor(&st, "c", c, out,
		     flags & TSR_MATMUL_ACCUMULATE ?
		     ACCEL_USE_READ | ACCEL_USE_WRITE : ACCEL_USE_WRITE, &m.c);
	if (ret)
		return ret;
	rows_a = flags & TSR_MATMUL_TRANSPOSE_A ? m.a.cols : m.a.rows;
	cols_a = flags & TSR_MATMUL_TRANSPOSE_A ? m.a.rows : m.a.cols;
	rows_b = flags & TSR_MATMUL_TRANSPOSE_B ? m.b.cols : m.b.rows;
	cols_b = flags & TSR_MATMUL_TRANSPOSE_B ? m.b.rows : m.b.cols;
	if (cols_a != rows_b)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "matmul: op(a) is %ux%u and op(b) is %ux%u: a's columns must equal b's rows",
					 rows_a, cols_a, rows_b, cols_b);
	if (m.c.rows != rows_a || m.c.cols != cols_b)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "matmul: c is %ux%u but op(a) x op(b) is %ux%u",
					 m.c.rows, m.c.cols, rows_a, cols_b);
	return commit(&st, &m, sizeof(m), TSR_OP_MATMUL, flags);
}

unsigned int accel_vpu_operands(enum tsr_vpu_op op)
{
	if (op >= TSR_VPU_NEG && op <= TSR_VPU_RSQRT)
		return 1;
	if (op >= TSR_VPU_ADD && op <= TSR_VPU_CMP_LE)
		return 2;
	return op == TSR_VPU_SELECT ? 3 : 0;
}

/* Operand @name of a VPU op: shaped like @out, or a row or column of it. */
static int vpu_operand(struct stage *st, const char *name, bool wanted,
		       const struct accel_tensor *t, enum tsr_vpu_op op,
		       uint32_t dtypes, const struct tsr_tensor *out,
		       struct tsr_tensor *enc)
{
	bool rows_ok, cols_ok;
	int ret;

	if (!wanted && t)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "vpu: op %u takes no %s", op, name);
	if (!wanted)
		return ACCEL_OK;
	ret = tensor(st, name, t, dtypes, ACCEL_USE_READ, enc);
	if (ret)
		return ret;
	rows_ok = enc->rows == out->rows || enc->rows == 1;
	cols_ok = enc->cols == out->cols || enc->cols == 1;
	if (rows_ok && cols_ok &&
	    (enc->rows == out->rows || enc->cols == out->cols))
		return ACCEL_OK;
	return accel_cmdbuf_fail(st->cb, ACCEL_ERR_BAD_SHAPE,
				 "vpu: %s is %ux%u; it must be out's shape (%ux%u), one row or one column of it",
				 name, enc->rows, enc->cols, out->rows, out->cols);
}

int accel_cmdbuf_vpu(struct accel_cmdbuf *cb, enum tsr_vpu_op op,
		     const struct accel_tensor *a, const struct accel_tensor *b,
		     const struct accel_tensor *c,
		     const struct accel_tensor *out)
{
	struct stage st = { .cb = cb, .cmd = "vpu" };
	struct tsr_cmd_vpu v = { .op = op };
	unsigned int n = accel_vpu_operands(op);
	/* The integer operations take I32, all operands alike. */
	bool ints = out && out->dtype == TSR_DTYPE_I32 &&
		    (op == TSR_VPU_ADD || op == TSR_VPU_SUB || op == TSR_VPU_MUL ||
		     op == TSR_VPU_MAX || op == TSR_VPU_MIN);
	uint32_t dtypes = ints ? DTYPE_BIT(TSR_DTYPE_I32) : FLOAT_DTYPES;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!n)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_OP,
					 "vpu: op %u is no enum tsr_vpu_op", op);
	ret = tensor(&st, "out", out, dtypes, ACCEL_USE_WRITE, &v.out);
	if (!ret)
		ret = tensor(&st, "a", a, dtypes, ACCEL_USE_READ, &v.a);
	if (ret)
		return ret;
	if (!same_shape(&v.a, &v.out))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "vpu: a is %ux%u but out is %ux%u",
					 v.a.rows, v.a.cols, v.out.rows, v.out.cols);
	ret = vpu_operand(&st, "b", n >= 2, b, op, dtypes, &v.out, &v.b);
	if (!ret)
		ret = vpu_operand(&st, "c", n == 3, c, op, dtypes, &v.out, &v.c);
	if (ret)
		return ret;
	return commit(&st, &v, sizeof(v), TSR_OP_VPU, 0);
}

int accel_cmdbuf_reduce(struct accel_cmdbuf *cb, enum tsr_reduce_op op,
			uint32_t axis, const struct accel_tensor *in,
			const struct accel_tensor *out)
{
	struct stage st = { .cb = cb, .cmd = "reduce" };
	struct tsr_cmd_reduce r = { .op = op, .axis = axis };
	uint32_t rows, cols;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (op < TSR_REDUCE_SUM || op > TSR_REDUCE_MIN || axis > 1)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_OP,
					 "reduce: op %u along axis %u; ops are enum tsr_reduce_op, axes 0 and 1",
					 op, axis);
	ret = in_out(&st, in, out, FLOAT_DTYPES, &r.in, &r.out);
	if (ret)
		return ret;
	rows = axis == 0 ? 1 : r.in.rows;
	cols = axis == 0 ? r.in.cols : 1;
	if (r.out.rows != rows || r.out.cols != cols)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "reduce: along axis %u, out must be %ux%u, not %ux%u",
					 axis, rows, cols, r.out.rows, r.out.cols);
	return commit(&st, &r, sizeof(r), TSR_OP_REDUCE, 0);
}

int accel_cmdbuf_cast(struct accel_cmdbuf *cb, const struct accel_tensor *in,
		      const struct accel_tensor *out)
{
	struct stage st = { .cb = cb, .cmd = "cast" };
	struct tsr_cmd_unary_copy u = { 0 };
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = in_out(&st, in, out, FLOAT_DTYPES | DTYPE_BIT(TSR_DTYPE_I32),
		     &u.in, &u.out);
	if (ret)
		return ret;
	if (!same_shape(&u.in, &u.out))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "cast: in is %ux%u but out is %ux%u",
					 u.in.rows, u.in.cols, u.out.rows, u.out.cols);
	return commit(&st, &u, sizeof(u), TSR_OP_CAST, 0);
}

int accel_cmdbuf_transpose(struct accel_cmdbuf *cb,
			   const struct accel_tensor *in,
			   const struct accel_tensor *out)
{
	struct stage st = { .cb = cb, .cmd = "transpose" };
	struct tsr_cmd_unary_copy u = { 0 };
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = in_out(&st, in, out, ALL_DTYPES, &u.in, &u.out);
	if (ret)
		return ret;
	if (u.out.dtype != u.in.dtype)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_DTYPE,
					 "transpose: out.dtype is %s but in.dtype is %s",
					 accel_dtype_name(u.out.dtype),
					 accel_dtype_name(u.in.dtype));
	if (u.out.rows != u.in.cols || u.out.cols != u.in.rows)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "transpose: in is %ux%u, so out must be %ux%u, not %ux%u",
					 u.in.rows, u.in.cols, u.in.cols, u.in.rows,
					 u.out.rows, u.out.cols);
	return commit(&st, &u, sizeof(u), TSR_OP_TRANSPOSE, 0);
}

/* SEM_* and TIMESTAMP: one 8-aligned 64-bit word. */
static int word(struct accel_cmdbuf *cb, const char *name, uint8_t opcode,
		struct accel_buffer *buf, uint64_t offset, uint64_t value,
		uint32_t use)
{
	struct stage st = { .cb = cb, .cmd = name };
	struct tsr_cmd_sem s = { .value = value };
	struct tsr_cmd_timestamp t = { 0 };
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = address(&st, opcode == TSR_OP_TIMESTAMP ? "the timestamp" :
		      "the semaphore", buf, offset, 8, 8, use, &s.va);
	if (ret)
		return ret;
	if (opcode != TSR_OP_TIMESTAMP)
		return commit(&st, &s, sizeof(s), opcode, 0);
	t.va = s.va;
	return commit(&st, &t, sizeof(t), opcode, 0);
}

int accel_cmdbuf_sem_wait(struct accel_cmdbuf *cb, struct accel_buffer *buf,
			  uint64_t offset, uint64_t value)
{
	return word(cb, "sem_wait", TSR_OP_SEM_WAIT, buf, offset, value,
		    ACCEL_USE_READ);
}

int accel_cmdbuf_sem_wait_abort_flags(struct accel_cmdbuf *cb,
				      struct accel_buffer *buf, uint64_t offset,
				      uint64_t value,
				      struct accel_buffer *abort_buf,
				      uint64_t abort_offset, unsigned int flags)
{
	struct stage st = { .cb = cb, .cmd = "sem_wait_abort" };
	struct tsr_cmd_sem_wait_abort w = { .value = value };
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (flags & ~ACCEL_SEM_WAIT_LINKS)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: flags 0x%x: only ACCEL_SEM_WAIT_LINKS is defined",
					 st.cmd, flags);
	ret = address(&st, "the semaphore", buf, offset, 8, 8, ACCEL_USE_READ,
		      &w.va) ?:
	      address(&st, "the abort semaphore", abort_buf, abort_offset, 8, 8,
		      ACCEL_USE_READ, &w.abort_va);
	if (ret)
		return ret;
	return commit(&st, &w, sizeof(w), TSR_OP_SEM_WAIT_ABORT,
		      flags & ACCEL_SEM_WAIT_LINKS ? TSR_SEM_WAIT_LINKS : 0);
}

int accel_cmdbuf_sem_wait_abort(struct accel_cmdbuf *cb,
				struct accel_buffer *buf, uint64_t offset,
				uint64_t value, struct accel_buffer *abort_buf,
				uint64_t abort_offset)
{
	return accel_cmdbuf_sem_wait_abort_flags(cb, buf, offset, value,
						 abort_buf, abort_offset, 0);
}

/* Semaphore writes count as reads too: see cmdbuf.h. */
int accel_cmdbuf_sem_signal(struct accel_cmdbuf *cb, struct accel_buffer *buf,
			    uint64_t offset, uint64_t value)
{
	return word(cb, "sem_signal", TSR_OP_SEM_SIGNAL, buf, offset, value,
		    ACCEL_USE_READ);
}

int accel_cmdbuf_sem_inc(struct accel_cmdbuf *cb, struct accel_buffer *buf,
			 uint64_t offset, uint64_t value)
{
	return word(cb, "sem_inc", TSR_OP_SEM_INC, buf, offset, value,
		    ACCEL_USE_READ);
}

int accel_cmdbuf_timestamp(struct accel_cmdbuf *cb, struct accel_buffer *buf,
			   uint64_t offset)
{
	return word(cb, "timestamp", TSR_OP_TIMESTAMP, buf, offset, 0,
		    ACCEL_USE_WRITE);
}

/* ------------------------------------------------------- ICI */

/* A stride of an ICI_WRITE of several rows: at least a row. */
static int ici_stride(struct stage *st, const char *name, uint64_t stride,
		      uint32_t rows, uint32_t row_bytes)
{
	if (rows < 2 || stride >= row_bytes)
		return ACCEL_OK;
	return accel_cmdbuf_fail(st->cb, ACCEL_ERR_BAD_STRIDE,
				 "%s: %s %llu is less than a row (%u bytes)",
				 st->cmd, name, (unsigned long long)stride,
				 row_bytes);
}

/* ICI_WRITE's checks, in the chip's order (qemu-device/core/tessera-ici.c). */
static int ici_write_check(struct stage *st, const struct accel_ici_write *w,
			   const struct tsr_cmd_ici_write *c)
{
	struct accel_cmdbuf *cb = st->cb;
	bool sem = w->flags & TSR_ICI_WRITE_SEM;
	uint64_t total = (uint64_t)c->rows * c->row_bytes;
	int ret;

	if (w->flags & ~TSR_ICI_WRITE_FLAGS_ALL)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_FLAGS,
					 "%s: flags 0x%x has unknown bits 0x%x",
					 st->cmd, w->flags,
					 w->flags & ~TSR_ICI_WRITE_FLAGS_ALL);
	if (!c->rows != !c->row_bytes || (!c->rows && !sem))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: %u rows of %u bytes; both must be at least 1, or both 0 with TSR_ICI_WRITE_SEM (the increment alone)",
					 st->cmd, c->rows, c->row_bytes);
	if (!sem && (w->sem_offset || w->sem_add))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: sem_offset %llu and sem_add %llu must be 0 without TSR_ICI_WRITE_SEM",
					 st->cmd, (unsigned long long)w->sem_offset,
					 (unsigned long long)w->sem_add);
	if (c->sem_offset % 8)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_ALIGNMENT,
					 "%s: sem_offset %llu is not a multiple of 8",
					 st->cmd, (unsigned long long)c->sem_offset);
	if (total > TSR_MAX_TRANSFER)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_TOO_LARGE,
					 "%s: %llu bytes; a transfer moves at most %llu",
					 st->cmd, (unsigned long long)total,
					 (unsigned long long)TSR_MAX_TRANSFER);
	ret = ici_stride(st, "src_stride", c->src_stride, c->rows, c->row_bytes);
	if (!ret)
		ret = ici_stride(st, "dst_stride", c->dst_stride, c->rows,
				 c->row_bytes);
	if (ret)
		return ret;
	if (c->rows && (unsigned __int128)c->offset +
	    (unsigned __int128)(c->rows - 1) * c->dst_stride + c->row_bytes >
	    UINT64_MAX)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_STRIDE,
					 "%s: rows from offset %llu, %llu bytes apart, end beyond 2^64",
					 st->cmd, (unsigned long long)c->offset,
					 (unsigned long long)c->dst_stride);
	return ACCEL_OK;
}

/*
 * What the chip leaves to the target but libaccel knows: the window ids a
 * chip has and, with a device, the chips of its slice.
 */
static int ici_target_check(struct stage *st, const struct accel_ici_write *w)
{
	struct accel_cmdbuf *cb = st->cb;
	const uint32_t *topo;

	if (w->window >= DRM_TESSERA_MAX_WINDOWS)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: window %u; a chip's windows are 0 to %u",
					 st->cmd, w->window, DRM_TESSERA_MAX_WINDOWS - 1);
	if (!cb->dev || accel_coords_in_slice(cb->dev->topology, w->dst))
		return ACCEL_OK;
	topo = cb->dev->topology;
	return accel_cmdbuf_fail(cb, ACCEL_ERR_NO_ROUTE,
				 "%s: dst (%u,%u,%u) is not in this chip's %ux%ux%u slice",
				 st->cmd, w->dst.c[0], w->dst.c[1], w->dst.c[2],
				 topo[0], topo[1], topo[2]);
}

static int ici_write(struct accel_cmdbuf *cb, const char *name,
		     const struct accel_ici_write *w)
{
	struct stage st = { .cb = cb, .cmd = name };
	struct tsr_cmd_ici_write c = {
		.window = w->window, .key = w->key,
		.rows = w->rows, .row_bytes = w->row_bytes,
	};
	int ret;

	memcpy(c.dst, w->dst.c, sizeof(c.dst));
	if (w->flags & TSR_ICI_WRITE_SEM) {
		c.sem_offset = w->sem_offset;
		c.sem_add = w->sem_add;
	}
	/* No data: no source, no place; one row: no strides.  Encoded 0. */
	if (w->rows) {
		c.offset = w->offset;
		c.src_stride = w->rows > 1 ? w->src_stride : 0;
		c.dst_stride = w->rows > 1 ? w->dst_stride : 0;
	}
	ret = ici_write_check(&st, w, &c);
	if (!ret)
		ret = ici_target_check(&st, w);
	if (ret)
		return ret;
	if (c.rows) {
		ret = address(&st, "src", w->src_buffer, w->src_offset,
			      region_extent(c.row_bytes, c.rows, 1,
					    c.src_stride, 0),
			      1, ACCEL_USE_READ, &c.src);
		if (ret)
			return ret;
	}
	return commit(&st, &c, sizeof(c), TSR_OP_ICI_WRITE, w->flags);
}

int accel_cmdbuf_ici_write(struct accel_cmdbuf *cb,
			   const struct accel_ici_write *w)
{
	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!w)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "ici_write: the request is missing");
	return ici_write(cb, "ici_write", w);
}

int accel_cmdbuf_ici_sem_inc(struct accel_cmdbuf *cb, struct accel_coords dst,
			     uint32_t window, uint64_t key,
			     uint64_t sem_offset, uint64_t add)
{
	struct accel_ici_write w = {
		.dst = dst, .window = window, .key = key,
		.flags = TSR_ICI_WRITE_SEM, .sem_offset = sem_offset,
		.sem_add = add,
	};

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	return ici_write(cb, "ici_sem_inc", &w);
}

/* ------------------------------------------------------- submission */

/* Whether a job may still read the uploaded copy. */
static bool bo_busy(struct accel_cmdbuf *cb)
{
	return cb->bo_untracked ||
	       jobs_pending(cb->dev, cb->bo_jobs, cb->bo_njobs);
}

/* A new copy of @cb in the device's command arena, if it has room. */
static int upload_to_arena(struct accel_cmdbuf *cb)
{
	int ret = accel_arena_take(cb->dev, cb->len, &cb->piece_handle,
				   &cb->piece_offset, &cb->piece);

	if (ret)
		return ret;
	memcpy(accel_arena_map(cb->dev, cb->piece_offset), cb->data, cb->len);
	cb->in_arena = true;
	cb->bo_current = true;
	/* Its own copy, stale now, waits for its jobs in the pool. */
	retire_copy(cb);
	return ACCEL_OK;
}

int accel_cmdbuf_upload(struct accel_cmdbuf *cb, uint32_t *handle,
			uint64_t *offset, uint32_t *size)
{
	void *map;
	int ret;

	if (!cb->len)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "submit: the command buffer is empty");
	*size = cb->len;
	if (!cb->bo_current) {
		drop_piece(cb);
		ret = upload_to_arena(cb);
		if (ret != ACCEL_ERR_BUSY && ret != ACCEL_ERR_TOO_LARGE &&
		    ret != ACCEL_OK)
			return ret;
	}
	if (cb->in_arena) {
		*handle = cb->piece_handle;
		*offset = cb->piece_offset;
		return ACCEL_OK;
	}
	*offset = 0;
	if (cb->bo && !cb->bo_current &&
	    (cb->bo->size < cb->len || bo_busy(cb)))
		retire_copy(cb);
	if (!cb->bo) {
		uint64_t bytes = MIN_BO_SIZE;

		while (bytes < cb->len)
			bytes *= 2;
		cb->bo = reuse_copy(cb->dev, cb->len);
		if (!cb->bo) {
			ret = accel_buffer_create_commands(cb->dev, bytes,
							   &cb->bo);
			if (ret)
				return ret;
		}
		cb->bo_current = false;
	}
	if (!cb->bo_current) {
		ret = accel_buffer_map(cb->bo, &map);
		if (ret)
			return ret;
		memcpy(map, cb->data, cb->len);
		cb->bo_current = true;
		cb->bo_njobs = 0;
		cb->bo_untracked = false;
	}
	*handle = cb->bo->handle;
	return ACCEL_OK;
}

void accel_cmdbuf_submitted(struct accel_cmdbuf *cb, unsigned int stream,
			    uint64_t seq)
{
	if (cb->in_arena)
		accel_arena_job(cb->dev, cb->piece, stream, seq);
	else if (cb->bo_njobs < ACCEL_CMD_COPY_JOBS)
		cb->bo_jobs[cb->bo_njobs++] = seq;
	else
		cb->bo_untracked = true;
}

/* ------------------------------------------------------------ SparseCore */

/* Stage the arrays of @ids, named @name, for @use. */
static int sc_ids(struct stage *st, const char *name,
		  const struct accel_sc_ids *ids, uint32_t use,
		  struct tsr_sc_coo *coo)
{
	uint64_t bytes = (uint64_t)ids->count * 4;
	char what[32];
	int ret;

	if (ids->count > TSR_SC_MAX_ENTRIES)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_TOO_LARGE,
					 "%s: %s has %u ids; a command takes at most %u",
					 st->cmd, name, ids->count, TSR_SC_MAX_ENTRIES);
	snprintf(what, sizeof(what), "%s.row_ids", name);
	ret = address(st, what, ids->buffer, ids->row_ids, bytes, 4, use,
		      &coo->row_ids);
	snprintf(what, sizeof(what), "%s.col_ids", name);
	if (!ret)
		ret = address(st, what, ids->buffer, ids->col_ids, bytes, 4,
			      use, &coo->col_ids);
	if (ret || ids->weights == ACCEL_SC_UNWEIGHTED)
		return ret;
	snprintf(what, sizeof(what), "%s.weights", name);
	ret = address(st, what, ids->buffer, ids->weights, bytes, 4, use,
		      &coo->weights);
	if (!ret && !coo->weights)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: %s is at VA 0, which means no weights; use ACCEL_SC_UNWEIGHTED",
					 st->cmd, what);
	return ret;
}

static int sc_limits_check(struct accel_cmdbuf *cb,
			   const struct accel_sc_limits *l)
{
	if (l->flags & ~TSR_SC_PARTITION_FLAGS_ALL)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_FLAGS,
					 "sc_partition: flags 0x%x has unknown bits 0x%x",
					 l->flags, l->flags & ~TSR_SC_PARTITION_FLAGS_ALL);
	if (!l->partitions || l->partitions > TSR_SC_MAX_PARTITIONS)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "sc_partition: %u partitions; 1 to %u",
					 l->partitions, TSR_SC_MAX_PARTITIONS);
	if (!l->samples || l->samples > TSR_MAX_DIM || !l->vocab)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "sc_partition: %u samples, vocab %u; samples are 1 to %u, vocab at least 1",
					 l->samples, l->vocab, TSR_MAX_DIM);
	if (!l->max_ids || l->max_ids > TSR_SC_MAX_ENTRIES ||
	    !l->max_unique_ids || l->max_unique_ids > l->max_ids)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "sc_partition: max_ids %u, max_unique_ids %u; 1 <= max_unique_ids <= max_ids <= %u",
					 l->max_ids, l->max_unique_ids, TSR_SC_MAX_ENTRIES);
	if ((uint64_t)l->partitions * l->max_ids > TSR_SC_MAX_SLOTS)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_TOO_LARGE,
					 "sc_partition: %u partitions x max_ids %u is over %u slots",
					 l->partitions, l->max_ids, TSR_SC_MAX_SLOTS);
	return ACCEL_OK;
}

int accel_cmdbuf_sc_partition(struct accel_cmdbuf *cb,
			      const struct accel_sc_limits *limits,
			      const struct accel_sc_ids *in,
			      const struct accel_sc_ids *out,
			      const struct accel_region *counts)
{
	struct stage st = { .cb = cb, .cmd = "sc_partition" };
	struct tsr_cmd_sc_partition c = { 0 };
	uint64_t slots;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!limits || !in || !out || !counts)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "sc_partition: %s is missing",
					 !limits ? "limits" : !in ? "in" :
					 !out ? "out" : "counts");
	ret = sc_limits_check(cb, limits);
	if (ret)
		return ret;
	slots = (uint64_t)limits->partitions * limits->max_ids;
	if (out->count != slots)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "sc_partition: out has %u slots; it must have partitions x max_ids = %llu",
					 out->count, (unsigned long long)slots);
	ret = sc_ids(&st, "in", in, ACCEL_USE_READ, &c.in);
	if (!ret)
		ret = sc_ids(&st, "out", out, ACCEL_USE_WRITE, &c.out);
	if (!ret)
		ret = address(&st, "counts", counts->buffer, counts->offset,
			      (uint64_t)limits->partitions *
			      sizeof(struct tsr_sc_counts), 4, ACCEL_USE_WRITE,
			      &c.counts);
	if (ret)
		return ret;
	c.count = in->count;
	c.partitions = limits->partitions;
	c.samples = limits->samples;
	c.vocab = limits->vocab;
	c.max_ids = limits->max_ids;
	c.max_unique_ids = limits->max_unique_ids;
	return commit(&st, &c, sizeof(c), TSR_OP_SC_PARTITION, limits->flags);
}

/* A gather's table or a scatter's destination: padded, aligned rows. */
static int sc_table(struct stage *st, const char *name,
		    const struct accel_tensor *t, uint32_t use,
		    struct tsr_tensor *enc)
{
	int ret = tensor(st, name, t, FLOAT_DTYPES, use, enc);

	if (ret)
		return ret;
	if (enc->va % TSR_SC_ROW_ALIGN)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_BAD_ALIGNMENT,
					 "%s: %s is at VA 0x%llx; tables are %u-byte aligned",
					 st->cmd, name, (unsigned long long)enc->va,
					 TSR_SC_ROW_ALIGN);
	if ((uint64_t)enc->stride * accel_dtype_size(t->dtype) %
	    TSR_SC_ROW_ALIGN)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_BAD_STRIDE,
					 "%s: %s.stride %u makes rows of %llu bytes; table rows are padded to a multiple of %u",
					 st->cmd, name, enc->stride,
					 (unsigned long long)enc->stride *
					 accel_dtype_size(t->dtype), TSR_SC_ROW_ALIGN);
	return ACCEL_OK;
}

/* What gather and scatter-add share: the combiner, ids, table and rows. */
static int sc_lookup(struct stage *st, enum tsr_sc_combiner combiner,
		     const struct accel_sc_ids *in,
		     const struct accel_tensor *table, uint32_t table_use,
		     const char *table_name, const struct accel_tensor *rows,
		     uint32_t rows_use, const char *rows_name,
		     struct tsr_sc_coo *coo, struct tsr_tensor *enc_table,
		     struct tsr_tensor *enc_rows)
{
	int ret;

	if (combiner < TSR_SC_SUM || combiner > TSR_SC_SQRTN)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_BAD_OP,
					 "%s: combiner %u is no enum tsr_sc_combiner",
					 st->cmd, combiner);
	if (!in)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: in is missing", st->cmd);
	ret = sc_table(st, table_name, table, table_use, enc_table);
	if (!ret)
		ret = tensor(st, rows_name, rows, FLOAT_DTYPES, rows_use,
			     enc_rows);
	if (ret)
		return ret;
	if (enc_rows->cols != enc_table->cols)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: %s has %u columns, %s %u: they must be equal",
					 st->cmd, rows_name, enc_rows->cols,
					 table_name, enc_table->cols);
	if ((uint64_t)enc_rows->rows * enc_rows->cols > TSR_MAX_ELEMENTS)
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_TOO_LARGE,
					 "%s: %s is %ux%u, over %llu elements",
					 st->cmd, rows_name, enc_rows->rows,
					 enc_rows->cols,
					 (unsigned long long)TSR_MAX_ELEMENTS);
	if ((uint64_t)in->count * enc_table->cols > (1ull << 30))
		return accel_cmdbuf_fail(st->cb, ACCEL_ERR_TOO_LARGE,
					 "%s: %u ids of %u columns is over 2^30 multiply-adds",
					 st->cmd, in->count, enc_table->cols);
	return sc_ids(st, "in", in, ACCEL_USE_READ, coo);
}

int accel_cmdbuf_sc_gather(struct accel_cmdbuf *cb,
			   enum tsr_sc_combiner combiner,
			   const struct accel_sc_ids *in,
			   const struct accel_tensor *table,
			   const struct accel_tensor *out)
{
	struct stage st = { .cb = cb, .cmd = "sc_gather" };
	struct tsr_cmd_sc_gather c = { .combiner = combiner };
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = sc_lookup(&st, combiner, in, table, ACCEL_USE_READ, "table", out,
			ACCEL_USE_WRITE, "out", &c.in, &c.table, &c.out);
	if (ret)
		return ret;
	c.count = in->count;
	return commit(&st, &c, sizeof(c), TSR_OP_SC_GATHER, 0);
}

int accel_cmdbuf_sc_scatter_add(struct accel_cmdbuf *cb,
				enum tsr_sc_combiner combiner,
				const struct accel_sc_ids *in,
				const struct accel_tensor *grad,
				const struct accel_tensor *dst, float scale)
{
	struct stage st = { .cb = cb, .cmd = "sc_scatter_add" };
	struct tsr_cmd_sc_scatter_add c = { .combiner = combiner };
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = sc_lookup(&st, combiner, in, dst,
			ACCEL_USE_READ | ACCEL_USE_WRITE, "dst", grad,
			ACCEL_USE_READ, "grad", &c.in, &c.dst, &c.grad);
	if (ret)
		return ret;
	c.count = in->count;
	memcpy(&c.scale, &scale, sizeof(c.scale));
	return commit(&st, &c, sizeof(c), TSR_OP_SC_SCATTER_ADD, 0);
}
