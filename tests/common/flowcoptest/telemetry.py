# SPDX-License-Identifier: BSD-3-Clause
"""A client for DPDK's telemetry socket (the /flowcop/* commands), stdlib only."""
import json
import socket
import time

from .checks import Fail, check


def telemetry_connect(path, timeout=5):
    """A connected telemetry socket with `timeout` set. DPDK listens with a backlog of one, and a
    unix connect() on a socket with a timeout fails with EAGAIN (not EINPROGRESS) while the backlog
    is full, so clients arriving together retry until `timeout` runs out."""
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(timeout)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.005)
        except BaseException:
            s.close()
            raise


def telemetry_raw(path, request, timeout=5):
    """Sends one request (bytes) on a fresh connection; returns the raw reply bytes."""
    s = telemetry_connect(path, timeout)
    try:
        hello = json.loads(s.recv(1024))
        check("max_output_len" in hello, f"unexpected telemetry greeting {hello}")
        s.send(request)
        return s.recv(1 << 17)
    finally:
        s.close()


def telemetry(path, request, timeout=5):
    """One request -> the value under its command key (the reply must be valid JSON)."""
    raw = request.encode() if isinstance(request, str) else request
    reply = telemetry_raw(path, raw, timeout)
    try:
        doc = json.loads(reply)
    except ValueError as e:
        raise Fail(f"reply to {raw[:80]!r} is not JSON ({e}): {reply[:300]!r}")
    check(isinstance(doc, dict) and len(doc) == 1, f"reply to {raw[:80]!r} is not one command object: {doc}")
    return next(iter(doc.values()))
