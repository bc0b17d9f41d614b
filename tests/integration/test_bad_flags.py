#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Bad command lines through the real flowcop binary: one case per validation rule, each must
exit 2 with exactly one line on stderr that names the flag (and the offending value), and nothing
on stdout. Rules checked after EAL is up (a port already bound, an unwritable --events path,
--clock packet on a port without timestamps, an odd port count in inline mode, a bad --flowgen
key, fewer --mbufs than the ports need) run with EAL's own logging at error level, so the one line is flowcop's. --help (and -h,
also after '--') exits 0 without EAL and documents every option the sources define, and every
default it shows is accepted back as a value.

Usage: test_bad_flags.py FLOWCOP_EXE SOURCE_ROOT TMPDIR
"""

import os
import re
import socket
import subprocess
import sys
import time


from flowcoptest import harness  # noqa: E402


def run(cmd, timeout=20):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or "", e.stderr or "", timeout


def options_from_sources(root):
    """Every long option the parser's table defines, read from the sources (not from --help)."""
    with open(os.path.join(root, "app", "service", "options", "option_table.cpp")) as f:
        table = f.read()
    # --tcp-timeout-<state> exists for every state tcpstate names after "none" (options.h).
    with open(os.path.join(root, "lib", "tcpstate", "names.cpp")) as f:
        names_cpp = f.read()
    names = set(re.findall(r'"(--[a-z][a-z-]*)"', table))
    names.discard("--tcp-timeout-")
    m = re.search(r"kNames\[kStateCount\] = \{(.*?)\};", names_cpp, re.S)
    states = [flag for _, flag in re.findall(r'\{"([A-Z_0-9]+)", "([a-z_0-9]+)"\}', m.group(1))][1:] if m else []
    names |= {"--tcp-timeout-" + s.replace("_", "-") for s in states}  # spelled as flags are (the alias keeps "_")
    # The UDP/ICMP/generic timeouts' names are protostate's (one source, option_table.cpp loops over them).
    with open(os.path.join(root, "lib", "protostate", "proto_state.cpp")) as f:
        m = re.search(r"kTimeoutFlagNames\[\] = \{(.*?)\};", f.read(), re.S)
    names |= {"--" + n for n in re.findall(r'"([a-z-]+)"', m.group(1))} if m else set()
    return names, states


