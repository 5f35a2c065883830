/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_DEBUGFS_H__
#define __TESSERA_DEBUGFS_H__

#include "tessera_drv.h"

#if IS_ENABLED(CONFIG_DEBUG_FS)
void tessera_debugfs_init(struct tessera_device *tdev);
#else
static inline void tessera_debugfs_init(struct tessera_device *tdev) { }
#endif

#endif /* __TESSERA_DEBUGFS_H__ */
