# SPDX-License-Identifier: MIT
"""The host's side of a guest command: the client of a guest's agent
(tools/guest/init) that tools/tessera-slice runs every host's commands
with and tools/tessera-vm --reload its own, and the forwarding of this
program's standard input to a command, both tools' way.
Documentation/slices.md, "The guest agent"."""

import base64
import contextlib
import os
import re
import secrets
import socket
import sys
import threading
import time

# Between "are you there?"s to a guest agent that has not answered yet.
AGENT_PING_S = 0.5


# How a command runs through a guest's agent, as srun runs a task: in a
# session of its own (a process group that a forwarded signal reaches
# whole), its standard input from a FIFO that a reader of the agent's
# port fills with what the host sends meanwhile, one line each:
#   base64 lines   standard input; a line "." ends it
#   !SIG N         signal N to the command's process group
#   !DONE          the host saw the command's end: the reader stops
# (as tools/tessera-vm forwards a command's input, base64 then ".").  The
# agent's subshell keeps the port open on fd 3 and its output on it.  A
# host that went away missed the end: a signal or an empty line (the next
# client's "are you there?") brings the end again.
EXEC_SCRIPT = """\
d=/tmp/tessera-exec.{nonce}
mkdir "$d" && mkfifo "$d/in" || exit 125
cat > "$d/cmd" << 'TESSERA-EXEC-{nonce}'
{line}
TESSERA-EXEC-{nonce}
ended() {{
	[ -f "$d/status" ] && echo "TESSERA-EXEC-END {nonce} $(cat "$d/status")" >&3
}}
(
	trap '' PIPE
	while read -r l <&3; do
		case $l in
		'!DONE') break ;;
		'!SIG '*) ended || kill -"${{l#!SIG }}" -"$(cat "$d/pid")" ;;
		'') ended ;;
		.) exec >&- ;;
		*) echo "$l" ;;
		esac
	done | base64 -d > "$d/in"
) &
setsid sh -c 'echo $$ > "$1"; exec sh "$2"' sh "$d/pid" "$d/cmd" < "$d/in"
s=$?
echo "$s" > "$d/status"
echo "TESSERA-EXEC-END {nonce} $s"
wait
rm -rf "$d"
exit $s
"""


EXEC_END = re.compile(rb"TESSERA-EXEC-END \w+ \d+\n")
EXEC_END_MAX = 64


class Agent:
    """A client of one guest's agent (tools/guest/init): runs one command
    line at a time in the guest and gives back its output and status."""

    READY = b"TESSERA-AGENT-READY\n"

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except BaseException:
            self.sock.close()
            raise
        # Input and signals come from other threads, whole lines each.
        self.send_lock = threading.Lock()
        # The command has ended: nothing more is sent to it.
        self.ended = False

    def close(self):
        self.sock.close()

    def recv(self):
        data = self.sock.recv(65536)
        if not data:
            raise OSError("the VM went away (its agent's socket closed)")
        return data

    def wait_ready(self, timeout):
        """Asks "are you there?" until the agent answers: bytes sent
        before the guest opened its port are lost."""
        deadline = time.monotonic() + timeout
        got = b""
        while self.READY not in got:
            if time.monotonic() >= deadline:
                raise OSError(f"the guest's agent did not answer in "
                              f"{timeout:g} s")
            # Until the guest reads its port, QEMU leaves the pings in the
            # socket, which then fills: a ping that cannot go yet is not
            # an agent that went away.
            self.sock.settimeout(AGENT_PING_S)
            try:
                self.sock.sendall(b"\n")
                got = got[-EXEC_END_MAX:] + self.recv()
            except socket.timeout:
                continue
            # The end of a command whose exec went away: the agent is
            # free once told that it was seen.
            if EXEC_END.search(got):
                self.sock.sendall(b"!DONE\n")
                got = b""
        self.sock.settimeout(None)

    def run(self, line, on_line, on_sent=None):
        """Runs LINE; ON_LINE gets each line of its output (bytes, with
        stdout and stderr as the guest interleaved them); ON_SENT() once
        LINE is on its way; returns its exit status."""
        nonce = secrets.token_hex(8)
        self.sock.sendall(f"RUN {nonce} ".encode()
                          + base64.b64encode(line.encode()) + b"\n")
        if on_sent:
            on_sent()
        begin = f"TESSERA-AGENT-BEGIN {nonce}\n".encode()
        end = re.compile(rb"TESSERA-AGENT-END " + nonce.encode()
                         + rb" (\d+)\n")
        got = b""
        while begin not in got:
            got = got[-len(begin):] + self.recv()
        got = got[got.index(begin) + len(begin):]
        while True:
            m = end.search(got)
            if m:
                *lines, last = got[:m.start()].split(b"\n")
                for out in lines + ([last] if last else []):
                    on_line(out)
                return int(m.group(1))
            # Whole lines now; the rest may be the start of the marker.
            *lines, got = got.split(b"\n")
            for out in lines:
                on_line(out)
            got += self.recv()

    def session(self, line, on_line, on_sent):
        """Runs LINE as EXEC_SCRIPT does: its input what send() gives it
        from ON_SENT() on, signals what signal() sends; as run()."""
        nonce = secrets.token_hex(8)
        end = f"TESSERA-EXEC-END {nonce} ".encode()
        self.ended = False

        def out(data):
            at = data.find(end)
            if at < 0:
                on_line(data)
                return
            if at:
                # Output whose last line had no newline: the end's
                # marker follows it on the same line.
                on_line(data[:at])
            with self.send_lock:
                self.ended = True
                self.sock.sendall(b"!DONE\n")

        return self.run(EXEC_SCRIPT.format(nonce=nonce, line=line), out,
                        on_sent)

    def send(self, data):
        """Whole lines to the running command, unless it has ended."""
        with self.send_lock:
            if not self.ended:
                self.sock.sendall(data)

    def signal(self, signum):
        self.send(f"!SIG {signum}\n".encode())


