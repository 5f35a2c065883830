// SPDX-License-Identifier: GPL-2.0
/*
 * libaccel's sharded embedding plans (libaccel/src/emb_plan.c): sizes,
 * limits, the checks of a batch, the host's part of a step, and the whole
 * sharded lookup and its backward pass run on the CPU reference of the
 * SparseCore commands, chip by chip, against one unsharded table.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

#include "kselftest_harness.h"

#include "emb_plan.h"

static struct accel_embedding_desc desc(uint32_t vocab, uint32_t dim,
					uint32_t samples, uint32_t ids)
{
	return (struct accel_embedding_desc) {
		.size = sizeof(struct accel_embedding_desc),
		.vocab = vocab, .dim = dim, .dtype = TSR_DTYPE_F32,
		.combiner = TSR_SC_SUM, .max_samples = samples, .max_ids = ids,
	};
}

TEST(layout_pads_rows_and_splits_the_vocabulary)
{
	struct accel_embedding_desc d = desc(10, 5, 3, 7);
	struct emb_layout l;
	uint32_t r, total = 0;

	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	EXPECT_EQ(8, l.stride);
	EXPECT_EQ(3, l.shard_rows);
	EXPECT_EQ(7, l.max_pp);
	EXPECT_EQ(7, l.max_unique_pp);
	EXPECT_EQ(28, l.exch_ids);
	EXPECT_EQ(12, l.exch_samples);
	EXPECT_EQ(3 * 8 * 4, emb_shard_bytes(&l));
	EXPECT_EQ(12 * 8 * 4, emb_rows_bytes(&l));
	for (r = 0; r < 4; r++)
		total += emb_owned_rows(&l, r);
	EXPECT_EQ(10, total);
	EXPECT_EQ(3, emb_owned_rows(&l, 1));
	EXPECT_EQ(2, emb_owned_rows(&l, 2));
	d.dim = 9;
	d.max_ids_per_chip = 5;
	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	EXPECT_EQ(16, l.stride);
	EXPECT_EQ(5, l.max_unique_pp);
}

TEST(layout_refuses_what_no_step_could_run)
{
	struct accel_embedding_desc d = desc(10, 5, 3, 7);
	struct emb_layout l;

	d.size--;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, emb_layout_init(&l, &d, 4));
	d = desc(10, 5, 3, 7);
	d.max_ids_per_chip = 4;
	d.max_unique_ids_per_chip = 5;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, emb_layout_init(&l, &d, 4));
	d = desc(0, 5, 3, 7);
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, emb_layout_init(&l, &d, 4));
	d = desc(10, 5, 3, 7);
	d.dtype = TSR_DTYPE_I32;
	EXPECT_EQ(ACCEL_ERR_BAD_DTYPE, emb_layout_init(&l, &d, 4));
	d = desc(10, 5, 3, 7);
	d.combiner = 4;
	EXPECT_EQ(ACCEL_ERR_BAD_OP, emb_layout_init(&l, &d, 4));
	/* A shard of 2^20 rows is the most one tensor holds. */
	d = desc(4u << 20, 1, 3, 7);
	EXPECT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	d.vocab++;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, emb_layout_init(&l, &d, 4));
	/* Every source's samples side by side in one gather's output. */
	d = desc(10, 1, 1u << 18, 7);
	EXPECT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	d.max_samples++;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, emb_layout_init(&l, &d, 4));
	/* Every source's ids in one gather. */
	d = desc(10, 1, 3, 1u << 18);
	EXPECT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	d.max_ids_per_chip = (1u << 18) + 1;
	d.max_ids++;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, emb_layout_init(&l, &d, 4));
}

