// SPDX-License-Identifier: MIT
/*
 * train: a slice of chips trains a classifier together, data-parallel.
 *
 * The model is a multilayer perceptron for scikit-learn's 8x8 handwritten
 * digits (64 pixels -> hidden, ReLU -> 10 classes, softmax cross-entropy),
 * trained with SGD.  Every step, the global batch is split across every
 * chip of the slice (by slice index); each chip runs the forward and
 * backward passes on its share in one job built with the ops layer; the
 * gradients (and the loss) are summed chip to chip over ICI by one
 * all-reduce of <accel/collective.h>; each chip applies the update
 * itself.  Every step, a MAX all-reduce of the weights' bits proves the
 * chips still hold identical weights.
 *
 * With --chips 1 the same training runs on one chip, with --cpu in plain
 * C on the host (libaccel's CPU reference), from the same seed: the loss
 * curves agree to f32 rounding (the summation orders differ).
 *
 * Every host of a slice runs this program (tools/tessera-slice runs it
 * SPMD); the host of the slice's chip 0 prints.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>
#include <accel/collective.h>
#include <accel/trace.h>

#define PROG		"train"
#include "sample.h"

#define PIXELS		64
#define CLASSES		10
#define DIGITS_ROWS	1797	/* what the data set has */
#define TEST_SHARE	5	/* one sample in 5 is held out */
#define MAX_CHIPS	ACCEL_SLICE_MAX_LOCAL
#define WAIT_NS		(600ull * 1000 * 1000 * 1000)
#define DEFAULT_DATA	"/tessera/share/digits.csv"

static const char usage[] =
	"usage: " PROG " [OPTIONS]\n"
	"\n"
	"Train a classifier of handwritten digits (scikit-learn's 8x8 digits,\n"
	"64 pixels -> hidden ReLU layer -> 10 classes, softmax cross-entropy,\n"
	"SGD) data-parallel on every chip of the slice: the batch split across\n"
	"the chips, the gradients all-reduced over ICI by the chips, the update\n"
	"applied on each. Run it on every host of a slice (tools/tessera-slice\n"
	"does). Prints, per epoch, the loss, the test accuracy, the wall time and\n"
	"the modeled step time and utilization.\n"
	"\n"
	"options:\n"
	"  --chips N           train on N chips: 1 (this host's first chip alone)\n"
	"                      or 0 for every chip of the slice (default 0)\n"
	"  --cpu               train on the host CPU instead (the reference)\n"
	"  --data FILE         the digits as CSV: 64 pixels (0-16), then the\n"
	"                      label, per line (default " DEFAULT_DATA ")\n"
	"  -e, --epochs N      passes over the training set (default 10)\n"
	"  --steps N           stop after N steps (default: all the epochs')\n"
	"  -b, --batch N       samples per step over all chips, a multiple of\n"
	"                      the chips (default 64)\n"
	"  --hidden N          width of the hidden layer (default 64)\n"
	"  --lr X              learning rate (default 0.1)\n"
	"  -s, --seed N        seed of the weights and of the batches' order\n"
	"                      (default 1)\n"
	"  --log FILE          write each step's loss, and each epoch's figures,\n"
	"                      as CSV to FILE\n"
	"  --target PERCENT    fail unless the last epoch's test accuracy\n"
	"                      reaches PERCENT (default 0: no target)\n"
	"  --trace FILE        write the modeled timeline of one step on this\n"
	"                      host's chips (every job, command, engine and link)\n"
	"                      to FILE as Chrome trace-event JSON\n"
	"  --trace-step N      the step --trace records (default 2)\n"
	"  -h, --help          show this text\n"
	"\n"
	"Exit status: 0 trained (and reached --target), 1 failure (device\n"
	"error, chips that disagree, accuracy below target), 2 bad arguments\n"
	"(a --batch that does not split across the slice's chips too).\n";

struct options {
	uint32_t chips;
	int cpu;
	const char *data;
	uint32_t epochs;
	uint32_t steps;
	uint32_t batch;
	uint32_t hidden;
	float lr;
	uint32_t seed;
	const char *log;
	float target;
	const char *trace;
	uint32_t trace_step;
};

static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_CHIPS = 256, OPT_CPU, OPT_DATA, OPT_STEPS, OPT_HIDDEN,
	       OPT_LR, OPT_LOG, OPT_TARGET, OPT_TRACE, OPT_TRACE_STEP };
	static const struct option longopts[] = {
		{ "chips", required_argument, NULL, OPT_CHIPS },
		{ "cpu", no_argument, NULL, OPT_CPU },
		{ "data", required_argument, NULL, OPT_DATA },
		{ "epochs", required_argument, NULL, 'e' },
		{ "steps", required_argument, NULL, OPT_STEPS },
		{ "batch", required_argument, NULL, 'b' },
		{ "hidden", required_argument, NULL, OPT_HIDDEN },
		{ "lr", required_argument, NULL, OPT_LR },
		{ "seed", required_argument, NULL, 's' },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "trace-step", required_argument, NULL, OPT_TRACE_STEP },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret = 0;

	*o = (struct options){
		.data = DEFAULT_DATA, .epochs = 10, .batch = 64, .hidden = 64,
		.lr = 0.1f, .seed = 1, .trace_step = 2,
	};
	opterr = 0;
	while (!ret && (opt = getopt_long(argc, argv, "e:b:s:h", longopts,
					  NULL)) != -1) {
		switch (opt) {
		case OPT_CHIPS:
			ret = parse_u32("--chips", optarg, 0, 1, &o->chips);
			break;
		case OPT_CPU:
			o->cpu = 1;
			break;
		case OPT_DATA:
			o->data = optarg;
			break;
		case 'e':
			ret = parse_u32("--epochs", optarg, 1, 10000, &o->epochs);
			break;
		case OPT_STEPS:
			ret = parse_u32("--steps", optarg, 1, UINT32_MAX, &o->steps);
			break;
		case 'b':
			ret = parse_u32("--batch", optarg, 1, 1024, &o->batch);
			break;
		case OPT_HIDDEN:
			ret = parse_u32("--hidden", optarg, 1, 4096, &o->hidden);
			break;
		case OPT_LR:
			ret = parse_float("--lr", optarg, 1e-6f, 100.0f, &o->lr);
			break;
		case 's':
			ret = parse_u32("--seed", optarg, 1, UINT32_MAX, &o->seed);
			break;
		case OPT_LOG:
			o->log = optarg;
			break;
		case OPT_TARGET:
			ret = parse_float("--target", optarg, 0.0f, 100.0f, &o->target);
			break;
		case OPT_TRACE:
			o->trace = optarg;
			break;
		case OPT_TRACE_STEP:
			ret = parse_u32("--trace-step", optarg, 1, UINT32_MAX, &o->trace_step);
			break;
		case 'h':
			fputs(usage, stdout);
			exit(EXIT_SUCCESS);
		default:
			if (optopt)
				return usage_error("%s needs a value", argv[optind - 1]);
			return unknown_option(argv[optind - 1], usage);
		}
	}
	if (ret)
		return ret;
	if (optind < argc)
		return usage_error("unexpected operand '%s'", argv[optind]);
	if (o->cpu && o->chips)
		return usage_error("%s: --cpu trains on no chip", "--chips");
	if (o->cpu && o->trace)
		return usage_error("%s: the CPU has no modeled timeline", "--trace");
	return 0;
}

