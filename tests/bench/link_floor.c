// SPDX-License-Identifier: GPL-2.0
/*
 * link_floor: the least a link carried by a socket must do per byte on
 * this machine, beside a raw socket copy measured in the same run.
 *
 *   raw    4 MiB write()s into a UNIX stream socket between two processes,
 *          read() into a 4 MiB buffer: the reference `make bench` holds
 *          the ICI's wall bandwidth against (host_unix_socket_gbps)
 *   floor  the same bytes as ICI frames, with only the work no link over
 *          a socket can skip: the sender copies each chunk from its source
 *          into a frame (an ICI write is posted, so its source is free
 *          once the data has left, while the frame must stay until it is
 *          acknowledged, for replay), takes its CRC32C and writes it; the
 *          receiver reads 64 KiB at a time, checks each frame's CRC32C and
 *          copies the payload to its place (nothing unchecked reaches
 *          memory).  No acknowledgements, replay, threads or event loop.
 *
 * Prints "BENCH <name> <value> <unit>" lines: the best of --runs runs of
 * each, in turns.  The floor's ratio to raw is the most a socket link can
 * reach of the raw copy here, whatever its implementation.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tessera-link.h"

#define XFER		(4u << 20)	/* bytes per write, as ici_bench */
#define PASSES		64		/* 256 MiB a run */
#define HDR_SIZE	sizeof(struct tsr_ici_frame_hdr)
#define CRC_SIZE	sizeof(uint32_t)
#define CHUNK		TSR_ICI_MAX_PAYLOAD
#define FRAME		(HDR_SIZE + CHUNK + CRC_SIZE)
#define READ_SIZE	(64u << 10)	/* as QEMU's patched socket chardev */

_Static_assert(XFER % CHUNK == 0, "whole frames per transfer");

static void die(const char *what)
{
	fprintf(stderr, "link_floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("write");
		p += n;
		len -= n;
	}
}

static size_t read_some(int fd, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = read(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("read");
		return n;
	}
}

/* The receiving process: take PASSES transfers, then answer one byte. */
static void receive(int fd, bool framed)
{
	uint8_t *dst = malloc(XFER), *buf = malloc(READ_SIZE + FRAME);
	size_t left = (size_t)PASSES * XFER, have = 0, at = 0, off;

	if (!dst || !buf)
		die("malloc");
	memset(dst, 0, XFER);
	while (left) {
		if (!framed) {
			size_t n = read_some(fd, dst + at, XFER - at);

			at = (at + n) % XFER;
			left -= n;
			continue;
		}
		have += read_some(fd, buf + have, READ_SIZE);
		/* Whole frames where they lie; a cut one is gathered. */
		for (off = 0; have - off >= FRAME; off += FRAME) {
			const uint8_t *f = buf + off;
			uint32_t crc;

			memcpy(&crc, f + HDR_SIZE + CHUNK, CRC_SIZE);
			if (crc != tsr_crc32c(0, f + HDR_SIZE, CHUNK)) {
				errno = EBADMSG;
				die("CRC");
			}
			memcpy(dst + at, f + HDR_SIZE, CHUNK);
			at = (at + CHUNK) % XFER;
			left -= CHUNK;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	write_all(fd, "k", 1);
	exit(0);
}

/* One run: GB/s of payload from one process to another. */
static double run(bool framed, const uint8_t *src)
{
	static uint8_t frame[FRAME];
	struct tsr_ici_frame_hdr h = { .magic = TSR_ICI_FRAME_MAGIC,
				       .type = TSR_ICI_FRAME_DATA,
				       .len = CHUNK };
	unsigned int pass;
	double start, secs;
	int sv[2], status;
	pid_t pid;
	char k;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		close(sv[0]);
		receive(sv[1], framed);
	}
	close(sv[1]);
	start = now_s();
	for (pass = 0; pass < PASSES; pass++) {
		size_t off;

		if (!framed) {
			write_all(sv[0], src, XFER);
			continue;
		}
		for (off = 0; off < XFER; off += CHUNK) {
			uint32_t crc;

			h.seq++;
			memcpy(frame, &h, HDR_SIZE);
			memcpy(frame + HDR_SIZE, src + off, CHUNK);
			crc = tsr_crc32c(0, frame + HDR_SIZE, CHUNK);
			memcpy(frame + HDR_SIZE + CHUNK, &crc, CRC_SIZE);
			write_all(sv[0], frame, FRAME);
		}
	}
	if (read_some(sv[0], &k, 1) != 1)
		die("the receiver's answer");
	secs = now_s() - start;
	close(sv[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("the receiver");
	return (double)PASSES * XFER / secs / 1e9;
}

int main(int argc, char **argv)
{
	unsigned int runs = 3, i;
	double best_raw = 0, best_floor = 0;
	uint8_t *src = malloc(XFER);

	if (argc == 3 && !strcmp(argv[1], "--runs"))
		runs = strtoul(argv[2], NULL, 0);
	else if (argc != 1)
		runs = 0;
	if (!runs || runs > 100) {
		fprintf(stderr, "usage: link_floor [--runs 1..100]\n");
		return 2;
	}
	if (!src)
		die("malloc");
	for (i = 0; i < XFER; i++)
		src[i] = i * 2654435761u >> 13;
	for (i = 0; i < runs; i++) {
		double r = run(false, src), f = run(true, src);

		best_raw = r > best_raw ? r : best_raw;
		best_floor = f > best_floor ? f : best_floor;
	}
	printf("BENCH host_unix_socket_gbps %.3f GB/s\n", best_raw);
	printf("BENCH host_socket_link_floor_gbps %.3f GB/s\n", best_floor);
	printf("BENCH host_socket_link_floor_vs_raw_ratio %.3f x\n",
	       best_floor / best_raw);
	return 0;
}
