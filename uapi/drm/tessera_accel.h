/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * Tessera accelerator driver interface (/dev/accel/accelN).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __UAPI_TESSERA_ACCEL_H__
#define __UAPI_TESSERA_ACCEL_H__

#include <linux/const.h>

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

/*
 * Version of this interface, as DRM_IOCTL_VERSION reports it (the
 * driver's major.minor, as ivpu versions its): a new minor
 * adds ioctls, parameters, extensions or flags; nothing changes meaning
 * within a major.  1.0 replaced the numbered versions 1 to 6 of the
 * GET_INFO era; 2.0 gave SUBMIT an extension chain, arrays with a stride
 * and several out-syncs, and added SUBMIT_BATCH (Documentation/uapi.md,
 * "Versions").
 */
#define DRM_TESSERA_DRIVER_MAJOR	2
#define DRM_TESSERA_DRIVER_MINOR	3

#define DRM_TESSERA_GET_PARAM		0x00
#define DRM_TESSERA_BO_CREATE		0x01
#define DRM_TESSERA_BO_INFO		0x02
#define DRM_TESSERA_SUBMIT		0x03
#define DRM_TESSERA_JOB_STATUS		0x04
#define DRM_TESSERA_WINDOW_OPEN		0x05
#define DRM_TESSERA_WINDOW_CLOSE	0x06
#define DRM_TESSERA_LINK_INFO		0x07
#define DRM_TESSERA_SUBMIT_BATCH	0x08
#define DRM_TESSERA_BO_MADVISE		0x09

#define DRM_IOCTL_TESSERA_GET_PARAM \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_GET_PARAM, struct drm_tessera_get_param)
#define DRM_IOCTL_TESSERA_BO_CREATE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_BO_CREATE, struct drm_tessera_bo_create)
#define DRM_IOCTL_TESSERA_BO_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_BO_INFO, struct drm_tessera_bo_info)
#define DRM_IOCTL_TESSERA_SUBMIT \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_SUBMIT, struct drm_tessera_submit)
#define DRM_IOCTL_TESSERA_JOB_STATUS \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_JOB_STATUS, struct drm_tessera_job_status)
#define DRM_IOCTL_TESSERA_WINDOW_OPEN \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_WINDOW_OPEN, struct drm_tessera_window_open)
#define DRM_IOCTL_TESSERA_WINDOW_CLOSE \
	DRM_IOW(DRM_COMMAND_BASE + DRM_TESSERA_WINDOW_CLOSE, struct drm_tessera_window_close)
#define DRM_IOCTL_TESSERA_LINK_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_LINK_INFO, struct drm_tessera_link_info)
#define DRM_IOCTL_TESSERA_SUBMIT_BATCH \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_SUBMIT_BATCH, struct drm_tessera_submit_batch)
#define DRM_IOCTL_TESSERA_BO_MADVISE \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_BO_MADVISE, struct drm_tessera_bo_madvise)

/* ICI ports of a chip: +x, -x, +y, -y, +z, -z (TSR_ICI_PORT()). */
#define DRM_TESSERA_MAX_PORTS		6

/**
 * struct drm_tessera_port - one ICI port as LINK_INFO reports it
 */
struct drm_tessera_port {
	/** @state: the link state, TSR_ICI_STATE_* (0: no socket or peer). */
	__u32 state;
	/** @peer_slice: once trained, the slice id the peer gave. */
	__u32 peer_slice;
	/** @peer_coords: once trained, the peer's coordinates. */
	__u8 peer_coords[3];
	/** @peer_port: once trained, the peer's port at the other end. */
	__u8 peer_port;
	/** @pad: reserved, written as zero. */
	__u32 pad;
};

/*
 * Parameters of DRM_IOCTL_TESSERA_GET_PARAM.  Each is fixed while the
 * driver is bound (CONTEXT_ID: while the file is open); what changes
 * under a program (free HBM, interrupt and job counts, link states) is in
 * sysfs, debugfs and LINK_INFO instead.  TOPOLOGY and COORDS take a
 * dimension (0 to 2) as index; every other parameter takes index 0.
 */
