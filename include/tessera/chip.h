/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Tessera chip hardware interface: PCI identity, BARs, register map,
 * interrupts, presets, queue and job formats, the completion record,
 * command encodings, the device MMU's page-table format and error codes.
 *
 * This is the single definition of the chip's programming interface.  The
 * QEMU device model, the kernel driver and libaccel all include it; nothing
 * here is re-typed anywhere else.  Documentation/chip.md describes each
 * item.
 *
 * The chip's formats are little-endian, in memory (rings, completion
 * records, tables, commands, traces) and on its links: structure fields
 * are __le16/__le32/__le64.  Sparse holds the driver to converting them
 * (cpu_to_le32() and the like); to userspace and QEMU they are plain
 * integers.  The QEMU device model and libaccel read and write commands
 * and frames in place, and build for little-endian hosts only.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef _TESSERA_CHIP_H_
#define _TESSERA_CHIP_H_

#include <linux/const.h>
#include <linux/types.h>

/* ------------------------------------------------------------------ PCI */

/* 0x1234 is QEMU's vendor ID; the device ID is experimental. */
#define TSR_PCI_VENDOR_ID		0x1234
#define TSR_PCI_DEVICE_ID		0x7e55
#define TSR_PCI_REVISION		0x01
/* PCI class "processing accelerator", programming interface 0. */
#define TSR_PCI_CLASS			0x120000

/* Value of TSR_REG_CHIP_ID: "TSRA" in ASCII. */
#define TSR_CHIP_ID			0x54535241

/* Device model version reported in TSR_REG_DEVICE_VERSION. */
#define TSR_DEVICE_VERSION_MAJOR	0
#define TSR_DEVICE_VERSION_MINOR	7
#define TSR_VERSION(major, minor)	(((major) << 16) | (minor))
#define TSR_VERSION_MAJOR(v)		(((v) >> 16) & 0xffff)
#define TSR_VERSION_MINOR(v)		((v) & 0xffff)

/* ----------------------------------------------------------------- BARs */

/*
 * BAR0: 64 KiB of 32-bit registers followed by the MSI-X table and PBA.
 * BAR2: the chip's HBM, 64-bit prefetchable, TSR_REG_HBM_SIZE bytes.
 */
#define TSR_BAR_REGS			0
#define TSR_BAR_HBM			2
#define TSR_BAR0_SIZE			0x20000
#define TSR_BAR0_REGS_SIZE		0x10000
#define TSR_BAR0_MSIX_TABLE		0x10000
#define TSR_BAR0_MSIX_PBA		0x18000

/*
 * The register space is split into 4 KiB blocks, one per chip unit.
 * Offsets no register occupies read as zero and ignore writes.
 */
#define TSR_BLOCK_GLOBAL		0x0000
#define TSR_BLOCK_IRQ			0x1000
#define TSR_BLOCK_QUEUE			0x2000
#define TSR_BLOCK_MMU			0x3000
#define TSR_BLOCK_COUNTERS		0x4000
#define TSR_BLOCK_DEBUG			0x5000
#define TSR_BLOCK_ICI			0x8000	/* reserved for the ICI links */
#define TSR_BLOCK_SPARSECORE		0xc000	/* SparseCore */

/* ------------------------------------------------------- global block */

#define TSR_REG_CHIP_ID			(TSR_BLOCK_GLOBAL + 0x000) /* RO */
#define TSR_REG_DEVICE_VERSION		(TSR_BLOCK_GLOBAL + 0x004) /* RO */
#define TSR_REG_CAPS			(TSR_BLOCK_GLOBAL + 0x008) /* RO */
#define TSR_REG_SCRATCH			(TSR_BLOCK_GLOBAL + 0x00c) /* RW */
/* Chip configuration, fixed by the preset and its overrides (RO). */
#define TSR_REG_PRESET			(TSR_BLOCK_GLOBAL + 0x010)
#define TSR_REG_TENSORCORES		(TSR_BLOCK_GLOBAL + 0x014)
#define TSR_REG_MXUS_PER_CORE		(TSR_BLOCK_GLOBAL + 0x018)
#define TSR_REG_MXU_DIM			(TSR_BLOCK_GLOBAL + 0x01c)
#define TSR_REG_VPU_SUBLANES		(TSR_BLOCK_GLOBAL + 0x020)
#define TSR_REG_VPU_LANES		(TSR_BLOCK_GLOBAL + 0x024)
#define TSR_REG_VMEM_MIB		(TSR_BLOCK_GLOBAL + 0x028)
#define TSR_REG_CLOCK_MHZ		(TSR_BLOCK_GLOBAL + 0x02c)
#define TSR_REG_HBM_SIZE_LO		(TSR_BLOCK_GLOBAL + 0x030)
#define TSR_REG_HBM_SIZE_HI		(TSR_BLOCK_GLOBAL + 0x034)
#define TSR_REG_HBM_GBPS		(TSR_BLOCK_GLOBAL + 0x038)
#define TSR_REG_HOST_DMA_GBPS		(TSR_BLOCK_GLOBAL + 0x03c)
#define TSR_REG_NUM_QUEUES		(TSR_BLOCK_GLOBAL + 0x040)
#define TSR_REG_MAX_CONTEXTS		(TSR_BLOCK_GLOBAL + 0x044)
#define TSR_REG_ICI_PORTS		(TSR_BLOCK_GLOBAL + 0x048)
#define TSR_REG_ICI_LINK_GBPS		(TSR_BLOCK_GLOBAL + 0x04c)
#define TSR_REG_ICI_LINK_LATENCY_NS	(TSR_BLOCK_GLOBAL + 0x050)
/* Device control and state. */
#define TSR_REG_RESET			(TSR_BLOCK_GLOBAL + 0x080) /* WO */
#define TSR_REG_STATUS			(TSR_BLOCK_GLOBAL + 0x084) /* RO */
/* Modeled device clock, in cycles; read LO first, it latches HI. */
#define TSR_REG_CLOCK_LO		(TSR_BLOCK_GLOBAL + 0x088) /* RO */
#define TSR_REG_CLOCK_HI		(TSR_BLOCK_GLOBAL + 0x08c) /* RO */

/* Writing this to TSR_REG_RESET resets the chip; other values are ignored. */
#define TSR_RESET_MAGIC			0x52534554	/* "RSET" */

/* Bits of TSR_REG_STATUS. */
#define TSR_STATUS_READY		0x00000001u
#define TSR_STATUS_FATAL		0x00000002u	/* needs a reset */

/* Bits of TSR_REG_CAPS. */
#define TSR_CAP_DEBUG_REGS		0x00000001u	/* debug block enabled */
#define TSR_CAP_BF16			0x00000002u
#define TSR_CAP_INT8			0x00000004u
#define TSR_CAP_ICI			0x00000008u	/* ICI block, TSR_OP_ICI_WRITE */
#define TSR_CAP_VPU_I32			0x00000010u	/* integer VPU ADD..MIN, 0.4 */
#define TSR_CAP_TRACE			0x00000020u	/* TSR_JOB_TRACE */
#define TSR_CAP_SEM_ABORT		0x00000040u	/* TSR_OP_SEM_WAIT_ABORT */
#define TSR_CAP_SPARSECORE		0x00000080u	/* SparseCore block, TSR_OP_SC_* */
#define TSR_CAP_SEM_LINKS		0x00000100u	/* TSR_SEM_WAIT_LINKS */

/* Values of TSR_REG_PRESET. */
#define TSR_PRESET_CUSTOM		0
#define TSR_PRESET_V2			2
#define TSR_PRESET_V3			3
#define TSR_PRESET_V4			4
#define TSR_PRESET_V5E			5
#define TSR_PRESET_V5P			6
#define TSR_PRESET_V6E			7

/* ---------------------------------------------------- interrupt block */

#define TSR_REG_IRQ_STATUS		(TSR_BLOCK_IRQ + 0x000) /* RW1C */
#define TSR_REG_IRQ_ENABLE		(TSR_BLOCK_IRQ + 0x004) /* RW */
#define TSR_REG_PING			(TSR_BLOCK_IRQ + 0x008) /* WO */
#define TSR_REG_PING_ACK		(TSR_BLOCK_IRQ + 0x00c) /* RO */
#define TSR_REG_PING_COUNT		(TSR_BLOCK_IRQ + 0x010) /* RO */

/* Device-level causes: bits of TSR_REG_IRQ_STATUS and TSR_REG_IRQ_ENABLE. */
#define TSR_IRQ_PING			0x00000001u
#define TSR_IRQ_FATAL			0x00000002u
#define TSR_IRQ_MMU_FAULT		0x00000004u
#define TSR_IRQ_ECC_CORRECTABLE		0x00000008u
#define TSR_IRQ_ECC_UNCORRECTABLE	0x00000010u
#define TSR_IRQ_ALL			0x0000001fu

