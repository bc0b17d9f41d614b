#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Replays real captures through the real flowcop binary (packet clock, default timeouts) and
compares what it reports with tshark's ground truth (PROVENANCE.md) and with an independent
reading of each capture (realcaps.py).

Usage: test_replay_real.py FLOWCOP_EXE TMPDIR REPO_CAPTURES_DIR [SHARED_PCAPS_DIR]

Captures come from the repository (permissive licences, tests/data/captures) and, when the
capture collection is checked out beside the clone (../shared/pcaps), from there too; without
it the copyleft ones are skipped with a message. For every capture:
  - frames received == capinfos' packet count; TCP frames by verdict == the independent reading's,
    and == tshark's tcp_pkts where the reading finds no truncated or malformed TCP frame;
  - the flows' keys (VLAN stack + address/port pair) are exactly the reading's keys that have a
    frame able to start a flow; the number of flows is at least that, and equal to it (and to
    tshark's vlan_4t) when no key can have a second lifetime;
  - frames that can start no flow (RST, invalid flags) bound the packets that reached no flow; a
    one-lifetime key counts every one of its frames and bytes, split by direction;
  - a one-lifetime key whose last frame is an RST ends 'reset'; a FIN-closed one ends 'closed'
    when the capture runs on past TIME_WAIT and 'shutdown' when it stops inside it; except where TCP
    window tracking (lib/tcpstate/window.h, checked against Linux's conntrack frame by frame in
    tests/tcpstate/test_netfilter_diff.py) explains the difference: a flow idle for at least the
    timeout caps (300 s: data never acknowledged, no reply, retransmissions) ends 'inactivity' rather
    than 'shutdown', and an RST or FIN outside the window (the run counted some) ends nothing;
  - the run invariants (harness.check_invariants).
Then the capture-specific facts the ground truth supports (LDAP idle-then-RST, Elasticsearch's
725 s idle connection under the default and a 600 s established timeout, VLAN collisions, the
80 kB BIG TCP frame, malformed frames).
"""

import glob
import os
import sys


from flowcoptest import harness  # noqa: E402
import provenance  # noqa: E402
import realcaps  # noqa: E402

# The smallest timeout cap window tracking puts on an idle flow (--tcp-timeout-unacknowledged and
# --tcp-timeout-max-retrans, both 300 s by default).
WINDOW_CAP_S = 300
SCRAPED = {"suricata_ftp_data_ipv4_ipv6_80conns.pcap", "ndpi_fuzz_malformed_ip_udp_tcp.pcap"}
TWO_LCORES = "zeek_vlan_collisions_same_5tuple.pcap"


def us_of(t):
    return int(round(float(t) * 1_000_000))


def check_capture(tap, exe, tmp, name, path, gt):
    rd = realcaps.Reading(path)
    lcores = "0-1" if name == TWO_LCORES else "0"
    res = harness.run(exe, ["net_pcap0,rx_pcap=" + path], ["--clock", "packet"], tmpdir=tmp, lcores=lcores,
                      scrape_when_rx=rd.frames if name in SCRAPED else None, timeout=30)
    tap.note("%s: %d frames, %d TCP connections, flowcop took %.1f s" % (name, rd.frames, len(rd.conns), res.elapsed))
    harness.check_invariants(tap, res, name)
    s = res.summary
    if s is None:
        return res, rd
    if name == TWO_LCORES:
        tap.ok("flowcop: ownership plan handoff (no_rss): port 0 (net_pcap0)" in res.stderr,
               name + ": with 2 lcores on a pcap port flowcop runs the handoff plan", res.stderr)
        owners = {}
        for e in res.events:
            owners.setdefault(harness.conn_key(e), set()).add(e["lcore"])
        # Three flows: which lcore owns each is the seeded hash's choice, so only "one each" is fixed.
        tap.ok(owners and all(len(v) == 1 for v in owners.values()),
               name + ": ... and every connection's flow is on one lcore",
               sorted((k, v) for k, v in owners.items() if len(v) != 1)[:5])
    if gt:
        tap.eq(s["received"], gt["pkts"], name + ": frames received == capinfos' count")
    tap.eq(s["verdict"].get("tcp", 0), rd.tcp_frames(), name + ": TCP frames == the independent reading's")
    if gt and rd.kinds["broken"] == 0 and gt.get("trunc", 0) == 0:
        tap.eq(s["verdict"].get("tcp", 0), gt["tcp_pkts"], name + ": TCP frames == tshark's tcp_pkts")
    pairs, _ = harness.pair_flows(res.events)
    # The TCP connections are checked here against the independent reading; the other protocols'
    # conversations are checked against tshark's in tests/conntrack/test_real_protocols.cpp.
    pairs = [(n, d) for n, d in pairs if d["proto"] == "tcp"]
    tcp_created = len(pairs)
    got = {}
    for n, d in pairs:
        got.setdefault(harness.conn_key(d), []).append(d)
    keys = {(tuple(v), a, b) for v, a, b in rd.creating_keys()}
    norm = lambda k: (tuple(k[0]), (str(k[1][0]), k[1][1]), (str(k[2][0]), k[2][1]))  # noqa: E731
    got_keys = {norm(k) for k in got}
    want_keys = {norm(k) for k in keys}
    tap.ok(got_keys == want_keys, name + ": flows exist for exactly the connections that have a frame able to start one",
           "missing: %s\nextra: %s" % (sorted(want_keys - got_keys)[:5], sorted(got_keys - want_keys)[:5]))
    restarts = sum(c.restarts() for k, c in rd.conns.items() if k in keys)
    lo, hi = len(keys), len(keys) + restarts
    tap.ok(lo <= tcp_created <= hi, name + ": TCP flows created within [connections, connections + possible restarts]",
           "created %d, bounds [%d, %d]" % (tcp_created, lo, hi))
    if restarts == 0 and gt and rd.kinds["broken"] == 0:
        tap.eq(tcp_created, gt["vlan_4t"], name + ": TCP flows created == tshark's vlan_4t (no connection can restart)")
    noncreating = sum(c.noncreating() for c in rd.conns.values())
    tap.ok(s["tcp_no_flow"] <= noncreating, name + ": TCP frames that reached no flow <= frames that cannot start one",
           "no_flow %d, RST/invalid frames %d" % (s["tcp_no_flow"], noncreating))
    bad_counts, bad_ends, checked_ends, window_ends = [], [], 0, []
    # Later fragments are counted on their flow (lib/fragattr) but are not TCP frames of the reading:
    # a connection may hold more packets than its TCP frames, by at most the fragments counted.
    frag_slack = s.get("fragments_tracked", 0)
    extra = 0
    for k, c in rd.conns.items():
        # An RST or invalid frame before the last one may find the flow already gone (no flow).
        if k not in keys or c.restarts() or any(f[3] in ("rst", "invalid") for f in c.frames[:-1]):
            continue
        lives = got.get(norm(k), [])
        if len(lives) != 1:
            bad_counts.append("%s: %d lifetimes" % (k, len(lives)))
            continue
        d = lives[0]
        orig = (d["src"], d["sport"])
        want = (sum(1 for f in c.frames if f[2] == orig), sum(1 for f in c.frames if f[2] != orig),
                sum(f[1] for f in c.frames if f[2] == orig), sum(f[1] for f in c.frames if f[2] != orig))
        have = (d["packets_orig"], d["packets_reply"], d["bytes_orig"], d["bytes_reply"])
        if frag_slack and want != have and all(h >= w for h, w in zip(have, want)):
            extra += have[0] + have[1] - want[0] - want[1]
        elif want != have:
            bad_counts.append("%s: got %s want %s" % (k, have, want))
        if c.frames[0][2] != orig:
            bad_counts.append("%s: originator %s, first frame from %s" % (k, orig, c.frames[0][2]))
        end = c.expected_end(rd.end_us)
        if end is not None:
            checked_ends += 1
            idle_s = (rd.end_us - c.frames[-1][0]) / 1e6
            capped = end == "shutdown" and d["reason"] == "inactivity" and idle_s >= WINDOW_CAP_S
            refused = end in ("reset", "closed") and d["reason"] != end and s["tcp_out_of_window"] > 0
            if capped or refused:
                window_ends.append("%s: %s, not %s (%s)" % (k, d["reason"], end, "timeout cap" if capped else
                                                           "its last RST/FIN outside the window"))
            elif d["reason"] != end:
                bad_ends.append("%s: %s, want %s (last frame %.6f, capture end %.6f)" % (
                    k, d["reason"], end, c.frames[-1][0] / 1e6, rd.end_us / 1e6))
    tap.ok(not bad_counts and extra <= frag_slack,
           name + ": every one-lifetime connection counts each of its frames and bytes, by direction (and at most "
           "the fragments counted on flows besides)", "\n".join(bad_counts[:10]) + " extra %d" % extra)
    tap.ok(not bad_ends, name + ": %d one-lifetime connections end as their last frames say (reset/closed/shutdown)"
           % checked_ends, "\n".join(bad_ends[:10]))
    if window_ends:
        tap.note(name + ": %d of them end otherwise as window tracking says (%d out-of-window segments): %s"
                 % (len(window_ends), s["tcp_out_of_window"], "; ".join(window_ends[:3])))
    return res, rd


def tcp_destroys(res):
    return [d for d in res.destroys() if d["proto"] == "tcp"]


def ldap(tap, name, res, rd):
    d = tcp_destroys(res)
    tap.ok(len(d) == 1 and d[0]["reason"] == "reset" and d[0].get("vlan") == [50],
           name + ": the one VLAN 50 connection, idle 181 s and then RST, ends by reset", d)
    if d:
        c = next(iter(rd.conns.values()))
        tap.eq((us_of(d[0]["first_seen"]), us_of(d[0]["last_seen"])), (c.frames[0][0], c.frames[-1][0]),
               name + ": first_seen and last_seen are its first and last frames' times (181 s apart)")


def elasticsearch(tap, exe, tmp, name, path, res, rd):
    gap_keys = [(k, c.max_gap()) for k, c in rd.conns.items() if c.max_gap()[0] > 600 * 1_000_000]
    if not tap.ok(len(gap_keys) == 1, name + ": the reading finds one connection idle longer than 600 s", gap_keys):
        return
    key, (gap, before, after) = gap_keys[0]
    tap.ok(abs(gap / 1e6 - 725.3) < 0.1, name + ": ... idle for 725.3 s as tshark's idle_s says", gap / 1e6)
    norm = harness.conn_key
    lives = [d for d in res.destroys() if norm(d)[1:] == (key[1], key[2])]
    tap.ok(len(lives) == 1 and lives[0]["reason"] == "shutdown" and
           lives[0]["packets_orig"] + lives[0]["packets_reply"] == len(rd.conns[key].frames),
           name + ": default timeouts: the 725 s idle connection survives (established is 432000 s)", lives)
    res2 = harness.run(exe, ["net_pcap0,rx_pcap=" + path], ["--clock", "packet", "--tcp-timeout-established", "600"],
                       tmpdir=tmp, timeout=30)
    harness.check_invariants(tap, res2, name + " (established 600 s)")
    lives = sorted((d for d in res2.destroys() if norm(d)[1:] == (key[1], key[2])), key=lambda d: d["first_seen"])
    first = lives[0] if lives else None
    n_before = sum(1 for f in rd.conns[key].frames if f[0] <= before)
    ok = (len(lives) == 2 and first["reason"] == "inactivity" and us_of(first["last_seen"]) == before
          and before + 600_000_000 <= us_of(first["time"]) <= after
          and first["packets_orig"] + first["packets_reply"] == n_before and us_of(lives[1]["first_seen"]) == after)
    tap.ok(ok, name + ": --tcp-timeout-established 600: it ends by inactivity 600 s after its last frame before the "
           "gap (%d frames), and its traffic after the gap is a new flow" % n_before, lives)


def vlan_collisions(tap, name, res, rd):
    stacks = sorted(tuple(d.get("vlan", [])) for d in tcp_destroys(res))
    want = sorted(k[0] for k in rd.conns)
    tap.eq(stacks, want, name + ": one 4-tuple, three flows: untagged, VLAN and QinQ (as the reading's tag stacks)")


def qinqinq(tap, name, res, rd):
    d = tcp_destroys(res)
    tap.ok(len(d) == 1 and d[0].get("vlan") == list(next(iter(rd.conns))[0]),
           name + ": three stacked tags: one flow keyed on the outer two", d)


def bigtcp(tap, name, res, rd):
    d = tcp_destroys(res)
    c = next(iter(rd.conns.values()))
    tap.ok(len(d) == 1 and d[0]["bytes_orig"] + d[0]["bytes_reply"] == c.frames[0][1] > 65535,
           name + ": the 80 kB BIG TCP frame is one tracked packet of its full IP length", d)


def malformed_only(tap, name, res, rd):
    s = res.summary
    tcp = s["verdict"].get("tcp", 0) if s else None
    tap.ok(s is not None and tcp == 0 and not tcp_destroys(res) and sum(s["verdict"].values()) == rd.frames,
           name + ": the malformed frame is counted under a malformed verdict and starts no flow",
           s and s["verdict"])


def fuzz(tap, name, res, rd):
    s = res.summary
    malformed = {"truncated_l2", "truncated_l3", "truncated_l4", "ip_bad_version", "ipv4_bad_ihl",
                 "ip_bad_total_length", "ipv6_ext_truncated", "ipv6_ext_too_long", "tcp_bad_data_offset",
                 "vlan_too_deep"}
    n = sum(v for k, v in s["verdict"].items() if k in malformed) if s else 0
    tap.ok(n > 0, name + ": fuzzed frames are counted as malformed (%d), flowcop keeps running" % n, s and s["verdict"])


def gnutella(tap, name, res, rd):
    s = res.summary
    tap.eq(s and s["verdict"].get("truncated_l2", 0), rd.shorter_than_ethernet,
           name + ": the 4-byte frame is counted truncated_l2")


SPECIFIC = {"zeek_ldap_idle181s_then_rst.pcap": ldap,
            "zeek_vlan_collisions_same_5tuple.pcap": vlan_collisions,
            "zeek_vlan_qinqinq_triple_tag.pcap": qinqinq,
            "tcpdump_bigtcp_ipv4_80kB_frame.pcap": bigtcp,
            "tcpdump_tcp_header_garbage_snaplen64.pcap": malformed_only,
            "ndpi_fuzz_malformed_ip_udp_tcp.pcap": fuzz,
            "ndpi_gnutella_10min_p2p_rst_retx.pcap": gnutella}


def main():
    exe, tmp, repo_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    shared = sys.argv[4] if len(sys.argv) > 4 else ""
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    caps = {os.path.basename(p): p for p in glob.glob(os.path.join(repo_dir, "*.pcap"))}
    gt = provenance.ground_truth(os.path.join(repo_dir, "PROVENANCE.md"))
    repo_sha = provenance.sha256s_repo(os.path.join(repo_dir, "PROVENANCE.md"))
    tap.ok(set(repo_sha) == set(caps), "every capture in the repository has a SHA-256 in its PROVENANCE.md",
           sorted(set(repo_sha) ^ set(caps)))
    bad = [n for n, p in caps.items() if n in repo_sha and provenance.file_sha256(p) != repo_sha[n]]
    tap.ok(not bad, "every repository capture matches its recorded SHA-256", bad)
    if shared and os.path.isfile(os.path.join(shared, "PROVENANCE.md")):
        shared_gt = provenance.ground_truth(os.path.join(shared, "PROVENANCE.md"))
        for p in sorted(glob.glob(os.path.join(shared, "*.pcap"))):
            caps.setdefault(os.path.basename(p), p)
        for k, v in shared_gt.items():
            gt.setdefault(k, v)
    else:
        tap.skip("captures of ../shared/pcaps (copyleft: tcpreplay, nDPI)",
                 "%s is absent: only the repository's permissive captures are replayed" % (shared or "../shared/pcaps"))
    for name in sorted(caps):
        path = caps[name]
        res, rd = check_capture(tap, exe, tmp, name, path, gt.get(name))
        if res.summary is None:
            continue
        if name in SPECIFIC:
            SPECIFIC[name](tap, name, res, rd)
        if name == "ndpi_elasticsearch_idle725s.pcap":
            elasticsearch(tap, exe, tmp, name, path, res, rd)
    tap.done()


if __name__ == "__main__":
    main()