#define DRM_TESSERA_PARAM_CHIP_ID		1	/* TSR_CHIP_ID */
#define DRM_TESSERA_PARAM_DEVICE_VERSION	2	/* TSR_VERSION(major, minor) */
#define DRM_TESSERA_PARAM_CAPS			3	/* TSR_CAP_* bits */
#define DRM_TESSERA_PARAM_PRESET		4	/* TSR_PRESET_* */
#define DRM_TESSERA_PARAM_TENSORCORES		5
#define DRM_TESSERA_PARAM_MXUS_PER_CORE		6
#define DRM_TESSERA_PARAM_MXU_DIM		7	/* side of each square MXU */
#define DRM_TESSERA_PARAM_VPU_SUBLANES		8
#define DRM_TESSERA_PARAM_VPU_LANES		9
#define DRM_TESSERA_PARAM_VMEM_MIB		10	/* per TensorCore */
#define DRM_TESSERA_PARAM_CLOCK_MHZ		11	/* modeled clock */
#define DRM_TESSERA_PARAM_HBM_GBPS		12
#define DRM_TESSERA_PARAM_HOST_DMA_GBPS		13
#define DRM_TESSERA_PARAM_NUM_QUEUES		14	/* SUBMIT queues: 0 to this - 1 */
#define DRM_TESSERA_PARAM_MAX_CONTEXTS		15	/* files the chip serves at once */
#define DRM_TESSERA_PARAM_HBM_SIZE		16	/* bytes */
#define DRM_TESSERA_PARAM_CONTEXT_ID		17	/* this file's context, 1 ... */
#define DRM_TESSERA_PARAM_ICI_PORTS		18
#define DRM_TESSERA_PARAM_ICI_LINK_GBPS		19	/* one link, one way */
#define DRM_TESSERA_PARAM_ICI_LINK_LATENCY_NS	20	/* one hop, modeled */
#define DRM_TESSERA_PARAM_SLICE_ID		21
#define DRM_TESSERA_PARAM_SLICE_CHIPS		22	/* 1 for a lone chip */
#define DRM_TESSERA_PARAM_SLICE_INDEX		23	/* x + X * (y + Y * z) */
#define DRM_TESSERA_PARAM_TOPOLOGY		24	/* chips along a dimension */
#define DRM_TESSERA_PARAM_COORDS		25	/* this chip's coordinate */
#define DRM_TESSERA_PARAM_WRAP			26	/* bit d: dimension d wraps */
#define DRM_TESSERA_PARAM_PORTS_WIRED		27	/* bit p: port p has a socket */
#define DRM_TESSERA_PARAM_MAX_WINDOWS		28	/* WINDOW_OPEN ids: 0 to this - 1 */
#define DRM_TESSERA_PARAM_SPARSECORES		29
#define DRM_TESSERA_PARAM_SC_TILES		30	/* per SparseCore */
#define DRM_TESSERA_PARAM_SC_SIMD_F32		31	/* lanes of a tile */
#define DRM_TESSERA_PARAM_SC_SIMD_BF16		32
#define DRM_TESSERA_PARAM_SC_SPMEM_KIB		33	/* per SparseCore */

/**
 * struct drm_tessera_get_param - one fact about the chip
 * (DRM_IOCTL_TESSERA_GET_PARAM)
 *
 * As ivpu's and v3d's GET_PARAM: a parameter the driver does not know,
 * or an index it does not take, is -EINVAL, so that a program can probe
 * for a parameter a later minor version adds.
 */
struct drm_tessera_get_param {
	/** @param: in, DRM_TESSERA_PARAM_*. */
	__u32 param;
	/** @index: in, the dimension of TOPOLOGY and COORDS; 0 otherwise. */
	__u32 index;
	/** @value: out, the parameter's value. */
	__u64 value;
};

/* Buffer placement: system memory (default) or the chip's HBM. */
#define DRM_TESSERA_BO_HBM		0x00000001u
/*
 * The chip may only read the buffer: a command that writes it fails with
 * TSR_ERR_MMU_PERMISSION and writes nothing there, and no window opens on
 * it for remote writes.  The CPU mapping stays read-write.  For command
 * buffers and inputs that the device must not change.
 */
#define DRM_TESSERA_BO_DEVICE_READ_ONLY	0x00000002u
#define DRM_TESSERA_BO_FLAGS_ALL	(DRM_TESSERA_BO_HBM | \
					 DRM_TESSERA_BO_DEVICE_READ_ONLY)

