/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_PM_H__
#define __TESSERA_PM_H__

#include <linux/pm.h>

struct tessera_device;

extern const struct dev_pm_ops tessera_pm_ops;

void tessera_pm_init(struct tessera_device *tdev);
void tessera_pm_fini(struct tessera_device *tdev);
int tessera_pm_get(struct tessera_device *tdev);
void tessera_pm_get_noresume(struct tessera_device *tdev);
void tessera_pm_put(struct tessera_device *tdev);

#endif /* __TESSERA_PM_H__ */
