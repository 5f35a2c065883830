// SPDX-License-Identifier: GPL-2.0
/*
 * The programs users start from, run as users run them: the samples
 * (hello, matmul, mlp), the tutorial's code (Documentation/tutorial.md)
 * and the programs built outside the tree against the installed library
 * (tests/install/).  Each test checks a program's exit status and what it
 * prints.  The programs are found on PATH (/tessera/bin in the guest).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <accel/accel.h>

/* A matmul with its check on the CPU takes seconds in an emulated VM. */
#define PROGRAM_TIMEOUT_S	300

/* The whole of @f, NUL-terminated; "" if it cannot be read. */
static char *read_all(FILE *f)
{
	long size = -1;
	char *s;

	if (f && !fseek(f, 0, SEEK_END))
		size = ftell(f);
	if (size < 0 || fseek(f, 0, SEEK_SET))
		return strdup("");
	s = calloc(1, size + 1);
	if (s && fread(s, 1, size, f) != (size_t)size)
		s[0] = '\0';
	return s ? s : strdup("");
}

FIXTURE(program) {
	int status;	/* exit status, or 128 + the signal that ended it */
	char *out;	/* what it wrote to stdout */
	char *err;	/* ... and to stderr */
};

FIXTURE_SETUP(program)
{
	self->status = -1;
}

FIXTURE_TEARDOWN(program)
{
	free(self->out);
	free(self->err);
}

/* Run @argv (searched on PATH) to its end; its output goes into @self. */
static int run_program(FIXTURE_DATA(program) *self, const char *const argv[])
{
	FILE *out = tmpfile(), *err = tmpfile();
	int status, ret = -1;
	pid_t pid;

	if (!out || !err)
		goto close;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(fileno(out), STDOUT_FILENO);
		dup2(fileno(err), STDERR_FILENO);
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		goto close;
	self->status = WIFEXITED(status) ? WEXITSTATUS(status) :
		       128 + WTERMSIG(status);
	free(self->out);
	free(self->err);
	self->out = read_all(out);
	self->err = read_all(err);
	ret = 0;
close:
	if (out)
		fclose(out);
	if (err)
		fclose(err);
	return ret;
}

#define RUN(...) \
	ASSERT_EQ(0, run_program(self, (const char *const[]){ __VA_ARGS__, NULL }))

/* On failure, show what the program printed. */
#define OUTPUT	TH_LOG("exit status %d\nstdout:\n%s\nstderr:\n%s", self->status, \
		       self->out, self->err)

#define EXPECT_STATUS(want) EXPECT_EQ(want, self->status) OUTPUT
#define EXPECT_OUT(text) EXPECT_NE(NULL, strstr(self->out, text)) OUTPUT
#define EXPECT_ERR(text) EXPECT_NE(NULL, strstr(self->err, text)) OUTPUT

/* Exit status 2, @message and where to look on stderr, nothing on stdout. */
#define EXPECT_USAGE_ERROR(program, message) do { \
	EXPECT_STATUS(2); \
	EXPECT_ERR(message); \
	EXPECT_ERR("see '" program " --help'"); \
	EXPECT_STREQ("", self->out) OUTPUT; \
} while (0)

/* ------------------------------------------------------------ hello */

TEST_F_TIMEOUT(program, hello_lists_every_device, PROGRAM_TIMEOUT_S)
{
	unsigned int count = 0, i;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&count));
	ASSERT_LE(1, count);
	RUN("hello");
	EXPECT_STATUS(0);
	for (i = 0; i < count; i++) {
		struct accel_device_info info;
		struct accel_device *dev;
		char line[128];

		ASSERT_EQ(ACCEL_OK, accel_device_open(i, &dev));
		ASSERT_EQ(ACCEL_OK, accel_device_get_info(dev, &info));
		accel_device_close(dev);
		snprintf(line, sizeof(line), "Tessera device %u (/dev/accel/accel%u, PCI %s)\n",
			 i, info.minor, info.pci_address);
		EXPECT_OUT(line);
	}
	EXPECT_OUT(accel_version_string());
}

/* ------------------------------------------------------------ matmul */

/* The modeled throughput and the peak matmul printed, in TFLOP/s. */
static int modeled_tflops(const char *out, double *tflops, double *peak)
{
	const char *line = strstr(out, "\nmodeled: ");

	return line && sscanf(line, "\nmodeled: %lf TFLOP/s of %lf peak", tflops,
			      peak) == 2 ? 0 : -1;
}

