#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""nccl_tests_parse: read nccl-tests' output as the scripts around it do.

nccl-tests (github.com/NVIDIA/nccl-tests, src/util.cu: writeResultHeader,
writeBenchmarkLinePreamble, writeBenchmarkLineBody, writeResultFooter)
prints, per run of a *_perf program, '#' lines, then one row per size of
13 fields separated by blanks:

    size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong
                                (out-of-place)           (in-place)

then "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X"
and "# Collective test concluded: NAME".  The scripts people keep beside
it read exactly that: rows are the lines not starting with '#' that split
into 13 fields, the first two integers; the averages are the number after
"Avg bus bandwidth :"; "N/A" stands for a value not there (nccl-tests
prints it in #wrong without -c).  This module does the same, so that
tools/tessera-collbench's output is read by what reads nccl-tests'.

    tests/slice/nccl_tests_parse.py [FILE]    the tables as JSON
    tests/slice/nccl_tests_parse.py --self-test

Exit status 0, 1 if no table was found (or the self-test failed).
"""

import json
import re
import sys

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(-?\d+)"
                 + r"\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)" * 2 + r"\s*$")
STARTING = re.compile(r"^# Collective test starting: (\S+)")
OOB = re.compile(r"^# Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)")
AVG = re.compile(r"^# Avg bus bandwidth\s*:\s*([\d.eE+-]+)")
CONCLUDED = re.compile(r"^# Collective test concluded: (\S+)")


def number(text):
    """A field's value; None for N/A."""
    return None if text == "N/A" else float(text)


def half(fields):
    time, algbw, busbw, wrong = map(number, fields)
    return {"time_us": time, "algbw": algbw, "busbw": busbw, "wrong": wrong}


def parse(text):
    """The tables in TEXT: [{name, rows, out_of_bounds, out_of_bounds_ok,
    avg_busbw, concluded}], rows as {size, count, type, redop, root,
    out_of_place, in_place}."""
    tables, table = [], None
    for line in text.splitlines():
        m = STARTING.match(line)
        if m or (table is None and ROW.match(line)):
            table = {"name": m.group(1) if m else None, "rows": [],
                     "out_of_bounds": None, "avg_busbw": None,
                     "concluded": None}
            tables.append(table)
            if m:
                continue
        m = ROW.match(line)
        if m and not line.startswith("#"):
            g = m.groups()
            table["rows"].append({
                "size": int(g[0]), "count": int(g[1]), "type": g[2],
                "redop": g[3], "root": int(g[4]),
                "out_of_place": half(g[5:9]), "in_place": half(g[9:13])})
        elif table is not None and OOB.match(line):
            m = OOB.match(line)
            table["out_of_bounds"] = int(m.group(1))
            table["out_of_bounds_ok"] = m.group(2) == "OK"
        elif table is not None and AVG.match(line):
            table["avg_busbw"] = float(AVG.match(line).group(1))
        elif table is not None and CONCLUDED.match(line):
            table["concluded"] = CONCLUDED.match(line).group(1)
            table = None
    return tables


# nccl-tests' own layout, printed with its format strings (util.cu) for a
# 2-rank all_reduce_perf of two sizes, for the self-test.
NCCL_SAMPLE = "\n".join([
    "# Collective test starting: all_reduce_perf",
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup "
    "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
    "#",
    "# %10s  %12s  %8s  %6s  %6s           out-of-place                  "
    "     in-place          " % ("", "", "", "", ""),
    "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s "
    % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw",
       "#wrong", "time", "algbw", "busbw", "#wrong"),
    "%12i  %12i  %8s  %6s  %6i  %7s  %6s  %6s  %6g  %7s  %6s  %6s  %6g"
    % (8, 2, "float", "sum", -1, "18.02", "0.00", "0.00", 0, "17.90",
       "0.00", "0.00", 0),
    "%12i  %12i  %8s  %6s  %6i  %7s  %6s  %6s  %6g  %7s  %6s  %6s    N/A"
    % (16, 4, "float", "sum", -1, "17.85", "0.00", "0.00", 0, "17.77",
       "0.00", "0.00"),
    "# %-20s : %d %s" % ("Out of bounds values", 0, "OK"),
    "# %-20s : %g " % ("Avg bus bandwidth", 0.000876),
    "#",
    "# Collective test concluded: all_reduce_perf",
])


def self_test():
    tables = parse(NCCL_SAMPLE)
    ok = (len(tables) == 1 and tables[0]["name"] == "all_reduce_perf"
          and [r["size"] for r in tables[0]["rows"]] == [8, 16]
          and tables[0]["rows"][1]["in_place"]["wrong"] is None
          and tables[0]["out_of_bounds"] == 0
          and tables[0]["avg_busbw"] == 0.000876
          and tables[0]["concluded"] == "all_reduce_perf")
    print(("ok" if ok else "FAILED") + ": nccl-tests' own layout parsed")
    return 0 if ok else 1


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) > 2 or sys.argv[1:2] == ["--help"]:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) if len(sys.argv) == 2 else sys.stdin as f:
        tables = parse(f.read())
    print(json.dumps(tables, indent=1))
    return 0 if tables else 1


if __name__ == "__main__":
    sys.exit(main())
