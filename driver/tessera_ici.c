// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera ICI: the chip-to-chip links as the driver sees them
 * (Documentation/ici.md).
 *
 * The chip runs the links itself; the driver reports them (GET_PARAM,
 * LINK_INFO, sysfs, uevents) and owns the window table, through which
 * other chips of the slice may write into buffers that a context opened
 * for them.  A window holds its buffer mapped and closes with its file.
 *
 * The chip reads a table entry for every chunk of a remote write, under
 * the lock of its ICI block; any later write to an ICI register waits for
 * that lock.  So a window is closed by clearing its entry and writing
 * WINDOW_COUNT: once the write is done, no remote write can still reach
 * the buffer, and its mapping may go.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/cred.h>
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>
#include <linux/kobject.h>
#include <linux/random.h>
#include <linux/sysfs.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include "tessera_ctx.h"
#include "tessera_gem.h"
#include "tessera_hw.h"
#include "tessera_ici.h"

unsigned int tessera_max_windows_per_file = 64;
module_param_named(max_windows_per_file, tessera_max_windows_per_file, uint,
		   0644);
MODULE_PARM_DESC(max_windows_per_file,
		 "ICI windows one file may have open; WINDOW_OPEN fails with ENOSPC beyond (default 64)");

unsigned int tessera_max_windows_per_user = DRM_TESSERA_MAX_WINDOWS / 2;
module_param_named(max_windows_per_user, tessera_max_windows_per_user, uint,
		   0644);
MODULE_PARM_DESC(max_windows_per_user,
		 "ICI windows the files of one user (real uid) may have open on a chip; WINDOW_OPEN fails with ENOSPC beyond (default 128)");

static const char * const tessera_link_state_names[] = TSR_ICI_STATE_NAMES;
static const char * const tessera_transport_names[] = TSR_ICI_TRANSPORT_NAMES;

const char *tessera_link_state_name(u32 state)
{
	if (state >= ARRAY_SIZE(tessera_link_state_names))
		return "unknown";
	return tessera_link_state_names[state];
}

static bool tessera_has_ici(struct tessera_device *tdev)
{
	return tdev->ici.ports != 0;
}

/* What port @port's registers hold; the chip is powered (not suspended). */
static void tessera_port_read_chip(struct tessera_device *tdev,
				   unsigned int port,
				   struct tessera_port_regs *out)
{
	u32 base = TSR_ICI_PORT_BASE(port);
	u32 peer = tessera_reg_read(tdev, base + TSR_IREG_PEER);
	unsigned int i;

	memset(out, 0, sizeof(*out));
	out->info.state = tessera_reg_read(tdev, base + TSR_IREG_STATE);
	out->info.peer_slice = tessera_reg_read(tdev, base + TSR_IREG_PEER_SLICE);
	out->info.peer_coords[0] = peer & 0xff;
	out->info.peer_coords[1] = (peer >> 8) & 0xff;
	out->info.peer_coords[2] = (peer >> 16) & 0xff;
	out->info.peer_port = peer >> 24;
	out->transport = tessera_reg_read(tdev, base + TSR_IREG_TRANSPORT);
	for (i = 0; i < TSR_ICI_CNT_COUNT; i++)
		out->counters[i] = tessera_reg_read64(tdev,
						      base + TSR_IREG_CNT_LO(i));
}

/**
 * tessera_ici_ports_save() - the chip is runtime suspending
 * @tdev: the device, its interrupts off
 *
 * Until the resume, LINK_INFO and sysfs tell each port as it is now: a
 * suspended chip's registers are not read, nor is it woken to be asked.
 * No port has a peer (a chip with one does not suspend), so each is down
 * and its counters stand still.  Called before tessera_chip_counters_save(),
 * which says the chip is suspended.
 */
void tessera_ici_ports_save(struct tessera_device *tdev)
{
	unsigned int p;

	spin_lock(&tdev->chip_counter_lock);
	for (p = 0; p < tdev->ici.ports; p++)
		tessera_port_read_chip(tdev, p, &tdev->ici.saved[p]);
	spin_unlock(&tdev->chip_counter_lock);
}

/*
 * Port @port as the chip holds it, or held it at its runtime suspend if it
 * is suspended; the caller is inside drm_dev_enter().
 */
