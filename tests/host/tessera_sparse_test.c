// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the SparseCore: its registers, SC_PARTITION,
 * SC_GATHER and SC_SCATTER_ADD against libaccel's CPU reference
 * (<accel/ref.h>), their checks, and their timing formulas
 * (Documentation/chip.md, "SparseCore").
 */
#include <math.h>

#include "kselftest_harness.h"

#include "tessera_chip.h"
#include "tessera-numerics.h"

#include <accel/accel.h>

/* v4: 4 SparseCores of 16 tiles, 8 lanes, 2560 KiB of SPMEM. */
#define LANES_F32 (4 * 16 * 8)
#define CLOCK_MHZ 1050
#define HOST_GBPS 32
#define HBM_GBPS 1200

static uint64_t cycles(uint64_t bytes, uint64_t gbps)
{
	return (bytes * CLOCK_MHZ + gbps * 1000 - 1) / (gbps * 1000);
}

static uint64_t div_up(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static uint64_t sc_busy(struct test_chip *c)
{
	uint64_t lo = rd(c, TSR_REG_CNT_SC_BUSY_LO);

	return lo | (uint64_t)rd(c, TSR_REG_CNT_SC_BUSY_LO + 4) << 32;
}

/* Ids in system memory: three arrays of @n, at the same VA in context 1. */
struct ids {
	uint32_t n;
	uint64_t rows, cols, weights;
	uint32_t *r, *c;
	float *w;
};

static struct ids ids_new(struct test_chip *c, uint32_t n)
{
	struct ids s = { .n = n };
	uint64_t bytes = (uint64_t)(n ? n : 1) * 4;

	s.rows = chip_buffer(c, 1, bytes);
	s.cols = chip_buffer(c, 1, bytes);
	s.weights = chip_buffer(c, 1, bytes);
	s.r = host_ptr(c, s.rows);
	s.c = host_ptr(c, s.cols);
	s.w = host_ptr(c, s.weights);
	return s;
}

static struct tsr_sc_coo coo(const struct ids *s, bool weighted)
{
	return (struct tsr_sc_coo){
		.row_ids = s->rows, .col_ids = s->cols,
		.weights = weighted ? s->weights : 0,
	};
}

static uint32_t lcg(uint32_t *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 8;
}

/* @n random ids of @samples samples, ids below @vocab, some repeated. */
static void ids_random(struct ids *s, uint32_t samples, uint32_t vocab,
		       uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < s->n; i++) {
		s->r[i] = lcg(&seed) % samples;
		s->c[i] = lcg(&seed) % vocab;
		s->w[i] = (float)(lcg(&seed) % 7) - 2.0f;
		if (i && lcg(&seed) % 4 == 0) {
			s->r[i] = s->r[i - 1];
			s->c[i] = s->c[i - 1];
		}
	}
}

/* ------------------------------------------------------------ registers */

