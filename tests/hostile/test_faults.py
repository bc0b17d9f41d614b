#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Faults around the data plane, through the real flowcop binary: each is a clear error (exit
code and one line naming the cause) or a counted degradation with the data plane unaffected.

Usage: test_faults.py FLOWCOP_EXE TMPDIR REPO_ROOT

  1. The events output fails. /dev/full (ENOSPC from the first write) and a 16 KiB tmpfs that
     fills mid-run: the replay's flows, verdicts and end reasons are exactly those of a run with
     a working file; every event is written or counted dropped (summary and metrics); one line
     on stderr; on the tmpfs the complete lines are the first lines of the working run's log.
     A read-only filesystem is an exit-2 error naming --events.
  2. A port that cannot start: a capture file that does not exist, alone or next to a good
     one, an interface that does not exist, an mbuf pool or a flow table larger than EAL's
     memory. Exit 1, the cause on stderr, no packet read, within seconds.
  3. SIGTERM in the middle of a flowgen burst (flows created and ending at full speed): exit 0,
     the summary, every event flushed to the file, and every run invariant (hostile.finish).
  4. Clients holding connections while flowgen runs: seven idle HTTP connections (one with half
     a request) do not delay a scrape; eight (all of the exporter's threads) delay it by at most
     the exporter's 0.5 s request timeout; 24 connections reopened as soon as the exporter closes
     them, idle or sending a byte at a time, delay scrapes by at most (24 - 8 + 1) / 8 rounds of
     that timeout; twelve telemetry clients that connect and send
     nothing (ten greeted, DPDK's limit, two closed at once) do not take telemetry away: flowcop
     closes the idle ones (app/service/control/telemetry_guard.h) and a new client is answered within
     the guard's 2 s + one scan; RX keeps flowing throughout, and the run ends with every
     invariant.
  5. --metrics-allow 127.0.0.1/32: a request from 127.0.0.2 is closed unanswered at once; 32
     connections from 127.0.0.2 (four per exporter thread) reopened as soon as closed, idle or a
     byte at a time, are each closed as they connect, and every scrape from 127.0.0.1 meanwhile
     is answered at once (civetweb checks the list before a connection takes an HTTP thread).
The metrics port already taken and the events path in a missing directory are exit-2 errors
tested in tests/integration/test_bad_flags.py; malformed telemetry commands are tested in
tests/app/test_telemetry_commands.py.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time


import hostile  # noqa: E402
from hostile import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402

FAST = ["--clock", "packet"]
HTTP_THREADS, REQUEST_TIMEOUT_S = harness.exporter_limits()  # app/service/control/exporter.h
HTTP_ABUSERS = 24                           # connections reopened by an abusive client
ALLOWED, OUTSIDER = "127.0.0.1", "127.0.0.2"  # --metrics-allow's test: a Prometheus, and another local client
ALLOW = ALLOWED + "/32"
TELEMETRY_MAX = 10                          # DPDK 22.11's connection limit
GUARD_IDLE_S, GUARD_SCAN_S = 2.0, 0.25      # app/service/control/telemetry_guard.h under pressure


def data_plane(s):
    """What the tracker did, independent of where its events went."""
    return {k: s.get(k) for k in ("received", "verdict", "tcp_invalid", "tcp_no_flow", "tcp_table_full", "created",
                                  "ended", "active", "reasons")}


def events_lines(res):
    return [line for line in res.stderr.splitlines() if line.startswith("flowcop: events:")]


def check_degraded(tap, res, ref, label, path):
    s = res.summary
    if not tap.ok(res.rc == 0 and s is not None and "events_written" in s, label + ": exits 0 with a summary",
                  res.stderr[-2000:]):
        return False
    tap.eq(data_plane(s), data_plane(ref.summary), label + ": flows, verdicts and end reasons == the working run's")
    harness.check_event_accounting(tap, res, label)
    tap.ok(s["events_dropped"] > 0 and s["events_errors"] > 0,
           label + ": the lost events are counted (%d dropped, %d write errors)" % (s["events_dropped"],
                                                                                     s["events_errors"]))
    lines = events_lines(res)
    tap.ok(len(lines) == 1 and path in lines[0] and "No space left on device" in lines[0],
           label + ": one stderr line names the output and the cause", lines)
    return True


def run_events_faults(tap, exe, tmp, pcap):
    n = len(pcaplib.read_pcap(pcap)[1])
    vdev = ["net_pcap0,rx_pcap=" + pcap]
    ref = harness.run(exe, vdev, FAST, tmpdir=tmp)
    hostile.finish(tap, ref, "working events file")

    res = harness.run(exe, vdev, FAST + ["--events", "/dev/full"], events=False, tmpdir=tmp, scrape_when_rx=n)
    if check_degraded(tap, res, ref, "/dev/full", "/dev/full") and tap.ok(res.metrics is not None,
                                                                         "/dev/full: scraped"):
        m = res.metrics
        produced = harness.metric(m, "flowcop_flows_created_total") + harness.metric(m, "flowcop_flows_expired_total")
        got = (harness.metric(m, "flowcop_events_written_total"),
               harness.metric(m, "flowcop_events_dropped_total", reason="write_error"),
               harness.metric(m, "flowcop_events_dropped_total", reason="ring_full"))
        tap.eq(got, (0, produced, 0), "/dev/full: metrics: 0 written, every event produced so far dropped "
                                      "(reason write_error), none for a full ring")
        tap.ok(harness.metric(m, "flowcop_events_write_errors_total") >= 1, "/dev/full: metrics: write errors counted")

    mnt = os.path.join(tmp, "tmpfs16k")
    os.makedirs(mnt, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "flowcop-hostile", mnt],
                      capture_output=True).returncode != 0:
        tap.skip("a filesystem that fills mid-run", "cannot mount a tmpfs (needs root and mount)")
        return
    try:
        path = os.path.join(mnt, "events.jsonl")
        res = harness.run(exe, vdev, FAST + ["--events", path], events=False, tmpdir=tmp)
        if check_degraded(tap, res, ref, "16 KiB tmpfs", path):
            with open(path, "rb") as f:
                blob = f.read()
            complete = blob[:blob.rfind(b"\n") + 1].decode().splitlines() if b"\n" in blob else []
            s = res.summary
            tap.ok(0 < s["events_written"] < s["created"] + s["ended"] and len(complete) == s["events_written"],
                   "16 KiB tmpfs: the file holds exactly the %d events counted written (%d bytes, disk full)"
                   % (s["events_written"], len(blob)))
            want = [json.dumps(e) for e in ref.events[:len(complete)]]
            got = [json.dumps(json.loads(line)) for line in complete]
            tap.ok(got == want, "16 KiB tmpfs: they are the first lines of the working run's log, in order")
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True, capture_output=True)
        rc, err, secs = hostile.run_to_exit(exe, vdev, FAST + ["--events", os.path.join(mnt, "ro.jsonl"),
                                                              "--metrics-addr", "none", "--stop-when-idle-ms", "300"])
        ours = [line for line in err.splitlines() if line.startswith("flowcop:")]
        tap.ok(rc == 2 and len(ours) == 1 and ours[0].startswith("flowcop: --events: ")
               and "Read-only file system" in ours[0] and "packets:" not in err,
               "read-only filesystem: exit 2 before any packet, one line naming --events and the cause", (rc, err))
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


