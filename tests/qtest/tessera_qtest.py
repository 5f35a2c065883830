#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The Tessera QEMU device under qtest: no guest OS, every register,
BAR, MSI-X vector and DMA checked from outside.

Each test starts the built QEMU with -accel qtest and the device, plays
the PCI enumerator (BARs, bus mastering, MSI-X), and drives the chip the
way a driver would: page tables and rings in guest RAM, doorbells in BAR0.
MSI-X entries point at guest RAM, so an interrupt is a memory write the
test can see.  Output is TAP.
"""

import base64
import ctypes
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))))
QEMU = os.path.join(REPO, "build", "qemu", "build", "qemu-system-x86_64")
FIRMWARE = os.path.join(REPO, "build", "qemu", "firmware")
HEADER = os.path.join(REPO, "uapi", "drm", "tessera_chip.h")

SLOT = 4                      # -device tessera,addr=04.0
BAR0 = 0xFE000000
BAR2 = 0x800000000            # 32 GiB, inside q35's 64-bit PCI hole
MSI_BASE = 0x00100000         # vector v writes its data at MSI_BASE + 4 v
CTX_TABLE = 0x00200000
RING = 0x00210000             # queue q's ring at RING + 0x1000 q
FENCES = 0x00220000
PT_POOL = 0x00300000
DATA = 0x00800000
WAIT_S = 10


def header_constants():
    """The object-like #defines and enum values of tessera_chip.h as ints.

    Values are C integer expressions over literals and earlier names;
    function-like macros are left out.
    """
    text = open(HEADER).read()
    raw = dict(re.findall(r"^#define\s+(TSR_\w+)[ \t]+([^\n]+)", text, re.M))
    raw.update(re.findall(r"\b(TSR_\w+)\s*=\s*(0x[0-9a-fA-F]+|\d+)", text))
    values = {}

    def value(name, seen=()):
        if name in values or name not in raw or name in seen:
            return values.get(name)
        expr = raw[name].split("/*")[0]
        expr = re.sub(r"_BITULL\((\w+)\)", r"(1 << (\1))", expr)
        expr = re.sub(r"\b(0x[0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)
        for ref in set(re.findall(r"\bTSR_\w+\b", expr)):
            v = value(ref, seen + (name,))
            if v is None:
                return None
            expr = re.sub(r"\b%s\b" % ref, str(v), expr)
        if not re.fullmatch(r"[\s\d()x<>|&+*a-fA-F-]*", expr):
            return None
        values[name] = int(eval(expr, {"__builtins__": {}}))
        return values[name]

    for name in raw:
        value(name)
    return values


C = header_constants()


def die_with_parent():
    """Child side: QEMU gets SIGKILL when this test program dies."""
    ctypes.CDLL(None).prctl(1, 9)   # PR_SET_PDEATHSIG, SIGKILL


class Qtest:
    def __init__(self, props=""):
        self.dir = tempfile.mkdtemp(prefix="tessera-qtest.")
        sock_path = os.path.join(self.dir, "qtest.sock")
        self.qmp_path = os.path.join(self.dir, "qmp.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(sock_path)
        listener.listen(1)
        dev = f"tessera,id=tsr0,addr={SLOT:02x}.0" + (f",{props}" if props else "")
        # QEMU's stderr goes to a file: a pipe nobody drains would block it.
        self.err = open(os.path.join(self.dir, "stderr"), "w+")
        self.proc = subprocess.Popen(
            [QEMU, "-machine", "q35", "-accel", "qtest", "-nodefaults",
             "-display", "none", "-L", FIRMWARE, "-m", "256",
             "-qtest", f"unix:{sock_path}", "-qtest-log", "/dev/null",
             "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
             "-device", dev],
            stdin=subprocess.DEVNULL, stdout=self.err, stderr=self.err,
            preexec_fn=die_with_parent)
        listener.settimeout(WAIT_S)
        try:
            self.sock, _ = listener.accept()
        except socket.timeout:
            self.proc.kill()
            self.proc.wait()
            self.err.seek(0)
            raise RuntimeError(f"QEMU did not start: {self.err.read().strip()}")
        finally:
            listener.close()
        self.buf = b""
        self.qmp = None
        self.pt_next = PT_POOL
        self.data_next = DATA

    def close(self):
        if self.qmp:
            self.qmp.close()
        self.sock.close()
        self.proc.kill()
        self.proc.wait()
        self.err.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def cmd(self, line):
        self.sock.sendall(line.encode() + b"\n")
        while True:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise RuntimeError(f"QEMU closed the qtest socket at '{line}'")
                self.buf += chunk
            reply, self.buf = self.buf.split(b"\n", 1)
            reply = reply.decode()
            if reply.startswith("IRQ"):
                continue
            if not reply.startswith("OK"):
                raise RuntimeError(f"qtest '{line}': {reply}")
            return reply[3:]

    # -- QMP, for the host's fault-injection properties
    def qmp_cmd(self, execute, **arguments):
        if not self.qmp:
            self.qmp = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.qmp.connect(self.qmp_path)
            self.qmp_file = self.qmp.makefile("rw")
            self.qmp_file.readline()                      # greeting
            self.qmp_cmd("qmp_capabilities")
        self.qmp_file.write(json.dumps({"execute": execute,
                                        "arguments": arguments}) + "\n")
        self.qmp_file.flush()
        while True:
            reply = json.loads(self.qmp_file.readline())
            if "event" not in reply:
                return reply

    def qom_set(self, prop, value):
        return self.qmp_cmd("qom-set", path="/machine/peripheral/tsr0",
                            property=prop, value=value)

    def qom_get(self, prop):
        return self.qmp_cmd("qom-get", path="/machine/peripheral/tsr0",
                            property=prop)["return"]

    # -- memory and ports
    def readl(self, addr):
        return int(self.cmd(f"readl 0x{addr:x}"), 16)

    def writel(self, addr, val):
        self.cmd(f"writel 0x{addr:x} 0x{val:x}")

    def memwrite(self, addr, data):
        self.cmd(f"b64write 0x{addr:x} {len(data)} "
                 + base64.b64encode(data).decode())

    def memread(self, addr, size):
        return base64.b64decode(self.cmd(f"b64read 0x{addr:x} {size}"))

    def read64(self, addr):
        return struct.unpack("<Q", self.memread(addr, 8))[0]

    # -- PCI configuration space through 0xcf8/0xcfc
    def cfg_addr(self, reg):
        return 0x80000000 | (SLOT << 11) | (reg & 0xFC)

    def cfg_read(self, reg):
        self.cmd(f"outl 0xcf8 0x{self.cfg_addr(reg):x}")
        return int(self.cmd("inl 0xcfc"), 16)

    def cfg_write(self, reg, val):
        self.cmd(f"outl 0xcf8 0x{self.cfg_addr(reg):x}")
        self.cmd(f"outl 0xcfc 0x{val:x}")

    def find_cap(self, cap_id):
        ptr = self.cfg_read(0x34) & 0xFF
        while ptr:
            hdr = self.cfg_read(ptr)
            if hdr & 0xFF == cap_id:
                return ptr
            ptr = (hdr >> 8) & 0xFF
        return None

    def bar_size(self, reg):
        orig_lo, orig_hi = self.cfg_read(reg), self.cfg_read(reg + 4)
        self.cfg_write(reg, 0xFFFFFFFF)
        self.cfg_write(reg + 4, 0xFFFFFFFF)
        lo, hi = self.cfg_read(reg), self.cfg_read(reg + 4)
        self.cfg_write(reg, orig_lo)
        self.cfg_write(reg + 4, orig_hi)
        mask = (hi << 32) | (lo & ~0xF)
        return ((~mask) & 0xFFFFFFFFFFFFFFFF) + 1, lo & 0xF

    def enable(self):
        """Assign the BARs, turn on memory decoding, bus mastering, MSI-X."""
        self.cfg_write(0x10, BAR0 & 0xFFFFFFFF)
        self.cfg_write(0x14, BAR0 >> 32)
        self.cfg_write(0x18, BAR2 & 0xFFFFFFFF)
        self.cfg_write(0x1C, BAR2 >> 32)
        self.cfg_write(0x04, self.cfg_read(0x04) | 0x6)
        cap = self.find_cap(0x11)
        ctrl = self.cfg_read(cap)
        self.cfg_write(cap, (ctrl & 0xFFFF) | (1 << 31))  # MSI-X enable
        for v in range(C["TSR_MSIX_VECTORS"]):
            entry = BAR0 + C["TSR_BAR0_MSIX_TABLE"] + 16 * v
            self.writel(entry, MSI_BASE + 4 * v)
            self.writel(entry + 4, 0)
            self.writel(entry + 8, 0x1000 + v)
            self.writel(entry + 12, 0)                    # unmasked
        self.memwrite(MSI_BASE, bytes(4 * C["TSR_MSIX_VECTORS"]))

    # -- the chip
    def reg(self, off):
        return self.readl(BAR0 + off)

    def set_reg(self, off, val):
        self.writel(BAR0 + off, val)

    def qreg(self, q, off):
        return self.reg(C["TSR_BLOCK_QUEUE"] + q * C["TSR_QUEUE_STRIDE"] + off)

    def set_qreg(self, q, off, val):
        self.set_reg(C["TSR_BLOCK_QUEUE"] + q * C["TSR_QUEUE_STRIDE"] + off,
                     val)

    def irq_fired(self, vector):
        return self.readl(MSI_BASE + 4 * vector) == 0x1000 + vector

    def clear_irq(self, vector):
        self.writel(MSI_BASE + 4 * vector, 0)

    def wait(self, what, cond):
        deadline = time.monotonic() + WAIT_S
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")

    # -- contexts, page tables, queues
    def alloc_pt(self):
        a = self.pt_next
        self.pt_next += 4096
        self.memwrite(a, bytes(4096))
        return a

    def setup(self, queues=1):
        self.enable()
        self.roots = {}
        self.memwrite(CTX_TABLE, bytes(4096))
        self.set_reg(C["TSR_REG_MMU_CTX_TABLE_LO"], CTX_TABLE)
        self.set_reg(C["TSR_REG_MMU_CTX_COUNT"], 16)
        self.context(1)
        self.tails = [0] * queues
        for q in range(queues):
            self.set_qreg(q, C["TSR_QREG_RING_BASE_LO"], RING + 0x1000 * q)
            self.set_qreg(q, C["TSR_QREG_RING_SIZE"], 64)
            self.set_qreg(q, C["TSR_QREG_FENCE_ADDR_LO"], FENCES + 8 * q)
            self.set_qreg(q, C["TSR_QREG_IRQ_ENABLE"], C["TSR_QIRQ_ALL"])
            self.set_qreg(q, C["TSR_QREG_CONTROL"], C["TSR_QCTRL_ENABLE"])

    def context(self, ctx):
        root = self.alloc_pt()
        self.roots[ctx] = root
        self.memwrite(CTX_TABLE + 16 * ctx,
                      struct.pack("<QQ", root | C["TSR_CTX_VALID"], 0))

    def map(self, ctx, va, addr, length, flags):
        valid = C["TSR_PTE_VALID"]
        for off in range(0, length, 4096):
            table = self.roots[ctx]
            for level in (2, 1):
                slot = table + 8 * (((va + off) >> (12 + 9 * level)) & 511)
                pte = self.read64(slot)
                if not pte & valid:
                    pte = self.alloc_pt() | valid
                    self.memwrite(slot, struct.pack("<Q", pte))
                table = pte & C["TSR_PTE_ADDR_MASK"]
            slot = table + 8 * (((va + off) >> 12) & 511)
            self.memwrite(slot, struct.pack("<Q", (addr + off) | flags | valid))

    def buffer(self, ctx, length):
        """System memory mapped RW at the same VA."""
        a = self.data_next
        length = (length + 4095) & ~4095
        self.data_next += length
        self.memwrite(a, bytes(length))
        self.map(ctx, a, a, length, C["TSR_PTE_READ"] | C["TSR_PTE_WRITE"])
        return a

    def submit(self, q, ctx, cmds, fence):
        buf = self.buffer(ctx, len(cmds) + 72)
        self.memwrite(buf, cmds)
        desc = struct.pack("<IIQIIQQ3Q", ctx, C["TSR_JOB_IRQ"], buf,
                           len(cmds), 0, buf + len(cmds), fence, 0, 0, 0)
        self.memwrite(RING + 0x1000 * q + 64 * self.tails[q], desc)
        self.tails[q] = (self.tails[q] + 1) % 64
        self.set_qreg(q, C["TSR_QREG_TAIL"], self.tails[q])
        return buf + len(cmds)

    def completion(self, addr):
        f = struct.unpack("<IIIIQQQQQQQ", self.memread(addr, 72))
        return dict(zip(("status", "error", "failed_cmd", "reserved",
                         "fault_va", "fence", "start", "end", "mxu", "vpu",
                         "dma"), f))


def hdr(op, size):
    return struct.pack("<BBHI", op, size // 8, 0, 0)


def dma_copy(src, dst, n):
    return hdr(C["TSR_OP_DMA_COPY"], 72) + struct.pack(
        "<QQ3IIQQQQ", src, dst, n, 1, 1, 0, 0, 0, 0, 0)


def sem(op, va, value):
    return hdr(op, 24) + struct.pack("<QQ", va, value)


# ------------------------------------------------------------------ tests

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def check(cond, what):
    if not cond:
        raise AssertionError(what)


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


@test
def queues_run_concurrently_in_their_own_threads(qt):
    qt.setup(queues=4)
    s = qt.buffer(1, 4096)
    # Queue 0 waits for a semaphore that queue 3 raises later.
    waiting = qt.submit(0, 1, sem(C["TSR_OP_SEM_WAIT"], s, 1), 10)
    qt.wait("queue 0 to start", lambda: qt.qreg(0, C["TSR_QREG_STATUS"]) ==
            C["TSR_QSTATUS_RUNNING"])
    other = qt.submit(1, 1, hdr(C["TSR_OP_NOP"], 8), 20)
    qt.wait("queue 1 despite queue 0 waiting", lambda: qt.irq_fired(2))
    check(qt.completion(waiting)["status"] == 0, "waiter finished early")
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
    qt.wait("the job to start", lambda: qt.qreg(0, C["TSR_QREG_STATUS"]) ==
            C["TSR_QSTATUS_RUNNING"])
    qt.set_reg(C["TSR_REG_RESET"], C["TSR_RESET_MAGIC"])
    check(qt.reg(C["TSR_REG_SCRATCH"]) == 0, "scratch survived")
    check(qt.qreg(0, C["TSR_QREG_CONTROL"]) == 0, "queue still enabled")
    check(qt.completion(waiting)["error"] == C["TSR_ERR_ABORTED"],
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


def main():
    if not os.path.exists(QEMU):
        print("Bail out! QEMU not built; run make")
        return 1
    print("TAP version 13")
    print(f"1..{len(TESTS)}")
    failed = 0
    for i, fn in enumerate(TESTS, 1):
        name = fn.__name__
        try:
            qt = Qtest(getattr(fn, "props", ""))
        except Exception as e:
            print(f"# {e}")
            print(f"not ok {i} {name}")
            failed += 1
            continue
        try:
            fn(qt)
            print(f"ok {i} {name}")
        except Exception as e:
            print(f"# {type(e).__name__}: {e}")
            print(f"not ok {i} {name}")
            failed += 1
        finally:
            qt.close()
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
