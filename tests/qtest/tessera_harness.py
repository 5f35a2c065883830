# SPDX-License-Identifier: GPL-2.0
"""The qtest harness for the Tessera QEMU device: QEMU with -accel qtest
and one chip, the PCI enumerator's work (BARs, bus mastering, MSI-X),
page tables, rings and commands built in guest RAM the way a driver
would, and a TAP runner.  MSI-X entries point at guest RAM, so an
interrupt is a memory write the test can see.
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
HEADER = os.path.join(REPO, "include", "tessera", "chip.h")

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
CMD_TIMEOUT_S = 20


def header_constants():
    """The object-like #defines and enum values of tessera/chip.h as ints.

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


def header_macros():
    """The one-line function-like #defines of tessera/chip.h:
    name -> (parameters, body)."""
    text = open(HEADER).read()
    return {name: ([p.strip() for p in params.split(",")],
                   body.split("/*")[0])
            for name, params, body in re.findall(
                r"^#define\s+(TSR_\w+)\(([\w, ]+)\)[ \t]+([^\n\\]+)$",
                text, re.M)}


MACROS = header_macros()


def macro(name, *args):
    """Function-like macro @name of tessera/chip.h applied to integers:
    macro("TSR_ICI_PORT_BASE", 1) is TSR_ICI_PORT_BASE(1)."""
    params, expr = MACROS[name]
    for param, arg in zip(params, args):
        expr = re.sub(r"\b%s\b" % param, str(int(arg)), expr)
    for ref in set(re.findall(r"\bTSR_\w+\b", expr)):
        expr = re.sub(r"\b%s\b" % ref, str(C[ref]), expr)
    if not re.fullmatch(r"[\s\d()x<>|&^+*/a-fA-F-]*", expr):
        raise ValueError(f"{name}: cannot evaluate '{expr}'")
    expr = expr.replace("/", "//")
    return int(eval(expr, {"__builtins__": {}}))


def die_with_parent():
    """Child side: QEMU gets SIGKILL when this test program dies."""
    ctypes.CDLL(None).prctl(1, 9)   # PR_SET_PDEATHSIG, SIGKILL


