#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""cluster.py: a Slurm cluster of this one machine, for tests and trials.

Starts MUNGE (its own key and socket), slurmctld and slurmd, as this
user's children, from a configuration generated in a folder of their own
(free ports, this machine as the one node, a partition that lets tasks
share its CPUs); waits until sinfo shows the node idle; runs COMMAND with
SLURM_CONF pointing at it (salloc, sbatch, srun then use this cluster);
then cancels what is left of its jobs, stops the daemons, removes the
folder and checks that no process of the cluster is left.  Installs the
Debian packages first (tools/tessera-deps --slurm) if they are missing.

Usage: tests/slurm/cluster.py [--keep-logs DIR] [--nodes N] -- COMMAND...
       python: with cluster.Cluster() as c: subprocess.run(..., env=c.env)

Debian's Slurm has no multiple-slurmd: "several machines" are several
tasks on the one node here (tools/tessera-slice gives each its own ports).
With --nodes N they are N nodes instead, n0 to nN-1, each a slurmd in a
network and UTS namespace of its own (its own host name, loopback and
address, 10.231.X.10+i on a bridge whose 10.231.X.1 is slurmctld's), so
that nothing a task does may depend on sharing this machine's loopback:
what it reaches of another node, it reaches at that node's NodeAddr.
The namespaces and the bridge go with the cluster.
Exit status: COMMAND's; 1 if the cluster did not start or left a process
behind (named on stderr); 2 bad arguments.
"""

import argparse
import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.realpath(__file__))))
DEPS = os.path.join(REPO, "tools", "tessera-deps")
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "srun", "sinfo",
           "ip")
# How long the daemons may take to start, and to stop.
START_S = 60
STOP_S = 20
# A cancelled job's tasks get SIGTERM, then SIGKILL this much later
# (Slurm's default): time for a slice's task to stop its VM on a loaded
# machine.  The fixture waits that long and a little more for them.
KILL_WAIT_S = 30
# Between looks at a state that has no event to wait on (sinfo, squeue).
POLL_S = 0.1
PR_SET_PDEATHSIG = 1


class ClusterError(Exception):
    pass


class Interrupted(Exception):
    """SIGTERM or SIGHUP, as KeyboardInterrupt is SIGINT: the cluster is
    stopped on the way out."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupted(signum, frame):
    raise Interrupted(signum)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    """Child side: a daemon stops when the fixture dies, however."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def memory_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024 * 4 // 5
    return 1024


def install():
    """The Debian packages, through tools/tessera-deps, if any is missing."""
    if all(shutil.which(d) or os.path.exists(f"/usr/sbin/{d}")
           for d in DAEMONS):
        return
    r = subprocess.run([DEPS, "--slurm"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode:
        raise ClusterError("tools/tessera-deps --slurm failed:\n" + r.stdout)


def ip(*args):
    """iproute2; the error output on failure."""
    r = subprocess.run(["ip", *args], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    return r.stderr.strip() if r.returncode else None


class Network:
    """N network namespaces, each with its loopback and an address on a
    bridge of this machine's (10.231.X.0/24, X a subnet nothing here uses
    yet), the bridge's own address their way to this machine."""

    def __init__(self, count):
        self.count = count
        self.x = None
        self.namespaces = []
        self.addresses = []
        self.gateway = None
        self.bridge = None

    def free_subnet(self):
        used = subprocess.run(["ip", "-4", "-o", "addr"], text=True,
                              stdout=subprocess.PIPE).stdout
        names = subprocess.run(["ip", "netns", "list"], text=True,
                               stdout=subprocess.PIPE).stdout
        for k in range(256):
            x = (os.getpid() + k) % 200 + 20
            if f" 10.231.{x}." not in used and f"tessera-{x}-" not in names:
                return x
        raise ClusterError("no free subnet 10.231.X.0/24 for the nodes")

    def make(self):
        self.x = x = self.free_subnet()
        self.bridge = f"tsrbr{x}"
        self.gateway = f"10.231.{x}.1"
        for err in (ip("link", "add", self.bridge, "type", "bridge"),
                    ip("addr", "add", f"{self.gateway}/24", "dev",
                       self.bridge),
                    ip("link", "set", self.bridge, "up")):
            if err:
                raise ClusterError(f"the nodes' bridge {self.bridge}: {err}")
        for i in range(self.count):
            ns, addr = f"tessera-{x}-{i}", f"10.231.{x}.{10 + i}"
            host, inside = f"tsr{x}h{i}", f"tsr{x}n{i}"
            err = ip("netns", "add", ns)
            if not err:
                self.namespaces.append(ns)
            for step in (("link", "add", host, "type", "veth", "peer",
                          "name", inside),
                         ("link", "set", inside, "netns", ns),
                         ("link", "set", host, "master", self.bridge, "up"),
                         ("-n", ns, "link", "set", inside, "name", "eth0"),
                         ("-n", ns, "addr", "add", f"{addr}/24", "dev",
                          "eth0"),
                         ("-n", ns, "link", "set", "eth0", "up"),
                         ("-n", ns, "link", "set", "lo", "up"),
                         ("-n", ns, "route", "add", "default", "via",
                          self.gateway)):
                err = err or ip(*step)
            if err:
                raise ClusterError(f"node n{i}'s namespace {ns}: {err}")
            self.addresses.append(addr)

    def remove(self):
        """Removes the namespaces and the bridge (a namespace's end of its
        link goes with it, the other end with it); what could not be."""
        left = []
        for ns in self.namespaces:
            err = ip("netns", "del", ns)
            if err:
                left.append(f"namespace {ns}: {err}")
        if self.bridge and ip("link", "show", self.bridge) is None:
            err = ip("link", "del", self.bridge)
            if err:
                left.append(f"bridge {self.bridge}: {err}")
        self.namespaces = []
        return left


