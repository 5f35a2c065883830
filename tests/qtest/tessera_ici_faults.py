# SPDX-License-Identifier: GPL-2.0
"""ICI link faults injected from the guest's debug block and from the
host's iciN-faults properties (Documentation/ici.md, "Faults").

Most tests run two QEMUs, chips (0) and (1) of a 2-chip slice whose ports
0 and 1 are joined by a UNIX socket.  Chip (0) gets the fault on its port
0, then writes into a window of chip (1) (ICI_WRITE); the data must
arrive intact, and exactly the counters the fault is documented to move
must move, on either end: a drop shows as a sequence error at the
receiver and a NAK and replays at the sender, a corruption as a CRC error
at the receiver, lost ACKs as a timeout and replays at the sender of the
data they acknowledge and a duplicate there, a hold as nothing at all.
The rest are the refusals: an unknown key, a bad number, a rate above a
million, a port without a chardev, the debug block off.
Run by tessera_qtest.py as the "ici-faults" suite.
"""

import atexit
import os
import shutil
import struct
import tempfile

from tessera_harness import C, FENCES, Qtest, check, hdr, macro
from tessera_ici_peer import COUNTERS

SLICE = 7
SOCK_DIR = tempfile.mkdtemp(prefix="tessera-ici-faults.")
atexit.register(shutil.rmtree, SOCK_DIR, ignore_errors=True)
SOCK = os.path.join(SOCK_DIR, "link.sock")
KEY = 0x5EED5EED12345678
# The links' retransmit timer: long enough that no busy host fires it (a
# stall of 5 ms, the chip's own, is not rare on two shared cores), so that
# every timeout counted is the fault's.
RETRANSMIT_US = 200000
# Between polls while the links work: leave the CPU to the QEMUs.
POLL_S = 0.001
# Data bytes per WRITE message: one DATA frame each.
MSG = struct.Struct("<BB3B3BIIIIQQQQQQQ")   # struct tsr_ici_msg
CHUNK = C["TSR_ICI_MAX_PAYLOAD"] - MSG.size
WINDOW = struct.Struct("<IIQQQ")            # struct tsr_ici_window
WRITE = struct.Struct("<3BxIQQQQQIIQQ")     # tsr_cmd_ici_write after hdr

# The link fault registers, in the order of the property's keys.
KEYS = {
    "drop-next": "TSR_DREG_LINK_DROP_NEXT",
    "drop-ppm": "TSR_DREG_LINK_DROP_PPM",
    "corrupt-next": "TSR_DREG_LINK_CORRUPT_NEXT",
    "corrupt-ppm": "TSR_DREG_LINK_CORRUPT_PPM",
    "drop-acks": "TSR_DREG_LINK_DROP_ACKS",
    "delay-us": "TSR_DREG_LINK_DELAY_US",
    "seed": "TSR_DREG_LINK_SEED",
}
ERRORS = [c for c in COUNTERS if c not in
          ("FRAMES_TX", "FRAMES_RX", "BYTES_TX", "BYTES_RX")]

TESTS = []


def chip_props(coords, port, chardev, debug=True):
    """No keepalive: a probe of an idle link would take a count fault
    ("the next N frames") meant for the frames a test sends."""
    return (f"slice-id={SLICE},slice-dims=2,coords={coords},"
            f"ici{port}={chardev},x-ici-retransmit-us={RETRANSMIT_US},"
            "x-ici-keepalive-ms=0" + (",debug-regs=on" if debug else ""))


def single(debug=True, log=False):
    """A test of chip (0) alone: its port 0 has a socket nobody joins.
    With @log, QEMU logs guest errors to its stderr."""
    def register(fn):
        fn.props = chip_props(0, 0, "l0", debug)
        fn.args = (("-chardev", f"socket,id=l0,path={SOCK},server=on,"
                    "wait=off") + (("-d", "guest_errors") if log else ()))
        TESTS.append(fn)
        return fn
    return register


def linked(name, body):
    """A test of chip (0) (the harness's QEMU) linked to chip (1)."""
    def run(qt):
        peer = Qtest(chip_props(1, 1, "l1"),
                     ("-chardev", f"socket,id=l1,path={SOCK},"
                      "reconnect-ms=100"))
        try:
            body(qt, peer)
        finally:
            peer.close()

    run.__name__ = name
    run.props = chip_props(0, 0, "l0")
    run.args = ("-chardev", f"socket,id=l0,path={SOCK},server=on,wait=off")
    TESTS.append(run)
    return run


