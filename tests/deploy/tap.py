# SPDX-License-Identifier: BSD-3-Clause
"""A minimal TAP runner for the deploy tests (stdlib only).

run(tests) runs each callable, prints one TAP line per test ("ok N - name" or "not ok N - name"
followed by the failure as a YAML-less diagnostic), and exits 1 if any failed. A test skips by
raising Skip(reason): "ok N - name # SKIP reason", which meson counts as skipped.
"""
import sys
import traceback


class Fail(AssertionError):
    pass


class Skip(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def run(tests):
    print(f"1..{len(tests)}", flush=True)
    failed = 0
    for i, t in enumerate(tests, 1):
        name = (t.__doc__ or t.__name__).strip().splitlines()[0]
        try:
            t()
        except Skip as s:
            print(f"ok {i} - {name} # SKIP {s}", flush=True)
            continue
        except Exception as e:  # every failure, assertion or not, is this test's failure
            failed += 1
            print(f"not ok {i} - {name}", flush=True)
            detail = str(e) if isinstance(e, Fail) else traceback.format_exc()
            for line in detail.splitlines():
                print(f"# {line}", flush=True)
            continue
        print(f"ok {i} - {name}", flush=True)
    sys.exit(1 if failed else 0)
