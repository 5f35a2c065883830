// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera debugfs, in /sys/kernel/debug/accel/<pci address>/:
 *
 *   registers          the chip's registers
 *   queues             each hardware queue as the driver and the chip see it
 *   contexts           open contexts and the buffers mapped into them
 *   force_recovery     write 1: reset the chip as after a fatal error
 *   ping               write "COOKIE [TIMEOUT_MS]": the chip echoes COOKIE
 *                      through its ping register and device interrupt;
 *                      then read "ECHO LATENCY_NS" of this open file's ping
 *   fail_bo_map/       failure points of the kernel's fault-injection
 *   fail_submit/       framework (Documentation/fault-injection/), with
 *                      CONFIG_FAULT_INJECTION_DEBUG_FS: a buffer's mapping
 *                      into a context, as BO_CREATE or a PRIME import
 *                      makes it, and SUBMIT late, fail with -ENOMEM
 *   submit_wait_done   the next N SUBMITs return only once their job has
 *                      run and could have been freed (a use-after-free
 *                      trap for the debug kernel's KASAN)
 *   timeout_wait_free  the next N timeouts of a finished job let the free
 *                      worker run before they use the job (the same trap)
 *   stop_wait_end      the next N resets let each queue's aborted job end
 *                      before going on, and a queue reset first lets its
 *                      hung job end and the queue take the next: the
 *                      orders in which HEAD would mistake a started job
 *                      for one never taken
 *   hangcheck          0: a job that outlives the timeout is left on its
 *                      ring, for tests that keep a job started until they
 *                      reset the chip (i915's enable_hangcheck)
 *   fault_*            the chip's debug fault-injection block, when present
 *   ici                the ICI block's and each port's registers
 *   ici<p>/control     write 1 to retrain port p, 2 to take it down
 *   ici<p>/fault_*     link faults of port p (debug block, when present)
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/seq_file.h>

#include <drm/drm_debugfs.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_managed.h>

#include "tessera_debugfs.h"
#include "tessera_gem.h"
#include "tessera_hw.h"
#include "tessera_ici.h"
#include "tessera_mmu.h"
#include "tessera_reset.h"

/* The driver's, shared by its chips, as msm's and xe's failure points are. */
DECLARE_FAULT_ATTR(tessera_fail_bo_map);
DECLARE_FAULT_ATTR(tessera_fail_submit);

static struct tessera_device *tessera_seq_tdev(struct seq_file *m)
{
	struct drm_debugfs_entry *entry = m->private;

	return to_tessera_device(entry->dev);
}

static int tessera_registers_show(struct seq_file *m, void *unused)
{
	static const struct {
		const char *name;
		u32 reg;
	} regs[] = {
		{ "CHIP_ID", TSR_REG_CHIP_ID },
		{ "DEVICE_VERSION", TSR_REG_DEVICE_VERSION },
		{ "CAPS", TSR_REG_CAPS },
		{ "PRESET", TSR_REG_PRESET },
		{ "STATUS", TSR_REG_STATUS },
		{ "IRQ_STATUS", TSR_REG_IRQ_STATUS },
		{ "IRQ_ENABLE", TSR_REG_IRQ_ENABLE },
		{ "PING_COUNT", TSR_REG_PING_COUNT },
		{ "MMU_CTX_TABLE_LO", TSR_REG_MMU_CTX_TABLE_LO },
		{ "MMU_CTX_TABLE_HI", TSR_REG_MMU_CTX_TABLE_HI },
		{ "MMU_CTX_COUNT", TSR_REG_MMU_CTX_COUNT },
		{ "MMU_FAULT_CONTEXT", TSR_REG_MMU_FAULT_CONTEXT },
		{ "MMU_FAULT_VA_LO", TSR_REG_MMU_FAULT_VA_LO },
		{ "MMU_FAULT_VA_HI", TSR_REG_MMU_FAULT_VA_HI },
		{ "MMU_FAULT_REASON", TSR_REG_MMU_FAULT_REASON },
		{ "MMU_FAULT_COUNT", TSR_REG_MMU_FAULT_COUNT },
	};
	static const struct {
		const char *name;
		u32 reg;
	} qregs[] = {
		{ "CONTROL", TSR_QREG_CONTROL },
		{ "STATUS", TSR_QREG_STATUS },
		{ "HEAD", TSR_QREG_HEAD },
		{ "STARTED", TSR_QREG_STARTED },
		{ "TAIL", TSR_QREG_TAIL },
		{ "JOBS_DONE", TSR_QREG_JOBS_DONE },
		{ "JOBS_FAILED", TSR_QREG_JOBS_FAILED },
		{ "IRQ_STATUS", TSR_QREG_IRQ_STATUS },
		{ "LAST_ERROR", TSR_QREG_LAST_ERROR },
	};
	struct tessera_device *tdev = tessera_seq_tdev(m);
	unsigned int i, q;
	u64 clock;
	int idx;

	if (!drm_dev_enter(&tdev->drm, &idx))
		return -ENODEV;
	for (i = 0; i < ARRAY_SIZE(regs); i++)
		seq_printf(m, "%-20s 0x%04x 0x%08x\n", regs[i].name, regs[i].reg,
			   tessera_reg_read(tdev, regs[i].reg));
	/* A latched pair is read as one, never interleaved with other readers. */
	clock = tessera_reg_read64(tdev, TSR_REG_CLOCK_LO);
	seq_printf(m, "%-20s 0x%04x 0x%08x\n", "CLOCK_LO", TSR_REG_CLOCK_LO,
		   lower_32_bits(clock));
	seq_printf(m, "%-20s 0x%04x 0x%08x\n", "CLOCK_HI", TSR_REG_CLOCK_HI,
		   upper_32_bits(clock));
	for (q = 0; q < tdev->num_queues; q++) {
		u32 base = TSR_QUEUE_BASE(q);
		u64 fence = tessera_reg_read64(tdev, base + TSR_QREG_FENCE_LO);

		for (i = 0; i < ARRAY_SIZE(qregs); i++)
			seq_printf(m, "Q%u_%-17s 0x%04x 0x%08x\n", q, qregs[i].name,
				   base + qregs[i].reg,
				   tessera_reg_read(tdev, base + qregs[i].reg));
		seq_printf(m, "Q%u_%-17s 0x%04x 0x%08x\n", q, "FENCE_LO",
			   base + TSR_QREG_FENCE_LO, lower_32_bits(fence));
		seq_printf(m, "Q%u_%-17s 0x%04x 0x%08x\n", q, "FENCE_HI",
			   base + TSR_QREG_FENCE_HI, upper_32_bits(fence));
	}
	drm_dev_exit(idx);
	return 0;
}

static int tessera_queues_show(struct seq_file *m, void *unused)
{
	struct tessera_device *tdev = tessera_seq_tdev(m);
	unsigned int i;

	for (i = 0; i < tdev->num_queues; i++) {
		struct tessera_queue *q = &tdev->queues[i];
		struct list_head *pos;
		unsigned int inflight = 0;
		unsigned long flags;
		u64 seqno, fence;
		u32 tail;

		spin_lock_irqsave(&q->lock, flags);
		list_for_each(pos, &q->inflight)
			inflight++;
		seqno = q->seqno;
		tail = q->tail;
		fence = le64_to_cpu(READ_ONCE(*q->fence_cpu));
		spin_unlock_irqrestore(&q->lock, flags);
		seq_printf(m, "queue %u: tail %u seqno %llu fence %llu inflight %u credits %u/%u\n",
			   i, tail, seqno, fence, inflight,
			   atomic_read(&q->sched.credit_count),
			   q->sched.credit_limit);
	}
	return 0;
}

static int tessera_contexts_show(struct seq_file *m, void *unused)
{
	struct tessera_device *tdev = tessera_seq_tdev(m);
	struct tessera_mapping *map;
	struct tessera_ctx *ctx;
	struct tessera_bo *bo;

	mutex_lock(&tdev->ctx_lock);
	list_for_each_entry(ctx, &tdev->contexts, link) {
		seq_printf(m, "context %u: pid %d jobs %lld faults %d%s\n",
			   ctx->id, ctx->pid, atomic64_read(&ctx->jobs),
			   atomic_read(&ctx->faults),
			   READ_ONCE(ctx->banned) ? " banned" : "");
		mutex_lock(&ctx->lock);
		list_for_each_entry(map, &ctx->mappings, ctx_link) {
			bo = map->bo;
			seq_printf(m, "  va 0x%010llx size %zu %s%s refs %u\n",
				   map->va.start, bo->base.base.size,
				   bo->hbm ? "hbm" : "host",
				   bo->base.base.import_attach ? " imported" : "",
				   kref_read(&map->ref));
		}
		mutex_unlock(&ctx->lock);
	}
	mutex_unlock(&tdev->ctx_lock);
	return 0;
}

static int tessera_ici_show(struct seq_file *m, void *unused)
{
	static const struct {
		const char *name;
		u32 reg;
	} regs[] = {
		{ "SLICE_ID", TSR_REG_ICI_SLICE_ID },
		{ "DIMS", TSR_REG_ICI_DIMS },
		{ "COORDS", TSR_REG_ICI_COORDS },
		{ "WRAP", TSR_REG_ICI_WRAP },
		{ "PORTS_WIRED", TSR_REG_ICI_PORTS_WIRED },
		{ "IRQ_STATUS", TSR_REG_ICI_IRQ_STATUS },
		{ "IRQ_ENABLE", TSR_REG_ICI_IRQ_ENABLE },
		{ "PORTS_CHANGED", TSR_REG_ICI_PORTS_CHANGED },
		{ "WINDOW_TABLE_LO", TSR_REG_ICI_WINDOW_TABLE_LO },
		{ "WINDOW_TABLE_HI", TSR_REG_ICI_WINDOW_TABLE_HI },
		{ "WINDOW_COUNT", TSR_REG_ICI_WINDOW_COUNT },
		{ "VIOLATIONS", TSR_REG_ICI_VIOLATIONS },
		{ "VIOL_SOURCE", TSR_REG_ICI_VIOL_SOURCE },
		{ "VIOL_WINDOW", TSR_REG_ICI_VIOL_WINDOW },
		{ "VIOL_REASON", TSR_REG_ICI_VIOL_REASON },
	};
	static const char * const counters[TSR_ICI_CNT_COUNT] = {
		"FRAMES_TX", "FRAMES_RX", "BYTES_TX", "BYTES_RX", "CRC_ERRORS",
		"SEQ_ERRORS", "NAKS", "REPLAYS", "TIMEOUTS", "CREDIT_STALLS",
		"LINK_DOWNS", "PROTOCOL_ERRORS", "TAIL_PROBES", "TAIL_LOSSES",
	};
	struct tessera_device *tdev = tessera_seq_tdev(m);
	unsigned int i, p;
	int idx;

	if (!tdev->ici.ports)
		return 0;
	if (!drm_dev_enter(&tdev->drm, &idx))
		return -ENODEV;
	for (i = 0; i < ARRAY_SIZE(regs); i++)
		seq_printf(m, "%-20s 0x%04x 0x%08x\n", regs[i].name, regs[i].reg,
			   tessera_reg_read(tdev, regs[i].reg));
	for (p = 0; p < tdev->ici.ports; p++) {
		u32 base = TSR_ICI_PORT_BASE(p);
		u32 state = tessera_reg_read(tdev, base + TSR_IREG_STATE);

		seq_printf(m, "P%u_%-17s 0x%04x 0x%08x %s\n", p, "STATE",
			   base + TSR_IREG_STATE, state,
			   tessera_link_state_name(state));
		seq_printf(m, "P%u_%-17s 0x%04x 0x%08x\n", p, "PEER",
			   base + TSR_IREG_PEER,
			   tessera_reg_read(tdev, base + TSR_IREG_PEER));
		seq_printf(m, "P%u_%-17s 0x%04x 0x%08x\n", p, "PEER_SLICE",
			   base + TSR_IREG_PEER_SLICE,
			   tessera_reg_read(tdev, base + TSR_IREG_PEER_SLICE));
		for (i = 0; i < TSR_ICI_CNT_COUNT; i++)
			seq_printf(m, "P%u_%-17s 0x%04x %llu\n", p, counters[i],
				   base + TSR_IREG_CNT_LO(i),
				   tessera_reg_read64(tdev, base +
						      TSR_IREG_CNT_LO(i)));
	}
	drm_dev_exit(idx);
	return 0;
}

static const struct drm_debugfs_info tessera_debugfs_list[] = {
	{ "registers", tessera_registers_show, 0 },
	{ "ici", tessera_ici_show, 0 },
	{ "queues", tessera_queues_show, 0 },
	{ "contexts", tessera_contexts_show, 0 },
};

static ssize_t tessera_force_recovery_write(struct file *file,
					    const char __user *buf, size_t len,
					    loff_t *ppos)
{
	struct tessera_device *tdev = file->private_data;
	bool reset;
	int ret;

	ret = kstrtobool_from_user(buf, len, &reset);
	if (ret)
		return ret;
	if (reset)
		tessera_force_recovery(tdev);
	return len;
}

static const struct file_operations tessera_force_recovery_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = tessera_force_recovery_write,
};

/*
 * A liveness check of the register and MSI-X paths, for root: every
 * client could otherwise make the chip raise interrupts at will.
 */
#define TESSERA_PING_DEFAULT_TIMEOUT_MS	1000
#define TESSERA_PING_MAX_TIMEOUT_MS	60000

struct tessera_ping_file {
	struct tessera_device *tdev;
	bool answered;
	u32 echo;
	u64 latency_ns;
};

static int tessera_ping_open(struct inode *inode, struct file *file)
{
	struct tessera_ping_file *pf;
	int ret;

	/* Unproxied, the file must itself hold off its removal while it opens. */
	ret = debugfs_file_get(file->f_path.dentry);
	if (ret)
		return ret;
	ret = nonseekable_open(inode, file);
	if (ret)
		goto out;
	pf = kzalloc(sizeof(*pf), GFP_KERNEL);
	if (!pf) {
		ret = -ENOMEM;
		goto out;
	}
	pf->tdev = inode->i_private;
	/* The device outlives the file: an unbind wakes a ping, not frees it. */
	drm_dev_get(&pf->tdev->drm);
	file->private_data = pf;
out:
	debugfs_file_put(file->f_path.dentry);
	return ret;
}

static int tessera_ping_release(struct inode *inode, struct file *file)
{
	struct tessera_ping_file *pf = file->private_data;

	drm_dev_put(&pf->tdev->drm);
	kfree(pf);
	return 0;
}

static ssize_t tessera_ping_write(struct file *file, const char __user *ubuf,
				  size_t len, loff_t *ppos)
{
	struct tessera_ping_file *pf = file->private_data;
	unsigned int timeout_ms = TESSERA_PING_DEFAULT_TIMEOUT_MS;
	char buf[32];
	int cookie, n, ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	n = sscanf(buf, "%i %u", &cookie, &timeout_ms);
	if (n < 1 || !timeout_ms || timeout_ms > TESSERA_PING_MAX_TIMEOUT_MS)
		return -EINVAL;
	pf->answered = false;
	ret = tessera_hw_ping(pf->tdev, cookie, timeout_ms, &pf->echo,
			      &pf->latency_ns);
	if (ret)
		return ret;
	pf->answered = true;
	return len;
}

static ssize_t tessera_ping_read(struct file *file, char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	struct tessera_ping_file *pf = file->private_data;
	char buf[48];
	int n;

	if (!pf->answered)
		return -ENODATA;
	n = scnprintf(buf, sizeof(buf), "0x%08x %llu\n", pf->echo,
		      pf->latency_ns);
	return simple_read_from_buffer(ubuf, len, ppos, buf, n);
}

static const struct file_operations tessera_ping_fops = {
	.owner = THIS_MODULE,
	.open = tessera_ping_open,
	.release = tessera_ping_release,
	.read = tessera_ping_read,
	.write = tessera_ping_write,
};

/* One file per register of the chip's debug block. */
struct tessera_dbg_reg {
	const char *name;
	u32 reg;
	bool write_only;
};

static const struct tessera_dbg_reg tessera_dbg_regs[] = {
	{ "fault_hang_queues", TSR_REG_DBG_HANG_QUEUES },
	{ "fault_fail_dma", TSR_REG_DBG_FAIL_DMA },
	{ "fault_poison_lo", TSR_REG_DBG_POISON_LO },
	{ "fault_poison_hi", TSR_REG_DBG_POISON_HI },
	{ "fault_poison_size", TSR_REG_DBG_POISON_SIZE },
	{ "fault_ecc_correctable", TSR_REG_DBG_ECC_CORRECTABLE },
	{ "fault_drop_irqs", TSR_REG_DBG_DROP_IRQS },
	{ "fault_hang_after", TSR_REG_DBG_HANG_AFTER },
	{ "fault_fatal", TSR_REG_DBG_FATAL, true },
};

struct tessera_dbg_file {
	struct tessera_device *tdev;
	u32 reg;
	bool write_only;
};

/* Link faults of each port, at TSR_REG_DBG_LINK_BASE(p). */
static const struct tessera_dbg_reg tessera_dbg_link_regs[] = {
	{ "fault_drop_next", TSR_DREG_LINK_DROP_NEXT },
	{ "fault_drop_ppm", TSR_DREG_LINK_DROP_PPM },
	{ "fault_corrupt_next", TSR_DREG_LINK_CORRUPT_NEXT },
	{ "fault_corrupt_ppm", TSR_DREG_LINK_CORRUPT_PPM },
	{ "fault_drop_acks", TSR_DREG_LINK_DROP_ACKS },
	{ "fault_delay_us", TSR_DREG_LINK_DELAY_US },
	{ "fault_seed", TSR_DREG_LINK_SEED },
};

static int tessera_dbg_reg_get(void *data, u64 *val)
{
	struct tessera_dbg_file *f = data;
	int idx;

	if (!drm_dev_enter(&f->tdev->drm, &idx))
		return -ENODEV;
	*val = f->write_only ? 0 : tessera_reg_read(f->tdev, f->reg);
	drm_dev_exit(idx);
	return 0;
}

static int tessera_dbg_reg_set(void *data, u64 val)
{
	struct tessera_dbg_file *f = data;
	int idx;

	if (val > U32_MAX)
		return -EINVAL;
	if (!drm_dev_enter(&f->tdev->drm, &idx))
		return -ENODEV;
	tessera_reg_write(f->tdev, f->reg, val);
	drm_dev_exit(idx);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(tessera_dbg_reg_fops, tessera_dbg_reg_get,
			 tessera_dbg_reg_set, "0x%llx\n");

/* ici<p>/: the port's CONTROL register and, with the debug block, its faults. */
static void tessera_debugfs_ici_init(struct tessera_device *tdev, bool debug)
{
	unsigned int per_port = 1 + (debug ? ARRAY_SIZE(tessera_dbg_link_regs) : 0);
	struct tessera_dbg_file *files;
	unsigned int p, i;
	struct dentry *dir;
	char name[16];

	files = drmm_kcalloc(&tdev->drm, tdev->ici.ports * per_port,
			     sizeof(*files), GFP_KERNEL);
	if (!files)
		return;
	for (p = 0; p < tdev->ici.ports; p++) {
		snprintf(name, sizeof(name), "ici%u", p);
		dir = debugfs_create_dir(name, tdev->drm.debugfs_root);
		files->tdev = tdev;
		files->reg = TSR_ICI_PORT_BASE(p) + TSR_IREG_CONTROL;
		files->write_only = true;
		debugfs_create_file_unsafe("control", 0200, dir, files,
					   &tessera_dbg_reg_fops);
		files++;
		for (i = 0; i < per_port - 1; i++, files++) {
			files->tdev = tdev;
			files->reg = TSR_REG_DBG_LINK_BASE(p) +
				     tessera_dbg_link_regs[i].reg;
			debugfs_create_file_unsafe(tessera_dbg_link_regs[i].name,
						   0600, dir, files,
						   &tessera_dbg_reg_fops);
		}
	}
}

void tessera_debugfs_init(struct tessera_device *tdev)
{
	struct dentry *root = tdev->drm.debugfs_root;
	bool debug = tessera_reg_read(tdev, TSR_REG_CAPS) & TSR_CAP_DEBUG_REGS;
	struct tessera_dbg_file *files;
	unsigned int i;

	drm_debugfs_add_files(&tdev->drm, tessera_debugfs_list,
			      ARRAY_SIZE(tessera_debugfs_list));
	debugfs_create_file("force_recovery", 0200, root, tdev,
			    &tessera_force_recovery_fops);
	/*
	 * Unproxied: a proxied file's removal, which drm_dev_unplug() does,
	 * would wait for a ping in progress, which only the rest of the unbind
	 * wakes.
	 */
	debugfs_create_file_unsafe("ping", 0600, root, tdev, &tessera_ping_fops);
	fault_create_debugfs_attr("fail_bo_map", root, &tessera_fail_bo_map);
	fault_create_debugfs_attr("fail_submit", root, &tessera_fail_submit);
	debugfs_create_atomic_t("submit_wait_done", 0600, root,
				&tdev->inject_submit_wait_done);
	debugfs_create_atomic_t("timeout_wait_free", 0600, root,
				&tdev->inject_timeout_wait_free);
	debugfs_create_atomic_t("stop_wait_end", 0600, root,
				&tdev->inject_stop_wait_end);
	debugfs_create_bool("hangcheck", 0600, root, &tdev->hangcheck);

	if (tdev->ici.ports)
		tessera_debugfs_ici_init(tdev, debug);
	if (!debug)
		return;
	files = drmm_kcalloc(&tdev->drm, ARRAY_SIZE(tessera_dbg_regs),
			     sizeof(*files), GFP_KERNEL);
	if (!files)
		return;
	for (i = 0; i < ARRAY_SIZE(tessera_dbg_regs); i++) {
		files[i].tdev = tdev;
		files[i].reg = tessera_dbg_regs[i].reg;
		files[i].write_only = tessera_dbg_regs[i].write_only;
		debugfs_create_file_unsafe(tessera_dbg_regs[i].name,
					   tessera_dbg_regs[i].write_only ? 0200 : 0600,
					   root, &files[i], &tessera_dbg_reg_fops);
	}
}
