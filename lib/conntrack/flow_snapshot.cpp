// SPDX-License-Identifier: BSD-3-Clause
// FlowTable::snapshot and read_slice: the control plane's reads of live flows, from any thread.
// snapshot() holds one shard lock at a time, for one pass over kShardSize records; read_slice() holds
// one for at most the slice it copies. Either way the owner's cop defers at most that shard's due flows
// for that long.
#include <conntrack/flow_id.h>
#include <conntrack/flow_table.h>

#include <algorithm>
#include <cstring>

namespace flowcop::conntrack {

namespace {

bool matches(const SnapshotFilter& f, const packet::FlowKey& k, Proto proto) noexcept
{
    if (f.match_proto && proto != f.proto)
        return false;
    if (f.match_addr && std::memcmp(k.addr_lo, f.addr, 16) != 0 && std::memcmp(k.addr_hi, f.addr, 16) != 0)
        return false;
    if (f.match_port && k.port_lo != f.port && k.port_hi != f.port)
        return false;
    return true;
}

bool more_recent(const FlowSnapshot& a, const FlowSnapshot& b) noexcept
{
    return a.last_seen_ns > b.last_seen_ns;
}

} // namespace

DeadlineRules FlowTable::reader_rules() const noexcept
{
    // The timeouts as the owner last set them, for the one deadline function (deadline.h).
    DeadlineRules rules;
    for (size_t s = 0; s < kTimeoutSlots; ++s)
        rules.state_timeout_ns[s] = load_relaxed(_rules.state_timeout_ns[s]);
    for (size_t c = 0; c < tcpstate::kCapCount; ++c)
        rules.cap_timeout_ns[c] = load_relaxed(_rules.cap_timeout_ns[c]);
    rules.active_timeout_ns = load_relaxed(_rules.active_timeout_ns);
    return rules;
}

void FlowTable::copy_flow(uint32_t pos, uint8_t flags, const DeadlineRules& rules, FlowSnapshot& snap) const noexcept
{
    const FlowRecord& r = _records[pos];
    const FlowCold& c = _cold[pos];
    snap = FlowSnapshot{};
    std::memcpy(&snap.key, &r.key, sizeof(r.key));
    // The state bytes are read whole: the owner may step them while the shard is held.
    L4State l4;
    l4.tcp = load_relaxed(r.l4.tcp);
    const tcpstate::Tracker tcp = l4.tcp;
    snap.orig_is_lo = flags & FlowRecord::kOrigIsLo;
    snap.reset = flags & FlowRecord::kReset;
    snap.killed = flags & FlowRecord::kKilled;
    snap.proto = proto_of_flow(r.key.proto, l4);
    if (snap.proto == Proto::tcp) {
        snap.assured = tcp.assured();
        snap.state = tcp.state;
        snap.tcp = tcp;
    } else {
        snap.other = l4.other.tracker();
        snap.assured = snap.other.assured();
        snap.state = tcpstate::State::none;
    }
    snap.related = load_relaxed(c.related);
    for (int d = 0; d < 2; ++d)
        snap.tcp_flags_seen[d] = load_relaxed(r.tcp_flags_seen[d]);
    snap.position = pos;
    snap.in_port = load_relaxed(c.in_port);
    snap.flow_id = make_flow_id(load_relaxed(c.generation), pos);
    snap.first_seen_ns = load_relaxed(c.first_seen_ns);
    snap.last_seen_ns = load_relaxed(r.last_seen_ns);
    for (int d = 0; d < 2; ++d) {
        snap.packets[d] = load_relaxed(r.packets[d]);
        snap.bytes[d] = load_relaxed(r.bytes[d]);
    }
    snap.deadline_ns = record_deadline(
        rules, flags, load_relaxed(r.timeout_slot), tcp.state, snap.last_seen_ns, [&] { return snap.first_seen_ns; },
        [&](uint8_t slot) { return load_relaxed(_set_deadlines[slot].deadline_ns); });
    snap.cap = cap_of(flags);
    for (size_t w = 0; w < std::size(r.window.words); ++w)
        snap.window.words[w] = load_relaxed(r.window.words[w]);
}

size_t FlowTable::snapshot(const SnapshotFilter& filter, FlowSnapshot* out, size_t max) const
{
    if (max == 0)
        return 0;
    const DeadlineRules rules = reader_rules();
    // Positions past the ones ever used hold no flow.
    const uint32_t used = load_relaxed(_fresh);
    size_t n = 0;
    // out[0..n) is kept as a min-heap on last_seen (std heap with a "more recent"
    // comparator puts the least recent on top), so it holds the `max` most recent.
    for (uint32_t s = 0; s < _n_shards && s * kShardSize < used; ++s) {
        hold_shard(s);
        const uint32_t end = std::min(used, (s + 1) * kShardSize);
        for (uint32_t pos = s * kShardSize; pos < end; ++pos) {
            const FlowRecord& r = _records[pos];
            const uint8_t flags = load_acquire(r.flags);
            if (!(flags & FlowRecord::kInUse))
                continue;
            const uint64_t last_seen = load_relaxed(r.last_seen_ns);
            if (n == max && last_seen <= out[0].last_seen_ns)
                continue;
            // The state bytes are read whole: the owner may step them while the shard is held.
            L4State l4;
            l4.tcp = load_relaxed(r.l4.tcp);
            const Proto proto = proto_of_flow(r.key.proto, l4);
            if (!matches(filter, r.key, proto))
                continue;
            FlowSnapshot snap;
            copy_flow(pos, flags, rules, snap);
            if (n < max) {
                out[n++] = snap;
                std::push_heap(out, out + n, more_recent);
            } else {
                std::pop_heap(out, out + n, more_recent);
                out[n - 1] = snap;
                std::push_heap(out, out + n, more_recent);
            }
        }
        release_shard(s);
    }
    std::sort_heap(out, out + n, more_recent);
    return n;
}

uint32_t FlowTable::slice_end(uint32_t start, uint32_t max_records) const noexcept
{
    const uint32_t used = load_relaxed(_fresh);
    if (start >= used)
        return kNoPosition;
    return std::min({used, (shard_of(start) + 1) * kShardSize, start + std::max(max_records, 1u)});
}

uint32_t FlowTable::read_slice(uint32_t start, uint32_t max_records, FlowSnapshot* out, size_t& n) const
{
    n = 0;
    const uint32_t end = slice_end(start, max_records);
    if (end == kNoPosition)
        return kNoPosition;
    const uint32_t shard = shard_of(start);
    const DeadlineRules rules = reader_rules();
    hold_shard(shard);
    for (uint32_t pos = start; pos < end; ++pos) {
        const uint8_t flags = load_acquire(_records[pos].flags);
        if (flags & FlowRecord::kInUse)
            copy_flow(pos, flags, rules, out[n++]);
    }
    release_shard(shard);
    return end;
}

} // namespace flowcop::conntrack