/*
 * MSI-X vectors.  Vector 0 carries device-level causes; each hardware
 * queue has its own vector; the ICI links share one.
 */
#define TSR_MSIX_VEC_DEVICE		0
#define TSR_MAX_QUEUES			8
#define TSR_MSIX_VEC_QUEUE(q)		(1 + (q))
#define TSR_MSIX_VEC_LINK		(1 + TSR_MAX_QUEUES)
#define TSR_MSIX_VECTORS		(TSR_MSIX_VEC_LINK + 1)

/* -------------------------------------------------------- queue block */

/*
 * Hardware queue q has its registers at TSR_QUEUE_BASE(q).  A queue is a
 * ring of struct tsr_job_desc in system memory.  The driver writes
 * descriptors, then the index one past the last to TAIL (the doorbell);
 * the queue runs them in order and advances HEAD as each one completes.
 * STARTED is one past the last descriptor the queue took: the jobs before
 * it have started (and may have taken effect in part), those from it on
 * have not.  A job the queue aborted or failed still ends and moves HEAD,
 * so HEAD alone cannot tell a started job from one never taken.
 */
#define TSR_QUEUE_STRIDE		0x100
#define TSR_QUEUE_BASE(q)		(TSR_BLOCK_QUEUE + (q) * TSR_QUEUE_STRIDE)

#define TSR_QREG_RING_BASE_LO		0x00	/* RW, bus address */
#define TSR_QREG_RING_BASE_HI		0x04	/* RW */
#define TSR_QREG_RING_SIZE		0x08	/* RW, entries */
#define TSR_QREG_CONTROL		0x0c	/* RW */
#define TSR_QREG_TAIL			0x10	/* RW, doorbell */
#define TSR_QREG_HEAD			0x14	/* RO */
#define TSR_QREG_STATUS			0x18	/* RO */
#define TSR_QREG_FENCE_ADDR_LO		0x20	/* RW, bus address or 0 */
#define TSR_QREG_FENCE_ADDR_HI		0x24	/* RW */
#define TSR_QREG_FENCE_LO		0x28	/* RO, last completed fence */
#define TSR_QREG_FENCE_HI		0x2c	/* RO */
#define TSR_QREG_JOBS_DONE		0x30	/* RO */
#define TSR_QREG_JOBS_FAILED		0x34	/* RO */
#define TSR_QREG_IRQ_STATUS		0x38	/* RW1C */
#define TSR_QREG_IRQ_ENABLE		0x3c	/* RW */
#define TSR_QREG_LAST_ERROR		0x40	/* RO, TSR_ERR_* of last failed job */
#define TSR_QREG_STARTED		0x44	/* RO, one past the last job taken */

#define TSR_RING_SIZE_MIN		2
#define TSR_RING_SIZE_MAX		4096	/* a power of two in between */
#define TSR_RING_ALIGN			64

/* Bits of TSR_QREG_CONTROL. */
#define TSR_QCTRL_ENABLE		0x00000001u
/* Write-only: abort the running job, drop queued ones, HEAD = TAIL = 0. */
#define TSR_QCTRL_RESET			0x00000002u

/* Values of TSR_QREG_STATUS. */
#define TSR_QSTATUS_DISABLED		0
#define TSR_QSTATUS_IDLE		1
#define TSR_QSTATUS_RUNNING		2
#define TSR_QSTATUS_BAD_RING		3	/* ring registers invalid */
#define TSR_QSTATUS_HUNG		4	/* injected hang */

/* Queue causes: bits of TSR_QREG_IRQ_STATUS and TSR_QREG_IRQ_ENABLE. */
#define TSR_QIRQ_JOB_DONE		0x00000001u
#define TSR_QIRQ_JOB_ERROR		0x00000002u
#define TSR_QIRQ_USER			0x00000004u	/* INTERRUPT command */
#define TSR_QIRQ_ALL			0x00000007u

/**
 * struct tsr_job_desc - one entry of a hardware queue's ring
 * @context: context whose address space the job runs in
 * @flags: TSR_JOB_* flags
 * @cmdbuf_va: device VA of the first command
 * @cmdbuf_size: bytes of commands, a multiple of 8
 * @trace_size: with TSR_JOB_TRACE, bytes of the trace buffer at @trace_va:
 *	a multiple of 8, from sizeof(struct tsr_trace_header) to
 *	TSR_TRACE_MAX_SIZE; otherwise zero
 * @completion_va: device VA of a struct tsr_completion, or 0 for none
 * @fence: value written to the queue's fence on completion
 * @trace_va: with TSR_JOB_TRACE, 8-byte aligned device VA of the job's
 *	trace buffer; otherwise zero
 * @reserved: must be zero
 */
struct tsr_job_desc {
	__le32 context;
	__le32 flags;
	__le64 cmdbuf_va;
	__le32 cmdbuf_size;
	__le32 trace_size;
	__le64 completion_va;
	__le64 fence;
	__le64 trace_va;
	__le64 reserved[2];
};

/* Raise TSR_QIRQ_JOB_DONE when the job succeeds (errors always raise). */
#define TSR_JOB_IRQ			0x00000001u
/* Write the job's trace (struct tsr_trace_header) at @trace_va. */
#define TSR_JOB_TRACE			0x00000002u
#define TSR_JOB_FLAGS_ALL		(TSR_JOB_IRQ | TSR_JOB_TRACE)

/**
 * struct tsr_completion - what the chip writes when a job ends
 * @status: TSR_JOB_STATUS_*
 * @error: TSR_ERR_* code, 0 on success
 * @failed_cmd: index of the command that failed, or TSR_NO_COMMAND when
 *	the job failed before its first command ran
 * @reserved0: zero
 * @fault_va: device VA that faulted, for MMU and memory errors
 * @fence: the job's fence value
 * @start_cycle: modeled device clock when the job started
 * @end_cycle: modeled device clock when it ended
 * @mxu_cycles: modeled cycles the job kept the MXUs busy
 * @vpu_cycles: modeled cycles the job kept the VPU busy
 * @dma_cycles: modeled cycles the job kept the DMA engines busy
 */
struct tsr_completion {
	__le32 status;
	__le32 error;
	__le32 failed_cmd;
	__le32 reserved0;
	__le64 fault_va;
	__le64 fence;
	__le64 start_cycle;
	__le64 end_cycle;
	__le64 mxu_cycles;
	__le64 vpu_cycles;
	__le64 dma_cycles;
};

#define TSR_JOB_STATUS_DONE		1
#define TSR_JOB_STATUS_ERROR		2
/* Written when the job starts, before its first command; ended by the above. */
#define TSR_JOB_STATUS_RUNNING		3
#define TSR_NO_COMMAND			0xffffffffu

/* ---------------------------------------------------------- MMU block */

/*
 * The context table is an array of struct tsr_context_entry in system
 * memory.  Each valid entry names the root of that context's page tables.
 */
#define TSR_REG_MMU_CTX_TABLE_LO	(TSR_BLOCK_MMU + 0x00)	/* RW */
#define TSR_REG_MMU_CTX_TABLE_HI	(TSR_BLOCK_MMU + 0x04)	/* RW */
#define TSR_REG_MMU_CTX_COUNT		(TSR_BLOCK_MMU + 0x08)	/* RW */
/* Write a context number to drop its cached translations, ~0 for all. */
#define TSR_REG_MMU_INVALIDATE		(TSR_BLOCK_MMU + 0x0c)	/* WO */
/* The last fault, latched with TSR_IRQ_MMU_FAULT. */
#define TSR_REG_MMU_FAULT_CONTEXT	(TSR_BLOCK_MMU + 0x10)	/* RO */
#define TSR_REG_MMU_FAULT_VA_LO		(TSR_BLOCK_MMU + 0x14)	/* RO */
#define TSR_REG_MMU_FAULT_VA_HI		(TSR_BLOCK_MMU + 0x18)	/* RO */
#define TSR_REG_MMU_FAULT_REASON	(TSR_BLOCK_MMU + 0x1c)	/* RO, TSR_ERR_* */
#define TSR_REG_MMU_FAULT_COUNT		(TSR_BLOCK_MMU + 0x20)	/* RO */

#define TSR_MAX_CONTEXTS		256
#define TSR_MMU_INVALIDATE_ALL		0xffffffffu

/**
 * struct tsr_context_entry - one context's page-table root
 * @root: bus address of the level-2 table | TSR_CTX_VALID
 * @reserved: must be zero
 */
struct tsr_context_entry {
	__le64 root;
	__le64 reserved;
};

#define TSR_CTX_VALID			0x1ull

/*
 * Page tables: three levels of 512 64-bit entries, each table one 4 KiB
 * page of system memory.  A device VA has 39 bits:
 *   [38:30] level-2 index, [29:21] level-1 index, [20:12] level-0 index,
 *   [11:0] offset in the 4 KiB page.
 * A level-1 entry with TSR_PTE_LEAF maps a 2 MiB page directly.
 */
