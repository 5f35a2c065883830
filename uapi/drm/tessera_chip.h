/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * Tessera chip hardware interface: PCI identity, BAR0 register map, MSI-X
 * vectors and interrupt bits.
 *
 * This is the single definition of the chip's programming interface.  The
 * QEMU device model, the kernel driver and libaccel all include it; nothing
 * here is re-typed anywhere else.  Documentation/chip.md describes each
 * register.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef _TESSERA_CHIP_H_
#define _TESSERA_CHIP_H_

/* PCI identity.  0x1234 is QEMU's vendor ID; the device ID is experimental. */
#define TSR_PCI_VENDOR_ID		0x1234
#define TSR_PCI_DEVICE_ID		0x7e55
#define TSR_PCI_REVISION		0x01
/* PCI class "processing accelerator", programming interface 0. */
#define TSR_PCI_CLASS			0x120000

/* Value of TSR_REG_CHIP_ID: "TSRA" in ASCII. */
#define TSR_CHIP_ID			0x54535241

/* Device model version reported in TSR_REG_DEVICE_VERSION. */
#define TSR_DEVICE_VERSION_MAJOR	0
#define TSR_DEVICE_VERSION_MINOR	1
#define TSR_VERSION(major, minor)	(((major) << 16) | (minor))
#define TSR_VERSION_MAJOR(v)		(((v) >> 16) & 0xffff)
#define TSR_VERSION_MINOR(v)		((v) & 0xffff)

/*
 * BAR0: 64 KiB of 32-bit registers followed by the MSI-X table and PBA.
 * The register space is split into 4 KiB blocks, one per chip unit, so
 * that later units (queues, MMU, counters, fault injection, ICI links,
 * SparseCore) each get a block of their own.
 */
#define TSR_BAR0_SIZE			0x20000
#define TSR_BAR0_REGS_SIZE		0x10000
#define TSR_BAR0_MSIX_TABLE		0x10000
#define TSR_BAR0_MSIX_PBA		0x18000

#define TSR_BLOCK_GLOBAL		0x0000
#define TSR_BLOCK_IRQ			0x1000
/* Reserved for later units; reads as zero, writes are ignored. */
#define TSR_BLOCK_QUEUE			0x2000
#define TSR_BLOCK_MMU			0x3000
#define TSR_BLOCK_COUNTERS		0x4000
#define TSR_BLOCK_DEBUG			0x5000
#define TSR_BLOCK_ICI			0x8000
#define TSR_BLOCK_SPARSECORE		0xc000

/* Global block: identity, capabilities, scratch. */
#define TSR_REG_CHIP_ID			(TSR_BLOCK_GLOBAL + 0x000) /* RO */
#define TSR_REG_DEVICE_VERSION		(TSR_BLOCK_GLOBAL + 0x004) /* RO */
#define TSR_REG_CAPS			(TSR_BLOCK_GLOBAL + 0x008) /* RO */
#define TSR_REG_SCRATCH			(TSR_BLOCK_GLOBAL + 0x00c) /* RW */

/* Interrupt block. */
#define TSR_REG_IRQ_STATUS		(TSR_BLOCK_IRQ + 0x000) /* RW1C */
#define TSR_REG_IRQ_ENABLE		(TSR_BLOCK_IRQ + 0x004) /* RW */
#define TSR_REG_PING			(TSR_BLOCK_IRQ + 0x008) /* WO */
#define TSR_REG_PING_ACK		(TSR_BLOCK_IRQ + 0x00c) /* RO */
#define TSR_REG_PING_COUNT		(TSR_BLOCK_IRQ + 0x010) /* RO */

/* Bits of TSR_REG_IRQ_STATUS and TSR_REG_IRQ_ENABLE. */
#define TSR_IRQ_PING			0x00000001u
#define TSR_IRQ_ALL			TSR_IRQ_PING

/*
 * MSI-X vectors.  Vector 0 carries device-level events (ping, and later
 * errors); one vector per hardware queue and one for the ICI links follow.
 */
#define TSR_MSIX_VEC_DEVICE		0
#define TSR_MAX_QUEUES			8
#define TSR_MSIX_VEC_QUEUE(q)		(1 + (q))
#define TSR_MSIX_VEC_LINK		(1 + TSR_MAX_QUEUES)
#define TSR_MSIX_VECTORS		(TSR_MSIX_VEC_LINK + 1)

#endif /* _TESSERA_CHIP_H_ */
