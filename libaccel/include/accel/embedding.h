/* SPDX-License-Identifier: MIT */
/*
 * Embedding lookups in a table sharded mod the chips of a slice.
 *
 * Row id of a table of vocab rows lives on the chip of rank id mod chips,
 * as row id / chips of that chip's shard.  Each chip brings its own batch
 * of samples in COO form; a forward pass looks every id up on the chip
 * that owns it (SparseCore commands, all-to-all over ICI) and gives each
 * chip one combined row per sample of its batch; the backward pass adds
 * the gradient of those rows into the owners' shards.
 *
 * A plan is made once for a table's shape and the batch limits: it holds
 * the shards and every buffer a step needs, so a step allocates nothing.
 * Every host process of the slice makes its plan over its own chips and
 * runs the same steps in the same order, as with the collectives.  A plan
 * is used by one thread at a time.  A step whose all-to-all fails leaves
 * the communicator unusable, as any collective does: destroy the plan,
 * then the communicator.  Documentation/libaccel.md describes the
 * algorithm and its cost.
 */
#ifndef ACCEL_EMBEDDING_H
#define ACCEL_EMBEDDING_H

#include <stdint.h>

#include <tessera/chip.h>

#include <accel/common.h>
#include <accel/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_device;
struct accel_comm;
struct accel_embedding;

/**
 * struct accel_embedding_desc - a sharded table and the batches it serves
 * @size: sizeof(struct accel_embedding_desc), so the struct may grow
 * @vocab: rows of the whole table, 1 to 2^32 - 1
 * @dim: columns, 1 to 2^20 (each row is padded to 32 bytes in a shard)
 * @dtype: TSR_DTYPE_F32
 * @combiner: TSR_SC_SUM, TSR_SC_MEAN or TSR_SC_SQRTN
 * @max_samples: most samples in one chip's batch
 * @max_ids: most entries in one chip's batch
 * @max_ids_per_chip: most ids (after dedup within each sample) one chip's
 *	batch may send to one owning chip: max_ids_per_partition of
 *	SC_PARTITION; 0 for @max_ids
 * @max_unique_ids_per_chip: most distinct ids among those;
 *	max_unique_ids_per_partition; 0 for @max_ids_per_chip
 */
struct accel_embedding_desc {
	uint32_t size;
	uint32_t vocab;
	uint32_t dim;
	enum tsr_dtype dtype;
	enum tsr_sc_combiner combiner;
	uint32_t max_samples;
	uint32_t max_ids;
	uint32_t max_ids_per_chip;
	uint32_t max_unique_ids_per_chip;
};

/**
 * struct accel_embedding_batch - one chip's batch in COO form, on the host
 * @sample_ids: entry i belongs to sample @sample_ids[i], below @samples
 * @ids: entry i looks up row @ids[i] of the table, below its vocab
 * @weights: entry i's weight, or NULL for 1 each
 * @count: entries, 0 to the plan's max_ids
 * @samples: samples of the batch (rows of its output), 1 to max_samples;
 *	a sample without entries gets a row of zeros
 */
struct accel_embedding_batch {
	const uint32_t *sample_ids;
	const uint32_t *ids;
	const float *weights;
	uint32_t count;
	uint32_t samples;
};

/** enum accel_embedding_check - what a refused step failed */
enum accel_embedding_check {
	ACCEL_EMBEDDING_OK = 0,
	/* An id at or beyond the vocabulary: ACCEL_ERR_OUT_OF_BOUNDS. */
	ACCEL_EMBEDDING_ID_RANGE,
	/* A sample id at or beyond the batch's samples: _OUT_OF_BOUNDS. */
	ACCEL_EMBEDDING_SAMPLE_RANGE,
	/* More samples than max_samples: ACCEL_ERR_TOO_LARGE. */
	ACCEL_EMBEDDING_MAX_SAMPLES,
	/* More entries than max_ids: ACCEL_ERR_TOO_LARGE. */
	ACCEL_EMBEDDING_MAX_IDS,
	/* More ids for one owner than max_ids_per_chip: _TOO_LARGE. */
	ACCEL_EMBEDDING_MAX_IDS_PER_CHIP,
	/* More distinct ids for one owner than max_unique_ids_per_chip. */
	ACCEL_EMBEDDING_MAX_UNIQUE_IDS_PER_CHIP,
	/* The partition limits do not fit a SparseCore's SPMEM. */
	ACCEL_EMBEDDING_SPMEM,
};

