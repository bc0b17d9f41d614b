// SPDX-License-Identifier: BSD-3-Clause
// Contract: TimeMarks is one RX queue's share of a replay's single timeline, so that the lcores reading
// a multi-queue port's queues at their own paces each see every time of the stream exactly where it
// falls between the frames of their own queue. EAL-free, header-only, no allocation after construction.
//
// Why: a port with queues=N deals one capture to N rings (rss_dealer.h); a reader of one queue sees
// only its frames' times, so its clock (and its inactivity cop) would follow its own frames alone, and
// learning the others' times later (once per burst, per loop turn) lets its cop run late or skip the
// instant one lcore would have run it at. The dealer knows the one timeline: for every frame it deals
// it computes the stream's running maximum time M (the time a packet clock has after that frame,
// dataplane/clock.h) and, for every queue that has not been told M yet (and is not being told by the
// frame itself), pushes a mark {before, M} here: "time M comes before the `before`-th frame dealt to
// this queue" (frames counted from 0, marks never counted as frames). The reader applies each mark once
// it has read `before` frames of its queue: after the frames dealt before it and before those dealt
// after it, so its clock passes exactly the times a single reader of the whole stream would, in the
// same order relative to its own frames (its cop then runs at the same instants).
//
// Order and visibility: the dealer pushes a frame's marks before it enqueues that frame (or any later
// one); a mark pushed early is harmless because the reader holds it until it has read `before` frames.
// The reader looks at the marks after its rte_eth_rx_burst (the ring's dequeue is an acquire of the
// dealer's enqueue, which released the marks), so every mark due before a frame it read is visible.
// Capacity: the dealer pushes only when room() is enough for a whole burst's marks (it waits
// otherwise, as for a full rx ring); the reader consumes marks as it reads frames and applies the ones
// due after its last frame whenever its queue is empty, so a full TimeMarks never blocks both sides.
// Threading: one producer (the port's thread) and one consumer (the lcore that polls the queue). The
// two indices are on their own cache lines; a push or pop is a plain store (release) and a load.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace flowcop::flowgen {

class TimeMarks {
public:
    struct Mark {
        uint64_t before;  // the queue's frames dealt before this time (the reader applies it after reading them)
        uint64_t time_us; // the stream's running maximum time, microseconds since the Unix epoch
    };

    // capacity: rounded up to a power of two, at least 2.
    explicit TimeMarks(uint32_t capacity)
    {
        uint32_t c = 2;
        while (c < capacity)
            c <<= 1;
        _mask = c - 1;
        _slots = std::make_unique<Mark[]>(c);
    }
    TimeMarks(const TimeMarks&) = delete;
    TimeMarks& operator=(const TimeMarks&) = delete;

    uint32_t capacity() const noexcept { return _mask + 1; }

    // Producer.
    uint32_t room() const noexcept
    {
        return capacity() - uint32_t(_tail.v.load(std::memory_order_relaxed) - _head.v.load(std::memory_order_acquire));
    }
    // Only with room() > 0.
    void push(const Mark& m) noexcept
    {
        const uint64_t t = _tail.v.load(std::memory_order_relaxed);
        _slots[t & _mask] = m;
        _tail.v.store(t + 1, std::memory_order_release);
    }

    // Consumer: the oldest mark, if any.
    bool front(Mark& m) const noexcept
    {
        const uint64_t h = _head.v.load(std::memory_order_relaxed);
        if (h == _tail.v.load(std::memory_order_acquire))
            return false;
        m = _slots[h & _mask];
        return true;
    }
    void pop() noexcept { _head.v.store(_head.v.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
    // Marks pushed and not popped (any thread; a value it held).
    uint64_t size() const noexcept
    {
        return _tail.v.load(std::memory_order_acquire) - _head.v.load(std::memory_order_acquire);
    }

private:
    struct alignas(64) Index {
        std::atomic<uint64_t> v{0};
    };
    Index _head; // consumer's
    Index _tail; // producer's
    std::unique_ptr<Mark[]> _slots;
    uint32_t _mask = 1;
};

} // namespace flowcop::flowgen
