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
 *   ring   the same frames through a shared-memory ring (tessera-ring.c,
 *          as large as a port's), its doorbells on the socket as a port
 *          rings them, only when the other side sleeps: the sender copies
 *          each chunk from its source into the ring behind its header, the
 *          receiver copies each payload from where it lies to its place.
 *          No CRC (a ring cannot damage a frame): two copies, the floor of
 *          a link on rings
 *   memcpy the same bytes copied from one buffer to another in one
 *          process (host_memcpy_gbps), the reference the ICI's wall figure
 *          is held to on rings (vm_ici_wall_vs_memcpy_ratio)
 *   tcp    raw and floor again over a TCP connection on 127.0.0.1
 *          (TCP_NODELAY, as a port's chardev has it): the reference the
 *          wall figure of ICI over TCP is held to
 *          (host_tcp_socket_gbps, vm_ici_tcp_wall_vs_socket_ratio)
 *
 * Prints "BENCH <name> <value> <unit>" lines: the best of --runs runs of
 * each, in turns.  A floor's ratio to its reference is the most a link of
 * that transport can reach of it here, whatever its implementation.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
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
#include "tessera-ring.h"

#define XFER		(4u << 20)	/* bytes per write, as ici_bench */
#define PASSES		64		/* 256 MiB a run */
#define HDR_SIZE	sizeof(struct tsr_ici_frame_hdr)
#define CRC_SIZE	sizeof(uint32_t)
#define CHUNK		TSR_ICI_MAX_PAYLOAD
#define FRAME		(HDR_SIZE + CHUNK + CRC_SIZE)
#define READ_SIZE	(64u << 10)	/* as QEMU's patched socket chardev */
#define RING_SIZE	(2u << 20)	/* as a port's (TESSERA_RING_SIZE) */

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

/*
 * Two connected stream sockets: a UNIX socket pair, or with @tcp the two
 * ends of a TCP connection on 127.0.0.1, without Nagle.
 */
static void stream_pair(bool tcp, int sv[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int one = 1, lfd;

	if (!tcp) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			die("socketpair");
		return;
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(lfd, 1) || getsockname(lfd, (struct sockaddr *)&a, &len))
		die("TCP listener");
	sv[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (sv[0] < 0 || connect(sv[0], (struct sockaddr *)&a, sizeof(a)))
		die("TCP connect");
	sv[1] = accept(lfd, NULL, NULL);
	if (sv[1] < 0)
		die("TCP accept");
	close(lfd);
	if (setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		die("TCP_NODELAY");
}

/* One run: GB/s of payload from one process to another. */
static double run(bool framed, bool tcp, const uint8_t *src)
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

	stream_pair(tcp, sv);
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

/* Wait for the other side's doorbell; skip what it rang before. */
static char wait_bell(int bell)
{
	char b;

	if (read_some(bell, &b, 1) != 1)
		die("doorbell");
	return b;
}

/* Into the ring, ringing the consumer if it sleeps, waiting for room. */
static void ring_put(TsrRing *r, int bell, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		size_t n = tsr_ring_write(r, p, len);

		p += n;
		len -= n;
		if (tsr_ring_data_doorbell(r))
			write_all(bell, "D", 1);
		if (tsr_ring_broken(r)) {
			errno = EPROTO;
			die("ring");
		}
		if (len && !n && !tsr_ring_wait_room(r))
			wait_bell(bell);
	}
}

/*
 * The receiving process of a ring: each payload copied from where it lies
 * to its place as its bytes come, a header checked once whole.
 */
static void ring_receive(TsrRing *r, int bell)
{
	static const size_t part_len[3] = { HDR_SIZE, CHUNK, CRC_SIZE };
	struct tsr_ici_frame_hdr h;
	uint8_t *dst = malloc(XFER);
	size_t left = (size_t)PASSES * XFER, at = 0, avail;
	/* Where the frame being read is: its byte @in, of @part (0-2). */
	size_t in = 0, part = 0;

	if (!dst)
		die("malloc");
	memset(dst, 0, XFER);
	while (left) {
		const uint8_t *start = tsr_ring_peek(r, &avail), *p = start;
		size_t n;

		if (!start) {
			errno = EPROTO;
			die("ring");
		}
		if (!avail) {
			if (!tsr_ring_wait_data(r))
				wait_bell(bell);
			continue;
		}
		for (; avail; p += n, avail -= n) {
			n = part_len[part] - in < avail ? part_len[part] - in : avail;
			if (part == 0)
				memcpy((uint8_t *)&h + in, p, n);
			else if (part == 1)
				memcpy(dst + at + in, p, n);
			in += n;
			if (in < part_len[part])
				continue;
			if (part == 0 && (h.magic != TSR_ICI_FRAME_MAGIC ||
					  h.len != CHUNK)) {
				errno = EBADMSG;
				die("frame");
			}
			if (part == 1) {
				at = (at + CHUNK) % XFER;
				left -= CHUNK;
			}
			part = (part + 1) % 3;
			in = 0;
		}
		tsr_ring_consume(r, p - start);
		if (tsr_ring_room_doorbell(r))
			write_all(bell, "R", 1);
	}
	write_all(bell, "k", 1);
	exit(0);
}

/* One run of the ring: GB/s of payload from one process to another. */
static double run_ring(const uint8_t *src)
{
	struct tsr_ici_frame_hdr h = { .magic = TSR_ICI_FRAME_MAGIC,
				       .type = TSR_ICI_FRAME_DATA,
				       .len = CHUNK };
	uint32_t no_crc = 0;
	unsigned int pass;
	double start, secs;
	int sv[2], fd, status;
	const char *why;
	TsrRing *tx;
	pid_t pid;

	tx = tsr_ring_create(RING_SIZE, &fd);
	if (!tx || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("ring");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		TsrRing *rx = tsr_ring_open(dup(fd), RING_SIZE, &why);

		if (!rx) {
			fprintf(stderr, "link_floor: the ring: %s\n", why);
			exit(1);
		}
		close(sv[0]);
		ring_receive(rx, sv[1]);
	}
	close(sv[1]);
	start = now_s();
	for (pass = 0; pass < PASSES; pass++) {
		size_t off;

		for (off = 0; off < XFER; off += CHUNK) {
			h.seq++;
			ring_put(tx, sv[0], &h, HDR_SIZE);
			ring_put(tx, sv[0], src + off, CHUNK);
			ring_put(tx, sv[0], &no_crc, CRC_SIZE);
		}
	}
	while (wait_bell(sv[0]) != 'k')
		;
	secs = now_s() - start;
	close(sv[0]);
	tsr_ring_free(tx);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("the receiver");
	return (double)PASSES * XFER / secs / 1e9;
}

/* One run of memcpy: GB/s of the same bytes, buffer to buffer. */
static double run_memcpy(const uint8_t *src)
{
	uint8_t *dst = malloc(XFER);
	unsigned int pass;
	double start, secs;

	if (!dst)
		die("malloc");
	memset(dst, 0, XFER);
	start = now_s();
	for (pass = 0; pass < PASSES; pass++) {
		memcpy(dst, src, XFER);
		/* Keep the copy from being elided. */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	secs = now_s() - start;
	free(dst);
	return (double)PASSES * XFER / secs / 1e9;
}

static double best(double a, double b)
{
	return a > b ? a : b;
}

int main(int argc, char **argv)
{
	unsigned int runs = 3, i;
	double best_raw = 0, best_floor = 0, best_ring = 0, best_memcpy = 0;
	double best_tcp_raw = 0, best_tcp_floor = 0;
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
		best_raw = best(best_raw, run(false, false, src));
		best_floor = best(best_floor, run(true, false, src));
		best_tcp_raw = best(best_tcp_raw, run(false, true, src));
		best_tcp_floor = best(best_tcp_floor, run(true, true, src));
		best_ring = best(best_ring, run_ring(src));
		best_memcpy = best(best_memcpy, run_memcpy(src));
	}
	printf("BENCH host_unix_socket_gbps %.3f GB/s\n", best_raw);
	printf("BENCH host_socket_link_floor_gbps %.3f GB/s\n", best_floor);
	printf("BENCH host_socket_link_floor_vs_raw_ratio %.3f x\n",
	       best_floor / best_raw);
	printf("BENCH host_tcp_socket_gbps %.3f GB/s\n", best_tcp_raw);
	printf("BENCH host_tcp_link_floor_gbps %.3f GB/s\n", best_tcp_floor);
	printf("BENCH host_tcp_link_floor_vs_raw_ratio %.3f x\n",
	       best_tcp_floor / best_tcp_raw);
	printf("BENCH host_memcpy_gbps %.3f GB/s\n", best_memcpy);
	printf("BENCH host_ring_link_floor_gbps %.3f GB/s\n", best_ring);
	printf("BENCH host_ring_link_floor_vs_memcpy_ratio %.3f x\n",
	       best_ring / best_memcpy);
	return 0;
}
