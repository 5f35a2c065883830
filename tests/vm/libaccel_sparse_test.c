// SPDX-License-Identifier: GPL-2.0
/*
 * The SparseCore through the whole stack (libaccel's builders, the driver,
 * the chip): every command checked bit for bit against libaccel's CPU
 * reference on integer-valued data, how the commands fail (the chip error
 * named in the job's status, the driver's errno, fault_va, nothing
 * written), the configuration GET_PARAM reports and the busy counter.
 */
#include <errno.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "libaccel_util.h"
#include "tessera_util.h"

#include <accel/accel.h>

#define WAIT_NS		(60ull * 1000 * 1000 * 1000)
/* Columns of the tables: rows of 64 bytes in f32, 32 in bf16. */
#define DIM		16
#define VOCAB		61
#define SAMPLES		9
/* Bytes each test gives every buffer: ids, tables, outputs. */
#define BUF_SIZE	(1u << 20)

/* Ids on the host, and where they are in the fixture's id buffer. */
struct ids {
	uint32_t n;
	uint32_t *rows;
	uint32_t *cols;
	float *weights;
	struct accel_sc_ids dev;
};

FIXTURE(sc)
{
	struct accel_device *dev;
	struct accel_device_info info;
	struct accel_cmdbuf *cb;
	struct accel_buffer *ids, *table, *out;
	struct leak_snapshot leaks;
};

FIXTURE_SETUP(sc)
{
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &self->dev));
	leak_snapshot(self->dev, &self->leaks);
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev, &self->info));
	if (!(self->info.caps & TSR_CAP_SPARSECORE))
		SKIP(return, "the chip has no SparseCores (tessera-vm -d preset=v4)");
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(self->dev, &self->cb));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, BUF_SIZE,
						ACCEL_PLACEMENT_HOST,
						&self->ids));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, BUF_SIZE,
						ACCEL_PLACEMENT_HBM,
						&self->table));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, BUF_SIZE,
						ACCEL_PLACEMENT_HOST,
						&self->out));
}

FIXTURE_TEARDOWN(sc)
{
	accel_buffer_destroy(self->out);
	accel_buffer_destroy(self->table);
	accel_buffer_destroy(self->ids);
	accel_cmdbuf_destroy(self->cb);
	leak_expect_none(_metadata, self->dev, &self->leaks);
	accel_device_close(self->dev);
}

/* @n ids on the host, all zero, placed at @offset of @buf. */
static struct ids ids_new(struct accel_buffer *buf, uint64_t offset,
			  uint32_t n)
{
	struct ids in = {
		.n = n,
		.rows = calloc(n + 1, 4),
		.cols = calloc(n + 1, 4),
		.weights = calloc(n + 1, 4),
		.dev = {
			.buffer = buf, .row_ids = offset,
			.col_ids = offset + 4ull * n,
			.weights = offset + 8ull * n, .count = n,
		},
	};

	if (!in.rows || !in.cols || !in.weights)
		abort();
	return in;
}

static void ids_free(struct ids *in)
{
	free(in->rows);
	free(in->cols);
	free(in->weights);
}

/* Random samples and ids, integer weights 1 to 3, many duplicates. */
static void ids_random(struct ids *in, uint32_t samples, uint32_t vocab,
		       uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < in->n; i++) {
		in->rows[i] = rnd(&seed) % samples;
		in->cols[i] = rnd(&seed) % vocab;
		in->weights[i] = (float)(1 + rnd(&seed) % 3);
	}
	/* A duplicate within a sample, and the table's last row. */
	if (in->n > 4) {
		in->rows[1] = in->rows[0];
		in->cols[1] = in->cols[0];
		in->cols[2] = vocab - 1;
	}
}

static int ids_upload(const struct ids *in)
{
	const struct accel_sc_ids *d = &in->dev;
	uint64_t bytes = 4ull * in->n;
	int ret;

	if (!in->n)
		return ACCEL_OK;
	ret = accel_buffer_upload(d->buffer, d->row_ids, in->rows, bytes);
	if (!ret)
		ret = accel_buffer_upload(d->buffer, d->col_ids, in->cols, bytes);
	if (!ret && d->weights != ACCEL_SC_UNWEIGHTED)
		ret = accel_buffer_upload(d->buffer, d->weights, in->weights,
					  bytes);
	return ret;
}

/* Submit @cb, wait, reset @cb; the job's outcome, its status in @st. */
static int run(struct accel_device *dev, struct accel_cmdbuf *cb,
	       struct accel_job_status *st)
{
	struct accel_job *job;
	int ret;

