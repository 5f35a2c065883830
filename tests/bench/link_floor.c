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
 *          (host_tcp_socket_gbps, vm_ici_tcp_wall_vs_socket_ratio); and
 *          the floor under three other designs, each adding one to the
 *          one before, to say which lifts it:
 *            batched      frames kept as the link keeps them (header,
 *                         payload, CRC apart) and sent BATCH at a time
 *                         by one writev(), read 256 KiB at a time
 *            from_source  the payload written from its source, no copy
 *                         into a frame (the source then held until the
 *                         frame is acknowledged: an ICI write no longer
 *                         posted)
 *            intact       no CRC32C at either end (TCP's own checksum
 *                         trusted, as a ring is)
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
#include <sys/uio.h>
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
#define BIG_READ	(256u << 10)	/* the batched designs' reads */
#define BATCH		8		/* frames a writev() (256 KiB) */
#define RING_SIZE	(2u << 20)	/* as a port's (TESSERA_RING_SIZE) */

_Static_assert(XFER % CHUNK == 0, "whole frames per transfer");
_Static_assert(XFER % (BATCH * CHUNK) == 0, "whole batches per transfer");

/* What one run of a socket does per frame. */
struct design {
	bool framed;		/* ICI frames, not a raw copy */
	unsigned int batch;	/* frames a writev() */
	bool copy;		/* the payload copied into a kept frame */
	bool crc;		/* CRC32C taken and checked */
	size_t read_size;	/* bytes a read() at most */
};

static const struct design raw_copy = { .read_size = XFER };
static const struct design floor_now = {
	.framed = true, .batch = 1, .copy = true, .crc = true,
	.read_size = READ_SIZE,
};
static const struct design floor_batched = {
	.framed = true, .batch = BATCH, .copy = true, .crc = true,
	.read_size = BIG_READ,
};
static const struct design floor_from_source = {
	.framed = true, .batch = BATCH, .crc = true, .read_size = BIG_READ,
};
static const struct design floor_intact = {
	.framed = true, .batch = BATCH, .read_size = BIG_READ,
};

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

/* All of @iov, resuming a partial writev() where it stopped. */
static void writev_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		ssize_t n = writev(fd, iov, cnt);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("writev");
		for (; cnt && (size_t)n >= iov->iov_len; iov++, cnt--)
			n -= iov->iov_len;
		if (cnt) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= n;
		}
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
static void receive(int fd, const struct design *d)
{
	uint8_t *dst = malloc(XFER), *buf = malloc(d->read_size + FRAME);
	size_t left = (size_t)PASSES * XFER, have = 0, at = 0, off;

	if (!dst || !buf)
		die("malloc");
	memset(dst, 0, XFER);
	while (left) {
		if (!d->framed) {
			size_t n = read_some(fd, dst + at, XFER - at);

			at = (at + n) % XFER;
			left -= n;
			continue;
		}
		have += read_some(fd, buf + have, d->read_size);
		/* Whole frames where they lie; a cut one is gathered. */
		for (off = 0; have - off >= FRAME; off += FRAME) {
			const uint8_t *f = buf + off;
			uint32_t crc;

			memcpy(&crc, f + HDR_SIZE + CHUNK, CRC_SIZE);
			if (d->crc && crc != tsr_crc32c(0, f + HDR_SIZE, CHUNK)) {
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

/*
 * BATCH frames from @src + @off, as design @d sends them: built in @frames
 * (header, payload when copied, CRC, apart as the link keeps them), then
 * one writev() of @d->batch frames at a time.
 */
static void send_frames(int fd, const struct design *d, const uint8_t *src,
			struct tsr_ici_frame_hdr *h, uint8_t (*frames)[FRAME])
{
	struct iovec iov[3 * BATCH];
	unsigned int i, n = 0;

	for (i = 0; i < BATCH; i++) {
		uint8_t *f = frames[i];
		const uint8_t *payload = src + (size_t)i * CHUNK;
		uint32_t crc = 0;

		h->seq++;
		memcpy(f, h, HDR_SIZE);
		if (d->copy) {
			memcpy(f + HDR_SIZE, payload, CHUNK);
			payload = f + HDR_SIZE;
		}
		if (d->crc)
			crc = tsr_crc32c(0, payload, CHUNK);
		memcpy(f + HDR_SIZE + CHUNK, &crc, CRC_SIZE);
		iov[n++] = (struct iovec){ f, HDR_SIZE };
		iov[n++] = (struct iovec){ (void *)payload, CHUNK };
		iov[n++] = (struct iovec){ f + HDR_SIZE + CHUNK, CRC_SIZE };
		if ((i + 1) % d->batch == 0) {
			writev_all(fd, iov, n);
			n = 0;
		}
	}
}

/* One run: GB/s of payload from one process to another. */
static double run(const struct design *d, bool tcp, const uint8_t *src)
{
	static uint8_t frames[BATCH][FRAME];
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
		receive(sv[1], d);
	}
	close(sv[1]);
	start = now_s();
	for (pass = 0; pass < PASSES; pass++) {
		size_t off;

		if (!d->framed) {
			write_all(sv[0], src, XFER);
			continue;
		}
		for (off = 0; off < XFER; off += BATCH * CHUNK)
			send_frames(sv[0], d, src + off, &h, frames);
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

/* A floor's lines: its GB/s and its ratio to @raw. */
static void print_floor(const char *name, double gbps, double raw)
{
	printf("BENCH %s_gbps %.3f GB/s\n", name, gbps);
	printf("BENCH %s_vs_raw_ratio %.3f x\n", name, gbps / raw);
}

int main(int argc, char **argv)
{
	unsigned int runs = 3, i;
	double best_raw = 0, best_floor = 0, best_ring = 0, best_memcpy = 0;
	double best_tcp_raw = 0, best_tcp_floor = 0, best_tcp_batched = 0;
	double best_tcp_from_source = 0, best_tcp_intact = 0;
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
		best_raw = best(best_raw, run(&raw_copy, false, src));
		best_floor = best(best_floor, run(&floor_now, false, src));
		best_tcp_raw = best(best_tcp_raw, run(&raw_copy, true, src));
		best_tcp_floor = best(best_tcp_floor,
				      run(&floor_now, true, src));
		best_tcp_batched = best(best_tcp_batched,
					run(&floor_batched, true, src));
		best_tcp_from_source = best(best_tcp_from_source,
					    run(&floor_from_source, true, src));
		best_tcp_intact = best(best_tcp_intact,
				       run(&floor_intact, true, src));
		best_ring = best(best_ring, run_ring(src));
		best_memcpy = best(best_memcpy, run_memcpy(src));
	}
	printf("BENCH host_unix_socket_gbps %.3f GB/s\n", best_raw);
	print_floor("host_socket_link_floor", best_floor, best_raw);
	printf("BENCH host_tcp_socket_gbps %.3f GB/s\n", best_tcp_raw);
	print_floor("host_tcp_link_floor", best_tcp_floor, best_tcp_raw);
	print_floor("host_tcp_link_floor_batched", best_tcp_batched,
		    best_tcp_raw);
	print_floor("host_tcp_link_floor_from_source", best_tcp_from_source,
		    best_tcp_raw);
	print_floor("host_tcp_link_floor_intact", best_tcp_intact,
		    best_tcp_raw);
	printf("BENCH host_memcpy_gbps %.3f GB/s\n", best_memcpy);
	printf("BENCH host_ring_link_floor_gbps %.3f GB/s\n", best_ring);
	printf("BENCH host_ring_link_floor_vs_memcpy_ratio %.3f x\n",
	       best_ring / best_memcpy);
	return 0;
}
