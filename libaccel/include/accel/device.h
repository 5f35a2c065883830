/* SPDX-License-Identifier: MIT */
/*
 * libaccel devices: finding, opening and querying Tessera chips.
 *
 * A struct accel_device is a handle to one open chip, and one device
 * context on it: an address space of its own, its own buffers and jobs.
 * Handles are independent of each other.  One handle may be used from
 * several threads at once: every call that takes it is thread-safe (the
 * few objects a call takes besides it say what they allow).
 */
#ifndef ACCEL_DEVICE_H
#define ACCEL_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include <accel/common.h>
#include <accel/ici.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_device;

/** Length of a PCI address "dddd:bb:dd.f" with its NUL. */
#define ACCEL_PCI_ADDRESS_LEN 16
/** Length of the driver name buffer. */
#define ACCEL_DRIVER_NAME_LEN 32

/**
 * struct accel_device_info - identity and versions of an open chip
 *
 * Fields are only ever added at the end; accel_device_get_info() fills
 * as much of the struct as the program was built with.
 */
struct accel_device_info {
	unsigned int index;		/* position among Tessera devices */
	unsigned int minor;		/* N in /dev/accel/accelN */
	char pci_address[ACCEL_PCI_ADDRESS_LEN];
	uint16_t pci_vendor;
	uint16_t pci_device;
	uint8_t pci_revision;
	uint32_t chip_id;		/* TSR_CHIP_ID on a Tessera chip */
	uint16_t device_version_major;	/* device model version */
	uint16_t device_version_minor;
	uint32_t caps;			/* chip capability bits */
	uint32_t msix_vectors;		/* MSI-X vectors the driver enabled */
	uint64_t irq_count;		/* device interrupts handled so far */
	char driver_name[ACCEL_DRIVER_NAME_LEN];
	int driver_major;		/* kernel driver version: the uapi's */
	int driver_minor;
	int driver_patch;
	/*
	 * Was uapi_version (the driver interfaces 2 to 6), now 0: the
	 * interface's version is the driver's, driver_major.driver_minor.
	 */
	uint32_t reserved0;
	/* The chip's configuration (Documentation/chip.md, "Presets"). */
	uint32_t preset;		/* TSR_PRESET_* */
	uint32_t tensorcores;
	uint32_t mxus_per_core;
	uint32_t mxu_dim;
	uint32_t vpu_sublanes;
	uint32_t vpu_lanes;
	uint32_t vmem_mib;
	uint32_t clock_mhz;
	uint32_t hbm_gbps;
	uint32_t host_dma_gbps;
	uint32_t num_queues;		/* valid accel_submit_opts.queue: 0 ... - 1 */
	uint64_t hbm_size;		/* bytes */
	uint64_t hbm_free;		/* bytes no buffer holds */
	uint32_t context_id;		/* this handle's device context */
	uint32_t max_contexts;		/* device contexts the chip has */
	uint64_t peak_bf16_flops;	/* 2 x cores x MXUs x dim^2 x clock */
	/* Links to other chips (ICI) and the slice they form. */
	uint32_t ici_ports;
	uint32_t ici_link_gbps;		/* per link, one way */
	uint32_t slice_chips;		/* chips in the slice; 1 unlinked */
	uint32_t slice_index;		/* this chip's place in it */
	uint32_t topology[3];		/* the slice's torus, chips per axis */
	uint32_t coords[3];		/* this chip's place in the torus */
	/* Since libaccel 0.3. */
	uint32_t slice_id;		/* the slice's identity */
	uint32_t wrap;			/* bit d: dimension d wraps around */
	uint32_t ports_wired;		/* bit p: port p has a socket */
	uint32_t max_windows;		/* window ids: 0 ... max_windows - 1 */
	uint32_t ici_link_latency_ns;	/* modeled latency of one hop */
	struct accel_ici_port ports[TSR_ICI_MAX_PORTS];	/* ici_ports used */
	/*
	 * The SparseCores (Documentation/chip.md, "SparseCore"): all zero on
	 * a chip without them.
	 */
	uint32_t sparsecores;
	uint32_t sc_tiles;		/* per SparseCore */
	uint32_t sc_simd_f32;		/* SIMD lanes of a tile */
	uint32_t sc_simd_bf16;
	uint32_t sc_spmem_kib;		/* SPMEM per SparseCore */
};

/**
 * struct accel_device_counters - the chip's and the driver's counters
 *
 * Since the driver loaded (chip counters restart at a chip reset).  Busy
 * cycles and the clock are modeled cycles of the timing model
 * (Documentation/chip.md, "Timing model").  Fields are only ever added at
 * the end, as in struct accel_device_info.
 */
