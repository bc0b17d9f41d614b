#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""flowcop's IPFIX export read back by a real collector (nfdump's nfcapd, Debian package nfdump).

Usage: test_ipfix_collectors.py FLOWCOP_EXE TMPDIR REPO_CAPTURES_DIR

Two replays of real captures (IPv4 connections, then IPv6 ones) and one of pings (crafted: no capture
in the collection has an echo request) export to three collectors at once:
an nfcapd on 127.0.0.1, an nfcapd on ::1, and a loopback port nothing listens on (a collector that
is down). Then:
  - each nfcapd stored exactly one record per destroyed flow of flowcop's own event log, with the
    same endpoints, protocol and packet/byte counts per direction (originator = nfdump's "in"
    side, the RFC 5103 reverse direction = its "out" side), and nfcapd saw no sequence error;
  - the dead collector cost only counted send errors: flowcop exits 0, every flow was still
    encoded (summary: records == destroyed flows, none dropped) and the live collectors got all;
  - ingressInterface is the port each flow's first packet arrived on, the JSON events' in_port: 0 in
    the first run, 1 in the second (its capture on port 1, port 0 an idle null device);
  - ICMP and ICMPv6 query flows (echo, timestamp) arrive with ports 0 and their type and code in
    icmpTypeCodeIPv4/IPv6: nfdump's type/code columns, its destination port (type * 256 + code in
    CSV) and its icmp-type filter show the event's icmp_type, not the identifier;
  - pmacct's nfacctd, a fourth collector in the first run, aggregates every flow with flowcop's
    originator packets and bytes (pmacct reads no RFC 5103 reverse counts);
  - the collectors run as deploy/collectors/ configures them, and deploy/deployment.md's queries
    work on what they stored: its top talker by bytes (nfdump, both directions; pmacct, what the
    originator sent) is the event log's, with the same bytes.
Skips (TAP SKIP) when nfcapd/nfdump or nfacctd are not installed (deploy/install-deps.sh installs
them).
"""

import os
import sys


import collectors  # noqa: E402
import realcaps  # noqa: E402
from flowcoptest import harness, pcaplib  # noqa: E402

# IPv4 connections, then IPv6 ones; the second run exports in its own observation domains
# (--ipfix-domain-base), as a second flowcop instance on the same host must.
# The second reads its capture on port 1 (port 0 an idle null device): ingressInterface is the port of
# each flow's first packet.
# The third replays PINGS, a capture this test writes.
PINGS = "pings.pcap"
CAPTURES = (("suricata_ftp_data_ipv4_ipv6_80conns.pcap", "1", 0), ("zeek_ftp_ipv6_only.pcap", "10", 1),
            (PINGS, "20", 0))


def write_pings(path):
    """Three echo requests answered (IPv4, identifier 0x1234), one echo request unanswered (another
    identifier), a timestamp request answered (type 13) and two ICMPv6 echo requests answered: four
    ICMP flows, one of each identifier, 1 s apart."""
    t, recs = 1_600_000_000_000_000, []
    exchanges = [("10.20.0.1", "10.20.0.2", 8, 0, 0x1234, s) for s in (1, 2, 3)] + \
        [("10.20.0.1", "10.20.0.2", 8, None, 0x1235, 1), ("10.20.0.1", "10.20.0.3", 13, 14, 0x0777, 1)] + \
        [("fd00::1", "fd00::2", 128, 129, 0x4242, s) for s in (1, 2)]
    for a, b, request, reply, ident, seq in exchanges:
        recs.append((t, pcaplib.icmp_query_frame(a, b, request, ident, seq)))
        if reply is not None:
            recs.append((t + 300, pcaplib.icmp_query_frame(b, a, reply, ident, seq)))
        t += 1_000_000
    pcaplib.write_pcap(path, recs)
    return path


# The event's "proto" as nfdump prints a record's protocol.
NFDUMP_PROTO = {"tcp": "TCP", "udp": "UDP", "icmp": "ICMP", "icmpv6": "ICMP6", "2": "IGMP", "47": "GRE", "50": "ESP", "132": "SCTP"}


def is_icmp(e):
    return e["proto"] in ("icmp", "icmpv6")


def key_of_event(e):
    """The endpoints nfdump shows for the flow of event `e`: an ICMP flow's ports 0 and its query type and
    code 0 as the destination port (type * 256 + code in CSV)."""
    if is_icmp(e):
        return (collectors.norm_addr(e["src"]), 0, collectors.norm_addr(e["dst"]), e["icmp_type"] << 8)
    return (collectors.norm_addr(e["src"]), e["sport"], collectors.norm_addr(e["dst"]), e["dport"])


def key_of_record(r):
    return (collectors.norm_addr(r["sa"]), int(r["sp"]), collectors.norm_addr(r["da"]), int(r["dp"]))


def top_talker(totals):
    """(bytes, address) of the largest of {address: bytes}."""
    return max((b, a) for a, b in totals.items())


def check_icmp(tap, c, name, destroys):
    """nfdump's own ICMP type and code of each ICMP record on nfcapd `c` (-o fmt: %it %ic) and its
    icmp-type filter, against the events' icmp_type."""
    pings = [e for e in destroys if is_icmp(e)]
    want = sorted((collectors.norm_addr(e["src"]), collectors.norm_addr(e["dst"]), e["icmp_type"], 0, e["packets_orig"])
                  for e in pings)
    rc, out, err = collectors.run_query("nfdump -N -q -R DIR -o 'fmt:%sa %da %it %ic %ipkt' 'proto icmp or proto icmp6'",
                                        "DIR", c.dir)
    got = sorted((collectors.norm_addr(f[0]), collectors.norm_addr(f[1]), int(f[2]), int(f[3]), int(f[4]))
                 for f in (l.split() for l in out.splitlines()) if len(f) == 5)
    tap.ok(rc == 0 and len(want) >= 4 and got == want,
           name + ": every ICMP flow shows its query type and code 0 in nfdump's type/code columns",
           "got %s\nwant %s\n%s" % (got, want, err))
    rc, out, err = collectors.run_query("nfdump -N -q -R DIR -o 'fmt:%sa %da' 'icmp-type 13'", "DIR", c.dir)
    got = [tuple(collectors.norm_addr(a) for a in l.split()) for l in out.splitlines() if l.strip()]
    want = [(collectors.norm_addr(e["src"]), collectors.norm_addr(e["dst"])) for e in pings if e["icmp_type"] == 13]
    tap.ok(rc == 0 and want and got == want, name + ": nfdump's icmp-type filter finds the timestamp request's flow",
           "got %s want %s %s" % (got, want, err))


