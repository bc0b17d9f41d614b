# SPDX-License-Identifier: BSD-3-Clause
"""RX loss during live timeout changes (/flowcop/set) on a table of 10^6 flows, measured (issue 13).

flowcop runs on its synthetic port (--flowgen, drivers/net/flowgen/flowgen.md) with realtime=1 and
overflow=drop: the generator thread paces frames to wall time and drops (and counts) those that find
the port's RX ring (--ring, default 1024 entries) full, as a NIC drops on a full descriptor ring, so
an lcore that stops polling for longer than the ring lasts shows it in flowcop_port_rx_missed_total.
The polling lcore runs on --lcore-cpu; the generator thread runs on DPDK's control CPUs, which on a
2-CPU machine are the other one (app/service/control/control_cpus.h), so the two never share a core.
flowcop runs at --nice (default -20: on a shared machine, ahead of builds at nice 5); each window
also reports the lcore's CPU share, so that a window in which the host took the core is visible.

  capacity     flowgen unpaced (realtime=0, back-pressure): the port's packet rate once --flows
               flows are established, i.e. what the lcore (or the generator, if slower) sustains.
  steady       a fresh flowcop, paced at --load x that rate (or --pps), with the same flows; the
               windows start once flowcop holds 95% of them and --settle-s seconds have passed.
  windows      --pairs pairs of --window-s windows per run: in each pair one window starts with a
               live change of tcp_timeout_established and the other with nothing; the order alternates
               from pair to pair. The changes alternate between a shortened timeout (--short, then
               half of it, ...: the rebase sweep moves every flow to an earlier wheel bucket) and the
               default (lengthened: a scan that moves nothing). Per window: rx and rx_missed deltas,
               flows re-armed and moved, the lcore's CPU share. The summary splits the windows into
               those whose sweep moved the flows, those whose change moved none, and the quiet ones.
               Not covered: the cop's later visit of the moved flows when their new bucket comes due
               (the correlated wave of tests/benchmarks.md part 5), after the run.
  baseline     (--baseline-build B) each run is followed by the same run of B's flowcop (e.g. the
               commit before a change to the sweep), so that both meet the same host.
  sensitivity  the method must see loss when there is some: the baseline before the rebase step was
               bounded (2048 records a step) loses frames in its change windows at 6 Mpps, and
               (--overload X) a run paced at X times the capacity misses frames in every window.

Each run prints its windows with the load average; the summary gives, per kind of window, the median
and the maximum missed frames over all runs. Results: JSON in --out.
    /usr/bin/python3 deploy/bench/live_set_loss.py --build build-rel --pps 6000000 --baseline-build build-before
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dpdk_probe  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_ESTABLISHED_S = 432000  # --tcp-timeout-established's default (5 days, netfilter's)


def sh(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def provenance(build):
    try:
        opts = json.loads(sh(["meson", "introspect", "--buildoptions", build]))
        buildtype = next(o["value"] for o in opts if o["name"] == "buildtype")
    except (subprocess.CalledProcessError, StopIteration, FileNotFoundError):
        buildtype = "unknown"
    return {"commit": sh(["git", "-C", REPO, "rev-parse", "--short=12", "HEAD"]),
            "dirty": bool(sh(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"])),
            "buildtype": buildtype,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpus": os.cpu_count()}


def flowgen_keys(a, pps, paced):
    keys = ("flows=%d,lifetime=1000000,lifetime_dist=fixed,idle_pct=0,rst_pct=0,pps=%d,ring=%d,seed=7"
            % (a.flows, pps, a.ring))
    return keys + (",realtime=1,overflow=drop" if paced else "")


class Flowcop:
    """One flowcop process on the flowgen port, with a telemetry connection."""

    def __init__(self, a, pps, paced, tag, build=None):
        self.prefix = "live_set_loss_%d_%s" % (os.getpid(), tag)
        pages = ["--huge-dir", a.huge_dir, "--huge-unlink"] if a.huge_dir else ["--no-huge"]
        capacity = 1 << (int(a.flows * 1.25) - 1).bit_length()
        self.cmd = ["nice", "-n", str(a.nice), os.path.join(os.path.abspath(build or a.build), "app", "flowcop")] + pages + [
            "-m", str(a.memory_mb), "--no-pci", "--file-prefix=" + self.prefix, "-l", str(a.lcore_cpu),
            "--log-level=*:error", "--", "--flowgen", flowgen_keys(a, pps, paced),
            "--flows-per-lcore", str(capacity), "--metrics-addr", "none", "--quiet"]
        # A session of its own: the kernel's autogroup scheduling shares CPU between sessions first and
        # applies nice only within one, so flowcop's --nice counts only if its session's group has it too.
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True)
        try:
            with open("/proc/%d/autogroup" % self.proc.pid, "w") as f:
                f.write(str(a.nice))
        except OSError:  # no autogroup scheduling here: --nice alone applies
            pass
        self.tel = dpdk_probe.connect_when_ready(self.prefix, self.proc, time.monotonic() + 60)
        if self.tel is None:
            self.stop()
            sys.exit("flowcop did not start: %s\n%s" % (" ".join(self.cmd), self.proc.stderr.read()[-2000:]))
        if paced and a.generator_fifo:
            self.generator_realtime(a.generator_fifo)

    def generator_realtime(self, priority):
        """SCHED_FIFO for the paced generator thread (comm "flowgen"): a NIC delivers frames at the wire's
        pace whatever the host runs, but a generator preempted on the shared control CPU (telemetry, this
        script, builds) catches up in one burst larger than the ring, a loss that is the generator's, not
        flowcop's. Paced, it sleeps between bursts, so the priority takes little from the control CPU."""
        deadline = time.monotonic() + 30  # the port starts after telemetry answers
        while True:
            tids = []
            for tid in os.listdir("/proc/%d/task" % self.proc.pid):
                try:
                    with open("/proc/%d/task/%s/comm" % (self.proc.pid, tid)) as f:
                        if f.read().strip() == "flowgen":
                            tids.append(int(tid))
                except OSError:
                    pass
            if tids or time.monotonic() > deadline or self.proc.poll() is not None:
                break
            time.sleep(0.1)
        if len(tids) != 1:
            self.stop()
            sys.exit("--generator-fifo: expected one thread named flowgen in flowcop, found %d" % len(tids))
        try:
            os.sched_setscheduler(tids[0], os.SCHED_FIFO, os.sched_param(priority))
        except OSError as e:
            self.stop()
            sys.exit("--generator-fifo %d: cannot make the generator thread SCHED_FIFO (%s); run as root or with "
                     "--generator-fifo 0" % (priority, e))

    def stats(self):
        """(rx, missed, flows active, flows rebased, flows moved, monotonic time after the reply)."""
        s = self.tel.query("/flowcop/stats").get("/flowcop/stats")
        if not isinstance(s, dict) or "port_rx_packets" not in s:
            return None
        return (s["port_rx_packets"][0], s["port_rx_missed"][0], s["flows_active"], s["flows_rebased"],
                s["flows_rebase_moved"], time.monotonic())

    def set(self, name, value):
        reply = self.tel.query("/flowcop/set,%s,%d" % (name, value)).get("/flowcop/set")
        if not isinstance(reply, dict) or "error" in reply:
            sys.exit("/flowcop/set,%s,%d failed: %s" % (name, value, reply))

    def wait_flows(self, flows, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            s = self.stats()
            if s is not None and s[2] >= 0.95 * flows:
                return s
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        self.stop()
        sys.exit("flowcop did not reach %d flows within %d s (last stats %s)" % (0.95 * flows, timeout_s, s))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if getattr(self, "tel", None) is not None:
            self.tel.close()
        shutil.rmtree(dpdk_probe.telemetry_path(self.prefix).rsplit("/", 1)[0], ignore_errors=True)


def measure_capacity(a):
    fc = Flowcop(a, 10 * a.flows, False, "cap")  # pps only sets the timeline; unpaced, the port runs flat out
    try:
        fc.wait_flows(a.flows, a.start_timeout_s)
        time.sleep(a.settle_s)
        b = fc.stats()
        time.sleep(a.capacity_s)
        e = fc.stats()
    finally:
        fc.stop()
    return (e[0] - b[0]) / (e[5] - b[5])


def window(fc, change):
    """One window: change (None or (name, value)) at its start, then --window-s; returns its deltas and
    the polling lcore's CPU share (the main thread: 1.0 = it had its core throughout)."""
    b = fc.stats()
    cpu_b = dpdk_probe.thread_cpu_ns(fc.proc.pid, fc.proc.pid)
    load = dpdk_probe.load_average()[0]
    if change is not None:
        fc.set(*change)
    time.sleep(window.seconds)
    e = fc.stats()
    cpu_e = dpdk_probe.thread_cpu_ns(fc.proc.pid, fc.proc.pid)
    return {"change": None if change is None else "%s=%d" % change, "rx": e[0] - b[0], "missed": e[1] - b[1],
            "rebased": e[3] - b[3], "moved": e[4] - b[4], "seconds": round(e[5] - b[5], 3), "load1": load,
            "lcore_cpu_share": round((cpu_e - cpu_b) / 1e9 / (e[5] - b[5]), 3)}


def changes(a, pps):
    """The --pairs changes of one run: shortened, default, shortened, ... Each shortened value is half the
    one before, so that every shortening moves every flow (extending is free, app/service/dataplane/worker.h: a
    flow stays in the earlier bucket a previous shortening gave it, and only a deadline earlier still
    moves it), down to 4 data-turn intervals (flows / pps seconds; no flow may expire)."""
    if a.control_only:
        return [("timeout_budget", 128)] * a.pairs  # the default again: no rebase, only the control plane's work
    floor = max(1, int(4 * a.flows / pps) + 1)
    out, short = [], a.short
    for p in range(a.pairs):
        if p % 2 == 0:
            out.append(("tcp_timeout_established", short))
            short = max(floor, short // 2)
        else:
            out.append(("tcp_timeout_established", DEFAULT_ESTABLISHED_S))
    return out


def run(a, pps, tag, build=None):
    """One flowcop run of --pairs window pairs; returns its windows."""
    fc = Flowcop(a, pps, True, tag, build)
    rows = []
    try:
        fc.wait_flows(a.flows, a.start_timeout_s)
        time.sleep(a.settle_s)
        for name, value in a.set:
            fc.set(name, value)
        for p, change in enumerate(changes(a, pps)):
            for kind in ((change, None) if p % 2 == 0 else (None, change)):
                r = window(fc, kind)
                rows.append(r)
                print("  %-8s %-34s rx %9d  missed %8d  rebased %8d  moved %8d  %.2f s  lcore cpu %.2f  load %.2f" % (
                    tag, r["change"] or "(no change)", r["rx"], r["missed"], r["rebased"], r["moved"],
                    r["seconds"], r["lcore_cpu_share"], r["load1"]), flush=True)
    finally:
        fc.stop()
    return rows


def summary(name, rows, flows):
    """Missed frames per kind of window: shortened (the sweep moved 90% of the flows or more),
    scans (a change that moved less: lengthened, or a shortening that found nothing to move), quiet;
    windows in which the host took the lcore's core for more than 1 - --min-lcore-cpu of the time are
    left out of all three (their loss is the host's) and counted apart."""
    kept = lambda r: r["lcore_cpu_share"] >= summary.min_cpu  # noqa: E731
    kinds = (("shortened, flows moved", lambda r: kept(r) and r["change"] and r["moved"] >= 0.9 * flows),
             ("changed, nothing moved", lambda r: kept(r) and r["change"] and r["moved"] < 0.9 * flows),
             ("no change", lambda r: kept(r) and not r["change"]),
             ("left out: lcore preempted", lambda r: not kept(r)))
    out = {"name": name}
    print(name)
    for kind, pick in kinds:
        m = [r["missed"] for r in rows if pick(r)]
        cpu = [r["lcore_cpu_share"] for r in rows if pick(r)]
        if not m:
            continue
        print("  %-24s windows %3d  missed median %8.0f  max %8d  total %9d  lcore cpu median %.2f" % (
            kind, len(m), statistics.median(m), max(m), sum(m), statistics.median(cpu)))
        out[kind] = {"windows": len(m), "missed_median": statistics.median(m), "missed_max": max(m),
                     "missed_total": sum(m), "lcore_cpu_median": statistics.median(cpu)}
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build-rel"))
    ap.add_argument("--flows", type=int, default=1000000)
    ap.add_argument("--ring", type=int, default=1024, help="the port's RX ring entries (a NIC's descriptors)")
    ap.add_argument("--pps", type=int, default=0, help="pace at this rate instead of --load x the measured capacity")
    ap.add_argument("--load", type=float, default=0.6, help="the paced rate as a fraction of the measured capacity")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=6, help="window pairs (one with a change, one without) per run")
    ap.add_argument("--window-s", type=float, default=0.5,
                    help="long enough for a sweep (the rebased count shows it ended inside), short enough that the "
                         "host's preemptions of the lcore (the quiet windows' loss) do not drown it")
    ap.add_argument("--settle-s", type=float, default=5.0)
    ap.add_argument("--capacity-s", type=float, default=5.0)
    ap.add_argument("--capacity-pps", type=float, default=0, help="skip the capacity phase: this rate, measured before")
    ap.add_argument("--start-timeout-s", type=int, default=180)
    ap.add_argument("--short", type=int, default=24,
                    help="the first shortened tcp_timeout_established, seconds (halved at each shortening): below the "
                         "SYN-time deadline (60-120 s) at which a new flow sits in the wheel, so that every flow moves")
    ap.add_argument("--control-only", action="store_true",
                    help="change windows set timeout_budget to its default instead: /flowcop/set's control-plane cost "
                         "without a rebase sweep (a control for the timeout changes)")
    ap.add_argument("--set", action="append", default=[], type=lambda kv: (kv.split("=")[0], int(kv.split("=")[1])),
                    metavar="NAME=N", help="a /flowcop/set applied before the windows (e.g. visit_budget_factor=2)")
    ap.add_argument("--min-lcore-cpu", type=float, default=0.95,
                    help="windows where the lcore had its core less than this share of the time are left out")
    ap.add_argument("--baseline-build", default="", help="also run this build's flowcop after each run")
    ap.add_argument("--overload", type=float, default=0, help="also a run paced at this multiple of capacity")
    ap.add_argument("--generator-fifo", type=int, default=10, metavar="PRIO",
                    help="paced runs: the generator thread's SCHED_FIFO priority (0: leave it at flowcop's nice), so "
                         "that its catch-up bursts after a preemption do not count as flowcop's loss")
    ap.add_argument("--lcore-cpu", type=int, default=1)
    ap.add_argument("--nice", type=int, default=-20,
                    help="flowcop's niceness (all its threads): the machine is shared, and builds run at nice 5")
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--huge-dir", default="/dev/hugepages", help="EAL memory from this hugetlbfs mount; '' for --no-huge")
    ap.add_argument("--out", default="live_set_loss.json")
    a = ap.parse_args(argv)
    window.seconds = a.window_s
    summary.min_cpu = a.min_lcore_cpu
    prov = provenance(a.build)
    prov["load_at_start"] = dpdk_probe.load_average()
    print("== live /flowcop/set on %d flows: RX loss measured (ring %d, lcore CPU %d, generator on the other) ==" % (
        a.flows, a.ring, a.lcore_cpu))
    print("commit %s%s, buildtype %s, %s, load %s" % (prov["commit"], "-dirty" if prov["dirty"] else "",
                                                     prov["buildtype"], prov["date_utc"], prov["load_at_start"]))
    capacity = a.capacity_pps or measure_capacity(a)
    pps = a.pps or int(a.load * capacity)
    print("capacity (unpaced, back-pressure, %d flows): %.0f pps; paced at %d pps (%.0f%%), load %s" % (
        a.flows, capacity, pps, 100.0 * pps / capacity, dpdk_probe.load_average()), flush=True)
    res = {"provenance": prov, "settings": vars(a), "capacity_pps": capacity, "pps": pps, "runs": [], "summary": []}
    rows, base_rows = [], []
    for i in range(a.runs):
        r = run(a, pps, "run%d" % i)
        res["runs"].append({"kind": "build", "pps": pps, "windows": r})
        rows += r
        if a.baseline_build:
            r = run(a, pps, "base%d" % i, a.baseline_build)
            res["runs"].append({"kind": "baseline", "pps": pps, "windows": r})
            base_rows += r
    print()
    res["summary"].append(summary("%s (%d pps)" % (a.build, pps), rows, a.flows))
    if a.baseline_build:
        res["summary"].append(summary("baseline %s (%d pps)" % (a.baseline_build, pps), base_rows, a.flows))
    if a.overload:
        over = int(a.overload * capacity)
        r = run(a, over, "overload")
        res["runs"].append({"kind": "overload", "pps": over, "windows": r})
        res["summary"].append(summary("overload (%d pps)" % over, r, a.flows))
    prov["load_at_end"] = dpdk_probe.load_average()
    print("load at end %s" % (prov["load_at_end"],))
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
