#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Soak: flowcop on flowgen traffic for minutes, flows constantly created and ending, its memory
and its accounting watched throughout (tests/reliability.md).

Usage: soak.py FLOWCOP_EXE [--duration S] [--warmup S] [--sample S] [--flows N] [--lifetime S]
               [--pps N] [--capacity N] [--events-ring N] [--idle-timeout S] [--active-timeout S]
               [--close-timeout S] [--rss-slack-mib M] [--report FILE]

flowcop runs in production mode (--clock tsc, one lcore) on a flowgen port paced to wall time
(realtime=1): `flows` concurrent connections with exponential lifetimes, closing by FIN, by RST,
or going silent; the ESTABLISHED timeout (--idle-timeout, 5 s) expires the silent ones,
--active-timeout (30 s) the long-lived ones, TIME_WAIT and CLOSE (--close-timeout, 2 s) the
closed ones. The table must hold about flows + rate x (0.3 idle-timeout + 0.5 close-timeout),
rate = flows / lifetime. The event log goes through a
FIFO to this script, which checks every event as it arrives (memory bounded by the open flows,
nothing on disk). Every --sample seconds it records flowcop's RSS and a scrape. flowgen stops
at --duration; once the counters are still, the last scrape is taken and flowcop is stopped.

Checked (TAP):
  - RSS after the warm-up never exceeds its value at the end of the warm-up by more than
    --rss-slack-mib (every exporter thread serves a scrape first, harness.warm_exporter: a
    thread's first scrape sets up its allocator cache), and flowcop_flow_table_memory_bytes
    never changes (the warm-up must be
    long enough for the event ring and the hash's free-slot ring, both FIFOs, to wrap once:
    until then every new slot touches a new page);
  - the table never holds more than its capacity; no table_full refusal, no event dropped, no
    packet missed or short of an mbuf, flowcop_up stays 1; RX kept pace with the generator;
  - with traffic stopped and the counters still, per lcore, flows_active == the flows the event
    stream shows open (flows_active is created - expired by construction; the event stream,
    written by another thread from per-flow events, is the independent count);
  - the summary: created == ended (0 active), per reason == the event log's, events written +
    dropped == produced (and written == the lines received);
  - every destroy closes the one open flow of its key, none is left open; no flow ended by a
    timeout before its deadline (event times), and the lag histogram has nothing in +Inf;
  - traffic exercised every timeout: inactivity, active and closed expiries, and resets.
Needs the flowgen port (--flowgen); runs as any user that can run flowcop with --no-huge.
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "hostile"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

from flowcoptest import harness  # noqa: E402
import hostile  # noqa: E402


class EventChecker:
    """Checks the event stream one line at a time: pairing, per-reason counts, deadlines."""

    def __init__(self):
        self.open = {}
        self.news, self.destroys = Counter(), Counter()
        self.reasons = Counter()
        self.problems = []
        self.early = []
        self.pending_closed = {}       # a 'closed' end before its timeout: fine only if a SYN reopened it
        self.lines = 0
        self.tmo = None
        self.cfg = None
        self.active = None

    def configure(self, cfg):
        self.cfg = cfg
        self.tmo = harness.state_timeouts_us(cfg)
        self.active = int(cfg["active_timeout"]) * 1_000_000

    def problem(self, text):
        if len(self.problems) < 20:
            self.problems.append(text)

    def feed(self, line):
        self.lines += 1
        try:
            e = json.loads(line)
        except ValueError:
            self.problem("not JSON: %r" % line[:200])
            return
        k = (e["lcore"],) + harness.conn_key(e)
        if e["event"] == "new":
            self.news[e["lcore"]] += 1
            if k in self.open:
                self.problem("second new while open: %r" % (k,))
            self.open[k] = e
            self.pending_closed.pop(k + (e["time"],), None)
            return
        self.destroys[e["lcore"]] += 1
        self.reasons[e["reason"]] += 1
        n = self.open.pop(k, None)
        if n is None:
            self.problem("destroy without new: %r" % (k,))
        t, last, first = harness.us(e["time"]), harness.us(e["last_seen"]), harness.us(e["first_seen"])
        r = e["reason"]
        if self.tmo is None:
            return
        timeout = harness.flow_timeout_us(e, self.cfg, self.tmo)  # capped as a TCP event says
        if r == "inactivity" and t < last + timeout:
            self.early.append(e)
        elif r == "active" and (not self.active or t < first + self.active):
            self.early.append(e)
        elif r == "closed" and t < last + timeout:
            self.pending_closed[k + (e["time"],)] = e
        if not (first <= last <= t):
            self.problem("first_seen <= last_seen <= time broken: %r" % e)

    def finish(self):
        self.early += list(self.pending_closed.values())
        for k in list(self.open)[:5]:
            self.problem("never destroyed: %r" % (k,))


def read_fifo(path, checker, ready):
    """Reader thread: blocks until flowcop opens the FIFO, then checks every line until EOF."""
    with open(path, "r") as f:
        ready.wait(30)   # the config line (timeouts) comes moments after flowcop opens the FIFO
        for line in f:
            if line.strip():
                checker.feed(line)


def unblock_reader(path):
    """If flowcop never opened the FIFO, the reader still waits in open(): give it an EOF."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def scrape_or_none(url):
    try:
        return harness.scrape(url, timeout=5)
    except OSError:
        return None


def sample(fc, t0):
    m = scrape_or_none(fc.url)
    return {"t": round(time.monotonic() - t0, 1), "rss": harness.rss_bytes(fc.pid), "m": m}


def summarize(s):
    m = s["m"]
    if m is None:
        return {"t": s["t"], "rss": s["rss"], "scrape": None}
    g = lambda name, **kw: int(harness.metric(m, name, **kw))  # noqa: E731
    return {"t": s["t"], "rss": s["rss"], "active": g("flowcop_flows_active"),
            "created": g("flowcop_flows_created_total"), "expired": g("flowcop_flows_expired_total"),
            "events_written": g("flowcop_events_written_total"), "events_dropped": g("flowcop_events_dropped_total"),
            "rx": g("flowcop_port_rx_packets_total"), "table_memory": g("flowcop_flow_table_memory_bytes")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exe")
    ap.add_argument("--duration", type=float, default=300, help="seconds of traffic (default 300)")
    ap.add_argument("--warmup", type=float, default=60, help="seconds before memory must stay flat (default 60)")
    ap.add_argument("--sample", type=float, default=5, help="seconds between samples (default 5)")
    ap.add_argument("--flows", type=int, default=20000, help="concurrent flows (default 20000)")
    ap.add_argument("--lifetime", type=float, default=10, help="mean flow lifetime, s (default 10)")
    ap.add_argument("--pps", type=int, default=50000, help="packets per second (default 50000)")
    ap.add_argument("--capacity", type=int, default=65536, help="--flows-per-lcore (default 65536)")
    ap.add_argument("--events-ring", type=int, default=16384, help="--events-ring (default 16384)")
    ap.add_argument("--idle-timeout", type=int, default=5, help="--tcp-timeout-established (default 5)")
    ap.add_argument("--active-timeout", type=int, default=30, help="--active-timeout (default 30)")
    ap.add_argument("--close-timeout", type=int, default=2, help="TIME_WAIT and CLOSE timeouts (default 2)")
    ap.add_argument("--rss-slack-mib", type=float, default=2.0, help="allowed RSS growth after warm-up (2)")
    ap.add_argument("--report", help="write every sample as JSON here")
    a = ap.parse_args()

    tap = harness.Tap()
    harness.measure_rss_not_asan()
    tmp = tempfile.mkdtemp(prefix="flowcop-soak-")
    fifo = os.path.join(tmp, "events.fifo")
    os.mkfifo(fifo)
    fg = "flows=%d,lifetime=%g,idle_pct=30,rst_pct=20,pps=%d,realtime=1,duration=%g,seed=%d" % (
        a.flows, a.lifetime, a.pps, a.duration, int(time.time()) % 100000)
    opts = ["--clock", "tsc", "--flowgen", fg, "--flows-per-lcore", str(a.capacity), "--events-ring",
            str(a.events_ring), "--events", fifo, "--metrics-addr", "127.0.0.1:0", "--tick-ms", "100",
            "--check-interval-ms", "100", "--tcp-timeout-established", str(a.idle_timeout), "--active-timeout",
            str(a.active_timeout), "--tcp-timeout-time-wait", str(a.close_timeout), "--tcp-timeout-close",
            str(a.close_timeout)]
    tap.note("flowgen %s" % fg)
    checker = EventChecker()
    ready = threading.Event()
    reader = threading.Thread(target=read_fifo, args=(fifo, checker, ready), daemon=True)
    reader.start()
    samples = []
    try:
        with hostile.Running(a.exe, [], opts, timeout=30) as fc:
            cfg = harness.parse_config(fc.stderr)
            if cfg:
                checker.configure(cfg)
            ready.set()
            if not tap.ok(fc.url and cfg, "flowcop started (exporter and config line)", fc.stderr[-2000:]):
                tap.done()
            harness.warm_exporter(tap, fc.url, fc.pid)  # the RSS baseline is the warm-up's last sample
            t0 = time.monotonic()
            next_t = t0
            while time.monotonic() - t0 < a.duration and fc.alive():
                samples.append(sample(fc, t0))
                s = summarize(samples[-1])
                if s.get("active") is not None:
                    tap.note("t=%5.0fs rss %.1f MiB active %d created %d expired %d events %d rx %d" % (
                        s["t"], s["rss"] / 2**20, s["active"], s["created"], s["expired"], s["events_written"],
                        s["rx"]))
                next_t += a.sample
                time.sleep(max(0.0, next_t - time.monotonic()))
            # flowgen has stopped: wait for the counters to be still (idle lcore), bounded.
            last, prev = None, None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and fc.alive():
                m = scrape_or_none(fc.url)
                keyed = m and sorted((n, tuple(sorted(l.items())), v) for n, l, v in m
                                     if n.startswith(("flowcop_flows_", "flowcop_port_rx_packets")))
                if keyed and keyed == prev:
                    last = m
                    break
                prev = keyed
                time.sleep(1.0)
            # The event stream is another thread's (the writer, then this reader): let it catch up.
            want = int(harness.metric(last, "flowcop_events_written_total")) if last else None
            deadline = time.monotonic() + 10
            while want is not None and checker.lines < want and time.monotonic() < deadline:
                time.sleep(0.05)
            open_at_still = Counter(k[0] for k in list(checker.open))
            samples.append(sample(fc, t0))
    finally:
        ready.set()
        if reader.is_alive():
            unblock_reader(fifo)
    reader.join(30)
    checker.finish()
    res = harness.Result()
    res.rc, res.stderr, res.summary = fc.rc, fc.stderr, harness.parse_summary(fc.stderr)
    try:
        os.unlink(fifo)
        os.rmdir(tmp)
    except OSError:
        pass
    if a.report:
        with open(a.report, "w") as f:
            json.dump({"flowgen": fg, "opts": opts, "samples": [summarize(x) for x in samples]}, f, indent=1)

    tap.eq(res.rc, 0, "flowcop exits 0")
    s = res.summary
    if not tap.ok(s is not None and "created" in s and "events_written" in s, "the summary is printed",
                  res.stderr[-2000:]):
        tap.done()
    tap.ok(not reader.is_alive(), "the event stream ended (EOF) with flowcop")

    # Memory.
    post = [x for x in samples if x["t"] >= a.warmup and x["rss"]]
    base = [x for x in samples if x["t"] < a.warmup and x["rss"]]
    if tap.ok(len(post) >= 3 and base, "at least 3 samples after the %g s warm-up (%d)" % (a.warmup, len(post))):
        ref = base[-1]["rss"]
        growth = max(x["rss"] for x in post) - ref
        n = len(post)
        mt = sum(x["t"] for x in post) / n
        mr = sum(x["rss"] for x in post) / n
        var = sum((x["t"] - mt) ** 2 for x in post) or 1.0
        slope = sum((x["t"] - mt) * (x["rss"] - mr) for x in post) / var
        tap.note("RSS at the end of warm-up %.1f MiB, max after %.1f MiB, trend %.2f MiB/hour"
                 % (ref / 2**20, (ref + growth) / 2**20, slope * 3600 / 2**20))
        tap.ok(growth <= a.rss_slack_mib * 2**20,
               "RSS after the warm-up stays within %.1f MiB of its end-of-warm-up value (+%.2f MiB)"
               % (a.rss_slack_mib, growth / 2**20))
    scraped = [summarize(x) for x in samples if x["m"] is not None]
    tap.ok(len(scraped) >= len(samples) - 1, "every sample's scrape answered (%d of %d)" % (len(scraped), len(samples)))
    tap.ok(len({x["table_memory"] for x in scraped}) == 1, "flowcop_flow_table_memory_bytes never changes",
           sorted({x["table_memory"] for x in scraped}))
    peak = max((x["active"] for x in scraped), default=0)
    tap.ok(0 < peak <= a.capacity, "the table never held more than its capacity (peak %d of %d)" % (peak, a.capacity))

    # Degradations that must not happen at this load.
    m = last or (samples[-1]["m"] if samples else None)
    if not tap.ok(m is not None, "a final scrape with traffic stopped (counters still)"):
        tap.done()
    zero = {n: int(harness.metric(m, n)) for n in ("flowcop_flows_dropped_total", "flowcop_events_dropped_total",
                                                   "flowcop_port_rx_missed_total", "flowcop_port_rx_nombuf_total")}
    tap.eq(zero, {n: 0 for n in zero}, "no table_full refusal, no event dropped, no packet missed or short of an mbuf")
    tap.ok(all(harness.metric(x["m"], "flowcop_up") == 1 for x in samples if x["m"] is not None),
           "flowcop_up was 1 in every sample")
    rx = int(harness.metric(m, "flowcop_port_rx_packets_total"))
    tap.ok(rx >= 0.5 * a.pps * a.duration, "RX kept pace with the generator: %d packets in %g s at %d pps paced"
           % (rx, a.duration, a.pps))

    # Accounting.
    ok, diag = last is not None, []
    for lc in sorted({l["lcore"] for n, l, v in m if n == "flowcop_flows_created_total"}):
        c, e, act = (int(harness.metric(m, n, lcore=lc)) for n in ("flowcop_flows_created_total",
                                                                    "flowcop_flows_expired_total",
                                                                    "flowcop_flows_active"))
        if c != e + act or act != open_at_still.get(int(lc), 0):
            ok = False
        diag.append("lcore %s: created %d, expired %d, active %d, open in the event stream %d"
                    % (lc, c, e, act, open_at_still.get(int(lc), 0)))
    tap.ok(ok, "traffic stopped, per lcore: created == expired + active == the event stream's open flows "
           "(%s)" % "; ".join(diag), "\n".join(diag))
    tap.eq((s["created"], s["ended"], s["active"]), (sum(checker.news.values()), sum(checker.destroys.values()), 0),
           "summary: created and ended == the event stream's, nothing left active")
    tap.eq(s["reasons"], {r: checker.reasons.get(r, 0) for r in harness.REASONS},
           "summary: flows ended per reason == the event stream's")
    tap.eq((s["events_written"] + s["events_dropped"], s["events_written"]), (s["created"] + s["ended"], checker.lines),
           "events written + dropped == produced, and written == the lines received")
    tap.ok(not checker.problems, "every destroy closes the one open flow of its key; none is left open",
           "\n".join(checker.problems))
    tap.ok(not checker.early, "no flow ended by a timeout before its deadline (%d destroys checked)"
           % sum(checker.destroys.values()), checker.early[:3])
    buckets, count, _ = harness.histogram(m, "flowcop_timeout_lag_seconds")
    finite = [c for le, c in buckets if le != float("inf")]
    tap.ok(buckets and finite and count == finite[-1] and count > 0,
           "lag histogram: %d timeouts, none in +Inf (a negative lag would wrap there)" % count, buckets)
    le = dict(buckets)
    tap.note("lag: %s" % ", ".join("<=%gs %d" % (b, c) for b, c in buckets if b in (0.1, 0.25, 0.5, 1.0, 5.0)))
    r = s["reasons"]
    tap.ok(all(r[k] > 0 for k in ("inactivity", "active", "closed", "reset")),
           "every kind of ending happened: %s" % ", ".join("%s %d" % kv for kv in sorted(r.items())))
    tap.ok(le.get(5.0, 0) == count, "every timeout fired within 5 s of its deadline")
    tap.done()


if __name__ == "__main__":
    main()