TEST(sparsecore_registers_read_each_preset)
{
	static const struct {
		const char *preset;
		uint32_t cores, tiles, f32, bf16, spmem;
	} want[] = {
		{ "v4", 4, 16, 8, 8, 2560 },
		{ "v5p", 4, 16, 8, 8, 2560 },
		{ "v6e", 2, 16, 8, 16, 2560 },
		{ "v5e", 0, 0, 0, 0, 0 },
		{ "v2", 0, 0, 0, 0, 0 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		struct test_chip *c = chip_new(want[i].preset);

		EXPECT_EQ(want[i].cores, rd(c, TSR_REG_SC_CORES));
		EXPECT_EQ(want[i].tiles, rd(c, TSR_REG_SC_TILES));
		EXPECT_EQ(want[i].f32, rd(c, TSR_REG_SC_SIMD_F32));
		EXPECT_EQ(want[i].bf16, rd(c, TSR_REG_SC_SIMD_BF16));
		EXPECT_EQ(want[i].spmem, rd(c, TSR_REG_SC_SPMEM_KIB));
		EXPECT_EQ(want[i].cores ? TSR_CAP_SPARSECORE : 0,
			  rd(c, TSR_REG_CAPS) & TSR_CAP_SPARSECORE);
		chip_free(c);
	}
}

TEST(sparsecore_config_is_checked)
{
	TsrConfig cfg;
	const char *why = NULL;

	ASSERT_EQ(0, tsr_preset_lookup("v4", &cfg));
	ASSERT_EQ(0, tsr_config_check(&cfg, &why));
	cfg.sc_simd_bf16 = 12;
	EXPECT_EQ(-1, tsr_config_check(&cfg, &why));
	EXPECT_NE(NULL, strstr(why, "sc-simd-bf16"));
	cfg.sc_simd_bf16 = 8;
	cfg.sparsecores = 9;
	EXPECT_EQ(-1, tsr_config_check(&cfg, &why));
	cfg.sparsecores = 4;
	cfg.sc_spmem_kib = 32;
	EXPECT_EQ(-1, tsr_config_check(&cfg, &why));
	cfg.sc_spmem_kib = 2560;
	cfg.sc_simd_f32 = 12;
	cfg.sc_simd_bf16 = 12;
	EXPECT_EQ(-1, tsr_config_check(&cfg, &why));
	ASSERT_EQ(0, tsr_preset_lookup("v5e", &cfg));
	cfg.sparsecores = 2;
	EXPECT_EQ(0, tsr_config_check(&cfg, &why));
}

TEST(sparsecore_commands_are_unknown_on_a_chip_without_them)
{
	struct test_chip *c = chip_new("v5e");
	struct tsr_cmd_sc_gather g = {
		.hdr = HDR(TSR_OP_SC_GATHER, struct tsr_cmd_sc_gather),
	};

	EXPECT_EQ(TSR_ERR_BAD_OPCODE, chip_run(c, &g, sizeof(g))->error);
	chip_free(c);
}

/* ------------------------------------------------------------ partition */

FIXTURE(sc) {
	struct test_chip *c;
};

FIXTURE_SETUP(sc)
{
	self->c = chip_new("v4");
}

FIXTURE_TEARDOWN(sc)
{
	chip_free(self->c);
}

/* A partition command and its output, in system memory. */
struct part {
	struct tsr_cmd_sc_partition cmd;
	struct accel_sc_limits limits;
	uint32_t *rows, *cols;
	float *weights;
	struct tsr_sc_counts *counts;
};

static struct part part_new(struct test_chip *c, const struct ids *in,
			    bool weighted, const struct accel_sc_limits *l)
{
	uint64_t slots = (uint64_t)l->partitions * l->max_ids;
	struct ids out = ids_new(c, slots);
	uint64_t counts = chip_buffer(c, 1, l->partitions * 16);
	struct part p = {
		.cmd = {
			.hdr = HDR(TSR_OP_SC_PARTITION,
				   struct tsr_cmd_sc_partition),
			.count = in->n, .partitions = l->partitions,
			.samples = l->samples, .vocab = l->vocab,
			.max_ids = l->max_ids,
			.max_unique_ids = l->max_unique_ids,
			.in = coo(in, weighted), .out = coo(&out, true),
			.counts = counts,
		},
		.limits = *l,
		.rows = out.r, .cols = out.c, .weights = out.w,
		.counts = host_ptr(c, counts),
	};

	p.cmd.hdr.flags = l->flags;
	/* Sentinels: what the command must not touch shows. */
	memset(p.rows, 0xa5, slots * 4);
	memset(p.counts, 0xa5, l->partitions * 16);
	return p;
}

/* The reference's result for @p's input. */
struct want {
	uint32_t error, where;
	uint32_t *rows, *cols;
	float *weights;
	struct tsr_sc_counts *counts;
};

static struct want part_ref(const struct part *p, const struct ids *in,
			    bool weighted)
{
	size_t slots = (size_t)p->limits.partitions * p->limits.max_ids;
	struct want w = {
		.rows = calloc(slots, 4), .cols = calloc(slots, 4),
		.weights = calloc(slots, 4),
		.counts = calloc(p->limits.partitions, 16),
	};

	if (accel_ref_sc_partition(in->r, in->c, weighted ? in->w : NULL,
				   in->n, &p->limits, w.rows, w.cols,
				   w.weights, w.counts, &w.error, &w.where))
		abort();
	return w;
}

static void want_free(struct want *w)
{
	free(w->rows);
	free(w->cols);
	free(w->weights);
	free(w->counts);
}

static bool part_matches(const struct part *p, const struct want *w)
{
	size_t slots = (size_t)p->limits.partitions * p->limits.max_ids;

	return !memcmp(p->rows, w->rows, slots * 4) &&
	       !memcmp(p->cols, w->cols, slots * 4) &&
	       !memcmp(p->weights, w->weights, slots * 4) &&
	       !memcmp(p->counts, w->counts, p->limits.partitions * 16);
}

TEST_F(sc, partition_dedups_within_a_sample_as_the_seed_shows)
{
	/* Samples [A], [A, B, C], [B, B, D] with A..D = 4, 5, 6, 7. */
	static const uint32_t r[] = { 0, 1, 1, 1, 2, 2, 2 };
	static const uint32_t col[] = { 4, 4, 5, 6, 5, 5, 7 };
	struct accel_sc_limits l = {
		.partitions = 1, .samples = 3, .vocab = 8, .max_ids = 8,
		.max_unique_ids = 8,
	};
	struct ids in = ids_new(self->c, 7);
	struct part p;
	struct tsr_completion *done;

	memcpy(in.r, r, sizeof(r));
	memcpy(in.c, col, sizeof(col));
	p = part_new(self->c, &in, false, &l);
	done = chip_run(self->c, &p.cmd, sizeof(p.cmd));
	ASSERT_EQ(TSR_ERR_NONE, done->error);
	/* row_ids = [0, 1, 1, 1, 2, 2], col_ids = [A, A, B, C, B, D]. */
	EXPECT_EQ(0, p.rows[0]);
	EXPECT_EQ(2, p.rows[5]);
	EXPECT_EQ(TSR_SC_PAD, p.rows[6]);
	EXPECT_EQ(5, p.cols[4]);
	EXPECT_EQ(7, p.cols[5]);
	/* B twice in sample 2: one id of weight 2. */
	EXPECT_EQ(2.0f, p.weights[4]);
	EXPECT_EQ(1.0f, p.weights[5]);
	EXPECT_EQ(6, p.counts[0].ids);
	EXPECT_EQ(4, p.counts[0].unique_ids);
	EXPECT_EQ(0, p.counts[0].dropped);
}

TEST_F(sc, partition_routes_ids_mod_partitions_to_their_shard_rows)
{
	static const uint32_t col[] = { 0, 1, 2, 3, 4, 5, 6, 7, 9 };
	struct accel_sc_limits l = {
		.partitions = 4, .samples = 1, .vocab = 10, .max_ids = 3,
		.max_unique_ids = 3,
	};
	struct ids in = ids_new(self->c, 9);
	struct part p;

	memcpy(in.c, col, sizeof(col));
	p = part_new(self->c, &in, false, &l);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &p.cmd, sizeof(p.cmd))->error);
	/* Partition 1: ids 1, 5, 9, rows 0, 1, 2 of its shard. */
	EXPECT_EQ(0, p.cols[3]);
	EXPECT_EQ(1, p.cols[4]);
	EXPECT_EQ(2, p.cols[5]);
	EXPECT_EQ(3, p.counts[1].ids);
	EXPECT_EQ(2, p.counts[2].ids);
	EXPECT_EQ(TSR_SC_PAD, p.rows[2 * 3 + 2]);
}

