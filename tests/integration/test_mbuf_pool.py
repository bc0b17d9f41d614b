#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""--mbufs and --mbuf-data-room through the real binary (app/service/options/mbuf_pool.h).

Usage: test_mbuf_pool.py FLOWCOP_EXE TMPDIR

1. A looped replay: DPDK's pcap vdev with infinite_rx=1 copies its whole capture into the mbuf pool
   at queue setup (one mbuf per packet, each frame in one mbuf) and serves it forever. The capture
   here has more packets than the default pool (8191 mbufs for one port on one lcore): with the
   default, flowcop refuses to start and the error names --mbufs; with --mbufs large enough and
   --mbuf-data-room 192 (the packet-rate benchmark's geometry; the frames are 60 bytes), it starts,
   picks up every flow, tracks every packet of several loops and stops cleanly on SIGINT.
2. A small data room on frames longer than it: with --mbuf-data-room 192 (64 bytes after the
   headroom) the pcap PMD chains most frames over several mbufs, and every connection must still be
   tracked exactly (packets and bytes per direction), as the parser reads across segments.
3. Too few mbufs for the ports and lcores is refused after EAL is up, with exit 2 and one line that
   gives the minimum.
Each run is bounded (a few seconds; harness deadlines kill a run that overstays).
"""

import os
import sys
import time


from flowcoptest import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, FIN, PSH, SYN  # noqa: E402

LOOP_FLOWS = 6000        # 2 packets each: 12,000 packets, more than the default pool of 8191
T0_US = 1_700_000_000 * 1_000_000


def looped_capture(path):
    """LOOP_FLOWS established IPv4 flows, one 60-byte PSH|ACK each way (picked up loosely)."""
    recs, t = [], T0_US
    for direction in (0, 1):
        for i in range(LOOP_FLOWS):
            c, s = "10.%d.%d.%d" % (1 + i // 65536, (i // 256) % 256, i % 256), "10.200.0.1"
            cp, sp = 10000 + i % 50000, 80
            frame = pcaplib.tcp_frame(c, s, cp, sp, PSH | ACK) if direction == 0 else \
                pcaplib.tcp_frame(s, c, sp, cp, PSH | ACK)
            recs.append((t, frame))
            t += 10
    pcaplib.write_pcap(path, recs)
    return len(recs)


def connection(i):
    """One connection's frames as (time_us, bytes), with payloads up to 1400 bytes, and what each
    direction carries: (packets, IP bytes) client to server and server to client."""
    if i % 2:
        c, s = "2001:db8::%x" % (i + 1), "2001:db8:1::1"
    else:
        c, s = "10.1.0.%d" % (i + 1), "10.2.0.1"
    cp, sp = 30000 + i, 443
    t = T0_US + i * 100_000
    frames, up, down = [], [0, 0], [0, 0]

    def send(to_server, flags, payload=b""):
        frame = pcaplib.tcp_frame(c, s, cp, sp, flags, payload=payload) if to_server else \
            pcaplib.tcp_frame(s, c, sp, cp, flags, payload=payload)
        frames.append((t + len(frames) * 1000, frame))
        side = up if to_server else down
        side[0] += 1
        side[1] += pcaplib.ip_length(frame)  # IP bytes, as flowcop counts

    send(True, SYN)
    send(False, SYN | ACK)
    send(True, ACK)
    for k in range(1 + i % 3):
        send(True, PSH | ACK, b"q" * (50 + 97 * i % 300))
        send(False, PSH | ACK, b"r" * (200 + 401 * (i + k) % 1200))
    send(True, FIN | ACK)
    send(False, FIN | ACK)
    send(True, ACK)
    return (c, cp, s, sp), frames, tuple(up), tuple(down)


def test_looped_replay(tap, exe, tmp):
    pcap = os.path.join(tmp, "looped.pcap")
    packets = looped_capture(pcap)
    vdev = "net_pcap0,rx_pcap=%s,infinite_rx=1" % pcap

    res = harness.run(exe, [vdev], [], events=False, tmpdir=tmp, timeout=30)
    line = [l for l in res.stderr.splitlines() if l.startswith("flowcop: ")]
    tap.ok(res.rc == 1 and len(line) == 1 and "RX queue 0 setup failed" in line[0]
           and "its pool has 8191 mbufs" in line[0] and "--mbufs" in line[0] and res.summary is None,
           "default pool, %d-packet infinite_rx capture: exit 1 before any packet, the error names the "
           "pool's 8191 mbufs and --mbufs" % packets, res.stderr[-2000:])

    mbufs = packets + 8191
    seen = {}

    def wait_for_loops(r):
        """Scrapes until every flow is open and the capture has looped three times through the port
        and the table, then returns no stop condition, so the harness stops flowcop at once (its
        own condition waits for counters to settle, which infinite_rx never lets them do). A scrape
        reads the table's counters and the port's at different moments, so the port's can be ahead
        (seen once under a full suite's load: 34880 packets counted by the table, 36000 by the port):
        both must have passed three loops."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and r.metrics_url:
            try:
                m = harness.scrape(r.metrics_url)
            except OSError:
                time.sleep(0.05)
                continue
            if harness.metric(m, "flowcop_flows_active") == LOOP_FLOWS and \
                    harness.metric(m, "flowcop_port_rx_packets_total") >= 3 * packets and \
                    harness.metric(m, "flowcop_packets_total") >= 3 * packets:
                seen["metrics"] = m
                break
            time.sleep(0.1)
        return None

    res = harness.run(exe, [vdev], ["--mbufs", str(mbufs), "--mbuf-data-room", "192"], events=False, tmpdir=tmp,
                      timeout=40, on_started=wait_for_loops)
    cfg = res.config()
    tap.eq((cfg.get("mbufs"), cfg.get("mbuf_data_room")), (str(mbufs), "192"),
           "the startup config line shows --mbufs and --mbuf-data-room")
    m = seen.get("metrics")
    if not tap.ok(m is not None, "with --mbufs %d: flowcop starts, and every flow is open after three loops of "
                  "the capture" % mbufs, res.stderr[-2000:]):
        return
    total = harness.metric(m, "flowcop_packets_total")
    tap.ok(total >= 3 * packets and harness.metric(m, "flowcop_packets_total", result="tracked") == total,
           "every packet of every loop is tracked (%d)" % total)
    tap.eq((harness.metric(m, "flowcop_flows_created_total"), harness.metric(m, "flowcop_flows_expired_total"),
            harness.metric(m, "flowcop_port_rx_nombuf_total")), (LOOP_FLOWS, 0, 0),
           "each flow is created once, none ends, and RX never lacks an mbuf")
    tap.ok(res.rc == 0 and not res.timed_out and res.summary is not None
           and res.summary["created"] == LOOP_FLOWS and res.summary["reasons"].get("shutdown") == LOOP_FLOWS,
           "SIGINT stops it cleanly: exit 0, the summary ends every flow with reason shutdown",
           "rc %r\n%s" % (res.rc, res.stderr[-2000:]))


def test_segmented_frames(tap, exe, tmp):
    conns, frames = {}, []
    for i in range(24):
        key, fr, up, down = connection(i)
        conns[key] = (up, down)
        frames += fr
    frames.sort(key=lambda r: r[0])
    pcap = os.path.join(tmp, "segmented.pcap")
    pcaplib.write_pcap(pcap, frames)
    longer = sum(1 for _, f in frames if len(f) > 64)
    res = harness.run(exe, ["net_pcap0,rx_pcap=" + pcap], ["--clock", "packet", "--mbuf-data-room", "192"],
                      tmpdir=tmp, timeout=30)
    harness.check_invariants(tap, res, "data room 192")
    tap.eq(res.summary and res.summary["received"], len(frames),
           "data room 192: every frame is received, %d of the %d longer than one mbuf's 64 bytes"
           % (longer, len(frames)))
    got = {}
    for e in res.destroys():
        got[(e["src"], e["sport"], e["dst"], e["dport"])] = ((e["packets_orig"], e["bytes_orig"]),
                                                             (e["packets_reply"], e["bytes_reply"]))
    tap.eq(got, conns, "data room 192: each connection is one flow with its packets and bytes per direction "
           "exact, however many mbufs its frames took")


def test_too_few(tap, exe, tmp):
    pcap = os.path.join(tmp, "looped.pcap")
    res = harness.run(exe, ["net_pcap0,rx_pcap=" + pcap], ["--mbufs", "9000"], lcores="0,1", events=False,
                      tmpdir=tmp, timeout=20)
    lines = res.stderr.splitlines()
    # A pcap port has no RSS: two lcores run the handoff plan, whose rings can hold 2 x 2048 mbufs.
    want = ("flowcop: --mbufs: 9000 is too few: 1 port on 2 lcores needs at least 14336 (2048 per RX and TX "
            "queue pair, 1024 per lcore, 4096 spare, 4096 for the --flowgen port, the handoff rings and a device's "
            "own RX queues); auto gives 14336")
    tap.ok(res.rc == 2 and lines == [want] and res.elapsed < 15,
           "--mbufs 9000 on one port and two lcores: exit 2 with one line giving the minimum, 14336",
           "rc %r, %.1f s\n%s" % (res.rc, res.elapsed, res.stderr[-2000:]))


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    test_looped_replay(tap, exe, tmp)
    test_segmented_frames(tap, exe, tmp)
    test_too_few(tap, exe, tmp)
    tap.done()


if __name__ == "__main__":
    main()
