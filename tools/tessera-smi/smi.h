/* SPDX-License-Identifier: MIT */
/*
 * tessera-smi's parts: smi-collect.c reads the state of the chips into the
 * plain structs below, smi-output.c prints them as tables, JSON or --dmon
 * lines, and tessera-smi.c parses the options and runs the reports.
 */
#ifndef TESSERA_SMI_H
#define TESSERA_SMI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tessera/chip.h>

#include <accel/accel.h>

#define PROGRAM "tessera-smi"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_SEC 1000000000ull

enum exit_status {
	EXIT_OK = 0,
	EXIT_USAGE = 2,
	EXIT_NO_DEVICE = 3,
	EXIT_UNREADABLE = 4,
};

/* The chip's and its links' counters at one moment, and when they were read. */
struct sample {
	struct accel_device_counters counters;
	uint64_t ici_bytes_tx[TSR_ICI_MAX_PORTS];	/* wire bytes, by port */
	uint64_t ici_bytes_rx[TSR_ICI_MAX_PORTS];
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
};

/* A chip this run reports on: opened once, sampled at every report. */
struct device {
	struct accel_device *handle;	/* NULL if it could not be opened */
	int index;			/* -1 if unknown */
	char pci[ACCEL_PCI_ADDRESS_LEN];	/* "" if unknown */
	char open_error[128];
	unsigned int ici_ports;		/* ports whose LINK_INFO a sample reads */
	struct sample last;		/* the previous sample, if have_last */
	bool have_last;
};

/*
 * A counter of the chip's, by name and place: in struct
 * accel_device_counters (not the driver's) or struct accel_link_info.
 */
struct chip_counter {
	const char *name;
	size_t offset;
};

#define CHIP_COUNTERS 9
extern const struct chip_counter chip_counters[CHIP_COUNTERS];

#define LINK_COUNTERS 14
extern const struct chip_counter link_counters[LINK_COUNTERS];

/* The engines whose busy cycles the chip counts: chip_counters[1 + e]. */
#define ENGINES 3
extern const char *const engines[ENGINES];

/* The driver's counters: files of <pci device>/tessera/ in sysfs. */
enum driver_counter {
	DRV_JOBS_SUBMITTED,
	DRV_JOBS_COMPLETED,
	DRV_JOBS_FAILED,
	DRV_MMU_FAULTS,
	DRV_ECC_CORRECTABLE,
	DRV_ECC_UNCORRECTABLE,
	DRV_TIMEOUTS,
	DRV_LOST_IRQS,
	DRV_QUEUE_RESETS,
	DRV_DEVICE_RESETS,
	DRV_FATAL_ERRORS,
	DRV_BANNED_CONTEXTS,
	/* The ICI links. */
	DRV_REMOTE_ACCESS_REFUSED,
	DRV_LINK_DOWNS,
	DRV_LINK_UPS,
	DRIVER_COUNTERS
};

extern const char *const driver_counter_names[DRIVER_COUNTERS];

/* Busy cycles over a window, against the modeled clock. */
struct utilization {
	double window_s;		/* host time between the two samples */
	uint64_t clock_cycles;		/* how far the modeled clock advanced */
	uint64_t busy_cycles[ENGINES];
	double percent[ENGINES];
	bool chip_reset;		/* the counters restarted in the window */
	/* What else the window added, for --dmon. */
	uint64_t jobs_completed;
	uint64_t jobs_failed;
	uint64_t link_downs;
	uint64_t link_ups;
	uint64_t ici_bytes_tx;
	uint64_t ici_bytes_rx;
};

/* What one report says of one device. */
struct device_status {
	const struct device *device;
	struct accel_device_info info;
	struct sample sample;
	struct utilization util;
	bool have_util;
	uint64_t driver[DRIVER_COUNTERS];
	/* Ports 0 ... info.ici_ports - 1. */
	struct accel_link_info links[TSR_ICI_MAX_PORTS];
	/* Each port's transport: "ring", "socket", "none", or "-". */
	char transport[TSR_ICI_MAX_PORTS][8];
	char error[256];		/* why it could not be read; "" if it was */
};

/* Memory the driver reports per file, by placement. */
enum region { REGION_HOST, REGION_HBM, REGIONS };
enum memory_stat { STAT_TOTAL, STAT_SHARED, STAT_RESIDENT, STATS };

extern const char *const region_names[REGIONS];
extern const char *const stat_names[STATS];

/* One DRM client (an open file: a device context) of one process. */
struct client {
	pid_t pid;
	char comm[32];
	char pdev[ACCEL_PCI_ADDRESS_LEN];
	uint64_t client_id;
	uint64_t memory[REGIONS][STATS];	/* bytes */
	uint64_t engine_ns[TSR_MAX_QUEUES];
	unsigned int queues;		/* drm-engine-qN keys seen: N + 1 */
};

struct client_list {
	struct client *items;
	size_t count;
};

/* smi-collect.c */
bool is_number(const char *text);
bool is_index(const char *text);
uint64_t now_ns(void);
uint64_t counter_at(const void *counters, size_t offset);
void sample_all(struct device *devices, size_t n);
bool collect_device(struct device *d, struct device_status *st);
int open_all(struct device **out, size_t *n);
int open_selected(const char *which, struct device **out, size_t *n);
void close_all(struct device *devices, size_t n);
bool scan_processes(struct client_list *list);
void explain_no_device(void);

/* smi-output.c */
const char *index_text(const struct device *d, char *buf, size_t len);
void print_json(unsigned long report, const char *timestamp,
		const struct device_status *st, size_t n,
		const struct client_list *clients);
void print_tables(const char *timestamp, const struct device_status *st,
		  size_t n, const struct client_list *clients);
void print_dmon_header(void);
void print_dmon(const struct device_status *st, size_t n);

#endif /* TESSERA_SMI_H */