TEST(check_names_the_entry_out_of_range)
{
	struct accel_embedding_desc d = desc(10, 5, 3, 4);
	uint32_t rows[] = { 0, 2, 1 }, ids[] = { 9, 10, 11 };
	struct accel_embedding_batch b = {
		.sample_ids = rows, .ids = ids, .count = 3, .samples = 3,
	};
	struct accel_embedding_fault f = { 0 };
	struct emb_layout l;

	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS, emb_check(&l, &b, &f));
	EXPECT_EQ(ACCEL_EMBEDDING_ID_RANGE, f.check);
	EXPECT_EQ(1, f.entry);
	EXPECT_EQ(10, f.value);
	EXPECT_EQ(10, f.limit);
	EXPECT_STREQ("id_range", accel_embedding_check_name(f.check));
	b.samples = 2;
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS, emb_check(&l, &b, &f));
	EXPECT_EQ(ACCEL_EMBEDDING_SAMPLE_RANGE, f.check);
	EXPECT_EQ(1, f.entry);
	EXPECT_EQ(2, f.value);
	b.samples = 4;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, emb_check(&l, &b, &f));
	EXPECT_EQ(ACCEL_EMBEDDING_MAX_SAMPLES, f.check);
	EXPECT_EQ(4, f.value);
	EXPECT_EQ(3, f.limit);
	b.samples = 3;
	b.count = 5;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE, emb_check(&l, &b, &f));
	EXPECT_EQ(ACCEL_EMBEDDING_MAX_IDS, f.check);
	b.count = 1;
	EXPECT_EQ(ACCEL_OK, emb_check(&l, &b, &f));
	b.samples = 0;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, emb_check(&l, &b, &f));
}

TEST(prepare_moves_samples_to_the_sources_block_and_divides_for_mean_and_sqrtn)
{
	struct accel_embedding_desc d = desc(10, 5, 3, 4);
	uint32_t rows[] = { 0, 2, 0, 2 }, ids[] = { 1, 2, 3, 4 };
	float w[] = { 1.0f, 2.0f, 3.0f, 6.0f }, d_s[3];
	struct accel_embedding_batch b = {
		.sample_ids = rows, .ids = ids, .weights = w, .count = 4,
		.samples = 3,
	};
	uint32_t r[4], c[4];
	float x[4];
	struct emb_layout l;

	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	emb_prepare(&l, 2, &b, r, c, x, d_s);
	EXPECT_EQ(6, r[0]);
	EXPECT_EQ(8, r[3]);
	EXPECT_EQ(4, c[3]);
	EXPECT_EQ(6.0f, x[3]);
	d.combiner = TSR_SC_MEAN;
	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	emb_prepare(&l, 2, &b, r, c, x, d_s);
	EXPECT_EQ(0.25f, x[0]);
	EXPECT_EQ(0.75f, x[2]);
	EXPECT_EQ(0.25f, x[1]);
	EXPECT_EQ(0.75f, x[3]);
	/* Sample 0 weighs 1 and 3: sqrt(10); sample 2, 2 and 6: sqrt(40). */
	d.combiner = TSR_SC_SQRTN;
	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	emb_prepare(&l, 2, &b, r, c, x, d_s);
	EXPECT_EQ(1.0f / sqrtf(10.0f), x[0]);
	EXPECT_EQ(3.0f / sqrtf(10.0f), x[2]);
	EXPECT_EQ(6.0f / sqrtf(40.0f), x[3]);
	/* A sample whose weights add up to 0 weighs nothing. */
	w[1] = 0.0f;
	w[3] = 0.0f;
	d.combiner = TSR_SC_MEAN;
	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	emb_prepare(&l, 2, &b, r, c, x, d_s);
	EXPECT_EQ(0.0f, x[1]);
	EXPECT_EQ(0.0f, x[3]);
}

TEST(combine_ids_visit_the_owners_in_rank_order)
{
	struct accel_embedding_desc d = desc(10, 5, 3, 4);
	uint32_t r[12], c[12];
	struct emb_layout l;

	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, 4));
	emb_combine_ids(&l, r, c);
	EXPECT_EQ(0, r[3]);
	EXPECT_EQ(9, c[3]);
	EXPECT_EQ(1, r[4]);
	EXPECT_EQ(1, c[4]);
	EXPECT_EQ(2, r[11]);
	EXPECT_EQ(11, c[11]);
}