/* Largest buffer object. */
#define DRM_TESSERA_BO_MAX_SIZE		_BITULL(36)

/**
 * struct drm_tessera_bo_create - make a buffer object (DRM_IOCTL_TESSERA_BO_CREATE)
 *
 * The buffer is zeroed and mapped into the caller's device address space;
 * DRM_IOCTL_TESSERA_BO_INFO says where.  System-memory buffers are cached
 * for the CPU and can be shared with PRIME; HBM buffers live in the
 * chip's memory, are mapped write-combined through the HBM BAR and cannot
 * be exported.
 */
struct drm_tessera_bo_create {
	/** @size: in, bytes, 1 to DRM_TESSERA_BO_MAX_SIZE; rounded up to pages. */
	__u64 size;
	/**
	 * @flags: in, DRM_TESSERA_BO_HBM and DRM_TESSERA_BO_DEVICE_READ_ONLY;
	 * any other bit is -EINVAL.
	 */
	__u32 flags;
	/** @handle: out, GEM handle of the new buffer. */
	__u32 handle;
};

/**
 * struct drm_tessera_bo_info - where a buffer is (DRM_IOCTL_TESSERA_BO_INFO)
 */
struct drm_tessera_bo_info {
	/** @handle: in, GEM handle. */
	__u32 handle;
	/** @flags: in, must be zero. */
	__u32 flags;
	/** @mmap_offset: out, offset to pass to mmap() on the device file. */
	__u64 mmap_offset;
	/** @device_va: out, the buffer's address in this file's device VA space. */
	__u64 device_va;
	/** @size: out, bytes (page-rounded). */
	__u64 size;
	/** @placement: out, DRM_TESSERA_BO_HBM or 0 for system memory. */
	__u32 placement;
	/** @pad: reserved, written as zero. */
	__u32 pad;
};

/* DRM_IOCTL_TESSERA_BO_MADVISE: the buffer's contents are needed again. */
#define DRM_TESSERA_MADV_WILLNEED	0
/* DRM_IOCTL_TESSERA_BO_MADVISE: the kernel may drop the buffer's pages. */
#define DRM_TESSERA_MADV_DONTNEED	1

/**
 * struct drm_tessera_bo_madvise - mark a buffer purgeable or needed
 * (DRM_IOCTL_TESSERA_BO_MADVISE)
 *
 * Under memory pressure the kernel drops the pages of an idle system-memory
 * buffer marked DRM_TESSERA_MADV_DONTNEED (no unfinished job uses it): its
 * device VA stays reserved but unmapped, so a job that touches it faults
 * (-EFAULT); a CPU mapping of it raises SIGBUS, and a new mmap, PRIME
 * export or ICI window of it fails with -EFAULT.  A purged buffer stays
 * purged: only closing it gives its handle back.
 */
struct drm_tessera_bo_madvise {
	/** @handle: in, GEM handle of a system-memory buffer. */
	__u32 handle;
	/**
	 * @madv: in, DRM_TESSERA_MADV_WILLNEED or DRM_TESSERA_MADV_DONTNEED;
	 * any other value is -EINVAL.  An HBM buffer is -EINVAL: HBM is
	 * not memory the kernel can reclaim.  An imported buffer is accepted
	 * but never purged (its pages belong to the exporter).
	 */
	__u32 madv;
	/** @flags: in, must be zero. */
	__u32 flags;
	/**
	 * @retained: out, 1 if the buffer still has its contents, 0 if they
	 * were purged.
	 */
	__u32 retained;
};

/* How a job uses a buffer object: implicit fences follow from it. */
#define DRM_TESSERA_BO_READ		0x00000001u
#define DRM_TESSERA_BO_WRITE		0x00000002u

/**
 * struct drm_tessera_submit_bo - one buffer a job uses
 */
struct drm_tessera_submit_bo {
	/** @handle: GEM handle. */
	__u32 handle;
	/** @flags: DRM_TESSERA_BO_READ and/or DRM_TESSERA_BO_WRITE, not 0. */
	__u32 flags;
};

