// SPDX-License-Identifier: BSD-3-Clause
// Core: Schedule (what and when) + SlotClock (timestamps) + FrameWriter (bytes).
#include <flowgen/core.h>

#include <optional>

#include "frame_writer.h"
#include "schedule.h"
#include "slot_clock.h"

namespace flowcop::flowgen {

struct Core::Impl {
    explicit Impl(const Config& cfg) : error(check_config(cfg)), writer(cfg), clock(cfg.start_s, cfg.pps)
    {
        last_us = cfg.start_s * 1'000'000;
        if (error.empty())
            schedule.emplace(cfg, writer.data_payload(false), writer.data_payload(true));
    }

    std::string error;
    detail::FrameWriter writer;
    detail::SlotClock clock;
    std::optional<detail::Schedule> schedule;
    uint64_t last_us;
};

Core::Core(const Config& cfg) : _impl(std::make_unique<Impl>(cfg)) {}

Core::~Core() = default;

const std::string& Core::error() const noexcept
{
    return _impl->error;
}

uint32_t Core::max_frame_len() const noexcept
{
    return _impl->writer.max_frame_len();
}

uint32_t Core::next(uint8_t* buf, uint64_t& timestamp_us) noexcept
{
    Impl& m = *_impl;
    detail::Segment seg;
    uint64_t slot;
    if (!m.schedule || !m.schedule->next(seg, slot))
        return 0;
    timestamp_us = m.last_us = m.clock.at(slot);
    return m.writer.write(seg, buf);
}

bool Core::finished() const noexcept
{
    return !_impl->schedule || _impl->schedule->stats().finished;
}

Stats Core::stats() const noexcept
{
    Stats s;
    if (_impl->schedule)
        s = _impl->schedule->stats();
    s.finished = finished();
    s.virtual_now_us = _impl->last_us;
    return s;
}

} // namespace flowcop::flowgen
