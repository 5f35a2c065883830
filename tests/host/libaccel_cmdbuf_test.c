// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of libaccel's command-buffer builder: the encoding of
 * every command, the checks that mirror the chip's, the element types.
 * A command buffer without a device names raw VAs, so no chip is needed.
 */
#include <math.h>
#include <string.h>

#include "kselftest_harness.h"

#include <accel/accel.h>
#include <drm/tessera_accel.h>

#define VA 0x1000000ull

/* A raw-VA tensor. */
static struct accel_tensor t2d(uint64_t va, uint32_t rows, uint32_t cols,
			       enum tsr_dtype dtype)
{
	return (struct accel_tensor){
		.offset = va, .rows = rows, .cols = cols, .dtype = dtype,
	};
}

static struct tsr_tensor enc(uint64_t va, uint32_t rows, uint32_t cols,
			     uint32_t stride, enum tsr_dtype dtype)
{
	return (struct tsr_tensor){
		.va = va, .rows = rows, .cols = cols, .stride = stride,
		.dtype = dtype,
	};
}

static struct tsr_cmd_header hdr(uint8_t opcode, size_t size, uint16_t flags)
{
	return (struct tsr_cmd_header){
		.opcode = opcode, .size_qw = size / 8, .flags = flags,
	};
}

FIXTURE(cb) {
	struct accel_cmdbuf *cb;
};

FIXTURE_SETUP(cb)
{
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(NULL, &self->cb));
}

FIXTURE_TEARDOWN(cb)
{
	accel_cmdbuf_destroy(self->cb);
}

/* The bytes of command number @index, which must be @size bytes long. */
static const void *command(struct accel_cmdbuf *cb, size_t offset)
{
	const void *data;
	size_t size;

	if (accel_cmdbuf_data(cb, &data, &size) || offset >= size)
		return NULL;
	return (const uint8_t *)data + offset;
}

static size_t encoded_size(struct accel_cmdbuf *cb)
{
	const void *data;
	size_t size = 0;

	accel_cmdbuf_data(cb, &data, &size);
	return size;
}

/* ----------------------------------------------------------- encoding */

TEST_F(cb, header_only_commands_are_one_word)
{
	struct tsr_cmd_header nop = hdr(TSR_OP_NOP, 8, 0);
	struct tsr_cmd_header irq = hdr(TSR_OP_INTERRUPT, 8, 0);

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_interrupt(self->cb));
	EXPECT_EQ(2, accel_cmdbuf_count(self->cb));
	EXPECT_EQ(16, encoded_size(self->cb));
	EXPECT_EQ(0, memcmp(&nop, command(self->cb, 0), 8));
	EXPECT_EQ(0, memcmp(&irq, command(self->cb, 8), 8));
}

TEST_F(cb, dma_copy_encodes_three_dimensions)
{
	struct accel_region dst = { .offset = VA, .row_stride = 64,
				    .plane_stride = 1024 };
	struct accel_region src = { .offset = VA + 0x10000, .row_stride = 0,
				    .plane_stride = 48 };
	struct tsr_cmd_dma want = {
		.hdr = hdr(TSR_OP_DMA_COPY, sizeof(want), 0),
		.src = VA + 0x10000, .dst = VA, .size = { 48, 5, 3 },
		.src_stride = { 0, 48 }, .dst_stride = { 64, 1024 },
	};

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_dma_copy(self->cb, &dst, &src, 48, 5, 3));
	ASSERT_EQ(sizeof(want), encoded_size(self->cb));
	EXPECT_EQ(0, memcmp(&want, command(self->cb, 0), sizeof(want)));
}

TEST_F(cb, strides_of_a_single_row_or_plane_are_encoded_as_zero)
{
	struct accel_region dst = { .offset = VA, .row_stride = 3,
				    .plane_stride = 5 };
	struct tsr_cmd_dma want = {
		.hdr = hdr(TSR_OP_DMA_FILL, sizeof(want), 0),
		.src = 0xdeadbeef, .dst = VA, .size = { 256, 1, 1 },
	};

	/* Strides that do not matter are not checked either. */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_dma_fill(self->cb, &dst, 0xdeadbeef,
						  256, 1, 1));
	EXPECT_EQ(0, memcmp(&want, command(self->cb, 0), sizeof(want)));
}

TEST_F(cb, one_dimensional_helpers_encode_one_row)
{
	struct tsr_cmd_dma copy = {
		.hdr = hdr(TSR_OP_DMA_COPY, sizeof(copy), 0),
		.src = VA + 8, .dst = VA + 4096, .size = { 100, 1, 1 },
	};
	struct tsr_cmd_dma fill = {
		.hdr = hdr(TSR_OP_DMA_FILL, sizeof(fill), 0),
		.src = 7, .dst = VA, .size = { 64, 1, 1 },
	};

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_copy(self->cb, NULL, VA + 4096, NULL,
					      VA + 8, 100));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_fill(self->cb, NULL, VA, 7, 64));
	EXPECT_EQ(0, memcmp(&copy, command(self->cb, 0), sizeof(copy)));
	EXPECT_EQ(0, memcmp(&fill, command(self->cb, sizeof(copy)), sizeof(fill)));
}

