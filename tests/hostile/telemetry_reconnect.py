#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Measures what a fresh telemetry client gets while other clients hold DPDK's 10 telemetry slots
(issue 13; tests/reliability.md, "telemetry clients holding connections"). A measurement, not a
test: not in the default run, it prints TAP notes and numbers and fails only if flowcop does.

Usage: telemetry_reconnect.py FLOWCOP_EXE [--abusers N] [--tries N] [--within S]

flowcop runs on a flowgen port. For each mode, N abusers (default 12) connect to the telemetry
socket, read the greeting and send nothing:
  held:      each holds one connection (retrying every 50 ms until it is greeted) and does not
             come back once flowcop's telemetry guard (app/service/control/telemetry_guard.h) closes it:
             the bounded case;
  reconnect: each connects again as soon as its connection is closed (by the guard, or by DPDK
             at once when all 10 slots are taken), in a tight loop.
Meanwhile a fresh client, as dpdk-telemetry.py or flowcopctl would, tries every 50 ms to connect,
be greeted and get /flowcop/stats answered, for at most --within seconds; --tries times in a row.
Printed per mode: how many tries succeeded and the time each took.
"""

import argparse
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "common"))
sys.dont_write_bytecode = True

import hostile  # noqa: E402
from hostile import harness  # noqa: E402


class Abusers:
    def __init__(self, path, n, reconnect):
        self.stop = threading.Event()
        self.connects = [0] * n
        self.greeted = [0] * n
        self.threads = [threading.Thread(target=self._run, args=(i, path, reconnect), daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def _run(self, i, path, reconnect):
        held_once = False
        while not self.stop.is_set() and (reconnect or not held_once):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.settimeout(0.2)
            try:
                s.connect(path)
                self.connects[i] += 1
                if s.recv(1024):
                    self.greeted[i] += 1
                    held_once = True
                    while not self.stop.is_set():  # hold it, idle, until flowcop closes it
                        try:
                            if s.recv(1024) == b"":
                                break
                        except socket.timeout:
                            continue
                elif not reconnect:
                    time.sleep(0.05)  # all 10 slots taken: a polite client waits before it tries again
            except (BlockingIOError, socket.timeout):
                pass  # DPDK's backlog of one is full: try again
            except OSError:
                pass
            finally:
                s.close()

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=5)


def fresh_client(path, within):
    """Seconds until a new client is greeted and answered (retrying every 50 ms), or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < within:
        try:
            t = hostile.Telemetry(path, timeout=1.0)
        except OSError:
            time.sleep(0.05)
            continue
        try:
            if t.hello is not None and isinstance(t("/flowcop/stats"), dict):
                return time.monotonic() - t0
        except (OSError, ValueError):
            pass
        finally:
            t.close()
        time.sleep(0.05)
    return None


def measure(tap, path, a):
    for mode in ("held", "reconnect"):
        abuse = Abusers(path, a.abusers, mode == "reconnect")
        try:
            time.sleep(1.0)
            took = [fresh_client(path, a.within) for _ in range(a.tries)]
        finally:
            abuse.close()
        ok = [t for t in took if t is not None]
        tap.note("%s: %d abusers (%d connections, %d greeted); a fresh client succeeded %d of %d times within "
                 "%.0f s; seconds: %s" % (mode, a.abusers, sum(abuse.connects), sum(abuse.greeted), len(ok),
                                          len(took), a.within, [t and round(t, 2) for t in took]))
        time.sleep(3.0)  # the guard closes what is left; the next mode starts from a free socket


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exe")
    ap.add_argument("--abusers", type=int, default=12)
    ap.add_argument("--tries", type=int, default=5)
    ap.add_argument("--within", type=float, default=10.0)
    a = ap.parse_args()
    tap = harness.Tap()
    opts = ["--clock", "packet", "--flowgen", "flows=200,lifetime=1,pps=5000,realtime=1,seed=14",
            "--metrics-addr", "none"]
    with hostile.Running(a.exe, [], opts, timeout=60) as fc:
        if tap.ok(fc.alive(), "flowcop runs", fc.stderr[-2000:]):
            measure(tap, hostile.telemetry_path(fc.pid), a)
    tap.eq(fc.rc, 0, "flowcop exits 0")
    tap.done()

if __name__ == "__main__":
    main()
