#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""update events and --events-filter through the real flowcop binary, on a real capture (80 TCP
connections over IPv4 and IPv6, and their UDP and IGMP neighbours), in packet-clock mode.

Usage: test_events_update.py FLOWCOP_EXE TMPDIR

  1. --events-filter new,update,destroy: every event carries its flow's id; each flow's events are one
     new, then its updates, then one destroy, all with that id; a TCP handshake yields updates to
     ESTABLISHED and one that makes the flow ASSURED (conntrack's SEEN_REPLY and ASSURED flags);
     a replied UDP flow an update with SEEN_REPLY; the summary counts every line written, none dropped.
  2. the default filter (new,destroy): the same flows, no update line.
  3. --events-filter destroy:udp: exactly the first run's UDP destroys, filtered at the source
     (written == offered: nothing dropped, no other line).
  4. a crafted capture (a handshake, then a segment 200000 bytes past the window and a SYN+FIN) with
     --events-filter update: each refused segment makes one update saying why ("invalid":
     "seq_above_window", then "tcp_invalid_for_state"), with the flow's id and its unchanged
     ESTABLISHED state and flags; with --events-invalid-rate 1 only the first of the two (1 ms apart).
(A bad filter's exit 2 and one line: test_bad_flags.py.)
"""

import os
import sys
from collections import defaultdict


from flowcoptest import harness, pcaplib  # noqa: E402
from flowcoptest.process import DEMO_PCAP  # noqa: E402

CLOCK = ["--clock", "packet"]


def replay(exe, tmp, opts):
    return harness.run(exe, ["net_pcap0,rx_pcap=" + DEMO_PCAP], CLOCK + opts, tmpdir=tmp, timeout=60)


def refused_segments_pcap(tmp):
    """A TCP handshake, then two segments the flow refuses: data 200000 bytes past the server's 65535-byte
    window (seq_above_window) and a SYN+FIN (not valid in any state), 1 ms apart."""
    def to_server(flags, **kw):
        return pcaplib.tcp_frame("10.9.0.1", "10.9.0.2", 40000, 80, flags, **kw)

    def to_client(flags, **kw):
        return pcaplib.tcp_frame("10.9.0.2", "10.9.0.1", 80, 40000, flags, **kw)

    t0 = 1_700_000_000_000_000
    frames = [to_server(pcaplib.SYN, seq=1000),
              to_client(pcaplib.SYN | pcaplib.ACK, seq=5000, ack=1001),
              to_server(pcaplib.ACK, seq=1001, ack=5001),
              to_server(pcaplib.ACK | pcaplib.PSH, seq=1001 + 200000, ack=5001, payload=b"x" * 10),
              to_server(pcaplib.SYN | pcaplib.FIN, seq=1001)]
    path = os.path.join(tmp, "refused_segments.pcap")
    pcaplib.write_pcap(path, [(t0 + 1000 * i, f) for i, f in enumerate(frames)])
    return path


def by_flow(events):
    flows = defaultdict(list)
    for e in events:
        flows[(e["lcore"], e.get("flow_id"))].append(e)
    return flows


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()

    res = replay(exe, tmp, ["--events-filter", "new,update,destroy"])
    tap.eq(res.rc, 0, "new,update,destroy: flowcop exits 0")
    ev = res.events
    s = res.summary or {}
    tap.eq((s.get("events_written"), s.get("events_dropped")), (len(ev), 0),
           "the summary counts every line written, none dropped")
    tap.ok(all("flow_id" in e for e in ev), "every event carries its flow's id")
    kinds = {e["event"] for e in ev}
    tap.eq(kinds, {"new", "update", "destroy"}, "the log holds new, update and destroy events")
    flows = by_flow(ev)
    tap.eq(len(flows), len([e for e in ev if e["event"] == "new"]), "one new event per flow id")
    bad = [k for k, es in flows.items()
           if es[0]["event"] != "new" or es[-1]["event"] != "destroy" or
           any(e["event"] != "update" for e in es[1:-1])]
    tap.ok(not bad, "each flow id: one new, its updates, one destroy, in that order", bad[:5])
    tap.ok(all(len({(e["src"], e["sport"], e["dst"], e["dport"], e["proto"]) for e in es}) == 1
               for es in flows.values()), "a flow id names one tuple from new to destroy")
    tcp_handshakes = [es for es in flows.values() if es[0]["proto"] == "tcp" and es[0]["state"] == "SYN_SENT"]
    established = [es for es in tcp_handshakes
                   if any(e["event"] == "update" and e["state"] == "ESTABLISHED" for e in es)]
    assured = [es for es in established
               if any(e["event"] == "update" and "ASSURED" in e.get("flags", []) for e in es)]
    tap.ok(len(tcp_handshakes) >= 40, "the capture's TCP connections open with a SYN (%d)" % len(tcp_handshakes))
    tap.eq(len(established), len(tcp_handshakes), "each handshake yields an update to ESTABLISHED")
    tap.eq(len(assured), len(established), "... and an update that makes the flow ASSURED")
    for es in assured[:1]:
        tap.note("one connection's events: " + "; ".join(
            "%s %s %s" % (e["event"], e["state"], ",".join(e.get("flags", []))) for e in es))
    updates = [e for e in ev if e["event"] == "update"]
    tap.ok(all(e.get("flags") and ("SEEN_REPLY" in e["flags"]) != ("UNREPLIED" in e["flags"]) for e in updates),
           "every update carries conntrack's flags: exactly one of SEEN_REPLY and UNREPLIED")
    tap.ok(not [e for e in ev if e["event"] != "update" and "flags" in e], "only updates carry flags")
    udp = [es for es in flows.values() if es[0]["proto"] == "udp"]
    replied = [es for es in udp if es[-1]["packets_reply"] > 0]
    tap.ok(all(any(e["event"] == "update" and "SEEN_REPLY" in e["flags"] for e in es) for es in replied),
           "a replied UDP flow has an update with SEEN_REPLY (%d of %d UDP flows replied)" % (len(replied), len(udp)))
    # No update on a steady packet: far fewer updates than packets.
    tap.ok(len(updates) <= 4 * len(flows), "updates only on transitions: %d for %d flows" % (len(updates), len(flows)))

    plain = replay(exe, tmp, [])
    tap.eq(plain.rc, 0, "default filter: flowcop exits 0")
    tap.eq(sorted({e["event"] for e in plain.events}), ["destroy", "new"], "the default log holds no update")
    tap.eq(len(plain.events), len(ev) - len(updates), "... and every new and destroy of the first run")

    udp_destroys = [e for e in ev if e["event"] == "destroy" and e["proto"] == "udp"]
    only = replay(exe, tmp, ["--events-filter", "DESTROY:udp"])
    tap.eq(only.rc, 0, "destroy:udp: flowcop exits 0")
    tap.ok(only.events and all(e["event"] == "destroy" and e["proto"] == "udp" for e in only.events),
           "destroy:udp: UDP destroys only")
    tap.eq(sorted(e["flow_id"] for e in only.events), sorted(e["flow_id"] for e in udp_destroys),
           "... exactly the first run's")
    so = only.summary or {}
    tap.eq((so.get("events_written"), so.get("events_dropped")), (len(only.events), 0),
           "filtered at the source: every event offered to the log was written")

    crafted = refused_segments_pcap(tmp)

    def replay_crafted(opts):
        return harness.run(exe, ["net_pcap0,rx_pcap=" + crafted], CLOCK + opts, tmpdir=tmp, timeout=60)

    inv = replay_crafted(["--events-filter", "update"])
    tap.eq(inv.rc, 0, "refused segments, --events-filter update: flowcop exits 0")
    s = inv.summary or {}
    tap.eq((s.get("tcp_invalid"), s.get("tcp_out_of_window")), (1, 1),
           "the capture has one segment invalid for the state and one out of window")
    tap.ok(inv.events and all(e["event"] == "update" for e in inv.events), "update events only")
    refused = [e for e in inv.events if "invalid" in e]
    tap.eq([e["invalid"] for e in refused], ["seq_above_window", "tcp_invalid_for_state"],
           "each refused segment makes one update saying why, in its counter's word")
    tap.ok(all(e["state"] == "ESTABLISHED" and e["flags"] == ["SEEN_REPLY", "ASSURED"] for e in refused),
           "... with the flow's unchanged state and flags", refused)
    tap.eq(len({e["flow_id"] for e in inv.events}), 1, "... and the flow's id, as its other updates")
    tap.note("an invalid segment's update: " + str(refused[:1]))

    bounded = replay_crafted(["--events-filter", "update", "--events-invalid-rate", "1"])
    tap.eq(bounded.rc, 0, "--events-invalid-rate 1: flowcop exits 0")
    tap.eq([e["invalid"] for e in bounded.events if "invalid" in e], ["seq_above_window"],
           "--events-invalid-rate 1: only the first of the two refused segments makes an update")
    tap.done()


if __name__ == "__main__":
    main()
