# SPDX-License-Identifier: BSD-3-Clause
"""deploy/systemd: the unit, its environment file and install.sh, checked with the real tools.

usage: test_systemd.py build/app/flowcop REPO_ROOT

- systemd-analyze verify accepts the unit without a single warning, and its offline security
  review confirms the privilege claims (a user of its own, no capability in the bounding set).
- The environment file is plain NAME="value" lines (what EnvironmentFile= and the unit's $NAME
  word splitting read unambiguously), defines exactly the variables the unit uses.
- FLOWCOP_HOST_SETUP_OPTS go through the real host-setup.sh (dry run on the fake host of
  fakehost.py, whose NICs and CPUs the example describes): accepted, no warning, and the EAL line
  it prints for that host is FLOWCOP_EAL_OPTS exactly.
- The real binary starts with FLOWCOP_OPTS and every FLOWCOP_EAL_OPTS option that is not about
  this host's hardware, as the unit runs it: an unprivileged user with no capabilities and no new
  privileges, XDG_RUNTIME_DIR as the unit sets it. Its running configuration equals the options,
  the telemetry socket is where the unit says, and SIGTERM stops it with exit 0 in time.
- install.sh --root puts every file in place with its mode, keeps an edited environment file,
  and --uninstall removes what it installed.
- The unit waits for network-online.target, is Type=notify with WatchdogSec= and SystemCallFilter=
  @system-service. The real binary, under that very filter (applied with libseccomp, as systemd does) and
  with a NOTIFY_SOCKET of the test's, says READY=1 only once it serves, feeds the watchdog while every
  worker runs, stops feeding while one worker thread is frozen (ptrace) and resumes after, and says
  STOPPING=1 at SIGTERM, on -l 0 and -l 0-1; strace lists the calls it makes outside the filter (iopl only).
- Where PID 1 is systemd, a transient unit under systemd-run with those settings becomes active (READY)
  and stops cleanly; elsewhere that test is skipped with the reason.
"""
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
# meson's timeout sends SIGTERM: exit through the finally blocks that stop flowcop and Prometheus.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
from fakehost import FakeHost  # noqa: E402
from tap import Fail, Skip, check, run  # noqa: E402

from flowcoptest.exposition import fetch as scrape  # noqa: E402

EXE, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SD = os.path.join(REPO, "deploy", "systemd")
UNIT, ENV = os.path.join(SD, "flowcop.service"), os.path.join(SD, "flowcop.env")
HOST_SETUP = os.path.join(REPO, "deploy", "host-setup.sh")
PCAP = os.path.join(REPO, "tests", "data", "captures", "suricata_ftp_data_ipv4_ipv6_80conns.pcap")
# Where the unit expects what install.sh puts in place.
INSTALLED = {"/usr/local/bin/flowcop": EXE, "/usr/local/sbin/flowcop-host-setup": HOST_SETUP,
             "/etc/flowcop/flowcop.env": ENV}
VALUE = re.compile(r'^[A-Za-z0-9 ._:,/=-]*$')  # nothing EnvironmentFile= or word splitting could read two ways