static void tessera_port_read(struct tessera_device *tdev, unsigned int port,
			      struct tessera_port_regs *out)
{
	spin_lock(&tdev->chip_counter_lock);
	if (tdev->chip_counters_saved)
		*out = tdev->ici.saved[port];
	else
		tessera_port_read_chip(tdev, port, out);
	spin_unlock(&tdev->chip_counter_lock);
}

/**
 * tessera_ici_get_param() - a GET_PARAM parameter of the slice
 * @tdev: the device
 * @param: DRM_TESSERA_PARAM_*
 * @index: the dimension of TOPOLOGY and COORDS, else 0
 * @value: the parameter's value
 *
 * Fixed by the slice's wiring: read at probe (tessera_ici_init()).
 *
 * Return: 0, or -EINVAL for a parameter or index the slice does not have.
 */
int tessera_ici_get_param(struct tessera_device *tdev, u32 param, u32 index,
			  u64 *value)
{
	u32 dims = tdev->ici.dims, coords = tdev->ici.coords;
	u32 chips = 1, slice_index = 0;
	unsigned int d;

	for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
		slice_index += ((coords >> (8 * d)) & 0xff) * chips;
		chips *= max((dims >> (8 * d)) & 0xff, 1u);
	}
	if (param == DRM_TESSERA_PARAM_TOPOLOGY ||
	    param == DRM_TESSERA_PARAM_COORDS) {
		if (index >= TSR_ICI_MAX_DIMS)
			return -EINVAL;
		*value = param == DRM_TESSERA_PARAM_COORDS ?
			 (coords >> (8 * index)) & 0xff :
			 max((dims >> (8 * index)) & 0xff, 1u);
		return 0;
	}
	if (index)
		return -EINVAL;
	switch (param) {
	case DRM_TESSERA_PARAM_SLICE_CHIPS:
		*value = chips;
		return 0;
	case DRM_TESSERA_PARAM_SLICE_INDEX:
		*value = slice_index;
		return 0;
	case DRM_TESSERA_PARAM_SLICE_ID:
		*value = tdev->ici.slice_id;
		return 0;
	case DRM_TESSERA_PARAM_WRAP:
		*value = tdev->ici.wrap;
		return 0;
	case DRM_TESSERA_PARAM_PORTS_WIRED:
		*value = tdev->ici.ports_wired;
		return 0;
	case DRM_TESSERA_PARAM_MAX_WINDOWS:
		*value = tessera_has_ici(tdev) ? DRM_TESSERA_MAX_WINDOWS : 0;
		return 0;
	case DRM_TESSERA_PARAM_ICI_LINK_LATENCY_NS:
		*value = tdev->ici.link_latency_ns;
		return 0;
	default:
		return -EINVAL;
	}
}

/* A runtime suspended chip is not woken: it tells the port as it slept. */
int tessera_ioctl_link_info(struct drm_device *drm, void *data,
			    struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct drm_tessera_link_info *li = data;
	struct tessera_port_regs regs;
	int idx;

	if (li->flags) {
		drm_dbg(drm, "LINK_INFO: flags 0x%x must be zero\n", li->flags);
		return -EINVAL;
	}
	if (li->port >= tdev->ici.ports) {
		drm_dbg(drm, "LINK_INFO: port %u, the chip has %u\n", li->port,
			tdev->ici.ports);
		return -EINVAL;
	}
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	tessera_port_read(tdev, li->port, &regs);
	drm_dev_exit(idx);
	li->info = regs.info;
	memcpy(li->counters, regs.counters, sizeof(li->counters));
	return 0;
}

/* ------------------------------------------------------------- windows */

/* Close window @id; window_lock held. */
static void tessera_window_close_locked(struct tessera_device *tdev,
					unsigned int id)
{
	struct tessera_window *w = &tdev->ici.windows[id];
	int idx;

	lockdep_assert_held(&tdev->ici.window_lock);
	if (tdev->ici.table) {
		WRITE_ONCE(tdev->ici.table[id].flags, 0);
		/* Returns once no remote write still uses the old entry. */
		if (drm_dev_enter(&tdev->drm, &idx)) {
			tessera_reg_write(tdev, TSR_REG_ICI_WINDOW_COUNT,
					  DRM_TESSERA_MAX_WINDOWS);
			drm_dev_exit(idx);
		}
	}
	w->owner->windows_open--;
	tessera_bo_window_release(to_tessera_bo(w->obj));
	tessera_mapping_put(w->map);
	drm_gem_object_put(w->obj);
	memset(w, 0, sizeof(*w));
}

