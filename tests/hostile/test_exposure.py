#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What flowcop exposes, and to whom, through the real binary (app/operations.md, "Exposure
and access").

Usage: test_exposure.py FLOWCOP_EXE TMPDIR REPO_ROOT

  1. By default the exporter listens on 127.0.0.1:9781 and nowhere else (the process's only
     listening TCP socket); localhost:0 is 127.0.0.1 too. (If another process holds 9781, the
     default case is skipped: flowcop then exits 2, tested in tests/integration.)
  2. The telemetry socket is where app/operations.md says, in directories only root can enter
     (0700), the socket writable by root alone; an unprivileged user (nobody) cannot connect,
     root can; --no-telemetry creates no socket.
  3. The exporter serves /metrics and nothing else: no file (one in flowcop's working directory,
     /etc/passwd, traversals, encoded traversals) is ever served, other methods are refused.
  4. No telemetry command reads or writes outside flowcop's own state: every registered command
     (DPDK's and flowcop's) is called bare and with file paths and traversals as parameters; no
     reply carries a file's content, flowcop opens no file and creates none, its counters do not
     move, and /flowcop/set can change only timeouts and budgets (no path, address or port).
"""

import http.client
import os
import stat
import subprocess
import sys
import time


import hostile  # noqa: E402
from hostile import harness  # noqa: E402

SECRET = "flowcop-exposure-sentinel-5d1c"
SETTABLE_PREFIXES = ("tcp_timeout_",)
SETTABLE = {"timeout_budget", "visit_budget_factor", "default_inactivity_timeout", "active_timeout",
            # TCP window tracking's policy: how strictly segments are checked, never a path or an address
            "tcp_be_liberal", "tcp_ignore_invalid_rst", "tcp_max_retrans",
            # the other protocols' timeouts (issue 15)
            "udp_timeout", "udp_timeout_stream", "icmp_timeout", "generic_timeout"}


def port_of(url):
    return hostile.url_host_port(url)[1]


def check_default_bind(tap, exe, vdev):
    with hostile.Running(exe, vdev, ["--clock", "packet"]) as fc:
        cfg = harness.parse_config(fc.stderr)
        socks = hostile.listening_sockets(fc.pid) if fc.alive() else None
    if fc.rc == 2 and "Address already in use" in fc.stderr:
        tap.skip("default --metrics-addr binds 127.0.0.1:9781 only", "another process holds port 9781")
    else:
        tap.eq((cfg.get("metrics_addr"), socks), ("127.0.0.1:9781", [("ipv4", "127.0.0.1", 9781)]),
               "default --metrics-addr: the config says 127.0.0.1:9781 and it is the only listening socket")


def can_connect_as(uid, path):
    """Whether a process with this uid/gid can connect to the socket: 'ok', or the errno name."""
    code = ("import socket,errno,sys\ns=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
            "try:\n s.connect(sys.argv[1]); print('ok')\n"
            "except OSError as e: print(errno.errorcode.get(e.errno, e.errno))\n")
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    r = subprocess.run([py, "-c", code, path], user=uid, group=uid, capture_output=True, text=True,
                       timeout=10)
    return r.stdout.strip() or r.stderr.strip()


def check_telemetry_socket(tap, fc):
    path = hostile.telemetry_path(fc.pid)
    prefix_dir = os.path.dirname(path)
    info = [(d, os.stat(d)) for d in (os.path.dirname(prefix_dir), prefix_dir, path)]
    nobody = can_connect_as(65534, path) if os.geteuid() == 0 else None
    t = hostile.Telemetry(path)
    root_ok = bool(t.hello)
    t.close()
    if os.geteuid() == 0:
        tap.eq(os.path.dirname(prefix_dir), "/var/run/dpdk", "as root the socket is under /var/run/dpdk/<file-prefix>/")
    modes = {d: (stat.S_IMODE(st.st_mode), st.st_uid) for d, st in info}
    dirs_ok = all(m == 0o700 and uid == os.geteuid() for m, uid in list(modes.values())[:2])
    sock_mode, sock_uid = modes[path]
    tap.ok(dirs_ok and stat.S_ISSOCK(info[2][1].st_mode) and sock_uid == os.geteuid() and sock_mode & 0o022 == 0,
           "the runtime directories are 0700 and the socket is writable by its owner only",
           {d: (oct(m), u) for d, (m, u) in modes.items()})
    if os.geteuid() == 0:
        tap.eq((nobody, root_ok), ("EACCES", True), "user nobody cannot connect to the telemetry socket; root can")
    else:
        tap.skip("user nobody cannot connect to the telemetry socket", "needs root to run a process as nobody")


def check_no_telemetry(tap, exe, vdev):
    with hostile.Running(exe, vdev, ["--clock", "packet", "--metrics-addr", "none"], eal_extra=["--no-telemetry"]) as fc:
        gone = not os.path.exists(hostile.telemetry_path(fc.pid))
    tap.ok(gone and fc.rc == 0, "--no-telemetry: no socket, and flowcop runs as usual", fc.stderr[-500:])


def http_get(port, method, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=3)
    try:
        c.request(method, path, body=b"x" if method in ("POST", "PUT") else None)
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    except (OSError, http.client.HTTPException):
        return None, ""     # closed without a response: nothing served either
    finally:
        c.close()


def check_http_paths(tap, fc, tmp):
    port = port_of(fc.url)
    paths = ["/", "/secret.txt", os.path.join(tmp, "secret.txt"), "/../secret.txt", "/metrics/../secret.txt",
             "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/../../../../../../etc/passwd", "/metrics/../../../../etc/passwd",
             "/metrics%2f..%2fsecret.txt", "/etc/passwd", "/index.html", "/metrics?file=/etc/passwd"]
    bad = []
    for method in ("GET", "HEAD", "POST"):
        for path in paths:
            code, body = http_get(port, method, path)
            served_metrics = code == 200 and path.startswith("/metrics") and (method == "HEAD" or
                                                                              body.startswith("# HELP"))
            if SECRET in body or "root:x:0:0" in body or (code == 200 and not served_metrics):
                bad.append((method, path, code, body[:80]))
    refused = {m: http_get(port, m, "/metrics")[0] for m in ("PUT", "DELETE")}
    tap.ok(not bad, "the exporter serves no file: %d requests (GET/HEAD/POST, traversals, encoded traversals, a "
           "file in flowcop's working directory) get 404 or metrics text" % (3 * len(paths)), bad[:5])
    tap.eq(refused, {"PUT": 405, "DELETE": 405}, "PUT and DELETE /metrics are refused (405)")


def regular_files(pid):
    out = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if t.startswith("/") and not t.startswith(("/dev/", "/memfd:")):
            out.add(t)
    return out


def check_commands(tap, fc, tmp):
    secret = os.path.join(tmp, "secret.txt")
    probe = os.path.join(tmp, "created-by-a-command")
    params = [None, secret, "../../../../../.." + secret, probe, "/etc/passwd", "1," + secret]
    t = hostile.Telemetry(hostile.telemetry_path(fc.pid))
    before_files, before_stats = regular_files(fc.pid), t("/flowcop/stats")
    before_dir = set(os.listdir(tmp))
    commands = t("/")
    leaks, errors = [], []
    for c in commands:
        for prm in params:
            req = c if prm is None else "%s,%s" % (c, prm)
            try:
                reply = str(t(req))
            except (OSError, ValueError) as e:       # a closed socket or a non-JSON reply
                errors.append((req, repr(e)))
                t.close()
                t = hostile.Telemetry(hostile.telemetry_path(fc.pid))
                continue
            if SECRET in reply or "root:x:0:0" in reply:
                leaks.append(req)
    after_files, after_stats = regular_files(fc.pid), t("/flowcop/stats")
    after_dir = set(os.listdir(tmp))
    bad_set = t("/flowcop/set,events,%s" % probe)
    settable = bad_set.get("settable") if isinstance(bad_set, dict) else None
    t.close()
    alive = fc.alive()
    flowcop_cmds = sorted(c for c in commands if c.startswith("/flowcop/"))
    # /flowcop/policy/reload re-reads the file --policy named at start, never a path a client passes.
    tap.eq(flowcop_cmds, ["/flowcop/config", "/flowcop/flows", "/flowcop/kill", "/flowcop/policy",
                          "/flowcop/policy/reload", "/flowcop/ports", "/flowcop/set", "/flowcop/stats"],
           "flowcop registers exactly its eight commands")
    tap.ok(not leaks and not errors and alive,
           "%d commands x %d parameters (bare, file paths, traversals): no reply carries a file's content, every "
           "reply is JSON, flowcop keeps running" % (len(commands), len(params)), (leaks[:5], errors[:5]))
    tap.eq(sorted(after_files - before_files), [], "no command made flowcop open a file")
    tap.eq(sorted(after_dir - before_dir), [], "no command created a file")
    keys = ("rx_packets", "flows_created", "flows_active", "flows_expired")
    tap.eq({k: after_stats.get(k) for k in keys}, {k: before_stats.get(k) for k in keys},
           "no command changed flowcop's flows or counters")
    tap.ok(isinstance(bad_set, dict) and "error" in bad_set and settable and
           all(n in SETTABLE or n.startswith(SETTABLE_PREFIXES) for n in settable),
           "/flowcop/set refuses a path; what it can set is timeouts, budgets and window tracking's policy only", bad_set)


def main():
    exe, tmp, repo = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    os.makedirs(tmp, exist_ok=True)
    tap = harness.Tap()
    with open(os.path.join(tmp, "secret.txt"), "w") as f:
        f.write(SECRET + "\n")
    # --clock packet replays the capture and, without --stop-when-idle-ms, keeps running until SIGINT.
    vdev = ["net_pcap0,rx_pcap=" + os.path.join(repo, "tests", "data", "captures",
                                                "suricata_ftp_data_ipv4_ipv6_80conns.pcap")]
    check_default_bind(tap, exe, vdev)
    opts = ["--clock", "packet", "--metrics-addr", "localhost:0", "--events", os.path.join(tmp, "events.jsonl")]
    with hostile.Running(exe, vdev, opts, cwd=tmp) as fc:
        socks = hostile.listening_sockets(fc.pid) if fc.alive() else None
        if tap.ok(fc.url and socks == [("ipv4", "127.0.0.1", port_of(fc.url))], "localhost:0 binds 127.0.0.1 only",
                  (fc.url, socks, fc.stderr[-1000:])):
            time.sleep(0.3)                              # the replay is over: counters stay still
            check_telemetry_socket(tap, fc)
            check_http_paths(tap, fc, tmp)
            check_commands(tap, fc, tmp)
    tap.eq(fc.rc, 0, "flowcop exits 0 after all of it")
    check_no_telemetry(tap, exe, vdev)
    tap.done()


if __name__ == "__main__":
    main()
