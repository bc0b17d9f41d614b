# SPDX-License-Identifier: BSD-3-Clause
"""Where flowcop's per-packet cycles go: instructions and simulated cache misses per packet.

This machine's VM has no PMU counters (`perf stat -e instructions true` says <not supported>), so
the profile comes from valgrind's callgrind instead: exact instruction counts (Ir) and a simulated
two-level cache (D1 and last level; no prefetcher, no memory-level parallelism, so misses are an
upper bound of what the hardware pays, not a time). Both programs read the same capture through
the same pcap vdev with infinite_rx=1 as in packet_rate.py:
  flowcop  collection limited to Worker::run (the loop: rx burst, parse, track, free, and once per loop
           the checks of the cop and the mailbox; the cop runs once a second and, with nothing due,
           costs nothing per packet), broken down by function, inclusive;
  rxonly   dpdk-testpmd --forward-mode=rxonly: everything it executes in the window (its main
           thread sleeps in the stats loop), i.e. the rx burst and the free;
  baseline with --baseline-build, the flowcop of that build (the commit before), profiled as flowcop;
           with --baseline-args alone, this build's flowcop with other options (e.g. --track tcp
           against every protocol tracked), so one run compares a configuration with another.
--churn CAPACITY profiles a churn of short connections instead (flows_pcap.write_churn): --flows connections
of 8 frames each, one after another, through tables of CAPACITY flows, so every SYN meets a full table of
TIME_WAIT flows: the insert path with early drop (issue 27).
--udp-share F profiles the mixed capture instead (packet_rate.py's `mixed`: that share of the flows UDP
request/response flows), every program on it, so the UDP path's rows show beside TCP's.
Steady state only: each program first delivers one whole loop of the capture (every flow created),
then its counters are zeroed (callgrind_control -z), and after --window seconds of valgrind time
dumped (-d); the packets in the window are the pcap rx bursts in the dump times the program's burst size
(infinite_rx always returns a full burst: flowcop's kBurst, read from its build's sources; testpmd's
--burst=32), the port's telemetry read around the window only shown beside them.
Valgrind serialises threads and runs ~50x slower, so windows are seconds, packets hundreds of thousands.
    /usr/bin/python3 deploy/bench/profile_packet.py --build build-bench --flows 1000000
--rss-flowgen KEYS profiles the rss plan instead: -l 0-1 over --flowgen KEYS (queues=2), both lcores'
Worker::run counted, per packet by the telemetry bracket around the window, an estimate (issue 27: the rss
plan's cost of its ICMP error and fragment check).
The table step is FlowTable::submit (the pipeline since issue 19: the work of three bursts per call,
prepare + probe + finish) or, in the baseline, FlowTable::process_burst with rte_hash's bulk lookup.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dpdk_probe  # noqa: E402
import flows_pcap  # noqa: E402
import packet_rate  # noqa: E402

# (label, regex on callgrind_annotate's "file:function [object]" column), in print order. Inclusive
# counts: a row includes the rows indented under it.
FLOWCOP_ROWS = [
    # Worker::run: since issue 20 the compiler inlines poll() into it; the cop and the mailbox, checked
    # once per loop, are in it too (with nothing due they cost nothing per packet).
    ("Worker::run (all of the per-packet path)", r":flowcop::app::Worker::run\("),
    ("  pcap PMD rx burst (alloc + copy, as testpmd)", r"librte_net_pcap"),
    # A burst's work after its RX (parse, the plan's handoff or check, the table step, the free): the
    # per-packet path without the polling loop, which --rss-flowgen's idle lcores spin in while valgrind
    # runs the generator thread (present when the compiler kept it out of line).
    ("  Worker::handle (a burst's work after RX)", r":flowcop::app::Worker::handle\("),
    ("  rte_pktmbuf_free_bulk (as testpmd)", r":rte_pktmbuf_free_bulk "),
    ("  packet::parse (L2-L4 headers)", r":flowcop::packet::parse\("),
    # The table step: submit() since issue 19 (the pipeline), process_burst() before it (the baseline).
    ("  FlowTable::submit / process_burst (the table step)",
     r":flowcop::conntrack::FlowTable::(submit|process_burst)\(.*(unsigned long|long const)\*?\)"),
    ("    FlowTable::prepare (verdicts, hash, bucket prefetch)", r":flowcop::conntrack::FlowTable::prepare\("),
    ("    FlowTable::probe (bucket scan, record prefetch)", r":flowcop::conntrack::FlowTable::probe\("),
    ("    FlowTable::finish (verify the key, track)", r":flowcop::conntrack::FlowTable::finish\("),
    ("    FlowTable::finish_other (UDP, ICMP, other: verify, track)", r":flowcop::conntrack::FlowTable::finish_other\("),
    ("      FlowTable::track_other (record + state)", r":flowcop::conntrack::FlowTable::track_other\("),
    ("        protostate::step", r":flowcop::protostate::step\("),
    ("    rte_hash_lookup_with_hash_bulk (baseline)", r":rte_hash_lookup_with_hash_bulk "),
    ("    FlowTable::track (record + state)", r":flowcop::conntrack::FlowTable::track\("),
    # A new flow (--churn: every connection's SYN at a full table).
    ("    FlowTable::create_flow (admit + init)", r":flowcop::conntrack::FlowTable::create_flow\("),
    ("      FlowTable::early_drop (sample, drop)", r":flowcop::conntrack::FlowTable::early_drop\("),
    ("      tcpstate::step", r":flowcop::tcpstate::step\("),
]
EVENTS = ("Ir", "D1mr", "D1mw", "DLmr", "DLmw")


def need_valgrind():
    for tool in ("valgrind", "callgrind_control", "callgrind_annotate"):
        if shutil.which(tool) is None:
            sys.exit("%s not found: apt-get install valgrind" % tool)


def annotate(outfile):
    """{'file:function [object]': {event: inclusive count, 'calls': times called}} from
    callgrind_annotate --inclusive=yes --tree=caller (a function's block lists its callers, each with
    "(Nx)", then the function itself marked '*')."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=caller", "--threshold=100",
                           "--show=" + ",".join(EVENTS), outfile],
                          check=True, capture_output=True, text=True).stdout
    rows, calls = {}, 0
    num = r"([\d,]+|\.)\s+(?:\([ \d.]+%\)\s+)?"
    pat = re.compile(r"^\s*" + num * len(EVENTS) + r"([<*>])?\s*(\S.*)$")
    for line in text.splitlines():
        m = pat.match(line)
        if not m:
            calls = 0 if not line.strip() else calls
            continue
        mark, name = m.group(len(EVENTS) + 1), m.group(len(EVENTS) + 2).strip()
        if mark == "<":
            c = re.search(r"\(([\d,]+)x\)", name)
            calls += int(c.group(1).replace(",", "")) if c else 0
        elif mark in ("*", None):
            vals = [0 if v == "." else int(v.replace(",", "")) for v in m.groups()[:len(EVENTS)]]
            rows[name] = dict(zip(EVENTS, vals), calls=calls)
            calls = 0
    return rows


