# SPDX-License-Identifier: GPL-2.0
"""The chip's ICI port over TCP (Documentation/ici.md, "Ports over TCP").

QEMU runs chip (0) of a 2-chip slice, its port 0 (+x) serving TCP on
127.0.0.1.  Against the test peer of tessera_ici_peer.py: the chip offers
no shared-memory ring over TCP, refuses one offered to it, and trains on
the socket.  Against a second QEMU, chip (1), whose port 1 reconnects to
the first: the link trains over TCP; through a proxy that cuts the
connection, the link comes back by itself, never down, and each end
counts the reconnect (ici-reconnects).  Run by tessera_qtest.py as the
"ici-tcp" suite.
"""

import socket
import threading

from tessera_harness import C, Qtest, check
from tessera_ici_peer import (SLICE, HELLO, Peer, counter, port_reg, state,
                              wait_state)

TESTS = []
LOCALHOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((LOCALHOST, 0))
        return s.getsockname()[1]


def test(fn):
    """A test of chip (0) serving port 0 on a TCP port of its own, which
    the test gets as its second argument."""
    port = free_port()

    def run(qt):
        fn(qt, port)

    run.__name__ = fn.__name__
    # This peer answers no keepalive probe: the chip sends none.
    run.props = (f"slice-id={SLICE},slice-dims=2,coords=0,ici0=p0,"
                 "x-ici-keepalive-ms=0")
    run.args = ("-chardev", f"socket,id=p0,host={LOCALHOST},port={port},"
                "server=on,wait=off")
    TESTS.append(run)
    return run


def transport(qt):
    return port_reg(qt, C["TSR_IREG_TRANSPORT"])


def chip1(port):
    """A second QEMU with chip (1), its port 1 reconnecting to PORT."""
    return Qtest(f"slice-id={SLICE},slice-dims=2,coords=1,ici1=p1,"
                 "x-ici-keepalive-ms=0",
                 ("-chardev", f"socket,id=p1,host={LOCALHOST},port={port},"
                  "reconnect-ms=50"))


def port1_state(qt):
    """Port 1's state (TSR_ICI_PORT_BASE(1))."""
    return qt.reg(C["TSR_BLOCK_ICI"] + 0x200 + C["TSR_IREG_STATE"])


@test
def a_tcp_port_offers_no_ring_and_trains_on_the_socket(qt, port):
    qt.enable()
    peer = Peer(chip_offers=False, address=(LOCALHOST, port))
    check(not peer.ring_ready, "the chip mapped a ring over TCP")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    check(transport(qt) == C["TSR_ICI_TRANSPORT_SOCKET"],
          f"transport {transport(qt)}")
    peer.close()


@test
def a_ring_offered_over_tcp_is_refused(qt, port):
    qt.enable()
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    magic, _, flags, _, _ = HELLO.unpack(peer.read_exact(HELLO.size))
    check(magic == C["TSR_ICI_HELLO_MAGIC"] and
          not flags & C["TSR_ICI_HELLO_RING"], f"the chip's HELLO {flags}")
    # A ring offered and said to be mapped, with no descriptor (none
    # crosses TCP): the chip must not take it.
    peer.hello(C["TSR_ICI_HELLO_MAGIC"], C["TSR_ICI_HELLO_RING"],
               C["TSR_ICI_RING_MIN"])
    peer.hello(C["TSR_ICI_READY_MAGIC"], C["TSR_ICI_HELLO_RING"])
    magic, _, flags, _, _ = HELLO.unpack(peer.read_exact(HELLO.size))
    check(magic == C["TSR_ICI_READY_MAGIC"] and
          not flags & C["TSR_ICI_HELLO_RING"], f"the chip's READY {flags}")
    peer.train()
    wait_state(qt, C["TSR_ICI_STATE_UP"])
    check(transport(qt) == C["TSR_ICI_TRANSPORT_SOCKET"],
          f"transport {transport(qt)}")
    peer.close()


def both_up(a, b):
    return (state(a) == C["TSR_ICI_STATE_UP"] and
            port1_state(b) == C["TSR_ICI_STATE_UP"])


@test
def two_chips_in_two_qemus_train_over_tcp(qt, port):
    qt.enable()
    other = chip1(port)
    try:
        other.enable()
        qt.wait("both ends up", lambda: both_up(qt, other))
        check(transport(qt) == C["TSR_ICI_TRANSPORT_SOCKET"],
              f"transport {transport(qt)}")
        check(port_reg(qt, C["TSR_IREG_PEER"]) == (1 | 1 << 24),
              "peer coords")
    finally:
        other.close()


class Proxy:
    """A TCP relay between chip (1) and chip (0) that can cut the
    connection, as a network does: both ends see it close."""

    def __init__(self, target):
        self.target = target
        self.listener = socket.create_server((LOCALHOST, 0))
        self.port = self.listener.getsockname()[1]
        self.pairs = []
        self.accepted = 0
        self.lock = threading.Lock()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                a, _ = self.listener.accept()
            except OSError:
                return
            b = socket.create_connection((LOCALHOST, self.target))
            with self.lock:
                self.pairs.append((a, b))
                self.accepted += 1
            for src, dst in ((a, b), (b, a)):
                threading.Thread(target=self.pump, args=(src, dst),
                                 daemon=True).start()

    @staticmethod
    def pump(src, dst):
        try:
            for data in iter(lambda: src.recv(65536), b""):
                dst.sendall(data)
        except OSError:
            pass

    def cut(self):
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.listener.close()
        self.cut()


@test
def a_lost_tcp_connection_comes_back_counted_and_never_down(qt, port):
    qt.enable()
    proxy = Proxy(port)
    other = chip1(proxy.port)
    try:
        other.enable()
        qt.wait("both ends up", lambda: both_up(qt, other))
        proxy.cut()
        qt.wait("the connection back", lambda: proxy.accepted == 2)
        qt.wait("both ends up again", lambda: both_up(qt, other))
        check(qt.qom_get("ici-reconnects") == "0:1",
              f"chip 0: {qt.qom_get('ici-reconnects')}")
        check(other.qmp_cmd("qom-get", path="/machine/peripheral/tsr0",
                            property="ici-reconnects")["return"] == "1:1",
              "chip 1's reconnects")
        check(counter(qt, "LINK_DOWNS") == 0, "chip 0's link went down")
        check(counter(qt, "PROTOCOL_ERRORS") == 0, "protocol errors")
    finally:
        other.close()
        proxy.close()
