# SPDX-License-Identifier: GPL-2.0
"""The chip's ICI port against a test peer that speaks the wire protocol.

QEMU runs one chip, (0) of a 2-chip slice, whose port 0 (+x) serves a
UNIX socket; this script connects as chip (1), port 1, goes through the
transport's handshake (HELLO, READY), trains the link, then sends what no
correct peer would: frames with a bad CRC, garbage, an impossible length,
an unknown type, an acknowledgment of frames never sent, a frame far out
of sequence, a TRAIN from another slice or of the wrong size, a TAIL
(tail-loss probe) naming frames never sent.  On the
shared-memory transport it also scribbles on the ring it offered and
writes counts no correct peer writes.  QEMU must survive each, count it
where the specification (Documentation/ici.md) says, and keep the link
up or refuse it cleanly.  Run by tessera_qtest.py as the "ici" suite.
"""

import atexit
import ctypes
import fcntl
import hashlib
import hmac
import mmap
import os
import shutil
import socket
import struct
import tempfile
import time

from tessera_harness import C, check

SLICE = 5
HDR = struct.Struct("<HBBHHIIIII")      # struct tsr_ici_frame_hdr
TRAIN = struct.Struct("<II3BBIII")      # struct tsr_ici_train
HELLO = struct.Struct("<IHHII")         # struct tsr_ici_hello
MSG = struct.Struct("<BB3B3BIIIIQQQQQQQ")   # struct tsr_ici_msg
AUTH = struct.Struct("<I3sB32s32s")     # struct tsr_ici_auth
RING_SIZE = C["TSR_ICI_RING_MIN"]
# struct tsr_ici_ring_hdr's fields: offsets of head, producer_waiting,
# tail, consumer_waiting.
HEAD, PRODUCER_WAITING, TAIL, CONSUMER_WAITING = 64, 72, 128, 136
# QEMU's server socket stays after it exits: it lives in a folder of this
# run's own, in the temporary folder (TMPDIR), removed at exit.
SOCK_DIR = tempfile.mkdtemp(prefix="tessera-ici-peer.")
atexit.register(shutil.rmtree, SOCK_DIR, ignore_errors=True)
PEER_SOCK = os.path.join(SOCK_DIR, "peer.sock")

TESTS = []
LIBC = ctypes.CDLL(None, use_errno=True)
SYS_FUTEX, FUTEX_WAKE = 202, 1     # x86-64; shared, not FUTEX_PRIVATE


def test(fn):
    # This peer answers no keepalive probe: the chip sends none.
    fn.props = (f"slice-id={SLICE},slice-dims=2,coords=0,ici0=p0,"
                "x-ici-keepalive-ms=0")
    fn.args = ("-chardev", f"socket,id=p0,path={PEER_SOCK},server=on,wait=off")
    TESTS.append(fn)
    return fn


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def frame(ftype, payload=b"", seq=0, ack=0, credit=(16, 16), flags=0,
          length=None, bad_crc=False):
    """A link frame; @length overrides the length field."""
    n = len(payload) if length is None else length
    head = HDR.pack(C["TSR_ICI_FRAME_MAGIC"], ftype, flags, n, 0, seq, ack,
                    credit[0], credit[1], 0)[:-4]
    data = head + struct.pack("<I", crc32c(head))
    if payload:
        crc = crc32c(payload) ^ (1 if bad_crc else 0)
        data += payload + struct.pack("<I", crc)
    return data


def intact(data):
    """Frames as they go on a ring, which cannot damage them: 0 where a
    payload's CRC goes, ~0 for one sent damaged on purpose (ici.md,
    "Transports").  Bytes after the last whole frame stay as they are."""
    out, off = bytearray(data), 0
    while len(data) - off >= HDR.size:
        magic, _, _, n = HDR.unpack_from(data, off)[:4]
        end = off + HDR.size + n
        if magic != C["TSR_ICI_FRAME_MAGIC"] or (n and len(data) < end + 4):
            break
        if n:
            crc = struct.unpack_from("<I", data, end)[0]
            good = crc == crc32c(data[off + HDR.size:end])
            struct.pack_into("<I", out, end, 0 if good else 0xFFFFFFFF)
            end += 4
        off = end
    return bytes(out)


def train_payload(slice_id=SLICE, coords=(1, 0, 0), port=1, flags=0,
                  snd_una=0, rcv_next=0, version=None):
    return TRAIN.pack(C["TSR_ICI_VERSION"] if version is None else version,
                      slice_id, *coords, port, flags, snd_una, rcv_next)


