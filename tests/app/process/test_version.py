# SPDX-License-Identifier: BSD-3-Clause
"""Version and process metrics (issue 13): `flowcop --version` / `-V` answered before EAL starts, the
version in the startup line, flowcop_build_info{version,commit,dpdk}, and the process families
Prometheus clients conventionally export (process_start_time_seconds, process_resident_memory_bytes,
...), each checked against what /proc says.

usage: test_version.py build/app/flowcop
"""
import os
import re
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest.checks import check, run_tests  # noqa: E402
from flowcoptest.exposition import Scrape  # noqa: E402
from flowcoptest.process import DEMO_PCAP, REPO, Flowcop  # noqa: E402

EXE = sys.argv[1]
LINE = re.compile(r"^flowcop (\d+\.\d+\.\d+) \(commit (\S+), DPDK (\d+\.\d+\.\d+)(?:, built with \S+)?\)$")


def project_version():
    with open(os.path.join(REPO, "meson.build")) as f:
        return re.search(r"version:\s*'([^']+)'", f.read()).group(1)


def dpdk_version():
    p = subprocess.run(["pkg-config", "--modversion", "libdpdk"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else None


def test_version_is_answered_without_eal():
    for argv in (["--version"], ["-V"], ["--no-huge", "-m", "64", "--", "--version"], ["--", "-V", "--bogus"]):
        t0 = time.monotonic()
        # Not root-only and no hugepages: EAL never starts, so this works for anyone.
        p = subprocess.run([EXE] + argv, capture_output=True, text=True, timeout=30)
        check(p.returncode == 0 and p.stderr == "", f"{argv}: exit {p.returncode}, stderr {p.stderr!r}")
        lines = p.stdout.splitlines()
        check(len(lines) == 1, f"{argv}: one line, got {p.stdout!r}")
        m = LINE.match(lines[0])
        check(m, f"{argv}: 'flowcop X.Y.Z (commit C, DPDK A.B.C)', got {lines[0]!r}")
        check(m.group(1) == project_version(), f"the version is meson's project version: {m.group(1)}")
        if dpdk_version():
            check(m.group(3) == dpdk_version(), f"DPDK {m.group(3)} is the installed {dpdk_version()}")
        check(time.monotonic() - t0 < 10, "answered at once")


def proc_start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        start = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/stat") as f:
        btime = next(int(l.split()[1]) for l in f if l.startswith("btime "))
    return btime + start / os.sysconf("SC_CLK_TCK")


def vm_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))


def test_build_info_and_process_metrics():
    with Flowcop(EXE, DEMO_PCAP, ["--metrics-addr", "127.0.0.1:0"], "version") as fc:
        s = Scrape(fc.url)
        rss = vm_rss(fc.proc.pid)
        start = proc_start_time(fc.proc.pid)
        fc.stop()
    first = fc.stderr.splitlines()[0]
    line = subprocess.run([EXE, "--version"], capture_output=True, text=True).stdout.strip()
    check(first.startswith(line + ": "), f"the startup line starts with the version: {first!r}")
    m = LINE.match(line)
    check(s.value("flowcop_build_info", version=m.group(1), commit=m.group(2), dpdk=m.group(3)) == 1,
          f"flowcop_build_info{{version={m.group(1)},commit={m.group(2)},dpdk={m.group(3)}}} 1")
    check(s.types.get("flowcop_build_info") == "gauge", "flowcop_build_info is a gauge")
    got = s.value("process_start_time_seconds")
    check(abs(got - start) < 0.05, f"process_start_time_seconds {got} is the process's start {start}")
    check(time.time() - 600 < got < time.time(), "and it is a Unix time")
    got = s.value("process_resident_memory_bytes")
    check(0.5 * rss < got < 2 * rss, f"process_resident_memory_bytes {got} is about VmRSS {rss}")
    for name, kind in (("process_start_time_seconds", "gauge"), ("process_resident_memory_bytes", "gauge"),
                       ("process_virtual_memory_bytes", "gauge"), ("process_cpu_seconds_total", "counter"),
                       ("process_open_fds", "gauge"), ("process_max_fds", "gauge")):
        check(s.types.get(name) == kind, f"{name} is a {kind}")
    check(s.value("process_open_fds") > 3 and s.value("process_cpu_seconds_total") > 0, "plausible values")


run_tests([test_version_is_answered_without_eal, test_build_info_and_process_metrics])
