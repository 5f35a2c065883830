// SPDX-License-Identifier: MIT
/*
 * embag: a slice of chips trains an embedding-bag classifier together.
 *
 * The data are windows of 12 words from four licence texts of Debian's
 * base-files (GPL-3, Apache-2.0, Artistic, MPL-2.0); the model tells which
 * licence a window comes from.  The vocabulary is the training split's
 * words in sorted order after an <unk> id 0, so every host builds the same
 * one.  A window is a bag of word ids; the model looks them up in an
 * embedding table sharded over the slice's chips (<accel/embedding.h>:
 * SparseCore gathers and an all-to-all over ICI), combines them (mean or
 * sum), then a dense layer and softmax cross-entropy.
 *
 * Every step, the batch is split across every chip of the slice; each chip
 * runs the dense layer's forward and backward passes on its share in one
 * job of the ops layer; the dense gradients and the loss are summed over
 * ICI by one all-reduce, as in train.c, and each chip updates the dense
 * layer; the embedding gradient goes back into the shards through
 * accel_embedding_backward() with scale -lr.
 *
 * With --chips 1 the same training runs on a lone chip (not one of a slice), with
 * --cpu in plain C on the host (libaccel's CPU references): from the same
 * seed the loss curves agree to f32 rounding.  Every host of a slice runs
 * this program; the host of the slice's chip 0 prints.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>
#include <accel/collective.h>
#include <accel/embedding.h>

#define PROG		"embag"
#include "sample.h"

#define CLASSES		4
#define WINDOW		12	/* words per sample, as the data has them */
#define MAX_WORD	64
#define TEST_SHARE	5	/* one sample in 5 is held out */
#define MAX_CHIPS	ACCEL_SLICE_MAX_LOCAL
#define WAIT_NS		(600ull * 1000 * 1000 * 1000)
#define DEFAULT_DATA	"/tessera/share/licenses.csv"

static const char *const class_names[CLASSES] = {
	"GPL-3", "Apache-2.0", "Artistic", "MPL-2.0",
};

static const char usage[] =
	"usage: " PROG " [OPTIONS]\n"
	"\n"
	"Train a classifier of which licence (GPL-3, Apache-2.0, Artistic or\n"
	"MPL-2.0) a window of 12 words comes from: an embedding bag over a table\n"
	"sharded across every chip of the slice, a dense layer, softmax\n"
	"cross-entropy, SGD. The batch is split across the chips, the dense\n"
	"gradients all-reduced over ICI, the embedding gradient added into the\n"
	"shards. Run it on every host of a slice (tools/tessera-slice does).\n"
	"Prints, per epoch, the loss, the test accuracy and the wall time.\n"
	"\n"
	"options:\n"
	"  --chips N           train on N chips: 1 (a lone chip, outside any\n"
	"                      slice) or 0 for every chip of the slice (default 0)\n"
	"  --cpu               train on the host CPU instead (the reference)\n"
	"  --data FILE         the windows as CSV: the licence (0-3), a comma,\n"
	"                      12 lowercase words, per line\n"
	"                      (default " DEFAULT_DATA ")\n"
	"  -e, --epochs N      passes over the training set (default 10)\n"
	"  --steps N           stop after N steps (default: all the epochs')\n"
	"  -b, --batch N       samples per step over all chips, a multiple of\n"
	"                      the chips (default 32)\n"
	"  --dim N             columns of the embedding table (default 16)\n"
	"  --combiner NAME     mean or sum of a bag's rows (default mean)\n"
	"  --lr X              learning rate (default 2)\n"
	"  -s, --seed N        seed of the weights and of the batches' order\n"
	"                      (default 1)\n"
	"  --log FILE          write each step's loss, and each epoch's figures,\n"
	"                      as CSV to FILE\n"
	"  --target PERCENT    fail unless the last epoch's test accuracy\n"
	"                      reaches PERCENT (default 0: no target)\n"
	"  -h, --help          show this text\n"
	"\n"
	"Exit status: 0 trained (and reached --target), 1 failure (device\n"
	"error, bad data, accuracy below target), 2 bad arguments (a --batch\n"
	"that does not split across the slice's chips, --chips 1 on a slice\n"
	"too).\n";

struct options {
	uint32_t chips;
	int cpu;
	const char *data;
	uint32_t epochs;
	uint32_t steps;
	uint32_t batch;
	uint32_t dim;
	enum tsr_sc_combiner combiner;
	float lr;
	uint32_t seed;
	const char *log;
	float target;
};

