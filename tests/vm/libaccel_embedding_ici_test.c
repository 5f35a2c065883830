// SPDX-License-Identifier: GPL-2.0
/*
 * libaccel's sharded embedding op on a slice: the lookup and its backward
 * pass, the table sharded mod the chips, compared bit for bit with one
 * unsharded table on the CPU reference (accel_ref_sc_gather() and
 * accel_ref_sc_scatter_add()); what an id out of range, a limit passed
 * and a bad call get.
 *
 * Runs in the "ici" suite of tests/run-checks, on a slice in one VM and
 * split across VMs: each test's communicator spans the whole slice and
 * opens a window id of its own.  Every chip's batch is a function of its
 * rank, so each host computes the whole slice's answer.  The data are
 * small integers (and the samples of MEAN and SQRTN chosen for it), so
 * sums are exact in any order and comparing bits is meaningful.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "kselftest_harness.h"
#include "libaccel_util.h"
#include "tessera_util.h"

#include <accel/accel.h>

#define MAX_CHIPS 16
#define WINDOW_BASE 240
#define EMB_TEST_TIMEOUT 600

/* A table that is no multiple of the chips, rows that need padding. */
#define VOCAB 61
#define DIM 5
#define SAMPLES 7
#define IDS 32

FIXTURE(emb) {
	struct accel_device *dev[MAX_CHIPS];
	unsigned int n;
	struct accel_comm *comm;
	struct accel_embedding *emb;
	unsigned int chips;
	struct accel_buffer *out[MAX_CHIPS];
	struct leak_snapshot leaks;
};

FIXTURE_SETUP(emb)
{
	struct accel_device_info info;
	unsigned int i;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&self->n));
	ASSERT_GE(MAX_CHIPS, self->n);
	for (i = 0; i < self->n; i++) {
		ASSERT_EQ(ACCEL_OK, accel_device_open(i, &self->dev[i]));
		ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev[i], &info));
		if (!info.ports_wired)
			SKIP(return, "chip %u has no links: boot the VM with tessera-vm --topology",
			     i);
		if (!(info.caps & TSR_CAP_SPARSECORE))
			SKIP(return, "chip %u has no SparseCores: use a preset with them (v4)",
			     i);
	}
	leak_snapshot(self->dev[0], &self->leaks);
}

FIXTURE_TEARDOWN(emb)
{
	unsigned int i;

	for (i = 0; i < self->n; i++)
		accel_buffer_destroy(self->out[i]);
	accel_embedding_destroy(self->emb);
	accel_comm_destroy(self->comm);
	if (self->dev[0])
		leak_expect_none(_metadata, self->dev[0], &self->leaks);
	for (i = 0; i < self->n; i++)
		accel_device_close(self->dev[i]);
}

static struct accel_embedding_desc desc_of(enum tsr_sc_combiner combiner)
{
	return (struct accel_embedding_desc) {
		.size = sizeof(struct accel_embedding_desc),
		.vocab = VOCAB, .dim = DIM, .dtype = TSR_DTYPE_F32,
		.combiner = combiner, .max_samples = SAMPLES, .max_ids = IDS,
	};
}

static float table_value(uint32_t id, uint32_t col, unsigned int salt)
{
	return (float)((id * 7 + col * 3 + salt) % 23) - 11.0f;
}

static void table_fill(float *t, unsigned int salt)
{
	uint32_t id, col;

	for (id = 0; id < VOCAB; id++)
		for (col = 0; col < DIM; col++)
			t[id * DIM + col] = table_value(id, col, salt);
}

/*
 * The communicator on @window, a plan for @d, an output per chip and, with
 * @table, a table salted by @window in the shards.
 */
static int open_plan(FIXTURE_DATA(emb) *self, uint32_t window,
		     const struct accel_embedding_desc *d, float *table)
{
	struct accel_comm_opts opts = { .window_id = window };
	unsigned int i;
	int ret;

	ret = accel_comm_create(self->dev, self->n, &opts, &self->comm);
	if (ret)
		return ret;
	self->chips = accel_comm_size(self->comm);
	for (i = 0; !ret && i < self->n; i++)
		ret = accel_buffer_create(self->dev[i], SAMPLES * DIM * 4,
					  ACCEL_PLACEMENT_HBM, &self->out[i]);
	if (!ret)
		ret = accel_embedding_create(self->comm, self->dev, self->n, d,
					     &self->emb);
	if (ret || !table)
		return ret;
	table_fill(table, window);
	return accel_embedding_upload(self->emb, table);
}

