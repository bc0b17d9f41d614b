// SPDX-License-Identifier: BSD-3-Clause
#include "control_cpus.h"

#include <rte_lcore.h>

#include <pthread.h>

#include <mutex>

namespace flowcop::app {
namespace {

void* read_own_affinity(void* arg)
{
    auto* set = static_cast<cpu_set_t*>(arg);
    if (pthread_getaffinity_np(pthread_self(), sizeof(*set), set) != 0)
        CPU_ZERO(set);
    return nullptr;
}

cpu_set_t probe()
{
    cpu_set_t set;
    CPU_ZERO(&set);
    pthread_t t;
    if (rte_ctrl_thread_create(&t, "flowcop-cpuprobe", nullptr, read_own_affinity, &set) != 0)
        return set;
    pthread_join(t, nullptr);
    return set;
}

} // namespace

cpu_set_t control_cpus()
{
    static std::once_flag once;
    static cpu_set_t cached;
    std::call_once(once, [] { cached = probe(); });
    return cached;
}

std::string describe_control_cpus()
{
    const cpu_set_t set = control_cpus();
    std::string out;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &set) || (cpu > 0 && CPU_ISSET(cpu - 1, &set)))
            continue; // not in the set, or inside a range already written
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
            ++last;
        out += (out.empty() ? "" : ",") + std::to_string(cpu) + (last > cpu ? "-" + std::to_string(last) : "");
    }
    return out.empty() ? "unknown" : out;
}

bool pin_to_control_cpus() noexcept
{
    const cpu_set_t set = control_cpus();
    if (CPU_COUNT(&set) == 0)
        return false;
    return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

} // namespace flowcop::app