/* Windows @uid has open on the chip; window_lock held. */
static unsigned int tessera_windows_of(struct tessera_device *tdev, kuid_t uid)
{
	unsigned int id, n = 0;

	lockdep_assert_held(&tdev->ici.window_lock);
	for (id = 0; id < DRM_TESSERA_MAX_WINDOWS; id++)
		n += tdev->ici.windows[id].owner &&
		     uid_eq(tdev->ici.windows[id].uid, uid);
	return n;
}

/* Whether the file and its user may open one more window; window_lock held. */
static int tessera_window_quota(struct tessera_device *tdev,
				struct tessera_file *tfile, kuid_t uid)
{
	unsigned int n;

	if (tfile->windows_open >= tessera_max_windows_per_file) {
		drm_dbg(&tdev->drm, "WINDOW_OPEN: the file has %u windows open (max_windows_per_file)\n",
			tfile->windows_open);
		return -ENOSPC;
	}
	n = tessera_windows_of(tdev, uid);
	if (n >= tessera_max_windows_per_user) {
		drm_dbg(&tdev->drm, "WINDOW_OPEN: uid %u has %u windows open (max_windows_per_user)\n",
			from_kuid(&init_user_ns, uid), n);
		return -ENOSPC;
	}
	return 0;
}

/* Pick the window for an open; window_lock held. */
static int tessera_window_pick(struct tessera_device *tdev,
			       struct drm_tessera_window_open *wo)
{
	unsigned int id;

	if (wo->flags & DRM_TESSERA_WINDOW_FIXED_ID) {
		if (tdev->ici.windows[wo->id].owner) {
			drm_dbg(&tdev->drm, "WINDOW_OPEN: window %u is open\n",
				wo->id);
			return -EBUSY;
		}
		return wo->id;
	}
	for (id = 0; id < DRM_TESSERA_MAX_WINDOWS; id++)
		if (!tdev->ici.windows[id].owner)
			return id;
	drm_dbg(&tdev->drm, "WINDOW_OPEN: all %u windows are open\n",
		DRM_TESSERA_MAX_WINDOWS);
	return -ENOSPC;
}

static int tessera_window_check(struct drm_device *drm,
				const struct drm_tessera_window_open *wo)
{
	if (wo->flags & ~DRM_TESSERA_WINDOW_FLAGS_ALL) {
		drm_dbg(drm, "WINDOW_OPEN: unknown flags 0x%x\n",
			wo->flags & ~DRM_TESSERA_WINDOW_FLAGS_ALL);
		return -EINVAL;
	}
	if (!(wo->flags & (DRM_TESSERA_WINDOW_READ | DRM_TESSERA_WINDOW_WRITE))) {
		drm_dbg(drm, "WINDOW_OPEN: neither READ nor WRITE\n");
		return -EINVAL;
	}
	if (wo->pad) {
		drm_dbg(drm, "WINDOW_OPEN: pad must be zero\n");
		return -EINVAL;
	}
	if ((wo->flags & DRM_TESSERA_WINDOW_FIXED_ID) &&
	    wo->id >= DRM_TESSERA_MAX_WINDOWS) {
		drm_dbg(drm, "WINDOW_OPEN: window %u, the table has %u\n",
			wo->id, DRM_TESSERA_MAX_WINDOWS);
		return -EINVAL;
	}
	if ((wo->flags & DRM_TESSERA_WINDOW_FIXED_KEY) && !wo->key) {
		drm_dbg(drm, "WINDOW_OPEN: a fixed key must not be 0\n");
		return -EINVAL;
	}
	if (!wo->size) {
		drm_dbg(drm, "WINDOW_OPEN: size 0\n");
		return -EINVAL;
	}
	return 0;
}

