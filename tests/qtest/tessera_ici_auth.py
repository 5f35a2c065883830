# SPDX-License-Identifier: GPL-2.0
"""The handshake's authentication (Documentation/ici.md, "Authentication").

QEMU runs chip (0) of a 2-chip slice holding the slice's key (a secret
object read from a 0600 file, named by ici-secret), its port 0 serving TCP
on 127.0.0.1.  The test peer of tessera_ici_peer.py with the key trains.
A peer without the key, with another slice's key, one replaying an old
handshake or reflecting the chip's own, and one with a key the chip does
not hold are refused and counted (ici-auth-refused), and what they send
after reaches nothing: the link never sees a byte.  Two QEMUs with the
same key train over TCP; with different keys both refuse.  Run by
tessera_qtest.py as the "ici-auth" suite.
"""

import os

from tessera_harness import C, Qtest, check
from tessera_ici_peer import (AUTH, HELLO, SLICE, SOCK_DIR, Peer, counter,
                              frame, proof, state, train_payload)
from tessera_ici_tcp import LOCALHOST, both_up, free_port

TESTS = []
KEY = os.urandom(32)


def key_file(name, key):
    """@key in a file only its owner reads, as a secret object wants."""
    path = os.path.join(SOCK_DIR, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return path


def secret(name, key):
    return ("-object", f"secret,id={name},file={key_file(name, key)}")


def test(keyed=True):
    """A test of chip (0) serving port 0 on a TCP port of its own, which
    the test gets as its second argument; @keyed: holding KEY."""
    def wrap(fn):
        port = free_port()

        def run(qt):
            fn(qt, port)

        run.__name__ = fn.__name__
        # This peer answers no keepalive probe: the chip sends none.
        run.props = (f"slice-id={SLICE},slice-dims=2,coords=0,ici0=p0,"
                     "x-ici-keepalive-ms=0" +
                     (",ici-secret=key0" if keyed else ""))
        run.args = (("-chardev", f"socket,id=p0,host={LOCALHOST},port={port},"
                     "server=on,wait=off") +
                    (secret("key0", KEY) if keyed else ()))
        TESTS.append(run)
        return run
    return wrap


def refused(qt):
    return int(qt.qom_get("ici-auth-refused").split(":")[1])


def chip_hello(peer):
    """The chip's HELLO and, if it says it has a key, its CHALLENGE's
    nonce: (flags, nonce or None)."""
    _, _, flags, _, _ = HELLO.unpack(peer.read_exact(HELLO.size))
    if not flags & C["TSR_ICI_HELLO_AUTH"]:
        return flags, None
    magic, _, _, nonce, _ = peer.auth()
    check(magic == C["TSR_ICI_CHALLENGE_MAGIC"], f"CHALLENGE {magic:#x}")
    return flags, nonce


def refused_and_nothing_taken(qt, peer, want=1):
    """The chip counts the peer refused and hangs up; a READY and frames
    sent anyway reach no link: it counts no byte, latches no peer."""
    qt.wait("the peer refused", lambda: refused(qt) == want)
    try:
        peer.hello(C["TSR_ICI_READY_MAGIC"])
        peer.send(frame(C["TSR_ICI_FRAME_TRAIN"], train_payload()))
        peer.send(frame(C["TSR_ICI_FRAME_DATA"], b"x" * 64))
    except OSError:
        pass                    # hung up on already
    qt.wait("the chip hangs up", lambda: peer.recv(10) == b"")
    for name in ("FRAMES_RX", "BYTES_RX", "CRC_ERRORS", "PROTOCOL_ERRORS"):
        check(counter(qt, name) == 0, f"{name} {counter(qt, name)}")
    check(state(qt) == C["TSR_ICI_STATE_DISCONNECTED"], f"state {state(qt)}")
    check(qt.qom_get("ici-links") == "0:disconnected",
          f"ici-links {qt.qom_get('ici-links')}")
    peer.close()


@test()
def a_peer_with_the_key_trains(qt, port):
    qt.enable()
    peer = Peer(address=(LOCALHOST, port), key=KEY, chip_offers=False)
    peer.train()
    qt.wait("up", lambda: state(qt) == C["TSR_ICI_STATE_UP"])
    check(qt.qom_get("ici-auth-refused") == "0:0", "refused a peer")
    peer.close()


@test()
def a_peer_without_the_key_is_refused(qt, port):
    qt.enable()
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    chip_hello(peer)
    peer.hello(C["TSR_ICI_HELLO_MAGIC"])
    refused_and_nothing_taken(qt, peer)


@test()
def frames_behind_a_hello_without_the_key_are_dropped(qt, port):
    qt.enable()
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    chip_hello(peer)
    # In one write, so that the chip reads them together: the frames are
    # in its hands when it refuses the HELLO.
    peer.sock.sendall(
        HELLO.pack(C["TSR_ICI_HELLO_MAGIC"], C["TSR_ICI_HELLO_VERSION"], 0,
                   0, 0) +
        HELLO.pack(C["TSR_ICI_READY_MAGIC"], C["TSR_ICI_HELLO_VERSION"], 0,
                   0, 0) +
        frame(C["TSR_ICI_FRAME_TRAIN"], train_payload()) +
        frame(C["TSR_ICI_FRAME_DATA"], b"x" * 64))
    refused_and_nothing_taken(qt, peer)


@test()
def a_peer_that_speaks_frames_at_once_is_refused(qt, port):
    qt.enable()
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    peer.send(frame(C["TSR_ICI_FRAME_TRAIN"], train_payload()))
    refused_and_nothing_taken(qt, peer)


@test()
def a_peer_with_another_slices_key_is_refused(qt, port):
    qt.enable()
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    _, nonce = chip_hello(peer)
    peer.hello(C["TSR_ICI_HELLO_MAGIC"], C["TSR_ICI_HELLO_AUTH"])
    peer.challenge()
    magic = peer.auth()[0]
    check(magic == C["TSR_ICI_PROOF_MAGIC"], "no PROOF from the chip")
    peer.prove(os.urandom(32), nonce)
    refused_and_nothing_taken(qt, peer)


@test()
def a_replayed_handshake_is_refused(qt, port):
    qt.enable()
    # A handshake that held, recorded...
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    _, nonce = chip_hello(peer)
    peer.hello(C["TSR_ICI_HELLO_MAGIC"], C["TSR_ICI_HELLO_AUTH"])
    peer.challenge()
    peer.auth()
    old_nonce = peer.nonce
    peer.prove(KEY, nonce)
    peer.close()
    qt.wait("the first one closed",
            lambda: state(qt) == C["TSR_ICI_STATE_DISCONNECTED"])
    # ...played again: its PROOF answers the old CHALLENGE, not the new.
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    _, new_nonce = chip_hello(peer)
    check(new_nonce != nonce, "the chip's nonce is not fresh")
    peer.hello(C["TSR_ICI_HELLO_MAGIC"], C["TSR_ICI_HELLO_AUTH"])
    peer.challenge(old_nonce)
    peer.sock.sendall(proof(KEY, (1, 0, 0), 1, old_nonce, nonce))
    refused_and_nothing_taken(qt, peer)


@test()
def the_chips_own_handshake_reflected_is_refused(qt, port):
    qt.enable()
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    _, nonce = chip_hello(peer)
    peer.hello(C["TSR_ICI_HELLO_MAGIC"], C["TSR_ICI_HELLO_AUTH"])
    peer.challenge(nonce)       # its own nonce, back
    refused_and_nothing_taken(qt, peer)
    # Its own PROOF, back: it proves the chip, not the peer.
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    chip_hello(peer)
    peer.hello(C["TSR_ICI_HELLO_MAGIC"], C["TSR_ICI_HELLO_AUTH"])
    peer.challenge()
    peer.sock.sendall(AUTH.pack(*peer.auth()))
    refused_and_nothing_taken(qt, peer, 2)


@test(keyed=False)
def a_peer_with_a_key_the_chip_does_not_hold_is_refused(qt, port):
    qt.enable()
    peer = Peer(transport="frames", address=(LOCALHOST, port))
    flags, _ = chip_hello(peer)
    check(not flags & C["TSR_ICI_HELLO_AUTH"], "a chip with no key says so")
    peer.hello(C["TSR_ICI_HELLO_MAGIC"], C["TSR_ICI_HELLO_AUTH"])
    peer.challenge()
    refused_and_nothing_taken(qt, peer)


def chip1(port, key):
    """A second QEMU with chip (1), holding @key, its port 1 reconnecting
    to PORT."""
    return Qtest(f"slice-id={SLICE},slice-dims=2,coords=1,ici1=p1,"
                 "x-ici-keepalive-ms=0,ici-secret=key1",
                 ("-chardev", f"socket,id=p1,host={LOCALHOST},port={port},"
                  "reconnect-ms=50") + secret("key1", key))


@test()
def two_qemus_with_the_slices_key_train_over_tcp(qt, port):
    qt.enable()
    other = chip1(port, KEY)
    try:
        other.enable()
        qt.wait("both ends up", lambda: both_up(qt, other))
        check(qt.qom_get("ici-auth-refused") == "0:0", "refused")
    finally:
        other.close()


@test()
def two_qemus_with_different_keys_refuse_each_other(qt, port):
    qt.enable()
    other = chip1(port, os.urandom(32))
    try:
        other.enable()
        qt.wait("refused", lambda: refused(qt) >= 1)
        other_refused = other.qmp_cmd(
            "qom-get", path="/machine/peripheral/tsr0",
            property="ici-auth-refused")["return"]
        check(other_refused.startswith("1:") and other_refused != "1:0",
              f"chip 1 refused none: {other_refused}")
        check(counter(qt, "FRAMES_RX") == 0, "chip 0 took a frame")
        check(state(qt) == C["TSR_ICI_STATE_DISCONNECTED"],
              f"state {state(qt)}")
    finally:
        other.close()


@test()
def the_key_is_on_no_command_line_and_in_no_property(qt, port):
    qt.enable()
    with open(f"/proc/{qt.proc.pid}/cmdline", "rb") as f:
        check(KEY not in f.read(), "the key on QEMU's command line")
    check(qt.qom_get("ici-secret") == "key0", "ici-secret names the secret")


@test(keyed=False)
def a_missing_or_empty_key_fails_realize(qt, port):
    for props, args, want in (
            ("ici-secret=nosuch", (), "No secret with id 'nosuch'"),
            ("ici-secret=empty", secret("empty", b""), "is empty")):
        other = Qtest(props, args)
        try:
            other.proc.wait(timeout=10)
            check(want in other.stderr(), f"QEMU said {other.stderr()}")
        finally:
            other.close()
