// SPDX-License-Identifier: BSD-3-Clause
#include "eal_boot.h"

#include <rte_eal.h>
#include <rte_errno.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace flowcop::test {
namespace {

std::string g_runtime_dir;

void stop_eal()
{
    rte_eal_cleanup();
    std::error_code ec;
    if (!g_runtime_dir.empty())
        std::filesystem::remove_all(g_runtime_dir, ec);
}

} // namespace

std::string start_eal(const char* argv0, const EalOptions& o)
{
    static bool started = false;
    static std::string result;
    if (started)
        return result;
    started = true;
    const char* base = std::strrchr(argv0, '/');
    std::vector<std::string> args = {argv0};
    if (o.huge_dir.empty())
        args.push_back("--no-huge");
    else
        args.insert(args.end(), {"--huge-dir=" + o.huge_dir, "--huge-unlink"});
    args.insert(args.end(), {"-m", std::to_string(o.memory_mb), "--no-pci",
                             "--file-prefix=" + std::string(base ? base + 1 : argv0) + "_" + std::to_string(getpid()),
                             "--log-level=error", "--no-telemetry"});
    if (o.main_lcore_only)
        args.insert(args.end(), {"-l", "0"});
    if (o.no_shconf)
        args.push_back("--no-shconf");
    args.insert(args.end(), o.extra.begin(), o.extra.end());
    std::vector<char*> argv;
    for (std::string& a : args)
        argv.push_back(a.data());
    if (rte_eal_init(int(argv.size()), argv.data()) < 0) {
        std::string line;
        for (size_t i = 1; i < args.size(); ++i)
            line += " " + args[i];
        result = "EAL init failed (" + std::string(rte_strerror(rte_errno)) + "):" + line;
        return result;
    }
    g_runtime_dir = rte_eal_get_runtime_dir();
    std::atexit(stop_eal);
    return result;
}

} // namespace flowcop::test
