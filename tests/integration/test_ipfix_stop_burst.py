#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every IPFIX record of a stop with more than 10^4 open flows reaches a real nfcapd (issue 28).

Usage: test_ipfix_stop_burst.py FLOWCOP_EXE TMPDIR

At stop every open flow is exported at once (reason shutdown). Unpaced, 10.7k final records left in
one burst and nfcapd kept 14,997 of 24,387 records while flowcop, whose sends had all succeeded,
counted no error: the collector's socket buffer overflowed. The exporter now paces its messages
(--ipfix-max-rate, lib/ipfix/pacer.h). The capture: N flows of one mid-stream segment each (picked up
ESTABLISHED, still open at the end), replayed under the packet clock; flowcop exports to an nfcapd
started with deploy/collectors/nfdump-flowcop.conf's options but the receive buffer a collector host
gets at Linux's default net.core.rmem_max (208 KiB; unpaced, the stop's burst overruns it here),
at the default rate, on one lcore and on two (the handoff plan). Checked on each: flowcop encoded a record for every flow (summary), none
dropped, no send error; nfcapd stored exactly N records, one per flow of the event log with its
endpoints and counts, and saw no sequence error.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))

import collectors  # noqa: E402
from flowcoptest import harness, pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, PSH  # noqa: E402

N = 12000
DEFAULT_RMEM = 212992  # Linux's default net.core.rmem_max / rmem_default
T0_US = 1_700_000_000 * 1_000_000


def write_capture(path):
    recs = []
    for i in range(N):
        src = "10.%d.%d.%d" % (30 + i // 65536, (i >> 8) & 255, i & 255)
        recs.append((T0_US + i * 10, pcaplib.tcp_frame(src, "10.99.0.1", 20000 + i % 40000, 443, PSH | ACK,
                                                        seq=1000 + i, ack=5000 + i, payload=b"x" * 10)))
    pcaplib.write_pcap(path, recs)
    return len(recs)


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    tap = harness.Tap()
    if not collectors.have_nfdump():
        tap.skip("a stop's IPFIX burst read back by nfcapd", "nfcapd/nfdump not installed (deploy/install-deps.sh)")
        tap.done()
    os.makedirs(tmp, exist_ok=True)
    path = os.path.join(tmp, "open_flows.pcap")
    frames = write_capture(path)
    for lcores in ("0", "0-1"):
        label = "-l %s" % lcores
        work = os.path.join(tmp, "l" + lcores)
        os.makedirs(work, exist_ok=True)
        # The receive buffer of a collector host left at Debian's defaults (net.core.rmem_max 208 KiB caps
        # the conf's -B 8 MiB): what the stop overran. This host's rmem_max may be larger.
        nf = collectors.Nfcapd(work, "127.0.0.1", overrides=[("-B", str(DEFAULT_RMEM))])
        try:
            tap.ok(nf.ready, label + ": nfcapd listens", nf.log_text())
            res = harness.run(exe, ["net_pcap0,rx_pcap=" + path],
                              ["--clock", "packet", "--flows-per-lcore", "16384", "--events-ring", "32768",
                               "--ipfix", nf.address(), "--ipfix-active-timeout", "0"],
                              lcores=lcores, tmpdir=work, timeout=120)
        finally:
            nf.stop()  # SIGTERM: nfcapd flushes its file and prints its statistics
        harness.check_invariants(tap, res, label)
        s = res.summary or {}
        tap.eq(s.get("received"), frames, label + ": every frame received")
        ends = res.destroys()
        tap.ok(len(ends) == N and all(e["reason"] == "shutdown" for e in ends),
               label + ": %d flows open at the stop, each exported with reason shutdown" % N, len(ends))
        ip = s.get("ipfix") or {}
        tap.eq((ip.get("records"), ip.get("dropped_queue_full"), ip.get("dropped_tracker_full")), (N, 0, 0),
               label + ": flowcop encoded a record for every flow and dropped none")
        per = ip.get("collectors", {})
        tap.ok(per.get(nf.address(), (0, 1))[1] == 0 and per.get(nf.address(), (0, 0))[0] > 0,
               label + ": every message was sent without error", per)
        recs = nf.records()
        tap.eq(len(recs), N, label + ": nfcapd stored every record of the stop's burst")
        want = {(e["src"], int(e["sport"]), e["dst"], int(e["dport"])): (e["packets_orig"], e["bytes_orig"])
                for e in ends}
        got = {(collectors.norm_addr(r["sa"]), int(r["sp"]), collectors.norm_addr(r["da"]), int(r["dp"])):
               (int(r["ipkt"]), int(r["ibyt"])) for r in recs}
        tap.ok(got == want, label + ": one record per flow, with its endpoints and counts",
               "missing %d, extra %d, differing %d" % (len(set(want) - set(got)), len(set(got) - set(want)),
                                                        sum(1 for k in set(want) & set(got) if want[k] != got[k])))
        tap.ok("Sequence Errors: 0" in nf.log_text(), label + ": nfcapd saw no sequence error", nf.log_text()[-800:])
    tap.done()


if __name__ == "__main__":
    main()
