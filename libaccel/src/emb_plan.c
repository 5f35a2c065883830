// SPDX-License-Identifier: MIT
/*
 * Embedding plans: sizes, checks and the host's part of a step
 * (emb_plan.h).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <accel/error.h>

#include "emb_plan.h"

static uint32_t div_up(uint64_t a, uint32_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

uint64_t emb_shard_bytes(const struct emb_layout *l)
{
	return (uint64_t)l->shard_rows * l->stride * sizeof(float);
}

uint64_t emb_rows_bytes(const struct emb_layout *l)
{
	return (uint64_t)l->exch_samples * l->stride * sizeof(float);
}

static int emb_desc_check(const struct accel_embedding_desc *d)
{
	uint32_t pp = d->max_ids_per_chip ? d->max_ids_per_chip : d->max_ids;
	uint32_t upp = d->max_unique_ids_per_chip ?
		       d->max_unique_ids_per_chip : pp;

	if (d->size != sizeof(*d) || !d->vocab || !d->dim ||
	    !d->max_samples || !d->max_ids || upp > pp)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (d->dtype != TSR_DTYPE_F32)
		return ACCEL_ERR_BAD_DTYPE;
	if (d->combiner < TSR_SC_SUM || d->combiner > TSR_SC_SQRTN)
		return ACCEL_ERR_BAD_OP;
	return ACCEL_OK;
}

int emb_layout_init(struct emb_layout *l,
		    const struct accel_embedding_desc *d, uint32_t chips)
{
	int ret = emb_desc_check(d);

	if (ret)
		return ret;
	if (!chips || chips > TSR_SC_MAX_PARTITIONS)
		return ACCEL_ERR_INVALID_ARGUMENT;
	memset(l, 0, sizeof(*l));
	l->chips = chips;
	l->vocab = d->vocab;
	l->dim = d->dim;
	l->stride = div_up(d->dim, TSR_SC_ROW_ALIGN / sizeof(float)) *
		    (TSR_SC_ROW_ALIGN / sizeof(float));
	l->combiner = d->combiner;
	l->max_samples = d->max_samples;
	l->max_ids = d->max_ids;
	l->max_pp = d->max_ids_per_chip ? d->max_ids_per_chip : d->max_ids;
	l->max_unique_pp = d->max_unique_ids_per_chip ?
			   d->max_unique_ids_per_chip : l->max_pp;
	l->shard_rows = div_up(d->vocab, chips);
	/* The commands' limits, each for the command that meets it. */
	if (d->dim > TSR_MAX_DIM || l->shard_rows > TSR_MAX_DIM ||
	    d->max_ids > TSR_SC_MAX_ENTRIES || l->max_pp > TSR_SC_MAX_ENTRIES ||
	    (uint64_t)chips * l->max_pp > TSR_SC_MAX_SLOTS ||
	    (uint64_t)chips * l->max_pp > TSR_SC_MAX_ENTRIES ||
	    (uint64_t)chips * d->max_samples > TSR_MAX_DIM ||
	    (uint64_t)chips * l->max_pp * d->dim > (1ull << 30) ||
	    (uint64_t)chips * d->max_samples * l->stride > TSR_MAX_ELEMENTS ||
	    (uint64_t)l->shard_rows * l->stride > TSR_MAX_ELEMENTS)
		return ACCEL_ERR_TOO_LARGE;
	l->exch_ids = chips * l->max_pp;
	l->exch_samples = chips * d->max_samples;
	return ACCEL_OK;
}

uint32_t emb_owned_rows(const struct emb_layout *l, uint32_t rank)
{
	return rank < l->vocab ? (l->vocab - rank - 1) / l->chips + 1 : 0;
}

static int emb_fault(struct accel_embedding_fault *f,
		     enum accel_embedding_check check, uint32_t entry,
		     uint32_t value, uint32_t limit)
{
	f->check = check;
	f->entry = entry;
	f->value = value;
	f->limit = limit;
	return check == ACCEL_EMBEDDING_ID_RANGE ||
	       check == ACCEL_EMBEDDING_SAMPLE_RANGE ?
	       ACCEL_ERR_OUT_OF_BOUNDS : ACCEL_ERR_TOO_LARGE;
}

int emb_check(const struct emb_layout *l, const struct accel_embedding_batch *b,
	      struct accel_embedding_fault *f)
{
	uint32_t i;

	if (!b->samples || (b->count && (!b->sample_ids || !b->ids)))
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (b->samples > l->max_samples)
		return emb_fault(f, ACCEL_EMBEDDING_MAX_SAMPLES, 0, b->samples,
				 l->max_samples);
	if (b->count > l->max_ids)
		return emb_fault(f, ACCEL_EMBEDDING_MAX_IDS, 0, b->count,
				 l->max_ids);
	for (i = 0; i < b->count; i++) {
		if (b->sample_ids[i] >= b->samples)
			return emb_fault(f, ACCEL_EMBEDDING_SAMPLE_RANGE, i,
					 b->sample_ids[i], b->samples);
		if (b->ids[i] >= l->vocab)
			return emb_fault(f, ACCEL_EMBEDDING_ID_RANGE, i,
					 b->ids[i], l->vocab);
	}
	return ACCEL_OK;
}

static float emb_weight(const struct accel_embedding_batch *b, uint32_t i)
{
	return b->weights ? b->weights[i] : 1.0f;
}

/*
 * Each entry's factor as SC_GATHER forms it for the whole sample (chip.md:
 * d_s summed in input order, f_e = w_e / d_s, 0 when d_s is 0); @d holds
 * max_samples floats.
 */
static void emb_scale(const struct emb_layout *l,
		      const struct accel_embedding_batch *b, float *w,
		      float *d)
{
	bool sqrtn = l->combiner == TSR_SC_SQRTN;
	uint32_t i;

	memset(d, 0, b->samples * sizeof(*d));
	for (i = 0; i < b->count; i++) {
		float x = emb_weight(b, i);

		d[b->sample_ids[i]] += sqrtn ? x * x : x;
	}
	if (sqrtn)
		for (i = 0; i < b->samples; i++)
			d[i] = sqrtf(d[i]);
	for (i = 0; i < b->count; i++) {
		float ds = d[b->sample_ids[i]];

		w[i] = ds == 0.0f ? 0.0f : emb_weight(b, i) / ds;
	}
}

void emb_prepare(const struct emb_layout *l, uint32_t rank,
		 const struct accel_embedding_batch *b, uint32_t *rows,
		 uint32_t *cols, float *weights, float *scratch)
{
	uint32_t i;

	for (i = 0; i < b->count; i++) {
		rows[i] = b->sample_ids[i] + rank * l->max_samples;
		cols[i] = b->ids[i];
		weights[i] = emb_weight(b, i);
	}
	if (l->combiner != TSR_SC_SUM)
		emb_scale(l, b, weights, scratch);
}

void emb_combine_ids(const struct emb_layout *l, uint32_t *rows,
		     uint32_t *cols)
{
	uint32_t s, j, k = 0;

	for (s = 0; s < l->max_samples; s++)
		for (j = 0; j < l->chips; j++, k++) {
			rows[k] = s;
			cols[k] = j * l->max_samples + s;
		}
}