# ------------------------------------------------------------ helpers

def link_reg(qt, port, key):
    return qt.reg(macro("TSR_REG_DBG_LINK_BASE", port) + C[KEYS[key]])


def set_link_reg(qt, port, key, value):
    qt.set_reg(macro("TSR_REG_DBG_LINK_BASE", port) + C[KEYS[key]], value)


def link_regs(qt, port=0):
    return {key: link_reg(qt, port, key) for key in KEYS}


def faults(qt, port=0):
    """The iciN-faults property as a dict of integers."""
    text = qt.qom_get(f"ici{port}-faults")
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split(","))}


def set_faults(qt, text, port=0):
    return qt.qom_set(f"ici{port}-faults", text)


def state(qt, port):
    return qt.reg(macro("TSR_ICI_PORT_BASE", port) + C["TSR_IREG_STATE"])


def counters(qt, port):
    out = {}
    for i, name in enumerate(COUNTERS):
        off = macro("TSR_ICI_PORT_BASE", port) + macro("TSR_IREG_CNT_LO", i)
        lo = qt.reg(off)
        out[name] = lo | qt.reg(off + 4) << 32
    return out


def error_counts(a, b):
    """The error counters of chip (0)'s port 0 and chip (1)'s port 1."""
    ca, cb = counters(a, 0), counters(b, 1)
    return {**{("a", n): ca[n] for n in ERRORS},
            **{("b", n): cb[n] for n in ERRORS}}


def link_up(a, b):
    for qt, port in ((a, 0), (b, 1)):
        qt.wait(f"port {port} up",
                lambda: state(qt, port) == C["TSR_ICI_STATE_UP"])


def open_window(b, size):
    """Window 0 of chip (1): @size bytes of its system memory."""
    b.setup()
    table = b.buffer(1, 4096)
    win = b.buffer(1, size)
    b.memwrite(table, WINDOW.pack(C["TSR_ICI_WINDOW_VALID"] |
                                  C["TSR_ICI_WINDOW_WRITE"], 1, win, size,
                                  KEY))
    b.set_reg(C["TSR_REG_ICI_WINDOW_TABLE_LO"], table)
    b.set_reg(C["TSR_REG_ICI_WINDOW_TABLE_HI"], 0)
    b.set_reg(C["TSR_REG_ICI_WINDOW_COUNT"], 1)
    return win


def remote_write(a, b, win, chunks, fence=1):
    """Chip (0) writes @chunks frames of data into chip (1)'s window."""
    n = chunks * CHUNK
    data = bytes((i * 7 + i // 251) & 0xFF for i in range(n))
    src = a.buffer(1, n)
    a.memwrite(src, data)
    cmd = hdr(C["TSR_OP_ICI_WRITE"], 8 + WRITE.size) + WRITE.pack(
        1, 0, 0, 0, KEY, src, n, 0, n, 1, n, 0, 0)
    comp = a.submit(0, 1, cmd, fence)
    a.wait("the write", lambda: a.read64(FENCES) == fence, interval=POLL_S)
    rec = a.completion(comp)
    check(rec["error"] == 0, f"the write failed: {rec}")
    check(b.memread(win, n) == data, "the data arrived changed")


def prepared(a, b):
    """Both chips set up, the link up; chip (1)'s window is returned."""
    a.setup()
    win = open_window(b, 4 * CHUNK)
    link_up(a, b)
    return win


# -------------------------------------------------- one test per fault

def rate_hits(seed, ppm, kind, frames):
    """The DATA frames (by sequence number) a rate fault hits on their
    first sending: rate_hit() of tessera-link.c, @kind 1 for drops, 2 for
    corruption."""
    def mix(z):
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2 ** 64 - 1)
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2 ** 64 - 1)
        return z ^ (z >> 31)
    return [s for s in range(frames) if mix(seed ^ s << 8 ^ kind) %
            1000000 < ppm]


def seed_for(ppm, kind, frames, want):
    """A seed whose hits among the first @frames frames satisfy @want."""
    return next(s for s in range(1, 1000)
                if want(rate_hits(s, ppm, kind, frames)))


# A fresh link numbers chip (0)'s first DATA frame 0.  A rate drop is
# followed by a frame that shows the gap (the last is not hit); a rate
# corruption hits the last frame alone, so no frame is out of order.
DROP_SEED = seed_for(500000, 1, 4, lambda h: h and 3 not in h)
CORRUPT_SEED = seed_for(500000, 2, 4, lambda h: h == [3])