TEST_F(sc, partition_matches_the_reference_on_random_weighted_ids)
{
	struct accel_sc_limits l = {
		.partitions = 4, .samples = 37, .vocab = 301, .max_ids = 200,
		.max_unique_ids = 150,
	};
	struct ids in = ids_new(self->c, 500);
	struct part p;
	struct want w;

	ids_random(&in, l.samples, l.vocab, 7);
	p = part_new(self->c, &in, true, &l);
	w = part_ref(&p, &in, true);
	ASSERT_EQ(TSR_ERR_NONE, w.error);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &p.cmd, sizeof(p.cmd))->error);
	EXPECT_TRUE(part_matches(&p, &w));
	want_free(&w);
}

TEST_F(sc, partition_of_no_ids_pads_every_slot)
{
	struct accel_sc_limits l = {
		.partitions = 2, .samples = 4, .vocab = 4, .max_ids = 3,
		.max_unique_ids = 3,
	};
	struct ids in = ids_new(self->c, 0);
	struct part p = part_new(self->c, &in, false, &l);
	struct want w = part_ref(&p, &in, false);

	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &p.cmd, sizeof(p.cmd))->error);
	EXPECT_EQ(TSR_SC_PAD, p.rows[5]);
	EXPECT_TRUE(part_matches(&p, &w));
	want_free(&w);
}

/*
 * Partition 61 ids in 2 partitions: 60 of 40 distinct ids in partition
 * @crowded, and one in the other.
 */
static struct tsr_completion *run_crowded(struct test_chip *c,
					  const struct accel_sc_limits *l,
					  uint32_t crowded, struct ids *in,
					  struct part *p)
{
	uint32_t i;

	*in = ids_new(c, 61);
	for (i = 0; i < in->n; i++) {
		in->r[i] = i % 3;
		in->c[i] = 2 * (i % 40) + crowded;
	}
	in->c[in->n - 1] = !crowded;
	*p = part_new(c, in, false, l);
	return chip_run(c, &p->cmd, sizeof(p->cmd));
}

TEST_F(sc, partition_over_max_ids_fails_naming_the_limit_and_the_count)
{
	struct accel_sc_limits l = {
		.partitions = 2, .samples = 3, .vocab = 100, .max_ids = 30,
		.max_unique_ids = 30,
	};
	struct ids in;
	struct part p;
	struct tsr_completion *done = run_crowded(self->c, &l, 0, &in, &p);
	struct want w = part_ref(&p, &in, false);

	ASSERT_EQ(TSR_ERR_MAX_IDS, w.error);
	EXPECT_EQ(TSR_ERR_MAX_IDS, done->error);
	/* fault_va names partition 0's counts: 60 ids seen, 40 unique. */
	EXPECT_EQ(p.cmd.counts, done->fault_va);
	EXPECT_EQ(60, p.counts[0].ids);
	EXPECT_EQ(40, p.counts[0].unique_ids);
	EXPECT_EQ(1, p.counts[1].ids);
	EXPECT_EQ(0, memcmp(p.counts, w.counts, 2 * 16));
	/* Nothing but the counts was written. */
	EXPECT_EQ(0xa5a5a5a5, p.rows[0]);
	want_free(&w);
}

TEST_F(sc, partition_over_max_unique_ids_fails_naming_that_limit)
{
	struct accel_sc_limits l = {
		.partitions = 2, .samples = 3, .vocab = 100, .max_ids = 64,
		.max_unique_ids = 39,
	};
	struct ids in;
	struct part p;
	struct tsr_completion *done = run_crowded(self->c, &l, 0, &in, &p);

	EXPECT_EQ(TSR_ERR_MAX_UNIQUE_IDS, done->error);
	EXPECT_EQ(p.cmd.counts, done->fault_va);
	EXPECT_EQ(40, p.counts[0].unique_ids);
	EXPECT_EQ(0xa5a5a5a5, p.rows[0]);
}

TEST_F(sc, partition_limit_in_a_later_partition_names_that_partition)
{
	struct accel_sc_limits l = {
		.partitions = 2, .samples = 3, .vocab = 100, .max_ids = 30,
		.max_unique_ids = 30,
	};
	struct ids in;
	struct part p;
	struct tsr_completion *done = run_crowded(self->c, &l, 1, &in, &p);

	EXPECT_EQ(TSR_ERR_MAX_IDS, done->error);
	EXPECT_EQ(p.cmd.counts + 16, done->fault_va);
	EXPECT_EQ(60, p.counts[1].ids);
}

TEST_F(sc, partition_drop_flag_drops_ids_in_order_and_counts_them)
{
	struct accel_sc_limits l = {
		.partitions = 2, .samples = 3, .vocab = 100, .max_ids = 30,
		.max_unique_ids = 25, .flags = TSR_SC_DROP,
	};
	struct ids in;
	struct part p;
	struct tsr_completion *done = run_crowded(self->c, &l, 0, &in, &p);
	struct want w = part_ref(&p, &in, false);

	ASSERT_EQ(TSR_ERR_NONE, done->error);
	/* 25 unique ids taken (the first 25), then 5 repeats of them. */
	EXPECT_EQ(60, p.counts[0].ids);
	EXPECT_EQ(40, p.counts[0].unique_ids);
	EXPECT_EQ(30, p.counts[0].dropped);
	EXPECT_EQ(0, p.counts[1].dropped);
	EXPECT_EQ(48 / 2, p.cols[24]);
	EXPECT_EQ(0, p.cols[25]);
	EXPECT_EQ(1, p.rows[25]);
	EXPECT_TRUE(part_matches(&p, &w));
	want_free(&w);
}

