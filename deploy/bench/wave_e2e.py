# SPDX-License-Identifier: BSD-3-Clause
"""A correlated wave through the whole service: flowcop + flowgen, default budgets (issue 6 part 5).

build/app/flowcop runs with its synthetic traffic port (--flowgen, drivers/net/flowgen/flowgen.md) and --clock
packet, so virtual time follows the generated timestamps and 40 virtual seconds take a few real ones:
  flows    F established flows (no closes, no idles, lifetimes far beyond the run);
  wave     at virtual second W, N of them send one last segment within that second and go silent;
  timeout  --tcp-timeout-established T, so the N come due together at about W + T.
The default budgets apply (128 fires, 16x visits per pass, the next pass 1 ms of virtual time after
a pass the budget stopped). This script scrapes /metrics every --poll seconds and, between the last
scrape before the first expiry and the first scrape after the N-th, reports: cop passes, passes that
hit the budget, the pass-duration histogram (real time, measured by the worker with the TSC), the
timeout-lag histogram, and the port's RX counters. flowgen's port back-pressures its generator
instead of dropping (drivers/net/flowgen/flowgen.md), so rx_missed is 0 by construction here: what a NIC would
miss is derived in tests/benchmarks.md from the measured pass times and the RX ring size.
    /usr/bin/python3 deploy/bench/wave_e2e.py --build build-bench
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# A tool run by hand (not by meson): it finds the tests' package (tests/common) itself.
sys.path.insert(0, os.path.join(REPO, "tests", "common"))
from flowcoptest import exposition  # noqa: E402


def scrape(port):
    """flowcop's /metrics as {series text: value}, through the tests' one parser (flowcoptest.exposition)."""
    return exposition.by_series(exposition.scrape("http://127.0.0.1:%d/metrics" % port, timeout=10))


def total(m, prefix):
    return sum(v for k, v in m.items() if k.startswith(prefix + "{") or k == prefix)


def buckets(m, family):
    """[(le, cumulative count)] of a histogram family summed over its series, le ascending."""
    out = {}
    for k, v in m.items():
        if k.startswith(family + "_bucket{"):
            le = k.split('le="', 1)[1].split('"', 1)[0]
            out[le] = out.get(le, 0) + v
    return sorted(out.items(), key=lambda kv: float("inf") if kv[0] == "+Inf" else float(kv[0]))


def diff_hist(before, after, family):
    b = dict(buckets(before, family))
    prev, rows = 0.0, []
    for le, cum in buckets(after, family):
        c = cum - b.get(le, 0.0)
        rows.append((le, c - prev))
        prev = c
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build-rel"))
    ap.add_argument("--flows", type=int, default=1020000)
    ap.add_argument("--wave", type=int, default=1000000)
    ap.add_argument("--wave-at", type=int, default=15, help="virtual second of the wave")
    ap.add_argument("--timeout", type=int, default=10, help="--tcp-timeout-established, seconds")
    ap.add_argument("--duration", type=int, default=42,
                    help="virtual seconds generated: past the wave's expiry (wave-at + timeout) by more than the drain "
                         "(10^6 / 128 fires per ms = 7.8 s), since under --clock packet the cop only moves with packets")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--poll", type=float, default=0.05)
    ap.add_argument("--port", type=int, default=19931)
    ap.add_argument("--huge-dir", default=None,
                    help="EAL memory from this hugetlbfs mount (production's layout; see tests/benchmarks.md); "
                         "default --no-huge")
    a = ap.parse_args(argv)
    pps = max(2 * a.wave, 2 * a.flows)
    prefix = "wave_e2e_%d" % os.getpid()
    fg = ("flows=%d,pps=%d,lifetime=1000000,lifetime_dist=fixed,idle_pct=0,rst_pct=0,wave=%d:%d,duration=%d,seed=7"
          % (a.flows, pps, a.wave_at, a.wave, a.duration))
    capacity = 1 << (int(a.flows * 1.25) - 1).bit_length()
    pages = ["--huge-dir", a.huge_dir, "--huge-unlink"] if a.huge_dir else ["--no-huge"]  # unlink: freed at exit
    cmd = [os.path.join(os.path.abspath(a.build), "app", "flowcop")] + pages + ["-m", "1024", "--no-pci",
           "--file-prefix=" + prefix, "-l", str(a.cpu), "--", "--clock", "packet", "--flowgen", fg,
           "--tcp-timeout-established", str(a.timeout), "--flows-per-lcore", str(capacity),
           "--metrics-addr", "127.0.0.1:%d" % a.port, "--stop-when-idle-ms", "1500"]
    print("== correlated wave end to end: %d of %d flows due together, default budgets ==" % (a.wave, a.flows))
    print("date %s UTC; command:\n  %s" % (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), " ".join(cmd)), flush=True)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    before = after = None
    t_first = t_done = None
    try:
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                m = scrape(a.port)
            except OSError:
                time.sleep(a.poll)
                continue
            fired = total(m, "flowcop_inactivity_cop_fired_total")
            if fired == 0:
                before = m
            elif t_first is None:
                t_first = time.monotonic()
            if fired >= a.wave and after is None:
                after, t_done = m, time.monotonic()
            time.sleep(a.poll)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
        shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)
    print(out.strip())
    if before is None or after is None:
        sys.exit("the wave was not seen completing (before=%s after=%s); see the output above"
                 % (before is not None, after is not None))
    d = {k: total(after, k) - total(before, k) for k in (
        "flowcop_inactivity_cop_passes_total", "flowcop_inactivity_cop_budget_exhausted_total",
        "flowcop_inactivity_cop_fired_total", "flowcop_inactivity_cop_visited_total",
        "flowcop_port_rx_packets_total", "flowcop_port_rx_missed_total")}
    print("\nbetween the last scrape before the first expiry and the first after expiry %d:" % a.wave)
    for k, v in d.items():
        print("  %-48s %12.0f" % (k, v))
    print("  real time between those scrapes: %.2f s (first expiry seen to last: %.2f s)"
          % (t_done - t_first + a.poll, t_done - t_first))
    print("  cop pass duration (real time), passes per bucket:")
    for le, c in diff_hist(before, after, "flowcop_inactivity_cop_pass_duration_seconds"):
        if c:
            print("    <= %-8s %8.0f" % (le, c))
    print("  timeout lag (fire time - deadline, virtual time), flows per bucket:")
    for le, c in diff_hist(before, after, "flowcop_timeout_lag_seconds"):
        if c:
            print("    <= %-8s %8.0f" % (le, c))
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
