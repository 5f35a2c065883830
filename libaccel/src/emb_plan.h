/* SPDX-License-Identifier: MIT */
/*
 * Embedding plans: the sizes and offsets of a table sharded mod the chips
 * of a slice, and what the host does to one chip's batch before the chips
 * take over (checks, the sample ids' offset, the combiner's divisor).
 * Pure functions, no device: tests/host/libaccel_embedding_test.c runs
 * them, and the whole sharded step on the CPU reference.
 */
#ifndef ACCEL_EMB_PLAN_H
#define ACCEL_EMB_PLAN_H

#include <stdint.h>

#include <accel/embedding.h>

/*
 * struct emb_layout - what every chip of a plan allocates and exchanges
 * @chips: chips of the slice (the partitions of SC_PARTITION)
 * @stride: a shard row's elements, dim padded to TSR_SC_ROW_ALIGN bytes
 * @shard_rows: rows of every shard, ceil(vocab / chips)
 * @max_pp, @max_unique_pp: the partition limits, defaults filled in
 * @exch_ids: slots of the id all-to-alls, chips x max_pp
 * @exch_samples: rows of the row all-to-alls, chips x max_samples: block
 *	j holds the rows of the samples of rank j's batch
 */
struct emb_layout {
	uint32_t chips;
	uint32_t vocab;
	uint32_t dim;
	uint32_t stride;
	enum tsr_sc_combiner combiner;
	uint32_t max_samples;
	uint32_t max_ids;
	uint32_t max_pp;
	uint32_t max_unique_pp;
	uint32_t shard_rows;
	uint32_t exch_ids;
	uint32_t exch_samples;
};

/* Bytes of a shard, and of one of the row all-to-alls' buffers. */
uint64_t emb_shard_bytes(const struct emb_layout *l);
uint64_t emb_rows_bytes(const struct emb_layout *l);

/* A layout for @desc over @chips, or an ACCEL_ERR_* naming what is wrong. */
int emb_layout_init(struct emb_layout *l,
		    const struct accel_embedding_desc *desc, uint32_t chips);

/* The rows of the table the chip of @rank owns. */
uint32_t emb_owned_rows(const struct emb_layout *l, uint32_t rank);

/*
 * emb_check() - whether one chip's batch fits the plan: ACCEL_OK, or the
 * error with @fault's check, entry, value and limit filled in (its chip
 * left alone).
 */
int emb_check(const struct emb_layout *l, const struct accel_embedding_batch *b,
	      struct accel_embedding_fault *fault);

/*
 * emb_prepare() - the SC_PARTITION input of the chip of @rank for a
 * checked batch: entry i's sample id moved to block @rank of the exchange
 * (s + rank x max_samples, so that an owner's one gather writes each
 * source's rows in its block), its id, and its weight divided by its
 * sample's divisor for MEAN and SQRTN (the owners see only part of a
 * sample, so they gather with SUM); @scratch holds max_samples floats.
 */
void emb_prepare(const struct emb_layout *l, uint32_t rank,
		 const struct accel_embedding_batch *b, uint32_t *rows,
		 uint32_t *cols, float *weights, float *scratch);

/*
 * emb_combine_ids() - the COO of the gather that adds up a sample's
 * partial rows: entries (s, j x max_samples + s) for j = 0 .. chips - 1,
 * sample after sample, the owners in rank order; exch_samples entries.
 */
void emb_combine_ids(const struct emb_layout *l, uint32_t *rows,
		     uint32_t *cols);

#endif /* ACCEL_EMB_PLAN_H */