TEST_F(cb, matmul_encodes_operands_and_flags)
{
	/* A is K x M transposed, B is N x K transposed: C is M x N. */
	struct accel_tensor a = t2d(VA, 32, 16, TSR_DTYPE_BF16);
	struct accel_tensor b = t2d(VA + 0x10000, 8, 32, TSR_DTYPE_BF16);
	struct accel_tensor c = t2d(VA + 0x20000, 16, 8, TSR_DTYPE_F32);
	uint16_t flags = TSR_MATMUL_TRANSPOSE_A | TSR_MATMUL_TRANSPOSE_B |
			 TSR_MATMUL_ACCUMULATE;
	struct tsr_cmd_matmul want = {
		.hdr = hdr(TSR_OP_MATMUL, sizeof(want), flags),
		.a = enc(VA, 32, 16, 16, TSR_DTYPE_BF16),
		.b = enc(VA + 0x10000, 8, 32, 32, TSR_DTYPE_BF16),
		.c = enc(VA + 0x20000, 16, 8, 12, TSR_DTYPE_F32),
	};

	c.stride = 12;
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_matmul(self->cb, &a, &b, &c, flags));
	EXPECT_EQ(0, memcmp(&want, command(self->cb, 0), sizeof(want)));
}

TEST_F(cb, int8_matmul_writes_int32)
{
	struct accel_tensor a = t2d(VA, 4, 8, TSR_DTYPE_I8);
	struct accel_tensor b = t2d(VA + 64, 8, 4, TSR_DTYPE_I8);
	struct accel_tensor c = t2d(VA + 128, 4, 4, TSR_DTYPE_I32);

	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_matmul(self->cb, &a, &b, &c, 0));
	c.dtype = TSR_DTYPE_F32;
	EXPECT_EQ(ACCEL_ERR_BAD_DTYPE, accel_cmdbuf_matmul(self->cb, &a, &b, &c, 0));
}

TEST_F(cb, vpu_encodes_used_operands_and_zeroes_the_rest)
{
	struct accel_tensor a = t2d(VA, 4, 8, TSR_DTYPE_F32);
	struct accel_tensor row = t2d(VA + 0x1000, 1, 8, TSR_DTYPE_BF16);
	struct accel_tensor col = t2d(VA + 0x2000, 4, 1, TSR_DTYPE_F32);
	struct accel_tensor out = t2d(VA + 0x3000, 4, 8, TSR_DTYPE_BF16);
	struct tsr_cmd_vpu unary = {
		.hdr = hdr(TSR_OP_VPU, sizeof(unary), 0), .op = TSR_VPU_GELU,
		.a = enc(VA, 4, 8, 8, TSR_DTYPE_F32),
		.out = enc(VA + 0x3000, 4, 8, 8, TSR_DTYPE_BF16),
	};
	struct tsr_cmd_vpu select = unary;

	select.op = TSR_VPU_SELECT;
	select.b = enc(VA + 0x1000, 1, 8, 8, TSR_DTYPE_BF16);
	select.c = enc(VA + 0x2000, 4, 1, 1, TSR_DTYPE_F32);
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_vpu(self->cb, TSR_VPU_GELU, &a, NULL,
					     NULL, &out));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_vpu(self->cb, TSR_VPU_SELECT, &a, &row,
					     &col, &out));
	EXPECT_EQ(0, memcmp(&unary, command(self->cb, 0), sizeof(unary)));
	EXPECT_EQ(0, memcmp(&select, command(self->cb, sizeof(unary)),
			    sizeof(select)));
}

TEST_F(cb, reduce_cast_and_transpose_encode_in_and_out)
{
	struct accel_tensor in = t2d(VA, 6, 10, TSR_DTYPE_F32);
	struct accel_tensor sums = t2d(VA + 0x1000, 6, 1, TSR_DTYPE_F32);
	struct accel_tensor ints = t2d(VA + 0x2000, 6, 10, TSR_DTYPE_I32);
	struct accel_tensor tr = t2d(VA + 0x3000, 10, 6, TSR_DTYPE_F32);
	struct tsr_cmd_reduce reduce = {
		.hdr = hdr(TSR_OP_REDUCE, sizeof(reduce), 0),
		.op = TSR_REDUCE_MAX, .axis = 1,
		.in = enc(VA, 6, 10, 10, TSR_DTYPE_F32),
		.out = enc(VA + 0x1000, 6, 1, 1, TSR_DTYPE_F32),
	};
	struct tsr_cmd_unary_copy cast = {
		.hdr = hdr(TSR_OP_CAST, sizeof(cast), 0),
		.in = reduce.in, .out = enc(VA + 0x2000, 6, 10, 10, TSR_DTYPE_I32),
	};
	struct tsr_cmd_unary_copy transpose = {
		.hdr = hdr(TSR_OP_TRANSPOSE, sizeof(transpose), 0),
		.in = reduce.in, .out = enc(VA + 0x3000, 10, 6, 6, TSR_DTYPE_F32),
	};
	size_t at = 0;

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_reduce(self->cb, TSR_REDUCE_MAX, 1,
						&in, &sums));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_cast(self->cb, &in, &ints));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_transpose(self->cb, &in, &tr));
	EXPECT_EQ(0, memcmp(&reduce, command(self->cb, at), sizeof(reduce)));
	at += sizeof(reduce);
	EXPECT_EQ(0, memcmp(&cast, command(self->cb, at), sizeof(cast)));
	at += sizeof(cast);
	EXPECT_EQ(0, memcmp(&transpose, command(self->cb, at), sizeof(transpose)));
	EXPECT_EQ(3, accel_cmdbuf_count(self->cb));
}

