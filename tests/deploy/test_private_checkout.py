# SPDX-License-Identifier: BSD-3-Clause
"""The tests that run something as an unprivileged user, run again from a checkout only root can enter.

usage: test_private_checkout.py build/app/flowcop REPO_ROOT

A root user's first clone lives in root's home, mode 0700. A test that hands a file of the checkout
to an unprivileged user (setpriv, subprocess's user=) then fails with "Permission denied", while in
CI's clone, in a world-readable path, it passes. So this test copies the checkout (the files git
lists, tracked and untracked-but-not-ignored, as they are in the working tree; without git, the tree
minus build directories) and the binary, at build/app/flowcop, into a directory of mode 0700, and
runs each such test there as meson would, as root. One TAP line per test; a test's own failures
follow as diagnostics.

It also checks that PRIVILEGE_DROPPING names every test file that starts a process as another user
(the markers below), so a new one cannot escape this check. Without root or setpriv the unprivileged
parts skip in the tests themselves, so here too.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from tap import Skip, check, run  # noqa: E402

EXE, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])

# Every test that runs something as another user: its path, its arguments as meson passes them
# ({exe}, {repo} and {build} stand for the copy's binary, source root and build directory) and its
# meson timeout in seconds (tests/deploy/meson.build gives this test their sum and a margin).
PRIVILEGE_DROPPING = {
    "tests/deploy/test_host_setup.py": (["{repo}"], 240),
    "tests/deploy/test_systemd.py": (["{exe}", "{repo}"], 90),
    "tests/hostile/test_exposure.py": (["{exe}", "{build}/tests/hostile/tmp/exposure", "{repo}"], 60),
    "tests/deploy/test_logrotate.py": (["{exe}", "{repo}"], 90),
}
# How a test starts a process as another user: setpriv or runuser, su (the command, or logrotate's
# directive "su USER GROUP"), sudo -u, subprocess's user=/group=, or a set*id call of its own.
MARKERS = re.compile(r"""\bsetpriv\b|\brunuser\b|\bsu\s+-|\bsu [a-z]\w* [a-z]\w*\b|\bsudo\s+-u\b"""
                     r"""|\buser\s*=\s*["'\w]|\bgroup\s*=\s*["'\w]|\bset(e|re|res)?[ug]id\s*\(""")
SCANNED = (".py", ".sh", ".cpp", ".h")
SELF = "tests/deploy/test_private_checkout.py"


def checkout_files():
    """The checkout's files, relative to REPO."""
    p = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, timeout=60)
    if p.returncode == 0:
        return [f for f in p.stdout.decode().split("\0") if f and os.path.isfile(os.path.join(REPO, f))]
    files = []
    for d, dirs, names in os.walk(REPO):
        dirs[:] = [x for x in dirs if x != ".git" and not x.startswith("build")]
        files += [os.path.relpath(os.path.join(d, n), REPO) for n in names]
    return files


def test_every_privilege_dropping_test_is_listed():
    """every test file that starts a process as another user is run from the private checkout below"""
    found = set()
    for rel in checkout_files():
        if rel.startswith("tests/") and rel.endswith(SCANNED) and rel != SELF:
            with open(os.path.join(REPO, rel), errors="replace") as f:
                if MARKERS.search(f.read()):
                    found.add(rel)
    check(found == set(PRIVILEGE_DROPPING),
          f"not listed in {SELF}: {sorted(found - set(PRIVILEGE_DROPPING))}; "
          f"listed but not dropping privileges: {sorted(set(PRIVILEGE_DROPPING) - found)}")


class PrivateCheckout:
    """A copy of the checkout and the binary under a directory of mode 0700, removed on exit."""

    def __enter__(self):
        self.home = tempfile.mkdtemp(prefix="flowcop-0700-")  # mode 0700, owned by root: like /root
        self.repo = os.path.join(self.home, "flowcop")
        for rel in checkout_files():
            dst = os.path.join(self.repo, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(os.path.join(REPO, rel), dst)
        self.build = os.path.join(self.repo, "build")
        self.exe = os.path.join(self.build, "app", "flowcop")
        os.makedirs(os.path.dirname(self.exe))
        shutil.copy2(EXE, self.exe)
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.home, True)


def from_private_checkout(rel):
    def test():
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            raise Skip("needs root and setpriv: without them the test runs nothing as another user")
        with PrivateCheckout() as c:
            check(os.stat(c.home).st_mode & 0o777 == 0o700, "the private directory is 0700")
            args, timeout = PRIVILEGE_DROPPING[rel]
            args = [a.format(exe=c.exe, repo=c.repo, build=c.build) for a in args]
            try:
                p = subprocess.run(["/usr/bin/python3", "-B", os.path.join(c.repo, rel)] + args, cwd=c.build,
                                   capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired as e:  # its own meson timeout: show how far it got
                out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or ""
                check(False, f"{rel} from a checkout in a 0700 directory: no result in {timeout} s\n{out}")
        failed = [l for l in p.stdout.splitlines() if l.startswith("not ok")]
        check(p.returncode == 0 and not failed,
              f"{rel} from a checkout in a 0700 directory: exit {p.returncode}\n{p.stdout}{p.stderr[-2000:]}")
    test.__doc__ = f"{rel} passes from a checkout in a directory of mode 0700 (a root user's home)"
    return test


if __name__ == "__main__":
    run([test_every_privilege_dropping_test_is_listed] + [from_private_checkout(rel) for rel in PRIVILEGE_DROPPING])
