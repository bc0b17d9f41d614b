# SPDX-License-Identifier: BSD-3-Clause
"""deploy/host-setup.sh: argument handling, every check, dry runs, real runs and --undo.

usage: test_host_setup.py REPO_ROOT

Real runs happen only on a fake host (fakehost.py: a sysfs/procfs tree in a temporary directory
and recording stubs for dpdk-devbind.py, dpdk-hugepages.py and modprobe): nothing is ever bound
or reserved on this machine. Against this machine's own /sys the script runs only with --dry-run
or --list, with the same recording stubs, and the test checks that none of them was called.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from fakehost import FakeHost  # noqa: E402
from tap import Skip, check, run  # noqa: E402

REPO = sys.argv[1]
SCRIPT = os.path.join(REPO, "deploy", "host-setup.sh")
A, B, ETH0, G1, G2, DISK = "0000:3b:00.0", "0000:3b:00.1", "0000:00:03.0", "0000:5e:00.0", "0000:5e:00.1", "0000:00:02.0"


def sh(args, env=None, timeout=60):
    p = subprocess.run(["bash", SCRIPT] + args, env=env, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


class Host:
    """A fresh fake host in its own temporary directory, for one test."""

    def __init__(self, **kw):
        self.tmp = tempfile.mkdtemp(prefix="flowcop-hostsetup-")
        self.fake = FakeHost(self.tmp, **kw)
        self.huge_dir = os.path.join(self.tmp, "hugepages-flowcop")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.tmp, True)

    def setup(self, *extra, dry=True, env=None, nic=A, lcores="8-11", user="nobody"):
        args = (["--dry-run"] if dry else []) + ["--nic", nic, "--lcores", lcores, "--user", user,
                                                 "--huge-dir", self.huge_dir, "--state-dir", self.fake.state_dir]
        return sh(args + list(extra), env=self.fake.env(**(env or {})))

    def undo(self, dry=False):
        return sh((["--dry-run"] if dry else []) + ["--undo", "--state-dir", self.fake.state_dir], env=self.fake.env())

    def state(self):
        p = os.path.join(self.fake.state_dir, "host-setup.state")
        return open(p).read().splitlines() if os.path.exists(p) else None


def readable_copy(path, tmp):
    """A copy of path in tmp that every user can read (and tmp, made by mkdtemp as 0700, enterable)."""
    os.chmod(tmp, 0o755)
    copy = os.path.join(tmp, os.path.basename(path))
    shutil.copy(path, copy)
    os.chmod(copy, 0o755)
    return copy


def would(out):
    return [l[len("would run: "):] for l in out.splitlines() if l.startswith("would run: ")]


# ------------------------------------------------------------------ argument handling

def test_usage_errors_exit_2_naming_the_argument():
    """each bad argument exits 2 with one line naming it and the usage"""
    with Host() as h:
        env = h.fake.env()
        cases = [([], "--nic is required"),
                 (["--lcores", "0"], "--nic is required"),
                 (["--nic", A], "--lcores is required"),
                 (["--frobnicate"], "unknown argument '--frobnicate'"),
                 (["--nic"], "--nic needs a value"),
                 (["--nic", ""], "--nic needs a value"),
                 (["--nic", A, "--lcores", "a-b"], "--lcores 'a-b' is not a CPU list"),
                 (["--nic", A, "--lcores", "5-2"], "--lcores '5-2' is not a CPU list"),
                 (["--nic", A, "--lcores", "1,,2"], "--lcores '1,,2' is not a CPU list"),
                 (["--nic", A, "--lcores", "0", "--hugepages", "2X"], "--hugepages '2X' is not a size"),
                 (["--nic", A, "--lcores", "0", "--pagesize", "huge"], "--pagesize 'huge' is not a size")]
        for args, want in cases:
            rc, out, err = sh(["--dry-run"] + args, env=env)
            check(rc == 2, f"{args}: exit {rc}, want 2\n{err}")
            check(want in err and "usage:" in err, f"{args}: stderr lacks {want!r}:\n{err}")
        check(h.fake.calls() == [], f"a usage error ran a tool: {h.fake.calls()}")


def test_help_prints_every_mode():
    """--help exits 0 and shows the setup, --undo and --list forms"""
    rc, out, _ = sh(["--help"])
    check(rc == 0, f"exit {rc}")
    for want in ("--dry-run", "--nic", "--lcores", "--hugepages", "--undo", "--list", "--state-dir"):
        check(want in out, f"--help lacks {want}:\n{out}")


def test_real_run_needs_root():
    """without --dry-run a non-root user is refused before anything is read or run"""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        raise Skip("needs root and setpriv to run the script as another user")
    with Host() as h:
        # nobody runs a copy: a root user's checkout lives in root's home (mode 0700), which nobody
        # cannot enter, and the copy is the same script.
        script = readable_copy(SCRIPT, h.tmp)
        p = subprocess.run([setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "bash", script,
                            "--nic", A, "--lcores", "8", "--state-dir", h.fake.state_dir],
                           env=h.fake.env(), capture_output=True, text=True, timeout=30, cwd="/")
        check(p.returncode == 1 and "must run as root" in p.stderr and "--dry-run" in p.stderr, p.stderr)
        check(h.fake.calls() == [], f"tools ran: {h.fake.calls()}")


# ------------------------------------------------------------------ dry runs on a fake host

def test_dry_run_prints_the_whole_plan_and_changes_nothing():
    """--dry-run prints each command in order, calls no tool, writes no state, leaves the tree as it was"""
    with Host() as h:
        before = h.fake.digest()
        rc, out, err = h.setup()
        check(rc == 0, f"exit {rc}\n{out}{err}")
        want = ["dpdk-hugepages -p 2048K --reserve 2097152K --node 1".replace("dpdk-hugepages", h.fake.stubs["dpdk-hugepages"]),
                f"mkdir -p {h.huge_dir}",
                f"{h.fake.stubs['dpdk-hugepages']} -p 2048K --mount -d {h.huge_dir} -U 65534 -G 65534",
                f"{h.fake.stubs['modprobe']} vfio-pci",
                f"{h.fake.stubs['dpdk-devbind']} --bind=vfio-pci {A}"]
        check(would(out) == want, f"plan:\n{would(out)}\nwant:\n{want}")
        check(h.fake.calls() == [], f"dry run called {h.fake.calls()}")
        check(h.fake.digest() == before, "dry run changed the fake host")
        check(h.state() is None, "dry run wrote the state file")
        check("NUMA: 0000:3b:00.0 and lcores 8-11 are on node 1" in out, out)
        check(f'FLOWCOP_EAL_OPTS="-l 8-11 -a {A} --huge-dir {h.huge_dir} --iova-mode=va' in out, out)


def test_interface_names_and_short_addresses_resolve():
    """--nic takes an interface name, a short bus:slot.func or several NICs (repeated or comma-separated)"""
    with Host() as h:
        for nic in ("ens1f0", "3b:00.0", "0000:3B:00.0"):
            rc, out, err = h.setup(nic=nic)
            check(rc == 0 and f"--bind=vfio-pci {A}" in out, f"--nic {nic}: exit {rc}\n{out}{err}")
        rc, out, err = h.setup("--nic", "ens1f1", nic=A)
        binds = [c for c in would(out) if "--bind=" in c]
        check(rc == 0 and len(binds) == 2 and binds[1].endswith(B), f"two NICs: {binds}\n{err}")


def test_numa_mismatch_warns_with_the_fix():
    """lcores off the NIC's node: a warning naming the NIC's node and its CPUs; hugepages go to the lcores' node"""
    with Host() as h:
        rc, out, err = h.setup(lcores="0-3")
        check(rc == 0, f"a NUMA mismatch is a warning, not an error: exit {rc}\n{err}")
        check("warning: 0000:3b:00.0 is on NUMA node 1 but lcores 0-3 are not" in err, err)
        check("choose lcores from node 1 (CPUs 8-15)" in err, err)
        check(any(c.endswith("--node 0") for c in would(out)), f"hugepages not on node 0: {would(out)}")
        rc, out, err = h.setup(lcores="6-9")
        nodes = sorted(c.split()[-1] for c in would(out) if "--reserve" in c)
        check(nodes == ["0", "1"] and "lcores 6-7 are not" in err, f"split lcores: {nodes}\n{err}")