/* ------------------------------------------------------------ the data */

struct dataset {
	uint32_t n;
	float *x;		/* n x PIXELS, in [0, 1] */
	uint8_t *label;
};

struct data {
	struct dataset train, test;
};

/* One CSV line of @f into @x and @label; 1 read, 0 end, -1 malformed. */
static int read_sample(FILE *f, float *x, uint8_t *label)
{
	unsigned int v, i;
	int c;

	for (i = 0; i <= PIXELS; i++) {
		if (fscanf(f, "%u", &v) != 1)
			return i == 0 && feof(f) ? 0 : -1;
		c = fgetc(f);
		if (c != (i < PIXELS ? ',' : '\n') && !(i == PIXELS && c == EOF))
			return -1;
		if (i < PIXELS) {
			if (v > 16)
				return -1;
			x[i] = v / 16.0f;
		} else {
			if (v >= CLASSES)
				return -1;
			*label = v;
		}
	}
	return 1;
}

static int dataset_alloc(struct dataset *d, uint32_t n)
{
	d->n = 0;
	d->x = malloc((size_t)n * PIXELS * sizeof(*d->x));
	d->label = malloc(n);
	return d->x && d->label ? 0 : -1;
}

/*
 * Read the digits; every TEST_SHARE-th sample is held out for testing
 * (the data set is ordered by writer, so each split sees every writer).
 */
static int load_data(const char *path, struct data *d)
{
	FILE *f = fopen(path, "r");
	float x[PIXELS];
	uint32_t line = 0;
	uint8_t label;
	int r;

	if (!f) {
		fprintf(stderr, PROG ": cannot open the digits '%s': %s\n", path,
			strerror(errno));
		return -1;
	}
	if (dataset_alloc(&d->train, DIGITS_ROWS) ||
	    dataset_alloc(&d->test, DIGITS_ROWS)) {
		fclose(f);
		fprintf(stderr, PROG ": out of memory for the digits\n");
		return -1;
	}
	while ((r = read_sample(f, x, &label)) == 1 && line < DIGITS_ROWS) {
		struct dataset *s = line++ % TEST_SHARE == TEST_SHARE - 1 ?
				    &d->test : &d->train;

		memcpy(s->x + (size_t)s->n * PIXELS, x, sizeof(x));
		s->label[s->n++] = label;
	}
	fclose(f);
	if (r < 0) {
		fprintf(stderr, PROG ": %s, line %u: not 64 pixels from 0 to 16 and a label from 0 to 9\n",
			path, line + 1);
		return -1;
	}
	if (line != DIGITS_ROWS || r != 0) {
		fprintf(stderr, PROG ": %s has %s lines than the %u digits\n", path,
			line < DIGITS_ROWS ? "fewer" : "more", DIGITS_ROWS);
		return -1;
	}
	return 0;
}

static void free_data(struct data *d)
{
	free(d->train.x);
	free(d->train.label);
	free(d->test.x);
	free(d->test.label);
}

/* ------------------------------------------------------------ the model */

/*
 * The parameters, one f32 vector: W1 (PIXELS x H), b1 (H), W2 (H x
 * CLASSES), b2 (CLASSES).  The gradient has the same layout, and the
 * loss after it, so that one all-reduce sums both.
 */
struct layout {
	uint32_t hidden;
	uint32_t w1, b1, w2, b2;	/* element offsets */
	uint32_t params;		/* elements */
	uint32_t loss;			/* offset of the loss in the gradient */
};

static void lay_out(struct layout *l, uint32_t hidden)
{
	l->hidden = hidden;
	l->w1 = 0;
	l->b1 = l->w1 + PIXELS * hidden;
	l->w2 = l->b1 + hidden;
	l->b2 = l->w2 + hidden * CLASSES;
	l->params = l->b2 + CLASSES;
	l->loss = l->params;
}

/* Glorot-uniform weights, zero biases: the same on every host. */
static void init_params(const struct layout *l, uint32_t seed, float *p)
{
	float s1 = sqrtf(6.0f / (PIXELS + l->hidden));
	float s2 = sqrtf(6.0f / (l->hidden + CLASSES));
	uint32_t i;

	memset(p, 0, (size_t)l->params * sizeof(*p));
	for (i = 0; i < PIXELS * l->hidden; i++)
		p[l->w1 + i] = s1 * (2.0f * (xorshift32(&seed) >> 8) / (1u << 24) - 1.0f);
	for (i = 0; i < l->hidden * CLASSES; i++)
		p[l->w2 + i] = s2 * (2.0f * (xorshift32(&seed) >> 8) / (1u << 24) - 1.0f);
}

/* Rows @first ... @first + @rows - 1 of a batch: pixels and one-hot labels. */
static void batch_rows(const struct dataset *d, const uint32_t *order,
		       uint32_t first, uint32_t rows, float *x, float *y)
{
	uint32_t r;

	memset(y, 0, (size_t)rows * CLASSES * sizeof(*y));
	for (r = 0; r < rows; r++) {
		uint32_t s = order ? order[first + r] : first + r;

		memcpy(x + (size_t)r * PIXELS, d->x + (size_t)s * PIXELS,
		       PIXELS * sizeof(*x));
		y[(size_t)r * CLASSES + d->label[s]] = 1.0f;
	}
}

static uint32_t argmax(const float *row)
{
	uint32_t j, best = 0;

	for (j = 1; j < CLASSES; j++)
		if (row[j] > row[best])
			best = j;
	return best;
}

/* Test accuracy, in percent, from the probabilities of every test sample. */
static float accuracy(const struct dataset *test, const float *probs)
{
	uint32_t i, right = 0;

	for (i = 0; i < test->n; i++)
		right += argmax(probs + (size_t)i * CLASSES) == test->label[i];
	return 100.0f * right / test->n;
}

/* -------------------------------------------------------- on the CPU */