	memset(st, 0, sizeof(*st));
	ret = accel_submit(dev, cb, NULL, &job);
	if (ret)
		return ret;
	ret = accel_job_wait(job, WAIT_NS);
	if (accel_job_status(job, st))
		ret = ACCEL_ERR_IO;
	accel_job_destroy(job);
	accel_cmdbuf_reset(cb);
	return ret;
}

/* @n bytes of @buf from @offset all equal to @byte. */
static bool all_bytes(struct accel_buffer *buf, uint64_t offset, size_t n,
		      uint8_t byte)
{
	uint8_t *p = malloc(n);
	bool same = p && !accel_buffer_download(buf, offset, p, n);
	size_t i;

	for (i = 0; same && i < n; i++)
		same = p[i] == byte;
	free(p);
	return same;
}

static int fill_bytes(struct accel_buffer *buf, uint64_t offset, size_t n,
		      uint8_t byte)
{
	uint8_t *p = malloc(n);
	int ret;

	if (!p)
		return ACCEL_ERR_NO_MEMORY;
	memset(p, byte, n);
	ret = accel_buffer_upload(buf, offset, p, n);
	free(p);
	return ret;
}

/* A @rows x DIM tensor of @dtype at offset 0 of @buf. */
static struct accel_tensor table_of(struct accel_buffer *buf, uint32_t rows,
				    enum tsr_dtype dtype)
{
	return tensor_at(buf, 0, rows, DIM, DIM, dtype);
}

/* Integer values from -8 to 8 into @v and, in @t's dtype, the device. */
static int table_random(const struct accel_tensor *t, float *v,
			uint32_t seed)
{
	size_t n = (size_t)t->rows * t->cols, i;
	uint16_t *h;
	int ret;

	for (i = 0; i < n; i++)
		v[i] = (float)((int)(rnd(&seed) % 17) - 8);
	if (t->dtype == TSR_DTYPE_F32)
		return tensor_io(t, v, true);
	h = malloc(n * sizeof(*h));
	if (!h)
		return ACCEL_ERR_NO_MEMORY;
	to_bf16(v, h, n);
	ret = tensor_io(t, h, true);
	free(h);
	return ret;
}

/* @t's values as f32 into @v. */
static int table_read(const struct accel_tensor *t, float *v)
{
	size_t n = (size_t)t->rows * t->cols, i;
	uint16_t *h;
	int ret;

	if (t->dtype == TSR_DTYPE_F32)
		return tensor_io(t, v, false);
	h = malloc(n * sizeof(*h));
	if (!h)
		return ACCEL_ERR_NO_MEMORY;
	ret = tensor_io(t, h, false);
	for (i = 0; i < n && !ret; i++)
		v[i] = accel_bf16_to_f32(h[i]);
	free(h);
	return ret;
}

static void round_to(enum tsr_dtype dtype, float *v, size_t n)
{
	size_t i;

	for (i = 0; dtype == TSR_DTYPE_BF16 && i < n; i++)
		v[i] = accel_bf16_to_f32(accel_f32_to_bf16(v[i]));
}

/* ------------------------------------------------------------ info */

TEST_F(sc, info_reports_the_sparsecores_get_info_reads)
{
	struct tsr_info raw = { 0 };
	const struct accel_device_info *i = &self->info;

	ASSERT_EQ(0, tsr_info(accel_device_fd(self->dev), &raw));
	EXPECT_EQ(raw.sparsecores, i->sparsecores);
	EXPECT_EQ(raw.sc_tiles, i->sc_tiles);
	EXPECT_EQ(raw.sc_simd_f32, i->sc_simd_f32);
	EXPECT_EQ(raw.sc_simd_bf16, i->sc_simd_bf16);
	EXPECT_EQ(raw.sc_spmem_kib, i->sc_spmem_kib);
	if (i->preset != TSR_PRESET_V4)
		SKIP(return, "the v4 figures need the preset run-checks boots, v4");
	/* Documentation/chip.md, "Presets": v4. */
	EXPECT_EQ(4, i->sparsecores);
	EXPECT_EQ(16, i->sc_tiles);
	EXPECT_EQ(8, i->sc_simd_f32);
	EXPECT_EQ(8, i->sc_simd_bf16);
	EXPECT_EQ(2560, i->sc_spmem_kib);
}

