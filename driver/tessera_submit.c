// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera job submission: the SUBMIT, SUBMIT_BATCH and JOB_STATUS ioctls
 * and a job's lifetime.
 *
 * SUBMIT is a batch of one.  A batch copies every job's struct, extensions
 * and arrays in, checks everything, takes references on the buffers and
 * their mappings, prepares the out-syncs, adds syncobj and implicit
 * dependencies, and only then pushes the jobs to the file's entities
 * (tessera_sched.c): nothing that can fail comes after the first push, so
 * a batch is queued whole or not at all.  A job is reference-counted: the
 * scheduler may run and free its share as soon as it is pushed, and the
 * ioctl holds its own until it is done.
 *
 * Consecutive jobs of a batch on one queue and priority are one group: one
 * scheduler job (the first job's), which waits for the union of their
 * dependencies and runs them all behind one doorbell.  Each keeps its own
 * sequence number, status, record and out-fence, a fence of its entity's
 * group timeline that signals when it ends, with its own error.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/capability.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>
#include <drm/drm_syncobj.h>
#include <drm/tessera_accel.h>

#include "tessera_gem.h"
#include "tessera_hw.h"
#include "tessera_job.h"
#include "tessera_pm.h"
#include "tessera_trace.h"

/* ------------------------------------------------------------ lifetime */

/* Give back @n places among @ctx's queued jobs. */
static void tessera_jobs_unreserve(struct tessera_ctx *ctx, u32 n)
{
	atomic_sub(n, &ctx->jobs_queued);
	/* wq_has_sleeper()'s barrier orders the count before the look. */
	if (wq_has_sleeper(&ctx->jobs_room))
		wake_up_all(&ctx->jobs_room);
}

static void tessera_job_release(struct kref *ref)
{
	struct tessera_job *job = container_of(ref, struct tessera_job, ref);
	unsigned int i;

	for (i = 0; i < job->bo_count; i++) {
		if (job->maps[i])
			tessera_mapping_put(job->maps[i]);
		if (job->bos[i])
			drm_gem_object_put(job->bos[i]);
	}
	/* Numbered when the job first ran, else plain memory. */
	if (job->hw_fence->ops)
		dma_fence_put(job->hw_fence);
	else
		kfree(job->hw_fence);
	/* Initialised when the job was pushed, else plain memory. */
	if (job->done && job->done->ops)
		dma_fence_put(job->done);
	else
		kfree(job->done);
	tessera_jobs_unreserve(job->ctx, 1);
	tessera_ctx_put(job->ctx);
	if (job->pm_held)
		tessera_pm_put(job->tdev);
	kvfree(job);
}

void tessera_job_put(struct tessera_job *job)
{
	kref_put(&job->ref, tessera_job_release);
}

/*
 * Whether @n more jobs fit among @ctx's, and then they are counted; no
 * side effect otherwise (it is the condition of a wait, which a wake-up of
 * its own queue would turn into a spin).
 */
static bool tessera_jobs_fit(struct tessera_ctx *ctx, u32 n)
{
	u32 max = READ_ONCE(tessera_max_jobs_per_file);
	int old = atomic_read(&ctx->jobs_queued);

	do {
		if ((u32)old + n > max)
			return false;
	} while (!atomic_try_cmpxchg(&ctx->jobs_queued, &old, old + n));
	return true;
}

/*
 * Places for @n jobs among the file's bounded queued jobs; if they do not
 * fit, -EBUSY, or with @wait (DRM_TESSERA_SUBMIT_WAIT_ROOM) once earlier
 * jobs have ended, as i915's execbuf waits for ring space; a signal ends
 * the wait (-ERESTARTSYS), @n beyond the bound fails at once.  Taken
 * before the device is entered, so that a wait never holds off an unplug.
 */
static int tessera_jobs_reserve(struct tessera_file *tfile, u32 n, bool wait)
{
	struct tessera_ctx *ctx = tfile->ctx;
	u32 max = READ_ONCE(tessera_max_jobs_per_file);

	if (tessera_jobs_fit(ctx, n))
		return 0;
	if (n > max || !wait) {
		drm_dbg(&tfile->tdev->drm, "SUBMIT: %u more jobs do not fit the %u of context %u (max_jobs_per_file)\n",
			n, max, ctx->id);
		return -EBUSY;
	}
	return wait_event_interruptible(ctx->jobs_room,
					tessera_jobs_fit(ctx, n));
}

/*
 * A job of @tfile's context, in a place tessera_jobs_reserve() took, with
 * room for @max_bos buffers in the same allocation.  @resumed: another job
 * of the caller's holds the chip resumed already.  @grouped: the job is
 * one of a group, and gets an out-fence of its own.
 */
static struct tessera_job *tessera_job_create(struct tessera_file *tfile,
					      u32 queue, u32 max_bos,
					      bool resumed, bool grouped)
{
	struct tessera_device *tdev = tfile->tdev;
	struct tessera_ctx *ctx = tfile->ctx;
	struct tessera_job *job;
	int ret = 0;

	job = kvzalloc(size_add(sizeof(*job),
				size_mul(max_bos, sizeof(*job->bos) +
					 sizeof(*job->maps) +
					 sizeof(*job->bo_write))),
		       GFP_KERNEL_ACCOUNT);
	if (!job)
		return ERR_PTR(-ENOMEM);
	job->bos = (struct drm_gem_object **)(job + 1);
	job->maps = (struct tessera_mapping **)(job->bos + max_bos);
	job->bo_write = (bool *)(job->maps + max_bos);
	/* Here, where it may sleep: not in run_job, nor at a reset. */
	job->hw_fence = kzalloc(sizeof(*job->hw_fence), GFP_KERNEL_ACCOUNT);
	if (grouped)
		job->done = kzalloc(sizeof(*job->done), GFP_KERNEL_ACCOUNT);
	/* The chip stays resumed while the job lives. */
	if (!job->hw_fence || (grouped && !job->done))
		ret = -ENOMEM;
	else if (resumed)
		tessera_pm_get_noresume(tdev);
	else
		ret = tessera_pm_get(tdev);
	if (ret) {
		kfree(job->done);
		kfree(job->hw_fence);
		kvfree(job);
		return ERR_PTR(ret);
	}
	job->pm_held = true;
	/* From here on the job's release gives its place back. */
	kref_init(&job->ref);
	job->tdev = tdev;
	job->ctx = tessera_ctx_get(ctx);
	job->q = &tdev->queues[queue];
	job->group = job;
	job->last = job;
	INIT_LIST_HEAD(&job->link);
	return job;
}

/* ------------------------------------------------------- copying in */

/**
 * struct tessera_out_sync - where a job's fence is published
 * @syncobj: the syncobj
 * @chain: the timeline point's chain node, when a point is named
 * @point: the timeline point
 */
struct tessera_out_sync {
	struct drm_syncobj *syncobj;
	struct dma_fence_chain *chain;
	u64 point;
};

/**
 * struct tessera_submit - one job of a SUBMIT or SUBMIT_BATCH in the making
 * @args: its struct drm_tessera_submit, copied in
 * @trace: its DRM_TESSERA_EXT_TRACE, @trace.base.name 0 without one
 * @bos: @args.bo_count buffer entries, copied in
 * @syncs: @args.sync_count syncs, copied in
 * @outs: the out-syncs among @syncs, prepared
 * @out_count: entries in @outs
 * @job: the job, once created
 * @lead: index in the batch of its group's first job (its own if first)
 * @inited: drm_sched_job_init() was done for @job, and it is not queued
 * @finished: its group's scheduler fence, once queued
 * @out: its out-fence, once queued: @finished, or its own if grouped
 * @bos_inline: @bos when there are few enough
 * @syncs_inline: @syncs when there are few enough
 * @outs_inline: @outs when there are few enough
 *
 * Everything copied from user space is copied before drm_dev_enter(): a
 * copy may wait on a page fault for as long as user space likes, and must
 * not hold off an unplug meanwhile.  A job with few buffers and syncs
 * allocates nothing for them: it is one of up to DRM_TESSERA_MAX_BATCH.
 */
struct tessera_submit {
	struct drm_tessera_submit args;
	struct drm_tessera_ext_trace trace;
	struct drm_tessera_submit_bo *bos;
	struct drm_tessera_sync *syncs;
	struct tessera_out_sync *outs;
	u32 out_count;
	struct tessera_job *job;
	u32 lead;
	bool inited;
	struct dma_fence *finished;
	struct dma_fence *out;
	struct drm_tessera_submit_bo bos_inline[4];
	struct drm_tessera_sync syncs_inline[4];
	struct tessera_out_sync outs_inline[2];
};

/*
 * @count elements of @size bytes, @stride bytes apart from @uptr, by
 * copy_struct_from_user()'s rule: bytes past @size must be zero.  Into
 * @room if they fit its @room_count elements, else into an allocation.
 */
static void *tessera_copy_array(struct drm_device *drm, const char *what,
				u64 uptr, u32 count, u32 stride, size_t size,
				void *room, u32 room_count)
{
	void *a = room;
	u32 i;
	int ret;

	if (!count)
		return NULL;
	if (stride < size || stride > DRM_TESSERA_MAX_STRIDE) {
		drm_dbg(drm, "SUBMIT: %s stride %u, not from %zu to %u\n", what,
			stride, size, DRM_TESSERA_MAX_STRIDE);
		return ERR_PTR(-EINVAL);
	}
	if (stride == size && count > room_count)
		return vmemdup_array_user(u64_to_user_ptr(uptr), count, size);
	if (stride == size)
		return copy_from_user(a, u64_to_user_ptr(uptr), count * size) ?
		       ERR_PTR(-EFAULT) : a;
	if (count > room_count)
		a = kvmalloc_array(count, size, GFP_KERNEL_ACCOUNT);
	if (!a)
		return ERR_PTR(-ENOMEM);
	for (i = 0; i < count; i++) {
		ret = copy_struct_from_user(a + i * size, size,
					    u64_to_user_ptr(uptr + (u64)i * stride),
					    stride);
		if (ret) {
			drm_dbg(drm, "SUBMIT: %s[%u]: %d (bytes past %zu must be zero)\n",
				what, i, ret, size);
			if (a != room)
				kvfree(a);
			return ERR_PTR(ret);
		}
	}
	return a;
}

static int tessera_ext_trace(struct drm_device *drm, struct tessera_submit *s,
			     const void __user *uext)
{
	struct drm_tessera_ext_trace *t = &s->trace;

	if (copy_from_user(t, uext, sizeof(*t)))
		return -EFAULT;
	if (t->size < sizeof(struct tsr_trace_header) ||
	    t->size > TSR_TRACE_MAX_SIZE || !IS_ALIGNED(t->size, 8) ||
	    !IS_ALIGNED(t->offset, 8)) {
		drm_dbg(drm, "SUBMIT: trace offset %llu size %u: an 8-aligned offset and a size that is a multiple of 8 from %zu to %u\n",
			t->offset, t->size, sizeof(struct tsr_trace_header),
			TSR_TRACE_MAX_SIZE);
		return -EINVAL;
	}
	return 0;
}

/*
 * Walk an extension chain.  Names run from 1 to @last (0 for an ioctl that
 * knows none); each may appear once, so the walk ends after at most @last
 * links, a chain that loops included.
 */
static int tessera_ext_walk(struct drm_device *drm, u64 next, u32 last,
			    struct tessera_submit *s)
{
	struct drm_tessera_extension ext;
	unsigned long seen = 0;
	int ret;

	while (next) {
		const void __user *uext = u64_to_user_ptr(next);

		if (copy_from_user(&ext, uext, sizeof(ext)))
			return -EFAULT;
		if (!ext.name || ext.name > last || ext.pad) {
			drm_dbg(drm, "SUBMIT: extension name %u pad %u: unknown\n",
				ext.name, ext.pad);
			return -EINVAL;
		}
		if (__test_and_set_bit(ext.name, &seen)) {
			drm_dbg(drm, "SUBMIT: extension %u given twice\n",
				ext.name);
			return -EINVAL;
		}
		/* DRM_TESSERA_EXT_TRACE is the only name SUBMIT knows. */
		ret = tessera_ext_trace(drm, s, uext);
		if (ret)
			return ret;
		next = ext.next;
	}
	return 0;
}

static int tessera_submit_check(struct tessera_device *tdev,
				const struct drm_tessera_submit *args)
{
	struct drm_device *drm = &tdev->drm;

	if ((args->flags & ~DRM_TESSERA_SUBMIT_WAIT_ROOM) || args->pad) {
		drm_dbg(drm, "SUBMIT: flags 0x%x (unknown bits) or pad %u (must be zero)\n",
			args->flags, args->pad);
		return -EINVAL;
	}
	if (args->queue >= tdev->num_queues) {
		drm_dbg(drm, "SUBMIT: queue %u, the chip has %u\n", args->queue,
			tdev->num_queues);
		return -EINVAL;
	}
	if (args->priority >= TESSERA_PRIORITIES) {
		drm_dbg(drm, "SUBMIT: unknown priority %u\n", args->priority);
		return -EINVAL;
	}
	if (args->priority == DRM_TESSERA_PRIORITY_HIGH &&
	    !capable(CAP_SYS_NICE)) {
		drm_dbg(drm, "SUBMIT: high priority needs CAP_SYS_NICE\n");
		return -EPERM;
	}
	if (!args->cmdbuf_size || !IS_ALIGNED(args->cmdbuf_size, 8) ||
	    args->cmdbuf_size > DRM_TESSERA_MAX_CMDBUF_SIZE ||
	    !IS_ALIGNED(args->cmdbuf_offset, 8)) {
		drm_dbg(drm, "SUBMIT: command buffer offset %llu size %u\n",
			args->cmdbuf_offset, args->cmdbuf_size);
		return -EINVAL;
	}
	if (args->bo_count > DRM_TESSERA_MAX_BOS ||
	    args->sync_count > DRM_TESSERA_MAX_SYNCS) {
		drm_dbg(drm, "SUBMIT: %u buffers, %u syncs: too many\n",
			args->bo_count, args->sync_count);
		return -EINVAL;
	}
	return 0;
}

/* Check @s->args, read its extensions and copy its arrays in. */
static int tessera_submit_copy_in(struct tessera_device *tdev,
				  struct tessera_submit *s)
{
	struct drm_device *drm = &tdev->drm;
	const struct drm_tessera_submit *args = &s->args;
	void *bos, *syncs;
	u32 i;
	int ret;

	ret = tessera_submit_check(tdev, args) ?:
	      tessera_ext_walk(drm, args->extensions, DRM_TESSERA_EXT_TRACE, s);
	if (ret)
		return ret;
	bos = tessera_copy_array(drm, "bos", args->bos, args->bo_count,
				 args->bo_stride, sizeof(*s->bos), s->bos_inline,
				 ARRAY_SIZE(s->bos_inline));
	if (IS_ERR(bos))
		return PTR_ERR(bos);
	s->bos = bos;
	syncs = tessera_copy_array(drm, "syncs", args->syncs, args->sync_count,
				   args->sync_stride, sizeof(*s->syncs),
				   s->syncs_inline, ARRAY_SIZE(s->syncs_inline));
	if (IS_ERR(syncs))
		return PTR_ERR(syncs);
	s->syncs = syncs;
	for (i = 0; i < args->sync_count; i++) {
		if (s->syncs[i].flags & ~DRM_TESSERA_SYNC_SIGNAL) {
			drm_dbg(drm, "SUBMIT: syncs[%u].flags 0x%x\n", i,
				s->syncs[i].flags);
			return -EINVAL;
		}
		s->out_count += !!s->syncs[i].flags;
	}
	return 0;
}

/* ------------------------------------------------------------ buffers */

/* Look up the command buffer and the listed buffers with their mappings. */
static int tessera_submit_lookup_bos(struct tessera_job *job,
				     struct drm_file *file,
				     const struct drm_tessera_submit *args,
				     const struct drm_tessera_submit_bo *ubos)
{
	struct drm_device *drm = &job->tdev->drm;
	u32 n = args->bo_count, i, cmd = 0;
	bool cmd_listed = false;

	for (i = 0; i < n; i++) {
		if (!ubos[i].flags ||
		    ubos[i].flags & ~(DRM_TESSERA_BO_READ | DRM_TESSERA_BO_WRITE)) {
			drm_dbg(drm, "SUBMIT: buffer %u: bad flags 0x%x\n", i,
				ubos[i].flags);
			return -EINVAL;
		}
		if (ubos[i].handle == args->cmdbuf_handle) {
			cmd_listed = true;
			cmd = i;
		}
	}

	/* The command buffer is entry 0 unless the list names it. */
	job->bo_count = n + !cmd_listed;

	for (i = 0; i < job->bo_count; i++) {
		u32 handle = cmd_listed ? ubos[i].handle :
			     i ? ubos[i - 1].handle : args->cmdbuf_handle;
		u32 flags = cmd_listed ? ubos[i].flags :
			    i ? ubos[i - 1].flags : DRM_TESSERA_BO_READ;

		job->bos[i] = drm_gem_object_lookup(file, handle);
		if (!job->bos[i]) {
			drm_dbg(drm, "SUBMIT: no buffer with handle %u\n", handle);
			return -ENOENT;
		}
		job->bo_write[i] = flags & DRM_TESSERA_BO_WRITE;
		/* No mapping: the handle was closed since the lookup. */
		job->maps[i] = tessera_mapping_get(to_tessera_bo(job->bos[i]),
						   job->ctx);
		if (!job->maps[i]) {
			drm_dbg(drm, "SUBMIT: handle %u was closed\n", handle);
			return -ENOENT;
		}
	}

	/* The commands must lie inside the command buffer. */
	if (args->cmdbuf_offset > job->bos[cmd]->size ||
	    args->cmdbuf_size > job->bos[cmd]->size - args->cmdbuf_offset) {
		drm_dbg(drm, "SUBMIT: commands at %llu+%u outside a %zu-byte buffer\n",
			args->cmdbuf_offset, args->cmdbuf_size,
			job->bos[cmd]->size);
		return -EINVAL;
	}
	job->cmdbuf_va = job->maps[cmd]->va.start + args->cmdbuf_offset;
	job->cmdbuf_size = args->cmdbuf_size;
	return 0;
}

/*
 * Find the trace's buffer among the listed ones (which lookup_bos has
 * checked and taken): it must be written, and hold the whole trace.
 */
static int tessera_submit_lookup_trace(struct tessera_job *job,
				       const struct tessera_submit *s)
{
	const struct drm_tessera_ext_trace *t = &s->trace;
	struct drm_device *drm = &job->tdev->drm;
	u32 first = job->bo_count - s->args.bo_count, i;
	struct drm_gem_object *bo;

	if (!t->base.name)
		return 0;
	if (!(tessera_reg_read(job->tdev, TSR_REG_CAPS) & TSR_CAP_TRACE)) {
		drm_dbg(drm, "SUBMIT: the chip writes no traces (no TSR_CAP_TRACE)\n");
		return -EOPNOTSUPP;
	}
	for (i = 0; i < s->args.bo_count; i++)
		if (s->bos[i].handle == t->handle)
			break;
	if (i == s->args.bo_count || !(s->bos[i].flags & DRM_TESSERA_BO_WRITE)) {
		drm_dbg(drm, "SUBMIT: the trace's buffer (handle %u) must be listed in bos with DRM_TESSERA_BO_WRITE\n",
			t->handle);
		return -EINVAL;
	}
	bo = job->bos[first + i];
	if (to_tessera_bo(bo)->device_read_only) {
		drm_dbg(drm, "SUBMIT: the trace's buffer (handle %u) is read-only to the device\n",
			t->handle);
		return -EINVAL;
	}
	if (t->offset > bo->size || t->size > bo->size - t->offset) {
		drm_dbg(drm, "SUBMIT: trace at %llu+%u outside a %zu-byte buffer\n",
			t->offset, t->size, bo->size);
		return -EINVAL;
	}
	job->trace_va = job->maps[first + i]->va.start + t->offset;
	job->trace_size = t->size;
	return 0;
}

/**
 * struct tessera_resv - the buffers of a batch's jobs, each locked once
 * @objs: the distinct buffers
 * @count: entries in @objs
 * @acquire: the ww context they are locked in
 */
struct tessera_resv {
	struct drm_gem_object **objs;
	u32 count;
	struct ww_acquire_ctx acquire;
};

/* A buffer of job @sub, for sorting a batch's buffers by buffer. */
struct tessera_resv_use {
	struct drm_gem_object *obj;
	u32 sub;
};

static int tessera_resv_use_cmp(const void *a, const void *b)
{
	const struct tessera_resv_use *x = a, *y = b;

	if (x->obj != y->obj)
		return (uintptr_t)x->obj < (uintptr_t)y->obj ? -1 : 1;
	return x->sub < y->sub ? -1 : x->sub > y->sub;
}

/*
 * Sort the jobs' buffers so that each is locked once and gets a fence slot
 * for every job that uses it; a buffer listed twice by one job is refused.
 */
static int tessera_resv_collect(struct drm_device *drm, struct tessera_resv *r,
				struct tessera_submit *subs, u32 n, u32 *bad,
				unsigned int **slots)
{
	struct tessera_resv_use *use;
	u32 total = 0, i, j, k = 0;
	int ret = 0;

	for (i = 0; i < n; i++)
		total += subs[i].job->bo_count;
	use = kvmalloc_array(total, sizeof(*use), GFP_KERNEL);
	r->objs = kvmalloc_array(total, sizeof(*r->objs) + sizeof(**slots),
				 GFP_KERNEL);
	if (!use || !r->objs) {
		ret = -ENOMEM;
		goto out;
	}
	*slots = (unsigned int *)(r->objs + total);
	for (i = 0; i < n; i++)
		for (j = 0; j < subs[i].job->bo_count; j++)
			use[k++] = (struct tessera_resv_use){
				.obj = subs[i].job->bos[j], .sub = i };
	sort(use, total, sizeof(*use), tessera_resv_use_cmp, NULL);

	r->count = 0;
	for (k = 0; k < total; k++) {
		if (k && use[k].obj == use[k - 1].obj) {
			if (use[k].sub == use[k - 1].sub) {
				drm_dbg(drm, "SUBMIT: a buffer is listed twice\n");
				*bad = use[k].sub;
				ret = -EINVAL;
				goto out;
			}
			(*slots)[r->count - 1]++;
			continue;
		}
		(*slots)[r->count] = 1;
		r->objs[r->count++] = use[k].obj;
	}
out:
	kvfree(use);
	if (ret)
		kvfree(r->objs);
	return ret;
}

/* Lock every job's buffers and depend on the fences already on them. */
static int tessera_resv_lock(struct drm_device *drm, struct tessera_resv *r,
			     struct tessera_submit *subs, u32 n, u32 *bad)
{
	unsigned int *slots;
	u32 i, j;
	int ret;

	ret = tessera_resv_collect(drm, r, subs, n, bad, &slots);
	if (ret)
		return ret;
	ret = drm_gem_lock_reservations(r->objs, r->count, &r->acquire);
	if (ret)
		goto out_free;
	for (i = 0; i < r->count && !ret; i++)
		ret = dma_resv_reserve_fences(r->objs[i]->resv, slots[i]);
	for (i = 0; i < n && !ret; i++) {
		struct tessera_job *job = subs[i].job;

		for (j = 0; j < job->bo_count && !ret; j++)
			ret = drm_sched_job_add_implicit_dependencies(&job->group->base,
								      job->bos[j],
								      job->bo_write[j]);
	}
	if (!ret)
		return 0;
	drm_gem_unlock_reservations(r->objs, r->count, &r->acquire);
out_free:
	kvfree(r->objs);
	return ret;
}

static void tessera_resv_unlock(struct tessera_resv *r)
{
	drm_gem_unlock_reservations(r->objs, r->count, &r->acquire);
	kvfree(r->objs);
}

/* -------------------------------------------------------------- syncs */

static int tessera_submit_add_in_syncs(struct tessera_job *job,
				       struct drm_file *file,
				       const struct tessera_submit *s)
{
	const struct drm_tessera_sync *syncs = s->syncs;
	struct dma_fence *fence;
	u32 i;
	int ret;

	for (i = 0; i < s->args.sync_count; i++) {
		if (syncs[i].flags & DRM_TESSERA_SYNC_SIGNAL)
			continue;
		/* Not drm_sched_job_add_syncobj_dependency(): its point is 32-bit. */
		ret = drm_syncobj_find_fence(file, syncs[i].handle,
					     syncs[i].point, 0, &fence);
		/* A group waits for what any of its jobs waits for. */
		if (!ret)
			ret = drm_sched_job_add_dependency(&job->group->base,
							   fence);
		if (ret) {
			drm_dbg(&job->tdev->drm, "SUBMIT: syncs[%u] (handle %u point %llu): %d\n",
				i, syncs[i].handle, syncs[i].point, ret);
			return ret;
		}
	}
	return 0;
}

/* Find the out-syncs' syncobjs and allocate their timeline points. */
static int tessera_out_syncs_get(struct tessera_submit *s,
				 struct drm_file *file)
{
	const struct drm_tessera_sync *syncs = s->syncs;
	struct tessera_out_sync *out;
	u32 i;

	if (!s->out_count)
		return 0;
	s->outs = s->out_count <= ARRAY_SIZE(s->outs_inline) ? s->outs_inline :
		  kcalloc(s->out_count, sizeof(*s->outs), GFP_KERNEL_ACCOUNT);
	if (!s->outs)
		return -ENOMEM;
	out = s->outs;
	for (i = 0; i < s->args.sync_count; i++) {
		if (!(syncs[i].flags & DRM_TESSERA_SYNC_SIGNAL))
			continue;
		out->syncobj = drm_syncobj_find(file, syncs[i].handle);
		if (!out->syncobj) {
			drm_dbg(file->minor->dev, "SUBMIT: syncs[%u]: no syncobj with handle %u\n",
				i, syncs[i].handle);
			return -ENOENT;
		}
		out->point = syncs[i].point;
		if (out->point) {
			out->chain = dma_fence_chain_alloc();
			if (!out->chain)
				return -ENOMEM;
		}
		out++;
	}
	return 0;
}

/* Publish @fence, or (with a NULL @fence) just drop what was prepared. */
static void tessera_out_syncs_put(struct tessera_submit *s,
				  struct dma_fence *fence)
{
	struct tessera_out_sync *out;

	for (out = s->outs; s->outs && out < s->outs + s->out_count; out++) {
		if (!out->syncobj)
			break;
		if (fence && out->chain)
			drm_syncobj_add_point(out->syncobj, out->chain, fence,
					      out->point);
		else if (fence)
			drm_syncobj_replace_fence(out->syncobj, fence);
		else
			dma_fence_chain_free(out->chain);
		drm_syncobj_put(out->syncobj);
	}
	if (s->outs != s->outs_inline)
		kfree(s->outs);
	s->outs = NULL;
}

/* ------------------------------------------------------------- SUBMIT */

/* Give @job its sequence number and its PENDING status. */
static void tessera_submit_number(struct tessera_job *job, u32 queue)
{
	struct tessera_ctx *ctx = job->ctx;

	spin_lock_irq(&ctx->status_lock);
	job->seq = ctx->next_seq++;
	*tessera_job_status_slot(ctx, job->seq) = (struct drm_tessera_job_status) {
		.seq = job->seq,
		.state = DRM_TESSERA_JOB_PENDING,
		.failed_cmd = TSR_NO_COMMAND,
		.queue = queue,
	};
	spin_unlock_irq(&ctx->status_lock);
}

/*
 * Number the @n jobs of a group (a job alone is a group of one), give
 * each its out-fence and fence its buffers with it, and push the group.
 * Nothing fails from here on.  The scheduler owns a reference on every job
 * of the group from the push; the caller keeps its own, and the fences in
 * @subs.
 */
static void tessera_submit_push(struct tessera_submit *subs, u32 n)
{
	struct tessera_job *job = subs[0].job;
	struct tessera_entity *entity = container_of(job->base.entity,
						     struct tessera_entity, base);
	struct dma_fence *finished;
	unsigned int i, j;

	for (i = 0; i < n; i++)
		tessera_submit_number(subs[i].job, subs[i].args.queue);
	drm_sched_job_arm(&job->base);
	finished = &job->base.s_fence->finished;
	for (i = 0; i < n; i++) {
		struct tessera_job *member = subs[i].job;

		if (member->done)
			tessera_job_done_init(member, entity->group_context,
					      ++entity->group_seqno);
		subs[i].finished = dma_fence_get(finished);
		subs[i].out = dma_fence_get(member->done ?: finished);
		for (j = 0; j < member->bo_count; j++)
			dma_resv_add_fence(member->bos[j]->resv, subs[i].out,
					   member->bo_write[j] ?
					   DMA_RESV_USAGE_WRITE : DMA_RESV_USAGE_READ);
		trace_tessera_job_submit(member);
		/* The scheduler's reference, for the group's first job below. */
		if (i)
			kref_get(&member->ref);
	}
	kref_get(&job->ref);
	drm_sched_entity_push_job(&job->base);
	for (i = 0; i < n; i++)
		tessera_count(subs[i].job->tdev, TESSERA_CNT_JOBS_SUBMITTED);
}

/*
 * debugfs submit_wait_done: return only once the job has run and the
 * scheduler has had the chance to free it, so that any use of the job
 * after the push touches freed memory (which KASAN reports).
 */
static void tessera_submit_wait_done(struct drm_gpu_scheduler *sched,
				     struct dma_fence *finished)
{
	if (dma_fence_wait(finished, true))
		return;
	/* free_job is queued right after the finished fence signals. */
	flush_work(&sched->work_free_job);
	flush_work(&sched->work_free_job);
}

/*
 * Create @s's job and take everything it needs but the file's lock;
 * @resumed and @grouped as for tessera_job_create().
 */
static int tessera_submit_prepare(struct tessera_file *tfile,
				  struct drm_file *file,
				  struct tessera_submit *s, bool resumed,
				  bool grouped)
{
	/* Its listed buffers and the command buffer, if not among them. */
	s->job = tessera_job_create(tfile, s->args.queue, s->args.bo_count + 1,
				    resumed, grouped);
	if (IS_ERR(s->job)) {
		int ret = PTR_ERR(s->job);

		s->job = NULL;
		return ret;
	}
	return tessera_submit_lookup_bos(s->job, file, &s->args, s->bos) ?:
	       tessera_submit_lookup_trace(s->job, s) ?:
	       tessera_out_syncs_get(s, file);
}

/*
 * Give @s's job its entity, if it is the first of a group of @n jobs (a
 * ring slot each), and its syncobj dependencies; under tfile->lock.
 */
static int tessera_submit_arm_deps(struct tessera_file *tfile,
				   struct drm_file *file,
				   struct tessera_submit *s, u32 n)
{
	struct drm_sched_entity *entity;
	int ret;

	lockdep_assert_held(&tfile->lock);
	if (s->job->group != s->job)
		return tessera_submit_add_in_syncs(s->job, file, s);
	entity = tessera_file_entity(tfile, s->args.queue, s->args.priority);
	if (IS_ERR(entity))
		return PTR_ERR(entity);
	ret = drm_sched_job_init(&s->job->base, entity, n, tfile->ctx,
				 file->client_id);
	if (ret)
		return ret;
	s->inited = true;
	return tessera_submit_add_in_syncs(s->job, file, s);
}

/*
 * Group the jobs of @subs: a job joins the group of the job before it if
 * both are on the same queue with the same priority.  Groups of one stay
 * jobs alone, as SUBMIT's.
 */
static void tessera_submit_group(struct tessera_submit *subs, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		subs[i].lead = i && subs[i].args.queue == subs[i - 1].args.queue &&
			       subs[i].args.priority == subs[i - 1].args.priority ?
			       subs[i - 1].lead : i;
}

/* Whether job @i of @subs is one of a group of more than one. */
static bool tessera_submit_grouped(const struct tessera_submit *subs, u32 n,
				   u32 i)
{
	return subs[i].lead != i || (i + 1 < n && subs[i + 1].lead == i);
}

/* Chain job @i of @subs, made, behind the jobs of its group before it. */
static void tessera_submit_link(struct tessera_submit *subs, u32 i)
{
	struct tessera_job *group = subs[subs[i].lead].job;

	if (subs[i].lead == i)
		return;
	subs[i].job->group = group;
	group->last->next = subs[i].job;
	group->last = subs[i].job;
}

/* The number of jobs in the group job @i of @subs leads. */
static u32 tessera_submit_group_size(const struct tessera_submit *subs, u32 n,
				     u32 i)
{
	u32 k = i + 1;

	while (k < n && subs[k].lead == i)
		k++;
	return k - i;
}

/* Free what tessera_submit_copy_in() and _prepare() took for a job not queued. */
static void tessera_submit_fini(struct tessera_submit *s)
{
	tessera_out_syncs_put(s, NULL);
	if (s->job) {
		if (s->inited)
			drm_sched_job_cleanup(&s->job->base);
		tessera_job_put(s->job);
	}
	if (s->bos != s->bos_inline)
		kvfree(s->bos);
	if (s->syncs != s->syncs_inline)
		kvfree(s->syncs);
}

/*
 * Queue the @n jobs of @subs, copied in already, all or none, waiting for
 * room among the file's queued jobs if @wait.  On failure *@bad is the
 * index of the job at fault, or DRM_TESSERA_BATCH_NO_INDEX.
 * Every job is finished with on return; seq says where each went.
 */
static int tessera_submit_jobs(struct drm_device *drm, struct drm_file *file,
			       struct tessera_submit *subs, u32 n, bool wait,
			       u32 *bad)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct tessera_file *tfile = file->driver_priv;
	struct tessera_resv resv;
	bool wait_done;
	u32 i;
	int ret, idx;

	*bad = DRM_TESSERA_BATCH_NO_INDEX;
	if (READ_ONCE(tfile->ctx->banned)) {
		drm_dbg(drm, "SUBMIT: context %u is banned\n", tfile->ctx->id);
		return -ECANCELED;
	}
	ret = tessera_jobs_reserve(tfile, n, wait);
	if (ret)
		return ret;
	if (!drm_dev_enter(drm, &idx)) {
		tessera_jobs_unreserve(tfile->ctx, n);
		return -ENODEV;
	}
	tessera_submit_group(subs, n);
	for (i = 0; i < n; i++) {
		/* Job 0 holds the chip resumed until every job is made. */
		ret = tessera_submit_prepare(tfile, file, &subs[i], i > 0,
					     tessera_submit_grouped(subs, n, i));
		if (ret) {
			/* The jobs made give their places back as they go. */
			tessera_jobs_unreserve(tfile->ctx, n - i - !!subs[i].job);
			goto out_bad;
		}
		tessera_submit_link(subs, i);
	}

	mutex_lock(&tfile->lock);
	for (i = 0; i < n; i++) {
		ret = tessera_submit_arm_deps(tfile, file, &subs[i],
					      tessera_submit_group_size(subs, n, i));
		if (ret)
			goto out_unlock_bad;
	}
	ret = tessera_resv_lock(drm, &resv, subs, n, bad);
	if (!ret && should_fail(&tessera_fail_submit, 1)) {
		drm_dbg(drm, "SUBMIT: injected failure\n");
		tessera_resv_unlock(&resv);
		ret = -ENOMEM;
	}
	if (ret)
		goto out_unlock;

	for (i = 0; i < n; i += tessera_submit_group_size(subs, n, i)) {
		tessera_submit_push(&subs[i], tessera_submit_group_size(subs, n, i));
		/* Queued: the scheduler cleans the group up from here on. */
		subs[i].inited = false;
	}
	tessera_resv_unlock(&resv);
	mutex_unlock(&tfile->lock);

	wait_done = tessera_inject(&tdev->inject_submit_wait_done);
	for (i = 0; i < n; i++) {
		struct tessera_submit *s = &subs[i];

		tessera_out_syncs_put(s, s->out);
		if (wait_done)
			tessera_submit_wait_done(&s->job->q->sched, s->finished);
		s->args.seq = s->job->seq;
		dma_fence_put(s->out);
		dma_fence_put(s->finished);
	}
	drm_dev_exit(idx);
	return 0;

out_unlock_bad:
	*bad = i;
out_unlock:
	mutex_unlock(&tfile->lock);
	drm_dev_exit(idx);
	return ret;
out_bad:
	*bad = i;
	drm_dev_exit(idx);
	return ret;
}