def read_env():
    """flowcop.env -> {name: value}; any line outside the plain subset is a failure."""
    env = {}
    for n, line in enumerate(open(ENV), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        m = re.match(r'^([A-Z_][A-Z0-9_]*)="([^"]*)"$', line)
        check(m, f"flowcop.env:{n}: not NAME=\"value\": {line!r}")
        check(VALUE.match(m.group(2)), f"flowcop.env:{n}: value needs quoting or escapes: {line!r}")
        check(m.group(1) not in env, f"flowcop.env:{n}: {m.group(1)} set twice")
        env[m.group(1)] = m.group(2)
    return env


def unit_lines():
    return [l.rstrip("\n") for l in open(UNIT)]


def unit_value(key):
    vals = [l.split("=", 1)[1] for l in unit_lines() if l.startswith(key + "=")]
    check(len(vals) == 1, f"flowcop.service sets {key}= {len(vals)} times")
    return vals[0]


def exec_words(line, env):
    """An Exec*= line's command as systemd runs it: unbraced $NAME splits into words at spaces."""
    words = []
    for w in line.split("=", 1)[1].lstrip("+-@!:").split():
        m = re.fullmatch(r"\$([A-Z_][A-Z0-9_]*)", w)
        words += env[m.group(1)].split() if m else [w]
    return words


def local_unit(tmp):
    """The unit with the installed paths pointed at this tree (verify checks that executables exist)."""
    lines = unit_lines()
    for installed, here in INSTALLED.items():
        uses = [i for i, l in enumerate(lines) if installed in l and not l.startswith("#")]
        check(len(uses) == 1, f"the unit's settings name {installed} {len(uses)} times, want once")
        lines[uses[0]] = lines[uses[0]].replace(installed, here)
    path = os.path.join(tmp, "flowcop.service")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def take(words, flag):
    """Removes '-x V', '--x V' or '--x=V' from words; returns the values."""
    out, vals, i = [], [], 0
    while i < len(words):
        w = words[i]
        if w == flag:
            vals.append(words[i + 1])
            i += 2
            continue
        if w.startswith(flag + "="):
            vals.append(w[len(flag) + 1:])
        else:
            out.append(w)
        i += 1
    words[:] = out
    return vals


# ------------------------------------------------------------------ the unit

def test_verify_accepts_the_unit_without_warnings():
    """systemd-analyze verify: exit 0 and not one warning (unknown keys are only warnings there)"""
    if not shutil.which("systemd-analyze"):
        raise Skip("systemd-analyze not installed")
    tmp = tempfile.mkdtemp(prefix="flowcop-unit-")
    try:
        p = subprocess.run(["systemd-analyze", "verify", "--man=no", local_unit(tmp)], capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(),
              f"exit {p.returncode}:\n{p.stdout}{p.stderr}")
    finally:
        shutil.rmtree(tmp, True)


def test_the_event_log_rotation_units_verify_and_come_with_flowcop():
    """flowcop-logrotate.service/.timer: verified without a warning, every 15 minutes, enabled with flowcop (Also=)"""
    if not shutil.which("systemd-analyze"):
        raise Skip("systemd-analyze not installed")
    service, timer = os.path.join(SD, "flowcop-logrotate.service"), os.path.join(SD, "flowcop-logrotate.timer")
    p = subprocess.run(["systemd-analyze", "verify", "--man=no", service, timer], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(),
          f"exit {p.returncode}:\n{p.stdout}{p.stderr}")
    text = open(service).read()
    check("ExecStart=/usr/sbin/logrotate --wait-for-state-lock /etc/logrotate.d/flowcop\n" in text, text)
    check("OnCalendar=*:0/15\n" in open(timer).read(), "the timer runs every 15 minutes")
    check(unit_value("Also") == "flowcop-logrotate.timer", "flowcop.service's [Install] Also= names the timer")


def test_security_review_finds_no_capability_and_a_user_of_its_own():
    """systemd-analyze security: own user, no capability bounded or ambient, no new privileges, read-only system"""
    if not shutil.which("systemd-analyze"):
        raise Skip("systemd-analyze not installed")
    tmp = tempfile.mkdtemp(prefix="flowcop-unit-")
    try:
        p = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--json=short", local_unit(tmp)],
                           capture_output=True, text=True, timeout=60)
        rows = {r["name"]: r["set"] for r in json.loads(p.stdout)}
    finally:
        shutil.rmtree(tmp, True)
    caps = [n for n in rows if n.startswith("CapabilityBoundingSet=~")]
    check(len(caps) > 20, f"only {len(caps)} capability rows: {sorted(rows)}")
    want = caps + ["User=/DynamicUser=", "AmbientCapabilities=", "NoNewPrivileges=", "ProtectSystem=",
                   "ProtectHome=", "PrivateTmp=", "ProtectKernelModules=", "RestrictSUIDSGID="]
    bad = [n for n in want if not rows.get(n)]
    check(not bad, f"not satisfied: {bad}")
    check(unit_value("User") == "flowcop" and unit_value("Group") == "flowcop", "the unit runs as flowcop:flowcop")