class Ring:
    """One direction of the shared-memory transport, as a peer maps it."""

    def __init__(self, fd, size):
        self.fd = fd
        self.size = size
        self.mem = mmap.mmap(fd, C["TSR_ICI_RING_HDR_SIZE"] + size)

    @classmethod
    def create(cls, size=RING_SIZE, seal=True):
        fd = os.memfd_create("peer-ring", os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, C["TSR_ICI_RING_HDR_SIZE"] + size)
        if seal:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                        fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        ring = cls(fd, size)
        struct.pack_into("<II", ring.mem, 0, C["TSR_ICI_RING_MAGIC"], size)
        return ring

    def get(self, off, fmt="<Q"):
        return struct.unpack_from(fmt, self.mem, off)[0]

    def put(self, off, value, fmt="<Q"):
        struct.pack_into(fmt, self.mem, off, value)

    def _span(self, pos, n):
        """Data offsets of @n bytes from stream byte @pos: one or two runs."""
        start = C["TSR_ICI_RING_HDR_SIZE"] + pos % self.size
        first = min(n, self.size - pos % self.size)
        return [(start, first),
                (C["TSR_ICI_RING_HDR_SIZE"], n - first)]

    def write(self, data):
        """Produce @data (there is room: a test sends little)."""
        head = self.get(HEAD)
        done = 0
        for off, n in self._span(head, len(data)):
            self.mem[off:off + n] = data[done:done + n]
            done += n
        self.put(HEAD, head + len(data))

    def read(self):
        """Consume everything the producer has written."""
        tail = self.get(TAIL)
        n = self.get(HEAD) - tail
        out = b"".join(self.mem[off:off + k] for off, k in self._span(tail, n))
        self.put(TAIL, tail + n)
        return out

    def wake(self):
        """A futex doorbell: clear the consumer's word, FUTEX_WAKE it."""
        if self.get(CONSUMER_WAITING, "<I"):
            self.put(CONSUMER_WAITING, 0, "<I")
            word = ctypes.c_uint32.from_buffer(self.mem, CONSUMER_WAITING)
            LIBC.syscall(SYS_FUTEX, ctypes.byref(word), FUTEX_WAKE, 1, 0, 0, 0)
            del word

    def close(self):
        self.mem.close()
        os.close(self.fd)


def proof(key, coords, port, prover, verifier):
    """A PROOF: HMAC-SHA256(@key, its first 8 bytes || @prover's nonce ||
    @verifier's)."""
    head = AUTH.pack(C["TSR_ICI_PROOF_MAGIC"], bytes(coords), port,
                     bytes(32), bytes(32))[:8]
    mac = hmac.new(key, head + prover + verifier, hashlib.sha256).digest()
    return head + bytes(C["TSR_ICI_NONCE_SIZE"]) + mac


