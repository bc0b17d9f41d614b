// SPDX-License-Identifier: BSD-3-Clause
// The event log: one thread drains the writer's subscription to the event stream (stream.h), formats
// JSON lines into one large batch and writes it with write(2).
//
// Ownership: Writer::open() returns the only owner; it owns the batch buffer and the file descriptor
// (stdout, for "-", is used but never closed); the Stream owns its subscription's rings and must
// outlive the Writer. Destruction calls stop_and_flush(). Threading: open/start/stop_and_flush/~Writer
// are control-plane calls made from one thread at a time; stats() may be called from any thread.
// The writer thread runs with every signal blocked, so signal handlers run on other threads and a
// closed pipe yields EPIPE instead of killing the process with SIGPIPE.
// Invariant, per producer, after stop_and_flush() returns (and approximately while running):
//   stats(i).written + stats(i).dropped_full + stats(i).dropped_write == stats(i).offered.
// Degraded behaviour: a slow or failing output never blocks an lcore: rings fill and events are
// dropped into dropped_full. A failed write(2) (ENOSPC, EIO, EPIPE, ...) loses that batch's unwritten
// lines into dropped_write, bumps write_errors, logs one line (DPDK log type flowcop.events) the first time only, and the
// writer keeps draining and retrying with the next batch. If a failure leaves a partial line in the
// file, the next successful write starts with '\n' so later lines stay parseable. If the output is a
// pipe, socket or terminal that accepts nothing for shutdown_stall_ms after stop_and_flush() began,
// the remaining events are counted as dropped_write instead of hanging the shutdown.
// Reopening (logrotate's convention: rename the file, then signal the process): request_reopen() asks
// the writer thread to open the path again before its next drain; every line written before goes to
// the old file, every later one to the new, none is lost or written twice. If the path cannot be
// opened the writer keeps the old file and says so (log type flowcop.events). Output "-" (stdout) is never reopened.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <events/event.h>
#include <events/stream.h>

namespace flowcop::events {

// The kinds the JSON log carries by default: new and destroy. Interim reports of long flows are IPFIX's
// (--ipfix-active-timeout); updates are asked for (flowcop's --events-filter), so by default the log's
// lines and rate stay what they were.
inline constexpr KindMask kWriterKinds = kind_bit(Kind::created) | kind_bit(Kind::destroyed);

struct WriterStats {
    uint64_t offered;       // events of the writer's kinds and protocols emitted on this lcore
    uint64_t written;       // lines fully handed to the kernel
    uint64_t dropped_full;  // emit() found the ring full
    uint64_t dropped_write; // dequeued but lost: write(2) failed, output stalled at shutdown, or unformattable
    uint64_t write_errors;  // failed (or, at a stalled shutdown, skipped) writes that lost this producer's events
};

namespace detail {
class Sink;
class Batch;
} // namespace detail

class Writer {
public:
    // The writer sleeps this long between polls when no ring has a backlog, so an event reaches the
    // file about 1 ms after emit() and an idle writer costs ~1000 wakeups/s. A ring must absorb what
    // its lcore emits in one interval (a 4095-event ring: bursts up to ~4 M events/s per lcore).
    static constexpr unsigned kPollIntervalUs = 1000;
    // Bytes formatted before each write(2): about 3000 lines, so one syscall per poll even at
    // millions of events per second; allocated once at open().
    static constexpr size_t kBatchBytes = 1u << 20;
    // How long a pipe/socket/terminal may accept nothing during shutdown before we give up on it:
    // long enough for a live reader (jq, a log shipper) to catch up, short enough to stay well inside
    // systemd's default 90 s stop timeout.
    static constexpr unsigned kShutdownStallMs = 1000;

    // path "-" = stdout. Subscribes to `kinds` and `protos` of `stream` (filtered at the source:
    // stream.h) with rings of ring_events (setup time: before lcores emit). Returns nullptr and sets
    // `error` (one sentence naming the path and the cause) if the file cannot be opened for
    // append/create or the subscription fails (stream.h).
    static std::unique_ptr<Writer> open(const std::string& path, Stream& stream, unsigned ring_events,
                                        std::string& error, KindMask kinds = kWriterKinds,
                                        const ProtoSet& protos = ProtoSet{});

    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;
    ~Writer(); // stop_and_flush()

    // Starts the writer thread; no-op if it is running. May be called again after stop_and_flush().
    // `on_thread_start` runs first on the new thread (the service places it on DPDK's control-thread
    // CPUs there, so it never shares a polling lcore's CPU). Throws std::system_error if the thread
    // cannot be created (setup time only).
    void start(std::function<void()> on_thread_start = {});

    // Drains everything produced before the call, writes it, joins the thread. Idempotent: a later call
    // again drains whatever was produced since (on a short-lived thread), so nothing is ever left
    // uncounted. If start() was never called, the drain still happens.
    void stop_and_flush();

    // Per producer (lcore). Precondition: producer < the stream's producers().
    WriterStats stats(unsigned producer) const noexcept;
    // The memory of one lcore's ring (Subscription::ring_bytes()). Any thread.
    size_t ring_bytes() const noexcept;

    // Any thread, and async-signal-safe (one lock-free atomic store): the running writer thread
    // reopens the path before its next drain, within about kPollIntervalUs. Without a running thread
    // the request waits for start().
    void request_reopen() noexcept { _reopen.store(true, std::memory_order_release); }
    // Reopens done (successful or not), for whoever asked one to see it happen. Any thread.
    uint64_t reopens() const noexcept { return _reopens.load(std::memory_order_acquire); }

private:
    Writer();
    void run() noexcept;
    bool drain(unsigned p) noexcept;
    void flush() noexcept;
    void report_once(int err) noexcept;
    void reopen() noexcept;

    // Per producer, written only by the writer thread.
    struct Drained {
        uint64_t written = 0;
        uint64_t dropped_write = 0;
        uint64_t write_errors = 0;
    };

    Subscription* _sub = nullptr;
    std::unique_ptr<Drained[]> _drained;
    unsigned _n_producers = 0;
    unsigned _ring_events = 0;
    std::function<void()> _on_thread_start;
    std::string _path;
    std::unique_ptr<detail::Sink> _sink;
    std::unique_ptr<detail::Batch> _batch;
    std::vector<uint8_t> _hit; // per producer: lost a line in the current failed write
    std::thread _thread;
    std::atomic<bool> _stop{false};
    std::atomic<bool> _reopen{false};
    static_assert(std::atomic<bool>::is_always_lock_free, "request_reopen() runs in signal handlers");
    std::atomic<uint64_t> _reopens{0};
    // Writer-thread state (touched by control calls only while no writer thread runs).
    bool _partial_line = false;   // the output ends in the middle of a line
    bool _abandoned = false;      // stalled during this stop: drop instead of waiting again
    bool _reported_error = false; // the log gets one line per Writer, not one per failure
    bool _reported_stall = false;
};

} // namespace flowcop::events