TEST_F(sc, partition_out_of_range_ids_fail_and_write_nothing)
{
	struct accel_sc_limits l = {
		.partitions = 2, .samples = 4, .vocab = 50, .max_ids = 64,
		.max_unique_ids = 64,
	};
	struct ids in = ids_new(self->c, 40);
	struct tsr_completion *done;
	struct part p;
	struct want w;

	ids_random(&in, l.samples, l.vocab, 3);
	in.c[17] = 50;
	p = part_new(self->c, &in, false, &l);
	w = part_ref(&p, &in, false);
	done = chip_run(self->c, &p.cmd, sizeof(p.cmd));
	EXPECT_EQ(TSR_ERR_ID_RANGE, w.error);
	EXPECT_EQ(TSR_ERR_ID_RANGE, done->error);
	EXPECT_EQ(in.cols + 4 * w.where, done->fault_va);
	EXPECT_EQ(0xa5a5a5a5, p.rows[0]);
	EXPECT_EQ(0xa5a5a5a5, p.counts[0].ids);
	in.c[17] = 49;
	in.r[9] = 4;
	done = chip_run(self->c, &p.cmd, sizeof(p.cmd));
	EXPECT_EQ(TSR_ERR_ID_RANGE, done->error);
	EXPECT_EQ(in.rows + 4 * 9, done->fault_va);
	EXPECT_EQ(0xa5a5a5a5, p.rows[0]);
	want_free(&w);
}

TEST_F(sc, partition_limits_must_fit_in_spmem)
{
	/* 2560 KiB: 12 x 200000 + 4 x 100000 bytes do not fit. */
	struct accel_sc_limits l = {
		.partitions = 1, .samples = 4, .vocab = 50, .max_ids = 200000,
		.max_unique_ids = 100000,
	};
	struct ids in = ids_new(self->c, 1);
	struct part p = part_new(self->c, &in, false, &l);

	EXPECT_EQ(TSR_ERR_SPMEM, chip_run(self->c, &p.cmd, sizeof(p.cmd))->error);
	p.cmd.max_unique_ids = 55000;
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &p.cmd, sizeof(p.cmd))->error);
}

TEST_F(sc, partition_checks_every_field)
{
	struct accel_sc_limits l = {
		.partitions = 2, .samples = 4, .vocab = 50, .max_ids = 8,
		.max_unique_ids = 8,
	};
	struct ids in = ids_new(self->c, 4);
	struct part p = part_new(self->c, &in, false, &l);
	struct tsr_cmd_sc_partition c;
	const struct {
		size_t offset, size;
		uint64_t value;
		uint32_t error;
	} bad[] = {
#define F(field, value, error) { offsetof(struct tsr_cmd_sc_partition, field), \
		 sizeof(((struct tsr_cmd_sc_partition *)0)->field), value, error }
		F(hdr.flags, 2, TSR_ERR_BAD_FLAGS),
		F(hdr.reserved, 1, TSR_ERR_RESERVED),
		F(partitions, 0, TSR_ERR_BAD_SHAPE),
		F(partitions, TSR_SC_MAX_PARTITIONS + 1, TSR_ERR_BAD_SHAPE),
		F(samples, 0, TSR_ERR_BAD_SHAPE),
		F(vocab, 0, TSR_ERR_BAD_SHAPE),
		F(max_ids, 0, TSR_ERR_BAD_SHAPE),
		F(max_unique_ids, 0, TSR_ERR_BAD_SHAPE),
		F(max_unique_ids, 9, TSR_ERR_BAD_SHAPE),
		F(count, TSR_SC_MAX_ENTRIES + 1, TSR_ERR_TOO_LARGE),
		F(in.row_ids, 2, TSR_ERR_BAD_ALIGNMENT),
		F(out.weights, 6, TSR_ERR_BAD_ALIGNMENT),
		F(in.col_ids, UINT64_MAX - 7, TSR_ERR_BAD_STRIDE),
		F(counts, 2, TSR_ERR_BAD_ALIGNMENT),
		F(counts, UINT64_MAX - 3, TSR_ERR_BAD_STRIDE),
		F(in.weights, 0x7f000000, TSR_ERR_MMU_UNMAPPED),
#undef F
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		c = p.cmd;
		memcpy((uint8_t *)&c + bad[i].offset, &bad[i].value,
		       bad[i].size);
		EXPECT_EQ(bad[i].error, chip_run(self->c, &c, sizeof(c))->error)
			TH_LOG("field at %zu = 0x%llx", bad[i].offset,
			       (unsigned long long)bad[i].value);
	}
	/* 4096 partitions x 1024 slots is over TSR_SC_MAX_SLOTS. */
	c = p.cmd;
	c.partitions = 4096;
	c.max_ids = c.max_unique_ids = 1024;
	EXPECT_EQ(TSR_ERR_TOO_LARGE, chip_run(self->c, &c, sizeof(c))->error);
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &p.cmd, sizeof(p.cmd))->error);
}

/* ------------------------------------------------------ gather, scatter */

/* A table of @vocab x @dim in system memory, rows padded to 32 bytes. */
struct table {
	struct tsr_tensor t;
	float *dense;           /* the values, widened: vocab x dim */
};