/*
 * The step on the CPU, with libaccel's reference of each op the chips
 * run, in the same order: the chips' numerics up to summation order.
 */
struct cpu_model {
	const struct layout *l;
	float *params, *grad, *tmp;
	float *z1, *a1, *z2, *probs, *dz2, *da1, *dz1;
};

static int cpu_alloc(struct cpu_model *m, const struct layout *l, uint32_t rows)
{
	size_t h = (size_t)rows * l->hidden, c = (size_t)rows * CLASSES;

	m->l = l;
	m->params = malloc(l->params * sizeof(float));
	m->grad = malloc((l->params + 1) * sizeof(float));
	m->tmp = malloc(l->params * sizeof(float));
	m->z1 = malloc(h * sizeof(float));
	m->a1 = malloc(h * sizeof(float));
	m->da1 = malloc(h * sizeof(float));
	m->dz1 = malloc(h * sizeof(float));
	m->z2 = malloc(c * sizeof(float));
	m->probs = malloc(c * sizeof(float));
	m->dz2 = malloc(c * sizeof(float));
	return m->params && m->grad && m->tmp && m->z1 && m->a1 && m->da1 &&
	       m->dz1 && m->z2 && m->probs && m->dz2 ? 0 : -1;
}

static void cpu_free(struct cpu_model *m)
{
	free(m->params);
	free(m->grad);
	free(m->tmp);
	free(m->z1);
	free(m->a1);
	free(m->da1);
	free(m->dz1);
	free(m->z2);
	free(m->probs);
	free(m->dz2);
}

/* Logits of @rows samples into m->z2 (hidden activations in m->a1). */
static void cpu_forward(struct cpu_model *m, const float *x, uint32_t rows)
{
	const struct layout *l = m->l;
	const float *p = m->params;

	accel_ref_matmul(x, p + l->w1, m->z1, rows, l->hidden, PIXELS, 0);
	accel_ref_elementwise(TSR_VPU_ADD, m->z1, p + l->b1, NULL, 1, l->hidden,
			      m->z1, rows, l->hidden);
	accel_ref_elementwise(TSR_VPU_RELU, m->z1, NULL, NULL, 0, 0, m->a1,
			      rows, l->hidden);
	accel_ref_matmul(m->a1, p + l->w2, m->z2, rows, CLASSES, l->hidden, 0);
	accel_ref_elementwise(TSR_VPU_ADD, m->z2, p + l->b2, NULL, 1, CLASSES,
			      m->z2, rows, CLASSES);
}

/* One SGD step on a batch of @rows; the batch's loss. */
static float cpu_step(struct cpu_model *m, const float *x, const float *y,
		      uint32_t rows, float lr)
{
	const struct layout *l = m->l;
	float *g = m->grad;
	float lr_v = lr;

	cpu_forward(m, x, rows);
	accel_ref_softmax_cross_entropy(m->z2, y, rows, CLASSES, 1.0f / rows,
					m->probs, m->dz2, g + l->loss);
	accel_ref_matmul(m->a1, m->dz2, g + l->w2, l->hidden, CLASSES, rows,
			 TSR_MATMUL_TRANSPOSE_A);
	accel_ref_reduce(TSR_REDUCE_SUM, 0, m->dz2, rows, CLASSES, g + l->b2);
	accel_ref_matmul(m->dz2, m->params + l->w2, m->da1, rows, l->hidden,
			 CLASSES, TSR_MATMUL_TRANSPOSE_B);
	accel_ref_elementwise(TSR_VPU_SELECT, m->a1, m->da1, m->a1, rows,
			      l->hidden, m->dz1, rows, l->hidden);
	accel_ref_matmul(x, m->dz1, g + l->w1, PIXELS, l->hidden, rows,
			 TSR_MATMUL_TRANSPOSE_A);
	accel_ref_reduce(TSR_REDUCE_SUM, 0, m->dz1, rows, l->hidden, g + l->b1);
	accel_ref_elementwise(TSR_VPU_MUL, g, &lr_v, NULL, 1, 1, m->tmp,
			      l->params, 1);
	accel_ref_elementwise(TSR_VPU_SUB, m->params, m->tmp, NULL, l->params,
			      1, m->params, l->params, 1);
	return g[l->loss];
}

/* -------------------------------------------------------- on the chips */

/* Byte offsets of a chip's tensors in its buffers. */
struct chip_layout {
	uint64_t x, y;				/* in batch */
	uint64_t z1, a1, z2, probs, dz2, da1, dz1;	/* in act */
	uint64_t lr, tmp;			/* in consts */
	uint64_t test_x, test_z1, test_a1, test_z2;	/* in eval */
	uint64_t batch_bytes, act_bytes, consts_bytes, eval_bytes;
};

struct chip {
	struct accel_device *dev;
	unsigned int rank;		/* its share of the batch */
	struct accel_buffer *params, *grad, *check, *batch, *act, *consts;
	struct accel_buffer *scratch, *eval, *probs;	/* eval: chip 0 */
	struct accel_cmdbuf *step_cb, *update_cb, *eval_cb;
	struct accel_job_status step, update;
};

/* What one step cost on the modeled clock of the first local chip. */
struct step_cost {
	uint64_t cycles;		/* the step job, all-reduce, update */
	uint64_t ici_cycles;		/* the all-reduce */
	uint64_t mxu_cycles, vpu_cycles, dma_cycles;
};

struct trainer {
	const struct options *o;
	const struct layout *l;
	struct chip_layout cl;
	struct chip chip[MAX_CHIPS];
	unsigned int n;			/* local chips */
	unsigned int size;		/* chips training: the batch's shares */
	uint32_t rows;			/* batch rows per chip */
	uint32_t test_rows;
	struct accel_comm *comm;	/* NULL on one chip */
	struct accel_trace *trace;	/* recording one step */
	int prints;			/* this host has rank 0 */
	struct accel_device_info info;
	float *host_x, *host_y, *host_params, *host_check;
};

static void chip_lay_out(struct chip_layout *c, const struct layout *l,
			 uint32_t rows, uint32_t test_rows)
{
	uint64_t h = (uint64_t)rows * l->hidden * 4, k = (uint64_t)rows * CLASSES * 4;
	uint64_t at = 0;

	c->x = 0;
	c->y = align256((uint64_t)rows * PIXELS * 4);
	c->batch_bytes = c->y + k;
#define PLACE(field, bytes) do { c->field = at; at = align256(at + (bytes)); } while (0)
	PLACE(z1, h);
	PLACE(a1, h);
	PLACE(da1, h);
	PLACE(dz1, h);
	PLACE(z2, k);
	PLACE(probs, k);
	PLACE(dz2, k);
	c->act_bytes = at;
	at = 0;
	PLACE(lr, 4);
	PLACE(tmp, (uint64_t)l->params * 4);
	c->consts_bytes = at;
	at = 0;
	PLACE(test_x, (uint64_t)test_rows * PIXELS * 4);
	PLACE(test_z1, (uint64_t)test_rows * l->hidden * 4);
	PLACE(test_a1, (uint64_t)test_rows * l->hidden * 4);
	PLACE(test_z2, (uint64_t)test_rows * CLASSES * 4);
	c->eval_bytes = at;
#undef PLACE
}

