#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A spoofed-source UDP flood far beyond the flow table's capacity, then an ICMP-error flood, through
the real flowcop binary on a live port (net_af_packet on a veth pair, tsc clock), in paced phases
with a metrics scrape and an RSS sample between them (issue 15).

Usage: test_proto_flood.py FLOWCOP_EXE TMPDIR

  1. 300 UDP streams (a request, a reply, and 2.2 s later one more packet each way: replied and
     older than 2 s, so assured with the stream timeout) and 100 ICMP echo flows, on a table of
     --flows-per-lcore 1024;
  2. the UDP flood: 40 000 datagrams from distinct sources (one unreplied flow each), the first
     20 000 a warm-up that fills the table and cycles the mbuf pool (after every exporter thread
     has served a scrape: harness.warm_exporter);
  3. the ICMP-error flood: 10 000 destination-unreachable errors quoting datagrams of flows that do
     not exist, and 300 quoting the streams (either direction).
Checked: the port received every frame; the 300 assured streams all survive (they end at the
shutdown, REPLIED); only unreplied flood flows are evicted; every flood datagram created a flow or
was refused and counted; no ICMP error created a flow, the 300 quoting streams are counted
related (known_flow) and the rest unknown_flow; flowcop_flow_table_memory_bytes is the same in
every phase and RSS grows by less than 1 MiB from the warm-up's end through the floods; every run invariant (hostile.finish).
Needs root and iproute2 (skips otherwise).
"""

import os
import struct
import sys
import time


import hostile  # noqa: E402
from hostile import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402

N_STREAMS, N_PING, N_FLOOD, N_FLOOD_WARMUP, N_ERR_UNKNOWN = 300, 100, 40_000, 20_000, 10_000
CAPACITY = 1024
RSS_SLACK = 1 << 20
SERVER = "10.9.0.1"


def udp_datagram(src, dst, sport, dport, payload=b"q" * 20):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def udp_frame(src, dst, sport, dport, payload=b"q" * 20):
    f = pcaplib.ether(pcaplib.ipv4(src, dst, 17, udp_datagram(src, dst, sport, dport, payload)), pcaplib.ETH_IPV4)
    return f + b"\0" * max(0, 60 - len(f))


def icmp_frame(src, dst, typ, code, rest, body):
    return pcaplib.ether(pcaplib.ipv4(src, dst, 1, struct.pack("!BBHI", typ, code, 0, rest) + body),
                         pcaplib.ETH_IPV4)


def echo(src, dst, request, ident):
    f = icmp_frame(src, dst, 8 if request else 0, 0, ident << 16 | 1, b"p" * 16)
    return f + b"\0" * max(0, 60 - len(f))


def unreachable_about(src, dst, sport, dport):
    """Port unreachable sent by dst back to src about src's datagram (quoted header + 8 bytes)."""
    quoted = pcaplib.ipv4(src, dst, 17, udp_datagram(src, dst, sport, dport))[:28]
    return icmp_frame(dst, src, 3, 3, 0, quoted)


