/* SPDX-License-Identifier: MIT */
/*
 * libaccel ICI: the chip-to-chip links, windows and remote writes.
 *
 * Chips of a slice are wired by ICI links into a 1-, 2- or 3-dimensional
 * torus or mesh (Documentation/ici.md).  A chip names another by its
 * coordinates in the slice.  A device context lets other chips reach one
 * of its buffers by opening a window on it: an id and a key, which the
 * writers name in their ICI_WRITE commands.  The target checks every
 * write against its windows; a write can end by adding to a semaphore in
 * the window, which a job there waits on with SEM_WAIT.
 *
 * Link states (TSR_ICI_STATE_*), ports (TSR_ICI_PORT()) and the ICI_WRITE
 * flags (TSR_ICI_WRITE_SEM) are the chip's own, from <tessera/chip.h>.
 *
 * Thread safety: windows may be opened and closed from several threads
 * at once; one window handle is closed once, by one thread.
 */
#ifndef ACCEL_ICI_H
#define ACCEL_ICI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tessera/chip.h>

#include <accel/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_device;
struct accel_buffer;
struct accel_cmdbuf;
struct accel_window;

/** struct accel_coords - a chip's place in its slice: x, y, z */
struct accel_coords {
	uint8_t c[TSR_ICI_MAX_DIMS];
};

/**
 * accel_coords_from_index() - the coordinates of the chip at @index of a
 * slice of @topology chips along x, y and z (accel_device_info.topology;
 * each 1 to 255).  Chips are numbered x + X * (y + Y * z).
 *
 * ACCEL_ERR_INVALID_ARGUMENT for a bad topology or an index past the last
 * chip.
 */
ACCEL_API int accel_coords_from_index(const uint32_t topology[TSR_ICI_MAX_DIMS],
				      uint32_t index,
				      struct accel_coords *coords);

/** accel_coords_to_index() - the index of the chip at @coords. */
ACCEL_API int accel_coords_to_index(const uint32_t topology[TSR_ICI_MAX_DIMS],
				    struct accel_coords coords,
				    uint32_t *index);

/**
 * accel_coords_in_slice() - whether @coords name a chip of a slice of
 * @topology; false for a bad topology.
 */
ACCEL_API bool accel_coords_in_slice(const uint32_t topology[TSR_ICI_MAX_DIMS],
				     struct accel_coords coords);

/**
 * struct accel_ici_port - one ICI port of a chip
 * @state: the link state, TSR_ICI_STATE_*; DISCONNECTED for a port
 *	without a socket
 * @peer_slice: the slice id the peer gave when the link trained
 * @peer: the peer's coordinates, once the link has trained
 * @peer_port: the peer's port at the other end of the link
 *
 * The peer fields are zero until the peer has been heard: they are
 * meaningful in the states UP, MISWIRED (whom the peer claims to be),
 * FOREIGN, and DOWN after the link was up.
 */
struct accel_ici_port {
	uint32_t state;
	uint32_t peer_slice;
	struct accel_coords peer;
	uint8_t peer_port;
};

/**
 * struct accel_link_info - one port and its link layer's counters
 * @port: its state and peer, as in accel_device_info.ports[]
 * @frames_tx: frames sent, resent ones included
 * @frames_rx: frames received
 * @bytes_tx: wire bytes sent (headers, payloads, CRCs)
 * @bytes_rx: wire bytes received
 * @crc_errors: frames received that failed a CRC
 * @seq_errors: data frames received out of order or twice
 * @naks: NAKs received
 * @replays: frames sent more than once
 * @timeouts: retransmit timers that fired
 * @credit_stalls: times the sender waited for the receiver's credit
 * @link_downs: times the retry limit took the link down
 * @protocol_errors: frames no correct peer sends
 * @tail_probes: tail-loss probes (TAIL frames) sent
 * @tail_losses: tail-loss probes the peer answered with a NAK: a lost
 *	frame found without waiting for the retransmit timer
 *
 * The counters are the chip's (Documentation/ici.md, "Counters, per
 * port"), since the link was wired; zero for a port without a socket.
 */
struct accel_link_info {
	struct accel_ici_port port;
	uint64_t frames_tx;
	uint64_t frames_rx;
	uint64_t bytes_tx;
	uint64_t bytes_rx;
	uint64_t crc_errors;
	uint64_t seq_errors;
	uint64_t naks;
	uint64_t replays;
	uint64_t timeouts;
	uint64_t credit_stalls;
	uint64_t link_downs;
	uint64_t protocol_errors;
	/* Later than the rest: a caller built before gets those alone. */
	uint64_t tail_probes;
	uint64_t tail_losses;
};