static struct table table_new(struct test_chip *c, uint32_t vocab,
			      uint32_t dim, uint16_t dtype, uint32_t seed)
{
	unsigned int esize = tsr_dtype_size(dtype);
	uint32_t stride = (dim * esize + 31) / 32 * 32 / esize, i, k;
	struct table tb = { .dense = calloc((size_t)vocab * dim, 4) };
	uint64_t va = chip_buffer(c, 1, (uint64_t)vocab * stride * esize);

	tb.t = tensor(va, vocab, dim, dtype);
	tb.t.stride = stride;
	for (i = 0; i < vocab; i++) {
		for (k = 0; k < dim; k++) {
			float v = (float)((int)(lcg(&seed) % 200) - 100) / 8;
			uint8_t *at = (uint8_t *)host_ptr(c, va) +
				      ((uint64_t)i * stride + k) * esize;

			if (dtype == TSR_DTYPE_BF16) {
				uint16_t h = tsr_f32_to_bf16(v);

				memcpy(at, &h, 2);
				v = tsr_bf16_to_f32(h);
			} else {
				memcpy(at, &v, 4);
			}
			tb.dense[(size_t)i * dim + k] = v;
		}
	}
	return tb;
}

/* Read back a tensor widened to f32. */
static void tensor_read(struct test_chip *c, const struct tsr_tensor *t,
			float *dense)
{
	unsigned int esize = tsr_dtype_size(t->dtype);
	uint32_t i, k;

	for (i = 0; i < t->rows; i++) {
		for (k = 0; k < t->cols; k++) {
			const uint8_t *at = (const uint8_t *)host_ptr(c, t->va) +
					    ((uint64_t)i * t->stride + k) * esize;
			uint16_t h;

			if (t->dtype == TSR_DTYPE_BF16) {
				memcpy(&h, at, 2);
				dense[(size_t)i * t->cols + k] = tsr_bf16_to_f32(h);
			} else {
				memcpy(&dense[(size_t)i * t->cols + k], at, 4);
			}
		}
	}
}

/* @n floats rounded to @dtype, as the chip stores them. */
static void round_to(uint16_t dtype, float *v, size_t n)
{
	size_t i;

	for (i = 0; dtype == TSR_DTYPE_BF16 && i < n; i++)
		v[i] = tsr_bf16_to_f32(tsr_f32_to_bf16(v[i]));
}

static struct tsr_tensor out_new(struct test_chip *c, uint32_t rows,
				 uint32_t cols, uint16_t dtype)
{
	uint64_t bytes = (uint64_t)rows * cols * tsr_dtype_size(dtype);
	uint64_t va = chip_buffer(c, 1, bytes);

	memset(host_ptr(c, va), 0x5a, bytes);
	return tensor(va, rows, cols, dtype);
}

static struct tsr_cmd_sc_gather gather_cmd(const struct ids *in,
					   bool weighted, uint32_t combiner,
					   const struct table *tb,
					   const struct tsr_tensor *out)
{
	return (struct tsr_cmd_sc_gather){
		.hdr = HDR(TSR_OP_SC_GATHER, struct tsr_cmd_sc_gather),
		.count = in->n, .combiner = combiner,
		.in = coo(in, weighted), .table = tb->t, .out = *out,
	};
}

/*
 * Gather @in (with duplicates, an empty sample 3, the table's last row
 * and a padding entry) from a @dtype table into @out_dtype, and compare
 * with the reference bit for bit.
 */
static bool gather_matches(struct test_chip *c, uint32_t combiner,
			   uint16_t dtype, uint16_t out_dtype, bool weighted)
{
	const uint32_t samples = 9, vocab = 61, dim = 13;
	struct ids in = ids_new(c, 120);
	struct table tb = table_new(c, vocab, dim, dtype, 5);
	struct tsr_tensor out = out_new(c, samples, dim, out_dtype);
	struct tsr_cmd_sc_gather g;
	float *want = calloc(samples * dim, 4), *got = calloc(samples * dim, 4);
	uint32_t err, where, i;
	bool ok;

	ids_random(&in, samples, vocab, 11);
	for (i = 0; i < in.n; i++)
		in.r[i] = in.r[i] == 3 ? 4 : in.r[i];
	in.c[5] = vocab - 1;
	in.r[7] = TSR_SC_PAD;
	in.c[7] = 0xdeadbeef;
	g = gather_cmd(&in, weighted, combiner, &tb, &out);
	if (accel_ref_sc_gather(combiner, in.r, in.c, weighted ? in.w : NULL,
				in.n, tb.dense, vocab, dim, want, samples,
				&err, &where) || err)
		abort();
	round_to(out_dtype, want, samples * dim);
	ok = chip_run(c, &g, sizeof(g))->error == TSR_ERR_NONE;
	tensor_read(c, &out, got);
	ok = ok && !memcmp(got, want, samples * dim * 4) &&
	     got[3 * dim] == 0.0f;
	free(want);
	free(got);
	free(tb.dense);
	return ok;
}

TEST_F(sc, gather_sums_rows_as_the_reference_does)
{
	EXPECT_TRUE(gather_matches(self->c, TSR_SC_SUM, TSR_DTYPE_F32,
				   TSR_DTYPE_F32, false));
	EXPECT_TRUE(gather_matches(self->c, TSR_SC_SUM, TSR_DTYPE_F32,
				   TSR_DTYPE_F32, true));
}

TEST_F(sc, gather_means_rows_as_the_reference_does)
{
	EXPECT_TRUE(gather_matches(self->c, TSR_SC_MEAN, TSR_DTYPE_F32,
				   TSR_DTYPE_F32, true));
}

TEST_F(sc, gather_sqrtn_rows_as_the_reference_does)
{
	EXPECT_TRUE(gather_matches(self->c, TSR_SC_SQRTN, TSR_DTYPE_F32,
				   TSR_DTYPE_F32, true));
}

