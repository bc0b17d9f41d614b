// SPDX-License-Identifier: BSD-3-Clause
// What the service manager is told (systemd's Type=notify and WatchdogSec=, deploy/systemd/flowcop.service),
// through libsystemd's sd_notify():
// - READY=1 (with STATUS=) once every port is started and every worker lcore has run its first loop
//   turn: `systemctl start flowcop` returns, and units ordered after it start, when flowcop tracks packets;
// - WATCHDOG=1 while WatchdogSec= is set (sd_watchdog_enabled), every half of it, and only when every
//   worker's loop turns (WorkerStats::turns) advanced since the previous feed: a worker stuck that long
//   (a livelock, a lock never released) stops the feeding, and systemd aborts and restarts flowcop. A
//   stuck worker is logged once per stall, by lcore;
// - STOPPING=1 when the stop begins.
// Not under systemd (no NOTIFY_SOCKET) every message is a no-op. Called from the housekeeping thread only
// (a control thread, control_thread.h): never a worker's cost.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

namespace flowcop::app {

// The watchdog's decision, pure (tests/app/test_notify.cpp): due() is true once per period, when every
// counter advanced since the previous period's check; a period without progress of some counter feeds
// nothing, and stalled() names the first counter that did not move.
class WatchdogGate {
public:
    using Clock = std::chrono::steady_clock;
    WatchdogGate(Clock::duration period, size_t counters) : _period(period), _last(counters, 0) {}
    bool due(std::span<const uint64_t> turns, Clock::time_point now) noexcept
    {
        if (now < _next)
            return false;
        _next = now + _period;
        bool all = turns.size() == _last.size();
        _stalled = -1;
        for (size_t i = 0; all && i < turns.size(); ++i)
            if (turns[i] == _last[i]) {
                all = false;
                _stalled = long(i);
            }
        for (size_t i = 0; i < turns.size() && i < _last.size(); ++i)
            _last[i] = turns[i];
        return all;
    }
    long stalled() const noexcept { return _stalled; } // index of a counter that did not move, else -1

private:
    Clock::duration _period;
    Clock::time_point _next{};
    std::vector<uint64_t> _last;
    long _stalled = -1;
};

class Notifier {
public:
    // lcores: the worker lcore ids, in the order tick() gets their turn counters.
    explicit Notifier(std::vector<unsigned> lcores);
    // Each housekeeping turn (every 50 ms): READY=1 once every worker ran a turn, WATCHDOG=1 when due.
    void tick(std::span<const uint64_t> turns);
    void stopping() noexcept;

private:
    std::vector<unsigned> _lcores;
    bool _ready = false;
    bool _watchdog = false;
    WatchdogGate _gate;
    bool _told_stall = false;
};

} // namespace flowcop::app
