#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A SYN flood far beyond the flow table's capacity, then RST and FIN floods, through the real
flowcop binary on a live port (net_af_packet on a veth pair, tsc clock), in paced phases with a
metrics scrape and an RSS sample between them.

Usage: test_flood.py FLOWCOP_EXE TMPDIR

  1. 800 assured connections (handshake + data) on a table of --flows-per-lcore 1024;
  2. every exporter thread serves a scrape (kHttpThreads at once: harness.warm_exporter, so
     no thread's first scrape lands after the baseline); then the warm-up flood: 20 000 SYNs from distinct sources, which fill the table and, with ~40 000
     events (a creation and an eviction each), wrap the 32 768 slots of the event ring that
     --events-ring 16384 allocates (lib/events: next_pow2(N + 1)), so every page flowcop will
     ever touch has been touched (10 000 SYNs left ~1.7 MiB of the ring untouched);
  3. the flood proper: 40 000 more SYNs;
  4. 10 000 RST / RST+ACK and 10 000 bare FIN / NULL / XMAS segments for flows that do not exist.
Checked: the port received every frame; the 800 assured flows all survive (they end at the
shutdown, ESTABLISHED); only flood flows (SYN_SENT, unassured) are evicted; every flood SYN
created a flow or was refused and counted table_full; early-drop attempts and table_full drops
are in the metrics; the RST/FIN floods create nothing and are counted tcp_no_flow;
flowcop_flow_table_memory_bytes is the same in every phase and the process's RSS grows by less
than 1 MiB over the 40 000-SYN flood (a leak of 26 bytes a SYN would show; ~0.1 MiB is measured);
and every run invariant (hostile.finish).
Needs root and iproute2 (skips otherwise).
"""

import os
import random
import sys
import time


import hostile  # noqa: E402
from hostile import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, FIN, PSH, RST, SYN, URG  # noqa: E402

N_EST, N_WARM, N_FLOOD, N_RST, N_FIN = 800, 20_000, 40_000, 10_000, 10_000
CAPACITY = 1024
RSS_SLACK = 1 << 20
SERVER = "10.9.0.1"


def est_frames():
    out = []
    for i in range(N_EST):
        c, cp = "10.10.%d.%d" % (i // 250, i % 250 + 1), 20000 + i
        for fw, fl, n in [(True, SYN, 0), (False, SYN | ACK, 0), (True, ACK, 0), (True, PSH | ACK, 50),
                          (False, ACK, 0)]:
            src, sp, dst, dp = (c, cp, SERVER, 443) if fw else (SERVER, 443, c, cp)
            out.append(pcaplib.tcp_frame(src, dst, sp, dp, fl, payload=b"e" * n))
    return out


def syn_frames(first, n):
    """SYNs from distinct source addresses (100.64.0.0/10), so every one is a new flow."""
    out = []
    for i in range(first, first + n):
        src = "100.%d.%d.%d" % (64 + (i >> 16), (i >> 8) & 255, i & 255)
        out.append(pcaplib.tcp_frame(src, SERVER, 1024 + i % 60000, 443, SYN, seq=i * 7919))
    return out


def stray_frames():
    rnd = random.Random(3)
    out = []
    kinds = [RST, RST | ACK, FIN, 0, FIN | PSH | URG]
    for i in range(N_RST + N_FIN):
        flags = kinds[i % 2] if i < N_RST else kinds[2 + i % 3]
        src = "198.51.100.%d" % (i % 250 + 1)      # never seen before: no flow to hit
        out.append(pcaplib.tcp_frame(src, SERVER, 1024 + i % 60000, 443, flags, seq=rnd.getrandbits(32)))
    return out


class Phases:
    def __init__(self, tap, veth):
        self.tap, self.veth = tap, veth
        self.sent = 0
        self.samples = {}
        self.ok = True

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
                time.sleep(0.2)  # let the lcore finish the bursts it read
                m = harness.scrape(res.metrics_url)
                break
            time.sleep(0.05)
        got = harness.metric(m, "flowcop_port_rx_packets_total") if m else None
        self.ok &= self.tap.eq(got, self.sent, "%s: the port received every frame sent so far" % what)
        self.samples[what] = (m, harness.rss_bytes(res.pid))
        return m

    def __call__(self, res):
        t0 = time.monotonic()
        self.sent += self.veth.inject(est_frames())
        self.wait_rx(res, "established")
        harness.warm_exporter(self.tap, res.metrics_url, res.pid)  # before the RSS baseline below
        self.sent += self.veth.inject(syn_frames(0, N_WARM))
        self.wait_rx(res, "warm-up flood")
        t1 = time.monotonic()
        self.sent += self.veth.inject(syn_frames(N_WARM, N_FLOOD))
        self.wait_rx(res, "flood")
        self.flood_s = time.monotonic() - t1
        self.sent += self.veth.inject(stray_frames())
        self.wait_rx(res, "RST and FIN floods")
        self.tap.note("phases took %.1f s (the 40k SYN flood %.1f s)" % (time.monotonic() - t0, self.flood_s))
        return lambda m: True  # stop now: the harness takes its final scrape and sends SIGINT


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    if not hostile.have_root_net():
        harness.skip_all("needs root and iproute2 for a veth pair")
    tap = harness.Tap()
    harness.measure_rss_not_asan()
    with hostile.Veth(str(os.getpid() % 100000)) as veth:
        ph = Phases(tap, veth)
        # A 16384-frame kernel ring (32 MiB) absorbs ~0.6 s of the injector while flowcop is descheduled:
        # the 22.11 af_packet PMD does not count what the kernel drops for a full ring.
        vdev = "net_af_packet0,iface=%s,framecnt=16384" % veth.b
        res = harness.run(exe, [vdev], ["--flows-per-lcore", str(CAPACITY), "--events-ring", "16384"],
                          tmpdir=tmp, on_started=ph, timeout=120)
    hostile.finish(tap, res, "flood")
    s, m = res.summary, res.metrics
    if not tap.ok(s is not None and m is not None and len(ph.samples) == 4, "summary, scrape and samples are there",
                  res.stderr[-2000:]):
        tap.done()

    d = res.destroys()
    est = [e for e in d if e["src"].startswith("10.10.")]
    tap.ok(len(est) == N_EST and all(e["reason"] == "shutdown" and e["state"] == "ESTABLISHED" for e in est),
           "all %d assured flows survive the flood (they end at the shutdown, ESTABLISHED)" % N_EST,
           [e for e in est if e["reason"] != "shutdown"][:3])
    ev = [e for e in d if e["reason"] == "evicted"]
    tap.ok(ev and all(e["state"] == "SYN_SENT" and e["src"].startswith("100.") for e in ev),
           "%d flows evicted, every one an unassured flood flow (SYN_SENT)" % len(ev), ev[:3])
    tap.eq(s["created"] - N_EST + s["tcp_table_full"], N_WARM + N_FLOOD,
           "every flood SYN created a flow or was refused (%d refused, table_full)" % s["tcp_table_full"])
    attempts = harness.metric(m, "flowcop_flows_early_drop_attempts_total")
    tap.ok(attempts > len(ev) and s["tcp_table_full"] > 0,
           "early-drop attempts (%d) cover every eviction (%d); table_full refusals are counted (%d)"
           % (attempts, len(ev), s["tcp_table_full"]))
    tap.eq(int(harness.metric(m, "flowcop_flows_dropped_total", reason="table_full")), s["tcp_table_full"],
           "flowcop_flows_dropped_total{reason=table_full} == the summary's refusals")
    tap.eq(s["tcp_no_flow"], N_RST + N_FIN, "the RST and FIN floods create no flow: all counted tcp_no_flow")
    tap.eq(int(harness.metric(m, "flowcop_packets_total", result="tcp_no_flow")), N_RST + N_FIN,
           "flowcop_packets_total{result=tcp_no_flow} counts them")
    before = ph.samples["flood"][0]
    tap.eq(harness.metric(m, "flowcop_flows_created_total"), harness.metric(before, "flowcop_flows_created_total"),
           "flowcop_flows_created_total did not move during the RST and FIN floods")

    mem = {k: harness.metric(v[0], "flowcop_flow_table_memory_bytes") for k, v in ph.samples.items()}
    tap.ok(len(set(mem.values())) == 1 and list(mem.values())[0] > 0,
           "flowcop_flow_table_memory_bytes is constant through every phase (%d bytes)" % list(mem.values())[0], mem)
    rss = {k: v[1] for k, v in ph.samples.items()}
    tap.note("RSS by phase (MiB): " + ", ".join("%s %.1f" % (k, v / 2**20) for k, v in rss.items()))
    tap.ok(rss["RST and FIN floods"] - rss["warm-up flood"] < RSS_SLACK,
           "RSS stays flat after the warm-up: it grows by less than 1 MiB over 40 000 SYNs and 20 000 strays", rss)
    tap.ok(harness.metric(m, "flowcop_flows_active") <= CAPACITY, "the table never holds more than its capacity")
    tap.done()


if __name__ == "__main__":
    main()
