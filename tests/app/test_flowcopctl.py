# SPDX-License-Identifier: BSD-3-Clause
"""flowcopctl against a running flowcop: the whole table listed, counted, got, deleted by filter and
flushed through the control socket (app/service/control/ctl_server.h, app/flowcopctl/flowcopctl).

usage: test_flowcopctl.py build/app/flowcop app/flowcopctl/flowcopctl [FLOWS]

Two instances, each under --clock tsc so the flows stay open while the test runs:
  1. a real capture (tests/data/captures, 80 TCP connections over IPv4 and IPv6): every listed flow is
     found by -G in both directions, the listing agrees with /metrics and with the telemetry listing;
  2. the synthetic port (--flowgen) with FLOWS concurrent flows (default 10^5): -L and -C agree with
     flowcop_flows_active, every flow is listed once, -G finds a sample of them, -D with a source prefix
     kills exactly the matching flows, -F empties the table; and abusive clients (garbage, too many
     connections, a reader that stops reading) get counted refusals while others are served.
"""
import ipaddress
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from flowcoptest import layouts  # noqa: E402
from flowcoptest.checks import Fail, check, run_tests, wait_until  # noqa: E402
from flowcoptest.exposition import Scrape  # noqa: E402
from flowcoptest.process import DEMO_PCAP, Flowcop, temp_dir  # noqa: E402
from flowcoptest.telemetry import telemetry  # noqa: E402

EXE, CTL = sys.argv[1], sys.argv[2]
FLOWS = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
# All FLOWS flows start within 2.5 s and live "forever"; the port stops after 16 packets per flow (4 s of
# wall time), once each has had its handshake and a few data turns, so the table then holds exactly the
# flows flowgen keeps open. The port is paced (realtime=1, FLOWS * 4 packets/s) so that each flow's packets
# are spread over seconds: on two lcores half of them go through a 2048-slot handoff ring, and unpaced (all
# of a flow's packets within 0.1 s at 10 Mpps) a loaded machine (load 10-15) stalled the second lcore long
# enough to lose whole flows (68% tracked). Paced, a stall loses a few packets of many flows, and loose
# pickup tracks each from its next one.
FLOW_PACKETS = FLOWS * 16
FLOWGEN = (f"flows={FLOWS},new_flow_rate={FLOWS * 4 // 10},pps={FLOWS * 4},realtime=1,lifetime=1000000,"
           f"idle_pct=0,rst_pct=0,ipv6_pct=20,packets={FLOW_PACKETS},seed=17")


def ctl(fc, *args, check_rc=0, timeout=300):
    r = subprocess.run([sys.executable, CTL, f"--file-prefix={fc.prefix}"] + list(args), capture_output=True,
                       text=True, timeout=timeout)
    if check_rc is not None and r.returncode != check_rc:
        raise Fail(f"flowcopctl {' '.join(args)}: exit {r.returncode}, expected {check_rc}\n{r.stderr}")
    return r


def listing(fc, *filters):
    r = ctl(fc, "-L", "-o", "json", *filters)
    return [json.loads(line) for line in r.stdout.splitlines()]


def active(fc):
    return int(Scrape(fc.url).total("flowcop_flows_active"))