/*
 * The forward pass of @x (rows x PIXELS) to the logits @z2, through the
 * hidden sums @z1 and activations @a1, with the chip's weights.
 */
static int build_forward(struct accel_cmdbuf *cb, const struct layout *l,
			 struct accel_buffer *params,
			 const struct accel_tensor *x,
			 const struct accel_tensor *z1,
			 const struct accel_tensor *a1,
			 const struct accel_tensor *z2)
{
	uint32_t h = l->hidden;
	struct accel_tensor w1 = f32_tensor(params, l->w1 * 4, PIXELS, h);
	struct accel_tensor b1 = f32_tensor(params, l->b1 * 4, 1, h);
	struct accel_tensor w2 = f32_tensor(params, l->w2 * 4, h, CLASSES);
	struct accel_tensor b2 = f32_tensor(params, l->b2 * 4, 1, CLASSES);

	return accel_op_matmul(cb, NULL, x, &w1, z1, 0) ?:
	       accel_op_elementwise(cb, TSR_VPU_ADD, z1, &b1, NULL, z1) ?:
	       accel_op_elementwise(cb, TSR_VPU_RELU, z1, NULL, NULL, a1) ?:
	       accel_op_matmul(cb, NULL, a1, &w2, z2, 0) ?:
	       accel_op_elementwise(cb, TSR_VPU_ADD, z2, &b2, NULL, z2);
}

/* The forward and backward passes of the chip's share: job 1 of a step. */
static int build_step(struct trainer *t, struct chip *c)
{
	const struct layout *l = t->l;
	const struct chip_layout *cl = &t->cl;
	uint32_t b = t->rows, h = l->hidden;
	struct accel_tensor x = f32_tensor(c->batch, cl->x, b, PIXELS);
	struct accel_tensor y = f32_tensor(c->batch, cl->y, b, CLASSES);
	struct accel_tensor w2 = f32_tensor(c->params, l->w2 * 4, h, CLASSES);
	struct accel_tensor gw1 = f32_tensor(c->grad, l->w1 * 4, PIXELS, h);
	struct accel_tensor gb1 = f32_tensor(c->grad, l->b1 * 4, 1, h);
	struct accel_tensor gw2 = f32_tensor(c->grad, l->w2 * 4, h, CLASSES);
	struct accel_tensor gb2 = f32_tensor(c->grad, l->b2 * 4, 1, CLASSES);
	struct accel_tensor loss = f32_tensor(c->grad, l->loss * 4, 1, 1);
	struct accel_tensor z1 = f32_tensor(c->act, cl->z1, b, h);
	struct accel_tensor a1 = f32_tensor(c->act, cl->a1, b, h);
	struct accel_tensor da1 = f32_tensor(c->act, cl->da1, b, h);
	struct accel_tensor dz1 = f32_tensor(c->act, cl->dz1, b, h);
	struct accel_tensor z2 = f32_tensor(c->act, cl->z2, b, CLASSES);
	struct accel_tensor probs = f32_tensor(c->act, cl->probs, b, CLASSES);
	struct accel_tensor dz2 = f32_tensor(c->act, cl->dz2, b, CLASSES);
	struct accel_cmdbuf *cb = c->step_cb;
	/* Each chip scales by the whole batch: the all-reduce adds up means. */
	float scale = 1.0f / ((float)b * t->size);

	return build_forward(cb, l, c->params, &x, &z1, &a1, &z2) ?:
	       accel_op_softmax_cross_entropy(cb, c->scratch, &z2, &y, &probs,
					      &dz2, &loss, scale) ?:
	       accel_op_matmul(cb, NULL, &a1, &dz2, &gw2, TSR_MATMUL_TRANSPOSE_A) ?:
	       accel_op_reduce(cb, NULL, TSR_REDUCE_SUM, 0, &dz2, &gb2) ?:
	       accel_op_matmul(cb, NULL, &dz2, &w2, &da1, TSR_MATMUL_TRANSPOSE_B) ?:
	       /* ReLU's gradient: passed where the activation is not 0. */
	       accel_op_elementwise(cb, TSR_VPU_SELECT, &a1, &da1, &a1, &dz1) ?:
	       accel_op_matmul(cb, NULL, &x, &dz1, &gw1, TSR_MATMUL_TRANSPOSE_A) ?:
	       accel_op_reduce(cb, NULL, TSR_REDUCE_SUM, 0, &dz1, &gb1);
}

/* params -= lr x gradient, the parameters as one column: job 2 of a step. */
static int build_update(struct trainer *t, struct chip *c)
{
	uint32_t p = t->l->params;
	struct accel_tensor params = f32_tensor(c->params, 0, p, 1);
	struct accel_tensor grad = f32_tensor(c->grad, 0, p, 1);
	struct accel_tensor lr = f32_tensor(c->consts, t->cl.lr, 1, 1);
	struct accel_tensor tmp = f32_tensor(c->consts, t->cl.tmp, p, 1);

	return accel_op_elementwise(c->update_cb, TSR_VPU_MUL, &grad, &lr, NULL, &tmp) ?:
	       accel_op_elementwise(c->update_cb, TSR_VPU_SUB, &params, &tmp, NULL,
				    &params);
}

/* The test set's probabilities, with the chip's current weights. */
static int build_eval(struct trainer *t, struct chip *c)
{
	const struct chip_layout *cl = &t->cl;
	uint32_t n = t->test_rows, h = t->l->hidden;
	struct accel_tensor x = f32_tensor(c->eval, cl->test_x, n, PIXELS);
	struct accel_tensor z1 = f32_tensor(c->eval, cl->test_z1, n, h);
	struct accel_tensor a1 = f32_tensor(c->eval, cl->test_a1, n, h);
	struct accel_tensor z2 = f32_tensor(c->eval, cl->test_z2, n, CLASSES);
	struct accel_tensor probs = f32_tensor(c->probs, 0, n, CLASSES);

	return build_forward(c->eval_cb, t->l, c->params, &x, &z1, &a1, &z2) ?:
	       accel_op_softmax(c->eval_cb, c->scratch, &z2, &probs);
}

