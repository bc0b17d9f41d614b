// SPDX-License-Identifier: BSD-3-Clause
// Test-only: the one way a test, benchmark or fuzz binary starts DPDK's EAL.
//
// start_eal() boots EAL once per process without PCI, with a file prefix unique to the process
// (<binary>_<pid>, so concurrent test processes never share runtime state), errors-only logging
// and no telemetry socket; memory comes from --no-huge unless a hugetlbfs directory is given. At
// process exit it runs rte_eal_cleanup() and removes the prefix's runtime directory, which EAL
// leaves behind. Not thread-safe: call it from main (or the first test) before anything else; later
// calls return the first call's result whatever their options.
#pragma once

#include <string>
#include <vector>

namespace flowcop::test {

struct EalOptions {
    unsigned memory_mb = 1024;      // -m
    std::string huge_dir;           // hugetlbfs mount for --huge-dir (then --huge-unlink); "" = --no-huge
    bool main_lcore_only = false;   // -l 0: one lcore, as the benchmarks and fuzz targets want
    bool no_shconf = false;         // --no-shconf: no shared config file (libFuzzer's parallel jobs)
    std::vector<std::string> extra; // further EAL arguments (e.g. --vdev=...)
};

// "" once EAL runs, else one sentence saying why it does not (with the arguments it was given).
std::string start_eal(const char* argv0, const EalOptions& options = {});

} // namespace flowcop::test