DROP = {("b", "SEQ_ERRORS"), ("a", "NAKS"), ("a", "REPLAYS")}
CORRUPT = {("b", "CRC_ERRORS"), ("a", "NAKS"), ("a", "REPLAYS")}
# Chip (0) loses the ACK of chip (1)'s answer: chip (1) resends it.
LOST_ACK = {("b", "TIMEOUTS"), ("b", "REPLAYS"), ("a", "SEQ_ERRORS")}

# key: (value, seed, frames written, counters that move, what is left)
FAULTS = {
    "drop-next": (1, None, 3, DROP, 0),
    "drop-ppm": (500000, DROP_SEED, 4, DROP, 500000),
    "corrupt-next": (1, None, 1, CORRUPT, 0),
    "corrupt-ppm": (500000, CORRUPT_SEED, 4, CORRUPT, 500000),
    "drop-acks": (1, None, 1, LOST_ACK, 0),
    "delay-us": (2000, None, 3, set(), 0),
}


def inject_by_register(a, key, value, seed):
    if seed is not None:
        set_link_reg(a, 0, "seed", seed)
    set_link_reg(a, 0, key, value)
    check(link_reg(a, 0, key) == value, "the register reads back otherwise")
    check(faults(a)[key] == value, "the property does not show the fault")


def inject_by_property(a, key, value, seed):
    text = f"{key}={value}" + (f",seed={seed}" if seed is not None else "")
    reply = set_faults(a, text)
    check("return" in reply, f"qom-set {text}: {reply}")
    check(faults(a)[key] == value, "the property reads back otherwise")
    check(link_reg(a, 0, key) == value, "the register does not show it")


def fault_test(key, inject):
    value, seed, frames, moves, left = FAULTS[key]

    def body(a, b):
        win = prepared(a, b)
        before = error_counts(a, b)
        inject(a, key, value, seed)
        remote_write(a, b, win, frames)

        def delta():
            now = error_counts(a, b)
            return {k: now[k] - before[k] for k in now}

        a.wait(f"{sorted(moves)} to move",
               lambda: all(delta()[k] > 0 for k in moves), interval=POLL_S)
        d = delta()
        moved = {k: v for k, v in d.items() if v and k not in moves}
        check(not moved, f"{key} moved other counters too: {moved}")
        check(faults(a)[key] == left, f"{key}: {faults(a)[key]} left")

    how = "debug_block" if inject is inject_by_register else "property"
    linked(f"{key.replace('-', '_')}_via_{how}_moves_only_its_counters",
           body)


for fault in FAULTS:
    fault_test(fault, inject_by_register)
    fault_test(fault, inject_by_property)


def down_and_retrain(a, b):
    win = prepared(a, b)
    check("return" in set_faults(a, "down=on"), "down=on refused")
    check(state(a, 0) == C["TSR_ICI_STATE_DOWN"], "port 0 is not DOWN")
    check(counters(a, 0)["LINK_DOWNS"] == 1, "no link down counted")
    check("return" in set_faults(a, "retrain=on"), "retrain=on refused")
    link_up(a, b)
    remote_write(a, b, win, 2)


linked("down_on_takes_the_port_down_and_retrain_on_brings_it_up",
       down_and_retrain)


# ------------------------------------------------- reading and refusing

ALL = "drop-next=3,drop-ppm=250,corrupt-next=4,corrupt-ppm=5,drop-acks=6," \
      "delay-us=7,seed=8"


@single()
def registers_and_property_show_the_same_faults_and_a_reset_keeps_them(qt):
    qt.enable()
    check(faults(qt) == dict.fromkeys(KEYS, 0), f"not clear: {faults(qt)}")
    check("return" in set_faults(qt, ALL), "qom-set refused")
    want = {k: int(v) for k, v in (kv.split("=") for kv in ALL.split(","))}
    check(link_regs(qt) == want, f"registers {link_regs(qt)}")
    # One register changes one field; the property names every key.
    set_link_reg(qt, 0, "seed", 9)
    check(qt.qom_get("ici0-faults") == ALL.replace("seed=8", "seed=9"),
          f"property {qt.qom_get('ici0-faults')}")
    # A key not named keeps its value.
    set_faults(qt, "drop-next=1")
    check(faults(qt) == {**want, "seed": 9, "drop-next": 1}, "keys lost")
    qt.set_reg(C["TSR_REG_RESET"], C["TSR_RESET_MAGIC"])
    check(faults(qt) == {**want, "seed": 9, "drop-next": 1},
          "a chip reset cleared the link's faults")


