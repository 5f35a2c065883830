/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_PCI_H__
#define __TESSERA_PCI_H__

#include <linux/pci.h>

extern const struct pci_error_handlers tessera_pci_err_handlers;

#endif /* __TESSERA_PCI_H__ */
