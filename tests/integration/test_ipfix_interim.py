#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Interim IPFIX records of long flows (--ipfix-active-timeout), read back by a real nfcapd.

Usage: test_ipfix_interim.py FLOWCOP_EXE TMPDIR REPO_CAPTURES_DIR

A capture of SMB2 file transfers (3 h 22 min, 40 connections lasting up to 40 s each, shipped in
tests/data/captures; --clock packet replays its own timeline at full speed) is exported with an
interim record every 10 s of capture time. Then:
  - the flows still end as without interim records: flowcop's own destroy events are the same
    flows, with the same reasons and counts, as a run without --ipfix;
  - nfcapd stored every record the summary counts, interim ones included, more than one per flow
    for some, and saw no sequence error;
  - per flow key, the records add up to flowcop's final packet and byte counts in both directions
    (IPFIX delta counts: a collector sums a flow's records);
  - every record lies within its flow's first and last packet, and every TCP record carries the
    flow's TCP flags.
Skips (TAP SKIP) when nfcapd/nfdump are not installed (deploy/install-deps.sh installs them).
"""

import calendar
import os
import sys
import time


import collectors  # noqa: E402
from collectors import COUNTS, key_of_event, key_of_record, sum_records  # noqa: E402
from flowcoptest import harness  # noqa: E402
from flowcoptest import layouts  # noqa: E402

CAPTURE = "suricata_smb2_3h22m_40conns.pcap"
INTERVAL_S = 10


def nfdump_s(text):
    """nfdump's CSV time 'YYYY-MM-DD hh:mm:ss' (UTC: TZ is set below) as Unix seconds."""
    return calendar.timegm(time.strptime(text.strip(), "%Y-%m-%d %H:%M:%S"))


def ended(res):
    return sorted((key_of_event(e), e["reason"]) + tuple(e[c] for c, _ in COUNTS) for e in res.destroys())


def run_layout(tap, exe, tmp, path, layout, seen):
    L = " [%s]" % layout.name
    plain = harness.run(exe, layout.vdevs(path), ["--clock", "packet"] + layout.opts(path), tmpdir=tmp, timeout=60,
                        lcores=layout.lcores)
    nf = collectors.Nfcapd(tmp, "127.0.0.1")
    try:
        tap.ok(nf.ready, "nfcapd listens on 127.0.0.1" + L, nf.log_text())
        res = harness.run(exe, layout.vdevs(path),
                          ["--clock", "packet", "--ipfix", nf.address(), "--ipfix-active-timeout", str(INTERVAL_S)]
                          + layout.opts(path),
                          tmpdir=tmp, timeout=60, lcores=layout.lcores)
    finally:
        nf.stop()
    tap.eq(res.rc, 0, "flowcop exits 0" + L)
    harness.check_invariants(tap, res, "with interim records" + L)
    harness.check_layout(tap, res, layout, "with interim records" + L)
    ends = res.destroys()
    tap.eq(ended(res), ended(plain), "interim records end no flow: the same flows end, for the same reasons, "
           "with the same counts" + L)
    summ = (res.summary or {}).get("ipfix")
    tap.ok(summ is not None, "the summary counts IPFIX records and interim ones" + L, res.stderr[-1500:])
    summ = summ or dict(records=0, interim=0, dropped_queue_full=0, dropped_tracker_full=0)
    records, interim = summ["records"], summ["interim"]
    tap.eq((records - interim, summ["dropped_queue_full"], summ["dropped_tracker_full"]), (len(ends), 0, 0),
           "one final record per ended flow, none dropped" + L)
    tap.ok(interim > 0, "long flows were reported while they lasted" + L, summ)
    tap.ok("Sequence Errors: 0" in nf.log_text() and "Bad Packets: 0" in nf.log_text(),
           "nfcapd reports no sequence error and no bad packet" + L, nf.log_text()[-1000:])
    recs = nf.records()
    tap.eq(len(recs), records, "nfcapd stored every record, interim ones included" + L)
    want, span = {}, {}
    for e in ends:
        k = key_of_event(e)
        w = want.setdefault(k, [0, 0, 0, 0])
        for i, (c, _) in enumerate(COUNTS):
            w[i] += e[c]
        first, last = int(e["first_seen"]), int(e["last_seen"]) + 1
        lo, hi = span.get(k, (first, last))
        span[k] = (min(lo, first), max(hi, last))
    got, count = sum_records(recs)
    bad = ["%s: records add up to %s, flowcop counted %s" % (k, got.get(k), v) for k, v in want.items()
           if got.get(k) != v]
    tap.ok(not bad and set(got) == set(want),
           "per flow, the records add up to flowcop's final packets and bytes in both directions" + L,
           "\n".join(bad[:10]) + "\nextra keys: %s" % sorted(set(got) - set(want))[:5])
    tap.ok(max(count.values() or [0]) > 2, "some flow was reported several times" + L, sorted(count.values())[-5:])
    outside = []  # nfdump prints whole seconds: compare at that resolution
    for r in recs:
        k = key_of_record(r)
        if k in span:
            ts, te = nfdump_s(r["ts"]), nfdump_s(r["te"])
            lo, hi = span[k]
            if ts < lo or te > hi or ts > te:
                outside.append((k, r["ts"], r["te"], span[k]))
    tap.ok(not outside, "every record lies within its flow's first and last packet" + L, outside[:5])
    tap.ok(all(r["flg"].strip(".") for r in recs if r["pr"] == "TCP"),
           "every TCP record carries the flow's TCP flags (tcpControlBits)" + L, [r["flg"] for r in recs][:5])
    seen[layout.name] = (ended(res), sorted((key_of_record(r), r["ipkt"], r["opkt"], r["ts"], r["te"]) for r in recs))


def main():
    exe, tmp, captures = sys.argv[1], sys.argv[2], sys.argv[3]
    tap = harness.Tap()
    if not collectors.have_nfdump():
        tap.skip("interim IPFIX records read back by nfcapd", "nfcapd/nfdump not installed (deploy/install-deps.sh)")
        tap.done()
    os.makedirs(tmp, exist_ok=True)
    path = os.path.join(captures, CAPTURE)
    seen = {}
    for layout in layouts.selected():
        run_layout(tap, exe, tmp, path, layout, seen)
    names = list(seen)
    for other in names[1:]:
        tap.ok(seen[other] == seen[names[0]], "%s ends the same flows and sends the same records as %s"
               % (other, names[0]))
    tap.done()


if __name__ == "__main__":
    os.environ["TZ"] = "UTC"
    main()