def test_the_environment_file_defines_exactly_what_the_unit_uses():
    """flowcop.env: plain NAME="value" lines, the variables the unit's Exec lines use and no other"""
    env = read_env()
    check(unit_value("EnvironmentFile") == "/etc/flowcop/flowcop.env", "EnvironmentFile=")
    used = set()
    for l in unit_lines():
        if l.startswith(("ExecStart=", "ExecStartPre=")):
            check("${" not in l, f"braced variable (one word, not split): {l}")
            used |= set(re.findall(r"\$([A-Z_][A-Z0-9_]*)", l))
    check(used == set(env), f"unit uses {sorted(used)}, env defines {sorted(env)}")
    start = exec_words("ExecStart=" + unit_value("ExecStart"), env)
    check(start[0] == "/usr/local/bin/flowcop" and start.count("--") == 1, f"ExecStart: {start}")
    check(start[1:start.index("--")] == env["FLOWCOP_EAL_OPTS"].split(), "EAL options before --")
    check(start[start.index("--") + 1:] == env["FLOWCOP_OPTS"].split(), "flowcop options after --")


def test_host_setup_accepts_its_options_and_prints_the_eal_line_of_the_env_file():
    """FLOWCOP_HOST_SETUP_OPTS through host-setup.sh --dry-run on the example host: no problem, no warning, same EAL line"""
    env = read_env()
    pre = [l for l in unit_lines() if l.startswith("ExecStartPre=")]
    check(pre and pre[0] == "ExecStartPre=+/usr/local/sbin/flowcop-host-setup $FLOWCOP_HOST_SETUP_OPTS",
          f"host setup runs first, as root ('+'): {pre}")
    args = exec_words(pre[0], env)[1:]
    check("--user" not in args and "--dry-run" not in args, f"the unit's User= decides the user: {args}")
    tmp = tempfile.mkdtemp(prefix="flowcop-unit-host-")
    try:
        fake = FakeHost(tmp)
        state = ["--state-dir", fake.state_dir]
        # The user host-setup.sh mounts hugepages for by default is the unit's (it does not exist here).
        p = subprocess.run(["bash", HOST_SETUP, "--dry-run"] + args + state, env=fake.env(), capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 1 and "user 'flowcop' does not exist: deploy/systemd/install.sh creates it" in p.stderr,
              f"exit {p.returncode}:\n{p.stderr}")
        p = subprocess.run(["bash", HOST_SETUP, "--dry-run"] + args + state + ["--user", "nobody"], env=fake.env(),
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0 and not p.stderr.strip(), f"exit {p.returncode}:\n{p.stdout}{p.stderr}")
        lines = [l for l in p.stdout.splitlines() if "FLOWCOP_EAL_OPTS=" in l]
        check(len(lines) == 1, p.stdout)
        printed = lines[0].split("FLOWCOP_EAL_OPTS=", 1)[1].strip('"')
        check(printed == env["FLOWCOP_EAL_OPTS"], f"host-setup.sh prints\n  {printed}\nflowcop.env has\n  "
              f"{env['FLOWCOP_EAL_OPTS']}")
        check(fake.calls() == [], f"the dry run called {fake.calls()}")
    finally:
        shutil.rmtree(tmp, True)


def config_info(text):
    line = [l for l in text.splitlines() if l.startswith("flowcop_config_info{")]
    check(len(line) == 1, "one flowcop_config_info sample")
    return dict(re.findall(r'(\w+)="([^"]*)"', line[0]))


