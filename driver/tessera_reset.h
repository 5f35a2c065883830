/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_RESET_H__
#define __TESSERA_RESET_H__

#include <drm/gpu_scheduler.h>

#include "tessera_drv.h"

struct tessera_ctx;
struct tessera_job;

void tessera_ctx_fault(struct tessera_ctx *ctx);
enum drm_gpu_sched_stat tessera_job_timedout(struct tessera_job *job);
void tessera_reset_init(struct tessera_device *tdev);
void tessera_schedule_fatal_recovery(struct tessera_device *tdev);
void tessera_force_recovery(struct tessera_device *tdev);
void tessera_reset_prepare(struct tessera_device *tdev);
void tessera_reset_done(struct tessera_device *tdev);
void tessera_reset_unplug(struct tessera_device *tdev);

#endif /* __TESSERA_RESET_H__ */
