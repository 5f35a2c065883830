/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_DRV_H__
#define __TESSERA_DRV_H__

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/fault-inject.h>
#include <linux/ratelimit.h>
#include <linux/uidgid.h>
#include <linux/idr.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <drm/drm_device.h>
#include <drm/drm_mm.h>
#include <drm/gpu_scheduler.h>

#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#define DRIVER_NAME	"tessera"
#define DRIVER_DESC	"Tessera virtual AI accelerator"
#define DRIVER_MAJOR	DRM_TESSERA_DRIVER_MAJOR
#define DRIVER_MINOR	DRM_TESSERA_DRIVER_MINOR
#define DRIVER_PATCH	0

/* Descriptors per hardware ring. */
#define TESSERA_RING_SIZE	256
/*
 * Jobs the driver keeps on a ring at once.  One slot stays empty so that
 * TAIL never catches HEAD, and one more because a job is retired when its
 * fence lands, a moment before the chip advances HEAD past it.
 */
#define TESSERA_RING_JOBS	(TESSERA_RING_SIZE - 2)

/* Driver-side counters, exported through sysfs. */
enum tessera_counter {
	TESSERA_CNT_JOBS_SUBMITTED,
	TESSERA_CNT_JOBS_COMPLETED,
	TESSERA_CNT_JOBS_FAILED,
	TESSERA_CNT_MMU_FAULTS,
	TESSERA_CNT_ECC_CORRECTABLE,
	TESSERA_CNT_ECC_UNCORRECTABLE,
	TESSERA_CNT_TIMEOUTS,
	TESSERA_CNT_LOST_IRQS,
	TESSERA_CNT_QUEUE_RESETS,
	TESSERA_CNT_DEVICE_RESETS,
	TESSERA_CNT_FATAL_ERRORS,
	TESSERA_CNT_BANNED_CONTEXTS,
	TESSERA_CNT_REMOTE_ACCESS,
	TESSERA_CNT_LINK_DOWNS,
	TESSERA_CNT_LINK_UPS,
	TESSERA_CNT_LINK_EVENTS_SUPPRESSED,
	TESSERA_CNT_PCIE_ERRORS,
	TESSERA_CNT_PCIE_CORRECTABLE,
	TESSERA_CNT_PURGED_BOS,
	TESSERA_CNT_PURGED_BYTES,
	TESSERA_CNT_COUNT
};

/* The chip's own counters, as sysfs shows them (tessera_sysfs.c). */
enum tessera_chip_counter {
	TESSERA_CHIP_MXU_BUSY,
	TESSERA_CHIP_VPU_BUSY,
	TESSERA_CHIP_DMA_BUSY,
	TESSERA_CHIP_SC_BUSY,
	TESSERA_CHIP_JOBS,
	TESSERA_CHIP_COMMANDS,
	TESSERA_CHIP_HBM_READ,
	TESSERA_CHIP_HBM_WRITE,
	TESSERA_CHIP_CLOCK,
	TESSERA_CHIP_COUNTERS
};

/* GET_PARAM parameters that mirror a register of the chip (tessera_drv.c). */
#define TESSERA_PARAM_REGS	20

struct tessera_device;
struct tessera_file;
struct tessera_mapping;

/**
 * struct tessera_window - an entry of the chip's ICI window table
 * @owner: the file that opened it; NULL while the entry is free
 * @uid: the real uid of the process that opened it
 * @obj: the buffer (a reference)
 * @map: the buffer's mapping in @owner's context (a reference)
 */
struct tessera_window {
	struct tessera_file *owner;
	kuid_t uid;
	struct drm_gem_object *obj;
	struct tessera_mapping *map;
};

/**
 * struct tessera_port_regs - what an ICI port's registers hold
 * @info: its state and peer, as LINK_INFO tells them
 * @transport: TSR_ICI_TRANSPORT_*
 * @counters: its counters, by TSR_ICI_CNT_*
 */
