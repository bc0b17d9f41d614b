#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Blind attacks on live TCP flows (issue 16): a spoofed-RST storm and an ACK storm with random sequence
numbers against 10^4 established connections, through the real flowcop binary on a live port
(net_af_packet on a veth pair, tsc clock), in paced phases with a metrics scrape between them.

Usage: test_window_storm.py FLOWCOP_EXE TMPDIR

  1. 10 000 connections, numbered as real stacks number them: handshake, 100 bytes of data, its ACK;
  2. the RST storm: for every connection two RSTs and two RST+ACKs, from either end, with random
     sequence (and ack) numbers, as a blind attacker who knows the addresses and ports sends them;
  3. the ACK storm: for every connection two ACKs and two data segments with random sequence and ack
     numbers, and a FIN from a random sequence;
  4. every connection's real peers exchange one more data segment and its ACK (what a real peer does
     after an RST inside its window: RFC 5961's challenge ACK and its answer).
Checked: the port received every frame; none of the 10 000 flows ended before the shutdown (each ends
there, ESTABLISHED); no flow ended by reset; the storms created no flow; every storm segment was
counted in flowcop_tcp_out_of_window_total (by reason) or, for the few a random number can land in the
window, accepted without ending anything (at most 0.1%); and every run invariant (hostile.finish).
Needs root and iproute2 (skips otherwise).
"""

import os
import random
import sys


import hostile  # noqa: E402
from hostile import harness  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, FIN, PSH, RST, SYN  # noqa: E402

N_FLOWS = 10_000
CAPACITY = 16_384
SERVER = "10.9.0.1"
M32 = 0xFFFFFFFF


class Conn:
    """One connection's endpoints and next sequence numbers."""

    def __init__(self, i, rnd):
        self.c, self.cp = "10.20.%d.%d" % (i // 250, i % 250 + 1), 20000 + i % 40000
        self.c_nxt, self.s_nxt = rnd.getrandbits(32), rnd.getrandbits(32)

    def seg(self, from_client, flags, n=0):
        """The next real segment from one end: ack = all the other end sent."""
        if from_client:
            seq, ack = self.c_nxt, self.s_nxt
            f = pcaplib.tcp_frame(self.c, SERVER, self.cp, 443, flags, seq=seq, ack=ack if flags & ACK else 0,
                                  payload=b"d" * n)
            self.c_nxt = (self.c_nxt + n + (1 if flags & (SYN | FIN) else 0)) & M32
        else:
            seq, ack = self.s_nxt, self.c_nxt
            f = pcaplib.tcp_frame(SERVER, self.c, 443, self.cp, flags, seq=seq, ack=ack if flags & ACK else 0,
                                  payload=b"d" * n)
            self.s_nxt = (self.s_nxt + n + (1 if flags & (SYN | FIN) else 0)) & M32
        return f

    def forged(self, from_client, flags, rnd, n=0):
        """A blind attacker's segment: the right addresses and ports, random numbers."""
        src, dst, sp, dp = (self.c, SERVER, self.cp, 443) if from_client else (SERVER, self.c, 443, self.cp)
        return pcaplib.tcp_frame(src, dst, sp, dp, flags, seq=rnd.getrandbits(32), ack=rnd.getrandbits(32),
                                 payload=b"x" * n)


def real_frames(conns):
    out = []
    for k in conns:
        out += [k.seg(True, SYN), k.seg(False, SYN | ACK), k.seg(True, ACK), k.seg(True, PSH | ACK, 100),
                k.seg(False, ACK)]
    return out


def rst_storm(conns, rnd):
    out = []
    for k in conns:
        out += [k.forged(True, RST, rnd), k.forged(False, RST, rnd), k.forged(True, RST | ACK, rnd),
                k.forged(False, RST | ACK, rnd)]
    return out


def ack_storm(conns, rnd):
    out = []
    for k in conns:
        out += [k.forged(True, ACK, rnd), k.forged(False, ACK, rnd), k.forged(True, PSH | ACK, rnd, 60),
                k.forged(False, PSH | ACK, rnd, 60), k.forged(rnd.random() < 0.5, FIN | ACK, rnd)]
    return out


def answer_frames(conns):
    out = []
    for k in conns:
        out += [k.seg(True, PSH | ACK, 10), k.seg(False, ACK)]
    return out


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    if not hostile.have_root_net():
        harness.skip_all("needs root and iproute2 for a veth pair")
    tap = harness.Tap()
    rnd = random.Random(16)
    conns = [Conn(i, rnd) for i in range(N_FLOWS)]
    phases = [("connections", real_frames(conns)), ("RST storm", rst_storm(conns, rnd)),
              ("ACK storm", ack_storm(conns, rnd)), ("real peers answer", answer_frames(conns))]
    storm_frames = len(phases[1][1]) + len(phases[2][1])
    samples = {}

    def run_phases(res):
        sent = 0
        for name, frames in phases:
            sent += veth.inject(frames)
            m = hostile_wait(res, sent)
            tap.eq(harness.metric(m, "flowcop_port_rx_packets_total"), sent,
                   "%s: the port received every frame sent so far" % name)
            samples[name] = m
        return lambda m: True

    def hostile_wait(res, sent):
        import time
        deadline = time.monotonic() + 30
        m = None
        while time.monotonic() < deadline:
            try:
                m = harness.scrape(res.metrics_url)
            except OSError:
                time.sleep(0.05)
                continue
            if harness.metric(m, "flowcop_port_rx_packets_total") >= sent:
                time.sleep(0.2)  # let the lcore finish the bursts it read
                return harness.scrape(res.metrics_url)
            time.sleep(0.05)
        return m

    with hostile.Veth(str(os.getpid() % 100000)) as veth:
        vdev = "net_af_packet0,iface=%s,framecnt=16384" % veth.b
        res = harness.run(exe, [vdev], ["--flows-per-lcore", str(CAPACITY), "--events-ring", "32768"],
                          tmpdir=tmp, on_started=run_phases, timeout=150)
    hostile.finish(tap, res, "window storm")
    m = res.metrics
    if not tap.ok(m is not None and len(samples) == len(phases), "final scrape and every phase's sample are there",
                  res.stderr[-2000:]):
        tap.done()

    d = res.destroys()
    ours = [e for e in d if e["src"].startswith("10.20.") or e["dst"].startswith("10.20.")]
    tap.eq(len(ours), N_FLOWS, "every connection is one flow, created once and destroyed once")
    early = [e for e in ours if e["reason"] != "shutdown" or e["state"] != "ESTABLISHED"]
    tap.ok(not early, "none of the %d flows ended before the shutdown: each ends there, ESTABLISHED" % N_FLOWS,
           early[:3])
    tap.eq(harness.metric(m, "flowcop_flows_expired_total", reason="reset"), 0, "no flow ended by reset")
    tap.eq(harness.metric(m, "flowcop_flows_created_total"), N_FLOWS, "the storms created no flow")
    oow = {r: harness.metric(m, "flowcop_tcp_out_of_window_total", reason=r)
           for r in ("seq_above_window", "ack_above_sent", "rst_below_ack", "seq_overshoot", "seq_below_window",
                     "ack_below_window")}
    tap.note("out of window by reason: %s" % oow)
    total = sum(oow.values())
    tap.ok(total <= storm_frames and total >= storm_frames * 0.999,
           "%d of %d storm segments counted out of window (the rest landed in a window by chance)"
           % (total, storm_frames))
    tap.eq(harness.metric(m, "flowcop_packets_total", result="tcp_out_of_window"), total,
           "flowcop_packets_total{result=tcp_out_of_window} is their sum")
    tap.ok(oow["rst_below_ack"] > 0 and oow["seq_above_window"] > 0 and oow["ack_above_sent"] > 0,
           "RSTs below the ack, data past the window and acks of unsent data are each counted")
    tap.done()


if __name__ == "__main__":
    main()
