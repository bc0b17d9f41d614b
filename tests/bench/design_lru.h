// SPDX-License-Identifier: BSD-3-Clause
// Seed 001's timeout queue with one timeout value, as an intrusive LRU list: flows in order of last
// activity, prev/next slot indices in the record (the flow table's own lookup is the "hash" that
// finds a flow's node). A packet moves its flow to the tail; a tick pops from the head while the
// head's last_seen + timeout has passed, so it costs the flows due. One timeout for every flow is
// what makes the queue's order the expiry order: per-state TCP timeouts break it.
#pragma once

#include "design_flow.h"

#include <vector>

namespace flowcop::bench::designs {

class LruDesign {
public:
    static constexpr const char* kName = "LRU list (intrusive)";
    static constexpr const char* kWork = "nodes visited";
    static constexpr const char* kTouchWork = "nodes relinked";
    static constexpr bool kRealTime = false;

    LruDesign(uint32_t slots, uint64_t timeout_ns, uint64_t) : _flows(slots), _timeout(timeout_ns) {}

    void open(uint32_t slot, uint64_t now_ns) noexcept
    {
        open_payload(_flows[slot].m, _flows[slot].p, now_ns);
        link_tail(slot);
    }

    void touch(uint32_t slot, uint64_t now_ns) noexcept
    {
        touch_payload(_flows[slot].p, now_ns);
        if (_tail != slot) {
            unlink(slot);
            link_tail(slot);
            _nodes += 3; // neighbours relinked and the old tail
        }
    }

    PassResult expire(uint64_t now_ns, uint64_t, uint64_t, Sink& sink) noexcept
    {
        PassResult r;
        while (_head != kNil) {
            ++r.work;
            Flow& f = _flows[_head];
            if (f.p.last_seen_ns + _timeout > now_ns)
                break;
            const uint32_t slot = _head;
            unlink(slot);
            sink.fire(slot, f.m.flags, f.p.last_seen_ns + _timeout, f.p.packets);
            ++r.fired;
        }
        return r;
    }

    uint64_t touch_work() const noexcept { return _nodes; }

private:
    static constexpr uint32_t kNil = 0xffffffffu;
    struct Flow {
        uint32_t prev = kNil, next = kNil;
        Meta m{};
        Payload p{};
    };

    void link_tail(uint32_t s) noexcept
    {
        _flows[s].prev = _tail;
        _flows[s].next = kNil;
        if (_tail != kNil)
            _flows[_tail].next = s;
        else
            _head = s;
        _tail = s;
    }
    void unlink(uint32_t s) noexcept
    {
        Flow& f = _flows[s];
        if (f.prev != kNil)
            _flows[f.prev].next = f.next;
        else
            _head = f.next;
        if (f.next != kNil)
            _flows[f.next].prev = f.prev;
        else
            _tail = f.prev;
    }

    std::vector<Flow> _flows;
    uint64_t _timeout;
    uint32_t _head = kNil, _tail = kNil;
    uint64_t _nodes = 0;
};

} // namespace flowcop::bench::designs
