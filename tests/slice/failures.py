#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""failures: a slice under failure fails fast, alone and naming the cause.

The multi-VM tests of Documentation/slices.md, "When things fail" (issue 28):
on kept slices of tools/tessera-slice, each test breaks one thing while
tests/slice/slice_failure runs on every host, and checks what every chip
saw and when, measured from the cause on the host's clock as each line
arrived:

- sigstop: one host's QEMU stopped (SIGSTOP) mid-collective: every chip
  of the other host fails its call within 3 s with LINK_DOWN or
  PEER_ABORT (or a new precise code), no context is charged a hang or
  banned, and after SIGCONT and retraining the next all-reduce is exact;
- sigstop-waiting: the same, the host stopped while its processes hold
  back their next call, so that the other host's chips have nothing left
  to send and only wait for it (where a stop at random lands about two
  times in three);
- kill: one host's QEMU killed (SIGKILL) mid-collective: the same bound
  on the surviving host;
- reset: one chip reset (debugfs force_recovery) mid-collective: every
  chip's call fails within 3 s, none returns a result that is not exact,
  no context is banned, and the next all-reduce on a new communicator is
  exact;
- route: in one VM of a 2x2x2 mesh, a write whose route crosses a chip
  whose far link is down fails LINK_DOWN within 2 s, while writes to that
  chip and beside it, sent at the same moment, arrive within 2 s;