class Peer:
    """Chip (1, 0, 0) of the slice, on the other end of the chip's port 0.

    @transport: "socket" (a HELLO offering no ring), "ring" (offering one:
    frames then go through shared memory), or "frames" (no handshake at
    all: an older Tessera, which speaks frames at once).  @key: the
    slice's key, which the handshake then proves (CHALLENGE, PROOF).
    @futex: with a ring, offer futex doorbells (TSR_ICI_HELLO_FUTEX);
    .futex says whether both READYs agreed.

    The chip's DATA and TAIL frames are answered as a real peer answers
    them (answer()); @lose DATA frames to come are taken for lost.
    """

    def __init__(self, transport="socket", offer=None, chip_offers=True,
                 address=PEER_SOCK, key=None, futex=False):
        deadline = time.monotonic() + 10
        while True:
            # @address: a path, or (host, port) for a port over TCP.
            self.sock = socket.socket(
                socket.AF_UNIX if isinstance(address, str) else
                socket.AF_INET, socket.SOCK_STREAM)
            try:
                self.sock.connect(address)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.sock.settimeout(10)
        self.buf = b""
        self.fds = []
        self.tx = self.rx = None
        self.snd_nxt = self.rcv_next = self.lose = 0
        self.futex = False
        if transport != "frames":
            self.handshake(transport == "ring", offer, chip_offers, key,
                           futex)

    def recv(self, timeout):
        """Bytes (and descriptors) from the socket within @timeout."""
        self.sock.settimeout(timeout)
        data, fds, _, _ = socket.recv_fds(self.sock, 65536, 4)
        self.fds += fds
        return data

    def read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.recv(10)
            if not chunk:
                raise AssertionError("the chip hung up")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def hello(self, magic, flags=0, size=0, fds=()):
        data = HELLO.pack(magic, C["TSR_ICI_HELLO_VERSION"], flags, size, 0)
        socket.send_fds(self.sock, [data], list(fds))

    def auth(self):
        """A CHALLENGE or PROOF: (magic, coords, port, nonce, mac)."""
        return AUTH.unpack(self.read_exact(AUTH.size))

    def challenge(self, nonce=None):
        """Send a CHALLENGE, of a fresh nonce unless given one."""
        self.nonce = nonce or os.urandom(C["TSR_ICI_NONCE_SIZE"])
        self.sock.sendall(AUTH.pack(C["TSR_ICI_CHALLENGE_MAGIC"], bytes(3), 0,
                                    self.nonce, bytes(C["TSR_ICI_MAC_SIZE"])))

    def prove(self, key, chip_nonce):
        """Send our PROOF, as chip (1), port 1, of @key."""
        self.sock.sendall(proof(key, (1, 0, 0), 1, self.nonce, chip_nonce))

    def handshake(self, ring=False, offer=None, chip_offers=True, key=None,
                  futex=False):
        """HELLO and READY each way; the chip's HELLO offers its ring
        (unless @chip_offers is false: ici-transport=socket); with @key,
        CHALLENGE and PROOF each way between them."""
        magic, _, flags, size, _ = HELLO.unpack(self.read_exact(HELLO.size))
        check(magic == C["TSR_ICI_HELLO_MAGIC"], f"HELLO magic {magic:#x}")
        check(bool(flags & C["TSR_ICI_HELLO_AUTH"]) == bool(key),
              f"the chip's HELLO says it has a key: {flags}")
        auth = C["TSR_ICI_HELLO_AUTH"] if key else 0
        offered = bool(flags & C["TSR_ICI_HELLO_RING"]) and len(self.fds) == 1
        self.chip_hello_flags = flags
        futex = futex and bool(flags & C["TSR_ICI_HELLO_FUTEX"])
        ours = C["TSR_ICI_HELLO_FUTEX"] if futex else 0
        check(offered == chip_offers,
              f"the chip's offer (flags {flags}, fds {self.fds})")
        if ring:
            if offered:
                self.rx = Ring(self.fds.pop(), size)
            self.tx = offer or Ring.create()
            self.hello(C["TSR_ICI_HELLO_MAGIC"],
                       C["TSR_ICI_HELLO_RING"] | auth | ours, self.tx.size,
                       [self.tx.fd])
        else:
            self.hello(C["TSR_ICI_HELLO_MAGIC"], auth)
        if key:
            chip_nonce = self.auth()[3]
            self.challenge()
            got = self.auth()
            check(got[0] == C["TSR_ICI_PROOF_MAGIC"] and
                  proof(key, got[1], got[2], chip_nonce, self.nonce) ==
                  AUTH.pack(*got), "the chip's PROOF does not hold")
            self.prove(key, chip_nonce)
        self.hello(C["TSR_ICI_READY_MAGIC"],
                   C["TSR_ICI_HELLO_RING"] | ours if self.rx else 0)
        magic, _, flags, _, _ = HELLO.unpack(self.read_exact(HELLO.size))
        check(magic == C["TSR_ICI_READY_MAGIC"], f"READY magic {magic:#x}")
        self.ring_ready = bool(flags & C["TSR_ICI_HELLO_RING"])
        self.futex = bool(self.rx and self.ring_ready and ours and
                          flags & C["TSR_ICI_HELLO_FUTEX"])
        if not (ring and self.ring_ready):
            self.drop_rings()

    def drop_rings(self):
        for r in (self.tx, self.rx):
            if r:
                r.close()
        self.tx = self.rx = None

    def send(self, data, bell=True):
        """Send @data; on a ring, ring the doorbell unless told not to."""
        if self.tx:
            self.tx.write(intact(data))
            if bell and self.futex:
                self.tx.wake()
            elif bell:
                self.sock.sendall(bytes([C["TSR_ICI_DOORBELL_DATA"]]))
        else:
            self.sock.sendall(data)

    def data(self, payload):
        """Send @payload in the next DATA frame of our stream."""
        self.send(frame(C["TSR_ICI_FRAME_DATA"], payload, seq=self.snd_nxt,
                        ack=self.rcv_next))
        self.snd_nxt = (self.snd_nxt + 1) & 0xFFFFFFFF

    def frames(self, timeout=0.2, until=None):
        """Whole frames received within @timeout, or until one for which
        @until is true: (type, hdr, payload), each answered (answer())."""
        deadline = time.monotonic() + timeout
        out = []
        try:
            while True:
                if self.rx:
                    # Sleep on a doorbell once the ring is empty.
                    self.rx.put(CONSUMER_WAITING, 1, "<I")
                    self.buf += self.rx.read()
                if until and any(until(f) for f in self.frames_in_buf(out)):
                    return out
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                chunk = self.recv(left)
                if not chunk:
                    break
                if not self.rx:
                    self.buf += chunk
        except socket.timeout:
            pass
        if self.rx:
            self.buf += self.rx.read()
        return self.frames_in_buf(out)

    def frames_in_buf(self, out):
        while len(self.buf) >= HDR.size:
            fields = HDR.unpack(self.buf[:HDR.size])
            n = fields[3]
            total = HDR.size + (n + 4 if n else 0)
            if len(self.buf) < total:
                break
            out.append((fields[1], fields, self.buf[HDR.size:HDR.size + n]))
            self.buf = self.buf[total:]
            self.answer(out[-1])
        return out

    def answer(self, f):
        """As a real peer does (ici.md, "Reliable delivery"): a DATA frame
        in order is taken and acknowledged, one ahead of it shows a gap
        (NAK); a TAIL is answered with a NAK if a frame below the number
        it names is missing (the wire keeps order: it was lost), else an
        ACK.  A DATA frame taken for lost (@lose) is not answered."""
        ftype, fields, _ = f
        ahead = (fields[5] - self.rcv_next) & 0xFFFFFFFF
        if ftype == C["TSR_ICI_FRAME_DATA"]:
            if self.lose:
                self.lose -= 1
                return
            if not ahead:
                self.rcv_next = (self.rcv_next + 1) & 0xFFFFFFFF
        elif ftype != C["TSR_ICI_FRAME_TAIL"]:
            return
        missing = 0 < ahead < 1 << 31
        self.send(frame(C["TSR_ICI_FRAME_NAK" if missing else
                          "TSR_ICI_FRAME_ACK"], ack=self.rcv_next))

    def train(self):
        """Train: answer the chip's TRAIN with one that has seen it."""
        fresh = C["TSR_ICI_TRAIN_FRESH"]
        seen = C["TSR_ICI_TRAIN_PEER_SEEN"]
        self.send(frame(C["TSR_ICI_FRAME_TRAIN"], train_payload(flags=fresh)))
        for _ in range(50):
            for ftype, _, payload in self.frames():
                if ftype == C["TSR_ICI_FRAME_TRAIN"]:
                    t = TRAIN.unpack(payload)
                    self.send(frame(C["TSR_ICI_FRAME_TRAIN"], train_payload(
                        flags=fresh | seen, rcv_next=t[7])))
                    if t[6] & seen:
                        return

    def close(self):
        self.sock.close()
        self.drop_rings()
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def port_reg(qt, reg):
    """Register @reg of port 0 (TSR_ICI_PORT_BASE(0))."""
    return qt.reg(C["TSR_BLOCK_ICI"] + 0x100 + reg)