TEST_F(sc, busy_counter_moves_after_a_gather)
{
	struct ids in = ids_new(self->ids, 0, 200);
	struct accel_tensor table = table_of(self->table, VOCAB, TSR_DTYPE_F32);
	struct accel_tensor out = table_of(self->out, SAMPLES, TSR_DTYPE_F32);
	struct accel_device_counters before, after;
	struct accel_job_status st;
	float *v = calloc(VOCAB * DIM, 4);

	ids_random(&in, SAMPLES, VOCAB, 3);
	ASSERT_EQ(ACCEL_OK, ids_upload(&in));
	ASSERT_EQ(ACCEL_OK, table_random(&table, v, 5));
	ASSERT_EQ(ACCEL_OK, accel_device_get_counters(self->dev, &before));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM,
						   &in.dev, &table, &out));
	ASSERT_EQ(ACCEL_OK, run(self->dev, self->cb, &st));
	ASSERT_EQ(ACCEL_OK, accel_device_get_counters(self->dev, &after));
	EXPECT_LT(before.sc_busy_cycles, after.sc_busy_cycles);
	/* A gather keeps no other engine busy. */
	EXPECT_EQ(0, st.mxu_cycles);
	EXPECT_EQ(0, st.vpu_cycles);
	free(v);
	ids_free(&in);
}

/* ------------------------------------------------------------ partition */

/* A partition's limits and outputs: rows, cols, weights, then counts. */
struct part {
	struct accel_sc_limits l;
	struct accel_sc_ids out;
	struct accel_region counts;
	uint32_t slots;
};

static struct part part_of(struct accel_buffer *out,
			   const struct accel_sc_limits *l)
{
	uint32_t slots = l->partitions * l->max_ids;

	return (struct part){
		.l = *l,
		.slots = slots,
		.out = {
			.buffer = out, .row_ids = 0, .col_ids = 4ull * slots,
			.weights = 8ull * slots, .count = slots,
		},
		.counts = { .buffer = out, .offset = 12ull * slots },
	};
}

/*
 * Run SC_PARTITION of @in into @p and the reference beside it: whether
 * the chip's slots and counts are the reference's bit for bit.  The
 * job's outcome in *@ret, its status in @st, the reference's error and
 * where in @err and @where.
 */
static bool partition_matches(struct __test_metadata *_metadata,
			      struct accel_device *dev, struct accel_cmdbuf *cb,
			      const struct ids *in, const struct part *p,
			      struct accel_job_status *st, int *ret,
			      uint32_t *err, uint32_t *where)
{
	uint32_t n = p->slots, parts = p->l.partitions;
	uint32_t *rows = calloc(n, 4), *cols = calloc(n, 4);
	uint32_t *got = calloc(3 * n, 4);
	float *weights = calloc(n, 4);
	struct tsr_sc_counts *counts = calloc(parts, sizeof(*counts));
	struct tsr_sc_counts *got_counts = calloc(parts, sizeof(*counts));
	bool same;

	if (!rows || !cols || !got || !weights || !counts || !got_counts)
		abort();
	EXPECT_EQ(ACCEL_OK, accel_ref_sc_partition(in->rows, in->cols,
						   in->weights, in->n, &p->l,
						   rows, cols, weights, counts,
						   err, where));
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_sc_partition(cb, &p->l, &in->dev,
						      &p->out, &p->counts))
		TH_LOG("%s", accel_cmdbuf_last_error(cb));
	*ret = run(dev, cb, st);
	EXPECT_EQ(ACCEL_OK, accel_buffer_download(p->out.buffer, 0, got,
						  12ull * n));
	EXPECT_EQ(ACCEL_OK, accel_buffer_download(p->counts.buffer,
						  p->counts.offset, got_counts,
						  parts * sizeof(*counts)));
	same = !memcmp(got_counts, counts, parts * sizeof(*counts));
	/* On an error the chip wrote the counts and nothing else. */
	if (*err == TSR_ERR_NONE)
		same = same && !memcmp(got, rows, 4ull * n) &&
		       !memcmp(got + n, cols, 4ull * n) &&
		       !memcmp(got + 2 * n, weights, 4ull * n);
	free(rows);
	free(cols);
	free(got);
	free(weights);
	free(counts);
	free(got_counts);
	return same;
}