/* ---------------------------------------- the whole step on the CPU */

#define CHIPS 4
#define VOCAB 37
#define DIM 3
#define SAMPLES 6
#define IDS 16

/*
 * Chip @rank's batch: samples of 0 to 4 entries (sample 2 of every chip
 * empty), duplicates within a sample, the table's last id in sample 1.
 */
static uint32_t batch_of(uint32_t rank, uint32_t *rows, uint32_t *ids,
			 float *w)
{
	uint32_t s, j, n = 0;

	for (s = 0; s < SAMPLES; s++) {
		uint32_t k = s == 2 ? 0 : (s + rank) % 4 + 1;

		for (j = 0; j < k && n < IDS - 1; j++, n++) {
			rows[n] = s;
			ids[n] = j == 1 ? ids[n - 1] :
				 (s * 7 + j * 13 + rank * 5) % VOCAB;
			w[n] = (float)((s + j) % 3 + 1);
		}
	}
	rows[n] = 1;
	ids[n] = VOCAB - 1;
	w[n] = 2.0f;
	return n + 1;
}

struct sim_chip {
	uint32_t rows[IDS], ids[IDS], count;
	float w[IDS];
	uint32_t p_rows[CHIPS * IDS], p_cols[CHIPS * IDS];
	float p_w[CHIPS * IDS];
	uint32_t r_rows[CHIPS * IDS], r_cols[CHIPS * IDS];
	float r_w[CHIPS * IDS];
	float shard[(VOCAB / CHIPS + 1) * DIM];
	float send[CHIPS * SAMPLES * DIM], recv[CHIPS * SAMPLES * DIM];
	float out[SAMPLES * DIM];
};

static void exchange_ids(struct sim_chip *c, uint32_t pp)
{
	uint32_t i, j;

	for (i = 0; i < CHIPS; i++)
		for (j = 0; j < CHIPS; j++) {
			memcpy(c[j].r_rows + i * pp, c[i].p_rows + j * pp, pp * 4);
			memcpy(c[j].r_cols + i * pp, c[i].p_cols + j * pp, pp * 4);
			memcpy(c[j].r_w + i * pp, c[i].p_w + j * pp, pp * 4);
		}
}

static void exchange_rows(struct sim_chip *c)
{
	uint32_t i, j, blk = SAMPLES * DIM;

	for (i = 0; i < CHIPS; i++)
		for (j = 0; j < CHIPS; j++)
			memcpy(c[j].recv + i * blk, c[i].send + j * blk, blk * 4);
}

