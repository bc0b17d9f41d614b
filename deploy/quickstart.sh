#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's commands. Each installs dependencies (deploy/install-deps.sh),
# configures and builds into build/ (binary: build/app/flowcop), then:
#   test   runs the whole default test suite (meson test), warnings as errors.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

usage() { echo "usage: $0 test" >&2; exit 2; }
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
test)
    setup build -Dwerror=true
    meson test -C build --print-errorlogs "$@"
    ;;
*) usage ;;
esac
