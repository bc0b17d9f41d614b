// SPDX-License-Identifier: BSD-3-Clause
#include "start_errors.h"

#include <service/options/options.h>

#include <rte_errno.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace flowcop::app {

std::string eal_file_prefix(int n, char** args)
{
    std::string prefix = "rte";
    for (int i = 0; i < n; ++i) {
        const std::string_view a = args[i];
        if (a.starts_with("--file-prefix="))
            prefix = a.substr(std::strlen("--file-prefix="));
        else if (a == "--file-prefix" && i + 1 < n)
            prefix = args[++i];
    }
    return prefix;
}

std::string eal_runtime_dir(const std::string& prefix)
{
    if (geteuid() == 0)
        return "/var/run/dpdk/" + prefix;
    const char* xdg = std::getenv("XDG_RUNTIME_DIR");
    return std::string(xdg != nullptr ? xdg : "/tmp") + "/dpdk/" + prefix;
}

namespace {

// The pid holding a lock anywhere in the config file (EAL's primary locks its memseg array), or 0.
pid_t config_lock_holder(const std::string& path)
{
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock lk {};
    lk.l_type = F_WRLCK;
    lk.l_whence = SEEK_SET;
    lk.l_start = 0;
    lk.l_len = 0; // to the end of the file
    const int rc = fcntl(fd, F_GETLK, &lk);
    close(fd);
    return rc == 0 && lk.l_type != F_UNLCK ? lk.l_pid : 0;
}

} // namespace

std::string eal_failure(int n, char** args, int rte_err)
{
    const std::string head = "flowcop: EAL initialisation failed: ";
    const std::string prefix = eal_file_prefix(n, args);
    const std::string config = eal_runtime_dir(prefix) + "/config";
    if (const pid_t holder = config_lock_holder(config))
        return head + "another DPDK process (pid " + std::to_string(holder) + ") runs with the file prefix '" + prefix +
               "' (it holds " + config + "): stop it, or give this instance its own --file-prefix";
    if (rte_err != 0)
        return head + rte_strerror(rte_err) + " (EAL's lines above say more; EAL options go before '--')";
    return head + "EAL gave no reason code; its lines above say what failed (EAL options go before '--')";
}

std::string misplaced_option(int n, char** args)
{
    for (int i = 0; i < n; ++i) {
        std::string_view a = args[i];
        if (!a.starts_with("--") || a == "--help")
            continue; // --help alone is answered before EAL (main.cpp)
        a = a.substr(0, a.find('='));
        for (const OptionInfo& o : option_table())
            if (a == o.name)
                return std::string(a);
    }
    return {};
}

} // namespace flowcop::app