def pick(rows, regex, largest=True):
    hits = [(v["Ir"], k) for k, v in rows.items() if re.search(regex, k)]
    if not hits:
        return None
    return rows[max(hits)[1]] if largest else rows[hits[0][1]]


class Counter:
    """The port's rx counter over telemetry, reconnecting when a reply times out: under valgrind the
    telemetry thread sometimes waits a long time for its turn, and a late reply on the old connection
    would answer the next query."""

    def __init__(self, prefix, proc, deadline):
        self.prefix, self.proc, self.deadline = prefix, proc, deadline
        self.tel = dpdk_probe.connect_when_ready(prefix, proc, deadline, timeout_s=60.0)

    def packets_or_none(self):
        """packets(), or None when the socket does not answer (the reads around the window are only
        informational where the count comes from the dump)."""
        try:
            return self.packets()
        except RuntimeError:
            return None

    def packets(self):
        for _ in range(5):
            try:
                return self.tel.rx_packets()[0]
            except OSError:
                self.tel.close()
                self.tel = dpdk_probe.connect_when_ready(self.prefix, self.proc, self.deadline, timeout_s=60.0)
                if self.tel is None:
                    break
        raise RuntimeError("no answer from the telemetry socket of %s" % self.prefix)

    def close(self):
        if self.tel is not None:
            self.tel.close()


