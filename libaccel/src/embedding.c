// SPDX-License-Identifier: MIT
/*
 * Embedding lookups in a table sharded mod the chips of a slice
 * (<accel/embedding.h>): SC_PARTITION by owner, all-to-all of the ids,
 * SC_GATHER on the owners, all-to-all of the partial rows, SC_GATHER to
 * add them up in sample order; backward, the gradient rows to the owners
 * and SC_SCATTER_ADD.  emb_plan.c holds the sizes and the host's part.
 */
#include <stdlib.h>
#include <string.h>

#include <accel/buffer.h>
#include <accel/cmdbuf.h>
#include <accel/collective.h>
#include <accel/embedding.h>
#include <accel/error.h>
#include <accel/ici.h>
#include <accel/job.h>

#include "emb_plan.h"

/* The id all-to-alls' arrays, in SC_PARTITION's output order. */
enum { EMB_ROWS, EMB_COLS, EMB_WEIGHTS, EMB_ARRAYS };

/*
 * struct emb_chip - one local chip's part of a plan
 * @in: the batch as SC_PARTITION reads it: sample ids, ids, weights
 *	(max_ids each), then the partition counts
 * @send, @recv: the id all-to-alls' buffers, one per array
 * @rows_send, @rows_recv: the row all-to-alls' buffers, exch_samples
 *	padded rows: the owners' partial rows, then the gradient rows
 * @combine: the COO of the gather that adds the partial rows up
 */
struct emb_chip {
	struct accel_device *dev;
	uint32_t rank;
	struct accel_buffer *shard;
	struct accel_buffer *in;
	struct accel_buffer *send[EMB_ARRAYS];
	struct accel_buffer *recv[EMB_ARRAYS];
	struct accel_buffer *rows_send;
	struct accel_buffer *rows_recv;
	struct accel_buffer *combine;
	struct accel_cmdbuf *cb;
	struct accel_job *job;
	uint32_t samples;
};

struct accel_embedding {
	struct accel_comm *comm;
	unsigned int n;
	struct emb_layout l;
	struct emb_chip chip[ACCEL_SLICE_MAX_LOCAL];
	struct accel_embedding_fault fault;
	bool forwarded;
	/* Host staging of one batch: ids, weights, divisors. */
	uint32_t *rows;
	uint32_t *cols;
	float *weights;
	float *scratch;
};

static const char *const emb_check_names[] = {
	[ACCEL_EMBEDDING_OK] = "ok",
	[ACCEL_EMBEDDING_ID_RANGE] = "id_range",
	[ACCEL_EMBEDDING_SAMPLE_RANGE] = "sample_range",
	[ACCEL_EMBEDDING_MAX_SAMPLES] = "max_samples",
	[ACCEL_EMBEDDING_MAX_IDS] = "max_ids",
	[ACCEL_EMBEDDING_MAX_IDS_PER_CHIP] = "max_ids_per_chip",
	[ACCEL_EMBEDDING_MAX_UNIQUE_IDS_PER_CHIP] = "max_unique_ids_per_chip",
	[ACCEL_EMBEDDING_SPMEM] = "spmem",
};

const char *accel_embedding_check_name(enum accel_embedding_check c)
{
	if ((unsigned int)c >= sizeof(emb_check_names) / sizeof(*emb_check_names))
		return "unknown";
	return emb_check_names[c];
}

/* Offsets in emb_chip.in. */
static uint64_t emb_in_array(const struct emb_layout *l, unsigned int a)
{
	return (uint64_t)a * l->max_ids * sizeof(uint32_t);
}

static uint64_t emb_in_counts(const struct emb_layout *l)
{
	return emb_in_array(l, EMB_ARRAYS);
}