def run_port_faults(tap, exe, tmp, pcap):
    missing = os.path.join(tmp, "no-such-capture.pcap")
    opts = FAST + ["--metrics-addr", "none", "--stop-when-idle-ms", "300"]
    cases = [
        ("a capture file that does not exist", ["net_pcap0,rx_pcap=" + missing], opts, (),
         ["Couldn't open " + missing, "flowcop: --vdev net_pcap0 did not start"]),
        ("a missing capture next to a good one", ["net_pcap0,rx_pcap=" + pcap, "net_pcap1,rx_pcap=" + missing],
         opts, (), ["Couldn't open " + missing, "flowcop: --vdev net_pcap1 did not start"]),
        ("an interface that does not exist", ["net_af_packet0,iface=fchnosuch0"], opts[2:], (),
         ["net_af_packet0", "flowcop: --vdev net_af_packet0 did not start"]),
        ("an mbuf pool larger than EAL's memory", ["net_pcap0,rx_pcap=" + pcap], opts + ["--flows-per-lcore", "1024"],
         ("-m", "16"), ["flowcop: cannot create the mbuf pool: Cannot allocate memory"]),
        ("a flow table larger than EAL's memory", ["net_pcap0,rx_pcap=" + pcap],
         opts + ["--flows-per-lcore", "134217728"], (), ["flowcop: lcore 0: flow table", "out of DPDK memory"]),
    ]
    for name, vdevs, o, extra, want in cases:
        # eal_args puts -m 512 first; a second -m overrides it.
        rc, err, secs = hostile.run_to_exit(exe, vdevs, o, eal_extra=extra)
        tap.ok(rc == 1 and all(w in err for w in want) and "packets:" not in err and secs < 20,
               "port fault, %s: exit 1 within seconds, no packet read, stderr says %s" % (name, " / ".join(want)),
               "rc %r after %.1f s\n%s" % (rc, secs, err[-1500:]))