def run(tool, a, pcap, packets, flows, workdir):
    prefix = "prb_cg_%s_%d_%d" % (tool, flows, os.getpid())
    out = os.path.join(workdir, "callgrind.%s.%d" % (tool, flows))
    for f in glob.glob(out + "*"):
        os.remove(f)
    cmd = packet_rate.command(tool, a, pcap, packets, flows, prefix, 0)
    if tool in packet_rate.FLOWCOPS:
        cmd[cmd.index("--metrics-addr") + 1] = "none"
        if a.churn:
            cmd[cmd.index("--flows-per-lcore") + 1] = str(a.churn)
        cmd += (a.flowcop_args if tool == "flowcop" else a.baseline_args).split()
        if a.rss_flowgen:  # the rss plan: two lcores on flowgen's RSS-dealt queues instead of the capture
            cmd = [c for c in cmd if not c.startswith("--vdev=")]
            cmd[cmd.index("-l") + 1] = "0-1"
            cmd += ["--flowgen", a.rss_flowgen]
    # --fair-sched: valgrind runs one thread at a time, and without a fair lock the polling lcore, never
    # blocking, starves the telemetry thread the window's bracket and the first loop's wait read from
    # (minutes per reply, seen as timeouts); with it every runnable thread gets its turn.
    vg = ["valgrind", "--tool=callgrind", "--fair-sched=yes", "--cache-sim=yes", "--callgrind-out-file=" + out]
    if a.branch_sim:
        vg.append("--branch-sim=yes")
    if a.dump_instr:
        vg.append("--dump-instr=yes")
    if tool in packet_rate.FLOWCOPS:
        # One toggle only (a nested second one would switch collection off inside the first): run()
        # holds the whole loop, poll() and its per-packet path included, whether or not it is inlined.
        vg.append("--toggle-collect=flowcop::app::Worker::run*")
    if a.ll:
        vg.append("--LL=" + a.ll)
    log_path = os.path.join(workdir, "callgrind-%s-%d.log" % (tool, flows))
    with open(log_path, "w") as log:
        proc = subprocess.Popen(vg + cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        tel = None
        try:
            deadline = time.monotonic() + 600 + packets / 2000.0
            tel = Counter(prefix, proc, deadline)
            if tel.tel is None:
                raise RuntimeError("%s under valgrind did not start; see %s" % (tool, log_path))
            while tel.packets() < packets:  # one whole loop: every flow exists
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("%s: first loop not done; see %s" % (tool, log_path))
                time.sleep(1)
            subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, capture_output=True)
            n0 = tel.packets_or_none()
            time.sleep(a.window)
            n1 = tel.packets_or_none()
            subprocess.run(["callgrind_control", "-d", str(proc.pid)], check=True, capture_output=True)
            # After the dump: busy with it, valgrind may not schedule the telemetry thread for minutes.
            n2 = tel.packets_or_none()
        finally:
            if tel is not None:
                tel.close()
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=300)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            shutil.rmtree("/var/run/dpdk/" + prefix, ignore_errors=True)
    dumps = sorted(f for f in glob.glob(out + ".*") if not f.endswith(".log"))
    if not dumps:
        raise RuntimeError("no callgrind dump for %s in %s" % (tool, workdir))
    rows = annotate(dumps[0])
    # Packets in the window, exactly, from call counts (valgrind acts on the zero and dump requests
    # when it next schedules, so the telemetry reads do not bracket the window): every rx burst of
    # infinite_rx returns a full burst (its pool never runs dry here). Not parse() calls: the
    # steady lane (issue 29) reads a steady segment with packet::parse_tcp_lite, inline, and calls
    # parse() only for the frames it hands back.
    rx = pick(rows, r"librte_net_pcap")
    bursts = rx["calls"] if rx else 0
    parsed = (pick(rows, r":flowcop::packet::parse\(") or {}).get("calls", 0)
    bracket = (n1 - n0 if None not in (n0, n1) else None, n2 - n0 if None not in (n0, n2) else None)
    burst = TESTPMD_BURST
    if tool in packet_rate.FLOWCOPS:
        extra = (a.baseline_args if tool == "baseline" else a.flowcop_args).replace("=", " ").split()
        packet_clock = any(w == "--clock" and v == "packet" for w, v in zip(extra, extra[1:]))
        burst = flowcop_burst(a.baseline_build if tool == "baseline" else a.build, packet_clock)
    return rows, {"bursts": bursts, "burst": burst, "from_bursts": burst * bursts, "parsed": parsed,
                  "telemetry": bracket}, log_path