int tessera_ioctl_window_open(struct drm_device *drm, void *data,
			      struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct tessera_file *tfile = file->driver_priv;
	struct drm_tessera_window_open *wo = data;
	struct tessera_mapping *map;
	struct tsr_ici_window *e;
	struct drm_gem_object *obj;
	struct tessera_window *w;
	int ret, id, idx;

	ret = tessera_window_check(drm, wo);
	if (ret)
		return ret;
	if (!tessera_has_ici(tdev)) {
		drm_dbg(drm, "WINDOW_OPEN: the chip has no ICI\n");
		return -EOPNOTSUPP;
	}
	obj = drm_gem_object_lookup(file, wo->handle);
	if (!obj) {
		drm_dbg(drm, "WINDOW_OPEN: no buffer with handle %u\n",
			wo->handle);
		return -ENOENT;
	}
	if (wo->offset > obj->size || wo->size > obj->size - wo->offset) {
		drm_dbg(drm, "WINDOW_OPEN: bytes %llu + %llu outside the %zu-byte buffer\n",
			wo->offset, wo->size, obj->size);
		ret = -EINVAL;
		goto err_put;
	}
	if ((wo->flags & DRM_TESSERA_WINDOW_WRITE) &&
	    to_tessera_bo(obj)->device_read_only) {
		drm_dbg(drm, "WINDOW_OPEN: handle %u is read-only to the device\n",
			wo->handle);
		ret = -EACCES;
		goto err_put;
	}
	/* Gone if the handle was closed since the lookup. */
	map = tessera_mapping_get(to_tessera_bo(obj), tfile->ctx);
	if (!map) {
		ret = -ENOENT;
		goto err_put;
	}
	if (!(wo->flags & DRM_TESSERA_WINDOW_FIXED_KEY))
		wo->key = get_random_u64() ?: 1;

	mutex_lock(&tdev->ici.window_lock);
	ret = tessera_window_quota(tdev, tfile, current_uid());
	if (ret)
		goto err_unlock;
	ret = -ENODEV;
	if (!tdev->ici.table || !drm_dev_enter(drm, &idx))
		goto err_unlock;
	id = tessera_window_pick(tdev, wo);
	if (id < 0) {
		ret = id;
		drm_dev_exit(idx);
		goto err_unlock;
	}
	/* A purged buffer has nothing for other chips to write into. */
	ret = tessera_bo_window_hold(to_tessera_bo(obj));
	if (ret) {
		drm_dev_exit(idx);
		goto err_unlock;
	}
	w = &tdev->ici.windows[id];
	w->owner = tfile;
	w->uid = current_uid();
	w->obj = obj;
	w->map = map;
	tfile->windows_open++;

	e = &tdev->ici.table[id];
	e->context = cpu_to_le32(tfile->ctx->id);
	e->va = cpu_to_le64(map->va.start + wo->offset);
	e->size = cpu_to_le64(wo->size);
	e->key = cpu_to_le64(wo->key);
	/* The chip takes an entry as soon as it is valid: the flags go last. */
	dma_wmb();
	WRITE_ONCE(e->flags, cpu_to_le32(TSR_ICI_WINDOW_VALID |
		   (wo->flags & DRM_TESSERA_WINDOW_READ ? TSR_ICI_WINDOW_READ : 0) |
		   (wo->flags & DRM_TESSERA_WINDOW_WRITE ? TSR_ICI_WINDOW_WRITE : 0)));
	drm_dev_exit(idx);
	mutex_unlock(&tdev->ici.window_lock);

	wo->id = id;
	wo->device_va = map->va.start + wo->offset;
	return 0;

err_unlock:
	mutex_unlock(&tdev->ici.window_lock);
	tessera_mapping_put(map);
err_put:
	drm_gem_object_put(obj);
	return ret;
}

int tessera_ioctl_window_close(struct drm_device *drm, void *data,
			       struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct tessera_file *tfile = file->driver_priv;
	struct drm_tessera_window_close *wc = data;
	int ret = 0;

	if (wc->flags) {
		drm_dbg(drm, "WINDOW_CLOSE: flags 0x%x must be zero\n",
			wc->flags);
		return -EINVAL;
	}
	if (wc->id >= DRM_TESSERA_MAX_WINDOWS) {
		drm_dbg(drm, "WINDOW_CLOSE: window %u, the table has %u\n",
			wc->id, DRM_TESSERA_MAX_WINDOWS);
		return -EINVAL;
	}
	mutex_lock(&tdev->ici.window_lock);
	if (tdev->ici.windows[wc->id].owner == tfile) {
		tessera_window_close_locked(tdev, wc->id);
	} else {
		drm_dbg(drm, "WINDOW_CLOSE: the file has no window %u\n",
			wc->id);
		ret = -ENOENT;
	}
	mutex_unlock(&tdev->ici.window_lock);
	return ret;
}

/* The file is closing: so are its windows. */
void tessera_ici_file_fini(struct tessera_file *tfile)
{
	struct tessera_device *tdev = tfile->tdev;
	unsigned int id;

	if (!tfile->windows_open)
		return;
	mutex_lock(&tdev->ici.window_lock);
	for (id = 0; id < DRM_TESSERA_MAX_WINDOWS && tfile->windows_open; id++)
		if (tdev->ici.windows[id].owner == tfile)
			tessera_window_close_locked(tdev, id);
	mutex_unlock(&tdev->ici.window_lock);
}

