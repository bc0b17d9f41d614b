#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's commands. Each installs dependencies (deploy/install-deps.sh),
# configures and builds into build/ (binary: build/app/flowcop), then:
#   run    runs flowcop on the embedded sample capture (no NIC, no hugepages)
#          through deploy/run-sample.sh: DPDK's pcap vdev replays it in
#          packet-clock mode, flowcop prints the live status line, the summary,
#          and where metrics were served (127.0.0.1:9781, or a free port it
#          prints when 9781 is taken); flow events go to
#          build/quickstart-events.jsonl. Extra arguments are passed to flowcop
#          and replace run-sample.sh's defaults (e.g. --quiet, --events -,
#          --metrics-addr 127.0.0.1:9800).
#   test   runs the whole default test suite (meson test), warnings as errors.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

usage() { echo "usage: $0 run [flowcop options] | test [meson test options]" >&2; exit 2; }
[ $# -ge 1 ] || usage
cmd=$1; shift

"$here/deploy/install-deps.sh"

setup() {
    local dir=$1; shift
    if [ -f "$dir/build.ninja" ]; then
        meson setup --reconfigure "$dir" "$@"
    else
        meson setup "$dir" "$@"
    fi
    ninja -C "$dir"
}

case "$cmd" in
run)
    setup build -Dwerror=true
    exec "$here/deploy/run-sample.sh" "$here/build/app/flowcop" "$@"
    ;;
test)
    setup build -Dwerror=true
    meson test -C build --print-errorlogs "$@"
    ;;
*) usage ;;
esac