TEST_F(sc, gather_takes_bf16_tables_and_outputs)
{
	EXPECT_TRUE(gather_matches(self->c, TSR_SC_SUM, TSR_DTYPE_BF16,
				   TSR_DTYPE_F32, true));
	EXPECT_TRUE(gather_matches(self->c, TSR_SC_MEAN, TSR_DTYPE_BF16,
				   TSR_DTYPE_BF16, true));
	EXPECT_TRUE(gather_matches(self->c, TSR_SC_SQRTN, TSR_DTYPE_F32,
				   TSR_DTYPE_BF16, false));
}

TEST_F(sc, gather_of_the_partitions_output_skips_its_padding)
{
	struct accel_sc_limits l = {
		.partitions = 1, .samples = 5, .vocab = 20, .max_ids = 64,
		.max_unique_ids = 64,
	};
	struct ids in = ids_new(self->c, 30);
	struct table tb = table_new(self->c, 20, 8, TSR_DTYPE_F32, 2);
	struct tsr_tensor out = out_new(self->c, 5, 8, TSR_DTYPE_F32);
	struct tsr_tensor direct = out_new(self->c, 5, 8, TSR_DTYPE_F32);
	struct part p;
	struct ids parted = { .n = 64 };
	struct tsr_cmd_sc_gather g;
	float a[40], b[40];

	ids_random(&in, 5, 20, 9);
	p = part_new(self->c, &in, true, &l);
	parted.rows = p.cmd.out.row_ids;
	parted.cols = p.cmd.out.col_ids;
	parted.weights = p.cmd.out.weights;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &p.cmd, sizeof(p.cmd))->error);
	g = gather_cmd(&parted, true, TSR_SC_SUM, &tb, &out);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &g, sizeof(g))->error);
	/* Integer-valued data: deduped and raw ids sum exactly alike. */
	g = gather_cmd(&in, true, TSR_SC_SUM, &tb, &direct);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &g, sizeof(g))->error);
	tensor_read(self->c, &out, a);
	tensor_read(self->c, &direct, b);
	EXPECT_EQ(0, memcmp(a, b, sizeof(a)));
	free(tb.dense);
}

TEST_F(sc, gather_out_of_range_ids_fail_and_write_nothing)
{
	struct ids in = ids_new(self->c, 10);
	struct table tb = table_new(self->c, 16, 8, TSR_DTYPE_F32, 1);
	struct tsr_tensor out = out_new(self->c, 4, 8, TSR_DTYPE_F32);
	struct tsr_cmd_sc_gather g;
	struct tsr_completion *done;

	ids_random(&in, 4, 16, 4);
	in.c[6] = 16;
	g = gather_cmd(&in, false, TSR_SC_SUM, &tb, &out);
	done = chip_run(self->c, &g, sizeof(g));
	EXPECT_EQ(TSR_ERR_ID_RANGE, done->error);
	EXPECT_EQ(in.cols + 24, done->fault_va);
	EXPECT_EQ(0x5a5a5a5a, *(uint32_t *)host_ptr(self->c, out.va));
	in.c[6] = 15;
	in.r[2] = 4;
	done = chip_run(self->c, &g, sizeof(g));
	EXPECT_EQ(TSR_ERR_ID_RANGE, done->error);
	EXPECT_EQ(in.rows + 8, done->fault_va);
	EXPECT_EQ(0x5a5a5a5a, *(uint32_t *)host_ptr(self->c, out.va));
	free(tb.dense);
}