def state(qt):
    return port_reg(qt, C["TSR_IREG_STATE"])


# enum tsr_ici_counter, in order.
COUNTERS = ("FRAMES_TX", "FRAMES_RX", "BYTES_TX", "BYTES_RX", "CRC_ERRORS",
            "SEQ_ERRORS", "NAKS", "REPLAYS", "TIMEOUTS", "CREDIT_STALLS",
            "LINK_DOWNS", "PROTOCOL_ERRORS", "TAIL_PROBES", "TAIL_LOSSES")


def counter(qt, name):
    off = 0x10 + 8 * COUNTERS.index(name)
    lo = port_reg(qt, off)
    return lo | port_reg(qt, off + 4) << 32


def wait_state(qt, want):
    qt.wait(f"port state {want}", lambda: state(qt) == want)


def wait_gone(qt):
    """Until the port has lost its peer's connection: disconnected while
    the link may resume, down once its deadline for a silent peer passed
    (which a loaded host can reach before a look sees the first)."""
    gone = (C["TSR_ICI_STATE_DISCONNECTED"], C["TSR_ICI_STATE_DOWN"])
    qt.wait("the port disconnected", lambda: state(qt) in gone)


def trained(qt):
    qt.enable()
    peer = Peer()
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    return peer


@test
def a_peer_that_speaks_the_protocol_trains_the_link(qt):
    peer = trained(qt)
    check(port_reg(qt, C["TSR_IREG_PEER"]) == (1 | 1 << 24), "peer coords")
    check(port_reg(qt, C["TSR_IREG_PEER_SLICE"]) == SLICE, "peer slice")
    check(qt.reg(C["TSR_REG_ICI_PORTS_WIRED"]) == 1, "port 0 wired")
    check(qt.reg(C["TSR_REG_ICI_SLICE_ID"]) == SLICE, "slice id")
    peer.close()
    wait_gone(qt)