struct accel_device_counters {
	/* The chip's. */
	uint64_t mxu_busy_cycles;
	uint64_t vpu_busy_cycles;
	uint64_t dma_busy_cycles;
	uint64_t chip_jobs;
	uint64_t chip_commands;
	uint64_t hbm_read_bytes;
	uint64_t hbm_write_bytes;
	uint64_t clock_cycles;		/* the modeled device clock */
	/* The driver's. */
	uint64_t jobs_submitted;
	uint64_t jobs_completed;
	uint64_t jobs_failed;
	uint64_t mmu_faults;
	uint64_t ecc_correctable;
	uint64_t ecc_uncorrectable;
	uint64_t timeouts;
	uint64_t lost_irqs;
	uint64_t queue_resets;
	uint64_t device_resets;
	uint64_t fatal_errors;
	uint64_t banned_contexts;
	/* Since libaccel 0.3. */
	uint64_t remote_access_refused;	/* writes this chip's windows refused */
	uint64_t link_downs;		/* ports seen going down */
	uint64_t link_ups;		/* ports seen coming up */
	/* The chip's. */
	uint64_t sc_busy_cycles;	/* SparseCore busy cycles */
};

/** accel_device_count() - number of Tessera devices on this system. */
ACCEL_API int accel_device_count(unsigned int *count);

/**
 * accel_device_open() - open the @index-th Tessera device.
 *
 * Devices are numbered from 0 in the order of their /dev/accel/accelN
 * nodes, counting Tessera devices only.
 */
ACCEL_API int accel_device_open(unsigned int index, struct accel_device **dev);

/** accel_device_open_pci() - open the Tessera device at a PCI address. */
ACCEL_API int accel_device_open_pci(const char *pci_address,
				    struct accel_device **dev);

/**
 * accel_device_close() - close a handle; NULL is allowed.  Close its
 * windows and destroy its buffers, command buffers and jobs first.
 */
ACCEL_API void accel_device_close(struct accel_device *dev);

/**
 * accel_device_trim() - free what a handle keeps for reuse: the device
 * copies of command buffers that are gone (a handle keeps up to 16, so
 * that submitting does not allocate a buffer per job).  Memory the device
 * file accounts for (its fdinfo) then is the caller's buffers only.
 */
ACCEL_API void accel_device_trim(struct accel_device *dev);

/** accel_device_fd() - the DRM file descriptor behind a handle. */
ACCEL_API int accel_device_fd(const struct accel_device *dev);

/**
 * accel_device_get_info() - identity, versions, configuration, slice and
 * ports.
 *
 * A macro that passes the size of @info: a program keeps working with a
 * later library whose struct is larger, and a program built against an
 * older header (whose calls reach the function of this name) gets the
 * fields it knows.
 */
#define accel_device_get_info(dev, info) \
	accel_device_get_info_sized((dev), (info), sizeof(*(info)))

ACCEL_API int accel_device_get_info_sized(struct accel_device *dev,
					  struct accel_device_info *info,
					  size_t size);

/**
 * accel_device_get_counters() - the chip's and the driver's counters, as
 * sysfs has them (Documentation/driver.md, "sysfs").
 */
#define accel_device_get_counters(dev, counters) \
	accel_device_get_counters_sized((dev), (counters), sizeof(*(counters)))

ACCEL_API int accel_device_get_counters_sized(struct accel_device *dev,
					      struct accel_device_counters *counters,
					      size_t size);

/** accel_preset_name() - "v2" ... "v6e" for a TSR_PRESET_*; else "custom". */
ACCEL_API const char *accel_preset_name(uint32_t preset);

/** Longest wait accel_device_ping() takes, and its default. */
#define ACCEL_PING_MAX_TIMEOUT_MS	60000
#define ACCEL_PING_DEFAULT_TIMEOUT_MS	1000

/**
 * accel_device_ping() - interrupt round trip through the chip, through
 * the driver's debugfs file "ping": for root (debugfs mounted), as a
 * liveness check of the register and MSI-X paths is not for every client.
 * @timeout_ms: at most ACCEL_PING_MAX_TIMEOUT_MS, or 0 for the default
 * @latency_ns: where to store the measured round trip; may be NULL
 *
 * ACCEL_ERR_TIMEOUT when the chip does not answer in time; the error of
 * opening the debugfs file (ACCEL_ERR_PERMISSION, ACCEL_ERR_NO_DEVICE...)
 * without root or debugfs.
 */
ACCEL_API int accel_device_ping(struct accel_device *dev, uint32_t cookie,
				uint32_t timeout_ms, uint64_t *latency_ns);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_DEVICE_H */
