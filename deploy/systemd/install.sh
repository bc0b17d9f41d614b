#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs flowcop as a systemd service, or removes it. Run as root.
#
#   install.sh [--dry-run] [--root DIR] [--binary PATH]
#   install.sh [--dry-run] [--root DIR] --uninstall
#
# Install: the binary (default build/app/flowcop) as /usr/local/bin/flowcop, deploy/host-setup.sh
# as /usr/local/sbin/flowcop-host-setup, the operator's tool app/flowcopctl/flowcopctl as
# /usr/local/bin/flowcopctl (man page and bash completion under /usr/local/share), the unit as
# /etc/systemd/system/flowcop.service, the udev rule giving /dev/vfio/<group> to group flowcop,
# deploy/logrotate/flowcop as /etc/logrotate.d/flowcop (rotates /var/log/flowcop/*.jsonl) with
# flowcop-logrotate.service and .timer (that configuration every 15 minutes, for its size limit), and
# /etc/flowcop/flowcop.env unless one exists (an edited file is never overwritten: the new one goes
# to flowcop.env.dist). Creates the system user and group flowcop (no home, no login shell), then
# reloads systemd and udev. It does not enable or start the service: edit /etc/flowcop/flowcop.env
# first (deploy/deployment.md); enabling flowcop enables the timer too. On a host where flowcop is
# enabled already (an upgrade), it enables and starts the timer.
# Uninstall removes what install put there except flowcop.env and the user, and says so.
# --root DIR installs into DIR instead of / (packaging, tests): no user, no reloads.
# --dry-run prints every command and changes nothing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
PROG=install.sh
dry_run=0 mode=install root=/ binary=$repo/build/app/flowcop

die_usage() { echo "$PROG: $*" >&2; sed -n '5,6p' "$0" | sed 's/^# */usage: /' >&2; exit 2; }
run() {
    if [ "$dry_run" = 1 ]; then echo "would run: $*"; return 0; fi
    echo "running: $*"
    "$@"
}

while [ $# -gt 0 ]; do
    case "$1" in
    --dry-run) dry_run=1 ;;
    --uninstall) mode=uninstall ;;
    --root | --binary)
        [ $# -ge 2 ] && [ -n "$2" ] || die_usage "$1 needs a value"
        if [ "$1" = --root ]; then root=$2; else binary=$2; fi
        shift ;;
    -h | --help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die_usage "unknown argument '$1'" ;;
    esac
    shift
done
[ -d "$root" ] || die_usage "--root $root is not a directory"
root=$(cd "$root" && pwd)
[ "$root" = / ] && p="" || p=$root
if [ "$dry_run" = 0 ] && [ "$root" = / ] && [ "$(id -u)" -ne 0 ]; then
    echo "$PROG: must run as root (or give --root DIR, or --dry-run)" >&2; exit 1
fi

bin=$p/usr/local/bin/flowcop
setup=$p/usr/local/sbin/flowcop-host-setup
unit=$p/etc/systemd/system/flowcop.service
rule=$p/etc/udev/rules.d/60-flowcop-vfio.rules
rotate=$p/etc/logrotate.d/flowcop
rotate_unit=$p/etc/systemd/system/flowcop-logrotate.service
rotate_timer=$p/etc/systemd/system/flowcop-logrotate.timer
env=$p/etc/flowcop/flowcop.env
ctl=$p/usr/local/bin/flowcopctl
ctl_man=$p/usr/local/share/man/man8/flowcopctl.8
ctl_completion=$p/usr/local/share/bash-completion/completions/flowcopctl

# Reloads only make sense on the live system, and only where systemd runs (not in a container
# without it, where the files are still installed for a later boot).
reload() {
    [ "$root" = / ] || return 0
    if [ -d /run/systemd/system ]; then run systemctl daemon-reload; else echo "$PROG: systemd is not running here: no daemon-reload"; fi
    if command -v udevadm >/dev/null && [ -S /run/udev/control ]; then run udevadm control --reload; fi
}

if [ "$mode" = uninstall ]; then
    if [ "$root" = / ] && [ -d /run/systemd/system ]; then
        run systemctl disable --now flowcop.service || true
        run systemctl disable --now flowcop-logrotate.timer || true
    fi
    for f in "$unit" "$rule" "$rotate" "$rotate_unit" "$rotate_timer" "$bin" "$setup" "$ctl" "$ctl_man" "$ctl_completion"; do
        if [ -e "$f" ]; then run rm -f "$f"; else echo "$PROG: $f is not there"; fi
    done
    reload
    echo "$PROG: kept $env and the flowcop user (remove with: rm -r ${p}/etc/flowcop; userdel flowcop)"
    echo "$PROG: the host stays prepared; undo hugepages and NIC bindings with: flowcop-host-setup --undo (before uninstalling) or deploy/host-setup.sh --undo"
    exit 0
fi

[ -x "$binary" ] || { echo "$PROG: no flowcop binary at $binary: build it (deploy/quickstart.sh run, or meson setup build && ninja -C build) or pass --binary" >&2; exit 1; }

if [ "$root" = / ]; then
    if id flowcop >/dev/null 2>&1; then echo "$PROG: user flowcop exists"
    else run useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin flowcop; fi
fi
run install -D -m 0755 "$binary" "$bin"
run install -D -m 0755 "$repo/deploy/host-setup.sh" "$setup"
run install -D -m 0644 "$here/flowcop.service" "$unit"
run install -D -m 0644 "$here/60-flowcop-vfio.rules" "$rule"
run install -D -m 0644 "$repo/deploy/logrotate/flowcop" "$rotate"
run install -D -m 0644 "$here/flowcop-logrotate.service" "$rotate_unit"
run install -D -m 0644 "$here/flowcop-logrotate.timer" "$rotate_timer"
# The built flowcopctl (beside the binary) has its version written in (--version); the source's works the same.
ctl_src=$(dirname "$binary")/flowcopctl
[ -f "$ctl_src" ] || ctl_src=$repo/app/flowcopctl/flowcopctl
run install -D -m 0755 "$ctl_src" "$ctl"
run install -D -m 0644 "$repo/app/flowcopctl/flowcopctl.8" "$ctl_man"
run install -D -m 0644 "$repo/app/flowcopctl/flowcopctl.bash" "$ctl_completion"
if [ -e "$env" ]; then
    if cmp -s "$here/flowcop.env" "$env"; then echo "$PROG: $env is up to date"
    else
        run install -D -m 0644 "$here/flowcop.env" "$env.dist"
        echo "$PROG: kept your $env; the shipped one is $env.dist (diff them for new settings)"
    fi
else
    run install -D -m 0644 "$here/flowcop.env" "$env"
fi
reload
# An upgrade of an enabled flowcop: its [Install] Also= names the timer, which an earlier install lacked.
if [ "$root" = / ] && [ -d /run/systemd/system ] && systemctl -q is-enabled flowcop.service 2>/dev/null; then
    run systemctl enable --now flowcop-logrotate.timer
fi
echo "$PROG: next: edit $env (NICs, lcores, options), then: systemctl enable --now flowcop"