static int emb_chip_alloc(struct accel_embedding *emb, struct emb_chip *c)
{
	const struct emb_layout *l = &emb->l;
	uint64_t ids = (uint64_t)l->exch_ids * sizeof(uint32_t);
	uint64_t in = emb_in_counts(l) +
		      (uint64_t)l->chips * sizeof(struct tsr_sc_counts);
	uint64_t combine = (uint64_t)l->exch_samples * sizeof(uint32_t);
	struct accel_buffer **bufs[] = {
		&c->shard, &c->in, &c->send[0], &c->send[1], &c->send[2],
		&c->recv[0], &c->recv[1], &c->recv[2], &c->rows_send,
		&c->rows_recv, &c->combine,
	};
	uint64_t sizes[] = {
		emb_shard_bytes(l), in, ids, ids, ids, ids, ids, ids,
		emb_rows_bytes(l), emb_rows_bytes(l), 2 * combine,
	};
	unsigned int i;
	int ret;

	for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		ret = accel_buffer_create(c->dev, sizes[i], ACCEL_PLACEMENT_HBM,
					  bufs[i]);
		if (ret)
			return ret;
	}
	emb_combine_ids(l, emb->rows, emb->cols);
	ret = accel_buffer_upload(c->combine, 0, emb->rows, combine);
	if (!ret)
		ret = accel_buffer_upload(c->combine, combine, emb->cols, combine);
	if (!ret)
		ret = accel_cmdbuf_create(c->dev, &c->cb);
	return ret;
}

static void emb_chip_free(struct emb_chip *c)
{
	unsigned int a;

	accel_job_destroy(c->job);
	accel_cmdbuf_destroy(c->cb);
	accel_buffer_destroy(c->combine);
	accel_buffer_destroy(c->rows_recv);
	accel_buffer_destroy(c->rows_send);
	for (a = 0; a < EMB_ARRAYS; a++) {
		accel_buffer_destroy(c->recv[a]);
		accel_buffer_destroy(c->send[a]);
	}
	accel_buffer_destroy(c->in);
	accel_buffer_destroy(c->shard);
}

void accel_embedding_destroy(struct accel_embedding *emb)
{
	unsigned int i;

	if (!emb)
		return;
	for (i = 0; i < emb->n; i++)
		emb_chip_free(&emb->chip[i]);
	free(emb->rows);
	free(emb->cols);
	free(emb->weights);
	free(emb->scratch);
	free(emb);
}

static int emb_staging_alloc(struct accel_embedding *emb)
{
	const struct emb_layout *l = &emb->l;
	/* Large enough for a batch and for the combine COO. */
	size_t n = l->max_ids > l->exch_samples ? l->max_ids : l->exch_samples;

	emb->rows = calloc(n, sizeof(uint32_t));
	emb->cols = calloc(n, sizeof(uint32_t));
	emb->weights = calloc(l->max_ids, sizeof(float));
	emb->scratch = calloc(l->max_samples, sizeof(float));
	return emb->rows && emb->cols && emb->weights && emb->scratch ?
	       ACCEL_OK : ACCEL_ERR_NO_MEMORY;
}

int accel_embedding_create(struct accel_comm *comm,
			   struct accel_device *const *devs, unsigned int count,
			   const struct accel_embedding_desc *desc,
			   struct accel_embedding **out)
{
	struct accel_embedding *emb;
	unsigned int i;
	int ret;

	if (!out)
		return ACCEL_ERR_INVALID_ARGUMENT;
	*out = NULL;
	if (!comm || !devs || !desc || !count || count > ACCEL_SLICE_MAX_LOCAL)
		return ACCEL_ERR_INVALID_ARGUMENT;
	for (i = 0; i < count; i++)
		if (!devs[i])
			return ACCEL_ERR_INVALID_ARGUMENT;
	emb = calloc(1, sizeof(*emb));
	if (!emb)
		return ACCEL_ERR_NO_MEMORY;
	emb->comm = comm;
	ret = emb_layout_init(&emb->l, desc, accel_comm_size(comm));
	if (!ret)
		ret = emb_staging_alloc(emb);
	for (i = 0; !ret && i < count; i++) {
		emb->chip[i].dev = devs[i];
		emb->chip[i].rank = accel_comm_rank(comm, i);
		emb->n = i + 1;
		ret = emb_chip_alloc(emb, &emb->chip[i]);
	}
	if (ret) {
		accel_embedding_destroy(emb);
		return ret;
	}
	*out = emb;
	return ACCEL_OK;
}

