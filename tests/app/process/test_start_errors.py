# SPDX-License-Identifier: BSD-3-Clause
"""Start-up error texts (issue 13): a taken file prefix is named with what to do (EAL said
"EAL initialisation failed: Success"), a flowcop option before '--' gets flowcop's hint as the last
line, after EAL's usage text, and --help states both exit codes.

usage: test_start_errors.py build/app/flowcop
"""
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest.checks import check, run_tests  # noqa: E402
from flowcoptest.process import DEMO_PCAP, Flowcop  # noqa: E402

EXE = sys.argv[1]


def run(argv):
    """exit code and stdout+stderr through one pipe, in the order the process wrote them."""
    p = subprocess.run([EXE] + argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    return p.returncode, [l for l in p.stdout.splitlines() if l.strip()]


def test_a_taken_file_prefix_is_named():
    with Flowcop(EXE, DEMO_PCAP, ["--metrics-addr", "127.0.0.1:0", "--flows-per-lcore", "1024"], "taken",
                 lcores="1") as first:
        rc, out = run(["--no-huge", "-m", "128", "--no-pci", "-l", "0", f"--file-prefix={first.prefix}",
                       "--vdev=net_null0", "--", "--metrics-addr", "none", "--flows-per-lcore", "1024"])
        first.stop()
    last = out[-1] if out else ""
    check(rc == 1, f"exit 1, got {rc}: {out[-5:]}")
    check("Success" not in last, f"no 'Success': {last!r}")
    for want in (f"'{first.prefix}'", "--file-prefix", f"pid {first.proc.pid}"):
        check(want in last, f"the last line names {want}: {last!r}")


def test_a_flowcop_option_before_the_separator_gets_the_hint_last():
    rc, out = run(["--no-huge", "-m", "128", "--no-pci", "-l", "0", "--file-prefix=fct-nosep", "--vdev=net_null0",
                   "--metrics-addr", "none"])
    check(rc == 2, f"exit 2 (a misplaced flowcop option is a bad flowcop option), got {rc}")
    check(any("EAL common options" in l for l in out), "EAL's usage text is printed")
    last = out[-1] if out else ""
    check("--metrics-addr" in last and "after '--'" in last and last.startswith("flowcop: "),
          f"the last line is flowcop's hint naming --metrics-addr: {last!r}")


def test_help_states_both_exit_codes():
    p = subprocess.run([EXE, "--help"], capture_output=True, text=True, timeout=30)
    text = " ".join(p.stdout.split())
    check(p.returncode == 0, "--help exits 0")
    check(re.search(r"Exit status: 0 .*; 1 when EAL.*; 2 for a bad flowcop option", text), text[:800])
    check("--version (-V)" in text, "--help mentions --version")


run_tests([test_a_taken_file_prefix_is_named, test_a_flowcop_option_before_the_separator_gets_the_hint_last,
           test_help_states_both_exit_codes])