class Commands:
    """The commands of one run on its hosts' agents: this program's
    standard input goes to every one of them (tessera-vm's forward_stdin,
    once each has started), signals to those still running."""

    def __init__(self, hosts, forward_stdin):
        self.forward_stdin = forward_stdin
        self.waiting = {h.id for h in hosts}
        self.agents = {}
        self.lock = threading.Lock()

    def started(self, host, agent):
        """HOST's command has started on AGENT, or (None) never will."""
        with self.lock:
            if host.id not in self.waiting:
                return
            self.waiting.discard(host.id)
            if agent is not None:
                self.agents[host.id] = agent
            last = not self.waiting
        if agent is not None and not self.forward_stdin:
            agent.send(b".\n")
        if last and self.forward_stdin:
            threading.Thread(target=forward_stdin,
                             args=(self.send,), daemon=True).start()

    def send(self, data):
        for agent in list(self.agents.values()):
            try:
                agent.send(data)
            except OSError:
                pass                    # that VM went away

    def signal(self, signum, host_ids=None):
        """SIGNUM to the commands (of HOST_IDS); the hosts it reached."""
        reached = []
        for hid, agent in list(self.agents.items()):
            if host_ids is None or hid in host_ids:
                try:
                    agent.signal(signum)
                    reached.append(hid)
                except OSError:
                    pass
        return reached


class KillSocket:
    """While an exec runs on a kept slice's host: where 'tessera-slice
    kill' asks it to forward a signal (the agent serves one client)."""

    def __init__(self, path, host, commands):
        self.path = path
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)             # one left by an exec killed -9
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen()
        threading.Thread(target=self.serve, args=(host, commands),
                         daemon=True).start()

    def serve(self, host, commands):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return                  # closed: the command has ended
            with conn:
                try:
                    signum = int(conn.recv(64).strip())
                    sent = commands.signal(signum, [host.id])
                    conn.sendall(b"sent\n" if sent else b"ended\n")
                except (OSError, ValueError):
                    pass

    def close(self):
        self.sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def forward_stdin(send):
    """This program's standard input to a guest command's, given to SEND
    (tessera-vm: the output port's input; tessera-slice: the agent) in
    base64 lines ending with a line "." (see tools/guest/init), whole
    lines each time.  A terminal is not forwarded: the command's input is
    then empty."""
    try:
        src = sys.stdin.fileno()
        forward = not os.isatty(src)
    except (AttributeError, ValueError, OSError):
        forward = False
    pending = b""
    try:
        while forward:
            data = os.read(src, 65536)
            if not data:
                break
            pending += data
            whole = len(pending) - len(pending) % 3
            text = base64.b64encode(pending[:whole])
            pending = pending[whole:]
            send(b"".join(text[i:i + 76] + b"\n"
                          for i in range(0, len(text), 76)))
        if pending:
            send(base64.b64encode(pending) + b"\n")
        send(b".\n")
    except OSError:
        pass        # the VM has ended