@test
def malformed_frames_are_counted_and_the_link_stays_up(qt):
    peer = trained(qt)
    data = C["TSR_ICI_FRAME_DATA"]
    crc0 = counter(qt, "CRC_ERRORS")
    proto0 = counter(qt, "PROTOCOL_ERRORS")
    seq0 = counter(qt, "SEQ_ERRORS")

    # A payload whose CRC is wrong: refused, a NAK comes back.
    peer.send(frame(data, b"x" * 100, seq=0, bad_crc=True))
    qt.wait("crc error", lambda: counter(qt, "CRC_ERRORS") == crc0 + 1)
    check(any(f[0] == C["TSR_ICI_FRAME_NAK"] for f in peer.frames()),
          "a NAK for the corrupt frame")
    # Garbage: skipped until the next good header, one error.
    peer.send(bytes(range(256)) * 3)
    # A header that checks but claims an impossible length.
    peer.send(frame(data, length=C["TSR_ICI_MAX_PAYLOAD"] + 1))
    qt.wait("resync", lambda: counter(qt, "CRC_ERRORS") >= crc0 + 2)
    # An unknown type; an ACK of frames never sent; a payload on an ACK.
    peer.send(frame(9))
    peer.send(frame(C["TSR_ICI_FRAME_ACK"], ack=1000))
    peer.send(frame(C["TSR_ICI_FRAME_ACK"], b"zz"))
    qt.wait("protocol errors",
            lambda: counter(qt, "PROTOCOL_ERRORS") >= proto0 + 3)
    # A frame far ahead of sequence: a gap, and a NAK.
    peer.frames()
    peer.send(frame(data, b"y" * 10, seq=1000))
    qt.wait("sequence error", lambda: counter(qt, "SEQ_ERRORS") > seq0)
    check(state(qt) == C["TSR_ICI_STATE_UP"], "still up")
    check(qt.reg(C["TSR_REG_CHIP_ID"]) == C["TSR_CHIP_ID"], "QEMU answers")
    peer.close()


def refused_write(peer, req):
    """A WRITE of 8 bytes into window 0, which the chip has not opened: it
    answers with a refusal, in a DATA frame of its own."""
    peer.data(MSG.pack(C["TSR_ICI_MSG_WRITE"], C["TSR_ICI_MSG_LAST"],
                       1, 0, 0, 0, 0, 0, req, 0, 0, 8, 0, 0, 0, 8, 0, 0, 0)
              + bytes(8))


def is_data(f):
    return f[0] == C["TSR_ICI_FRAME_DATA"]


# The chip's retransmit interval in the tail-loss tests: far above the
# probe timeout (twice the round trip, at least an eighth of it).
TAIL_RETRANSMIT_S = 1.0


def a_lost_last_frame_is_found_by_the_chip_s_tail_probe_and_resent(qt):
    """The chip's last frame (a write's answer) is lost: nothing behind it
    shows the gap.  Within a probe timeout the chip sends a TAIL, our NAK
    answers it, and the frame is resent, well before the retransmit
    timer: one probe, one loss found, one replay, no timeout."""
    peer = trained(qt)
    # A round trip measured (the chip probes only then), its answer taken.
    refused_write(peer, 1)
    check(any(map(is_data, peer.frames(5, until=is_data))), "an answer")
    before = {n: counter(qt, n) for n in COUNTERS}
    peer.lose = 1
    refused_write(peer, 2)
    lost = [f for f in peer.frames(5, until=is_data) if is_data(f)]
    check(lost, "the second answer")
    start = time.monotonic()
    got = peer.frames(5, until=is_data)
    took = time.monotonic() - start
    tail = [f for f in got if f[0] == C["TSR_ICI_FRAME_TAIL"]]
    check(tail and tail[0][1][5] == lost[0][1][5] + 1,
          f"a TAIL naming the frame after the lost one: {got}")
    check(any(is_data(f) and f[1][5] == lost[0][1][5] for f in got),
          f"the lost frame resent: {got}")
    check(took < TAIL_RETRANSMIT_S / 2, f"resent after {took:.3f} s")
    moved = {n: counter(qt, n) - before[n] for n in COUNTERS}
    for name, want in (("TAIL_PROBES", 1), ("TAIL_LOSSES", 1),
                       ("REPLAYS", 1), ("TIMEOUTS", 0), ("NAKS", 1),
                       ("PROTOCOL_ERRORS", 0)):
        check(moved[name] == want, f"{name} moved {moved[name]}, not {want}")
    peer.close()


test(a_lost_last_frame_is_found_by_the_chip_s_tail_probe_and_resent)
a_lost_last_frame_is_found_by_the_chip_s_tail_probe_and_resent.props += \
    f",x-ici-retransmit-us={int(TAIL_RETRANSMIT_S * 1e6)}"


