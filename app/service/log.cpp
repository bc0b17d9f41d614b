// SPDX-License-Identifier: BSD-3-Clause
#include "log.h"

#include <rte_log.h>

#include <cstdarg>
#include <cstdio>
#include <vector>

namespace flowcop::app::log {
namespace {

constexpr uint32_t kDefaultLevel = RTE_LOG_INFO;
constexpr const char* kUmbrella = "flowcop";

uint32_t type_of(Part part) noexcept
{
    // Registered once (thread-safe static initialisation), by register_types() in the program and on
    // first use in unit tests.
    static const int types[] = {
        rte_log_register_type_and_pick_level("flowcop.service", kDefaultLevel),
        rte_log_register_type_and_pick_level("flowcop.exporter", kDefaultLevel),
        rte_log_register_type_and_pick_level("flowcop.telemetry", kDefaultLevel),
    };
    const int t = types[static_cast<int>(part)];
    // DPDK ran out of dynamic types: a line still printed, under a type EAL always has.
    return t >= 0 ? uint32_t(t) : uint32_t(RTE_LOGTYPE_USER1);
}

} // namespace

void register_types() noexcept
{
    (void)type_of(Part::service);
    rte_log_register_type_and_pick_level("flowcop.events", kDefaultLevel); // lib/events finds it then
}

bool enabled(uint32_t level, Part part) noexcept
{
    return rte_log_can_log(type_of(part), level);
}

void write(uint32_t level, Part part, const char* fmt, ...) noexcept
{
    const uint32_t type = type_of(part);
    if (!rte_log_can_log(type, level))
        return;
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    const int n = std::vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (size_t(n) < sizeof small) {
        rte_log(level, type, "%s\n", small);
        return;
    }
    try {
        std::vector<char> big(size_t(n) + 1);
        va_start(ap, fmt);
        std::vsnprintf(big.data(), big.size(), fmt, ap);
        va_end(ap);
        rte_log(level, type, "%s\n", big.data());
    } catch (...) {
        rte_log(level, type, "%s...\n", small); // out of memory: the line's start
    }
}

std::string umbrella_log_level(const std::string& value)
{
    const std::string prefix = std::string(kUmbrella) + ":";
    if (value.rfind(prefix, 0) != 0)
        return value;
    return std::string(kUmbrella) + "*:" + value.substr(prefix.size());
}

} // namespace flowcop::app::log
