// SPDX-License-Identifier: BSD-3-Clause
// FlowTable's packet path, pipelined across bursts (see flow_table.h): prepare (count, hash, prefetch
// the home buckets), probe (scan them, prefetch the candidate records), finish (verify the candidate
// and track, or look up again and create).
#include <conntrack/flow_table.h>

#include <rte_prefetch.h>

namespace flowcop::conntrack {

void FlowTable::submit(const packet::Packet* const* pkts, unsigned n, uint64_t now_ns) noexcept
{
    uint64_t times[kMaxBurst];
    for (unsigned i = 0; i < n; ++i)
        times[i] = now_ns;
    submit(pkts, n, times);
}

void FlowTable::submit(const packet::Packet* const* pkts, unsigned n, const uint64_t* times) noexcept
{
    prepare(_stages[_prepared % kPipelineDepth], pkts, n, times);
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

void FlowTable::prepare(Stage& s, const packet::Packet* const* pkts, unsigned n, const uint64_t* times) noexcept
{
    unsigned nt = 0;
    for (unsigned i = 0; i < n; ++i) {
        const packet::Verdict v = pkts[i]->verdict;
        bump(_counters.packets_by_verdict[static_cast<unsigned>(v)]);
        s.pkt[nt] = pkts[i];
        s.when[nt] = times[i];
        nt += admit_class(*pkts[i]);
    }
    s.n = nt;
    if (nt == 0)
        return;
    if (!_clock_started) [[unlikely]]
        start_clock(s.when[0]);
    for (unsigned j = 0; j < nt; ++j) {
        const Probe p = probe_of(s.pkt[j]->key);
        s.probe[j] = p;
        rte_prefetch0(_index.home(p));
    }
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
    // Once per burst: without a policy the loop is the plain one.
    if (_judge == nullptr) [[likely]]
        finish_burst<false>(s);
    else
        finish_burst<true>(s);
}

template <bool kJudge>
void FlowTable::finish_burst(const Stage& s) noexcept
{
    // The policy's steady path: a packet whose state one rule accepts is only tallied here (ct_judge.h).
    uint32_t accepted[kCtStateCount] = {};
    uint64_t accepted_bytes[kCtStateCount] = {};
    uint8_t fast_accept = 0;
    if constexpr (kJudge) {
        fast_accept = _judge->fast_accept();
        _judge->took(s.n);
    }
    for (unsigned j = 0; j < s.n; ++j) {
        const packet::Packet& pkt = *s.pkt[j];
        uint32_t pos = s.candidate[j];
        // The candidate was found before the bursts in between were tracked: it holds this flow only
        // if it is still in use with this key. Otherwise (stale, a signature that matched another key,
        // a key past its home bucket, or a miss that an earlier packet may have turned into a flow)
        // look again: the bucket is in cache.
        if (pos == kNoPosition || !(_records[pos].flags & FlowRecord::kInUse) || !same_key(_records[pos].key, pkt.key))
            [[unlikely]]
            pos = lookup(pkt.key, s.probe[j]);
        if constexpr (kJudge)
            _judged_now = false;
        if (pkt.verdict != packet::Verdict::tcp) [[unlikely]]
            finish_other(pos, pkt, s.probe[j], s.when[j]);
        else if (pos != kNoPosition) [[likely]]
            track(pos, pkt, s.when[j]);
        else
            create_flow(pkt, s.probe[j], s.when[j]);
        if constexpr (kJudge) {
            // No slow branch decided (creation, refusal, ICMP error, fragment): a packet of the flow at
            // pos, tracked. Established once the flow has seen a reply (this one, or an earlier one);
            // the original direction is new until then. The bit is the same for every protocol.
            if (!_judged_now) [[likely]] {
                const CtState st = _records[pos].l4.tcp.seen_reply() ? CtState::established : CtState::new_;
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
    if constexpr (kJudge)
        _judge->count_accepted(accepted, accepted_bytes);
}

template void FlowTable::finish_burst<false>(const Stage&) noexcept;
template void FlowTable::finish_burst<true>(const Stage&) noexcept;

} // namespace flowcop::conntrack
