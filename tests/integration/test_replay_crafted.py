#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Replays crafted captures through the real flowcop binary in packet-clock mode and checks every
flow's lifetime exactly: originator, counts and bytes per direction, first/last seen, end reason,
end time and final state, plus the per-verdict packet counts and the run invariants (flowcoptest/harness.py).

Usage: test_replay_crafted.py FLOWCOP_EXE TMPDIR

The captures are generated here, deterministically (flowcoptest/scenario.py). Timeouts are shortened with
flags and the wheel runs with 1 ms ticks and a 1 ms cop interval, so a deadline on a whole
millisecond fires at the first RX burst at or after it, which the scenario places on purpose:
  - FIN close: closed when the TIME_WAIT timeout ends, moved there by a later frame;
  - RST close: reset, reaped by the next tick;
  - idle: inactivity exactly at last_seen + the state's timeout (a frame 1 ms earlier must not
    fire it); an invalid-flags packet in between counts but does not extend the deadline;
  - a late packet of an idle flow after its deadline: the old flow ends (inactivity) and the
    packet starts a new one (netfilter: an expired conntrack never takes new packets);
  - the active timeout, exactly first_seen + --active-timeout, repeatedly for a busy flow;
  - IPv6, VLAN and QinQ copies of one 4-tuple (three flows), mid-stream pickup (and none with
    --loose-pickup off), port reuse inside TIME_WAIT (reopen) and after it expired;
  - malformed frames of each class counted by verdict and reaching no flow;
  - a SYN that reopens a flow the same RX burst already looked up, followed by an RST in that
    burst: the RST belongs to the new flow;
  - whatever is still open at the end is destroyed with reason shutdown at the last packet's time.
Every capture is replayed on each lcore layout (flowcoptest/layouts.py: one lcore, two under the
handoff plan and two under the rss plan), with the same exact expectations. The lifecycle capture is replayed twice: once with every timestamp in its own RX burst, once
batched as the pcap PMD reads it (32 frames a burst, whatever their times), which must not change
any flow's times, counts or end.
"""

import os
import struct
import sys


from flowcoptest import harness  # noqa: E402
from flowcoptest import layouts  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, FIN, PSH, RST, SYN  # noqa: E402
from flowcoptest.scenario import Scenario, ms  # noqa: E402

FAST = ["--clock", "packet", "--tick-ms", "1", "--check-interval-ms", "1"]


def us_of(t):
    """Event times are seconds with 6 decimals; compare them as integer microseconds."""
    return int(round(float(t) * 1_000_000))


def malformed_frames():
    """(expected verdict name, frame). Addresses are flow A's, so a parser that guessed would
    inflate A's counts."""
    a, b = "10.0.0.1", "10.0.0.2"
    seg = pcaplib.tcp_segment(a, b, 40001, 80, ACK)
    ip_ok = pcaplib.ipv4(a, b, 6, seg)
    out = [("truncated_l2", b"\x02" * 10),
           ("truncated_l3", pcaplib.ether(ip_ok[:12], pcaplib.ETH_IPV4)),
           ("ip_bad_version", pcaplib.ether(bytes([0x55]) + ip_ok[1:], pcaplib.ETH_IPV4)),
           ("ipv4_bad_ihl", pcaplib.ether(pcaplib.ipv4(a, b, 6, seg, ihl=4), pcaplib.ETH_IPV4)),
           ("ip_bad_total_length", pcaplib.ether(pcaplib.ipv4(a, b, 6, seg, total_length=400), pcaplib.ETH_IPV4)),
           ("truncated_l4", pcaplib.ether(pcaplib.ipv4(a, b, 6, seg[:12]), pcaplib.ETH_IPV4)),
           ("tcp_bad_data_offset", pcaplib.ether(pcaplib.ipv4(a, b, 6, seg[:12] + bytes([0x30]) + seg[13:]),
                                                 pcaplib.ETH_IPV4)),
           ("vlan_too_deep", pcaplib.ether(ip_ok, pcaplib.ETH_IPV4, vlans=(1, 2, 3, 4, 5),
                                           tpids=[pcaplib.TPID_8021Q] * 5)),
           ("ipv6_ext_truncated", pcaplib.ether(pcaplib.ipv6("2001:db8::1", "2001:db8::2", 0, b"\x06\x00\x00\x00"),
                                                pcaplib.ETH_IPV6)),
           ("fragment", pcaplib.ether(pcaplib.ipv4(a, b, 6, seg, flags_frag=0x2000 | 100), pcaplib.ETH_IPV4)),
           ("udp", pcaplib.ether(pcaplib.ipv4(a, b, 17, struct.pack("!HHHH", 53, 53, 8, 0)), pcaplib.ETH_IPV4))]
    return [(v, f + b"\0" * max(0, 60 - len(f)) if v not in ("truncated_l2", "truncated_l3") else f)
            for v, f in out]


