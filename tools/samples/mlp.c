// SPDX-License-Identifier: MIT
/*
 * mlp: inference of a small multilayer perceptron on a Tessera chip, the
 * whole network in one job built from the ops layer, checked against the
 * same network computed with the CPU reference.
 *
 *	input (batch x 784, bf16, system memory)
 *	-> dense 256, bias, GELU -> dense 128, bias, GELU -> dense 10, bias
 *	-> softmax (batch x 10, f32, system memory)
 *
 * The weights (bf16) and biases (f32) live in HBM, as a loaded model
 * would; the input stays in system memory, read by the first layer's
 * MXUs (accel_op_matmul() would stage it through the scratch buffer if
 * several tiles reused it); the hidden activations stay in HBM, in bf16
 * for the next layer's MXU.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

#define PROG		"mlp"
#include "sample.h"

#define LAYERS		3
#define CLASSES		10
#define SHOWN_ROWS	8
/* Offsets of tensors in a buffer: a multiple of every element size. */
#define ALIGN		256u

static const uint32_t widths[LAYERS + 1] = { 784, 256, 128, CLASSES };

static const char usage[] =
	"usage: " PROG " [OPTIONS]\n"
	"\n"
	"Run a multilayer perceptron, 784 -> 256 -> 128 -> 10 with softmax, on a\n"
	"batch of inputs on a Tessera chip: every layer (matmul, bias, activation)\n"
	"in one job built with the ops layer. Weights and inputs are\n"
	"pseudo-random from a seed. The probabilities are checked against the\n"
	"same network computed on the CPU.\n"
	"\n"
	"options:\n"
	"  -d, --device N        chip index (default 0)\n"
	"  -b, --batch N         inputs per batch, 1 to 65536 (default 64)\n"
	"  -a, --activation A    of the hidden layers: gelu (default) or relu\n"
	"  -s, --seed N          seed of the weights and inputs (default 1)\n"
	"  -i, --iterations N    run the job N times, report the best (default 3)\n"
	"  -h, --help            show this text\n"
	"\n"
	"Exit status: 0 verified, 1 failure (device error or wrong result),\n"
	"2 bad arguments.\n";

struct options {
	uint32_t device;
	uint32_t batch;
	enum tsr_vpu_op activation;
	uint32_t seed;
	uint32_t iterations;
};

/* Where one layer's tensors are: weights and bias, sums, activations. */
struct layer {
	uint32_t in, out;
	uint64_t weights, bias;		/* in the model buffer */
	uint64_t sums;			/* f32, batch x out, in the activations */
	uint64_t activations;		/* bf16, batch x out (hidden layers) */
};

struct network {
	struct layer layer[LAYERS];
	uint32_t batch;
	enum tsr_vpu_op activation;
	/* The model and the input on the host, as uploaded. */
	uint16_t *weights[LAYERS];
	float *bias[LAYERS];
	uint16_t *input;
	/* Device buffers: model and activations in HBM, input and output. */
	struct accel_buffer *model, *act, *io, *scratch;
	uint64_t model_bytes, act_bytes, io_bytes;
	uint64_t input_off, output_off;
};

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "batch", required_argument, NULL, 'b' },
		{ "activation", required_argument, NULL, 'a' },
		{ "seed", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	*o = (struct options){
		.batch = 64, .activation = TSR_VPU_GELU, .seed = 1, .iterations = 3,
	};
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "d:b:a:s:i:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			if (parse_u32("the device index", optarg, 0, 255, &o->device))
				return -1;
			break;
		case 'b':
			if (parse_u32("the batch size", optarg, 1, 65536, &o->batch))
				return -1;
			break;
		case 'a':
			if (!strcmp(optarg, "gelu"))
				o->activation = TSR_VPU_GELU;
			else if (!strcmp(optarg, "relu"))
				o->activation = TSR_VPU_RELU;
			else
				return usage_error("the activation must be 'gelu' or 'relu', not '%s'",
						   optarg);
			break;
		case 's':
			if (parse_u32("the seed", optarg, 1, UINT32_MAX, &o->seed))
				return -1;
			break;
		case 'i':
			if (parse_u32("the iteration count", optarg, 1, 1000, &o->iterations))
				return -1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(EXIT_SUCCESS);
		default:
			if (optopt && strchr("dbasi", optopt))
				return usage_error("%s needs a value", argv[optind - 1]);
			return unknown_option(argv[optind - 1], usage);
		}
	}
	if (optind < argc)
		return usage_error("unexpected operand '%s'", argv[optind]);
	return 0;
}

/* Pseudo-random, uniform in [lo, hi). */
static float uniform(uint32_t *state, float lo, float hi)
{
	return lo + (hi - lo) * (xorshift32(state) >> 8) / (float)(1u << 24);
}