def run_sigterm_burst(tap, exe, tmp):
    # pps=100000 stamps frames 10 us apart: at the ~1 Mpps flowcop reads here, virtual time runs ~10x
    # wall time, so flows are created, close (FIN, RST) and expire (2 s idle) all along.
    fg = "flows=5000,lifetime=1,idle_pct=40,rst_pct=20,pps=100000,seed=11"
    opts = FAST + ["--flowgen", fg, "--tick-ms", "10", "--check-interval-ms", "10", "--tcp-timeout-established", "2",
                   "--tcp-timeout-time-wait", "1", "--tcp-timeout-close", "1"]
    signalled = []

    # The signal comes once the burst is under way, seen in /metrics (flows open, some expired, some
    # closed or reset), not after a fixed delay: on a loaded machine 0.8 s could pass before flowcop
    # had read enough. Bounded at 20 s; the checks below say what was missing if it never got there.
    def when_churning(r):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                m = harness.scrape(r.metrics_url, timeout=2.0)
            except OSError:
                m = []
            expired = lambda reason: harness.metric(m, "flowcop_flows_expired_total", reason=reason)  # noqa: E731
            if harness.metric(m, "flowcop_flows_active") > 1000 and expired("inactivity") > 0 and \
                    expired("closed") + expired("reset") > 0:
                break
            time.sleep(0.1)
        signalled.append(time.monotonic())

    # on_started runs once the exporter's URL line is out, which flowcop prints once its signal handlers
    # are in place (before that, SIGTERM's default action would kill it: nothing is tracked yet then).
    res = harness.run(exe, [], opts, tmpdir=tmp, on_started=when_churning, stop_signal=signal.SIGTERM, timeout=60)
    stop_s = time.monotonic() - signalled[0] if signalled else float("inf")
    label = "SIGTERM mid-burst"
    hostile.finish(tap, res, label)
    s = res.summary
    if not tap.ok(s is not None and "reasons" in s, label + ": the summary is printed", res.stderr[-2000:]):
        return
    r = s["reasons"]
    tap.ok(r["shutdown"] > 1000 and r["inactivity"] > 0 and r["closed"] + r["reset"] > 0,
           label + ": flows were opening, closing and expiring when it came (%d open at the signal, %d expired, "
           "%d closed or reset, %d packets)" % (r["shutdown"], r["inactivity"], r["closed"] + r["reset"],
                                               s["received"]))
    tap.ok(stop_s < 6, label + ": stopped within seconds of the signal (%.1f s after it, %.1f s in all)"
           % (stop_s, res.elapsed))


def held_http(host, port, n, partial_first):
    out = []
    for i in range(n):
        c = socket.create_connection((host, port), timeout=2)
        if partial_first and i == 0:
            c.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")   # half a request, never finished
        out.append(c)
    return out


