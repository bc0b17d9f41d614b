#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""ICMP errors and fragments under the rss plan, on the port that deals packets to its queues as a NIC's
RSS does (flowgen's replay=FILE,queues=2: a Toeplitz hash of the outer addresses, and ports for
unfragmented TCP/UDP, with flowcop's symmetric key and the table flowcop programs).

A NIC delivers an ICMP error by its outer addresses (a router's, the quoted packet's sender's), not by the
flow it quotes, and a fragment by its addresses alone: on two lcores about half of them reach the lcore
that does not own their flow. flowcop hands those to the owner (app/architecture.md, "Who owns a flow" and
"Fragments and ownership"). This test replays one capture on `-l 0` (single_lcore, the reference) and on
`-l 0-1` (the rss plan) and checks on both:
  - every ICMP/ICMPv6 error quoting a TCP or UDP flow (flows on both lcores) is counted RELATED on the
    lcore that owns the quoted flow (flowcop_icmp_related_total{lcore,result="known_flow"} per lcore
    equals the errors quoting the flows whose `new` event that lcore emitted), none unknown_flow;
  - fragmented UDP answers (IPv4 and IPv6) and a fragmented TCP segment, their fragments in every order,
    are one flow per connection whose packets and IP bytes are exactly its frames', in their direction;
  - SCTP, keyed by addresses, is one flow per host pair on every layout (the port hashes it by addresses);
  - under rss some packets changed lcore (flowcop_handoff_sent_total > 0, all received, none dropped),
    and every other packet stayed where it arrived (the handoff carried no more than the ICMP errors and
    fragments of the capture).

Usage: test_rss_related.py FLOWCOP_EXE TMPDIR
"""

import os
import struct
import sys


from flowcoptest import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402

ip_len = pcaplib.ip_length  # what flowcop's byte counters count (RFC 7012)

T0 = 1_700_000_000 * 1_000_000  # us
FRAG_HDR = 44
GAP_US = 300_000
ORDERS = [[0, 1, 2, 3], [3, 0, 1, 2], [2, 1, 0, 3], [3, 2, 1, 0], [3, 3, 2, 0, 1, 2]]


def pad(frame):
    return frame + b"\0" * max(0, 60 - len(frame))


def ip_frame(src, dst, proto, payload, **kw):
    if ":" in src:
        return pad(pcaplib.ether(pcaplib.ipv6(src, dst, proto, payload), pcaplib.ETH_IPV6))
    return pad(pcaplib.ether(pcaplib.ipv4(src, dst, proto, payload, **kw), pcaplib.ETH_IPV4))


def udp(sport, dport, body):
    return struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body


def icmp_error(router, to, quoted_ip):
    """Destination unreachable (ICMPv4 3/3, ICMPv6 1/4) from `router` to `to`, quoting an IP datagram."""
    v6 = ":" in router
    msg = struct.pack("!BBHI", 1 if v6 else 3, 4 if v6 else 3, 0, 0) + quoted_ip
    if v6:
        import ipaddress
        pseudo = ipaddress.IPv6Address(router).packed + ipaddress.IPv6Address(to).packed + \
            struct.pack("!IxxxB", len(msg), 58)
        msg = msg[:2] + struct.pack("!H", pcaplib._csum(pseudo + msg)) + msg[4:]
        return ip_frame(router, to, 58, msg)
    msg = msg[:2] + struct.pack("!H", pcaplib._csum(msg)) + msg[4:]
    return ip_frame(router, to, 1, msg)


def fragments(src, dst, proto, body, ident, parts):
    """One datagram of protocol `proto` carrying `body` (its L4 header first) in `parts` frames: the first
    holds 24 bytes, each later one 16 (the last the rest)."""
    v4 = ":" not in src
    out, pos = [], 0
    for i in range(parts):
        chunk = body[pos:pos + (24 if i == 0 else 16)] if i + 1 < parts else body[pos:]
        more = i + 1 < parts
        if v4:
            ip = pcaplib.ipv4(src, dst, proto, chunk, ident=ident, flags_frag=(0x2000 if more else 0) | (pos // 8))
            out.append(pad(pcaplib.ether(ip, pcaplib.ETH_IPV4)))
        else:
            hdr = struct.pack("!BBHI", proto, 0, (pos // 8) << 3 | (1 if more else 0), ident)
            out.append(pad(pcaplib.ether(pcaplib.ipv6(src, dst, FRAG_HDR, hdr + chunk), pcaplib.ETH_IPV6)))
        pos += len(chunk)
    return out


def build(tmp):
    """The capture, the ICMP errors expected per quoted flow (by (client, client port)), and each
    fragmented connection's expected (orig, reply) packets and bytes."""
    # Two phases: every flow's unfragmented packets first, then (GAP_US later) the ICMP errors and the
    # fragments. A port delivers a flow's packets and its errors or fragments to different queues, and
    # two lcores (or one polling two queues) read their queues at their own pace, as they would a NIC's:
    # an error read before its flow was would be unknown_flow, a reply fragment before the query would
    # start the flow in the wrong direction. The port replays paced (realtime=1, burst=1), so the gap
    # lets every lcore read the first phase before the second begins.
    first, second = [], []
    errors = {}     # (client, sport) -> errors quoting it
    fragment_frames = 0
    exact = {}      # (client, sport) -> ((packets_orig, bytes_orig), (packets_reply, bytes_reply))

    def add(frame, phase=None):
        (first if phase is None else phase).append(frame)

    # 24 TCP connections and 24 UDP flows over IPv4, 12 UDP over IPv6, each quoted by an ICMP error from
    # a router: spread over both lcores by their 4-tuples, the errors by their outer addresses.
    for i in range(60):
        v6 = i >= 48
        client = "2001:db8:5::%x" % (i + 1) if v6 else "10.5.%d.%d" % (i // 200, i % 200 + 1)
        server = "2001:db8:6::1" if v6 else "192.0.2.%d" % (i % 7 + 1)
        router = "2001:db8:ff::%x" % (i % 5 + 1) if v6 else "172.16.%d.1" % (i % 5)
        sport = 33000 + i
        if i < 24:
            add(pcaplib.tcp_frame(client, server, sport, 443, pcaplib.SYN, seq=100))
            add(pcaplib.tcp_frame(server, client, 443, sport, pcaplib.SYN | pcaplib.ACK, seq=500, ack=101))
            add(pcaplib.tcp_frame(client, server, sport, 443, pcaplib.ACK, seq=101, ack=501))
            seg = pcaplib.tcp_segment(client, server, sport, 443, pcaplib.ACK | pcaplib.PSH, 101, 501, b"x" * 8)
            quoted = pcaplib.ipv4(client, server, 6, seg)[:28]
        else:
            body = udp(sport, 53, b"q" * 20)
            add(ip_frame(client, server, 17, body))
            add(ip_frame(server, client, 17, udp(53, sport, b"a" * 20)))
            quoted = (pcaplib.ipv6(client, server, 17, body)[:48] if v6 else pcaplib.ipv4(client, server, 17, body)[:28])
        n = 1 + i % 2
        for _ in range(n):
            add(icmp_error(router, client, quoted), second)
        errors[(client, sport)] = n

    # Fragmented UDP answers (IPv4 and IPv6) in every order, 4 connections per order and family.
    k = 0
    for family in ("ipv4", "ipv6"):
        for order in ORDERS:
            for j in range(4):
                client = "10.7.0.%d" % (k + 1) if family == "ipv4" else "2001:db8:7::%x" % (k + 1)
                server = "10.8.0.%d" % (j + 1) if family == "ipv4" else "2001:db8:8::%x" % (j + 1)
                sport = 20000 + k
                query = ip_frame(client, server, 17, udp(sport, 53, bytes(20)))
                answer = fragments(server, client, 17, udp(53, sport, bytes(range(56))), 0x100 + k, 4)
                add(query)
                for i in order:
                    add(answer[i], second)
                fragment_frames += len(order)
                exact[(client, sport)] = ((1, ip_len(query)), (len(order), sum(ip_len(answer[i]) for i in order)))
                k += 1

    # A TCP segment sent in fragments after a handshake, its later fragment first, on several connections.
    for j in range(8):
        client, server, sport = "10.9.0.%d" % (j + 1), "10.9.1.1", 41000 + j
        frames = [pcaplib.tcp_frame(client, server, sport, 80, pcaplib.SYN, seq=1),
                  pcaplib.tcp_frame(server, client, 80, sport, pcaplib.SYN | pcaplib.ACK, seq=9, ack=2),
                  pcaplib.tcp_frame(client, server, sport, 80, pcaplib.ACK, seq=2, ack=10)]
        for f in frames:
            add(f)
        seg = pcaplib.tcp_segment(client, server, sport, 80, pcaplib.ACK | pcaplib.PSH, 2, 10, bytes(40))
        frags = fragments(client, server, 6, seg, 0x200 + j, 3)
        for f in [frags[2], frags[0], frags[1]] if j % 2 else frags:
            add(f, second)
        fragment_frames += len(frags)
        exact[(client, sport)] = ((2 + len(frags), ip_len(frames[0]) + ip_len(frames[2]) + sum(map(ip_len, frags))),
                                  (1, ip_len(frames[1])))

    # SCTP associations between one host pair: flowcop keys SCTP by addresses (one flow), so the port must
    # not hash them with their ports (flowcop leaves SCTP out of the RSS fields it asks for: port_plan.cpp);
    # with ports, 16 associations would split over the two queues into two copies of the one flow.
    for j in range(16):
        add(ip_frame("10.10.0.1", "10.10.0.2", 132, struct.pack("!HHII", 50000 + j, 38412, 0, 0) + bytes(20)))
        add(ip_frame("10.10.0.2", "10.10.0.1", 132, struct.pack("!HHII", 38412, 50000 + j, 1, 0) + bytes(20)))

    records = [(T0 + 100 * i, f) for i, f in enumerate(first)]
    records += [(T0 + 100 * len(first) + GAP_US + 100 * i, f) for i, f in enumerate(second)]
    path = os.path.join(tmp, "rss_related.pcap")
    pcaplib.write_pcap(path, records)
    return path, len(records), errors, exact, fragment_frames


def check(tap, res, label, errors, exact, fragment_frames, rss):
    harness.check_invariants(tap, res, label)
    m = res.metrics
    if not tap.ok(m is not None, label + ": metrics scraped"):
        return
    plan = "rss" if rss else "single_lcore"
    tap.eq(int(harness.metric(m, "flowcop_ownership_plan_info", plan=plan)), 1, label + ": the plan is " + plan)
    news = {}
    for e in res.news():
        news.setdefault((e["src"], e["sport"]), []).append(e)
    # The quoted flows: each once, on lcores that between them hold flows of both (under rss).
    owner = {key: news[key][0]["lcore"] for key in errors if len(news.get(key, [])) == 1}
    tap.eq(len(owner), len(errors), label + ": every quoted flow is one flow")
    if rss:
        tap.eq(sorted(set(owner.values())), [0, 1], label + ": the quoted flows are owned by both lcores")
    for lcore in (0, 1) if rss else (0,):
        want = sum(n for key, n in errors.items() if owner.get(key) == lcore)
        tap.eq(int(harness.metric(m, "flowcop_icmp_related_total", lcore=lcore, result="known_flow")), want,
               label + ": lcore %d counts RELATED the errors quoting its flows" % lcore)
    tap.eq(int(harness.metric(m, "flowcop_icmp_related_total", result="unknown_flow")), 0,
           label + ": no error is counted unknown_flow")

    ends = {}
    for e in res.destroys():
        ends.setdefault((e["src"], e["sport"]), []).append(e)
    ok = 0
    for key, (orig, reply) in exact.items():
        got = ends.get(key, [])
        if len(got) == 1 and (got[0]["packets_orig"], got[0]["bytes_orig"]) == orig and \
                (got[0]["packets_reply"], got[0]["bytes_reply"]) == reply:
            ok += 1
        else:
            tap.note("%s: %s: want %s %s, got %s" % (label, key, orig, reply, got))
    tap.eq(ok, len(exact), label + ": every fragmented connection is one flow with exactly its frames and bytes")
    if rss:
        tap.eq(sorted({ends[k][0]["lcore"] for k in exact if k in ends}), [0, 1],
               label + ": the fragmented connections are owned by both lcores")
    tap.eq(int(harness.metric(m, "flowcop_fragments_total", result="unattributed")), 0,
           label + ": no fragment unattributed")
    tap.eq(int(harness.metric(m, "flowcop_fragments_total", result="no_flow")), 0, label + ": no fragment without its flow")
    sctp = [e for e in res.destroys() if {e["src"], e["dst"]} == {"10.10.0.1", "10.10.0.2"}]
    tap.eq([(e["packets_orig"] + e["packets_reply"]) for e in sctp], [32],
           label + ": 16 SCTP associations of one host pair are its one flow (keyed by addresses), all 32 frames")
    sent = int(harness.metric(m, "flowcop_handoff_sent_total"))
    if rss:
        rare = sum(errors.values()) + fragment_frames
        tap.ok(0 < sent <= rare, label + ": %d ICMP errors and fragments changed lcore (at most the %d there are)"
               % (sent, rare))
        tap.eq(int(harness.metric(m, "flowcop_handoff_received_total")), sent, label + ": every one was received")
        tap.eq(int(harness.metric(m, "flowcop_handoff_dropped_total")), 0, label + ": none dropped")
    else:
        tap.eq(sent, 0, label + ": nothing handed off")


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    path, frames, errors, exact, fragment_frames = build(tmp)
    for lcores, rss in (("0", False), ("0-1", True)):
        label = "-l %s (%s)" % (lcores, "rss plan" if rss else "one lcore")
        res = harness.run(exe, [], ["--clock", "packet", "--flowgen", "replay=%s,queues=2,realtime=1,burst=1" % path],
                          lcores=lcores, tmpdir=tmp, scrape_when_rx=frames, timeout=60)
        check(tap, res, label, errors, exact, fragment_frames, rss)
    tap.done()


if __name__ == "__main__":
    main()
