// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of libaccel's ICI calls that need no chip: the encoding
 * of ICI_WRITE and its checks, coordinates in a slice, link state names,
 * the ICI error codes.  A command buffer without a device names raw VAs.
 */
#include <string.h>

#include "kselftest_harness.h"

#include <accel/accel.h>
#include <drm/tessera_accel.h>

#define VA 0x1000000ull

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

static const void *encoded(struct accel_cmdbuf *cb, size_t *size)
{
	const void *data = NULL;

	*size = 0;
	accel_cmdbuf_data(cb, &data, size);
	return data;
}

static struct tsr_cmd_header hdr(uint16_t flags)
{
	return (struct tsr_cmd_header){
		.opcode = TSR_OP_ICI_WRITE,
		.size_qw = sizeof(struct tsr_cmd_ici_write) / 8,
		.flags = flags,
	};
}

/* A valid strided write with a semaphore; tests change one field. */
static struct accel_ici_write strided(void)
{
	return (struct accel_ici_write){
		.dst = { { 1, 2, 3 } }, .window = 7, .key = 0x0123456789abcdefull,
		.src_offset = VA, .src_stride = 256, .offset = 64,
		.dst_stride = 512, .rows = 4, .row_bytes = 200,
		.flags = TSR_ICI_WRITE_SEM, .sem_offset = 4096, .sem_add = 3,
	};
}

/* ----------------------------------------------------------- encoding */

TEST_F(cb, ici_write_encodes_every_field)
{
	struct accel_ici_write w = strided();
	struct tsr_cmd_ici_write want = {
		.hdr = hdr(TSR_ICI_WRITE_SEM),
		.dst = { 1, 2, 3 }, .window = 7, .key = 0x0123456789abcdefull,
		.src = VA, .src_stride = 256, .offset = 64, .dst_stride = 512,
		.rows = 4, .row_bytes = 200, .sem_offset = 4096, .sem_add = 3,
	};
	const void *data;
	size_t size;

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(self->cb, &w));
	data = encoded(self->cb, &size);
	ASSERT_EQ(sizeof(want), size);
	EXPECT_EQ(0, memcmp(&want, data, sizeof(want)));
	EXPECT_EQ(1, accel_cmdbuf_count(self->cb));
}

TEST_F(cb, a_single_row_is_encoded_without_strides)
{
	struct accel_ici_write w = {
		.dst = { { 3, 0, 0 } }, .window = 255, .key = 1,
		.src_offset = VA + 5, .src_stride = 1, .offset = 9,
		.dst_stride = 2, .rows = 1, .row_bytes = 1000,
	};
	struct tsr_cmd_ici_write want = {
		.hdr = hdr(0), .dst = { 3, 0, 0 }, .window = 255, .key = 1,
		.src = VA + 5, .offset = 9, .rows = 1, .row_bytes = 1000,
	};
	const void *data;
	size_t size;

	/* Strides that do not matter are not checked either. */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(self->cb, &w));
	data = encoded(self->cb, &size);
	ASSERT_EQ(sizeof(want), size);
	EXPECT_EQ(0, memcmp(&want, data, sizeof(want)));
}

TEST_F(cb, the_increment_alone_carries_no_data)
{
	struct accel_coords dst = { { 0, 1, 0 } };
	struct tsr_cmd_ici_write want = {
		.hdr = hdr(TSR_ICI_WRITE_SEM), .dst = { 0, 1, 0 }, .window = 2,
		.key = 99, .sem_offset = 8, .sem_add = 1,
	};
	struct accel_ici_write w = {
		.dst = dst, .window = 2, .key = 99, .src_offset = VA,
		.offset = 12, .flags = TSR_ICI_WRITE_SEM, .sem_offset = 8,
		.sem_add = 1,
	};
	const void *data;
	size_t size;

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_sem_inc(self->cb, dst, 2, 99, 8, 1));
	/* The same through ici_write: source and offset go unused. */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(self->cb, &w));
	data = encoded(self->cb, &size);
	ASSERT_EQ(2 * sizeof(want), size);
	EXPECT_EQ(0, memcmp(&want, data, sizeof(want)));
	EXPECT_EQ(0, memcmp(&want, (const uint8_t *)data + sizeof(want),
			    sizeof(want)));
}

/* ------------------------------------------------------------ checks */

/*
 * Each misuse gets the code the chip would report and leaves the command
 * buffer as it was, with a message naming @what.
 */
#define REJECTS(err, what, call) do { \
	size_t _size, _before; \
	uint32_t _count = accel_cmdbuf_count(self->cb); \
	encoded(self->cb, &_before); \
	EXPECT_EQ(err, call); \
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb), what)) \
		TH_LOG("message: %s", accel_cmdbuf_last_error(self->cb)); \
	EXPECT_EQ(_count, accel_cmdbuf_count(self->cb)); \
	encoded(self->cb, &_size); \
	EXPECT_EQ(_before, _size); \
} while (0)

