// SPDX-License-Identifier: BSD-3-Clause
// The 32 template variants, built once, and the field-by-field record writer.
#include <ipfix/end_reason.h>
#include <ipfix/template.h>

#include <array>
#include <cstring>

namespace flowcop::ipfix {
namespace {

constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
constexpr unsigned kVariantMask = events::kHasTcpFlags | events::kHasInPort | events::kHasFlowId;
static_assert((kVariantMask & (kVariantIpv6 | kVariantIcmp)) == 0 && (kVariantIpv6 & kVariantIcmp) == 0 &&
              (kVariantMask | kVariantIpv6 | kVariantIcmp) < kVariants);
constexpr uint8_t kIpProtoIcmp = 1;
constexpr uint8_t kIpProtoIcmpV6 = 58;

uint8_t* put8(uint8_t* p, uint8_t v) noexcept
{
    *p = v;
    return p + 1;
}
uint8_t* put16(uint8_t* p, uint16_t v) noexcept
{
    p[0] = uint8_t(v >> 8);
    p[1] = uint8_t(v);
    return p + 2;
}
uint8_t* put32(uint8_t* p, uint32_t v) noexcept
{
    return put16(put16(p, uint16_t(v >> 16)), uint16_t(v));
}
uint8_t* put64(uint8_t* p, uint64_t v) noexcept
{
    return put32(put32(p, uint32_t(v >> 32)), uint32_t(v));
}

Template build(unsigned variant) noexcept
{
    Template t{};
    t.id = uint16_t(kFirstTemplateId + variant);
    auto add = [&t](Element e) { t.fields[t.n_fields++] = e; };
    const bool v6 = (variant & kVariantIpv6) != 0;
    add(Element::flow_start_ms);
    add(Element::flow_end_ms);
    add(v6 ? Element::src_ipv6 : Element::src_ipv4);
    add(v6 ? Element::dst_ipv6 : Element::dst_ipv4);
    add(Element::src_port);
    add(Element::dst_port);
    if (variant & kVariantIcmp) // after the ports: see template.h
        add(v6 ? Element::icmp_v6 : Element::icmp_v4);
    add(Element::protocol);
    add(Element::octets);
    add(Element::packets);
    add(Element::rev_octets);
    add(Element::rev_packets);
    add(Element::rev_l2_octets); // before the forward one: see template.h
    add(Element::l2_octets);
    if (variant & events::kHasTcpFlags) {
        add(Element::rev_tcp_flags); // before the forward one: see template.h
        add(Element::tcp_flags);
    }
    add(Element::end_reason);
    add(Element::vlan);
    add(Element::post_vlan);
    add(Element::customer_vlan);
    if (variant & events::kHasInPort)
        add(Element::ingress_if);
    add(Element::fc_state);
    add(Element::fc_end_reason);
    if (variant & events::kHasFlowId)
        add(Element::fc_flow_id);
    unsigned record = 0, tmpl = 4;
    for (unsigned i = 0; i < t.n_fields; ++i) {
        record += spec(t.fields[i]).length;
        tmpl += spec(t.fields[i]).enterprise ? 8 : 4;
    }
    t.record_bytes = uint16_t(record);
    t.template_bytes = uint16_t(tmpl);
    return t;
}

const std::array<Template, kVariants>& all() noexcept
{
    static const std::array<Template, kVariants> table = [] {
        std::array<Template, kVariants> a{};
        for (unsigned v = 0; v < kVariants; ++v)
            a[v] = build(v);
        return a;
    }();
    return table;
}

} // namespace

uint64_t layer2_octets(const events::Event& e, unsigned dir) noexcept
{
    constexpr uint64_t kEthHeader = 14, kVlanTag = 4;
    const uint64_t tags = e.vlan_inner != 0 ? 2 : e.vlan_outer != 0 ? 1 : 0;
    return e.bytes[dir] + e.packets[dir] * (kEthHeader + kVlanTag * tags);
}

unsigned variant_of(const events::Event& e) noexcept
{
    const bool v4 =
        std::memcmp(e.src, kV4Mapped, sizeof kV4Mapped) == 0 && std::memcmp(e.dst, kV4Mapped, sizeof kV4Mapped) == 0;
    // ICMP over IPv6 and ICMPv6 over IPv4 are other protocols to the parser: keyed without ports.
    const bool icmp = v4 ? e.proto == kIpProtoIcmp : e.proto == kIpProtoIcmpV6;
    return (v4 ? 0u : kVariantIpv6) | (icmp ? kVariantIcmp : 0u) | (e.present & kVariantMask);
}

const Template& template_of(unsigned variant) noexcept
{
    return all()[variant % kVariants];
}

unsigned max_record_bytes() noexcept
{
    return template_of(kVariants - 1).record_bytes; // every optional field and IPv6
}

unsigned max_template_bytes() noexcept
{
    return template_of(kVariants - 1).template_bytes;
}

size_t write_template(const Template& t, uint8_t* out) noexcept
{
    uint8_t* p = put16(put16(out, t.id), t.n_fields);
    for (unsigned i = 0; i < t.n_fields; ++i) {
        const ElementSpec& s = spec(t.fields[i]);
        p = put16(p, uint16_t(s.id | (s.enterprise ? kEnterpriseBit : 0)));
        p = put16(p, s.length);
        if (s.enterprise)
            p = put32(p, s.enterprise);
    }
    return size_t(p - out);
}

size_t write_record(const Template& t, const events::Event& e, uint8_t* out) noexcept
{
    constexpr uint64_t kNsPerMs = 1'000'000;
    // An ICMP flow's key ports are (identifier, query type): not transport ports (template.h).
    const bool icmp = ((t.id - kFirstTemplateId) & kVariantIcmp) != 0;
    const auto icmp_type_code = uint16_t((e.dport & 0xff) << 8); // code 0 (template.h)
    uint8_t* p = out;
    for (unsigned i = 0; i < t.n_fields; ++i) {
        switch (t.fields[i]) {
        case Element::flow_start_ms: p = put64(p, e.first_seen_ns / kNsPerMs); break;
        case Element::flow_end_ms: p = put64(p, e.last_seen_ns / kNsPerMs); break;
        case Element::src_ipv4: std::memcpy(p, e.src + 12, 4), p += 4; break;
        case Element::dst_ipv4: std::memcpy(p, e.dst + 12, 4), p += 4; break;
        case Element::src_ipv6: std::memcpy(p, e.src, 16), p += 16; break;
        case Element::dst_ipv6: std::memcpy(p, e.dst, 16), p += 16; break;
        case Element::src_port: p = put16(p, icmp ? 0 : e.sport); break;
        case Element::dst_port: p = put16(p, icmp ? 0 : e.dport); break;
        case Element::icmp_v4:
        case Element::icmp_v6: p = put16(p, icmp_type_code); break;
        case Element::protocol: p = put8(p, e.proto); break;
        case Element::octets: p = put64(p, e.bytes[0]); break;
        case Element::packets: p = put64(p, e.packets[0]); break;
        case Element::rev_octets: p = put64(p, e.bytes[1]); break;
        case Element::rev_packets: p = put64(p, e.packets[1]); break;
        case Element::l2_octets: p = put64(p, layer2_octets(e, 0)); break;
        case Element::rev_l2_octets: p = put64(p, layer2_octets(e, 1)); break;
        case Element::rev_tcp_flags: p = put8(p, e.tcp_flags[1]); break;
        case Element::tcp_flags: p = put8(p, e.tcp_flags[0]); break;
        case Element::end_reason: p = put8(p, flow_end_reason(e)); break;
        case Element::vlan:
        case Element::post_vlan: p = put16(p, e.vlan_outer); break;
        case Element::customer_vlan: p = put16(p, e.vlan_inner); break;
        case Element::ingress_if: p = put32(p, e.in_port); break;
        case Element::fc_state: p = put8(p, e.state_code); break;
        case Element::fc_end_reason: p = put8(p, flowcop_end_reason(e)); break;
        case Element::fc_flow_id: p = put64(p, e.flow_id); break;
        case Element::count: break;
        }
    }
    return size_t(p - out);
}

} // namespace flowcop::ipfix