def check_nfdump_queries(tap, c, destroys):
    """deployment.md's nfdump queries on nfcapd `c`'s files; its top talker (-s ip/bytes, both directions
    of each flow) against the event log."""
    qs = collectors.documented_queries("nfdump", collectors.DOC_NFDUMP_DIR)
    tap.ok(len(qs) >= 3, "deployment.md gives nfdump queries", qs)
    for q in qs:
        rc, out, err = collectors.run_query(q, collectors.DOC_NFDUMP_DIR, c.dir)
        tap.ok(rc == 0 and out.strip(), "deployment.md's query runs: " + q, err)
    top = [q for q in qs if "-s ip/bytes" in q]
    tap.eq(len(top), 1, "deployment.md gives one top-talkers query")
    if not top:
        return
    rc, out, err = collectors.run_query(top[0] + " -o csv", collectors.DOC_NFDUMP_DIR, c.dir)
    rows = [l.split(",") for l in out.splitlines()]
    hdr = next((r for r in rows if r[:1] == ["ts"]), None)
    first = rows[rows.index(hdr) + 1] if hdr and rows.index(hdr) + 1 < len(rows) else None
    got = (int(first[hdr.index("byt")]), collectors.norm_addr(first[hdr.index("val")])) if first else None
    per_addr = {}
    for e in destroys:
        for a in {collectors.norm_addr(e["src"]), collectors.norm_addr(e["dst"])}:
            per_addr[a] = per_addr.get(a, 0) + e["bytes_orig"] + e["bytes_reply"]
    tap.eq(got, top_talker(per_addr), "nfdump's top talker and its bytes are the event log's (both directions)")


def check_pmacct_query(tap, pm, destroys):
    """deployment.md's pmacct top-talkers line on nfacctd `pm`'s files against the event log (what each
    originator sent)."""
    qs = collectors.documented_queries("awk", collectors.DOC_PMACCT_DIR)
    tap.eq(len(qs), 1, "deployment.md gives one pmacct top-talkers query")
    if not qs:
        return
    rc, out, err = collectors.run_query(qs[0], collectors.DOC_PMACCT_DIR, pm.dir)
    first = out.split()
    got = (int(first[0]), collectors.norm_addr(first[1])) if rc == 0 and len(first) >= 2 else None
    per_src = {}
    for e in destroys:
        a = collectors.norm_addr(e["src"])
        per_src[a] = per_src.get(a, 0) + e["bytes_orig"]
    tap.eq(got, top_talker(per_src), "pmacct's top source and its bytes are the event log's (originator bytes)")


