# SPDX-License-Identifier: MIT
"""slice_slurm: what tools/tessera-slice --slurm takes from Slurm.

A slice's hosts are the tasks of one Slurm job step: the task's rank
(SLURM_PROCID) is the host id, as TPU_WORKER_ID is on a TPU slice; the
step's node list and tasks per node say on which machine each host runs,
and each node's NodeAddr where that machine is reached, so where each
link's serving end listens.  tessera-slice --slurm starts
the step (srun_command()) from inside an allocation; each task, run as
tessera-slice --slurm-task, reads its place (task_place()).
Documentation/slices.md, "Slices on a cluster".
"""

import os
import re
import subprocess

# What srun is asked for: one task per host, in rank order on the nodes
# (block: ranks 0..k-1 on the first node, and so on), the step ended when
# a task fails, and a Ctrl-C passed on to every task at once (which stops
# its VM), not taken for a request of the tasks' states.
SRUN_OPTIONS = ("--kill-on-bad-exit=1", "--distribution=block",
                "--disable-status")
# The ports a slice's links listen on by default: a span of its own for
# each job step, from the job and step ids.
PORT_FIRST = 20000
PORT_LAST = 59999
# What a task prints when its host's command fails (tessera-slice's
# report()): the first one names the job's status.
FAILED_LINE = re.compile(
    rb"^tessera-slice: host(\d+) \(chips [\d,]+\) exited with status (\d+)")


class SlurmError(Exception):
    """Slurm's environment is not what a slice's task needs; the text says
    what to do."""


def in_allocation(env=os.environ):
    return "SLURM_JOB_ID" in env


def srun_command(hosts, task_argv):
    """The srun line that runs TASK_ARGV (tessera-slice --slurm-task ...)
    as HOSTS tasks, one per host of the slice."""
    return ["srun", f"--ntasks={hosts}", *SRUN_OPTIONS, *task_argv]


def tasks_per_node(text):
    """SLURM_STEP_TASKS_PER_NODE ('2(x3),1') as a list ([2, 2, 2, 1])."""
    counts = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part)
        if not m:
            raise SlurmError(f"SLURM_STEP_TASKS_PER_NODE '{text}' is not "
                             "N or N(xM) joined by ','")
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    return counts


def hostnames(nodelist, env=os.environ):
    """A Slurm node list ('n[1-3],m') as names, by scontrol."""
    r = subprocess.run(["scontrol", "show", "hostnames", nodelist], env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode:
        raise SlurmError(f"scontrol show hostnames '{nodelist}': "
                         f"{r.stderr.strip()}")
    return r.stdout.split()


def parse_node_addresses(text):
    """{node name: NodeAddr} from scontrol -o show node's lines."""
    found = {}
    for line in text.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "NodeName" in fields:
            found[fields["NodeName"]] = fields.get("NodeAddr") or \
                fields["NodeName"]
    return found


def node_addresses(nodes, env=os.environ):
    """Where each of NODES is reached: its NodeAddr in the cluster's
    configuration (the node's name unless slurm.conf gives another
    address, as a cluster whose node names are not in the DNS does), by
    scontrol."""
    found = {}
    # One at a time: scontrol answers nothing for a list with one unknown.
    for node in sorted(set(nodes)):
        r = subprocess.run(["scontrol", "-o", "show", "node", node],
                           env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        addr = parse_node_addresses(r.stdout).get(node)
        if r.returncode or not addr:
            raise SlurmError(f"scontrol show node {node}: "
                             f"{r.stderr.strip() or 'no such node'}")
        found[node] = addr
    return [found[n] for n in nodes]


def step_value(env, name):
    value = env.get(f"SLURM_STEP_{name}") or env.get(f"SLURM_{name}")
    if value is None:
        raise SlurmError(f"SLURM_STEP_{name} is not set: run as a task of "
                         "srun (tessera-slice --slurm does that)")
    return value


def task_place(hosts, env=os.environ, names=hostnames):
    """(host id, [node of each host]) of this task of a step of HOSTS
    tasks, block-distributed as srun_command() asks."""
    if "SLURM_PROCID" not in env:
        raise SlurmError("SLURM_PROCID is not set: --slurm-task runs as a "
                         "task of srun (tessera-slice --slurm does that)")
    ntasks = int(step_value(env, "NUM_TASKS"))
    if ntasks != hosts:
        raise SlurmError(f"the step has {ntasks} tasks and the slice "
                         f"{hosts} hosts: srun --ntasks={hosts}")
    nodes = names(step_value(env, "NODELIST"), env)
    counts = tasks_per_node(step_value(env, "TASKS_PER_NODE"))
    if len(counts) != len(nodes) or sum(counts) != hosts:
        raise SlurmError(f"{len(nodes)} nodes with {counts} tasks do not "
                         f"hold {hosts} tasks")
    node_of = [n for n, c in zip(nodes, counts) for _ in range(c)]
    host = int(env["SLURM_PROCID"])
    here = env.get("SLURMD_NODENAME")
    if here and node_of[host] != here:
        raise SlurmError(f"task {host} runs on {here}, not {node_of[host]}: "
                         "the step must be block-distributed "
                         "(srun --distribution=block)")
    return host, node_of


def link_port(env, span):
    """The first TCP port of a step's links, SPAN of them: a span of the
    job and step ids' own, so that steps side by side on a node differ."""
    key = int(env.get("SLURM_JOB_ID", 0)) * 16 + \
        int(env.get("SLURM_STEP_ID", 0)) % 16
    slots = (PORT_LAST - PORT_FIRST + 1) // span
    if not slots:
        raise SlurmError(f"{span} links need --link-port")
    return PORT_FIRST + key % slots * span


def slice_id(env=os.environ):
    """A slice's default id under Slurm: its job's, unique in the cluster."""
    return int(env["SLURM_JOB_ID"]) & 0xffffffff