static uint64_t align(uint64_t v)
{
	return (v + ALIGN - 1) / ALIGN * ALIGN;
}

/* Lay the tensors out in the model, activation and input/output buffers. */
static void lay_out(struct network *net)
{
	uint64_t model = 0, act = 0;
	unsigned int l;

	for (l = 0; l < LAYERS; l++) {
		struct layer *ly = &net->layer[l];

		ly->in = widths[l];
		ly->out = widths[l + 1];
		ly->weights = model;
		model = align(model + (uint64_t)ly->in * ly->out * 2);
		ly->bias = model;
		model = align(model + (uint64_t)ly->out * 4);
		ly->sums = act;
		act = align(act + (uint64_t)net->batch * ly->out * 4);
		ly->activations = act;
		if (l < LAYERS - 1)
			act = align(act + (uint64_t)net->batch * ly->out * 2);
	}
	net->input_off = 0;
	net->output_off = align((uint64_t)net->batch * widths[0] * 2);
	net->model_bytes = model;
	net->act_bytes = act;
	net->io_bytes = net->output_off + (uint64_t)net->batch * CLASSES * 4;
}

/* Glorot-uniform weights, small biases, inputs in [0, 1) like pixels. */
static int make_model(struct network *net, uint32_t seed)
{
	unsigned int l;
	uint64_t i;

	for (l = 0; l < LAYERS; l++) {
		const struct layer *ly = &net->layer[l];
		float s = sqrtf(6.0f / (ly->in + ly->out));

		net->weights[l] = malloc((uint64_t)ly->in * ly->out * 2);
		net->bias[l] = malloc((uint64_t)ly->out * 4);
		if (!net->weights[l] || !net->bias[l])
			return -1;
		for (i = 0; i < (uint64_t)ly->in * ly->out; i++)
			net->weights[l][i] = accel_f32_to_bf16(uniform(&seed, -s, s));
		for (i = 0; i < ly->out; i++)
			net->bias[l][i] = uniform(&seed, -0.1f, 0.1f);
	}
	net->input = malloc((uint64_t)net->batch * widths[0] * 2);
	if (!net->input)
		return -1;
	for (i = 0; i < (uint64_t)net->batch * widths[0]; i++)
		net->input[i] = accel_f32_to_bf16(uniform(&seed, 0.0f, 1.0f));
	return 0;
}

static int upload(struct network *net)
{
	unsigned int l;
	int ret = 0;

	for (l = 0; l < LAYERS && !ret; l++) {
		const struct layer *ly = &net->layer[l];

		ret = accel_buffer_upload(net->model, ly->weights, net->weights[l],
					  (uint64_t)ly->in * ly->out * 2);
		if (!ret)
			ret = accel_buffer_upload(net->model, ly->bias, net->bias[l],
						  (uint64_t)ly->out * 4);
	}
	if (!ret)
		ret = accel_buffer_upload(net->io, net->input_off, net->input,
					  (uint64_t)net->batch * widths[0] * 2);
	return ret;
}

/*
 * Scratch for the softmax's row maxima and sums, and for staging the
 * input through HBM should layer 1's matmul find that it pays; the ops
 * run one after the other in the job, so they share it.  The budget for
 * the input is rounded up to a page, as the op aligns its scratch areas.
 */
static uint64_t scratch_bytes(const struct network *net, uint32_t mxu_dim)
{
	struct accel_matmul_shape shape = {
		.m = net->batch, .n = widths[1], .k = widths[0],
		.in_dtype = TSR_DTYPE_BF16, .out_dtype = TSR_DTYPE_F32,
		.stage = ACCEL_STAGE_A, .mxu_dim = mxu_dim,
	};
	uint64_t softmax = accel_softmax_scratch_size(net->batch, CLASSES);
	struct accel_matmul_plan plan;

	if (accel_matmul_plan(&shape, page_up((uint64_t)net->batch * widths[0] * 2), &plan))
		plan.scratch_bytes = 0;
	return plan.scratch_bytes > softmax ? plan.scratch_bytes : softmax;
}

static int create_buffers(struct accel_device *dev, struct network *net,
			  uint32_t mxu_dim)
{
	int ret;

	ret = accel_buffer_create(dev, net->model_bytes, ACCEL_PLACEMENT_HBM, &net->model);
	if (!ret)
		ret = accel_buffer_create(dev, net->act_bytes, ACCEL_PLACEMENT_HBM, &net->act);
	if (!ret)
		ret = accel_buffer_create(dev, net->io_bytes, ACCEL_PLACEMENT_HOST, &net->io);
	if (!ret)
		ret = accel_buffer_create(dev, scratch_bytes(net, mxu_dim),
					  ACCEL_PLACEMENT_HBM, &net->scratch);
	if (ret) {
		fprintf(stderr, PROG ": cannot allocate the network's buffers: %s; try a smaller --batch\n",
			accel_error_string(ret));
		return ret;
	}
	ret = upload(net);
	if (ret)
		fprintf(stderr, PROG ": cannot upload the model and input: %s\n",
			accel_error_string(ret));
	return ret;
}