#define TSR_VA_BITS			39
#define TSR_PAGE_SHIFT			12
#define TSR_PAGE_SIZE			_BITULL(TSR_PAGE_SHIFT)
#define TSR_LARGE_PAGE_SHIFT		21
#define TSR_LARGE_PAGE_SIZE		_BITULL(TSR_LARGE_PAGE_SHIFT)
#define TSR_PT_ENTRIES			512
#define TSR_PT_INDEX(va, level) \
	(((va) >> (TSR_PAGE_SHIFT + 9 * (level))) & (TSR_PT_ENTRIES - 1))

#define TSR_PTE_VALID			0x01ull
#define TSR_PTE_READ			0x02ull
#define TSR_PTE_WRITE			0x04ull
/* The address is an offset in HBM rather than a bus address. */
#define TSR_PTE_HBM			0x08ull
#define TSR_PTE_LEAF			0x10ull
#define TSR_PTE_ADDR_MASK		0x000ffffffffff000ull

/* ----------------------------------------------------- counters block */

/* 64-bit counters, LO then HI; reading LO latches HI. */
#define TSR_REG_CNT_MXU_BUSY_LO		(TSR_BLOCK_COUNTERS + 0x00)
#define TSR_REG_CNT_VPU_BUSY_LO		(TSR_BLOCK_COUNTERS + 0x08)
#define TSR_REG_CNT_DMA_BUSY_LO		(TSR_BLOCK_COUNTERS + 0x10)
#define TSR_REG_CNT_JOBS_LO		(TSR_BLOCK_COUNTERS + 0x18)
#define TSR_REG_CNT_COMMANDS_LO		(TSR_BLOCK_COUNTERS + 0x20)
#define TSR_REG_CNT_HBM_READ_LO		(TSR_BLOCK_COUNTERS + 0x28)	/* bytes */
#define TSR_REG_CNT_HBM_WRITE_LO	(TSR_BLOCK_COUNTERS + 0x30)	/* bytes */
#define TSR_REG_CNT_ECC_CE_LO		(TSR_BLOCK_COUNTERS + 0x38)
#define TSR_REG_CNT_ECC_UE_LO		(TSR_BLOCK_COUNTERS + 0x40)
#define TSR_REG_CNT_RESETS_LO		(TSR_BLOCK_COUNTERS + 0x48)
#define TSR_REG_CNT_SC_BUSY_LO		(TSR_BLOCK_COUNTERS + 0x50)

/* -------------------------------------------------------- debug block */

/*
 * Fault injection from the guest, present only when TSR_CAP_DEBUG_REGS is
 * set (QEMU property debug-regs=on); otherwise the block reads as zero and
 * ignores writes.  The host injects the same faults with QOM properties.
 * Every fault is cleared by a chip reset.
 */
#define TSR_REG_DBG_HANG_QUEUES		(TSR_BLOCK_DEBUG + 0x00) /* RW, mask */
#define TSR_REG_DBG_FAIL_DMA		(TSR_BLOCK_DEBUG + 0x04) /* RW, count */
#define TSR_REG_DBG_POISON_LO		(TSR_BLOCK_DEBUG + 0x08) /* RW */
#define TSR_REG_DBG_POISON_HI		(TSR_BLOCK_DEBUG + 0x0c) /* RW */
#define TSR_REG_DBG_POISON_SIZE		(TSR_BLOCK_DEBUG + 0x10) /* RW, bytes */
#define TSR_REG_DBG_ECC_CORRECTABLE	(TSR_BLOCK_DEBUG + 0x14) /* RW, count */
#define TSR_REG_DBG_DROP_IRQS		(TSR_BLOCK_DEBUG + 0x18) /* RW, count */
#define TSR_REG_DBG_FATAL		(TSR_BLOCK_DEBUG + 0x1c) /* WO */
#define TSR_REG_DBG_HANG_AFTER		(TSR_BLOCK_DEBUG + 0x20) /* RW, commands */

/*
 * Link faults of ICI port p (struct tsr_link faults, Documentation/ici.md
 * "Faults"), applied to the frames the port sends.  Counts read back what
 * is left of them.  Unlike the faults above they belong to the link, not
 * the chip: a chip reset keeps them, as it keeps the links.  A write to
 * the registers of a port without a socket is refused.
 */
#define TSR_REG_DBG_LINK_BASE(p)	(TSR_BLOCK_DEBUG + 0x100 + (p) * 0x20)
#define TSR_DREG_LINK_DROP_NEXT		0x00	/* RW, frames to lose */
#define TSR_DREG_LINK_DROP_PPM		0x04	/* RW, DATA frames per million */
#define TSR_DREG_LINK_CORRUPT_NEXT	0x08	/* RW, frames to flip a bit in */
#define TSR_DREG_LINK_CORRUPT_PPM	0x0c	/* RW, DATA frames per million */
#define TSR_DREG_LINK_DROP_ACKS		0x10	/* RW, ACK frames to lose */
#define TSR_DREG_LINK_DELAY_US		0x14	/* RW, hold the wire once */
#define TSR_DREG_LINK_SEED		0x18	/* RW, of the rate faults */
#define TSR_LINK_FAULT_MAX_PPM		1000000

/* ------------------------------------------------------ command format */

/*
 * A command buffer is a sequence of commands, each a multiple of 8 bytes
 * starting with a struct tsr_cmd_header whose @size_qw gives the whole
 * command's length in 8-byte words.  Unused and reserved fields must be
 * zero.  Addresses are device VAs of the job's context.
 */
struct tsr_cmd_header {
	__u8 opcode;
	__u8 size_qw;
	__le16 flags;
	__le32 reserved;
};

enum tsr_opcode {
	TSR_OP_NOP = 0x00,
	TSR_OP_DMA_COPY = 0x01,
	TSR_OP_DMA_FILL = 0x02,
	TSR_OP_MATMUL = 0x10,
	TSR_OP_VPU = 0x20,
	TSR_OP_REDUCE = 0x21,
	TSR_OP_CAST = 0x22,
	TSR_OP_TRANSPOSE = 0x23,
	TSR_OP_SEM_WAIT = 0x30,
	TSR_OP_SEM_SIGNAL = 0x31,
	TSR_OP_SEM_INC = 0x32,
	TSR_OP_SEM_WAIT_ABORT = 0x33,
	TSR_OP_TIMESTAMP = 0x40,
	TSR_OP_INTERRUPT = 0x41,
	TSR_OP_ICI_WRITE = 0x50,
	TSR_OP_SC_PARTITION = 0x60,
	TSR_OP_SC_GATHER = 0x61,
	TSR_OP_SC_SCATTER_ADD = 0x62,
};

/* Element types. */
enum tsr_dtype {
	TSR_DTYPE_F32 = 1,
	TSR_DTYPE_BF16 = 2,
	TSR_DTYPE_I32 = 3,
	TSR_DTYPE_I8 = 4,
};

/**
 * struct tsr_tensor - a 2-D tensor in device memory
 * @va: device VA of element [0][0], aligned to the element size
 * @rows: number of rows, >= 1
 * @cols: number of columns, >= 1
 * @stride: elements from one row to the next, >= @cols
 * @dtype: enum tsr_dtype
 * @reserved: must be zero
 */
struct tsr_tensor {
	__le64 va;
	__le32 rows;
	__le32 cols;
	__le32 stride;
	__le16 dtype;
	__le16 reserved;
};

/**
 * struct tsr_cmd_dma - TSR_OP_DMA_COPY and TSR_OP_DMA_FILL
 * @hdr: header; no flags defined
 * @src: source VA (copy); for fill, the 32-bit pattern in the low bits
 * @dst: destination VA
 * @size: bytes per row [0], rows [1], planes [2]; each >= 1.  For fill,
 *	size[0] is a multiple of 4
 * @reserved: must be zero
 * @src_stride: bytes between rows [0] and planes [1] of the source
 * @dst_stride: bytes between rows [0] and planes [1] of the destination
 */
struct tsr_cmd_dma {
	struct tsr_cmd_header hdr;
	__le64 src;
	__le64 dst;
	__le32 size[3];
	__le32 reserved;
	__le64 src_stride[2];
	__le64 dst_stride[2];
};

/**
 * struct tsr_cmd_matmul - TSR_OP_MATMUL: C = A x B (+ C)
 * @hdr: header; flags TSR_MATMUL_*
 * @a: M x K (K x M with TSR_MATMUL_TRANSPOSE_A)
 * @b: K x N (N x K with TSR_MATMUL_TRANSPOSE_B), same dtype as @a
 * @c: M x N output
 *
 * A and B are BF16, F32 or I8.  Products accumulate in F32 (I32 for I8);
 * C is F32 or BF16 (I32 for I8 inputs).
 */