TEST_F(sc, gather_checks_every_field)
{
	struct ids in = ids_new(self->c, 4);
	struct table tb = table_new(self->c, 16, 8, TSR_DTYPE_F32, 1);
	struct tsr_tensor out = out_new(self->c, 4, 8, TSR_DTYPE_F32);
	struct tsr_cmd_sc_gather ok = gather_cmd(&in, true, TSR_SC_SUM, &tb,
						 &out), g;

	g = ok;
	g.hdr.flags = 1;
	EXPECT_EQ(TSR_ERR_BAD_FLAGS, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.combiner = 4;
	EXPECT_EQ(TSR_ERR_BAD_OP, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.table.stride = 9;
	EXPECT_EQ(TSR_ERR_BAD_STRIDE, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.table.va += 16;
	g.table.rows = 15;
	EXPECT_EQ(TSR_ERR_BAD_ALIGNMENT, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.table.dtype = TSR_DTYPE_I32;
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.out.cols = 7;
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.out = tensor(out.va, 1u << 19, 1u << 10, TSR_DTYPE_F32);
	g.table.cols = g.table.stride = 1u << 10;
	g.table.rows = 1;
	EXPECT_EQ(TSR_ERR_TOO_LARGE, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.count = TSR_SC_MAX_ENTRIES + 1;
	EXPECT_EQ(TSR_ERR_TOO_LARGE, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.in.weights = 2;
	EXPECT_EQ(TSR_ERR_BAD_ALIGNMENT, chip_run(self->c, &g, sizeof(g))->error);
	g = ok;
	g.hdr.size_qw--;
	EXPECT_EQ(TSR_ERR_BAD_SIZE, chip_run(self->c, &g, 8 * g.hdr.size_qw)->error);
	EXPECT_EQ(TSR_ERR_NONE, chip_run(self->c, &ok, sizeof(ok))->error);
	free(tb.dense);
}

static struct tsr_cmd_sc_scatter_add scatter_cmd(const struct ids *in,
						 bool weighted,
						 uint32_t combiner,
						 const struct tsr_tensor *grad,
						 const struct table *dst,
						 float scale)
{
	return (struct tsr_cmd_sc_scatter_add){
		.hdr = HDR(TSR_OP_SC_SCATTER_ADD,
			   struct tsr_cmd_sc_scatter_add),
		.count = in->n, .combiner = combiner,
		.in = coo(in, weighted), .grad = *grad, .dst = dst->t,
		.scale = tsr_f32_bits(scale),
	};
}

/* Scatter-add gradients into a @dtype table; compare with the reference. */
static bool scatter_matches(struct test_chip *c, uint32_t combiner,
			    uint16_t dtype, uint16_t grad_dtype, float scale)
{
	const uint32_t samples = 7, vocab = 41, dim = 11;
	struct ids in = ids_new(c, 150);
	struct table dst = table_new(c, vocab, dim, dtype, 8);
	struct table g = table_new(c, samples, dim, grad_dtype, 12);
	struct tsr_cmd_sc_scatter_add s;
	float *got = calloc(vocab * dim, 4);
	uint32_t err, where;
	bool ok;

	ids_random(&in, samples, vocab, 13);
	in.c[3] = vocab - 1;
	in.r[8] = TSR_SC_PAD;
	s = scatter_cmd(&in, true, combiner, &g.t, &dst, scale);
	if (accel_ref_sc_scatter_add(combiner, in.r, in.c, in.w, in.n,
				     g.dense, samples, dim, dst.dense, vocab,
				     scale, &err, &where) || err)
		abort();
	round_to(dtype, dst.dense, vocab * dim);
	ok = chip_run(c, &s, sizeof(s))->error == TSR_ERR_NONE;
	tensor_read(c, &dst.t, got);
	ok = ok && !memcmp(got, dst.dense, vocab * dim * 4);
	free(got);
	free(dst.dense);
	free(g.dense);
	return ok;
}

TEST_F(sc, scatter_add_sums_duplicate_ids_as_the_reference_does)
{
	EXPECT_TRUE(scatter_matches(self->c, TSR_SC_SUM, TSR_DTYPE_F32,
				    TSR_DTYPE_F32, -0.25f));
	EXPECT_TRUE(scatter_matches(self->c, TSR_SC_MEAN, TSR_DTYPE_F32,
				    TSR_DTYPE_F32, -0.1f));
	EXPECT_TRUE(scatter_matches(self->c, TSR_SC_SQRTN, TSR_DTYPE_F32,
				    TSR_DTYPE_F32, 0.3f));
}

TEST_F(sc, scatter_add_takes_bf16_tables_and_gradients)
{
	EXPECT_TRUE(scatter_matches(self->c, TSR_SC_SUM, TSR_DTYPE_BF16,
				    TSR_DTYPE_BF16, -0.5f));
	EXPECT_TRUE(scatter_matches(self->c, TSR_SC_MEAN, TSR_DTYPE_BF16,
				    TSR_DTYPE_F32, -0.01f));
}

TEST_F(sc, scatter_add_gives_the_same_bits_run_after_run)
{
	struct ids in = ids_new(self->c, 300);
	struct table a = table_new(self->c, 8, 16, TSR_DTYPE_F32, 3);
	struct table b = table_new(self->c, 8, 16, TSR_DTYPE_F32, 3);
	struct table g = table_new(self->c, 20, 16, TSR_DTYPE_F32, 4);
	struct tsr_cmd_sc_scatter_add s;
	float x[128], y[128];
	uint32_t i;

	/* Few ids, many duplicates, weights that do not sum exactly. */
	ids_random(&in, 20, 8, 21);
	for (i = 0; i < in.n; i++)
		in.w[i] = 1.0f / (float)(i + 3);
	s = scatter_cmd(&in, true, TSR_SC_SUM, &g.t, &a, 1.0f);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &s, sizeof(s))->error);
	s.dst = b.t;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &s, sizeof(s))->error);
	tensor_read(self->c, &a.t, x);
	tensor_read(self->c, &b.t, y);
	EXPECT_EQ(0, memcmp(x, y, sizeof(x)));
	free(a.dense);
	free(b.dense);
	free(g.dense);
}

TEST_F(sc, scatter_add_out_of_range_ids_fail_and_write_nothing)
{
	struct ids in = ids_new(self->c, 10);
	struct table dst = table_new(self->c, 16, 8, TSR_DTYPE_F32, 1);
	struct tsr_tensor grad = out_new(self->c, 4, 8, TSR_DTYPE_F32);
	struct tsr_cmd_sc_scatter_add s;
	struct tsr_completion *done;
	float before[128], after[128];

	ids_random(&in, 4, 16, 4);
	in.c[9] = 16;
	tensor_read(self->c, &dst.t, before);
	s = scatter_cmd(&in, false, TSR_SC_SUM, &grad, &dst, 1.0f);
	done = chip_run(self->c, &s, sizeof(s));
	EXPECT_EQ(TSR_ERR_ID_RANGE, done->error);
	EXPECT_EQ(in.cols + 36, done->fault_va);
	tensor_read(self->c, &dst.t, after);
	EXPECT_EQ(0, memcmp(before, after, sizeof(before)));
	s.reserved = 1;
	EXPECT_EQ(TSR_ERR_RESERVED, chip_run(self->c, &s, sizeof(s))->error);
	free(dst.dense);
}

/* --------------------------------------------------------------- timing */

TEST_F(sc, partition_time_is_three_passes_or_its_memory)
{
	struct accel_sc_limits l = {
		.partitions = 4, .samples = 64, .vocab = 1000,
		.max_ids = 1024, .max_unique_ids = 1024,
	};
	struct ids in = ids_new(self->c, 3000);
	struct part p;
	uint64_t before, stream, compute;

	ids_random(&in, l.samples, l.vocab, 1);
	p = part_new(self->c, &in, false, &l);
	before = sc_busy(self->c);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &p.cmd, sizeof(p.cmd))->error);
	/* Ids in, three arrays of slots and the counts out, at host rate. */
	stream = cycles(3000 * 8 + 3 * 4096 * 4 + 4 * 16, HOST_GBPS);
	compute = 3 * div_up(3000, LANES_F32);
	EXPECT_GT(stream, compute);
	EXPECT_EQ(100 + stream, sc_busy(self->c) - before);
}