static struct accel_tensor tensor(struct accel_buffer *buf, uint64_t offset,
				  uint32_t rows, uint32_t cols, enum tsr_dtype dtype)
{
	return (struct accel_tensor){ buf, offset, rows, cols, 0, dtype };
}

/* One layer: sums = in x W + bias, then the activation or the softmax. */
static int build_layer(struct accel_cmdbuf *cb, const struct network *net,
		       unsigned int l)
{
	const struct layer *ly = &net->layer[l];
	struct accel_tensor in = l ? tensor(net->act, net->layer[l - 1].activations,
					    net->batch, ly->in, TSR_DTYPE_BF16) :
				     tensor(net->io, net->input_off, net->batch,
					    ly->in, TSR_DTYPE_BF16);
	struct accel_tensor w = tensor(net->model, ly->weights, ly->in, ly->out,
				       TSR_DTYPE_BF16);
	struct accel_tensor bias = tensor(net->model, ly->bias, 1, ly->out,
					  TSR_DTYPE_F32);
	struct accel_tensor sums = tensor(net->act, ly->sums, net->batch, ly->out,
					  TSR_DTYPE_F32);
	struct accel_tensor act = tensor(net->act, ly->activations, net->batch,
					 ly->out, TSR_DTYPE_BF16);
	struct accel_tensor probs = tensor(net->io, net->output_off, net->batch,
					   CLASSES, TSR_DTYPE_F32);

	/* The bias is one row, broadcast down the batch; added in place. */
	return accel_op_matmul(cb, net->scratch, &in, &w, &sums, 0) ?:
	       accel_op_elementwise(cb, TSR_VPU_ADD, &sums, &bias, NULL, &sums) ?:
	       (l < LAYERS - 1 ?
		accel_op_elementwise(cb, net->activation, &sums, NULL, NULL, &act) :
		accel_op_softmax(cb, net->scratch, &sums, &probs));
}

/*
 * The same network with the CPU reference, step for step as on the chip:
 * f32 sums of bf16 products, the bias, the activation rounded to bf16
 * (as the VPU writes it), the softmax in f32.  Fills @probs.
 */
static int reference(const struct network *net, float *probs)
{
	float *x = widen(net->input, (uint64_t)net->batch * widths[0]);
	float *w = NULL, *sums = NULL;
	unsigned int l;
	uint64_t i, n;
	int ret = -1;

	for (l = 0; l < LAYERS && x; l++) {
		const struct layer *ly = &net->layer[l];

		n = (uint64_t)net->batch * ly->out;
		w = widen(net->weights[l], (uint64_t)ly->in * ly->out);
		sums = malloc(n * sizeof(*sums));
		if (!w || !sums)
			goto out;
		accel_ref_matmul(x, w, sums, net->batch, ly->out, ly->in, 0);
		accel_ref_elementwise(TSR_VPU_ADD, sums, net->bias[l], NULL, 1, ly->out,
				      sums, net->batch, ly->out);
		if (l == LAYERS - 1) {
			accel_ref_softmax(sums, net->batch, ly->out, probs);
			ret = 0;
			goto out;
		}
		accel_ref_elementwise(net->activation, sums, NULL, NULL, 0, 0, sums,
				      net->batch, ly->out);
		for (i = 0; i < n; i++)
			sums[i] = accel_bf16_to_f32(accel_f32_to_bf16(sums[i]));
		free(x);
		free(w);
		x = sums;
		w = sums = NULL;
	}
out:
	free(x);
	free(w);
	free(sums);
	return ret;
}

static unsigned int argmax(const float *row)
{
	unsigned int j, best = 0;

	for (j = 1; j < CLASSES; j++)
		if (row[j] > row[best])
			best = j;
	return best;
}

/*
 * Tolerance, relative to the largest probability: the chip's f32 sums
 * differ from the reference's double ones by about 1e-7; exp, tanh and
 * the division by a few units in the last place of f32.  A hidden
 * activation that close to the midpoint between two bf16 values is
 * rounded apart on the two sides, by one bf16 unit (2^-8 of it, about
 * 2e-3), which the next layer's weights (|w| < 0.21) shrink to under 5e-4
 * of a logit, and the softmax to less in a probability.  1e-3 covers such
 * a rounding; a wrong layer moves the probabilities by their own size.
 */
#define TOLERANCE	1e-3f