/* ---------------------------------------------------------- interrupts */

static irqreturn_t tessera_link_irq(int irq, void *arg)
{
	struct tessera_device *tdev = arg;
	u32 status, changed;

	status = tessera_reg_read(tdev, TSR_REG_ICI_IRQ_STATUS);
	if (!status)
		return IRQ_NONE;
	tessera_reg_write(tdev, TSR_REG_ICI_IRQ_STATUS, status);
	changed = tessera_reg_read(tdev, TSR_REG_ICI_PORTS_CHANGED);
	tessera_reg_write(tdev, TSR_REG_ICI_PORTS_CHANGED, changed);
	atomic64_inc(&tdev->irq_count);

	if (status & TSR_ICI_IRQ_REMOTE_ACCESS) {
		u32 v = tessera_reg_read(tdev, TSR_REG_ICI_VIOLATIONS);

		/* One interrupt may tell of several refusals. */
		atomic64_add(v - tdev->ici.violations,
			     &tdev->counters[TESSERA_CNT_REMOTE_ACCESS]);
		tdev->ici.violations = v;
		dev_warn_ratelimited(tdev->drm.dev,
				     "remote write from chip 0x%06x to window %u refused (reason %u)\n",
				     tessera_reg_read(tdev, TSR_REG_ICI_VIOL_SOURCE),
				     tessera_reg_read(tdev, TSR_REG_ICI_VIOL_WINDOW),
				     tessera_reg_read(tdev, TSR_REG_ICI_VIOL_REASON));
	}
	if (changed) {
		atomic_or(changed, &tdev->ici.changed);
		mod_delayed_work(system_wq, &tdev->ici.link_work, 0);
	}
	return IRQ_HANDLED;
}

/*
 * Log lines and uevents a port may cause per interval: a peer that flaps
 * its link must not flood the log and udev.  A change held back is told
 * once the limit allows, as the port's state then.
 */
#define TESSERA_LINK_EVENT_INTERVAL	(5 * HZ)
#define TESSERA_LINK_EVENT_BURST	10

static u64 tessera_port_downs(struct tessera_device *tdev, unsigned int port)
{
	return tessera_reg_read64(tdev, TSR_ICI_PORT_BASE(port) +
				  TSR_IREG_CNT_LO(TSR_ICI_CNT_LINK_DOWNS));
}

/*
 * Count a port's change of state, and tell the log and user space (a
 * uevent) of a state they have not been told.  @changed: the chip changed
 * the port's state since the last look, perhaps and back again.  A link
 * down is one the chip counted (a connection lost and mended, or a
 * retrain, is none, however long the port was seen not up); the chip's
 * count never misses one that came back before this look, as the states
 * seen would.  A port up again after any change is a link up.
 * Return: whether telling must wait for the rate limit.
 */
static bool tessera_link_event(struct tessera_device *tdev, unsigned int port,
			       const struct tessera_port_regs *regs,
			       bool changed)
{
	char port_env[32], state_env[40], peer_env[48];
	char *envp[5];
	u32 was = tdev->ici.state[port], told = tdev->ici.announced[port];
	const struct drm_tessera_port *now = &regs->info;
	u64 downs = regs->counters[TSR_ICI_CNT_LINK_DOWNS];

	tdev->ici.state[port] = now->state;
	atomic64_add(downs - tdev->ici.downs_seen[port],
		     &tdev->counters[TESSERA_CNT_LINK_DOWNS]);
	tdev->ici.downs_seen[port] = downs;
	if (now->state == TSR_ICI_STATE_UP &&
	    (was != TSR_ICI_STATE_UP || changed))
		tessera_count(tdev, TESSERA_CNT_LINK_UPS);
	if (now->state == told)
		return false;
	if (!__ratelimit(&tdev->ici.event_rs[port])) {
		if (now->state != was)
			tessera_count(tdev, TESSERA_CNT_LINK_EVENTS_SUPPRESSED);
		return true;
	}
	tdev->ici.announced[port] = now->state;
	if (now->state == TSR_ICI_STATE_UP || told == TSR_ICI_STATE_UP)
		drm_info(&tdev->drm, "ICI port %u: %s -> %s\n", port,
			 tessera_link_state_name(told),
			 tessera_link_state_name(now->state));

	snprintf(port_env, sizeof(port_env), "TESSERA_PORT=%u", port);
	snprintf(state_env, sizeof(state_env), "TESSERA_LINK_STATE=%s",
		 tessera_link_state_name(now->state));
	snprintf(peer_env, sizeof(peer_env), "TESSERA_PEER=%u,%u,%u:%u",
		 now->peer_coords[0], now->peer_coords[1],
		 now->peer_coords[2], now->peer_port);
	envp[0] = "TESSERA_LINK=1";
	envp[1] = port_env;
	envp[2] = state_env;
	envp[3] = peer_env;
	envp[4] = NULL;
	kobject_uevent_env(&tdev->drm.accel->kdev->kobj, KOBJ_CHANGE, envp);
	return false;
}