/**
 * accel_link_get_info() - the state, peer and counters of port @port
 * (0 to accel_device_info.ici_ports - 1).
 *
 * A macro that passes the size of @info, so that a program built against
 * this header keeps working with a later library whose struct is larger.
 * ACCEL_ERR_INVALID_ARGUMENT for a port the chip does not have.
 */
#define accel_link_get_info(dev, port, info) \
	accel_link_get_info_sized((dev), (port), (info), sizeof(*(info)))

ACCEL_API int accel_link_get_info_sized(struct accel_device *dev,
					unsigned int port,
					struct accel_link_info *info,
					size_t size);

/**
 * accel_link_state_name() - "disconnected", "training", "up", "miswired",
 * "foreign" or "down" for a TSR_ICI_STATE_*; "unknown" otherwise.
 */
ACCEL_API const char *accel_link_state_name(uint32_t state);

/* What peers may do with a window: accel_window_open()'s @access. */
#define ACCEL_WINDOW_READ	0x1u
#define ACCEL_WINDOW_WRITE	0x2u

/* Bits of accel_window_opts.flags. */
/** Open the window with accel_window_opts.id rather than the lowest free. */
#define ACCEL_WINDOW_FIXED_ID	0x4u
/** Give it accel_window_opts.key rather than a random key. */
#define ACCEL_WINDOW_FIXED_KEY	0x8u

/**
 * struct accel_window_opts - a window's id and key chosen by the caller,
 * so that processes on different chips agree on them before they can
 * talk; all zero is the lowest free id and a random key
 * @flags: ACCEL_WINDOW_FIXED_ID, ACCEL_WINDOW_FIXED_KEY
 * @id: with ACCEL_WINDOW_FIXED_ID, below accel_device_info.max_windows
 * @key: with ACCEL_WINDOW_FIXED_KEY, not 0
 */
struct accel_window_opts {
	uint32_t flags;
	uint32_t id;
	uint64_t key;
};

/**
 * accel_window_open() - let other chips of the slice write bytes
 * @offset to @offset + @size of @buf.
 * @access: ACCEL_WINDOW_WRITE and/or ACCEL_WINDOW_READ, not 0
 * @opts: NULL, or a fixed id and/or key
 * @win: the new window; close it with accel_window_close()
 *
 * The window holds a reference on @buf and stays open until closed;
 * close it before its device handle.  ACCEL_ERR_OUT_OF_BOUNDS unless the
 * range lies in @buf; ACCEL_ERR_BUSY if the fixed id is open already, or
 * no window is free (the chip's or, per handle, the driver's limit);
 * ACCEL_ERR_NOT_SUPPORTED on a chip without ICI.
 */
ACCEL_API int accel_window_open(struct accel_device *dev,
				struct accel_buffer *buf, uint64_t offset,
				uint64_t size, uint32_t access,
				const struct accel_window_opts *opts,
				struct accel_window **win);

/**
 * accel_window_close() - close a window; NULL is allowed.  Once it
 * returns, no remote write reaches the buffer through it.
 */
ACCEL_API void accel_window_close(struct accel_window *win);

/** accel_window_id() - the id writers name; 0 for NULL. */
ACCEL_API uint32_t accel_window_id(const struct accel_window *win);

/** accel_window_key() - the key writers name; 0 for NULL. */
ACCEL_API uint64_t accel_window_key(const struct accel_window *win);

/**
 * accel_window_device_va() - the window's first byte in its device's
 * address space, as local commands (SEM_WAIT) name it; 0 for NULL.
 */
ACCEL_API uint64_t accel_window_device_va(const struct accel_window *win);