struct tessera_port_regs {
	struct drm_tessera_port info;
	u32 transport;
	u64 counters[DRM_TESSERA_LINK_COUNTERS];
};

/**
 * struct tessera_ici - the driver's side of the chip's ICI links
 * @ports: ports the chip has
 * @window_lock: protects @table and @windows
 * @table: window table (coherent memory the chip reads); NULL after unbind
 * @table_dma: bus address of @table
 * @windows: what each table entry holds
 * @link_work: turns port changes into counts, log lines and uevents
 * @changed: ports whose state the chip changed since @link_work last looked
 * @state: each port's state as @link_work last saw it
 * @downs_seen: each port's count of link downs when @link_work last looked
 * @announced: each port's state as its last uevent told
 * @event_rs: each port's limit on log lines and uevents
 * @violations: the chip's VIOLATIONS count when the driver last looked
 * @ports_kobj: the "ici" directory in sysfs
 * @port_kobjs: its "port<p>" directories
 * @dims: the slice's ICI_DIMS, read at probe
 * @coords: the chip's ICI_COORDS, read at probe
 * @slice_id: ICI_SLICE_ID, read at probe (0 without ICI)
 * @wrap: ICI_WRAP, read at probe (0 without ICI)
 * @ports_wired: ICI_PORTS_WIRED, read at probe (0 without ICI)
 * @link_latency_ns: ICI_LINK_LATENCY_NS, read at probe (0 without ICI)
 * @saved: each port as the chip held it at the last runtime suspend, what
 *	LINK_INFO and sysfs tell while it sleeps; under chip_counter_lock
 */
struct tessera_ici {
	unsigned int ports;
	/* protects table and windows */
	struct mutex window_lock;
	struct tsr_ici_window *table;
	dma_addr_t table_dma;
	struct tessera_window windows[DRM_TESSERA_MAX_WINDOWS];
	struct delayed_work link_work;
	atomic_t changed;
	u32 state[TSR_ICI_MAX_PORTS];
	u64 downs_seen[TSR_ICI_MAX_PORTS];
	u32 announced[TSR_ICI_MAX_PORTS];
	struct ratelimit_state event_rs[TSR_ICI_MAX_PORTS];
	u32 violations;
	struct kobject *ports_kobj;
	struct kobject *port_kobjs[TSR_ICI_MAX_PORTS];
	u32 dims, coords, slice_id, wrap, ports_wired, link_latency_ns;
	struct tessera_port_regs saved[TSR_ICI_MAX_PORTS];
};

/**
 * struct tessera_queue - one hardware queue and its scheduler
 * @tdev: owning device
 * @index: queue number
 * @sched: the drm_sched instance feeding this queue
 * @sched_ready: @sched was initialised (and must be finalised)
 * @lock: protects @tail, @inflight and the ring contents
 * @fence_lock: lock of the hardware fences of this queue
 * @ring: descriptor ring (coherent memory the chip reads)
 * @ring_dma: bus address of @ring
 * @fence_cpu: where the chip writes the fence of each finished job
 * @fence_dma: bus address of @fence_cpu
 * @tail: next free ring slot
 * @seqno: last hardware fence number issued
 * @fence_context: dma_fence context of the hardware fences
 * @inflight: jobs on the ring, oldest first
 * @name: scheduler and fence timeline name
 */
struct tessera_queue {
	struct tessera_device *tdev;
	unsigned int index;
	struct drm_gpu_scheduler sched;
	bool sched_ready;

	/* protects tail, inflight and the ring */
	spinlock_t lock;
	/* lock of the hardware fences */
	spinlock_t fence_lock;
	struct tsr_job_desc *ring;
	dma_addr_t ring_dma;
	__le64 *fence_cpu;
	dma_addr_t fence_dma;
	u32 tail;
	u64 seqno;
	u64 fence_context;
	struct list_head inflight;
	char name[24];
};