/*
 * Looks at every port after any port's change: a few register reads, none
 * if the chip has suspended since (tessera_port_read()).
 */
static void tessera_link_work(struct work_struct *work)
{
	struct tessera_device *tdev = container_of(to_delayed_work(work),
						   struct tessera_device,
						   ici.link_work);
	struct tessera_port_regs now;
	bool held_back = false;
	unsigned int port;
	u32 changed;
	int idx;

	if (!drm_dev_enter(&tdev->drm, &idx))
		return;
	changed = atomic_xchg(&tdev->ici.changed, 0);
	for (port = 0; port < tdev->ici.ports; port++) {
		tessera_port_read(tdev, port, &now);
		held_back |= tessera_link_event(tdev, port, &now,
						changed & BIT(port));
	}
	drm_dev_exit(idx);
	if (held_back)
		schedule_delayed_work(&tdev->ici.link_work,
				      TESSERA_LINK_EVENT_INTERVAL);
}

/*
 * Program the window table and the link interrupts; after every chip
 * reset, in the same hold of window_lock, so that no window closes between
 * the reset and the table's address.
 */
void tessera_ici_hw_enable(struct tessera_device *tdev)
{
	lockdep_assert_held(&tdev->ici.window_lock);
	if (!tessera_has_ici(tdev))
		return;
	tessera_reg_write(tdev, TSR_REG_ICI_WINDOW_TABLE_LO,
			  lower_32_bits(tdev->ici.table_dma));
	tessera_reg_write(tdev, TSR_REG_ICI_WINDOW_TABLE_HI,
			  upper_32_bits(tdev->ici.table_dma));
	tessera_reg_write(tdev, TSR_REG_ICI_WINDOW_COUNT,
			  DRM_TESSERA_MAX_WINDOWS);
	tdev->ici.violations = tessera_reg_read(tdev, TSR_REG_ICI_VIOLATIONS);
	tessera_reg_write(tdev, TSR_REG_ICI_IRQ_STATUS, TSR_ICI_IRQ_ALL);
	tessera_reg_write(tdev, TSR_REG_ICI_IRQ_ENABLE, TSR_ICI_IRQ_ALL);
	/* Whatever changed while nobody listened is looked at now. */
	mod_delayed_work(system_wq, &tdev->ici.link_work, 0);
}

int tessera_ici_irq_init(struct tessera_device *tdev)
{
	struct pci_dev *pdev = to_pci_dev_tdev(tdev);
	int ret;

	if (!tessera_has_ici(tdev))
		return 0;
	ret = devm_request_irq(&pdev->dev,
			       pci_irq_vector(pdev, TSR_MSIX_VEC_LINK),
			       tessera_link_irq, 0, "tessera-ici", tdev);
	if (ret)
		drm_err(&tdev->drm, "cannot request the ICI interrupt: %d\n",
			ret);
	return ret;
}

/* ---------------------------------------------------------------- sysfs */

/*
 * /sys/bus/pci/devices/<address>/ici/port<p>/: state, peer, and one file
 * per counter.
 */
struct tessera_port_kobj {
	struct kobject kobj;
	struct tessera_device *tdev;
	unsigned int port;
};

struct tessera_port_attr {
	struct kobj_attribute attr;
	int counter;	/* enum tsr_ici_counter, or -1 */
};