def raw_request(fc, line, timeout=30):
    """One request over the socket itself; the reply's JSON objects."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(fc.ctl_socket_path)
        s.sendall(line)
        buf = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    return [json.loads(x) for x in buf.splitlines() if x]


def stable_active(fc, what, rx_packets=0):
    """Waits until the port has received rx_packets (flowgen's packets=: then no flow can still start) and the
    table stops changing; returns flows_active. A paced port may hold its flow count for a second and then start
    one more flow (flowgen replaces some), so a steady count alone is not the end."""
    seen = []

    def settled():
        scrape = Scrape(fc.url)
        if int(scrape.total("flowcop_port_rx_packets_total")) < rx_packets:
            return None
        seen.append(int(scrape.total("flowcop_flows_active")))
        return len(seen) >= 3 and seen[-1] == seen[-2] == seen[-3] and seen[-1] > 0 and seen[-1]
    return wait_until(settled, 120, what, interval=0.5)


def get_args(f, reverse=False):
    a = ["-p", f["proto"], "-s", f["src"], "-d", f["dst"], "--sport", str(f["sport"]), "--dport", str(f["dport"])]
    if reverse:
        a = ["-p", f["proto"], "-s", f["dst"], "-d", f["src"], "--sport", str(f["dport"]), "--dport", str(f["sport"])]
    if f.get("vlan"):
        a += ["--vlan", ",".join(map(str, f["vlan"]))]
    return a


# ---- 1. a real capture -------------------------------------------------------------------------------

def real_capture(lcores):
    # Closed flows wait in TIME_WAIT: an hour, so none ends while the test runs, however slow.
    with Flowcop(EXE, DEMO_PCAP, ["--clock", "tsc", "--stop-when-idle-ms", "0", "--metrics-addr", "127.0.0.1:0",
                                  "--tcp-timeout-time-wait", "3600"], "ctlreal", lcores=lcores) as fc:
        n = stable_active(fc, "the capture to be tracked")
        flows = listing(fc)
        check(len(flows) == n, f"listed {len(flows)}, flowcop_flows_active {n}")
        check(len({fid(f) for f in flows}) == n, "flow ids are unique (per lcore)")
        check(all(f.get("in_port") == 0 for f in flows), "every flow's in_port is the capture's port, 0")
        check(all(isinstance(f["proto"], str) for f in flows) and any(f["proto"] == "2" for f in flows),
              f"proto is a string, IGMP's the number: {sorted({f['proto'] for f in flows})}")
        family_filters(fc, flows)
        # conntrack -D that deleted nothing: exit 1, nothing on stdout.
        r = ctl(fc, "-D", "-s", "198.51.100.0/24", check_rc=1)
        check(r.stdout == "" and "0 flow entries have been killed" in r.stderr, f"-D of nothing: {r.stderr}")
        update_by_filters(fc, flows)
        # -E ends with exit 0 on Ctrl-C and on SIGTERM, as conntrack -E.
        for sig in (signal.SIGINT, signal.SIGTERM):
            follower = subprocess.Popen([sys.executable, CTL, f"--file-prefix={fc.prefix}", "-E"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wait_until(lambda: followers(fc) == 1, 30, "the follower to be following")
            follower.send_signal(sig)
            _, err = follower.communicate(timeout=30)
            check(follower.returncode == 0 and "flow events have been shown" in err,
                  f"-E ended by {sig!r}: exit {follower.returncode} {err}")
            wait_until(lambda: followers(fc) == 0, 30, "the follower to be gone")
        check(ctl(fc, "-C").stdout.strip() == str(n), "-C")
        # Every listed flow, by its exact tuple, either direction: the same flow (through flowcopctl for a
        # few, the socket itself for all).
        for f in flows[:4]:
            for rev in (False, True):
                got = json.loads(ctl(fc, "-G", "-o", "json", *get_args(f, rev)).stdout)
                check(got["flow_id"] == f["flow_id"], f"-G {f} (reverse={rev}) found {got}")
        for f in flows:
            for s, d, sp, dp in ((f["src"], f["dst"], f["sport"], f["dport"]),
                                 (f["dst"], f["src"], f["dport"], f["sport"])):
                # proto= too: the capture's UDP and IGMP conversations are flows (issue 15); get defaults to tcp.
                r = raw_request(fc, f"get proto={f['proto']} src={s} dst={d} sport={sp} dport={dp}\n".encode())
                check(r[-1] == {"done": "get", "flows": 1} and r[0]["flow_id"] == f["flow_id"], f"get {f}: {r}")
        # conntrack's flags: exactly one of SEEN_REPLY and UNREPLIED; ASSURED only with SEEN_REPLY.
        for f in flows:
            fl = f["flags"]
            check(("SEEN_REPLY" in fl) != ("UNREPLIED" in fl), f"flags {fl}")
            check("ASSURED" not in fl or "SEEN_REPLY" in fl, f"flags {fl}")
            check("SEEN_REPLY" not in fl or f["packets_reply"] > 0, f"flags {fl} vs packets {f}")
        # The telemetry listing shows the same flags for the same flows.
        tel = telemetry(fc.socket_path, "/flowcop/flows,limit=32")
        by_key = {(f["src"], f["sport"], f["dst"], f["dport"]): f for f in flows}
        for entry in tel:
            t = dict(x.split("=", 1) for x in entry)
            f = by_key[(t["src"], int(t["sport"]), t["dst"], int(t["dport"]))]
            check(t["flags"].split(",") == f["flags"], f"telemetry flags {t['flags']} vs {f['flags']}")
        # The default output is conntrack's line.
        text = ctl(fc, "-L")
        lines = text.stdout.splitlines()
        check(len(lines) == n and f"{n} flow entries have been shown" in text.stderr, f"-L: {text.stderr}")
        # conntrack's protocol columns: a state for TCP only, ports for TCP and UDP, none for IGMP (number 2).
        heads = {"tcp": "tcp      6 ", "udp": "udp      17 ", "2": "2        2 "}
        check(all(any(line.startswith(h) for h in heads.values()) and " src=" in line
                  and (" lcore=0" in line or " lcore=1" in line) for line in lines), f"-L lines {lines[:2]}")
        check(sorted(line.split()[0] for line in lines) == sorted(f["proto"] for f in flows),
              "-L: one line per flow, each of its flow's protocol")
        check(all(("sport=" in line) == (not line.startswith("2 ")) for line in lines), "-L: ports where conntrack has them")
        # A flow that is not there: exit 1.
        r = ctl(fc, "-G", "-s", "192.0.2.1", "-d", "192.0.2.2", "--sport", "1", "--dport", "2", check_rc=1)
        check("no such flow" in r.stderr, r.stderr)
        update_timeouts(fc, [f for f in flows if f["proto"] == "tcp"])
        delete_one_family(fc)


def test_real_capture_one_lcore():
    real_capture("0")


def test_real_capture_two_lcores():
    real_capture("0-1" if os.cpu_count() > 1 else "0")


def fid(f):
    """A flow's identity across lcores (ids are per lcore)."""
    return f["lcore"], f["flow_id"]


def followers(fc):
    return json.loads(ctl(fc, "-S", "-o", "json").stdout.splitlines()[-1])["ctl_followers"]


def update_by_filters(fc, flows):
    """conntrack -U with filters: every matching flow's timeout set, each printed; none matching exits 1."""
    port = max({f["dport"] for f in flows if f["proto"] == "tcp"},
               key=lambda p: sum(1 for f in flows if f["proto"] == "tcp" and f["dport"] == p))
    want = {fid(f) for f in flows if f["proto"] == "tcp" and f["dport"] == port}
    r = ctl(fc, "-U", "-p", "tcp", "--dport", str(port), "-t", "50000", "-o", "json")
    got = [json.loads(line) for line in r.stdout.splitlines()]
    check({fid(f) for f in got} == want and all(49_990 <= f["timeout"] <= 50_000 for f in got)
          and f"{len(want)} flow entries have been updated" in r.stderr, f"-U --dport {port}: {r.stderr}")
    text = ctl(fc, "-U", "-p", "tcp", "--dport", str(port), "-t", "60000").stdout.splitlines()
    check(len(text) == len(want) and all(line.startswith("tcp      6 ") for line in text), f"-U text: {text[:2]}")
    r = ctl(fc, "-U", "-s", "198.51.100.0/24", "-t", "5", check_rc=1)
    check("no flow matched" in r.stderr, r.stderr)
    # Back to the state's timeout for the rest of the test: a packet would clear it; a long one does no harm.


def family_filters(fc, flows):
    """An address filter matches its own family only (issue 28: IPv4 is held IPv4-mapped, and ::/0 or ::ffff:0:0/96
    used to select every IPv4 flow): at every prefix length of the mapped range's base and of a flow's own address
    of each family, as source and destination, the count flowcop gives is the listing's, filtered here by family
    and prefix."""
    addrs = {k: [ipaddress.ip_address(f[k]) for f in flows] for k in ("src", "dst")}
    v4 = [f for f in flows if ":" not in f["src"]]
    v6 = [f for f in flows if ":" in f["src"]]
    check(len(v4) > 0 and len(v6) > 0, f"the capture has both families: {len(v4)} IPv4, {len(v6)} IPv6 flows")
    bases = [ipaddress.ip_address("::ffff:0:0"), ipaddress.ip_address("::"), ipaddress.ip_address(v6[0]["src"]),
             ipaddress.ip_address(v4[0]["src"]), ipaddress.ip_address(v4[0]["dst"])]
    for base in bases:
        for bits in range(base.max_prefixlen + 1):
            net = ipaddress.ip_network((base, bits), strict=False)
            for key in ("src", "dst"):
                want = sum(1 for a in addrs[key] if a.version == net.version and a in net)
                r = raw_request(fc, f"count {key}={net}\n".encode())
                check(r == [{"done": "count", "flows": want}], f"count {key}={net}: {r}, expected {want}")
    for family, want in (("ipv4", len(v4)), ("ipv6", len(v6))):
        check(ctl(fc, "-C", "-f", family).stdout.strip() == str(want), f"-C -f {family}")
    # The report's prefixes, through flowcopctl: none selects an IPv4 flow.
    for prefix in ("::/0", "::/1", "::/8", "::ffff:0:0/96"):
        got = {fid(f) for f in listing(fc, "-s", prefix)}
        check(got == {fid(f) for f in v6 if ipaddress.ip_address(f["src"]) in ipaddress.ip_network(prefix)},
              f"-L -s {prefix}: {len(got)} flows")
    # The report's delete: a source and a destination of two families select nothing; it is refused.
    r = ctl(fc, "-D", "-s", "::ffff:0:0/96", "-d", "172.16.0.0/16", check_rc=None)
    check(r.returncode == 2 and "a flow's addresses are of one family" in r.stderr,
          f"-D of mixed families: {r.returncode} {r.stderr}")
    r = raw_request(fc, f"get src=::ffff:{v4[0]['src']} dst=::ffff:{v4[0]['dst']} sport={v4[0]['sport']} "
                        f"dport={v4[0]['dport']}\n".encode())
    check("IPv4-mapped" in r[0].get("error", ""), f"get by IPv4-mapped addresses: {r}")
    check(int(ctl(fc, "-C").stdout) == len(flows), "nothing was deleted")


def delete_one_family(fc):
    """-D -s ::/0 kills the IPv6 flows and no IPv4 one; a follower of -E -s ::/0 sees each destroy, a follower of
    -E -f ipv4 none."""
    flows = listing(fc)
    v6 = {fid(f) for f in flows if ":" in f["src"]}
    followers = []
    for request in (b"events kinds=destroy src=::/0\n", b"events kinds=destroy family=ipv4\n"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(fc.ctl_socket_path)
        s.sendall(request)
        first, buf = read_event(s, b"", time.monotonic() + 30, "the follower's first line")
        check(first == {"following": "events"}, f"follow: {first}")
        followers.append((s, buf))
    r = ctl(fc, "-D", "-s", "::/0", "-o", "json", check_rc=None)
    check(json.loads(r.stdout.splitlines()[-1])["killed"] == len(v6), f"-D -s ::/0: {r.stdout[-200:]}")
    s, buf = followers[0]
    seen = set()
    until = time.monotonic() + 30
    while len(seen) < len(v6):
        e, buf = read_event(s, buf, until, f"{len(v6)} IPv6 destroys")
        check(":" in e["src"] and e["reason"] == "killed", f"-E -s ::/0 got {e}")
        seen.add(fid(e))
    s, buf = followers[1]
    s.settimeout(0.5)
    try:
        buf += s.recv(1 << 16)
    except socket.timeout:
        pass
    check(buf == b"", f"-E -f ipv4 saw events of -D -s ::/0: {buf[:200]!r}")
    for s, _ in followers:
        s.close()
    left = listing(fc)
    check({fid(f) for f in left} == {fid(f) for f in flows} - v6,
          "-D -s ::/0 killed exactly the IPv6 flows")


def read_event(sock, buf, until, what):
    """The next event line from a follower's socket (events verb) before time `until`: (event, rest of buf)."""
    while b"\n" not in buf:
        left = until - time.monotonic()
        if left <= 0:
            raise Fail(f"no event within the time allowed: {what}")
        sock.settimeout(left)
        try:
            chunk = sock.recv(1 << 16)
        except socket.timeout:
            continue
        if not chunk:
            raise Fail(f"the event stream closed: {what}")
        buf += chunk
    line, buf = buf.split(b"\n", 1)
    return json.loads(line), buf


def update_timeouts(fc, tcp_flows):
    """-U TUPLE -t S (conntrack -U --timeout): a longer timeout shows in the listing; a 2 s one ends the idle
    flow 2 s later, as a timeout (reason inactivity, or closed in TIME_WAIT/CLOSE), within a cop tick (1 s)."""
    longer, shorter = tcp_flows[0], tcp_flows[1]
    got = json.loads(ctl(fc, "-U", "-o", "json", "-t", "100000", *get_args(longer, True)).stdout)
    check(got["flow_id"] == longer["flow_id"] and 99_990 <= got["timeout"] <= 100_000, f"-U -t 100000: {got}")
    again = json.loads(ctl(fc, "-G", "-o", "json", *get_args(longer)).stdout)
    check(99_980 <= again["timeout"] <= 100_000, f"-G after -U: {again}")
    r = ctl(fc, "-U", "-t", "5", "-s", "192.0.2.1", "-d", "192.0.2.2", "--sport", "1", "--dport", "2", check_rc=1)
    check("no such flow" in r.stderr, f"-U of no flow: {r.stderr}")
    s = shorter
    r = raw_request(fc, f"update src={s['src']} dst={s['dst']} sport={s['sport']} dport={s['dport']} timeout=0\n".encode())
    check(len(r) == 1 and "1..31536000" in r[0].get("error", ""), f"update timeout=0: {r}")
    # Follow destroy events (the server says it follows before anything is asked), then shorten.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as follower:
        follower.settimeout(30)
        follower.connect(fc.ctl_socket_path)
        follower.sendall(b"events kinds=destroy proto=tcp\n")
        first, buf = read_event(follower, b"", time.monotonic() + 30, "the follower's first line")
        check(first == {"following": "events"}, f"follow: {first}")
        r = ctl(fc, "-U", "-o", "json", "-t", "2", *get_args(shorter))
        set_at = time.monotonic()
        check("1 flow entries have been updated" in r.stderr and json.loads(r.stdout)["timeout"] in (1, 2),
              f"-U -t 2: {r.stdout} {r.stderr}")
        ended = None
        while ended is None:
            e, buf = read_event(follower, buf, set_at + 20, "the destroy of the flow whose timeout was set")
            if (e["src"], e["sport"], e["dst"], e["dport"]) == (shorter["src"], shorter["sport"], shorter["dst"],
                                                                 shorter["dport"]):
                ended = e
        took = time.monotonic() - set_at
    expect = "closed" if shorter["state"] in ("TIME_WAIT", "CLOSE") else "inactivity"
    check(ended["reason"] == expect, f"reason {ended['reason']}, expected {expect} for {shorter['state']}")
    # Not before its deadline (the -U reply came after it was set) and within a tick (1 s) of it, with slack for
    # a loaded host.
    check(1.0 <= took <= 2 + 1 + 3, f"ended {took:.2f} s after -U -t 2")
    ctl(fc, "-G", *get_args(shorter), check_rc=1)
    check(json.loads(ctl(fc, "-G", "-o", "json", *get_args(longer)).stdout)["flow_id"] == longer["flow_id"],
          "the flow given 100000 s is still there")


def test_finds_the_instance():
    """No --file-prefix: the only running flowcop (found by its socket and its EAL's live config lock); among several,
    the installed unit's, else exit 2 naming them; none: exit 3. Discovery is pointed at a directory of this test's
    own through RUNTIME_DIRECTORY (which flowcopctl honours, as dpdk-telemetry.py does), since other flowcops may
    run on this machine."""
    base = temp_dir("flowcopctl-find-")
    os.makedirs(os.path.join(base, "dpdk"))
    env = dict(os.environ, RUNTIME_DIRECTORY=base)

    def bare(*args):
        return subprocess.run([sys.executable, CTL] + list(args), capture_output=True, text=True, env=env, timeout=60)
    r = bare("-C")
    check(r.returncode == 3 and "no running flowcop found" in r.stderr, f"none: {r.returncode} {r.stderr}")
    # A stale instance (socket file left, nobody holds its EAL lock) is not a running one.
    stale = os.path.join(base, "dpdk", "stale")
    os.makedirs(stale)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(os.path.join(stale, "flowcop_ctl.sock"))
    open(os.path.join(stale, "config"), "w").close()
    with Flowcop(EXE, DEMO_PCAP, ["--clock", "tsc", "--stop-when-idle-ms", "0", "--metrics-addr", "127.0.0.1:0"],
                 "ctlfind1", lcores="0") as one:
        os.symlink(os.path.dirname(one.ctl_socket_path), os.path.join(base, "dpdk", one.prefix))
        n = stable_active(one, "the capture to be tracked")
        r = bare("-C")
        check(r.returncode == 0 and r.stdout.strip() == str(n), f"the only one: {r.returncode} {r.stdout} {r.stderr}")
        with Flowcop(EXE, DEMO_PCAP, ["--clock", "tsc", "--stop-when-idle-ms", "0", "--metrics-addr", "127.0.0.1:0"],
                     "ctlfind2", lcores="0-1" if os.cpu_count() > 1 else "0") as two:
            os.symlink(os.path.dirname(two.ctl_socket_path), os.path.join(base, "dpdk", two.prefix))
            r = bare("-C")
            check(r.returncode == 2 and one.prefix in r.stderr and two.prefix in r.stderr
                  and "--file-prefix" in r.stderr, f"two: {r.returncode} {r.stderr}")
            r = bare("-C", f"--file-prefix={two.prefix}")
            check(r.returncode == 0 and int(r.stdout) > 0, f"--file-prefix picks one: {r.returncode} {r.stderr}")
        r = bare("-C")
        check(r.returncode == 0 and r.stdout.strip() == str(n), f"the one left: {r.returncode} {r.stdout} {r.stderr}")
    # Among several, the installed unit's (its environment file's --file-prefix), said on stderr.
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("flowcopctl_find", CTL)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(mod)
    unit_env = os.path.join(base, "flowcop.env")
    with open(unit_env, "w") as f:
        f.write('FLOWCOP_EAL_OPTS="-l 8-11 --file-prefix=flowcop --iova-mode=va"\n')
    mod.UNIT_ENV = unit_env
    mod.running_instances = lambda: {"flowcop": "/x", "other": "/y"}
    check(mod.find_instance(mod.parse_args(["-C"])) == "flowcop", "several: the unit's")
    mod.running_instances = lambda: {}
    check(mod.find_instance(mod.parse_args(["-C"])) == "flowcop", "none: the unit's prefix")
    mod.UNIT_ENV = os.path.join(base, "absent.env")
    check(mod.find_instance(mod.parse_args(["-C"])) == "rte", "none and no unit: DPDK's rte")


# ---- 2. the synthetic port at FLOWS flows ------------------------------------------------------------

def pick_prefix(flows):
    """An IPv4 source prefix that selects some but not most of the flows, and the ids it selects."""
    v4 = [(int(ipaddress.IPv4Address(f["src"])), (f["lcore"], f["flow_id"])) for f in flows if ":" not in f["src"]]
    for bits in (24, 20, 16, 12, 10, 9, 8):
        mask = (0xffffffff << (32 - bits)) & 0xffffffff
        base = v4[0][0] & mask
        ids = {fid for a, fid in v4 if a & mask == base}
        if len(flows) // 100 <= len(ids) <= len(flows) // 2:
            return ipaddress.IPv4Network((base, bits)), ids
    raise Fail("no source prefix selects between 1% and 50% of the flows")


def synthetic_table(lcores):
    # Every flow stays open however slow the test runs: no cap for unacknowledged data, and a day for the
    # handshake states (on two lcores a handoff ring may overflow at full speed and lose a handshake's ACK) and
    # for the closing ones (flowgen replaces some flows; at 10^6 flows a listing outlasted TIME_WAIT's 120 s).
    opts = ["--flowgen", FLOWGEN, "--clock", "tsc", "--flows-per-lcore", str(FLOWS * 2), "--stop-when-idle-ms", "0",
            "--metrics-addr", "127.0.0.1:0", "--tcp-timeout-unacknowledged", "0", "--tcp-timeout-syn-sent", "86400",
            "--tcp-timeout-syn-recv", "86400", "--tcp-timeout-fin-wait", "86400", "--tcp-timeout-close-wait", "86400",
            "--tcp-timeout-last-ack", "86400", "--tcp-timeout-time-wait", "86400", "--tcp-timeout-close", "86400"]
    # EAL memory: 512 MiB holds the 10^5-flow run; the table takes ~175 B per slot of --flows-per-lcore on each
    # lcore, so 10^6 flows (2 x 2 x 10^6 slots) need about 0.7 GiB more.
    memory_mb = max(512, 256 + FLOWS * 4 * 512 // (1 << 20))
    with Flowcop(EXE, None, opts, "ctlgen", lcores=lcores, memory_mb=memory_mb) as fc:
        n = stable_active(fc, f"{FLOWS} flowgen flows to be tracked", FLOW_PACKETS)
        check(n >= FLOWS * 9 // 10, f"only {n} of {FLOWS} flows tracked")
        t0 = time.monotonic()
        flows = listing(fc)
        took = time.monotonic() - t0
        print(f"# listed {len(flows)} flows in {took:.2f} s", flush=True)
        check(len(flows) == n, f"listed {len(flows)}, flowcop_flows_active {n}")
        ids = {(f["lcore"], f["flow_id"]) for f in flows}
        check(len(ids) == n, "every flow listed once")
        check(int(ctl(fc, "-C").stdout) == n, "-C")
        check(int(ctl(fc, "-C", "-p", "tcp").stdout) == n, "-C -p tcp")
        check(int(ctl(fc, "-C", "-p", "udp").stdout) == 0, "-C -p udp")
        # -G finds listed flows in either direction (a sample: each is one process here).
        for f in random.Random(5).sample(flows, 20):
            got = json.loads(ctl(fc, "-G", "-o", "json", *get_args(f, reverse=True)).stdout)
            check(got["flow_id"] == f["flow_id"] and got["lcore"] == f["lcore"], f"-G {f}: {got}")
        # ... and every listed flow through the socket itself.
        for f in flows[:: max(1, len(flows) // 2000)]:
            req = f"get src={f['src']} dst={f['dst']} sport={f['sport']} dport={f['dport']}\n".encode()
            r = raw_request(fc, req)
            check(r[-1] == {"done": "get", "flows": 1} and r[0]["flow_id"] == f["flow_id"], f"get {f}: {r}")

        # -D by source prefix removes exactly the matching flows; a follower (-E) sees each one's destroy.
        net, doomed = pick_prefix(flows)
        expect = len(doomed)
        events_file = os.path.join(temp_dir("flowcopctl-E-"), "events.jsonl")
        with open(events_file, "w") as sink:
            follower = subprocess.Popen([sys.executable, CTL, f"--file-prefix={fc.prefix}", "-E", "-e", "DESTROY",
                                         "-o", "json"], stdout=sink, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: json.loads(ctl(fc, "-S", "-o", "json").stdout.splitlines()[-1])["ctl_followers"] == 1,
                   30, "the follower to be following")
        r = ctl(fc, "-D", "-s", str(net), "-o", "json")
        printed = [json.loads(line) for line in r.stdout.splitlines()]
        done = printed.pop()
        check(done["matched"] == expect and done["killed"] == expect, f"-D -s {net}: {done}, expected {expect}")
        # conntrack -D prints each entry it deleted.
        check(sorted(fid(f) for f in printed) == sorted(doomed), f"-D printed {len(printed)} of {expect} killed flows")
        wait_until(lambda: active(fc) == n - expect, 60, f"{expect} killed flows to be reaped")
        left = listing(fc)
        check({(f["lcore"], f["flow_id"]) for f in left} == ids - doomed,
              "-D killed a flow outside its filter, or left one inside it")
        killed = Scrape(fc.url).total("flowcop_flows_expired_total", reason="killed")
        check(killed == expect, f"flows_expired{{reason=killed}} {killed}, expected {expect}")
        by_id = {(f["lcore"], f["flow_id"]): f for f in flows}
        want = {(by_id[i]["src"], by_id[i]["sport"], by_id[i]["dst"], by_id[i]["dport"]) for i in doomed}

        def lines():
            with open(events_file) as f:
                return f.read().count("\n")
        try:
            wait_until(lambda: lines() >= expect, 30, f"{expect} destroy events")
        except Fail:
            pass  # some were lost: the counters below must say so
        follower.send_signal(signal.SIGINT)  # flowcopctl -E prints its summary and exits 0
        _, err = follower.communicate(timeout=30)
        check(follower.returncode == 0, f"-E exit {follower.returncode}: {err}")
        with open(events_file) as f:
            events = [json.loads(line) for line in f]
        check(all(e["event"] == "destroy" and e["reason"] == "killed" for e in events), f"-e DESTROY: {events[:3]}")
        got = {(e["src"], e["sport"], e["dst"], e["dport"]) for e in events}
        per_lcore = [json.loads(line) for line in ctl(fc, "-S", "-o", "json").stdout.splitlines()[:-1]]
        text = ctl(fc, "-S").stdout.splitlines()
        # -S speaks the stats model's names (those of /flowcop/stats), every counter of it in JSON.
        check(len(per_lcore) == len(text) >= 1 and all("flows_expired_killed" in s and "packets_tcp_no_flow" in s
                                                      and "inactivity_cop_visited" in s for s in per_lcore)
              and sum(s["flows_expired_killed"] for s in per_lcore) == killed
              and all("=?" not in t for t in text), f"-S: {per_lcore[:1]} {text[:1]}")
        stats = json.loads(ctl(fc, "-S", "-o", "json").stdout.splitlines()[-1])
        lost = stats["ctl_events_lost_follower_slow"] + stats["ctl_events_lost_ring_full"]
        check(stats["ctl_connections"] >= stats["ctl_requests"] > 0 and stats["ctl_sent_bytes"] > 0
              and stats["ctl_events_sent"] >= len(got), f"the socket's counters: {stats}")
        # The same counters in /metrics (stats_rows.h, one declaration).
        scrape = Scrape(fc.url)
        check(scrape.total("flowcop_ctl_requests_total") >= stats["ctl_requests"]
              and scrape.total("flowcop_ctl_events_sent_total") == stats["ctl_events_sent"]
              and scrape.total("flowcop_ctl_followers") == 0, "/metrics has the control socket's counters")
        # Kills are paced to what the follower takes (ctl_server.h): it loses none.
        check(got == want and lost == 0, f"-E saw {len(got)} of {len(want)} destroys, {lost} lost")
        check(stats["ctl_followers"] == 0, "the follower is gone")

        abusive_clients(fc, len(left))

        # -F empties the table, and a follower printing conntrack's text with the default buffer shows every
        # destroy (issue 28: two followers lost 20% and 77% of a flush's events before kills were paced).
        shown_file = os.path.join(temp_dir("flowcopctl-F-"), "destroys.txt")
        with open(shown_file, "w") as sink:
            follower = subprocess.Popen([sys.executable, CTL, f"--file-prefix={fc.prefix}", "-E", "-e", "DESTROY"],
                                        stdout=sink, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: followers(fc) == 1, 30, "the -F follower to be following")
        t0 = time.monotonic()
        r = ctl(fc, "-F")
        check(f"{len(left)} flow entries have been killed" in r.stderr, r.stderr)
        wait_until(lambda: active(fc) == 0, 120, "the flushed table to empty")
        took = time.monotonic() - t0

        def shown():
            with open(shown_file) as f:
                return f.read().count("\n")
        wait_until(lambda: shown() >= len(left), 60, f"the follower to show {len(left)} destroys")
        follower.send_signal(signal.SIGINT)
        _, err = follower.communicate(timeout=30)
        with open(shown_file) as f:
            lines = f.read().splitlines()
        print(f"# -F of {len(left)} flows with a text follower: {took:.1f} s, {len(lines)} destroys shown", flush=True)
        check(follower.returncode == 0 and "lost" not in err and len(lines) == len(left)
              and all(line.startswith("[DESTROY] tcp") and " reason=killed " in line for line in lines),
              f"-E during -F: exit {follower.returncode}, {len(lines)} of {len(left)} shown: {err}")
        check(ctl(fc, "-C").stdout.strip() == "0" and listing(fc) == [], "empty after -F")
        check(fc.alive(), "flowcop still runs")


def test_synthetic_table_one_lcore():
    synthetic_table("0")


def test_synthetic_table_two_lcores():
    synthetic_table("0-1" if os.cpu_count() > 1 else "0")


def abusive_clients(fc, n):
    # Garbage and oversized requests: an error line each.
    check("error" in raw_request(fc, b"\x00\xff garbage\n")[0], "garbage")
    try:
        check("error" in raw_request(fc, b"list " + b"a" * 5000 + b"\n")[0], "oversized")
    except ConnectionResetError:
        pass  # refused before all of it was read: the counter below still says so
    # A reader that stops reading: dropped after the stall limit, while others are served meanwhile.
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect(fc.ctl_socket_path)
    slow.sendall(b"list\n")
    # Many connections at once: the ones beyond the server's limit are refused with an error line.
    held = []
    refused = 0
    for _ in range(20):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(fc.ctl_socket_path)
        held.append(s)
    for s in held:
        s.settimeout(0.5)
        try:
            data = s.recv(4096)
            refused += b"too many control clients" in data
        except socket.timeout:
            pass
    check(refused >= 20 - 15, f"{refused} of 20 extra connections refused")
    for s in held:
        s.close()
    check(int(ctl(fc, "-C").stdout) == n, "served while a slow reader holds a listing")
    wait_until(lambda: json.loads(ctl(fc, "-S", "-o", "json").stdout.splitlines()[-1])["ctl_refused_slow"] >= 1,
               30, "the slow reader to be dropped")
    slow.close()
    done = json.loads(ctl(fc, "-S", "-o", "json").stdout.splitlines()[-1])
    check(done["ctl_refused_busy"] >= refused and done["ctl_refused_bad"] >= 2, f"stats {done}")


def test_usage_and_unreachable():
    r = subprocess.run([sys.executable, CTL, "-L", "--sport", "x y"], capture_output=True, text=True)
    check(r.returncode == 2, f"spaces in a value: {r.returncode} {r.stderr}")
    r = subprocess.run([sys.executable, CTL, "-G", "-s", "10.0.0.1"], capture_output=True, text=True)
    check(r.returncode == 2 and "whole tuple" in r.stderr, f"-G without a tuple: {r.returncode} {r.stderr}")
    r = subprocess.run([sys.executable, CTL, "-U", "-s", "10.0.0.1", "-d", "10.0.0.2", "--sport", "1", "--dport", "2"],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "-U needs -t/--timeout" in r.stderr, f"-U without -t: {r.returncode} {r.stderr}")
    r = subprocess.run([sys.executable, CTL, "-L", "-t", "5"], capture_output=True, text=True)
    check(r.returncode == 2 and "goes with -U" in r.stderr, f"-t without -U: {r.returncode} {r.stderr}")
    for bad in ("0", "31536001", "1.5", "-3", "x"):
        r = subprocess.run([sys.executable, CTL, "-U", "-s", "10.0.0.1", "-d", "10.0.0.2", "--sport", "1", "--dport",
                            "2", "-t", bad], capture_output=True, text=True)
        check(r.returncode == 2 and "1..31536000" in r.stderr, f"-U -t {bad}: {r.returncode} {r.stderr}")
    r = subprocess.run([sys.executable, CTL, "-F", "--sport", "1"], capture_output=True, text=True)
    check(r.returncode == 2, f"-F with a filter: {r.returncode}")
    r = subprocess.run([sys.executable, CTL, "-L", "--file-prefix", f"nosuch-{os.getpid()}"], capture_output=True,
                       text=True)
    check(r.returncode == 3 and "no flowcop" in r.stderr, f"unreachable: {r.returncode} {r.stderr}")
    r = subprocess.run([sys.executable, CTL, "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "-L, --dump" in r.stdout and "exit status" in r.stdout, "--help")
    # conntrack's exit codes: a bad filter value is a usage error (2), found before connecting, so the same
    # whether or not a flowcop runs (no instance has this prefix).
    nosuch = f"--file-prefix=nosuch-{os.getpid()}"
    for bad, why in ((["-L", "-p", "xyz"], "not a protocol"), (["-L", "-p", "256"], "not a protocol"),
                     (["-L", "-s", "10.0.0.300"], "not an IPv4 or IPv6"), (["-C", "-s", "10.0.0.0/33"], "0..32"),
                     (["-D", "-d", "2001:db8::/129"], "0..128"), (["-L", "-s", "fe80::1%eth0"], "not an IPv4"),
                     (["-L", "--sport", "65536"], "0..65535"), (["-L", "--dport", "-1"], "0..65535"),
                     (["-L", "--state", "OPEN"], "not a state"), (["-L", "--vlan", "4096"], "VLAN IDs"),
                     (["-L", "--vlan", "1,2,3"], "VLAN IDs"), (["-L", "--zone", "x"], "0..65535"),
                     (["-L", "--lcore", "1024"], "0..1023"), (["-E", "-e", "NEW,BOGUS"], "NEW, UPDATE, DESTROY"),
                     (["-D", "-s", "::ffff:0:0/96", "-d", "172.16.0.0/16"], "one family"),
                     (["-L", "-f", "ipv6", "-s", "10.0.0.0/8"], "but -f ipv6"), (["-L", "-f", "inet"], "invalid choice"),
                     (["-G", "-s", "::ffff:10.0.0.1", "-d", "::ffff:10.0.0.2", "--sport", "1", "--dport", "2"],
                      "IPv4-mapped"),
                     (["-G", "-s", "10.0.0.0/8", "-d", "10.0.0.2", "--sport", "1", "--dport", "2"], "not a prefix")):
        r = subprocess.run([sys.executable, CTL, nosuch] + bad, capture_output=True, text=True)
        check(r.returncode == 2 and why in r.stderr and "no flowcop" not in r.stderr,
              f"{' '.join(bad)}: exit {r.returncode}, {r.stderr.strip()!r}")
    for good in (["-L", "-p", "GRE", "-s", "10.0.0.0/8", "--state", "established"], ["-L", "-p", "ipv6-icmp"],
                 ["-U", "-p", "udp", "--dport", "53", "-t", "5"], ["-E", "-e", "new,destroy", "-f", "ipv4"]):
        r = subprocess.run([sys.executable, CTL, nosuch] + good, capture_output=True, text=True)
        check(r.returncode == 3 and "no flowcop" in r.stderr, f"{' '.join(good)}: {r.returncode} {r.stderr}")
    # --version: the version and commit meson wrote into the built script.
    r = subprocess.run([sys.executable, CTL, "--version"], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.startswith("flowcopctl 0.") and "(commit " in r.stdout
          and "@" not in r.stdout, f"--version: {r.returncode} {r.stdout!r} {r.stderr!r}")



def test_text_columns_per_protocol():
    """-L and -E print what conntrack prints per protocol: TCP's state and ports, UDP's ports without a state,
    ICMP's type/code/id with the reply type in the reply direction, no ports for a protocol without them."""
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("flowcopctl_under_test", CTL)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(mod)
    base = dict(src="10.0.0.1", dst="10.0.0.2", sport=7, dport=8, packets_orig=1, bytes_orig=60, packets_reply=0,
                bytes_reply=0, timeout=30, state="UNREPLIED", flags=["UNREPLIED"], lcore=1, flow_id=5)
    udp = mod.fmt_flow(dict(base, proto="udp"), False)
    check(udp.startswith("udp      17 30 src=10.0.0.1 dst=10.0.0.2 sport=7 dport=8 packets=1") and
          "UNREPLIED src=" not in udp and "[UNREPLIED] src=10.0.0.2 dst=10.0.0.1 sport=8 dport=7 " in udp, udp)
    icmp = mod.fmt_flow(dict(base, proto="icmp", sport=4660, dport=8), False)
    check("src=10.0.0.1 dst=10.0.0.2 type=8 code=0 id=4660 packets=1" in icmp and
          "src=10.0.0.2 dst=10.0.0.1 type=0 code=0 id=4660 packets=0" in icmp, icmp)
    # JSON's proto is a string, the number for a protocol the event stream does not name; text names it.
    gre = mod.fmt_flow(dict(base, proto="47", sport=0, dport=0), True)
    check("gre      47 30 src=10.0.0.1 dst=10.0.0.2 packets=1" in gre and "sport" not in gre, gre)
    igmp = mod.fmt_flow(dict(base, proto="2", sport=0, dport=0), False)
    check(igmp.startswith("2        2 30 src=10.0.0.1 dst=10.0.0.2 packets=1"), igmp)
    tcp = mod.fmt_flow(dict(base, proto="tcp", state="SYN_SENT"), False)
    check(tcp.startswith("tcp      6 30 SYN_SENT src=10.0.0.1 dst=10.0.0.2 sport=7 dport=8 "), tcp)
    event = dict(base, event="new", proto="icmpv6", src="fd00::1", dst="fd00::2", sport=9, dport=128, timeout=30)
    new = mod.fmt_event(event, False)
    check(new == "    [NEW] icmpv6   58 30 src=fd00::1 dst=fd00::2 type=128 code=0 id=9 [UNREPLIED] "
          "src=fd00::2 dst=fd00::1 type=129 code=0 id=9 lcore=1", new)
    # conntrack -E's NEW line: protocol, timeout, state, the original direction, [UNREPLIED], the reply.
    new_tcp = mod.fmt_event(dict(base, event="new", proto="tcp", state="SYN_SENT", timeout=120), False)
    check(new_tcp == "    [NEW] tcp      6 120 SYN_SENT src=10.0.0.1 dst=10.0.0.2 sport=7 dport=8 [UNREPLIED] "
          "src=10.0.0.2 dst=10.0.0.1 sport=8 dport=7 lcore=1", new_tcp)
    gone = mod.fmt_event(dict(base, event="destroy", proto="udp", reason="inactivity"), False)
    check(gone == "[DESTROY] udp      17 src=10.0.0.1 dst=10.0.0.2 sport=7 dport=8 packets=1 bytes=60 "
          "src=10.0.0.2 dst=10.0.0.1 sport=8 dport=7 packets=0 bytes=0 reason=inactivity lcore=1", gone)
    # -o extended: the port of the flow's first packet (in_port) before the id; -E after the lcore.
    ext = mod.fmt_flow(dict(base, proto="udp", in_port=3), True)
    check(ext.startswith("ipv4     2 udp") and ext.endswith(" lcore=1 port=3 id=5"), ext)
    check(" port=" not in mod.fmt_flow(dict(base, proto="udp", in_port=3), False), "port= only with -o extended")
    gone_ext = mod.fmt_event(dict(base, event="destroy", proto="udp", reason="inactivity", in_port=0), True)
    check(gone_ext.endswith(" reason=inactivity lcore=1 port=0"), gone_ext)


if __name__ == "__main__":
    # The one- and two-lcore cases follow the layout matrix (flowcoptest.layouts): FLOWCOP_TEST_LAYOUTS
    # narrows them as it narrows the replay scenarios (.ci/run's ASan stage runs the handoff and rss layouts;
    # these cases run on the TSC clock, where the rss layout's time marks play no part, so rss adds none).
    chosen = {l.name for l in layouts.selected()}
    by_layout = {"single_lcore": [test_real_capture_one_lcore, test_synthetic_table_one_lcore],
                 "handoff": [test_real_capture_two_lcores, test_synthetic_table_two_lcores]}
    run_tests([test_usage_and_unreachable, test_text_columns_per_protocol, test_finds_the_instance]
              + [t for name in ("single_lcore", "handoff") if name in chosen for t in by_layout[name]])