class Qtest:
    """One QEMU with one chip, driven over the qtest socket.

    Every MMIO access is timed from this side: `mmio_max` is the longest
    one (seconds) and `mmio_worst` what it was, so that a test can assert
    that no register access blocked the vCPU for long.  The time is
    `clock()`'s, which leaves out the waits for a CPU: on a loaded host
    (make check runs two suites at once on two cores) a round trip took
    166-736 ms with QEMU's main thread merely waiting to run, or asleep on
    a core lock whose holder, a queue worker, was waiting to run: neither
    is a vCPU the device blocked.
    """

    def __init__(self, props="", args=()):
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
             "-device", dev, *args],
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
        # A QEMU that hangs fails the test instead of hanging the run.
        self.sock.settimeout(CMD_TIMEOUT_S)
        self.buf = b""
        self.qmp = None
        self.pt_next = PT_POOL
        self.data_next = DATA
        self.mmio_max = 0.0
        self.mmio_worst = None
        # schedstat of this thread, QEMU's main thread (which runs the
        # qtest accelerator's accesses) and QEMU's other threads (see
        # clock()), by thread id; the others looked up again now and then.
        self.schedstat = {0: os.open("/proc/thread-self/schedstat", os.O_RDONLY)}
        self.clock_reads = 0
        self.clock_last = {}

    def _schedstat_fds(self):
        """Open the schedstat of QEMU's threads not yet open, close those
        of threads that ended."""
        tasks = f"/proc/{self.proc.pid}/task"
        try:
            tids = {int(t) for t in os.listdir(tasks)}
        except OSError:
            tids = set()
        for tid in list(self.schedstat):
            if tid and tid not in tids:
                os.close(self.schedstat.pop(tid))
        for tid in tids - set(self.schedstat):
            try:
                self.schedstat[tid] = os.open(f"{tasks}/{tid}/schedstat",
                                              os.O_RDONLY)
            except OSError:
                pass

    def clock(self):
        """Seconds, as time.monotonic(), less the waits for a CPU since
        the last call (schedstat's run_delay): this thread's, QEMU's main
        thread's, and the longest of QEMU's other threads' (a worker that
        holds a lock the main thread sleeps on).  A device that sleeps or
        spins in an access still shows in full; only the host's
        scheduling is left out.  Meant to be read in pairs around one
        access."""
        if self.clock_reads % 256 == 0:
            self._schedstat_fds()
        self.clock_reads += 1
        now = time.monotonic()
        delay = {}
        for tid, fd in self.schedstat.items():
            try:
                delay[tid] = int(os.pread(fd, 64, 0).split()[1]) / 1e9
            except (OSError, IndexError, ValueError):
                pass        # a thread that just ended
        grew = {tid: d - self.clock_last.get(tid, d)
                for tid, d in delay.items()}
        self.clock_last = delay
        others = [g for tid, g in grew.items()
                  if tid not in (0, self.proc.pid)]
        waited = (grew.get(0, 0.0) + grew.get(self.proc.pid, 0.0) +
                  max(others, default=0.0))
        self.clock_now = getattr(self, "clock_now", now) + \
            max(now - getattr(self, "clock_wall", now) - waited, 0.0)
        self.clock_wall = now
        return self.clock_now

    def close(self):
        for fd in self.schedstat.values():
            os.close(fd)
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
                try:
                    chunk = self.sock.recv(65536)
                except socket.timeout:
                    raise RuntimeError(f"QEMU hung at '{line}'") from None
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

    def stderr(self):
        self.err.flush()
        self.err.seek(0)
        return self.err.read()

    def memory_kib(self):
        """QEMU's resident memory now and at its peak (VmRSS, VmHWM)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            status = dict(line.split(":", 1) for line in f)
        return (int(status["VmRSS"].split()[0]),
                int(status["VmHWM"].split()[0]))

    # -- memory and ports
    def timed(self, what, line):
        start = self.clock()
        reply = self.cmd(line)
        took = self.clock() - start
        if took > self.mmio_max:
            self.mmio_max, self.mmio_worst = took, what
        return reply

    def readl(self, addr):
        return int(self.timed(f"readl 0x{addr:x}", f"readl 0x{addr:x}"), 16)

    def writel(self, addr, val):
        self.timed(f"writel 0x{addr:x} <- 0x{val:x}",
                   f"writel 0x{addr:x} 0x{val:x}")

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

    def wait(self, what, cond, timeout=WAIT_S, interval=0):
        """Poll @cond until it holds, at most @timeout seconds; @interval
        between polls leaves the CPU to a QEMU whose timing is tested."""
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(interval)

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
        self.context(1)
        self.program(queues)

    def program(self, queues=1):
        """Point the chip at the context table and the rings (again)."""
        self.set_reg(C["TSR_REG_MMU_CTX_TABLE_LO"], CTX_TABLE)
        self.set_reg(C["TSR_REG_MMU_CTX_TABLE_HI"], 0)
        self.set_reg(C["TSR_REG_MMU_CTX_COUNT"], 16)
        self.tails = [0] * queues
        for q in range(queues):
            self.set_qreg(q, C["TSR_QREG_CONTROL"], C["TSR_QCTRL_RESET"])
            self.set_qreg(q, C["TSR_QREG_RING_BASE_LO"], RING + 0x1000 * q)
            self.set_qreg(q, C["TSR_QREG_RING_BASE_HI"], 0)
            self.set_qreg(q, C["TSR_QREG_RING_SIZE"], 64)
            self.set_qreg(q, C["TSR_QREG_FENCE_ADDR_LO"], FENCES + 8 * q)
            self.set_qreg(q, C["TSR_QREG_FENCE_ADDR_HI"], 0)
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

    def map_aliased(self, ctx, va, length, hbm_addr):
        """Map [va, va + length) (GiB-aligned) to the same 2 MiB of HBM.

        Level-1 leaves make a huge operand cost one page table per GiB,
        so that the chip's largest commands fit a small test.
        """
        leaf = (hbm_addr | C["TSR_PTE_VALID"] | C["TSR_PTE_READ"] |
                C["TSR_PTE_WRITE"] | C["TSR_PTE_HBM"] | C["TSR_PTE_LEAF"])
        for gib in range(va >> 30, (va + length + (1 << 30) - 1) >> 30):
            l1 = self.alloc_pt()
            self.memwrite(l1, struct.pack("<512Q", *([leaf] * 512)))
            self.memwrite(self.roots[ctx] + 8 * (gib & 511),
                          struct.pack("<Q", l1 | C["TSR_PTE_VALID"]))

    def buffer(self, ctx, length):
        """System memory mapped RW at the same VA."""
        a = self.data_next
        length = (length + 4095) & ~4095
        self.data_next += length
        self.memwrite(a, bytes(length))
        self.map(ctx, a, a, length, C["TSR_PTE_READ"] | C["TSR_PTE_WRITE"])
        return a

    def push(self, q, ctx, cmdbuf, size, completion, fence):
        """Write a descriptor at queue @q's tail and ring the doorbell."""
        desc = struct.pack("<IIQIIQQ3Q", ctx, C["TSR_JOB_IRQ"], cmdbuf,
                           size, 0, completion, fence, 0, 0, 0)
        self.memwrite(RING + 0x1000 * q + 64 * self.tails[q], desc)
        self.tails[q] = (self.tails[q] + 1) % 64
        self.set_qreg(q, C["TSR_QREG_TAIL"], self.tails[q])

    def submit(self, q, ctx, cmds, fence):
        """A job of @cmds; returns the address of its completion record."""
        buf = self.buffer(ctx, len(cmds) + 72)
        self.memwrite(buf, cmds)
        self.push(q, ctx, buf, len(cmds), buf + len(cmds), fence)
        return buf + len(cmds)

    def restart_queue(self, q):
        """Reset queue @q and enable it again, from ring slot 0."""
        self.set_qreg(q, C["TSR_QREG_CONTROL"],
                      C["TSR_QCTRL_RESET"] | C["TSR_QCTRL_ENABLE"])
        self.tails[q] = 0

    def completion(self, addr):
        f = struct.unpack("<IIIIQQQQQQQ", self.memread(addr, 72))
        return dict(zip(("status", "error", "failed_cmd", "reserved",
                         "fault_va", "fence", "start", "end", "mxu", "vpu",
                         "dma"), f))


