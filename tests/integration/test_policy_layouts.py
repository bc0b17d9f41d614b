#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""--policy's verdicts alike on every lcore layout (flowcoptest.layouts: one lcore, the handoff plan and the
rss plan on the flowgen port that deals a capture as a NIC's RSS does), in monitor mode, the dry run: every
packet judged and counted by state and by rule, nothing dropped (lib/policy/policy.md). Inline drops between
real peers are test_policy_veth.py's (veths have no RSS: one lcore and the handoff plan).

The capture (packet clock): 12 TCP connections to port 80 (SYN, SYN-ACK, ACK, data, ACK), 6 SYNs to port 22,
and on each of 4 of the connections one segment far outside its window. With the policy below every layout
must count: new 12 accepted (rule "web") and 6 dropped (the default), established 48 accepted ("return"),
invalid 4 dropped ("invalid"); and in monitor mode the flows are tracked as without a policy.

Usage: test_policy_layouts.py FLOWCOP_EXE TMPDIR
"""

import os
import sys

from flowcoptest import harness, layouts, pcaplib  # noqa: E402

POLICY = """ct state established,related accept comment "return"
ct state invalid drop comment "invalid"
ct state new tcp dport { 80, 443 } accept comment "web"
policy drop
"""
T0 = 1_700_000_000 * 1_000_000  # us
SYN, ACK, PSH = pcaplib.SYN, pcaplib.ACK, 0x08
N_WEB, N_DENIED, N_FORGED = 12, 6, 4


def capture(path):
    frames = []
    for i in range(N_WEB):
        c, s, sp = "10.40.%d.1" % i, "10.41.0.%d" % (i % 3 + 1), 40000 + i
        frames += [pcaplib.tcp_frame(c, s, sp, 80, SYN, seq=100),
                   pcaplib.tcp_frame(s, c, 80, sp, SYN | ACK, seq=900, ack=101),
                   pcaplib.tcp_frame(c, s, sp, 80, ACK, seq=101, ack=901),
                   pcaplib.tcp_frame(c, s, sp, 80, PSH | ACK, seq=101, ack=901, payload=b"x" * 100),
                   pcaplib.tcp_frame(s, c, 80, sp, ACK, seq=901, ack=201)]
        if i < N_FORGED:  # far outside the window: invalid
            frames.append(pcaplib.tcp_frame(c, s, sp, 80, ACK, seq=101 + 2_000_000_000, ack=901))
    for i in range(N_DENIED):
        frames.append(pcaplib.tcp_frame("10.42.0.%d" % (i + 1), "10.41.0.1", 50000 + i, 22, SYN, seq=7))
    pcaplib.write_pcap(path, [(T0 + 1000 * k, f) for k, f in enumerate(frames)])
    return len(frames)


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    pcap = os.path.join(tmp, "policy_layouts.pcap")
    frames = capture(pcap)
    policy = os.path.join(tmp, "policy.nft")
    with open(policy, "w") as f:
        f.write(POLICY)
    want_states = {("new", "accept"): N_WEB, ("new", "drop"): N_DENIED, ("established", "accept"): 4 * N_WEB,
                   ("invalid", "drop"): N_FORGED}
    want_rules = {("0 return", "accept"): 4 * N_WEB, ("1 invalid", "drop"): N_FORGED, ("2 web", "accept"): N_WEB,
                  ("3 policy", "drop"): N_DENIED}  # rule = its index from 0, then its comment
    for lay in layouts.selected():
        work = os.path.join(tmp, lay.name)
        os.makedirs(work, exist_ok=True)
        res = harness.run(exe, lay.vdevs(pcap), ["--clock", "packet", "--policy", policy] + lay.opts(pcap),
                          lcores=lay.lcores, tmpdir=work, scrape_when_rx=frames, timeout=60)
        harness.check_invariants(tap, res, "%s: policy" % lay)
        m = res.metrics
        if not tap.ok(m is not None, "%s: metrics scraped" % lay):
            continue
        tap.eq(int(harness.metric(m, "flowcop_ownership_plan_info", plan=lay.plan)), 1, "%s: the plan is %s"
               % (lay, lay.plan))
        got = {k: int(harness.metric(m, "flowcop_policy_verdicts_total", state=k[0], action=k[1])) for k in want_states}
        tap.eq(got, want_states, "%s: verdicts by state and action" % lay)
        tap.eq(int(harness.metric(m, "flowcop_policy_verdicts_total")), sum(want_states.values()),
               "%s: no other verdict" % lay)
        rules = {k: int(harness.metric(m, "flowcop_policy_packets_total", rule=k[0], action=k[1])) for k in want_rules}
        if not tap.eq(rules, want_rules, "%s: each rule's packets" % lay):
            tap.note([(l, v) for n, l, v in m if n == "flowcop_policy_packets_total"])
        tap.eq(int(harness.metric(m, "flowcop_policy_dropped_total")), 0, "%s: monitor mode drops nothing" % lay)
        # The dry run tracks as without a policy: every connection and every denied SYN is a flow.
        tap.eq(len(res.news()), N_WEB + N_DENIED, "%s: every connection and denied SYN made its flow" % lay)
    tap.done()


if __name__ == "__main__":
    main()