- tcp-cut: on a 2x2 of two VMs linked over TCP (tessera-slice
  --link-port, in a network namespace of the test's own), the TCP
  connections cut at both ends (ss -K) three times mid-collective and
  left to reconnect: every call exact, none failed, nothing charged, each
  cut counted as a reconnect at both ends (ici-reconnects);
- tcp-cut-long: the same connections cut and kept cut (the namespace's
  loopback down): every chip fails within 3 s with LINK_DOWN (or
  PEER_ABORT), naming its cut ports, which go down past the link's
  deadline; nothing charged; once back and retrained, exact again;

and a baseline: the same loop on the healthy slice reports every call
exact and nothing charged.  Setting up (tests/slice/slice_setup, below):

- setup-hang: queue 0 of one chip of host 1 hung before
  accel_comm_create: that chip fails JOB_HUNG, every other PEER_ABORT,
  all within 10 s of the cause, not at the 60 s connect timeout;
- setup-link-down: one end of a link down before accel_comm_create:
  every chip fails within 10 s, the chip at that end LINK_DOWN naming
  the port, none JOB_HUNG, TIMEOUT or OK.  The driver's job timeout is its default, 5 s:
the bounds are below it, so only the links, not the watchdog, can meet
them.

tests/run-checks --only failures runs them (make check); make
check-slices runs sigstop on a 2x2x2 torus of two VMs of 4 chips too
(sigstop-2x2x2).  Alone:
    tests/slice/failures.py [TEST...]     (tests: baseline setup-hang
                          setup-link-down sigstop sigstop-waiting reset
                          kill route tcp-cut tcp-cut-long sigstop-2x2x2)
Logs: build/logs/check-failures.log.
"""

import importlib.machinery
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))))
SLICE = os.path.join(REPO, "tools", "tessera-slice")
LOG = os.path.join(REPO, "build", "logs", "check-failures.log")

# The promises of issue 28: a collective ends on every chip within 3 s of
# the cause; a write whose route meets a dead link, within 2 s.
COLL_BOUND_S = 3.0
ROUTE_BOUND_S = 2.0
# How long a test watches for the failures after the cause: past the
# driver's 5 s job timeout, so that a call ended by the watchdog shows
# as such rather than as nothing.
WATCH_S = 12.0
# How long a guest program may take to set up (communicators wait for
# every neighbour's process) and to end after its failure.
SETUP_S = 60.0
END_S = 60.0
# The longest a test keeps a VM stopped: past 20 s its guest kernel
# reports a soft lockup when it runs again.
STOPPED_MAX_S = 15.0
# Codes that name no cause: the watchdog's, a wait that gave up.
VAGUE = {"JOB_HUNG", "TIMEOUT"}
# What a chip cut off from a peer should say (or a precise code libaccel
# has no name for yet, printed as ERR<n>).
LINK_CAUSES = re.compile(r"LINK_DOWN|PEER_ABORT|ERR-\d+")
# 2x2 torus as two VMs of 2x1 chips: every chip has a link inside its VM
# and two to the other VM; the chips' fault registers in debugfs (the
# reset test holds a job there with fault_hang_after).
PAIR = ["--topology", "2x2", "--host", "2", "-d", "debug-regs=on"]
# A 2x2x2 torus as two VMs of 2x2x1 chips, host 1 the layer z = 1.
PAIR_3D = ["--topology", "2x2x2", "--host", "2x2"]
# The same 2x2 with its links between the VMs over TCP on 127.0.0.1
# (tessera-slice --link-port), booted in a network namespace of its own
# (OWN_NETWORK): its ports are its own, and the tests cut its TCP
# connections there (ss -K) and keep them cut (its loopback down)
# without touching anyone else's.
PAIR_TCP = PAIR + ["--link-port", "20000"]
OWN_NETWORK = ["unshare", "--net", "sh", "-c",
               'ip link set lo up && exec "$@"', "sh"]
# Cuts of the TCP connections in one loop of all-reduces, and how soon
# each must be mended: the client end reconnects every 100 ms.
TCP_CUTS = 3
RECONNECT_BOUND_S = 2.0
# One VM of a 2x2x2 mesh: from (0,0,0) the route to (1,1,0) goes +x to
# (1,0,0), then +y (its port 2); the one to (1,0,1) leaves it by +z.
MESH = ["--topology", "2x2x2", "--mesh", "--host", "2x2x2"]
ROUTE = ["--from", "0,0,0", "--via", "1,0,0", "--to", "1,1,0", "--port",
         "2", "--beside", "1,0,1"]
# One slot's worth (256 KiB of f32): a call of a few tens of ms, so that
# a loop of them is always mid-call.
LOOP = "slice_failure all-reduce --count 65536"
CHIP_LINE = re.compile(r"^\[host(\d+)\] slice_failure: chip (\d+) "
                       r"\((\d+,\d+,\d+)\): (.*)$")
FAILED = re.compile(r"call (\d+) failed after (\d+) ms: (\S+)")
AFTER = re.compile(r"next job of the same context: (\S+); timeouts \+(\d+), "
                   r"banned contexts \+(\d+), chip resets \+(\d+)")


def load_tool(name):
    """tools/NAME as a module (tessera-slice: its QMP client, its reading
    of ici-links, its QOM paths)."""
    loader = importlib.machinery.SourceFileLoader(
        name.replace("-", "_"), os.path.join(REPO, "tools", name))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


tessera_slice = load_tool("tessera-slice")


class Log:
    """Everything the tests ran and read, in build/logs/check-failures.log."""

    def __init__(self):
        os.makedirs(os.path.dirname(LOG), exist_ok=True)
        self.f = open(LOG, "w")
        self.t0 = time.monotonic()
        self.lock = threading.Lock()

    def __call__(self, text):
        with self.lock:
            self.f.write(f"{time.monotonic() - self.t0:8.3f} {text}\n")
            self.f.flush()


class Exec:
    """tessera-slice exec in the background; each output line is kept
    with the host's monotonic time of its arrival."""

    def __init__(self, sl, host, line):
        self.sl = sl
        self.lines = []
        self.cond = threading.Condition()
        sl.log(f"$ exec {host} -- {line}")
        self.p = subprocess.Popen(
            [SLICE, "exec", "--name", sl.name, str(host), "--", line],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env=sl.env, cwd=REPO)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.p.stdout:
            t = time.monotonic()
            self.sl.log(line.rstrip())
            with self.cond:
                self.lines.append((t, line.rstrip()))
                self.cond.notify_all()
        with self.cond:
            self.lines.append((time.monotonic(), None))
            self.cond.notify_all()

    def chips(self, pattern):
        """{(host, chip, coords): (time, match)} of the first line of each
        chip whose text matches PATTERN."""
        seen = {}
        for t, line in self.lines:
            m = CHIP_LINE.match(line or "")
            if not m:
                continue
            key = (int(m.group(1)), int(m.group(2)), m.group(3))
            found = re.search(pattern, m.group(4))
            if found and key not in seen:
                seen[key] = (t, found)
        return seen

    def wait(self, done, timeout):
        """Waits until DONE() is true or the output ended; DONE()'s last
        value."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = done()
                if value or (self.lines and self.lines[-1][1] is None):
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    return value
                self.cond.wait(left)

    def wait_chips(self, pattern, chips, timeout):
        """The chips' lines matching PATTERN, once CHIPS of them came (or
        the time is up)."""
        self.wait(lambda: len(self.chips(pattern)) >= chips, timeout)
        return self.chips(pattern)

    def first(self, pattern, timeout):
        """(time, line) of the first line matching PATTERN, or None."""
        def find():
            return next(((t, l) for t, l in self.lines
                         if l and re.search(pattern, l)), None)
        return self.wait(find, timeout)

    def end(self, timeout=END_S):
        """The exec's exit status, or None if it had to be killed: the
        command may still run in a guest, so its slice is spoilt."""
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            self.sl.spoilt = "an exec did not end"
            return None

    def text(self):
        return [l for _, l in self.lines if l is not None]


class Slice:
    """A kept slice in a folder of the suite's own: boot, state, links
    over QMP, exec, inject, down."""

    def __init__(self, tmp, log, name, args):
        self.name, self.log = name, log
        self.env = dict(os.environ, XDG_RUNTIME_DIR=tmp, TMPDIR=tmp)
        self.folder = os.path.join(tmp, f"tessera-slices-{os.getuid()}",
                                   name)
        self.stopped = set()
        self.spoilt = None
        t = time.monotonic()
        p = self.cli("--keep", "--name", name, *args, timeout=300,
                     prefix=OWN_NETWORK if "--link-port" in args else ())
        self.boot_s = time.monotonic() - t
        self.up = p.returncode == 0
        self.boot_output = p.stdout.splitlines()
        if not self.up:
            self.spoilt = f"boot failed with status {p.returncode}"
        else:
            with open(os.path.join(self.folder, "state.json")) as f:
                self.state = json.load(f)

    def cli(self, *args, timeout=120, prefix=()):
        self.log(f"$ {' '.join(prefix)} tessera-slice {' '.join(args)}")
        p = subprocess.run([*prefix, SLICE, *args], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, env=self.env, cwd=REPO,
                           timeout=timeout)
        self.log(p.stdout.rstrip() + f"\n# status {p.returncode}")
        return p

    def exec(self, line, host="all"):
        return Exec(self, host, line)

    def qemu_pid(self, host):
        """The QEMU of HOST: the process whose program is QEMU and whose
        command line names the host's QMP socket."""
        qmp = self.state["hosts"][host]["qmp"].encode()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv[0].endswith(b"qemu-system-x86_64") and \
                    any(qmp in a for a in argv):
                return int(pid)
        raise OSError(f"no QEMU of host {host} found")

    def signal(self, host, sig):
        os.kill(self.qemu_pid(host), sig)
        if sig == signal.SIGSTOP:
            self.stopped.add(host)
        elif sig == signal.SIGCONT:
            self.stopped.discard(host)
        elif sig == signal.SIGKILL:
            self.stopped.add(host)
            self.spoilt = f"host{host}'s QEMU was killed"
        self.log(f"# {signal.Signals(sig).name} to host{host}'s QEMU")

    def ports(self, prop, parse):
        """{(coords, port): value} of every wired port of the running
        hosts' chips, from each chip's property PROP over QMP, PARSE
        making it {port: value}."""
        ports = {}
        for h in self.state["hosts"]:
            if h["id"] in self.stopped:
                continue
            qmp = tessera_slice.Qmp(h["qmp"])
            try:
                for j, chip in enumerate(h["chips"]):
                    values = parse(qmp.command(
                        "qom-get", path=tessera_slice.qom_path(j),
                        property=prop))
                    for port, value in values.items():
                        ports[(tuple(chip["coords"]), port)] = value
            finally:
                qmp.close()
        return ports

    def ends(self):
        """{(coords, port): state} of every link end of the running hosts,
        from each chip's ici-links."""
        return {e: state for e, (state, *_) in self.ports(
            "ici-links", tessera_slice.parse_ici_links).items()}

    def reconnects(self):
        """{(coords, port): connections after the first}, from each
        chip's ici-reconnects."""
        return self.ports("ici-reconnects", lambda text: {
            int(port): int(n) for port, n in
            (entry.split(":") for entry in text.split())})

    def tcp_ends(self):
        """The link ends whose links run over TCP (between the VMs of a
        slice booted with --link-port)."""
        return {(tuple(e["coords"]), e["port"]) for link in
                self.state["links"] if "tcp" in link for e in link["ends"]}

    def net(self, *cmd):
        """CMD in the slice's network namespace (that of host 0's QEMU);
        its output."""
        p = subprocess.run(["nsenter", f"--net=/proc/{self.qemu_pid(0)}/ns/"
                            "net", *cmd], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=30)
        self.log(f"# {' '.join(cmd)}: status {p.returncode}\n"
                 f"{p.stdout}{p.stderr}".rstrip())
        return p.stdout

    def cut(self):
        """Cuts every TCP connection of the slice's network namespace (its
        links between VMs), at both ends, as a reset from the network
        would (ss -K: SOCK_DESTROY); the number of sockets cut."""
        return len(self.net("ss", "-K", "-t", "-H", "state",
                            "established").splitlines())

    def ends_towards(self, host):
        """The states of the running hosts' link ends whose peers are on
        HOST, counted: "2 down, 2 up"."""
        theirs = {tuple(c["coords"])
                  for c in self.state["hosts"][host]["chips"]}
        mine = [(tuple(a["coords"]), a["port"])
                for link in self.state["links"]
                for a, b in (link["ends"], link["ends"][::-1])
                if tuple(b["coords"]) in theirs
                and tuple(a["coords"]) not in theirs]
        try:
            ends = self.ends()
        except OSError as e:
            return f"unknown (QMP: {e})"
        states = [ends.get(e, "?") for e in mine]
        return ", ".join(f"{states.count(st)} {st}"
                         for st in sorted(set(states)))

    def linked_ends(self):
        """The link ends of the slice (those with a peer in it)."""
        return {(tuple(e["coords"]), e["port"]) for link in
                self.state["links"] for e in link["ends"]}

    def inject(self, coords, port, what):
        p = self.cli("inject", "--name", self.name, "--chip",
                     ",".join(map(str, coords)), "--port", str(port), what)
        return p.returncode == 0

    def retrain(self, ends):
        """Retrains ENDS ((coords, port)...) through their VMs' QMP, as
        tessera-slice inject --port P retrain=on does, without a process
        per end."""
        for h in self.state["hosts"]:
            mine = [(j, port) for j, chip in enumerate(h["chips"])
                    for coords, port in ends
                    if tuple(chip["coords"]) == coords]
            if not mine:
                continue
            qmp = tessera_slice.Qmp(h["qmp"])
            try:
                for j, port in mine:
                    qmp.command("qom-set", path=tessera_slice.qom_path(j),
                                property=f"ici{port}-faults",
                                value="retrain=on")
            finally:
                qmp.close()
        self.log(f"# retrained {sorted(ends)}")

    def mend(self, timeout=30):
        """Retrains every link end that is down; '' once every link is
        up, else why not."""
        deadline = time.monotonic() + timeout
        retrained = set()
        while True:
            try:
                ends = self.ends()
                bad = {e: s for e, s in ends.items()
                       if e in self.linked_ends() and s != "up"}
                down = {e for e, s in bad.items() if s == "down"} - retrained
                if down:
                    self.retrain(down)
                    retrained |= down
            except OSError as e:
                return f"QMP: {e}"
            if not bad:
                return ""
            if time.monotonic() > deadline:
                return "links not up: " + ", ".join(
                    f"{c} port {p} {s}" for (c, p), s in sorted(bad.items()))
            time.sleep(0.2)     # the links train on their own from here

    def healthy(self):
        """Why this slice cannot take another test, or ''."""
        if self.spoilt:
            return self.spoilt
        if self.stopped:
            return "a host is stopped"
        return self.mend()

    def down(self):
        for host in list(self.stopped):
            try:
                os.kill(self.qemu_pid(host), signal.SIGCONT)
            except OSError:
                pass
        self.cli("down", "--name", self.name)


