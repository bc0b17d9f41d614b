#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Replays fragmented UDP datagrams in every kind of order through the real flowcop binary (packet
clock, on every layout of flowcoptest.layouts: on two lcores the lcore that polls the port attributes
the fragments and hands each to its flow's owner) and checks that each flow's packets and bytes are its datagrams' frames, in
the direction they travelled, whatever the order: in order, last fragment first, middle first,
reversed, with duplicates, over IPv4 and IPv6 (Fragment header), each order in its own flow; a
datagram whose first fragment never comes is counted unattributed and on no flow.
/metrics then shows flowcop_fragments_total by result: tracked (attributed on arrival),
attributed_late (held until their first came, then on its flow) and unattributed.

Usage: test_fragments_order.py FLOWCOP_EXE TMPDIR
"""

import os
import struct
import sys


from flowcoptest import harness, layouts  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402

T0 = 1_700_000_000 * 1_000_000  # us
FRAG_HDR = 44                    # IPv6 Fragment header


def fragments(src, dst, sport, dport, ident, parts):
    """One UDP datagram of 8 + 16 * parts bytes in `parts` frames: the first holds the UDP header
    and 16 bytes, each later one 16 bytes."""
    body = struct.pack("!HHHH", sport, dport, 8 + 16 * parts, 0) + bytes(range(16 * parts))
    v4 = ":" not in src
    out = []
    pos = 0
    for i in range(parts):
        chunk = body[pos:pos + (24 if i == 0 else 16)]
        more = i + 1 < parts
        if v4:
            ip = pcaplib.ipv4(src, dst, 17, chunk, ident=ident, flags_frag=(0x2000 if more else 0) | (pos // 8))
            frame = pcaplib.ether(ip, pcaplib.ETH_IPV4)
        else:
            hdr = struct.pack("!BBHI", 17, 0, (pos // 8) << 3 | (1 if more else 0), ident)
            frame = pcaplib.ether(pcaplib.ipv6(src, dst, FRAG_HDR, hdr + chunk), pcaplib.ETH_IPV6)
        out.append(frame + b"\0" * max(0, 60 - len(frame)))
        pos += len(chunk)
    return out


# (name, order of the datagram's 4 fragments by index; 0 is the first fragment)
ORDERS = [("in order", [0, 1, 2, 3]),
          ("last first", [3, 0, 1, 2]),
          ("middle first", [2, 1, 0, 3]),
          ("reversed", [3, 2, 1, 0]),
          ("duplicates", [3, 3, 2, 0, 1, 2])]


def check_layout(tap, exe, lay, path, work, frames, want, late, on_arrival):
    res = harness.run(exe, lay.vdevs(path), ["--clock", "packet"] + lay.opts(path), lcores=lay.lcores, tmpdir=work,
                      scrape_when_rx=frames, timeout=30)
    harness.check_invariants(tap, res, "%s: fragments" % lay)
    by_port = {(e["dst"] if e["sport"] == 53 else e["src"], e["sport"] if e["sport"] != 53 else e["dport"]): e
               for e in res.destroys() if e.get("proto") == "udp"}
    for (family, name), w in want.items():
        e = by_port.get((w["src"], w["sport"]))
        label = "%s: %s, answer fragments %s" % (lay, family, name)
        if not tap.ok(e is not None, label + ": one UDP flow"):
            continue
        tap.eq((e["src"], e["packets_orig"], e["bytes_orig"]), (w["src"],) + w["orig"],
               label + ": the query's frame and bytes in the originator's direction")
        tap.eq((e["packets_reply"], e["bytes_reply"]), w["reply"],
               label + ": every answer frame and byte on the flow, in the reply direction")
    tap.eq(len(by_port), len(want), "%s: no other UDP flow (the lost answer started none)" % lay)
    m = res.metrics
    if tap.ok(m is not None, "%s: metrics scraped" % lay):
        got = {r: int(harness.metric(m, "flowcop_fragments_total", result=r))
               for r in ("tracked", "no_flow", "attributed_late", "unattributed")}
        tap.eq(got, {"tracked": on_arrival, "no_flow": 0, "attributed_late": late, "unattributed": 2},
               "%s: flowcop_fragments_total by result" % lay)
        tap.eq(int(harness.metric(m, "flowcop_fragments_pending")), 0, "%s: nothing pending at the end" % lay)


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    records, want = [], {}
    t = T0
    late = on_arrival = 0
    for family, (client, server) in (("ipv4", ("10.1.0.1", "10.1.0.2")), ("ipv6", ("2001:db8:1::1", "2001:db8:1::2"))):
        for k, (name, order) in enumerate(ORDERS):
            sport = 20000 + k
            # The client's query, whole; the server's answer, fragmented, in this order.
            query = pcaplib.ether(pcaplib.ipv4(client, server, 17, struct.pack("!HHHH", sport, 53, 28, 0) + bytes(20))
                                  if family == "ipv4" else
                                  pcaplib.ipv6(client, server, 17, struct.pack("!HHHH", sport, 53, 28, 0) + bytes(20)),
                                  pcaplib.ETH_IPV4 if family == "ipv4" else pcaplib.ETH_IPV6)
            query += b"\0" * max(0, 60 - len(query))
            answer = fragments(server, client, 53, sport, 0x100 + k, 4)
            records.append((t, query))
            t += 1000
            seen_first = False
            for i in order:
                records.append((t, answer[i]))
                t += 1000
                if i == 0:
                    late += sum(1 for j in order[:order.index(0)])
                    seen_first = True
                elif seen_first:
                    on_arrival += 1
            want[(family, name)] = {"src": client, "sport": sport,
                                    "orig": (1, pcaplib.ip_length(query)),  # IP bytes, as flowcop counts
                                    "reply": (len(order), sum(pcaplib.ip_length(answer[i]) for i in order))}
    # An answer whose first fragment never comes: its two later fragments are held, then unattributed.
    lost = fragments("10.1.0.2", "10.1.0.9", 53, 30000, 0x999, 3)
    records += [(t, lost[2]), (t + 1000, lost[1])]
    t += 2000
    # A frame 3 s later lets the held entry expire (1 s) under the packet clock.
    tail = pcaplib.tcp_frame("10.9.0.1", "10.9.0.2", 1, 2, pcaplib.SYN)
    records.append((t + 3_000_000, tail))
    path = os.path.join(tmp, "fragments_order.pcap")
    pcaplib.write_pcap(path, records)

    for lay in layouts.selected():
        work = os.path.join(tmp, lay.name)
        os.makedirs(work, exist_ok=True)
        check_layout(tap, exe, lay, path, work, len(records), want, late, on_arrival)
    tap.done()


if __name__ == "__main__":
    main()
