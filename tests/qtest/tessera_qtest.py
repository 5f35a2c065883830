#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The Tessera QEMU device under qtest: no guest OS, every register,
BAR, MSI-X vector and DMA checked from outside.

Each test starts the built QEMU with -accel qtest and the device, plays
the PCI enumerator (BARs, bus mastering, MSI-X), and drives the chip the
way a driver would: page tables and rings in guest RAM, doorbells in BAR0
(tessera_harness.py).  Then the hostile-guest suite runs
(tessera_hostile.py), the ICI port against a peer that speaks the wire
protocol (tessera_ici_peer.py), link faults injected between two chips
(tessera_ici_faults.py), ports over TCP (tessera_ici_tcp.py) and the
handshake's authentication (tessera_ici_auth.py).  Output is TAP, one
plan per suite.
"""

import os
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from tessera_harness import (BAR0, BAR2, C, FENCES, HUGE_VA,  # noqa: E402
                             QEMU, billion_row_dma, check, dma, dma_copy,
                             hdr, huge_matmul, run_suite, sem)
import tessera_hostile  # noqa: E402
import tessera_ici_faults  # noqa: E402
import tessera_ici_peer  # noqa: E402
import tessera_ici_auth  # noqa: E402
import tessera_ici_tcp  # noqa: E402


# ------------------------------------------------------------------ tests

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def config_space_identifies_a_processing_accelerator(qt):
    ids = qt.cfg_read(0x00)
    check(ids == (C["TSR_PCI_DEVICE_ID"] << 16) | C["TSR_PCI_VENDOR_ID"],
          f"ids 0x{ids:08x}")
    check(qt.cfg_read(0x08) >> 8 == C["TSR_PCI_CLASS"], "class")
    check(qt.find_cap(0x10) is not None, "no PCI Express capability")
    check(qt.find_cap(0x11) is not None, "no MSI-X capability")


@test
def bars_have_the_documented_size_and_kind(qt):
    size, kind = qt.bar_size(0x10)
    check(size == C["TSR_BAR0_SIZE"] and kind == 0x4,
          f"BAR0 size {size:#x} kind {kind:#x}")
    size, kind = qt.bar_size(0x18)
    check(size == 256 << 20 and kind == 0xC, f"BAR2 size {size:#x} kind {kind:#x}")


@test
def identity_and_preset_registers_read_through_bar0(qt):
    qt.enable()
    check(qt.reg(C["TSR_REG_CHIP_ID"]) == C["TSR_CHIP_ID"], "chip id")
    check(qt.reg(C["TSR_REG_PRESET"]) == C["TSR_PRESET_V4"], "default preset")
    check(qt.reg(C["TSR_REG_HBM_SIZE_LO"]) == 256 << 20, "hbm size")


def preset_properties(qt):
    qt.enable()
    check(qt.reg(C["TSR_REG_PRESET"]) == C["TSR_PRESET_V5P"], "preset")
    check(qt.reg(C["TSR_REG_CLOCK_MHZ"]) == 1000, "clock override")
    check(qt.reg(C["TSR_REG_NUM_QUEUES"]) == 8, "queues override")
    check(qt.reg(C["TSR_REG_HBM_SIZE_LO"]) == 64 << 20, "hbm-size")


preset_properties.props = "preset=v5p,clock-mhz=1000,queues=8,hbm-size=64M"
test(preset_properties)


@test
def ping_arrives_as_msix_vector_0(qt):
    qt.enable()
    qt.set_reg(C["TSR_REG_IRQ_ENABLE"], C["TSR_IRQ_PING"])
    qt.set_reg(C["TSR_REG_PING"], 0xC0FFEE)
    qt.wait("vector 0", lambda: qt.irq_fired(0))
    check(qt.reg(C["TSR_REG_PING_ACK"]) == 0xC0FFEE, "ping ack")
    check(not qt.irq_fired(1), "queue vector fired")


@test
def a_masked_vector_is_held_pending_until_unmasked(qt):
    qt.enable()
    entry = BAR0 + C["TSR_BAR0_MSIX_TABLE"]
    qt.writel(entry + 12, 1)
    qt.set_reg(C["TSR_REG_IRQ_ENABLE"], C["TSR_IRQ_PING"])
    qt.set_reg(C["TSR_REG_PING"], 1)
    qt.wait("the ping", lambda: qt.reg(C["TSR_REG_PING_COUNT"]) == 1)
    qt.wait("the pending bit",
            lambda: qt.readl(BAR0 + C["TSR_BAR0_MSIX_PBA"]) & 1)
    check(not qt.irq_fired(0), "a masked vector fired")
    qt.writel(entry + 12, 0)
    qt.wait("vector 0 after unmask", lambda: qt.irq_fired(0))


@test
def a_job_moves_data_into_hbm_seen_through_bar2(qt):
    qt.setup()
    src = qt.buffer(1, 8192)
    payload = bytes((i * 13) & 0xFF for i in range(6000))
    qt.memwrite(src, payload)
    hbm_va = 0x40000000
    qt.map(1, hbm_va, 0x10000, 8192,
           C["TSR_PTE_READ"] | C["TSR_PTE_WRITE"] | C["TSR_PTE_HBM"])
    comp = qt.submit(0, 1, dma_copy(src, hbm_va + 100, 6000), 41)
    qt.wait("queue 0's vector", lambda: qt.irq_fired(1))
    rec = qt.completion(comp)
    check(rec["status"] == C["TSR_JOB_STATUS_DONE"] and rec["error"] == 0,
          f"record {rec}")
    check(rec["fence"] == 41 and qt.read64(FENCES) == 41, "fence")
    check(qt.memread(BAR2 + 0x10000 + 100, 6000) == payload,
          "HBM through BAR2 differs from what was copied")
    check(rec["dma"] > 0 and rec["end"] > rec["start"], "timing")


@test
def hbm_written_through_bar2_is_what_the_chip_reads(qt):
    qt.setup()
    dst = qt.buffer(1, 4096)
    qt.memwrite(BAR2 + 0x2000, b"tessera-hbm-bar!")
    hbm_va = 0x40000000
    qt.map(1, hbm_va, 0x2000, 4096, C["TSR_PTE_READ"] | C["TSR_PTE_HBM"])
    comp = qt.submit(0, 1, dma_copy(hbm_va, dst, 16), 1)
    qt.wait("queue 0's vector", lambda: qt.irq_fired(1))
    check(qt.completion(comp)["error"] == 0, "job failed")
    check(qt.memread(dst, 16) == b"tessera-hbm-bar!", "data")


@test
def a_fault_fails_its_job_alone_and_raises_the_device_vector(qt):
    qt.setup()
    qt.set_reg(C["TSR_REG_IRQ_ENABLE"], C["TSR_IRQ_MMU_FAULT"])
    src = qt.buffer(1, 4096)
    bad = qt.submit(0, 1, dma_copy(src, 0x7000001000, 16), 1)
    good = qt.submit(0, 1, dma_copy(src, src + 64, 16), 2)
    qt.wait("the second job", lambda: qt.read64(FENCES) == 2)
    rb, rg = qt.completion(bad), qt.completion(good)
    check(rb["error"] == C["TSR_ERR_MMU_UNMAPPED"] and
          rb["fault_va"] == 0x7000001000, f"bad job {rb}")
    check(rg["error"] == 0, f"good job {rg}")
    qt.wait("vector 0", lambda: qt.irq_fired(0))
    check(qt.reg(C["TSR_REG_MMU_FAULT_VA_LO"]) == 0x1000, "fault register")


def started(qt, comp):
    """Whether the job whose record is at @comp has started: the chip marks
    the record RUNNING before its first command.  (A queue's STATUS reads
    RUNNING as soon as its tail is written, before its thread takes the
    job: a reset then finds the record blank.)"""
    return qt.completion(comp)["status"] == C["TSR_JOB_STATUS_RUNNING"]


@test
def queues_run_concurrently_in_their_own_threads(qt):
    qt.setup(queues=4)
    s = qt.buffer(1, 4096)
    # Queue 0 waits for a semaphore that queue 3 raises later.
    waiting = qt.submit(0, 1, sem(C["TSR_OP_SEM_WAIT"], s, 1), 10)
    qt.wait("queue 0 to start", lambda: started(qt, waiting))
    other = qt.submit(1, 1, hdr(C["TSR_OP_NOP"], 8), 20)
    qt.wait("queue 1 despite queue 0 waiting", lambda: qt.irq_fired(2))
    check(qt.completion(waiting)["status"] == C["TSR_JOB_STATUS_RUNNING"] and
          qt.completion(waiting)["fence"] == 10,
          f"waiter not marked running: {qt.completion(waiting)}")
    qt.submit(3, 1, sem(C["TSR_OP_SEM_SIGNAL"], s, 1), 30)
    qt.wait("queue 0 after the signal", lambda: qt.irq_fired(1))
    check(qt.completion(waiting)["error"] == 0, "waiter failed")
    check(qt.completion(other)["error"] == 0, "other queue failed")


@test
def the_reset_register_aborts_and_clears(qt):
    qt.setup()
    s = qt.buffer(1, 4096)
    qt.set_reg(C["TSR_REG_SCRATCH"], 0x1234)
    resets = qt.reg(C["TSR_REG_CNT_RESETS_LO"])
    waiting = qt.submit(0, 1, sem(C["TSR_OP_SEM_WAIT"], s, 1), 5)
    qt.wait("the job to start", lambda: started(qt, waiting))
    qt.set_reg(C["TSR_REG_RESET"], C["TSR_RESET_MAGIC"])
    check(qt.reg(C["TSR_REG_SCRATCH"]) == 0, "scratch survived")
    check(qt.qreg(0, C["TSR_QREG_CONTROL"]) == 0, "queue still enabled")
    # The aborted job is cut off: its record stays as it started.
    check(qt.completion(waiting)["status"] == C["TSR_JOB_STATUS_RUNNING"],
          f"record {qt.completion(waiting)}")
    check(qt.reg(C["TSR_REG_CNT_RESETS_LO"]) == resets + 1, "reset counter")


@test
def function_level_reset_clears_the_chip(qt):
    qt.enable()
    qt.set_reg(C["TSR_REG_SCRATCH"], 0x55)
    cap = qt.find_cap(0x10)
    devctl = qt.cfg_read(cap + 8)
    qt.cfg_write(cap + 8, devctl | (1 << 15))     # initiate FLR
    qt.enable()
    check(qt.reg(C["TSR_REG_SCRATCH"]) == 0, "scratch survived FLR")


@test
def d3hot_turns_the_bars_off_and_d0_resets_the_chip(qt):
    qt.enable()
    qt.set_reg(C["TSR_REG_SCRATCH"], 0x55)
    pm = qt.find_cap(0x01)
    check(pm is not None, "no power management capability")
    pmc = qt.cfg_read(pm) >> 16
    check(pmc & 0x7 == 3, f"PMC 0x{pmc:x}: not PCI PM 1.2")
    pmcsr = qt.cfg_read(pm + 4)
    check(pmcsr & 0x3 == 0, f"PMCSR 0x{pmcsr:x}: not in D0")
    check(not pmcsr & 0x8, "No_Soft_Reset set: D3hot would keep the chip")
    qt.cfg_write(pm + 4, pmcsr | 0x3)                 # to D3hot
    check(qt.cfg_read(pm + 4) & 0x3 == 3, "D3hot refused")
    check(qt.reg(C["TSR_REG_SCRATCH"]) != 0x55,
          "BAR0 answers in D3hot")
    qt.cfg_write(pm + 4, pmcsr & ~0x3)                # back to D0
    check(qt.cfg_read(pm + 4) & 0x3 == 0, "D0 refused")
    qt.enable()                                        # as the OS restores
    check(qt.reg(C["TSR_REG_SCRATCH"]) == 0, "scratch survived D3hot")
    check(qt.reg(C["TSR_REG_CHIP_ID"]) == C["TSR_CHIP_ID"], "the chip after D0")
    qt.cfg_write(pm + 4, pmcsr | 0x1)                 # D1: not supported
    check(qt.cfg_read(pm + 4) & 0x3 == 0, "D1 taken")


@test
def qom_set_fails_the_next_transfer_and_only_that(qt):
    qt.setup()
    check("return" in qt.qom_set("fault-fail-dma", 1), "qom-set refused")
    check(qt.qom_get("fault-fail-dma") == 1, "pending count")
    first = qt.submit(0, 1, hdr(C["TSR_OP_NOP"], 8), 1)
    second = qt.submit(0, 1, hdr(C["TSR_OP_NOP"], 8), 2)
    qt.wait("both jobs", lambda: qt.read64(FENCES) == 2)
    check(qt.qreg(0, C["TSR_QREG_LAST_ERROR"]) == C["TSR_ERR_DMA"],
          "last error")
    check(qt.qreg(0, C["TSR_QREG_JOBS_FAILED"]) == 1, "failed count")
    check(qt.completion(second)["error"] == 0, "second job")
    check(qt.completion(first)["status"] == 0, "first job wrote a record")
    check(qt.qom_get("fault-fail-dma") == 0, "fault not consumed")


@test
def qom_set_rejects_a_value_of_the_wrong_type(qt):
    reply = qt.qom_set("fault-fail-dma", "many")
    check("error" in reply, f"accepted: {reply}")
    check(qt.qom_get("fault-fail-dma") == 0, "changed anyway")


@test
def qom_set_fatal_raises_vector_0_and_reset_recovers(qt):
    qt.setup()
    qt.set_reg(C["TSR_REG_IRQ_ENABLE"], C["TSR_IRQ_FATAL"])
    check("return" in qt.qom_set("fault-fatal", True), "qom-set refused")
    qt.wait("vector 0", lambda: qt.irq_fired(0))
    check(qt.reg(C["TSR_REG_STATUS"]) == C["TSR_STATUS_FATAL"], "status")
    check(qt.qom_get("fault-fatal") is True, "qom-get fault-fatal")
    qt.set_reg(C["TSR_REG_RESET"], C["TSR_RESET_MAGIC"])
    check(qt.reg(C["TSR_REG_STATUS"]) == C["TSR_STATUS_READY"], "after reset")
    qt.setup()
    qt.submit(0, 1, hdr(C["TSR_OP_NOP"], 8), 7)
    qt.wait("a job after reset", lambda: qt.read64(FENCES) == 7)


@test
def qom_set_poison_fails_reads_of_that_hbm(qt):
    qt.setup()
    dst = qt.buffer(1, 4096)
    hbm_va = 0x40000000
    qt.map(1, hbm_va, 0x8000, 4096, C["TSR_PTE_READ"] | C["TSR_PTE_HBM"])
    qt.qom_set("fault-poison-addr", 0x8100)
    qt.qom_set("fault-poison-size", 8)
    comp = qt.submit(0, 1, dma_copy(hbm_va, dst, 0x200), 1)
    qt.wait("the job", lambda: qt.read64(FENCES) == 1)
    rec = qt.completion(comp)
    check(rec["error"] == C["TSR_ERR_ECC"] and rec["fault_va"] == hbm_va + 0x100,
          f"record {rec}")
    check(qt.reg(C["TSR_REG_CNT_ECC_UE_LO"]) == 1, "ECC counter")


def debug_block_drops_an_interrupt(qt):
    qt.setup()
    check(qt.reg(C["TSR_REG_CAPS"]) & C["TSR_CAP_DEBUG_REGS"], "no debug cap")
    qt.set_reg(C["TSR_REG_DBG_DROP_IRQS"], 1)
    check(qt.qom_get("fault-drop-irqs") == 1, "host does not see the fault")
    qt.submit(0, 1, hdr(C["TSR_OP_NOP"], 8), 1)
    qt.wait("the first job", lambda: qt.read64(FENCES) == 1)
    qt.submit(0, 1, hdr(C["TSR_OP_NOP"], 8), 2)
    qt.wait("the second job's interrupt", lambda: qt.irq_fired(1))
    check(qt.read64(FENCES) == 2, "fence")
    check(qt.qom_get("fault-drop-irqs") == 0, "fault not consumed")


debug_block_drops_an_interrupt.props = "debug-regs=on"
test(debug_block_drops_an_interrupt)


@test
def debug_block_is_absent_by_default(qt):
    qt.enable()
    qt.set_reg(C["TSR_REG_DBG_FAIL_DMA"], 3)
    check(qt.reg(C["TSR_REG_DBG_FAIL_DMA"]) == 0, "debug block answered")
    check(qt.qom_get("fault-fail-dma") == 0, "fault injected")


# ----------------------------------------------------- hardening regressions

# A reset or any register access must not hold the vCPU longer than this.
VCPU_LIMIT_S = 0.1


def start_semaphore_wait(qt, q=0, fence=5):
    """A job that waits for the CPU: it runs until aborted.

    STATUS says RUNNING once the queue has work, which may be before a
    worker has taken the job: the job marks its start in memory, and that
    is what is waited for.
    """
    s = qt.buffer(1, 4096)
    comp = qt.submit(q, 1, sem(C["TSR_OP_SEM_SIGNAL"], s + 8, 1) +
                     sem(C["TSR_OP_SEM_WAIT"], s, 1), fence)
    qt.wait("the job to start", lambda: qt.read64(s + 8) == 1)
    check(qt.qreg(q, C["TSR_QREG_STATUS"]) == C["TSR_QSTATUS_RUNNING"],
          "a running job's queue is RUNNING")
    return comp


@test
def ring_size_cannot_be_cleared_under_a_running_job(qt):
    qt.setup()
    comp = start_semaphore_wait(qt)
    # Disabled without a reset, the queue still finishes its job: it must
    # find the ring it started from (with RING_SIZE 0, QEMU divided by 0).
    qt.set_qreg(0, C["TSR_QREG_CONTROL"], 0)
    qt.set_qreg(0, C["TSR_QREG_RING_SIZE"], 0)
    qt.wait("the aborted job", lambda: qt.read64(FENCES) == 5)
    check(qt.completion(comp)["error"] == C["TSR_ERR_ABORTED"],
          f"record {qt.completion(comp)}")
    check(qt.qreg(0, C["TSR_QREG_HEAD"]) == 1, "head")

    def ring_size_set(n):
        qt.set_qreg(0, C["TSR_QREG_RING_SIZE"], n)
        return qt.qreg(0, C["TSR_QREG_RING_SIZE"]) == n

    qt.wait("the idle queue's ring to be free", lambda: ring_size_set(32))


def reset_during(qt, cmd):
    """Reset queue 0 under a job running @cmd; the reset is immediate."""
    qt.setup()
    qt.map_aliased(1, HUGE_VA, 8 << 30, 0)
    comp = qt.submit(0, 1, cmd, 7)
    qt.wait("the job to start", lambda: started(qt, comp))
    # The vCPU stays responsive while the job runs (a third of a second,
    # well into the command).
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline:
        qt.reg(C["TSR_REG_CLOCK_LO"])
    start = qt.clock()
    qt.set_qreg(0, C["TSR_QREG_CONTROL"], C["TSR_QCTRL_RESET"])
    took = qt.clock() - start
    check(took < VCPU_LIMIT_S, f"the queue reset took {took * 1000:.0f} ms")
    record, fence = qt.completion(comp), qt.read64(FENCES)
    check(record["status"] == C["TSR_JOB_STATUS_RUNNING"] and fence == 0,
          f"the job completed: {record}")
    # A job on the new fence address runs once the aborted one has left
    # the chip; the aborted one wrote nothing after the reset.
    qt.set_qreg(0, C["TSR_QREG_FENCE_ADDR_LO"], FENCES + 0x100)
    qt.restart_queue(0)
    qt.submit(0, 1, hdr(C["TSR_OP_NOP"], 8), 8)
    qt.wait("a job after the reset", lambda: qt.read64(FENCES + 0x100) == 8)
    check(qt.completion(comp) == record, "the aborted job wrote its record")
    check(qt.read64(FENCES) == fence, "the aborted job wrote its fence")
    check(qt.mmio_max < VCPU_LIMIT_S,
          f"{qt.mmio_worst} took {qt.mmio_max * 1000:.0f} ms")
    print(f"# queue reset {took * 1000:.2f} ms, slowest MMIO "
          f"{qt.mmio_max * 1000:.1f} ms")


@test
def a_queue_reset_returns_at_once_during_a_huge_matmul(qt):
    reset_during(qt, huge_matmul())


@test
def a_queue_reset_returns_at_once_during_a_billion_row_dma(qt):
    reset_during(qt, billion_row_dma())


@test
def dma_sizes_and_strides_that_wrap_are_refused_untouched(qt):
    qt.setup()
    src = qt.buffer(1, 8192)
    dst = qt.buffer(1, 8192) + 4096
    minus = lambda n: (1 << 64) - n  # noqa: E731
    cases = [
        # size product 2^64, 2^64: wraps to 0
        ((1 << 31, 1 << 31, 4), (1 << 31, 1 << 62), "TOO_LARGE"),
        ((1 << 30, 1 << 30, 16), (1 << 30, 1 << 60), "TOO_LARGE"),
        # rows stepping back over each other
        ((128, 2, 1), (minus(64), 0), "BAD_STRIDE"),
        # rows stepping back, planes on top of each other
        ((128, 3, 2), (minus(64), 0), "BAD_STRIDE"),
        # the second plane one byte before the first
        ((64, 1, 2), (64, minus(1)), "BAD_STRIDE"),
    ]
    for fence, (size, stride, error) in enumerate(cases, 1):
        qt.memwrite(dst - 4096, b"\xaa" * 8192)
        comp = qt.submit(0, 1, dma(C["TSR_OP_DMA_COPY"], src, dst, size,
                                   (0, 0), stride), fence)
        qt.wait(f"job {fence}", lambda: qt.read64(FENCES) == fence)
        rec = qt.completion(comp)
        check(rec["error"] == C["TSR_ERR_" + error],
              f"size {size} stride {stride}: {rec}")
        check(qt.memread(dst - 4096, 8192) == b"\xaa" * 8192,
              f"size {size} stride {stride} wrote memory")


def guest_errors_are_logged(qt):
    qt.setup()
    qt.set_qreg(0, C["TSR_QREG_RING_SIZE"], 3)
    qt.set_qreg(0, C["TSR_QREG_TAIL"], 1000)
    qt.submit(0, 1, hdr(0x7F, 8), 1)
    qt.wait("the job", lambda: qt.read64(FENCES) == 1)
    # The chip logs a failed job once it has published it, after the
    # fence: wait for that line, then every line is in.
    failed = ("tessera: queue 0: job in ring slot 0 failed with "
              "BAD_OPCODE (1) at command 0")
    try:
        qt.wait("the failed job's line", lambda: failed in qt.stderr(),
                interval=0.01)
    except AssertionError:
        check(False, f"not logged: {failed}")
    log = qt.stderr()
    # The worker may be looking at the ring just then: "enabled" or
    # "running a job", both refusals.
    for line in ("tessera: queue 0: ring register 0x08 <- 0x3 ignored: "
                 "the queue is ",
                 "tessera: queue 0: TAIL 1000 ignored: RING_SIZE is 64"):
        check(line in log, f"not logged: {line}")


guest_errors_are_logged.args = ("-d", "guest_errors")
test(guest_errors_are_logged)


@test
def the_device_is_not_migratable(qt):
    qt.enable()
    reply = qt.qmp_cmd("migrate", uri="exec:cat > /dev/null")
    check("error" in reply and "non-migratable" in reply["error"]["desc"],
          f"migrate: {reply}")


def worker_threads(qt):
    """(nice, scheduling policy) of the chip's queue workers and of the
    main thread (/proc/PID/task/TID/stat fields 19 and 41)."""
    pid = qt.proc.pid
    seen = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            comm = f.read().strip()
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        if comm.startswith("tessera-q") or int(tid) == pid:
            seen["main" if int(tid) == pid else comm] = (int(fields[16]),
                                                         int(fields[38]))
    return seen


def queue_workers_yield_to_the_main_loop(qt):
    qt.enable()
    seen = worker_threads(qt)
    main = seen.pop("main")
    check(len(seen) == qt.reg(C["TSR_REG_NUM_QUEUES"]), f"workers {seen}")
    # SCHED_BATCH (3), nice 10 below the main loop's (worker-nice), at
    # most 19 (make check itself may run under nice).
    check(all(w == (min(main[0] + 10, 19), 3) for w in seen.values()),
          f"main {main}, workers {seen}")


queue_workers_yield_to_the_main_loop.props = "worker-nice=10"
queue_workers_yield_to_the_main_loop.args = ("-name", "debug-threads=on")
test(queue_workers_yield_to_the_main_loop)


def workers_run_as_the_main_loop_by_default(qt):
    qt.enable()
    seen = worker_threads(qt)
    main = seen.pop("main")
    check(seen and all(w == main for w in seen.values()),
          f"main {main}, workers {seen}")


workers_run_as_the_main_loop_by_default.args = ("-name", "debug-threads=on")
test(workers_run_as_the_main_loop_by_default)


def main():
    if not os.path.exists(QEMU):
        print("Bail out! QEMU not built; run make")
        return 1
    print("TAP version 13")
    failed = run_suite(TESTS)
    failed += run_suite(tessera_hostile.TESTS, "hostile")
    failed += run_suite(tessera_ici_peer.TESTS, "ici")
    failed += run_suite(tessera_ici_faults.TESTS, "ici-faults")
    failed += run_suite(tessera_ici_tcp.TESTS, "ici-tcp")
    failed += run_suite(tessera_ici_auth.TESTS, "ici-auth")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
