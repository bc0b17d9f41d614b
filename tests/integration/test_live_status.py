#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The one-line live status (app/service/control/status.h): on a terminal, flowcop rewrites one stderr
line every second with pps, flows active, expiries/s, cop visits/s and budget hits; with --quiet,
or when stderr is not a terminal, it prints none. The summary always starts on a line of its own.

Usage: test_live_status.py FLOWCOP_EXE TMPDIR

Traffic: the flowgen port paced to wall time (realtime=1), so every second has packets, flows
and expiries to show. The terminal is a pseudo-terminal this test reads (stdlib pty).
"""

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))

from flowcoptest import harness  # noqa: E402
from flowcoptest.checks import Fail  # noqa: E402
from flowcoptest.telemetry import telemetry  # noqa: E402

LIVE = re.compile(r"\r\x1b\[K(\d+) pps \| (\d+) flows \| (\d+) expiries/s \| (\d+) cop visits/s \| budget hits (\d+)")
FLOWGEN = "flows=200,lifetime=1,pps=20000,realtime=1,seed=7"
OPTS = ["--flowgen", FLOWGEN, "--tick-ms", "10", "--check-interval-ms", "10", "--metrics-addr", "none",
        "--flows-per-lcore", "4096", "--tcp-timeout-time-wait", "1", "--tcp-timeout-close", "1"]
RUN_S = 3.5
READY_S = 60  # the longest wait for a start-up (a fixed 8.5 s flaked under load)


def ready(out, prefix, quiet):
    """Whether flowcop runs: its startup config line, printed once its signal handlers are in place
    and the ports started; with --quiet (no such line), /flowcop/stats over telemetry showing packets
    read, so the workers run."""
    if not quiet:
        return b"flowcop: config:" in out
    path = os.path.join(harness.runtime_dir(prefix), "dpdk_telemetry.v2")
    try:
        stats = telemetry(path, "/flowcop/stats", timeout=1)
    except (OSError, ValueError, Fail):
        return False
    return isinstance(stats, dict) and stats.get("rx_packets", 0) > 0


def run_on_tty(exe, extra):
    """Runs flowcop with stderr on a pty for RUN_S seconds from the moment it is ready (ready()),
    waiting at most READY_S for that: EAL's start-up takes seconds under sanitizers or load, and the
    live line only begins once the workers run. Returns (exit code, all it wrote, seconds to ready
    or None)."""
    master, slave = pty.openpty()
    eal = harness.eal_args([], "0")
    prefix = next(a.split("=", 1)[1] for a in eal if a.startswith("--file-prefix="))
    cmd = [exe] + eal + ["--"] + OPTS + extra
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out = b""
    t0 = time.monotonic()
    ready_after, stop_at, deadline = None, t0 + READY_S, t0 + READY_S + RUN_S + 30
    next_probe = t0
    stopped = False
    try:
        while time.monotonic() < deadline:
            now = time.monotonic()
            if ready_after is None and now >= next_probe and p.poll() is None:
                next_probe = now + 0.2
                if ready(out, prefix, "--quiet" in extra):
                    ready_after, stop_at = now - t0, now + RUN_S
            if not stopped and time.monotonic() >= stop_at:
                p.send_signal(signal.SIGINT)
                stopped = True
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the child closed its side
                    break
                if not chunk:
                    break
                out += chunk
            elif p.poll() is not None and stopped:
                break
        rc = p.wait(timeout=max(0.1, deadline - time.monotonic()))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
        harness.remove_runtime_dir(cmd)
    return rc, out.decode(errors="replace").replace("\r\n", "\n"), ready_after


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()

    rc, text, after = run_on_tty(exe, [])
    tap.ok(after is not None, "on a terminal: flowcop printed its config line within %d s (%s s)" % (READY_S, after))
    tap.eq(rc, 0, "on a terminal: flowcop exits 0 after SIGINT")
    lines = [tuple(int(g) for g in m.groups()) for m in LIVE.finditer(text)]
    tap.ok(2 <= len(lines) <= RUN_S + 1, "on a terminal: one live line a second (%d in %.1f s)" % (len(lines), RUN_S),
           text[-2000:])
    busy = lines[1:] or lines
    tap.ok(all(pps > 0 and flows > 0 for pps, flows, _, _, _ in busy),
           "the live line shows packets per second and flows active", lines)
    tap.ok(any(exp > 0 and visits >= exp for _, _, exp, visits, _ in busy),
           "the live line shows expiries/s, and cop visits/s cover them", lines)
    tail = text[text.rfind("budget hits"):] if lines else ""
    tap.ok(re.search(r"budget hits \d+\n", tail) is not None and "\nflowcop: " in tail,
           "the summary starts on a line of its own after the live line", tail[:400])

    rc, text, after = run_on_tty(exe, ["--quiet"])
    tap.ok(after is not None, "--quiet on a terminal: telemetry showed packets read within %d s (%s s)" % (
        READY_S, after))
    tap.eq(rc, 0, "--quiet on a terminal: flowcop exits 0")
    tap.ok(LIVE.search(text) is None and " pps | " not in text, "--quiet: no live line", text[-1000:])

    res = harness.run(exe, [], OPTS, tmpdir=tmp, stop_after_s=2.5, events=False, timeout=READY_S + 30)
    tap.eq(res.rc, 0, "stderr not a terminal: flowcop exits 0")
    tap.ok(" pps | " not in res.stderr and "\x1b[K" not in res.stderr,
           "stderr not a terminal: no live line (and no escape codes in a log)", res.stderr[-1000:])
    tap.done()


if __name__ == "__main__":
    main()