TESTPMD_BURST = 32  # packet_rate.command()'s --burst=32


def flowcop_burst(build, packet_clock):
    """Frames per rx burst of the flowcop built in `build`, from its sources (meson-info names them): kBurst,
    or under --clock packet kReplayBurst (a build older than it: kBurst)."""
    with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
        source = json.load(f)["directories"]["source"]
    # app/service/dataplane/worker.h, app/service/worker.h before the service's rooms (issue 30).
    headers = sorted(glob.glob(os.path.join(source, "app", "service", "**", "worker.h"), recursive=True))
    if not headers:
        raise RuntimeError("no worker.h under %s/app/service" % source)
    with open(headers[0]) as f:
        text = f.read()
    m = packet_clock and re.search(r"constexpr unsigned kReplayBurst = (\d+);", text) or \
        re.search(r"constexpr unsigned kBurst = (\d+);", text)
    if not m:
        raise RuntimeError("no kBurst in %s's worker.h" % source)
    return int(m.group(1))


def window_packets(a, count):
    """The packets a flowcop processed in its window: its pcap rx bursts x its kBurst (every one full). Under
    --rss-flowgen there is no pcap burst to count and parse() calls undercount (the steady lane reads
    most segments without it), so the telemetry bracket over the window, an estimate (see run())."""
    if not a.rss_flowgen:
        return count["from_bursts"]
    if count["telemetry"][0] is None:
        raise RuntimeError("--rss-flowgen: the telemetry socket did not answer around the window")
    return count["telemetry"][0]


def per_packet(row, n):
    return {e: row[e] / n for e in EVENTS} if row else None