/* drm_tessera_sync.flags: signal the syncobj when the job ends. */
#define DRM_TESSERA_SYNC_SIGNAL		0x00000001u

/**
 * struct drm_tessera_sync - a syncobj and, for a timeline, a point on it
 *
 * Without DRM_TESSERA_SYNC_SIGNAL the job waits for the fence there (an
 * in-sync); with it the job's fence is put there once the job is queued
 * (an out-sync), as panthor's DRM_PANTHOR_SYNC_OP_SIGNAL.
 */
struct drm_tessera_sync {
	/** @handle: syncobj handle. */
	__u32 handle;
	/** @flags: 0 or DRM_TESSERA_SYNC_SIGNAL; any other bit is -EINVAL. */
	__u32 flags;
	/** @point: timeline point, or 0 for a binary syncobj. */
	__u64 point;
};

/* SUBMIT priorities; high needs CAP_SYS_NICE. */
#define DRM_TESSERA_PRIORITY_NORMAL	0
#define DRM_TESSERA_PRIORITY_LOW	1
#define DRM_TESSERA_PRIORITY_HIGH	2

/* Limits of a SUBMIT. */
#define DRM_TESSERA_MAX_BOS		4096
#define DRM_TESSERA_MAX_SYNCS		64	/* in- and out-syncs together */
#define DRM_TESSERA_MAX_CMDBUF_SIZE	(16u << 20)
/*
 * Largest stride of an array element.  A stride is at least the size of
 * the element in this header; the driver reads that much of each element,
 * and bytes past it must be zero (-E2BIG otherwise, as the kernel's
 * copy_struct_from_user() has it), so that an element can grow.
 */
#define DRM_TESSERA_MAX_STRIDE		256
/* Most jobs in one SUBMIT_BATCH. */
#define DRM_TESSERA_MAX_BATCH		64

/**
 * struct drm_tessera_extension - the head of every extension
 *
 * Extensions are chained through @next from an ioctl's extensions field,
 * as xe's struct drm_xe_user_extension: a later minor adds names without
 * touching the base struct.  An unknown @name, a non-zero @pad, or a name
 * given twice is -EINVAL; so a chain is at most as long as the names an
 * ioctl knows, and a chain that loops ends at its first repeated link.
 */
struct drm_tessera_extension {
	/** @next: user pointer to the next extension, 0 to end the chain. */
	__u64 next;
	/** @name: DRM_TESSERA_EXT_*. */
	__u32 name;
	/** @pad: must be zero. */
	__u32 pad;
};

/* Names of SUBMIT's extensions (SUBMIT_BATCH's own chain knows none yet). */
#define DRM_TESSERA_EXT_TRACE		1	/* struct drm_tessera_ext_trace */

/**
 * struct drm_tessera_ext_trace - have the chip write the job's trace
 *
 * The chip writes a struct tsr_trace_header and a struct tsr_trace_record
 * per command (the chip's <tessera/chip.h>, installed with libaccel) at
 * @offset of buffer @handle, which must be listed in the job's bos with
 * DRM_TESSERA_BO_WRITE.  A bad field is -EINVAL; a chip without
 * TSR_CAP_TRACE is -EOPNOTSUPP.
 */
struct drm_tessera_ext_trace {
	/** @base: name DRM_TESSERA_EXT_TRACE. */
	struct drm_tessera_extension base;
	/** @handle: the trace's buffer. */
	__u32 handle;
	/**
	 * @size: bytes of the trace, a multiple of 8 from
	 * sizeof(struct tsr_trace_header) to TSR_TRACE_MAX_SIZE, in the buffer.
	 */
	__u32 size;
	/** @offset: where the trace starts in the buffer, 8-aligned. */
	__u64 offset;
};

