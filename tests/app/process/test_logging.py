# SPDX-License-Identifier: BSD-3-Clause
"""Logging through DPDK's log (issue 13): EAL's --log-level governs flowcop's lines as it governs
DPDK's. flowcop:debug (the umbrella), flowcop.*:debug and flowcop.service:debug show the debug
lines; flowcop:error and flowcop.*:warning hide the start-up (INFO) lines and keep the warnings and
errors they allow; a later --log-level wins over an earlier one; --quiet with --metrics-addr HOST:0
still prints the chosen port, one line, whatever the log level.

usage: test_logging.py build/app/flowcop
"""
import os
import re
import signal
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest.checks import check, run_tests, wait_until  # noqa: E402
from flowcoptest.process import DEMO_PCAP, temp_dir  # noqa: E402

EXE = sys.argv[1]
TMP = temp_dir(prefix="flowcop-logging-")
DEBUG_LINE = "flowcop: helper threads run on EAL's control CPUs "
INFO_LINE = "flowcop: config: "
EXPORTER_DEBUG = re.compile(r"^flowcop: exporter stopped in [\d.]+ ms$", re.M)
METRICS_LINE = re.compile(r"^flowcop: metrics at http://127\.0\.0\.1:(\d+)/metrics$", re.M)
_runs = [0]


def run(log_levels, opts, sighup_after_rename=False):
    """flowcop on the demo capture until idle; its stderr. log_levels: --log-level values, in order.
    sighup_after_rename: once events are written, the events directory is made unwritable and
    SIGHUP sent, so the reopen fails and the writer logs an error (flowcop.events, ERR)."""
    _runs[0] += 1
    name = "r%d" % _runs[0]
    evdir = os.path.join(TMP, name)
    os.makedirs(evdir)
    events = os.path.join(evdir, "events.jsonl")
    cmd = [EXE, "--no-huge", "-m", "256", "--no-pci", "-l", "0", f"--file-prefix=fct-log-{name}-{os.getpid()}",
           f"--vdev=net_pcap0,rx_pcap={DEMO_PCAP}", "--log-level=lib.*:error", "--log-level=pmd.*:error"] + \
          [f"--log-level={level}" for level in log_levels] + \
          ["--", "--flows-per-lcore", "4096", "--events", events] + opts
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        if sighup_after_rename:
            wait_until(lambda: os.path.exists(events) and os.path.getsize(events) > 0, 30, "the first events")
            os.rename(events, events + ".1")
            os.rename(evdir, evdir + ".gone")  # the path now names a missing directory: reopen fails
            p.send_signal(signal.SIGHUP)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    check(p.returncode == 0, f"{cmd}: exit 0, got {p.returncode}:\n{err[-2000:]}")
    return err


IDLE = ["--metrics-addr", "none", "--stop-when-idle-ms", "600"]
IDLE_HUP = ["--metrics-addr", "none", "--stop-when-idle-ms", "1500"]  # time to send SIGHUP first
REOPEN_ERROR = "flowcop: events: cannot open events file"


def test_default_level_is_info():
    err = run([], IDLE)
    check(INFO_LINE in err, f"the start-up lines by default:\n{err[-1500:]}")
    check(DEBUG_LINE not in err, "no debug line by default")
    check("  packets: " in err, "the summary")


def test_debug_through_the_umbrella_and_the_types():
    for level in ("flowcop:debug", "flowcop.*:debug", "flowcop.service:debug", "flowcop,debug"):
        err = run([level], IDLE)
        check(DEBUG_LINE in err and INFO_LINE in err, f"--log-level={level} shows the debug line:\n{err[-1500:]}")
        check(not EXPORTER_DEBUG.search(err), f"--log-level={level}: no exporter runs, so no exporter line")
    err = run(["flowcop.exporter:debug"], ["--metrics-addr", "127.0.0.1:0", "--stop-when-idle-ms", "600"])
    check(EXPORTER_DEBUG.search(err), f"flowcop.exporter:debug reaches the exporter:\n{err[-1500:]}")
    check(DEBUG_LINE not in err, "and not flowcop.service")


def test_error_hides_information_and_keeps_errors():
    for level in ("flowcop:error", "flowcop.*:error", "*:error"):
        err = run([level], IDLE_HUP, sighup_after_rename=True)
        check(INFO_LINE not in err and DEBUG_LINE not in err, f"--log-level={level} hides the start-up lines:\n{err}")
        check(REOPEN_ERROR in err, f"--log-level={level} keeps the events writer's error:\n{err[-1500:]}")
        check("  packets: " in err, f"--log-level={level}: the summary is output, not a log line")
    err = run(["flowcop:crit"], IDLE_HUP, sighup_after_rename=True)
    check(REOPEN_ERROR not in err and INFO_LINE not in err, f"--log-level=flowcop:crit hides errors too:\n{err}")


def test_the_last_log_level_wins():
    err = run(["flowcop:debug", "flowcop.service:warning"], IDLE)
    check(INFO_LINE not in err and DEBUG_LINE not in err, f"a later flowcop.service:warning wins:\n{err[-1500:]}")
    err = run(["*:error", "flowcop.*:info"], IDLE)
    check(INFO_LINE in err and DEBUG_LINE not in err, f"a later flowcop.*:info wins over *:error:\n{err[-1500:]}")


def test_quiet_still_prints_the_chosen_metrics_port():
    for levels in ([], ["flowcop:error"]):
        err = run(levels, ["--quiet", "--metrics-addr", "127.0.0.1:0", "--stop-when-idle-ms", "600"])
        lines = [line for line in err.splitlines() if line.strip()]
        check(len(lines) == 1 and METRICS_LINE.match(lines[0]),
              f"--quiet {levels} with port 0: exactly the metrics line, got {lines}")
    err = run(["flowcop:error"], ["--metrics-addr", "127.0.0.1:0", "--stop-when-idle-ms", "600"])
    check(len(METRICS_LINE.findall(err)) == 1 and INFO_LINE not in err,
          f"flowcop:error with port 0: the metrics line once, no other start-up line:\n{err}")
    err = run([], ["--metrics-addr", "127.0.0.1:0", "--stop-when-idle-ms", "600"])
    check(len(METRICS_LINE.findall(err)) == 1, f"the default level: the metrics line once:\n{err[-1500:]}")
    err = run([], ["--quiet", "--metrics-addr", "none", "--stop-when-idle-ms", "600"])
    check(err.strip() == "", f"--quiet without a chosen port prints nothing: {err!r}")


run_tests([test_default_level_is_info, test_debug_through_the_umbrella_and_the_types,
           test_error_hides_information_and_keeps_errors, test_the_last_log_level_wins,
           test_quiet_still_prints_the_chosen_metrics_port])