def test_no_iommu_is_an_error_with_the_kernel_fix():
    """no IOMMU groups: an error giving the vendor's kernel parameters, or the firmware when they are already set"""
    for vendor, cmdline, want in (("GenuineIntel", "ro quiet", "add 'intel_iommu=on iommu=pt' to GRUB_CMDLINE_LINUX"),
                                  ("AuthenticAMD", "ro quiet", "add 'amd_iommu=on iommu=pt'"),
                                  ("GenuineIntel", "ro intel_iommu=on", "enable VT-d (Intel) or AMD-Vi")):
        with Host(iommu=False, vendor=vendor, cmdline=cmdline) as h:
            rc, out, err = h.setup()
            check(rc == 1 and want in err, f"{vendor} {cmdline}: exit {rc}\n{err}")
            check("dry run: 1 problem(s) above must be fixed first" in err, err)
            check(would(out), "a failing dry run still shows the plan")
            rc, out, err = h.setup(dry=False)
            check(rc == 1 and "nothing was changed" in err and h.fake.calls() == [],
                  f"a real run went on past a failed check: {h.fake.calls()}\n{err}")


def test_the_hosts_own_interface_is_refused():
    """a NIC whose interface carries routes is refused by name and by address; nothing else is planned for it"""
    with Host() as h:
        for nic in ("eth0", ETH0):
            rc, out, err = h.setup(nic=nic)
            check(rc == 1 and f"refusing {ETH0}: its interface eth0 carries this host's routes" in err, err)
            check("no NIC left to bind" in err, err)
            check(not any("--bind" in c for c in would(out)), f"planned to bind eth0: {would(out)}")


