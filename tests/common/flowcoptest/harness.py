# SPDX-License-Identifier: BSD-3-Clause
"""Runs the real flowcop binary and reads back what it reported, for the integration tests.

run() starts flowcop with EAL on virtual devices (no hugepages, a file prefix unique to the run),
optionally scrapes its Prometheus exporter once the ports have delivered an expected number of
packets and the counters stopped moving, stops it (SIGINT, or --stop-when-idle-ms) and returns the
exit code, stderr, the parsed final summary, the parsed event log and the scraped metrics. Every
wait is bounded; a run that overstays its deadline is killed and reported as a failure.

check_invariants() holds for every run that exits 0, whatever was replayed:
  - per lcore, flows created == flows destroyed (all reasons) in the event log, every destroy
    closes the one open flow of its key, and no key has two open flows at once;
  - the summary agrees with itself (created == ended == sum over reasons, 0 active, packets ==
    sum by verdict, events written == lines in the file, none dropped) and with the event log
    (per reason), and per-flow packet counts add up to the TCP packets that reached a flow
    (tracked, invalid for state, out of window) plus the other protocols' tracked packets and counted fragments;
  - the last scrape, taken while flowcop still ran, agrees with the summary: created per lcore,
    each non-shutdown reason, and shutdown == what was still active then.
  - events written + dropped == produced, and no flow ended by a timeout before its deadline
    (check_event_accounting, check_deadlines; the fault tests call these alone where drops are
    expected).
TAP is the output format (tests/meson.build registers these tests with protocol 'tap').
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

# The replay tests read these as harness.*: one scraper and parser for every suite.
from .exposition import histogram, metric, scrape  # noqa: F401
from .exporter_threads import exporter_limits  # noqa: F401
from . import exporter_threads

REASONS = ("inactivity", "active", "closed", "reset", "killed", "evicted", "shutdown")
NS = 1_000_000_000
# How long the counters must stay unchanged before a run with metrics counts as finished (run()).
STABLE_FOR_S = 0.6


class Tap:
    """Minimal TAP 13 producer: ok/not ok lines, diagnostics, plan at the end."""

    def __init__(self):
        self.n = 0
        self.failed = 0
        # meson stops a test that overstays its timeout with SIGTERM: turn it into SystemExit
        # so every finally (child processes, namespaces) still runs.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        print("TAP version 13", flush=True)

    def ok(self, cond, name, diag=None, todo=None):
        """todo: a known, reported bug this check shows; TAP's TODO directive keeps it from
        failing the run, and meson reports an unexpected pass once the bug is fixed."""
        self.n += 1
        if not cond and todo is None:
            self.failed += 1
        print("%s %d - %s%s" % ("ok" if cond else "not ok", self.n, name, " # TODO " + todo if todo else ""),
              flush=True)
        if not cond and diag is not None:
            for line in str(diag).splitlines() or [""]:
                print("#   " + line, flush=True)
        return bool(cond)

    def eq(self, got, want, name):
        return self.ok(got == want, name, "got:  %r\nwant: %r" % (got, want))

    def skip(self, name, why):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, name, why), flush=True)

    def note(self, text):
        for line in str(text).splitlines():
            print("# " + line, flush=True)

    def done(self):
        print("1..%d" % self.n, flush=True)
        sys.exit(1 if self.failed else 0)


def skip_all(why):
    print("TAP version 13\n1..0 # SKIP %s" % why, flush=True)
    sys.exit(0)


_run_id = [0]


def eal_args(vdevs, lcores="0", memory_mb=512, prefix=None):
    _run_id[0] += 1
    prefix = prefix or "fcit%d_%d" % (os.getpid(), _run_id[0])
    # DPDK's own lines are noise here; flowcop's start-up lines (log type flowcop.service, INFO) are
    # what the harness reads: the later --log-level wins for the flowcop.* types (app/service/log.h).
    args = ["--no-huge", "-m", str(memory_mb), "--no-pci", "-l", lcores, "--file-prefix=" + prefix,
            "--log-level=*:error", "--log-level=flowcop.*:info"]
    return args + ["--vdev=" + v for v in vdevs]


def runtime_dir(prefix):
    """Where EAL keeps the runtime files (config, telemetry socket) of a --file-prefix."""
    if os.geteuid() == 0:
        return os.path.join("/var/run/dpdk", prefix)
    return os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk", prefix)


def remove_runtime_dir(cmd):
    """EAL leaves its runtime directory behind at exit: one per run would pile up."""
    for a in cmd:
        if a.startswith("--file-prefix="):
            shutil.rmtree(runtime_dir(a.split("=", 1)[1]), ignore_errors=True)


class Result:
    def __init__(self):
        self.rc = None
        self.stderr = ""
        self.summary = None
        self.events = []
        self.metrics = None       # last scrape before the stop, [(name, labels, value)]
        self.metrics_url = None
        self.timed_out = False
        self.elapsed = 0.0
        self.pid = None

    def config(self):
        return parse_config(self.stderr)

    def destroys(self):
        return [e for e in self.events if e["event"] == "destroy"]

    def news(self):
        return [e for e in self.events if e["event"] == "new"]


# --- summary and metrics parsing ---------------------------------------------------------------

def parse_summary(stderr):
    """The final summary print_summary() writes (app/service/control/status.cpp), or None if absent."""
    s = {}
    m = re.search(r"^  packets: (\d+) received(?:, (\d+) forwarded, (\d+) tx-dropped)?"
                  r"(?:, (\d+) dropped by policy)?(?:, (\d+) without timestamp)?$", stderr, re.M)
    if not m:
        return None
    s["received"] = int(m.group(1))
    s["forwarded"] = int(m.group(2)) if m.group(2) else None
    s["tx_dropped"] = int(m.group(3)) if m.group(3) else None
    s["policy_dropped"] = int(m.group(4)) if m.group(4) else 0
    m2 = re.search(r"^  policy: (\d+) dropped, (\d+) of them new \(no flow\), (\d+) refused TCP segments", stderr, re.M)
    s["policy_new_dropped"], s["policy_refused_dropped"] = (int(m2.group(2)), int(m2.group(3))) if m2 else (0, 0)
    s["no_timestamp"] = int(m.group(5)) if m.group(5) else 0
    m = re.search(r"^  by verdict:(.*)$", stderr, re.M)
    toks = m.group(1).split() if m else []
    s["verdict"] = {toks[i]: int(toks[i + 1]) for i in range(0, len(toks) - 1, 2)}
    m = re.search(r"^  tcp: (\d+) invalid for state, (\d+) out of window, (\d+) could not start a flow, (\d+) refused",
                  stderr, re.M)
    s["tcp_invalid"], s["tcp_out_of_window"], s["tcp_no_flow"], s["tcp_table_full"] = \
        (int(x) for x in m.groups()) if m else (None,) * 4
    m = re.search(r"^  other protocols: (\d+) tracked, (\d+) could not start a flow, (\d+) refused \(table full\);"
                  r" fragments: (\d+) counted on a flow$", stderr, re.M)
    s["other_tracked"], s["other_no_flow"], s["other_table_full"], s["fragments_tracked"] = \
        (int(x) for x in m.groups()) if m else (0,) * 4
    m = re.search(r"^  flows: (\d+) created(?: \(([^)]*)\))?, (\d+) active, (\d+) ended:(.*)$", stderr, re.M)
    if m:
        s["created"], s["active"], s["ended"] = int(m.group(1)), int(m.group(3)), int(m.group(4))
        s["created_by_proto"] = {p: int(n) for p, n in re.findall(r"(\w+) (\d+)", m.group(2) or "")}
        t = m.group(5).split()
        s["reasons"] = {t[i]: int(t[i + 1]) for i in range(0, len(t) - 1, 2)}
    # Packets and bytes counted on flows, by family; what was open at stop, by state.
    m = re.search(r"^  on flows: (\d+) packets, (\d+) bytes \(([^)]*)\)$", stderr, re.M)
    if m:
        s["on_flows"] = (int(m.group(1)), int(m.group(2)))
        s["on_flows_by_proto"] = {p: (int(a), int(b)) for p, a, b in re.findall(r"(\w+) (\d+)/(\d+)", m.group(3))}
    m = re.search(r"^  open at stop: (\d+)(?: \(([^)]*)\))?", stderr, re.M)
    if m:
        s["open_at_stop"] = int(m.group(1))
        s["open_by_state"] = {st: int(n) for n, st in re.findall(r"(\d+) (?:in |other-protocol )(\w+)",
                                                                  m.group(2) or "")}
    m = re.search(r"^  events: (\d+) written, (\d+) dropped, (\d+) write errors$", stderr, re.M)
    if m:
        s["events_written"], s["events_dropped"], s["events_errors"] = (int(x) for x in m.groups())
    # With --ipfix: s["ipfix"] = records, interim, dropped by reason, and per collector (messages, send errors).
    m = re.search(r"^  ipfix: (\d+) records \((\d+) interim\), (\d+) dropped \(queue full\), (\d+) dropped "
                  r"\(tracker full\)(.*)$", stderr, re.M)
    if m:
        s["ipfix"] = dict(records=int(m.group(1)), interim=int(m.group(2)), dropped_queue_full=int(m.group(3)),
                          dropped_tracker_full=int(m.group(4)),
                          collectors={c: (int(a), int(b)) for c, a, b in
                                      re.findall(r"; (\S+): (\d+) messages, (\d+) send errors", m.group(5))})
    # The handoff plan's line (absent under the others: nothing is handed off there).
    m = re.search(r"^  handoff: (\d+) passed to their owner, (\d+) dropped \(owner's ring full\)$", stderr, re.M)
    s["handed_off"], s["handoff_dropped"] = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    s["ports"] = {}
    for m in re.finditer(r"^  port (\d+) \((\S+)\): rx (\d+), tx (\d+), missed (\d+), rx errors (\d+), "
                         r"no mbuf (\d+)$", stderr, re.M):
        s["ports"][int(m.group(1))] = dict(name=m.group(2), rx=int(m.group(3)), tx=int(m.group(4)),
                                           missed=int(m.group(5)), errors=int(m.group(6)),
                                           nombuf=int(m.group(7)))
    return s


# --- running -----------------------------------------------------------------------------------

def run(exe, vdevs, opts, lcores="0", timeout=40.0, events=True, tmpdir="/tmp", scrape_when_rx=None,
        stop_when_idle_ms=None, stop_after_s=None, on_started=None, memory_mb=512, env=None,
        stop_signal=signal.SIGINT, eal_extra=()):
    """Runs flowcop to completion.

    scrape_when_rx: an int (packets all ports must have received) or a callable(metrics) -> bool;
    flowcop is then run with the exporter on a free loopback port, scraped until the condition
    holds and two consecutive scrapes agree, and stopped with SIGINT. Otherwise it stops by
    --stop-when-idle-ms (default 500) or, with stop_after_s, by SIGINT that long after it started
    running (its startup config line; at once with --quiet).
    on_started(result) runs once the exporter URL is known (inline tests drive traffic there) and
    may return a callable(metrics) -> bool used as the stop condition (result.pid is set by then).
    stop_signal: what stops a metrics or stop_after_s run (SIGINT, or SIGTERM as systemd sends).
    eal_extra: more EAL arguments (e.g. --force-max-simd-bitwidth=128)."""
    res = Result()
    ev_path = None
    args = list(opts)
    if events:
        ev_path = os.path.join(tmpdir, "events_%d_%d.jsonl" % (os.getpid(), _run_id[0] + 1))
        if os.path.exists(ev_path):
            os.unlink(ev_path)
        args += ["--events", ev_path]
    want_metrics = scrape_when_rx is not None or on_started is not None
    if "--metrics-addr" not in args:
        args += ["--metrics-addr", "127.0.0.1:0" if want_metrics else "none"]
    if not want_metrics and stop_after_s is None and "--stop-when-idle-ms" not in args:
        args += ["--stop-when-idle-ms", str(stop_when_idle_ms or 500)]
    if "--flows-per-lcore" not in args:
        args += ["--flows-per-lcore", "65536"]
    cmd = [exe] + eal_args(vdevs, lcores, memory_mb) + list(eal_extra) + ["--"] + args
    t0 = time.monotonic()
    deadline = t0 + timeout
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    res.pid = p.pid
    lines = []
    url_found = threading.Event()
    # The startup config line comes after flowcop installed its SIGINT/SIGTERM handlers (main.cpp):
    # a stop sent before it would kill a process still starting (slow under load) with the default
    # action instead of stopping it. --quiet prints no such line.
    running = threading.Event()
    if "--quiet" in args:
        running.set()

    def reader():
        for line in p.stderr:
            lines.append(line)
            if line.startswith("flowcop: config: "):
                running.set()
            if "metrics at " in line:
                res.metrics_url = line.split("metrics at ", 1)[1].strip()
                url_found.set()
        url_found.set()
        running.set()

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    try:
        if want_metrics:
            url_found.wait(max(0.0, deadline - time.monotonic()))
            cond = None
            if on_started is not None and res.metrics_url:
                cond = on_started(res)
            if cond is None and scrape_when_rx is not None:
                if callable(scrape_when_rx):
                    cond = scrape_when_rx
                else:
                    want = int(scrape_when_rx)
                    cond = lambda m: metric(m, "flowcop_port_rx_packets_total") >= want
            # Quiet means unchanged for STABLE_FOR_S, not across two scrapes 0.1 s apart: on a loaded
            # machine a generator thread can be descheduled longer than that and then resume.
            prev, since = None, None
            while res.metrics_url and cond is not None and time.monotonic() < deadline and p.poll() is None:
                try:
                    m = scrape(res.metrics_url, timeout=2.0)
                except OSError:
                    time.sleep(0.05)
                    continue
                now = time.monotonic()
                stable = [(n, tuple(sorted(l.items())), v) for n, l, v in m
                          if n.startswith(("flowcop_flows_", "flowcop_packets_total", "flowcop_port_rx_packets"))]
                if not cond(m):
                    prev, since = None, None
                elif stable != prev:
                    prev, since = stable, now
                elif now - since >= STABLE_FOR_S:
                    res.metrics = m
                    break
                time.sleep(0.1)
            if p.poll() is None:
                p.send_signal(stop_signal)
        elif stop_after_s is not None:
            running.wait(max(0.0, deadline - time.monotonic()))
            end = min(deadline, time.monotonic() + stop_after_s)
            while time.monotonic() < end and p.poll() is None:
                time.sleep(0.05)
            if p.poll() is None:
                p.send_signal(stop_signal)
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            res.timed_out = True
            p.kill()
            p.wait(5)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(5)
        th.join(5)
        remove_runtime_dir(cmd)
    res.elapsed = time.monotonic() - t0
    res.rc = p.returncode
    res.stderr = "".join(lines)
    res.summary = parse_summary(res.stderr)
    if ev_path and os.path.exists(ev_path):
        with open(ev_path) as f:
            res.events = [json.loads(line) for line in f if line.strip()]
        os.unlink(ev_path)
    return res


# --- invariants --------------------------------------------------------------------------------

def flow_id(e):
    return (e["lcore"], e["proto"], e["src"], e["sport"], e["dst"], e["dport"], tuple(e.get("vlan", ())))


def conn_key(e):
    """Direction-free key of an event's connection (what a VLAN-aware tracker keys on)."""
    a, b = (e["src"], e["sport"]), (e["dst"], e["dport"])
    return (tuple(e.get("vlan", ())), min(a, b), max(a, b))