/* The chips to train on: this host's chips of the slice, or one. */
static int open_chips(struct trainer *t)
{
	struct accel_slice s;
	unsigned int i;
	int ret;

	ret = t->o->chips == 1 ? ACCEL_ERR_NO_DEVICE : accel_slice_get(&s);
	if (ret || s.chips < 2) {
		/* One chip: the first, with the whole batch. */
		t->n = t->size = 1;
		t->prints = 1;
		return open_device(0, &t->chip[0].dev, &t->info);
	}
	t->n = s.local_count;
	t->size = s.chips;
	for (i = 0; i < t->n; i++) {
		t->chip[i].rank = s.local[i].index;
		t->prints |= s.local[i].index == 0;
		ret = accel_device_open(s.local[i].device, &t->chip[i].dev);
		if (ret)
			return fail("opening a chip of the slice", ret);
	}
	ret = accel_device_get_info(t->chip[0].dev, &t->info);
	if (ret)
		return fail("reading the first chip", ret);
	return ACCEL_OK;
}

static int create_buffers(struct trainer *t, struct chip *c, int evaluates)
{
	const struct chip_layout *cl = &t->cl;
	uint64_t p = (uint64_t)t->l->params * 4;
	uint64_t scratch = accel_cross_entropy_scratch_size(t->rows, CLASSES);
	uint64_t eval_scratch = accel_softmax_scratch_size(t->test_rows, CLASSES);
	int ret;

	if (eval_scratch > scratch)
		scratch = eval_scratch;
#define HBM(buf, bytes) \
	(ret = ret ?: accel_buffer_create(c->dev, (bytes), ACCEL_PLACEMENT_HBM, &c->buf))
	ret = 0;
	HBM(params, p);
	HBM(grad, p + 4);
	HBM(check, p);
	HBM(batch, cl->batch_bytes);
	HBM(act, cl->act_bytes);
	HBM(consts, cl->consts_bytes);
	HBM(scratch, scratch);
	if (evaluates) {
		HBM(eval, cl->eval_bytes);
		ret = ret ?: accel_buffer_create(c->dev, (uint64_t)t->test_rows * CLASSES * 4,
						 ACCEL_PLACEMENT_HOST, &c->probs);
	}
#undef HBM
	return ret;
}

static int set_up_chip(struct trainer *t, struct chip *c, const float *params,
		       const struct dataset *test, int evaluates)
{
	float lr = t->o->lr;
	int ret;

	ret = create_buffers(t, c, evaluates);
	if (ret)
		return fail("allocating the model's buffers", ret);
	ret = accel_buffer_upload(c->params, 0, params, (uint64_t)t->l->params * 4) ?:
	      accel_buffer_upload(c->consts, t->cl.lr, &lr, sizeof(lr));
	if (!ret && evaluates)
		ret = accel_buffer_upload(c->eval, t->cl.test_x, test->x,
					  (uint64_t)test->n * PIXELS * 4);
	if (ret)
		return fail("uploading the model", ret);
	ret = accel_cmdbuf_create(c->dev, &c->step_cb) ?:
	      accel_cmdbuf_create(c->dev, &c->update_cb);
	if (!ret && evaluates)
		ret = accel_cmdbuf_create(c->dev, &c->eval_cb);
	if (ret)
		return fail("creating command buffers", ret);
	ret = build_step(t, c);
	if (ret)
		return build_error("the forward and backward passes", c->step_cb, ret);
	ret = build_update(t, c);
	if (ret)
		return build_error("the update", c->update_cb, ret);
	ret = evaluates ? build_eval(t, c) : 0;
	if (ret)
		return build_error("the evaluation", c->eval_cb, ret);
	return ACCEL_OK;
}

static void free_chip(struct chip *c)
{
	accel_cmdbuf_destroy(c->step_cb);
	accel_cmdbuf_destroy(c->update_cb);
	accel_cmdbuf_destroy(c->eval_cb);
	accel_buffer_destroy(c->params);
	accel_buffer_destroy(c->grad);
	accel_buffer_destroy(c->check);
	accel_buffer_destroy(c->batch);
	accel_buffer_destroy(c->act);
	accel_buffer_destroy(c->consts);
	accel_buffer_destroy(c->scratch);
	accel_buffer_destroy(c->eval);
	accel_buffer_destroy(c->probs);
	accel_device_close(c->dev);
}

/* The two jobs of a step. */
enum job_kind { JOB_STEP, JOB_UPDATE };

static const char *const job_names[] = {
	[JOB_STEP] = "the forward and backward passes",
	[JOB_UPDATE] = "the update",
};

/*
 * Queue the @kind job on every local chip, each behind @after's jobs on
 * its chip (NULL: nothing) rather than behind a wait on the host.
 */
static int submit_everywhere(struct trainer *t, enum job_kind kind,
			     struct accel_coll *after, struct accel_job **job)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < t->n && !ret; i++) {
		struct chip *c = &t->chip[i];
		struct accel_job *wait[TSR_MAX_QUEUES];
		struct accel_submit_opts opts = { .wait_jobs = wait };

		if (after)
			ret = accel_coll_last_jobs(after, i, wait, &opts.wait_job_count);
		ret = ret ?: accel_submit(c->dev, kind == JOB_STEP ? c->step_cb : c->update_cb,
					  &opts, &job[i]);
		if (ret)
			fail(job_names[kind], ret);
	}
	return ret;
}

/* Wait for the @kind jobs queued on the local chips; their statuses. */
static int wait_everywhere(struct trainer *t, enum job_kind kind,
			   struct accel_job **job)
{
	unsigned int i;
	int ret = 0, r;

	for (i = 0; i < t->n && job[i]; i++) {
		struct chip *c = &t->chip[i];
		struct accel_job_status *st = kind == JOB_STEP ? &c->step : &c->update;

		r = accel_job_wait(job[i], WAIT_NS);
		accel_job_status(job[i], st);
		accel_job_destroy(job[i]);
		job[i] = NULL;
		if (r && !ret) {
			fprintf(stderr, PROG ": %s on chip %u: %s", job_names[kind],
				c->rank, accel_error_string(r));
			if (st->failed_command != TSR_NO_COMMAND)
				fprintf(stderr, " (%s at command %u)",
					st->chip_error_name, st->failed_command);
			fputc('\n', stderr);
			ret = r;
		}
	}
	return ret;
}