int tessera_ioctl_submit(struct drm_device *drm, void *data,
			 struct drm_file *file)
{
	struct drm_tessera_submit *args = data;
	struct tessera_submit s = { .args = *args };
	u32 bad;
	int ret;

	ret = tessera_submit_copy_in(to_tessera_device(drm), &s) ?:
	      tessera_submit_jobs(drm, file, &s, 1,
				  args->flags & DRM_TESSERA_SUBMIT_WAIT_ROOM, &bad);
	if (!ret)
		args->seq = s.args.seq;
	tessera_submit_fini(&s);
	return ret;
}

int tessera_ioctl_submit_batch(struct drm_device *drm, void *data,
			       struct drm_file *file)
{
	struct drm_tessera_submit_batch *args = data;
	struct tessera_submit *subs;
	u32 i, n = args->count;
	int ret;

	args->error_index = DRM_TESSERA_BATCH_NO_INDEX;
	if ((args->flags & ~DRM_TESSERA_SUBMIT_WAIT_ROOM) || !n ||
	    n > DRM_TESSERA_MAX_BATCH ||
	    args->stride < sizeof(subs->args) ||
	    args->stride > DRM_TESSERA_MAX_STRIDE) {
		drm_dbg(drm, "SUBMIT_BATCH: flags 0x%x, %u jobs %u bytes apart\n",
			args->flags, n, args->stride);
		return -EINVAL;
	}
	ret = tessera_ext_walk(drm, args->extensions, 0, NULL);
	if (ret)
		return ret;
	subs = kvcalloc(n, sizeof(*subs), GFP_KERNEL_ACCOUNT);
	if (!subs)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++) {
		ret = copy_struct_from_user(&subs[i].args, sizeof(subs[i].args),
					    u64_to_user_ptr(args->jobs +
							    (u64)i * args->stride),
					    args->stride) ?:
		      tessera_submit_copy_in(to_tessera_device(drm), &subs[i]);
		/* Whether to wait is the batch's to say. */
		if (!ret && subs[i].args.flags) {
			drm_dbg(drm, "SUBMIT_BATCH: job %u: flags 0x%x, the batch's flags say it\n",
				i, subs[i].args.flags);
			ret = -EINVAL;
		}
		if (ret)
			args->error_index = i;
	}
	if (!ret)
		ret = tessera_submit_jobs(drm, file, subs, n,
					  args->flags & DRM_TESSERA_SUBMIT_WAIT_ROOM,
					  &args->error_index);
	for (i = 0; i < n; i++) {
		struct drm_tessera_submit __user *job =
			u64_to_user_ptr(args->jobs + (u64)i * args->stride);

		/* Queued jobs stay queued whatever this write finds. */
		if (!ret && put_user(subs[i].args.seq, &job->seq))
			ret = -EFAULT;
		tessera_submit_fini(&subs[i]);
	}
	kvfree(subs);
	return ret;
}

int tessera_ioctl_job_status(struct drm_device *drm, void *data,
			     struct drm_file *file)
{
	struct tessera_file *tfile = file->driver_priv;
	struct drm_tessera_job_status *args = data;
	struct tessera_ctx *ctx = tfile->ctx;
	u64 seq = args->seq;
	int ret = 0;

	if (args->flags) {
		drm_dbg(drm, "JOB_STATUS: flags 0x%x must be zero\n", args->flags);
		return -EINVAL;
	}
	spin_lock_irq(&ctx->status_lock);
	if (!seq || seq >= ctx->next_seq) {
		ret = -EINVAL;
	} else if (tessera_job_status_slot(ctx, seq)->seq != seq) {
		ret = -ENOENT;
	} else {
		*args = *tessera_job_status_slot(ctx, seq);
		args->flags = 0;
	}
	spin_unlock_irq(&ctx->status_lock);
	if (ret == -EINVAL)
		drm_dbg(drm, "JOB_STATUS: job %llu was never submitted\n", seq);
	return ret;
}
