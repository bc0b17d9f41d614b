#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Frames the synthetic port drops on its full RX ring are counted: with `--flowgen ...,overflow=drop`
a polling lcore that falls behind shows the loss in flowcop_port_rx_missed_total (issue 13: a live
change must be shown to lose no RX packets, so the input must be able to lose them, like a NIC).

Usage: test_flowgen_rx_missed.py FLOWCOP_EXE TMPDIR

flowcop runs on one CPU only (its affinity is that CPU and -l is that CPU), so the generator thread,
which runs on DPDK's control CPUs (here the lcore's, there is no other), takes turns with the
busy-polling lcore: while the scheduler runs the generator, nobody empties the 64-entry RX ring.
  stalled:  pps=2000000, realtime=1, overflow=drop, ring=64: the generator makes thousands of frames
            in each of its time slices, so most find the ring full -> port_rx_missed > 0.
  keeps up: the same at pps=200: a 32-frame burst every 160 ms into a ring that holds 320 ms of
            traffic, while the lcore waits at most a time slice (milliseconds) -> port_rx_missed == 0.
Both read /flowcop/stats over the telemetry socket after the port delivered frames for a while.
Every wait is bounded; flowcop is stopped on every exit path.
"""

import os
import signal
import subprocess
import sys
import time


from flowcoptest import harness  # noqa: E402
from flowcoptest.checks import wait_until  # noqa: E402
from flowcoptest.telemetry import telemetry  # noqa: E402

# 100 flows that never end: only data turns after the handshakes, nothing for the cop to do.
FLOWGEN = "flows=100,lifetime=1000000,lifetime_dist=fixed,idle_pct=0,rst_pct=0,realtime=1,overflow=drop,ring=64,burst=32"


def run_case(exe, cpu, pps, want_rx, window_s):
    """Runs flowcop on `cpu` alone at `pps`; returns (stats before, stats after, stderr tail)."""
    prefix = "fct-fgmissed-%d-%d" % (os.getpid(), pps)
    sock = os.path.join(harness.runtime_dir(prefix), "dpdk_telemetry.v2")
    cmd = [exe, "--no-huge", "-m", "256", "--no-pci", "-l", str(cpu), "--file-prefix=" + prefix,
           "--log-level=*:error", "--", "--flowgen", FLOWGEN + ",pps=%d" % pps, "--metrics-addr", "none",
           "--quiet"]
    fc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, errors="replace", preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        stats = lambda: telemetry(sock, "/flowcop/stats")  # noqa: E731
        wait_until(lambda: fc.poll() is not None or (stats() or {}).get("port_rx_packets", [0])[0] >= want_rx,
                   40, "%d frames received at pps=%d" % (want_rx, pps), interval=0.2)
        if fc.poll() is not None:
            return None, None, fc.stderr.read()[-2000:]
        before = stats()
        time.sleep(window_s)
        after = stats()
        return before, after, ""
    finally:
        if fc.poll() is None:
            fc.send_signal(signal.SIGINT)
            try:
                fc.wait(30)
            except subprocess.TimeoutExpired:
                fc.kill()
                fc.wait(10)
        harness.remove_runtime_dir(cmd)


def main():
    exe = os.path.abspath(sys.argv[1])
    os.makedirs(sys.argv[2], exist_ok=True)
    tap = harness.Tap()
    cpu = min(os.sched_getaffinity(0))
    for name, pps, want_rx, window_s, lossy in (("stalled", 2000000, 10000, 1.0, True),
                                                 ("keeps up", 200, 200, 2.0, False)):
        try:
            before, after, err = run_case(exe, cpu, pps, want_rx, window_s)
        except Exception as e:  # noqa: BLE001 - report the case, go on with the next
            tap.ok(False, "%s: flowcop on the flowgen port" % name, str(e))
            continue
        if not tap.ok(before is not None, "%s: flowcop started on the flowgen port at pps=%d" % (name, pps)):
            tap.note(err)
            continue
        rx = after["port_rx_packets"][0]
        missed = after["port_rx_missed"][0]
        window_rx = rx - before["port_rx_packets"][0]
        window_missed = missed - before["port_rx_missed"][0]
        tap.note("%s (pps=%d, CPU %d alone): rx %d, missed %d; in the last %.0f s rx %d, missed %d"
                 % (name, pps, cpu, rx, missed, window_s, window_rx, window_missed))
        tap.ok(window_rx > 0, "%s: frames kept arriving" % name)
        if lossy:
            tap.ok(window_missed > 0, "%s: the frames that found the ring full show in port_rx_missed" % name)
        else:
            tap.eq(missed, 0, "%s: nothing is missed while the lcore keeps up" % name)
    tap.done()


if __name__ == "__main__":
    main()