class Slices:
    """A slice of each shape, booted when a test first needs it, booted
    again if the last test left it broken, and taken down at the end."""

    def __init__(self, tmp, log):
        self.tmp, self.log = tmp, log
        self.kept = {}
        self.boots = 0

    def get(self, args):
        """A healthy slice of ARGS, the only one up: two cores run no more."""
        key = tuple(args)
        for other in [k for k in self.kept if k != key]:
            self.kept.pop(other).down()
        sl = self.kept.get(key)
        if sl is not None:
            why = sl.healthy()
            if not why:
                return sl
            self.log(f"# slice {sl.name} taken down: {why}")
            sl.down()
        self.boots += 1
        sl = Slice(self.tmp, self.log, f"failures{self.boots}", args)
        self.kept[key] = sl
        return sl

    def close(self):
        for sl in self.kept.values():
            sl.down()


def report(results, name, ok, lines):
    """A result; the measurements are shown under it either way."""
    if ok:
        results.add(name, "pass")
        for line in lines:
            results.say(f"        {line}")
    else:
        results.add(name, "fail", lines)


def aftermath(run, chips, vague_hangs=False):
    """Lines saying what each chip's context went through after its call
    (next job, hangs, bans), and whether all is well: the next job ran,
    no ban, and (unless VAGUE_HANGS) no job ended by the watchdog."""
    after = run.chips(AFTER.pattern)
    lines, ok = [], True
    for key in sorted(chips):
        host, chip, coords = key
        if key not in after:
            lines.append(f"chip {chip} ({coords}): no report of its "
                         "context after the call")
            ok = False
            continue
        job, timeouts, banned, resets = after[key][1].groups()
        good = job == "OK" and banned == "0" and \
            (vague_hangs or timeouts == "0")
        ok &= good
        lines.append(f"chip {chip} ({coords}): next job {job}, timeouts "
                     f"+{timeouts}, banned +{banned}, chip resets +{resets}"
                     + ("" if good else "  <- want OK, +0, +0"))
    return ok, lines