@test
def a_tail_probe_naming_frames_never_sent_is_counted_and_the_link_goes_on(qt):
    """A TAIL naming a frame more than a window past what the chip took,
    or carrying a payload, is a protocol error; one naming frames it
    took is answered with an ACK, one naming a frame it misses with a
    NAK; the link stays up and carries a write's answer after them."""
    peer = trained(qt)
    tail = C["TSR_ICI_FRAME_TAIL"]
    proto0 = counter(qt, "PROTOCOL_ERRORS")
    peer.send(frame(tail, seq=1000))
    peer.send(frame(tail, seq=0x80000000))
    peer.send(frame(tail, b"zz"))
    qt.wait("protocol errors",
            lambda: counter(qt, "PROTOCOL_ERRORS") == proto0 + 3)
    for seq, want in ((0, "TSR_ICI_FRAME_ACK"), (1, "TSR_ICI_FRAME_NAK")):
        peer.send(frame(tail, seq=seq))
        got = peer.frames(5, until=lambda f: f[0] in (
            C["TSR_ICI_FRAME_ACK"], C["TSR_ICI_FRAME_NAK"]))
        check(got and got[-1][0] == C[want] and got[-1][1][6] == 0,
              f"TAIL {seq}: {want} of 0 expected, got {got}")
    refused_write(peer, 1)
    check(any(map(is_data, peer.frames(5, until=is_data))), "an answer")
    check(counter(qt, "PROTOCOL_ERRORS") == proto0 + 3, "no more errors")
    check(state(qt) == C["TSR_ICI_STATE_UP"], "still up")
    check(qt.reg(C["TSR_REG_CHIP_ID"]) == C["TSR_CHIP_ID"], "QEMU answers")
    peer.close()


@test
def a_peer_of_another_slice_is_refused(qt):
    qt.enable()
    peer = Peer()
    peer.send(frame(C["TSR_ICI_FRAME_TRAIN"], train_payload(slice_id=SLICE + 1)))
    wait_state(qt, C["TSR_ICI_STATE_FOREIGN"])
    check(port_reg(qt, C["TSR_IREG_PEER_SLICE"]) == SLICE + 1, "latched")
    peer.close()


@test
def a_garbage_or_miswired_handshake_is_refused(qt):
    qt.enable()
    peer = Peer()
    wait_state(qt, C["TSR_ICI_STATE_TRAINING"])
    proto0 = counter(qt, "PROTOCOL_ERRORS")
    peer.send(frame(C["TSR_ICI_FRAME_TRAIN"], b"0123456789"))
    # The wrong neighbour: chip (1) claiming port 0.
    peer.send(frame(C["TSR_ICI_FRAME_TRAIN"], train_payload(port=0)))
    qt.wait("counted", lambda: counter(qt, "PROTOCOL_ERRORS") == proto0 + 1)
    wait_state(qt, C["TSR_ICI_STATE_MISWIRED"])
    peer.close()


@test
def a_peer_that_comes_back_trains_again(qt):
    peer = trained(qt)
    peer.close()
    wait_gone(qt)
    peer = Peer()
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    peer.close()


def transport(qt):
    return port_reg(qt, C["TSR_IREG_TRANSPORT"])


def ring_trained(qt):
    qt.enable()
    peer = Peer("ring")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    check(transport(qt) == C["TSR_ICI_TRANSPORT_RING"],
          f"transport {transport(qt)}, not the ring")
    return peer


def probe(peer):
    """Ask the chip for an ACK: it writes to its ring (or socket)."""
    peer.send(frame(C["TSR_ICI_FRAME_ACK"], flags=C["TSR_ICI_FRAME_PROBE"]))


@test
def a_peer_that_speaks_frames_at_once_trains_on_the_socket(qt):
    """An older Tessera sends no HELLO: the port runs on the socket (the
    older peer skips the chip's HELLO as bytes before a frame)."""
    qt.enable()
    peer = Peer("frames")
    peer.read_exact(HELLO.size)
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    check(transport(qt) == C["TSR_ICI_TRANSPORT_SOCKET"], "on the socket")
    peer.close()
    wait_gone(qt)
    check(transport(qt) == C["TSR_ICI_TRANSPORT_NONE"], "no transport")


@test
def a_peer_offering_a_ring_gets_one_and_frames_go_through_shared_memory(qt):
    peer = ring_trained(qt)
    sent = counter(qt, "FRAMES_TX")
    probe(peer)
    check(any(f[0] == C["TSR_ICI_FRAME_ACK"] for f in peer.frames(1)),
          "the chip's answer came through its ring")
    check(counter(qt, "FRAMES_TX") > sent, "counted as any frame")
    peer.close()
    wait_gone(qt)


@test
def a_ring_that_can_shrink_is_refused_and_the_port_runs_on_the_socket(qt):
    qt.enable()
    peer = Peer("ring", offer=Ring.create(seal=False))
    check(not peer.ring_ready, "the chip refused an unsealed memfd")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    check(transport(qt) == C["TSR_ICI_TRANSPORT_SOCKET"], "on the socket")
    peer.close()


def a_chip_told_to_keep_to_its_socket_offers_no_ring(qt):
    qt.enable()
    peer = Peer("ring", chip_offers=False)
    check(not peer.ring_ready, "no ring")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    check(transport(qt) == C["TSR_ICI_TRANSPORT_SOCKET"], "on the socket")
    peer.close()


test(a_chip_told_to_keep_to_its_socket_offers_no_ring)
a_chip_told_to_keep_to_its_socket_offers_no_ring.props += \
    ",ici-transport=socket"