static int parse_options(int argc, char **argv, struct options *o)
{
	enum { OPT_CHIPS = 256, OPT_CPU, OPT_DATA, OPT_STEPS, OPT_DIM,
	       OPT_COMBINER, OPT_LR, OPT_LOG, OPT_TARGET };
	static const struct option longopts[] = {
		{ "chips", required_argument, NULL, OPT_CHIPS },
		{ "cpu", no_argument, NULL, OPT_CPU },
		{ "data", required_argument, NULL, OPT_DATA },
		{ "epochs", required_argument, NULL, 'e' },
		{ "steps", required_argument, NULL, OPT_STEPS },
		{ "batch", required_argument, NULL, 'b' },
		{ "dim", required_argument, NULL, OPT_DIM },
		{ "combiner", required_argument, NULL, OPT_COMBINER },
		{ "lr", required_argument, NULL, OPT_LR },
		{ "seed", required_argument, NULL, 's' },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "target", required_argument, NULL, OPT_TARGET },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret = 0;

	*o = (struct options){
		.data = DEFAULT_DATA, .epochs = 10, .batch = 32, .dim = 16,
		.combiner = TSR_SC_MEAN, .lr = 2.0f, .seed = 1,
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
		case OPT_DIM:
			ret = parse_u32("--dim", optarg, 1, 1024, &o->dim);
			break;
		case OPT_COMBINER:
			if (!strcmp(optarg, "mean"))
				o->combiner = TSR_SC_MEAN;
			else if (!strcmp(optarg, "sum"))
				o->combiner = TSR_SC_SUM;
			else
				ret = usage_error("--combiner must be mean or sum, not '%s'",
						  optarg);
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
	return 0;
}

/* ------------------------------------------------------------ the data */

/* The windows as read: class and words, before the vocabulary. */
struct text {
	uint32_t n;
	uint8_t *label;
	char (*word)[WINDOW][MAX_WORD];
};

/* Samples: bags of WINDOW word ids, in COO form for a whole split. */
struct dataset {
	uint32_t n;
	uint32_t *ids;		/* n x WINDOW */
	uint8_t *label;
};

struct data {
	uint32_t vocab;		/* words of the training split, and <unk> */
	struct dataset train, test;
};

static int is_test(uint32_t line)
{
	return line % TEST_SHARE == TEST_SHARE - 1;
}

/* One CSV line into @t; 1 read, 0 end, -1 malformed. */
static int read_window(FILE *f, struct text *t)
{
	char line[WINDOW * MAX_WORD + 8], *p, *w;
	uint32_t i;

	if (!fgets(line, sizeof(line), f))
		return 0;
	if (line[0] < '0' || line[0] >= '0' + CLASSES || line[1] != ',')
		return -1;
	t->label[t->n] = line[0] - '0';
	p = line + 2;
	for (i = 0; i < WINDOW; i++) {
		w = strsep(&p, i + 1 < WINDOW ? " " : "\n");
		if (!w || !*w || strlen(w) >= MAX_WORD)
			return -1;
		strcpy(t->word[t->n][i], w);
	}
	if (p && *p)
		return -1;
	t->n++;
	return 1;
}

static int read_text(const char *path, struct text *t)
{
	uint32_t cap = 0;
	FILE *f;
	int r;

	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, PROG ": cannot open the licence windows '%s': %s\n",
			path, strerror(errno));
		return -1;
	}
	do {
		if (t->n == cap) {
			cap = cap ? 2 * cap : 1024;
			t->label = realloc(t->label, cap);
			t->word = realloc(t->word, cap * sizeof(*t->word));
			if (!t->label || !t->word) {
				fclose(f);
				fprintf(stderr, PROG ": out of memory for the data\n");
				return -1;
			}
		}
		r = read_window(f, t);
	} while (r == 1);
	fclose(f);
	if (r < 0) {
		fprintf(stderr, PROG ": %s, line %u: not a licence from 0 to %u, a comma and %u lowercase words\n",
			path, t->n + 1, CLASSES - 1, WINDOW);
		return -1;
	}
	if (t->n < TEST_SHARE) {
		fprintf(stderr, PROG ": %s has too few windows to train on\n", path);
		return -1;
	}
	return 0;
}