def failures_after(run, t0, chips, causes):
    """Lines with each chip's failure, seconds after T0, and whether every
    one of CHIPS failed within COLL_BOUND_S with a cause CAUSES accepts."""
    failed = run.chips(FAILED.pattern)
    wrong = run.chips(r"returned OK with .* wrong")
    lines, ok = [], True
    for key in sorted(chips):
        host, chip, coords = key
        if key in wrong:
            lines.append(f"chip {chip} ({coords}): "
                         f"{wrong[key][1].string}  <- a result not exact "
                         "passed as done")
            ok = False
        elif key not in failed:
            lines.append(f"chip {chip} ({coords}): no failure "
                         f"{WATCH_S:g} s after the cause")
            ok = False
        else:
            t, m = failed[key]
            code, dt = m.group(3), t - t0
            good = dt <= COLL_BOUND_S and causes(code)
            ok &= good
            lines.append(f"chip {chip} ({coords}): call {m.group(1)} "
                         f"failed {code} {dt:.2f} s after the cause"
                         + ("" if good else
                            f"  <- want a named cause within "
                            f"{COLL_BOUND_S:g} s"))
    return ok, lines


def slice_chips(sl):
    """The chips of the slice as the lines name them: (host, chip,
    coordinates)."""
    return {(h["id"], c["chip"], ",".join(map(str, c["coords"])))
            for h in sl.state["hosts"] for c in h["chips"]}


def start_loop(sl, extra="", seconds=int(WATCH_S) + 8):
    """The all-reduce loop on every host, for SECONDS after each chip's
    first call; (run, chips, ready): the chips of the slice and whether
    each has had an exact call."""
    run = sl.exec(f"{LOOP} --seconds {seconds}{extra}")
    chips = slice_chips(sl)
    ready = run.wait_chips("call 1 exact", len(chips), SETUP_S)
    return run, chips, len(ready) == len(chips)


def set_up_failed(results, prefix, sl, run=None):
    """Fails the test named PREFIX whose slice or loop did not start."""
    why = sl.boot_output[-20:] if not sl.up else \
        ["the loop did not start on every chip"] + (run.text()[-20:]
                                                     if run else [])
    results.add(f"{prefix}.set_up", "fail", why)
    if run:
        run.end()


def test_baseline(results, slices):
    """Nothing broken: every chip's calls exact, nothing charged."""
    sl = slices.get(PAIR)
    prefix = "failures.baseline"
    if not sl.up:
        return set_up_failed(results, prefix, sl)
    run = sl.exec("slice_failure all-reduce --count 65536 --calls 20")
    status = run.end()
    chips = slice_chips(sl)
    exact = run.chips("20 calls exact")
    ok, lines = aftermath(run, chips)
    report(results, f"{prefix}.twenty_all_reduces_exact_on_every_chip_and_"
           "nothing_charged", ok and status == 0 and len(exact) == len(chips),
           [f"exec status {status}, {len(exact)} of {len(chips)} chips "
            f"exact; slice booted in {sl.boot_s:.1f} s"] + lines
           + ([] if ok and status == 0 else run.text()[-20:]))


def broken_host_test(results, slices, prefix, sig, shape=PAIR,
                     waiting=False):
    """SIGSTOP or SIGKILL to host 1's QEMU mid-collective: host 0's chips
    fail within COLL_BOUND_S naming a link cause, their contexts charged
    nothing; with SIGSTOP, then SIGCONT, retraining and an exact
    all-reduce.  WAITING: host 1 is stopped while its processes hold back
    their next call, once host 0's chips have sent what they could."""
    sl = slices.get(shape)
    if not sl.up:
        return set_up_failed(results, prefix, sl)
    run, chips, ready = start_loop(
        sl, " --stall-host 1 --stall-after 2" if waiting else "")
    survivors = {k for k in chips if k[0] != 1}
    if waiting and ready:
        stalled = len(chips) - len(survivors)
        ready = len(run.wait_chips("stalling", stalled, SETUP_S)) == stalled
        # Nothing tells when host 0's writes of its next call are through:
        # a third of host 1's stall of 3 s is plenty for a few hundred KiB.
        time.sleep(1)
    if not ready:
        return set_up_failed(results, prefix, sl, run)
    t0 = time.monotonic()
    sl.signal(1, sig)
    run.wait_chips(f"{FAILED.pattern}|returned OK", len(survivors), WATCH_S)
    ok, lines = failures_after(
        run, t0, survivors, lambda code: bool(LINK_CAUSES.fullmatch(code)))
    lines.append(f"{time.monotonic() - t0:.1f} s after the cause, the "
                 f"surviving ends of host1's links: {sl.ends_towards(1)}")
    report(results, f"{prefix}.every_other_chip_fails_within_3_s_naming_"
           "the_cause", ok, lines)
    # Host 0's processes tell what their contexts went through, while
    # host 1 is still stopped, but not for long: a guest stopped for 20 s
    # reports a stall when it runs again.
    run.wait_chips(AFTER.pattern, len(survivors),
                   STOPPED_MAX_S - (time.monotonic() - t0))
    stopped_s = time.monotonic() - t0
    if sig == signal.SIGSTOP:
        sl.signal(1, signal.SIGCONT)
    status = run.end()
    ok, lines = aftermath(run, survivors)
    if sig == signal.SIGSTOP:
        # Host 1's chips were stopped with their calls: theirs may end by
        # the watchdog, but no context may be banned.
        ok_stopped, stopped_lines = aftermath(run, chips - survivors,
                                              vague_hangs=True)
        ok &= ok_stopped
        lines += [f"{line} (host1, stopped {stopped_s:.1f} s)"
                  for line in stopped_lines]
    report(results, f"{prefix}.no_context_is_charged_a_hang_or_banned", ok,
           lines)
    if sig == signal.SIGKILL:
        return
    why = sl.mend() if status is not None else sl.spoilt
    if why:
        report(results, f"{prefix}.after_sigcont_and_retraining_the_next_"
               "all_reduce_is_exact", False,
               [f"the slice did not recover: {why}"] + run.text()[-20:])
        return
    check = sl.exec("slice_failure all-reduce --count 65536 --calls 3")
    status = check.end()
    exact = check.chips("3 calls exact")
    report(results, f"{prefix}.after_sigcont_and_retraining_the_next_"
           "all_reduce_is_exact", status == 0 and len(exact) == len(chips),
           [f"{len(exact)} of {len(chips)} chips exact, exec status "
            f"{status}"] + ([] if status == 0 else check.text()[-20:]))