/* Wait for @coll (NULL: none) and free it; its modeled cycles. */
static int wait_coll(struct accel_coll *coll, const char *what, uint64_t *cycles)
{
	int ret;

	if (!coll)
		return ACCEL_OK;
	ret = accel_coll_wait(coll, WAIT_NS);
	if (cycles)
		*cycles = accel_coll_cycles(coll);
	accel_coll_destroy(coll);
	return ret ? fail(what, ret) : ACCEL_OK;
}

/*
 * Whether every chip of the slice holds the same weights: the element-wise
 * maximum of their bits (as integers, so that it is exact) equals each
 * chip's own.  Each host checks its chips: check_issue() starts the
 * all-reduce, check_result() compares once it ended.
 */
static int check_issue(struct trainer *t, struct accel_coll **coll)
{
	struct accel_buffer *params[MAX_CHIPS], *check[MAX_CHIPS];
	unsigned int i;
	int ret;

	for (i = 0; i < t->n; i++) {
		params[i] = t->chip[i].params;
		check[i] = t->chip[i].check;
	}
	ret = accel_all_reduce(t->comm, params, check, t->l->params, TSR_DTYPE_I32,
			       ACCEL_REDUCE_MAX, coll);
	return ret ? fail("comparing the chips' weights", ret) : ACCEL_OK;
}

static int check_result(struct trainer *t, uint64_t step)
{
	uint32_t p = t->l->params, e;
	unsigned int i;
	int ret;

	for (i = 0; i < t->n; i++) {
		struct chip *c = &t->chip[i];

		ret = accel_buffer_download(c->params, 0, t->host_params, (uint64_t)p * 4) ?:
		      accel_buffer_download(c->check, 0, t->host_check, (uint64_t)p * 4);
		if (ret)
			return fail("reading the weights", ret);
		if (!memcmp(t->host_params, t->host_check, (size_t)p * 4))
			continue;
		for (e = 0; e < p && !memcmp(&t->host_params[e], &t->host_check[e], 4); e++)
			;
		fprintf(stderr, PROG ": after step %" PRIu64 ", chip %u's weight %u is %.9g but another chip's is %.9g\n",
			step, c->rank, e, t->host_params[e], t->host_check[e]);
		return ACCEL_ERR_IO;
	}
	return ACCEL_OK;
}

/* The weights' check on its own, after a step that left it out. */
static int check_weights(struct trainer *t, uint64_t step)
{
	struct accel_coll *coll = NULL;
	int ret;

	if (!t->comm)
		return ACCEL_OK;
	ret = check_issue(t, &coll) ?:
	      wait_coll(coll, "comparing the chips' weights", NULL);
	return ret ?: check_result(t, step);
}

/*
 * Step @step on the chips: shares up, passes, all-reduce, update, and with
 * @check the weights' check after it.  Everything is queued at once, each
 * part behind the one it needs (the all-reduce reads the gradients after
 * the passes wrote them, the update waits for its jobs, the check reads
 * the weights after the update wrote them), and waited for once.
 */
static int chip_step(struct trainer *t, const struct dataset *train,
		     const uint32_t *order, uint32_t first, uint64_t step,
		     bool check, float *loss, struct step_cost *cost)
{
	struct accel_job *job[2][MAX_CHIPS] = { { 0 } };
	struct accel_buffer *grad[MAX_CHIPS];
	struct accel_coll *grads = NULL, *checking = NULL;
	const struct chip *c0 = &t->chip[0];
	unsigned int i;
	int ret = 0, r;

	for (i = 0; i < t->n && !ret; i++) {
		struct chip *c = &t->chip[i];

		batch_rows(train, order, first + c->rank * t->rows, t->rows,
			   t->host_x, t->host_y);
		ret = accel_buffer_upload(c->batch, t->cl.x, t->host_x,
					  (uint64_t)t->rows * PIXELS * 4) ?:
		      accel_buffer_upload(c->batch, t->cl.y, t->host_y,
					  (uint64_t)t->rows * CLASSES * 4);
		grad[i] = c->grad;
	}
	if (ret)
		return fail("uploading the batch", ret);
	ret = submit_everywhere(t, JOB_STEP, NULL, job[JOB_STEP]);
	if (!ret && t->comm) {
		ret = accel_all_reduce(t->comm, grad, grad, t->l->params + 1,
				       TSR_DTYPE_F32, ACCEL_REDUCE_SUM, &grads);
		if (ret)
			fail("the gradients' all-reduce", ret);
	}
	ret = ret ?: submit_everywhere(t, JOB_UPDATE, grads, job[JOB_UPDATE]);
	if (!ret && t->comm && check)
		ret = check_issue(t, &checking);
	r = wait_everywhere(t, JOB_STEP, job[JOB_STEP]);
	ret = ret ?: r;
	cost->ici_cycles = 0;
	r = wait_coll(grads, "the gradients' all-reduce", &cost->ici_cycles);
	ret = ret ?: r;
	r = wait_everywhere(t, JOB_UPDATE, job[JOB_UPDATE]);
	ret = ret ?: r;
	r = wait_coll(checking, "comparing the chips' weights", NULL);
	ret = ret ?: r;
	if (ret)
		return ret;
	ret = accel_buffer_download(c0->grad, (uint64_t)t->l->loss * 4, loss,
				    sizeof(*loss));
	if (ret)
		return fail("reading the loss", ret);
	if (checking) {
		ret = check_result(t, step);
		if (ret)
			return ret;
	}
	cost->cycles = c0->step.end_cycle - c0->step.start_cycle + cost->ici_cycles +
		       c0->update.end_cycle - c0->update.start_cycle;
	cost->mxu_cycles = c0->step.mxu_cycles + c0->update.mxu_cycles;
	cost->vpu_cycles = c0->step.vpu_cycles + c0->update.vpu_cycles;
	cost->dma_cycles = c0->step.dma_cycles + c0->update.dma_cycles;
	return ACCEL_OK;
}

/* The test accuracy with the first local chip's weights. */
static int chip_eval(struct trainer *t, const struct dataset *test, float *acc)
{
	struct chip *c = &t->chip[0];
	struct accel_job *job;
	float *probs;
	int ret;

	ret = accel_submit(c->dev, c->eval_cb, NULL, &job);
	if (ret)
		return fail("the evaluation", ret);
	ret = accel_job_wait(job, WAIT_NS);
	accel_job_destroy(job);
	if (!ret)
		ret = accel_buffer_map(c->probs, (void **)&probs);
	if (ret)
		return fail("the evaluation", ret);
	*acc = accuracy(test, probs);
	return ACCEL_OK;
}

