// SPDX-License-Identifier: BSD-3-Clause
// The event stream: one Producer per lcore, and subscribers that each receive the kinds they asked
// for through their own single-producer/single-consumer ring per lcore.
//
// Why one ring per subscriber: consumers run at different speeds (a file writer, a UDP exporter, a
// live follower); with its own ring, each one's losses are its own, counted per subscriber and lcore,
// and no consumer can slow another or the lcore (issue 18; issue 17's per-consumer losses).
//
// Ownership: Stream::create() returns the only owner of the Producers and of every Subscription
// (and its rings). The stream must outlive every lcore that emits and every consumer that takes.
// Threading: create() and subscribe() are setup-time calls made before lcores emit; producer(i) is
// handed to lcore i; Subscription::take() is called by that subscription's one consumer thread only;
// offered()/dropped_full() may be read from any thread. No EAL is needed: rings live in memory this
// library allocates.
// Degraded behaviour: see producer.h (full rings drop and count, never block).
#pragma once

#include <events/producer.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace flowcop::events {

class Subscription {
public:
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;
    ~Subscription();

    // Consumer thread only. Moves up to `max` events of lcore `producer` into `out`, oldest first.
    // @return how many; `left` gets how many were still queued after them.
    unsigned take(unsigned producer, Event* out, unsigned max, unsigned& left) noexcept;

    // Any thread. Per lcore: events of this subscription's kinds emitted, and those lost because
    // this subscription's ring was full.
    uint64_t offered(unsigned producer) const noexcept;
    uint64_t dropped_full(unsigned producer) const noexcept;

    unsigned producers() const noexcept { return _n; }
    unsigned ring_events() const noexcept { return _ring_events; }
    // The memory of one lcore's ring: rte_ring's header and next_pow2(ring_events + 1) slots.
    size_t ring_bytes() const noexcept;
    KindMask kinds() const noexcept { return _kinds; }
    // Any thread, at any time: the kinds the lcores copy into this subscription's rings from now on
    // (a subset of those it subscribed to; 0 pauses it: a live follower with nobody following costs
    // the lcores nothing). Lcores see the change within a few emits (relaxed stores).
    void set_kinds(KindMask kinds) noexcept;

private:
    friend class Stream;
    Subscription() = default;

    Producer* _producers = nullptr; // the stream's; set_kinds() writes their slots
    unsigned _n = 0;
    unsigned _slot = 0; // index of this subscription in each Producer's slots
    unsigned _ring_events = 0;
    KindMask _kinds = 0;
    std::vector<rte_ring*> _rings; // per lcore; owned (aligned_alloc)
};

class Stream {
public:
    static constexpr unsigned kMaxProducers = 1u << 16;  // consumers store producer ids as uint16_t
    static constexpr unsigned kMaxRingEvents = 1u << 24; // 2 GB of ring per lcore: surely a unit mistake

    // n_producers lcores. nullptr + one sentence in `error` when n is 0 or above kMaxProducers.
    static std::unique_ptr<Stream> create(unsigned n_producers, std::string& error);
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    ~Stream();

    // Precondition: i < producers().
    Producer& producer(unsigned i) noexcept { return _producers[i]; }
    unsigned producers() const noexcept { return _n; }

    // Setup time only (no lcore emits yet). Adds a subscriber receiving the events whose kind is in
    // `kinds`, through a ring per lcore holding exactly `ring_events` (which takes
    // next_pow2(ring_events + 1) * sizeof(Event) bytes, so 2^k - 1 wastes nothing). `who` names the
    // subscriber in errors. nullptr + one sentence in `error` when ring_events is 0 or above
    // kMaxRingEvents, kinds or protos is empty, kMaxSubscribers already subscribed, or memory runs out.
    // `protos`: the IP protocols it takes (producer.h), at the source.
    Subscription* subscribe(const std::string& who, KindMask kinds, unsigned ring_events, std::string& error,
                            const ProtoSet& protos = ProtoSet{});

private:
    Stream() = default;
    std::unique_ptr<Producer[]> _producers;
    unsigned _n = 0;
    std::vector<std::unique_ptr<Subscription>> _subscriptions;
};

} // namespace flowcop::events
