/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_ICI_H__
#define __TESSERA_ICI_H__

#include <drm/tessera_accel.h>

#include "tessera_drv.h"

int tessera_ici_init(struct tessera_device *tdev);
int tessera_ici_irq_init(struct tessera_device *tdev);
void tessera_ici_hw_enable(struct tessera_device *tdev);
void tessera_ici_unplug(struct tessera_device *tdev);
void tessera_ici_file_fini(struct tessera_file *tfile);
void tessera_ici_ports_save(struct tessera_device *tdev);
int tessera_ici_get_param(struct tessera_device *tdev, u32 param, u32 index,
			  u64 *value);
const char *tessera_link_state_name(u32 state);

int tessera_ioctl_window_open(struct drm_device *drm, void *data,
			      struct drm_file *file);
int tessera_ioctl_window_close(struct drm_device *drm, void *data,
			       struct drm_file *file);
int tessera_ioctl_link_info(struct drm_device *drm, void *data,
			    struct drm_file *file);

#endif /* __TESSERA_ICI_H__ */
