// SPDX-License-Identifier: BSD-3-Clause
// FlowTable's packet path, pipelined across bursts (see flow_table.h): prepare (count, hash, prefetch
// the home buckets), probe (scan them, prefetch the candidate records), finish (verify the candidate
// and track, or look up again and create); and the steady lane's same three steps over packet::TcpLite
// segments (process_lite).
#include <conntrack/flow_table.h>
#include <conntrack/lite_key.h>

#include <tcpstate/segment.h>

#include <rte_prefetch.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace flowcop::conntrack {

namespace {
// process_lite()'s candidate for a segment whose home bucket holds no matching signature: all zero (not
// in use), so the steady loop's flags test sends it the ordinary way. Never written.
alignas(FlowRecord) FlowRecord no_flow{};
} // namespace

void FlowTable::submit(const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept
{
    prepare(_stages[_prepared % kPipelineDepth], pkts, n, nullptr, now_ns);
    advance();
}

void FlowTable::submit(const packet::Packet* const* pkts, unsigned n, const uint64_t* times) noexcept
{
    prepare(_stages[_prepared % kPipelineDepth], pkts, n, times, 0);
    advance();
}

void FlowTable::advance() noexcept
{
    ++_prepared;
    // The burst before this one: its buckets were asked for one call ago.
    if (_prepared - _probed > 1) {
        probe(_stages[_probed % kPipelineDepth]);
        ++_probed;
    }
    // The one before that: its records were asked for one call ago.
    if (_probed - _finished > 1) {
        finish(_stages[_finished % kPipelineDepth]);
        ++_finished;
    }
}

void FlowTable::drain() noexcept
{
    while (_probed < _prepared) {
        probe(_stages[_probed % kPipelineDepth]);
        ++_probed;
    }
    while (_finished < _probed) {
        finish(_stages[_finished % kPipelineDepth]);
        ++_finished;
    }
}

void FlowTable::process_burst(const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept
{
    submit(pkts, n, now_ns);
    drain();
}

void FlowTable::process_burst(const packet::Packet* const* pkts, unsigned n, const uint64_t* times) noexcept
{
    submit(pkts, n, times);
    drain();
}

void FlowTable::prepare(Stage& s, const packet::Packet* const* pkts, unsigned n, const uint64_t* times,
                        uint64_t now_ns) noexcept
{
    // One pass: count the verdict, keep the packet if the table takes it, hash it and ask for its home
    // bucket. The TCP verdict's count is kept in a register and added once per burst: a per-packet bump
    // of one counter chains a load and a store through the whole burst. A packet the table does not
    // take is hashed too (its key is defined: parse() writes every byte) and overwritten by the next:
    // cheaper than a second loop over the kept ones.
    unsigned nt = 0, n_tcp = 0;
    for (unsigned i = 0; i < n; ++i) {
        const packet::Packet* const pkt = pkts[i];
        const packet::Verdict v = pkt->verdict;
        if (v == packet::Verdict::tcp) [[likely]]
            ++n_tcp;
        else
            bump(_counters.packets_by_verdict[static_cast<unsigned>(v)]);
        const Probe p = probe_of(pkt->key);
        rte_prefetch0(_index.home(p));
        s.pkt[nt] = pkt;
        s.probe[nt] = p;
        nt += admit_class(*pkt);
    }
    bump(_counters.packets_by_verdict[static_cast<unsigned>(packet::Verdict::tcp)], uint64_t{n_tcp});
    s.n = nt;
    s.per_packet = times != nullptr;
    if (times != nullptr) [[unlikely]] {
        // The packet clock: each tracked packet's own time, and the burst's latest.
        uint64_t latest = 0;
        unsigned k = 0;
        for (unsigned i = 0; i < n; ++i) {
            s.when[k] = times[i];
            latest = std::max(latest, times[i]);
            k += admit_class(*pkts[i]);
        }
        now_ns = latest;
    }
    s.latest = now_ns;
    if (nt != 0 && !_clock_started) [[unlikely]]
        start_clock(s.at(0));
}

void FlowTable::probe(Stage& s) noexcept
{
    for (unsigned j = 0; j < s.n; ++j) {
        const uint32_t c = _index.first_candidate(s.probe[j]);
        s.candidate[j] = c;
        if (c != kNoPosition) {
            // Both lines: the key and state are in the first, the counters (and window) in the second.
            const auto* rec = reinterpret_cast<const uint8_t*>(&_records[c]);
            rte_prefetch0(rec);
            rte_prefetch0(rec + 64);
        }
    }
}

void FlowTable::finish(const Stage& s) noexcept
{
    // Once per burst: a time per packet only under the packet clock; without a policy the loop judges nothing.
    if (_judge == nullptr) [[likely]] {
        if (s.per_packet) [[unlikely]]
            finish_burst<true, false>(s);
        else
            finish_burst<false, false>(s);
    } else if (s.per_packet) {
        finish_burst<true, true>(s);
    } else {
        finish_burst<false, true>(s);
    }
}

template <bool kPerPacket, bool kJudge>
void FlowTable::finish_burst(const Stage& s) noexcept
{
    // What the loop reads of the table and the stage, in locals: a store to a record could alias any of
    // them as far as the compiler knows, so it would reload each after every packet.
    FlowRecord* const records = _records;
    const unsigned n = s.n;
    const uint64_t latest = s.latest;
    const tcpstate::SteadyRules rules = _steady_rules;
    // Computed here, not in prepare(): the timeouts may have changed since (set_timeouts between calls).
    const SteadyHorizon horizon = steady_horizon(latest);
    uint64_t steady = 0;
    // The policy's steady path: a packet whose state one rule accepts is only tallied here (ct_judge.h).
    uint32_t accepted[kCtStateCount] = {};
    uint64_t accepted_bytes[kCtStateCount] = {};
    uint8_t fast_accept = 0;
    constexpr auto kEstablished = static_cast<uint8_t>(CtState::established);
    bool steady_accept = false; // a rule accepts established packets: a steady one is only tallied
    uint64_t steady_bytes = 0;
    if constexpr (kJudge) {
        fast_accept = _judge->fast_accept();
        steady_accept = (fast_accept & (1u << kEstablished)) != 0;
        _judge->took(n);
    }
    for (unsigned j = 0; j < n; ++j) {
        const packet::Packet& pkt = *s.pkt[j];
        uint32_t pos = s.candidate[j];
        // The candidate was found before the bursts in between were tracked: it holds this flow only
        // if it is still in use with this key. Otherwise (stale, a signature that matched another key,
        // a key past its home bucket, or a miss that an earlier packet may have turned into a flow)
        // look again: the bucket is in cache.
        if (pos == kNoPosition || !(records[pos].flags & FlowRecord::kInUse) || !same_key(records[pos].key, pkt.key))
            [[unlikely]]
            pos = lookup(pkt.key, s.probe[j]);
        const uint64_t when = kPerPacket ? s.when[j] : latest;
        if (pkt.verdict != packet::Verdict::tcp) [[unlikely]] {
            if constexpr (kJudge)
                _judged_now = false;
            finish_other(pos, pkt, s.probe[j], when);
        } else if (pos != kNoPosition) [[likely]] {
            if (const int taken = track_steady(records[pos], pkt, when, horizon, rules); taken >= 0) [[likely]] {
                if (taken > kTaken) [[unlikely]]
                    recap(records[pos], taken);
                ++steady;
                if constexpr (kJudge) {
                    // kSteady holds a seen reply (tcpstate::steady): established, and no slow branch judged
                    // it. With a rule accepting established packets that is a register test and an add.
                    if (steady_accept) [[likely]]
                        steady_bytes += pkt.ip_len;
                    else
                        _judge->judge(pkt, CtState::established);
                    continue;
                }
            } else {
                if constexpr (kJudge)
                    _judged_now = false;
                track(pos, pkt, when);
            }
        } else {
            if constexpr (kJudge)
                _judged_now = false;
            create_flow(pkt, s.probe[j], when);
        }
        if constexpr (kJudge) {
            // No slow branch decided (creation, refusal, ICMP error, fragment): a packet of the flow at
            // pos, tracked. Established once the flow has seen a reply (this one, or an earlier one);
            // the original direction is new until then. The bit is the same for every protocol.
            if (!_judged_now) [[likely]] {
                const CtState st = records[pos].l4.tcp.seen_reply() ? CtState::established : CtState::new_;
                const auto i = static_cast<uint8_t>(st);
                if (fast_accept & (1u << i)) [[likely]] {
                    ++accepted[i];
                    accepted_bytes[i] += pkt.ip_len;
                } else {
                    _judge->judge(pkt, st);
                }
            }
        }
    }
    bump(_counters.tcp_tracked, steady);
    _steady_taken += steady;
    if constexpr (kJudge) {
        if (steady_accept) {
            accepted[kEstablished] += uint32_t(steady);
            accepted_bytes[kEstablished] += steady_bytes;
        }
        _judge->count_accepted(accepted, accepted_bytes);
    }
}

// The fingerprint's two words of a segment: a lane segment holds them as they are (seq beside ack, the
// window beside the payload length: two loads), a Packet's are built.
template <typename Seg>
[[gnu::always_inline]] inline tcpstate::detail::FingerprintIn fingerprint_in(const Seg& pkt) noexcept
{
    if constexpr (std::is_same_v<Seg, packet::TcpLite> && std::endian::native == std::endian::little) {
        static_assert(offsetof(packet::TcpLite, ack) == offsetof(packet::TcpLite, seq) + 4 &&
                      offsetof(packet::TcpLite, l4_payload_len) == offsetof(packet::TcpLite, window) + 2);
        uint64_t seq_ack;
        uint32_t window_len;
        std::memcpy(&seq_ack, &pkt.seq, sizeof seq_ack);
        std::memcpy(&window_len, &pkt.window, sizeof window_len);
        return {seq_ack, window_len};
    } else {
        return tcpstate::detail::fingerprint_in(tcpstate::Seq(pkt.seq), tcpstate::Seq(pkt.ack), pkt.l4_payload_len,
                                                pkt.window);
    }
}

// What track() does for an accepted steady segment, without what cannot happen to one: no expiry (the
// flow was seen after the horizon and carries no mark), no state change, no event. One test of the
// record's flags (kSteady without a mark: track() found the flow ESTABLISHED with every tracker bit a
// steady packet sets), one of the segment's class (a Packet's: the lane's reader tested a TcpLite's),
// one of last_seen; then the window's fused steady ACK (tcpstate::detail::steady_ack), which declines a
// segment outside a bound before writing anything. A changed cap is the caller's to store and re-arm
// (kTakenRecap: recap()), so the steady loops make no call.
template <typename Seg>
[[gnu::always_inline]] inline int FlowTable::steady_side(const FlowRecord& r, uint16_t flags, const Seg& pkt,
                                                         const SteadyHorizon& horizon) noexcept
{
    // A lane segment's kind the reader tested (packet::kLiteKind): a Packet's is tested here. The lane's
    // key test (lite_key_of) needs kLiteKey; process_lite() makes this same test first.
    constexpr bool kLane = std::is_same_v<Seg, packet::TcpLite>;
    if ((flags & steady_mask<kLane>()) != steady_want<kLane>() ||
        (!kLane && (pkt.tcp_flags & packet::kLiteKind) != packet::kLiteKindAck)) [[unlikely]]
        return -1;
    // Seen after every cap's horizon (a busy flow), else after its own cap's.
    if (const uint64_t seen = r.last_seen_ns; seen <= horizon.latest) [[unlikely]]
        if (seen <= horizon.at[(flags & FlowRecord::kCapMask) >> FlowRecord::kCapShift])
            return -1;
    // From the originator or the reply side: a lane segment carries the originator's bit in its place.
    if constexpr (kLane) {
        static_assert(packet::kLiteSrcIsLo == FlowRecord::kOrigIsLo);
        return ((flags ^ pkt.src_lo_bit) & FlowRecord::kOrigIsLo) == 0 ? 0 : 1;
    } else {
        return ((flags & FlowRecord::kOrigIsLo) != 0) == pkt.src_is_lo ? 0 : 1;
    }
}

template <typename Seg>
[[gnu::always_inline]] inline int FlowTable::track_steady(FlowRecord& r, const Seg& pkt, uint64_t now_ns,
                                                          const SteadyHorizon& horizon,
                                                          const tcpstate::SteadyRules& rules) noexcept
{
    // The flags and timeout slot read once: the side and the expiry test both use them.
    const uint16_t flags = marks_of(r);
    const int side = steady_side(r, flags, pkt, horizon);
    if (side < 0) [[unlikely]]
        return kNotTaken;
    // Each side a copy with every offset fixed.
    return side == 0 ? track_steady_side<0>(r, pkt, now_ns, rules) : track_steady_side<1>(r, pkt, now_ns, rules);
}

template <unsigned kSide, typename Seg>
[[gnu::always_inline]] inline int FlowTable::track_steady_side(FlowRecord& r, const Seg& pkt, uint64_t now_ns,
                                                               const tcpstate::SteadyRules& rules) noexcept
{
    const uint32_t ip_len = pkt.ip_len;
    const uint8_t tcp_flags = pkt.tcp_flags;
    tcpstate::WindowState& w = r.window.tcp;
    // A lane segment carries no SACK block (TcpLite::sack == ack): passing ack lets the fused path fold
    // the SACK selection and the window's sack - ack away.
    const uint32_t sack = std::is_same_v<Seg, packet::TcpLite> ? pkt.ack : pkt.sack;
    const int change = tcpstate::detail::steady_ack<kSide>(
        w.seq, w.meta, tcpstate::Seq(pkt.seq), tcpstate::Seq(pkt.ack), tcpstate::Seq(sack), pkt.l4_payload_len,
        [&] {
            return tcpstate::detail::SteadyLate{pkt.window, fingerprint_in(pkt)};
        },
        rules,
        [&] {
            stats::bump_in_place(r.packets[kSide], 1);
            stats::bump_in_place(r.bytes[kSide], ip_len);
            stats::or_in_place(r.tcp_flags_seen[kSide], tcp_flags);
            store_relaxed(r.last_seen_ns, now_ns);
        });
    if (change < 0) [[unlikely]]
        return kNotTaken;
    // A new cap (meta.cap is the record's, flow_record.h) or kSteadyLost: recap().
    return change != 0 ? kTakenRecap | change : kTaken;
}

void FlowTable::process_lite(const packet::TcpLite* segs, unsigned n, uint64_t now_ns, FullPacket full,
                             void* ctx) noexcept
{
    LiteProbes probes;
    const LiteProber probe = probe_lite();
    for (unsigned j = 0; j < n; ++j)
        probe(segs[j], probes, j);
    process_lite(segs, probes.home, probes.sig, n, now_ns, full, ctx);
}

void FlowTable::run_lite(const packet::TcpLite* segs, const Bucket* const* homes, const uint16_t* sigs, unsigned n,
                         uint64_t now_ns, FullPacket full, void* ctx) noexcept
{
    drain(); // a test's submit() may have left bursts in flight: they come first
    bump(_counters.packets_by_verdict[static_cast<unsigned>(packet::Verdict::tcp)], uint64_t{n});
    if (n == 0)
        return;
    if (!_clock_started) [[unlikely]]
        start_clock(now_ns);
    // prepare() was probe_lite(); probe() of the pipeline:
    // Each segment's candidate as the record itself, or no_flow: the steady loop tests one flags byte
    // for "no candidate", "not in use" and "not steady" alike, and needs no table base or position.
    FlowRecord* const records = _records;
    // cands[n], no_flow too, ends the steady loop: it needs no count of its own.
    FlowRecord* cands[kMaxBurst + 1];
    // Unrolled: the loop's own add, compare and branch were 3 of its 20 instructions a segment.
#pragma GCC unroll 4
    for (unsigned j = 0; j < n; ++j) {
        FlowRecord* const r = FlowIndex::first_candidate(*homes[j], sigs[j], records, &no_flow);
        cands[j] = r;
        rte_prefetch0(r);
        rte_prefetch0(reinterpret_cast<const uint8_t*>(r) + 64);
    }
    cands[n] = &no_flow;
    // finish(): as finish_burst<false, false>. The runs of steady segments of steady flows (nearly every
    // segment of a busy host) go through a loop with no call in it, so the fused path's ~20 values keep
    // the registers a call would clobber; a changed cap (recap) and every other segment (the ordinary
    // path, with the frame parsed in full) are taken one at a time between the runs.
    const tcpstate::SteadyRules rules = _steady_rules;
    const SteadyHorizon horizon = steady_horizon(now_ns);
    uint64_t steady = 0;
    unsigned j = 0;
    while (j < n) {
        const unsigned run = j;
        int taken = kNotTaken;
        // By pointers, not j: indexed, gcc kept the segments' base spilled and rebuilt each address.
        FlowRecord* const* cand = cands + j;
        const packet::TcpLite* seg = segs + j;
        for (;; ++cand, ++seg) {
            FlowRecord& r = **cand;
            // In use, steady and lite-keyed without a mark (no_flow is none of them) first: the key test
            // needs kLiteKey.
            if ((marks_of(r) & steady_mask<true>()) != steady_want<true>() || !lite_key_of(r, *seg)) [[unlikely]]
                break;
            taken = track_steady(r, *seg, now_ns, horizon, rules);
            if (taken != kTaken) [[unlikely]]
                break;
        }
        j = unsigned(cand - cands);
        steady += j - run;
        if (j == n)
            break;
        if (taken > kTaken) {
            recap(*cands[j], taken);
            ++steady;
        } else {
            const uint32_t pos = cands[j] != &no_flow ? uint32_t(cands[j] - records) : kNoPosition;
            steady +=
                finish_lite_one(segs[j], _index.probe_of(homes[j], sigs[j]), pos, now_ns, horizon, rules, full, ctx, j)
                    ? 1
                    : 0;
        }
        ++j;
    }
    bump(_counters.tcp_tracked, steady);
    _steady_taken += steady;
}

void FlowTable::process_lite(const packet::TcpLite* segs, const Bucket* const* homes, const uint16_t* sigs, unsigned n,
                             uint64_t now_ns, FullPacket full, void* ctx) noexcept
{
    if (_lane_isa == packet::LaneIsa::v3) {
        process_lite_v3(segs, homes, sigs, n, now_ns, full, ctx);
        return;
    }
    run_lite(segs, homes, sigs, n, now_ns, full, ctx);
}

void FlowTable::process_lite_v3(const packet::TcpLite* segs, const Bucket* const* homes, const uint16_t* sigs,
                                unsigned n, uint64_t now_ns, FullPacket full, void* ctx) noexcept
{
    run_lite(segs, homes, sigs, n, now_ns, full, ctx);
}

// A lane segment the steady run did not take: the candidate was stale or missed (look up again), the
// flow is not steady, or the segment is not a steady ACK. The fused path still takes it when a fresh
// lookup finds a steady flow; else track() or create_flow() with the Packet parsed in full. True when the
// fused path took it (counted in tcp_tracked by the caller, as in finish_burst).
bool FlowTable::finish_lite_one(const packet::TcpLite& seg, const Probe& probe, uint32_t candidate, uint64_t now_ns,
                                const SteadyHorizon& horizon, const tcpstate::SteadyRules& rules, FullPacket full,
                                void* ctx, unsigned i) noexcept
{
    FlowRecord* const records = _records;
    const LiteWords words = lite_words(seg);
    uint32_t pos = candidate;
    if (pos == kNoPosition || !(records[pos].flags & FlowRecord::kInUse) || !same_key(records[pos].key, words))
        pos = _index.find(probe, [&](uint32_t p) { return same_key(records[p].key, words); });
    if (pos == kNoPosition) {
        create_flow(full(ctx, i), probe, now_ns);
        return false;
    }
    if (const int taken = track_steady(records[pos], seg, now_ns, horizon, rules); taken >= 0) {
        if (taken > kTaken)
            recap(records[pos], taken);
        return true;
    }
    track(pos, full(ctx, i), now_ns);
    return false;
}

template void FlowTable::finish_burst<false, false>(const Stage&) noexcept;
template void FlowTable::finish_burst<true, false>(const Stage&) noexcept;
template void FlowTable::finish_burst<false, true>(const Stage&) noexcept;
template void FlowTable::finish_burst<true, true>(const Stage&) noexcept;

} // namespace flowcop::conntrack
