// SPDX-License-Identifier: BSD-3-Clause
// Test-only: boot EAL once per test binary with the flowgen suite's arguments (no hugepages, no PCI,
// its own file prefix; the 'dpdk' suite runs these binaries one at a time).
#pragma once

#include <string>
#include <vector>

#include <rte_eal.h>

namespace flowcop::flowgen::test {

inline bool eal_up()
{
    static const bool ok = [] {
        static std::vector<std::string> args{
            "flowgen_test", "--no-huge", "-m", "256", "--no-pci", "--file-prefix=flowgen_test", "--log-level=error"};
        static std::vector<char*> argv;
        for (std::string& a : args)
            argv.push_back(a.data());
        return rte_eal_init(static_cast<int>(argv.size()), argv.data()) >= 0;
    }();
    return ok;
}

} // namespace flowcop::flowgen::test