def test_devices_that_cannot_be_taken_are_named():
    """a missing address lists the host's NICs, a non-network device and an unknown name are refused"""
    with Host() as h:
        rc, out, err = h.setup(nic="0000:af:00.0")
        check(rc == 1 and "no PCI device 0000:af:00.0; network PCI devices on this host:" in err, err)
        check(A in err and "ACTIVE" in err and DISK not in err, f"device list:\n{err}")
        rc, out, err = h.setup(nic=DISK)
        check(rc == 1 and f"{DISK} is not a network device (PCI class 0x010802)" in err, err)
        rc, out, err = h.setup(nic="wlan7")
        check(rc == 1 and "'wlan7' is neither a PCI address" in err, err)


def test_a_host_without_network_devices_says_so():
    """no network PCI device at all: --list and a setup both say the host has none and what to use instead"""
    with Host(devices={DISK: ("0x010802", "nvme", 0, None, 2)}, routes=()) as h:
        rc, out, err = sh(["--list"], env=h.fake.env())
        check(rc == 0 and "this host has no network PCI device" in out and "--vdev=net_pcap0" in out, out)
        rc, out, err = h.setup(nic="0000:3b:00.0")
        check(rc == 1 and "this host has no network PCI device" in err, err)


def test_shared_iommu_group_needs_the_whole_group():
    """a NIC sharing its IOMMU group with a kernel-driven device is an error; naming both is fine"""
    with Host() as h:
        rc, out, err = h.setup(nic=G1, lcores="0-3")
        check(rc == 1 and f"{G1} shares IOMMU group 40 with {G2} (driver ixgbe)" in err, err)
        rc, out, err = h.setup("--nic", G2, nic=G1, lcores="0-3")
        check(rc == 0, f"both halves of the group: exit {rc}\n{err}")


def test_offline_lcores_and_bad_hugepage_sizes_are_errors():
    """lcores that do not exist, unsupported page sizes, sizes that are not whole pages and unknown users"""
    with Host() as h:
        rc, _, err = h.setup(lcores="14-17")
        check(rc == 1 and "lcore 16 is not an online CPU of this host (online: 0-15)" in err
              and "lcore 17" in err and "lcore 15" not in err, err)
        rc, _, err = h.setup("--pagesize", "16M")
        check(rc == 1 and "hugepage size 16384 kB is not supported" in err, err)
        rc, _, err = h.setup("--hugepages", "3M")
        check(rc == 1 and "--hugepages 3M is not a multiple of the 2048 kB page size" in err, err)
        rc, _, err = h.setup(user="no-such-user-flowcop")
        check(rc == 1 and "user 'no-such-user-flowcop' does not exist" in err, err)
        rc, out, err = h.setup("--pagesize", "1G", "--hugepages", "4G")
        check(rc == 0 and any("-p 1048576K --reserve 4194304K --node 1" in c for c in would(out)), f"{out}{err}")


# ------------------------------------------------------------------ real runs on a fake host

