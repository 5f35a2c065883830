/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_SYSFS_H__
#define __TESSERA_SYSFS_H__

#include "tessera_drv.h"

int tessera_sysfs_init(struct tessera_device *tdev);
void tessera_chip_counters_save(struct tessera_device *tdev);
void tessera_chip_counters_resumed(struct tessera_device *tdev);
void tessera_chip_counters_clear(struct tessera_device *tdev);

#endif /* __TESSERA_SYSFS_H__ */
