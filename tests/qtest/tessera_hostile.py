# SPDX-License-Identifier: GPL-2.0
"""Hostile-guest tests of the Tessera QEMU device.

A guest may write any register in any order with any value, aim the
chip's DMA at the chip's own BARs, and submit the largest commands the
chip accepts.  Whatever it does, QEMU must not crash or deadlock, no vCPU
may be blocked for more than VCPU_LIMIT_S (every MMIO access is timed
from the qtest side), and QEMU's memory must stay bounded.  Run by
tessera_qtest.py, as the "hostile" suite.
"""

import random
import struct
import time

from tessera_harness import (BAR0, BAR2, C, CTX_TABLE, FENCES, HUGE_VA,
                             billion_row_dma, check, dma, hdr, huge_matmul,
                             matmul, reduce, sc_coo, sc_gather, sc_partition,
                             sc_scatter_add, sem, tensor, unary, vpu)

VCPU_LIMIT_S = 0.1
# QEMU may grow by less than this running the largest commands.
MEMORY_LIMIT_KIB = 256 << 10
# A largest command may run this long before the test aborts it.
MAXIMAL_RUN_S = 1.5
SEED = 0x7E55

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def check_responsive(qt):
    """QEMU answers, and no MMIO access so far blocked for long."""
    check(qt.reg(C["TSR_REG_CHIP_ID"]) == C["TSR_CHIP_ID"], "chip id")
    check(qt.mmio_max < VCPU_LIMIT_S,
          f"{qt.mmio_worst} took {qt.mmio_max * 1000:.0f} ms")


def wait_fence(qt, q, fence):
    qt.wait(f"fence {fence} of queue {q}",
            lambda: qt.read64(FENCES + 8 * q) == fence)


# ------------------------------------------------- registers, any order

# Values a register is most likely to mishandle, besides random ones.
SPECIAL_VALUES = (0, 1, 2, 3, 4, 7, 64, 0xFF, 0x1000, 4096, 8192,
                  0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                  C["TSR_RESET_MAGIC"],
                  C["TSR_QCTRL_RESET"] | C["TSR_QCTRL_ENABLE"],
                  BAR0 & 0xFFFFFFFF, (BAR0 + C["TSR_REG_RESET"]) & 0xFFFFFFFF)


def random_value(rng):
    if rng.random() < 0.5:
        return rng.choice(SPECIAL_VALUES)
    return rng.getrandbits(32)


def start_long_jobs(qt):
    """Reset the chip and give three queues jobs that run for minutes."""
    qt.set_reg(C["TSR_REG_RESET"], C["TSR_RESET_MAGIC"])
    qt.program(queues=4)
    qt.submit(0, 1, billion_row_dma(), 1)
    qt.submit(1, 1, sem(C["TSR_OP_SEM_WAIT"], qt.buffer(1, 4096), 1), 1)
    qt.submit(2, 1, huge_matmul(), 1)


def random_register_writes_never_block_or_crash(qt):
    qt.setup(queues=4)
    qt.map_aliased(1, HUGE_VA, 8 << 30, 0)
    rng = random.Random(SEED)
    # Every offset of BAR0: registers, reserved blocks, MSI-X table, PBA.
    offsets = list(range(0, C["TSR_BAR0_SIZE"], 4))
    rng.shuffle(offsets)
    for chunk in range(0, len(offsets), 2048):
        start_long_jobs(qt)
        for off in offsets[chunk:chunk + 2048]:
            qt.writel(BAR0 + off, random_value(rng))
            qt.readl(BAR0 + off)
    check_responsive(qt)
    # After a reset the chip works again.
    qt.set_reg(C["TSR_REG_RESET"], C["TSR_RESET_MAGIC"])
    qt.enable()
    qt.program()
    qt.submit(0, 1, hdr(C["TSR_OP_NOP"], 8), 99)
    wait_fence(qt, 0, 99)
    check_responsive(qt)
    print(f"# {len(offsets)} offsets, slowest MMIO "
          f"{qt.mmio_max * 1000:.1f} ms ({qt.mmio_worst})")


random_register_writes_never_block_or_crash.props = "debug-regs=on"
test(random_register_writes_never_block_or_crash)


# ---------------------------------------------- DMA into the chip's BARs