TEST_F(sc, partition_dedups_and_routes_ids_as_the_reference_does)
{
	struct accel_sc_limits l = {
		.partitions = self->info.sparsecores, .samples = SAMPLES,
		.vocab = VOCAB, .max_ids = 200, .max_unique_ids = 200,
	};
	struct part p = part_of(self->out, &l);
	struct ids in = ids_new(self->ids, 0, 200);
	struct accel_job_status st;
	uint32_t err, where, dups = 0, i, kept = 0;
	struct tsr_sc_counts c;
	int ret;

	ids_random(&in, SAMPLES, VOCAB, 7);
	ASSERT_EQ(ACCEL_OK, ids_upload(&in));
	EXPECT_TRUE(partition_matches(_metadata, self->dev, self->cb, &in, &p,
				      &st, &ret, &err, &where));
	EXPECT_EQ(TSR_ERR_NONE, err);
	EXPECT_EQ(ACCEL_OK, ret) TH_LOG("%s", st.chip_error_name);
	/* Duplicates within a sample were merged: fewer ids than entries. */
	for (i = 0; i < l.partitions; i++) {
		ASSERT_EQ(ACCEL_OK, accel_buffer_download(self->out,
			p.counts.offset + i * sizeof(c), &c, sizeof(c)));
		kept += c.ids;
		EXPECT_EQ(0, c.dropped);
	}
	for (i = 1; i < in.n; i++)
		dups += in.rows[i] == in.rows[0] && in.cols[i] == in.cols[0];
	EXPECT_LE(1, dups);
	EXPECT_GT(in.n, kept);
	ids_free(&in);
}

TEST_F(sc, partition_of_no_ids_pads_every_slot)
{
	struct accel_sc_limits l = {
		.partitions = self->info.sparsecores, .samples = SAMPLES,
		.vocab = VOCAB, .max_ids = 3, .max_unique_ids = 3,
	};
	struct part p = part_of(self->out, &l);
	struct ids in = ids_new(self->ids, 0, 0);
	struct accel_job_status st;
	uint32_t err, where, pad;
	int ret;

	ASSERT_EQ(ACCEL_OK, fill_bytes(self->out, 0, 16ull * p.slots, 0x5a));
	EXPECT_TRUE(partition_matches(_metadata, self->dev, self->cb, &in, &p,
				      &st, &ret, &err, &where));
	EXPECT_EQ(ACCEL_OK, ret) TH_LOG("%s", st.chip_error_name);
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(self->out, 0, &pad, 4));
	EXPECT_EQ(TSR_SC_PAD, pad);
	ids_free(&in);
}

/*
 * 61 ids of 3 samples: 60 (40 distinct, no duplicates within a sample)
 * to partition 1, and one to partition 0.
 */
static struct ids crowded_ids(struct accel_buffer *buf, uint32_t partitions)
{
	struct ids in = ids_new(buf, 0, 61);
	uint32_t i;

	for (i = 0; i < in.n; i++) {
		in.rows[i] = i % 3;
		in.cols[i] = partitions * (i % 40) + 1;
		in.weights[i] = 1.0f;
	}
	in.cols[in.n - 1] = 0;
	return in;
}

/* A partition over a limit without TSR_SC_DROP: the limit is named. */
static void over_a_limit(struct __test_metadata *_metadata,
			 FIXTURE_DATA(sc) *self, uint32_t max_ids,
			 uint32_t max_unique_ids, uint32_t want_error,
			 const char *want_name)
{
	struct accel_sc_limits l = {
		.partitions = self->info.sparsecores, .samples = 3,
		.vocab = 40 * self->info.sparsecores, .max_ids = max_ids,
		.max_unique_ids = max_unique_ids,
	};
	struct part p = part_of(self->out, &l);
	struct ids in = crowded_ids(self->ids, l.partitions);
	struct accel_job_status st;
	struct tsr_sc_counts c;
	uint32_t err, where;
	int ret;

	ASSERT_EQ(ACCEL_OK, ids_upload(&in));
	ASSERT_EQ(ACCEL_OK, fill_bytes(self->out, 0, 12ull * p.slots, 0x5a));
	EXPECT_TRUE(partition_matches(_metadata, self->dev, self->cb, &in, &p,
				      &st, &ret, &err, &where));
	EXPECT_EQ(want_error, err);
	EXPECT_EQ(1, where);
	EXPECT_EQ(ACCEL_ERR_JOB_FAILED, ret);
	EXPECT_EQ(-EOVERFLOW, st.fence_error);
	EXPECT_EQ(want_error, st.chip_error);
	EXPECT_STREQ(want_name, st.chip_error_name);
	EXPECT_EQ(0, st.failed_command);
	/* fault_va names partition 1's counts: 60 ids seen, 40 unique. */
	EXPECT_EQ(accel_buffer_device_va(self->out) + p.counts.offset +
		  sizeof(c), st.fault_va);
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(self->out,
		  p.counts.offset + sizeof(c), &c, sizeof(c)));
	EXPECT_EQ(60, c.ids);
	EXPECT_EQ(40, c.unique_ids);
	EXPECT_TRUE(all_bytes(self->out, 0, 12ull * p.slots, 0x5a));
	ids_free(&in);
}

