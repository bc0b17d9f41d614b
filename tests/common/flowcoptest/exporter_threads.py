# SPDX-License-Identifier: BSD-3-Clause
"""The exporter's HTTP threads, as the tests see them.

exporter_limits() reads the thread count and the request timeout from app/service/control/exporter.h, the one
source every test shares (test_faults' held connections, the RSS checks' warm-up).

warm_exporter() makes every HTTP thread serve a scrape before an RSS baseline is taken. Each civetweb
worker's first scrape gives that thread its own allocator cache (glibc's arena, or ASan's per-thread
allocator and quarantine): scrapes taken one at a time may leave some threads unused until after the
baseline, and their first scrape then shows as growth. Holding kHttpThreads connections at once puts
one on each thread (a connection keeps its thread until it is answered and closed).
"""

import os
import re
import socket
from urllib.parse import urlsplit

EXPORTER_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "app", "service", "control",
                          "exporter.h")
WORKER_THREAD = "civetweb-worker"  # civetweb names its workers so (prctl, 15 bytes)


def exporter_limits():
    """(HTTP threads, request timeout in seconds): Exporter::kHttpThreads and kRequestTimeoutMs."""
    with open(EXPORTER_H) as f:
        text = f.read()

    def const(name):
        m = re.search(r"static constexpr unsigned %s = (\d+);" % name, text)
        if not m:
            raise RuntimeError("%s: no constant %s" % (EXPORTER_H, name))
        return int(m.group(1))

    return const("kHttpThreads"), const("kRequestTimeoutMs") / 1000.0


def worker_run_ns(pid):
    """{tid: nanoseconds on CPU} of each civetweb worker thread of a live process ({} once it is gone)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() != WORKER_THREAD:
                    continue
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                out[int(tid)] = int(f.read().split()[0])
        except OSError:
            continue
    return out


def _scrape_all_at_once(host, port, n, timeout):
    """n connections opened before any request is sent, then one GET each: n scrapes in parallel.
    Returns how many were answered 200."""
    conns = []
    try:
        for _ in range(n):
            conns.append(socket.create_connection((host, port), timeout=timeout))
        request = b"GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode()
        for c in conns:
            c.sendall(request)
        answered = 0
        for c in conns:
            chunks = []
            while True:
                b = c.recv(65536)
                if not b:
                    break
                chunks.append(b)
            answered += b"".join(chunks).startswith(b"HTTP/1.1 200")
        return answered
    finally:
        for c in conns:
            c.close()


def warm_exporter(url, pid, rounds=3, timeout=30):
    """Scrapes through every exporter thread, kHttpThreads scrapes at once, `rounds` times.
    Returns (scrapes answered, scrapes asked, worker threads that ran, worker threads found):
    a warm-up that reached every thread has ran == found == kHttpThreads."""
    threads, _ = exporter_limits()
    parts = urlsplit(url)
    before = worker_run_ns(pid)
    answered = 0
    for _ in range(rounds):
        answered += _scrape_all_at_once(parts.hostname, parts.port, threads, timeout)
    after = worker_run_ns(pid)
    ran = sum(1 for tid, ns in after.items() if ns > before.get(tid, 0))
    return answered, rounds * threads, ran, len(after)
