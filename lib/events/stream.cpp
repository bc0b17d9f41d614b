// SPDX-License-Identifier: BSD-3-Clause
// Stream and Subscription: ring set-up on our own memory (no EAL, no memzone) and the consumer's take.
#include <events/stream.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace flowcop::events {
namespace {

constexpr unsigned kRingFlags = RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ;

uint32_t next_pow2(uint32_t v) noexcept
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

// A ring holding exactly ring_events Events in memory from aligned_alloc. @return 0 or -errno.
int make_ring(unsigned subscription, unsigned producer, unsigned ring_events, rte_ring*& out) noexcept
{
    // RING_F_EXACT_SZ makes the ring hold exactly ring_events, but its slot array is the next power of
    // two above ring_events; size the memory for that, as rte_ring_create_elem() does.
    const ssize_t bytes = rte_ring_get_memsize_elem(sizeof(Event), next_pow2(ring_events + 1));
    if (bytes < 0)
        return static_cast<int>(bytes);
    const size_t rounded = (static_cast<size_t>(bytes) + 63) / 64 * 64; // aligned_alloc wants a multiple
    void* mem = std::aligned_alloc(64, rounded);
    if (mem == nullptr)
        return -ENOMEM;
    char name[32];
    std::snprintf(name, sizeof name, "flowcop_ev_%u_%u", subscription, producer);
    auto* ring = static_cast<rte_ring*>(mem);
    const int rc = rte_ring_init(ring, name, ring_events, kRingFlags);
    if (rc < 0) {
        std::free(mem);
        return rc;
    }
    out = ring;
    return 0;
}

} // namespace

std::unique_ptr<Stream> Stream::create(unsigned n_producers, std::string& error)
{
    if (n_producers == 0 || n_producers > kMaxProducers) {
        error = "event stream: producer count " + std::to_string(n_producers) + " is outside 1.." +
                std::to_string(kMaxProducers);
        return nullptr;
    }
    std::unique_ptr<Stream> s(new Stream());
    s->_producers.reset(new Producer[n_producers]);
    s->_n = n_producers;
    return s;
}

Stream::~Stream() = default;

size_t Subscription::ring_bytes() const noexcept
{
    const ssize_t bytes = rte_ring_get_memsize_elem(sizeof(Event), next_pow2(_ring_events + 1));
    return bytes < 0 ? 0 : static_cast<size_t>(bytes);
}

Subscription* Stream::subscribe(const std::string& who, KindMask kinds, unsigned ring_events, std::string& error,
                                const ProtoSet& protos)
{
    if (ring_events == 0 || ring_events > kMaxRingEvents) {
        error = who + ": ring size " + std::to_string(ring_events) + " is outside 1.." +
                std::to_string(kMaxRingEvents) + " events";
        return nullptr;
    }
    if ((kinds & kAllKinds) == 0) {
        error = who + ": subscribes to no event kind";
        return nullptr;
    }
    if (protos.empty()) {
        error = who + ": subscribes to no IP protocol";
        return nullptr;
    }
    if (_subscriptions.size() == kMaxSubscribers) {
        error = who + ": the event stream already has " + std::to_string(kMaxSubscribers) + " subscribers";
        return nullptr;
    }
    std::unique_ptr<Subscription> sub(new Subscription());
    sub->_producers = _producers.get();
    sub->_n = _n;
    sub->_slot = unsigned(_subscriptions.size());
    sub->_ring_events = ring_events;
    sub->_kinds = kinds & kAllKinds;
    sub->_rings.assign(_n, nullptr);
    for (unsigned i = 0; i < _n; ++i) {
        const int rc = make_ring(sub->_slot, i, ring_events, sub->_rings[i]);
        if (rc < 0) {
            error =
                who + ": cannot create the event ring for lcore slot " + std::to_string(i) + ": " + std::strerror(-rc);
            return nullptr; // ~Subscription frees the rings made so far
        }
    }
    // Only now, with every ring made, do the producers learn of it (no lcore emits yet).
    for (unsigned i = 0; i < _n; ++i) {
        Producer::Slot& slot = _producers[i]._slots[sub->_slot];
        slot.ring = sub->_rings[i];
        slot.kinds = sub->_kinds;
        slot.protos = protos;
        _producers[i]._n_slots = sub->_slot + 1;
    }
    _subscriptions.push_back(std::move(sub));
    return _subscriptions.back().get();
}

Subscription::~Subscription()
{
    for (rte_ring* r : _rings)
        std::free(r);
}

unsigned Subscription::take(unsigned producer, Event* out, unsigned max, unsigned& left) noexcept
{
    return rte_ring_sc_dequeue_burst_elem(_rings[producer], out, sizeof(Event), max, &left);
}

void Subscription::set_kinds(KindMask kinds) noexcept
{
    for (unsigned i = 0; i < _n; ++i)
        stats::store_relaxed(_producers[i]._slots[_slot].kinds, KindMask(kinds & _kinds));
}

uint64_t Subscription::offered(unsigned producer) const noexcept
{
    return stats::load_relaxed(_producers[producer]._slots[_slot].offered);
}

uint64_t Subscription::dropped_full(unsigned producer) const noexcept
{
    return stats::load_relaxed(_producers[producer]._slots[_slot].dropped_full);
}

} // namespace flowcop::events