def test_sigstop(results, slices):
    broken_host_test(results, slices, "failures.sigstop", signal.SIGSTOP)


def test_kill(results, slices):
    broken_host_test(results, slices, "failures.kill", signal.SIGKILL)


def test_sigstop_waiting(results, slices):
    broken_host_test(results, slices, "failures.sigstop_while_the_others_"
                     "wait", signal.SIGSTOP, waiting=True)


def test_sigstop_3d(results, slices):
    broken_host_test(results, slices, "failures.sigstop_2x2x2",
                     signal.SIGSTOP, PAIR_3D)


def test_reset(results, slices):
    """A chip reset mid-collective (debugfs force_recovery on chip 0 after
    3 exact calls): every chip's call fails within COLL_BOUND_S and none
    returns a result that is not exact; no context banned; the next
    all-reduce, on new communicators, exact."""
    prefix = "failures.reset"
    sl = slices.get(PAIR)
    if not sl.up:
        return set_up_failed(results, prefix, sl)
    run, chips, ready = start_loop(sl, " --reset 0,0,0 --reset-after 3")
    if not ready:
        return set_up_failed(results, prefix, sl, run)
    cause = run.first(r"\] slice_failure: chip 0 .*: cause: ", SETUP_S)
    if cause is None:
        return set_up_failed(results, prefix, sl, run)
    run.wait_chips(f"{FAILED.pattern}|returned OK with", len(chips), WATCH_S)
    ok, lines = failures_after(run, cause[0], chips,
                               lambda code: code not in VAGUE)
    report(results, f"{prefix}.every_chip_fails_within_3_s_and_none_"
           "reports_a_result_not_exact", ok, lines)
    status = run.end()
    ok, lines = aftermath(run, chips, vague_hangs=True)
    why = sl.mend() if status is not None else sl.spoilt
    if not why:
        check = sl.exec("slice_failure all-reduce --count 65536 --calls 3")
        check_status = check.end()
        exact = check.chips("3 calls exact")
        ok &= check_status == 0 and len(exact) == len(chips)
        lines.append(f"then {len(exact)} of {len(chips)} chips exact on new "
                     f"communicators, exec status {check_status}")
    else:
        ok = False
        lines.append(f"the slice did not recover: {why}")
    report(results, f"{prefix}.no_context_is_banned_and_the_next_all_reduce_"
           "is_exact", ok, lines)


ROUTE_LINE = re.compile(r"^\[host0\] slice_failure: route: ([a-z ]+): "
                        r"(\(\S+\)) -> (\(\S+\)): (\S+) after (\d+) ms")


def test_route(results, slices):
    """A route through a chip whose far link is down: the write along it
    fails LINK_DOWN within ROUTE_BOUND_S; writes to that chip and past it
    by another link, sent at the same moment, arrive within it; after
    retraining the route carries writes again."""
    prefix = "failures.route"
    sl = slices.get(MESH)
    if not sl.up:
        return set_up_failed(results, prefix, sl)
    run = sl.exec(f"slice_failure route {' '.join(ROUTE)}")
    if run.first(r"waiting for \(1,0,0\) port 2 to go down", SETUP_S):
        sl.inject((1, 0, 0), 2, "down=on")
    if run.first(r"waiting for \(1,0,0\) port 2 to come up", WATCH_S * 2):
        sl.mend()
    status = run.end()
    got = {(m.group(1), m.group(3)): (m.group(4), int(m.group(5)))
           for m in map(ROUTE_LINE.match, run.text()) if m}

    def verdict(phase, to, want):
        code, ms = got.get((phase, to), ("nothing", 0))
        good = code == want and ms <= ROUTE_BOUND_S * 1000
        return good, (f"{phase}: (0,0,0) -> {to}: {code} after {ms} ms"
                      + ("" if good else f"  <- want {want} within "
                         f"{ROUTE_BOUND_S:g} s"))

    before = [verdict("before", to, "OK")
              for to in ("(1,1,0)", "(1,0,0)", "(1,0,1)")]
    dead = verdict("link down", "(1,1,0)", "LINK_DOWN")
    beside = [verdict("link down", "(1,0,0)", "OK"),
              verdict("link down", "(1,0,1)", "OK"),
              verdict("after the failure", "(1,0,0)", "OK")]
    again = verdict("retrained", "(1,1,0)", "OK")
    ok = all(g for g, _ in before) and dead[0]
    report(results, f"{prefix}.a_write_through_a_dead_far_link_fails_link_"
           "down_within_2_s", ok, [l for _, l in before] + [dead[1]]
           + ([] if ok else [f"exec status {status}"] + run.text()[-12:]))
    report(results, f"{prefix}.writes_to_that_chip_and_beside_it_still_"
           "arrive_within_2_s", all(g for g, _ in beside),
           [l for _, l in beside])
    report(results, f"{prefix}.after_retraining_the_route_carries_writes",
           again[0], [again[1]])