def test_the_binary_runs_the_env_file_options_as_the_unit_would():
    """flowcop with the env file's options as user nobody, no capabilities: config matches, socket in place, SIGTERM -> 0"""
    env = read_env()
    eal = env["FLOWCOP_EAL_OPTS"].split()
    # This host's hardware, replaced by a capture and plain memory; the rest is used as written.
    for flag in ("-l", "-a", "--huge-dir", "--file-prefix"):
        check(take(eal, flag), f"FLOWCOP_EAL_OPTS has no {flag}")
    opts = env["FLOWCOP_OPTS"].split()
    check(take(opts, "--metrics-addr") == ["127.0.0.1:9781"], "--metrics-addr 127.0.0.1:9781 (prometheus.yml scrapes it)")
    tmp = tempfile.mkdtemp(prefix="flowcop-unit-run-")
    prefix = f"fct-unit-{os.getpid()}"
    with socket.socket() as s:  # a free port: the options may include --quiet, so no "metrics at" line to read
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/metrics"
    runtime = os.path.join(tmp, "run")
    os.mkdir(runtime, 0o750)
    setpriv = shutil.which("setpriv")
    as_unit = os.geteuid() == 0 and setpriv is not None
    exe, pcap = EXE, PCAP
    if as_unit:
        os.chown(runtime, 65534, 65534)
        os.chmod(tmp, 0o755)
        # The unprivileged user gets copies of the binary and the capture: a root user's checkout lives
        # in root's home (mode 0700), which that user cannot enter (nor does the installed unit read it).
        exe, pcap = shutil.copy(EXE, tmp), shutil.copy(PCAP, tmp)
        for path in (exe, pcap):
            os.chmod(path, 0o755)
    cmd = [exe, "--no-huge", "-m", "512", "--no-pci", "-l", "0", f"--file-prefix={prefix}",
           f"--vdev=net_pcap0,rx_pcap={pcap}"] + eal + ["--"] + opts + ["--metrics-addr", f"127.0.0.1:{port}"]
    if as_unit:
        cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs", "--bounding-set=-all",
               "--inh-caps=-all"] + cmd
    log = os.path.join(tmp, "stderr")
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, env=dict(os.environ, XDG_RUNTIME_DIR=runtime), cwd="/", stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=f)
    try:
        text, deadline = None, time.monotonic() + 30
        while text is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            try:
                text = scrape(url)
            except OSError:  # not listening yet
                pass
        check(text, f"no scrape from {url} (exit {proc.poll()}):\n{open(log).read()}")
        cfg = config_info(text)
        check("flowcop_up 1" in text, "flowcop_up 1")
        i = 0
        while i < len(opts):  # --opt VALUE, --opt=VALUE, or a bare switch (--quiet) shown as "on"
            opt, _, val = opts[i].partition("=")
            if not val:
                has_value = i + 1 < len(opts) and not opts[i + 1].startswith("--")
                val, i = (opts[i + 1], i + 1) if has_value else ("on", i)
            i += 1
            name = opt[2:].replace("-", "_")
            check(cfg.get(name) == val, f"{opt} {val}: running configuration has {name}={cfg.get(name)!r}")
        sock = os.path.join(runtime, "dpdk", prefix, "dpdk_telemetry.v2")
        check(os.path.exists(sock), f"no telemetry socket at {sock}: {os.listdir(runtime)}")
        if as_unit:
            check(os.stat(sock).st_uid == 65534, "the socket belongs to the service user")
        proc.send_signal(signal.SIGTERM)  # systemd's KillSignal=
        stop = float(unit_value("TimeoutStopSec").rstrip("s"))
        rc = proc.wait(timeout=stop)
        check(rc == 0, f"exit {rc} after SIGTERM:\n{open(log).read()}")
        if not as_unit:
            raise Skip("ran as the current user: needs root and setpriv to drop to an unprivileged user")
    finally:
        try:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        finally:
            shutil.rmtree(tmp, True)
            shutil.rmtree(f"/var/run/dpdk/{prefix}", True)


# ------------------------------------------------------------------ readiness, watchdog, system call filter