/* Wire bytes the first local chip's links sent so far. */
static uint64_t link_bytes(struct trainer *t)
{
	struct accel_link_info li;
	uint64_t bytes = 0;
	unsigned int p;

	for (p = 0; p < t->info.ici_ports; p++)
		if (t->info.ports_wired & (1u << p) &&
		    !accel_link_get_info(t->chip[0].dev, p, &li))
			bytes += li.bytes_tx;
	return bytes;
}

/* Record the jobs of the local chips from now on. */
static int trace_begin(struct trainer *t)
{
	unsigned int i;
	int ret;

	ret = accel_trace_create(&t->trace);
	for (i = 0; i < t->n && !ret; i++)
		ret = accel_trace_start(t->trace, t->chip[i].dev);
	if (ret)
		return fail("recording the step's timeline", ret);
	return ACCEL_OK;
}

/* Stop recording and write the timeline, unless the step failed (@ret). */
static int trace_end(struct trainer *t, int ret)
{
	if (!ret) {
		ret = accel_trace_write_json(t->trace, t->o->trace);
		if (ret)
			fprintf(stderr, PROG ": cannot write the timeline '%s': %s\n",
				t->o->trace, accel_error_string(ret));
		else if (accel_trace_dropped(t->trace))
			fprintf(stderr, PROG ": the timeline lacks %" PRIu64 " commands\n",
				accel_trace_dropped(t->trace));
	}
	accel_trace_destroy(t->trace);
	t->trace = NULL;
	return ret;
}

/* ------------------------------------------------------------ the run */

/* An epoch's figures: what is printed and logged. */
struct epoch {
	uint32_t number, steps;
	double loss_sum;
	double wall_s;
	float accuracy;
	struct step_cost cost;		/* sums over the steps */
	uint64_t link_bytes;
};

static void log_step(FILE *log, uint64_t step, uint32_t epoch, float loss)
{
	if (log)
		fprintf(log, "step,%" PRIu64 ",%u,%.9g\n", step, epoch, loss);
}

/*
 * Per epoch: the mean loss of its steps, the accuracy after it; on the
 * chips, the mean modeled step (its two jobs and the all-reduce, on the
 * first chip's clock) split into the engines' busy time, and their
 * utilization (busy / step; links: bytes sent / what they could send).
 */
static void report_epoch(const struct trainer *t, const struct epoch *e, FILE *log)
{
	double mhz = t->info.clock_mhz, n = e->steps;
	double step_us = e->cost.cycles / n / mhz;
	double compute_us = (e->cost.mxu_cycles + e->cost.vpu_cycles) / n / mhz;
	double memory_us = e->cost.dma_cycles / n / mhz;
	double ici_us = e->cost.ici_cycles / n / mhz;
	double links = __builtin_popcount(t->info.ports_wired);
	double link_capacity = links * t->info.ici_link_gbps * 1e3 * step_us;
	double link_util = link_capacity > 0 ? e->link_bytes / n / link_capacity : 0;
	double loss = e->loss_sum / n;

	if (!t->info.clock_mhz) {	/* on the CPU */
		printf("epoch %3u: loss %.4f, test accuracy %.1f%%, %u steps in %.2f s\n",
		       e->number, loss, e->accuracy, e->steps, e->wall_s);
		if (log)
			fprintf(log, "epoch,%u,%.9g,%.2f,%.3f\n", e->number, loss,
				e->accuracy, e->wall_s);
		return;
	}
	printf("epoch %3u: loss %.4f, test accuracy %.1f%%, %u steps in %.2f s (%.1f steps/s)\n",
	       e->number, loss, e->accuracy, e->steps, e->wall_s, e->steps / e->wall_s);
	printf("           modeled step %.2f us: compute %.2f, memory %.2f, ICI %.2f us;"
	       " MXU %.1f%%, VPU %.1f%%, DMA %.1f%%, links %.1f%%\n",
	       step_us, compute_us, memory_us, ici_us,
	       100.0 * e->cost.mxu_cycles / e->cost.cycles,
	       100.0 * e->cost.vpu_cycles / e->cost.cycles,
	       100.0 * e->cost.dma_cycles / e->cost.cycles, 100.0 * link_util);
	if (log)
		fprintf(log, "epoch,%u,%.9g,%.2f,%.3f,%.3f,%.3f,%.3f,%.3f,%.2f,%.2f,%.2f,%.2f\n",
			e->number, loss, e->accuracy, e->wall_s, step_us,
			compute_us, memory_us, ici_us,
			100.0 * e->cost.mxu_cycles / e->cost.cycles,
			100.0 * e->cost.vpu_cycles / e->cost.cycles,
			100.0 * e->cost.dma_cycles / e->cost.cycles, 100.0 * link_util);
}

static void add_cost(struct step_cost *sum, const struct step_cost *c)
{
	sum->cycles += c->cycles;
	sum->ici_cycles += c->ici_cycles;
	sum->mxu_cycles += c->mxu_cycles;
	sum->vpu_cycles += c->vpu_cycles;
	sum->dma_cycles += c->dma_cycles;
}

/* The CPU's test accuracy with its current weights. */
static int cpu_eval(struct cpu_model *test_model, const float *params,
		    const struct dataset *test, float *acc)
{
	memcpy(test_model->params, params, test_model->l->params * sizeof(float));
	cpu_forward(test_model, test->x, test->n);
	accel_ref_softmax(test_model->z2, test->n, CLASSES, test_model->probs);
	*acc = accuracy(test, test_model->probs);
	return 0;
}

static int train(struct trainer *t, const struct data *d, struct cpu_model *cpu,
		 struct cpu_model *cpu_test, FILE *log)
{
	const struct options *o = t->o;
	uint32_t steps_per_epoch = d->train.n / o->batch;
	uint64_t total = (uint64_t)steps_per_epoch * o->epochs, step = 0;
	uint32_t *order = malloc(d->train.n * sizeof(*order));
	float *x = NULL, *y = NULL;
	struct epoch e = { 0 };
	int ret = 0;

