#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hostile frames and floods replayed through the real flowcop binary (packet clock, exact).

Usage: test_frames.py FLOWCOP_EXE TMPDIR REPO_ROOT

Runs (each a crafted capture, checked flow by flow with the integration suite's check_flows and
ended with every invariant, hostile.finish):
  1. frames: one crafted frame for each malformed class and variant the integration suite's
     crafted replay does not already send (IPv6 variants, runt and 0-byte frames, a VLAN tag cut
     in half, nine extension headers, a jumbo frame with a lying length, ...), the not-tracked
     protocols, 9000-byte jumbo frames of two real flows, and the 80 kB BIG TCP frame of
     tests/data/captures, all between the packets of a live flow whose counts must stay exact.
     Together with the crafted replay, every malformed Verdict of lib/packet/verdict.h is covered.
  2. floods: 20 000 RST, RST+ACK, bare FIN and scan-flag (NULL, XMAS, SYN+FIN, ...) segments for
     unknown flows create nothing and are counted tcp_no_flow, around a live flow.
  3. loose pickup off: FIN+ACK, ACK and SYN+ACK floods for unknown flows create nothing.
  4. loose pickup on, table of 1024: a FIN+ACK flood (which, like netfilter's ACK pickup,
     does create unassured FIN_WAIT flows) on a table holding 700 assured flows: every assured
     flow survives, only flood flows are evicted, evictions and refusals are counted.
  5. port reuse storm: 200 lifetimes of one 4-tuple, each reopened inside TIME_WAIT, from either
     side alternately, some after an RST in TIME_WAIT: one open flow at a time, each lifetime exact.