def test_the_unit_waits_for_the_network_notifies_and_filters_system_calls():
    """After=/Wants=network-online.target, Type=notify, WatchdogSec=, SystemCallFilter=@system-service"""
    lines = unit_lines()
    check("Wants=network-online.target" in lines, "Wants=network-online.target")
    check("network-online.target" in unit_value("After").split(), "After=network-online.target")
    check(unit_value("Type") == "notify" and unit_value("NotifyAccess") == "main", "Type=notify, NotifyAccess=main")
    check(unit_value("WatchdogSec").endswith("s") and float(unit_value("WatchdogSec")[:-1]) >= 10, "WatchdogSec=")
    check(unit_value("SystemCallFilter") == "@system-service" and unit_value("SystemCallErrorNumber") == "EPERM",
          "SystemCallFilter=@system-service with SystemCallErrorNumber=EPERM")


def group_calls(name):
    """A systemd system-call group's calls, nested groups expanded (systemd-analyze syscall-filter)."""
    out = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    calls = set()
    for line in out.splitlines()[1:]:
        w = line.strip()
        if w and not w.startswith("#"):
            calls |= group_calls(w) if w.startswith("@") else {w}
    return calls


def seccomp_allowing(calls):
    """A preexec_fn that loads a filter allowing `calls` and failing any other with EPERM: what
    SystemCallFilter= with SystemCallErrorNumber=EPERM makes systemd load before it execs the service."""
    lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    act_errno_eperm, act_allow = 0x00050000 | 1, 0x7fff0000
    numbers = [n for n in (lib.seccomp_syscall_resolve_name(c.encode()) for c in sorted(calls)) if n >= 0]

    def load():
        ctx = lib.seccomp_init(act_errno_eperm)
        for n in numbers:
            lib.seccomp_rule_add(ctx, act_allow, n, 0)
        if not ctx or lib.seccomp_load(ctx) != 0:
            os._exit(125)
    return load


class Frozen:
    """One thread of another process stopped alone (PTRACE_SEIZE + PTRACE_INTERRUPT: no group stop), as a
    worker lcore stuck in a loop would be, until the with block ends."""
    PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000

    def __init__(self, tid):
        self.tid = tid
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]

    def __enter__(self):
        if self.libc.ptrace(self.PTRACE_SEIZE, self.tid, None, None) != 0:
            raise Skip(f"ptrace of a thread refused here: {os.strerror(ctypes.get_errno())}")
        self.libc.ptrace(self.PTRACE_INTERRUPT, self.tid, None, None)
        os.waitpid(self.tid, self.WALL)
        return self

    def __exit__(self, *exc):
        self.libc.ptrace(self.PTRACE_DETACH, self.tid, None, None)


def worker_tid(pid, lcore):
    """The thread of worker lcore `lcore`: the main thread for the main lcore (the first of -l), else EAL's
    rte-worker-N (DPDK 22.11's name)."""
    if lcore == 0:
        return pid
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/comm") as f:
            if f.read().strip() == f"rte-worker-{lcore}":
                return int(tid)
    raise Fail(f"no thread rte-worker-{lcore} in {pid}")


def notified(sock, until):
    """The service-manager messages that arrive on `sock` before time `until`, each a set of lines."""
    out = []
    while time.monotonic() < until:
        sock.settimeout(max(0.01, until - time.monotonic()))
        try:
            out.append(set(sock.recv(4096).decode().splitlines()))
        except socket.timeout:
            break
    return out