struct tsr_cmd_matmul {
	struct tsr_cmd_header hdr;
	struct tsr_tensor a;
	struct tsr_tensor b;
	struct tsr_tensor c;
};

#define TSR_MATMUL_TRANSPOSE_A		0x0001
#define TSR_MATMUL_TRANSPOSE_B		0x0002
#define TSR_MATMUL_ACCUMULATE		0x0004	/* C += A x B */
#define TSR_MATMUL_FLAGS_ALL		0x0007

/**
 * struct tsr_cmd_vpu - TSR_OP_VPU: out = op(a[, b[, c]]) element-wise
 * @hdr: header; no flags defined
 * @op: enum tsr_vpu_op
 * @reserved: must be zero
 * @a: first operand, the shape of @out
 * @b: second operand for binary ops and select: the shape of @out, or one
 *	row (broadcast down the rows) or one column (broadcast across)
 * @c: third operand for select, shaped like @b
 * @out: result
 *
 * Operands are F32 or BF16 and computed in F32; compare ops write 1.0 or
 * 0.0.  With TSR_CAP_VPU_I32, ADD, SUB, MUL, MAX and MIN also take @a,
 * @b and @out all I32, computed in 32-bit two's complement (sums and
 * products wrap).  Unused operands must be all zero.
 */
struct tsr_cmd_vpu {
	struct tsr_cmd_header hdr;
	__le32 op;
	__le32 reserved;
	struct tsr_tensor a;
	struct tsr_tensor b;
	struct tsr_tensor c;
	struct tsr_tensor out;
};

enum tsr_vpu_op {
	/* unary */
	TSR_VPU_NEG = 1,
	TSR_VPU_ABS,
	TSR_VPU_EXP,
	TSR_VPU_LOG,
	TSR_VPU_TANH,
	TSR_VPU_SIGMOID,
	TSR_VPU_RELU,
	TSR_VPU_GELU,
	TSR_VPU_SQRT,
	TSR_VPU_RSQRT,
	/* binary */
	TSR_VPU_ADD = 32,
	TSR_VPU_SUB,
	TSR_VPU_MUL,
	TSR_VPU_DIV,
	TSR_VPU_MAX,
	TSR_VPU_MIN,
	TSR_VPU_CMP_EQ,
	TSR_VPU_CMP_LT,
	TSR_VPU_CMP_LE,
	/* ternary: out = a != 0 ? b : c */
	TSR_VPU_SELECT = 64,
};

/**
 * struct tsr_cmd_reduce - TSR_OP_REDUCE along one axis
 * @hdr: header; flags TSR_REDUCE_*
 * @op: enum tsr_reduce_op
 * @axis: 0 reduces the rows (out is 1 x cols), 1 the columns (rows x 1)
 * @in: F32 or BF16 input
 * @out: result, F32 or BF16
 */
struct tsr_cmd_reduce {
	struct tsr_cmd_header hdr;
	__le32 op;
	__le32 axis;
	struct tsr_tensor in;
	struct tsr_tensor out;
};

enum tsr_reduce_op {
	TSR_REDUCE_SUM = 1,
	TSR_REDUCE_MAX,
	TSR_REDUCE_MIN,
};

/**
 * struct tsr_cmd_unary_copy - TSR_OP_CAST and TSR_OP_TRANSPOSE
 * @hdr: header; no flags defined
 * @in: input
 * @out: output, same shape (cast, between F32, BF16 and I32) or
 *	transposed shape and same dtype (transpose)
 */
struct tsr_cmd_unary_copy {
	struct tsr_cmd_header hdr;
	struct tsr_tensor in;
	struct tsr_tensor out;
};

/**
 * struct tsr_cmd_sem - TSR_OP_SEM_WAIT, TSR_OP_SEM_SIGNAL, TSR_OP_SEM_INC
 * @hdr: header; no flags defined
 * @va: 8-byte aligned VA of a 64-bit semaphore
 * @value: wait until the semaphore is >= @value; store @value; add @value
 */
struct tsr_cmd_sem {
	struct tsr_cmd_header hdr;
	__le64 va;
	__le64 value;
};

/*
 * Bits of struct tsr_cmd_sem_wait_abort's header flags: also fail, with
 * TSR_ERR_LINK_DOWN, as soon as a wired ICI port of this chip is not up
 * (a neighbour gone quiet, hung up or taken down), whether or not the
 * wait was satisfied.
 */
#define TSR_SEM_WAIT_LINKS		0x0001

/**
 * struct tsr_cmd_sem_wait_abort - TSR_OP_SEM_WAIT_ABORT: a SEM_WAIT that
 * another party can end with an error
 * @hdr: header; flags TSR_SEM_WAIT_LINKS
 * @va: 8-byte aligned VA of the 64-bit semaphore waited on
 * @value: wait until it is >= @value
 * @abort_va: 8-byte aligned VA of a 64-bit abort semaphore: once it is not
 *	zero, the command fails with TSR_ERR_PEER_ABORT, whether or not the
 *	wait was satisfied.  Like @va, it must be mapped (0 is an address
 *	like any other: TSR_ERR_MMU_UNMAPPED unless mapped)
 *
 * A slice's chips wait on each other this way so that one chip's failure
 * (a link down, a program gone) can be passed on to every waiting chip
 * by remote writes to their abort semaphores, instead of leaving them to
 * the driver's job timeout.
 */
struct tsr_cmd_sem_wait_abort {
	struct tsr_cmd_header hdr;
	__le64 va;
	__le64 value;
	__le64 abort_va;
};

/**
 * struct tsr_cmd_timestamp - TSR_OP_TIMESTAMP: store the device clock
 * @hdr: header; no flags defined
 * @va: 8-byte aligned VA of the 64-bit cycle count to write
 */
struct tsr_cmd_timestamp {
	struct tsr_cmd_header hdr;
	__le64 va;
};

/* TSR_OP_INTERRUPT: raise TSR_QIRQ_USER on the job's queue; header only. */

/* --------------------------------------------------------- error codes */

enum tsr_error {
	TSR_ERR_NONE = 0,
	TSR_ERR_BAD_OPCODE = 1,		/* unknown opcode */
	TSR_ERR_BAD_SIZE = 2,		/* size_qw wrong, or past the buffer */
	TSR_ERR_BAD_FLAGS = 3,		/* unknown flag bits */
	TSR_ERR_RESERVED = 4,		/* a reserved field is not zero */
	TSR_ERR_BAD_DTYPE = 5,		/* dtype unknown or not allowed */
	TSR_ERR_BAD_SHAPE = 6,		/* zero or mismatched dimensions */
	TSR_ERR_BAD_STRIDE = 7,		/* stride smaller than a row */
	TSR_ERR_BAD_ALIGNMENT = 8,	/* address not aligned to its element */
	TSR_ERR_BAD_OP = 9,		/* unknown VPU or reduce op, bad axis */
	TSR_ERR_MMU_UNMAPPED = 10,	/* VA not mapped in the context */
	TSR_ERR_MMU_PERMISSION = 11,	/* mapping forbids the access */
	TSR_ERR_BAD_CONTEXT = 12,	/* no valid context with that number */
	TSR_ERR_DMA = 13,		/* a system-memory transfer failed */
	TSR_ERR_ECC = 14,		/* uncorrectable HBM error */
	TSR_ERR_BAD_JOB = 15,		/* descriptor fields invalid */
	TSR_ERR_ABORTED = 16,		/* queue or chip reset during the job */
	TSR_ERR_TOO_LARGE = 17,		/* operand beyond the chip's limits */
	TSR_ERR_LINK_DOWN = 18,		/* an ICI link on the way is not up */
	TSR_ERR_REMOTE_ACCESS = 19,	/* refused by the target's windows */
	TSR_ERR_NO_ROUTE = 20,		/* no such chip in the slice */
	TSR_ERR_PEER_ABORT = 21,	/* SEM_WAIT_ABORT's abort semaphore set */
	TSR_ERR_ID_RANGE = 22,		/* a sample or embedding id too large */
	TSR_ERR_MAX_IDS = 23,		/* a partition over max_ids */
	TSR_ERR_MAX_UNIQUE_IDS = 24,	/* a partition over max_unique_ids */
	TSR_ERR_SPMEM = 25,		/* the limits do not fit in SPMEM */
	TSR_ERR_COUNT
};

/* Largest tensor dimension and DMA extent the chip accepts. */
#define TSR_MAX_DIM			0x00100000u
#define TSR_MAX_TRANSFER		_BITULL(32)
/* Largest MATMUL, VPU, REDUCE, CAST or TRANSPOSE operand, in elements. */
#define TSR_MAX_ELEMENTS		_BITULL(28)