"""

import os
import random
import struct
import sys

# The crafted-replay test's scenarios are reused here.

import hostile  # noqa: E402
from hostile import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, FIN, PSH, RST, SYN, URG  # noqa: E402
from flowcoptest.scenario import Packet, Scenario, ms  # noqa: E402
import test_replay_crafted as crafted  # noqa: E402

FAST = ["--clock", "packet", "--tick-ms", "1", "--check-interval-ms", "1"]
E4, E6, EQ = pcaplib.ETH_IPV4, pcaplib.ETH_IPV6, pcaplib.TPID_8021AD


def pad(f):
    return f + b"\0" * max(0, 60 - len(f))


def hostile_frames():
    """(verdict, frame, what). Addresses are flow A's (10.0.0.1:40001 <-> 10.0.0.2:80) or its
    IPv6 twin's, so a parser that guessed would inflate a flow's counts."""
    a, b, a6, b6 = "10.0.0.1", "10.0.0.2", "2001:db8::1", "2001:db8::2"
    seg = pcaplib.tcp_segment(a, b, 40001, 80, ACK)
    seg6 = pcaplib.tcp_segment(a6, b6, 40001, 80, ACK)
    v4, v6, eth = pcaplib.ipv4, pcaplib.ipv6, pcaplib.ether

    def ext_chain(n_headers, last_nh=6):
        """n destination-options headers of 8 bytes, the last one pointing at last_nh."""
        return b"".join(bytes([60 if i < n_headers - 1 else last_nh, 0]) + b"\0" * 6 for i in range(n_headers))

    big = b"y" * (9000 - 14 - 20 - 20)
    return [
        ("truncated_l2", b"", "a 0-byte frame"),
        ("truncated_l2", b"\x02", "a 1-byte frame"),
        ("truncated_l2", b"\x02" * 13, "a 13-byte frame (one short of an Ethernet header)"),
        ("truncated_l2", eth(b"\x00", pcaplib.TPID_8021Q), "a VLAN tag cut after one byte"),
        ("truncated_l3", eth(b"", E4), "an Ethernet header alone (IPv4 ethertype)"),
        ("truncated_l3", eth(v6(a6, b6, 6, seg6)[:30], E6), "an IPv6 header cut at 30 bytes"),
        ("ip_bad_version", pad(eth(v4(a, b, 6, seg), E6)), "an IPv4 header under the IPv6 ethertype"),
        ("ip_bad_total_length", pad(eth(v6(a6, b6, 6, seg6, payload_length=1000), E6)),
         "IPv6 payload length beyond the frame"),
        ("ip_bad_total_length", pad(eth(v4(a, b, 6, seg, total_length=0), E4)),
         "IPv4 total length 0 on a small frame (not BIG TCP)"),
        ("ip_bad_total_length", eth(v4(a, b, 6, pcaplib.tcp_segment(a, b, 40001, 80, ACK, payload=big),
                                       total_length=9100), E4), "a 9000-byte frame claiming 9100 bytes of IP"),
        ("ipv4_bad_ihl", pad(eth(v4(a, b, 6, seg, ihl=15), E4)), "IHL 15 (60 bytes) beyond a 60-byte frame"),
        ("ipv6_ext_too_long", pad(eth(v6(a6, b6, 60, ext_chain(9) + seg6), E6)), "nine extension headers"),
        ("ipv6_ext_truncated", pad(eth(v6(a6, b6, 43, bytes([6, 10]) + b"\0" * 6 + seg6), E6)),
         "a routing header claiming 88 bytes in 48"),
        ("truncated_l4", pad(eth(v6(a6, b6, 6, seg6[:10]), E6)), "a 10-byte TCP header over IPv6"),
        ("truncated_l4", pad(eth(v4(a, b, 17, b"\0\x35\0\x35"), E4)), "a 4-byte UDP header"),
        ("tcp_bad_data_offset", pad(eth(v4(a, b, 6, seg[:12] + bytes([0xF0]) + seg[13:]), E4)),
         "TCP data offset 15 (60 bytes) in a 20-byte segment"),
        ("vlan_too_deep", pad(eth(v4(a, b, 6, seg), E4, vlans=(1, 2, 3, 4, 5), tpids=[EQ, 0x9100, EQ, 0x8100, 0x8100])),
         "five stacked tags of mixed TPIDs"),
        ("fragment", pad(eth(v6(a6, b6, 44, bytes([6, 0]) + struct.pack("!HI", 100 << 3, 7) + seg6), E6)),
         "a non-first IPv6 fragment"),
        ("icmp", pad(eth(v4(a, b, 1, bytes([8, 0, 0, 0, 0, 1, 0, 1])), E4)), "an ICMP echo request"),
        ("icmp", pad(eth(v6(a6, b6, 58, bytes([128, 0, 0, 0, 0, 1, 0, 1])), E6)), "an ICMPv6 echo request"),
        ("other_l4", pad(eth(v4(a, b, 47, b"\0\0\x08\0"), E4)), "GRE"),
        ("icmp_error", pad(eth(v4(b, a, 1, bytes([3, 3, 0, 0, 0, 0, 0, 0]) + v4(a, b, 6, seg)[:28]), E4)),
         "a port unreachable quoting flow A's segment"),
        ("icmp_error", pad(eth(v6(b6, a6, 58, bytes([2, 0, 0, 0, 0, 0, 5, 0]) + v6(a6, b6, 6, seg6)[:48]), E6)),
         "a packet too big quoting flow A's IPv6 twin"),
        ("icmp_other", pad(eth(v6(a6, b6, 58, bytes([135, 0, 0, 0, 0, 0, 0, 0]) + b"\0" * 16), E6)),
         "a neighbour solicitation"),
        ("icmp_bad_quote", pad(eth(v4(b, a, 1, bytes([11, 0, 0, 0, 0, 0, 0, 0]) + v4(a, b, 6, seg)[:24]), E4)),
         "a time exceeded quoting only 4 bytes of TCP"),
        ("udp", pad(eth(v6(a6, b6, 17, struct.pack("!HHHH", 53, 53, 8, 0)), E6)), "UDP over IPv6"),
        ("non_ip", pad(eth(b"\x02\x07\x04" + b"\0" * 20, 0x88CC)), "LLDP"),
    ]


def bigtcp_frame(repo):
    _, recs = pcaplib.read_pcap(os.path.join(repo, "tests", "data", "captures", "tcpdump_bigtcp_ipv4_80kB_frame.pcap"))
    return recs[0][3]


def run_frames(repo):
    sc = Scenario()
    a = sc.conn("10.0.0.1", 40001, "10.0.0.2", 80)
    a.start(0, "SYN_SENT")
    a.handshake(0)
    frames = hostile_frames()
    for i, (_, f, _) in enumerate(frames):
        sc.raw(3 + i * 0.01, f)
    a.exchange(10, 100, 200)

    j4 = sc.conn("10.1.0.1", 50000, "10.1.0.2", 80)             # 9000-byte frames both ways
    j4.start(0, "SYN_SENT")
    j4.handshake(20)
    j4.exchange(25, 9000 - 54, 9000 - 54)
    j6 = sc.conn("2001:db8:1::1", 50001, "2001:db8:1::2", 443, vlans=(7,))
    j6.start(0, "SYN_SENT")
    j6.handshake(30)
    j6.exchange(35, 9000 - 78, 9000 - 78)

    big = bigtcp_frame(repo)                                      # picked up mid-stream (ACK)
    f = pcaplib.dissect(big)
    g = sc.conn(f.src, f.sport, f.dst, f.dport)
    g.start(0, "ESTABLISHED")
    p = Packet(ms(40), big, g, True, 0)
    g.packets.append(p)
    sc.packets.append(p)
    t_last = sc.last_time()
    for c in (a, j4, j6, g):
        c.end(0, "shutdown", t_last, "ESTABLISHED")
    verdicts = {"tcp": sum(len(c.packets) for c in sc.conns)}
    for v, _, _ in frames:
        verdicts[v] = verdicts.get(v, 0) + 1
    return sc, verdicts, dict(tcp_invalid=0, tcp_no_flow=0, tcp_table_full=0)


def run_floods():
    sc = Scenario()
    rnd = random.Random(7)
    b = sc.conn("10.0.0.3", 40002, "10.0.0.2", 80)
    b.start(0, "SYN_SENT")
    b.handshake(0)
    kinds = [RST, RST | ACK, FIN, 0, FIN | PSH | URG, SYN | FIN, SYN | RST, SYN | FIN | PSH | URG, URG, PSH]
    n = 0
    for t in range(5, 5 + 625):                                   # 32 frames per millisecond
        for k in range(32):
            flags = kinds[n % len(kinds)]
            if n % 97 == 0:                                       # near misses of B: its key on VLAN 9
                fr = pcaplib.tcp_frame("10.0.0.3", "10.0.0.2", 40002, 80, flags, vlans=(9,))
            else:
                src = "198.18.%d.%d" % (rnd.randrange(256), rnd.randrange(1, 255))
                fr = pcaplib.tcp_frame(src, "10.0.0.2", rnd.randrange(1024, 65536), 80, flags, seq=rnd.getrandbits(32))
            sc.raw(t, fr)
            n += 1
        if t % 50 == 0:
            b.exchange(t + 0.5, 10, 10, step_ms=0.1)
    b.end(0, "shutdown", sc.last_time(), "ESTABLISHED")
    return sc, {"tcp": len(b.packets) + n}, dict(tcp_invalid=0, tcp_no_flow=n, tcp_table_full=0)


def run_loose_off():
    sc = Scenario()
    rnd = random.Random(8)
    c = sc.conn("10.0.0.4", 40003, "10.0.0.2", 80)
    c.start(0, "SYN_SENT")
    c.handshake(0)
    n = 0
    for t in range(5, 5 + 375):
        for k in range(32):
            flags = (FIN | ACK, ACK, SYN | ACK, PSH | ACK)[n % 4]
            src = "198.19.%d.%d" % (rnd.randrange(256), rnd.randrange(1, 255))
            sc.raw(t, pcaplib.tcp_frame(src, "10.0.0.2", rnd.randrange(1024, 65536), 80, flags))
            n += 1
    c.exchange(400, 10, 10)
    c.end(0, "shutdown", sc.last_time(), "ESTABLISHED")
    return sc, {"tcp": len(c.packets) + n}, dict(tcp_invalid=0, tcp_no_flow=n, tcp_table_full=0)


N_ASSURED, N_FINACK = 700, 5000


def finack_flood_capture(path):
    """700 assured flows, then 5000 FIN+ACK segments for unknown flows. Not a Scenario: which
    flood flows are evicted is random (early drop samples records), so the checks are counts."""
    recs, t = [], ms(0)
    for i in range(N_ASSURED):
        c, s, cp = "10.2.%d.%d" % (i // 250, i % 250 + 1), "10.3.0.1", 20000 + i
        for j, (fw, fl) in enumerate([(True, SYN), (False, SYN | ACK), (True, ACK)]):
            src, sp, dst, dp = (c, cp, s, 80) if fw else (s, 80, c, cp)
            recs.append((t + i * 10 + j, pcaplib.tcp_frame(src, dst, sp, dp, fl)))
    t = ms(100)
    rnd = random.Random(9)
    for i in range(N_FINACK):
        src = "198.20.%d.%d" % (rnd.randrange(256), rnd.randrange(1, 255))
        recs.append((t + i * 10, pcaplib.tcp_frame(src, "10.3.0.1", rnd.randrange(1024, 65536), 80, FIN | ACK)))
    pcaplib.write_pcap(path, recs)
    return len(recs)


def run_reuse_storm():
    sc = Scenario()
    r = sc.conn("10.0.0.9", 41000, "10.0.0.2", 80)
    lives = 200
    for i in range(lives):
        base = i * 20
        client = i % 2 == 0                                       # odd lifetimes: the server opens
        r.start(i, "SYN_SENT")
        r.send(base, client, SYN, life=i)
        r.send(base + 1, not client, SYN | ACK, life=i)
        r.send(base + 2, client, ACK, life=i)
        r.send(base + 3, client, PSH | ACK, 10 + i, life=i)
        r.send(base + 4, not client, ACK, life=i)
        r.close(base + 5, life=i, client_first=client)           # TIME_WAIT at base + 7
        if i % 10 == 9 and i < lives - 1:                         # RST in TIME_WAIT: reaped, not reopened
            r.send(base + 12, client, RST, life=i)
            r.end(i, "reset", (ms(base + 12), ms(base + 20)), "CLOSE")
        elif i < lives - 1:
            r.end(i, "closed", ms(base + 20), "TIME_WAIT")       # the next SYN reopens it
    end = (lives - 1) * 20 + 7
    sc.tick(end + 2000)
    r.end(lives - 1, "closed", ms(end + 2000), "TIME_WAIT")
    return sc, {"tcp": len(r.packets)}, dict(tcp_invalid=0, tcp_no_flow=0, tcp_table_full=0)


def check_counts(tap, res, sc, verdicts, counters, label):
    s = res.summary
    if s is None:
        return
    want = dict(verdicts)
    want["non_ip"] = want.get("non_ip", 0) + sc.non_ip + sc.fillers
    tap.eq(s["verdict"], want, label + ": packets by verdict (summary)")
    if res.metrics is not None:
        got = {v: int(harness.metric(res.metrics, "flowcop_packets_total", result=v)) for v in want if v != "tcp"}
        tap.eq(got, {v: n for v, n in want.items() if v != "tcp"}, label + ": flowcop_packets_total by result")
        tap.eq(int(harness.metric(res.metrics, "flowcop_packets_total", result="tcp_no_flow")), counters["tcp_no_flow"],
               label + ": flowcop_packets_total{result=tcp_no_flow}")
    tap.eq({k: s[k] for k in counters}, counters, label + ": TCP invalid for state / no flow / table full")


def replay_scenario(tap, exe, tmp, label, build, opts):
    sc, verdicts, counters = build()
    path = os.path.join(tmp, "hostile_%s.pcap" % label.replace(" ", "_"))
    n = sc.write(path)
    res = harness.run(exe, ["net_pcap0,rx_pcap=" + path], FAST + opts, tmpdir=tmp, scrape_when_rx=n, timeout=60)
    tap.note("%s: %d frames, flowcop took %.1f s" % (label, n, res.elapsed))
    hostile.finish(tap, res, label)
    tap.eq(res.summary and res.summary["received"], n, label + ": every frame was received")
    check_counts(tap, res, sc, verdicts, counters, label)
    crafted.check_flows(tap, res, sc, label)
    return res


def check_coverage(tap, repo):
    names, malformed = hostile.verdict_names(repo)
    mine = {v for v, _, _ in hostile_frames()}
    theirs = {v for v, _ in crafted.malformed_frames()}
    tap.eq(sorted(set(malformed) - mine - theirs), [],
           "every malformed Verdict in verdict.h is sent by this test or the crafted replay")
    untracked = set(names) - set(malformed) - {"tcp"}
    tap.eq(sorted(untracked - mine - theirs), [],
           "every untracked Verdict (udp, icmp, icmp_error, icmp_other, other_l4, non_ip, fragment) is sent")
    tap.eq(sorted(mine & theirs - {"truncated_l2", "truncated_l3", "truncated_l4", "ip_bad_total_length",
                                   "ip_bad_version", "ipv4_bad_ihl", "ipv6_ext_truncated", "tcp_bad_data_offset",
                                   "vlan_too_deep", "fragment", "udp"}), [],
           "classes shared with the crafted replay are new variants only (listed above)")


def run_finack(tap, exe, tmp):
    label = "FIN+ACK flood, loose pickup on, 1024 flows"
    path = os.path.join(tmp, "hostile_finack.pcap")
    n = finack_flood_capture(path)
    res = harness.run(exe, ["net_pcap0,rx_pcap=" + path], FAST + ["--flows-per-lcore", "1024"], tmpdir=tmp,
                      scrape_when_rx=n, timeout=60)
    hostile.finish(tap, res, label)
    s, m = res.summary, res.metrics
    if s is None or m is None:
        tap.ok(False, label + ": summary and scrape", res.stderr[-2000:])
        return
    d = res.destroys()
    assured = [e for e in d if e["dst"] == "10.3.0.1" and e["src"].startswith("10.2.")]
    tap.ok(len(assured) == N_ASSURED and all(e["reason"] == "shutdown" and e["state"] == "ESTABLISHED"
                                              for e in assured),
           label + ": all %d assured flows survive the flood (end at shutdown, ESTABLISHED)" % N_ASSURED,
           [e for e in assured if e["reason"] != "shutdown"][:3])
    ev = [e for e in d if e["reason"] == "evicted"]
    tap.ok(ev and all(e["state"] == "FIN_WAIT" and e["src"].startswith("198.20.") for e in ev),
           label + ": %d flows evicted, every one a flood flow in FIN_WAIT" % len(ev), ev[:3])
    flood_created = s["created"] - N_ASSURED
    tap.eq(flood_created + s["tcp_table_full"], N_FINACK,
           label + ": each flood segment created a flow or was refused (table_full %d)" % s["tcp_table_full"])
    # Every eviction is one successful attempt; a refusal follows at least one failed one (or
    # a run of evictions that still left the new key's buckets full).
    attempts = harness.metric(m, "flowcop_flows_early_drop_attempts_total")
    tap.ok(attempts > len(ev) and s["tcp_table_full"] > 0,
           label + ": early-drop attempts (%d) cover every eviction (%d); refusals counted (%d)"
           % (attempts, len(ev), s["tcp_table_full"]))
    tap.eq(int(harness.metric(m, "flowcop_flows_dropped_total", reason="table_full")), s["tcp_table_full"],
           label + ": flowcop_flows_dropped_total{reason=table_full} == the summary's refusals")
    tap.ok(harness.metric(m, "flowcop_flows_active") <= 1024, label + ": the table never holds more than its capacity")


def main():
    exe, tmp, repo = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    check_coverage(tap, repo)
    res = replay_scenario(tap, exe, tmp, "frames", lambda: run_frames(repo), [])
    big = [e for e in res.destroys() if e["bytes_orig"] + e["bytes_reply"] > 65535]
    # Bytes are IP bytes (RFC 7012): for BIG TCP (IPv4 total length 0) the frame's bytes after its L2 header.
    tap.ok(len(big) == 1 and big[0]["packets_orig"] == 1
           and big[0]["bytes_orig"] == pcaplib.ip_length(bigtcp_frame(repo)),
           "frames: the 80 kB BIG TCP frame is one packet of its full length", big)
    replay_scenario(tap, exe, tmp, "floods", run_floods, [])
    replay_scenario(tap, exe, tmp, "loose pickup off", run_loose_off, ["--loose-pickup", "off"])
    run_finack(tap, exe, tmp)
    replay_scenario(tap, exe, tmp, "port reuse storm", run_reuse_storm, ["--tcp-timeout-time-wait", "2"])
    tap.done()


if __name__ == "__main__":
    main()