def test_setup_then_again_then_undo_restores_the_host():
    """a real run binds, reserves and mounts; a second run changes nothing; --undo restores the original host"""
    with Host() as h:
        before = h.fake.digest()
        rc, out, err = h.setup(dry=False)
        check(rc == 0, f"setup: exit {rc}\n{out}{err}")
        check(h.fake.driver(A) == "vfio-pci" and h.fake.hugepages(1) == 1024 and h.fake.hugepages(0) == 0,
              f"driver {h.fake.driver(A)}, node1 pages {h.fake.hugepages(1)}")
        check([m for m in h.fake.mounts() if m[1] == h.huge_dir and m[2] == "hugetlbfs"
               and "uid=65534" in m[3]], f"no hugetlbfs owned by nobody at {h.huge_dir}: {h.fake.mounts()}")
        check(h.fake.driver(B) == "i40e", "the other port was touched")
        check(h.state() == ["hugepages 1 2048 0", f"mount {h.huge_dir}", f"bind {A} i40e"], f"state {h.state()}")
        calls = h.fake.calls()
        check([c.split()[0] for c in calls] == ["dpdk-hugepages", "dpdk-hugepages", "modprobe", "dpdk-devbind"], calls)

        n = len(calls)
        rc, out, err = h.setup(dry=False)
        check(rc == 0 and len(h.fake.calls()) == n, f"second run called {h.fake.calls()[n:]}\n{err}")
        for want in ("node 1 already has 1024 pages", f"already mounted at {h.huge_dir}", f"{A} already bound to vfio-pci"):
            check(want in out, f"second run lacks {want!r}:\n{out}")
        check(len(h.state()) == 3, f"second run rewrote the state: {h.state()}")

        rc, out, err = h.undo(dry=True)
        check(rc == 0 and len(h.fake.calls()) == n and h.state(), f"undo --dry-run acted: {h.fake.calls()[n:]}")
        check(would(out) == [f"{h.fake.stubs['dpdk-devbind']} -b i40e {A}",
                             f"{h.fake.stubs['dpdk-hugepages']} -u -d {h.huge_dir}",
                             f"{h.fake.stubs['dpdk-hugepages']} -p 2048K --reserve 0K --node 1"], would(out))
        rc, out, err = h.undo()
        check(rc == 0, f"undo: exit {rc}\n{out}{err}")
        check(h.fake.driver(A) == "i40e" and os.path.exists(f"{h.fake.root}/sys/class/net/ens1f0"), "not rebound")
        check(h.fake.hugepages(1) == 0 and not [m for m in h.fake.mounts() if m[1] == h.huge_dir], "not released")
        check(h.state() is None, "state file left behind")
        # What --undo rightly leaves: the mount point it made, and vfio-pci loaded (unloading a
        # module other devices may use is not its job). The stub log is not part of the host.
        shutil.rmtree(h.huge_dir)
        os.rmdir(f"{h.fake.root}/sys/bus/pci/drivers/vfio-pci")
        open(h.fake.log, "w").close()
        check(h.fake.digest() == before, "the host after --undo differs from before setup")
        rc, out, _ = h.undo()
        check(rc == 0 and "nothing to undo" in out, out)


def test_undo_restores_what_was_there_before_not_zero():
    """an unbound device goes back to no driver and a node with pages keeps its original count"""
    devices = {A: ("0x020000", "i40e", 1, "ens1f0", 30)}
    with Host(devices=devices, hugepages={(1, "2048"): 100}, routes=()) as h:
        os.unlink(f"{h.fake.root}/sys/bus/pci/devices/{A}/driver")  # no driver, as after a manual unbind
        os.makedirs(f"{h.fake.root}/sys/bus/pci/drivers/vfio-pci")
        rc, out, err = h.setup(dry=False)
        check(rc == 0 and h.fake.hugepages(1) == 1024, f"{out}{err}")
        check("modprobe" not in " ".join(h.fake.calls()), "modprobe ran with vfio-pci loaded")
        check(h.state()[0] == "hugepages 1 2048 100" and h.state()[-1] == f"bind {A} none", h.state())
        rc, out, err = h.undo()
        check(rc == 0 and h.fake.driver(A) == "none" and h.fake.hugepages(1) == 100, f"{out}{err}")
        check(f"dpdk-devbind -u {A}" in h.fake.calls(), h.fake.calls())


def test_undo_leaves_a_device_someone_else_rebound():
    """--undo does not take back a NIC that is no longer on vfio-pci"""
    with Host() as h:
        check(h.setup(dry=False)[0] == 0, "setup")
        os.unlink(f"{h.fake.root}/sys/bus/pci/devices/{A}/driver")
        os.symlink("../../drivers/ixgbe", f"{h.fake.root}/sys/bus/pci/devices/{A}/driver")
        rc, out, err = h.undo()
        check(rc == 0 and f"{A} is on ixgbe, not vfio-pci: left as is" in out, out)
        check(not any(c.startswith("dpdk-devbind") for c in h.fake.calls()[4:]), h.fake.calls())


