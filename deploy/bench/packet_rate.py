# SPDX-License-Identifier: BSD-3-Clause
"""Packet rate of flowcop (monitor mode) against dpdk-testpmd rxonly and io, and OVS, on the same input.

For each flow count N: one pcap of N established flows (flows_pcap.py: 60-byte PSH|ACK segments,
`passes` rounds in fresh random orders, no handshakes, so flowcop picks flows up loosely), replayed
by DPDK's pcap vdev with infinite_rx=1. Four programs read it, one at a time, each with its polling
lcore on the same CPU and the same mbuf geometry:
  flowcop     build/app/flowcop -l CPU, monitor mode (rx burst of its kBurst, 64 -> parse -> track -> free);
  baseline    the same from another build (--baseline-build: the commit before, built in its own
              worktree), with the same options: the same-run "before" of a change to the packet path;
  mixed       the same flowcop on a mixed capture (--udp-share F: that share of the N flows are UDP
              request/response flows, flows_pcap.py; same frame count and 60-byte size), so its rate
              is read against the TCP-only capture's in the same run;
  udp         the same flowcop on a capture of only UDP request/response flows (flows_pcap.py
              --udp-share 1), with --udp-share: UDP's own rate, to tell its per-packet cost from
              the cost of mixing the two;
  rxonly      dpdk-testpmd -l OTHER,CPU --forward-mode=rxonly (rx burst 32 -> free): the I/O ceiling;
  io          dpdk-testpmd --forward-mode=io (rx burst 32 -> tx to the pcap port's drop queue);
  ovs         Open vSwitch's userspace conntrack with DPDK, one PMD thread on CPU, every IP packet
              through ct(commit) as in a stateful firewall (ovs_peer.py: a private OVS started and
              stopped by the run; needs Debian's openvswitch-switch-dpdk).
Each run: start the program, wait until its port has delivered one whole loop of the capture (so
every flow exists and the infinite_rx preload and start-up are over) and one more second, raise its
priority (--nice, for the window only: the machine is shared), then read the port's rx counter and
the polling thread's CPU time twice, --window seconds apart, through the DPDK telemetry socket and
/proc. The programs run one at a time, in an order rotated per repeat. Mpps = packets / wall
seconds between the two reads; "CPU share" = the polling thread's CPU time / wall time in the same
window (1.0 = it had the core to itself).
flowcop's flow table is then checked (all N flows active, nothing invalid or refused; on the mixed
capture, exactly its UDP flows active as UDP and every UDP packet tracked) before SIGINT.

infinite_rx must hold the whole capture in the program's mbuf pool, and flowcop's default pool
(8191 mbufs for one port on one lcore) cannot: flowcop is given --mbufs (its default pool plus the
mbufs testpmd gets with --total-num-mbufs) and --mbuf-data-room (testpmd's --mbuf-size), so both
have the same mbuf geometry. Results: JSON and a markdown table in the work directory, and the plot
(plot_packet_rate.py) in --plot-dir (default tests/plots). Needs dpdk-testpmd (Debian: dpdk) and,
for the plot, matplotlib (apt-get install python3-matplotlib; run with /usr/bin/python3). Where the
cycles go: profile_packet.py.
    /usr/bin/python3 deploy/bench/packet_rate.py --build build-rel --repeats 3
"""

import argparse
import datetime
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# A tool run by hand (not by meson): it finds the tests' package (tests/common) itself.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests",
                                "common"))
import dpdk_probe  # noqa: E402
import flows_pcap  # noqa: E402
import ovs_peer  # noqa: E402
from flowcoptest import exposition  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TOOLS = ("flowcop", "baseline", "mixed", "udp", "rxonly", "io", "ovs")
FLOWCOPS = ("flowcop", "baseline", "mixed", "udp")  # the flowcop runs: the same options, checks and scrape
FLOWCOP_POOL = 8191          # app/service/options/mbuf_pool.h mbufs_default(1 port, 1 lcore): flowcop's --mbufs auto
TABLE_BYTES_PER_FLOW = 190   # flow_table.h: 173 per flow of capacity (the rte_hash baseline: 128-137); margin


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout.strip()