def notify_run(lcores):
    if not shutil.which("systemd-analyze"):
        raise Skip("systemd-analyze not installed (it lists @system-service)")
    calls = group_calls("@system-service")
    tmp = tempfile.mkdtemp(prefix="flowcop-notify-")
    prefix = f"fct-notify-{os.getpid()}-{lcores.replace('-', '')}"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    ns.bind(os.path.join(tmp, "notify"))
    env = dict(os.environ, NOTIFY_SOCKET=os.path.join(tmp, "notify"), WATCHDOG_USEC="1000000")  # fed every 0.5 s
    cmd = [EXE, "--no-huge", "-m", "512", "--no-pci", "-l", lcores, f"--file-prefix={prefix}",
           f"--vdev=net_pcap0,rx_pcap={PCAP}", "--", "--metrics-addr", f"127.0.0.1:{port}", "--stop-when-idle-ms", "0"]
    log = os.path.join(tmp, "stderr")
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=f,
                                preexec_fn=seccomp_allowing(calls))
    try:
        got = []
        deadline = time.monotonic() + 60
        while not any("READY=1" in m for m in got) and time.monotonic() < deadline and proc.poll() is None:
            got += notified(ns, time.monotonic() + 0.5)
        check(any("READY=1" in m for m in got), f"no READY=1 (exit {proc.poll()}): {got}\n{open(log).read()}")
        ready = next(m for m in got if "READY=1" in m)
        check(any(line.startswith("STATUS=tracking on ") for line in ready), f"READY with a STATUS: {ready}")
        # Ready means serving: metrics answer and the control socket is there.
        check("flowcop_up 1" in scrape(f"http://127.0.0.1:{port}/metrics"), "READY=1 before metrics served")
        check(os.path.exists(f"/var/run/dpdk/{prefix}/flowcop_ctl.sock"), "READY=1 before the control socket")
        fed = [m for m in notified(ns, time.monotonic() + 2.5) if "WATCHDOG=1" in m]
        check(len(fed) >= 3, f"the watchdog fed {len(fed)} times in 2.5 s at WatchdogSec=1")
        last = int(lcores.split("-")[-1])
        with Frozen(worker_tid(proc.pid, last)):
            notified(ns, time.monotonic() + 0.6)  # a feed already decided may still arrive
            starved = [m for m in notified(ns, time.monotonic() + 2.0) if "WATCHDOG=1" in m]
        check(not starved, f"fed {len(starved)} times while lcore {last} was frozen")
        check(f"lcore {last} made no progress" in open(log).read(), "the stuck lcore is logged")
        fed = [m for m in notified(ns, time.monotonic() + 2.0) if "WATCHDOG=1" in m]
        check(len(fed) >= 2, f"the watchdog fed {len(fed)} times once lcore {last} ran again")
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=float(unit_value("TimeoutStopSec").rstrip("s")))
        check(rc == 0, f"exit {rc} under the filter:\n{open(log).read()}")
        check(any("STOPPING=1" in m for m in notified(ns, time.monotonic() + 1)), "STOPPING=1 at SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        ns.close()
        shutil.rmtree(tmp, True)
        shutil.rmtree(f"/var/run/dpdk/{prefix}", True)


def test_notify_and_watchdog_under_the_filter_on_one_lcore():
    """-l 0 under @system-service: READY=1 when serving, WATCHDOG=1 only while the worker runs, STOPPING=1, exit 0"""
    notify_run("0")


def test_notify_and_watchdog_under_the_filter_on_two_lcores():
    """-l 0-1 under @system-service: the same, lcore 1 (a handoff worker) frozen"""
    if os.cpu_count() < 2:
        raise Skip("one CPU")
    notify_run("0-1")


def test_calls_outside_the_filter_are_iopl_only():
    """strace -f of a run: every call flowcop makes is in @system-service but iopl (EAL's try at I/O ports)"""
    strace = shutil.which("strace")
    if not strace or not shutil.which("systemd-analyze"):
        raise Skip("strace or systemd-analyze not installed")
    tmp = tempfile.mkdtemp(prefix="flowcop-strace-")
    prefix = f"fct-strace-{os.getpid()}"
    try:
        out = os.path.join(tmp, "trace")
        p = subprocess.run([strace, "-f", "-qq", "-o", out, EXE, "--no-huge", "-m", "512", "--no-pci", "-l", "0-1"
                            if os.cpu_count() > 1 else "0", f"--file-prefix={prefix}",
                            f"--vdev=net_pcap0,rx_pcap={PCAP}", "--", "--stop-when-idle-ms", "500", "--quiet",
                            "--metrics-addr", "127.0.0.1:0"], capture_output=True, text=True, timeout=300)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}")
        used = set()
        with open(out) as f:
            for line in f:
                m = re.match(r"\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]", line)
                if m:
                    used.add(m.group(1))
        outside = used - group_calls("@system-service")
        check(outside <= {"iopl"}, f"calls outside @system-service: {sorted(outside)}")
    finally:
        shutil.rmtree(tmp, True)
        shutil.rmtree(f"/var/run/dpdk/{prefix}", True)