TEST_F(cb, semaphores_and_timestamps_name_one_word)
{
	static const uint8_t ops[] = {
		TSR_OP_SEM_WAIT, TSR_OP_SEM_SIGNAL, TSR_OP_SEM_INC,
	};
	struct tsr_cmd_timestamp ts = {
		.hdr = hdr(TSR_OP_TIMESTAMP, sizeof(ts), 0), .va = VA + 64,
	};
	unsigned int i;

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sem_wait(self->cb, NULL, VA, 5));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sem_signal(self->cb, NULL, VA + 8, 6));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sem_inc(self->cb, NULL, VA + 16, 7));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_timestamp(self->cb, NULL, VA + 64));
	for (i = 0; i < 3; i++) {
		struct tsr_cmd_sem want = {
			.hdr = hdr(ops[i], sizeof(want), 0),
			.va = VA + 8 * i, .value = 5 + i,
		};

		EXPECT_EQ(0, memcmp(&want, command(self->cb, i * sizeof(want)),
				    sizeof(want))) TH_LOG("opcode 0x%x", ops[i]);
	}
	EXPECT_EQ(0, memcmp(&ts, command(self->cb, 3 * sizeof(struct tsr_cmd_sem)),
			    sizeof(ts)));
}

TEST_F(cb, an_abortable_wait_on_the_links_sets_its_flag_and_no_other)
{
	struct tsr_cmd_sem_wait_abort want = {
		.hdr = hdr(TSR_OP_SEM_WAIT_ABORT, sizeof(want), TSR_SEM_WAIT_LINKS),
		.va = VA, .value = 3, .abort_va = VA + 8,
	};

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sem_wait_abort_flags(self->cb, NULL, VA,
							      3, NULL, VA + 8,
							      ACCEL_SEM_WAIT_LINKS));
	EXPECT_EQ(0, memcmp(&want, command(self->cb, 0), sizeof(want)));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sem_wait_abort(self->cb, NULL, VA, 3,
							NULL, VA + 8));
	want.hdr.flags = 0;
	EXPECT_EQ(0, memcmp(&want, command(self->cb, sizeof(want)),
			    sizeof(want)));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_cmdbuf_sem_wait_abort_flags(self->cb, NULL, VA, 3, NULL,
						    VA + 8, 2));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb), "flags"));
	EXPECT_EQ(2, accel_cmdbuf_count(self->cb));
}

TEST_F(cb, storage_grows_and_reset_empties_it)
{
	unsigned int i;

	for (i = 0; i < 20000; i++) {
		ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	}
	EXPECT_EQ(20000, accel_cmdbuf_count(self->cb));
	EXPECT_EQ(20000 * 8, encoded_size(self->cb));
	EXPECT_EQ(ACCEL_ERR_BAD_FLAGS,
		  accel_cmdbuf_matmul(self->cb, NULL, NULL, NULL, 0x80));
	EXPECT_STRNE("", accel_cmdbuf_last_error(self->cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_reset(self->cb));
	EXPECT_EQ(0, accel_cmdbuf_count(self->cb));
	EXPECT_EQ(0, encoded_size(self->cb));
	EXPECT_STREQ("", accel_cmdbuf_last_error(self->cb));
}

TEST_F(cb, a_full_command_buffer_is_too_large)
{
	struct accel_tensor a = t2d(VA, 4, 4, TSR_DTYPE_F32);
	size_t per = sizeof(struct tsr_cmd_vpu), n = 0;
	int ret;

	while ((ret = accel_cmdbuf_vpu(self->cb, TSR_VPU_RELU, &a, NULL, NULL,
				       &a)) == ACCEL_OK)
		n++;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, ret);
	EXPECT_EQ(DRM_TESSERA_MAX_CMDBUF_SIZE / per, n);
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb), "full"));
	/* Smaller commands still fit where a large one did not. */
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
}