def wait_failed(qt, failed):
    """The error of the queue's failed job number @failed."""
    qt.wait(f"failed job {failed}",
            lambda: qt.qreg(0, C["TSR_QREG_JOBS_FAILED"]) == failed)
    return qt.qreg(0, C["TSR_QREG_LAST_ERROR"])


def map_bar(qt, va, addr):
    """Map a page of VA onto bus address @addr, as if it were memory."""
    qt.map(1, va, addr, 4096, C["TSR_PTE_READ"] | C["TSR_PTE_WRITE"])


def fresh_chip(qt):
    """Reset the chip (its counters too) and program it again."""
    qt.set_reg(C["TSR_REG_RESET"], C["TSR_RESET_MAGIC"])
    qt.program()


def set_qreg64(qt, q, lo, addr):
    qt.set_qreg(q, C[lo], addr & 0xFFFFFFFF)
    qt.set_qreg(q, C[lo.replace("_LO", "_HI")], addr >> 32)


@test
def command_operands_in_bar0_fail_with_dma(qt):
    qt.setup()
    buf = qt.buffer(1, 4096)
    regs, msix, hbm = 0x70000000, 0x70001000, 0x70002000
    map_bar(qt, regs, BAR0 + C["TSR_BLOCK_QUEUE"])
    map_bar(qt, msix, BAR0 + C["TSR_BAR0_MSIX_TABLE"])
    map_bar(qt, hbm, BAR2)
    dma_err = C["TSR_ERR_DMA"]
    # IRQ_STATUS and IRQ_ENABLE, as one 64-bit semaphore.
    irq_regs = regs + C["TSR_QREG_IRQ_STATUS"]
    cases = [
        (dma(C["TSR_OP_DMA_COPY"], regs, buf, (64, 1, 1)), dma_err),
        (dma(C["TSR_OP_DMA_COPY"], buf, regs, (64, 1, 1)), dma_err),
        (dma(C["TSR_OP_DMA_FILL"], 0, msix, (64, 1, 1)), dma_err),
        # Semaphores in the queue registers: sem_lock once deadlocked.
        (sem(C["TSR_OP_SEM_SIGNAL"], irq_regs, 7), dma_err),
        (sem(C["TSR_OP_SEM_INC"], irq_regs, 1), dma_err),
        (sem(C["TSR_OP_SEM_WAIT"], irq_regs, 1), dma_err),
        (hdr(C["TSR_OP_TIMESTAMP"], 16) + struct.pack("<Q", regs), dma_err),
        # HBM through BAR2 is memory like any other.
        (dma(C["TSR_OP_DMA_COPY"], buf, hbm, (64, 1, 1)), 0),
    ]
    for fence, (cmds, error) in enumerate(cases, 1):
        comp = qt.submit(0, 1, cmds, fence)
        wait_fence(qt, 0, fence)
        rec = qt.completion(comp)
        check(rec["error"] == error, f"case {fence}: record {rec}")
    check(qt.qreg(0, C["TSR_QREG_IRQ_ENABLE"]) == C["TSR_QIRQ_ALL"],
          "a semaphore reached IRQ_ENABLE")
    check_responsive(qt)


@test
def a_fence_aimed_at_the_reset_register_resets_nothing(qt):
    qt.setup()
    qt.set_reg(C["TSR_REG_SCRATCH"], 0x5A5A)
    # The magic value as the fence: written, it would reset the chip
    # from the worker (which deadlocked QEMU).
    set_qreg64(qt, 0, "TSR_QREG_FENCE_ADDR_LO", BAR0 + C["TSR_REG_RESET"])
    comp = qt.submit(0, 1, hdr(C["TSR_OP_NOP"], 8), C["TSR_RESET_MAGIC"])
    qt.wait("the job", lambda: qt.qreg(0, C["TSR_QREG_JOBS_DONE"]) == 1)
    check(qt.completion(comp)["error"] == 0, "the job failed")
    check(qt.reg(C["TSR_REG_SCRATCH"]) == 0x5A5A, "the fence reset the chip")
    check_responsive(qt)