TEST_F(cb, unknown_flags_are_rejected)
{
	struct accel_ici_write w = strided();

	w.flags |= 0x10;
	REJECTS(ACCEL_ERR_BAD_FLAGS, "ici_write: flags 0x11 has unknown bits 0x10",
		accel_cmdbuf_ici_write(self->cb, &w));
}

TEST_F(cb, rows_and_row_bytes_are_both_set_or_both_zero)
{
	struct accel_ici_write w = strided();

	w.rows = 0;
	REJECTS(ACCEL_ERR_BAD_SHAPE, "0 rows of 200 bytes",
		accel_cmdbuf_ici_write(self->cb, &w));
	w = strided();
	w.row_bytes = 0;
	REJECTS(ACCEL_ERR_BAD_SHAPE, "4 rows of 0 bytes",
		accel_cmdbuf_ici_write(self->cb, &w));
}

TEST_F(cb, no_data_without_the_semaphore_is_no_command)
{
	struct accel_ici_write w = { .key = 1 };

	REJECTS(ACCEL_ERR_BAD_SHAPE, "both 0 with TSR_ICI_WRITE_SEM",
		accel_cmdbuf_ici_write(self->cb, &w));
}

TEST_F(cb, semaphore_fields_without_the_flag_are_rejected)
{
	struct accel_ici_write w = strided();

	w.flags = 0;
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT,
		"sem_offset 4096 and sem_add 3 must be 0 without TSR_ICI_WRITE_SEM",
		accel_cmdbuf_ici_write(self->cb, &w));
	w.sem_offset = 0;
	w.sem_add = 0;
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(self->cb, &w));
}

TEST_F(cb, the_semaphore_is_eight_byte_aligned)
{
	struct accel_ici_write w = strided();
	struct accel_coords dst = { { 0 } };

	w.sem_offset = 4100;
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "ici_write: sem_offset 4100 is not a multiple of 8",
		accel_cmdbuf_ici_write(self->cb, &w));
	REJECTS(ACCEL_ERR_BAD_ALIGNMENT, "ici_sem_inc: sem_offset 12 is not a multiple of 8",
		accel_cmdbuf_ici_sem_inc(self->cb, dst, 0, 1, 12, 1));
}

TEST_F(cb, transfers_beyond_four_gib_are_too_large)
{
	struct accel_ici_write w = strided();

	w.rows = 65537;
	w.row_bytes = 65536;
	w.src_stride = 65536;
	w.dst_stride = 65536;
	REJECTS(ACCEL_ERR_TOO_LARGE, "a transfer moves at most 4294967296",
		accel_cmdbuf_ici_write(self->cb, &w));
	w.rows = 65536;
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(self->cb, &w));
}

TEST_F(cb, strides_are_at_least_a_row)
{
	struct accel_ici_write w = strided();

	w.src_stride = 199;
	REJECTS(ACCEL_ERR_BAD_STRIDE, "src_stride 199 is less than a row (200 bytes)",
		accel_cmdbuf_ici_write(self->cb, &w));
	w = strided();
	w.dst_stride = 0;
	REJECTS(ACCEL_ERR_BAD_STRIDE, "dst_stride 0 is less than a row (200 bytes)",
		accel_cmdbuf_ici_write(self->cb, &w));
	/* Rows may abut. */
	w.src_stride = 200;
	w.dst_stride = 200;
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(self->cb, &w));
}

TEST_F(cb, rows_must_not_run_past_the_end_of_the_address_space)
{
	struct accel_ici_write w = strided();

	w.offset = UINT64_MAX - 1000;
	REJECTS(ACCEL_ERR_BAD_STRIDE, "end beyond 2^64",
		accel_cmdbuf_ici_write(self->cb, &w));
	w.offset = 0;
	w.dst_stride = UINT64_MAX / 2;
	REJECTS(ACCEL_ERR_BAD_STRIDE, "end beyond 2^64",
		accel_cmdbuf_ici_write(self->cb, &w));
}

TEST_F(cb, window_ids_are_those_a_chip_has)
{
	struct accel_ici_write w = strided();
	struct accel_coords dst = { { 0 } };

	w.window = DRM_TESSERA_MAX_WINDOWS;
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "window 256; a chip's windows are 0 to 255",
		accel_cmdbuf_ici_write(self->cb, &w));
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "ici_sem_inc: window 4096",
		accel_cmdbuf_ici_sem_inc(self->cb, dst, 4096, 1, 0, 1));
}

TEST_F(cb, a_missing_request_is_named)
{
	REJECTS(ACCEL_ERR_INVALID_ARGUMENT, "ici_write: the request is missing",
		accel_cmdbuf_ici_write(self->cb, NULL));
}

TEST(null_command_buffers_and_handles_are_invalid)
{
	struct accel_ici_write w = strided();
	struct accel_coords dst = { { 0 } };
	struct accel_link_info li;
	struct accel_window *win;

	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_cmdbuf_ici_write(NULL, &w));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_cmdbuf_ici_sem_inc(NULL, dst, 0, 1, 0, 1));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_link_get_info(NULL, 0, &li));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_window_open(NULL, NULL, 0, 4096, ACCEL_WINDOW_WRITE,
				    NULL, &win));
	EXPECT_EQ(0, accel_window_id(NULL));
	EXPECT_EQ(0, accel_window_key(NULL));
	EXPECT_EQ(0, accel_window_device_va(NULL));
	accel_window_close(NULL);
}