int accel_embedding_shard(const struct accel_embedding *emb, unsigned int i,
			  struct accel_tensor *shard)
{
	if (!emb || !shard || i >= emb->n)
		return ACCEL_ERR_INVALID_ARGUMENT;
	*shard = (struct accel_tensor) {
		.buffer = emb->chip[i].shard,
		.rows = emb->l.shard_rows,
		.cols = emb->l.dim,
		.stride = emb->l.stride,
		.dtype = TSR_DTYPE_F32,
	};
	return ACCEL_OK;
}

/* Copy the local shards' rows to (@up) or from the whole table. */
static int emb_table_io(struct accel_embedding *emb, float *table, bool up)
{
	const struct emb_layout *l = &emb->l;
	uint64_t row = (uint64_t)l->stride * sizeof(float);
	unsigned int i;
	uint32_t r, owned;
	float *shard;
	int ret = ACCEL_OK;

	if (!emb || !table)
		return ACCEL_ERR_INVALID_ARGUMENT;
	shard = calloc(l->shard_rows, row);
	if (!shard)
		return ACCEL_ERR_NO_MEMORY;
	for (i = 0; !ret && i < emb->n; i++) {
		struct emb_chip *c = &emb->chip[i];

		owned = emb_owned_rows(l, c->rank);
		if (!up)
			ret = accel_buffer_download(c->shard, 0, shard,
						    owned * row);
		for (r = 0; !ret && r < owned; r++) {
			float *t = table + ((uint64_t)r * l->chips + c->rank) * l->dim;
			float *s = shard + (uint64_t)r * l->stride;

			if (up)
				memcpy(s, t, l->dim * sizeof(float));
			else
				memcpy(t, s, l->dim * sizeof(float));
		}
		if (!ret && up)
			ret = accel_buffer_upload(c->shard, 0, shard, owned * row);
	}
	free(shard);
	return ret;
}

int accel_embedding_upload(struct accel_embedding *emb, const float *table)
{
	return emb_table_io(emb, (float *)table, true);
}

int accel_embedding_download(struct accel_embedding *emb, float *table)
{
	return emb_table_io(emb, table, false);
}

void accel_embedding_fault(const struct accel_embedding *emb,
			   struct accel_embedding_fault *fault)
{
	if (!fault)
		return;
	if (emb)
		*fault = emb->fault;
	else
		memset(fault, 0, sizeof(*fault));
}

/*
 * The three arrays of one exchange buffer set as SparseCore ids, by VA
 * (they are three buffers, as the all-to-alls need), listed for @use.
 */
static int emb_exch_ids(struct accel_cmdbuf *cb,
			struct accel_buffer *const *bufs, uint32_t count,
			uint32_t use, struct accel_sc_ids *ids)
{
	unsigned int a;
	int ret = ACCEL_OK;

	for (a = 0; !ret && a < EMB_ARRAYS; a++)
		ret = accel_cmdbuf_use_buffer(cb, bufs[a], use);
	*ids = (struct accel_sc_ids) {
		.row_ids = accel_buffer_device_va(bufs[EMB_ROWS]),
		.col_ids = accel_buffer_device_va(bufs[EMB_COLS]),
		.weights = accel_buffer_device_va(bufs[EMB_WEIGHTS]),
		.count = count,
	};
	return ret;
}

/* An exchange buffer of padded rows as a table of exch_samples rows. */
static struct accel_tensor emb_rows_tensor(const struct emb_layout *l,
					   struct accel_buffer *buf)
{
	return (struct accel_tensor) {
		.buffer = buf,
		.rows = l->exch_samples,
		.cols = l->dim,
		.stride = l->stride,
		.dtype = TSR_DTYPE_F32,
	};
}

/*
 * A failed SC_PARTITION over a limit: the fault names the owner and the
 * count the chip observed (in the counts it wrote), and the step fails
 * with ACCEL_ERR_TOO_LARGE; any other failure is the job's own.
 */