def provenance(build):
    commit = sh(["git", "-C", REPO, "rev-parse", "HEAD"])
    dirty = sh(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"])
    try:
        opts = json.loads(sh(["meson", "introspect", "--buildoptions", build]))
        buildtype = next(o["value"] for o in opts if o["name"] == "buildtype")
    except (subprocess.CalledProcessError, StopIteration, FileNotFoundError):
        buildtype = "unknown"
    model = next((l for l in sh(["lscpu"]).splitlines() if l.startswith("Model name:")), "Model name: ?")
    return {
        "commit": commit,
        "tracked_files_modified": dirty.splitlines(),
        "buildtype": buildtype,
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "lscpu_model": " ".join(model.split()),
        "cpus": os.cpu_count(),
        "testpmd": sh(["dpkg-query", "-W", "-f", "${Version}", "dpdk"]),
    }


def mbuf_bytes(data_room):
    # mempool object header (16) + struct rte_mbuf (128) + data room, cache-line rounded, plus margin
    return ((16 + 128 + data_room + 63) // 64) * 64 + 64


def flows_capacity(flows):
    # 25% headroom: the rte_hash baseline (before issue 19) refused inserts near capacity; flowcop's own table
    # holds its whole capacity, but both get the same options
    return max(1024, int(math.ceil(flows * 1.25)))


def memory_mb(tool, packets, flows, data_room):
    if tool == "ovs":
        return ovs_peer.memory_mb(packets, data_room)
    pool = packets + (FLOWCOP_POOL if tool in FLOWCOPS else 0) + 8192
    # mbufs, the pool's ring (a power of two of 8-byte slots), 3% for the mempool's page-boundary
    # padding (20M mbufs did not fit in the bare sum), and EAL's own needs
    ring = 8 * (1 << (pool - 1).bit_length())
    b = int(1.03 * pool * mbuf_bytes(data_room)) + ring + 384 * 2**20
    if tool in FLOWCOPS:
        b += flows_capacity(flows) * TABLE_BYTES_PER_FLOW + 128 * 2**20
    return int(math.ceil(b / 2**20))


def command(tool, a, pcap, packets, flows, prefix, metrics_port):
    mem = memory_mb(tool, packets, flows, a.data_room)
    vdev = "--vdev=net_pcap0,rx_pcap=%s,infinite_rx=1" % pcap
    huge_dir = getattr(a, "huge_dir", None)  # profile_packet.py has no such option
    # --huge-unlink: the pages go back to the pool when the program exits (each run has its own
    # --file-prefix, and EAL only clears its own prefix's leftover files at start).
    pages = ["--huge-dir", huge_dir, "--huge-unlink"] if huge_dir else ["--no-huge"]
    eal = pages + ["-m", str(mem), "--no-pci", "--file-prefix=" + prefix, vdev]
    if tool in FLOWCOPS:
        build = a.baseline_build if tool == "baseline" else a.build
        return [os.path.join(build, "app", "flowcop")] + eal + ["-l", str(a.cpu), "--",
                "--mode", "monitor", "--flows-per-lcore", str(flows_capacity(flows)),
                "--mbufs", str(FLOWCOP_POOL + packets + 8192), "--mbuf-data-room", str(a.data_room),
                "--metrics-addr", "127.0.0.1:%d" % metrics_port]
    main_cpu = 1 - a.cpu if a.cpu in (0, 1) else 0
    return ["dpdk-testpmd"] + eal + ["-l", "%d,%d" % (main_cpu, a.cpu), "--",
            "--forward-mode=" + tool, "--total-num-mbufs=%d" % (packets + 8192),
            "--mbuf-size=%d" % a.data_room, "--burst=32", "--rxq=1", "--txq=1", "--stats-period=3600"]


def memory_shortfall(tool, a, packets, flows):
    """Why `tool` cannot run `flows` here (EAL memory, heap, the capture in the page cache), or None."""
    eal_need = memory_mb(tool, packets, flows, a.data_room) * 2**20
    other = packets * 80 + (ovs_peer.heap_bytes(flows) if tool == "ovs" else 0)
    avail = dpdk_probe.mem_available_bytes()
    if a.huge_dir and eal_need > dpdk_probe.free_hugepage_bytes():
        return "needs %.1f GB of hugepages, %.1f GB free (reserve more: dpdk-hugepages.py)" % (
            eal_need / 2**30, dpdk_probe.free_hugepage_bytes() / 2**30)
    need = other if a.huge_dir else eal_need + other
    if need + a.mem_margin_gb * 2**30 > avail:
        return "needs %.1f GB (+%.0f GB margin), %.1f GB available" % (need / 2**30, a.mem_margin_gb, avail / 2**30)
    return None


def scrape(port):
    """flowcop's /metrics as {series text: value}, through the tests' one parser (flowcoptest.exposition)."""
    return exposition.by_series(exposition.scrape("http://127.0.0.1:%d/metrics" % port, timeout=10))


def check_flowcop(metrics, flows, udp_flows=0, churn=False):
    """Problems with flowcop's table after the window (empty list: every flow tracked, none refused).
    udp_flows: how many of the flows are UDP (the mixed capture); their packets count as `udp`.
    churn: the capture is --churn's short connections, each reopened from TIME_WAIT by its SYN when the
    capture loops (netfilter's rule, so flows do end), and at most `flows` of them open at a time."""
    problems = []
    active = sum(v for k, v in metrics.items() if k.startswith("flowcop_flows_active"))
    if active != flows if not churn else not 0 < active <= flows:
        problems.append("flows_active %d, expected %s%d" % (active, "at most " if churn else "", flows))
    by_proto = {p: sum(v for k, v in metrics.items()
                       if k.startswith("flowcop_proto_flows_active") and 'proto="%s"' % p in k) for p in ("tcp", "udp")}
    if not churn and by_proto != {"tcp": flows - udp_flows, "udp": udp_flows}:
        problems.append("proto_flows_active %s, expected tcp %d udp %d" % (by_proto, flows - udp_flows, udp_flows))
    for k, v in metrics.items():
        # Every packet must be tracked: no other result (invalid, no flow, table full, parse verdicts),
        # and no flow may have ended (expired, evicted, reopened) during the run. A UDP packet's
        # class is `udp`; what tracking did with it is flowcop_proto_packets_total's result.
        counted = 'result="tracked"' in k or (udp_flows and 'result="udp"' in k)
        if v and ((k.startswith("flowcop_packets_total") and not counted)
                  or (k.startswith("flowcop_proto_packets_total") and 'result="tracked"' not in k)
                  or (k.startswith("flowcop_flows_expired_total") and not churn)):
            problems.append("%s = %d" % (k, v))
    if udp_flows and not any(v for k, v in metrics.items()
                             if k.startswith("flowcop_proto_packets_total") and 'proto="udp"' in k):
        problems.append("no UDP packet tracked")
    return problems


def own_session():
    """Runs in the child before exec: its own session, hence its own scheduler autogroup, so that
    dpdk_probe.set_priority() can rank it against other sessions during a measured window only."""
    os.setsid()


def run_one(tool, a, pcap, packets, flows, rep, workdir, udp_flows=0):
    """One program's run on `pcap` (`packets` frames a loop, `flows` flows); a.churn: the churn capture."""
    prefix = "prb_%s_%d_%d_%d" % (tool, flows, rep, os.getpid())
    metrics_port = 19700 + (os.getpid() % 200)
    cmd = command(tool, a, pcap, packets, flows, prefix, metrics_port)
    log_path = os.path.join(workdir, "%s-%d-%d.log" % (tool, flows, rep))
    log = open(log_path, "w")
    log.write(" ".join(cmd) + "\n")
    log.flush()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=own_session)
    result = {"tool": tool, "flows": flows, "rep": rep, "log": log_path, "cmd": " ".join(cmd)}
    try:
        measure(tool, a, proc, prefix, packets, flows, metrics_port, log_path, result, udp_flows)
    except (OSError, RuntimeError, ValueError) as e:  # the program died or misbehaved: keep going, say so
        result["error"] = "%s: %s" % (type(e).__name__, e)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)
    result["exit"] = proc.returncode
    return result