static struct accel_tensor out_of(FIXTURE_DATA(emb) *self, unsigned int i)
{
	return tensor_at(self->out[i], 0, SAMPLES, DIM, 0, TSR_DTYPE_F32);
}

/*
 * struct batch - chip @rank's batch: samples of 0 to 5 entries (sample 3
 * of every chip empty), an id repeated within a sample, the table's last
 * id in sample 0, integer weights (or none).
 */
struct batch {
	uint32_t rows[IDS], ids[IDS], count;
	float w[IDS];
	struct accel_embedding_batch b;
};

static void batch_make(struct batch *b, unsigned int rank, bool weighted,
		       unsigned int salt)
{
	uint32_t s, j, n = 0;

	for (s = 0; s < SAMPLES; s++) {
		uint32_t k = s == 3 ? 0 : (s + rank + salt) % 5 + 1;

		for (j = 0; j < k && n < IDS - 1; j++, n++) {
			b->rows[n] = s;
			b->ids[n] = j == 2 ? b->ids[n - 2] :
				    (s * 11 + j * 17 + rank * 5 + salt) % VOCAB;
			b->w[n] = (float)((s + j + rank) % 3 + 1);
		}
	}
	b->rows[n] = 0;
	b->ids[n] = VOCAB - 1;
	b->w[n] = 2.0f;
	b->count = n + 1;
	b->b = (struct accel_embedding_batch) {
		.sample_ids = b->rows, .ids = b->ids,
		.weights = weighted ? b->w : NULL,
		.count = b->count, .samples = SAMPLES,
	};
}

/* Every local chip's batch_make(). */
static void batches_make(FIXTURE_DATA(emb) *self, struct batch *batches,
			 bool weighted, unsigned int salt)
{
	unsigned int i;

	for (i = 0; i < self->n; i++)
		batch_make(&batches[i], accel_comm_rank(self->comm, i),
			   weighted, salt);
}

/*
 * MEAN and SQRTN, exact: sample s has 1, 2 or 4 unweighted entries, the
 * two of a pair one id (their factors, even 1 / sqrt(2), add up exactly
 * when SC_PARTITION merges them), so every row's sum is exact.
 */
static void batch_make_mean(struct batch *b, unsigned int rank)
{
	static const uint32_t sizes[SAMPLES] = { 1, 2, 4, 0, 4, 2, 1 };
	uint32_t s, j, n = 0;

	for (s = 0; s < SAMPLES; s++)
		for (j = 0; j < sizes[s]; j++, n++) {
			b->rows[n] = s;
			b->ids[n] = j == 1 ? b->ids[n - 1] :
				    (s * 13 + j * 7 + rank * 3) % VOCAB;
		}
	b->ids[0] = VOCAB - 1;
	b->count = n;
	b->b = (struct accel_embedding_batch) {
		.sample_ids = b->rows, .ids = b->ids, .count = n,
		.samples = SAMPLES,
	};
}

/* The forward of every local chip, checked against one table. */
static void expect_forward(struct __test_metadata *_metadata,
			   FIXTURE_DATA(emb) *self, enum tsr_sc_combiner comb,
			   const struct batch *batches, const float *table)
{
	float want[SAMPLES * DIM], got[SAMPLES * DIM];
	uint32_t err, where;
	unsigned int i;

	for (i = 0; i < self->n; i++) {
		const struct accel_embedding_batch *b = &batches[i].b;
		struct accel_tensor out = out_of(self, i);

		ASSERT_EQ(ACCEL_OK, accel_ref_sc_gather(comb, b->sample_ids,
			  b->ids, b->weights, b->count, table, VOCAB, DIM,
			  want, SAMPLES, &err, &where));
		ASSERT_EQ(TSR_ERR_NONE, err);
		ASSERT_EQ(0, tensor_io(&out, got, false));
		EXPECT_EQ(0, memcmp(want, got, sizeof(want)))
			TH_LOG("chip %u: sample rows differ from the one table", i);
	}
}

static void run_forward(struct __test_metadata *_metadata,
			FIXTURE_DATA(emb) *self, struct batch *batches)
{
	struct accel_embedding_batch b[MAX_CHIPS];
	struct accel_tensor out[MAX_CHIPS];
	unsigned int i;

	for (i = 0; i < self->n; i++) {
		b[i] = batches[i].b;
		out[i] = out_of(self, i);
	}
	ASSERT_EQ(ACCEL_OK, accel_embedding_forward(self->emb, b, out));
}