static int verify(const struct network *net, const float *got)
{
	uint64_t count = (uint64_t)net->batch * CLASSES, i;
	float *want = malloc(count * sizeof(*want));
	float max_err = 0;
	size_t bad;
	int ok;

	if (!want || reference(net, want)) {
		fprintf(stderr, PROG ": out of host memory for the CPU reference\n");
		free(want);
		return -1;
	}
	for (i = 0; i < net->batch && i < SHOWN_ROWS; i++) {
		unsigned int c = argmax(got + i * CLASSES), r = argmax(want + i * CLASSES);

		printf("input %" PRIu64 ": class %u (p %.3f); CPU: class %u (p %.3f)\n", i,
		       c, got[i * CLASSES + c], r, want[i * CLASSES + r]);
	}
	for (i = 0; i < count; i++)
		max_err = fmaxf(max_err, fabsf(got[i] - want[i]));
	ok = accel_ref_compare(got, want, count, TOLERANCE, &bad);
	if (ok)
		printf(PROG ": ok, max error %.3g (tolerance %.3g)\n", max_err, TOLERANCE);
	else
		fprintf(stderr, PROG ": input %zu, class %zu: probability %g, the CPU says %g (tolerance %.3g)\n",
			bad / CLASSES, bad % CLASSES, got[bad], want[bad], TOLERANCE);
	free(want);
	return ok ? 0 : -1;
}

static void free_network(struct network *net)
{
	unsigned int l;

	accel_buffer_destroy(net->scratch);
	accel_buffer_destroy(net->io);
	accel_buffer_destroy(net->act);
	accel_buffer_destroy(net->model);
	for (l = 0; l < LAYERS; l++) {
		free(net->weights[l]);
		free(net->bias[l]);
	}
	free(net->input);
}

static void print_timing(const struct network *net, const struct accel_device_info *info,
			 uint32_t iterations, const struct timing *t)
{
	const struct accel_job_status *st = &t->status;
	double modeled_s = (st->end_cycle - st->start_cycle) / (info->clock_mhz * 1e6);

	printf("wall: best of %u %.3f ms, %.0f inferences/s\n", iterations,
	       t->wall_s * 1e3, net->batch / t->wall_s);
	printf("modeled: %.2f us, %.0f inferences/s, %" PRIu64 " cycles at %u MHz (MXUs %"
	       PRIu64 ", VPU %" PRIu64 ", DMA %" PRIu64 ")\n", modeled_s * 1e6,
	       net->batch / modeled_s, st->end_cycle - st->start_cycle, info->clock_mhz,
	       st->mxu_cycles, st->vpu_cycles, st->dma_cycles);
}

int main(int argc, char **argv)
{
	struct network net = { 0 };
	struct accel_device_info info;
	struct accel_device *dev;
	struct accel_cmdbuf *cb = NULL;
	struct options o;
	struct timing t;
	float *probs = NULL;
	unsigned int l;
	int ret;

	if (parse_options(argc, argv, &o))
		return EXIT_USAGE;
	net.batch = o.batch;
	net.activation = o.activation;
	lay_out(&net);

	if (open_device(o.device, &dev, &info))
		return EXIT_FAILURE;
	printf(PROG ": batch of %u, 784 -> 256 -> 128 -> 10, %s, softmax, on device %u\n",
	       net.batch, o.activation == TSR_VPU_GELU ? "GELU" : "ReLU", o.device);

	ret = -1;
	probs = malloc((uint64_t)net.batch * CLASSES * sizeof(*probs));
	if (!probs || make_model(&net, o.seed)) {
		fprintf(stderr, PROG ": out of host memory for the model\n");
		goto out;
	}
	ret = create_buffers(dev, &net, info.mxu_dim);
	if (!ret)
		ret = accel_cmdbuf_create(dev, &cb);
	if (ret)
		goto out;
	for (l = 0; l < LAYERS; l++) {
		ret = build_layer(cb, &net, l);
		if (ret) {
			fprintf(stderr, PROG ": layer %u: %s\n", l + 1,
				accel_cmdbuf_last_error(cb));
			goto out;
		}
	}
	printf("job: %u commands for %u layers\n", accel_cmdbuf_count(cb), LAYERS);

	ret = run(dev, cb, o.iterations, &t);
	if (ret)
		goto out;
	print_timing(&net, &info, o.iterations, &t);
	ret = accel_buffer_download(net.io, net.output_off, probs,
				    (uint64_t)net.batch * CLASSES * sizeof(*probs));
	if (ret) {
		fprintf(stderr, PROG ": cannot download the probabilities: %s\n",
			accel_error_string(ret));
		goto out;
	}
	ret = verify(&net, probs);
out:
	accel_cmdbuf_destroy(cb);
	free_network(&net);
	free(probs);
	accel_device_close(dev);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