def pair_flows(events):
    """[(new_event, destroy_event)] in destroy order, plus a list of problems."""
    open_ = {}
    pairs, problems = [], []
    for e in events:
        k = (e["lcore"], e.get("proto", "tcp")) + conn_key(e)
        if e["event"] == "new":
            if k in open_:
                problems.append("second new while open: %r" % (k,))
            open_[k] = e
        elif e["event"] == "destroy":
            n = open_.pop(k, None)
            if n is None:
                problems.append("destroy without new: %r" % (k,))
                continue
            if (n["src"], n["sport"]) != (e["src"], e["sport"]):
                problems.append("originator changed between new and destroy: %r" % (k,))
            pairs.append((n, e))
        else:
            problems.append("unknown event kind %r" % e["event"])
    for k in open_:
        problems.append("never destroyed: %r" % (k,))
    return pairs, problems


def check_invariants(tap, res, label=""):
    """The checks every successful run must pass (see the module docstring), then
    check_event_accounting and check_deadlines."""
    _check_run(tap, res, label)
    check_event_accounting(tap, res, label)
    check_deadlines(tap, res, label)


def _check_run(tap, res, label):
    p = (label + ": ") if label else ""
    tap.eq(res.rc, 0, p + "flowcop exits 0")
    tap.ok(not res.timed_out, p + "flowcop stopped within its time bound")
    s = res.summary
    if not tap.ok(s is not None and "created" in s, p + "the final summary is printed", res.stderr[-3000:]):
        return
    news, dest = Counter(), Counter()
    for e in res.events:
        (news if e["event"] == "new" else dest)[e["lcore"]] += 1
    tap.eq(dict(news), dict(dest), p + "per lcore, flows created == flows destroyed in the event log")
    pairs, problems = pair_flows(res.events)
    tap.ok(not problems, p + "every destroy event closes the one open flow of its key", "\n".join(problems[:20]))
    bad = [e for e in res.destroys() if e.get("reason") not in REASONS]
    tap.ok(not bad, p + "every destroy event has a known reason", bad[:5])
    tap.eq((s["created"], s["ended"], s["active"]), (len(res.news()), len(res.destroys()), 0),
           p + "summary: created and ended match the event log, nothing left active")
    by_reason = Counter(e["reason"] for e in res.destroys())
    tap.eq(s["reasons"], {r: by_reason.get(r, 0) for r in REASONS},
           p + "summary: flows ended per reason match the event log")
    # Where every packet went: each received packet is tracked (and counted by verdict) on its owner lcore, or
    # dropped and counted on the way there (a full handoff ring, which a NIC port cannot wait for).
    tap.eq(sum(s["verdict"].values()) + s["handoff_dropped"], s["received"],
           p + "summary: packets by verdict + handoff drops add up to packets received")
    tap.eq(sum(pt["rx"] for pt in s["ports"].values()), s["received"],
           p + "summary: packets received == the ports' rx counters")
    if s.get("forwarded") is not None:
        # Inline (app/operations.md): received = forwarded + dropped by --policy + the other drops.
        tap.eq(s["forwarded"] + s["tx_dropped"] + s["policy_dropped"] + s["handoff_dropped"], s["received"],
               p + "summary: forwarded + tx-dropped + dropped by policy + handoff drops == received")
    tap.eq((s.get("events_written"), s.get("events_dropped"), s.get("events_errors")), (len(res.events), 0, 0),
           p + "summary: every event was written, none dropped")
    tcp = s["verdict"].get("tcp", 0)
    reached = tcp - s["tcp_no_flow"] - s["tcp_table_full"]  # tracked + invalid for state + out of window
    tracked = reached - s["tcp_invalid"] - s["tcp_out_of_window"]
    reached -= s.get("policy_refused_dropped", 0)  # refused segments --policy (inline) kept off their flow
    flow_pkts = sum(e["packets_orig"] + e["packets_reply"] for e in res.destroys())
    tap.eq(flow_pkts, reached + s["other_tracked"] + s["fragments_tracked"],
           p + "per-flow packets summed == packets that reached a flow (TCP tracked, invalid for state, out of "
               "window; other protocols tracked; later fragments counted on a flow)")
    bad_t = [e for e in res.destroys() if not (e["first_seen"] <= e["last_seen"] <= e["time"])]
    tap.ok(not bad_t, p + "first_seen <= last_seen <= time for every destroyed flow", bad_t[:3])
    m = res.metrics
    if m is None:
        return
    lcores = sorted({l["lcore"] for n, l, v in m if n == "flowcop_flows_created_total"})
    ok = True
    diag = []
    for lc in lcores:
        created = metric(m, "flowcop_flows_created_total", lcore=lc)
        expired = metric(m, "flowcop_flows_expired_total", lcore=lc)
        active = metric(m, "flowcop_flows_active", lcore=lc)
        if created != expired + active:
            ok = False
            diag.append("lcore %s: created %s != expired %s + active %s" % (lc, created, expired, active))
        if created != news.get(int(lc), 0):
            ok = False
            diag.append("lcore %s: metric created %s, events %s" % (lc, created, news.get(int(lc), 0)))
    tap.ok(ok, p + "metrics: per lcore created == expired + active, and == the event log's creations", "\n".join(diag))
    want = dict(s["reasons"])
    got = {r: int(metric(m, "flowcop_flows_expired_total", reason=r)) for r in REASONS}
    active_at_scrape = int(metric(m, "flowcop_flows_active"))
    # Flows still in the table at the scrape end at the stop: as shutdown, or by
    # their own reason when an RST/kill was pending or their deadline had passed.
    later = {r: want.get(r, 0) - got[r] for r in REASONS}
    ok = all(v >= 0 for v in later.values()) and sum(later.values()) == active_at_scrape
    tap.ok(ok, p + "metrics: expiries per reason at the scrape, plus the flows then active, match the summary",
           "scrape %s + %d active vs summary %s" % (got, active_at_scrape, want))
    results = int(metric(m, "flowcop_packets_total"))
    dropped = int(metric(m, "flowcop_handoff_dropped_total") or 0)
    tap.eq(results + dropped, s["received"],
           p + "metrics: packets by result + handoff drops add up to packets received")
    tap.eq(int(metric(m, "flowcop_packets_total", result="tracked")), tracked,
           p + "metrics: tracked TCP packets match the summary")
    tap.eq(int(metric(m, "flowcop_packets_total", result="tcp_out_of_window")), s["tcp_out_of_window"],
           p + "metrics: out-of-window TCP packets match the summary")
    tap.eq(int(metric(m, "flowcop_port_rx_packets_total")), s["received"],
           p + "metrics: port rx packets match the summary")