def measure(tool, a, proc, prefix, packets, flows, metrics_port, log_path, result, udp_flows=0):
    """Warm-up, then the measured window; fills `result`."""
    tel = None
    try:
        start_deadline = time.monotonic() + 90 + packets / 100000.0
        tel = dpdk_probe.connect_when_ready(prefix, proc, start_deadline)
        if tel is None:
            raise RuntimeError("%s did not start (exit %s); see %s" % (tool, proc.poll(), log_path))
        # Warm-up: one whole loop of the capture (every flow created), then --warm more seconds.
        first = None
        while True:
            n, t = tel.rx_packets()
            if n > 0 and first is None:
                first = t
            if n >= packets and first is not None and t - first >= a.warm:
                break
            if time.monotonic() > start_deadline + 10 * packets / 100000.0 + 120 or proc.poll() is not None:
                raise RuntimeError("%s: warm-up did not finish (%d of %d packets); see %s"
                                   % (tool, n, packets, log_path))
            time.sleep(0.1)
        tid = proc.pid if tool in FLOWCOPS else (dpdk_probe.find_thread(proc.pid, "worker-%d" % a.cpu)
                                                  or dpdk_probe.busiest_thread(proc.pid))
        # Raised priority for the measured window only (the machine is shared: set-up, preload and
        # warm-up run at normal priority), with a short settle before the first sample.
        if a.nice:
            dpdk_probe.set_priority(proc.pid, a.nice)
            time.sleep(0.2)
        s0, c0, (st0, tt0), load0 = tel.rx_packets(), dpdk_probe.thread_cpu_ns(proc.pid, tid), \
            dpdk_probe.cpu_times(a.cpu), dpdk_probe.load_average()
        time.sleep(a.window)
        s1, c1, (st1, tt1) = tel.rx_packets(), dpdk_probe.thread_cpu_ns(proc.pid, tid), dpdk_probe.cpu_times(a.cpu)
        if a.nice:
            dpdk_probe.set_priority(proc.pid, 0)
        wall = s1[1] - s0[1]
        pk = s1[0] - s0[0]
        result.update(packets=pk, seconds=wall, mpps=pk / wall / 1e6, cpu_share=(c1 - c0) / 1e9 / wall,
                      mpps_per_cpu=pk / ((c1 - c0) / 1e9) / 1e6 if c1 > c0 else 0.0,
                      steal=(st1 - st0) / max(1, tt1 - tt0), load1=load0[0], rx_at_start=s0[0])
        if tool in FLOWCOPS:
            result["problems"] = check_flowcop(scrape(metrics_port), flows, udp_flows, getattr(a, "churn", False))
    finally:
        if tel is not None:
            tel.close()


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def summarise(runs, flows_list):
    rows = []
    for n in flows_list:
        row = {"flows": n}
        for t in TOOLS:
            rs = [r for r in runs if r["flows"] == n and r["tool"] == t and "mpps" in r]
            row[t] = {k: median([r[k] for r in rs]) for k in ("mpps", "mpps_per_cpu", "cpu_share", "steal")}
            row[t]["min"] = min((r["mpps"] for r in rs), default=float("nan"))
            row[t]["max"] = max((r["mpps"] for r in rs), default=float("nan"))
            row[t]["n"] = len(rs)
        for t in ("baseline", "rxonly", "io", "ovs"):
            row["ratio_" + t] = row["flowcop"]["mpps"] / row[t]["mpps"] if row[t]["mpps"] else float("nan")
            row["ratio_cpu_" + t] = (row["flowcop"]["mpps_per_cpu"] / row[t]["mpps_per_cpu"]
                                     if row[t]["mpps_per_cpu"] else float("nan"))
        # Paired ratios (same repeat, back-to-back runs): their spread shows how much the load moved.
        pairs = []
        for rep in sorted({r["rep"] for r in runs if r["flows"] == n}):
            f = [r for r in runs if r["flows"] == n and r["rep"] == rep and r["tool"] == "flowcop" and "mpps" in r]
            x = [r for r in runs if r["flows"] == n and r["rep"] == rep and r["tool"] == "rxonly" and "mpps" in r]
            if f and x:
                pairs.append(f[0]["mpps"] / x[0]["mpps"])
        row["paired_ratio_rxonly"] = pairs
        # flowcop against the build before, same repeat (the issue-19 criterion: >= 1.4x at 10^6 and 10^7).
        row["paired_ratio_baseline"] = [
            f["mpps"] / b["mpps"] for rep in sorted({r["rep"] for r in runs if r["flows"] == n})
            for f in runs if f["flows"] == n and f["rep"] == rep and f["tool"] == "flowcop" and "mpps" in f
            for b in runs if b["flows"] == n and b["rep"] == rep and b["tool"] == "baseline" and "mpps" in b]
        # The mixed capture against the TCP-only one and rxonly, same repeat (back-to-back runs).
        for m_tool in ("mixed", "udp"):
            for t in ("flowcop", "rxonly"):
                row[m_tool + "_ratio_" + t] = (row[m_tool]["mpps"] / row[t]["mpps"]
                                               if row[t]["mpps"] else float("nan"))
                row[m_tool + "_paired_ratio_" + t] = [
                    m["mpps"] / o["mpps"] for rep in sorted({r["rep"] for r in runs if r["flows"] == n})
                    for m in runs if m["flows"] == n and m["rep"] == rep and m["tool"] == m_tool and "mpps" in m
                    for o in runs if o["flows"] == n and o["rep"] == rep and o["tool"] == t and "mpps" in o]
        row["ovs_cycles_per_packet"] = median([r["ovs"]["cycles_per_packet"] for r in runs
                                               if r["flows"] == n and r["tool"] == "ovs" and "mpps" in r])
        if row["flowcop"]["n"]:
            rows.append(row)
    return rows


