// SPDX-License-Identifier: BSD-3-Clause
// FlowTable's packet step for every protocol but TCP (flow_table.h, "Protocols"): UDP, ICMP/ICMPv6
// queries and other IP protocols stepped by lib/protostate, ICMP errors counted on the flow they quote,
// and attributed later fragments counted on their flow. Same pipeline, wheel, early drop and locks as
// TCP; only the state step differs.
#include <conntrack/flow_table.h>

#include <events/event.h>

namespace flowcop::conntrack {

namespace {

protostate::Family family_of_verdict(packet::Verdict v) noexcept
{
    // By verdict, not by protocol number: ICMPv6's number over IPv4 is other_l4, a generic flow.
    switch (v) {
    case packet::Verdict::udp: return protostate::Family::udp;
    case packet::Verdict::icmp: return protostate::Family::icmp;
    default: return protostate::Family::generic;
    }
}

} // namespace

void FlowTable::finish_other(uint32_t pos, const packet::Packet& pkt, const Probe& probe, uint64_t now_ns) noexcept
{
    switch (pkt.verdict) {
    case packet::Verdict::icmp_error:
        // RELATED in netfilter's words: it belongs to the quoted flow but neither refreshes nor changes it.
        // An error quoting nothing tracked is INVALID (netfilter: no conntrack for it).
        if (pos != kNoPosition) {
            // Dropped: counted related here, not on the flow.
            if (!judge_drop(pkt, CtState::related))
                bump(_cold[pos].related);
            bump(_counters.icmp_related);
        } else {
            judge_drop(pkt, CtState::invalid);
            bump(_counters.icmp_related_unknown);
        }
        return;
    case packet::Verdict::fragment:
        // The first fragment stepped the flow (or created it); a later one only adds its frame.
        // It follows its flow: related to a live one (netfilter judges the reassembled datagram as its
        // flow's), invalid when its first fragment started no flow or the flow ended.
        if (pos == kNoPosition || end_if_timed_out(pos, now_ns)) {
            judge_drop(pkt, CtState::invalid);
            bump(_counters.fragments_no_flow);
            return;
        }
        if (judge_drop(pkt, CtState::related)) {
            bump(_counters.fragments_no_flow); // not counted on its flow
            return;
        }
        add_fragments(_records[pos], pkt.src_is_lo, 1, pkt.ip_len);
        store_relaxed(_records[pos].last_seen_ns, now_ns);
        bump(_counters.fragments_tracked);
        return;
    default:
        if (pos != kNoPosition)
            track_other(pos, pkt, now_ns);
        else
            create_other(pkt, probe, now_ns);
        return;
    }
}

void FlowTable::add_fragments(FlowRecord& r, bool src_is_lo, uint64_t packets, uint64_t bytes) noexcept
{
    const unsigned d = ((r.flags & FlowRecord::kOrigIsLo) != 0) == src_is_lo ? 0 : 1;
    bump(r.packets[d], packets);
    bump(r.bytes[d], bytes);
    // A TCP segment sent in fragments: its first fragment told window tracking only the bytes it
    // carried, and flowcop does not reassemble, so the peer's ACK of the whole segment would look
    // like data never sent. netfilter sees the segment reassembled; here the flow is checked
    // liberally from now on, as a flow picked up mid-stream is (out-of-window segments pass, the
    // RST rules stay).
    if (r.key.proto == kIpProtoTcp)
        r.window.tcp.meta.liberal = 1;
}

void FlowTable::count_held_fragments(const packet::Packet& first, uint32_t packets, uint64_t bytes) noexcept
{
    if (packets == 0 || admit_class(first) != 1)
        return;
    const uint32_t pos = lookup(first.key, probe_of(first.key));
    if (pos == kNoPosition || !(_records[pos].flags & FlowRecord::kInUse)) {
        bump(_counters.fragments_no_flow, uint64_t{packets});
        return;
    }
    add_fragments(_records[pos], first.src_is_lo, packets, bytes);
    bump(_counters.fragments_late, uint64_t{packets});
}

bool FlowTable::end_if_timed_out(uint32_t pos, uint64_t now_ns) noexcept
{
    FlowRecord& r = _records[pos];
    // One test of the flags for the steady packet, as track()'s (arrival_deadline_of()).
    const uint16_t marks = marks_of(r) & kArrivalMarks;
    if (marks == 0) [[likely]] {
        if (state_deadline_of(pos) > now_ns) [[likely]]
            return false;
    } else if (marks & (FlowRecord::kReset | FlowRecord::kKilled)) {
        return false; // they end on the next tick
    } else if (timeout_deadline_of(pos) > now_ns) {
        // A timeout update (flowcopctl -U) not yet due. Every caller's packet is accepted: it clears the
        // update, so the state's timeout counts from it again. The deadline set may have been later:
        // re-arm (to the deadline from the packet before this one, which is merely early).
        store_relaxed(r.timeout_slot, uint8_t(0));
        rearm(pos);
        return false;
    }
    const uint32_t shard = shard_of(pos);
    hold_shard(shard);
    _counters.timeout_lag_ns.observe(now_ns - timeout_deadline_of(pos));
    end_flow(pos, reason_of(pos, now_ns), now_ns);
    release_shard(shard);
    return true;
}

void FlowTable::track_other(uint32_t pos, const packet::Packet& pkt, uint64_t now_ns) noexcept
{
    // Past its timeout but not reaped yet: that flow is over and this packet starts a new one, as for
    // TCP (flow_table.h, "Deadlines"). The probe is recomputed: the pipeline's is for this key anyway.
    if (end_if_timed_out(pos, now_ns)) [[unlikely]] {
        create_other(pkt, probe_of(pkt.key), now_ns);
        return;
    }
    FlowRecord& r = _records[pos];
    const bool from_orig = ((r.flags & FlowRecord::kOrigIsLo) != 0) == pkt.src_is_lo;
    const unsigned d = from_orig ? 0 : 1;
    bump(r.packets[d]);
    bump(r.bytes[d], uint64_t(pkt.ip_len));
    store_relaxed(r.last_seen_ns, now_ns);
    bump(_counters.proto_tracked[static_cast<size_t>(record_proto(r))]);
    protostate::Tracker t = r.l4.other.tracker();
    // The flow's age matters only to a replied, not yet assured UDP flow (the 2 s stream rule): read
    // the cold entry's first_seen only then.
    const uint64_t age =
        t.family() == protostate::Family::udp && t.seen_reply() && !t.assured() ? now_ns - _cold[pos].first_seen_ns : 0;
    if (!protostate::step(t, from_orig ? protostate::Dir::orig : protostate::Dir::reply, age))
        return; // a plain extension: last_seen moved, the wheel re-reads the deadline when due
    const uint8_t slot_before = r.l4.other.slot;
    L4State l4 = other_l4_state(t);
    store_relaxed(r.l4.tcp, l4.tcp); // both bytes at once: readers load them whole
    // A longer timeout (the UDP stream's) needs no wheel work; a shorter one would (rearm only moves a
    // flow earlier), which no protostate transition makes, but a changed slot is rare enough to re-arm.
    if (l4.other.slot != slot_before)
        rearm(pos);
    emit(pos, events::Kind::updated, Reason::count, now_ns); // replied or assured: a status change
}

void FlowTable::create_other(const packet::Packet& pkt, const Probe& probe, uint64_t now_ns) noexcept
{
    const protostate::Family family = family_of_verdict(pkt.verdict);
    const Proto proto = pkt.verdict == packet::Verdict::udp    ? Proto::udp
                        : pkt.verdict == packet::Verdict::icmp ? Proto::icmp
                                                               : Proto::other;
    // Only a query request starts an ICMP flow: a reply, or a late one after the flow ended, does not.
    if (pkt.verdict == packet::Verdict::icmp && !packet::icmp_is_request(pkt)) {
        judge_drop(pkt, CtState::invalid); // netfilter's icmp_new() refuses it: INVALID
        bump(_counters.proto_no_flow[static_cast<size_t>(proto)]);
        return;
    }
    // NEW, judged before the flow exists (create_flow()).
    if (judge_drop(pkt, CtState::new_)) {
        bump(_counters.proto_no_flow[static_cast<size_t>(proto)]);
        bump(_counters.policy_untraced[0]);
        return;
    }
    const uint32_t pos = admit(probe, now_ns);
    if (pos == kNoPosition) {
        bump(_counters.proto_table_full[static_cast<size_t>(proto)]);
        return;
    }
    init_record(pos, pkt, other_l4_state(protostate::initial(family)), now_ns);
    bump(_counters.proto_tracked[static_cast<size_t>(proto)]);
}

} // namespace flowcop::conntrack