TEST_F_TIMEOUT(emb, sum_lookup_matches_one_table, EMB_TEST_TIMEOUT)
{
	struct accel_embedding_desc d = desc_of(TSR_SC_SUM);
	static struct batch batches[MAX_CHIPS];
	float table[VOCAB * DIM];

	ASSERT_EQ(ACCEL_OK, open_plan(self, WINDOW_BASE + 0, &d, table));
	batches_make(self, batches, true, 0);
	run_forward(_metadata, self, batches);
	expect_forward(_metadata, self, TSR_SC_SUM, batches, table);
	/* A second step, other batches without weights, the same plan. */
	batches_make(self, batches, false, 3);
	run_forward(_metadata, self, batches);
	expect_forward(_metadata, self, TSR_SC_SUM, batches, table);
}

TEST_F_TIMEOUT(emb, mean_and_sqrtn_lookups_divide_by_the_whole_sample,
	       EMB_TEST_TIMEOUT)
{
	struct accel_embedding_desc d = desc_of(TSR_SC_MEAN);
	static struct batch batches[MAX_CHIPS];
	float table[VOCAB * DIM];
	unsigned int i;

	ASSERT_EQ(ACCEL_OK, open_plan(self, WINDOW_BASE + 1, &d, table));
	for (i = 0; i < self->n; i++)
		batch_make_mean(&batches[i], accel_comm_rank(self->comm, i));
	run_forward(_metadata, self, batches);
	expect_forward(_metadata, self, TSR_SC_MEAN, batches, table);
	/* A second plan on the same communicator. */
	accel_embedding_destroy(self->emb);
	self->emb = NULL;
	d = desc_of(TSR_SC_SQRTN);
	ASSERT_EQ(ACCEL_OK, accel_embedding_create(self->comm, self->dev,
						   self->n, &d, &self->emb));
	ASSERT_EQ(ACCEL_OK, accel_embedding_upload(self->emb, table));
	run_forward(_metadata, self, batches);
	expect_forward(_metadata, self, TSR_SC_SQRTN, batches, table);
}

/* Chip @rank's gradient of the forward's output. */
static void grad_fill(float *g, unsigned int rank)
{
	uint32_t k;

	for (k = 0; k < SAMPLES * DIM; k++)
		g[k] = (float)((k * 5 + rank * 3) % 9) - 4.0f;
}

TEST_F_TIMEOUT(emb, backward_adds_every_chips_gradient_into_the_owners,
	       EMB_TEST_TIMEOUT)
{
	struct accel_embedding_desc d = desc_of(TSR_SC_SUM);
	static struct batch batches[MAX_CHIPS];
	float table[VOCAB * DIM], want[VOCAB * DIM], got[VOCAB * DIM];
	float g[SAMPLES * DIM];
	struct accel_tensor grad[MAX_CHIPS];
	uint32_t err, where, id;
	unsigned int i, r;

	ASSERT_EQ(ACCEL_OK, open_plan(self, WINDOW_BASE + 2, &d, table));
	memcpy(want, table, sizeof(table));
	batches_make(self, batches, true, 1);
	run_forward(_metadata, self, batches);
	expect_forward(_metadata, self, TSR_SC_SUM, batches, table);
	/* The gradients go into the forward's outputs, now free. */
	for (i = 0; i < self->n; i++) {
		grad[i] = out_of(self, i);
		grad_fill(g, accel_comm_rank(self->comm, i));
		ASSERT_EQ(0, tensor_io(&grad[i], g, true));
	}
	ASSERT_EQ(ACCEL_OK, accel_embedding_backward(self->emb, grad, -2.0f));
	/* The one table gets every chip's gradient, local or not. */
	for (r = 0; r < self->chips; r++) {
		struct batch b;

		batch_make(&b, r, true, 1);
		grad_fill(g, r);
		ASSERT_EQ(ACCEL_OK, accel_ref_sc_scatter_add(TSR_SC_SUM,
			  b.rows, b.ids, b.w, b.count, g, SAMPLES, DIM, want,
			  VOCAB, -2.0f, &err, &where));
		ASSERT_EQ(TSR_ERR_NONE, err);
	}
	memcpy(got, table, sizeof(got));
	ASSERT_EQ(ACCEL_OK, accel_embedding_download(self->emb, got));
	for (i = 0; i < self->n; i++)
		for (id = accel_comm_rank(self->comm, i); id < VOCAB;
		     id += self->chips)
			EXPECT_EQ(0, memcmp(want + id * DIM, got + id * DIM,
					    DIM * 4))
				TH_LOG("row %u of chip %u's shard", id, i);
	EXPECT_NE(0, memcmp(want, table, sizeof(table)));
	/* A backward pass needs a forward of its own. */
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_backward(self->emb, grad, -2.0f));
}

