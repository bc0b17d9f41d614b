// SPDX-License-Identifier: BSD-3-Clause
#include "notify.h"

#include "log.h"

#include <systemd/sd-daemon.h>

#include <rte_log.h>

#include <algorithm>
#include <string>

namespace flowcop::app {
namespace {

// Half of WatchdogSec= (systemd's advice: feed at least twice per interval); zero when none is set.
std::chrono::microseconds watchdog_period()
{
    uint64_t usec = 0;
    return sd_watchdog_enabled(0, &usec) > 0 ? std::chrono::microseconds(usec / 2) : std::chrono::microseconds(0);
}

} // namespace

Notifier::Notifier(std::vector<unsigned> lcores)
    : _lcores(std::move(lcores)), _watchdog(watchdog_period().count() > 0), _gate(watchdog_period(), _lcores.size())
{}

void Notifier::tick(std::span<const uint64_t> turns)
{
    if (!_ready && std::all_of(turns.begin(), turns.end(), [](uint64_t t) { return t > 0; })) {
        _ready = true;
        const std::string status = "STATUS=tracking on " + std::to_string(turns.size()) + " worker lcore(s)";
        sd_notifyf(0, "READY=1\n%s", status.c_str());
    }
    if (!_ready || !_watchdog)
        return;
    if (_gate.due(turns, WatchdogGate::Clock::now())) {
        sd_notify(0, "WATCHDOG=1");
        _told_stall = false;
    } else if (_gate.stalled() >= 0 && !_told_stall) {
        _told_stall = true;
        log::write(RTE_LOG_WARNING, log::Part::service,
                   "flowcop: lcore %u made no progress for half the watchdog interval: not feeding the watchdog",
                   _lcores[size_t(_gate.stalled())]);
    }
}

void Notifier::stopping() noexcept
{
    sd_notify(0, "STOPPING=1");
}

} // namespace flowcop::app