/**
 * struct drm_tessera_submit - run a command buffer (DRM_IOCTL_TESSERA_SUBMIT)
 *
 * Queues a job on hardware queue @queue.  The job starts once the fence
 * of every in-sync of @syncs and the implicit fences of its buffers have
 * signalled; it runs the command buffer in the file's device address
 * space.  Its outcome is in DRM_IOCTL_TESSERA_JOB_STATUS under @seq, and
 * in the error of the fence its out-syncs receive: 0, -EFAULT (MMU fault),
 * -EIO (memory, DMA or device error, or resets caught the job too often),
 * -EINVAL (a malformed command), -E2BIG (an operand beyond the chip's
 * limits), -ETIMEDOUT (the job hung and was stopped), -ECANCELED (a chip
 * reset stopped the job, which is not run again: JOB_STATUS error
 * TSR_ERR_ABORTED; or the context was banned), -ESRCH (the file was
 * closed before the job could start), -ENOMEM (no memory to run it again
 * after a reset), -ENODEV (the device went away); for an ICI_WRITE,
 * -ENOLINK (a link on the way is down or no answer came: within 2 s of
 * the link going down), -EACCES (the target's windows refused the write)
 * or -EHOSTUNREACH (no route to the target).
 *
 * What the base struct does not say is in extensions (DRM_TESSERA_EXT_*).
 * An array's stride is read only when its count is not zero.
 */
struct drm_tessera_submit {
	/** @extensions: in, user pointer to the first extension, or 0. */
	__u64 extensions;
	/**
	 * @flags: in, DRM_TESSERA_SUBMIT_WAIT_ROOM or 0 (0 in a job of a
	 * batch: the batch's flags say it).
	 */
	__u32 flags;
	/** @queue: in, hardware queue, below DRM_TESSERA_PARAM_NUM_QUEUES. */
	__u32 queue;
	/** @priority: in, DRM_TESSERA_PRIORITY_*. */
	__u32 priority;
	/** @cmdbuf_handle: in, buffer object holding the commands. */
	__u32 cmdbuf_handle;
	/** @cmdbuf_offset: in, byte offset of the first command, 8-aligned. */
	__u64 cmdbuf_offset;
	/**
	 * @cmdbuf_size: in, bytes of commands: a non-zero multiple of 8, at
	 * most DRM_TESSERA_MAX_CMDBUF_SIZE, within the buffer.
	 */
	__u32 cmdbuf_size;
	/** @bo_count: in, entries in @bos, at most DRM_TESSERA_MAX_BOS. */
	__u32 bo_count;
	/**
	 * @bos: in, user pointer to @bo_count struct drm_tessera_submit_bo,
	 * @bo_stride bytes apart: the buffers besides the command buffer.
	 */
	__u64 bos;
	/** @bo_stride: in, see DRM_TESSERA_MAX_STRIDE. */
	__u32 bo_stride;
	/** @sync_count: in, entries in @syncs, at most DRM_TESSERA_MAX_SYNCS. */
	__u32 sync_count;
	/**
	 * @syncs: in, user pointer to @sync_count struct drm_tessera_sync,
	 * @sync_stride bytes apart: what the job waits for and signals.
	 */
	__u64 syncs;
	/** @sync_stride: in, see DRM_TESSERA_MAX_STRIDE. */
	__u32 sync_stride;
	/** @pad: in, must be zero. */
	__u32 pad;
	/** @seq: out, the job's sequence number in this file, from 1. */
	__u64 seq;
};

/*
 * Flag of SUBMIT and SUBMIT_BATCH (2.2): when the file already has
 * max_jobs_per_file jobs queued, wait (interruptibly) until the jobs fit,
 * rather than fail with -EBUSY; a batch of more jobs than the bound still
 * fails at once.
 */
#define DRM_TESSERA_SUBMIT_WAIT_ROOM	0x00000001u

/* drm_tessera_submit_batch.error_index when no one job is at fault. */
#define DRM_TESSERA_BATCH_NO_INDEX	0xffffffffu

/**
 * struct drm_tessera_submit_batch - queue several jobs at once
 * (DRM_IOCTL_TESSERA_SUBMIT_BATCH)
 *
 * @jobs holds @count struct drm_tessera_submit, @stride bytes apart, each
 * a job on a queue of its own choosing, checked exactly as SUBMIT checks
 * one (its extensions included), as panthor's GROUP_SUBMIT takes a job
 * per queue.  Every job is checked, and everything it needs taken, before
 * any is queued: either all are queued, in array order, or none is and
 * the ioctl fails with the errno SUBMIT would have given for the job
 * named by @error_index.  The jobs of a batch do not wait for each other
 * through their buffers, nor can one's in-sync name another's out-sync
 * (syncs are looked up before any job is queued).  Each job's seq is
 * written back into its element; should that write fail (-EFAULT), the
 * jobs are queued all the same, as for any ioctl's copy-out.
 */
