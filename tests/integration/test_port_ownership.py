#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Two lcores, two single-queue ports, each direction of every connection on a different port:
the layout where a naive "one lcore per port" plan gives every flow two owners. Neither port has
RSS, so flowcop runs the handoff plan (app/service/plan/port_plan.h): lcore 0 polls port 0, lcore 1
polls port 1, and each hands the packets of flows the other owns to it. It must say so, use both
lcores, and track each connection as ONE flow on ONE lcore with both directions counted there.

Usage: test_port_ownership.py FLOWCOP_EXE TMPDIR

The capture is crafted here: CONNS IPv4 and IPv6 connections (handshake, data both ways, FIN
close), split by direction into two pcap files, one per net_pcap port; flowcop runs in monitor
mode with --clock packet and EAL lcores 0 and 1. The RSS half of the plan needs a NIC with
several queues; its rule is covered by the unit test tests/app/plan/test_port_plan.cpp.
"""

import os
import sys


from flowcoptest import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, FIN, PSH, SYN  # noqa: E402

CONNS = 40
T0_US = 1_700_000_000 * 1_000_000


def connection(i):
    """(client, frames client->server, frames server->client), frames as (time_us, bytes)."""
    if i % 2:
        c, s = "2001:db8::%x" % (i + 1), "2001:db8:1::1"
    else:
        c, s = "10.1.%d.%d" % (i // 200, i % 200 + 1), "10.2.0.1"
    cp, sp = 20000 + i, 80
    t = T0_US + i * 10_000
    up, down = [], []
    step = [0]

    def send(to_server, flags, payload=b""):
        step[0] += 1
        frame = pcaplib.tcp_frame(c, s, cp, sp, flags, payload=payload) if to_server else \
            pcaplib.tcp_frame(s, c, sp, cp, flags, payload=payload)
        (up if to_server else down).append((t + step[0] * 1000, frame))

    send(True, SYN)
    send(False, SYN | ACK)
    send(True, ACK)
    for k in range(1 + i % 4):
        send(True, PSH | ACK, b"GET /%d HTTP/1.1\r\n\r\n" % k)
        send(False, PSH | ACK, b"x" * (100 + 37 * k))
    send(True, FIN | ACK)
    send(False, FIN | ACK)
    send(True, ACK)
    return (c, cp), up, down


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    conns, up_all, down_all = {}, [], []
    for i in range(CONNS):
        client, up, down = connection(i)
        conns[client] = (len(up), sum(pcaplib.ip_length(f) for _, f in up), len(down),
                         sum(pcaplib.ip_length(f) for _, f in down))  # IP bytes, as flowcop counts
        up_all += up
        down_all += down
    up_all.sort(key=lambda r: r[0])
    down_all.sort(key=lambda r: r[0])
    p0, p1 = os.path.join(tmp, "to_server.pcap"), os.path.join(tmp, "to_client.pcap")
    pcaplib.write_pcap(p0, up_all)
    pcaplib.write_pcap(p1, down_all)
    res = harness.run(exe, ["net_pcap0,rx_pcap=" + p0, "net_pcap1,rx_pcap=" + p1], ["--clock", "packet"],
                      lcores="0,1", tmpdir=tmp, timeout=30)
    harness.check_invariants(tap, res, "two lcores")
    plan = [l for l in res.stderr.splitlines() if l.startswith("flowcop: ownership plan ")]
    tap.ok(len(plan) == 1 and plan[0].startswith("flowcop: ownership plan handoff (no_rss): port 0 (net_pcap0)"),
           "the startup says the handoff plan runs because port 0 has no RSS", res.stderr[-2000:])
    tap.ok("lcore 0 polls port 0 (net_pcap0) queue 0" in res.stderr and
           "lcore 1 polls port 1 (net_pcap1) queue 0" in res.stderr, "each lcore polls one port", res.stderr[-2000:])
    tap.eq(sorted({e["lcore"] for e in res.events}), [0, 1], "both lcores own flows")
    owner = {}
    for e in res.events:
        owner.setdefault(harness.conn_key(e), set()).add(e["lcore"])
    tap.eq([k for k, v in owner.items() if len(v) != 1], [], "every connection's events come from one lcore")
    # Which side a flow calls its originator depends on which port's burst flowcop read first (the
    # pcap PMD hands out 32 frames a burst, whatever their times): a SYN-ACK read before its SYN is
    # picked up as the server's flow, as it would be on two real taps. Ownership is what is checked.
    pairs, _ = harness.pair_flows(res.events)
    got = {}
    for n, d in pairs:
        got.setdefault(harness.conn_key(d), []).append(d)
    want_by_key = {}
    for (ip, port), want in conns.items():
        srv = ("10.2.0.1" if ":" not in ip else "2001:db8:1::1", 80)
        want_by_key[((), min((ip, port), srv), max((ip, port), srv))] = want
    tap.eq(sorted(got), sorted(want_by_key), "one flow per connection")
    for key, want in sorted(want_by_key.items()):
        lives = got.get(key, [])
        name = "%s port %d <-> %s port %d" % (key[1] + key[2])
        if len(lives) != 1:
            tap.ok(False, name + ": exactly one flow", lives)
            continue
        d = lives[0]
        counted = sorted([(d["packets_orig"], d["bytes_orig"]), (d["packets_reply"], d["bytes_reply"])])
        tap.eq(counted, sorted([want[:2], want[2:]]), name + ": both directions, from two ports, counted in its one flow")
    tap.eq(res.summary and res.summary["received"], len(up_all) + len(down_all),
           "every frame of both captures was received")
    tap.done()


if __name__ == "__main__":
    main()