def lifecycle():
    """Run 1: every lifetime rule under --tcp-timeout-time-wait 2 --tcp-timeout-established 3."""
    sc = Scenario()
    tw, est = 2000, 3000  # ms

    a = sc.conn("10.0.0.1", 40001, "10.0.0.2", 80)            # handshake, data, FIN close
    a.start(0, "SYN_SENT")
    a.handshake(0)
    a.exchange(3, 100, 1000)
    end = a.close(7)
    sc.tick(end + tw - 1)                                      # 1 ms early: must not fire
    sc.tick(end + tw)
    a.end(0, "closed", ms(end + tw), "TIME_WAIT")

    b = sc.conn("10.0.0.3", 40002, "10.0.0.2", 80)            # RST close
    b.start(0, "SYN_SENT")
    b.handshake(10)
    b.exchange(13, 50, 60)
    b.send(1000, False, RST | ACK)
    sc.tick(1005)
    b.end(0, "reset", lambda: (ms(1000), sc.first_time_at_or_after(ms(1001))), "CLOSE")

    c = sc.conn("10.0.0.4", 40003, "10.0.0.2", 22)            # idle; junk does not extend it
    c.start(0, "SYN_SENT")
    c.handshake(100)
    last = c.exchange(103, 10, 20)
    c.send(1500, True, SYN | FIN, ignored=True)
    sc.tick(last + est - 1)
    sc.tick(last + est)
    c.end(0, "inactivity", ms(last + est), "ESTABLISHED")

    e = sc.conn("2001:db8::1", 40004, "2001:db8::2", 443)     # IPv6, server closes first
    e.start(0, "SYN_SENT")
    e.handshake(20)
    e.exchange(23, 200, 1400)
    end = e.close(27, client_first=False)
    sc.tick(end + tw + 1)
    e.end(0, "closed", ms(end + tw + 1), "TIME_WAIT")

    for i, vl in enumerate([(), (100,), (200, 300)]):         # one 4-tuple, three VLAN stacks
        v = sc.conn("10.0.1.1", 5000, "10.0.1.2", 80, vlans=vl)
        v.start(0, "SYN_SENT")
        v.handshake(30 + 10 * i)
        last = v.exchange(33 + 10 * i, 10 * (i + 1), 100 * (i + 1))
        # Idle from `last`: no frame lands on the deadline, so it fires at the next one after it.
        v.end(0, "inactivity", (lambda d: lambda: sc.first_time_at_or_after(d))(ms(last + est)), "ESTABLISHED")

    h = sc.conn("10.0.0.5", 40005, "10.0.0.2", 80)            # mid-stream pickup
    h.start(0, "ESTABLISHED")
    h.exchange(60, 500, 600)
    end = h.close(64)
    sc.tick(end + tw)
    h.end(0, "closed", ms(end + tw), "TIME_WAIT")

    r = sc.conn("10.0.0.6", 40006, "10.0.0.2", 80)            # port reuse
    r.start(0, "SYN_SENT")
    r.handshake(200)
    r.exchange(203, 10, 10)
    r.close(207)
    r.start(1, "SYN_SENT")                                     # SYN inside TIME_WAIT: reopen
    r.handshake(1200, life=1)
    r.end(0, "closed", ms(1200), "TIME_WAIT")
    r.exchange(1203, 10, 10, life=1)
    end = r.close(1207, life=1)
    sc.tick(end + tw)
    r.end(1, "closed", ms(end + tw), "TIME_WAIT")
    r.start(2, "SYN_SENT")                                     # SYN after TIME_WAIT expired
    r.handshake(4100, life=2)
    r.exchange(4103, 10, 10, life=2)
    r.shutdown_life = 2

    k = sc.conn("10.0.0.8", 40008, "10.0.0.2", 80)            # late packet after the deadline
    k.start(0, "SYN_SENT")
    k.handshake(300)
    last = k.exchange(303, 10, 10)                             # deadline last + est = 3306
    k.send(3800, True, PSH | ACK, 10, life=1)                  # no frame in [3306, 3800)
    k.send(3801, False, ACK, life=1)
    k.end(0, "inactivity", ms(3800), "ESTABLISHED")
    k.start(1, "ESTABLISHED")
    k.shutdown_life = 1

    j = sc.conn("10.0.0.7", 40007, "10.0.0.2", 80)            # RST in the last burst
    j.start(0, "SYN_SENT")
    j.handshake(4000)
    j.send(5000, True, RST | ACK)

    stray = sc.conn("10.0.0.9", 40009, "10.0.0.2", 80)        # cannot start a flow
    stray.send(70, True, SYN | FIN, life=None)
    stray2 = sc.conn("10.0.0.10", 40010, "10.0.0.2", 80)
    stray2.send(71, True, RST, life=None)

    mal = malformed_frames()
    for i, (_, f) in enumerate(mal):
        sc.raw(4.5 + i * 0.01, f)

    t_last = sc.last_time()
    j.end(0, "reset", (ms(5000), t_last), "CLOSE")
    for cn in sc.conns:
        if hasattr(cn, "shutdown_life"):
            cn.end(cn.shutdown_life, "shutdown", t_last, "ESTABLISHED")
    verdicts = {"tcp": sum(len(cn.packets) for cn in sc.conns)}
    for v, _ in mal:
        verdicts[v] = verdicts.get(v, 0) + 1
    return sc, verdicts, dict(tcp_invalid=1, tcp_no_flow=2)