@test
def on_a_ring_a_payload_comes_without_crc_and_one_marked_damaged_is_refused(qt):
    """A ring cannot damage a frame: its payloads carry 0 for a CRC; a
    frame marked damaged (a CRC other than 0) is refused and
    counted as a CRC error is on a socket, and a NAK asks for it again."""
    peer = ring_trained(qt)
    data = C["TSR_ICI_FRAME_DATA"]
    crc0 = counter(qt, "CRC_ERRORS")
    peer.send(frame(data, b"x" * 100, seq=0, bad_crc=True))
    qt.wait("crc error", lambda: counter(qt, "CRC_ERRORS") == crc0 + 1)
    check(any(f[0] == C["TSR_ICI_FRAME_NAK"] for f in peer.frames()),
          "a NAK for the damaged frame")
    rx0 = counter(qt, "FRAMES_RX")
    peer.send(frame(data, b"x" * 100, seq=0))
    qt.wait("taken", lambda: counter(qt, "FRAMES_RX") > rx0)
    check(counter(qt, "CRC_ERRORS") == crc0 + 1, "no CRC asked of it")
    peer.close()


@test
def garbage_in_the_ring_is_counted_and_the_link_goes_on(qt):
    peer = ring_trained(qt)
    crc0 = counter(qt, "CRC_ERRORS")
    peer.send(bytes(range(256)) * 40)
    qt.wait("resync", lambda: counter(qt, "CRC_ERRORS") > crc0)
    peer.frames()
    probe(peer)
    check(any(f[0] == C["TSR_ICI_FRAME_ACK"] for f in peer.frames(1)),
          "the link still answers")
    check(state(qt) == C["TSR_ICI_STATE_UP"], "still up")
    peer.close()


@test
def counts_no_correct_peer_writes_hang_up_the_port_and_are_counted(qt):
    """A head past the end of the peer's ring; then a tail ahead of the
    head in the chip's own: each breaks the ring, the chip hangs up
    (counted), stays alive, and the next peer trains again."""
    for where in ("head", "tail"):
        peer = ring_trained(qt)
        proto0 = counter(qt, "PROTOCOL_ERRORS")
        if where == "head":
            peer.tx.put(HEAD, peer.tx.get(HEAD) + RING_SIZE + 1)
            peer.sock.sendall(bytes([C["TSR_ICI_DOORBELL_DATA"]]))
        else:
            peer.rx.put(TAIL, peer.rx.get(HEAD) + 64)
            probe(peer)
        wait_gone(qt)
        check(counter(qt, "PROTOCOL_ERRORS") == proto0 + 1, f"{where}: counted")
        check(qt.reg(C["TSR_REG_CHIP_ID"]) == C["TSR_CHIP_ID"], "QEMU answers")
        peer.close()


@test
def a_doorbell_that_is_not_one_is_counted(qt):
    peer = ring_trained(qt)
    proto0 = counter(qt, "PROTOCOL_ERRORS")
    peer.sock.sendall(b"Z")
    qt.wait("counted", lambda: counter(qt, "PROTOCOL_ERRORS") == proto0 + 1)
    check(state(qt) == C["TSR_ICI_STATE_UP"], "still up")
    peer.close()


def a_peer_that_answers_no_keepalive_is_given_up_on(qt):
    """With the chip's keepalive, a trained link that carries nothing goes
    down within a second once its peer stops answering the probes."""
    peer = trained(qt)
    start = time.monotonic()
    wait_state(qt, C["TSR_ICI_STATE_DOWN"])
    took = time.monotonic() - start
    check(took < 1.5, f"down after {took:.2f} s")
    check(counter(qt, "TIMEOUTS") >= 1, "counted as a timeout")
    check(any(f[0] == C["TSR_ICI_FRAME_ACK"] and f[1][2] &
              C["TSR_ICI_FRAME_PROBE"] for f in peer.frames()),
          "the chip probed first")
    peer.close()


test(a_peer_that_answers_no_keepalive_is_given_up_on)
a_peer_that_answers_no_keepalive_is_given_up_on.props = \
    a_peer_that_answers_no_keepalive_is_given_up_on.props.replace(
        ",x-ici-keepalive-ms=0", "")