def main():
    exe, tmp, captures = sys.argv[1], sys.argv[2], sys.argv[3]
    tap = harness.Tap()
    if not collectors.have_nfdump():
        tap.skip("IPFIX export read back by nfcapd", "nfcapd/nfdump not installed (deploy/install-deps.sh)")
        tap.done()
    os.makedirs(tmp, exist_ok=True)
    v4 = collectors.Nfcapd(tmp, "127.0.0.1")
    v6 = collectors.Nfcapd(tmp, "::1")
    pm = collectors.Nfacctd(tmp) if collectors.have_nfacctd() else None
    pm_flows = None
    try:
        tap.ok(v4.ready and v6.ready, "nfcapd listens on 127.0.0.1 and ::1", v4.log_text() + v6.log_text())
        dead = "127.0.0.1:%d" % collectors.closed_udp_port()
        runs = []
        for capture, domain_base, port in CAPTURES:
            # A small MTU makes many messages, so the dead collector's ICMP errors surely come back.
            opts = ["--clock", "packet", "--ipfix", v4.address(), "--ipfix", v6.address() + "," + dead,
                    "--ipfix-mtu", "576", "--ipfix-domain-base", domain_base,
                    "--ipfix-active-timeout", "0"]  # one record per flow here: interim ones in test_ipfix_interim.py
            if pm is not None and not runs:
                opts += ["--ipfix", pm.address()]
            path = write_pings(os.path.join(tmp, PINGS)) if capture == PINGS else os.path.join(captures, capture)
            # The first run is scraped once the capture is in, for the export counters in /metrics.
            scrape = realcaps.Reading(path).frames if not runs else None
            vdevs = ["net_null0,no-rx=1"] * port + ["net_pcap%d,rx_pcap=%s" % (port, path)]
            runs.append((capture, harness.run(exe, vdevs, opts, tmpdir=tmp, timeout=60,
                                              scrape_when_rx=scrape)))
        if pm is not None:
            pm_flows = pm.records(len(runs[0][1].destroys()))
    finally:
        v4.stop()
        v6.stop()
        if pm is not None:
            pm.stop()
    destroys = []
    for capture, res in runs:
        tap.eq(res.rc, 0, capture + ": flowcop exits 0 with one collector down")
        harness.check_invariants(tap, res, capture)
        ends = res.destroys()
        destroys += ends
        summ = (res.summary or {}).get("ipfix")
        tap.ok(summ is not None, capture + ": the summary reports IPFIX export", res.stderr[-2000:])
        if summ:
            per = summ["collectors"]
            tap.eq((summ["records"], summ["dropped_queue_full"] + summ["dropped_tracker_full"]), (len(ends), 0),
                   capture + ": every destroyed flow was encoded, none dropped")
            tries = {c: sum(v) for c, v in per.items()}
            tap.ok(len(set(tries.values())) == 1, capture + ": every message was tried on every collector", per)
            if len(ends) >= 50:  # enough messages for the ICMP errors of the first ones to come back
                tap.ok(per.get(dead, (0, 0))[1] > 0,
                       capture + ": the collector that is down shows counted send errors", per)
            tap.ok(per.get(v4.address(), (0, 1))[1] == 0 and per.get(v6.address(), (0, 1))[1] == 0,
                   capture + ": the live collectors show none", per)
    bad_port = ["%s: %s" % (capture, e) for (capture, _, port), (_, res) in zip(CAPTURES, runs) for e in res.events
                if e.get("in_port") != port]
    tap.ok(not bad_port, "every JSON event's in_port is its run's port (0, 1, 0)", "\n".join(bad_port[:5]))
    first = runs[0][1]
    m = first.metrics or []
    names = {n for n, _, _ in m}
    tap.ok({"flowcop_ipfix_records_total", "flowcop_ipfix_dropped_total", "flowcop_ipfix_messages_total",
            "flowcop_ipfix_bytes_total", "flowcop_ipfix_send_errors_total"} <= names,
           "/metrics has every IPFIX export family", sorted(n for n in names if "ipfix" in n))
    cols = {l.get("collector") for n, l, _ in m if n == "flowcop_ipfix_messages_total"}
    want_cols = {v4.address(), v6.address(), dead} | ({pm.address()} if pm is not None else set())
    tap.eq(cols, want_cols, "/metrics has one series per collector")
    tap.ok(harness.metric(m, "flowcop_ipfix_records_total", lcore=0) <= len(first.destroys()),
           "/metrics: records so far <= flows ended by the end of the run")
    tap.ok(len(destroys) >= 80, "the replays end at least 80 flows", len(destroys))
    tap.ok(any(":" in e["src"] for e in destroys) and any(":" not in e["src"] for e in destroys),
           "... of both address families")
    want = {}
    for e in destroys:
        want.setdefault(key_of_event(e), []).append(
            (e["packets_orig"], e["bytes_orig"], e["packets_reply"], e["bytes_reply"]))
    for c, name in ((v4, "nfcapd on 127.0.0.1"), (v6, "nfcapd on [::1]")):
        tap.ok("Sequence Errors: 0" in c.log_text() and "Bad Packets: 0" in c.log_text(),
               name + " reports no sequence error and no bad packet", c.log_text()[-1000:])
        try:
            recs = c.records()
        except (RuntimeError, OSError) as err:
            tap.ok(False, name + ": nfdump reads the stored flows", err)
            continue
        tap.eq(len(recs), len(destroys), name + ": one record per destroyed flow")
        got = {}
        for r in recs:
            got.setdefault(key_of_record(r), []).append(
                (int(r["ipkt"]), int(r["ibyt"]), int(r["opkt"]), int(r["obyt"])))
        bad = ["%s: got %s want %s" % (k, sorted(got.get(k, [])), sorted(v)) for k, v in want.items()
               if sorted(got.get(k, [])) != sorted(v)]
        tap.ok(not bad and set(got) == set(want),
               name + ": each flow arrives once with flowcop's packets and bytes, originator as 'in', reply as 'out'",
               "\n".join(bad[:10]) + "\nextra keys: %s" % sorted(set(got) - set(want))[:5])
        # Every protocol is tracked (issue 15): each record names its flow's protocol as nfdump spells it.
        want_pr = {key_of_event(e): NFDUMP_PROTO.get(e["proto"], str(e["proto"])) for e in destroys}
        bad_pr = ["%s: %s, want %s" % (key_of_record(r), r["pr"], want_pr.get(key_of_record(r))) for r in recs
                  if r["pr"] != want_pr.get(key_of_record(r))]
        tap.ok(not bad_pr, name + ": every record carries its flow's protocol", "\n".join(bad_pr[:10]))
        want_in = {key_of_event(e): str(e.get("in_port")) for _, res in runs for e in res.destroys()}
        bad_in = ["%s: in %s, want %s" % (key_of_record(r), r["in"], want_in.get(key_of_record(r))) for r in recs
                  if r["in"] != want_in.get(key_of_record(r))]
        tap.ok(not bad_in, name + ": ingressInterface is the port each flow's first packet came in on (0, then 1)",
               "\n".join(bad_in[:10]))
        check_icmp(tap, c, name, destroys)
        if c is v4:
            check_nfdump_queries(tap, c, destroys)
    if pm is None:
        tap.skip("pmacct's nfacctd reads the same records", "nfacctd not installed (Debian package pmacct)")
    else:
        first = runs[0][1].destroys()
        # pmacct aggregates by key: a UDP flow that ended and started again (30 s idle) adds up.
        want_fwd = {}
        for e in first:
            w = want_fwd.setdefault(key_of_event(e), [0, 0])
            w[0] += e["packets_orig"]
            w[1] += e["bytes_orig"]
        bad = ["%s: got %s want %s" % (k, pm_flows.get(k), v) for k, v in want_fwd.items() if pm_flows.get(k) != v]
        tap.ok(pm.ready and not bad and set(pm_flows) == set(want_fwd),
               "nfacctd (pmacct) aggregates every flow of the first replay with flowcop's originator packets and bytes",
               "\n".join(bad[:10]) + "\nextra: %s" % sorted(set(pm_flows or {}) - set(want_fwd))[:5])
        check_pmacct_query(tap, pm, first)
    tap.done()


if __name__ == "__main__":
    main()
