# SPDX-License-Identifier: BSD-3-Clause
"""The exporter stops within 200 ms of the summary (issue 13; it took 1-2 s: civetweb's accept loop
saw its stop flag only when a 2 s poll() ran out).

usage: test_exporter_stop.py build/app/flowcop

Measured from outside without touching the exporter (a connection would wake civetweb and hide the
delay): from the summary's first line on stderr to the moment the listening socket is gone from
/proc/net/tcp, polled every millisecond. Three runs; the median must be under 200 ms.
"""
import signal
import statistics
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest.checks import check, run_tests, wait_until  # noqa: E402
from flowcoptest.exposition import scrape  # noqa: E402
from flowcoptest.process import DEMO_PCAP, Flowcop  # noqa: E402

EXE = sys.argv[1]
LIMIT_MS = 200


def listening(port):
    """True while a TCP socket listens on 127.0.0.1:port (state 0A in /proc/net/tcp)."""
    want = "0100007F:%04X" % port
    with open("/proc/net/tcp") as f:
        next(f)
        return any(l.split()[1] == want and l.split()[3] == "0A" for l in f)


def one_stop(n):
    fc = Flowcop(EXE, DEMO_PCAP, ["--metrics-addr", "127.0.0.1:0"], f"stop{n}")
    with fc:
        scrape(fc.url)
        port = int(fc.url.rsplit(":", 1)[1].split("/")[0])
        check(listening(port), f"port {port} is listed as listening in /proc/net/tcp")
        fc.proc.send_signal(signal.SIGINT)
        wait_until(lambda: "flowcop: stopped after" in fc.stderr, 30, "the summary", interval=0.001)
        t0 = time.monotonic()
        while listening(port) and time.monotonic() - t0 < 10:
            time.sleep(0.001)
        ms = (time.monotonic() - t0) * 1000
        check(fc.wait_exit(30) == 0, "exit 0")
    return ms


def test_the_exporter_stops_within_200_ms_of_the_summary():
    times = [one_stop(n) for n in range(3)]
    print("# the exporter stopped listening %s ms after the summary" % ", ".join("%.0f" % t for t in times))
    check(statistics.median(times) < LIMIT_MS, f"median {statistics.median(times):.0f} ms >= {LIMIT_MS} ms: {times}")


run_tests([test_the_exporter_stops_within_200_ms_of_the_summary])