/* ----------------------------------------------------------- coordinates */

/* Every chip of @topology: index -> coords -> index, each once. */
static void round_trip(struct __test_metadata *_metadata,
		       const uint32_t topology[3])
{
	uint32_t chips = topology[0] * topology[1] * topology[2], i, back;
	struct accel_coords c;

	for (i = 0; i < chips; i++) {
		ASSERT_EQ(ACCEL_OK, accel_coords_from_index(topology, i, &c));
		ASSERT_TRUE(accel_coords_in_slice(topology, c));
		ASSERT_EQ(ACCEL_OK, accel_coords_to_index(topology, c, &back));
		ASSERT_EQ(i, back);
		/* x moves fastest: x + X * (y + Y * z). */
		ASSERT_EQ(i, c.c[0] + topology[0] * (c.c[1] + topology[1] * c.c[2]));
	}
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_coords_from_index(topology, chips, &c));
}

TEST(coordinates_round_trip_on_2x2)
{
	const uint32_t topology[3] = { 2, 2, 1 };

	round_trip(_metadata, topology);
}

TEST(coordinates_round_trip_on_4x4)
{
	const uint32_t topology[3] = { 4, 4, 1 };

	round_trip(_metadata, topology);
}

TEST(coordinates_round_trip_on_4x4x4)
{
	const uint32_t topology[3] = { 4, 4, 4 };
	struct accel_coords c;

	round_trip(_metadata, topology);
	ASSERT_EQ(ACCEL_OK, accel_coords_from_index(topology, 27, &c));
	EXPECT_EQ(3, c.c[0]);
	EXPECT_EQ(2, c.c[1]);
	EXPECT_EQ(1, c.c[2]);
}

TEST(coordinates_outside_the_slice_are_refused)
{
	const uint32_t topology[3] = { 4, 2, 1 };
	struct accel_coords x = { { 4, 0, 0 } }, y = { { 0, 2, 0 } };
	struct accel_coords z = { { 0, 0, 1 } }, last = { { 3, 1, 0 } };
	uint32_t index;

	EXPECT_FALSE(accel_coords_in_slice(topology, x));
	EXPECT_FALSE(accel_coords_in_slice(topology, y));
	EXPECT_FALSE(accel_coords_in_slice(topology, z));
	EXPECT_TRUE(accel_coords_in_slice(topology, last));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_coords_to_index(topology, x, &index));
	EXPECT_EQ(ACCEL_OK, accel_coords_to_index(topology, last, &index));
	EXPECT_EQ(7, index);
}

TEST(topologies_the_chip_cannot_have_are_refused)
{
	const uint32_t zero[3] = { 4, 0, 1 }, wide[3] = { 256, 1, 1 };
	struct accel_coords c = { { 0 } };
	uint32_t index;

	EXPECT_FALSE(accel_coords_in_slice(zero, c));
	EXPECT_FALSE(accel_coords_in_slice(wide, c));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_coords_from_index(zero, 0, &c));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_coords_to_index(wide, c, &index));
	EXPECT_FALSE(accel_coords_in_slice(NULL, c));
}

/* ------------------------------------------------------------ names */

TEST(link_states_have_their_names)
{
	EXPECT_STREQ("disconnected", accel_link_state_name(TSR_ICI_STATE_DISCONNECTED));
	EXPECT_STREQ("training", accel_link_state_name(TSR_ICI_STATE_TRAINING));
	EXPECT_STREQ("up", accel_link_state_name(TSR_ICI_STATE_UP));
	EXPECT_STREQ("miswired", accel_link_state_name(TSR_ICI_STATE_MISWIRED));
	EXPECT_STREQ("foreign", accel_link_state_name(TSR_ICI_STATE_FOREIGN));
	EXPECT_STREQ("down", accel_link_state_name(TSR_ICI_STATE_DOWN));
	EXPECT_STREQ("unknown", accel_link_state_name(TSR_ICI_STATE_DOWN + 1));
}

TEST(remote_write_errors_name_the_chip_errors)
{
	EXPECT_STREQ("LINK_DOWN", accel_chip_error_name(TSR_ERR_LINK_DOWN));
	EXPECT_STREQ("REMOTE_ACCESS", accel_chip_error_name(TSR_ERR_REMOTE_ACCESS));
	EXPECT_STREQ("NO_ROUTE", accel_chip_error_name(TSR_ERR_NO_ROUTE));
	EXPECT_NE(NULL, strstr(accel_error_string(ACCEL_ERR_LINK_DOWN), "LINK_DOWN"));
	EXPECT_NE(NULL, strstr(accel_error_string(ACCEL_ERR_REMOTE_ACCESS),
			       "REMOTE_ACCESS"));
	EXPECT_NE(NULL, strstr(accel_error_string(ACCEL_ERR_NO_ROUTE), "NO_ROUTE"));
}

TEST_HARNESS_MAIN
