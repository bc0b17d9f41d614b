#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Builds and runs one libFuzzer target under ASan+UBSan (tests/fuzzing.md):
#   tests/fuzz/run.sh parse|track|table|policy [libFuzzer flags...]
# Without -runs/-max_total_time it stops after 10 million executions. Environment:
#   FUZZ_BUILD   build dir (default build-fuzz-clang), configured with clang++ on first use
#   FUZZ_SHARED  extra seed captures (default ../shared/pcaps beside the clone; skipped if absent)
# The writable corpus is $FUZZ_BUILD/fuzz-corpus/<target>; the committed seeds
# (tests/fuzz/corpus/<target>) and the regression inputs are read, never written. A finding
# is written to $FUZZ_BUILD/fuzz-artifacts/<target>/ and the exit status is non-zero.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"

target=${1:-}
case "$target" in
parse|track|table|policy) shift ;;
*) echo "usage: $0 parse|track|table|policy [libFuzzer flags...]" >&2; exit 2 ;;
esac

build=${FUZZ_BUILD:-build-fuzz-clang}
shared=${FUZZ_SHARED:-$here/../shared/pcaps}

for tool in clang clang++; do
    if ! command -v "$tool" >/dev/null; then
        echo "run.sh: $tool not found: apt-get install clang (Debian 12's clang 14 ships libFuzzer)" >&2
        exit 1
    fi
done

if [ ! -f "$build/build.ninja" ]; then
    # fuzzer-no-link: coverage feedback in the libraries under test; the ignore list keeps the
    # harness out of it. no-sanitize-recover: a UBSan report ends the run like an ASan one.
    CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true -Dbenchmarks=false \
        -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
        "-Dcpp_args=-fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined -fsanitize-coverage-ignorelist=$here/tests/fuzz/coverage_ignore.txt"
fi
ninja -C "$build" "tests/fuzz/fuzz_$target" "tests/fuzz/fuzz_make_corpus"

corpus=$build/fuzz-corpus/$target
artifacts=$build/fuzz-artifacts/$target
mkdir -p "$corpus" "$artifacts"
seed_dirs=("tests/fuzz/corpus/$target")
[ -d "tests/fuzz/regressions/$target" ] && seed_dirs+=("tests/fuzz/regressions/$target")

# Seeds from the captures that may not be committed (copyleft licences): generated locally.
if [ -d "$shared" ]; then
    extra=$build/fuzz-seeds-shared
    "$build/tests/fuzz/fuzz_make_corpus" "$extra" "$shared"/*.pcap >/dev/null
    [ -d "$extra/$target" ] && seed_dirs+=("$extra/$target")
else
    echo "run.sh: $shared absent: fuzzing from the committed seeds only"
fi

limit=(-runs=10000000)
for a in "$@"; do
    case "$a" in -runs=*|-max_total_time=*) limit=() ;; esac
done

# The parser never reads past 256 header bytes; frames over 64 KiB (BIG TCP) are reached through
# the track target's padding, so 4096 bytes keep mutations on headers for both targets.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
exec "$build/tests/fuzz/fuzz_$target" -max_len=4096 -print_final_stats=1 \
    "-artifact_prefix=$artifacts/" "${limit[@]}" "$@" "$corpus" "${seed_dirs[@]}"