/**
 * struct accel_embedding_fault - why the last step was refused
 * @check: enum accel_embedding_check, ACCEL_EMBEDDING_OK if none was
 * @chip: the local chip (index into the plan's devices)
 * @entry: the entry of its batch (range checks), or the owner's rank
 *	(per-chip limits)
 * @value: the offending id or sample id, or the observed count
 * @limit: what it had to stay below (range checks) or at most (limits)
 */
struct accel_embedding_fault {
	enum accel_embedding_check check;
	unsigned int chip;
	uint32_t entry;
	uint32_t value;
	uint32_t limit;
};

/** accel_embedding_check_name() - "id_range", "max_ids", ...; "ok". */
ACCEL_API const char *accel_embedding_check_name(enum accel_embedding_check c);

/**
 * accel_embedding_create() - a plan for a table sharded over the slice of
 * @comm.
 * @devs: the chips @comm was created over, in the same order
 * @count: entries in @devs
 * @desc: the table and the batch limits
 *
 * Allocates each local chip's shard (zeroed) and every buffer a step
 * needs, in HBM.  ACCEL_ERR_INVALID_ARGUMENT for NULL pointers, a @desc
 * of an unknown size or limits out of range (0, max_unique_ids_per_chip
 * over max_ids_per_chip); ACCEL_ERR_BAD_DTYPE, ACCEL_ERR_BAD_OP for a
 * dtype or combiner not listed above; ACCEL_ERR_TOO_LARGE when a step
 * would pass a limit of the SparseCore commands (a shard over 2^20 rows,
 * chips x max_samples over 2^20, chips x max_ids_per_chip over 2^20, ...);
 * ACCEL_ERR_NO_MEMORY when HBM has no room.
 */
ACCEL_API int accel_embedding_create(struct accel_comm *comm,
				     struct accel_device *const *devs,
				     unsigned int count,
				     const struct accel_embedding_desc *desc,
				     struct accel_embedding **emb);

/** accel_embedding_destroy() - free a plan and its shards; NULL allowed. */
ACCEL_API void accel_embedding_destroy(struct accel_embedding *emb);

/**
 * accel_embedding_shard() - local chip @i's shard: a tensor of the rows
 * id / chips for the ids it owns (its rows, dim columns, padded stride),
 * to read or write with the buffer calls or to update with commands.
 */
ACCEL_API int accel_embedding_shard(const struct accel_embedding *emb,
				    unsigned int i, struct accel_tensor *shard);

/**
 * accel_embedding_upload() - the local chips' shards from @table, the
 * whole table on the host (vocab x dim floats, dense): each chip takes
 * the rows it owns.
 */
ACCEL_API int accel_embedding_upload(struct accel_embedding *emb,
				     const float *table);

/**
 * accel_embedding_download() - the rows of @table (vocab x dim) that the
 * local chips own, from their shards; the other rows are left alone.
 */
ACCEL_API int accel_embedding_download(struct accel_embedding *emb,
				       float *table);

/**
 * accel_embedding_forward() - look up every local chip's batch.
 * @batches: one batch per local chip
 * @out: per local chip, an F32 tensor of at least the batch's samples
 *	rows and dim columns: row s becomes sample s's combined row
 *
 * Waits for the end.  The batches are checked on the host before
 * anything is sent: an id or sample id out of range fails with
 * ACCEL_ERR_OUT_OF_BOUNDS, too many samples or entries with
 * ACCEL_ERR_TOO_LARGE, and nothing is written (accel_embedding_fault()
 * names the entry).  More ids for one owner than the plan allows fails
 * the same way once SC_PARTITION has counted them, before any message.
 * On a slice of several hosts, one host's refusal leaves the others
 * waiting for it until their jobs time out: check batches alike.
 */
ACCEL_API int accel_embedding_forward(struct accel_embedding *emb,
				      const struct accel_embedding_batch *batches,
				      const struct accel_tensor *out);

/**
 * accel_embedding_backward() - add @scale times the gradient of the last
 * forward's output into the shards: @grad, per local chip an F32 tensor
 * of the batch's samples rows and dim columns (the loss's gradient with
 * respect to the forward's @out).  Minus the learning rate makes it an
 * SGD step.  Deterministic: the same bits run after run.
 *
 * ACCEL_ERR_INVALID_ARGUMENT without a successful forward since the
 * plan was made or last stepped back.
 */
ACCEL_API int accel_embedding_backward(struct accel_embedding *emb,
				       const struct accel_tensor *grad,
				       float scale);

/**
 * accel_embedding_fault() - why the last forward was refused; @fault->check
 * is ACCEL_EMBEDDING_OK if it was not.
 */
ACCEL_API void accel_embedding_fault(const struct accel_embedding *emb,
				     struct accel_embedding_fault *fault);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_EMBEDDING_H */