def fmt(label, v):
    branches = "Bcm" in EVENTS
    if v is None:
        return "| %s | - | - | - |%s" % (label, " - |" if branches else "")
    return "| %s | %.0f | %.2f | %.2f |%s" % (label, v["Ir"], v["D1mr"] + v["D1mw"], v["DLmr"] + v["DLmw"],
                                             (" %.2f |" % (v["Bcm"] + v["Bim"])) if branches else "")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(packet_rate.REPO, "build-rel"))
    ap.add_argument("--flows", default="10000,1000000", help="comma-separated flow counts")
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--window", type=float, default=20.0, help="valgrind seconds profiled per program")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--data-room", type=int, default=192)
    ap.add_argument("--ll", default="", help="valgrind --LL=size,assoc,line (default: the host's, as valgrind sees it)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--baseline-build", default=None,
                    help="also profile the flowcop of this build (packet_rate.py's baseline: the commit before)")
    ap.add_argument("--flowcop-args", default="", help="more flowcop options for --build's flowcop")
    ap.add_argument("--udp-share", type=float, default=0.0,
                    help="profile the capture with this share of UDP flows (flows_pcap.py --udp-share; default 0)")
    ap.add_argument("--baseline-args", default="",
                    help="more flowcop options for the baseline; without --baseline-build, also profile "
                         "--build's flowcop with these options as the baseline")
    ap.add_argument("--rss-flowgen", default="",
                    help="profile flowcop (and the baseline) under the rss plan: -l 0-1 over --flowgen with these "
                         "keys (queues=2 and a model that never ends, e.g. flows=10000,lifetime=100000,idle_pct=0,"
                         "rst_pct=0,queues=2) instead of the capture; both lcores' Worker::run are counted, per "
                         "packet by the telemetry bracket (an estimate); testpmd is not run")
    ap.add_argument("--churn", type=int, default=0, metavar="CAPACITY",
                    help="profile a churn of short connections instead (flows_pcap.write_churn: --flows "
                         "connections of 8 frames, one after another) through tables of CAPACITY flows "
                         "(--flows-per-lcore): every SYN meets a full table of TIME_WAIT flows (issue 27)")
    ap.add_argument("--branch-sim", action="store_true",
                    help="also count mispredicted branches (valgrind --branch-sim: conditional and indirect, "
                         "a simple 2-bit predictor, so a pointer to where, not the hardware's count)")
    ap.add_argument("--dump-instr", action="store_true",
                    help="keep counts per instruction (valgrind --dump-instr=yes) for callgrind_annotate "
                         "--auto=yes or objdump side by side: where inside a function the instructions go")
    a = ap.parse_args(argv)
    if a.branch_sim:
        global EVENTS
        EVENTS = EVENTS + ("Bcm", "Bim")
    need_valgrind()
    a.build = os.path.abspath(a.build)
    if a.baseline_build:
        a.baseline_build = os.path.abspath(a.baseline_build)
    elif a.baseline_args:
        a.baseline_build = a.build
    workdir = a.workdir or os.path.join(a.build, "bench", "packet_rate")
    os.makedirs(workdir, exist_ok=True)
    prov = packet_rate.provenance(a.build)
    print("== where the cycles go: callgrind, pcap infinite_rx, steady state ==")
    print("commit %s, buildtype %s, %s, %s, valgrind %s" % (
        prov["commit"][:12], prov["buildtype"], prov["date_utc"], prov["lscpu_model"],
        packet_rate.sh(["valgrind", "--version"])), flush=True)
    for n in [int(x) for x in a.flows.split(",")]:
        if a.churn:
            packets = n * flows_pcap.CHURN_FRAMES
            pcap = os.path.join(workdir, "churn-%d.pcap" % n)
            if not os.path.exists(pcap):
                flows_pcap.write_churn(pcap + ".tmp", n)
                os.rename(pcap + ".tmp", pcap)
        else:
            packets = n * a.passes
            pcap = os.path.join(workdir, "flows-%d-passes-%d%s.pcap" % (
                n, a.passes, ("-udp-%g" % a.udp_share) if a.udp_share > 0 else ""))
            if not os.path.exists(pcap):
                flows_pcap.write(pcap + ".tmp", n, a.passes, 20240601, a.udp_share)
                os.rename(pcap + ".tmp", pcap)
        fc, fcount, _ = run("flowcop", a, pcap, packets, n, workdir)
        base = run("baseline", a, pcap, packets, n, workdir) if a.baseline_build else None
        rx, rcount = (run("rxonly", a, pcap, packets, n, workdir)[:2] if not a.rss_flowgen
                      else ({}, {"from_bursts": 1, "burst": TESTPMD_BURST, "telemetry": (0, 0)}))
        fn = window_packets(a, fcount)
        rn = rcount["from_bursts"]
        print("\nflows %d: flowcop %d packets in the window (%s; %d x %d rx bursts = %d, %d parse() calls; "
              "telemetry bracket %s..%s), testpmd rxonly %d packets (32 x rx bursts; telemetry bracket %s..%s). "
              "The brackets are informational: valgrind acts on the zero and dump requests when it next "
              "schedules, so the packets counted are the call counts."
              % (n, fn, "the telemetry bracket" if a.rss_flowgen else "rx bursts x burst size", fcount["burst"],
                 fcount["bursts"], fcount["from_bursts"], fcount["parsed"], *fcount["telemetry"], rn,
                 *rcount["telemetry"]))
        if not (fn and rn):
            raise RuntimeError("could not count the packets in a window (no rx burst in the profile)")
        print("| per packet | instructions | D1 misses (sim.) | LL misses (sim.) |%s" % (
            " mispredicted branches (sim.) |" if a.branch_sim else ""))
        print("|---|---|---|---|%s" % ("---|" if a.branch_sim else ""))
        profiles = [("flowcop ", fc, fn)]
        if base:
            bn = window_packets(a, base[1])
            profiles.append(("baseline ", base[0], bn))
            print("(baseline %s%s: %d packets in its window)" % (
                a.baseline_build, (" " + a.baseline_args) if a.baseline_args else "", bn))
        for name, rows, count in profiles:
            for label, regex in FLOWCOP_ROWS:
                depth = (len(label) - len(label.lstrip())) // 2
                v = per_packet(pick(rows, regex), count)
                if v is None and depth > 0:
                    continue  # a function this build does not have (the other table's)
                print(fmt((name if depth == 0 else "." * (2 * depth) + " ") + label.strip(), v))
        if not a.rss_flowgen:
            prog = next((v for k, v in rx.items() if "PROGRAM TOTALS" in k), None)
            print(fmt("testpmd rxonly, whole process", per_packet(prog, rn)))
            print(fmt(".. pcap PMD rx burst", per_packet(pick(rx, r"librte_net_pcap"), rn)))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