def check_layout(tap, res, layout, label=""):
    """The run used the layout's ownership plan (flowcoptest/layouts.py), and lost no packet on the way to
    its owner: a replay from a file waits for a full handoff ring rather than dropping (issue 27)."""
    p = (label + ": ") if label else ""
    m = re.search(r"ownership plan (\S+) ", res.stderr)
    tap.eq(m and m.group(1), layout.plan, p + "flowcop ran the %s plan on -l %s" % (layout.plan, layout.lcores))
    s = res.summary
    tap.eq(s and s["handoff_dropped"], 0, p + "no packet was dropped on its way to its owner lcore")


# --- configuration, histograms, process memory ---------------------------------------------------

_CONFIG_RE = re.compile(r'([a-z_0-9]+)=("(?:[^"\\]|\\.)*"|\S*)')


def parse_config(stderr):
    """{key: value} of the startup line 'flowcop: config: k=v ...' (status.cpp's describe_line),
    or {} when it is absent (--quiet). Quoted values are returned without their quotes."""
    m = re.search(r"^flowcop: config: (.*)$", stderr, re.M)
    if not m:
        return {}
    return {k: (v[1:-1] if v.startswith('"') else v) for k, v in _CONFIG_RE.findall(m.group(1))}


def state_timeouts_us(config):
    """{'ESTABLISHED': microseconds, ...}: each TCP state's inactivity timeout as the running flowcop
    applies it (tcp_timeout_<state>, or default_inactivity_timeout when that is 0), before any timeout
    cap (tcp_timeout_capped_us applies the one a destroy event names)."""
    default = int(config["default_inactivity_timeout"])
    caps = ("max_retrans", "unacknowledged")
    out = {}
    for k, v in config.items():
        if k.startswith("tcp_timeout_") and k[len("tcp_timeout_"):] not in caps:
            out[k[len("tcp_timeout_"):].upper()] = (int(v) or default) * 1_000_000
    return out