struct drm_tessera_submit_batch {
	/** @extensions: in, user pointer to the first extension, or 0. */
	__u64 extensions;
	/** @flags: in, DRM_TESSERA_SUBMIT_WAIT_ROOM or 0. */
	__u32 flags;
	/** @count: in, jobs in @jobs, 1 to DRM_TESSERA_MAX_BATCH. */
	__u32 count;
	/** @jobs: in, user pointer to the jobs. */
	__u64 jobs;
	/** @stride: in, bytes from one job to the next; see DRM_TESSERA_MAX_STRIDE. */
	__u32 stride;
	/**
	 * @error_index: out, when the ioctl fails: the index in @jobs of the
	 * job refused, or DRM_TESSERA_BATCH_NO_INDEX when the batch's own
	 * fields or no one job (a signal, an injected failure) are the cause.
	 */
	__u32 error_index;
};

/* Values of drm_tessera_job_status.state. */
#define DRM_TESSERA_JOB_PENDING		1	/* queued or running */
#define DRM_TESSERA_JOB_DONE		2	/* ran to the end */
#define DRM_TESSERA_JOB_FAILED		3	/* see error and fence_error */

/* Job statuses are kept for the last this many jobs of a file. */
#define DRM_TESSERA_JOB_HISTORY		1024

/**
 * struct drm_tessera_job_status - how a job went (DRM_IOCTL_TESSERA_JOB_STATUS)
 *
 * Fails with -EINVAL for a @seq not yet handed out and -ENOENT for one
 * more than DRM_TESSERA_JOB_HISTORY jobs old.
 */
struct drm_tessera_job_status {
	/** @seq: in, the sequence number SUBMIT returned. */
	__u64 seq;
	/** @flags: in, must be zero. */
	__u32 flags;
	/** @state: out, DRM_TESSERA_JOB_*. */
	__u32 state;
	/** @error: out, the chip's TSR_ERR_* code, 0 if the chip reported none. */
	__u32 error;
	/** @fence_error: out, negative errno of the job's fence, 0 on success. */
	__s32 fence_error;
	/** @failed_cmd: out, index of the failing command or TSR_NO_COMMAND. */
	__u32 failed_cmd;
	/** @queue: out, the hardware queue that ran the job. */
	__u32 queue;
	/** @fault_va: out, device VA of an MMU or memory fault. */
	__u64 fault_va;
	/** @start_cycle: out, modeled device clock when the job started. */
	__u64 start_cycle;
	/** @end_cycle: out, modeled device clock when it ended. */
	__u64 end_cycle;
	/** @mxu_cycles: out, modeled cycles the MXUs were busy. */
	__u64 mxu_cycles;
	/** @vpu_cycles: out, modeled cycles the VPU was busy. */
	__u64 vpu_cycles;
	/** @dma_cycles: out, modeled cycles the DMA engines were busy. */
	__u64 dma_cycles;
	/** @duration_ns: out, host time from the job reaching the chip to its end. */
	__u64 duration_ns;
};

/* Windows a chip has, and ids WINDOW_OPEN hands out: 0 to this minus 1. */
#define DRM_TESSERA_MAX_WINDOWS		256

/* WINDOW_OPEN flags. */
#define DRM_TESSERA_WINDOW_READ		0x00000001u	/* peers may read */
#define DRM_TESSERA_WINDOW_WRITE	0x00000002u	/* peers may write */
#define DRM_TESSERA_WINDOW_FIXED_ID	0x00000004u	/* use @id as given */
#define DRM_TESSERA_WINDOW_FIXED_KEY	0x00000008u	/* use @key as given */
#define DRM_TESSERA_WINDOW_FLAGS_ALL	0x0000000fu