/**
 * struct accel_ici_write - what an ICI_WRITE command sends, and where
 * @dst: the target chip
 * @window: the target's window id
 * @key: that window's key
 * @src_buffer: the buffer holding the data, or NULL to give a raw device
 *	VA in @src_offset
 * @src_offset: bytes from the start of @src_buffer to the first byte, or
 *	the VA
 * @src_stride: bytes from one source row to the next (unused for one row)
 * @offset: where the first byte lands, from the start of the window
 * @dst_stride: bytes from one row to the next in the window (unused for
 *	one row)
 * @rows: rows to send
 * @row_bytes: bytes per row; @rows and @row_bytes both 0 with
 *	TSR_ICI_WRITE_SEM is the semaphore increment alone
 * @flags: TSR_ICI_WRITE_SEM: add @sem_add to the semaphore once all the
 *	data is there; TSR_ICI_WRITE_MINUS: where both ways round a ring are
 *	equally short (the two links between the chips of a ring of 2), go
 *	the minus way
 * @sem_offset: with TSR_ICI_WRITE_SEM, the 64-bit semaphore in the
 *	window, 8-aligned; else 0
 * @sem_add: with TSR_ICI_WRITE_SEM, the value added; else 0
 */
struct accel_ici_write {
	struct accel_coords dst;
	uint32_t window;
	uint64_t key;
	struct accel_buffer *src_buffer;
	uint64_t src_offset;
	uint64_t src_stride;
	uint64_t offset;
	uint64_t dst_stride;
	uint32_t rows;
	uint32_t row_bytes;
	uint32_t flags;
	uint64_t sem_offset;
	uint64_t sem_add;
};

/**
 * accel_cmdbuf_ici_write() - ICI_WRITE: copy rows to a window of another
 * chip (or of this one), then optionally add to a semaphore there.
 *
 * Checked as the other builder calls (<accel/cmdbuf.h>): the shape, the
 * strides (at least a row when there are several rows), the semaphore's
 * alignment, at most 4 GiB, a window id below 256 (the windows a chip
 * has), and, for a command buffer of a device, that @w->dst is in its
 * slice (ACCEL_ERR_NO_ROUTE).  The source buffer is recorded as read.
 * What only the target knows (the window open, the key, the range inside
 * it) fails the job with ACCEL_ERR_REMOTE_ACCESS.
 */
ACCEL_API int accel_cmdbuf_ici_write(struct accel_cmdbuf *cb,
				     const struct accel_ici_write *w);

/**
 * accel_cmdbuf_ici_sem_inc() - ICI_WRITE of no data: add @add to the
 * semaphore at @sem_offset (8-aligned) of window @window of chip @dst.
 */
ACCEL_API int accel_cmdbuf_ici_sem_inc(struct accel_cmdbuf *cb,
				       struct accel_coords dst,
				       uint32_t window, uint64_t key,
				       uint64_t sem_offset, uint64_t add);

/* Chips of one slice a host can have: the VM's devices. */
#define ACCEL_SLICE_MAX_LOCAL 16

/**
 * struct accel_slice_chip - a chip of the slice on this host
 * @device: its index for accel_device_open()
 * @index: its index in the slice, x + X * (y + Y * z)
 * @coords: its coordinates
 */
struct accel_slice_chip {
	unsigned int device;
	uint32_t index;
	struct accel_coords coords;
};

/**
 * struct accel_slice - the slice this host's chips belong to
 * @slice_id: the slice's identity
 * @topology: chips along x, y and z
 * @wrap: bit d set: dimension d wraps around
 * @chips: chips in the whole slice
 * @local_count: entries in @local
 * @local: the chips on this host, by slice index
 */
struct accel_slice {
	uint32_t slice_id;
	uint32_t topology[TSR_ICI_MAX_DIMS];
	uint32_t wrap;
	uint32_t chips;
	unsigned int local_count;
	struct accel_slice_chip local[ACCEL_SLICE_MAX_LOCAL];
};

/**
 * accel_slice_get() - the slice of this host's chips, so that a program
 * finds the slice and its own chips without a launcher's help
 *
 * A macro that passes the size of @slice (see accel_link_get_info()).
 * ACCEL_ERR_NO_DEVICE without Tessera chips; ACCEL_ERR_INVALID_ARGUMENT
 * when the chips do not agree on the slice (their slice ids or topologies
 * differ, or two claim the same place).
 */
#define accel_slice_get(slice) \
	accel_slice_get_sized((slice), sizeof(*(slice)))

ACCEL_API int accel_slice_get_sized(struct accel_slice *slice, size_t size);

/**
 * accel_device_open_coords() - open this host's chip at @coords of its
 * slice.  ACCEL_ERR_NO_DEVICE when no chip here sits there.
 */
ACCEL_API int accel_device_open_coords(struct accel_coords coords,
				       struct accel_device **dev);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ICI_H */