TEST_F_TIMEOUT(emb, an_id_out_of_range_is_named_and_nothing_is_written,
	       EMB_TEST_TIMEOUT)
{
	struct accel_embedding_desc d = desc_of(TSR_SC_SUM);
	static struct batch batches[MAX_CHIPS];
	struct accel_embedding_batch b[MAX_CHIPS];
	struct accel_tensor out[MAX_CHIPS];
	float table[VOCAB * DIM], got[VOCAB * DIM], rows[SAMPLES * DIM];
	struct accel_embedding_fault f;
	unsigned int i;

	ASSERT_EQ(ACCEL_OK, open_plan(self, WINDOW_BASE + 3, &d, table));
	memset(rows, 0x5a, sizeof(rows));
	for (i = 0; i < self->n; i++) {
		batch_make(&batches[i], accel_comm_rank(self->comm, i), true, 0);
		/* Every host refuses its batch, so none waits for another. */
		batches[i].ids[4] = VOCAB;
		b[i] = batches[i].b;
		out[i] = out_of(self, i);
		ASSERT_EQ(0, tensor_io(&out[i], rows, true));
	}
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_embedding_forward(self->emb, b, out));
	accel_embedding_fault(self->emb, &f);
	EXPECT_EQ(ACCEL_EMBEDDING_ID_RANGE, f.check);
	EXPECT_STREQ("id_range", accel_embedding_check_name(f.check));
	EXPECT_EQ(0, f.chip);
	EXPECT_EQ(4, f.entry);
	EXPECT_EQ(VOCAB, f.value);
	EXPECT_EQ(VOCAB, f.limit);
	for (i = 0; i < self->n; i++) {
		float left[SAMPLES * DIM];

		ASSERT_EQ(0, tensor_io(&out[i], left, false));
		EXPECT_EQ(0, memcmp(rows, left, sizeof(rows)));
	}
	memset(got, 0, sizeof(got));
	ASSERT_EQ(ACCEL_OK, accel_embedding_download(self->emb, got));
	for (i = 0; i < self->n; i++) {
		uint32_t id;

		for (id = accel_comm_rank(self->comm, i); id < VOCAB;
		     id += self->chips)
			EXPECT_EQ(0, memcmp(table + id * DIM, got + id * DIM,
					    DIM * 4));
	}
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_backward(self->emb, out, 1.0f));
	/* The table's last id is in range; the plan goes on. */
	for (i = 0; i < self->n; i++)
		batches[i].ids[4] = VOCAB - 1;
	run_forward(_metadata, self, batches);
	expect_forward(_metadata, self, TSR_SC_SUM, batches, table);
}

TEST_F_TIMEOUT(emb, too_many_ids_for_one_owner_are_named, EMB_TEST_TIMEOUT)
{
	struct accel_embedding_desc d = desc_of(TSR_SC_SUM);
	static struct batch batches[MAX_CHIPS];
	struct accel_embedding_batch b[MAX_CHIPS];
	struct accel_tensor out[MAX_CHIPS];
	struct accel_embedding_fault f;
	unsigned int i;
	uint32_t k;

	/*
	 * Owner 1 needs five ids of its own: VOCAB gives it one on a slice
	 * of more than 60 chips (4x4x4), so this plan's table is larger,
	 * enough for slices of up to 127 chips (it is never filled: every
	 * call is refused).
	 */
	d.vocab = 512;
	d.max_ids_per_chip = 4;
	d.max_unique_ids_per_chip = 3;
	ASSERT_EQ(ACCEL_OK, open_plan(self, WINDOW_BASE + 4, &d, NULL));
	ASSERT_GT(d.vocab, 1 + self->chips * 4);
	for (i = 0; i < self->n; i++) {
		/* Five ids of owner 1 in five samples: one over its limit. */
		for (k = 0; k < 5; k++) {
			batches[i].rows[k] = k;
			batches[i].ids[k] = 1 + self->chips * k;
		}
		batches[i].b = (struct accel_embedding_batch) {
			.sample_ids = batches[i].rows, .ids = batches[i].ids,
			.count = 5, .samples = SAMPLES,
		};
		b[i] = batches[i].b;
		out[i] = out_of(self, i);
	}
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, accel_embedding_forward(self->emb, b, out));
	accel_embedding_fault(self->emb, &f);
	EXPECT_EQ(ACCEL_EMBEDDING_MAX_IDS_PER_CHIP, f.check);
	EXPECT_EQ(1, f.entry);
	EXPECT_EQ(5, f.value);
	EXPECT_EQ(4, f.limit);
	/* Four ids, four distinct: the unique limit (3) fails. */
	for (i = 0; i < self->n; i++)
		b[i].count = 4;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, accel_embedding_forward(self->emb, b, out));
	accel_embedding_fault(self->emb, &f);
	EXPECT_EQ(ACCEL_EMBEDDING_MAX_UNIQUE_IDS_PER_CHIP, f.check);
	EXPECT_EQ(1, f.entry);
	EXPECT_EQ(4, f.value);
	EXPECT_EQ(3, f.limit);
}