/* ------------------------------------------------------------ checks */

/*
 * Each misuse gets the code the chip would report and leaves the command
 * buffer as it was, with a message naming @what.
 */
#define REJECTS(err, what, call) do { \
	uint32_t _count = accel_cmdbuf_count(self->cb); \
	size_t _size = encoded_size(self->cb); \
	EXPECT_EQ(err, call); \
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb), what)) \
		TH_LOG("message: %s", accel_cmdbuf_last_error(self->cb)); \
	EXPECT_EQ(_count, accel_cmdbuf_count(self->cb)); \
	EXPECT_EQ(_size, encoded_size(self->cb)); \
} while (0)

TEST_F(cb, element_types_are_checked_per_operand)
{
	struct accel_tensor bf = t2d(VA, 4, 4, TSR_DTYPE_BF16);
	struct accel_tensor f = t2d(VA, 4, 4, TSR_DTYPE_F32);
	struct accel_tensor i32 = t2d(VA, 4, 4, TSR_DTYPE_I32);
	struct accel_tensor i8 = t2d(VA, 4, 4, TSR_DTYPE_I8);
	struct accel_tensor none = t2d(VA, 4, 4, 0);

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "a.dtype is i32",
		accel_cmdbuf_matmul(self->cb, &i32, &i32, &f, 0));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "b.dtype is f32; it must be bf16",
		accel_cmdbuf_matmul(self->cb, &bf, &f, &f, 0));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "c.dtype is i32",
		accel_cmdbuf_matmul(self->cb, &bf, &bf, &i32, 0));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "a.dtype is i8",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_ABS, &i8, NULL, NULL, &f));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "out.dtype is unknown",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_ABS, &f, NULL, NULL, &none));
	/* The integer ops take I32 only all through, the others never. */
	REJECTS(ACCEL_ERR_BAD_DTYPE, "b.dtype is f32",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_ADD, &i32, &f, NULL, &i32));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "out.dtype is i32",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_DIV, &i32, &i32, NULL, &i32));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "a.dtype is i32",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_ADD, &i32, &i32, NULL, &f));
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_vpu(self->cb, TSR_VPU_MAX, &i32, &i32,
					     NULL, &i32));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "in.dtype is i32",
		accel_cmdbuf_reduce(self->cb, TSR_REDUCE_SUM, 0, &i32, &f));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "in.dtype is i8",
		accel_cmdbuf_cast(self->cb, &i8, &f));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "transpose: out.dtype is f32 but in.dtype is bf16",
		accel_cmdbuf_transpose(self->cb, &bf, &f));
	/* Any type transposes. */
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_transpose(self->cb, &i8, &i8));
}

TEST_F(cb, shapes_are_checked)
{
	struct accel_tensor a = t2d(VA, 8, 16, TSR_DTYPE_F32);
	struct accel_tensor b = t2d(VA, 8, 4, TSR_DTYPE_F32);
	struct accel_tensor c = t2d(VA, 8, 4, TSR_DTYPE_F32);
	struct accel_tensor zero = t2d(VA, 0, 4, TSR_DTYPE_F32);
	struct accel_tensor huge = t2d(VA, TSR_MAX_DIM + 1, 1, TSR_DTYPE_F32);
	struct accel_tensor col = t2d(VA, 8, 1, TSR_DTYPE_F32);
	struct accel_tensor odd = t2d(VA, 2, 16, TSR_DTYPE_F32);
	struct accel_region r = { .offset = VA, .row_stride = 64 };

	REJECTS(ACCEL_ERR_BAD_SHAPE, "a's columns must equal b's rows",
		accel_cmdbuf_matmul(self->cb, &a, &b, &c, 0));
	b.rows = 16;
	c.cols = 5;
	REJECTS(ACCEL_ERR_BAD_SHAPE, "c is 8x5 but op(a) x op(b) is 8x4",
		accel_cmdbuf_matmul(self->cb, &a, &b, &c, 0));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "in is 0x4",
		accel_cmdbuf_cast(self->cb, &zero, &c));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "dimensions are 1 to",
		accel_cmdbuf_transpose(self->cb, &huge, &huge));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "a is 8x5 but out is 8x16",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_ADD, &c, &a, NULL, &a));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "b is 2x16; it must be out's shape",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_ADD, &a, &odd, NULL, &a));
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_vpu(self->cb, TSR_VPU_ADD, &a, &col,
					     NULL, &a));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "along axis 0, out must be 1x16, not 8x1",
		accel_cmdbuf_reduce(self->cb, TSR_REDUCE_SUM, 0, &a, &col));
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_reduce(self->cb, TSR_REDUCE_SUM, 1,
						&a, &col));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "out must be 16x8, not 8x16",
		accel_cmdbuf_transpose(self->cb, &a, &a));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "cast: in is 8x16 but out is 8x5",
		accel_cmdbuf_cast(self->cb, &a, &c));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "each must be at least 1",
		accel_cmdbuf_dma_copy(self->cb, &r, &r, 16, 0, 1));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "not a multiple of 4",
		accel_cmdbuf_dma_fill(self->cb, &r, 0, 6, 1, 1));
}