def client(i):
    return "10.10.%d.%d" % (i // 250, i % 250 + 1)


def stream_frames(second):
    out = []
    for i in range(N_STREAMS):
        c, cp = client(i), 20000 + i
        out += [udp_frame(c, SERVER, cp, 53), udp_frame(SERVER, c, 53, cp)]
    if not second:
        for i in range(N_PING):
            out += [echo(client(i), SERVER, True, 100 + i), echo(SERVER, client(i), False, 100 + i)]
    return out


def flood_frames(first, count):
    out = []
    for i in range(first, first + count):
        src = "100.%d.%d.%d" % (64 + (i >> 16), (i >> 8) & 255, i & 255)
        out.append(udp_frame(src, SERVER, 1024 + i % 60000, 53))
    return out


def error_frames():
    out = []
    for i in range(N_ERR_UNKNOWN):
        out.append(unreachable_about("198.51.100.%d" % (i % 250 + 1), SERVER, 1024 + i % 60000, 161))
    for i in range(N_STREAMS):
        c, cp = client(i), 20000 + i
        # Half about the client's datagrams (sent by the server), half about the server's (sent by the client).
        out.append(unreachable_about(c, SERVER, cp, 53) if i % 2 else unreachable_about(SERVER, c, 53, cp))
    return out


class Phases:
    def __init__(self, tap, veth):
        self.tap, self.veth = tap, veth
        self.sent = 0
        self.samples = {}

    def wait_rx(self, res, what):
        deadline = time.monotonic() + 30
        m = None
        while time.monotonic() < deadline:
            try:
                m = harness.scrape(res.metrics_url)
            except OSError:
                time.sleep(0.05)
                continue
            if harness.metric(m, "flowcop_port_rx_packets_total") >= self.sent:
                time.sleep(0.2)
                m = harness.scrape(res.metrics_url)
                break
            time.sleep(0.05)
        got = harness.metric(m, "flowcop_port_rx_packets_total") if m else None
        self.tap.eq(got, self.sent, "%s: the port received every frame sent so far" % what)
        self.samples[what] = (m, harness.rss_bytes(res.pid))
        return m

    def __call__(self, res):
        self.sent += self.veth.inject(stream_frames(False))
        self.wait_rx(res, "streams")
        time.sleep(2.2)  # replied and older than 2 s: the next packet makes each stream assured
        self.sent += self.veth.inject(stream_frames(True))
        self.wait_rx(res, "streams assured")
        harness.warm_exporter(self.tap, res.metrics_url, res.pid)  # before the RSS baseline below
        # The first half fills the table and touches every page the flood can use (as test_flood's
        # warm-up does): RSS is compared from there, so only growth that the flood keeps causing counts.
        self.sent += self.veth.inject(flood_frames(0, N_FLOOD_WARMUP))
        self.wait_rx(res, "UDP warm-up flood")
        self.sent += self.veth.inject(flood_frames(N_FLOOD_WARMUP, N_FLOOD - N_FLOOD_WARMUP))
        self.wait_rx(res, "UDP flood")
        self.sent += self.veth.inject(error_frames())
        self.wait_rx(res, "ICMP-error flood")
        return lambda m: True


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    if not hostile.have_root_net():
        harness.skip_all("needs root and iproute2 for a veth pair")
    tap = harness.Tap()
    harness.measure_rss_not_asan()
    with hostile.Veth("p%d" % (os.getpid() % 10000)) as veth:
        ph = Phases(tap, veth)
        vdev = "net_af_packet0,iface=%s,framecnt=16384" % veth.b
        res = harness.run(exe, [vdev], ["--flows-per-lcore", str(CAPACITY), "--events-ring", "16384"],
                          tmpdir=tmp, on_started=ph, timeout=120)
    hostile.finish(tap, res, "proto flood")
    s, m = res.summary, res.metrics
    if not tap.ok(s is not None and m is not None and len(ph.samples) == 5, "summary, scrape and samples are there",
                  res.stderr[-2000:]):
        tap.done()

    d = res.destroys()
    streams = [e for e in d if e["proto"] == "udp" and e["src"].startswith("10.10.")]
    tap.ok(len(streams) == N_STREAMS and all(e["reason"] == "shutdown" and e["state"] == "REPLIED" for e in streams),
           "all %d assured UDP streams survive the flood (they end at the shutdown, REPLIED)" % N_STREAMS,
           [e for e in streams if e["reason"] != "shutdown"][:3])
    ev = [e for e in d if e["reason"] == "evicted"]
    tap.ok(ev and all(e["proto"] == "udp" and e["state"] == "UNREPLIED" and e["src"].startswith("100.")
                      or e["proto"] == "icmp" for e in ev),
           "%d flows evicted, every one unassured: an unreplied flood flow (or an echo flow)" % len(ev), ev[:3])
    udp_created = int(harness.metric(m, "flowcop_proto_flows_created_total", proto="udp"))
    udp_refused = int(harness.metric(m, "flowcop_proto_packets_total", proto="udp", result="table_full"))
    tap.eq(udp_created - N_STREAMS + udp_refused, N_FLOOD,
           "every flood datagram created a flow or was refused (%d refused, table_full)" % udp_refused)
    tap.eq(int(harness.metric(m, "flowcop_icmp_related_total", result="unknown_flow")), N_ERR_UNKNOWN,
           "every error quoting no known flow is counted unknown_flow")
    tap.eq(int(harness.metric(m, "flowcop_icmp_related_total", result="known_flow")), N_STREAMS,
           "every error quoting a stream, from either side, is counted on it (known_flow)")
    before = ph.samples["UDP flood"][0]
    tap.eq(harness.metric(m, "flowcop_flows_created_total"), harness.metric(before, "flowcop_flows_created_total"),
           "no ICMP error created a flow")
    pings = [e for e in res.news() if e["proto"] == "icmp"]
    tap.ok(len(pings) == N_PING and all("icmp_id" in e and e["icmp_type"] == 8 for e in pings),
           "the %d echo flows were created with their identifier and query type" % N_PING, pings[:2])

    mem = {k: harness.metric(v[0], "flowcop_flow_table_memory_bytes") for k, v in ph.samples.items()}
    tap.ok(len(set(mem.values())) == 1 and list(mem.values())[0] > 0,
           "flowcop_flow_table_memory_bytes is constant through every phase (%d bytes)" % list(mem.values())[0], mem)
    rss = {k: v[1] for k, v in ph.samples.items()}
    tap.note("RSS by phase (MiB): " + ", ".join("%s %.1f" % (k, v / 2**20) for k, v in rss.items()))
    tap.ok(rss["ICMP-error flood"] - rss["UDP warm-up flood"] < RSS_SLACK,
           "RSS stays flat after the warm-up: it grows by less than 1 MiB over 20 000 datagrams and 10 300 errors", rss)
    tap.ok(harness.metric(m, "flowcop_flows_active") <= CAPACITY, "the table never holds more than its capacity")
    tap.done()


if __name__ == "__main__":
    main()