static int emb_chip_fault(struct accel_embedding *emb, unsigned int i,
			  const struct accel_job_status *st, int err)
{
	const struct emb_layout *l = &emb->l;
	struct emb_chip *c = &emb->chip[i];
	uint64_t base = accel_buffer_device_va(c->in) + emb_in_counts(l);
	struct accel_embedding_fault *f = &emb->fault;
	struct tsr_sc_counts counts;
	uint32_t p;

	if (st->chip_error == TSR_ERR_SPMEM) {
		*f = (struct accel_embedding_fault) {
			.check = ACCEL_EMBEDDING_SPMEM, .chip = i,
			.value = l->max_pp, .limit = l->max_unique_pp,
		};
		return ACCEL_ERR_TOO_LARGE;
	}
	if (st->chip_error != TSR_ERR_MAX_IDS &&
	    st->chip_error != TSR_ERR_MAX_UNIQUE_IDS)
		return err;
	p = (uint32_t)((st->fault_va - base) / sizeof(counts));
	if (st->fault_va < base || p >= l->chips ||
	    accel_buffer_download(c->in, emb_in_counts(l) + p * sizeof(counts),
				  &counts, sizeof(counts)))
		return err;
	if (st->chip_error == TSR_ERR_MAX_IDS)
		*f = (struct accel_embedding_fault) {
			.check = ACCEL_EMBEDDING_MAX_IDS_PER_CHIP,
			.value = counts.ids, .limit = l->max_pp,
		};
	else
		*f = (struct accel_embedding_fault) {
			.check = ACCEL_EMBEDDING_MAX_UNIQUE_IDS_PER_CHIP,
			.value = counts.unique_ids, .limit = l->max_unique_pp,
		};
	f->chip = i;
	f->entry = p;
	return ACCEL_ERR_TOO_LARGE;
}

typedef int (*emb_build_fn)(struct accel_embedding *emb, unsigned int i,
			    const void *arg);

/* One job per local chip, built by @build; waits for all of them. */
static int emb_run(struct accel_embedding *emb, emb_build_fn build,
		   const void *arg)
{
	unsigned int i;
	int ret = ACCEL_OK, r;

	for (i = 0; !ret && i < emb->n; i++) {
		struct emb_chip *c = &emb->chip[i];

		ret = accel_cmdbuf_reset(c->cb);
		if (!ret)
			ret = build(emb, i, arg);
		if (!ret)
			ret = accel_submit(c->dev, c->cb, NULL, &c->job);
	}
	for (i = 0; i < emb->n; i++) {
		struct emb_chip *c = &emb->chip[i];

		if (!c->job)
			continue;
		r = accel_job_wait(c->job, ACCEL_TIMEOUT_INFINITE);
		if (r && !ret) {
			struct accel_job_status st;

			ret = r;
			if (!accel_job_status(c->job, &st))
				ret = emb_chip_fault(emb, i, &st, r);
		}
		accel_job_destroy(c->job);
		c->job = NULL;
	}
	return ret;
}

/* The host's part: check every local batch, then upload them. */
static int emb_load(struct accel_embedding *emb,
		    const struct accel_embedding_batch *batches)
{
	const struct emb_layout *l = &emb->l;
	unsigned int i, a;
	int ret;

	for (i = 0; i < emb->n; i++) {
		ret = emb_check(l, &batches[i], &emb->fault);
		if (ret) {
			emb->fault.chip = i;
			return ret;
		}
	}
	for (i = 0; i < emb->n; i++) {
		const void *arrays[EMB_ARRAYS] = {
			emb->rows, emb->cols, emb->weights,
		};
		uint64_t bytes = (uint64_t)batches[i].count * sizeof(uint32_t);

		emb_prepare(l, emb->chip[i].rank, &batches[i], emb->rows,
			    emb->cols, emb->weights, emb->scratch);
		emb->chip[i].samples = batches[i].samples;
		for (a = 0; bytes && a < EMB_ARRAYS; a++) {
			ret = accel_buffer_upload(emb->chip[i].in,
						  emb_in_array(l, a),
						  arrays[a], bytes);
			if (ret)
				return ret;
		}
	}
	return ACCEL_OK;
}