TEST_F(sc, gather_time_is_granule_rows_plus_streams_or_compute)
{
	const uint32_t n = 400, samples = 16, dim = 40;
	struct ids in = ids_new(self->c, n);
	struct table tb = table_new(self->c, 100, dim, TSR_DTYPE_BF16, 1);
	struct tsr_tensor out = out_new(self->c, samples, dim, TSR_DTYPE_F32);
	struct tsr_cmd_sc_gather g;
	uint64_t before, rows, stream, compute;

	ids_random(&in, samples, 100, 6);
	in.r[0] = TSR_SC_PAD;
	g = gather_cmd(&in, true, TSR_SC_MEAN, &tb, &out);
	before = sc_busy(self->c);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &g, sizeof(g))->error);
	/* 80-byte bf16 rows move two 64-byte granules each, at HBM rate. */
	rows = cycles((n - 1) * 128, HBM_GBPS);
	stream = cycles(n * 12 + samples * dim * 4, HOST_GBPS);
	compute = div_up((n - 1) * dim, LANES_F32) +
		  div_up(samples * dim, LANES_F32);
	EXPECT_EQ(100 + (compute > rows + stream ? compute : rows + stream),
		  sc_busy(self->c) - before);
	free(tb.dense);
}

TEST(gather_time_is_compute_bound_on_fast_memory_and_bf16_doubles_lanes)
{
	const uint32_t n = 64, samples = 64, dim = 4096;
	struct test_chip *c;
	struct ids in;
	struct table tb;
	struct tsr_tensor out;
	struct tsr_cmd_sc_gather g;
	uint64_t lanes = 2 * 16 * 16, rows, stream, compute;
	TsrConfig cfg;

	/* v6e (1750 MHz, 16 bf16 lanes) with memory fast enough to hide. */
	ASSERT_EQ(0, tsr_preset_lookup("v6e", &cfg));
	cfg.hbm_gbps = 100000;
	cfg.host_dma_gbps = 10000;
	c = chip_new_config(&cfg);
	in = ids_new(c, n);
	tb = table_new(c, 8, dim, TSR_DTYPE_BF16, 1);
	out = out_new(c, samples, dim, TSR_DTYPE_BF16);
	ids_random(&in, samples, 8, 6);
	g = gather_cmd(&in, false, TSR_SC_SUM, &tb, &out);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(c, &g, sizeof(g))->error);
	rows = div_up(n * 8192ull * 1750, 100000000);
	stream = div_up(((uint64_t)n * 8 + samples * dim * 2) * 1750, 10000000);
	compute = div_up((uint64_t)n * dim, lanes) +
		  div_up((uint64_t)samples * dim, lanes);
	EXPECT_GT(compute, rows + stream);
	EXPECT_EQ(100 + compute, rd(c, TSR_REG_CNT_SC_BUSY_LO));
	free(tb.dense);
	chip_free(c);
}

TEST(partition_time_is_compute_bound_on_fast_memory)
{
	const uint32_t n = 1u << 16;
	struct accel_sc_limits l = {
		.partitions = 2, .samples = 1000, .vocab = 5000,
		.max_ids = 1024, .max_unique_ids = 1024, .flags = TSR_SC_DROP,
	};
	struct test_chip *c;
	struct ids in;
	struct part p;
	uint64_t lanes = 2 * 16 * 8, stream, compute;
	TsrConfig cfg;

	/* v6e partitions with its f32 lanes, whatever the table. */
	ASSERT_EQ(0, tsr_preset_lookup("v6e", &cfg));
	cfg.host_dma_gbps = 10000;
	c = chip_new_config(&cfg);
	in = ids_new(c, n);
	ids_random(&in, l.samples, l.vocab, 5);
	p = part_new(c, &in, false, &l);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(c, &p.cmd, sizeof(p.cmd))->error);
	stream = div_up(((uint64_t)n * 8 + 3 * 2048 * 4 + 2 * 16) * 1750,
			10000000);
	compute = 3 * div_up(n, lanes);
	EXPECT_GT(compute, stream);
	EXPECT_EQ(100 + compute, rd(c, TSR_REG_CNT_SC_BUSY_LO));
	chip_free(c);
}

TEST_F(sc, scatter_add_time_reads_gradients_and_reads_and_writes_rows)
{
	const uint32_t n = 200, samples = 10, vocab = 50, dim = 24;
	struct ids in = ids_new(self->c, n);
	struct table dst = table_new(self->c, vocab, dim, TSR_DTYPE_F32, 1);
	struct tsr_tensor grad = out_new(self->c, samples, dim, TSR_DTYPE_BF16);
	struct tsr_cmd_sc_scatter_add s;
	uint64_t before, rows, stream, compute, unique = 0;
	bool seen[50] = { false };
	uint32_t i;

	ids_random(&in, samples, vocab, 2);
	for (i = 0; i < n; i++) {
		unique += !seen[in.c[i]];
		seen[in.c[i]] = true;
	}
	s = scatter_cmd(&in, false, TSR_SC_SUM, &grad, &dst, 1.0f);
	before = sc_busy(self->c);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &s, sizeof(s))->error);
	/* 48-byte bf16 gradient rows, 96-byte f32 table rows (2 granules). */
	rows = cycles(n * 64 + 2 * unique * 128, HBM_GBPS);
	stream = cycles(n * 8, HOST_GBPS);
	compute = div_up(n * dim, LANES_F32) + div_up(unique * dim, LANES_F32);
	EXPECT_EQ(100 + (compute > rows + stream ? compute : rows + stream),
		  sc_busy(self->c) - before);
	free(dst.dense);
}

TEST_HARNESS_MAIN