TEST_F(emb, bad_arguments_are_refused)
{
	struct accel_embedding_desc d = desc_of(TSR_SC_SUM);
	struct accel_embedding *e = NULL;
	struct accel_embedding_batch b[MAX_CHIPS];
	struct accel_tensor out[MAX_CHIPS], shard;
	struct accel_embedding_fault f;
	static struct batch batches[MAX_CHIPS];
	unsigned int i;

	ASSERT_EQ(ACCEL_OK, open_plan(self, WINDOW_BASE + 5, &d, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_create(NULL, self->dev, self->n, &d, &e));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_create(self->comm, self->dev, 0, &d, &e));
	d.size = 8;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_create(self->comm, self->dev, self->n, &d, &e));
	d = desc_of(TSR_SC_SUM);
	d.dtype = TSR_DTYPE_BF16;
	EXPECT_EQ(ACCEL_ERR_BAD_DTYPE,
		  accel_embedding_create(self->comm, self->dev, self->n, &d, &e));
	d = desc_of(0);
	EXPECT_EQ(ACCEL_ERR_BAD_OP,
		  accel_embedding_create(self->comm, self->dev, self->n, &d, &e));
	d = desc_of(TSR_SC_SUM);
	d.max_unique_ids_per_chip = IDS + 1;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_create(self->comm, self->dev, self->n, &d, &e));
	d = desc_of(TSR_SC_SUM);
	d.max_samples = (1u << 20) / self->chips + 1;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE,
		  accel_embedding_create(self->comm, self->dev, self->n, &d, &e));
	EXPECT_EQ(NULL, e);
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_shard(self->emb, self->n, &shard));
	ASSERT_EQ(ACCEL_OK, accel_embedding_shard(self->emb, 0, &shard));
	EXPECT_EQ((VOCAB + self->chips - 1) / self->chips, shard.rows);
	EXPECT_EQ(DIM, shard.cols);
	EXPECT_EQ(8, shard.stride);
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_backward(self->emb, out, 1.0f));
	for (i = 0; i < self->n; i++) {
		batch_make(&batches[i], accel_comm_rank(self->comm, i), true, 0);
		b[i] = batches[i].b;
		out[i] = out_of(self, i);
	}
	out[0].cols = DIM + 1;
	EXPECT_EQ(ACCEL_ERR_BAD_SHAPE, accel_embedding_forward(self->emb, b, out));
	out[0] = out_of(self, 0);
	out[0].dtype = TSR_DTYPE_BF16;
	EXPECT_EQ(ACCEL_ERR_BAD_DTYPE, accel_embedding_forward(self->emb, b, out));
	out[0] = out_of(self, 0);
	b[0].samples = SAMPLES + 1;
	out[0].rows = SAMPLES + 1;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, accel_embedding_forward(self->emb, b, out));
	accel_embedding_fault(self->emb, &f);
	EXPECT_EQ(ACCEL_EMBEDDING_MAX_SAMPLES, f.check);
	b[0] = batches[0].b;
	out[0] = out_of(self, 0);
	b[0].count = IDS + 1;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, accel_embedding_forward(self->emb, b, out));
	accel_embedding_fault(self->emb, &f);
	EXPECT_EQ(ACCEL_EMBEDDING_MAX_IDS, f.check);
	EXPECT_EQ(IDS + 1, f.value);
	b[0] = batches[0].b;
	batches[0].rows[2] = SAMPLES;
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_embedding_forward(self->emb, b, out));
	accel_embedding_fault(self->emb, &f);
	EXPECT_EQ(ACCEL_EMBEDDING_SAMPLE_RANGE, f.check);
	EXPECT_EQ(2, f.entry);
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_embedding_forward(self->emb, NULL, out));
}

TEST_HARNESS_MAIN