def test_a_transient_unit_under_systemd_run():
    """systemd-run with the unit's Type=notify, WatchdogSec= and SystemCallFilter=: active once READY, stops with 0"""
    with open("/proc/1/comm") as f:
        init = f.read().strip()
    if init != "systemd" or not shutil.which("systemd-run"):
        raise Skip(f"PID 1 is {init!r}, not systemd: no service manager to run a transient unit")
    name = f"flowcop-test-{os.getpid()}"
    prefix = f"fct-run-{os.getpid()}"
    props = ["Type=notify", "NotifyAccess=main", "WatchdogSec=10s", "SystemCallFilter=@system-service",
             "SystemCallErrorNumber=EPERM", "TimeoutStopSec=30s"]
    cmd = ["systemd-run", f"--unit={name}", "--collect", "--quiet"] + [a for p in props for a in ("-p", p)] + [
        EXE, "--no-huge", "-m", "512", "--no-pci", "-l", "0", f"--file-prefix={prefix}",
        f"--vdev=net_pcap0,rx_pcap={PCAP}", "--", "--stop-when-idle-ms", "0", "--metrics-addr", "127.0.0.1:0"]
    try:
        # systemd-run returns once the start job is done: for Type=notify, at READY=1.
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, f"systemd-run: exit {p.returncode}: {p.stderr}")
        state = subprocess.run(["systemctl", "show", "-p", "ActiveState", "-p", "SubState", name],
                               capture_output=True, text=True, timeout=30).stdout
        check("ActiveState=active" in state and "SubState=running" in state, state)
        time.sleep(12)  # longer than WatchdogSec: still running, so the watchdog was fed
        state = subprocess.run(["systemctl", "show", "-p", "ActiveState", "-p", "NRestarts", name],
                               capture_output=True, text=True, timeout=30).stdout
        check("ActiveState=active" in state, f"after WatchdogSec: {state}")
        p = subprocess.run(["systemctl", "stop", name], capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, f"systemctl stop: {p.stderr}")
    finally:
        subprocess.run(["systemctl", "stop", name], capture_output=True, timeout=60)
        shutil.rmtree(f"/var/run/dpdk/{prefix}", True)


# ------------------------------------------------------------------ install.sh

