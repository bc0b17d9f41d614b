#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""IPFIX records continue across a restart with --state-file (issue 32): a collector adds a flow's records
up to its totals, whatever restarts happened while it lasted.

Usage: test_state_ipfix.py FLOWCOP_EXE FLOWCOPCTL TMPDIR

One nfcapd (deploy/collectors' options) runs across two flowcops, --clock packet, --ipfix-active-timeout 10.
The first replays 30 s of N TCP connections (a segment each way every 5 s): interim records at 10, 20 and
30 s; SIGINT saves the flows with what their records reported. The second (two lcores: the flows change
lcore, and IPFIX domain) restores them and replays their next 25 s: more interim records; then every flow
is killed (flowcopctl -F), which sends its final record. Checked: per connection, the records nfcapd stored
add up to the flow's final packets and bytes in both directions (without the saved "reported" totals the
first record after the restart would count the first run's packets a second time), the flow kept its id,
and there is one final record per flow. Skips without nfcapd/nfdump.
"""

import json
import os
import shutil
import subprocess
import sys

import collectors
from collectors import COUNTS, key_of_event, sum_records
from flowcoptest import harness, pcaplib
from flowcoptest import pcapgen as g
from flowcoptest.checks import wait_until
from flowcoptest.exposition import Scrape
from flowcoptest.process import Flowcop

N = 6
CLIENT, SERVER = "10.88.0.1", "10.88.0.2"
T0_US = 1_700_000_000_000_000


def capture(path, first):
    recs = []
    conns = [(CLIENT, 42000 + i, SERVER, 443) for i in range(N)]
    if first:
        for i, (c, cp, s, sp) in enumerate(conns):
            t = T0_US + i * 1000
            for f in (g.tcp4(c, cp, s, sp, g.SYN), g.tcp4(s, sp, c, cp, g.SYN | g.ACK), g.tcp4(c, cp, s, sp, g.ACK)):
                recs.append((t, f))
                t += 100
    seconds = range(5, 31, 5) if first else range(35, 61, 5)
    for sec in seconds:
        for i, (c, cp, s, sp) in enumerate(conns):
            t = T0_US + sec * 1_000_000 + i * 1000
            recs.append((t, g.tcp4(c, cp, s, sp, g.PSH | g.ACK, b"x" * (100 + i))))
            recs.append((t + 100, g.tcp4(s, sp, c, cp, g.PSH | g.ACK, b"y" * (300 + i))))
    pcaplib.write_pcap(path, recs, snaplen=65535)


def main():
    exe, ctl_exe, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
    if not collectors.have_nfdump():
        harness.skip_all("nfcapd/nfdump (Debian package nfdump) is not installed")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    tap = harness.Tap()
    pcaps = [os.path.join(tmp, "first.pcap"), os.path.join(tmp, "second.pcap")]
    g._next_seq.clear()
    capture(pcaps[0], True)
    capture(pcaps[1], False)
    state, ev2 = os.path.join(tmp, "flows.state"), os.path.join(tmp, "second.jsonl")
    nf = collectors.Nfcapd(tmp, "127.0.0.1")
    try:
        tap.ok(nf.ready, "nfcapd listens", nf.log_text())
        common = ["--clock", "packet", "--metrics-addr", "127.0.0.1:0", "--state-file", state, "--ipfix", nf.address(),
                  "--ipfix-active-timeout", "10", "--tick-ms", "100", "--check-interval-ms", "100"]
        fc = Flowcop(exe, pcaps[0], common, "sti1", lcores="0")
        try:
            wait_until(lambda: Scrape(fc.url).total("flowcop_port_rx_packets_total") >= N * 15, 30, "the first capture")
            first = {key_of_event(f): f for f in (json.loads(line) for line in subprocess.run(
                [sys.executable, ctl_exe, "--file-prefix=" + fc.prefix, "-L", "-o", "json"], capture_output=True,
                text=True, timeout=30).stdout.splitlines())}
        finally:
            rc = fc.stop()
        tap.eq(rc, 0, "the first flowcop stops and saves")
        fc = Flowcop(exe, pcaps[1], common + ["--events", ev2, "--events-filter", "destroy"], "sti2", lcores="0-1")
        try:
            wait_until(lambda: Scrape(fc.url).total("flowcop_port_rx_packets_total") >= N * 12, 30, "the second capture")
            wait_until(lambda: Scrape(fc.url).total("flowcop_state_restored_flows") == N, 10, "the restore")
            r = subprocess.run([sys.executable, ctl_exe, "--file-prefix=" + fc.prefix, "-F"], capture_output=True,
                               text=True, timeout=30)
            tap.ok(r.returncode == 0, "flowcopctl -F ends every flow", r.stderr)
            wait_until(lambda: Scrape(fc.url).total("flowcop_flows_active") == 0, 20, "every flow ended")
        finally:
            rc = fc.stop()
        tap.eq(rc, 0, "the second flowcop stops")
    finally:
        nf.stop()
    with open(ev2) as f:
        ends = [json.loads(line) for line in f if line.strip()]
    tap.eq(len(ends), N, "every restored flow ended once in the second run")
    tap.ok(all(first.get(key_of_event(e), {}).get("flow_id") == e["flow_id"] for e in ends),
           "each under the id it had before the restart (one lcore before: no collision)")
    recs = nf.records()
    want = {key_of_event(e): [e[c] for c, _ in COUNTS] for e in ends}
    got, count = sum_records(recs)
    bad = ["%s: records add up to %s, flowcop counted %s" % (k, got.get(k), v) for k, v in want.items()
           if got.get(k) != v]
    tap.ok(not bad and set(got) == set(want),
           "per flow, the records of both runs add up to its final packets and bytes in both directions",
           "\n".join(bad[:6]))
    tap.ok(min(count.values() or [0]) >= 4, "each flow was reported in both runs (interims, then its end)",
           sorted(count.values()))
    tap.done()


if __name__ == "__main__":
    main()