# ------------------------------------------------------------------------
# ICI over TCP (issue 31): a TCP connection between two VMs cut
# mid-collective and back within the link's deadline is ridden out (the
# link resumes its sequence numbers and replay buffer); one kept cut
# longer takes the port down, and the calls over it fail LINK_DOWN.

PORT_NAMED = re.compile(r"port ([+-][xyz]) \(\d\) (\S+)$")


def wait_tcp_ends(sl, want, timeout):
    """Waits until every end of the slice's TCP links is in state WANT,
    or TIMEOUT seconds pass; (whether they are, "state: ends" text)."""
    deadline = time.monotonic() + timeout
    tcp = sl.tcp_ends()
    while True:
        try:
            ends = sl.ends()
        except OSError as e:
            return False, f"unknown (QMP: {e})"
        states = [ends.get(e, "?") for e in sorted(tcp)]
        if all(st == want for st in states) or time.monotonic() > deadline:
            return all(st == want for st in states), ", ".join(
                f"{states.count(st)} {st}" for st in sorted(set(states)))
        time.sleep(0.05)    # ici-links has no event to wait on


def since_cut(t, cuts):
    """T as seconds after the last of CUTS (times) before it."""
    k = max((i for i, c in enumerate(cuts) if c <= t), default=None)
    return "before the first cut" if k is None else \
        f"{t - cuts[k]:.2f} s after cut {k + 1}"


def test_tcp_cut(results, slices):
    """The TCP connections between the two VMs cut (ss -K, at both ends)
    TCP_CUTS times while every chip loops all-reduces, and left to come
    back: every call exact, none failed, no context charged; each cut
    mended within RECONNECT_BOUND_S and counted once at both ends of
    every TCP link (ici-reconnects), at none of the links inside a VM."""
    prefix = "failures.tcp_cut"
    sl = slices.get(PAIR_TCP)
    if not sl.up:
        return set_up_failed(results, prefix, sl)
    tcp = sl.tcp_ends()
    before = sl.reconnects()
    run, chips, ready = start_loop(sl, seconds=8)
    if not ready or not tcp:
        return set_up_failed(results, prefix, sl, run)
    cuts, mended, lines = [], True, []
    for k in range(TCP_CUTS):
        cuts.append(time.monotonic())
        killed = sl.cut()
        up, states = wait_tcp_ends(sl, "up", RECONNECT_BOUND_S)
        mended &= up and killed > 0
        # A socket whose peer was destroyed first is gone by its reset:
        # the reconnects counted below show that every link was cut.
        lines.append(f"cut {k + 1}: {killed} sockets destroyed"
                     + ("" if killed else " (ss -K needs a kernel with "
                        "CONFIG_INET_DIAG_DESTROY)") + "; "
                     + (f"every link up {time.monotonic() - cuts[-1]:.2f} s "
                        "later" if up else f"after {RECONNECT_BOUND_S:g} s "
                        f"the TCP ends are {states}"))
        # The loop's calls go on between cuts (tens of ms each); nothing
        # tells when one ended.
        time.sleep(1)
    status = run.end()
    exact = run.chips(r"no call failed: \d+ calls exact")
    failed = run.chips(FAILED.pattern)
    wrong = run.chips(r"returned OK with .* wrong")
    ok, calls = aftermath(run, chips)
    for key in sorted(chips):
        if key in failed:
            t, m = failed[key]
            calls.append(f"chip {key[1]} ({key[2]}): call {m.group(1)} "
                         f"failed {m.group(3)} {since_cut(t, cuts)}  <- "
                         "want every call exact")
        elif key in wrong:
            calls.append(f"chip {key[1]} ({key[2]}): "
                         f"{wrong[key][1].string}  <- not exact")
        elif key in exact:
            calls.append(f"chip {key[1]} ({key[2]}): "
                         f"{exact[key][1].string}")
    ok &= status == 0 and len(exact) == len(chips)
    report(results, f"{prefix}.cut_mid_collective_and_restored_every_"
           "call_is_exact_and_none_failed", ok,
           [f"exec status {status}"] + calls
           + ([] if ok else run.text()[-12:]))
    try:
        after = sl.reconnects()
    except OSError as e:
        after = {}
        lines.append(f"QMP: {e}")
    counted = {e: after.get(e, 0) - before.get(e, 0) for e in after}
    right = all(counted.get(e) == (TCP_CUTS if e in tcp else 0)
                for e in sl.linked_ends())
    lines += [f"{tessera_slice.coords_text(c)} port "
              f"{tessera_slice.PORT_NAMES[p]}: reconnects +{n}"
              + ("" if n == (TCP_CUTS if (c, p) in tcp else 0) else
                 f"  <- want +{TCP_CUTS if (c, p) in tcp else 0}")
              for (c, p), n in sorted(counted.items())]
    report(results, f"{prefix}.every_cut_is_mended_within_2_s_and_counted_"
           "as_a_reconnect_at_both_ends", mended and right, lines)