/**
 * struct drm_tessera_window_open - let other chips reach a buffer
 * (DRM_IOCTL_TESSERA_WINDOW_OPEN)
 *
 * Opens a window on bytes @offset to @offset + @size of a buffer object:
 * chips of the slice may then write there with TSR_OP_ICI_WRITE, naming
 * this chip, the window's @id and its @key.  The window holds the buffer
 * mapped; it closes with WINDOW_CLOSE or when the file is closed.  The
 * id is the lowest free one, or with DRM_TESSERA_WINDOW_FIXED_ID the one
 * asked for (-EBUSY if it is open).  The key is random, or with
 * DRM_TESSERA_WINDOW_FIXED_KEY the one given, so that processes on
 * different chips can agree on windows before they can talk.  Fails with
 * -ENOSPC when no window is free, or the file or its user (the caller's
 * real uid) has as many open on the chip as the max_windows_per_file or
 * max_windows_per_user module parameter allows; -EACCES for
 * DRM_TESSERA_WINDOW_WRITE on a DRM_TESSERA_BO_DEVICE_READ_ONLY buffer;
 * -EOPNOTSUPP on a chip without ICI.
 */
struct drm_tessera_window_open {
	/** @handle: in, the buffer. */
	__u32 handle;
	/**
	 * @flags: in, DRM_TESSERA_WINDOW_*; at least one of READ and WRITE.
	 */
	__u32 flags;
	/** @offset: in, first byte of the window in the buffer. */
	__u64 offset;
	/** @size: in, bytes, not 0, within the buffer. */
	__u64 size;
	/** @key: in with FIXED_KEY (not 0), out: what writers must name. */
	__u64 key;
	/**
	 * @id: in with FIXED_ID (below DRM_TESSERA_MAX_WINDOWS), out: the
	 * window's number.
	 */
	__u32 id;
	/** @pad: in, must be zero. */
	__u32 pad;
	/** @device_va: out, the window's first byte in this file's VA space. */
	__u64 device_va;
};

/**
 * struct drm_tessera_window_close - close a window (DRM_IOCTL_TESSERA_WINDOW_CLOSE)
 *
 * Once this returns, no remote write reaches the window's memory.  Fails
 * with -ENOENT if this file has no window @id open.
 */
struct drm_tessera_window_close {
	/** @id: in, the window. */
	__u32 id;
	/** @flags: in, must be zero. */
	__u32 flags;
};

/* Counters of a port, in the order of enum tsr_ici_counter. */
#define DRM_TESSERA_LINK_COUNTERS	16
#define DRM_TESSERA_LINK_FRAMES_TX	0
#define DRM_TESSERA_LINK_FRAMES_RX	1
#define DRM_TESSERA_LINK_BYTES_TX	2
#define DRM_TESSERA_LINK_BYTES_RX	3
#define DRM_TESSERA_LINK_CRC_ERRORS	4
#define DRM_TESSERA_LINK_SEQ_ERRORS	5
#define DRM_TESSERA_LINK_NAKS		6
#define DRM_TESSERA_LINK_REPLAYS	7
#define DRM_TESSERA_LINK_TIMEOUTS	8
#define DRM_TESSERA_LINK_CREDIT_STALLS	9
#define DRM_TESSERA_LINK_LINK_DOWNS	10
#define DRM_TESSERA_LINK_PROTOCOL_ERRORS 11
#define DRM_TESSERA_LINK_TAIL_PROBES	12
#define DRM_TESSERA_LINK_TAIL_LOSSES	13

/**
 * struct drm_tessera_link_info - one ICI port and its counters
 * (DRM_IOCTL_TESSERA_LINK_INFO)
 *
 * Fails with -EINVAL for a @port the chip does not have.  A port without
 * a socket reads as state 0 with zero counters.
 */
struct drm_tessera_link_info {
	/** @port: in, below DRM_TESSERA_PARAM_ICI_PORTS. */
	__u32 port;
	/** @flags: in, must be zero. */
	__u32 flags;
	/** @info: out, the port's state and peer. */
	struct drm_tessera_port info;
	/**
	 * @counters: out, DRM_TESSERA_LINK_*: frames and bytes each way, CRC
	 * and sequence errors, NAKs, replays, timeouts, credit stalls, link
	 * downs, protocol errors, tail-loss probes sent and those answered
	 * with a NAK; entries past those are zero.
	 */
	__u64 counters[DRM_TESSERA_LINK_COUNTERS];
};

#if defined(__cplusplus)
}
#endif

#endif /* __UAPI_TESSERA_ACCEL_H__ */
