// SPDX-License-Identifier: MIT
/*
 * consumer: a program built outside the Tessera tree against an installed
 * libaccel (tests/install/Makefile).  It multiplies two small matrices on
 * the first chip, checks the product against the CPU reference and prints
 * "consumer: ok" with the library's version.
 */
#include <stdio.h>
#include <stdlib.h>

#include <accel/accel.h>

#define M 96
#define N 80
#define K 112

static int fail(const char *what, int ret)
{
	fprintf(stderr, "consumer: %s: %s\n", what, accel_error_string(ret));
	return EXIT_FAILURE;
}

int main(void)
{
	static float a[M * K], b[K * N], c[M * N], want[M * N];
	struct accel_buffer *ba, *bb, *bc;
	struct accel_device *dev;
	struct accel_cmdbuf *cb;
	struct accel_job *job;
	int ret, i;

	for (i = 0; i < M * K; i++)
		a[i] = (float)((i * 7) % 13) - 6.0f;
	for (i = 0; i < K * N; i++)
		b[i] = (float)((i * 5) % 11) * 0.25f;
	ret = accel_device_open(0, &dev);
	if (ret)
		return fail("open device 0", ret);
	ret = accel_buffer_create(dev, sizeof(a), ACCEL_PLACEMENT_HOST, &ba);
	if (!ret)
		ret = accel_buffer_create(dev, sizeof(b), ACCEL_PLACEMENT_HOST, &bb);
	if (!ret)
		ret = accel_buffer_create(dev, sizeof(c), ACCEL_PLACEMENT_HOST, &bc);
	if (ret)
		return fail("create buffers", ret);
	ret = accel_buffer_upload(ba, 0, a, sizeof(a));
	if (!ret)
		ret = accel_buffer_upload(bb, 0, b, sizeof(b));
	if (ret)
		return fail("upload", ret);

	ret = accel_cmdbuf_create(dev, &cb);
	if (ret)
		return fail("create command buffer", ret);
	ret = accel_op_matmul(cb, NULL,
			      &(struct accel_tensor){ ba, 0, M, K, 0, TSR_DTYPE_F32 },
			      &(struct accel_tensor){ bb, 0, K, N, 0, TSR_DTYPE_F32 },
			      &(struct accel_tensor){ bc, 0, M, N, 0, TSR_DTYPE_F32 },
			      0);
	if (ret) {
		fprintf(stderr, "consumer: matmul: %s\n", accel_cmdbuf_last_error(cb));
		return EXIT_FAILURE;
	}
	ret = accel_submit(dev, cb, NULL, &job);
	if (!ret)
		ret = accel_job_wait(job, ACCEL_TIMEOUT_INFINITE);
	if (ret)
		return fail("run the job", ret);
	ret = accel_buffer_download(bc, 0, c, sizeof(c));
	if (ret)
		return fail("download", ret);
	accel_ref_matmul(a, b, want, M, N, K, 0);
	if (!accel_ref_compare(c, want, M * N, 1e-5f, NULL)) {
		fprintf(stderr, "consumer: the chip's product differs from the CPU reference\n");
		return EXIT_FAILURE;
	}

	accel_job_destroy(job);
	accel_cmdbuf_destroy(cb);
	accel_buffer_destroy(bc);
	accel_buffer_destroy(bb);
	accel_buffer_destroy(ba);
	accel_device_close(dev);
#ifdef CONSUMER_STATIC
	printf("consumer: ok (libaccel %s, static)\n", accel_version_string());
#else
	printf("consumer: ok (libaccel %s, shared)\n", accel_version_string());
#endif
	return EXIT_SUCCESS;
}