/* SC_PARTITION: the batch's ids by owner, into the id exchange. */
static int emb_build_partition(struct accel_embedding *emb, unsigned int i,
			       const void *arg)
{
	const struct accel_embedding_batch *b = arg;
	const struct emb_layout *l = &emb->l;
	struct emb_chip *c = &emb->chip[i];
	struct accel_sc_limits limits = {
		.partitions = l->chips,
		.samples = l->exch_samples,
		.vocab = l->vocab,
		.max_ids = l->max_pp,
		.max_unique_ids = l->max_unique_pp,
	};
	struct accel_sc_ids in = {
		.buffer = c->in,
		.row_ids = emb_in_array(l, EMB_ROWS),
		.col_ids = emb_in_array(l, EMB_COLS),
		.weights = emb_in_array(l, EMB_WEIGHTS),
		.count = b[i].count,
	};
	struct accel_region counts = {
		.buffer = c->in, .offset = emb_in_counts(l),
	};
	struct accel_sc_ids out;
	int ret = emb_exch_ids(c->cb, c->send, l->exch_ids, ACCEL_USE_WRITE,
			       &out);

	return ret ? ret : accel_cmdbuf_sc_partition(c->cb, &limits, &in, &out,
						     &counts);
}

/* SC_GATHER on the owner: every source's ids, into its block of rows. */
static int emb_build_lookup(struct accel_embedding *emb, unsigned int i,
			    const void *arg)
{
	const struct emb_layout *l = &emb->l;
	struct emb_chip *c = &emb->chip[i];
	struct accel_tensor shard, out = emb_rows_tensor(l, c->rows_send);
	struct accel_sc_ids in;
	int ret = emb_exch_ids(c->cb, c->recv, l->exch_ids, ACCEL_USE_READ,
			       &in);

	(void)arg;
	accel_embedding_shard(emb, i, &shard);
	return ret ? ret : accel_cmdbuf_sc_gather(c->cb, TSR_SC_SUM, &in,
						  &shard, &out);
}

/* SC_GATHER adding up each sample's partial rows, owners in rank order. */
static int emb_build_combine(struct accel_embedding *emb, unsigned int i,
			     const void *arg)
{
	const struct accel_tensor *outs = arg;
	const struct emb_layout *l = &emb->l;
	struct emb_chip *c = &emb->chip[i];
	uint64_t combine = (uint64_t)l->exch_samples * sizeof(uint32_t);
	struct accel_sc_ids in = {
		.buffer = c->combine,
		.row_ids = 0,
		.col_ids = combine,
		.weights = ACCEL_SC_UNWEIGHTED,
		.count = c->samples * l->chips,
	};
	struct accel_tensor table = emb_rows_tensor(l, c->rows_recv);
	struct accel_tensor out = outs[i];

	out.rows = c->samples;
	return accel_cmdbuf_sc_gather(c->cb, TSR_SC_SUM, &in, &table, &out);
}

/* Each local chip's rows of a batch (@b's, or the last forward's). */
static int emb_rows_check(const struct accel_embedding *emb,
			  const struct accel_tensor *t,
			  const struct accel_embedding_batch *b)
{
	unsigned int i;

	if (!t)
		return ACCEL_ERR_INVALID_ARGUMENT;
	for (i = 0; i < emb->n; i++) {
		uint32_t samples = b ? b[i].samples : emb->chip[i].samples;

		if (t[i].dtype != TSR_DTYPE_F32)
			return ACCEL_ERR_BAD_DTYPE;
		if (t[i].cols != emb->l.dim || t[i].rows < samples)
			return ACCEL_ERR_BAD_SHAPE;
	}
	return ACCEL_OK;
}