/* Bytes per element of @dtype (enum tsr_dtype), 0 if unknown. */
static inline __u32 tsr_dtype_size(__u32 dtype)
{
	switch (dtype) {
	case TSR_DTYPE_F32:
	case TSR_DTYPE_I32:
		return 4;
	case TSR_DTYPE_BF16:
		return 2;
	case TSR_DTYPE_I8:
		return 1;
	default:
		return 0;
	}
}

/* ----------------------------------------------------------- SparseCore */

/*
 * The SparseCore block: the chip's SparseCores, read-only, fixed by the
 * preset and its overrides.  All zero, and TSR_CAP_SPARSECORE clear, on a
 * chip without SparseCores; its TSR_OP_SC_* commands then fail with
 * TSR_ERR_BAD_OPCODE.
 */
#define TSR_REG_SC_CORES		(TSR_BLOCK_SPARSECORE + 0x000)
#define TSR_REG_SC_TILES		(TSR_BLOCK_SPARSECORE + 0x004)	/* per core */
#define TSR_REG_SC_SIMD_F32		(TSR_BLOCK_SPARSECORE + 0x008)	/* lanes */
#define TSR_REG_SC_SIMD_BF16		(TSR_BLOCK_SPARSECORE + 0x00c)	/* lanes */
#define TSR_REG_SC_SPMEM_KIB		(TSR_BLOCK_SPARSECORE + 0x010)	/* per core */

/* Largest COO input of one command, in entries (ids). */
#define TSR_SC_MAX_ENTRIES		0x00100000u
/* Most partitions of TSR_OP_SC_PARTITION, and partitions x max_ids. */
#define TSR_SC_MAX_PARTITIONS		4096u
#define TSR_SC_MAX_SLOTS		0x00200000u
/* Bytes a partitioned id takes in SPMEM, and a unique id on top of it. */
#define TSR_SC_SPMEM_ID_BYTES		12u
#define TSR_SC_SPMEM_UNIQUE_BYTES	4u
/* Table rows are padded to this many bytes (8 f32), and aligned to it. */
#define TSR_SC_ROW_ALIGN		32u
/* A gathered or scattered row moves whole HBM granules of this size. */
#define TSR_SC_HBM_GRANULE		64u
/* The sample id of an unused slot of a partition's output. */
#define TSR_SC_PAD			0xffffffffu

/**
 * struct tsr_sc_coo - ids in coordinate (COO) form: entry i is embedding
 * id @col_ids[i] of sample @row_ids[i], with weight @weights[i]
 * @row_ids: VA of the __u32 sample ids (the rows of the sparse batch)
 * @col_ids: VA of the __u32 embedding ids (the table rows)
 * @weights: VA of the f32 weights, or 0 for a weight of 1 each
 *
 * Each array is 4-byte aligned.  An entry whose sample id is TSR_SC_PAD
 * is an unused slot: TSR_OP_SC_GATHER and TSR_OP_SC_SCATTER_ADD skip it.
 */
struct tsr_sc_coo {
	__le64 row_ids;
	__le64 col_ids;
	__le64 weights;
};

/**
 * struct tsr_sc_counts - what TSR_OP_SC_PARTITION saw in one partition
 * @ids: ids routed to it, after dedup within each sample
 * @unique_ids: distinct embedding ids among them
 * @dropped: ids dropped by TSR_SC_DROP (0 without it)
 * @reserved: zero
 */
struct tsr_sc_counts {
	__le32 ids;
	__le32 unique_ids;
	__le32 dropped;
	__le32 reserved;
};

/* Bits of struct tsr_cmd_sc_partition's header flags. */
#define TSR_SC_DROP			0x0001	/* drop ids over the limits */
#define TSR_SC_PARTITION_FLAGS_ALL	TSR_SC_DROP

/**
 * struct tsr_cmd_sc_partition - TSR_OP_SC_PARTITION: dedup ids within each
 * sample, then route each to partition (embedding id mod @partitions)
 * @hdr: header; flags TSR_SC_DROP
 * @count: entries of @in, 0 to TSR_SC_MAX_ENTRIES
 * @partitions: 1 to TSR_SC_MAX_PARTITIONS: the SparseCores of the chip, or
 *	the chips a table is sharded over
 * @samples: sample ids must be below it, 1 to TSR_MAX_DIM
 * @vocab: embedding ids must be below it (the table's rows), >= 1
 * @max_ids: max_ids_per_partition, >= 1; also each partition's slots in @out
 * @max_unique_ids: max_unique_ids_per_partition, 1 to @max_ids
 * @in: the ids
 * @out: @partitions sections of @max_ids slots: partition p's ids, in input
 *	order, at slots [p x @max_ids, ...), each with its sample, its row in
 *	the partition's shard (embedding id / @partitions) and its weight
 *	(the sum of its duplicates' weights); the rest TSR_SC_PAD, 0, 0.
 *	@out.weights may be 0 not to write the weights
 * @counts: VA of @partitions struct tsr_sc_counts, 4-byte aligned
 *
 * A partition over @max_ids or @max_unique_ids fails the command with
 * TSR_ERR_MAX_IDS or TSR_ERR_MAX_UNIQUE_IDS; it has written @counts and
 * nothing else, and the completion's fault_va is the VA of the first such
 * partition's counts.  With TSR_SC_DROP, ids over a limit are dropped in
 * input order instead, and counted.  @max_ids x TSR_SC_SPMEM_ID_BYTES +
 * @max_unique_ids x TSR_SC_SPMEM_UNIQUE_BYTES must fit in one
 * SparseCore's SPMEM (TSR_ERR_SPMEM), @partitions x @max_ids in
 * TSR_SC_MAX_SLOTS (TSR_ERR_TOO_LARGE).
 */
struct tsr_cmd_sc_partition {
	struct tsr_cmd_header hdr;
	__le32 count;
	__le32 partitions;
	__le32 samples;
	__le32 vocab;
	__le32 max_ids;
	__le32 max_unique_ids;
	struct tsr_sc_coo in;
	struct tsr_sc_coo out;
	__le64 counts;
};

/*
 * How the rows of one sample combine: their weighted sum, divided by 1,
 * the sum of the weights or the square root of the sum of their squares.
 */
enum tsr_sc_combiner {
	TSR_SC_SUM = 1,
	TSR_SC_MEAN = 2,
	TSR_SC_SQRTN = 3,
};

/**
 * struct tsr_cmd_sc_gather - TSR_OP_SC_GATHER: embedding lookup,
 * out[s] = combine(sum of weight x table[id] over the entries of sample s)
 * @hdr: header; no flags defined
 * @count: entries of @in, 0 to TSR_SC_MAX_ENTRIES
 * @combiner: enum tsr_sc_combiner
 * @in: the ids: sample ids below @out.rows, embedding ids below
 *	@table.rows (or TSR_SC_PAD)
 * @table: the embedding table, F32 or BF16, rows padded (stride x element
 *	size a multiple of TSR_SC_ROW_ALIGN) and aligned to TSR_SC_ROW_ALIGN
 * @out: samples x @table.cols, F32 or BF16; a sample without ids gets 0
 *
 * An id out of range fails the command with TSR_ERR_ID_RANGE before it
 * writes anything; fault_va is the VA of the first such id.
 */
struct tsr_cmd_sc_gather {
	struct tsr_cmd_header hdr;
	__le32 count;
	__le32 combiner;
	struct tsr_sc_coo in;
	struct tsr_tensor table;
	struct tsr_tensor out;
};

/**
 * struct tsr_cmd_sc_scatter_add - TSR_OP_SC_SCATTER_ADD: the gradient of
 * a gather, added to a table: dst[id] += @scale x sum, over the entries
 * of id, of weight / combiner's divisor of its sample x grad[sample]
 * @hdr: header; no flags defined
 * @count: entries of @in, 0 to TSR_SC_MAX_ENTRIES
 * @combiner: enum tsr_sc_combiner, the gather's
 * @in: the ids: sample ids below @grad.rows, embedding ids below
 *	@dst.rows (or TSR_SC_PAD)
 * @grad: samples x dim, F32 or BF16
 * @dst: the table (or its gradient), rows x dim, F32 or BF16, padded and
 *	aligned as a gather's table
 * @scale: f32 bits, e.g. minus the learning rate
 * @reserved: must be zero
 *
 * Each id's contributions are summed in f32 in input order, then added
 * to its row once: results are the same run after run.  An id out of
 * range fails the command before it writes anything (TSR_ERR_ID_RANGE).
 */
struct tsr_cmd_sc_scatter_add {
	struct tsr_cmd_header hdr;
	__le32 count;
	__le32 combiner;
	struct tsr_sc_coo in;
	struct tsr_tensor grad;
	struct tsr_tensor dst;
	__le32 scale;
	__le32 reserved;
};

/* ---------------------------------------------------------- ICI links */