TEST_F_TIMEOUT(program, matmul_in_hbm_is_verified_and_near_the_peak,
	       PROGRAM_TIMEOUT_S)
{
	struct accel_device_info info;
	struct accel_device *dev;
	double tflops, peak, want_peak;

	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &dev));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(dev, &info));
	accel_device_close(dev);
	want_peak = 2.0 * info.tensorcores * info.mxus_per_core * info.mxu_dim *
		    info.mxu_dim * info.clock_mhz * 1e6 / 1e12;

	RUN("matmul");
	EXPECT_STATUS(0);
	EXPECT_OUT("C[1024x1024] f32 = A[1024x1024] bf16 x B[1024x1024] bf16, operands in HBM\n");
	EXPECT_OUT("GFLOP/s\n");
	EXPECT_OUT("\nverified: ");
	ASSERT_EQ(0, modeled_tflops(self->out, &tflops, &peak)) OUTPUT;
	EXPECT_LT(fabs(peak - want_peak), 0.05) OUTPUT;
	/* A 1024-cube in HBM keeps the MXUs busy but for launch and drain. */
	EXPECT_LE(tflops, peak) OUTPUT;
	EXPECT_LT(0.8 * peak, tflops) OUTPUT;
}

TEST_F_TIMEOUT(program, matmul_in_host_memory_is_read_in_place_and_verified,
	       PROGRAM_TIMEOUT_S)
{
	/* One tile: staging would copy what the MXUs read once anyway. */
	RUN("matmul", "--placement", "host");
	EXPECT_STATUS(0);
	EXPECT_OUT("operands in system memory\n");
	EXPECT_OUT("nothing staged\n");
	EXPECT_OUT("job: 1 command\n");
	EXPECT_OUT("\nverified: ");
}

TEST_F_TIMEOUT(program, matmul_in_host_memory_is_staged_when_asked_and_verified,
	       PROGRAM_TIMEOUT_S)
{
	RUN("matmul", "--placement", "host", "--stage");
	EXPECT_STATUS(0);
	EXPECT_OUT(" MiB of HBM scratch: A B C\n");
	EXPECT_OUT("job: 4 commands\n");
	EXPECT_OUT("\nverified: ");
}

TEST_F_TIMEOUT(program, matmul_of_a_size_off_the_mxu_grid_is_verified_in_hbm,
	       PROGRAM_TIMEOUT_S)
{
	RUN("matmul", "--check-rows", "all", "300", "200", "500");
	EXPECT_STATUS(0);
	EXPECT_OUT("C[300x200] f32 = A[300x500] bf16 x B[500x200] bf16, operands in HBM\n");
	EXPECT_OUT("\nverified: 300 of 300 rows");
}

TEST_F_TIMEOUT(program, matmul_of_a_size_off_the_mxu_grid_is_verified_in_host_memory,
	       PROGRAM_TIMEOUT_S)
{
	RUN("matmul", "--placement", "host", "--check-rows", "all", "300", "200", "500");
	EXPECT_STATUS(0);
	EXPECT_OUT("operands in system memory\n");
	EXPECT_OUT("\nverified: 300 of 300 rows");
}

TEST_F_TIMEOUT(program, matmul_tiles_through_a_scratch_smaller_than_its_operands,
	       PROGRAM_TIMEOUT_S)
{
	RUN("matmul", "--placement", "host", "--stage", "--scratch", "1",
	    "--check-rows", "8", "1000", "700", "900");
	EXPECT_STATUS(0);
	EXPECT_OUT("\nplan: ");
	EXPECT_EQ(NULL, strstr(self->out, "plan: 1 x 1 x 1 tiles")) OUTPUT;
	EXPECT_OUT("\nverified: 8 of 1000 rows");
}

TEST_F_TIMEOUT(program, matmul_runs_on_every_chip, PROGRAM_TIMEOUT_S)
{
	unsigned int count = 0, i;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&count));
	for (i = 0; i < count; i++) {
		char index[16];

		snprintf(index, sizeof(index), "%u", i);
		RUN("matmul", "--device", index, "256");
		EXPECT_STATUS(0);
		EXPECT_OUT("\nverified: ");
	}
	RUN("matmul", "--device", "200", "256");
	EXPECT_STATUS(1);
	EXPECT_ERR("cannot open Tessera device 200");
}