def on_futex_doorbells_the_links_tick_reads_what_the_receive_thread_leaves(
        qt):
    """Both ends offer futex doorbells: the chip's receive thread reads
    the ring.  A thread that does not run (starved on a busy host; here
    x-ici-rx-stall) leaves the peer's frames in it: the links' tick reads
    them, so the peer is heard, and its link, keepalive on, stays up well
    past the deadline for a silent peer (0.955 s)."""
    qt.enable()
    peer = Peer("ring", futex=True)
    check(peer.futex, "futex doorbells agreed")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    check(transport(qt) == C["TSR_ICI_TRANSPORT_RING"], "on the ring")
    qt.qom_set("x-ici-rx-stall", True)
    rx = counter(qt, "FRAMES_RX")
    end = time.monotonic() + 2.5
    while time.monotonic() < end:
        # An ACK: the peer is heard; no doorbell, as if the thread slept.
        peer.send(frame(C["TSR_ICI_FRAME_ACK"], ack=peer.rcv_next),
                  bell=False)
        peer.frames(0.1)
    check(state(qt) == C["TSR_ICI_STATE_UP"], f"port state {state(qt)}")
    check(counter(qt, "TIMEOUTS") == 0, "no timeout")
    check(counter(qt, "FRAMES_RX") >= rx + 10,
          f"{counter(qt, 'FRAMES_RX') - rx} frames read from the ring")
    qt.qom_set("x-ici-rx-stall", False)
    peer.close()
    wait_gone(qt)


test(on_futex_doorbells_the_links_tick_reads_what_the_receive_thread_leaves)
on_futex_doorbells_the_links_tick_reads_what_the_receive_thread_leaves\
    .props = on_futex_doorbells_the_links_tick_reads_what_the_receive_thread_leaves\
    .props.replace(",x-ici-keepalive-ms=0", "") + ",ici-rx-thread=on"


@test
def on_futex_doorbells_the_receive_thread_reads_a_ring_it_is_woken_for(qt):
    """A frame rung for with a FUTEX_WAKE, no byte on the socket, is
    answered through the chip's ring; a peer that clears and wakes the
    word for nothing is counted (ici-futile-wakeups)."""
    qt.enable()
    peer = Peer("ring", futex=True)
    check(peer.futex, "futex doorbells agreed")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    probe(peer)
    check(any(f[0] == C["TSR_ICI_FRAME_ACK"] for f in peer.frames(1)),
          "the chip's answer came through its ring")
    for _ in range(40):
        peer.tx.put(CONSUMER_WAITING, 1, "<I")
        peer.tx.wake()
        time.sleep(0.005)
    futile = int(qt.qom_get("ici-futile-wakeups").split(":")[1])
    check(futile >= 1, f"futile wake-ups counted: {futile}")
    peer.close()
    wait_gone(qt)


on_futex_doorbells_the_receive_thread_reads_a_ring_it_is_woken_for.props += \
    ",ici-rx-thread=on"


def a_chip_without_its_receive_thread_agrees_to_no_futex_doorbells(qt):
    """ici-rx-thread=off: the chip's HELLO offers no futex doorbells and
    its READY agrees to none; the ring runs on doorbell bytes."""
    qt.enable()
    peer = Peer("ring", futex=True)
    check(not peer.chip_hello_flags & C["TSR_ICI_HELLO_FUTEX"],
          f"the chip's HELLO flags {peer.chip_hello_flags}")
    check(not peer.futex, "no futex doorbells")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    check(transport(qt) == C["TSR_ICI_TRANSPORT_RING"], "on the ring")
    peer.close()


test(a_chip_without_its_receive_thread_agrees_to_no_futex_doorbells)
a_chip_without_its_receive_thread_agrees_to_no_futex_doorbells.props += \
    ",ici-rx-thread=off"


def ici_links(qt):
    return qt.qom_get("ici-links")


def wait_links(qt, want):
    qt.wait(f"ici-links '{want}'", lambda: ici_links(qt) == want)


@test
def ici_links_names_a_trained_peer_by_coordinates_and_port(qt):
    qt.enable()
    check(ici_links(qt) == "0:disconnected", f"no peer: {ici_links(qt)}")
    peer = Peer()
    wait_links(qt, "0:training")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    wait_links(qt, "0:up:1,0,0:1")
    peer.close()
    wait_links(qt, "0:disconnected:1,0,0:1")


@test
def ici_links_names_whom_a_miswired_or_foreign_peer_claims_to_be(qt):
    qt.enable()
    peer = Peer()
    wait_links(qt, "0:training")
    peer.send(frame(C["TSR_ICI_FRAME_TRAIN"], train_payload(port=0)))
    wait_links(qt, "0:miswired:1,0,0:0")
    peer.close()
    wait_gone(qt)
    peer = Peer()
    wait_state(qt, C["TSR_ICI_STATE_TRAINING"])
    peer.send(frame(C["TSR_ICI_FRAME_TRAIN"],
                    train_payload(slice_id=SLICE + 2, coords=(1, 0, 0))))
    wait_links(qt, f"0:foreign:1,0,0:1:{SLICE + 2}")
    peer.close()


@test
def ici_links_is_read_only(qt):
    reply = qt.qmp_cmd("qom-set", path="/machine/peripheral/tsr0",
                       property="ici-links", value="0:up")
    check("error" in reply, f"qom-set of a read-only property: {reply}")