def test_a_short_reservation_stops_before_binding():
    """when the kernel grants fewer hugepages than asked, the run fails with the boot-time fix and binds nothing"""
    with Host() as h:
        rc, out, err = h.setup(dry=False, env={"STUB_HUGE_LIMIT": "300"})
        check(rc == 1, f"exit {rc}\n{out}{err}")
        check("Unable to set pages" in err or "node 1 has 300 of 1024 hugepages" in err, err)
        check(h.fake.driver(A) == "i40e" and not any("devbind" in c for c in h.fake.calls()), h.fake.calls())


# ------------------------------------------------------------------ this machine, read only

def real_env(tmp):
    """This machine's /sys and /proc with recording stubs: proof that nothing was called."""
    fake = FakeHost(tmp, devices={})
    env = fake.env()
    del env["FLOWCOP_SYSFS"], env["FLOWCOP_PROCFS"]
    return fake, env


def test_this_machine_is_described_without_changing_it():
    """--list and --dry-run on this machine: each NIC shown with its state, or 'no network PCI device'"""
    tmp = tempfile.mkdtemp(prefix="flowcop-hostsetup-real-")
    try:
        fake, env = real_env(tmp)
        rc, out, err = sh(["--list"], env=env)
        check(rc == 0, f"--list: exit {rc}\n{err}")
        check("this host has no network PCI device" in out or "network PCI devices on this host:" in out, out)
        iommu = bool(os.listdir("/sys/kernel/iommu_groups")) if os.path.isdir("/sys/kernel/iommu_groups") else False
        check(("IOMMU: on" if iommu else "IOMMU: off") in out, out)
        rc, out, err = sh(["--dry-run", "--nic", "0000:ff:1f.7", "--lcores", "0", "--user", "root",
                           "--huge-dir", os.path.join(tmp, "h"), "--state-dir", os.path.join(tmp, "s")], env=env)
        check(rc == 1 and "no PCI device 0000:ff:1f.7" in err and "no NIC left to bind" in err, err)
        # Every interface that carries this machine's routes is refused, by name.
        routed = set()
        with open("/proc/net/route") as f:
            routed = {l.split()[0] for l in list(f)[1:] if l.strip()}
        for ifc in sorted(i for i in routed if os.path.exists(f"/sys/class/net/{i}/device")):
            rc, out, err = sh(["--dry-run", "--nic", ifc, "--lcores", "0", "--user", "root",
                               "--huge-dir", os.path.join(tmp, "h"), "--state-dir", os.path.join(tmp, "s")], env=env)
            check(rc == 1 and f"its interface {ifc} carries this host's routes" in err, f"{ifc}: {err}")
            check(not any("--bind" in c for c in would(out)), f"planned to bind {ifc}")
        check(fake.calls() == [], f"a tool ran against this machine: {fake.calls()}")
        check(not os.path.exists(os.path.join(tmp, "s")) and not os.path.exists(os.path.join(tmp, "h")),
              "the dry run created files")
    finally:
        shutil.rmtree(tmp, True)


if __name__ == "__main__":
    for tool in ("/usr/bin/dpdk-hugepages.py", "/usr/bin/dpdk-devbind.py"):
        if not os.path.exists(tool):
            print(f"1..0 # SKIP {tool} not installed (Debian package dpdk: deploy/install-deps.sh)")
            sys.exit(0)
    run([test_usage_errors_exit_2_naming_the_argument, test_help_prints_every_mode, test_real_run_needs_root,
         test_dry_run_prints_the_whole_plan_and_changes_nothing, test_interface_names_and_short_addresses_resolve,
         test_numa_mismatch_warns_with_the_fix, test_no_iommu_is_an_error_with_the_kernel_fix,
         test_the_hosts_own_interface_is_refused, test_devices_that_cannot_be_taken_are_named,
         test_a_host_without_network_devices_says_so, test_shared_iommu_group_needs_the_whole_group,
         test_offline_lcores_and_bad_hugepage_sizes_are_errors, test_setup_then_again_then_undo_restores_the_host,
         test_undo_restores_what_was_there_before_not_zero, test_undo_leaves_a_device_someone_else_rebound,
         test_a_short_reservation_stops_before_binding, test_this_machine_is_described_without_changing_it])
