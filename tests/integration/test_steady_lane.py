#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The steady lane is taken while it pays, and only then, through the real flowcop binary.

Usage: test_steady_lane.py FLOWCOP_EXE TMPDIR

Issue 29: a worker reads a burst through the steady lane (app/architecture.md, a worker's turn) only
while the fused steady path took the whole burst before; a burst of young or closing connections
goes the ordinary way whole (the lane would split it into runs and read frames twice). Both ways track every
packet alike. Two captures:
  - steady: F connections opened, then R rounds of a data segment and its ACK on each: after the
    handshakes nearly every burst is steady, so on one lcore (TSC clock, the lane's)
    flowcop_steady_lane_packets_total counts at least 90% of the frames;
  - churn: N short connections (handshake, request, answer, both FINs): at most a few of a burst's
    8-frame connections are steady, so the lane is left after the first burst: at most 5% of the
    frames;
  - mixed: the steady capture with a UDP datagram after every 9 TCP frames: 90% of each burst steady,
    but the rest would split it into runs, so the lane is left after the first burst too (at most 5%);
  - on two lcores (the handoff plan: a pcap port has no RSS) the lane is never taken, for each of the
    three: 0 under the TSC clock (where a full handoff ring may drop, counted: the invariants hold, the
    counts need not be whole) and under the packet clock (where a file's port waits for room: nothing
    is lost);
  - each connection's frames are counted on its flow, both ways, in every run that cannot drop, and
    the run invariants hold in every run (harness.check_invariants);
  - the steady capture on one lcore again with EAL's --force-max-simd-bitwidth=128: the lane's baseline
    copy (lib/packet/lane_isa.h; the default takes the x86-64-v3 copy where the CPU runs it), named on
    the startup line, takes the same share and counts the same.
"""

import os
import re
import struct
import sys

from flowcoptest import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.exposition import metric  # noqa: E402
from flowcoptest.pcaplib import ACK, PSH, SYN  # noqa: E402

F, R = 64, 50  # steady: connections, rounds
N = 800  # churn: connections
UDP_EVERY, UDP_CLIENT = 9, "10.32.0.1"  # mixed: a datagram after every 9 TCP frames
SERVER = "10.30.0.1"
T0_US = 1_700_000_000 * 1_000_000


def endpoint(i):
    return "10.31.%d.%d" % (i // 250, i % 250 + 1), 20000 + i


def steady_capture():
    """F handshakes, then R rounds of (client data, server ACK) on every connection in turn."""
    frames = []
    cs, ss = {}, {}
    for i in range(F):
        c, cp = endpoint(i)
        cs[i], ss[i] = 1000 + i * 13, 9000 + i * 17
        frames.append(pcaplib.tcp_frame(c, SERVER, cp, 80, SYN, seq=cs[i], ack=0))
        frames.append(pcaplib.tcp_frame(SERVER, c, 80, cp, SYN | ACK, seq=ss[i], ack=cs[i] + 1))
        frames.append(pcaplib.tcp_frame(c, SERVER, cp, 80, ACK, seq=cs[i] + 1, ack=ss[i] + 1))
        cs[i] += 1
        ss[i] += 1
    data = b"d" * 100
    for _ in range(R):
        for i in range(F):
            c, cp = endpoint(i)
            frames.append(pcaplib.tcp_frame(c, SERVER, cp, 80, PSH | ACK, seq=cs[i], ack=ss[i], payload=data))
            cs[i] += len(data)
            frames.append(pcaplib.tcp_frame(SERVER, c, 80, cp, ACK, seq=ss[i], ack=cs[i]))
    expected = {endpoint(i): (2 + R, 1 + R) for i in range(F)}  # (from the client, from the server)
    return frames, expected


def mixed_capture():
    """The steady capture with one UDP datagram (one flow) after every UDP_EVERY TCP frames past the handshakes."""
    frames, expected = steady_capture()
    udp = pcaplib.ether(pcaplib.ipv4(UDP_CLIENT, SERVER, 17, struct.pack("!HHHH", 5353, 53, 12, 0) + b"abcd"),
                        pcaplib.ETH_IPV4)
    udp += b"\0" * (60 - len(udp))
    head, tail = frames[:3 * F], frames[3 * F:]
    mixed = list(head)
    for k, f in enumerate(tail):
        mixed.append(f)
        if k % UDP_EVERY == UDP_EVERY - 1:
            mixed.append(udp)
    expected = dict(expected)
    expected[(UDP_CLIENT, 5353)] = (len(mixed) - len(frames), 0)
    return mixed, expected


def churn_capture():
    """N connections one after another: handshake, request, answer, both FINs, the last ACK."""
    frames = []
    for i in range(N):
        c, cp = endpoint(i)
        frames += pcaplib.short_connection(c, cp, SERVER, 80, 1000 + i * 7, 5000 + i * 11)
    expected = {endpoint(i): (5, 3) for i in range(N)}
    return frames, expected


def check(tap, exe, tmp, name, frames, expected, lcores, clock, lane_share, eal_extra=()):
    """lane_share: (low, high) bounds of the lane's share of the frames; eal_extra: more EAL arguments."""
    label = "%s, -l %s, --clock %s%s" % (name, lcores, clock, "".join(", " + a for a in eal_extra))
    path = os.path.join(tmp, name + ".pcap")
    pcaplib.write_pcap(path, [(T0_US + k, f) for k, f in enumerate(frames)])
    res = harness.run(exe, ["net_pcap0,rx_pcap=" + path], ["--flows-per-lcore", "4096", "--clock", clock],
                      lcores=lcores, tmpdir=tmp, scrape_when_rx=len(frames), timeout=120, eal_extra=eal_extra)
    harness.check_invariants(tap, res, label)
    # The lane's compiled copy (lib/packet/lane_isa.h): the baseline's when DPDK allows no 256-bit vectors.
    code = re.search(r"^flowcop: steady lane code: (.*)$", res.stderr, re.M)
    allowed = ("baseline",) if "--force-max-simd-bitwidth=128" in eal_extra else \
        ("baseline", "x86-64-v3 (AVX2, BMI1/2, LZCNT, MOVBE)")
    tap.ok(code is not None and code.group(1) in allowed,
           label + ": the startup line names the lane's copy, one of %s" % (allowed,), code and code.group(0))
    s, m = res.summary, res.metrics
    if not tap.ok(s is not None and m is not None, label + ": summary and scrape are there", res.stderr[-2000:]):
        return
    tap.eq(s["received"], len(frames), label + ": every frame received")
    # Under the TSC clock the handoff plan may drop at a full ring (counted: check_invariants adds the
    # drops up with the tracked packets), so whole counts are checked where nothing can be lost.
    if lcores == "0" or clock == "packet":
        check_counts(tap, label, res, expected)
    lane = metric(m, "flowcop_steady_lane_packets_total")
    low, high = lane_share
    tap.ok(low * len(frames) <= lane <= high * len(frames),
           label + ": flowcop_steady_lane_packets_total %d of %d frames, within [%.2f, %.2f] of them" %
           (lane, len(frames), low, high))


def check_counts(tap, label, res, expected):
    counts = {}
    for e in res.destroys():
        counts[(e["src"], e["sport"])] = (e["packets_orig"], e["packets_reply"])
    wrong = [(k, counts.get(k), v) for k, v in expected.items() if counts.get(k) != v]
    tap.ok(len(counts) == len(expected) and not wrong,
           label + ": each connection's frames counted on its flow, both ways (%d flows)" % len(expected), wrong[:3])


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    steady, steady_expected = steady_capture()
    churn, churn_expected = churn_capture()
    mixed, mixed_expected = mixed_capture()
    check(tap, exe, tmp, "steady", steady, steady_expected, "0", "tsc", (0.90, 1.0))
    # The baseline's copy of the lane where the default chose the v3 one: the same counts, the same share.
    check(tap, exe, tmp, "steady", steady, steady_expected, "0", "tsc", (0.90, 1.0),
          eal_extra=("--force-max-simd-bitwidth=128",))
    check(tap, exe, tmp, "churn", churn, churn_expected, "0", "tsc", (0.0, 0.05))
    check(tap, exe, tmp, "mixed", mixed, mixed_expected, "0", "tsc", (0.0, 0.05))
    for clock in ("tsc", "packet"):
        check(tap, exe, tmp, "steady", steady, steady_expected, "0-1", clock, (0.0, 0.0))
        check(tap, exe, tmp, "churn", churn, churn_expected, "0-1", clock, (0.0, 0.0))
        check(tap, exe, tmp, "mixed", mixed, mixed_expected, "0-1", clock, (0.0, 0.0))
    tap.done()


if __name__ == "__main__":
    main()