@single()
def the_property_works_from_hmp(qt):
    reply = qt.qmp_cmd("human-monitor-command", **{
        "command-line": "qom-set /machine/peripheral/tsr0 ici0-faults "
                        "drop-ppm=1000,seed=7"})
    check(reply.get("return") == "", f"HMP: {reply}")
    check(faults(qt)["drop-ppm"] == 1000 and faults(qt)["seed"] == 7,
          f"property {faults(qt)}")


def refused(qt, text, port, words):
    """qom-set @text is refused naming @words, and nothing changes."""
    before = faults(qt)
    reply = set_faults(qt, text, port)
    check("error" in reply, f"'{text}' accepted: {reply}")
    desc = reply["error"]["desc"]
    for word in words:
        check(word in desc, f"'{text}': '{desc}' does not say '{word}'")
    check(faults(qt) == before, f"'{text}' changed {faults(qt)}")


@single()
def the_property_refuses_an_unknown_key_and_changes_nothing(qt):
    set_faults(qt, "seed=3")
    refused(qt, "drop-next=1,drop-nxt=1", 0, ("drop-nxt",))
    refused(qt, "down=maybe", 0, ("down",))


@single()
def the_property_refuses_a_bad_number_and_changes_nothing(qt):
    refused(qt, "seed=5,drop-next=many", 0, ("drop-next",))
    refused(qt, "drop-next=4294967296", 0, ("drop-next",))


@single()
def the_property_refuses_a_rate_above_a_million_and_changes_nothing(qt):
    refused(qt, "seed=5,drop-ppm=1000001", 0, ("drop-ppm", "1000000"))
    refused(qt, "corrupt-ppm=2000000", 0, ("corrupt-ppm", "1000000"))
    check("return" in set_faults(qt, "drop-ppm=1000000"), "a million")


@single(log=True)
def the_debug_block_refuses_a_rate_above_a_million(qt):
    qt.enable()
    set_faults(qt, "drop-ppm=10")
    set_link_reg(qt, 0, "drop-ppm", 1000001)
    set_link_reg(qt, 0, "corrupt-ppm", 0xFFFFFFFF)
    check(link_regs(qt) == {**dict.fromkeys(KEYS, 0), "drop-ppm": 10},
          f"registers {link_regs(qt)}")
    check("ignored: a rate is at most 1000000 per million" in qt.stderr(),
          "not logged")


@single(log=True)
def a_port_without_a_chardev_is_refused(qt):
    qt.enable()
    refused_reply = set_faults(qt, "drop-next=1", port=1)
    check("error" in refused_reply and
          "has no chardev" in refused_reply["error"]["desc"],
          f"qom-set ici1-faults: {refused_reply}")
    reply = qt.qmp_cmd("qom-get", path="/machine/peripheral/tsr0",
                       property="ici1-faults")
    check("error" in reply, f"qom-get ici1-faults: {reply}")
    set_link_reg(qt, 1, "drop-next", 1)
    check(link_reg(qt, 1, "drop-next") == 0, "port 1 took a fault")
    check("ICI port 1: link fault register 0x%x <- 0x1 ignored: the port "
          "has no socket" % (macro("TSR_REG_DBG_LINK_BASE", 1) +
                             C["TSR_DREG_LINK_DROP_NEXT"]) in qt.stderr(),
          "not logged")


@single(log=True)
def the_debug_block_refuses_an_unknown_link_register(qt):
    qt.enable()
    reserved = macro("TSR_REG_DBG_LINK_BASE", 0) + 0x1C
    qt.set_reg(reserved, 1)
    check(qt.reg(reserved) == 0, "the reserved register answered")
    check(faults(qt) == dict.fromkeys(KEYS, 0), f"changed {faults(qt)}")
    check("write 0x1 to read-only or reserved register 0x%x ignored" %
          reserved in qt.stderr(), "not logged")


@single(debug=False, log=True)
def link_registers_are_absent_without_debug_regs(qt):
    qt.enable()
    set_faults(qt, "drop-next=2")
    set_link_reg(qt, 0, "drop-next", 5)
    check(link_reg(qt, 0, "drop-next") == 0, "the debug block answered")
    check(faults(qt)["drop-next"] == 2, f"changed {faults(qt)}")
    check("ignored: the debug block is off (debug-regs)" in qt.stderr(),
          "not logged")