def active():
    """Run 2: --active-timeout 2 ends a busy flow every 2 s after it was first seen; the traffic
    that follows is picked up as a new flow each time."""
    sc = Scenario()
    d = sc.conn("10.0.2.1", 41000, "10.0.2.2", 80)
    d.start(0, "SYN_SENT")
    d.handshake(0)
    life, first = 0, 0
    for t in range(300, 5701, 300):
        if t >= first + 2000:
            sc.tick(first + 2000)                              # the clock reaches the deadline first
            d.end(life, "active", ms(first + 2000), "ESTABLISHED")
            life, first = life + 1, t
            d.start(life, "ESTABLISHED")
        d.send(t, True, PSH | ACK, 100, life=life)
        d.send(t + 1, False, ACK, life=life)
    d.end(life, "shutdown", sc.last_time(), "ESTABLISHED")
    return sc, {"tcp": len(d.packets)}, dict(tcp_invalid=0, tcp_no_flow=0)


def no_loose_pickup():
    """Run 3: --loose-pickup off tracks only what it saw open."""
    sc = Scenario()
    m = sc.conn("10.0.3.1", 42000, "10.0.3.2", 80)
    m.exchange(0, 100, 100, life=None)
    m.close(4, life=None)
    n = sc.conn("10.0.3.3", 42001, "10.0.3.2", 80)
    n.start(0, "SYN_SENT")
    n.handshake(10)
    n.exchange(13, 10, 10)
    n.end(0, "shutdown", sc.last_time(), "ESTABLISHED")
    return sc, {"tcp": len(m.packets) + len(n.packets)}, dict(tcp_invalid=0, tcp_no_flow=len(m.packets))