TEST_F(cb, strides_are_checked)
{
	struct accel_tensor a = t2d(VA, 8, 16, TSR_DTYPE_F32);
	struct accel_region dst = { .offset = VA, .row_stride = 32,
				    .plane_stride = 100 };
	struct accel_region src = { .offset = VA + 0x10000 };

	a.stride = 15;
	REJECTS(ACCEL_ERR_BAD_STRIDE, "in.stride 15 is less than its 16 columns",
		accel_cmdbuf_cast(self->cb, &a, &a));
	REJECTS(ACCEL_ERR_BAD_STRIDE, "dst.row_stride 32 is less than a row",
		accel_cmdbuf_dma_copy(self->cb, &dst, &src, 33, 2, 1));
	/* 3 rows of 32 bytes at a stride of 32 span 96 bytes. */
	dst.plane_stride = 92;
	REJECTS(ACCEL_ERR_BAD_STRIDE, "dst.plane_stride 92 is less than a plane (96 bytes)",
		accel_cmdbuf_dma_copy(self->cb, &dst, &src, 32, 3, 2));
	dst.plane_stride = 96;
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_dma_copy(self->cb, &dst, &src, 32, 3, 2));
}

TEST_F(cb, alignment_is_checked)
{
	struct accel_tensor a = t2d(VA + 2, 4, 4, TSR_DTYPE_F32);
	struct accel_tensor h = t2d(VA + 2, 4, 4, TSR_DTYPE_BF16);
	struct accel_region dst = { .offset = VA + 2 };
	struct accel_region strided = { .offset = VA, .row_stride = 6 };

	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "in is at VA 0x1000002, not a multiple of 4",
		accel_cmdbuf_transpose(self->cb, &a, &a));
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_transpose(self->cb, &h, &h));
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "not a multiple of 8",
		accel_cmdbuf_sem_inc(self->cb, NULL, VA + 4, 1));
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "timestamp",
		accel_cmdbuf_timestamp(self->cb, NULL, VA + 12));
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "dst is at VA",
		accel_cmdbuf_dma_fill(self->cb, &dst, 0, 4, 1, 1));
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "strides 6 and 0",
		accel_cmdbuf_dma_fill(self->cb, &strided, 0, 4, 2, 1));
	/* A copy moves bytes: any alignment. */
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_dma_copy(self->cb, &dst, &strided, 5,
						  1, 1));
}

TEST_F(cb, unknown_flags_ops_and_axes_are_rejected)
{
	struct accel_tensor a = t2d(VA, 4, 4, TSR_DTYPE_F32);
	struct accel_tensor row = t2d(VA, 1, 4, TSR_DTYPE_F32);

	REJECTS(ACCEL_ERR_BAD_FLAGS, "unknown bits 0x8",
		accel_cmdbuf_matmul(self->cb, &a, &a, &a, 0x8 | TSR_MATMUL_ACCUMULATE));
	REJECTS(ACCEL_ERR_BAD_OP, "op 11",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_RSQRT + 1, &a, NULL, NULL, &a));
	REJECTS(ACCEL_ERR_BAD_OP, "op 0",
		accel_cmdbuf_vpu(self->cb, 0, &a, NULL, NULL, &a));
	REJECTS(ACCEL_ERR_BAD_OP, "op 4 along axis 0",
		accel_cmdbuf_reduce(self->cb, TSR_REDUCE_MIN + 1, 0, &a, &row));
	REJECTS(ACCEL_ERR_BAD_OP, "axis 2",
		accel_cmdbuf_reduce(self->cb, TSR_REDUCE_SUM, 2, &a, &row));
}

TEST_F(cb, operands_are_given_exactly_as_the_op_needs)
{
	struct accel_tensor a = t2d(VA, 4, 4, TSR_DTYPE_F32);

	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "op 1 takes no b",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_NEG, &a, &a, NULL, &a));
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "op 34 takes no c",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_MUL, &a, &a, &a, &a));
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "b is missing",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_MUL, &a, NULL, NULL, &a));
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "c is missing",
		accel_cmdbuf_vpu(self->cb, TSR_VPU_SELECT, &a, &a, NULL, &a));
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "out is missing",
		accel_cmdbuf_cast(self->cb, &a, NULL));
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "src is missing",
		accel_cmdbuf_dma_copy(self->cb, &(struct accel_region){ .offset = VA },
				      NULL, 4, 1, 1));
}

TEST_F(cb, transfers_beyond_four_gib_are_too_large)
{
	struct accel_region dst = { .offset = VA, .row_stride = 65536,
				    .plane_stride = 65536ull * 65536 };
	struct accel_region src = dst;

	REJECTS(ACCEL_ERR_TOO_LARGE, "a transfer moves at most 4294967296",
		accel_cmdbuf_dma_copy(self->cb, &dst, &src, 65536, 65536, 2));
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_dma_copy(self->cb, &dst, &src, 65536,
						  65536, 1));
}

