# SPDX-License-Identifier: MIT
"""The guest kernel's reports, as tools/tessera-vm gathers them from the
console: each report cut down to its head (what a developer reads first),
driver frames turned into source lines, and a title naming the function
to blame.  Documentation/debug-kernel.md, "How the reports reach a
verdict"."""

import os
import re
import subprocess

# Lines of a report's head at most.
REPORT_LINES = 60
# Frames kept of each stack in a head.
STACK_FRAMES = 10
# kmemleak objects that count: allocated on a path through the driver or
# DRM (a frame in one of these modules, or a function of these families).
# Other unreferenced objects (early boot, ACPI, the initramfs) are listed
# as ignored.
OURS_MODULE = re.compile(r"\[(tessera\w*|drm\w*|gpu_sched)\]")
OURS_FUNCTION = re.compile(
    r"^\s*(tessera_|drm_|dma_fence|dma_buf|dma_resv|sync_file|syncobj)")
TRACE_FRAME = re.compile(r"^\s+(?:\[<[0-9a-f]+>\] )?(\w[\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
# A frame line of any stack: symbolic, unreliable ("? "), or a bare address
# (a module that is gone).
ANY_FRAME = re.compile(r"^\s+(?:\[<[0-9a-f]+>\] )?(\? )?"
                       r"(?:(\w[\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+|0x[0-9a-f]+$)")
ALLOCATOR = re.compile(r"kmemleak|alloc|slab|kmem_cache|kasan|__kmalloc|"
                       r"kmalloc|kzalloc|kvmalloc|krealloc|kstrdup|kmemdup")
# Frames of the detectors themselves, left out of a head.
DETECTOR_FRAME = re.compile(
    r"^(dump_stack\w*|show_stack|print_report|print_address_description\w*|"
    r"_?_?kasan_\w+|__asan_\w+|kasan_report\w*|check_region_inline|"
    r"lock_acquire\w*|__lock_acquire\w*|lock_release|lock_is_held_type|"
    r"mark_lock\w*|mark_usage|mark_held_locks|validate_chain|check_\w+_usage|"
    r"check_prev_add|check_prevs_add|check_noncircular|print_\w*bug\w*|"
    r"valid_state|save_trace|stack_trace_save\w*|lockdep_\w+|"
    r"__might_\w+|__ubsan_\w+|ubsan_\w+|kmemleak_alloc\w*)$")
# Where a head ends: what follows is memory layout, not code.
HEAD_STOPS = ("The buggy address belongs to", "Memory state around")
# Lockdep's interrupt stamps and "other info", up to the current task's
# stack.
LOCKDEP_SKIP = ("irq event stamp:", "other info that might help us debug this:")
LOCKDEP_RESUME = "stack backtrace:"
# A user task's registers, and the taint legend: nothing to read in a head.
NOISE_LINE = re.compile(r"^(RIP: 0033:|Code: |RSP: 002b|RAX: |RDX: |RBP: |R10: |"
                        r"R13: |Tainted: \[)")
LOCK_AT = re.compile(r", at: (\w[\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
INCONSISTENT = re.compile(r"inconsistent \{([\w-]+)\} -> \{([\w-]+)\} usage")


def report_key(title):
    """A report's first line without what changes from run to run."""
    t = re.sub(r"\+0x[0-9a-f]+/0x[0-9a-f]+", "", title)
    t = re.sub(r" \(\S+\.[ch]:\d+\)", "", t)
    t = re.sub(r"CPU: \d+ (UID: \d+ )?PID: \d+", "", t)
    t = re.sub(r"\b(0x)?[0-9a-f]{8,}\b", "", t)
    t = re.sub(r"\b([\w.:-]+)/\d+\b", r"\1", t)
    return " ".join(t.split())


def ours(line, function):
    return bool(OURS_MODULE.search(line) or OURS_FUNCTION.match(function))


def our_frame(lines):
    """The first reliable frame of a report's trace in the driver or DRM."""
    for line in lines:
        m = TRACE_FRAME.match(line)
        if m and ours(line, m.group(1)):
            return m.group(1)
    return None


def lock_taker(lines):
    """The function lockdep blames: for a lock taken both in an interrupt
    and with interrupts on, the side that takes it with interrupts on
    (the other side is innocent); otherwise the lock the current task
    takes.  None if the report is not lockdep's."""
    text = "\n".join(lines)
    m = INCONSISTENT.search(text)
    if m and "-ON-" in m.group(1):
        # The earlier usage, the one with interrupts on, is the culprit.
        at = next((i for i, l in enumerate(lines)
                   if "state was registered at:" in l), None)
        if at is not None:
            return our_frame(lines[at + 1:at + 1 + 3 * STACK_FRAMES])
    if "is trying to acquire" not in text and "takes:" not in text:
        return None
    for line in lines:
        m = LOCK_AT.search(line)
        if m and ours(line, m.group(1)):
            return m.group(1)
    return None


def report_head(lines):
    """What to show of a report: its first line, the access (KASAN), each
    stack without the detector's own frames and cut to STACK_FRAMES (the
    access, "Allocated by", "Freed by"; lockdep's chains and lock lines),
    not the memory layout (shadow bytes, page flags)."""
    head, skipping, frames = [], False, 0
    for line in lines:
        text = line.strip()
        if text.startswith(HEAD_STOPS):
            break
        if text.startswith(LOCKDEP_SKIP):
            skipping = True
        elif text.startswith(LOCKDEP_RESUME):
            skipping = False
        if skipping or not text or set(text) <= set("=-") or \
                text in ("<TASK>", "</TASK>") or \
                text.startswith("Hardware name:") or NOISE_LINE.match(text):
            continue
        m = ANY_FRAME.match(line)
        if not m:
            frames = 0
            head.append(line)
            continue
        if m.group(1) or (m.group(2) and
                           DETECTOR_FRAME.match(m.group(2).split(".")[0])):
            continue
        frames += 1
        if frames <= STACK_FRAMES:
            head.append(line)
        elif frames == STACK_FRAMES + 1:
            head.append("  ...")
    return head[:REPORT_LINES]


def finish_report(report, symbolize=lambda line: line):
    """The report with its head as lines (SYMBOLIZE applied to each), and
    a title that names where it came from when its first line does not."""
    lines = report["lines"]
    frame = lock_taker(lines) or our_frame(lines[1:])
    title = report["title"]
    if frame and frame not in title:
        title = f"{title} (in {frame})"
    return dict(report, title=title, key=report_key(title),
                lines=[symbolize(l) for l in [lines[0]] + report_head(lines[1:])])


def leak_report(block):
    """A report for one object of kmemleak's output, and whether it counts."""
    frames, in_trace = [], False
    for line in block[1:]:
        if line.strip().startswith("backtrace"):
            in_trace = True
        elif in_trace:
            frames.append(re.sub(r"^\[<[0-9a-f]+>\] ", "", line.strip()))
    mine = [f for f in frames if ours(f, f)]
    site = (mine or [f for f in frames if not ALLOCATOR.search(f)]
            or frames or ["?"])[0]
    size = re.search(r"\(size \d+\)", block[0])
    title = (f"kmemleak: unreferenced object {size.group(0) if size else ''}"
             f" allocated in {site}")
    return {"title": title, "key": report_key(title),
            "lines": block[:REPORT_LINES]}, bool(mine)


def build_id(path):
    """The GNU build id of ELF file PATH (hex), or None."""
    try:
        out = subprocess.run(["readelf", "-n", path], capture_output=True,
                             text=True).stdout
    except OSError:
        return None
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


class ModuleSymbols:
    """Functions and source lines of one module's .ko file, for frames
    printed as func+0xOFF/0xSIZE [module] or, once the module is gone, as
    a bare address inside one of its sections."""

    SECTION = re.compile(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+"
                         r"[0-9a-f]+\s+([0-9a-f]+)")
    SYMBOL = re.compile(r"^\s*\d+:\s+([0-9a-f]+)\s+(\d+)\s+FUNC\s+\S+\s+\S+"
                        r"\s+(\d+)\s+(\S+)$")

    def __init__(self, ko, repo):
        self.ko, self.repo = ko, repo
        sections = subprocess.run(["readelf", "-SW", ko], capture_output=True,
                                  text=True).stdout
        self.sections = {}          # index: (name, size)
        for line in sections.splitlines():
            m = self.SECTION.match(line)
            if m:
                self.sections[int(m.group(1))] = (m.group(2),
                                                  int(m.group(3), 16))
        symbols = subprocess.run(["readelf", "-sW", ko], capture_output=True,
                                 text=True).stdout
        self.functions = []         # (section name, start, size, name)
        for line in symbols.splitlines():
            m = self.SYMBOL.match(line)
            if m and int(m.group(3)) in self.sections:
                self.functions.append((self.sections[int(m.group(3))][0],
                                       int(m.group(1), 16), int(m.group(2)),
                                       m.group(4)))

    def source_line(self, section, offset):
        """file:line of OFFSET in SECTION: of the innermost function
        inlined there that is in the repository (not a kernel header's
        spin_lock()), relative to it."""
        out = subprocess.run(["addr2line", "-i", "-e", self.ko, "-j", section,
                              hex(offset)], capture_output=True,
                             text=True).stdout.splitlines()
        places = []
        for place in out:
            path, _, line = place.rpartition(":")
            if path and not path.startswith("?"):
                path = os.path.relpath(os.path.realpath(path), self.repo)
                places.append(f"{path}:{line.split()[0]}")
        ours = [p for p in places if not p.startswith(("..", "build/"))]
        return (ours or places or [None])[0]

    def function(self, name, offset):
        """file:line of NAME+OFFSET."""
        for section, start, _, fn in self.functions:
            if fn == name:
                return self.source_line(section, start + offset)
        return None

    def address(self, addr, loaded):
        """func+0xOFF/0xSIZE and file:line of ADDR, given where the guest
        loaded each section ({name: address}); None if not in this module."""
        sizes = {name: size for name, size in self.sections.values()}
        for section, base in loaded.items():
            if section in sizes and base <= addr < base + sizes[section]:
                off = addr - base
                for sec, start, size, fn in self.functions:
                    if sec == section and start <= off < start + max(size, 1):
                        return (f"{fn}+{off - start:#x}/{size:#x}",
                                self.source_line(section, off))
        return None


SYMBOLIC = re.compile(r"\b(\w[\w.]*)\+0x([0-9a-f]+)/0x[0-9a-f]+ \[(tessera\w*)\]")
SOURCE_LINE = re.compile(r" \(\S+\.[ch]:\d+\)$")
BARE = re.compile(r"(?<![\w<])0x([0-9a-f]{16})\b(?! \[)")


class Symbolizer:
    """Adds the source line to each frame of the driver's modules in a
    report, and names bare addresses of modules that were unloaded.  Only
    a .ko whose build id is the one the guest loaded is trusted."""

    def __init__(self, repo, kos):
        self.repo, self.kos = repo, kos     # {module: [.ko paths]}
        self.loaded = {}                    # {module: (build id, sections)}
        self.symbols = {}

    def module_loaded(self, name, build, sections):
        self.loaded[name] = (build, sections)
        self.symbols.pop(name, None)

    def module(self, name):
        """The symbols of the .ko the guest loaded as NAME, or None."""
        if name not in self.symbols:
            want = self.loaded.get(name, (None, {}))[0]
            ko = next((k for k in self.kos.get(name, []) if os.path.exists(k)
                       and want in (None, build_id(k))), None)
            self.symbols[name] = ko and ModuleSymbols(ko, self.repo)
        return self.symbols[name]

    def line(self, line):
        """LINE with its driver frame's source line added."""
        if SOURCE_LINE.search(line):
            return line
        m = SYMBOLIC.search(line)
        if m:
            mod = self.module(m.group(3))
            where = mod and mod.function(m.group(1), int(m.group(2), 16))
            return f"{line} ({where})" if where else line
        m = BARE.search(line)
        if not m:
            return line
        addr = int(m.group(1), 16)
        for name, (_, sections) in self.loaded.items():
            mod = self.module(name)
            found = mod and mod.address(addr, sections)
            if found:
                frame, where = found
                return (line[:m.start()] + f"{frame} [{name}]"
                        + (f" ({where})" if where else "") + line[m.end():])
        return line