	if (o->steps && o->steps < total)
		total = o->steps;
	if (cpu) {
		x = malloc((size_t)o->batch * PIXELS * sizeof(*x));
		y = malloc((size_t)o->batch * CLASSES * sizeof(*y));
	}
	if (!order || (cpu && (!x || !y))) {
		fprintf(stderr, PROG ": out of memory for the batches\n");
		ret = -1;
		goto out;
	}
	for (e.number = 1; step < total && !ret; e.number++) {
		double t0 = now_s();
		uint64_t bytes0 = cpu ? 0 : link_bytes(t);
		uint32_t s;

		e.steps = 0;
		e.loss_sum = 0;
		e.cost = (struct step_cost){ 0 };
		shuffle_order(order, d->train.n, o->seed, e.number);
		for (s = 0; s < steps_per_epoch && step < total && !ret; s++) {
			struct step_cost cost = { 0 };
			float loss;

			if (cpu) {
				batch_rows(&d->train, order, s * o->batch, o->batch, x, y);
				loss = cpu_step(cpu, x, y, o->batch, o->lr);
			} else {
				bool traced = o->trace && step + 1 == o->trace_step;

				/* The traced step's timeline is the step's alone. */
				ret = traced ? trace_begin(t) : 0;
				ret = ret ?: chip_step(t, &d->train, order, s * o->batch,
						       step + 1, !traced, &loss, &cost);
				if (traced) {
					ret = trace_end(t, ret);
					ret = ret ?: check_weights(t, step + 1);
				}
			}
			if (ret)
				break;
			step++;
			e.steps++;
			e.loss_sum += loss;
			add_cost(&e.cost, &cost);
			if (t->prints)
				log_step(log, step, e.number, loss);
			if (!isfinite(loss)) {
				fprintf(stderr, PROG ": step %" PRIu64 ": the loss is %g; try a smaller --lr\n",
					step, loss);
				ret = -1;
			}
		}
		if (ret)
			break;
		e.wall_s = now_s() - t0;
		e.link_bytes = cpu ? 0 : link_bytes(t) - bytes0;
		if (t->prints)
			ret = cpu ? cpu_eval(cpu_test, cpu->params, &d->test, &e.accuracy) :
				    chip_eval(t, &d->test, &e.accuracy);
		if (!ret && t->prints)
			report_epoch(t, &e, log);
	}
	if (!ret && o->trace && o->trace_step > step) {
		fprintf(stderr, PROG ": --trace-step %u is beyond the %" PRIu64 " steps trained\n",
			o->trace_step, step);
		ret = -1;
	}
	if (!ret && t->prints && o->target > 0 && e.accuracy < o->target) {
		fprintf(stderr, PROG ": test accuracy %.1f%% is below the target %.1f%%\n",
			e.accuracy, o->target);
		ret = -1;
	}
out:
	free(order);
	free(x);
	free(y);
	return ret;
}

static int set_up_chips(struct trainer *t, const struct data *d, const float *params)
{
	struct accel_device *devs[MAX_CHIPS];
	unsigned int i;
	int ret;

	ret = open_chips(t);
	if (ret)
		return ret;
	if (t->o->batch % t->size) {
		fprintf(stderr, PROG ": --batch %u does not split across the slice's %u chips; give a multiple of %u\n",
			t->o->batch, t->size, t->size);
		return ACCEL_ERR_BAD_SHAPE;
	}
	t->rows = t->o->batch / t->size;
	t->test_rows = d->test.n;
	chip_lay_out(&t->cl, t->l, t->rows, t->test_rows);
	t->host_x = malloc((size_t)t->rows * PIXELS * sizeof(float));
	t->host_y = malloc((size_t)t->rows * CLASSES * sizeof(float));
	t->host_params = malloc((size_t)t->l->params * sizeof(float));
	t->host_check = malloc((size_t)t->l->params * sizeof(float));
	if (!t->host_x || !t->host_y || !t->host_params || !t->host_check) {
		fprintf(stderr, PROG ": out of host memory\n");
		return ACCEL_ERR_NO_MEMORY;
	}
	for (i = 0; i < t->n; i++) {
		ret = set_up_chip(t, &t->chip[i], params, &d->test, i == 0 && t->prints);
		if (ret)
			return ret;
		devs[i] = t->chip[i].dev;
	}
	if (t->size == 1)
		return ACCEL_OK;
	ret = accel_comm_create(devs, t->n, NULL, &t->comm);
	if (ret)
		return fail("connecting the slice's chips", ret);
	return ACCEL_OK;
}

static void free_trainer(struct trainer *t)
{
	unsigned int i;

	accel_comm_destroy(t->comm);
	for (i = 0; i < t->n; i++)
		free_chip(&t->chip[i]);
	free(t->host_x);
	free(t->host_y);
	free(t->host_params);
	free(t->host_check);
}

int main(int argc, char **argv)
{
	struct cpu_model cpu = { 0 }, cpu_test = { 0 };
	struct trainer t = { 0 };
	struct data d = { 0 };
	struct layout l;
	struct options o;
	FILE *log = NULL;
	int status = EXIT_FAILURE;
	float *params;
	int ret;

	if (parse_options(argc, argv, &o))
		return EXIT_USAGE;
	if (load_data(o.data, &d))
		return EXIT_FAILURE;
	lay_out(&l, o.hidden);
	t.o = &o;
	t.l = &l;
	ret = -1;
	params = malloc((size_t)l.params * sizeof(*params));
	if (!params) {
		fprintf(stderr, PROG ": out of host memory\n");
		goto out;
	}
	init_params(&l, o.seed, params);
	if (o.cpu) {
		t.prints = 1;
		t.n = t.size = 1;
		if (cpu_alloc(&cpu, &l, o.batch) || cpu_alloc(&cpu_test, &l, d.test.n)) {
			fprintf(stderr, PROG ": out of host memory\n");
			goto out;
		}
		memcpy(cpu.params, params, (size_t)l.params * sizeof(*params));
	} else {
		ret = set_up_chips(&t, &d, params);
		if (ret) {
			status = ret == ACCEL_ERR_BAD_SHAPE ? EXIT_USAGE : EXIT_FAILURE;
			goto out;
		}
		ret = -1;
	}
	if (o.log && t.prints) {
		log = strcmp(o.log, "-") ? fopen(o.log, "w") : stdout;
		if (!log) {
			fprintf(stderr, PROG ": cannot write the log '%s': %s\n", o.log,
				strerror(errno));
			goto out;
		}
	}
	if (t.prints)
		printf(PROG ": %u training and %u test digits, %u -> %u -> %u, batch %u, lr %g, on %s%u chip%s\n",
		       d.train.n, d.test.n, PIXELS, l.hidden, CLASSES, o.batch, o.lr,
		       o.cpu ? "the CPU instead of " : "", t.size, t.size > 1 ? "s" : "");
	ret = train(&t, &d, o.cpu ? &cpu : NULL, &cpu_test, log);
	if (!ret && t.prints && !o.cpu && t.size > 1)
		printf(PROG ": the weights were identical on all %u chips after every step\n",
		       t.size);
out:
	if (log && log != stdout)
		fclose(log);
	free_trainer(&t);
	cpu_free(&cpu);
	cpu_free(&cpu_test);
	free(params);
	free_data(&d);
	return ret ? status : EXIT_SUCCESS;
}