/**
 * struct tessera_device - one Tessera chip
 * @drm: the DRM device, embedded
 * @regs: BAR0 register space
 * @hbm: BAR2 (the chip's HBM), mapped write-combined
 * @hbm_bus: bus address of BAR2
 * @hbm_size: bytes of HBM
 * @msix_vectors: MSI-X vectors enabled
 * @num_queues: hardware queues
 * @max_contexts: context table entries in use, including the unused 0
 * @irq_count: interrupts handled, device and queue vectors
 * @reg64_lock: serialises reads of 64-bit registers, whose high halves
 *	the chip latches once for all registers
 * @ping_lock: serialises pings; the chip has one ping register
 * @ping_irq_lock: makes the interrupt handler's check of an answer against
 *	@ping_cookie and its completion of @ping_done one step, which the
 *	start of the next ping cannot fall between
 * @ping_done: completed by the interrupt handler when a ping is acknowledged
 * @ping_ack: cookie the chip acknowledged, valid once @ping_done completes
 * @ping_cookie: the cookie of the ping being waited for
 * @ping_waiting: a ping is being waited for: a chip reset, which forgets
 *	it, asks again
 * @queues: the hardware queues
 * @reset_wq: ordered queue running timeouts and resets one at a time
 * @chip_reset_work: whole-chip recovery (fatal error, forced)
 * @pci_reset_work: recovery around a reset the PCI core makes
 * @pci_quiet: completed by @pci_reset_work once the chip is quiet
 * @pci_reset_over: completed when the PCI core's reset is over
 * @reset_lock: held while the chip is being reset
 * @ctx_table: context table (coherent memory the chip reads)
 * @ctx_table_dma: bus address of @ctx_table
 * @ctx_ids: context numbers in use
 * @ctx_lock: protects @contexts
 * @contexts: live contexts, for debugfs
 * @hbm_lock: protects @hbm_mm and @hbm_used
 * @hbm_mm: allocator of HBM
 * @hbm_used: bytes of HBM allocated
 * @shrinker: purges idle buffers marked DRM_TESSERA_MADV_DONTNEED
 * @shrinker_lock: protects @shrinker_list
 * @shrinker_list: system-memory buffers marked DRM_TESSERA_MADV_DONTNEED
 * @counters: driver counters, enum tessera_counter
 * @chip_counter_lock: protects @chip_counter_base and @chip_counters_saved
 * @chip_counter_base: what the chip's counters (tessera_sysfs.c) held at
 *	each runtime suspend since the last counted chip reset: a runtime
 *	resume resets the chip, and its counters with it
 * @chip_counters_saved: the chip is runtime suspended, its counters all in
 *	@chip_counter_base and its ports' in @ici.saved: no register is read
 * @param_regs: the values of the GET_PARAM parameters that mirror a
 *	register of the chip (tessera_drv.c), read at probe
 * @inject_submit_wait_done: this many coming submits wait for their job to
 *	run and be freed before returning (debugfs)
 * @inject_timeout_wait_free: this many coming lost-interrupt timeouts let
 *	the scheduler's free worker run before using their job (debugfs)
 * @inject_stop_wait_end: this many coming resets let the job each queue
 *	runs end before going on from disabling the queue, and a queue reset
 *	after a timeout first waits for the hung job to end and the queue to
 *	take the next (debugfs)
 * @hangcheck: a job that outlives the timeout is reset; when false
 *	(debugfs) it is left on its ring
 * @ici: the ICI links and windows
 */
struct tessera_device {
	struct drm_device drm;
	void __iomem *regs;
	void __iomem *hbm;
	resource_size_t hbm_bus;
	u64 hbm_size;
	unsigned int msix_vectors;
	unsigned int num_queues;
	unsigned int max_contexts;
	atomic64_t irq_count;
	/* serialises 64-bit register reads: one latch for all high halves */
	spinlock_t reg64_lock;