class Cluster:
    """One slurmctld, one slurmd (with NODES, one a node) and their
    munged, in a folder of their own; .env is the environment that points
    Slurm's commands at them."""

    def __init__(self, keep_logs=None, nodes=0):
        self.keep_logs = keep_logs
        self.dir = None
        self.procs = {}
        self.node = socket.gethostname().split(".")[0]
        self.env = None
        self.conf = None
        # 0: this machine is the one node; N: N nodes in namespaces.
        self.nodes = nodes
        self.net = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        left = self.stop()
        if left and exc[0] is None:
            raise ClusterError("left behind: " + "; ".join(left))

    def path(self, name):
        return os.path.join(self.dir, name)

    def node_names(self):
        return [f"n{i}" for i in range(self.nodes)] or [self.node]

    def write_config(self):
        d = self.dir
        for sub in ("state", "spool"):
            os.mkdir(self.path(sub))
        open(self.path("plugstack.conf"), "w").close()
        if self.nodes:
            ctld = f"{self.node}({self.net.gateway})"
            spool, pid, log = "spool/%n", "slurmd-%n.pid", "slurmd-%n.log"
            nodes = "\n".join(
                f"NodeName={name} NodeAddr={addr} CPUs={os.cpu_count() or 1} "
                f"RealMemory={memory_mib() // self.nodes} State=UNKNOWN"
                for name, addr in zip(self.node_names(), self.net.addresses))
            for name in self.node_names():
                os.mkdir(self.path(f"spool/{name}"))
        else:
            ctld, spool, pid, log = (self.node, "spool", "slurmd.pid",
                                     "slurmd.log")
            nodes = (f"NodeName={self.node} CPUs={os.cpu_count() or 1} "
                     f"RealMemory={memory_mib()} State=UNKNOWN")
        conf = f"""\
ClusterName=tessera
SlurmctldHost={ctld}
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser={pwd.getpwuid(os.getuid()).pw_name}
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.sock
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/{spool}
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/{pid}
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/{log}
# The system's SPANK plugins are not this cluster's.
PlugStackConfig={d}/plugstack.conf
# No cgroups, no systemd: processes tracked by their parents.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
# A job's tasks get SIGTERM, then SIGKILL this much later.
KillWait={KILL_WAIT_S}
{nodes}
# Tasks share the CPUs: a slice's VMs mostly wait on each other.
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""
        self.conf = self.path("slurm.conf")
        with open(self.conf, "w") as f:
            f.write(conf)
        self.env = dict(os.environ, SLURM_CONF=self.conf)

    def spawn(self, name, cmd):
        """A daemon in the foreground, its output in NAME.out."""
        with open(self.path(f"{name}.out"), "wb") as out:
            self.procs[name] = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, env=self.env, cwd=self.dir,
                preexec_fn=die_with_parent)

    def start(self):
        install()
        # Its own folder, readable by all (munged wants its socket's folder
        # searchable), and the key made there, owned by this user.
        self.dir = tempfile.mkdtemp(prefix="tessera-slurm.")
        os.chmod(self.dir, 0o755)
        if self.nodes:
            self.net = Network(self.nodes)
            self.net.make()
        self.write_config()
        subprocess.run(["mungekey", "--create", "--keyfile",
                        self.path("munge.key")], check=True,
                       stdout=subprocess.DEVNULL)
        self.spawn("munged", [
            "munged", "--foreground", "--force",
            f"--socket={self.path('munge.sock')}",
            f"--key-file={self.path('munge.key')}",
            f"--pid-file={self.path('munged.pid')}",
            f"--log-file={self.path('munged.log')}",
            f"--seed-file={self.path('munged.seed')}"])
        self.wait_for(lambda: os.path.exists(self.path("munge.sock")),
                      "munged's socket")
        # An absolute configuration path: the daemons change directory.
        self.spawn("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        if not self.nodes:
            self.spawn("slurmd", ["slurmd", "-D", "-f", self.conf])
        for name, ns in zip(self.node_names(), self.net.namespaces
                            if self.net else ()):
            # Its own host name, which slurmd takes for its node's; its
            # network entered, not `ip netns exec`, which mounts a /sys
            # of its own without the cgroup file system slurmd wants.
            self.spawn(f"slurmd-{name}", [
                "nsenter", f"--net=/run/netns/{ns}", "unshare", "--uts",
                "sh", "-c", 'hostname "$0" && exec slurmd -D -f "$1"',
                name, self.conf])
        nodes = ",".join(self.node_names())
        self.wait_for(self.idle, f"node {nodes} idle in sinfo")

    def idle(self):
        r = subprocess.run(["sinfo", "-h", "-N", "-n",
                            ",".join(self.node_names()), "-o", "%T"],
                           env=self.env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True)
        states = r.stdout.split()
        return (r.returncode == 0 and len(states) == len(self.node_names())
                and set(states) == {"idle"})

    def wait_for(self, ready, what, timeout=START_S):
        deadline = time.monotonic() + timeout
        while not ready():
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                why = (f"{dead[0]} exited with status "
                       f"{self.procs[dead[0]].returncode}" if dead else
                       f"not within {timeout} s")
                raise ClusterError(f"waiting for {what}: {why}\n"
                                   + self.logs_tail())
            time.sleep(POLL_S)

    def logs_tail(self):
        text = []
        for name in ("munged.out", "slurmctld.out", "slurmd.out",
                     *(f"slurmd-{n}.out" for n in self.node_names())):
            try:
                with open(self.path(name), errors="replace") as f:
                    lines = f.read().splitlines()[-8:]
            except OSError:
                continue
            text += [f"  {name}: {line}" for line in lines]
        return "\n".join(text)

    def jobs(self):
        r = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        return r.stdout.split() if r.returncode == 0 else []

    def cancel_jobs(self):
        """Cancels every job and waits until none is left: their tasks
        have had SIGTERM, and SIGKILL KILL_WAIT_S later."""
        jobs = self.jobs()
        if not jobs:
            return
        subprocess.run(["scancel", *jobs], env=self.env,
                       stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + KILL_WAIT_S + STOP_S
        while self.jobs() and time.monotonic() < deadline:
            time.sleep(POLL_S)

    def stop(self):
        """Stops everything; returns what was left behind (processes of
        the cluster: its daemons, job steps and tasks), which it then
        kills, so that none of it outlives the cluster."""
        if self.dir is None:
            return []
        if self.procs.get("slurmctld") and \
                self.procs["slurmctld"].poll() is None:
            self.cancel_jobs()
        # slurmd first (it ends its steps), munged last (they need it).
        for name in ("slurmd", *(f"slurmd-{n}" for n in self.node_names()),
                     "slurmctld", "munged"):
            p = self.procs.get(name)
            if p is None:
                continue
            p.terminate()
            try:
                p.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        left = self.leftovers()
        for pid, _ in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.keep_logs:
            os.makedirs(self.keep_logs, exist_ok=True)
            for name in os.listdir(self.dir):
                if name.endswith((".log", ".out", ".conf")):
                    shutil.copy(self.path(name), self.keep_logs)
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None
        gone = [f"pid {pid}: {cmd}" for pid, cmd in left]
        if self.net:
            gone += self.net.remove()
            self.net = None
        return gone

    def leftovers(self):
        """Processes started with this cluster's configuration in their
        environment (slurmstepd, tasks) or on their command line, as
        (pid, command line)."""
        mark = self.conf.encode()
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            if int(pid) == os.getpid():
                continue
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = f.read()
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
                with open(f"/proc/{pid}/stat") as f:
                    zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
            except OSError:
                continue
            if not zombie and (mark in env or self.dir.encode() in cmd):
                left.append((int(pid), cmd.replace(b"\0", b" ").decode(
                    errors="replace")))
        return left


def main():
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[1:]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keep-logs", metavar="DIR",
                   help="copy the daemons' logs and slurm.conf to DIR")
    p.add_argument("--nodes", type=int, default=0, metavar="N",
                   help="N nodes, each in network and UTS namespaces of "
                   "its own (default: this machine as the one node)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    if a.command[:1] == ["--"]:
        a.command = a.command[1:]
    if not a.command:
        p.error("no command: tests/slurm/cluster.py -- COMMAND...")
    if not 0 <= a.nodes <= 16:
        p.error(f"--nodes: 0 to 16, not {a.nodes}")
    c = Cluster(a.keep_logs, a.nodes)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupted)
    try:
        c.start()
        status = subprocess.call(a.command, env=c.env)
    except ClusterError as e:
        print(f"cluster.py: {e}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        status = 128 + signal.SIGINT
    except Interrupted as e:
        print(f"cluster.py: {e}: cancelling the jobs, stopping the cluster",
              file=sys.stderr)
        status = 128 + e.signum
    finally:
        # A second signal must not stop the stopping half-way.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        left = c.stop()
    if left:
        print("cluster.py: left behind:\n  " + "\n  ".join(left),
              file=sys.stderr)
        return status or 1
    return status


if __name__ == "__main__":
    sys.exit(main())