/*
 * Ports, in the order of the QEMU properties ici0..ici5: the + and -
 * directions of each dimension.  Port 2d faces +d, port 2d + 1 faces -d;
 * a link always joins port 2d of one chip to port 2d + 1 of its neighbour.
 */
#define TSR_ICI_MAX_PORTS		6
#define TSR_ICI_MAX_DIMS		3
#define TSR_ICI_PORT(dim, negative)	(2 * (dim) + !!(negative))
#define TSR_ICI_PORT_DIM(port)		((port) / 2)
#define TSR_ICI_PORT_OPPOSITE(port)	((port) ^ 1)

/*
 * A port's link state: DISCONNECTED, nobody at the other end of the socket;
 * TRAINING, exchanging identities; UP, carrying frames; MISWIRED, the peer
 * is of this slice but not the neighbour this port faces; FOREIGN, the peer
 * belongs to another slice or speaks another protocol version; DOWN, the
 * retry limit was reached or the port was taken down, until retrained.
 */
enum tsr_ici_state {
	TSR_ICI_STATE_DISCONNECTED = 0,
	TSR_ICI_STATE_TRAINING = 1,
	TSR_ICI_STATE_UP = 2,
	TSR_ICI_STATE_MISWIRED = 3,
	TSR_ICI_STATE_FOREIGN = 4,
	TSR_ICI_STATE_DOWN = 5,
};

/* The states' names, as the device, the driver and the tools print them. */
#define TSR_ICI_STATE_NAMES {					\
	[TSR_ICI_STATE_DISCONNECTED] = "disconnected",		\
	[TSR_ICI_STATE_TRAINING] = "training",			\
	[TSR_ICI_STATE_UP] = "up",				\
	[TSR_ICI_STATE_MISWIRED] = "miswired",			\
	[TSR_ICI_STATE_FOREIGN] = "foreign",			\
	[TSR_ICI_STATE_DOWN] = "down",				\
}

/*
 * Link frames, little-endian, on the port's byte stream: a header, then
 * @len payload bytes and, when @len is not 0, the CRC32C of the payload.
 * The header's own CRC32C lets a receiver find the next frame after
 * corruption.  Every frame carries the cumulative acknowledgment @ack and
 * the credits of both virtual channels.
 */
#define TSR_ICI_FRAME_MAGIC		0x4954	/* "TI" */
/*
 * 3: ACK and NAK frames carry a SACK bitmap (selective repeat).
 * 4: a WRITE chunk carries its number in its request (struct tsr_ici_msg).
 * 5: TAIL frames (a tail-loss probe).
 */
#define TSR_ICI_VERSION			5
#define TSR_ICI_MAX_PAYLOAD		32768
/* Virtual channels: a frame switches to 1 once it has crossed a dateline. */
#define TSR_ICI_VCS			2

enum tsr_ici_frame_type {
	TSR_ICI_FRAME_TRAIN = 1,	/* payload: struct tsr_ici_train */
	TSR_ICI_FRAME_DATA = 2,		/* a sequenced payload */
	TSR_ICI_FRAME_ACK = 3,		/* @ack, SACK and credits only */
	TSR_ICI_FRAME_NAK = 4,		/* resend @ack and the gaps SACK shows */
	TSR_ICI_FRAME_TAIL = 5,		/* answer with a NAK if @seq shows a gap */
};

/* Bits of struct tsr_ici_frame_hdr.flags. */
#define TSR_ICI_FRAME_VC1		0x01	/* DATA: on virtual channel 1 */
#define TSR_ICI_FRAME_PROBE		0x02	/* ACK: answer with an ACK */

/**
 * struct tsr_ici_frame_hdr - the header of every link frame
 * @magic: TSR_ICI_FRAME_MAGIC
 * @type: enum tsr_ici_frame_type
 * @flags: TSR_ICI_FRAME_*
 * @len: payload bytes, at most TSR_ICI_MAX_PAYLOAD (0 for ACK, NAK, TAIL)
 * @reserved: zero
 * @seq: DATA: the frame's sequence number; ACK and NAK: a SACK bitmap,
 *	bit i set when the sender holds DATA frame @ack + 1 + i (received
 *	behind a gap); a NAK asks for @ack and for the frames below the
 *	highest held that are not held; TAIL: the sequence number of the
 *	DATA frame the sender sends next (it sent every one before)
 * @ack: the sequence number the sender expects next from its peer
 * @credit: per virtual channel, how many DATA frames of that channel the
 *	sender has freed room for since the link was trained (mod 2^32): its
 *	peer may send while it has sent fewer
 * @hdr_crc: CRC32C of the header up to this field
 */
struct tsr_ici_frame_hdr {
	__le16 magic;
	__u8 type;
	__u8 flags;
	__le16 len;
	__le16 reserved;
	__le32 seq;
	__le32 ack;
	__le32 credit[TSR_ICI_VCS];
	__le32 hdr_crc;
};

/*
 * Bits of struct tsr_ici_train.flags: PEER_SEEN, the sender has heard the
 * peer; FRESH, the sender has no state from an earlier training.
 */
#define TSR_ICI_TRAIN_PEER_SEEN		0x01
#define TSR_ICI_TRAIN_FRESH		0x02

/**
 * struct tsr_ici_train - a TRAIN frame's payload: who is at this end
 * @version: TSR_ICI_VERSION
 * @slice_id: the slice the sender belongs to
 * @coords: the sender's coordinates in the slice
 * @port: the port the sender sends from
 * @flags: TSR_ICI_TRAIN_*
 * @snd_una: the oldest sequence number the sender may still (re)send
 * @rcv_next: the sequence number the sender expects next
 */
struct tsr_ici_train {
	__le32 version;
	__le32 slice_id;
	__u8 coords[TSR_ICI_MAX_DIMS];
	__u8 port;
	__le32 flags;
	__le32 snd_una;
	__le32 rcv_next;
};

/*
 * Transports (Documentation/ici.md, "Transports").  A port's socket first
 * carries one HELLO each way, then one READY each way, then, on a socket
 * transport, the link frames.  A HELLO with TSR_ICI_HELLO_RING offers the
 * sender's outgoing ring: a sealed memfd, passed with SCM_RIGHTS, of
 * TSR_ICI_RING_HDR_SIZE bytes of struct tsr_ici_ring_hdr and @ring_size
 * data bytes.  A READY with TSR_ICI_HELLO_RING says the sender has mapped
 * its peer's ring.  When both READYs say so, the frames go into the rings
 * and the socket carries only doorbells (TSR_ICI_DOORBELL_*), one byte
 * each; else both ends run on the socket.
 */
#define TSR_ICI_HELLO_MAGIC		0x48525354u	/* "TSRH" */
#define TSR_ICI_READY_MAGIC		0x59525354u	/* "TSRY" */
#define TSR_ICI_HELLO_VERSION		1
#define TSR_ICI_HELLO_RING		0x0001
/*
 * With TSR_ICI_HELLO_RING, in the HELLO and READY both: the sender rings
 * TSR_ICI_DOORBELL_DATA as a FUTEX_WAKE of the ring's @consumer_waiting
 * instead of a byte; both READYs must say so, else both ring bytes.
 */
#define TSR_ICI_HELLO_FUTEX		0x0004
/*
 * Authentication (Documentation/ici.md, "Authentication").  A HELLO with
 * TSR_ICI_HELLO_AUTH says its sender holds the slice's key; both ends must,
 * or neither.  Each keyed end follows its HELLO with a CHALLENGE (a fresh
 * @nonce) and answers the peer's with a PROOF (its own @coords and @port,
 * @mac HMAC-SHA256(key, the PROOF's first 8 bytes || its nonce || the
 * peer's nonce)); the READYs follow only a PROOF that holds.
 */
#define TSR_ICI_HELLO_AUTH		0x0002
#define TSR_ICI_CHALLENGE_MAGIC		0x43525354u	/* "TSRC" */
#define TSR_ICI_PROOF_MAGIC		0x50525354u	/* "TSRP" */
#define TSR_ICI_NONCE_SIZE		32
#define TSR_ICI_MAC_SIZE		32
#define TSR_ICI_RING_MAGIC		0x474e4952u	/* "RING" */
#define TSR_ICI_RING_HDR_SIZE		4096
/* Data bytes of a ring: a power of two in this range. */
#define TSR_ICI_RING_MIN		(64u << 10)
#define TSR_ICI_RING_MAX		(64u << 20)
/* Doorbells: frames wait in the ring you read; room in the ring you write. */
#define TSR_ICI_DOORBELL_DATA		0x44	/* 'D' */
#define TSR_ICI_DOORBELL_ROOM		0x52	/* 'R' */

/**
 * struct tsr_ici_hello - HELLO and READY, the transport's handshake
 * @magic: TSR_ICI_HELLO_MAGIC, or TSR_ICI_READY_MAGIC
 * @version: TSR_ICI_HELLO_VERSION
 * @flags: TSR_ICI_HELLO_RING, TSR_ICI_HELLO_AUTH
 * @ring_size: HELLO with a ring: its data bytes
 * @reserved: zero
 */