def tcp_timeout_capped_us(e, config, tcp_timeouts):
    """The inactivity timeout the TCP flow of destroy event e was under: its state's, lowered to the
    timeout cap window tracking had put on it, which the event names in timeout_cap (lib/events/event.h):
    tcp_timeout_max_retrans, tcp_timeout_unacknowledged or the CLOSE timeout; a cap of 0 s is no cap
    (lib/tcpstate/window.h, capped_timeout)."""
    own = tcp_timeouts[e["state"]]
    cap = e.get("timeout_cap")
    if cap is None:
        return own
    cap_us = tcp_timeouts["CLOSE"] if cap == "close" else int(config["tcp_timeout_" + cap]) * 1_000_000
    return min(own, cap_us) if cap_us > 0 else own


def flow_timeout_us(e, config, tcp_timeouts):
    """The shortest inactivity timeout the flow of destroy event e can have been under: for TCP its
    state's, capped as the event says (tcp_timeout_capped_us), or for the other protocols (state
    UNREPLIED/REPLIED) --udp-timeout (and --udp-timeout-stream once replied: the event does not say
    whether it was assured), --icmp-timeout, --generic-timeout."""
    if e.get("proto", "tcp") == "tcp":
        return tcp_timeout_capped_us(e, config, tcp_timeouts)
    s = lambda k, d: int(config.get(k, d)) * 1_000_000  # noqa: E731
    if e["proto"] == "udp":
        u = s("udp_timeout", 30)
        return u if e["state"] == "UNREPLIED" else min(u, s("udp_timeout_stream", 120))
    if e["proto"] in ("icmp", "icmpv6"):
        return s("icmp_timeout", 30)
    return s("generic_timeout", 600)