TEST(sharded_step_matches_one_table)
{
	struct accel_embedding_desc d = desc(VOCAB, DIM, SAMPLES, IDS);
	static struct sim_chip c[CHIPS];
	float table[VOCAB * DIM], want_table[VOCAB * DIM], want[SAMPLES * DIM];
	float grad[CHIPS][SAMPLES * DIM], d_s[SAMPLES];
	uint32_t comb_r[CHIPS * SAMPLES], comb_c[CHIPS * SAMPLES];
	uint32_t err, where, r, i, k;
	struct tsr_sc_counts counts[CHIPS];
	struct emb_layout l;

	ASSERT_EQ(ACCEL_OK, emb_layout_init(&l, &d, CHIPS));
	struct accel_sc_limits lim = {
		.partitions = CHIPS, .samples = l.exch_samples, .vocab = VOCAB,
		.max_ids = l.max_pp, .max_unique_ids = l.max_unique_pp,
	};
	for (i = 0; i < VOCAB * DIM; i++)
		table[i] = (float)((i * 5) % 17) - 8.0f;
	memcpy(want_table, table, sizeof(table));
	emb_combine_ids(&l, comb_r, comb_c);
	for (r = 0; r < CHIPS; r++) {
		struct accel_embedding_batch b = { 0 };
		uint32_t rows[IDS], cols[IDS];
		float w[IDS];

		c[r].count = batch_of(r, c[r].rows, c[r].ids, c[r].w);
		b = (struct accel_embedding_batch) {
			.sample_ids = c[r].rows, .ids = c[r].ids,
			.weights = c[r].w, .count = c[r].count,
			.samples = SAMPLES,
		};
		ASSERT_EQ(ACCEL_OK, emb_check(&l, &b, NULL));
		emb_prepare(&l, r, &b, rows, cols, w, d_s);
		ASSERT_EQ(ACCEL_OK, accel_ref_sc_partition(rows, cols, w, c[r].count, &lim, c[r].p_rows, c[r].p_cols,
			  c[r].p_w, counts, &err, &where));
		ASSERT_EQ(TSR_ERR_NONE, err);
		for (k = 0; k < emb_owned_rows(&l, r); k++)
			memcpy(c[r].shard + k * DIM, table + (k * CHIPS + r) * DIM,
			       DIM * 4);
	}
	exchange_ids(c, l.max_pp);
	for (r = 0; r < CHIPS; r++) {
		ASSERT_EQ(ACCEL_OK, accel_ref_sc_gather(TSR_SC_SUM, c[r].r_rows,
			  c[r].r_cols, c[r].r_w, l.exch_ids, c[r].shard,
			  l.shard_rows, DIM, c[r].send, l.exch_samples, &err,
			  &where));
		ASSERT_EQ(TSR_ERR_NONE, err);
	}
	exchange_rows(c);
	for (r = 0; r < CHIPS; r++) {
		ASSERT_EQ(ACCEL_OK, accel_ref_sc_gather(TSR_SC_SUM, comb_r,
			  comb_c, NULL, SAMPLES * CHIPS, c[r].recv,
			  l.exch_samples, DIM, c[r].out, SAMPLES, &err, &where));
		ASSERT_EQ(ACCEL_OK, accel_ref_sc_gather(TSR_SC_SUM, c[r].rows,
			  c[r].ids, c[r].w, c[r].count, table, VOCAB, DIM, want,
			  SAMPLES, &err, &where));
		EXPECT_EQ(0, memcmp(want, c[r].out, sizeof(want)));
		for (i = 0; i < DIM; i++)
			EXPECT_EQ(0.0f, c[r].out[2 * DIM + i]);
	}
	/* Backward: every chip's gradient rows to every owner. */
	for (r = 0; r < CHIPS; r++) {
		for (i = 0; i < SAMPLES * DIM; i++)
			grad[r][i] = (float)((i + r * 3) % 7) - 3.0f;
		for (k = 0; k < CHIPS; k++)
			memcpy(c[r].send + k * SAMPLES * DIM, grad[r],
			       sizeof(grad[r]));
		ASSERT_EQ(ACCEL_OK, accel_ref_sc_scatter_add(TSR_SC_SUM,
			  c[r].rows, c[r].ids, c[r].w, c[r].count, grad[r],
			  SAMPLES, DIM, want_table, VOCAB, -1.0f, &err, &where));
	}
	exchange_rows(c);
	for (r = 0; r < CHIPS; r++) {
		ASSERT_EQ(ACCEL_OK, accel_ref_sc_scatter_add(TSR_SC_SUM,
			  c[r].r_rows, c[r].r_cols, c[r].r_w, l.exch_ids,
			  c[r].recv, l.exch_samples, DIM, c[r].shard,
			  l.shard_rows, -1.0f, &err, &where));
		ASSERT_EQ(TSR_ERR_NONE, err);
		for (k = 0; k < emb_owned_rows(&l, r); k++)
			EXPECT_EQ(0, memcmp(want_table + (k * CHIPS + r) * DIM,
					    c[r].shard + k * DIM, DIM * 4));
	}
}

TEST_HARNESS_MAIN
