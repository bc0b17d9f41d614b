// SPDX-License-Identifier: BSD-3-Clause
// The IPFIX export thread: drains its subscription to the event stream (destroyed flows and interim
// reports of long ones), encodes one message stream per lcore (its own observation domain, encoder.h)
// and sends every message to every collector over UDP (collector.h). A flow reported more than once
// goes out as deltas (deltas.h), so its records add up to its totals.
//
// Why here and not on the lcores: the polling lcores only copy an Event into a ring (events/
// producer.h); formatting and sending cost them nothing, and a slow or dead collector cannot slow
// them. When this thread falls behind, an lcore's ring fills and its events are dropped and counted
// (stats().dropped_full), never waited for.
//
// Ownership: Exporter::open() returns the only owner of the encoders, the message batch and the
// collectors' sockets; the Stream owns the subscription's rings and must outlive the Exporter.
// Destruction calls stop_and_flush(). Threading: open/start/stop_and_flush/~Exporter are control-plane
// calls from one thread at a time; stats() and collector_stats() may be read from any thread.
// Timing: a record leaves in the next message of its domain; a message is sent when it is full, when
// it has waited kMaxHoldNs since its first record, or at stop_and_flush(), and no faster than
// config.max_rate messages a second (pacer.h: the thread waits, so a burst such as the stop's open
// flows reaches a collector at a rate it can read); the thread polls every kPollIntervalUs when idle. Export time, flow times and template refresh use the wall clock.
// Invariant per lcore, after stop_and_flush() (approximately while running):
//   stats(i).records + stats(i).dropped_full + stats(i).dropped_untracked == stats(i).offered.
// Messages are the same for every collector, so each collector sees one sequence per domain; a
// message that fails to one collector is counted in that collector's send_errors only.
#pragma once

#include <ipfix/collector.h>
#include <ipfix/defaults.h>
#include <ipfix/deltas.h>
#include <ipfix/encoder.h>
#include <ipfix/pacer.h>

#include <events/stream.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace flowcop::ipfix {

struct Destination {
    std::string host; // IPv4 or IPv6 literal, no brackets
    uint16_t port;
};

struct ExporterConfig {
    std::vector<Destination> collectors; // at least one
    // The path MTU to the collectors: messages stay within it less the IP (20 for IPv4, 40 for IPv6;
    // the larger when collectors mix) and UDP (8) headers.
    uint32_t path_mtu = kDefaultPathMtu;
    uint64_t template_refresh_ns = uint64_t(kDefaultTemplateRefreshS) * 1'000'000'000;
    uint32_t template_refresh_messages = kDefaultTemplateRefreshMessages;
    unsigned ring_events = 65535;    // per lcore, in the exporter's own subscription
    std::vector<uint32_t> domain_id; // per stream producer (lcore slot)
    // Per lcore: flows with interim records outstanding that the delta tracker remembers (deltas.h).
    // Pass the lcore's flow table capacity, which the tracker cannot exceed; 0 is refused by open().
    uint32_t max_tracked_flows = 0;
    // Messages a second to each collector (pacer.h), in bursts of at most Pacer::kBurstMessages; 0 =
    // unpaced. Every record still goes (the thread waits), so a stop takes records / rate seconds more.
    uint32_t max_rate = kDefaultMaxRate;
};

struct ExporterStats {
    uint64_t offered;      // destroyed and interim events emitted on this lcore
    uint64_t records;      // of those, encoded into messages
    uint64_t interim;      // of the records, interim ones
    uint64_t dropped_full; // of those, lost because the exporter's ring was full
    // of those, interim events not exported because the delta tracker had no room (deltas.h): the
    // flow's next record carries their counts
    uint64_t dropped_untracked;
    uint64_t messages; // messages made for this lcore's domain (each sent to every collector)
};

class Exporter {
public:
    static constexpr unsigned kPollIntervalUs = 1000;
    static constexpr uint64_t kMaxHoldNs = 100'000'000; // 100 ms: collectors bin flows by minutes
    // Finished messages kept before one send to every collector (one sendmmsg each).
    static constexpr unsigned kBatchMessages = 64;

    // Subscribes to `stream` (setup time), opens one socket per collector. nullptr + one sentence in
    // `error` if the config is inconsistent (no collector, per-producer vectors of the wrong size,
    // an MTU below min_path_mtu(), max_tracked_flows 0) or a socket or the subscription cannot be made.
    // ingressInterface is each event's own port (kHasInPort), left out of the record without one.
    static std::unique_ptr<Exporter> open(const ExporterConfig& config, events::Stream& stream, std::string& error);
    Exporter(const Exporter&) = delete;
    Exporter& operator=(const Exporter&) = delete;
    ~Exporter();

    // Starts the thread (no-op if running); `on_thread_start` runs first on it (see events/thread.h).
    void start(std::function<void()> on_thread_start = {});
    // Drains everything emitted before the call, sends it, joins the thread. Idempotent.
    void stop_and_flush();

    // Restarts (--state-file, issue 32; deltas.h): what a flow of `producer`'s domain has reported, and
    // the same handed to a restored flow. Only while the export thread does not run: before start(),
    // or after stop_and_flush().
    bool reported(unsigned producer, uint64_t flow_id, DeltaTracker::Reported& out) const noexcept
    {
        return producer < _n_domains && _domains[producer].deltas.reported(flow_id, out);
    }
    bool seed_reported(unsigned producer, uint64_t flow_id, const DeltaTracker::Reported& r) noexcept
    {
        return producer < _n_domains && _domains[producer].deltas.seed(flow_id, r);
    }

    ExporterStats stats(unsigned producer) const noexcept;
    size_t collectors() const noexcept { return _collectors.size(); }
    const Collector& collector(size_t i) const noexcept { return *_collectors[i]; }
    size_t max_message_bytes() const noexcept { return _max_message; }

    // The smallest --ipfix-mtu that leaves room for a message of min_message_bytes() (IPv6 headers).
    static uint32_t min_path_mtu() noexcept;

private:
    class Batch;
    Exporter();
    void run() noexcept;
    bool drain(unsigned p, uint64_t now_ns) noexcept;
    void send_batch() noexcept;

    struct alignas(64) Domain {
        std::unique_ptr<Encoder> encoder;
        DeltaTracker deltas{0};
        uint64_t records = 0; // written by the export thread only (stats/relaxed.h)
        uint64_t interim = 0;
        uint64_t untracked = 0;
        uint64_t messages = 0;
    };

    events::Subscription* _sub = nullptr;
    std::unique_ptr<Domain[]> _domains;
    unsigned _n_domains = 0;
    std::vector<std::unique_ptr<Collector>> _collectors;
    std::unique_ptr<Batch> _batch;
    Pacer _pacer;
    size_t _max_message = 0;
    std::function<void()> _on_thread_start;
    std::thread _thread;
    std::atomic<bool> _stop{false};
};

} // namespace flowcop::ipfix