def table(rows):
    out = ["| flows | flowcop Mpps | testpmd rxonly Mpps | testpmd io Mpps | flowcop / rxonly | flowcop / io |"
           " per-CPU-s ratio to rxonly | paired ratios to rxonly (min-max) | CPU share f/r/i |"
           " OVS Mpps | flowcop / OVS | per-CPU-s ratio to OVS | OVS cycles per packet |"
           " baseline Mpps | flowcop / baseline | paired (min-max) |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r["paired_ratio_rxonly"]
        out.append(("| %s | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.0f%% | %.0f%% | %.0f%% | %s | %.2f/%.2f/%.2f"
                    " | %.2f (%.2f-%.2f) | %.2fx | %.2fx | %.0f | %.2f (%.2f-%.2f) | %.2fx | %s |") % (
            "{:,}".format(r["flows"]),
            r["flowcop"]["mpps"], r["flowcop"]["min"], r["flowcop"]["max"],
            r["rxonly"]["mpps"], r["rxonly"]["min"], r["rxonly"]["max"],
            r["io"]["mpps"], r["io"]["min"], r["io"]["max"],
            100 * r["ratio_rxonly"], 100 * r["ratio_io"], 100 * r["ratio_cpu_rxonly"],
            ("%.0f-%.0f%%" % (100 * min(p), 100 * max(p))) if p else "-",
            r["flowcop"]["cpu_share"], r["rxonly"]["cpu_share"], r["io"]["cpu_share"],
            r["ovs"]["mpps"], r["ovs"]["min"], r["ovs"]["max"], r["ratio_ovs"], r["ratio_cpu_ovs"],
            r["ovs_cycles_per_packet"],
            r["baseline"]["mpps"], r["baseline"]["min"], r["baseline"]["max"], r["ratio_baseline"],
            ("%.2f-%.2fx" % (min(r["paired_ratio_baseline"]), max(r["paired_ratio_baseline"])))
            if r["paired_ratio_baseline"] else "-"))
    return "\n".join(out)


def mixed_table(rows, udp_share):
    out = ["| flows | UDP flows | mixed Mpps | TCP-only Mpps | rxonly Mpps | mixed / TCP-only (paired min-max) |"
           " mixed / rxonly (paired min-max) | TCP-only / rxonly | CPU share m/t/r | UDP-only Mpps |"
           " UDP-only / TCP-only (paired min-max) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if not r["mixed"]["n"]:
            continue
        pt, pr, pu = r["mixed_paired_ratio_flowcop"], r["mixed_paired_ratio_rxonly"], r["udp_paired_ratio_flowcop"]
        out.append("| %s | %.0f%% | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.2f (%.2f-%.2f) | %.2f (%s) | %.0f%% (%s) |"
                   " %.0f%% | %.2f/%.2f/%.2f | %.2f (%.2f-%.2f) | %.2f (%s) |" % (
                       "{:,}".format(r["flows"]), 100 * udp_share,
                       r["mixed"]["mpps"], r["mixed"]["min"], r["mixed"]["max"],
                       r["flowcop"]["mpps"], r["flowcop"]["min"], r["flowcop"]["max"],
                       r["rxonly"]["mpps"], r["rxonly"]["min"], r["rxonly"]["max"],
                       r["mixed_ratio_flowcop"], ("%.2f-%.2f" % (min(pt), max(pt))) if pt else "-",
                       100 * r["mixed_ratio_rxonly"], ("%.0f-%.0f%%" % (100 * min(pr), 100 * max(pr))) if pr else "-",
                       100 * r["ratio_rxonly"],
                       r["mixed"]["cpu_share"], r["flowcop"]["cpu_share"], r["rxonly"]["cpu_share"],
                       r["udp"]["mpps"], r["udp"]["min"], r["udp"]["max"],
                       r["udp_ratio_flowcop"], ("%.2f-%.2f" % (min(pu), max(pu))) if pu else "-"))
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build-rel"), help="meson build dir with app/flowcop")
    ap.add_argument("--flows", default="10000,100000,1000000,10000000", help="comma-separated flow counts")
    ap.add_argument("--passes", type=int, default=2, help="rounds over all flows per capture loop (default 2)")
    ap.add_argument("--udp-share", type=float, default=0.0,
                    help="also run flowcop ('mixed') on a capture where this share of the flows is UDP "
                         "(flows_pcap.py --udp-share); default 0: no mixed capture")
    ap.add_argument("--churn", action="store_true",
                    help="the short-connection churn instead of established flows: for each N of --flows, N complete "
                         "connections of 8 frames one after another (flows_pcap.write_churn: handshake, request, "
                         "answer, both FINs), each reopened from TIME_WAIT by its SYN when the capture loops")
    ap.add_argument("--repeats", type=int, default=5, help="runs per program and flow count (default 5)")
    ap.add_argument("--window", type=float, default=4.0, help="measured seconds per run (default 4)")
    ap.add_argument("--warm", type=float, default=1.0, help="seconds after the first loop before measuring")
    ap.add_argument("--cpu", type=int, default=1, help="CPU of the polling lcore (default 1)")
    ap.add_argument("--data-room", type=int, default=192, help="mbuf data room, bytes (default 192)")
    ap.add_argument("--nice", type=int, default=-20,
                    help="nice of the program during its measured window only (default -20; 0: never raised)")
    ap.add_argument("--tools", default=None,
                    help="subset of " + ",".join(TOOLS) + " (default: all; baseline only with --baseline-build)")
    ap.add_argument("--baseline-build", default=None,
                    help="meson build dir of the flowcop to compare with (tool 'baseline'), e.g. the commit before "
                         "built in its own worktree: git worktree add ../base HEAD~1 && meson setup ../base/build-bench "
                         "--buildtype=release && ninja -C ../base/build-bench app/flowcop")
    ap.add_argument("--workdir", default=None, help="pcaps, logs, results (default BUILD/bench/packet_rate)")
    ap.add_argument("--plot-dir", default=os.path.join(REPO, "tests", "plots"), help="where the PNG goes")
    ap.add_argument("--mem-margin-gb", type=float, default=4.0, help="MemAvailable kept free (default 4)")
    ap.add_argument("--huge-dir", default=None,
                    help="EAL memory from this hugetlbfs mount, as in production (e.g. /dev/hugepages after "
                         "dpdk-hugepages.py -p 2M --setup 12G); default: --no-huge (4 KiB pages)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already in WORKDIR/results.json and do only the missing ones")
    ovs_peer.add_arguments(ap)
    a = ap.parse_args(argv)
    a.build = os.path.abspath(a.build)
    workdir = a.workdir or os.path.join(a.build, "bench", "packet_rate")
    os.makedirs(workdir, exist_ok=True)
    flows_list = [int(x) for x in a.flows.split(",")]
    if a.baseline_build:
        a.baseline_build = os.path.abspath(a.baseline_build)
    default_tools = [t for t in TOOLS
                     if (t != "baseline" or a.baseline_build) and (t not in ("mixed", "udp") or a.udp_share > 0)]
    tools = [t for t in (a.tools or ",".join(default_tools)).split(",") if t]
    if "baseline" in tools and not a.baseline_build:
        ap.error("--tools baseline needs --baseline-build")
    if not 0.0 <= a.udp_share <= 1.0:
        ap.error("--udp-share must be in 0..1")
    if ("mixed" in tools or "udp" in tools) and a.udp_share <= 0:
        ap.error("--tools mixed and udp need --udp-share")
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        ap.error("unknown --tools %s (known: %s)" % (",".join(unknown), ",".join(TOOLS)))
    if "ovs" in tools:
        ovs_peer.check_installed(a.ovs_vswitchd)
    prov = provenance(a.build)
    prov["load_at_start"] = dpdk_probe.load_average()
    print("== packet rate: flowcop monitor vs dpdk-testpmd rxonly/io, pcap infinite_rx, EAL memory in %s =="
          % ("hugepages at " + a.huge_dir if a.huge_dir else "4 KiB pages (--no-huge)"))
    print("commit %s, buildtype %s, %s, load %s, %s" % (prov["commit"][:12], prov["buildtype"], prov["date_utc"],
                                                        " ".join("%.2f" % x for x in prov["load_at_start"]),
                                                        prov["lscpu_model"]), flush=True)
    runs, skipped = [], {}
    results_path = os.path.join(workdir, "results.json")
    if a.resume and os.path.exists(results_path):
        with open(results_path) as f:
            old = json.load(f)
        runs = [r for r in old.get("runs", []) if "mpps" in r]
        prov["resumed_from"] = old.get("provenance")
        print("resuming: %d runs from %s" % (len(runs), results_path), flush=True)
    done = {(r["tool"], r["flows"], r["rep"]) for r in runs}
    settings = {k: getattr(a, k) for k in ("passes", "repeats", "window", "warm", "cpu", "data_room", "nice",
                                           "huge_dir", "ovs_forward", "ovs_config", "baseline_build", "udp_share", "churn")}
    if a.baseline_build:  # what the baseline is: its commit, as provenance() gives the build's own
        settings["baseline_commit"] = sh(["git", "-C", a.baseline_build, "rev-parse", "HEAD"])
    if a.churn and [t for t in tools if t in ("mixed", "udp")]:
        ap.error("--churn has no mixed or UDP capture")
    for n in flows_list:
        packets = n * (flows_pcap.CHURN_FRAMES if a.churn else a.passes)
        # Each program runs alone: one that does not fit is skipped at this size, the others run.
        short = {t: memory_shortfall(t, a, packets, n) for t in tools}
        if any(short.values()):
            skipped[n] = "; ".join("%s %s" % (t, why) for t, why in short.items() if why)
            print("flows %d: skipped: %s" % (n, skipped[n]), flush=True)
        if all(short.values()):
            continue
        pcap = os.path.join(workdir, ("churn-%d.pcap" % n) if a.churn else "flows-%d-passes-%d.pcap" % (n, a.passes))
        if not os.path.exists(pcap):
            if a.churn:
                flows_pcap.write_churn(pcap + ".tmp", n)
            else:
                flows_pcap.write(pcap + ".tmp", n, a.passes, 20240601)
            os.rename(pcap + ".tmp", pcap)
        pcap_mixed, udp_flows = None, 0
        if "mixed" in tools and not short["mixed"]:
            pcap_mixed = os.path.join(workdir, "flows-%d-passes-%d-udp-%g.pcap" % (n, a.passes, a.udp_share))
            if not os.path.exists(pcap_mixed):
                flows_pcap.write(pcap_mixed + ".tmp", n, a.passes, 20240601, a.udp_share)
                os.rename(pcap_mixed + ".tmp", pcap_mixed)
            udp_flows = flows_pcap.udp_flow_count(n, a.udp_share)
        pcap_udp = None
        if "udp" in tools and not short["udp"]:
            pcap_udp = os.path.join(workdir, "flows-%d-passes-%d-udp-1.pcap" % (n, a.passes))
            if not os.path.exists(pcap_udp):
                flows_pcap.write(pcap_udp + ".tmp", n, a.passes, 20240601, 1.0)
                os.rename(pcap_udp + ".tmp", pcap_udp)
        for rep in range(a.repeats):
            order = tools[rep % len(tools):] + tools[:rep % len(tools)]  # rotate: no tool always runs first
            for t in order:
                if (t, n, rep) in done or short[t]:
                    continue
                if t == "ovs":
                    r = ovs_peer.run_one(a, pcap, packets, n, rep, workdir, ovs_peer.build_shim(workdir))
                elif t == "mixed":
                    r = run_one(t, a, pcap_mixed, packets, n, rep, workdir, udp_flows)
                elif t == "udp":
                    r = run_one(t, a, pcap_udp, packets, n, rep, workdir, n)
                else:
                    r = run_one(t, a, pcap, packets, n, rep, workdir)
                runs.append(r)
                with open(results_path, "w") as f:  # after every run: an interrupted sweep can --resume
                    json.dump({"provenance": prov, "settings": settings, "runs": runs, "rows": [],
                               "skipped": skipped}, f, indent=1)
                if "mpps" not in r:
                    print("flows %9d rep %d %-7s FAILED: %s (log %s)" % (n, rep, t, r.get("error"), r["log"]),
                          flush=True)
                    continue
                print("flows %9d rep %d %-7s %6.3f Mpps  cpu share %.2f  %6.3f Mpps/CPU-s  steal %.1f%%  load %.1f%s%s"
                      % (n, rep, t, r["mpps"], r["cpu_share"], r["mpps_per_cpu"], 100 * r["steal"], r["load1"],
                         ("  %.0f cycles/packet, EMC hits %.0f%%"
                          % (r["ovs"]["cycles_per_packet"], 100 * r["ovs"]["emc_hit_share"])) if t == "ovs" else "",
                         ("  PROBLEMS: " + "; ".join(r["problems"])) if r.get("problems") else ""), flush=True)
    prov["load_at_end"] = dpdk_probe.load_average()
    rows = summarise(runs, flows_list)
    res = {"provenance": prov, "settings": settings, "runs": runs, "rows": rows, "skipped": skipped}
    with open(results_path, "w") as f:
        json.dump(res, f, indent=1)
    md = table(rows)
    if "mixed" in tools or "udp" in tools:
        md += "\n\nMixed capture (%.0f%% of the flows UDP request/response):\n\n" % (100 * a.udp_share) + \
            mixed_table(rows, a.udp_share)
    with open(os.path.join(workdir, "results.md"), "w") as f:
        f.write(md + "\n")
    print(md)
    for n, why in skipped.items():
        print("flows %d skipped: %s" % (n, why))
    print("load at end %s" % " ".join("%.2f" % x for x in prov["load_at_end"]))
    if rows and all(t in tools for t in ("flowcop", "rxonly", "io")):  # OVS is drawn when it ran
        try:
            import plot_packet_rate
        except ImportError:
            print("no plot: matplotlib is missing (apt-get install python3-matplotlib; run with /usr/bin/python3)")
            return 0
        os.makedirs(a.plot_dir, exist_ok=True)
        print("plot: " + plot_packet_rate.plot(res, os.path.join(a.plot_dir, "packet_rate.png")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
