# SPDX-License-Identifier: BSD-3-Clause
"""deploy/logrotate/flowcop with the real logrotate, as root, with the user it drops to and creates for.

usage: test_logrotate.py build/app/flowcop REPO_ROOT

The config is run as written except for what names this host: its path pattern points at a
temporary directory, its user and group (flowcop, which install.sh creates) are nobody/nogroup, and
its postrotate's `systemctl reload flowcop.service` becomes a marker file's append.
- logrotate -f renames events.jsonl with its date suffix, creates a new one 0640 for the user, and runs
  postrotate once for every file it rotated (sharedscripts).
- two logrotate -f within one second (by time(2), the clock logrotate names a rotation by): the second
  finds its dateext name taken and is refused, exit 1, "already exists"; the live file keeps what was
  written since, the first rotation is kept (compressed by the refused run), nothing is lost.
A running flowcop's events rotated under the same file (SIGHUP reopens --events, nothing lost), twice,
a second apart, is tests/app/process/test_signals.py's test.
"""
import ctypes
import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
from tap import Skip, check, run  # noqa: E402

EXE, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
CONFIG = os.path.join(REPO, "deploy", "logrotate", "flowcop")
UNIT = os.path.join(REPO, "deploy", "systemd", "flowcop.service")
LOGROTATE = shutil.which("logrotate") or "/usr/sbin/logrotate"
_libc = ctypes.CDLL(None)
_libc.time.restype = ctypes.c_long  # time_t, read once by logrotate as it starts: its dateext second


def local_config(tmp, postrotate):
    """The shipped config aimed at tmp/log, user nobody, and the given postrotate command."""
    text = open(CONFIG).read()
    check("/var/log/flowcop/*.jsonl {" in text and "su flowcop flowcop" in text
          and "create 0640 flowcop flowcop" in text, "the config's pattern, su and create lines")
    reload = "systemctl reload flowcop.service >/dev/null 2>&1 || true"
    check(reload in text, "postrotate reloads the unit")
    unit = open(UNIT).read()
    check("ExecReload=/bin/kill -HUP $MAINPID" in unit, "the unit's reload is a SIGHUP to flowcop")
    os.chmod(tmp, 0o755)  # mkdtemp's 0700 would keep logrotate's su user out
    log = os.path.join(tmp, "log")
    os.makedirs(log)
    os.chown(log, 65534, 65534)  # as the unit's LogsDirectory= makes it: owned by the service user
    text = (text.replace("/var/log/flowcop/", log + "/").replace("su flowcop flowcop", "su nobody nogroup")
            .replace("create 0640 flowcop flowcop", "create 0640 nobody nogroup")
            .replace(reload, postrotate))
    path = os.path.join(tmp, "logrotate.conf")
    with open(path, "w") as f:
        f.write(text)
    return path, log


def logrotate(conf, tmp):
    return subprocess.run([LOGROTATE, "-f", "-s", os.path.join(tmp, "state"), conf], capture_output=True,
                          text=True, timeout=60)


def needs_root_and_logrotate():
    # deploy/install-deps.sh installs logrotate: without it the shipped config is untested, a failure.
    check(os.path.exists(LOGROTATE), "logrotate is installed (deploy/install-deps.sh)")
    if os.geteuid() != 0:
        raise Skip("needs root (the config's su and create)")


def test_the_config_renames_creates_and_runs_postrotate_once():
    """logrotate -f: events.jsonl renamed with a date, a new one 0640 nobody, postrotate run once"""
    needs_root_and_logrotate()
    tmp = tempfile.mkdtemp(prefix="flowcop-logrotate-")
    try:
        marker = os.path.join(tmp, "log", "postrotate-ran")  # scripts run as the su user: in its directory
        conf, log = local_config(tmp, f"echo x >> {marker}")
        for name in ("events.jsonl", "other.jsonl"):
            with open(os.path.join(log, name), "w") as f:
                f.write('{"event":"start"}\n')
        p = logrotate(conf, tmp)
        check(p.returncode == 0, f"logrotate: exit {p.returncode}\n{p.stderr}")
        names = sorted(os.listdir(log))
        rotated = [n for n in names if re.fullmatch(r"events\.jsonl-\d{8}-\d+", n)]
        check(len(rotated) == 1 and "events.jsonl" in names, f"{names}")
        st = os.stat(os.path.join(log, "events.jsonl"))
        check((st.st_mode & 0o777, st.st_uid, st.st_size) == (0o640, 65534, 0), f"new file {oct(st.st_mode)} {st.st_uid}")
        ran = open(marker).read() if os.path.exists(marker) else None
        check(ran == "x\n", f"postrotate ran once for both files (sharedscripts): {ran!r}\n{p.stderr}")
    finally:
        shutil.rmtree(tmp, True)


def test_a_second_rotation_in_the_same_second_is_refused_and_loses_nothing():
    """logrotate -f twice in one second: the second refused (exit 1, name taken), the live file untouched"""
    needs_root_and_logrotate()
    for attempt in range(5):  # until both runs fall in one second of time(2); nearly always the first
        tmp = tempfile.mkdtemp(prefix="flowcop-logrotate-")
        try:
            conf, log = local_config(tmp, "true")
            path = os.path.join(log, "events.jsonl")
            with open(path, "w") as f:
                f.write('{"event":"first"}\n')
            before = _libc.time(None)
            first = logrotate(conf, tmp)
            with open(path, "a") as f:  # what flowcop writes after the reopen
                f.write('{"event":"second"}\n')
            second = logrotate(conf, tmp)
            after = _libc.time(None)
            if before != after:
                continue  # the second run may have had a second of its own: not this case
            check(first.returncode == 0, f"the first logrotate: exit {first.returncode}\n{first.stderr}")
            names = sorted(os.listdir(log))
            rotated = f"events.jsonl-{time.strftime('%Y%m%d', time.localtime(before))}-{before}"
            check(second.returncode == 1 and f"{rotated} already exists" in second.stderr,
                  f"the second refused, its name taken: exit {second.returncode}\n{second.stderr}\n{names}")
            check(names == ["events.jsonl", rotated + ".gz"], f"the live file and the first rotation only: {names}")
            check(open(path).read() == '{"event":"second"}\n', "the live file keeps what came after the first")
            with gzip.open(os.path.join(log, rotated + ".gz"), "rt") as f:
                check(f.read() == '{"event":"first"}\n', "the first rotation holds what was written before it")
            return
        finally:
            shutil.rmtree(tmp, True)
    check(False, "two logrotate runs never fell within one second of time(2) in 5 attempts")


if __name__ == "__main__":
    run([test_the_config_renames_creates_and_runs_postrotate_once,
         test_a_second_rotation_in_the_same_second_is_refused_and_loses_nothing])