@test
def a_completion_record_aimed_at_bar0_is_not_written(qt):
    qt.setup()
    regs = 0x70000000
    map_bar(qt, regs, BAR0 + C["TSR_BLOCK_QUEUE"])
    buf = qt.buffer(1, 4096)
    qt.memwrite(buf, hdr(C["TSR_OP_NOP"], 8))
    # The record would land on queue 0's ring, size and control.
    qt.push(0, 1, buf, 8, regs, 3)
    wait_fence(qt, 0, 3)
    check(qt.qreg(0, C["TSR_QREG_RING_SIZE"]) == 64, "ring size")
    check(qt.qreg(0, C["TSR_QREG_CONTROL"]) == C["TSR_QCTRL_ENABLE"],
          "control")
    check_responsive(qt)


@test
def rings_and_translation_tables_in_bar0_fail_with_dma(qt):
    qt.setup()
    dma_err = C["TSR_ERR_DMA"]
    nop = qt.buffer(1, 4096)
    qt.memwrite(nop, hdr(C["TSR_OP_NOP"], 8))

    # The ring: descriptors would be read from the queue registers.
    qt.set_qreg(0, C["TSR_QREG_CONTROL"], 0)
    set_qreg64(qt, 0, "TSR_QREG_RING_BASE_LO", BAR0 + C["TSR_BLOCK_QUEUE"])
    qt.set_qreg(0, C["TSR_QREG_CONTROL"], C["TSR_QCTRL_ENABLE"])
    qt.set_qreg(0, C["TSR_QREG_TAIL"], 1)
    check(wait_failed(qt, 1) == dma_err, "ring in BAR0")
    fresh_chip(qt)

    # The context table.
    qt.set_reg(C["TSR_REG_MMU_CTX_TABLE_LO"], BAR0 & 0xFFFFFFFF)
    qt.set_reg(C["TSR_REG_MMU_CTX_TABLE_HI"], BAR0 >> 32)
    qt.push(0, 1, nop, 8, 0, 1)
    check(wait_failed(qt, 1) == dma_err, "context table in BAR0")
    fresh_chip(qt)

    # The page tables of context 2, and of context 3 one level down.
    l2 = qt.alloc_pt()
    qt.memwrite(l2, struct.pack("<Q", (BAR0 + C["TSR_BLOCK_MMU"]) |
                                C["TSR_PTE_VALID"]))
    for ctx, root in ((2, BAR0 + C["TSR_BLOCK_MMU"]), (3, l2)):
        qt.memwrite(CTX_TABLE + 16 * ctx, struct.pack(
            "<QQ", root | C["TSR_CTX_VALID"], 0))
    qt.push(0, 2, 0x1000, 8, 0x1000, 1)
    check(wait_failed(qt, 1) == dma_err, "level-2 table in BAR0")
    qt.push(0, 3, 0x1000, 8, 0x1000, 2)
    check(wait_failed(qt, 2) == dma_err, "level-1 table in BAR0")
    check_responsive(qt)


@test
def an_msix_vector_aimed_at_bar0_does_not_loop(qt):
    qt.enable()
    entry = BAR0 + C["TSR_BAR0_MSIX_TABLE"]
    # Vector 0 writes its data to the PING register: every ping would
    # raise another, were the write not refused.
    qt.writel(entry, (BAR0 + C["TSR_REG_PING"]) & 0xFFFFFFFF)
    qt.writel(entry + 4, BAR0 >> 32)
    qt.writel(entry + 8, 0x1234)
    qt.set_reg(C["TSR_REG_IRQ_ENABLE"], C["TSR_IRQ_PING"])
    qt.set_reg(C["TSR_REG_PING"], 1)
    qt.wait("the ping", lambda: qt.reg(C["TSR_REG_PING_COUNT"]) >= 1)
    for _ in range(200):
        check(qt.reg(C["TSR_REG_PING_COUNT"]) == 1, "the vector pinged")
    check_responsive(qt)


# ----------------------------------------------------- largest commands