def installer(*args):
    p = subprocess.run(["bash", os.path.join(SD, "install.sh")] + list(args), capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def test_install_puts_each_file_in_place_keeps_an_edited_env_and_uninstalls():
    """install.sh --root: files and modes as the unit expects; an edited env survives; --uninstall removes the rest"""
    root = tempfile.mkdtemp(prefix="flowcop-install-")
    try:
        rc, out, err = installer("--root", root, "--binary", EXE)
        check(rc == 0, f"exit {rc}\n{out}{err}")
        want = {"/usr/local/bin/flowcop": 0o755, "/usr/local/sbin/flowcop-host-setup": 0o755,
                "/etc/systemd/system/flowcop.service": 0o644, "/etc/udev/rules.d/60-flowcop-vfio.rules": 0o644,
                "/etc/logrotate.d/flowcop": 0o644, "/etc/systemd/system/flowcop-logrotate.service": 0o644,
                "/etc/systemd/system/flowcop-logrotate.timer": 0o644,
                "/etc/flowcop/flowcop.env": 0o644, "/usr/local/bin/flowcopctl": 0o755,
                "/usr/local/share/man/man8/flowcopctl.8": 0o644,
                "/usr/local/share/bash-completion/completions/flowcopctl": 0o644}
        for path, mode in want.items():
            st = os.stat(root + path)
            check(st.st_mode & 0o777 == mode, f"{path}: mode {oct(st.st_mode & 0o777)}, want {oct(mode)}")
        check(open(root + "/etc/systemd/system/flowcop.service").read() == open(UNIT).read(), "unit copied as is")
        check("useradd" not in out, "--root creates no user on this machine")
        for path in INSTALLED:
            check(os.path.exists(root + path), f"the unit needs {path}")
        with open(root + "/etc/flowcop/flowcop.env", "a") as f:
            f.write("# edited\n")
        rc, out, err = installer("--root", root, "--binary", EXE)
        check(rc == 0 and open(root + "/etc/flowcop/flowcop.env").read().endswith("# edited\n"), "edited env kept")
        check(open(root + "/etc/flowcop/flowcop.env.dist").read() == open(ENV).read() and ".dist" in out, out)
        rc, out, err = installer("--root", root, "--uninstall")
        check(rc == 0, f"uninstall: exit {rc}\n{err}")
        left = sorted(os.path.join(d, f)[len(root):] for d, _, fs in os.walk(root) for f in fs)
        check(left == ["/etc/flowcop/flowcop.env", "/etc/flowcop/flowcop.env.dist"], f"left behind: {left}")
        rc, out, err = installer("--root", root, "--binary", os.path.join(root, "nothing"))
        check(rc == 1 and "no flowcop binary" in err, err)
        rc, out, err = installer("--frobnicate")
        check(rc == 2 and "unknown argument '--frobnicate'" in err and "usage:" in err, err)
    finally:
        shutil.rmtree(root, True)


def test_install_dry_run_on_this_machine_changes_nothing():
    """install.sh --dry-run: prints the user, the eleven files and the reloads it would do, writes nothing"""
    rc, out, err = installer("--dry-run", "--binary", EXE)
    check(rc == 0, f"exit {rc}\n{err}")
    would = [l for l in out.splitlines() if l.startswith("would run: ")]
    installs = [l.split()[-1] for l in would if " install -D " in l]
    check(installs == ["/usr/local/bin/flowcop", "/usr/local/sbin/flowcop-host-setup",
                       "/etc/systemd/system/flowcop.service", "/etc/udev/rules.d/60-flowcop-vfio.rules",
                       "/etc/logrotate.d/flowcop", "/etc/systemd/system/flowcop-logrotate.service",
                       "/etc/systemd/system/flowcop-logrotate.timer",
                       "/usr/local/bin/flowcopctl", "/usr/local/share/man/man8/flowcopctl.8",
                       "/usr/local/share/bash-completion/completions/flowcopctl"]
          + ([] if os.path.exists("/etc/flowcop/flowcop.env") else ["/etc/flowcop/flowcop.env"]), would)
    check(not any(l.startswith("running: ") for l in out.splitlines()), out)


if __name__ == "__main__":
    run([test_verify_accepts_the_unit_without_warnings, test_the_event_log_rotation_units_verify_and_come_with_flowcop,
         test_security_review_finds_no_capability_and_a_user_of_its_own,
         test_the_environment_file_defines_exactly_what_the_unit_uses,
         test_host_setup_accepts_its_options_and_prints_the_eal_line_of_the_env_file,
         test_the_binary_runs_the_env_file_options_as_the_unit_would,
         test_the_unit_waits_for_the_network_notifies_and_filters_system_calls,
         test_notify_and_watchdog_under_the_filter_on_one_lcore, test_notify_and_watchdog_under_the_filter_on_two_lcores,
         test_calls_outside_the_filter_are_iopl_only, test_a_transient_unit_under_systemd_run,
         test_install_puts_each_file_in_place_keeps_an_edited_env_and_uninstalls,
         test_install_dry_run_on_this_machine_changes_nothing])