def vlan_key_none():
    """Run 5: --vlan-key none: a link that tags only the client's direction (VLAN 7), and a QinQ
    link that strips the inner tag on the way back, each keep one flow; untagged and tagged
    twins of a 4-tuple are one flow too, as the mode says."""
    sc = Scenario()
    one_way = sc.conn("10.0.6.1", 44000, "10.0.6.2", 80, vlans=(7,), reply_vlans=(), key_vlans=())
    strip = sc.conn("10.0.6.3", 44001, "10.0.6.2", 80, vlans=(10, 20), reply_vlans=(10,), key_vlans=())
    for c, t in ((one_way, 0), (strip, 10)):
        c.start(0, "SYN_SENT")
        c.handshake(t)
        c.exchange(t + 3, 100, 200)
        c.end(0, "shutdown", sc.last_time, "ESTABLISHED")
    return sc, {"tcp": len(one_way.packets) + len(strip.packets)}, dict(tcp_invalid=0, tcp_no_flow=0)


def vlan_key_outer():
    """Run 6: --vlan-key outer: the inner tag differs by direction, the outer tag keeps apart two
    flows of one 4-tuple in VLANs 10 and 11."""
    sc = Scenario()
    a = sc.conn("10.0.7.1", 45000, "10.0.7.2", 80, vlans=(10, 20), reply_vlans=(10, 21), key_vlans=(10,))
    b = sc.conn("10.0.7.1", 45000, "10.0.7.2", 80, vlans=(11, 20), reply_vlans=(11,), key_vlans=(11,))
    for c, t in ((a, 0), (b, 10)):
        c.start(0, "SYN_SENT")
        c.handshake(t)
        c.exchange(t + 3, 10, 20)
        c.end(0, "shutdown", sc.last_time, "ESTABLISHED")
    return sc, {"tcp": len(a.packets) + len(b.packets)}, dict(tcp_invalid=0, tcp_no_flow=0)


def reopen_in_burst():
    """Run 4: a SYN reopens a reset flow that the same RX burst's bulk lookup already found, and
    the RST right behind it in that burst must reach the new flow, not the old record."""
    sc = Scenario()
    for i in range(3):
        c = sc.conn("10.0.5.1", 43000 + i, "10.0.5.2", 80)
        c.start(0, "SYN_SENT")
        c.send(0, True, SYN)
        c.send(0, False, RST | ACK)
        c.end(0, "reset", ms(100), "CLOSE")                    # reopened before it was reaped: it ended by its RST
        c.start(1, "SYN_SENT")
        c.send(100, True, SYN, life=1)
        c.send(100, False, RST | ACK, life=1)
        c.end(1, "reset", (ms(100), ms(5000)), "CLOSE")
    sc.tick(5000)
    return sc, {"tcp": 12}, dict(tcp_invalid=0, tcp_no_flow=0)


def check_flows(tap, res, sc, label):
    pairs, _ = harness.pair_flows(res.events)
    # The scenario models TCP. Its UDP, ICMP and other-protocol frames start flows of their own (issue 15):
    # their packets are in the invariants' per-flow sum (harness.check_invariants), their rules in
    # tests/conntrack/test_protocols.cpp.
    pairs = [(n, d) for n, d in pairs if d["proto"] == "tcp"]
    by_key = {}
    for n, d in pairs:
        by_key.setdefault(harness.conn_key(d), []).append((n, d))
    for lst in by_key.values():
        lst.sort(key=lambda nd: us_of(nd[0]["first_seen"]))
    want_keys = {}
    for x in sc.expected_flows():
        a, b = (x["src"], x["sport"]), (x["dst"], x["dport"])
        want_keys.setdefault((tuple(x["vlan"]), min(a, b), max(a, b)), []).append(x)
    tap.eq(sorted(map(str, by_key)), sorted(map(str, want_keys)),
           label + ": flows exist for exactly the conversations that may start one")
    tap.eq(len(pairs), sum(len(v) for v in want_keys.values()), label + ": number of flow lifetimes")
    for key, wants in want_keys.items():
        got = by_key.get(key, [])
        for i, x in enumerate(wants):
            name = "%s: %s" % (label, x["name"])
            if i >= len(got):
                tap.ok(False, name + ": tracked", "no such lifetime; got %d" % len(got))
                continue
            n, d = got[i]
            t_lo, t_hi = x["time"] if isinstance(x["time"], tuple) else (x["time"], x["time"])
            fields = dict(src=d["src"], sport=d["sport"], dst=d["dst"], dport=d["dport"], vlan=d.get("vlan", []),
                          packets_orig=d["packets_orig"], packets_reply=d["packets_reply"],
                          bytes_orig=d["bytes_orig"], bytes_reply=d["bytes_reply"],
                          first_seen=us_of(d["first_seen"]), last_seen=us_of(d["last_seen"]),
                          reason=d["reason"], state=d["state"], start_state=n["state"])
            want = {k: x[k] for k in fields}
            tap.eq(fields, want, name + ": originator, counts, bytes, first/last seen, reason, states")
            t = us_of(d["time"])
            tap.ok(t_lo <= t <= t_hi, name + ": ends at the expected time",
                   "got %d, want %s (offset %.3f ms)" % (t, (t_lo, t_hi), (t - t_lo) / 1000))
            tap.ok(us_of(n["time"]) == x["first_seen"] and n["packets_orig"] == 1 and n["packets_reply"] == 0,
                   name + ": the new event comes at the first packet, counting it", n)