/* The all-to-all of id array @a (EMB_ARRAYS: of the rows) of every chip. */
static int emb_exchange(struct accel_embedding *emb, unsigned int a)
{
	struct accel_buffer *send[ACCEL_SLICE_MAX_LOCAL];
	struct accel_buffer *recv[ACCEL_SLICE_MAX_LOCAL];
	const struct emb_layout *l = &emb->l;
	uint64_t count = l->max_pp;
	enum tsr_dtype dtype = a == EMB_WEIGHTS ? TSR_DTYPE_F32 : TSR_DTYPE_I32;
	unsigned int i;

	for (i = 0; i < emb->n; i++) {
		struct emb_chip *c = &emb->chip[i];

		send[i] = a < EMB_ARRAYS ? c->send[a] : c->rows_send;
		recv[i] = a < EMB_ARRAYS ? c->recv[a] : c->rows_recv;
	}
	if (a == EMB_ARRAYS) {
		count = (uint64_t)l->max_samples * l->stride;
		dtype = TSR_DTYPE_F32;
	}
	return accel_all_to_all(emb->comm, send, recv, count, dtype, NULL);
}

int accel_embedding_forward(struct accel_embedding *emb,
			    const struct accel_embedding_batch *batches,
			    const struct accel_tensor *out)
{
	unsigned int a;
	int ret;

	if (!emb || !batches || !out)
		return ACCEL_ERR_INVALID_ARGUMENT;
	memset(&emb->fault, 0, sizeof(emb->fault));
	emb->forwarded = false;
	ret = emb_rows_check(emb, out, batches);
	if (!ret)
		ret = emb_load(emb, batches);
	if (!ret)
		ret = emb_run(emb, emb_build_partition, batches);
	for (a = 0; !ret && a < EMB_ARRAYS; a++)
		ret = emb_exchange(emb, a);
	if (!ret)
		ret = emb_run(emb, emb_build_lookup, NULL);
	if (!ret)
		ret = emb_exchange(emb, EMB_ARRAYS);
	if (!ret)
		ret = emb_run(emb, emb_build_combine, out);
	emb->forwarded = !ret;
	return ret;
}

/* Each sample's gradient row to every owner: the batch's rows, chips times. */
static int emb_build_spread(struct accel_embedding *emb, unsigned int i,
			    const void *arg)
{
	const struct accel_tensor *grad = (const struct accel_tensor *)arg + i;
	const struct emb_layout *l = &emb->l;
	struct emb_chip *c = &emb->chip[i];
	uint64_t row = (uint64_t)l->stride * sizeof(float);
	struct accel_region dst = {
		.buffer = c->rows_send,
		.row_stride = row,
		.plane_stride = l->max_samples * row,
	};
	struct accel_region src = {
		.buffer = grad->buffer,
		.offset = grad->offset,
		.row_stride = (uint64_t)(grad->stride ? grad->stride : grad->cols) *
			      sizeof(float),
	};

	return accel_cmdbuf_dma_copy(c->cb, &dst, &src,
				     l->dim * sizeof(float), c->samples,
				     l->chips);
}

/* SC_SCATTER_ADD on the owner: every source's gradient rows, in order. */
static int emb_build_update(struct accel_embedding *emb, unsigned int i,
			    const void *arg)
{
	const struct emb_layout *l = &emb->l;
	struct emb_chip *c = &emb->chip[i];
	struct accel_tensor shard, grad = emb_rows_tensor(l, c->rows_recv);
	struct accel_sc_ids in;
	int ret = emb_exch_ids(c->cb, c->recv, l->exch_ids, ACCEL_USE_READ,
			       &in);

	accel_embedding_shard(emb, i, &shard);
	return ret ? ret : accel_cmdbuf_sc_scatter_add(c->cb, TSR_SC_SUM, &in,
						       &grad, &shard,
						       *(const float *)arg);
}

int accel_embedding_backward(struct accel_embedding *emb,
			     const struct accel_tensor *grad, float scale)
{
	int ret;

	if (!emb || !emb->forwarded)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = emb_rows_check(emb, grad, NULL);
	if (!ret)
		ret = emb_run(emb, emb_build_spread, grad);
	if (!ret)
		ret = emb_exchange(emb, EMB_ARRAYS);
	if (!ret)
		ret = emb_run(emb, emb_build_update, &scale);
	emb->forwarded = false;
	return ret;
}
