// SPDX-License-Identifier: BSD-3-Clause
// The writer thread: drain each ring, format into the batch, write, and credit every event once.
#include <events/writer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>

#include <events/thread.h>

#include <rte_log.h>

#include "batch.h"
#include "sink.h"

namespace flowcop::events {
namespace {

// The writer's lines go through DPDK's log as type flowcop.events (app/service/log.h says why), so
// EAL's --log-level governs them; registered on first use, which needs no EAL.
uint32_t log_type() noexcept
{
    static const int type = rte_log_register_type_and_pick_level("flowcop.events", RTE_LOG_INFO);
    return type >= 0 ? uint32_t(type) : uint32_t(RTE_LOGTYPE_USER1);
}

// Events copied out of a ring per dequeue: 64 x 120 B stays in L1 and on the writer's stack.
constexpr unsigned kBurst = 64;

} // namespace

Writer::Writer() = default;

std::unique_ptr<Writer> Writer::open(const std::string& path, Stream& stream, unsigned ring_events, std::string& error,
                                     KindMask kinds, const ProtoSet& protos)
{
    std::unique_ptr<Writer> w(new Writer());
    w->_path = path;
    w->_sink = std::make_unique<detail::Sink>();
    if (detail::Sink::open(path, *w->_sink, error) < 0)
        return nullptr;
    w->_sub = stream.subscribe("events file '" + path + "'", kinds, ring_events, error, protos);
    if (w->_sub == nullptr)
        return nullptr;
    w->_n_producers = stream.producers();
    w->_ring_events = ring_events;
    w->_drained.reset(new Drained[w->_n_producers]);
    w->_batch = std::make_unique<detail::Batch>(kBatchBytes);
    w->_hit.assign(w->_n_producers, 0);
    return w;
}

Writer::~Writer()
{
    stop_and_flush();
}

size_t Writer::ring_bytes() const noexcept
{
    return _sub->ring_bytes();
}

WriterStats Writer::stats(unsigned producer) const noexcept
{
    const Drained& d = _drained[producer];
    return WriterStats{_sub->offered(producer), stats::load_relaxed(d.written), _sub->dropped_full(producer),
                       stats::load_relaxed(d.dropped_write), stats::load_relaxed(d.write_errors)};
}

void Writer::start(std::function<void()> on_thread_start)
{
    if (_thread.joinable())
        return;
    _on_thread_start = std::move(on_thread_start);
    _stop.store(false, std::memory_order_relaxed);
    _abandoned = false;
    _thread = spawn_consumer_thread(_on_thread_start, [this] { run(); });
}

void Writer::stop_and_flush()
{
    if (!_batch)
        return; // open() failed half-way and is destroying a Writer that never ran
    // Not running (never started, or a second call): run one final pass on a short-lived thread so the
    // writes still happen with signals blocked.
    if (!_thread.joinable()) {
        _abandoned = false;
        _stop.store(true, std::memory_order_release);
        _thread = spawn_consumer_thread(_on_thread_start, [this] { run(); });
    }
    // Release pairs with the writer's acquire: everything emitted before this call is visible to the
    // final pass (callers make their lcores' emits happen-before this call, e.g. by joining them).
    _stop.store(true, std::memory_order_release);
    _thread.join();
}

void Writer::run() noexcept
{
    for (;;) {
        // The batch is empty here (flush() ended the last turn): whole lines before the swap went
        // to the old file, everything drained after it goes to the new one.
        if (_reopen.exchange(false, std::memory_order_acq_rel))
            reopen();
        const bool stopping = _stop.load(std::memory_order_acquire);
        bool backlog = false;
        for (unsigned p = 0; p < _n_producers; ++p)
            backlog |= drain(p);
        flush();
        // One full pass that began after the stop request has taken everything emitted before it:
        // drain() takes up to a ring's capacity, which is more than the ring could hold.
        if (stopping)
            return;
        if (!backlog)
            std::this_thread::sleep_for(std::chrono::microseconds(kPollIntervalUs));
    }
}

bool Writer::drain(unsigned p) noexcept
{
    Event ev[kBurst];
    unsigned taken = 0;
    unsigned left = 0;
    while (taken < _ring_events) {
        const unsigned n = _sub->take(p, ev, kBurst, left);
        for (unsigned i = 0; i < n; ++i) {
            if (_batch->add(ev[i], static_cast<uint16_t>(p)))
                continue;
            flush();
            if (!_batch->add(ev[i], static_cast<uint16_t>(p)))
                stats::bump(_drained[p].dropped_write); // unformattable even in an empty batch
        }
        taken += n;
        if (n < kBurst)
            break;
    }
    return left > 0;
}

void Writer::flush() noexcept
{
    if (_batch->empty())
        return;
    detail::Sink::Result r{0, ETIMEDOUT}; // what an abandoned output "returns" without being tried
    if (!_abandoned && _partial_line) {
        // A failed write left half a line in the file; end it so the lines after it parse.
        r = _sink->write_all("\n", 1, _stop, kShutdownStallMs);
        _partial_line = r.done == 0;
        r.done = 0;
    }
    if (!_abandoned && !_partial_line)
        r = _sink->write_all(_batch->data(), _batch->size(), _stop, kShutdownStallMs);
    const size_t n = _batch->lines();
    size_t i = 0;
    for (; i < n && _batch->line(i).end <= r.done; ++i)
        stats::bump(_drained[_batch->line(i).producer].written);
    if (i < n) {
        const uint32_t line_start = i == 0 ? 0 : _batch->line(i - 1).end;
        if (r.done > line_start)
            _partial_line = true;
        for (; i < n; ++i) {
            const uint16_t p = _batch->line(i).producer;
            stats::bump(_drained[p].dropped_write);
            if (!_hit[p])
                stats::bump(_drained[p].write_errors);
            _hit[p] = 1;
        }
        std::fill(_hit.begin(), _hit.end(), 0);
        report_once(r.err);
    }
    _batch->clear();
}

void Writer::reopen() noexcept
{
    if (_path == "-") {
        _reopens.fetch_add(1, std::memory_order_release);
        return;
    }
    std::unique_ptr<detail::Sink> fresh(new (std::nothrow) detail::Sink());
    std::string error = "cannot open events file '" + _path + "' again: out of memory";
    if (!fresh || detail::Sink::open(_path, *fresh, error) < 0) {
        rte_log(RTE_LOG_ERR, log_type(), "flowcop: events: %s; still writing to the file opened before\n",
                error.c_str());
    } else {
        _sink = std::move(fresh); // closes the old file
        _partial_line = false;    // a partial line stays at the end of the old file
        rte_log(RTE_LOG_INFO, log_type(), "flowcop: events: reopened '%s'\n", _path.c_str());
    }
    _reopens.fetch_add(1, std::memory_order_release);
}

void Writer::report_once(int err) noexcept
{
    if (err == ETIMEDOUT) {
        // Stalled at shutdown: stop waiting for this output for the rest of this stop.
        _abandoned = true;
        if (_reported_stall)
            return;
        _reported_stall = true;
        rte_log(RTE_LOG_WARNING, log_type(),
                "flowcop: events: output '%s' accepted nothing for %u ms during shutdown; "
                "the remaining events are dropped and counted\n",
                _path.c_str(), kShutdownStallMs);
        return;
    }
    if (_reported_error)
        return;
    _reported_error = true;
    rte_log(RTE_LOG_ERR, log_type(),
            "flowcop: events: write to '%s' failed: %s; events are dropped and counted until writes "
            "succeed (further errors are not logged)\n",
            _path.c_str(), std::strerror(err));
}

} // namespace flowcop::events
