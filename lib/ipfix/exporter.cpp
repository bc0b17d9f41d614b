// SPDX-License-Identifier: BSD-3-Clause
// The export thread: drain, encode per domain, batch finished messages, send to every collector.
#include <ipfix/exporter.h>

#include <events/thread.h>
#include <stats/relaxed.h>

#include <time.h>

#include <chrono>
#include <cstring>

namespace flowcop::ipfix {
namespace {

constexpr unsigned kBurst = 64; // events per dequeue: 64 x 136 B on the thread's stack
constexpr uint32_t kIpv4Headers = 20 + 8;
constexpr uint32_t kIpv6Headers = 40 + 8;

uint64_t wall_ns() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

uint64_t mono_ns() noexcept
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

} // namespace

// Finished messages waiting for one send to every collector. The encoder's buffer is reused for its
// next message, so each message is copied here (a memcpy of at most one MTU).
class Exporter::Batch final : public MessageSink {
public:
    Batch(Exporter& owner, size_t max_message)
        : _owner(owner), _max(max_message), _bytes(kBatchMessages * max_message), _iov(kBatchMessages)
    {}
    void on_message(const uint8_t* data, size_t len, unsigned) noexcept override
    {
        if (_n == kBatchMessages)
            _owner.send_batch();
        uint8_t* slot = _bytes.data() + _n * _max;
        std::memcpy(slot, data, len);
        _iov[_n++] = iovec{slot, len};
        stats::bump(_owner._domains[_domain].messages);
    }
    void for_domain(unsigned d) noexcept { _domain = d; }
    const iovec* messages() const noexcept { return _iov.data(); }
    unsigned size() const noexcept { return _n; }
    void clear() noexcept { _n = 0; }

private:
    Exporter& _owner;
    size_t _max;
    std::vector<uint8_t> _bytes;
    std::vector<iovec> _iov;
    unsigned _n = 0;
    unsigned _domain = 0;
};

Exporter::Exporter() = default;

uint32_t Exporter::min_path_mtu() noexcept
{
    return uint32_t(min_message_bytes()) + kIpv6Headers;
}

std::unique_ptr<Exporter> Exporter::open(const ExporterConfig& config, events::Stream& stream, std::string& error)
{
    const unsigned n = stream.producers();
    if (config.collectors.empty()) {
        error = "IPFIX export needs at least one collector";
        return nullptr;
    }
    if (config.domain_id.size() != n) {
        error = "IPFIX export: " + std::to_string(n) + " lcores but " + std::to_string(config.domain_id.size()) +
                " domain ids";
        return nullptr;
    }
    if (config.path_mtu < min_path_mtu()) {
        error = "IPFIX path MTU " + std::to_string(config.path_mtu) + " is below " + std::to_string(min_path_mtu()) +
                ", the smallest that holds a template and a record";
        return nullptr;
    }
    if (config.max_tracked_flows == 0) {
        error = "IPFIX export: max_tracked_flows is 0 (pass the flow table's capacity per lcore)";
        return nullptr;
    }
    std::unique_ptr<Exporter> x(new Exporter());
    bool any_v6 = false;
    for (const Destination& d : config.collectors) {
        auto c = Collector::open(d.host, d.port, error);
        if (!c)
            return nullptr;
        any_v6 |= c->ipv6();
        x->_collectors.push_back(std::move(c));
    }
    x->_sub = stream.subscribe("IPFIX export",
                               events::kind_bit(events::Kind::destroyed) | events::kind_bit(events::Kind::interim),
                               config.ring_events, error);
    if (x->_sub == nullptr)
        return nullptr;
    const uint32_t headers = any_v6 ? kIpv6Headers : kIpv4Headers;
    x->_max_message = std::min<size_t>(config.path_mtu - headers, 65535);
    x->_n_domains = n;
    x->_domains.reset(new Domain[n]);
    for (unsigned i = 0; i < n; ++i) {
        EncoderConfig ec;
        ec.domain_id = config.domain_id[i];
        ec.max_message_bytes = uint16_t(x->_max_message);
        ec.template_refresh_ns = config.template_refresh_ns;
        ec.template_refresh_messages = config.template_refresh_messages;
        x->_domains[i].encoder = std::make_unique<Encoder>(ec);
        x->_domains[i].deltas = DeltaTracker(config.max_tracked_flows);
    }
    x->_batch = std::make_unique<Batch>(*x, x->_max_message);
    x->_pacer = Pacer(config.max_rate);
    return x;
}

Exporter::~Exporter()
{
    stop_and_flush();
}

void Exporter::start(std::function<void()> on_thread_start)
{
    if (_thread.joinable())
        return;
    _on_thread_start = std::move(on_thread_start);
    _stop.store(false, std::memory_order_relaxed);
    _thread = events::spawn_consumer_thread(_on_thread_start, [this] { run(); });
}

void Exporter::stop_and_flush()
{
    if (!_batch)
        return; // open() failed half-way
    if (!_thread.joinable()) {
        // Never started or already stopped: one final pass on a short-lived thread.
        _stop.store(true, std::memory_order_release);
        _thread = events::spawn_consumer_thread(_on_thread_start, [this] { run(); });
    }
    // Release pairs with the thread's acquire: what lcores emitted before this call (they were
    // joined first) is visible to the final pass.
    _stop.store(true, std::memory_order_release);
    _thread.join();
}

ExporterStats Exporter::stats(unsigned producer) const noexcept
{
    const Domain& d = _domains[producer];
    return ExporterStats{_sub->offered(producer),          stats::load_relaxed(d.records),
                         stats::load_relaxed(d.interim),   _sub->dropped_full(producer),
                         stats::load_relaxed(d.untracked), stats::load_relaxed(d.messages)};
}

void Exporter::run() noexcept
{
    for (;;) {
        const bool stopping = _stop.load(std::memory_order_acquire);
        const uint64_t now = wall_ns();
        bool backlog = false;
        for (unsigned p = 0; p < _n_domains; ++p)
            backlog |= drain(p, now);
        for (unsigned p = 0; p < _n_domains; ++p) {
            Encoder& enc = *_domains[p].encoder;
            if (enc.open() && (stopping || now - enc.opened_ns() >= kMaxHoldNs)) {
                _batch->for_domain(p);
                enc.flush(now, *_batch);
            }
        }
        send_batch();
        // A pass that began after the stop request took everything emitted before it: drain() takes
        // up to a ring's capacity, more than the ring could hold.
        if (stopping)
            return;
        if (!backlog)
            std::this_thread::sleep_for(std::chrono::microseconds(kPollIntervalUs));
    }
}

bool Exporter::drain(unsigned p, uint64_t now_ns) noexcept
{
    Domain& d = _domains[p];
    events::Event ev[kBurst];
    unsigned taken = 0, left = 0;
    _batch->for_domain(p);
    while (taken < _sub->ring_events()) {
        const unsigned n = _sub->take(p, ev, kBurst, left);
        unsigned encoded = 0;
        for (unsigned i = 0; i < n; ++i) {
            events::Event& e = ev[i];
            // Leaves a flow never reported in the interim unchanged; refuses an interim record it has
            // no room to remember: not sent, and the flow's next record carries its counts.
            if (!d.deltas.apply(e)) {
                stats::bump(d.untracked);
                continue;
            }
            if (e.kind == events::Kind::interim)
                stats::bump(d.interim);
            d.encoder->add(e, now_ns, *_batch);
            ++encoded;
        }
        stats::bump(d.records, uint64_t(encoded));
        taken += n;
        if (n < kBurst)
            break;
    }
    return left > 0;
}

void Exporter::send_batch() noexcept
{
    const unsigned n = _batch->size();
    for (unsigned sent = 0; sent < n;) {
        const uint64_t now = mono_ns();
        const uint32_t go = _pacer.grant(now, n - sent);
        if (go == 0) {
            // Paced: wait for the bucket (at most one message's time: 100 us at the default rate).
            std::this_thread::sleep_for(std::chrono::nanoseconds(_pacer.wait_ns(now)));
            continue;
        }
        for (auto& c : _collectors)
            c->send(_batch->messages() + sent, go);
        sent += go;
    }
    _batch->clear();
}

} // namespace flowcop::ipfix