static ssize_t tessera_port_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	struct tessera_port_kobj *pk = container_of(kobj, struct tessera_port_kobj,
						    kobj);
	struct tessera_port_attr *pa = container_of(attr, struct tessera_port_attr,
						    attr);
	struct tessera_device *tdev = pk->tdev;
	struct tessera_port_regs regs;
	struct drm_tessera_port *port = &regs.info;
	int idx;

	if (!drm_dev_enter(&tdev->drm, &idx))
		return -ENODEV;
	tessera_port_read(tdev, pk->port, &regs);
	drm_dev_exit(idx);
	if (pa->counter >= 0)
		return sysfs_emit(buf, "%llu\n", regs.counters[pa->counter]);
	if (!strcmp(attr->attr.name, "transport"))
		return sysfs_emit(buf, "%s\n",
				  regs.transport < ARRAY_SIZE(tessera_transport_names) ?
				  tessera_transport_names[regs.transport] : "unknown");
	if (!strcmp(attr->attr.name, "state"))
		return sysfs_emit(buf, "%s\n", tessera_link_state_name(port->state));
	return sysfs_emit(buf, "%u,%u,%u:%u slice %u\n", port->peer_coords[0],
			  port->peer_coords[1], port->peer_coords[2],
			  port->peer_port, port->peer_slice);
}

#define TESSERA_PORT_ATTR(_name, _counter) \
	static struct tessera_port_attr tessera_port_attr_##_name = { \
		.attr = __ATTR(_name, 0444, tessera_port_show, NULL), \
		.counter = _counter, \
	}

TESSERA_PORT_ATTR(state, -1);
TESSERA_PORT_ATTR(peer, -1);
TESSERA_PORT_ATTR(transport, -1);
TESSERA_PORT_ATTR(frames_tx, TSR_ICI_CNT_FRAMES_TX);
TESSERA_PORT_ATTR(frames_rx, TSR_ICI_CNT_FRAMES_RX);
TESSERA_PORT_ATTR(bytes_tx, TSR_ICI_CNT_BYTES_TX);
TESSERA_PORT_ATTR(bytes_rx, TSR_ICI_CNT_BYTES_RX);
TESSERA_PORT_ATTR(crc_errors, TSR_ICI_CNT_CRC_ERRORS);
TESSERA_PORT_ATTR(seq_errors, TSR_ICI_CNT_SEQ_ERRORS);
TESSERA_PORT_ATTR(naks, TSR_ICI_CNT_NAKS);
TESSERA_PORT_ATTR(replays, TSR_ICI_CNT_REPLAYS);
TESSERA_PORT_ATTR(timeouts, TSR_ICI_CNT_TIMEOUTS);
TESSERA_PORT_ATTR(credit_stalls, TSR_ICI_CNT_CREDIT_STALLS);
TESSERA_PORT_ATTR(link_downs, TSR_ICI_CNT_LINK_DOWNS);
TESSERA_PORT_ATTR(protocol_errors, TSR_ICI_CNT_PROTOCOL_ERRORS);
TESSERA_PORT_ATTR(tail_probes, TSR_ICI_CNT_TAIL_PROBES);
TESSERA_PORT_ATTR(tail_losses, TSR_ICI_CNT_TAIL_LOSSES);

static struct attribute *tessera_port_attrs[] = {
	&tessera_port_attr_state.attr.attr,
	&tessera_port_attr_peer.attr.attr,
	&tessera_port_attr_transport.attr.attr,
	&tessera_port_attr_frames_tx.attr.attr,
	&tessera_port_attr_frames_rx.attr.attr,
	&tessera_port_attr_bytes_tx.attr.attr,
	&tessera_port_attr_bytes_rx.attr.attr,
	&tessera_port_attr_crc_errors.attr.attr,
	&tessera_port_attr_seq_errors.attr.attr,
	&tessera_port_attr_naks.attr.attr,
	&tessera_port_attr_replays.attr.attr,
	&tessera_port_attr_timeouts.attr.attr,
	&tessera_port_attr_credit_stalls.attr.attr,
	&tessera_port_attr_link_downs.attr.attr,
	&tessera_port_attr_protocol_errors.attr.attr,
	&tessera_port_attr_tail_probes.attr.attr,
	&tessera_port_attr_tail_losses.attr.attr,
	NULL
};
ATTRIBUTE_GROUPS(tessera_port);

static void tessera_port_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct tessera_port_kobj, kobj));
}

static const struct kobj_type tessera_port_ktype = {
	.release = tessera_port_kobj_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = tessera_port_groups,
};

static void tessera_ici_sysfs_fini(struct tessera_device *tdev)
{
	unsigned int p;

	for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
		kobject_put(tdev->ici.port_kobjs[p]);
		tdev->ici.port_kobjs[p] = NULL;
	}
	kobject_put(tdev->ici.ports_kobj);
	tdev->ici.ports_kobj = NULL;
}