def hdr(op, size, flags=0):
    return struct.pack("<BBHI", op, size // 8, flags, 0)


def dma(op, src, dst, size, src_stride=(0, 0), dst_stride=(0, 0)):
    return hdr(op, 72) + struct.pack("<QQ3IIQQQQ", src, dst, *size, 0,
                                     *src_stride, *dst_stride)


def dma_copy(src, dst, n):
    return dma(C["TSR_OP_DMA_COPY"], src, dst, (n, 1, 1))


def sem(op, va, value):
    return hdr(op, 24) + struct.pack("<QQ", va, value)


def tensor(va, rows, cols, dtype, stride=None):
    """struct tsr_tensor; dtype is a TSR_DTYPE_* name without the prefix."""
    return struct.pack("<QIIIHH", va, rows, cols,
                       cols if stride is None else stride,
                       C["TSR_DTYPE_" + dtype], 0)


def zero_tensor():
    return bytes(24)


def matmul(a, b, c, flags=0):
    return hdr(C["TSR_OP_MATMUL"], 80, flags) + a + b + c


def vpu(op, a, out, b=None, c=None):
    return (hdr(C["TSR_OP_VPU"], 112) +
            struct.pack("<II", C["TSR_VPU_" + op], 0) + a +
            (b or zero_tensor()) + (c or zero_tensor()) + out)


def reduce(op, axis, src, out):
    return (hdr(C["TSR_OP_REDUCE"], 64) +
            struct.pack("<II", C["TSR_REDUCE_" + op], axis) + src + out)


def unary(op, src, out):
    return hdr(C["TSR_OP_" + op], 56) + src + out


def sc_coo(va, count, weighted=True):
    """struct tsr_sc_coo: the three arrays of @count ids, back to back."""
    return struct.pack("<QQQ", va, va + 4 * count,
                       va + 8 * count if weighted else 0)


def sc_partition(count, partitions, samples, vocab, max_ids, max_unique,
                 coo_in, coo_out, counts, flags=0):
    return (hdr(C["TSR_OP_SC_PARTITION"], 88, flags) +
            struct.pack("<6I", count, partitions, samples, vocab, max_ids,
                        max_unique) + coo_in + coo_out +
            struct.pack("<Q", counts))


def sc_gather(count, combiner, coo, table, out):
    return (hdr(C["TSR_OP_SC_GATHER"], 88) +
            struct.pack("<II", count, C["TSR_SC_" + combiner]) + coo +
            table + out)


def sc_scatter_add(count, combiner, coo, grad, dst, scale):
    return (hdr(C["TSR_OP_SC_SCATTER_ADD"], 96) +
            struct.pack("<II", count, C["TSR_SC_" + combiner]) + coo +
            grad + dst + struct.pack("<fI", scale, 0))


# Far above guest RAM: operands mapped onto a little HBM (map_aliased).
HUGE_VA = 4 << 30


def huge_matmul():
    """bf16 16384^3 on HUGE_VA, 8.8 TFLOP: minutes of host time."""
    n = 1 << 14
    return matmul(tensor(HUGE_VA, n, n, "BF16"),
                  tensor(HUGE_VA + (1 << 30), n, n, "BF16"),
                  tensor(HUGE_VA + (2 << 30), n, n, "F32"))


def billion_row_dma():
    """2^30 rows of 4 bytes within HUGE_VA: minutes of host time."""
    return dma(C["TSR_OP_DMA_COPY"], HUGE_VA, HUGE_VA + (4 << 30),
               (4, 1 << 30, 1), (0, 0), (4, 0))


# ------------------------------------------------------------ running

def check(cond, what):
    if not cond:
        raise AssertionError(what)


def run_suite(tests, suite=None):
    """Run @tests, each in a QEMU of its own, printing TAP; failures."""
    if suite:
        print(f"# tessera-suite: {suite}")
    print(f"1..{len(tests)}")
    failed = 0
    for i, fn in enumerate(tests, 1):
        name = fn.__name__
        try:
            qt = Qtest(getattr(fn, "props", ""), getattr(fn, "args", ()))
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
    return failed