def maximal_commands():
    """(name, command) for the largest command of each kind."""
    n = 1 << 14
    va = [HUGE_VA + (i << 30) for i in range(8)]
    square = lambda v, d: tensor(v, n, n, d)  # noqa: E731
    ids = 1 << 20
    wide = lambda v: tensor(v, 1 << 18, 1 << 10, "F32")  # noqa: E731
    # The SparseCore first, while the ids (HBM's zeros) are in range: all
    # of one sample and one embedding id, the longest run there is.
    return [
        ("sc gather 2^20 ids x 1024", sc_gather(
            ids, "SQRTN", sc_coo(va[0], ids), wide(va[1]), wide(va[2]))),
        ("sc scatter-add 2^20 ids x 1024", sc_scatter_add(
            ids, "MEAN", sc_coo(va[0], ids), wide(va[2]), wide(va[1]),
            -1.0)),
        ("sc partition 2^20 ids to 4096 x 512", sc_partition(
            ids, 4096, 1 << 20, 1 << 30, 512, 512, sc_coo(va[0], ids),
            sc_coo(va[3], 1 << 21), va[4])),
        ("dma copy 4 GiB", dma(C["TSR_OP_DMA_COPY"], va[0], va[4],
                               (1 << 20, 1 << 12, 1), (1 << 20, 0),
                               (1 << 20, 0))),
        ("dma fill 4 GiB", dma(C["TSR_OP_DMA_FILL"], 0x3F800000, va[4],
                               (1 << 20, 1 << 12, 1), (0, 0), (1 << 20, 0))),
        ("matmul bf16 16384^3", matmul(square(va[0], "BF16"),
                                       square(va[1], "BF16"),
                                       square(va[2], "F32"))),
        ("matmul int8 16384^3", matmul(square(va[0], "I8"),
                                       square(va[1], "I8"),
                                       square(va[2], "I32"),
                                       C["TSR_MATMUL_ACCUMULATE"])),
        ("matmul f32 k=2^20", matmul(tensor(va[0], 256, 1 << 20, "F32"),
                                     tensor(va[1], 1 << 20, 256, "F32"),
                                     tensor(va[2], 256, 256, "F32"))),
        ("vpu select 2^28", vpu("SELECT", square(va[0], "F32"),
                                square(va[3], "F32"), square(va[1], "F32"),
                                square(va[2], "F32"))),
        ("reduce sum 2^28", reduce("SUM", 0, square(va[0], "F32"),
                                   tensor(va[1], 1, n, "F32"))),
        ("cast f32 to bf16 2^28", unary("CAST", square(va[0], "F32"),
                                        square(va[1], "BF16"))),
        ("transpose 2^28", unary("TRANSPOSE", square(va[0], "F32"),
                                 square(va[1], "F32"))),
    ]


def maximal_commands_keep_qemu_memory_bounded(qt):
    qt.setup()
    qt.map_aliased(1, HUGE_VA, 8 << 30, 0)
    _, peak_before = qt.memory_kib()
    slowest_reset = 0.0
    for fence, (name, cmd) in enumerate(maximal_commands(), 1):
        comp = qt.submit(0, 1, cmd, fence)
        deadline = time.monotonic() + MAXIMAL_RUN_S
        while time.monotonic() < deadline and qt.read64(FENCES) != fence:
            qt.reg(C["TSR_REG_CLOCK_LO"])
        if qt.read64(FENCES) == fence:
            rec = qt.completion(comp)
            check(rec["error"] == 0, f"{name}: record {rec}")
            print(f"# {name}: done")
            continue
        start = qt.clock()
        qt.restart_queue(0)
        took = qt.clock() - start
        slowest_reset = max(slowest_reset, took)
        check(took < VCPU_LIMIT_S, f"{name}: reset took {took * 1000:.0f} ms")
        print(f"# {name}: aborted after {MAXIMAL_RUN_S} s, reset "
              f"{took * 1000:.2f} ms, VmHWM +"
              f"{(qt.memory_kib()[1] - peak_before) >> 10} MiB")
        qt.memwrite(FENCES, struct.pack("<Q", fence))
    _, peak = qt.memory_kib()
    check(peak - peak_before < MEMORY_LIMIT_KIB,
          f"QEMU grew by {(peak - peak_before) >> 10} MiB")
    check_responsive(qt)
    print(f"# VmHWM grew by {(peak - peak_before) >> 10} MiB, slowest reset "
          f"{slowest_reset * 1000:.2f} ms, slowest MMIO "
          f"{qt.mmio_max * 1000:.1f} ms")


maximal_commands_keep_qemu_memory_bounded.props = "hbm-size=16M"
test(maximal_commands_keep_qemu_memory_bounded)