TEST(null_arguments_are_invalid)
{
	struct accel_tensor a = t2d(VA, 4, 4, TSR_DTYPE_F32);
	struct accel_cmdbuf *cb;
	struct accel_job *job;
	const void *data;
	size_t size;

	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_cmdbuf_create(NULL, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_cmdbuf_nop(NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_cmdbuf_reset(NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_cmdbuf_cast(NULL, &a, &a));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_cmdbuf_data(NULL, &data, &size));
	EXPECT_EQ(0, accel_cmdbuf_count(NULL));
	EXPECT_STREQ("", accel_cmdbuf_last_error(NULL));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(NULL, &cb));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_cmdbuf_use_buffer(cb, NULL, 1));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_submit(NULL, cb, NULL, &job));
	accel_cmdbuf_destroy(cb);
	accel_cmdbuf_destroy(NULL);
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_job_wait(NULL, 0));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_job_status(NULL, NULL));
	accel_job_destroy(NULL);
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_buffer_create(NULL, 4096, 0, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_buffer_upload(NULL, 0, &a, 1));
	EXPECT_EQ(0, accel_buffer_size(NULL));
	EXPECT_EQ(0, accel_buffer_device_va(NULL));
	accel_buffer_destroy(NULL);
}

/* -------------------------------------------------------- element types */

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

TEST(bf16_rounds_to_nearest_even)
{
	/* Halfway cases go to the even neighbour. */
	EXPECT_EQ(0x3f80, accel_f32_to_bf16(from_bits(0x3f808000)));
	EXPECT_EQ(0x3f82, accel_f32_to_bf16(from_bits(0x3f818000)));
	/* Above and below halfway. */
	EXPECT_EQ(0x3f81, accel_f32_to_bf16(from_bits(0x3f808001)));
	EXPECT_EQ(0x3f80, accel_f32_to_bf16(from_bits(0x3f807fff)));
	EXPECT_EQ(0xbf80, accel_f32_to_bf16(-1.0f));
	/* Beyond bf16's range: infinity. */
	EXPECT_EQ(0x7f80, accel_f32_to_bf16(from_bits(0x7f7fffff)));
	EXPECT_EQ(0x7f80, accel_f32_to_bf16(INFINITY));
	/* NaN stays NaN, quieted, sign kept. */
	EXPECT_EQ(0xffc0, accel_f32_to_bf16(from_bits(0xff800001)) & 0xffc0);
	EXPECT_TRUE(isnan(accel_bf16_to_f32(accel_f32_to_bf16(NAN))));
}

TEST(bf16_widens_exactly)
{
	uint32_t h;

	for (h = 0; h < 0x10000; h++) {
		float f = accel_bf16_to_f32(h);

		ASSERT_EQ(h << 16, bits(f));
		if (!isnan(f)) {
			ASSERT_EQ(h, accel_f32_to_bf16(f));
		}
	}
}

TEST(dtypes_have_sizes_and_names)
{
	EXPECT_EQ(4, accel_dtype_size(TSR_DTYPE_F32));
	EXPECT_EQ(2, accel_dtype_size(TSR_DTYPE_BF16));
	EXPECT_EQ(4, accel_dtype_size(TSR_DTYPE_I32));
	EXPECT_EQ(1, accel_dtype_size(TSR_DTYPE_I8));
	EXPECT_EQ(0, accel_dtype_size(0));
	EXPECT_STREQ("bf16", accel_dtype_name(TSR_DTYPE_BF16));
	EXPECT_STREQ("unknown", accel_dtype_name(99));
}

TEST(chip_error_codes_have_their_names)
{
	unsigned int a, b;

	EXPECT_STREQ("NONE", accel_chip_error_name(TSR_ERR_NONE));
	EXPECT_STREQ("MMU_UNMAPPED", accel_chip_error_name(TSR_ERR_MMU_UNMAPPED));
	EXPECT_STREQ("TOO_LARGE", accel_chip_error_name(TSR_ERR_TOO_LARGE));
	EXPECT_STREQ("UNKNOWN", accel_chip_error_name(TSR_ERR_COUNT));
	for (a = 0; a < TSR_ERR_COUNT; a++) {
		for (b = a + 1; b < TSR_ERR_COUNT; b++) {
			EXPECT_STRNE(accel_chip_error_name(a),
				     accel_chip_error_name(b));
		}
	}
}

/* ------------------------------------------------------------ SparseCore */

static struct accel_sc_ids sc_ids(uint64_t va, uint32_t count, bool weighted)
{
	return (struct accel_sc_ids){
		.row_ids = va, .col_ids = va + 0x10000,
		.weights = weighted ? va + 0x20000 : ACCEL_SC_UNWEIGHTED,
		.count = count,
	};
}