struct tsr_ici_hello {
	__le32 magic;
	__le16 version;
	__le16 flags;
	__le32 ring_size;
	__le32 reserved;
};

/**
 * struct tsr_ici_auth - CHALLENGE and PROOF, the handshake's authentication
 * @magic: TSR_ICI_CHALLENGE_MAGIC, or TSR_ICI_PROOF_MAGIC
 * @coords: PROOF: the sender's coordinates
 * @port: PROOF: the sender's port
 * @nonce: CHALLENGE: the sender's nonce, drawn for this connection
 * @mac: PROOF: the MAC
 */
struct tsr_ici_auth {
	__le32 magic;
	__u8 coords[3];
	__u8 port;
	__u8 nonce[TSR_ICI_NONCE_SIZE];
	__u8 mac[TSR_ICI_MAC_SIZE];
};

/**
 * struct tsr_ici_ring_hdr - the head of a ring, in its first page
 * @magic: TSR_ICI_RING_MAGIC
 * @size: data bytes, as the HELLO said
 * @head: bytes the producer has written, ever (mod 2^64); written by it
 * @producer_waiting: the producer waits for room: the consumer, having
 *	made some, clears it and rings TSR_ICI_DOORBELL_ROOM
 * @tail: bytes the consumer has taken, ever; written by it
 * @consumer_waiting: the consumer sleeps: the producer, having written,
 *	clears it and rings TSR_ICI_DOORBELL_DATA
 *
 * Byte i of the stream is at data offset i mod @size, the data starting
 * TSR_ICI_RING_HDR_SIZE bytes into the memfd.  The fields each side
 * writes are on cache lines of their own.  Neither side trusts what the
 * other writes: a @head or @tail more than @size apart from its own count
 * breaks the ring, and with it the link.
 */
struct tsr_ici_ring_hdr {
	__le32 magic;
	__le32 size;
	__u8 pad0[56];
	__le64 head;
	__le32 producer_waiting;
	__u8 pad1[52];
	__le64 tail;
	__le32 consumer_waiting;
	__u8 pad2[52];
};

/* ------------------------------------------------------------ ICI block */

#define TSR_REG_ICI_SLICE_ID		(TSR_BLOCK_ICI + 0x000)	/* RO */
/* Dimensions and coordinates: x | y << 8 | z << 16. */
#define TSR_REG_ICI_DIMS		(TSR_BLOCK_ICI + 0x004)	/* RO */
#define TSR_REG_ICI_COORDS		(TSR_BLOCK_ICI + 0x008)	/* RO */
#define TSR_REG_ICI_WRAP		(TSR_BLOCK_ICI + 0x00c)	/* RO, bit per dim */
#define TSR_REG_ICI_PORTS_WIRED		(TSR_BLOCK_ICI + 0x010)	/* RO, bit per port */
#define TSR_REG_ICI_IRQ_STATUS		(TSR_BLOCK_ICI + 0x014)	/* RW1C */
#define TSR_REG_ICI_IRQ_ENABLE		(TSR_BLOCK_ICI + 0x018)	/* RW */
#define TSR_REG_ICI_PORTS_CHANGED	(TSR_BLOCK_ICI + 0x01c)	/* RW1C, bit per port */
/* The window table: TSR_REG_ICI_WINDOW_COUNT struct tsr_ici_window. */
#define TSR_REG_ICI_WINDOW_TABLE_LO	(TSR_BLOCK_ICI + 0x020)	/* RW */
#define TSR_REG_ICI_WINDOW_TABLE_HI	(TSR_BLOCK_ICI + 0x024)	/* RW */
#define TSR_REG_ICI_WINDOW_COUNT	(TSR_BLOCK_ICI + 0x028)	/* RW */
/* Remote writes refused, and the last one's writer, window and reason. */
#define TSR_REG_ICI_VIOLATIONS		(TSR_BLOCK_ICI + 0x030)	/* RO */
#define TSR_REG_ICI_VIOL_SOURCE		(TSR_BLOCK_ICI + 0x034)	/* RO, coords */
#define TSR_REG_ICI_VIOL_WINDOW		(TSR_BLOCK_ICI + 0x038)	/* RO */
#define TSR_REG_ICI_VIOL_REASON		(TSR_BLOCK_ICI + 0x03c)	/* RO */

/* Causes on MSI-X vector TSR_MSIX_VEC_LINK (ICI_IRQ_STATUS/ENABLE). */
#define TSR_ICI_IRQ_LINK_UP		0x00000001u
#define TSR_ICI_IRQ_LINK_DOWN		0x00000002u
#define TSR_ICI_IRQ_REMOTE_ACCESS	0x00000004u
#define TSR_ICI_IRQ_ALL			0x00000007u

/* Why a remote write was refused (TSR_REG_ICI_VIOL_REASON). */
enum tsr_ici_violation {
	TSR_ICI_VIOL_NONE = 0,
	TSR_ICI_VIOL_NO_WINDOW = 1,	/* beyond the table, or not open */
	TSR_ICI_VIOL_KEY = 2,
	TSR_ICI_VIOL_PERMISSION = 3,	/* the window is not writable */
	TSR_ICI_VIOL_RANGE = 4,		/* bytes or semaphore outside it */
	TSR_ICI_VIOL_FAULT = 5,		/* its memory is not mapped */
};

/* Port p's registers. */
#define TSR_ICI_PORT_BASE(p)		(TSR_BLOCK_ICI + 0x100 + (p) * 0x100)
#define TSR_IREG_STATE			0x00	/* RO, enum tsr_ici_state */
#define TSR_IREG_PEER			0x04	/* RO, coords | port << 24 */
#define TSR_IREG_PEER_SLICE		0x08	/* RO */
#define TSR_IREG_CONTROL		0x0c	/* WO, TSR_ICI_CTRL_* */
/* 64-bit counters, enum tsr_ici_counter; reading LO latches HI. */
#define TSR_IREG_CNT_LO(i)		(0x10 + 8 * (i))
#define TSR_IREG_TRANSPORT		0xf0	/* RO, enum tsr_ici_transport */

/* What carries a port's frames (Documentation/ici.md, "Transports"). */
enum tsr_ici_transport {
	TSR_ICI_TRANSPORT_NONE = 0,	/* not connected, or still choosing */
	TSR_ICI_TRANSPORT_SOCKET = 1,
	TSR_ICI_TRANSPORT_RING = 2,	/* a shared-memory ring pair */
};

#define TSR_ICI_TRANSPORT_NAMES {				\
	[TSR_ICI_TRANSPORT_NONE] = "none",			\
	[TSR_ICI_TRANSPORT_SOCKET] = "socket",			\
	[TSR_ICI_TRANSPORT_RING] = "ring",			\
}

#define TSR_ICI_CTRL_RETRAIN		0x00000001u
#define TSR_ICI_CTRL_DOWN		0x00000002u

enum tsr_ici_counter {
	TSR_ICI_CNT_FRAMES_TX,
	TSR_ICI_CNT_FRAMES_RX,
	TSR_ICI_CNT_BYTES_TX,
	TSR_ICI_CNT_BYTES_RX,
	TSR_ICI_CNT_CRC_ERRORS,
	TSR_ICI_CNT_SEQ_ERRORS,
	TSR_ICI_CNT_NAKS,
	TSR_ICI_CNT_REPLAYS,
	TSR_ICI_CNT_TIMEOUTS,
	TSR_ICI_CNT_CREDIT_STALLS,
	TSR_ICI_CNT_LINK_DOWNS,
	TSR_ICI_CNT_PROTOCOL_ERRORS,
	TSR_ICI_CNT_TAIL_PROBES,	/* TAIL frames sent */
	TSR_ICI_CNT_TAIL_LOSSES,	/* TAIL frames answered with a NAK */
	TSR_ICI_CNT_COUNT
};

/* Bits of struct tsr_ici_window.flags. */
#define TSR_ICI_WINDOW_VALID		0x00000001u
#define TSR_ICI_WINDOW_READ		0x00000002u
#define TSR_ICI_WINDOW_WRITE		0x00000004u

/**
 * struct tsr_ici_window - an entry of the window table
 * @flags: TSR_ICI_WINDOW_*
 * @context: the context whose address space @va is in
 * @va: the window's first byte
 * @size: its bytes
 * @key: what a remote write must name to be let in
 */
struct tsr_ici_window {
	__le32 flags;
	__le32 context;
	__le64 va;
	__le64 size;
	__le64 key;
};

