# SPDX-License-Identifier: BSD-3-Clause
"""Assertions and bounded waits for the tests that run flowcop (stdlib only)."""
import time


class Fail(AssertionError):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def wait_until(pred, timeout, what, interval=0.1):
    """Polls pred() until it returns a true value (returned) or `timeout` seconds pass (Fail)."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except (OSError, ValueError, KeyError) as e:  # not up yet, or a reply not there yet
            last_exc = e
        if time.monotonic() >= deadline:
            raise Fail(f"timed out after {timeout} s waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))
        time.sleep(interval)


def run_tests(tests):
    """Runs test functions in order, TAP-free: prints one line each, exits 1 on the first failure."""
    for t in tests:
        start = time.monotonic()
        try:
            t()
        except Exception as e:  # noqa: BLE001 - report any failure with its test's name
            print(f"FAIL {t.__name__}: {type(e).__name__}: {e}", flush=True)
            raise SystemExit(1)
        print(f"ok   {t.__name__} ({time.monotonic() - start:.1f} s)", flush=True)