TEST_F(sc, partition_over_max_ids_fails_naming_the_limit_and_the_count)
{
	over_a_limit(_metadata, self, 50, 50, TSR_ERR_MAX_IDS, "MAX_IDS");
}

TEST_F(sc, partition_over_max_unique_ids_fails_naming_that_limit)
{
	over_a_limit(_metadata, self, 64, 30, TSR_ERR_MAX_UNIQUE_IDS,
		     "MAX_UNIQUE_IDS");
}

TEST_F(sc, partition_with_drop_drops_ids_over_the_limits_and_counts_them)
{
	struct accel_sc_limits l = {
		.partitions = self->info.sparsecores, .samples = 3,
		.vocab = 40 * self->info.sparsecores, .max_ids = 50,
		.max_unique_ids = 30, .flags = TSR_SC_DROP,
	};
	struct part p = part_of(self->out, &l);
	struct ids in = crowded_ids(self->ids, l.partitions);
	struct accel_job_status st;
	struct tsr_sc_counts c;
	uint32_t err, where;
	int ret;

	ASSERT_EQ(ACCEL_OK, ids_upload(&in));
	EXPECT_TRUE(partition_matches(_metadata, self->dev, self->cb, &in, &p,
				      &st, &ret, &err, &where));
	EXPECT_EQ(TSR_ERR_NONE, err);
	EXPECT_EQ(ACCEL_OK, ret) TH_LOG("%s", st.chip_error_name);
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(self->out,
		  p.counts.offset + sizeof(c), &c, sizeof(c)));
	/*
	 * Counts are what the chip saw: 60 ids, 40 distinct.  The first 30
	 * distinct ids fit, the 10 after them are dropped, and the 20
	 * repeats of taken ids that follow fill the partition's 50 slots.
	 */
	EXPECT_EQ(60, c.ids);
	EXPECT_EQ(40, c.unique_ids);
	EXPECT_EQ(10, c.dropped);
	ids_free(&in);
}

TEST_F(sc, partition_limits_beyond_spmem_fail)
{
	/* One more id than a SparseCore's SPMEM holds, with its unique id. */
	uint32_t max_ids = self->info.sc_spmem_kib * 1024 /
			   (TSR_SC_SPMEM_ID_BYTES + TSR_SC_SPMEM_UNIQUE_BYTES) + 1;
	struct accel_sc_limits l = {
		.partitions = 1, .samples = 1, .vocab = 1, .max_ids = max_ids,
		.max_unique_ids = max_ids,
	};
	struct accel_buffer *out;
	struct accel_job_status st;
	struct part p;
	struct ids in = ids_new(self->ids, 0, 1);

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev,
						16ull * max_ids + 4096,
						ACCEL_PLACEMENT_HOST, &out));
	p = part_of(out, &l);
	ASSERT_EQ(ACCEL_OK, ids_upload(&in));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sc_partition(self->cb, &l, &in.dev,
						      &p.out, &p.counts));
	EXPECT_EQ(ACCEL_ERR_JOB_FAILED, run(self->dev, self->cb, &st));
	EXPECT_EQ(-ENOSPC, st.fence_error);
	EXPECT_STREQ("SPMEM", st.chip_error_name);
	/* One fewer fits. */
	l.max_ids = l.max_unique_ids = max_ids - 1;
	p = part_of(out, &l);
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sc_partition(self->cb, &l, &in.dev,
						      &p.out, &p.counts));
	EXPECT_EQ(ACCEL_OK, run(self->dev, self->cb, &st))
		TH_LOG("%s", st.chip_error_name);
	accel_buffer_destroy(out);
	ids_free(&in);
}

