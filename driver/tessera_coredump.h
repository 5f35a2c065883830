/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_COREDUMP_H__
#define __TESSERA_COREDUMP_H__

struct tessera_device;
struct tessera_job;

int tessera_coredump_init(struct tessera_device *tdev);
void tessera_coredump(struct tessera_job *job);

#endif /* __TESSERA_COREDUMP_H__ */