static const struct accel_sc_limits sc_limits = {
	.partitions = 4, .samples = 32, .vocab = 1000, .max_ids = 16,
	.max_unique_ids = 8, .flags = TSR_SC_DROP,
};

TEST_F(cb, sc_partition_encodes_its_limits_ids_and_counts)
{
	struct accel_sc_ids in = sc_ids(VA, 100, false);
	struct accel_sc_ids out = sc_ids(2 * VA, 64, true);
	struct accel_region counts = { .offset = 3 * VA };
	const struct tsr_cmd_sc_partition *c;

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sc_partition(self->cb, &sc_limits,
						      &in, &out, &counts));
	c = command(self->cb, 0);
	ASSERT_NE(NULL, c);
	EXPECT_EQ(TSR_OP_SC_PARTITION, c->hdr.opcode);
	EXPECT_EQ(sizeof(*c) / 8, c->hdr.size_qw);
	EXPECT_EQ(TSR_SC_DROP, c->hdr.flags);
	EXPECT_EQ(100, c->count);
	EXPECT_EQ(4, c->partitions);
	EXPECT_EQ(32, c->samples);
	EXPECT_EQ(1000, c->vocab);
	EXPECT_EQ(16, c->max_ids);
	EXPECT_EQ(8, c->max_unique_ids);
	EXPECT_EQ(VA, c->in.row_ids);
	EXPECT_EQ(VA + 0x10000, c->in.col_ids);
	EXPECT_EQ(0, c->in.weights);
	EXPECT_EQ(2 * VA + 0x20000, c->out.weights);
	EXPECT_EQ(3 * VA, c->counts);
	EXPECT_EQ(sizeof(*c), encoded_size(self->cb));
}

TEST_F(cb, sc_gather_and_scatter_add_encode_their_operands)
{
	struct accel_sc_ids in = sc_ids(VA, 10, true);
	struct accel_tensor table = t2d(2 * VA, 100, 12, TSR_DTYPE_BF16);
	struct accel_tensor rows = t2d(3 * VA, 4, 12, TSR_DTYPE_F32);
	const struct tsr_cmd_sc_gather *g;
	const struct tsr_cmd_sc_scatter_add *s;
	float scale;

	table.stride = 16;
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sc_gather(self->cb, TSR_SC_MEAN, &in,
						   &table, &rows));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sc_scatter_add(self->cb, TSR_SC_SQRTN,
							&in, &rows, &table,
							-0.5f));
	g = command(self->cb, 0);
	s = command(self->cb, sizeof(*g));
	ASSERT_NE(NULL, s);
	EXPECT_EQ(TSR_OP_SC_GATHER, g->hdr.opcode);
	EXPECT_EQ(sizeof(*g) / 8, g->hdr.size_qw);
	EXPECT_EQ(TSR_SC_MEAN, g->combiner);
	EXPECT_EQ(10, g->count);
	EXPECT_EQ(VA + 0x20000, g->in.weights);
	EXPECT_EQ(0, memcmp(&g->table, &(struct tsr_tensor){
		.va = 2 * VA, .rows = 100, .cols = 12, .stride = 16,
		.dtype = TSR_DTYPE_BF16 }, sizeof(g->table)));
	EXPECT_EQ(3 * VA, g->out.va);
	EXPECT_EQ(TSR_OP_SC_SCATTER_ADD, s->hdr.opcode);
	EXPECT_EQ(sizeof(*s) / 8, s->hdr.size_qw);
	EXPECT_EQ(TSR_SC_SQRTN, s->combiner);
	EXPECT_EQ(3 * VA, s->grad.va);
	EXPECT_EQ(2 * VA, s->dst.va);
	memcpy(&scale, &s->scale, sizeof(scale));
	EXPECT_EQ(-0.5f, scale);
	EXPECT_EQ(0, s->reserved);
}