TEST_F(sc, partition_of_an_id_out_of_range_fails_and_writes_nothing)
{
	struct accel_sc_limits l = {
		.partitions = self->info.sparsecores, .samples = SAMPLES,
		.vocab = VOCAB, .max_ids = 64, .max_unique_ids = 64,
	};
	struct part p = part_of(self->out, &l);
	struct ids in = ids_new(self->ids, 0, 64);
	struct accel_job_status st;
	uint32_t err, where;
	int ret;

	ids_random(&in, SAMPLES, VOCAB, 9);
	in.cols[17] = VOCAB;
	ASSERT_EQ(ACCEL_OK, ids_upload(&in));
	ASSERT_EQ(ACCEL_OK, fill_bytes(self->out, 0, 16ull * p.slots, 0x5a));
	partition_matches(_metadata, self->dev, self->cb, &in, &p, &st, &ret,
			  &err, &where);
	EXPECT_EQ(TSR_ERR_ID_RANGE, err);
	EXPECT_EQ(ACCEL_ERR_JOB_FAILED, ret);
	EXPECT_EQ(-ERANGE, st.fence_error);
	EXPECT_STREQ("ID_RANGE", st.chip_error_name);
	EXPECT_EQ(accel_buffer_device_va(self->ids) + in.dev.col_ids + 4 * 17,
		  st.fault_va);
	EXPECT_TRUE(all_bytes(self->out, 0, 16ull * p.slots, 0x5a));
	ids_free(&in);
}

/* ------------------------------------------------------------ gather */

/*
 * SC_GATHER of SAMPLES samples (sample 4 without ids) from a VOCAB x DIM
 * table of @dtype into @out_dtype rows: whether the chip's rows are the
 * reference's, bit for bit.
 */
static bool gather_matches(struct __test_metadata *_metadata,
			   FIXTURE_DATA(sc) *self,
			   enum tsr_sc_combiner combiner, enum tsr_dtype dtype,
			   enum tsr_dtype out_dtype, uint32_t count)
{
	struct accel_tensor table = table_of(self->table, VOCAB, dtype);
	struct accel_tensor out = table_of(self->out, SAMPLES, out_dtype);
	struct ids in = ids_new(self->ids, 0, count);
	float *v = calloc(VOCAB * DIM, 4);
	float *want = calloc(SAMPLES * DIM, 4), *got = calloc(SAMPLES * DIM, 4);
	struct accel_job_status st;
	uint32_t err, where, i;
	bool same;

	if (!v || !want || !got)
		abort();
	ids_random(&in, SAMPLES, VOCAB, 11 + combiner);
	for (i = 0; i < in.n; i++)
		in.rows[i] = in.rows[i] == 4 ? 5 : in.rows[i];
	EXPECT_EQ(ACCEL_OK, ids_upload(&in));
	EXPECT_EQ(ACCEL_OK, table_random(&table, v, 5));
	EXPECT_EQ(ACCEL_OK, fill_bytes(self->out, 0, SAMPLES * DIM * 4, 0x5a));
	EXPECT_EQ(ACCEL_OK, accel_ref_sc_gather(combiner, in.rows, in.cols,
						in.weights, in.n, v, VOCAB, DIM,
						want, SAMPLES, &err, &where));
	EXPECT_EQ(TSR_ERR_NONE, err);
	round_to(out_dtype, want, SAMPLES * DIM);
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_sc_gather(self->cb, combiner, &in.dev,
						   &table, &out))
		TH_LOG("%s", accel_cmdbuf_last_error(self->cb));
	EXPECT_EQ(ACCEL_OK, run(self->dev, self->cb, &st))
		TH_LOG("%s", st.chip_error_name);
	EXPECT_EQ(ACCEL_OK, table_read(&out, got));
	same = !memcmp(got, want, SAMPLES * DIM * 4) && got[4 * DIM] == 0.0f;
	free(v);
	free(want);
	free(got);
	ids_free(&in);
	return same;
}

TEST_F(sc, gather_sums_rows_as_the_reference_does)
{
	EXPECT_TRUE(gather_matches(_metadata, self, TSR_SC_SUM, TSR_DTYPE_F32,
				   TSR_DTYPE_F32, 120));
}

TEST_F(sc, gather_means_rows_as_the_reference_does)
{
	EXPECT_TRUE(gather_matches(_metadata, self, TSR_SC_MEAN, TSR_DTYPE_F32,
				   TSR_DTYPE_F32, 120));
}

TEST_F(sc, gather_sqrtn_rows_as_the_reference_does)
{
	EXPECT_TRUE(gather_matches(_metadata, self, TSR_SC_SQRTN,
				   TSR_DTYPE_F32, TSR_DTYPE_F32, 120));
}