/*
 * Chip-to-chip messages, each the payload of one link DATA frame: a
 * struct tsr_ici_msg and @len data bytes.  A remote write travels as WRITE
 * chunks numbered from 0 in @status, the last flagged LAST (and SEM when
 * it adds to the semaphore); the target answers once, or at the first
 * chunk it refuses.  The chunks of a request take one route, so they
 * arrive in order: a chunk whose number is not the one the target expects
 * next is a write cut on its way (a link that started afresh lost what it
 * held), refused LINK_DOWN with nothing of it or after it written.
 */
enum tsr_ici_msg_type {
	TSR_ICI_MSG_WRITE = 1,
	TSR_ICI_MSG_ANSWER = 2,
};

#define TSR_ICI_MSG_LAST		0x01
#define TSR_ICI_MSG_SEM			0x02
#define TSR_ICI_MSG_MINUS		0x04	/* ties go the minus way round */

/**
 * struct tsr_ici_msg - the header of a chip-to-chip message
 * @type: enum tsr_ici_msg_type
 * @flags: TSR_ICI_MSG_*
 * @src: the sending chip's coordinates
 * @dst: the receiving chip's coordinates
 * @req: the sender's number for the request (an ANSWER repeats it)
 * @window: WRITE: the target window
 * @status: ANSWER: TSR_ERR_NONE, TSR_ERR_REMOTE_ACCESS or TSR_ERR_LINK_DOWN;
 *	WRITE: the chunk's number in its request, from 0
 * @len: data bytes after the header
 * @key: WRITE: the window's key
 * @offset: WRITE: where this chunk's data goes in the window
 * @req_offset: WRITE: the first byte the whole request writes
 * @req_end: WRITE: one past the last byte the whole request writes
 * @sem_offset: WRITE with SEM: the semaphore in the window
 * @sem_add: WRITE with SEM: the value added
 * @arrival: the modeled cycle the message arrives at @dst
 */
struct tsr_ici_msg {
	__u8 type;
	__u8 flags;
	__u8 src[TSR_ICI_MAX_DIMS];
	__u8 dst[TSR_ICI_MAX_DIMS];
	__le32 req;
	__le32 window;
	__le32 status;
	__le32 len;
	__le64 key;
	__le64 offset;
	__le64 req_offset;
	__le64 req_end;
	__le64 sem_offset;
	__le64 sem_add;
	__le64 arrival;
};

/* Data bytes one WRITE chunk carries. */
#define TSR_ICI_MSG_MAX_DATA	(TSR_ICI_MAX_PAYLOAD - sizeof(struct tsr_ici_msg))

/*
 * The latest @arrival a chip takes from a message (2^56 cycles, over two
 * years of modeled time at 1 GHz): a later one is a peer's lie, clamped
 * to it and counted, so that it cannot wrap the modeled clocks it feeds.
 */
#define TSR_ICI_ARRIVAL_MAX	_BITULL(56)

/* Bits of struct tsr_cmd_ici_write's header flags. */
#define TSR_ICI_WRITE_SEM		0x0001	/* add @sem_add at @sem_offset */
/*
 * Where both ways round a wrapped dimension are equally short (the two
 * links between the chips of a ring of 2, or half way round an even
 * ring), go the minus way instead of the plus way, at every hop.
 */
#define TSR_ICI_WRITE_MINUS		0x0002
#define TSR_ICI_WRITE_FLAGS_ALL		(TSR_ICI_WRITE_SEM | TSR_ICI_WRITE_MINUS)

/**
 * struct tsr_cmd_ici_write - TSR_OP_ICI_WRITE: write to another chip
 * @hdr: header; flags TSR_ICI_WRITE_*
 * @dst: the target chip's coordinates in the slice
 * @reserved0: zero
 * @window: the target's window number
 * @key: the window's key
 * @src: local VA of the first byte to send
 * @src_stride: bytes between rows at @src
 * @offset: where the first byte lands, from the start of the window
 * @dst_stride: bytes between rows in the window
 * @rows: rows to send (0 with @row_bytes 0: the semaphore only)
 * @row_bytes: bytes per row
 * @sem_offset: with TSR_ICI_WRITE_SEM, the 64-bit semaphore in the window,
 *	8-byte aligned, that @sem_add is added to once all the data is there
 * @sem_add: the value added
 *
 * The target checks the whole request against the window (open, key,
 * write permission, every byte and the semaphore inside it) before it
 * writes anything, and answers; the command ends with the answer.  The
 * semaphore is never seen changed before the data.
 */
struct tsr_cmd_ici_write {
	struct tsr_cmd_header hdr;
	__u8 dst[TSR_ICI_MAX_DIMS];
	__u8 reserved0;
	__le32 window;
	__le64 key;
	__le64 src;
	__le64 src_stride;
	__le64 offset;
	__le64 dst_stride;
	__le32 rows;
	__le32 row_bytes;
	__le64 sem_offset;
	__le64 sem_add;
};

/* ----------------------------------------------------------- job traces */

/*
 * A job's trace, like a profiling buffer: with TSR_JOB_TRACE the chip
 * writes one struct tsr_trace_record per command it runs, in order, after
 * a struct tsr_trace_header, as far as @trace_size allows; commands beyond
 * that are counted in @dropped.  The header is written last, before the
 * completion record.  The whole buffer must be mapped writable: the chip
 * checks it through the MMU before the first command and fails the job
 * with TSR_ERR_MMU_UNMAPPED or TSR_ERR_MMU_PERMISSION (at the faulting
 * VA, TSR_NO_COMMAND) when it is not.  Times are on the queue's modeled
 * clock, as in struct tsr_completion.
 */
#define TSR_TRACE_MAX_SIZE		(16u << 20)
/* Records a trace buffer of @size bytes holds. */
#define TSR_TRACE_CAPACITY(size) \
	(((size) - sizeof(struct tsr_trace_header)) / \
	 sizeof(struct tsr_trace_record))

/**
 * struct tsr_trace_header - the start of a job's trace buffer
 * @records: records written after the header
 * @dropped: commands that ran without a record: the buffer was full
 * @record_size: sizeof(struct tsr_trace_record), so that records may grow
 * @queue: the hardware queue that ran the job
 * @start_cycle: the job's start, as in its completion record
 * @end_cycle: the job's end, as in its completion record
 */
struct tsr_trace_header {
	__le32 records;
	__le32 dropped;
	__le32 record_size;
	__le32 queue;
	__le64 start_cycle;
	__le64 end_cycle;
};

/*
 * The unit a command keeps busy: the command processor itself (NOP,
 * semaphores, TIMESTAMP, INTERRUPT), the DMA engines (DMA_COPY, DMA_FILL,
 * ICI_WRITE), the MXUs (MATMUL), the VPU (VPU, REDUCE, CAST, TRANSPOSE)
 * or the SparseCores (SC_PARTITION, SC_GATHER, SC_SCATTER_ADD).  A
 * command's cycles count towards its engine's busy cycles of the
 * completion record; the SparseCores' only in TSR_REG_CNT_SC_BUSY_LO.
 */
enum tsr_engine {
	TSR_ENGINE_CP = 0,
	TSR_ENGINE_DMA = 1,
	TSR_ENGINE_MXU = 2,
	TSR_ENGINE_VPU = 3,
	TSR_ENGINE_SC = 4,
	TSR_ENGINE_COUNT
};

/* struct tsr_trace_record.port of a command that sends nothing over ICI. */
#define TSR_TRACE_NO_PORT		0xff

/**
 * struct tsr_trace_record - one command of a traced job
 * @index: the command's index in the job
 * @opcode: enum tsr_opcode
 * @engine: enum tsr_engine
 * @port: ICI_WRITE: the port its first hop leaves by; else TSR_TRACE_NO_PORT
 * @dst: ICI_WRITE: the target chip's coordinates; else zero
 * @reserved: zero
 * @error: TSR_ERR_* the command failed with (the job's last record), or 0
 * @start_cycle: modeled clock when the command started
 * @end_cycle: modeled clock when it ended
 * @mem_bytes: bytes it read and wrote in HBM and system memory
 * @link_bytes: ICI_WRITE: data bytes it sent; else zero
 * @link_start_cycle: ICI_WRITE: modeled clock when the queue's ICI DMA
 *	began sending it (the write is posted: the queue goes on at
 *	@end_cycle); else zero.  Since device model 0.6; before, records end
 *	at @link_bytes (header record_size 48)
 * @link_end_cycle: ICI_WRITE: when its last byte left on the first link;
 *	else zero
 */
struct tsr_trace_record {
	__le32 index;
	__u8 opcode;
	__u8 engine;
	__u8 port;
	__u8 dst[TSR_ICI_MAX_DIMS];
	__le16 reserved;
	__le32 error;
	__le64 start_cycle;
	__le64 end_cycle;
	__le64 mem_bytes;
	__le64 link_bytes;
	__le64 link_start_cycle;
	__le64 link_end_cycle;
};

#endif /* _TESSERA_CHIP_H_ */