static void tessera_ici_sysfs_release(void *arg)
{
	tessera_ici_sysfs_fini(arg);
}

/* The directories go at unbind, or with a probe that fails after this. */
static int tessera_ici_sysfs_init(struct tessera_device *tdev)
{
	struct tessera_port_kobj *pk;
	unsigned int p;
	int ret;

	tdev->ici.ports_kobj = kobject_create_and_add("ici",
						      &tdev->drm.dev->kobj);
	if (!tdev->ici.ports_kobj)
		return -ENOMEM;
	for (p = 0; p < tdev->ici.ports; p++) {
		pk = kzalloc(sizeof(*pk), GFP_KERNEL);
		if (!pk) {
			ret = -ENOMEM;
			goto err;
		}
		pk->tdev = tdev;
		pk->port = p;
		ret = kobject_init_and_add(&pk->kobj, &tessera_port_ktype,
					   tdev->ici.ports_kobj, "port%u", p);
		tdev->ici.port_kobjs[p] = &pk->kobj;
		if (ret)
			goto err;
	}
	return devm_add_action_or_reset(tdev->drm.dev,
					tessera_ici_sysfs_release, tdev);
err:
	tessera_ici_sysfs_fini(tdev);
	return ret;
}

/* ----------------------------------------------------------- lifetime */

/**
 * tessera_ici_init() - the window table and the port directories
 * @tdev: the device, its chip identified
 *
 * The table is device-managed DMA memory: it goes at unbind.
 */
int tessera_ici_init(struct tessera_device *tdev)
{
	unsigned int p;
	int ret;

	ret = drmm_mutex_init(&tdev->drm, &tdev->ici.window_lock);
	if (ret)
		return ret;
	INIT_DELAYED_WORK(&tdev->ici.link_work, tessera_link_work);
	for (p = 0; p < TSR_ICI_MAX_PORTS; p++)
		ratelimit_state_init(&tdev->ici.event_rs[p],
				     TESSERA_LINK_EVENT_INTERVAL,
				     TESSERA_LINK_EVENT_BURST);
	/* The slice's wiring is fixed: GET_PARAM answers from here on. */
	tdev->ici.dims = tessera_reg_read(tdev, TSR_REG_ICI_DIMS);
	tdev->ici.coords = tessera_reg_read(tdev, TSR_REG_ICI_COORDS);
	if (!(tessera_reg_read(tdev, TSR_REG_CAPS) & TSR_CAP_ICI))
		return 0;
	tdev->ici.ports = min_t(u32, tessera_reg_read(tdev, TSR_REG_ICI_PORTS),
				TSR_ICI_MAX_PORTS);
	if (!tdev->ici.ports)
		return 0;
	tdev->ici.slice_id = tessera_reg_read(tdev, TSR_REG_ICI_SLICE_ID);
	tdev->ici.wrap = tessera_reg_read(tdev, TSR_REG_ICI_WRAP);
	tdev->ici.ports_wired = tessera_reg_read(tdev, TSR_REG_ICI_PORTS_WIRED);
	tdev->ici.link_latency_ns = tessera_reg_read(tdev,
						     TSR_REG_ICI_LINK_LATENCY_NS);
	/* Links go down with the wires, not the driver: count from here. */
	for (p = 0; p < tdev->ici.ports; p++)
		tdev->ici.downs_seen[p] = tessera_port_downs(tdev, p);
	tdev->ici.table = dmam_alloc_coherent(tdev->drm.dev,
					      DRM_TESSERA_MAX_WINDOWS *
					      sizeof(*tdev->ici.table),
					      &tdev->ici.table_dma, GFP_KERNEL);
	if (!tdev->ici.table)
		return -ENOMEM;
	return tessera_ici_sysfs_init(tdev);
}

/**
 * tessera_ici_unplug() - stop using the chip's links at unbind
 * @tdev: the device, reset by tessera_hw_fini(): the chip holds no window
 *
 * Windows still open stay with their files until those close, but no
 * longer reach the table, which goes with the device.
 */
void tessera_ici_unplug(struct tessera_device *tdev)
{
	cancel_delayed_work_sync(&tdev->ici.link_work);
	tessera_ici_sysfs_fini(tdev);
	mutex_lock(&tdev->ici.window_lock);
	tdev->ici.table = NULL;
	mutex_unlock(&tdev->ici.window_lock);
}
