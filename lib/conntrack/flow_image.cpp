// SPDX-License-Identifier: BSD-3-Clause
// FlowTable::export_slice / restore_flow / finish_restore: the one place that knows both a flow's record
// (flow_record.h) and its FlowImage (flow_image.h), for restarts (issue 32). Everything else (the state
// file, the service) sees images only.
#include <conntrack/flow_id.h>
#include <conntrack/flow_table.h>

#include <algorithm>
#include <cstring>

namespace flowcop::conntrack {

namespace {

constexpr uint8_t kMaxScale = 14;                                         // RFC 7323 2.3
constexpr uint64_t kMaxOverrideNs = uint64_t(UINT32_MAX) * 1'000'000'000; // set_flow_timeout's seconds

} // namespace

packet::FlowKey image_key(const FlowImage& im) noexcept
{
    packet::FlowKey k;
    std::memset(&k, 0, sizeof k);
    std::memcpy(k.addr_lo, im.addr_lo, 16);
    std::memcpy(k.addr_hi, im.addr_hi, 16);
    k.port_lo = im.port_lo;
    k.port_hi = im.port_hi;
    k.proto = im.proto;
    const uint32_t v = uint32_t(im.vlan_outer & 0xfff) << 12 | (im.vlan_inner & 0xfff); // flow_key.h's packing
    k.vlan[0] = uint8_t(v >> 16);
    k.vlan[1] = uint8_t(v >> 8);
    k.vlan[2] = uint8_t(v);
    k.zone = im.zone;
    return k;
}

namespace {

// The window part of a record as image fields, and back.
void window_to_image(const WindowSpan& span, FlowImage& im) noexcept
{
    const tcpstate::WindowState& w = span.tcp;
    for (int d = 0; d < 2; ++d) {
        FlowImageDir& o = im.dir[d];
        o.end = w.seq.side[d].end.raw;
        o.maxend = w.seq.side[d].maxend.raw;
        o.maxwin = w.seq.side[d].maxwin;
        o.maxack = w.seq.maxack[d].raw;
        const tcpstate::SideFlags& f = w.meta.flags[d];
        o.scale = f.scale;
        o.sack_perm = f.sack_perm;
        o.wscale_offered = f.wscale_offered;
        o.unacked = f.unacked;
        o.maxack_set = f.maxack_set;
    }
    im.retrans = w.meta.retrans;
    im.last_ignored = w.meta.last_ignored;
    im.liberal = w.meta.liberal;
    im.last_dir = w.meta.last_dir;
    im.last_class = w.meta.last_class;
    im.last_win_zero = w.meta.last_win_zero;
    im.window_cap = w.meta.cap;
    im.last = w.meta.last;
}

WindowSpan window_from_image(const FlowImage& im) noexcept
{
    WindowSpan span{};
    tcpstate::WindowState& w = span.tcp;
    for (int d = 0; d < 2; ++d) {
        const FlowImageDir& o = im.dir[d];
        w.seq.side[d].end = tcpstate::Seq(o.end);
        w.seq.side[d].maxend = tcpstate::Seq(o.maxend);
        w.seq.side[d].maxwin = o.maxwin;
        w.seq.maxack[d] = tcpstate::Seq(o.maxack);
        tcpstate::SideFlags& f = w.meta.flags[d];
        f.scale = o.scale & 0xf;
        f.sack_perm = o.sack_perm;
        f.wscale_offered = o.wscale_offered;
        f.unacked = o.unacked;
        f.maxack_set = o.maxack_set;
    }
    w.meta.retrans = im.retrans & 0x7f;
    w.meta.last_ignored = im.last_ignored;
    w.meta.liberal = im.liberal;
    w.meta.last_dir = im.last_dir & 1;
    w.meta.last_class = im.last_class & 7;
    w.meta.last_win_zero = im.last_win_zero;
    w.meta.cap = im.window_cap & 3;
    w.meta.last = im.last;
    return span;
}

// Whether every field fits what the table can hold: an image from a damaged or forged file that passed
// its checksum must not make a state or cap index out of range.
bool image_valid(const FlowImage& im) noexcept
{
    if (im.vlan_outer > 0xfff || im.vlan_inner > 0xfff || im.timeout_cap >= tcpstate::kCapCount)
        return false;
    if (flow_id_generation(im.flow_id) == 0) // every flow's generation is >= 1 (init_record bumps it first)
        return false;
    if (im.first_seen_ns == 0 || im.last_seen_ns < im.first_seen_ns)
        return false;
    if (im.proto != kIpProtoTcp)
        return im.state == 0 && im.retrans == 0 && im.window_cap == 0 && im.dir[0].maxwin == 0 &&
               im.dir[1].maxwin == 0 &&
               (im.state_bits & protostate::Tracker::kFamilyMask) < uint8_t(protostate::Family::count);
    if (im.state == 0 || im.state >= tcpstate::kStateCount)
        return false;
    if (im.retrans > tcpstate::WindowPolicy::kMaxMaxRetrans || im.last_dir > 1 || im.last_class > 7 ||
        im.window_cap >= tcpstate::kCapCount)
        return false;
    return im.dir[0].scale <= kMaxScale && im.dir[1].scale <= kMaxScale;
}

} // namespace

uint32_t FlowTable::export_slice(uint32_t start, uint32_t max_records, const TimeBase& base, FlowImage* out,
                                 size_t& n) const
{
    n = 0;
    const uint32_t end = slice_end(start, max_records);
    if (end == kNoPosition)
        return kNoPosition;
    const uint32_t shard = shard_of(start);
    hold_shard(shard);
    for (uint32_t pos = start; pos < end; ++pos) {
        const FlowRecord& r = _records[pos];
        const uint8_t flags = load_acquire(r.flags);
        if (!(flags & FlowRecord::kInUse))
            continue;
        const FlowCold& c = _cold[pos];
        FlowImage& im = out[n++];
        im = FlowImage{};
        std::memcpy(im.addr_lo, r.key.addr_lo, 16);
        std::memcpy(im.addr_hi, r.key.addr_hi, 16);
        im.port_lo = r.key.port_lo;
        im.port_hi = r.key.port_hi;
        im.proto = r.key.proto;
        im.vlan_outer = packet::key_vlan_outer(r.key);
        im.vlan_inner = packet::key_vlan_inner(r.key);
        im.zone = r.key.zone;
        im.orig_is_lo = flags & FlowRecord::kOrigIsLo;
        // The state bytes are read whole: the owner may step them while the shard is held.
        L4State l4;
        l4.tcp = load_relaxed(r.l4.tcp);
        if (r.key.proto == kIpProtoTcp) {
            im.state = static_cast<uint8_t>(l4.tcp.state);
            im.state_bits = l4.tcp.flags;
        } else {
            im.state_bits = l4.other.bits;
        }
        im.reset_pending = flags & FlowRecord::kReset;
        im.killed_pending = flags & FlowRecord::kKilled;
        im.timeout_cap = static_cast<uint8_t>(cap_of(flags));
        if (const uint8_t slot = load_relaxed(r.timeout_slot); slot != 0)
            im.timeout_override_ns = base.to_file(load_relaxed(_set_deadlines[slot].deadline_ns));
        WindowSpan span;
        for (size_t w = 0; w < std::size(r.window.words); ++w)
            span.words[w] = load_relaxed(r.window.words[w]);
        if (r.key.proto == kIpProtoTcp)
            window_to_image(span, im);
        for (int d = 0; d < 2; ++d) {
            im.dir[d].packets = load_relaxed(r.packets[d]);
            im.dir[d].bytes = load_relaxed(r.bytes[d]);
            im.dir[d].tcp_flags_seen = load_relaxed(r.tcp_flags_seen[d]);
        }
        im.flow_id = make_flow_id(load_relaxed(c.generation), pos);
        im.first_seen_ns = base.to_file(load_relaxed(c.first_seen_ns));
        im.last_seen_ns = base.to_file(load_relaxed(r.last_seen_ns));
        im.related = load_relaxed(c.related);
        im.in_port = load_relaxed(c.in_port);
        im.interims = load_relaxed(c.exports);
    }
    release_shard(shard);
    return end;
}

RestoreOutcome FlowTable::restore_flow(const FlowImage& im, const TimeBase& base, uint64_t now_ns,
                                       uint32_t renumber_generation, uint64_t* flow_id) noexcept
{
    if (!image_valid(im))
        return RestoreOutcome::invalid;
    const packet::FlowKey key = image_key(im);
    L4State l4;
    if (im.proto == kIpProtoTcp) {
        l4.tcp = tcpstate::Tracker{static_cast<tcpstate::State>(im.state), im.state_bits};
    } else {
        // A non-TCP flow's first state byte is derived (its timeout slot), never stored.
        l4 = other_l4_state(protostate::Tracker{im.state_bits});
    }
    if (!(_track & track_bit(proto_of_flow(im.proto, l4))))
        return RestoreOutcome::not_tracked;
    const Probe probe = probe_of(key);
    if (lookup(key, probe) != kNoPosition) // a second flow with one key: the file is not one table's
        return RestoreOutcome::invalid;
    if (!_clock_started) // the wheel's cursor at the restoring clock's now, not at 0 (start_clock)
        start_clock(now_ns);

    uint32_t pos = flow_id_slot(im.flow_id);
    uint32_t generation = flow_id_generation(im.flow_id);
    if (renumber_generation == 0) {
        if (pos >= _capacity || (_records[pos].flags & FlowRecord::kInUse))
            return RestoreOutcome::slot_taken;
        if (!_index.insert(probe, pos))
            return RestoreOutcome::no_room;
        if (pos >= _fresh)
            store_relaxed(_fresh, pos + 1);
    } else {
        if (_live >= _capacity)
            return RestoreOutcome::no_room;
        pos = allocate();
        if (!_index.insert(probe, pos)) {
            _cold[pos].next_free = _free_head; // give the position back
            _free_head = pos;
            return RestoreOutcome::no_room;
        }
        generation = renumber_generation;
    }

    // Times after now (a clock that went back between the runs, or a file from a host whose clock was
    // ahead) are taken as now: a flow must not outlive its timeout by the clock's error.
    const uint64_t last_seen = std::min(base.to_table(im.last_seen_ns), now_ns);
    FlowRecord& r = _records[pos];
    FlowCold& c = _cold[pos];
    timerwheel::init_hook(c.hook);
    c.generation = generation;
    c.first_seen_ns = std::min(base.to_table(im.first_seen_ns), last_seen);
    c.related = im.related;
    c.in_port = im.in_port;
    c.exports = im.interims;
    std::memcpy(&r.key, &key, sizeof key);
    r.l4 = l4;
    r.tcp_flags_seen[0] = im.dir[0].tcp_flags_seen;
    r.tcp_flags_seen[1] = im.dir[1].tcp_flags_seen;
    r.timeout_slot = 0;
    r.last_seen_ns = last_seen;
    for (int d = 0; d < 2; ++d) {
        r.packets[d] = im.dir[d].packets;
        r.bytes[d] = im.dir[d].bytes;
    }
    r.window = im.proto == kIpProtoTcp ? window_from_image(im) : WindowSpan{};
    // Never kSteady: the flow's first packet after the restore takes track(), which sets it from the tracker
    // (flow_record.h), so the fused steady path never runs on state it did not see accepted.
    uint8_t flags = uint8_t(
        FlowRecord::kInUse | (im.orig_is_lo ? FlowRecord::kOrigIsLo : 0) | (im.reset_pending ? FlowRecord::kReset : 0) |
        (im.killed_pending ? FlowRecord::kKilled : 0) | uint8_t(im.timeout_cap << FlowRecord::kCapShift) |
        (packet::is_lite_key(key) ? FlowRecord::kLiteKey : 0));
    // An operator's timeout survives when a slot is free (kMaxTimeoutUpdates per table); otherwise the
    // state's timeout counts from the flow's last packet, as after any accepted packet.
    if (im.timeout_override_ns != 0)
        if (const uint8_t slot = claim_timeout_slot(); slot != 0) {
            _set_deadlines[slot].pos = pos;
            // At most what set_flow_timeout() can set from now (2^32 - 1 s), and never 0, which the
            // deadline code reads as "none" (a flow the wheel would drop): 1 is long past, due at once.
            _set_deadlines[slot].deadline_ns =
                std::clamp(base.to_table(im.timeout_override_ns), uint64_t(1), now_ns + kMaxOverrideNs);
            r.timeout_slot = slot;
        }
    store_release(r.flags, flags);
    ++_live;
    bump(_counters.flows_created);
    bump(_counters.flows_created_by_proto[static_cast<size_t>(record_proto(r))]);
    _wheel->schedule(pos, wheel_deadline_of(pos));
    if (flow_id != nullptr)
        *flow_id = make_flow_id(generation, pos);
    return renumber_generation == 0 ? RestoreOutcome::restored : RestoreOutcome::renumbered;
}

void FlowTable::finish_restore() noexcept
{
    // Positions below _fresh that no restored flow took go on the free list, the highest last so the
    // lowest is handed out first (the order allocate() would have used them in).
    _free_head = kNoPosition;
    for (uint32_t pos = _fresh; pos-- > 0;)
        if (!(_records[pos].flags & FlowRecord::kInUse)) {
            _cold[pos].next_free = _free_head;
            _free_head = pos;
        }
}

} // namespace flowcop::conntrack
