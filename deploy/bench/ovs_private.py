# SPDX-License-Identifier: BSD-3-Clause
"""A private Open vSwitch with DPDK: its own database, run directory and network namespace.

Started for one benchmark run and stopped after it, never the system service and never touching
/etc/openvswitch or /var/run/openvswitch: ovsdb-server serves a database created in a fresh
temporary run directory (every socket, pid file and ctl file lives there, so several can run side by
side), and ovs-vswitchd-dpdk (Debian's openvswitch-switch-dpdk) is started directly on it, inside a
network namespace of its own (`unshare --net`), because a netdev bridge's internal port is a tap
device that would otherwise appear among the host's interfaces. Every OVS process is pinned to
`main_cpu` (the PMD threads set their own affinity from pmd-cpu-mask), and so is every ovs-vsctl,
ovs-appctl and ovs-ofctl this class runs, so nothing but the PMD thread shares the polling CPU.

stop() ends both daemons by PID (SIGTERM, then SIGKILL after a bounded wait) and removes the run
directory; every command has a timeout. Needs the Debian packages openvswitch-switch-dpdk
(ovs-vswitchd-dpdk, which pulls in openvswitch-switch and -common: ovsdb-server, ovsdb-tool,
ovs-vsctl, ovs-appctl, ovs-ofctl) and util-linux (unshare), and root.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
PROGRAMS = ("ovsdb-tool", "ovsdb-server", "ovs-vsctl", "ovs-appctl", "ovs-ofctl", "unshare")
PACKAGES = "openvswitch-switch-dpdk"
BRIDGE = "br0"
STOP_WAIT_S = 60  # a vswitchd holding 10^7 connections takes seconds to free them


def missing_programs(vswitchd=VSWITCHD):
    """What is not installed, as a list of names (empty: everything is there)."""
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if not os.access(vswitchd, os.X_OK):
        missing.append(vswitchd)
    if not os.path.exists(SCHEMA):
        missing.append(SCHEMA)
    return missing


class OvsError(RuntimeError):
    pass


class PrivateOvs:
    """One private ovsdb-server + ovs-vswitchd-dpdk. Use as a context manager: stop() always runs."""

    def __init__(self, log_prefix, main_cpu, vswitchd=VSWITCHD, command_timeout_s=60):
        # Unix socket paths are limited to 107 bytes: the run directory is short, in /tmp, not in the
        # (possibly deep) work directory, which gets the logs.
        self.rundir = tempfile.mkdtemp(prefix="fc-ovs-")
        self.log_prefix = log_prefix
        self.main_cpu = main_cpu
        self.vswitchd_path = vswitchd
        self.timeout = command_timeout_s
        self.db_sock = os.path.join(self.rundir, "db.sock")
        self.ctl = os.path.join(self.rundir, "ovs-vswitchd.ctl")
        self.mgmt = "unix:" + os.path.join(self.rundir, BRIDGE + ".mgmt")
        self.env = dict(os.environ, OVS_RUNDIR=self.rundir, OVS_LOGDIR=self.rundir, OVS_DBDIR=self.rundir,
                        OVS_SYSCONFDIR=self.rundir)
        self.env.pop("LD_PRELOAD", None)
        self.db = None
        self.vswitchd = None
        self._outputs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _pin(self):
        os.setsid()  # its own session: its own scheduler autogroup (dpdk_probe.set_priority)
        os.sched_setaffinity(0, {self.main_cpu})

    def run(self, *cmd, timeout=None):
        """Runs an OVS client command pinned to main_cpu; its stdout, or OvsError with its stderr."""
        try:
            p = subprocess.run(list(cmd), env=self.env, capture_output=True, text=True,
                               timeout=timeout or self.timeout,
                               preexec_fn=lambda: os.sched_setaffinity(0, {self.main_cpu}))
        except subprocess.TimeoutExpired:
            raise OvsError("%s: no answer in %s s" % (" ".join(cmd), timeout or self.timeout))
        if p.returncode != 0:
            raise OvsError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
        return p.stdout

    def vsctl(self, *args, wait=True, timeout=None):
        opts = ["--db=unix:" + self.db_sock, "--timeout=%d" % (timeout or self.timeout)]
        return self.run("ovs-vsctl", *(opts + ([] if wait else ["--no-wait"]) + list(args)),
                        timeout=(timeout or self.timeout) + 5)

    def appctl(self, *args, timeout=None):
        return self.run("ovs-appctl", "-t", self.ctl, "--timeout=%d" % (timeout or self.timeout), *args,
                        timeout=(timeout or self.timeout) + 5)

    def ofctl(self, *args):
        return self.run("ovs-ofctl", "--timeout=%d" % self.timeout, *args)

    def _spawn(self, name, cmd, env):
        out = open("%s-%s.out" % (self.log_prefix, name), "w")
        self._outputs.append(out)
        out.write(" ".join(cmd) + "\n")
        out.flush()
        return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=self._pin)

    def start_db(self):
        """Creates the database and starts ovsdb-server on it; returns once it answers."""
        conf = os.path.join(self.rundir, "conf.db")
        self.run("ovsdb-tool", "create", conf, SCHEMA)
        self.db = self._spawn("ovsdb-server", [
            "ovsdb-server", conf, "--remote=punix:" + self.db_sock,
            "--pidfile=" + os.path.join(self.rundir, "ovsdb-server.pid"),
            "--unixctl=" + os.path.join(self.rundir, "ovsdb-server.ctl"),
            "--log-file=%s-ovsdb-server.log" % self.log_prefix], self.env)
        deadline = time.monotonic() + self.timeout
        while not os.path.exists(self.db_sock):
            if self.db.poll() is not None or time.monotonic() > deadline:
                raise OvsError("ovsdb-server did not start (exit %s); see %s-ovsdb-server.out"
                               % (self.db.poll(), self.log_prefix))
            time.sleep(0.05)
        self.vsctl("init", wait=False)

    def start_vswitchd(self, extra_env=None):
        """Starts ovs-vswitchd-dpdk in a network namespace of its own, with the configuration already
        in the database (dpdk-init etc.): EAL starts at once. Returns once its control socket answers."""
        env = dict(self.env, **(extra_env or {}))
        self.vswitchd = self._spawn("ovs-vswitchd", [
            "unshare", "--net", "--", self.vswitchd_path, "unix:" + self.db_sock,
            "--pidfile=" + os.path.join(self.rundir, "ovs-vswitchd.pid"), "--unixctl=" + self.ctl,
            "--log-file=%s-ovs-vswitchd.log" % self.log_prefix], env)
        deadline = time.monotonic() + self.timeout
        while True:
            if self.vswitchd.poll() is not None:
                raise OvsError("ovs-vswitchd exited (%s) at start; see %s-ovs-vswitchd.log"
                               % (self.vswitchd.returncode, self.log_prefix))
            if os.path.exists(self.ctl):
                try:
                    self.appctl("version", timeout=5)
                    return
                except OvsError:
                    pass
            if time.monotonic() > deadline:
                raise OvsError("ovs-vswitchd did not answer in %d s; see %s-ovs-vswitchd.log"
                               % (self.timeout, self.log_prefix))
            time.sleep(0.2)

    @property
    def vswitchd_pid(self):
        # unshare (no --fork) execs the daemon: the child's PID is ovs-vswitchd's.
        return self.vswitchd.pid if self.vswitchd else None

    def stop(self):
        """Ends ovs-vswitchd, then ovsdb-server, by PID, each within STOP_WAIT_S; removes the run directory."""
        for proc in (self.vswitchd, self.db):
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_WAIT_S)
        for out in self._outputs:
            out.close()
        self._outputs = []
        shutil.rmtree(self.rundir, ignore_errors=True)