	/* serialises pings: the chip has one ping register */
	struct mutex ping_lock;
	/* an answer's check and its completion, against a ping's start */
	spinlock_t ping_irq_lock;
	struct completion ping_done;
	u32 ping_ack;
	u32 ping_cookie;
	bool ping_waiting;

	struct tessera_queue queues[TSR_MAX_QUEUES];
	struct workqueue_struct *reset_wq;
	struct work_struct chip_reset_work;
	struct work_struct pci_reset_work;
	struct completion pci_quiet;
	struct completion pci_reset_over;
	/* held while queues or the chip are reset */
	struct mutex reset_lock;

	__le64 *ctx_table;
	dma_addr_t ctx_table_dma;
	struct ida ctx_ids;
	/* protects contexts */
	struct mutex ctx_lock;
	struct list_head contexts;

	/* protects hbm_mm and hbm_used */
	struct mutex hbm_lock;
	struct drm_mm hbm_mm;
	u64 hbm_used;

	struct shrinker *shrinker;
	/* protects shrinker_list */
	struct mutex shrinker_lock;
	struct list_head shrinker_list;

	atomic64_t counters[TESSERA_CNT_COUNT];
	/* protects chip_counter_base and chip_counters_saved */
	spinlock_t chip_counter_lock;
	u64 chip_counter_base[TESSERA_CHIP_COUNTERS];
	bool chip_counters_saved;
	u32 param_regs[TESSERA_PARAM_REGS];
	atomic_t inject_submit_wait_done;
	atomic_t inject_timeout_wait_free;
	atomic_t inject_stop_wait_end;
	bool hangcheck;

	struct tessera_ici ici;
};

/* Scheduler priorities a file can submit at: DRM_TESSERA_PRIORITY_*. */
#define TESSERA_PRIORITIES	3

struct tessera_ctx;

/**
 * struct tessera_file - what the driver keeps per open file
 * @tdev: the device
 * @ctx: the file's device context
 * @lock: protects @entities; held from arming a job to pushing it so that
 *	jobs enter each entity in sequence-number order
 * @entities: scheduler entities by queue and priority, made on first use
 * @windows_open: ICI windows the file has open (tdev->ici.window_lock)
 */
struct tessera_file {
	struct tessera_device *tdev;
	struct tessera_ctx *ctx;
	/* protects entities; held from job arm to push */
	struct mutex lock;
	struct drm_sched_entity *entities[TSR_MAX_QUEUES][TESSERA_PRIORITIES];
	unsigned int windows_open;
};

static inline struct tessera_device *to_tessera_device(struct drm_device *drm)
{
	return container_of(drm, struct tessera_device, drm);
}

static inline struct pci_dev *to_pci_dev_tdev(struct tessera_device *tdev)
{
	return to_pci_dev(tdev->drm.dev);
}

static inline void tessera_count(struct tessera_device *tdev,
				 enum tessera_counter c)
{
	atomic64_inc(&tdev->counters[c]);
}

static inline u64 tessera_counter(struct tessera_device *tdev,
				  enum tessera_counter c)
{
	return atomic64_read(&tdev->counters[c]);
}

/*
 * The driver's failure points on the kernel's fault-injection framework
 * (debugfs fail_bo_map, fail_submit); without CONFIG_FAULT_INJECTION they
 * are empty and should_fail() is false.
 */
extern struct fault_attr tessera_fail_bo_map;
extern struct fault_attr tessera_fail_submit;

/* Consume one injected failure, if any is armed. */
static inline bool tessera_inject(atomic_t *armed)
{
	return atomic_add_unless(armed, -1, 0);
}

/* Module parameters. */
extern unsigned int tessera_job_timeout_ms;
extern unsigned int tessera_ban_threshold;
extern unsigned int tessera_max_resets_per_job;
extern unsigned int tessera_max_jobs_per_file;
extern unsigned int tessera_max_pinned_mb;
extern unsigned int tessera_max_windows_per_file;
extern unsigned int tessera_max_windows_per_user;

#endif /* __TESSERA_DRV_H__ */
