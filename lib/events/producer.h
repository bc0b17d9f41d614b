// SPDX-License-Identifier: BSD-3-Clause
// The per-lcore side of the event stream: emit() copies an Event into the single-producer ring of
// every subscriber (stream.h) that asked for its kind.
//
// Ownership: a Stream creates and owns its Producers; subscribers own their rings. Threading: only
// the owning lcore calls emit() on a given Producer (single producer); each ring has one consumer
// thread. Subscriptions are attached before any emit() runs (setup time), never while lcores emit.
// The per-subscriber counters (offered, dropped_full) live on lines only the lcore writes: single-writer
// fields (stats/relaxed.h), bumped with a relaxed load+store (no read-modify-write atomic, no locked
// instruction on the hot path); any thread may read them with relaxed loads.
// Degraded behaviour: emit() never blocks and never allocates; a subscriber whose ring is full loses
// that event, counted in its dropped_full, and the other subscribers still get it.
// Invariant, per subscriber: offered == accepted into its ring + dropped_full.
#pragma once

#include <cstdint>

#include <events/event.h>
#include <stats/relaxed.h>

struct rte_ring;

namespace flowcop::events {

class Stream;
class Subscription;

// Subscribers one stream can have: the JSON writer, the IPFIX exporter and live followers.
inline constexpr unsigned kMaxSubscribers = 4;

// The IP protocols (Event::proto) a subscriber takes: a set of the 256 numbers, every one by default.
// emit() skips a subscriber whose set lacks the event's protocol before its ring: a filtered-out event
// costs that subscriber no ring slot and does not count in its offered.
struct ProtoSet {
    uint64_t words[4] = {~0ull, ~0ull, ~0ull, ~0ull};
    static constexpr ProtoSet none() noexcept { return ProtoSet{{0, 0, 0, 0}}; }
    constexpr bool has(uint8_t proto) const noexcept { return (words[proto >> 6] >> (proto & 63)) & 1; }
    constexpr void add(uint8_t proto) noexcept { words[proto >> 6] |= uint64_t{1} << (proto & 63); }
    constexpr bool all() const noexcept { return (words[0] & words[1] & words[2] & words[3]) == ~0ull; }
    constexpr bool empty() const noexcept { return (words[0] | words[1] | words[2] | words[3]) == 0; }
};

class alignas(64) Producer {
public:
    Producer(const Producer&) = delete;
    Producer& operator=(const Producer&) = delete;

    // Copies `e` into every subscribed ring that wants e.kind. @return false if some ring was full
    // (that subscriber's dropped_full grows); true otherwise, including when nobody subscribed.
    bool emit(const Event& e) noexcept;
    // True when some subscriber wants events of this kind now: the lcore may skip building an Event
    // nobody takes (a live follower's subscription wants nothing while nobody follows).
    bool wants(Kind k) const noexcept
    {
        for (unsigned i = 0; i < _n_slots; ++i)
            if (stats::load_relaxed(_slots[i].kinds) & kind_bit(k))
                return true;
        return false;
    }
    // The same for an event of this IP protocol: some subscriber would take it into its ring.
    bool wants(Kind k, uint8_t proto) const noexcept
    {
        for (unsigned i = 0; i < _n_slots; ++i)
            if ((stats::load_relaxed(_slots[i].kinds) & kind_bit(k)) && _slots[i].protos.has(proto))
                return true;
        return false;
    }

private:
    friend class Stream;
    friend class Subscription;
    Producer() noexcept = default;

    // One subscriber's view from this lcore; written only by the lcore after setup.
    struct Slot {
        rte_ring* ring = nullptr;
        KindMask kinds = 0;        // relaxed: Subscription::set_kinds() may change it while the lcore emits
        uint64_t offered = 0;      // events of the subscribed kinds emitted
        uint64_t dropped_full = 0; // of those, lost because the ring was full
        ProtoSet protos;           // set at subscribe(), before any emit()
    };
    unsigned _n_slots = 0;
    Slot _slots[kMaxSubscribers];
};

} // namespace flowcop::events
