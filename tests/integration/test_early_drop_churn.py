#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A churn of short TCP connections through a full flow table, through the real flowcop binary, on one
lcore and on two (the handoff plan: a pcap port has no RSS).

Usage: test_early_drop_churn.py FLOWCOP_EXE TMPDIR

Issue 27: a table full of assured flows in TIME_WAIT refused every new connection for TIME_WAIT's
120 s, because early drop took only unassured flows. netfilter drops closing flows
(tcp_can_early_drop), and so does flowcop now (lib/conntrack/flow_table.h, "Table full").
The capture: N short connections one after another, 1 ms apart (packet clock: N ms in all, far inside
TIME_WAIT), each a handshake, a request and its answer, and both FINs acknowledged (5 frames from the
client, 3 from the server), leaving it assured in TIME_WAIT. The table holds 1024 flows per lcore
(--flows-per-lcore's minimum), N is several times that. Checked, on each layout:
  - no connection was refused (tcp_table_full 0) and every one was created once, by its SYN: N flows;
  - each one's counts are the whole connection's (5 + 3 frames), whether it was dropped later or was
    still open at the stop: nothing of a connection went untracked;
  - the flows that left early are exactly the TIME_WAIT ones evicted (reason evicted, state TIME_WAIT),
    and flowcop_flows_early_dropped_total{reason="closing"} counts them, none for another class; the
    flows open at the stop are at most the tables' capacity;
  - the run invariants (harness.check_invariants).
"""

import os
import sys


from flowcoptest import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.exposition import metric  # noqa: E402

N = 5000
CAPACITY = 1024
T0_US = 1_700_000_000 * 1_000_000
SERVER = "10.20.0.1"


def connection(i):
    """(time_us, frame) of connection i: 8 frames 10 us apart, starting at i ms."""
    c, cp = "10.21.%d.%d" % (i // 250, i % 250 + 1), 30000 + i % 30000
    frames = pcaplib.short_connection(c, cp, SERVER, 443, 1000 + i * 7, 5000 + i * 11)
    return [(T0_US + i * 1000 + k * 10, f) for k, f in enumerate(frames)]


def check(tap, exe, tmp, path, frames, lcores):
    label = "-l %s" % lcores
    res = harness.run(exe, ["net_pcap0,rx_pcap=" + path],
                      ["--clock", "packet", "--flows-per-lcore", str(CAPACITY), "--events-ring", "65536"],
                      lcores=lcores, tmpdir=tmp, scrape_when_rx=frames, timeout=120)
    harness.check_invariants(tap, res, label)
    s, m = res.summary, res.metrics
    if not tap.ok(s is not None and m is not None, label + ": summary and scrape are there", res.stderr[-2000:]):
        return
    tap.eq(s["received"], frames, label + ": every frame received")
    tap.eq(s["tcp_table_full"], 0, label + ": no connection refused (table_full 0)")
    tap.eq(s["created"], N, label + ": every connection created exactly one flow, by its SYN")
    d = res.destroys()
    whole = [e for e in d if (e["packets_orig"], e["packets_reply"]) == (5, 3)]
    tap.ok(len(d) == N and len(whole) == N, label + ": every connection's flow counted all its 8 frames (5 from the client, 3 from the server)",
           [e for e in d if (e["packets_orig"], e["packets_reply"]) != (5, 3)][:3])
    ev = [e for e in d if e["reason"] == "evicted"]
    shut = [e for e in d if e["reason"] == "shutdown"]
    lcore_count = 2 if lcores == "0-1" else 1
    tap.ok(len(ev) + len(shut) == N and all(e["state"] == "TIME_WAIT" for e in ev + shut),
           label + ": %d evicted in TIME_WAIT, %d still in TIME_WAIT at the stop, nothing else" % (len(ev), len(shut)),
           [e for e in d if e["reason"] not in ("evicted", "shutdown") or e["state"] != "TIME_WAIT"][:3])
    tap.ok(N - CAPACITY * lcore_count <= len(ev) and len(shut) <= CAPACITY * lcore_count,
           label + ": the tables stayed full: at most their capacity open at the stop")
    closing = metric(m, "flowcop_flows_early_dropped_total", reason="closing")
    others = metric(m, "flowcop_flows_early_dropped_total") - closing
    tap.eq(closing, len(ev), label + ": flowcop_flows_early_dropped_total{reason=\"closing\"} counts every eviction")
    tap.eq(others, 0, label + ": ... and no other class of early drop")
    tap.eq(metric(m, "flowcop_flows_dropped_total"), 0, label + ": flowcop_flows_dropped_total stays 0")


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    path = os.path.join(tmp, "churn.pcap")
    records = [r for i in range(N) for r in connection(i)]
    pcaplib.write_pcap(path, records)
    for lcores in ("0", "0-1"):
        check(tap, exe, tmp, path, len(records), lcores)
    tap.done()


if __name__ == "__main__":
    main()