def test_tcp_cut_long(results, slices):
    """The TCP connections between the two VMs cut and kept cut (the
    namespace's loopback down, so the client ends cannot reconnect) while
    every chip loops all-reduces: every chip's call fails within
    COLL_BOUND_S with a link cause, a chip failing LINK_DOWN names its
    cut ports, the cut ports go down (past the link's deadline), no
    context is charged; once the network is back and the ports
    retrained, the next all-reduce is exact."""
    prefix = "failures.tcp_cut_long"
    sl = slices.get(PAIR_TCP)
    if not sl.up:
        return set_up_failed(results, prefix, sl)
    tcp = sl.tcp_ends()
    run, chips, ready = start_loop(sl)
    if not ready or not tcp:
        return set_up_failed(results, prefix, sl, run)
    t0 = time.monotonic()
    try:
        sl.net("ip", "link", "set", "lo", "down")
        killed = sl.cut()
        run.wait_chips(f"{FAILED.pattern}|returned OK", len(chips), WATCH_S)
        down, states = wait_tcp_ends(
            sl, "down", max(0, WATCH_S - (time.monotonic() - t0)))
        held = time.monotonic() - t0
    finally:
        sl.net("ip", "link", "set", "lo", "up")
    # A chip names its ports after its failure, then its next job's fate:
    # its lines are all in once that last one is (seen read 32 ms early).
    run.wait_chips(AFTER.pattern, len(chips), WATCH_S)
    ok, lines = failures_after(
        run, t0, chips, lambda code: bool(LINK_CAUSES.fullmatch(code)))
    failed = run.chips(FAILED.pattern)
    link_down = [k for k, (_, m) in failed.items()
                 if m.group(3) == "LINK_DOWN"]
    for key in sorted(link_down):
        cut = {tessera_slice.PORT_NAMES[p] for c, p in tcp
               if ",".join(map(str, c)) == key[2]}
        mine = [l for l in run.text() if l.startswith(
            f"[host{key[0]}] slice_failure: chip {key[1]} ")]
        named = [m.group(1, 2) for m in map(PORT_NAMED.search, mine) if m]
        good = bool(named) and {d for d, _ in named} <= cut
        ok &= good
        lines.append(f"chip {key[1]} ({key[2]}) names "
                     + (", ".join(" ".join(n) for n in named) or "no port")
                     + ("" if good else f"  <- want its cut ports "
                        f"{' '.join(sorted(cut))}"))
    ok &= bool(link_down)
    report(results, f"{prefix}.every_chip_fails_within_3_s_with_link_down_"
           "naming_the_cut_port", ok, [f"{killed} sockets cut"] + lines)
    report(results, f"{prefix}.the_cut_ports_go_down_past_the_links_"
           "deadline", down, [f"{held:.1f} s after the cut, the TCP ends: "
                              f"{states}"])
    status = run.end()
    ok, lines = aftermath(run, chips)
    report(results, f"{prefix}.no_context_is_charged_a_hang_or_banned", ok,
           lines)
    why = sl.mend() if status is not None else sl.spoilt
    if why:
        report(results, f"{prefix}.after_retraining_the_next_all_reduce_is_"
               "exact", False, [f"the slice did not recover: {why}"])
        return
    check = sl.exec("slice_failure all-reduce --count 65536 --calls 3")
    status = check.end()
    exact = check.chips("3 calls exact")
    report(results, f"{prefix}.after_retraining_the_next_all_reduce_is_"
           "exact", status == 0 and len(exact) == len(chips),
           [f"{len(exact)} of {len(chips)} chips exact, exec status "
            f"{status}"] + ([] if status == 0 else check.text()[-20:]))


# ------------------------------------------------------------------------
# Setting up (issue 30, item 4): accel_comm_create fails on every host
# within seconds of one host's set-up failing, naming the cause, never at
# the 60 s connect timeout or as a hang of the innocent.  tests/slice/
# slice_setup creates a communicator per chip, each in a process of its
# own, with the default connect timeout.

# How soon every chip's accel_comm_create must have failed: the driver's
# 5 s job watchdog ends the hung queue's job, and the rest follows.
SETUP_BOUND_S = 10.0
# How long to watch: past the 60 s connect timeout, so that a chip left
# waiting shows as such.
SETUP_WATCH_S = 75.0
SETUP_LINE = re.compile(r"^\[host(\d+)\] slice_setup: chip (\d+) "
                        r"\((\d+,\d+,\d+)\): accel_comm_create: (\S+) "
                        r"after (\d+) ms$")
PORT_LINE = re.compile(r"^\[host(\d+)\] slice_setup: chip (\d+) "
                       r"\((\d+,\d+,\d+)\): port (\S+) \(\d\) (\S+)$")


def setup_results(run, chips):
    """Waits until every one of CHIPS said how its set-up went; {(host,
    chip, coords): (host time, code, ms)}."""
    def got():
        return {(int(m.group(1)), int(m.group(2)), m.group(3)):
                (t, m.group(4), int(m.group(5)))
                for t, m in ((t, SETUP_LINE.match(l or ""))
                             for t, l in run.lines) if m}
    run.wait(lambda: len(got()) >= len(chips), SETUP_WATCH_S)
    return got()


def setup_verdict(run, chips, t0, want):
    """Lines with each chip's code and time, and whether each of CHIPS
    failed within SETUP_BOUND_S of calling accel_comm_create (the guest's
    clock: starting a command through the agent takes seconds of its own
    on a loaded machine) with a code WANT(key, code) takes."""
    got = setup_results(run, chips)
    lines, ok = [], True
    for key in sorted(chips):
        if key not in got:
            lines.append(f"chip {key[1]} ({key[2]}): nothing "
                         f"{SETUP_WATCH_S:g} s after the cause")
            ok = False
            continue
        t, code, ms = got[key]
        good = ms <= SETUP_BOUND_S * 1000 and want(key, code)
        ok &= good
        lines.append(f"chip {key[1]} ({key[2]}): {code} after {ms} ms in "
                     f"accel_comm_create ({t - t0:.2f} s after the cause, "
                     "the exec's start included)"
                     + ("" if good else "  <- want a named cause within "
                        f"{SETUP_BOUND_S:g} s"))
    return ok, lines