TEST_F(sc, gather_takes_bf16_tables_and_outputs)
{
	EXPECT_TRUE(gather_matches(_metadata, self, TSR_SC_SUM, TSR_DTYPE_BF16,
				   TSR_DTYPE_F32, 120));
	EXPECT_TRUE(gather_matches(_metadata, self, TSR_SC_SUM, TSR_DTYPE_BF16,
				   TSR_DTYPE_BF16, 120));
	EXPECT_TRUE(gather_matches(_metadata, self, TSR_SC_MEAN,
				   TSR_DTYPE_BF16, TSR_DTYPE_F32, 120));
	EXPECT_TRUE(gather_matches(_metadata, self, TSR_SC_SQRTN,
				   TSR_DTYPE_BF16, TSR_DTYPE_BF16, 120));
}

TEST_F(sc, gather_of_no_ids_writes_zero_rows)
{
	EXPECT_TRUE(gather_matches(_metadata, self, TSR_SC_SUM, TSR_DTYPE_F32,
				   TSR_DTYPE_F32, 0));
}

/* SC_GATHER or SC_SCATTER_ADD of one id out of range: nothing written. */
static void lookup_out_of_range(struct __test_metadata *_metadata,
				FIXTURE_DATA(sc) *self, bool scatter,
				bool sample)
{
	struct accel_tensor table = table_of(self->table, VOCAB, TSR_DTYPE_F32);
	struct accel_tensor out = table_of(self->out, SAMPLES, TSR_DTYPE_F32);
	struct ids in = ids_new(self->ids, 0, 40);
	struct accel_job_status st;
	uint64_t va;
	int ret;

	ids_random(&in, SAMPLES, VOCAB, 13);
	if (sample)
		in.rows[29] = SAMPLES;
	else
		in.cols[29] = VOCAB;
	va = accel_buffer_device_va(self->ids) +
	     (sample ? in.dev.row_ids : in.dev.col_ids) + 4 * 29;
	ASSERT_EQ(ACCEL_OK, ids_upload(&in));
	ASSERT_EQ(ACCEL_OK, fill_bytes(self->table, 0, VOCAB * DIM * 4, 0x3c));
	ASSERT_EQ(ACCEL_OK, fill_bytes(self->out, 0, SAMPLES * DIM * 4, 0x3c));
	ret = scatter ? accel_cmdbuf_sc_scatter_add(self->cb, TSR_SC_SUM,
						    &in.dev, &out, &table, 1.0f) :
			accel_cmdbuf_sc_gather(self->cb, TSR_SC_SUM, &in.dev,
					       &table, &out);
	ASSERT_EQ(ACCEL_OK, ret);
	EXPECT_EQ(ACCEL_ERR_JOB_FAILED, run(self->dev, self->cb, &st));
	EXPECT_EQ(-ERANGE, st.fence_error);
	EXPECT_EQ(TSR_ERR_ID_RANGE, st.chip_error);
	EXPECT_STREQ("ID_RANGE", st.chip_error_name);
	EXPECT_EQ(va, st.fault_va);
	EXPECT_TRUE(all_bytes(self->table, 0, VOCAB * DIM * 4, 0x3c));
	EXPECT_TRUE(all_bytes(self->out, 0, SAMPLES * DIM * 4, 0x3c));
	ids_free(&in);
}

TEST_F(sc, gather_of_an_id_out_of_range_fails_and_writes_nothing)
{
	lookup_out_of_range(_metadata, self, false, false);
	lookup_out_of_range(_metadata, self, false, true);
}

/* ------------------------------------------------------------ scatter-add */

/*
 * SC_SCATTER_ADD of 300 ids' gradients (SAMPLES x DIM, integers) into
 * a VOCAB x DIM table of @dtype, times @scale: whether the table is the
 * reference's, bit for bit.
 */