def measure_rss_not_asan():
    """Shrinks AddressSanitizer's quarantine in this process's environment (inherited by the flowcop it
    starts), so an RSS check measures flowcop's own memory. Under ASan every free() parks the block in
    a quarantine of up to 256 MiB, so the control threads' ordinary malloc churn (each scrape renders
    the metrics into fresh strings) grows RSS for minutes: the soak measured +3.2 MiB after its warm-up
    with the default quarantine, +0.8 MiB with 1 MiB. Use-after-free detection keeps a shorter window.
    No effect on a build without ASan."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    os.environ["ASAN_OPTIONS"] = (asan + ":" if asan else "") + \
        "quarantine_size_mb=1:thread_local_quarantine_size_kb=64"


def warm_exporter(tap, url, pid):
    """Before an RSS baseline: every exporter thread serves scrapes, kHttpThreads at once
    (exporter_threads.warm_exporter says why), and the test says whether it reached them all."""
    answered, asked, ran, found = exporter_threads.warm_exporter(url, pid)
    threads = exporter_limits()[0]
    return tap.ok(answered == asked and ran == found == threads,
                  "before the RSS baseline, every exporter thread served a scrape (%d of %d parallel scrapes "
                  "answered; %d of %d civetweb workers ran; kHttpThreads %d)" % (answered, asked, ran, found, threads))


def rss_bytes(pid):
    """Resident set size of a live process (VmRSS), or None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def us(t):
    """An event time (Unix seconds, 6 decimals) as integer microseconds."""
    return int(round(float(t) * 1_000_000))


