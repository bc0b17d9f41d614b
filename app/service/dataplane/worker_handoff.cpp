// SPDX-License-Identifier: BSD-3-Clause
// The worker's half of the handoff plan (port_plan.h, handoff.h): passing the packets of flows another
// worker owns to it, and tracking the packets other workers passed here. Under --clock packet the rings
// also carry the sender's timeline as time marks (handoff.h), and a port that reads a file waits for a
// full ring rather than dropping.
#include "worker.h"
#include <service/plan/flow_owner.h>

#include <stats/relaxed.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_ring.h>

namespace flowcop::app {

using stats::bump;

uint16_t Worker::hand_off(rte_mbuf** mbufs, packet::Packet** ptrs, uint16_t n, uint16_t rx_port, const uint64_t* times,
                          uint8_t* orig, fragattr::Held* held) noexcept
{
    const unsigned me = _place.index;
    const unsigned workers = _place.handoff->workers();
    uint16_t local = 0;
    bool staged = false;
    for (uint16_t i = 0; i < n; ++i) {
        const packet::Packet& p = *ptrs[i];
        // A frame without an IP header has no flow to keep together: it stays where it arrived.
        unsigned owner = p.ip_version == 0 ? me : flow_owner(p.key, _place.owner_seed, workers);
        if (held != nullptr && (p.extra.frag_flags & packet::kFragmented)) [[unlikely]]
            owner = mark_fragment(mbufs[i], p, held[i], owner);
        if (times != nullptr) [[unlikely]] {
            // Every other worker learns this packet's time, in order with the packets it is handed: the
            // owner from the packet itself, the others from a mark when the time is new to them.
            for (unsigned o = 0; o < workers; ++o) {
                if (o == me || times[i] <= _told[o])
                    continue;
                _told[o] = times[i];
                if (o != owner) {
                    _outbox[o * kBurst + _outbox_size[o]++] = static_cast<rte_mbuf*>(time_mark(times[i]));
                    staged = true;
                }
            }
        }
        if (owner == me) {
            mbufs[local] = mbufs[i];
            ptrs[local] = ptrs[i];
            if (held != nullptr)
                held[local] = held[i];
            orig[local] = uint8_t(i);
            ++local;
            continue;
        }
        mbufs[i]->port = rx_port; // some PMDs (net_ring) leave it unset; the owner forwards by it
        _outbox[owner * kBurst + _outbox_size[owner]++] = mbufs[i];
        staged = true;
    }
    if (!staged)
        return local;
    send_outboxes(rx_port, times != nullptr);
    return local;
}

void Worker::send_outboxes(uint16_t rx_port, bool with_time_marks) noexcept
{
    const unsigned me = _place.index;
    const bool can_wait = rx_port < _settings.wait_ports.size() && _settings.wait_ports[rx_port] != 0;
    // One enqueue per owner per burst. Packets of one flow keep their order: they all go to one ring.
    for (unsigned o = 0; o < _outbox_size.size(); ++o) {
        const unsigned k = _outbox_size[o];
        if (k == 0)
            continue;
        _outbox_size[o] = 0;
        rte_mbuf** out = &_outbox[o * kBurst];
        rte_ring* ring = _place.handoff->ring(me, o);
        unsigned put = rte_ring_enqueue_burst(ring, reinterpret_cast<void* const*>(out), k, nullptr);
        if (put < k && can_wait) [[unlikely]]
            put += wait_enqueue(ring, out + put, k - put);
        if (!with_time_marks) {
            bump(_stats.handed_off, uint64_t(put));
            if (put < k) {
                bump(_stats.handoff_dropped, uint64_t(k - put));
                rte_pktmbuf_free_bulk(out + put, k - put);
            }
            continue;
        }
        // With time marks among them: only packets count, and only packets are freed.
        uint64_t sent = 0;
        for (unsigned j = 0; j < put; ++j)
            sent += is_time_mark(out[j]) ? 0 : 1;
        bump(_stats.handed_off, sent);
        uint64_t dropped = 0;
        for (unsigned j = put; j < k; ++j)
            if (!is_time_mark(out[j])) {
                rte_pktmbuf_free(out[j]);
                ++dropped;
            }
        if (dropped != 0)
            bump(_stats.handoff_dropped, dropped);
    }
}

unsigned Worker::wait_enqueue(rte_ring* ring, rte_mbuf* const* out, unsigned k) noexcept
{
    // A file can wait: hold this poller back until the owner made room. Meanwhile take what the others
    // hand here (two workers waiting on each other's rings both keep draining: no deadlock), with no cop
    // pass until this worker's own burst is tracked. Once the service stops, the rest is dropped and counted.
    const bool held = _holding_cop;
    _holding_cop = true;
    unsigned put = 0;
    while (put < k && (_quit == nullptr || !_quit->load(std::memory_order_relaxed))) {
        // A poller holding a burst is not idle (--stop-when-idle-ms reads this).
        stats::store_relaxed(_stats.last_rx_tsc, rte_rdtsc());
        take_handoffs(rte_rdtsc());
        put += rte_ring_enqueue_burst(ring, reinterpret_cast<void* const*>(out + put), k - put, nullptr);
        if (put < k)
            rte_pause();
    }
    _holding_cop = held;
    return put;
}

bool Worker::take_handoffs(uint64_t tsc) noexcept
{
    const unsigned me = _place.index;
    const unsigned workers = _place.handoff->workers();
    bool emptied = true;
    for (unsigned from = 0; from < workers; ++from) {
        if (from == me)
            continue;
        if (!_held.empty()) {
            emptied &= take_related(from, tsc);
            continue;
        }
        void* objs[kBurst];
        const unsigned n = rte_ring_dequeue_burst(_place.handoff->ring(from, me), objs, _burst, nullptr);
        emptied &= n < _burst;
        if (n == 0)
            continue;
        if (_place.replay == nullptr) {
            bump(_stats.handoff_received, uint64_t(n));
            handle(reinterpret_cast<rte_mbuf**>(objs), uint16_t(n), tsc, nullptr);
            continue;
        }
        // In the sender's order: the packets before a time mark, then the mark's time.
        unsigned start = 0;
        for (unsigned i = 0; i <= n; ++i) {
            if (i < n && !is_time_mark(objs[i]))
                continue;
            if (i > start) {
                bump(_stats.handoff_received, uint64_t(i - start));
                handle(reinterpret_cast<rte_mbuf**>(objs + start), uint16_t(i - start), tsc, nullptr);
            }
            if (i < n)
                advance_replay(time_of_mark(objs[i]));
            start = i + 1;
        }
    }
    return emptied;
}

bool Worker::take_related(unsigned from, uint64_t tsc) noexcept
{
    Held& h = _held[from];
    bool emptied = true;
    if (h.n == 0) {
        h.head = 0;
        h.n = uint16_t(rte_ring_dequeue_burst(_place.handoff->ring(from, _place.index), reinterpret_cast<void**>(h.m),
                                              _burst, nullptr));
        emptied = h.n < _burst;
    }
    // A packet the sender read ahead of this worker's place in the timeline (its time is newer than this
    // worker's) would move this clock, and run its cop, before frames of its own queue that came first in
    // the stream: it waits until the time marks bring this worker there (they always do: the stream's
    // marks up to that packet were dealt before it). Once the service stops, all of them, at once.
    const bool stopping = _quit != nullptr && _quit->load(std::memory_order_relaxed);
    uint16_t k = 0;
    while (k < h.n && (stopping || _packet_clock.time_of(h.m[h.head + k]) <= _packet_clock.now_ns()))
        ++k;
    if (k != 0) {
        bump(_stats.handoff_received, uint64_t(k));
        handle(h.m + h.head, k, tsc, nullptr);
        h.head = uint16_t(h.head + k);
        h.n = uint16_t(h.n - k);
    }
    return emptied && h.n == 0;
}

void Worker::finish_handoffs() noexcept
{
    // This worker receives nothing more; the others may still be handing packets here until they stop too.
    _place.handoff->rx_stopped();
    const uint64_t give_up = rte_rdtsc() + 2 * _clock.hz();
    while (!_place.handoff->all_rx_stopped() && rte_rdtsc() < give_up)
        take_handoffs(rte_rdtsc());
    // Nobody enqueues any more: empty what is left (a ring holds a bounded number of bursts).
    const unsigned passes = _place.handoff->capacity() / _burst + 1;
    for (unsigned i = 0; i < passes; ++i)
        take_handoffs(rte_rdtsc());
}

} // namespace flowcop::app