static bool scatter_matches(struct __test_metadata *_metadata,
			    FIXTURE_DATA(sc) *self,
			    enum tsr_sc_combiner combiner, enum tsr_dtype dtype,
			    float scale)
{
	struct accel_tensor table = table_of(self->table, VOCAB, dtype);
	struct accel_tensor grad = table_of(self->out, SAMPLES, dtype);
	struct ids in = ids_new(self->ids, 0, 300);
	float *v = calloc(VOCAB * DIM, 4), *got = calloc(VOCAB * DIM, 4);
	float *g = calloc(SAMPLES * DIM, 4);
	struct accel_job_status st;
	uint32_t err, where;
	bool same;

	if (!v || !got || !g)
		abort();
	/* 300 ids of 61: each id many times over. */
	ids_random(&in, SAMPLES, VOCAB, 17 + combiner);
	EXPECT_EQ(ACCEL_OK, ids_upload(&in));
	EXPECT_EQ(ACCEL_OK, table_random(&table, v, 19));
	EXPECT_EQ(ACCEL_OK, table_random(&grad, g, 23));
	EXPECT_EQ(ACCEL_OK, accel_ref_sc_scatter_add(combiner, in.rows, in.cols,
						     in.weights, in.n, g,
						     SAMPLES, DIM, v, VOCAB,
						     scale, &err, &where));
	EXPECT_EQ(TSR_ERR_NONE, err);
	round_to(dtype, v, VOCAB * DIM);
	EXPECT_EQ(ACCEL_OK, accel_cmdbuf_sc_scatter_add(self->cb, combiner,
							&in.dev, &grad, &table,
							scale))
		TH_LOG("%s", accel_cmdbuf_last_error(self->cb));
	EXPECT_EQ(ACCEL_OK, run(self->dev, self->cb, &st))
		TH_LOG("%s", st.chip_error_name);
	EXPECT_EQ(ACCEL_OK, table_read(&table, got));
	same = !memcmp(got, v, VOCAB * DIM * 4);
	free(v);
	free(got);
	free(g);
	ids_free(&in);
	return same;
}

TEST_F(sc, scatter_add_sums_duplicate_ids_as_the_reference_does)
{
	EXPECT_TRUE(scatter_matches(_metadata, self, TSR_SC_SUM, TSR_DTYPE_F32,
				    1.0f));
	EXPECT_TRUE(scatter_matches(_metadata, self, TSR_SC_SUM, TSR_DTYPE_F32,
				    -0.5f));
	EXPECT_TRUE(scatter_matches(_metadata, self, TSR_SC_MEAN,
				    TSR_DTYPE_F32, -0.1f));
	EXPECT_TRUE(scatter_matches(_metadata, self, TSR_SC_SQRTN,
				    TSR_DTYPE_F32, 0.3f));
}

TEST_F(sc, scatter_add_takes_bf16_tables_and_gradients)
{
	EXPECT_TRUE(scatter_matches(_metadata, self, TSR_SC_SUM,
				    TSR_DTYPE_BF16, 1.0f));
	EXPECT_TRUE(scatter_matches(_metadata, self, TSR_SC_MEAN,
				    TSR_DTYPE_BF16, -0.25f));
}

TEST_F(sc, scatter_add_gives_the_same_bits_run_after_run)
{
	struct accel_tensor a = table_of(self->table, 8, TSR_DTYPE_F32);
	struct accel_tensor b = a, grad = table_of(self->out, 20, TSR_DTYPE_F32);
	struct ids in = ids_new(self->ids, 0, 300);
	float x[8 * DIM], y[8 * DIM], g[20 * DIM];
	struct accel_job_status st;
	uint32_t i, seed = 29;

	/* Few ids, many duplicates, weights that do not sum exactly. */
	ids_random(&in, 20, 8, 31);
	for (i = 0; i < in.n; i++)
		in.weights[i] = 1.0f / (float)(i + 3);
	for (i = 0; i < 20 * DIM; i++)
		g[i] = frand(&seed, -1.0f, 1.0f);
	b.offset = 65536;
	ASSERT_EQ(ACCEL_OK, ids_upload(&in));
	ASSERT_EQ(ACCEL_OK, tensor_io(&grad, g, true));
	ASSERT_EQ(ACCEL_OK, table_random(&a, x, 37));
	ASSERT_EQ(ACCEL_OK, tensor_io(&b, x, true));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sc_scatter_add(self->cb, TSR_SC_SUM,
							&in.dev, &grad, &a,
							1.0f));
	ASSERT_EQ(ACCEL_OK, run(self->dev, self->cb, &st));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sc_scatter_add(self->cb, TSR_SC_SUM,
							&in.dev, &grad, &b,
							1.0f));
	ASSERT_EQ(ACCEL_OK, run(self->dev, self->cb, &st));
	ASSERT_EQ(ACCEL_OK, tensor_io(&a, x, false));
	ASSERT_EQ(ACCEL_OK, tensor_io(&b, y, false));
	EXPECT_EQ(0, memcmp(x, y, sizeof(x)));
	ids_free(&in);
}

TEST_F(sc, scatter_add_of_an_id_out_of_range_fails_and_writes_nothing)
{
	lookup_out_of_range(_metadata, self, true, false);
	lookup_out_of_range(_metadata, self, true, true);
}

TEST_HARNESS_MAIN
