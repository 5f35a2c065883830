/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera command processor: decodes each command, checks its size and
 * hands it to its engine: DMA (tessera-dma.c), MXU (tessera-mxu.c), VPU,
 * REDUCE, CAST and TRANSPOSE (tessera-vpu.c), semaphores, TIMESTAMP and
 * INTERRUPT (tessera-sync.c), the SparseCore commands (tessera-sparse.c).
 *
 * Every field is checked before anything is touched; an invalid command
 * fails its job with a precise TSR_ERR_* code.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include "tessera-internal.h"

static uint32_t cmd_nop(const struct tsr_cmd_header *c, TsrCost *cost)
{
    if (c->flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->reserved) {
        return TSR_ERR_RESERVED;
    }
    cost->other += 1;
    return TSR_ERR_NONE;
}

/* ---------------------------------------------------------- dispatch */

/*
 * Command sizes in 8-byte words, indexed by opcode; 0 for unknown, as the
 * SparseCore commands are on a chip without SparseCores.
 */
static uint32_t cmd_size_qw(const TsrConfig *cfg, uint8_t opcode)
{
    switch (opcode) {
    case TSR_OP_NOP:
    case TSR_OP_INTERRUPT:
        return sizeof(struct tsr_cmd_header) / 8;
    case TSR_OP_DMA_COPY:
    case TSR_OP_DMA_FILL:
        return sizeof(struct tsr_cmd_dma) / 8;
    case TSR_OP_MATMUL:
        return sizeof(struct tsr_cmd_matmul) / 8;
    case TSR_OP_VPU:
        return sizeof(struct tsr_cmd_vpu) / 8;
    case TSR_OP_REDUCE:
        return sizeof(struct tsr_cmd_reduce) / 8;
    case TSR_OP_CAST:
    case TSR_OP_TRANSPOSE:
        return sizeof(struct tsr_cmd_unary_copy) / 8;
    case TSR_OP_SEM_WAIT:
    case TSR_OP_SEM_SIGNAL:
    case TSR_OP_SEM_INC:
        return sizeof(struct tsr_cmd_sem) / 8;
    case TSR_OP_SEM_WAIT_ABORT:
        return sizeof(struct tsr_cmd_sem_wait_abort) / 8;
    case TSR_OP_TIMESTAMP:
        return sizeof(struct tsr_cmd_timestamp) / 8;
    case TSR_OP_ICI_WRITE:
        return sizeof(struct tsr_cmd_ici_write) / 8;
    case TSR_OP_SC_PARTITION:
        return cfg->sparsecores ? sizeof(struct tsr_cmd_sc_partition) / 8 : 0;
    case TSR_OP_SC_GATHER:
        return cfg->sparsecores ? sizeof(struct tsr_cmd_sc_gather) / 8 : 0;
    case TSR_OP_SC_SCATTER_ADD:
        return cfg->sparsecores ? sizeof(struct tsr_cmd_sc_scatter_add) / 8
                                : 0;
    default:
        return 0;
    }
}

uint8_t tsr_cmd_engine(uint8_t opcode)
{
    switch (opcode) {
    case TSR_OP_DMA_COPY:
    case TSR_OP_DMA_FILL:
    case TSR_OP_ICI_WRITE:
        return TSR_ENGINE_DMA;
    case TSR_OP_MATMUL:
        return TSR_ENGINE_MXU;
    case TSR_OP_VPU:
    case TSR_OP_REDUCE:
    case TSR_OP_CAST:
    case TSR_OP_TRANSPOSE:
        return TSR_ENGINE_VPU;
    case TSR_OP_SC_PARTITION:
    case TSR_OP_SC_GATHER:
    case TSR_OP_SC_SCATTER_ADD:
        return TSR_ENGINE_SC;
    default:
        return TSR_ENGINE_CP;
    }
}

uint32_t tsr_cmd_execute(TsrMem *mem, const void *cmd, uint32_t size,
                         TsrCost *cost)
{
    const struct tsr_cmd_header *hdr = cmd;
    uint32_t want = cmd_size_qw(&mem->core->cfg, hdr->opcode);

    if (!want) {
        return TSR_ERR_BAD_OPCODE;
    }
    if (size != want * 8) {
        return TSR_ERR_BAD_SIZE;
    }
    switch (hdr->opcode) {
    case TSR_OP_NOP:
        return cmd_nop(hdr, cost);
    case TSR_OP_DMA_COPY:
        return tsr_cmd_dma(mem, cmd, false, cost);
    case TSR_OP_DMA_FILL:
        return tsr_cmd_dma(mem, cmd, true, cost);
    case TSR_OP_MATMUL:
        return tsr_cmd_matmul(mem, cmd, cost);
    case TSR_OP_VPU:
        return tsr_cmd_vpu(mem, cmd, cost);
    case TSR_OP_REDUCE:
        return tsr_cmd_reduce(mem, cmd, cost);
    case TSR_OP_CAST:
        return tsr_cmd_cast(mem, cmd, cost);
    case TSR_OP_TRANSPOSE:
        return tsr_cmd_transpose(mem, cmd, cost);
    case TSR_OP_SEM_WAIT:
        return tsr_cmd_sem_wait(mem, cmd, cost);
    case TSR_OP_SEM_WAIT_ABORT:
        return tsr_cmd_sem_wait_abort(mem, cmd, cost);
    case TSR_OP_SEM_SIGNAL:
        return tsr_cmd_sem_update(mem, cmd, false, cost);
    case TSR_OP_SEM_INC:
        return tsr_cmd_sem_update(mem, cmd, true, cost);
    case TSR_OP_TIMESTAMP:
        return tsr_cmd_timestamp(mem, cmd, cost);
    case TSR_OP_INTERRUPT:
        return tsr_cmd_interrupt(mem, hdr, cost);
    case TSR_OP_ICI_WRITE:
        return tsr_cmd_ici_write(mem, cmd, cost);
    case TSR_OP_SC_PARTITION:
        return tsr_cmd_sc_partition(mem, cmd, cost);
    case TSR_OP_SC_GATHER:
        return tsr_cmd_sc_gather(mem, cmd, cost);
    case TSR_OP_SC_SCATTER_ADD:
        return tsr_cmd_sc_scatter_add(mem, cmd, cost);
    default:
        return TSR_ERR_BAD_OPCODE;
    }
}