def parse_help(text):
    """{option: (metavar, default or None)} from the help's option blocks."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^  (-\w, )?(--[a-z][a-z_0-9-]*)(?: (\S+))?$", line)
        if m:
            cur = m.group(2)
            out[cur] = [m.group(3), None]
            continue
        m = re.match(r"^\s+default: (.*)$", line)
        if m and cur:
            out[cur][1] = m.group(1)
    return {k: tuple(v) for k, v in out.items()}


def main():
    exe, root, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    eal = lambda vdevs: harness.eal_args(vdevs, memory_mb=256)  # noqa: E731

    def bad(name, flow_args, flag, value=None, vdevs=None, want_rc=2):
        """vdevs None: the error must come before EAL starts (no EAL arguments needed)."""
        cmd = [exe] + (eal(vdevs) if vdevs is not None else []) + ["--"] + flow_args
        rc, out, err, secs = run(cmd)
        lines = err.splitlines()
        tap.ok(rc == want_rc and len(lines) == 1 and out == "" and secs < 15,
               "%s: exit %d, one stderr line, nothing on stdout" % (name, want_rc),
               "rc %r, %.1f s, stdout %r\nstderr:\n%s" % (rc, secs, out[:200], err[:2000]))
        line = lines[0] if lines else ""
        tap.ok(line.startswith("flowcop: ") and flag in line and (value is None or value in line),
               "%s: the line names %s%s" % (name, flag, (" and " + value) if value else ""), line)

    # Parse-time rules (options.h): no EAL needed, so nothing but flowcop can print.
    bad("not a power of two", ["--wheel-buckets", "1000"], "--wheel-buckets", "1000")
    bad("not a power of two (events ring)", ["--events-ring", "100"], "--events-ring", "100")
    bad("zero fire budget", ["--timeout-budget", "0"], "--timeout-budget", "0")
    bad("zero visit budget factor", ["--visit-budget-factor", "0"], "--visit-budget-factor", "0")
    bad("zero default inactivity timeout", ["--default-inactivity-timeout", "0"], "--default-inactivity-timeout")
    bad("below the minimum", ["--flows-per-lcore", "1023"], "--flows-per-lcore", "1023")
    bad("above the maximum", ["--tick-ms", "60001"], "--tick-ms", "60001")
    bad("timeout above one year", ["--tcp-timeout-established", "31536001"], "--tcp-timeout-established")
    bad("overflowing number", ["--active-timeout", "99999999999999999999999"], "--active-timeout")
    bad("signed number", ["--tick-ms", "-1"], "--tick-ms", "-1")
    bad("number with trailing text", ["--tick-ms=10ms"], "--tick-ms", "10ms")
    bad("unknown TCP state", ["--tcp-timeout-bogus", "5"], "--tcp-timeout-bogus", "bogus")
    bad("the no-flow state has no timeout", ["--tcp-timeout-none", "5"], "--tcp-timeout-none")
    bad("unknown option", ["--frobnicate"], "--frobnicate")
    bad("positional argument", ["stray"], "stray")
    bad("missing value", ["--mode"], "--mode")
    bad("an option is not a value", ["--events", "--quiet"], "--events")
    bad("a bad value given after a good one (the later one counts)", ["--tick-ms", "5", "--tick-ms", "0"], "--tick-ms", "0")
    bad("bad choice", ["--mode", "bridge"], "--mode", "bridge")
    bad("bad clock", ["--clock", "ptp"], "--clock", "ptp")
    bad("bad switch", ["--loose-pickup", "yes"], "--loose-pickup", "yes")
    bad("empty path", ["--events="], "--events")
    bad("unknown event kind", ["--events-filter", "new,bogus"], "--events-filter", "bogus")
    bad("unknown protocol in the events filter", ["--events-filter", "new:tcp,xyz"], "--events-filter", "xyz")
    bad("empty events filter", ["--events-filter="], "--events-filter")
    bad("unparsable address", ["--metrics-addr", "300.1.2.3:80"], "--metrics-addr", "300.1.2.3")
    bad("address without port", ["--metrics-addr", "127.0.0.1"], "--metrics-addr", "127.0.0.1")
    bad("unbracketed IPv6", ["--metrics-addr", "::1:9781"], "--metrics-addr", "::1:9781")
    bad("port out of range", ["--metrics-addr", "127.0.0.1:65536"], "--metrics-addr", "65536")
    bad("host name", ["--metrics-addr", "example.com:80"], "--metrics-addr", "example.com")
    bad("fewer mbufs than any start needs", ["--mbufs", "7167"], "--mbufs", "7167")
    bad("mbufs neither auto nor a number", ["--mbufs", "lots"], "--mbufs", "lots")
    bad("data room below headroom + 64", ["--mbuf-data-room", "128"], "--mbuf-data-room", "128")
    bad("data room above 65535", ["--mbuf-data-room", "65536"], "--mbuf-data-room", "65536")

    # Rules checked once EAL and the ports are up.
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        bad("port in use", ["--metrics-addr", "127.0.0.1:%d" % port], "--metrics-addr", str(port),
            vdevs=["net_null0"])
    finally:
        s.close()
    missing = os.path.join(tmp, "no_such_dir", "events.jsonl")
    bad("events path in a missing directory", ["--events", missing, "--metrics-addr", "none"], "--events", missing,
        vdevs=["net_null0"])
    bad("events path is a directory", ["--events", tmp, "--metrics-addr", "none"], "--events", tmp,
        vdevs=["net_null0"])
    bad("--clock packet on a port without timestamps", ["--clock", "packet", "--metrics-addr", "none"], "--clock",
        vdevs=["net_null0"])
    bad("inline mode with one port", ["--mode", "inline", "--metrics-addr", "none"], "--mode", vdevs=["net_null0"])
    bad("inline mode with three ports", ["--mode", "inline", "--metrics-addr", "none"], "--mode",
        vdevs=["net_null0", "net_null1", "net_null2"])
    bad("unknown --flowgen key", ["--flowgen", "bogus=1", "--metrics-addr", "none"], "--flowgen", "bogus",
        vdevs=["net_null0"])
    bad("too few mbufs for two ports", ["--mbufs", "9000", "--metrics-addr", "none"], "--mbufs", "9216",
        vdevs=["net_null0", "net_null1"])
    # --policy: read and compiled once the ports are known (an iif name is a port's); file:line:column.
    policy = os.path.join(tmp, "bad_policy.nft")
    with open(policy, "w") as f:
        f.write("ct state established,related accept\ntcp dport ssh accept\n")
    bad("a policy that does not parse", ["--policy", policy, "--metrics-addr", "none"], "--policy",
        policy + ":2:11: expected a port number or range after 'dport', found 'ssh'", vdevs=["net_null0"])
    with open(policy, "w") as f:
        f.write("iif eth9 drop\n")
    bad("a policy naming a port that does not exist", ["--policy", policy, "--metrics-addr", "none"], "--policy",
        policy + ":1:5:", vdevs=["net_null0"])
    missing_policy = os.path.join(tmp, "no_such_policy.nft")
    bad("a policy file that does not exist", ["--policy", missing_policy, "--metrics-addr", "none"], "--policy",
        missing_policy + ": cannot open", vdevs=["net_null0"])

    # --help: no EAL (no hugepages, no root needed), every option documented.
    rc, out, err, secs = run([exe, "--help"])
    tap.ok(rc == 0 and err == "" and "Usage:" in out and secs < 2,
           "--help exits 0 at once, without EAL: usage on stdout, no EAL line on stderr",
           "rc %r, %.1f s, stderr %r" % (rc, secs, err[:500]))
    for args in (["-h"], ["--no-huge", "--", "--help"], ["--", "-h"]):
        rc2, out2, err2, _ = run([exe] + args)
        tap.ok(rc2 == 0 and out2 == out and err2 == "", "%s prints the same help and exits 0" % " ".join(args))
    names, states = options_from_sources(root)
    helped = parse_help(out)
    tap.ok(len(states) == 9, "the sources define nine TCP states with a timeout flag", states)
    tap.eq(sorted(names - set(helped)), [], "every option the parser table defines is in --help")
    tap.eq(sorted(set(helped) - names), [], "--help lists no option the parser table does not define")
    no_default = sorted(n for n, (mv, d) in helped.items() if mv and d is None)
    tap.eq(no_default, [], "every option that takes a value shows its default")
    back = []
    for n, (mv, d) in sorted(helped.items()):
        if mv and d is not None:
            back.append("%s=%s" % (n, d))
    rc, out, err, _ = run([exe, "--"] + back + ["--frobnicate"])
    tap.ok(rc == 2 and "--frobnicate" in err and len(err.splitlines()) == 1,
           "every default --help shows is accepted back as that option's value (%d options)" % len(back), err)
    tap.done()


if __name__ == "__main__":
    main()
