#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every expiry scenario on every lcore layout (issue 27): the same capture replayed under --clock packet
on each layout of flowcoptest/layouts.py (one lcore; two under the handoff plan, where lcore 0 reads the
pcap port and hands lcore 1 its flows; two under the rss plan, each reading its own queue of flowcop's
flowgen port, which deals the capture as a NIC's RSS would and the one timeline as time marks), each
asserting the same exact results, and the layouts' results equal to each other.

Usage: test_layouts.py FLOWCOP_EXE FLOWCOPCTL TMPDIR [SCENARIO...]

Scenarios (the rows of the issue's table, and what it asks besides):
  protocols  165 UDP/ICMP/ICMPv6/GRE flows under netfilter's default timeouts: each ends by inactivity at
             its deadline (a frame every millisecond around the deadlines: ticks of 1 ms);
  shapes     400 TCP flows of 8 timing shapes (idle, FIN close, RST, SYN only, SYN+SYN/ACK, half close,
             keep-alive, LAST_ACK): each ends for its shape's reason at the first frame at or after its
             deadline (an RST on the next tick);
  wave       a correlated wave of 50,000 established flows under --timeout-budget 1000: every one expires by
             inactivity, never before its deadline, within the budget's bound;
  scaling    1,000 flows due among 10^3 and 10^5 open ones: the cop visits and fires exactly the 1,000;
  balance    10^4 connections of 16 packets (160,000): every packet received is tracked (a file waits for
             a full handoff ring), and summary and /metrics balance: received = by verdict + handoff drops;
  kills      under --clock packet once the capture has ended (time stands still): /flowcop/kill,
             flowcopctl -D --dport 80 and -F each end their flows within a second of wall time with reason killed, and
             -C counts none of them afterwards;
  timeouts   a live timeout change (/flowcop/set tcp_timeout_established, --clock tsc): every established
             flow ends by inactivity within the new timeout plus the sweep, on every lcore.
Every run also passes the harness's invariants (harness.check_invariants) and the layout's (check_layout).
"""

import json
import os
import subprocess
import sys
import time
from collections import Counter


from flowcoptest import harness  # noqa: E402
from flowcoptest import layouts  # noqa: E402
from flowcoptest import pcapgen  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.checks import Fail, wait_until  # noqa: E402
from flowcoptest.pcaplib import ACK, FIN, PSH, RST, SYN  # noqa: E402
from flowcoptest.process import Flowcop  # noqa: E402
from flowcoptest.scenario import arp_frame  # noqa: E402
from flowcoptest.telemetry import telemetry  # noqa: E402

T0 = 1_700_000_000 * 1_000_000
FAST = ["--clock", "packet", "--tick-ms", "1", "--check-interval-ms", "1"]


def ms(t):
    return T0 + int(round(t * 1000))


class Capture:
    def __init__(self):
        self.recs = []

    def add(self, t_ms, frame):
        self.recs.append((ms(t_ms), frame))

    def ticks(self, start_ms, end_ms, step_ms=1):
        for k, t in enumerate(range(start_ms, end_ms + 1, step_ms)):
            self.add(t, arp_frame(k))

    def write(self, path):
        self.recs.sort(key=lambda r: r[0])
        self.times = sorted({t for t, _ in self.recs})
        pcaplib.write_pcap(path, self.recs)
        return len(self.recs)

    def first_at_or_after(self, t_us):
        import bisect
        i = bisect.bisect_left(self.times, t_us)
        return self.times[i] if i < len(self.times) else None


def tcp(cap, t_ms, c, cp, s, sp, from_client, flags, payload=0, seq=None):
    src, spp, dst, dpp = (c, cp, s, sp) if from_client else (s, sp, c, cp)
    cap.add(t_ms, pcaplib.tcp_frame(src, dst, spp, dpp, flags, payload=b"x" * payload))


def flow_of(e):
    """A destroy event as the layouts must agree on it (lcore and flow id differ by layout)."""
    a, b = (e["src"], str(e.get("sport"))), (e["dst"], str(e.get("dport")))
    return (str(e.get("proto", "tcp")),) + tuple(sorted([a, b])) + (e["reason"], e["time"], e["first_seen"],
                                                              e["last_seen"], e["packets_orig"], e["packets_reply"],
                                                              e.get("state"))


# --- scenarios ----------------------------------------------------------------------------------------


def protocols(cap):
    """165 flows of four protocols, 10 ms apart; dense ticks around every default deadline."""
    kinds = []
    for i in range(165):
        base = 10 * i
        if i < 60:                                              # UDP, one way
            f = pcaplib.ether(pcaplib.ipv4("10.20.0.%d" % (i + 1), "10.21.0.1", 17,
                                           bytes.fromhex("%04x0035000800" % (20000 + i)) + b"\0\0"), 0x0800)
            cap.add(base, f + b"\0" * (60 - len(f)))
            cap.add(base + 2, f + b"\0" * (60 - len(f)))
            kinds.append("udp")
        elif i < 95:                                            # UDP, replied
            a, b = "10.22.0.%d" % (i + 1), "10.23.0.1"
            q = pcaplib.ether(pcaplib.ipv4(a, b, 17, bytes.fromhex("%04x0035000800" % (20000 + i)) + b"\0\0"),
                              0x0800)
            r = pcaplib.ether(pcaplib.ipv4(b, a, 17, bytes.fromhex("0035%04x000800" % (20000 + i)) + b"\0\0"),
                              0x0800)
            cap.add(base, q + b"\0" * (60 - len(q)))
            cap.add(base + 1, r + b"\0" * (60 - len(r)))
            kinds.append("udp")
        elif i < 125:                                           # ICMP echo and reply
            a, b = "10.24.0.%d" % (i + 1), "10.25.0.1"
            cap.add(base, pcaplib.icmp_query_frame(a, b, 8, 100 + i, 1))
            cap.add(base + 1, pcaplib.icmp_query_frame(b, a, 0, 100 + i, 1))
            kinds.append("icmp")
        elif i < 145:                                           # ICMPv6 echo and reply
            a, b = "2001:db8:24::%x" % (i + 1), "2001:db8:25::1"
            cap.add(base, pcaplib.icmp_query_frame(a, b, 128, 100 + i, 1))
            cap.add(base + 1, pcaplib.icmp_query_frame(b, a, 129, 100 + i, 1))
            kinds.append("icmpv6")
        else:                                                   # GRE, both ways
            a, b = "10.26.0.%d" % (i + 1), "10.27.0.1"
            for k, (s, d) in enumerate(((a, b), (b, a))):
                f = pcaplib.ether(pcaplib.ipv4(s, d, 47, b"\0\0\x08\0"), 0x0800)
                cap.add(base + k, f + b"\0" * (60 - len(f)))
            kinds.append("47")  # events name a protocol without a name by its number, as a string
    # Deadlines: 30 s (UDP, ICMP) and 600 s (GRE) after 0..1.65 s; a frame every ms there, every s elsewhere.
    cap.ticks(29_000, 32_000)
    cap.ticks(599_000, 602_000)
    cap.ticks(33_000, 598_000, 1000)
    return dict(flows=165, reasons={"inactivity": 165}, opts=FAST, kinds=Counter(kinds))


SHAPES = ["idle", "fin_close", "rst", "syn_only", "syn_synack", "half_close", "keepalive", "last_ack"]
SHAPE_END = {"idle": ("inactivity", "ESTABLISHED"), "fin_close": ("closed", "TIME_WAIT"), "rst": ("reset", "CLOSE"),
             "syn_only": ("inactivity", "SYN_SENT"), "syn_synack": ("inactivity", "SYN_RECV"),
             "half_close": ("inactivity", "CLOSE_WAIT"), "keepalive": ("inactivity", "ESTABLISHED"),
             "last_ack": ("inactivity", "LAST_ACK")}


def shapes(cap):
    """400 TCP flows, 8 timing shapes interleaved 10 ms apart; a frame every ms up to the last deadline."""
    expect = {}
    for j in range(400):
        shape = SHAPES[j % 8]
        c, cp, s, sp = "10.30.%d.%d" % (j // 200, j % 200 + 1), 40000 + j, "10.31.0.1", 80
        t = 10 * j
        if shape in ("syn_only",):
            tcp(cap, t, c, cp, s, sp, True, SYN)
        elif shape == "syn_synack":
            tcp(cap, t, c, cp, s, sp, True, SYN)
            tcp(cap, t + 1, c, cp, s, sp, False, SYN | ACK)
        else:
            tcp(cap, t, c, cp, s, sp, True, SYN)
            tcp(cap, t + 1, c, cp, s, sp, False, SYN | ACK)
            tcp(cap, t + 2, c, cp, s, sp, True, ACK)
            if shape == "fin_close":
                tcp(cap, t + 3, c, cp, s, sp, True, FIN | ACK)
                tcp(cap, t + 4, c, cp, s, sp, False, FIN | ACK)
                tcp(cap, t + 5, c, cp, s, sp, True, ACK)
            elif shape == "rst":
                tcp(cap, t + 500, c, cp, s, sp, False, RST | ACK)
            elif shape == "half_close":
                tcp(cap, t + 3, c, cp, s, sp, True, FIN | ACK)
                tcp(cap, t + 4, c, cp, s, sp, False, ACK)
            elif shape == "keepalive":
                for k in range(1, 6):
                    tcp(cap, t + 1000 * k, c, cp, s, sp, k % 2 == 1, ACK)
            elif shape == "last_ack":
                tcp(cap, t + 3, c, cp, s, sp, False, FIN | ACK)
                tcp(cap, t + 4, c, cp, s, sp, True, FIN | ACK)
        expect[(c, cp)] = SHAPE_END[shape]
    cap.ticks(0, 14_000)
    opts = FAST + ["--tcp-timeout-established", "3", "--tcp-timeout-time-wait", "2", "--tcp-timeout-syn-sent", "2",
                   "--tcp-timeout-syn-recv", "2", "--tcp-timeout-fin-wait", "2", "--tcp-timeout-close-wait", "2",
                   "--tcp-timeout-last-ack", "2", "--tcp-timeout-close", "1"]
    reasons = Counter(r for r, _ in expect.values())
    return dict(flows=400, reasons=dict(reasons), opts=opts, shape_of=expect)


def scaling(n_open):
    def build(cap):
        """n_open TCP connections (opened from 1 ms, after the cop's first pass: nothing waits in the wheel's
        first lap) and 1,000 one-way UDP flows due at 3 s (--udp-timeout 2). The TCP flows' deadlines lie
        beyond the wheel's 4.096 s horizon (1 ms ticks), so the cop never visits them in this replay."""
        cap.add(0, arp_frame(0))
        for i in range(n_open):
            c, cp = "10.%d.%d.%d" % (40 + i // 62500, (i // 250) % 250, i % 250 + 1), 10000 + i % 50000
            t = T0 + 1000 + i * 1_000_000 // n_open
            cap.recs.append((t, pcaplib.tcp_frame(c, "10.39.0.1", cp, 443, SYN)))
            cap.recs.append((t + 1, pcaplib.tcp_frame("10.39.0.1", c, 443, cp, SYN | ACK)))
            cap.recs.append((t + 2, pcaplib.tcp_frame(c, "10.39.0.1", cp, 443, ACK)))
        for i in range(1000):
            f = pcaplib.ether(pcaplib.ipv4("10.38.%d.%d" % (i // 250, i % 250 + 1), "10.39.0.2", 17,
                                           bytes.fromhex("%04x0035000800" % (30000 + i)) + b"\0\0"), 0x0800)
            cap.add(1000 + i // 2, f + b"\0" * (60 - len(f)))
        cap.ticks(2900, 3600)
        return dict(flows=n_open + 1000, reasons={"inactivity": 1000, "shutdown": n_open}, scrape=True,
                    opts=FAST + ["--udp-timeout", "2", "--flows-per-lcore", str(max(4096, n_open * 2)),
                                 "--events-ring", "262144"],
                    visited=1000)
    return build


def wave(cap):
    """A correlated wave: 50,000 established flows opened within 25 ms go quiet together and come due
    within 25 ms of each other 2 s later, twice as fast as --timeout-budget 1000 fires them (a pass a ms):
    each lcore's cop drains its own share over budgeted passes; a frame every ms meanwhile."""
    for i in range(50_000):
        c, cp = "10.%d.%d.%d" % (60 + i // 62500, (i // 250) % 250, i % 250 + 1), 10000 + i % 50000
        t = T0 + 1000 + i // 2
        cap.recs.append((t, pcaplib.tcp_frame(c, "10.59.0.1", cp, 443, SYN)))
        cap.recs.append((t + 1, pcaplib.tcp_frame("10.59.0.1", c, 443, cp, SYN | ACK)))
        cap.recs.append((t + 2, pcaplib.tcp_frame(c, "10.59.0.1", cp, 443, ACK)))
    cap.ticks(0, 4000)
    return dict(flows=50_000, reasons={"inactivity": 50_000}, budgeted=True,
                opts=FAST + ["--timeout-budget", "1000", "--tcp-timeout-established", "2",
                             "--flows-per-lcore", "131072", "--events-ring", "262144"])


def balance(cap):
    """10^4 connections of 16 packets, interleaved as a busy link's: 160,000 packets."""
    n = 10_000
    for i in range(n):
        c, cp, s, sp = "10.50.%d.%d" % (i // 250, i % 250 + 1), 20000 + i, "10.51.0.1", 443
        base = T0 + i * 50
        steps = [(True, SYN, 0), (False, SYN | ACK, 0), (True, ACK, 0)]
        for _ in range(5):
            steps += [(True, PSH | ACK, 100), (False, ACK, 0)]
        steps += [(True, FIN | ACK, 0), (False, FIN | ACK, 0), (True, ACK, 0)]
        for k, (fw, fl, pl) in enumerate(steps):
            src, spp, dst, dpp = (c, cp, s, sp) if fw else (s, sp, c, cp)
            cap.recs.append((base + k * 500_000, pcaplib.tcp_frame(src, dst, spp, dpp, fl, payload=b"b" * pl)))
    return dict(flows=n, packets=16 * n, opts=["--clock", "packet"], scrape=True, reasons=None)


REPLAYS = {"protocols": protocols, "shapes": shapes, "wave": wave, "scaling_1e3": scaling(1000), "scaling_1e5": scaling(100_000),
           "balance": balance}


def check_replay(tap, name, cap, spec, res, label):
    d = res.destroys()
    tap.eq(len(d), spec["flows"], label + ": every flow ended once")
    if spec.get("reasons"):
        tap.eq(dict(Counter(e["reason"] for e in d)), spec["reasons"], label + ": flows by end reason")
    if "kinds" in spec:
        tap.eq(dict(Counter(e.get("proto", "tcp") for e in d)), dict(spec["kinds"]), label + ": flows by protocol")
    cfg = res.config()
    tmo = harness.state_timeouts_us(cfg)
    late, wrong = [], []
    for e in d:
        if e["reason"] in ("inactivity", "closed"):
            want = cap.first_at_or_after(harness.us(e["last_seen"]) + harness.flow_timeout_us(e, cfg, tmo))
            # Under a fire budget a wave drains over passes 1 ms apart: never before the deadline, and
            # within ceil(flows / budget) ms of it (each lcore drains its share).
            slack = (-(-spec["flows"] // 1000) + 2) * 1000 if spec.get("budgeted") else 0
            if not want <= harness.us(e["time"]) <= want + slack:
                late.append((e["src"], e["sport"], e["reason"], e["time"], want))
        elif e["reason"] == "reset":
            last = harness.us(e["last_seen"])
            if not last <= harness.us(e["time"]) <= cap.first_at_or_after(last + 1000):
                late.append((e["src"], e["sport"], e["reason"], e["time"]))
        elif e["reason"] == "shutdown" and harness.us(e["time"]) != cap.times[-1]:
            wrong.append((e["src"], e["sport"], "shutdown before the capture's last time", e["time"]))
        if "shape_of" in spec:
            want = spec["shape_of"].get((e["src"], e["sport"])) or spec["shape_of"].get((e["dst"], e["dport"]))
            if want != (e["reason"], e["state"]):
                wrong.append((e["src"], e["sport"], e["reason"], e["state"], want))
    tap.ok(not late, label + ": each timed-out flow ended at the first frame at or after its deadline "
                             "(an RST on the next tick)", late[:5])
    tap.ok(not wrong, label + ": each flow ended for its shape's reason, in its state", wrong[:5])
    if "visited" in spec:
        m = res.metrics
        if tap.ok(m is not None, label + ": scraped"):
            tap.eq((int(harness.metric(m, "flowcop_inactivity_cop_visited_total")),
                    int(harness.metric(m, "flowcop_inactivity_cop_fired_total"))), (spec["visited"], spec["visited"]),
                   label + ": the cop visited and fired exactly the flows that came due")
    if "packets" in spec:
        s = res.summary
        tap.eq((s["received"], s["handoff_dropped"], s["tcp_invalid"], s["tcp_no_flow"], s["tcp_table_full"]),
               (spec["packets"], 0, 0, 0, 0), label + ": every packet received was tracked (none dropped on its "
                                                      "way to its owner, none refused)")
        flow_pkts = sum(e["packets_orig"] + e["packets_reply"] for e in d)
        tap.eq(flow_pkts, spec["packets"], label + ": the flows' packets add up to the capture's")


def run_replay(tap, exe, tmp, name):
    cap = Capture()
    spec = REPLAYS[name](cap)
    path = os.path.join(tmp, name + ".pcap")
    n = cap.write(path)
    seen = {}
    for layout in layouts.selected():
        label = "%s [%s]" % (name, layout.name)
        res = harness.run(exe, layout.vdevs(path), spec["opts"] + layout.opts(path), lcores=layout.lcores, tmpdir=tmp,
                          scrape_when_rx=n if spec.get("scrape") else None, timeout=120, memory_mb=1024)
        tap.note("%s: %d frames, flowcop took %.1f s" % (label, n, res.elapsed))
        harness.check_invariants(tap, res, label)
        harness.check_layout(tap, res, layout, label)
        if res.summary is None:
            continue
        tap.eq(res.summary["received"], n, label + ": every frame was received")
        check_replay(tap, name, cap, spec, res, label)
        # A budgeted wave ends the same flows for the same reasons; when each fires depends on its lcore's share.
        seen[layout.name] = sorted(flow_of(e)[:4] + flow_of(e)[5:] if spec.get("budgeted") else flow_of(e)
                                   for e in res.destroys())
    names = list(seen)
    for other in names[1:]:
        diff = sorted(set(seen[names[0]]) ^ set(seen[other]))
        tap.ok(seen[other] == seen[names[0]], "%s: %s ends every flow as %s does (reason, time, counts, state)"
               % (name, other, names[0]), diff[:6])


# --- kills and live timeout changes on a running flowcop ------------------------------------------


def ctl(ctl_exe, fc, *args):
    r = subprocess.run([sys.executable, ctl_exe, "--file-prefix=" + fc.prefix] + list(args), capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("flowcopctl %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def stats(fc):
    s = telemetry(fc.socket_path, "/flowcop/stats")
    return s


def count(ctl_exe, fc, *filters):
    return int(ctl(ctl_exe, fc, "-C", *filters).strip())


def run_kills(tap, exe, ctl_exe, tmp):
    path = os.path.join(tmp, "synthetic.pcap")
    n = pcapgen.write(path)
    results = {}
    for layout in layouts.selected():
        label = "kills [%s]" % layout.name
        try:
            results[layout.name] = kills_on(tap, exe, ctl_exe, path, n, layout, label)
        except (Fail, RuntimeError) as e:
            tap.ok(False, label + ": the kills ran to their end", str(e))
    vals = set(results.values())
    tap.ok(len(vals) == 1, "kills: every layout killed the same flows", results)


def kills_on(tap, exe, ctl_exe, path, n, layout, label):
    # --track tcp and long timeouts: nothing ends by itself; the capture ends and time stands still.
    with Flowcop(exe, layout.pcap_vdev(path), ["--clock", "packet", "--track", "tcp", "--stop-when-idle-ms", "0",
                                               "--metrics-addr", "127.0.0.1:0", "--flows-per-lcore", "65536"]
                 + layout.opts(path),
                 "kills", lcores=layout.lcores) as fc:
        wait_until(lambda: stats(fc)["rx_packets"] == n or None, 30, "the capture replayed")
        time.sleep(0.3)
        before = stats(fc)
        open0 = before["flows_active"]
        c, cp, s, sp = pcapgen.v4_tuple(1)
        t0 = time.monotonic()
        k = telemetry(fc.socket_path, "/flowcop/kill,%s,%d,%s,%d" % (c, cp, s, sp))
        got = wait_until(lambda: (lambda x: x if x["flows_expired_killed"] == 1 else None)(stats(fc)), 5,
                         "the killed flow ended")
        tap.ok(k == {"killed": 1} and time.monotonic() - t0 < 1.0 and got["flows_active"] == open0 - 1,
               label + ": /flowcop/kill ends its flow within a second of wall time, no packet arriving",
               (k, time.monotonic() - t0, got))
        t0 = time.monotonic()
        out = json.loads(ctl(ctl_exe, fc, "-D", "-o", "json", "--dport", "80").strip().splitlines()[-1])
        left = count(ctl_exe, fc, "--dport", "80")
        tap.ok(out["killed"] > 0 and out["killed"] == out["matched"] and left == 0 and
               time.monotonic() - t0 < 2.0,
               label + ": flowcopctl -D --dport 80 ends every match at once; -C then counts none", (out, left))
        killed_d = out["killed"]
        t0 = time.monotonic()
        out = json.loads(ctl(ctl_exe, fc, "-F", "-o", "json").strip().splitlines()[-1])
        left = count(ctl_exe, fc)
        tap.ok(out["killed"] == open0 - 1 - killed_d and left == 0 and time.monotonic() - t0 < 2.0,
               label + ": flowcopctl -F ends every flow at once; -C then counts none", (out, left, open0))
        rc = fc.stop()
        summary = harness.parse_summary(fc.stderr)
    tap.eq(rc, 0, label + ": flowcop exits 0")
    tap.eq(summary and (summary["reasons"].get("killed"), summary["active"]), (open0, 0),
           label + ": the summary counts every flow killed, none left")
    return (open0, killed_d)


def run_timeouts(tap, exe, tmp):
    path = os.path.join(tmp, "synthetic.pcap")
    n = pcapgen.write(path)
    results = {}
    for layout in layouts.selected():
        label = "live timeout [%s]" % layout.name
        with Flowcop(exe, layout.pcap_vdev(path), ["--clock", "tsc", "--track", "tcp", "--stop-when-idle-ms", "0",
                                                   "--metrics-addr", "127.0.0.1:0", "--flows-per-lcore", "65536"]
                     + layout.opts(path),
                     "timeouts", lcores=layout.lcores) as fc:
            wait_until(lambda: stats(fc)["rx_packets"] == n or None, 30, "the capture replayed")
            before = stats(fc)
            r = telemetry(fc.socket_path, "/flowcop/set,tcp_timeout_established,1")
            t0 = time.monotonic()
            after = wait_until(lambda: (lambda x: x if x["flows_expired_inactivity"] -
                                        before["flows_expired_inactivity"] >= pcapgen.ESTABLISHED_V4 +
                                        pcapgen.ESTABLISHED_V6 else None)(stats(fc)), 10,
                               "the established flows ended")
            took = time.monotonic() - t0
            tap.ok("error" not in r and took < 4.0,
                   label + ": after tcp_timeout_established 1, every established flow ends by inactivity within "
                           "1 s + a tick + the sweep", (r, took))
            rc = fc.stop()
            summary = harness.parse_summary(fc.stderr)
        tap.eq(rc, 0, label + ": flowcop exits 0")
        results[layout.name] = after["flows_expired_inactivity"] - before["flows_expired_inactivity"]
        tap.eq(results[layout.name], pcapgen.ESTABLISHED_V4 + pcapgen.ESTABLISHED_V6,
               label + ": exactly the established flows ended")
        tap.ok(summary is not None, label + ": summary printed")


def main():
    exe, ctl_exe, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
    only = sys.argv[4:]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    tap.note("layouts: %s" % layouts.selected())
    for name in REPLAYS:
        if not only or name in only:
            run_replay(tap, exe, tmp, name)
    if not only or "kills" in only:
        run_kills(tap, exe, ctl_exe, tmp)
    if not only or "timeouts" in only:
        run_timeouts(tap, exe, tmp)
    tap.done()


if __name__ == "__main__":
    main()
