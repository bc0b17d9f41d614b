// SPDX-License-Identifier: BSD-3-Clause
#include "worker.h"

#include <algorithm>

#include <packet/key_policy.h>
#include <packet/packet_mbuf.h>
#include <stats/relaxed.h>

#include <flowgen/time_marks.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

namespace flowcop::app {

using stats::bump;
using stats::store_relaxed;

std::unique_ptr<Worker> Worker::create(const WorkerPlan& plan, const WorkerPlace& place, conntrack::FlowTable& table,
                                       const TscClock& clock, TimestampField ts, const WorkerSettings& settings,
                                       std::string& error)
{
    std::unique_ptr<Worker> w(new Worker(plan, place, table, clock, ts, settings));
    if (place.handoff != nullptr) {
        w->_outbox.assign(size_t(place.handoff->workers()) * kBurst, nullptr);
        w->_outbox_size.assign(place.handoff->workers(), 0);
        w->_told.assign(place.handoff->workers(), 0);
    }
    w->_rx_read.assign(plan.rx.size(), 0);
    w->_follows_marks =
        std::any_of(place.rx_marks.begin(), place.rx_marks.end(), [](const auto* m) { return m != nullptr; });
    // Only a worker that follows time marks can tell when a handed packet is due (take_related()).
    if (place.rss && place.handoff != nullptr && w->_follows_marks)
        w->_held.resize(place.handoff->workers());
    const std::string name = "flowcop_mbox" + std::to_string(plan.lcore);
    w->_mailbox = rte_ring_create(name.c_str(), 64, SOCKET_ID_ANY, RING_F_SC_DEQ);
    if (w->_mailbox == nullptr) {
        error = "lcore " + std::to_string(plan.lcore) + ": cannot create its mailbox ring: " + rte_strerror(rte_errno);
        return nullptr;
    }
    const size_t frag_bytes = fragattr::FragmentAttributor::bytes_for(settings.fragments);
    w->_fragment_memory =
        rte_zmalloc_socket("flowcop_fragments", frag_bytes, 64, int(rte_lcore_to_socket_id(plan.lcore)));
    if (w->_fragment_memory == nullptr) {
        error = "lcore " + std::to_string(plan.lcore) + ": no memory for its fragment attributor (" +
                std::to_string(frag_bytes) + " bytes)";
        return nullptr;
    }
    fragattr::Config fc = settings.fragments;
    fc.seed ^= rte_rdtsc() * 0x9e3779b97f4a7c15ull ^ plan.lcore; // a different hash per lcore and run
    w->_fragments = std::make_unique<fragattr::FragmentAttributor>(fc, w->_fragment_memory);
    if (place.handoff != nullptr && (w->_mark_offset = register_handoff_mark()) < 0) {
        error = "lcore " + std::to_string(plan.lcore) +
                ": cannot register the handoff mark mbuf field: " + rte_strerror(rte_errno);
        return nullptr;
    }
    if (settings.policy != nullptr) {
        // Its own copy: verdict() reads only this lcore's memory.
        w->_policy = std::make_unique<policy::Policy>(*settings.policy);
        w->_policy_counters = std::make_unique<policy::Counters>(*w->_policy);
        w->_judge.set_policy(w->_policy.get(), w->_policy_counters.get());
        w->_judge.set_enforce(settings.mode == Mode::inline_fwd); // monitor: the dry run
        table.set_judge(&w->_judge);
    }
    // Under the handoff plan a worker tracks packets of every port, so it knows every port's zone.
    for (const auto& [port, zone] : settings.port_zones) {
        if (zone == 0)
            continue;
        if (w->_port_zone.size() <= port)
            w->_port_zone.resize(size_t(port) + 1, 0);
        w->_port_zone[port] = zone;
    }
    return w;
}

Worker::~Worker()
{
    rte_ring_free(_mailbox);
    _fragments.reset();
    rte_free(_fragment_memory);
}

bool Worker::post(Command* cmd) noexcept
{
    return rte_ring_mp_enqueue(_mailbox, cmd) == 0;
}

uint64_t Worker::now_ns() const noexcept
{
    return _settings.clock == ClockSource::packet ? _packet_clock.now_ns() : _clock.now_ns();
}

void Worker::run(const std::atomic<bool>& quit) noexcept
{
    _quit = &quit;
    while (!quit.load(std::memory_order_relaxed)) {
        const uint64_t tsc = rte_rdtsc();
        // --clock packet: the newest time any worker has read, taken before this turn's RX and handoffs,
        // and adopted only if the rings that feed this worker were emptied after it: every packet read
        // before that time has then been tracked here (clock.h).
        const uint64_t newest = _place.replay != nullptr ? _place.replay->newest() : 0;
        bool rx_backlog = false; // some queue gave a full burst: it may hold more
        for (unsigned qi = 0; qi < _plan.rx.size(); ++qi)
            rx_backlog |= poll(_plan.rx[qi], qi, tsc) == _burst;
        bool drained = true;
        if (_place.handoff != nullptr)
            drained = take_handoffs(tsc);
        // And only if its own queues were drained too (no full burst): under rss a worker reads its own
        // queue, and a packet older than `newest` may still wait there behind a full burst.
        if (_place.replay != nullptr) [[unlikely]]
            follow_replay(newest, drained && !rx_backlog, tsc);
        const uint64_t now = now_ns();
        store_relaxed(_stats.now_ns, now);
        // A plain store on the line now_ns already dirties each turn (no RMW): the housekeeping thread
        // feeds systemd's watchdog only while every worker's turns advance (notify.h).
        store_relaxed(_stats.turns, _stats.turns + 1);
        // A packet clock that has seen no packet yet has no time: nothing can be due.
        if (now >= _next_cop_ns && now != 0)
            run_cop(now);
        drain_mailbox();
        if (_reap_pending) [[unlikely]]
            reap_killed();
        // Budgeted like a cop pass, and in RX slack: see worker.h.
        if (_table.rebase_pending() && (!rx_backlog || ++_rebase_deferrals >= kRebaseMaxDeferrals)) {
            _rebase_deferrals = 0;
            _table.rebase_step(uint32_t(std::min<uint64_t>(
                                   kRebaseStepRecords,
                                   timerwheel::visit_budget(_settings.fire_budget, _settings.visit_budget_factor))),
                               uint32_t(std::min<uint64_t>(UINT32_MAX, _settings.fire_budget)));
        }
    }
    if (_place.handoff != nullptr)
        finish_handoffs();
    // Every worker's last time: the flows still open end at the replay's end on every lcore.
    if (_place.replay != nullptr)
        _packet_clock.advance_to(_place.replay->newest());
    drain_mailbox();
    _stopped_ns = now_ns();
    if (!_settings.keep_flows_at_stop)
        _table.destroy_all(_stopped_ns, conntrack::Reason::shutdown);
}

uint16_t Worker::poll(const RxQueueRef& q, unsigned qi, uint64_t tsc) noexcept
{
    rte_mbuf* mbufs[kBurst];
    const uint16_t n = rte_eth_rx_burst(q.port, q.queue, mbufs, _burst);
    if (n == 0)
        return 0;
    store_relaxed(_stats.last_rx_tsc, tsc);
    bump(_stats.rx_packets, uint64_t(n));
    if (_place.replay != nullptr) [[unlikely]]
        replay_burst(mbufs, n, tsc, q, qi);
    else
        handle(mbufs, n, tsc, &q);
    return n;
}

void Worker::replay_burst(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef& q, unsigned qi) noexcept
{
    flowgen::TimeMarks* marks = qi < _place.rx_marks.size() ? _place.rx_marks[qi] : nullptr;
    if (marks == nullptr) {
        handle(mbufs, n, tsc, &q);
    } else {
        // The stream's times dealt to the other queues, each applied between the frames of this queue it
        // fell between (flowgen/time_marks.h): the burst is tracked in pieces, the cop running at a mark
        // where it crosses a check instant, as on one lcore reading the whole stream.
        const uint64_t read = _rx_read[qi];
        uint16_t start = 0;
        flowgen::TimeMarks::Mark m{};
        while (marks->front(m) && m.before <= read + n) {
            const uint16_t k = m.before > read ? uint16_t(m.before - read) : 0;
            if (k > start) {
                handle(mbufs + start, uint16_t(k - start), tsc, &q);
                start = k;
            }
            take_due_related(tsc);
            advance_replay(m.time_us * 1000);
            marks->pop();
        }
        if (start < n)
            handle(mbufs + start, uint16_t(n - start), tsc, &q);
        _rx_read[qi] = read + n;
    }
    // After the handoff's enqueues (release): a worker that sees this time finds those packets in its rings.
    _place.replay->publish(_place.index, _packet_clock.now_ns());
}

void Worker::take_due_related(uint64_t tsc) noexcept
{
    // The ICMP errors and fragments handed here that this worker's time has reached: before its time moves
    // on (and its cop runs) past them.
    for (unsigned from = 0; from < _held.size(); ++from)
        if (from != _place.index)
            take_related(from, tsc);
}

void Worker::follow_replay(uint64_t newest, bool idle, uint64_t tsc) noexcept
{
    // The marks after the last frame read from a queue: every frame dealt before them was read.
    for (unsigned qi = 0; qi < _place.rx_marks.size(); ++qi) {
        flowgen::TimeMarks* marks = _place.rx_marks[qi];
        if (marks == nullptr)
            continue;
        flowgen::TimeMarks::Mark m{};
        while (marks->front(m) && m.before <= _rx_read[qi]) {
            take_due_related(tsc);
            advance_replay(m.time_us * 1000);
            marks->pop();
        }
    }
    // Not with time marks: they are this worker's place in the stream, exactly. Another worker's newest
    // time can be ahead of frames still on their way to this worker's queue (the dealer pushes a burst's
    // marks before it enqueues the burst, and a reader applies at once those after its last frame).
    if (newest != 0 && idle && !_follows_marks)
        advance_replay(newest);
}

void Worker::handle(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef* rx) noexcept
{
    if (rx == nullptr || !lite_lane()) [[unlikely]] {
        handle_full(mbufs, n, tsc, rx);
        return;
    }
    // The lane pays only for a burst the fused path takes whole: any other frame (a SYN, a FIN, a UDP
    // datagram, a young connection's segment) splits the burst into runs, each a pipeline of its own, so
    // fewer of the burst's misses are in flight together, and a frame the reader took but the fused path
    // did not is read twice (the reader, then parse()). Both ways count what the fused path took, so the
    // last burst decides the next one's way. Against the rule "at least 3/4 of the last burst" this one
    // ran a 10% UDP mix 1.32x as fast and a 30% one 1.16x, steady traffic and the churn alike.
    const uint64_t steady_before = _table.steady_taken();
    if (_lane_pays) [[likely]] {
        bump(_stats.steady_lane, uint64_t{n});
        if (_table.lane_isa() == packet::LaneIsa::v3)
            handle_lite_v3(mbufs, n, tsc, *rx);
        else
            handle_lite(mbufs, n, tsc, *rx);
    } else {
        handle_full(mbufs, n, tsc, rx);
    }
    _lane_pays = _table.steady_taken() - steady_before == n;
}

void Worker::read_lite(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef& rx) noexcept
{
    packet::TcpLite segs[kBurst];
    conntrack::FlowTable::LiteProbes probes;
    // Unrolled: the loop's own add, compare and branch were 3 of the 7 instructions a frame.
#pragma GCC unroll 4
    for (uint16_t i = 0; i < n; ++i)
        rte_prefetch0(rte_pktmbuf_mtod(mbufs[i], const void*));
    // Each frame hashed as it is read (no loop of the table's own), up to the first the reader declines:
    // in a burst the lane takes whole, that is every frame, with nothing else kept per frame.
    const conntrack::FlowTable::LiteProber probe = _table.probe_lite();
    size_t read = 0; // the index's own width: a uint16_t kept a 16-bit copy beside it, one instruction a frame
    for (; read < n && packet::parse_mbuf_lite(mbufs[read], segs[read]); ++read)
        probe(segs[read], probes, read);
    if (read == n) [[likely]] {
        track_lite(mbufs, segs, probes, 0, n, tsc, rx);
        release(mbufs, nullptr, n, &rx);
        return;
    }
    // Frame `read` was declined: the rest read alike, each marked, for the runs below.
    bool lite[kBurst];
    for (unsigned i = 0; i <= read; ++i)
        lite[i] = i < read;
    for (unsigned i = read + 1; i < n; ++i) {
        lite[i] = packet::parse_mbuf_lite(mbufs[i], segs[i]);
        if (lite[i])
            probe(segs[i], probes, i);
    }
    // Runs in the burst's order: a FIN parsed in full and the ACK after it stay in that order.
    for (uint16_t start = 0, end = 0; start < n; start = end) {
        for (end = start + 1; end < n && lite[end] == lite[start];)
            ++end;
        const auto k = uint16_t(end - start);
        if (lite[start]) {
            track_lite(mbufs + start, segs, probes, start, k, tsc, rx);
            release(mbufs + start, nullptr, k, &rx);
        } else {
            handle_full(mbufs + start, k, tsc, &rx);
        }
    }
}

void Worker::handle_lite(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef& rx) noexcept
{
    read_lite(mbufs, n, tsc, rx);
}

void Worker::handle_lite_v3(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef& rx) noexcept
{
    read_lite(mbufs, n, tsc, rx);
}

namespace {
// lite_full()'s state: the run's frames, their port, the one Packet a frame the lane hands back is parsed into.
struct LiteFull {
    rte_mbuf* const* mbufs;
    uint16_t port;
    packet::Packet pkt;
};
} // namespace

const packet::Packet& Worker::lite_full(void* ctx, unsigned i) noexcept
{
    auto& f = *static_cast<LiteFull*>(ctx);
    packet::parse_mbuf(f.mbufs[i], f.pkt);
    f.pkt.in_port = f.port; // as handle_full() sets it
    return f.pkt;
}

void Worker::track_lite(rte_mbuf** mbufs, const packet::TcpLite* segs, const conntrack::FlowTable::LiteProbes& probes,
                        uint16_t first, uint16_t n, uint64_t tsc, const RxQueueRef& rx) noexcept
{
    LiteFull full{mbufs, rx.port, {}};
    _table.process_lite(segs + first, probes.home + first, probes.sig + first, n, _clock.ns_from_tsc(tsc),
                        &Worker::lite_full, &full);
}

void Worker::handle_full(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef* rx) noexcept
{
    packet::Packet pkts[kBurst];
    packet::Packet* ptrs[kBurst];
    for (uint16_t i = 0; i < n; ++i)
        rte_prefetch0(rte_pktmbuf_mtod(mbufs[i], const void*));
    if (_policy) [[unlikely]]
        _judge.begin(pkts, n);
    uint8_t fragmented = 0;
    for (uint16_t i = 0; i < n; ++i) {
        packet::parse_mbuf(mbufs[i], pkts[i]);
        // The flow table keeps its first packet's port (IPFIX ingressInterface). A handed-off mbuf
        // carries its port (hand_off() sets it: some PMDs, such as net_ring, leave it unset).
        pkts[i].in_port = rx != nullptr ? rx->port : mbufs[i]->port;
        fragmented |= pkts[i].extra.frag_flags;
        ptrs[i] = &pkts[i];
    }
    if (_settings.vlan_key != packet::VlanKey::both) [[unlikely]]
        for (uint16_t i = 0; i < n; ++i)
            packet::apply_vlan_key(pkts[i], _settings.vlan_key);
    // Before the handoff: the zone is part of the key the owner is computed from.
    if (!_port_zone.empty()) [[unlikely]]
        apply_zones(mbufs, pkts, n, rx);
    // --clock packet: every packet's time in the order read, before the handoff takes some away.
    uint64_t times[kBurst];
    uint8_t orig[kBurst];
    const Timeline timeline{times, orig, n};
    const Timeline* tl = nullptr;
    if (_settings.clock == ClockSource::packet) {
        stamp(mbufs, n, times, orig, rx != nullptr);
        tl = &timeline;
    }
    if (_place.handoff != nullptr && !_place.rss) {
        if (fragmented) [[unlikely]] {
            // All of a datagram's fragments reach the worker that polls its port: it attributes them and
            // hands each to its flow's owner with what it found (worker_related.cpp).
            handle_related(mbufs, ptrs, n, tsc, rx, tl, orig, true);
            return;
        }
        if (rx != nullptr) {
            n = hand_off(mbufs, ptrs, n, rx->port, tl != nullptr ? times : nullptr, orig);
            if (n == 0 && tl == nullptr)
                return;
        }
    } else if (_place.rss) {
        // Only ICMP errors and fragments may belong to another worker's flow (worker.h), and only they
        // come through the rings under rss: out of line, so the common burst pays a scan of its verdicts
        // (here, not in the parse loop: the other plans pay nothing for it) and one branch.
        bool related = rx == nullptr || fragmented != 0;
        for (uint16_t i = 0; i < n; ++i)
            related |= pkts[i].verdict == packet::Verdict::icmp_error;
        if (related) [[unlikely]] {
            handle_related(mbufs, ptrs, n, tsc, rx, tl, orig, fragmented != 0);
            return;
        }
    }
    if (fragmented) [[unlikely]]
        track_fragmented(ptrs, n, tsc, tl);
    else
        track(ptrs, n, tsc, tl);
    release(mbufs, ptrs, n, rx);
}

uint16_t Worker::police(rte_mbuf** mbufs, packet::Packet* const* ptrs, uint16_t n) noexcept
{
    // The common burst: the table judged every packet and dropped none (or drops are not enforced).
    const bool enforce = _judge.enforce();
    if (_judge.taken() == n && (_judge.dropped() == 0 || !enforce)) [[likely]]
        return n;
    uint16_t kept = 0;
    for (uint16_t i = 0; i < n; ++i) {
        uint8_t out = _judge.out(*ptrs[i]);
        // Unjudged: accepted by the table's steady path, or not the table's (non-IP, malformed, untracked).
        if (out == conntrack::Judge::kNotJudged && !_table.takes(*ptrs[i]))
            out = _judge.judge(*ptrs[i], conntrack::state_outside(*ptrs[i])) ? conntrack::Judge::kDropBit : 0;
        if (enforce && (out & conntrack::Judge::kDropBit)) {
            rte_pktmbuf_free(mbufs[i]);
            continue;
        }
        mbufs[kept++] = mbufs[i];
    }
    if (kept != n)
        bump(_stats.policy_dropped, uint64_t(n - kept));
    return kept;
}

void Worker::release(rte_mbuf** mbufs, packet::Packet* const* ptrs, uint16_t n, const RxQueueRef* rx) noexcept
{
    if (_policy && n != 0) [[unlikely]]
        n = police(mbufs, ptrs, n);
    if (n == 0)
        return;
    if (_settings.mode != Mode::inline_fwd) {
        rte_pktmbuf_free_bulk(mbufs, n);
    } else if (rx != nullptr) {
        forward(mbufs, n, rx->tx_port);
    } else {
        // Handed-off packets may come from several ports: forward each run of one port's packets.
        uint16_t start = 0;
        for (uint16_t i = 1; i <= n; ++i)
            if (i == n || mbufs[i]->port != mbufs[start]->port) {
                forward(mbufs + start, i - start, _place.peer[mbufs[start]->port]);
                start = i;
            }
    }
}

void Worker::apply_zones(rte_mbuf* const* mbufs, packet::Packet* pkts, uint16_t n, const RxQueueRef* rx) const noexcept
{
    for (uint16_t i = 0; i < n; ++i) {
        const uint16_t port = rx != nullptr ? rx->port : mbufs[i]->port;
        pkts[i].key.zone = port < _port_zone.size() ? _port_zone[port] : 0;
    }
}

void Worker::attribute_fragments(packet::Packet* const* ptrs, uint16_t n, const Timeline* tl,
                                 fragattr::Held* held) noexcept
{
    // After the key policy and the zone, keying a fragment's datagram as its flow is keyed. Under
    // --clock packet each fragment at its own time, so a replay's datagrams live by the capture's clock.
    const uint64_t now = now_ns();
    for (uint16_t i = 0; i < n; ++i)
        held[i] = _fragments->attribute(*ptrs[i], tl != nullptr ? tl->times[tl->orig[i]] : now);
}

void Worker::track_fragmented(packet::Packet* const* ptrs, uint16_t n, uint64_t tsc, const Timeline* tl,
                              const fragattr::Held* attributed) noexcept
{
    // After the handoff: on one lcore this worker attributes; under the handoff and rss plans the worker
    // all of a datagram's fragments reached did, before handing them to the owner (`attributed`).
    fragattr::Held mine[kBurst];
    const fragattr::Held* held = attributed;
    if (held == nullptr) {
        attribute_fragments(ptrs, n, tl, mine);
        held = mine;
    }
    bool any_held = false;
    for (uint16_t i = 0; i < n; ++i)
        any_held |= held[i].packets != 0;
    track(ptrs, n, tsc, tl);
    // Later fragments that came before their first: on its flow, now that the first was tracked.
    if (any_held) [[unlikely]]
        for (uint16_t i = 0; i < n; ++i)
            if (held[i].packets != 0)
                _table.count_held_fragments(*ptrs[i], held[i].packets, held[i].bytes);
}

void Worker::stamp(rte_mbuf* const* mbufs, uint16_t n, uint64_t* times, uint8_t* orig, bool from_port) noexcept
{
    for (uint16_t i = 0; i < n; ++i) {
        if (!_packet_clock.observe(mbufs[i]) && from_port)
            bump(_stats.no_timestamp);
        times[i] = _packet_clock.now_ns();
        orig[i] = uint8_t(i);
    }
}

void Worker::track(const packet::Packet* const* ptrs, uint16_t n, uint64_t tsc, const Timeline* tl) noexcept
{
    if (tl == nullptr) {
        _table.process_burst(ptrs, n, _clock.ns_from_tsc(tsc));
        return;
    }
    // Replay: each packet at its own time, and the cop runs wherever the
    // timeline crosses a check instant, as it would have on the wire —
    // not once per read with the read's latest timestamp. The timeline is the
    // whole burst's, handed-off packets included: whichever lcore tracks the
    // packet that crosses an instant, every lcore's cop runs there.
    uint64_t times[kBurst];
    for (uint16_t k = 0; k < n; ++k)
        times[k] = tl->times[tl->orig[k]];
    unsigned start = 0;
    unsigned k = 0; // this worker's packets before timeline position i
    for (uint16_t i = 0; i < tl->all; ++i) {
        const uint64_t t = tl->times[i];
        if (cop_due(t)) {
            while (k < n && tl->orig[k] < i)
                ++k;
            _table.process_burst(ptrs + start, k - start, times + start);
            run_cop(t);
            start = k;
        }
    }
    _table.process_burst(ptrs + start, n - start, times + start);
    if (_next_cop_ns == 0 && tl->all != 0) // the first packets: start the cop's schedule from them
        _next_cop_ns = tl->times[0] + _settings.check_interval_ns;
}

void Worker::advance_replay(uint64_t ns) noexcept
{
    if (ns <= _packet_clock.now_ns())
        return;
    _packet_clock.advance_to(ns);
    if (_next_cop_ns == 0) // the first time this worker learns: the cop's schedule starts there
        _next_cop_ns = ns + _settings.check_interval_ns;
    else if (cop_due(ns))
        run_cop(ns);
}

void Worker::forward(rte_mbuf** mbufs, uint16_t n, uint16_t tx_port) noexcept
{
    const uint16_t sent = rte_eth_tx_burst(tx_port, _plan.tx_queue, mbufs, n);
    bump(_stats.tx_packets, uint64_t(sent));
    if (sent < n) {
        bump(_stats.tx_dropped, uint64_t(n - sent));
        rte_pktmbuf_free_bulk(mbufs + sent, n - sent);
    }
}

void Worker::run_cop(uint64_t now) noexcept
{
    // Fragments held for a first that never came become unattributed once their second is up. Only
    // pending entries need the sweep (an expired resolved one is reclaimed when its slot is wanted), so
    // it runs only while some are pending: a lap of the whole attributor, 4096 entries at the default.
    if (stats::load_relaxed(_fragments->counters().pending) != 0) [[unlikely]]
        _fragments->expire(now, _fragments->capacity());
    const uint64_t visit_budget = timerwheel::visit_budget(_settings.fire_budget, _settings.visit_budget_factor);
    const uint64_t t0 = rte_rdtsc();
    const conntrack::CopResult r = _table.run_cop(now, _settings.fire_budget, visit_budget);
    const uint64_t cycles = rte_rdtsc() - t0;
    _table.observe_pass_ns(uint64_t((static_cast<uint128>(cycles) * 1'000'000'000ull) / _clock.hz()));
    _next_cop_ns = now + (r.wheel.budget_exhausted ? kCopRetryNs : _settings.check_interval_ns);
}

void Worker::reap_killed() noexcept
{
    // Under the TSC clock the next tick comes within a check interval; a replay's time may never move again.
    if (_settings.clock != ClockSource::packet)
        return;
    if (_holding_cop) { // inside a burst (waiting on a full ring): after it
        _reap_pending = true;
        return;
    }
    const uint64_t visit_budget = timerwheel::visit_budget(_settings.fire_budget, _settings.visit_budget_factor);
    const conntrack::CopResult r = _table.reap_killed(now_ns(), _settings.fire_budget, visit_budget);
    _reap_pending = r.wheel.budget_exhausted;
}

void Worker::drain_mailbox() noexcept
{
    void* obj = nullptr;
    while (rte_ring_sc_dequeue(_mailbox, &obj) == 0)
        execute(*static_cast<Command*>(obj));
}

void Worker::execute(Command& cmd) noexcept
{
    switch (cmd.type) {
    case Command::Type::kill:
        // The tuple names VLAN IDs as the operator saw them; the table keys them as --vlan-key says.
        packet::apply_vlan_key(cmd.key, _settings.vlan_key);
        cmd.result = _table.kill(cmd.key) ? 1 : 0;
        // The tuple has no zone: try the zones of the ports too (--port-zone). Under the handoff plan
        // this worker may own flows of any port, so every configured zone is tried.
        for (const auto& [port, zone] : _settings.port_zones) {
            if (cmd.result == 0 && zone != 0) {
                cmd.key.zone = zone;
                cmd.result = _table.kill(cmd.key) ? 1 : 0;
            }
        }
        if (cmd.result != 0)
            reap_killed();
        break;
    case Command::Type::get:
        packet::apply_vlan_key(cmd.key, _settings.vlan_key);
        cmd.result = _table.get(cmd.key, cmd.flow) ? 1 : 0;
        break;
    case Command::Type::set_timeout: {
        packet::apply_vlan_key(cmd.key, _settings.vlan_key);
        // The owner's clock (the packet clock under --clock packet): the one its deadlines follow.
        using Update = conntrack::FlowTable::TimeoutUpdate;
        const Update u = _table.set_flow_timeout(cmd.key, cmd.flow_timeout_s, now_ns(), cmd.flow);
        cmd.result = u == Update::set ? 1 : u == Update::absent ? 0 : 2;
        break;
    }
    case Command::Type::kill_ids:
        cmd.result = 0;
        for (unsigned i = 0; i < cmd.n_ids && i < Command::kMaxIds; ++i)
            cmd.result += (cmd.killed[i] = _table.kill_id(cmd.ids[i]) ? 1 : 0);
        if (cmd.result != 0) {
            reap_killed();
            // Under the TSC clock, reap them on the next turn rather than at the next check interval: a
            // follower of destroys paces flowcopctl -D/-F by them (ctl_server.h, kill pacing).
            if (_settings.clock != ClockSource::packet && now_ns() != 0)
                _next_cop_ns = std::min(_next_cop_ns, now_ns());
        }
        break;
    case Command::Type::set_timeouts:
        _table.set_timeouts(cmd.timeouts, cmd.active_timeout_s);
        _table.set_proto_timeouts(cmd.proto_timeouts);
        cmd.result = 0;
        break;
    case Command::Type::set_window:
        _table.set_window_policy(cmd.window);
        cmd.result = 0;
        break;
    case Command::Type::set_policy:
        if (!_policy || cmd.policy == nullptr || cmd.policy_counters == nullptr) {
            cmd.result = 1; // started without a policy: the table has no judge to give one to
            break;
        }
        // Between bursts: no packet is judged by half a policy. The old pair goes back to the poster.
        cmd.policy_counters->carry_over(*_policy, *_policy_counters, *cmd.policy);
        _judge.set_policy(cmd.policy, cmd.policy_counters);
        {
            policy::Policy* old_policy = _policy.release();
            policy::Counters* old_counters = _policy_counters.release();
            _policy.reset(cmd.policy);
            _policy_counters.reset(cmd.policy_counters);
            cmd.policy = old_policy;
            cmd.policy_counters = old_counters;
        }
        cmd.result = 0;
        break;
    case Command::Type::set_budgets:
        if (cmd.fire_budget)
            _settings.fire_budget = cmd.fire_budget;
        if (cmd.visit_budget_factor)
            _settings.visit_budget_factor = cmd.visit_budget_factor;
        cmd.result = 0;
        break;
    }
    cmd.done.store(true, std::memory_order_release);
}

} // namespace flowcop::app