# --- further invariants: event accounting, deadlines -------------------------------------------

def check_event_accounting(tap, res, label=""):
    """Every event the tables produced (one per flow created, one per flow ended) was written or
    counted dropped, and the file holds exactly the written ones. Holds with drops too (a full
    disk), where check_invariants' 'none dropped' does not."""
    p = (label + ": ") if label else ""
    s = res.summary
    if not tap.ok(s is not None and "events_written" in s, p + "the summary has an events line", res.stderr[-2000:]):
        return
    tap.eq(s["events_written"] + s["events_dropped"], s["created"] + s["ended"],
           p + "events written + dropped == produced (flows created + flows ended)")


def check_deadlines(tap, res, label=""):
    """No flow ended by a timeout before its deadline, from the event times: an inactivity expiry
    at or after last_seen + its state's timeout, an active one at or after first_seen + the
    active timeout, a 'closed' one at or after its TIME_WAIT/CLOSE timeout unless a SYN reopened
    the connection at that very time. From the last scrape's lag histogram: no expiry observed a
    negative lag (which would wrap into the +Inf bucket, beyond the 60 s bound)."""
    p = (label + ": ") if label else ""
    cfg = res.config()
    if not tap.ok(bool(cfg), p + "the startup config line is printed (timeouts to check deadlines against)"):
        return
    tmo = state_timeouts_us(cfg)
    active = int(cfg["active_timeout"]) * 1_000_000
    reopened = {(e["lcore"],) + conn_key(e) + (e["time"],) for e in res.news()}
    early = []
    for e in res.destroys():
        t, last, first = us(e["time"]), us(e["last_seen"]), us(e["first_seen"])
        r = e["reason"]
        timeout = flow_timeout_us(e, cfg, tmo)  # capped as a TCP event says; the other protocols' own
        if r == "inactivity" and t < last + timeout:
            early.append(e)
        elif r == "active" and (not active or t < first + active):
            early.append(e)
        elif r == "closed" and t < last + timeout and \
                (e["lcore"],) + conn_key(e) + (e["time"],) not in reopened:
            early.append(e)
    tap.ok(not early, p + "no flow ended by a timeout before its deadline (event times)", early[:3])
    if res.metrics is not None:
        buckets, count, total = histogram(res.metrics, "flowcop_timeout_lag_seconds")
        finite = [c for le, c in buckets if le != float("inf")]
        top = finite[-1] if finite else 0
        tap.ok(buckets and count == top and total <= count * buckets[-2][0],
               p + "lag histogram: no expiry beyond its largest bound (a negative lag would wrap there)",
               "buckets %r count %r sum %r" % (buckets, count, total))