TEST_F(cb, sc_partition_limits_are_checked)
{
	struct accel_sc_ids in = sc_ids(VA, 100, false);
	struct accel_sc_ids out = sc_ids(2 * VA, 64, true);
	struct accel_region counts = { .offset = 3 * VA };
	struct accel_sc_limits l;

#define PARTITION_REJECTS(err, what, field, value) do { \
	l = sc_limits; \
	l.field = (value); \
	REJECTS(err, what, accel_cmdbuf_sc_partition(self->cb, &l, &in, \
						     &out, &counts)); \
} while (0)
	PARTITION_REJECTS(ACCEL_ERR_BAD_FLAGS, "unknown bits 0x2", flags, 3);
	PARTITION_REJECTS(ACCEL_ERR_BAD_SHAPE, "0 partitions", partitions, 0);
	PARTITION_REJECTS(ACCEL_ERR_BAD_SHAPE, "4097 partitions", partitions,
			  TSR_SC_MAX_PARTITIONS + 1);
	PARTITION_REJECTS(ACCEL_ERR_BAD_SHAPE, "0 samples", samples, 0);
	PARTITION_REJECTS(ACCEL_ERR_BAD_SHAPE, "vocab 0", vocab, 0);
	PARTITION_REJECTS(ACCEL_ERR_BAD_SHAPE, "max_ids 0", max_ids, 0);
	PARTITION_REJECTS(ACCEL_ERR_BAD_SHAPE, "max_unique_ids 17",
			  max_unique_ids, 17);
	PARTITION_REJECTS(ACCEL_ERR_BAD_SHAPE, "out has 64 slots; it must have partitions x max_ids = 60",
			  max_ids, 15);
	l = sc_limits;
	l.partitions = 4096;
	l.max_ids = 1024;
	REJECTS(ACCEL_ERR_TOO_LARGE, "over 2097152 slots",
		accel_cmdbuf_sc_partition(self->cb, &l, &in, &out, &counts));
#undef PARTITION_REJECTS
	in.count = TSR_SC_MAX_ENTRIES + 1;
	REJECTS(ACCEL_ERR_TOO_LARGE, "in has 1048577 ids",
		accel_cmdbuf_sc_partition(self->cb, &sc_limits, &in, &out,
					  &counts));
	in.count = 100;
	in.col_ids += 2;
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "in.col_ids is at VA",
		accel_cmdbuf_sc_partition(self->cb, &sc_limits, &in, &out,
					  &counts));
	in.col_ids -= 2;
	out.weights = 0;
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "use ACCEL_SC_UNWEIGHTED",
		accel_cmdbuf_sc_partition(self->cb, &sc_limits, &in, &out,
					  &counts));
	out.weights = ACCEL_SC_UNWEIGHTED;
	counts.offset += 1;
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "counts is at VA",
		accel_cmdbuf_sc_partition(self->cb, &sc_limits, &in, &out,
					  &counts));
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "counts is missing",
		accel_cmdbuf_sc_partition(self->cb, &sc_limits, &in, &out,
					  NULL));
	counts.offset -= 1;
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_sc_partition(self->cb, &sc_limits,
						      &in, &out, &counts));
}

TEST_F(cb, sc_lookups_are_checked)
{
	struct accel_sc_ids in = sc_ids(VA, 10, false);
	struct accel_tensor table = t2d(2 * VA, 100, 8, TSR_DTYPE_F32);
	struct accel_tensor rows = t2d(3 * VA, 4, 8, TSR_DTYPE_F32);
	struct accel_tensor i32 = t2d(2 * VA, 100, 8, TSR_DTYPE_I32);
	struct accel_tensor wide = t2d(2 * VA, 100, 2048, TSR_DTYPE_F32);
	struct accel_tensor wide_rows = t2d(3 * VA, 4, 2048, TSR_DTYPE_F32);

	REJECTS(ACCEL_ERR_BAD_OP, "combiner 4",
		accel_cmdbuf_sc_gather(self->cb, 4, &in, &table, &rows));
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "in is missing",
		accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, NULL, &table,
				       &rows));
	REJECTS(ACCEL_ERR_BAD_DTYPE, "table.dtype is i32",
		accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, &in, &i32, &rows));
	table.stride = 12;
	REJECTS(ACCEL_ERR_BAD_STRIDE, "rows of 48 bytes",
		accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, &in, &table,
				       &rows));
	table.stride = 8;
	table.offset += 16;
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "tables are 32-byte aligned",
		accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, &in, &table,
				       &rows));
	table.offset -= 16;
	rows.cols = 7;
	REJECTS(ACCEL_ERR_BAD_SHAPE, "out has 7 columns, table 8",
		accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, &in, &table,
				       &rows));
	REJECTS(ACCEL_ERR_BAD_SHAPE, "grad has 7 columns, dst 8",
		accel_cmdbuf_sc_scatter_add(self->cb, TSR_SC_SUM, &in, &rows,
					    &table, 1.0f));
	rows.cols = 8;
	in.count = 1u << 20;
	REJECTS(ACCEL_ERR_TOO_LARGE, "over 2^30 multiply-adds",
		accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, &in, &wide,
				       &wide_rows));
	in.count = 10;
	wide_rows.rows = 1u << 18;
	REJECTS(ACCEL_ERR_TOO_LARGE, "out is 262144x2048, over 268435456 elements",
		accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, &in, &wide,
				       &wide_rows));
	in.row_ids += 1;
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "in.row_ids is at VA",
		accel_cmdbuf_sc_scatter_add(self->cb, TSR_SC_SUM, &in, &rows,
					    &table, 1.0f));
	in.row_ids -= 1;
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, &in,
						   &table, &rows));
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_sc_scatter_add(self->cb, TSR_SC_SUM,
							&in, &rows, &table,
							1.0f));
}

TEST_HARNESS_MAIN