static int compare_words(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A word's id: 1 + its place in the sorted @words, 0 (<unk>) if absent. */
static uint32_t word_id(char **words, uint32_t n, const char *w)
{
	char **hit = bsearch(&w, words, n, sizeof(*words), compare_words);

	return hit ? 1 + (uint32_t)(hit - words) : 0;
}

static int dataset_alloc(struct dataset *d, uint32_t n)
{
	d->n = 0;
	d->ids = malloc((size_t)n * WINDOW * sizeof(*d->ids));
	d->label = malloc(n);
	return d->ids && d->label ? 0 : -1;
}

/*
 * Every TEST_SHARE-th window is held out; the vocabulary is the distinct
 * words of the others, sorted, so that every host numbers them alike.
 */
static int load_data(const char *path, struct data *d)
{
	struct text t = { 0 };
	char **words = NULL;
	uint32_t i, j, n = 0, unique = 0;
	int ret = -1;

	if (read_text(path, &t))
		goto out;
	words = malloc((size_t)t.n * WINDOW * sizeof(*words));
	if (!words || dataset_alloc(&d->train, t.n) || dataset_alloc(&d->test, t.n)) {
		fprintf(stderr, PROG ": out of memory for the data\n");
		goto out;
	}
	for (i = 0; i < t.n; i++)
		for (j = 0; j < WINDOW && !is_test(i); j++)
			words[n++] = t.word[i][j];
	qsort(words, n, sizeof(*words), compare_words);
	for (i = 0; i < n; i++)
		if (!unique || strcmp(words[unique - 1], words[i]))
			words[unique++] = words[i];
	d->vocab = unique + 1;
	for (i = 0; i < t.n; i++) {
		struct dataset *s = is_test(i) ? &d->test : &d->train;

		for (j = 0; j < WINDOW; j++)
			s->ids[(size_t)s->n * WINDOW + j] = word_id(words, unique,
								    t.word[i][j]);
		s->label[s->n++] = t.label[i];
	}
	ret = 0;
out:
	free(words);
	free(t.label);
	free(t.word);
	return ret;
}

static void free_data(struct data *d)
{
	free(d->train.ids);
	free(d->train.label);
	free(d->test.ids);
	free(d->test.label);
}

/* ------------------------------------------------------------ the model */

/*
 * The dense layer's parameters, one f32 vector: W (dim x CLASSES), b
 * (CLASSES).  The gradient has the same layout, and the loss after it, so
 * that one all-reduce sums both.  The table is apart: vocab x dim.
 */
struct layout {
	uint32_t dim, vocab;
	uint32_t w, b, params, loss;
};

static void lay_out(struct layout *l, uint32_t dim, uint32_t vocab)
{
	l->dim = dim;
	l->vocab = vocab;
	l->w = 0;
	l->b = dim * CLASSES;
	l->params = l->b + CLASSES;
	l->loss = l->params;
}

static float uniform(uint32_t *state, float scale)
{
	return scale * (2.0f * (xorshift32(state) >> 8) / (1u << 24) - 1.0f);
}

/* The table uniform in +-0.1, W Glorot-uniform, b zero: alike everywhere. */
static void init_model(const struct layout *l, uint32_t seed, float *table,
		       float *params)
{
	float s = sqrtf(6.0f / (l->dim + CLASSES));
	size_t i;

	for (i = 0; i < (size_t)l->vocab * l->dim; i++)
		table[i] = uniform(&seed, 0.1f);
	memset(params, 0, (size_t)l->params * sizeof(*params));
	for (i = 0; i < (size_t)l->dim * CLASSES; i++)
		params[l->w + i] = uniform(&seed, s);
}

/* A batch of @rows samples in COO form, and their one-hot labels. */
struct bags {
	uint32_t *sample_ids, *ids;
	float *y;
};

static int bags_alloc(struct bags *b, uint32_t rows)
{
	b->sample_ids = malloc((size_t)rows * WINDOW * sizeof(uint32_t));
	b->ids = malloc((size_t)rows * WINDOW * sizeof(uint32_t));
	b->y = malloc((size_t)rows * CLASSES * sizeof(float));
	return b->sample_ids && b->ids && b->y ? 0 : -1;
}

static void bags_free(struct bags *b)
{
	free(b->sample_ids);
	free(b->ids);
	free(b->y);
}

/* Samples @first ... @first + @rows - 1 of @order (NULL: in order). */
static void fill_bags(const struct dataset *d, const uint32_t *order,
		      uint32_t first, uint32_t rows, struct bags *b)
{
	uint32_t r, j;

	memset(b->y, 0, (size_t)rows * CLASSES * sizeof(*b->y));
	for (r = 0; r < rows; r++) {
		uint32_t s = order ? order[first + r] : first + r;

		for (j = 0; j < WINDOW; j++) {
			b->sample_ids[r * WINDOW + j] = r;
			b->ids[r * WINDOW + j] = d->ids[(size_t)s * WINDOW + j];
		}
		b->y[(size_t)r * CLASSES + d->label[s]] = 1.0f;
	}
}

/* Test accuracy, in percent, from the bags' rows and the dense layer. */
static float accuracy(const struct layout *l, const struct dataset *test,
		      const float *rows, const float *params, float *logits)
{
	uint32_t i, j, right = 0;

	accel_ref_matmul(rows, params + l->w, logits, test->n, CLASSES, l->dim, 0);
	accel_ref_elementwise(TSR_VPU_ADD, logits, params + l->b, NULL, 1, CLASSES,
			      logits, test->n, CLASSES);
	for (i = 0; i < test->n; i++) {
		const float *z = logits + (size_t)i * CLASSES;
		uint32_t best = 0;

		for (j = 1; j < CLASSES; j++)
			if (z[j] > z[best])
				best = j;
		right += best == test->label[i];
	}
	return 100.0f * right / test->n;
}

/* -------------------------------------------------------- on the CPU */

/* The step with libaccel's references of what the chips run, in order. */
struct cpu_model {
	const struct layout *l;
	enum tsr_sc_combiner combiner;
	float *table, *params, *grad, *tmp;
	float *emb, *z, *probs, *dz, *demb;
};

static int cpu_alloc(struct cpu_model *m, const struct layout *l,
		     enum tsr_sc_combiner combiner, uint32_t rows)
{
	size_t e = (size_t)rows * l->dim, c = (size_t)rows * CLASSES;

	m->l = l;
	m->combiner = combiner;
	m->table = malloc((size_t)l->vocab * l->dim * sizeof(float));
	m->params = malloc(l->params * sizeof(float));
	m->grad = malloc((l->params + 1) * sizeof(float));
	m->tmp = malloc(l->params * sizeof(float));
	m->emb = malloc(e * sizeof(float));
	m->demb = malloc(e * sizeof(float));
	m->z = malloc(c * sizeof(float));
	m->probs = malloc(c * sizeof(float));
	m->dz = malloc(c * sizeof(float));
	return m->table && m->params && m->grad && m->tmp && m->emb &&
	       m->demb && m->z && m->probs && m->dz ? 0 : -1;
}

static void cpu_free(struct cpu_model *m)
{
	free(m->table);
	free(m->params);
	free(m->grad);
	free(m->tmp);
	free(m->emb);
	free(m->demb);
	free(m->z);
	free(m->probs);
	free(m->dz);
}

static void cpu_bags(struct cpu_model *m, const struct bags *b, uint32_t rows)
{
	uint32_t err, where;

	accel_ref_sc_gather(m->combiner, b->sample_ids, b->ids, NULL, rows * WINDOW,
			    m->table, m->l->vocab, m->l->dim, m->emb, rows,
			    &err, &where);
}

/* One SGD step on a batch of @rows; the batch's loss. */
static float cpu_step(struct cpu_model *m, const struct bags *b, uint32_t rows,
		      float lr)
{
	const struct layout *l = m->l;
	float *g = m->grad, *p = m->params;
	uint32_t err, where;

	cpu_bags(m, b, rows);
	accel_ref_matmul(m->emb, p + l->w, m->z, rows, CLASSES, l->dim, 0);
	accel_ref_elementwise(TSR_VPU_ADD, m->z, p + l->b, NULL, 1, CLASSES,
			      m->z, rows, CLASSES);
	accel_ref_softmax_cross_entropy(m->z, b->y, rows, CLASSES, 1.0f / rows,
					m->probs, m->dz, g + l->loss);
	accel_ref_matmul(m->emb, m->dz, g + l->w, l->dim, CLASSES, rows,
			 TSR_MATMUL_TRANSPOSE_A);
	accel_ref_reduce(TSR_REDUCE_SUM, 0, m->dz, rows, CLASSES, g + l->b);
	accel_ref_matmul(m->dz, p + l->w, m->demb, rows, l->dim, CLASSES,
			 TSR_MATMUL_TRANSPOSE_B);
	accel_ref_elementwise(TSR_VPU_MUL, g, &lr, NULL, 1, 1, m->tmp, l->params, 1);
	accel_ref_elementwise(TSR_VPU_SUB, p, m->tmp, NULL, l->params, 1, p,
			      l->params, 1);
	accel_ref_sc_scatter_add(m->combiner, b->sample_ids, b->ids, NULL,
				 rows * WINDOW, m->demb, rows, l->dim, m->table,
				 l->vocab, -lr, &err, &where);
	return g[l->loss];
}

/* -------------------------------------------------------- on the chips */

/* Byte offsets of a chip's tensors in its act buffer. */
struct chip_layout {
	uint64_t emb, y, z, probs, dz, demb, lr, tmp, bytes;
};

struct chip {
	struct accel_device *dev;
	unsigned int rank;		/* its share of the batch */
	struct accel_buffer *params, *grad, *act, *scratch, *test_emb;
	struct accel_cmdbuf *step_cb, *update_cb;
};

struct trainer {
	const struct options *o;
	const struct layout *l;
	struct chip_layout cl;
	struct chip chip[MAX_CHIPS];
	unsigned int n;			/* local chips */
	unsigned int size;		/* chips training: the batch's shares */
	uint32_t rows;			/* batch rows per chip */
	struct accel_comm *comm;
	struct accel_embedding *emb;
	int prints;			/* this host has rank 0 */
	struct bags bags[MAX_CHIPS], test_bags;
	float *host_rows, *host_params, *logits;
};

static void chip_lay_out(struct chip_layout *c, const struct layout *l,
			 uint32_t rows)
{
	uint64_t e = (uint64_t)rows * l->dim * 4, k = (uint64_t)rows * CLASSES * 4;
	uint64_t at = 0;

#define PLACE(field, bytes) do { c->field = at; at = align256(at + (bytes)); } while (0)
	PLACE(emb, e);
	PLACE(y, k);
	PLACE(z, k);
	PLACE(probs, k);
	PLACE(dz, k);
	PLACE(demb, e);
	PLACE(lr, 4);
	PLACE(tmp, (uint64_t)l->params * 4);
#undef PLACE
	c->bytes = at;
}

/* The dense layer's passes on the chip's share of bags: job 1 of a step. */
static int build_step(struct trainer *t, struct chip *c)
{
	const struct layout *l = t->l;
	const struct chip_layout *cl = &t->cl;
	uint32_t r = t->rows, d = l->dim;
	struct accel_tensor emb = f32_tensor(c->act, cl->emb, r, d);
	struct accel_tensor y = f32_tensor(c->act, cl->y, r, CLASSES);
	struct accel_tensor z = f32_tensor(c->act, cl->z, r, CLASSES);
	struct accel_tensor probs = f32_tensor(c->act, cl->probs, r, CLASSES);
	struct accel_tensor dz = f32_tensor(c->act, cl->dz, r, CLASSES);
	struct accel_tensor demb = f32_tensor(c->act, cl->demb, r, d);
	struct accel_tensor w = f32_tensor(c->params, l->w * 4, d, CLASSES);
	struct accel_tensor b = f32_tensor(c->params, l->b * 4, 1, CLASSES);
	struct accel_tensor gw = f32_tensor(c->grad, l->w * 4, d, CLASSES);
	struct accel_tensor gb = f32_tensor(c->grad, l->b * 4, 1, CLASSES);
	struct accel_tensor loss = f32_tensor(c->grad, l->loss * 4, 1, 1);
	struct accel_cmdbuf *cb = c->step_cb;
	/* Each chip scales by the whole batch: the all-reduce adds up means. */
	float scale = 1.0f / ((float)r * t->size);

	return accel_op_matmul(cb, NULL, &emb, &w, &z, 0) ?:
	       accel_op_elementwise(cb, TSR_VPU_ADD, &z, &b, NULL, &z) ?:
	       accel_op_softmax_cross_entropy(cb, c->scratch, &z, &y, &probs,
					      &dz, &loss, scale) ?:
	       accel_op_matmul(cb, NULL, &emb, &dz, &gw, TSR_MATMUL_TRANSPOSE_A) ?:
	       accel_op_reduce(cb, NULL, TSR_REDUCE_SUM, 0, &dz, &gb) ?:
	       /* The bags' gradient, with W before its update. */
	       accel_op_matmul(cb, NULL, &dz, &w, &demb, TSR_MATMUL_TRANSPOSE_B);
}

/* params -= lr x gradient, the parameters as one column: job 2 of a step. */
static int build_update(struct trainer *t, struct chip *c)
{
	uint32_t p = t->l->params;
	struct accel_tensor params = f32_tensor(c->params, 0, p, 1);
	struct accel_tensor grad = f32_tensor(c->grad, 0, p, 1);
	struct accel_tensor lr = f32_tensor(c->act, t->cl.lr, 1, 1);
	struct accel_tensor tmp = f32_tensor(c->act, t->cl.tmp, p, 1);

	return accel_op_elementwise(c->update_cb, TSR_VPU_MUL, &grad, &lr, NULL, &tmp) ?:
	       accel_op_elementwise(c->update_cb, TSR_VPU_SUB, &params, &tmp, NULL,
				    &params);
}

/* The chips to train on: this host's chips of the slice, or its first. */
static int open_chips(struct trainer *t)
{
	struct accel_device_info info;
	struct accel_slice s;
	unsigned int i;
	int ret;

	ret = accel_slice_get(&s);
	if (!ret && s.chips > 1 && t->o->chips == 1) {
		/* The table's plan needs a communicator, which waits for every
		 * neighbour of the chip: a chip of a slice is never alone. */
		fprintf(stderr, PROG ": --chips 1: a chip of a %u-chip slice cannot train alone; run it on a lone chip (tools/tessera-vm)\n",
			s.chips);
		return ACCEL_ERR_BAD_SHAPE;
	}
	if (ret || s.chips < 2) {
		t->n = t->size = 1;
		t->prints = 1;
		return open_device(0, &t->chip[0].dev, &info);
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
	return ACCEL_OK;
}

static int set_up_chip(struct trainer *t, struct chip *c, const float *params,
		       uint32_t test_rows)
{
	uint64_t p = (uint64_t)t->l->params * 4;
	float lr = t->o->lr;
	int ret;

	ret = accel_buffer_create(c->dev, p, ACCEL_PLACEMENT_HBM, &c->params) ?:
	      accel_buffer_create(c->dev, p + 4, ACCEL_PLACEMENT_HBM, &c->grad) ?:
	      accel_buffer_create(c->dev, t->cl.bytes, ACCEL_PLACEMENT_HBM, &c->act) ?:
	      accel_buffer_create(c->dev, accel_cross_entropy_scratch_size(t->rows, CLASSES),
				  ACCEL_PLACEMENT_HBM, &c->scratch) ?:
	      accel_buffer_create(c->dev, (uint64_t)test_rows * t->l->dim * 4,
				  ACCEL_PLACEMENT_HBM, &c->test_emb);
	if (ret)
		return fail("allocating the model's buffers", ret);
	ret = accel_buffer_upload(c->params, 0, params, p) ?:
	      accel_buffer_upload(c->act, t->cl.lr, &lr, sizeof(lr));
	if (ret)
		return fail("uploading the model", ret);
	ret = accel_cmdbuf_create(c->dev, &c->step_cb) ?:
	      accel_cmdbuf_create(c->dev, &c->update_cb);
	if (ret)
		return fail("creating command buffers", ret);
	ret = build_step(t, c);
	if (ret)
		return build_error("the dense layer's passes", c->step_cb, ret);
	ret = build_update(t, c);
	if (ret)
		return build_error("the update", c->update_cb, ret);
	return ACCEL_OK;
}

static void free_chip(struct chip *c)
{
	accel_cmdbuf_destroy(c->step_cb);
	accel_cmdbuf_destroy(c->update_cb);
	accel_buffer_destroy(c->params);
	accel_buffer_destroy(c->grad);
	accel_buffer_destroy(c->act);
	accel_buffer_destroy(c->scratch);
	accel_buffer_destroy(c->test_emb);
	accel_device_close(c->dev);
}

/* Run the step or update job on every local chip at once. */
static int run_everywhere(struct trainer *t, int update)
{
	struct accel_job *job[MAX_CHIPS] = { 0 };
	const char *what = update ? "the update" : "the dense layer's passes";
	unsigned int i;
	int ret = 0, r;

	for (i = 0; i < t->n && !ret; i++) {
		struct chip *c = &t->chip[i];

		ret = accel_submit(c->dev, update ? c->update_cb : c->step_cb,
				   NULL, &job[i]);
		if (ret)
			fail(what, ret);
	}
	for (i = 0; i < t->n && job[i]; i++) {
		r = accel_job_wait(job[i], WAIT_NS);
		accel_job_destroy(job[i]);
		if (r && !ret)
			ret = fail(what, r);
	}
	return ret;
}

/*
 * One step on the chips: the bags looked up, the dense layer's passes,
 * the all-reduce of its gradient, its update, the table's update.
 */
static int chip_step(struct trainer *t, const struct dataset *train,
		     const uint32_t *order, uint32_t first, float *loss)
{
	struct accel_embedding_batch batch[MAX_CHIPS];
	struct accel_tensor out[MAX_CHIPS], demb[MAX_CHIPS];
	struct accel_buffer *grad[MAX_CHIPS];
	unsigned int i;
	int ret = 0;

	for (i = 0; i < t->n && !ret; i++) {
		struct chip *c = &t->chip[i];
		struct bags *b = &t->bags[i];

		fill_bags(train, order, first + c->rank * t->rows, t->rows, b);
		batch[i] = (struct accel_embedding_batch){
			b->sample_ids, b->ids, NULL, t->rows * WINDOW, t->rows,
		};
		out[i] = f32_tensor(c->act, t->cl.emb, t->rows, t->l->dim);
		demb[i] = f32_tensor(c->act, t->cl.demb, t->rows, t->l->dim);
		grad[i] = c->grad;
		ret = accel_buffer_upload(c->act, t->cl.y, b->y,
					  (uint64_t)t->rows * CLASSES * 4);
	}
	if (ret)
		return fail("uploading the labels", ret);
	ret = accel_embedding_forward(t->emb, batch, out);
	if (ret)
		return fail("looking up the bags", ret);
	ret = run_everywhere(t, 0);
	if (ret)
		return ret;
	if (t->size > 1) {
		ret = accel_all_reduce(t->comm, grad, grad, t->l->params + 1,
				       TSR_DTYPE_F32, ACCEL_REDUCE_SUM, NULL);
		if (ret)
			return fail("the dense gradients' all-reduce", ret);
	}
	ret = run_everywhere(t, 1);
	if (ret)
		return ret;
	ret = accel_embedding_backward(t->emb, demb, -t->o->lr);
	if (ret)
		return fail("adding the gradient into the table", ret);
	ret = accel_buffer_download(t->chip[0].grad, (uint64_t)t->l->loss * 4, loss,
				    sizeof(*loss));
	if (ret)
		return fail("reading the loss", ret);
	return ACCEL_OK;
}

/*
 * The test accuracy: every chip looks up the whole test set (a forward
 * like a step's, so that every host takes part); host 0 applies the first
 * chip's dense layer to its rows.
 */
static int chip_eval(struct trainer *t, const struct dataset *test, float *acc)
{
	struct accel_embedding_batch batch[MAX_CHIPS];
	struct accel_tensor out[MAX_CHIPS];
	struct chip *c0 = &t->chip[0];
	unsigned int i;
	int ret;

	fill_bags(test, NULL, 0, test->n, &t->test_bags);
	for (i = 0; i < t->n; i++) {
		batch[i] = (struct accel_embedding_batch){
			t->test_bags.sample_ids, t->test_bags.ids, NULL,
			test->n * WINDOW, test->n,
		};
		out[i] = f32_tensor(t->chip[i].test_emb, 0, test->n, t->l->dim);
	}
	ret = accel_embedding_forward(t->emb, batch, out);
	if (ret)
		return fail("looking up the test set", ret);
	if (!t->prints)
		return ACCEL_OK;
	ret = accel_buffer_download(c0->test_emb, 0, t->host_rows,
				    (uint64_t)test->n * t->l->dim * 4) ?:
	      accel_buffer_download(c0->params, 0, t->host_params,
				    (uint64_t)t->l->params * 4);
	if (ret)
		return fail("reading the test set's rows", ret);
	*acc = accuracy(t->l, test, t->host_rows, t->host_params, t->logits);
	return ACCEL_OK;
}

static int set_up_chips(struct trainer *t, const struct data *d,
			const float *table, const float *params)
{
	struct accel_device *devs[MAX_CHIPS];
	struct accel_embedding_desc desc;
	uint32_t most;
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
	chip_lay_out(&t->cl, t->l, t->rows);
	most = t->rows > d->test.n ? t->rows : d->test.n;
	t->host_rows = malloc((size_t)d->test.n * t->l->dim * sizeof(float));
	t->host_params = malloc((size_t)t->l->params * sizeof(float));
	t->logits = malloc((size_t)d->test.n * CLASSES * sizeof(float));
	ret = bags_alloc(&t->test_bags, d->test.n);
	for (i = 0; i < t->n && !ret; i++)
		ret = bags_alloc(&t->bags[i], t->rows);
	if (ret || !t->host_rows || !t->host_params || !t->logits) {
		fprintf(stderr, PROG ": out of host memory\n");
		return ACCEL_ERR_NO_MEMORY;
	}
	for (i = 0; i < t->n; i++) {
		ret = set_up_chip(t, &t->chip[i], params, d->test.n);
		if (ret)
			return ret;
		devs[i] = t->chip[i].dev;
	}
	ret = accel_comm_create(devs, t->n, NULL, &t->comm);
	if (ret)
		return fail("connecting the slice's chips", ret);
	desc = (struct accel_embedding_desc){
		.size = sizeof(desc), .vocab = t->l->vocab, .dim = t->l->dim,
		.dtype = TSR_DTYPE_F32, .combiner = t->o->combiner,
		.max_samples = most, .max_ids = most * WINDOW,
	};
	ret = accel_embedding_create(t->comm, devs, t->n, &desc, &t->emb);
	if (ret)
		return fail("sharding the embedding table", ret);
	ret = accel_embedding_upload(t->emb, table);
	if (ret)
		return fail("uploading the embedding table", ret);
	return ACCEL_OK;
}

static void free_trainer(struct trainer *t)
{
	unsigned int i;

	accel_embedding_destroy(t->emb);
	accel_comm_destroy(t->comm);
	for (i = 0; i < t->n; i++) {
		free_chip(&t->chip[i]);
		bags_free(&t->bags[i]);
	}
	bags_free(&t->test_bags);
	free(t->host_rows);
	free(t->host_params);
	free(t->logits);
}

/* ------------------------------------------------------------ the run */

static int cpu_eval(struct cpu_model *test_model, const struct cpu_model *m,
		    const struct dataset *test, struct bags *b, float *acc)
{
	memcpy(test_model->table, m->table,
	       (size_t)m->l->vocab * m->l->dim * sizeof(float));
	fill_bags(test, NULL, 0, test->n, b);
	cpu_bags(test_model, b, test->n);
	*acc = accuracy(m->l, test, test_model->emb, m->params, test_model->z);
	return 0;
}

static int train(struct trainer *t, const struct data *d, struct cpu_model *cpu,
		 struct cpu_model *cpu_test, FILE *log)
{
	const struct options *o = t->o;
	uint32_t steps_per_epoch = d->train.n / o->batch;
	uint64_t total = (uint64_t)steps_per_epoch * o->epochs, step = 0;
	uint32_t *order = malloc(d->train.n * sizeof(*order));
	struct bags b = { 0 }, tb = { 0 };
	float acc = 0;
	uint32_t epoch;
	int ret = 0;

	if (o->steps && o->steps < total)
		total = o->steps;
	if (!order || (cpu && (bags_alloc(&b, o->batch) || bags_alloc(&tb, d->test.n)))) {
		fprintf(stderr, PROG ": out of memory for the batches\n");
		ret = -1;
		goto out;
	}
	for (epoch = 1; step < total && !ret; epoch++) {
		double t0 = now_s(), loss_sum = 0;
		uint32_t s, steps = 0;

		shuffle_order(order, d->train.n, o->seed, epoch);
		for (s = 0; s < steps_per_epoch && step < total && !ret; s++) {
			float loss;

			if (cpu) {
				fill_bags(&d->train, order, s * o->batch, o->batch, &b);
				loss = cpu_step(cpu, &b, o->batch, o->lr);
			} else {
				ret = chip_step(t, &d->train, order, s * o->batch, &loss);
				if (ret)
					break;
			}
			step++;
			steps++;
			loss_sum += loss;
			if (t->prints && log)
				fprintf(log, "step,%" PRIu64 ",%u,%.9g\n", step, epoch, loss);
			if (!isfinite(loss)) {
				fprintf(stderr, PROG ": step %" PRIu64 ": the loss is %g; try a smaller --lr\n",
					step, loss);
				ret = -1;
			}
		}
		if (ret)
			break;
		ret = cpu ? cpu_eval(cpu_test, cpu, &d->test, &tb, &acc) :
			    chip_eval(t, &d->test, &acc);
		if (ret || !t->prints)
			continue;
		printf("epoch %3u: loss %.4f, test accuracy %.1f%%, %u steps in %.2f s\n",
		       epoch, loss_sum / steps, acc, steps, now_s() - t0);
		if (log)
			fprintf(log, "epoch,%u,%.9g,%.2f,%.3f\n", epoch, loss_sum / steps,
				acc, now_s() - t0);
	}
	if (!ret && t->prints && o->target > 0 && acc < o->target) {
		fprintf(stderr, PROG ": test accuracy %.1f%% is below the target %.1f%%\n",
			acc, o->target);
		ret = -1;
	}
out:
	free(order);
	bags_free(&b);
	bags_free(&tb);
	return ret;
}

int main(int argc, char **argv)
{
	struct cpu_model cpu = { 0 }, cpu_test = { 0 };
	struct trainer t = { 0 };
	struct data d = { 0 };
	float *table = NULL, *params = NULL;
	struct layout l;
	struct options o;
	FILE *log = NULL;
	int status = EXIT_FAILURE;
	int ret = -1;

	if (parse_options(argc, argv, &o))
		return EXIT_USAGE;
	if (load_data(o.data, &d))
		return EXIT_FAILURE;
	lay_out(&l, o.dim, d.vocab);
	t.o = &o;
	t.l = &l;
	table = malloc((size_t)l.vocab * l.dim * sizeof(*table));
	params = malloc((size_t)l.params * sizeof(*params));
	if (!table || !params) {
		fprintf(stderr, PROG ": out of host memory\n");
		goto out;
	}
	init_model(&l, o.seed, table, params);
	if (o.cpu) {
		t.prints = 1;
		t.size = 1;
		if (cpu_alloc(&cpu, &l, o.combiner, o.batch) ||
		    cpu_alloc(&cpu_test, &l, o.combiner, d.test.n)) {
			fprintf(stderr, PROG ": out of host memory\n");
			goto out;
		}
		memcpy(cpu.table, table, (size_t)l.vocab * l.dim * sizeof(*table));
		memcpy(cpu.params, params, (size_t)l.params * sizeof(*params));
	} else {
		ret = set_up_chips(&t, &d, table, params);
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
		printf(PROG ": %u training and %u test windows of %u words (%s %s %s %s), vocabulary %u, %u -> %s bag -> %u, batch %u, lr %g, on %s%u chip%s\n",
		       d.train.n, d.test.n, WINDOW, class_names[0], class_names[1],
		       class_names[2], class_names[3], l.vocab, l.dim,
		       o.combiner == TSR_SC_SUM ? "sum" : "mean", CLASSES, o.batch,
		       o.lr, o.cpu ? "the CPU instead of " : "", t.size,
		       t.size > 1 ? "s" : "");
	ret = train(&t, &d, o.cpu ? &cpu : NULL, &cpu_test, log);
out:
	if (log && log != stdout)
		fclose(log);
	free_trainer(&t);
	cpu_free(&cpu);
	cpu_free(&cpu_test);
	free(table);
	free(params);
	free_data(&d);
	return ret ? status : EXIT_SUCCESS;
}