def check_verdicts(tap, res, verdicts, counters, sc, label):
    s = res.summary
    if s is None:
        return
    want = dict(verdicts)
    if sc.non_ip or sc.fillers:
        want["non_ip"] = want.get("non_ip", 0) + sc.non_ip + sc.fillers
    tap.eq(s["verdict"], want, label + ": packets by verdict (the summary's 'by verdict' line)")
    if res.metrics is not None:
        for v, n in want.items():
            if v == "tcp":
                continue
            tap.eq(int(harness.metric(res.metrics, "flowcop_packets_total", result=v)), n,
                   label + ": metric flowcop_packets_total{result=%s}" % v)
    tap.eq({k: s[k] for k in counters}, counters, label + ": TCP packets invalid for state / unable to start a flow")


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    runs = [("lifecycle", lifecycle, ["--tcp-timeout-time-wait", "2", "--tcp-timeout-established", "3"], True, True),
            ("active timeout", active, ["--active-timeout", "2"], True, True),
            ("loose pickup off", no_loose_pickup, ["--loose-pickup", "off"], True, False),
            ("reopen in one burst", reopen_in_burst, [], True, False),
            ("vlan key none", vlan_key_none, ["--vlan-key", "none"], True, False),
            ("vlan key outer", vlan_key_outer, ["--vlan-key", "outer"], True, False),
            ("lifecycle, frames batched as the pcap PMD reads them", lifecycle,
             ["--tcp-timeout-time-wait", "2", "--tcp-timeout-established", "3"], False, False)]
    for layout in layouts.selected():
        for label, build, opts, isolate, scrape in runs:
            sc, verdicts, counters = build()
            path = os.path.join(tmp, "crafted_%s.pcap" % label.split(",")[0].replace(" ", "_"))
            n = sc.write(path, isolate=isolate)
            clock = FAST if build is not reopen_in_burst else ["--clock", "packet"]  # 1 s ticks: RSTs wait
            res = harness.run(exe, layout.vdevs(path), clock + opts + layout.opts(path), tmpdir=tmp, lcores=layout.lcores,
                              scrape_when_rx=n if scrape else None, timeout=30)
            label_l = "%s [%s]" % (label, layout.name)
            tap.note("%s: %d frames (%d fillers), flowcop took %.1f s" % (label_l, n, sc.fillers, res.elapsed))
            harness.check_invariants(tap, res, label_l)
            harness.check_layout(tap, res, layout, label_l)
            check_verdicts(tap, res, verdicts, counters, sc, label_l)
            tap.eq(res.summary and res.summary["received"], n, label_l + ": every frame of the capture was received")
            check_flows(tap, res, sc, label_l)
    tap.done()


if __name__ == "__main__":
    main()