class Reopeners:
    """n connections to the exporter, each reopened as soon as the exporter closes it (after
    `pause` s): idle, or (slow=True) sending a request one byte every 100 ms, never finishing it.
    From `source` (an address of this host) if given. lifetimes: how long each connection the
    exporter closed had lasted; opened[i]: the connections thread i made."""

    def __init__(self, host, port, n, slow, source=None, pause=0.0):
        self.stop = threading.Event()
        self.lifetimes = []
        self.opened = [0] * n
        self.threads = [threading.Thread(target=self._hold, args=(i, host, port, slow, source, pause), daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def _hold(self, i, host, port, slow, source, pause):
        request = b"GET /metrics HTTP/1.1\r\n" + b"X-Slow: y\r\n" * 1000
        while not self.stop.is_set():
            try:
                c = socket.create_connection((host, port), timeout=5,
                                             source_address=(source, 0) if source else None)
            except OSError:
                time.sleep(0.01)
                continue
            t0 = time.monotonic()
            self.opened[i] += 1
            c.settimeout(0.1)
            sent = 0
            while not self.stop.is_set():
                try:
                    if slow:
                        c.send(request[sent:sent + 1])
                        sent += 1
                    if c.recv(1) == b"":
                        self.lifetimes.append(time.monotonic() - t0)
                        break
                except socket.timeout:
                    continue
                except OSError:  # a reset: closed by the exporter as well
                    self.lifetimes.append(time.monotonic() - t0)
                    break
            c.close()
            time.sleep(pause)

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=5)


def timed_scrape(url, timeout):
    t0 = time.monotonic()
    try:
        harness.scrape(url, timeout=timeout)
        return time.monotonic() - t0
    except OSError:
        return None


def fresh_stats(path, within):
    """/flowcop/stats over a new telemetry connection, retried until one is greeted and answered
    (DPDK closes a connection beyond its limit without a greeting): (stats or None, seconds)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        try:
            t = hostile.Telemetry(path, timeout=1.0)
        except OSError:
            time.sleep(0.05)
            continue
        try:
            if t.hello is not None:
                st = t("/flowcop/stats")
                if isinstance(st, dict):
                    return st, time.monotonic() - t0
        except (OSError, ValueError):
            pass
        finally:
            t.close()
        time.sleep(0.05)
    return None, time.monotonic() - t0


def closed_by_peer(t, timeout):
    t.sock.settimeout(timeout)
    try:
        return t.sock.recv(1024) == b""
    except ConnectionResetError:
        return True
    except OSError:
        return False


class Holders:
    """on_started for harness.run: holds connections while flowgen runs, checks, releases."""

    def __init__(self, tap):
        self.tap = tap

    def __call__(self, res):
        tap = self.tap
        url = res.metrics_url
        host, port = hostile.url_host_port(url)
        path = hostile.telemetry_path(res.pid)
        held, tels = [], []
        try:
            time.sleep(0.3)
            rx0 = (fresh_stats(path, 5)[0] or {}).get("rx_packets", 0)
            held = held_http(host, port, HTTP_THREADS - 1, True)
            time.sleep(0.2)
            d = timed_scrape(url, 3)
            tap.ok(d is not None and d < REQUEST_TIMEOUT_S * 0.8, "%d idle HTTP connections (one with half a "
                   "request): a scrape is answered at once (%s s)" % (HTTP_THREADS - 1, d and round(d, 2)))
            held += held_http(host, port, 1, False)
            time.sleep(0.2)
            d = timed_scrape(url, REQUEST_TIMEOUT_S + 3)
            tap.ok(d is not None and d < REQUEST_TIMEOUT_S + 1.5,
                   "%d idle HTTP connections (every exporter thread): a scrape waits at most the %.1f s request "
                   "timeout (%s s)" % (HTTP_THREADS, REQUEST_TIMEOUT_S, d and round(d, 2)))
            for c in held:
                c.close()
            held = []
            # The exporter serves connections in arrival order, each for at most the request timeout:
            # behind n held ones a scrape waits ceil((n - threads + 1) / threads) timeouts.
            rounds = -(-(HTTP_ABUSERS - HTTP_THREADS + 1) // HTTP_THREADS)
            for slow in (False, True):
                abuse = Reopeners(host, port, HTTP_ABUSERS, slow)
                try:
                    time.sleep(0.5)
                    waits = [timed_scrape(url, 10) for _ in range(3)]
                finally:
                    abuse.close()
                ok = [w for w in waits if w is not None]
                tap.ok(len(ok) == len(waits) and max(ok) < rounds * REQUEST_TIMEOUT_S + 1.5,
                       "%d HTTP connections reopened as soon as closed (%s): every scrape answered within %.1f s "
                       "(%s s)" % (HTTP_ABUSERS, "a byte at a time" if slow else "idle",
                                   rounds * REQUEST_TIMEOUT_S + 1.5, [w and round(w, 2) for w in waits]))
            rx1 = (fresh_stats(path, 5)[0] or {}).get("rx_packets", 0)
            opening = time.monotonic()
            for _ in range(TELEMETRY_MAX + 2):
                tels.append(hostile.Telemetry(path))
            opening = time.monotonic() - opening
            greeted = [t for t in tels if t.hello is not None]
            # DPDK's limit closes all but TELEMETRY_MAX of them: usually the last ones, but a slot the previous
            # request's connection still held when the first ones came may free up in between (seen under
            # load: the 11th greeted, one of the first ten closed), so the count is the limit's mark, not the
            # order. Unless opening them took the guard's idle time: then the guard may already have cut the
            # first ones and freed their slots (its contract), as on a loaded machine.
            limit_seen = len(tels) - len(greeted) >= len(tels) - TELEMETRY_MAX
            tap.ok(len(greeted) >= TELEMETRY_MAX - 1 and (limit_seen or opening >= GUARD_IDLE_S),
                   "telemetry: of %d clients that connect and send nothing (in %.2f s), %d are greeted and the "
                   "others closed without a greeting (DPDK's limit)" % (len(tels), opening, len(greeted)))
            st, secs = fresh_stats(path, GUARD_IDLE_S + 6)
            bound = GUARD_IDLE_S + GUARD_SCAN_S + 2.5
            tap.ok(st is not None and secs < bound and st.get("rx_packets", 0) > rx1,
                   "telemetry: with %d clients holding idle connections, a new client is answered within %.1f s "
                   "(%.2f s)" % (len(greeted), bound, secs))
            # Each connection's read() times out GUARD_IDLE_S after the scan that limited it, and a thread the
            # guard saw blocked one scan late closes that much later: one deadline for all, not a second each.
            deadline = time.monotonic() + GUARD_IDLE_S + 2 * GUARD_SCAN_S + 1.0
            cut = sum(closed_by_peer(t, max(0.05, deadline - time.monotonic())) for t in greeted)
            tap.ok(cut == len(greeted), "telemetry: flowcop closed the %d idle connections (%d)" % (len(greeted), cut))
            rx2 = (st or {}).get("rx_packets", 0)
            tap.ok(rx0 < rx1 < rx2, "RX kept flowing while the connections were held (%d, %d, %d packets)"
                   % (rx0, rx1, rx2))
        finally:
            for c in held:
                c.close()
            for t in tels:
                t.close()
        # flowgen stops at duration=: the harness then waits until the counters stay unchanged
        # (harness.STABLE_FOR_S) and stops flowcop.
        return lambda m: True


def run_held_connections(tap, exe, tmp):
    # duration: traffic must outlast the holders (about 10 s; RX is checked to keep flowing).
    fg = "flows=2000,lifetime=1,pps=20000,realtime=1,duration=20,seed=12"
    opts = FAST + ["--flowgen", fg, "--tick-ms", "10", "--check-interval-ms", "10", "--tcp-timeout-established", "1"]
    res = harness.run(exe, [], opts, tmpdir=tmp, on_started=Holders(tap), timeout=60)
    hostile.finish(tap, res, "held connections")


class AllowedOnly:
    """on_started for harness.run with --metrics-allow ALLOWED: a client from OUTSIDER is closed as
    it connects, before it takes an HTTP thread, so however many connections it keeps reopening,
    scrapes from ALLOWED are answered at once."""

    def __init__(self, tap):
        self.tap = tap

    def __call__(self, res):
        tap = self.tap
        url = res.metrics_url
        host, port = hostile.url_host_port(url)
        with socket.create_connection((host, port), timeout=5, source_address=(OUTSIDER, 0)) as c:
            t0 = time.monotonic()
            c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                got = c.recv(1024)
            except ConnectionResetError:
                got = b""
            secs = time.monotonic() - t0
        tap.ok(got == b"" and secs < REQUEST_TIMEOUT_S, "--metrics-allow %s: a scrape from %s is closed unanswered "
               "at once (%r after %.3f s)" % (ALLOW, OUTSIDER, got[:16], secs))
        d = timed_scrape(url, 3)
        tap.ok(d is not None, "--metrics-allow %s: a scrape from %s is answered (%s s)" % (
            ALLOW, ALLOWED, d and round(d, 3)))
        held = HTTP_THREADS * 4
        closed, opened = 1, 1  # the request above
        for slow in (False, True):
            # 10 ms between a close and the next connect: refused connections end at once, and a
            # tight loop of 32 would only measure this host's CPU.
            abuse = Reopeners(host, port, held, slow, source=OUTSIDER, pause=0.01)
            try:
                time.sleep(0.5)
                waits = []
                for _ in range(6):
                    waits.append(timed_scrape(url, 10))
                    time.sleep(0.1)
            finally:
                abuse.close()
            kind = "slow (a byte at a time)" if slow else "idle"
            ok = [w for w in waits if w is not None]
            tap.ok(len(ok) == len(waits) and max(ok) < REQUEST_TIMEOUT_S * 0.8,
                   "--metrics-allow %s: with %d connections from %s reopened as soon as closed (%s), every scrape "
                   "from %s is answered at once, under %.1f s (%s s)" % (
                       ALLOW, held, OUTSIDER, kind, ALLOWED, REQUEST_TIMEOUT_S * 0.8,
                       [w and round(w, 3) for w in waits]))
            # Without the list each would hold a thread until the request timeout (or wait for one).
            lives = sorted(abuse.lifetimes)
            median = lives[len(lives) // 2] if lives else None
            tap.ok(len(lives) >= held and median < REQUEST_TIMEOUT_S / 2,
                   "--metrics-allow %s: the %s connections from %s were closed as they connected (%d closed, median "
                   "lifetime %s s; a served one lasts the %.1f s request timeout)" % (
                       ALLOW, kind, OUTSIDER, len(lives), median and round(median, 4), REQUEST_TIMEOUT_S))
            closed += len(lives)
            opened += sum(abuse.opened)
        time.sleep(0.2)  # the last connections' refusals
        m = harness.scrape(url)
        refused = harness.metric(m, "flowcop_exporter_connections_refused_total")
        tap.ok(closed <= refused <= opened, "flowcop_exporter_connections_refused_total counts the refused "
               "connections: %d (%d seen closed, %d opened from %s)" % (refused, closed, opened, OUTSIDER))
        return lambda m: True


def run_metrics_allow(tap, exe, tmp):
    fg = "flows=2000,lifetime=1,pps=20000,realtime=1,duration=5,seed=13"
    opts = FAST + ["--flowgen", fg, "--metrics-allow", ALLOW]
    res = harness.run(exe, [], opts, tmpdir=tmp, on_started=AllowedOnly(tap), timeout=60)
    hostile.finish(tap, res, "--metrics-allow")


def main():
    exe, tmp, repo = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    pcap = os.path.join(repo, "tests", "data", "captures", "suricata_ftp_data_ipv4_ipv6_80conns.pcap")
    for part in (lambda: run_events_faults(tap, exe, tmp, pcap), lambda: run_port_faults(tap, exe, tmp, pcap),
                 lambda: run_sigterm_burst(tap, exe, tmp), lambda: run_held_connections(tap, exe, tmp),
                 lambda: run_metrics_allow(tap, exe, tmp)):
        t0 = time.monotonic()
        part()
        tap.note("(%.1f s)" % (time.monotonic() - t0))
    tap.done()


if __name__ == "__main__":
    main()
