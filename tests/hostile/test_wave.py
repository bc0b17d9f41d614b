#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A correlated wave of expiries under a small fire budget, replayed in packet-clock mode.

Usage: test_wave.py FLOWCOP_EXE TMPDIR

4000 flows open within 40 ms and go silent together; with --tcp-timeout-established 2 they all
come due within 40 ms of each other, two seconds later. --timeout-budget 8 lets one cop pass
fire 8 of them; a pass stopped by its budget is retried 1 ms later (worker.h kCopRetryNs), not
a whole --check-interval-ms (100) later. Meanwhile a heartbeat flow sends a segment every
millisecond (it moves the packet clock and must never expire), and 50 new connections open
while the wave drains. Checked:
  - every wave flow expires by inactivity, never before last_seen + 2 s, and the whole wave is
    gone within the bound the budget implies: one interval + ceil(4000/8) retries of 1 ms;
  - flowcop_inactivity_cop_budget_exhausted_total counts at least ceil(share/8) - 1 passes per lcore;
  - the lag histogram shows the deferral (some expiries later than 250 ms) and its bound
    (none beyond 1 s); no cop pass took longer than 10 ms (the pass histogram's largest bound);
  - RX kept flowing: every heartbeat packet reached its flow, which ends at shutdown with its
    last packet's time, and every connection opened during the drain was created at its SYN;
  - every run invariant (hostile.finish);
on each lcore layout (flowcoptest/layouts.py), with the same expectations.
"""

import os
import sys
from collections import Counter


import hostile  # noqa: E402
from hostile import harness  # noqa: E402
from flowcoptest import layouts  # noqa: E402
from flowcoptest import pcaplib  # noqa: E402
from flowcoptest.pcaplib import ACK, PSH, SYN  # noqa: E402

T0 = 1_700_000_000 * 1_000_000
N_WAVE, BUDGET, INTERVAL_MS, TIMEOUT_S = 4000, 8, 100, 2
END_MS, N_LATE = 3500, 50
OPTS = ["--clock", "packet", "--tick-ms", "1", "--check-interval-ms", str(INTERVAL_MS), "--timeout-budget",
        str(BUDGET), "--tcp-timeout-established", str(TIMEOUT_S)]


def conversation(c, cp, s, sp, t_us, data=True):
    """Handshake (+ one data segment and its ACK), 100 us apart."""
    steps = [(True, SYN, 0), (False, SYN | ACK, 0), (True, ACK, 0)]
    if data:
        steps += [(True, PSH | ACK, 100), (False, ACK, 0)]
    out = []
    for k, (fw, fl, n) in enumerate(steps):
        src, spp, dst, dpp = (c, cp, s, sp) if fw else (s, sp, c, cp)
        out.append((t_us + k * 100, pcaplib.tcp_frame(src, dst, spp, dpp, fl, payload=b"w" * n)))
    return out


def wave_key(i):
    return "10.5.%d.%d" % (i // 250, i % 250 + 1), 30000 + i


def build(path):
    recs = []
    for i in range(N_WAVE):                                   # 4000 flows opened within 40 ms
        c, cp = wave_key(i)
        recs += conversation(c, cp, "10.6.0.1", 443, T0 + i * 10)
    recs += conversation("10.7.0.1", 40000, "10.7.0.2", 80, T0, data=False)
    for t in range(1, END_MS + 1):                            # the heartbeat: one segment a millisecond
        fw = t % 2 == 0
        src, sp, dst, dp = ("10.7.0.1", 40000, "10.7.0.2", 80) if fw else ("10.7.0.2", 80, "10.7.0.1", 40000)
        recs.append((T0 + t * 1000, pcaplib.tcp_frame(src, dst, sp, dp, PSH | ACK if fw else ACK,
                                                      payload=b"h" * (10 if fw else 0))))
    late = []
    for k in range(N_LATE):                                   # connections opened while the wave drains
        t = T0 + (TIMEOUT_S * 1000 + 10 * k) * 1000 + 500
        late.append(t)
        recs += conversation("10.8.0.%d" % (k + 1), 50000 + k, "10.6.0.1", 443, t, data=False)
    recs.sort(key=lambda r: r[0])
    pcaplib.write_pcap(path, recs)
    return len(recs), late


def run_layout(tap, exe, tmp, path, n, late, layout):
    res = harness.run(exe, layout.vdevs(path), OPTS + layout.opts(path), tmpdir=tmp, scrape_when_rx=n, timeout=60,
                      lcores=layout.lcores)
    tap.note("%d frames, flowcop took %.1f s" % (n, res.elapsed))
    hostile.finish(tap, res, "wave")
    s, m = res.summary, res.metrics
    if not tap.ok(s is not None and m is not None, "summary and scrape are there", res.stderr[-2000:]):
        return
    harness.check_layout(tap, res, layout, "wave")
    tap.eq(s["received"], n, "every frame was received")

    d = res.destroys()
    wave = [e for e in d if e["src"].startswith("10.5.")]
    tap.eq((len(wave), sorted({(e["reason"], e["state"]) for e in wave})), (N_WAVE, [("inactivity", "ESTABLISHED")]),
           "all %d wave flows expire by inactivity in ESTABLISHED, none is left to the shutdown" % N_WAVE)
    lags = [harness.us(e["time"]) - harness.us(e["last_seen"]) - TIMEOUT_S * 1_000_000 for e in wave]
    bound_us = (INTERVAL_MS + -(-N_WAVE // BUDGET) + 2) * 1000
    tap.ok(wave and 0 <= min(lags) and max(lags) <= bound_us,
           "each wave flow expires after its deadline and within one interval + ceil(N/budget) x 1 ms (%d ms)"
           % (bound_us // 1000), "lag min %d us, max %d us" % (min(lags), max(lags)))
    tap.ok(max(lags) > 250_000, "the budget deferred the wave: the last expiries come more than 250 ms late",
           max(lags))

    # Each lcore's cop drains its own share of the wave: ceil(share/budget) - 1 stopped passes at least.
    exhausted = harness.metric(m, "flowcop_inactivity_cop_budget_exhausted_total")
    shares = Counter(e["lcore"] for e in wave)
    least = sum(-(-k // BUDGET) - 1 for k in shares.values())
    tap.ok(exhausted >= least,
           "flowcop_inactivity_cop_budget_exhausted_total (%d) >= sum over lcores of ceil(share/budget) - 1 = %d"
           % (exhausted, least), dict(shares))
    tap.eq(int(harness.metric(m, "flowcop_inactivity_cop_fired_total")), N_WAVE, "the cop fired exactly the wave")
    buckets, count, _ = harness.histogram(m, "flowcop_timeout_lag_seconds")
    le = dict(buckets)
    tap.ok(count == N_WAVE and le.get(1.0) == count and le.get(0.25, count) < count,
           "lag histogram: %d expiries, all within 1 s, some beyond 250 ms" % count, buckets)
    buckets, count, total = harness.histogram(m, "flowcop_inactivity_cop_pass_duration_seconds")
    le = dict(buckets)
    tap.ok(count >= exhausted and le.get(0.01) == count,
           "no cop pass took longer than 10 ms (%d passes, mean %.1f us)" % (count, 1e6 * total / max(count, 1)),
           buckets)

    hb = [e for e in d if e["src"] == "10.7.0.1"]
    tap.ok(len(hb) == 1 and hb[0]["reason"] == "shutdown" and hb[0]["packets_orig"] + hb[0]["packets_reply"]
           == 3 + END_MS and harness.us(hb[0]["last_seen"]) == T0 + END_MS * 1000,
           "RX kept flowing: every heartbeat packet reached its flow, which never expired", hb)
    news = {e["src"]: e for e in res.news() if e["src"].startswith("10.8.")}
    ok = len(news) == N_LATE and all(harness.us(news["10.8.0.%d" % (k + 1)]["time"]) == late[k]
                                     for k in range(N_LATE))
    tap.ok(ok, "each of the %d connections opened during the drain was created at its SYN" % N_LATE,
           list(news.values())[:2])


def main():
    exe, tmp = sys.argv[1], sys.argv[2]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    path = os.path.join(tmp, "wave.pcap")
    n, late = build(path)
    for layout in layouts.selected():
        tap.note("layout %s" % layout)
        run_layout(tap, exe, tmp, path, n, late, layout)
    tap.done()


if __name__ == "__main__":
    main()