def setup_again(results, name, sl, chips):
    """After the cause is gone: every chip's communicator is created."""
    why = sl.mend()
    if why:
        report(results, name, False, [f"the slice did not recover: {why}"])
        return
    run = sl.exec("slice_setup --window 1")
    status = run.end()
    got = setup_results(run, chips)
    created = [k for k, (_, code, _) in got.items() if code == "OK"]
    report(results, name, status == 0 and len(created) == len(chips),
           [f"{len(created)} of {len(chips)} chips created it, exec status "
            f"{status}"] + ([] if status == 0 else run.text()[-12:]))


def test_setup_hang(results, slices):
    """Queue 0 of chip (0,1) (host 1) hung before accel_comm_create: that
    chip fails JOB_HUNG (the watchdog ended its greeting), every other
    PEER_ABORT, all within SETUP_BOUND_S; once cleared, creation works."""
    prefix = "failures.setup_hang"
    sl = slices.get(PAIR)
    if not sl.up:
        return set_up_failed(results, prefix, sl)
    chips = slice_chips(sl)
    hung = "0,1,0"
    if not sl.cli("inject", "--name", sl.name, "--chip", "0,1",
                  "fault-hang-queues=1").returncode == 0:
        sl.spoilt = "inject failed"
        return set_up_failed(results, prefix, sl)
    t0 = time.monotonic()
    run = sl.exec("slice_setup")
    ok, lines = setup_verdict(
        run, chips, t0, lambda key, code:
        code == ("JOB_HUNG" if key[2] == hung else "PEER_ABORT"))
    status = run.end()
    report(results, f"{prefix}.a_hung_queue_on_one_host_fails_every_chip_"
           "within_10_s_naming_it", ok and status == 1,
           lines + [f"exec status {status}"]
           + ([] if ok else run.text()[-12:]))
    sl.cli("inject", "--name", sl.name, "clear")
    setup_again(results, f"{prefix}.once_cleared_every_chip_creates_one",
                sl, chips)


def test_setup_link_down(results, slices):
    """Port +y of chip (0,0) down (one end only) before accel_comm_create:
    that chip fails LINK_DOWN naming the port, the others LINK_DOWN or
    PEER_ABORT, all within SETUP_BOUND_S and none JOB_HUNG, TIMEOUT or
    OK; after retraining, creation works."""
    prefix = "failures.setup_link_down"
    sl = slices.get(PAIR)
    if not sl.up:
        return set_up_failed(results, prefix, sl)
    chips = slice_chips(sl)
    if not sl.inject((0, 0), "+y", "down=on"):
        sl.spoilt = "inject failed"
        return set_up_failed(results, prefix, sl)
    t0 = time.monotonic()
    run = sl.exec("slice_setup")

    # The others: PEER_ABORT, or LINK_DOWN for a link of theirs that a
    # loaded machine took down meanwhile (the link's 0.955 s are short).
    def want(key, code):
        if key[2] == "0,0,0":
            return code == "LINK_DOWN"
        return code in ("LINK_DOWN", "PEER_ABORT")
    ok, lines = setup_verdict(run, chips, t0, want)
    status = run.end()
    named = [m.group(4, 5) for m in map(PORT_LINE.match, run.text())
             if m and m.group(3) == "0,0,0"]
    ok &= ("+y", "down") in named
    lines.append("chip (0,0,0) names the ports not up: "
                 + (", ".join(" ".join(n) for n in named) or "none")
                 + ("" if ("+y", "down") in named else "  <- want +y down"))
    report(results, f"{prefix}.a_link_down_fails_every_chip_within_10_s_"
           "with_link_down_naming_chip_and_port", ok and status == 1,
           lines + [f"exec status {status}"]
           + ([] if ok else run.text()[-12:]))
    setup_again(results, f"{prefix}.after_retraining_every_chip_creates_one",
                sl, chips)


TESTS = {"baseline": test_baseline, "sigstop": test_sigstop,
         "reset": test_reset, "kill": test_kill, "route": test_route,
         "sigstop-waiting": test_sigstop_waiting,
         "sigstop-2x2x2": test_sigstop_3d,
         "setup-hang": test_setup_hang,
         "setup-link-down": test_setup_link_down,
         "tcp-cut": test_tcp_cut, "tcp-cut-long": test_tcp_cut_long}
# make check's, in this order: the one that kills a VM comes after those
# that share its slice.  The 2x2x2 of two VMs is make check-slices'.
DEFAULT = ["baseline", "setup-hang", "setup-link-down", "sigstop",
           "sigstop-waiting", "reset", "kill", "route", "tcp-cut",
           "tcp-cut-long"]


def run(results, names=None):
    """The tests NAMES (default: DEFAULT)."""
    log = Log()
    with tempfile.TemporaryDirectory(prefix="check-failures.") as tmp:
        slices = Slices(tmp, log)
        try:
            for name in names or DEFAULT:
                log(f"## {name}")
                TESTS[name](results, slices)
        finally:
            slices.close()
            left = [f"QEMU pid {pid}" for pid in processes_naming(tmp)] + \
                [f"left in the slices' folder: {f}" for f in os.listdir(tmp)]
            report(results, "failures.down_leaves_no_qemu_and_no_file",
                   not left, left)


def processes_naming(path):
    """The processes whose command line names PATH (the VMs of slices
    whose folders are in it)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if path.encode() in f.read():
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


class Results:
    """Outcomes printed as they come, as tests/run-checks prints them."""

    def __init__(self):
        self.failed = 0

    def say(self, line):
        print(line, flush=True)

    def add(self, name, outcome, details=()):
        self.failed += outcome == "fail"
        self.say(f"  {'ok  ' if outcome == 'pass' else outcome.upper()}  "
                 f"{name}")
        for line in details if outcome == "fail" else ():
            self.say(f"        {line}")


def main():
    names = sys.argv[1:]
    if any(n not in TESTS for n in names) or "--help" in names:
        print(__doc__, file=sys.stderr)
        return 2
    results = Results()
    run(results, names)
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