TEST_F_TIMEOUT(program, matmul_help_exits_0, PROGRAM_TIMEOUT_S)
{
	RUN("matmul", "--help");
	EXPECT_STATUS(0);
	EXPECT_OUT("usage: matmul");
	EXPECT_STREQ("", self->err);
}

TEST_F_TIMEOUT(program, matmul_bad_arguments_exit_2_naming_the_problem,
	       PROGRAM_TIMEOUT_S)
{
	static const struct {
		const char *argv[6];
		const char *message;
	} cases[] = {
		{ { "matmul", "0", "16", "16" }, "M must be a whole number" },
		{ { "matmul", "16", "16", "1x" }, "K must be a whole number" },
		{ { "matmul", "16", "16", "-3" }, "sizes are whole numbers from 1, not '-3'" },
		{ { "matmul", "16", "16" }, "give M N K" },
		{ { "matmul", "x" }, "not 'x'" },
		{ { "matmul", "--placement", "gpu" }, "'hbm' or 'host'" },
		{ { "matmul", "--iterations", "0" }, "iteration count" },
		{ { "matmul", "--scratch", "4" }, "--scratch goes with --placement host" },
		{ { "matmul", "--stage" }, "--stage goes with --placement host" },
		{ { "matmul", "--bogus" }, "unknown option '--bogus'" },
		{ { "matmul", "--device" }, "--device needs a value" },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		ASSERT_EQ(0, run_program(self, cases[i].argv));
		EXPECT_USAGE_ERROR("matmul", cases[i].message);
	}
}

/* ------------------------------------------------------------ mlp */

TEST_F_TIMEOUT(program, mlp_matches_the_cpu_reference, PROGRAM_TIMEOUT_S)
{
	RUN("mlp");
	EXPECT_STATUS(0);
	EXPECT_OUT("\ninput 0: class ");
	EXPECT_OUT("\nmlp: ok, max error ");
}

TEST_F_TIMEOUT(program, mlp_with_relu_matches_the_cpu_reference, PROGRAM_TIMEOUT_S)
{
	RUN("mlp", "--activation", "relu", "--batch", "100", "--seed", "7");
	EXPECT_STATUS(0);
	EXPECT_OUT("batch of 100, 784 -> 256 -> 128 -> 10, ReLU");
	EXPECT_OUT("\nmlp: ok, max error ");
}

TEST_F_TIMEOUT(program, mlp_bad_arguments_exit_2_naming_the_problem,
	       PROGRAM_TIMEOUT_S)
{
	RUN("mlp", "--batch", "0");
	EXPECT_USAGE_ERROR("mlp", "the batch size must be a whole number");
	RUN("mlp", "--activation", "tanh");
	EXPECT_USAGE_ERROR("mlp", "'gelu' or 'relu', not 'tanh'");
}

/* ------------------------------------------------------------ tutorial */

TEST_F_TIMEOUT(program, tutorial_runs_to_the_end, PROGRAM_TIMEOUT_S)
{
	RUN("tutorial");
	EXPECT_STATUS(0);
	/* Its deliberate mistakes, reported as the text explains. */
	EXPECT_OUT("the builder said: vpu: ");
	EXPECT_OUT("the job failed: MMU_UNMAPPED at command 1");
	EXPECT_OUT("\ntutorial: ok\n");
}

/* ------------------------------------------------------------ installed library */

TEST_F_TIMEOUT(program, consumer_runs_on_the_installed_shared_library,
	       PROGRAM_TIMEOUT_S)
{
	char line[64];

	snprintf(line, sizeof(line), "consumer: ok (libaccel %s, shared)\n",
		 accel_version_string());
	RUN("consumer");
	EXPECT_STATUS(0);
	EXPECT_STREQ(line, self->out) OUTPUT;
}

TEST_F_TIMEOUT(program, consumer_static_runs_on_the_installed_archive,
	       PROGRAM_TIMEOUT_S)
{
	char line[64];

	snprintf(line, sizeof(line), "consumer: ok (libaccel %s, static)\n",
		 accel_version_string());
	RUN("consumer-static");
	EXPECT_STATUS(0);
	EXPECT_STREQ(line, self->out) OUTPUT;
}

TEST_HARNESS_MAIN
