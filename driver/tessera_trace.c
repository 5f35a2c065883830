// SPDX-License-Identifier: GPL-2.0-only
/*
 * The tracepoints of tessera_trace.h, defined once here.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#define CREATE_TRACE_POINTS
#include "tessera_trace.h"
