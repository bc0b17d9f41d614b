# SPDX-License-Identifier: BSD-3-Clause
"""Where flowcop's threads run (issue 13): every thread that does not poll runs on EAL's control
CPUs, never on a polling lcore's CPU.

usage: test_threads.py build/app/flowcop

flowcop runs with every kind of helper thread it has (the events writer, the exporter's HTTP
threads, housekeeping, the flowgen generator, DPDK's telemetry, interrupt and multi-process threads)
and the affinity of each of its threads is read from /proc/PID/task/*/status (Cpus_allowed_list).
With -l N on a machine with more CPUs, the polling thread alone has CPU N, and no other thread may
share it; with -l 0,1 on two CPUs (no CPU left free) the helpers share the main lcore's, as EAL's own
control threads do. Needs two CPUs in the test's own affinity (skipped otherwise).
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest.checks import check, run_tests, wait_until  # noqa: E402
from flowcoptest.exposition import scrape  # noqa: E402
from flowcoptest.process import DEMO_PCAP, Flowcop, temp_dir  # noqa: E402

EXE = sys.argv[1]
TMP = temp_dir(prefix="flowcop-threads-")
CPUS = sorted(os.sched_getaffinity(0))
FLOWGEN = "flows=1000,lifetime=1,pps=20000,realtime=1,seed=3"


def cpu_list(text):
    """'0-2,5' -> {0, 1, 2, 5}"""
    out = set()
    for part in text.strip().split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def threads(pid):
    """{tid: (comm, cpus)} of every thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                cpus = next(cpu_list(l.split(":", 1)[1]) for l in f if l.startswith("Cpus_allowed_list:"))
        except (OSError, StopIteration):
            continue  # a thread that ended while we looked
        out[int(tid)] = (comm, cpus)
    return out


def start(name, lcore):
    events = os.path.join(TMP, name + ".jsonl")
    fc = Flowcop(EXE, DEMO_PCAP, ["--metrics-addr", "127.0.0.1:0", "--events", events, "--flowgen", FLOWGEN],
                 name, lcores=str(lcore))
    # A scrape has run on an HTTP thread and the writer has written: every helper is up.
    wait_until(lambda: scrape(fc.url) and os.path.exists(events) and os.path.getsize(events) > 0, 30,
               "a scrape and the first events")
    return fc


def helpers_off_lcore(lcore):
    with start(f"threads{lcore}", lcore) as fc:
        ts = threads(fc.proc.pid)
        fc.stop()
    polling = ts.pop(fc.proc.pid)
    check(polling[1] == {lcore}, f"the main lcore's thread runs on CPU {lcore} alone: {polling}")
    check(len(ts) >= 5, f"flowcop has its helper threads (writer, HTTP, housekeeping, flowgen, EAL): {ts}")
    bad = {t: v for t, v in ts.items() if lcore in v[1]}
    check(not bad, f"with CPUs {CPUS} and -l {lcore}, no helper thread may run on CPU {lcore}: {bad}")
    names = {c for c, _ in ts.values()}
    for want in ("flowcop-keeper",):
        check(want in names, f"a thread named {want} exists: {sorted(names)}")


def test_helpers_avoid_lcore_0():
    helpers_off_lcore(0)


def test_helpers_avoid_lcore_1():
    helpers_off_lcore(1)


if len(CPUS) < 2 or CPUS[:2] != [0, 1]:
    print(f"SKIP: needs CPUs 0 and 1 in the test's affinity (has {CPUS})")
    sys.exit(77)
run_tests([test_helpers_avoid_lcore_0, test_helpers_avoid_lcore_1])
