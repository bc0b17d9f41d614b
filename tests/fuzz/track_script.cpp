// SPDX-License-Identifier: BSD-3-Clause
// The tracking fuzz target's input language (see track_script.h).
#include "track_script.h"

#include <algorithm>

namespace flowcop::fuzz {

tcpstate::Timeouts timeout_preset(unsigned i) noexcept
{
    // State order: none, syn_sent, syn_recv, established, fin_wait, close_wait, last_ack,
    // time_wait, close, syn_sent2.
    switch (i & 3) {
    case 0: return tcpstate::Timeouts{{0, 3, 2, 40, 4, 3, 2, 4, 1, 3}, 5};
    case 1: return tcpstate::Timeouts{{0, 0, 2, 0, 0, 3, 0, 4, 0, 0}, 7};
    case 2: return tcpstate::Timeouts{{0, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 1};
    default: return tcpstate::Timeouts{{0, 30, 20, 300, 40, 30, 20, 40, 10, 30}, 60};
    }
}

TrackSetup TrackSetup::from_byte(uint8_t b) noexcept
{
    TrackSetup s;
    s.loose_pickup = (b & 0x01) != 0;
    s.preset = (b >> 1) & 3;
    s.active = (b & 0x08) != 0;
    s.capacity = (b & 0x10) ? 8 : 256;
    s.all_protocols = (b & 0x20) != 0;
    const unsigned vlan_key = (b >> 6) & 3;
    s.vlan_key = vlan_key == 1 ? packet::VlanKey::outer : vlan_key == 2 ? packet::VlanKey::none : packet::VlanKey::both;
    return s;
}

uint8_t TrackSetup::to_byte() const noexcept
{
    return uint8_t((loose_pickup ? 0x01 : 0) | (preset & 3) << 1 | (active ? 0x08 : 0) | (capacity <= 8 ? 0x10 : 0) |
                   (all_protocols ? 0x20 : 0) |
                   (vlan_key == packet::VlanKey::outer  ? 0x40
                    : vlan_key == packet::VlanKey::none ? 0x80
                                                        : 0));
}

conntrack::TableConfig TrackSetup::table_config() const
{
    conntrack::TableConfig c;
    c.name = "fuzz_track";
    c.capacity = capacity;
    c.wheel.buckets = kWheelBuckets;
    c.wheel.tick_ns = kTickNs;
    c.timeouts = timeout_preset(preset);
    c.active_timeout_s = active ? kActiveTimeoutS : 0;
    c.loose_pickup = loose_pickup;
    // TCP only, or every protocol (the Oracle models both; track_oracle_other.cpp the others).
    c.track = all_protocols ? conntrack::kTrackAll : conntrack::track_bit(conntrack::Proto::tcp);
    c.proto_timeouts = kProtoTimeouts;
    return c;
}

Op ScriptReader::next() noexcept
{
    Op op;
    if (_p >= _end)
        return op;
    const uint8_t c = byte();
    if (c < 0x80) {
        op.kind = OpKind::frame;
        op.dt_ns = uint64_t((c >> 1) & 0x3f) * kMsNs;
        const uint32_t p0 = byte(), p1 = byte();
        op.pad_len = uint32_t(c & 1) << 16 | p1 << 8 | p0;
        const uint32_t h = byte();
        op.header_len = std::min<uint32_t>(h, uint32_t(_end - _p));
        op.bytes = _p;
        _p += op.header_len;
    } else if (c < 0xc0) {
        op.kind = OpKind::advance_cop;
        op.dt_ns = advance_ns(c & 0x3f);
    } else if (c < 0xe0) {
        op.kind = OpKind::budget_cop;
        op.dt_ns = uint64_t((c >> 3) & 3) * kSecNs;
        op.fire_budget = 1u << (c & 3);
        op.visit_budget = (c & 4) ? op.fire_budget : op.fire_budget * 16;
    } else if (c < 0xf0) {
        op.kind = OpKind::kill;
        op.index = c & 0x0f;
    } else if (c < 0xf8) {
        op.kind = OpKind::set_timeouts;
        op.index = c & 3;
        op.active = (c & 4) != 0;
    } else if (c < 0xfc) {
        op.kind = OpKind::rebase;
        op.index = 1u << ((c & 3) * 3);
    } else if (c == 0xfc) {
        op.kind = OpKind::next_port;
    } else if (c == 0xfe) {
        op.kind = OpKind::destroy_all;
    } else {
        op.kind = OpKind::flush;
    }
    return op;
}

ScriptWriter& ScriptWriter::frame(const std::vector<uint8_t>& f, unsigned dt_ms, size_t keep)
{
    constexpr size_t kMaxPad = (1u << 17) - 1;
    const size_t h = std::min<size_t>({f.size(), keep, 255});
    const size_t pad = std::min(f.size() - h, kMaxPad);
    _out.push_back(uint8_t((std::min(dt_ms, 63u) << 1) | (pad >> 16)));
    _out.push_back(uint8_t(pad & 0xff));
    _out.push_back(uint8_t((pad >> 8) & 0xff));
    _out.push_back(uint8_t(h));
    _out.insert(_out.end(), f.begin(), f.begin() + long(h));
    return *this;
}

} // namespace flowcop::fuzz
