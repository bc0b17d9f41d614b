// SPDX-License-Identifier: BSD-3-Clause
// libuv's / Node's design (seed 004's "priority queue"): a binary min-heap of deadlines with each
// flow keeping its index in the heap (Node's PriorityQueue setPosition; libuv's heap-inl.h). Entries
// carry the deadline next to the flow's slot, so comparisons read the heap array only (the
// cache-friendly variant); every move writes the moved flow's index into its record. A packet raises
// the flow's deadline and sifts it down; a tick pops the root while it is due.
#pragma once

#include "design_flow.h"

#include <vector>

namespace flowcop::bench::designs {

class HeapDesign {
public:
    static constexpr const char* kName = "binary heap (libuv)";
    static constexpr const char* kWork = "key compares";
    static constexpr const char* kTouchWork = "key compares";
    static constexpr bool kRealTime = false;

    HeapDesign(uint32_t slots, uint64_t timeout_ns, uint64_t) : _flows(slots), _timeout(timeout_ns)
    {
        _heap.reserve(slots);
    }

    void open(uint32_t slot, uint64_t now_ns)
    {
        open_payload(_flows[slot].m, _flows[slot].p, now_ns);
        _heap.push_back({now_ns + _timeout, slot});
        _flows[slot].index = uint32_t(_heap.size() - 1);
        sift_up(_flows[slot].index);
    }

    void touch(uint32_t slot, uint64_t now_ns) noexcept
    {
        Flow& f = _flows[slot];
        touch_payload(f.p, now_ns);
        _heap[f.index].deadline = now_ns + _timeout; // later: it can only move down
        sift_down(f.index);
    }

    PassResult expire(uint64_t now_ns, uint64_t, uint64_t, Sink& sink) noexcept
    {
        PassResult r;
        const uint64_t before = _compares;
        while (!_heap.empty()) {
            ++_compares;
            if (_heap[0].deadline > now_ns)
                break;
            const Entry top = _heap[0];
            _heap[0] = _heap.back();
            _heap.pop_back();
            if (!_heap.empty()) {
                _flows[_heap[0].slot].index = 0;
                sift_down(0);
            }
            Flow& f = _flows[top.slot];
            sink.fire(top.slot, f.m.flags, top.deadline, f.p.packets);
            ++r.fired;
        }
        r.work = _compares - before;
        return r;
    }

    uint64_t touch_work() const noexcept { return _compares; }

private:
    struct Entry {
        uint64_t deadline;
        uint32_t slot;
    };
    struct Flow {
        uint32_t index; // position in _heap
        Meta m;
        Payload p;
    };

    void place(uint32_t i, const Entry& e) noexcept
    {
        _heap[i] = e;
        _flows[e.slot].index = i;
    }
    void sift_up(uint32_t i) noexcept
    {
        const Entry e = _heap[i];
        while (i > 0) {
            const uint32_t parent = (i - 1) / 2;
            ++_compares;
            if (_heap[parent].deadline <= e.deadline)
                break;
            place(i, _heap[parent]);
            i = parent;
        }
        place(i, e);
    }
    void sift_down(uint32_t i) noexcept
    {
        const uint32_t n = uint32_t(_heap.size());
        const Entry e = _heap[i];
        for (;;) {
            uint32_t c = 2 * i + 1;
            if (c >= n)
                break;
            if (c + 1 < n) {
                ++_compares;
                if (_heap[c + 1].deadline < _heap[c].deadline)
                    ++c;
            }
            ++_compares;
            if (e.deadline <= _heap[c].deadline)
                break;
            place(i, _heap[c]);
            i = c;
        }
        place(i, e);
    }

    std::vector<Flow> _flows;
    std::vector<Entry> _heap;
    uint64_t _timeout;
    uint64_t _compares = 0;
};

} // namespace flowcop::bench::designs
