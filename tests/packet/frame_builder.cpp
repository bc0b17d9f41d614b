// SPDX-License-Identifier: BSD-3-Clause
#include "frame_builder.h"

#include <algorithm>

#include <arpa/inet.h>

#include <stdexcept>

namespace flowcop::test {
namespace {

constexpr uint8_t kProtoIcmp = 1, kProtoTcp = 6, kProtoUdp = 17, kProtoIcmpv6 = 58;

uint32_t sum16(const uint8_t* p, size_t n, uint32_t acc = 0)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        acc += static_cast<uint32_t>((p[i] << 8) | p[i + 1]);
    if (n & 1)
        acc += static_cast<uint32_t>(p[n - 1] << 8);
    return acc;
}

uint16_t fold(uint32_t acc)
{
    while (acc >> 16)
        acc = (acc & 0xffff) + (acc >> 16);
    return static_cast<uint16_t>(~acc);
}

void store16(std::vector<uint8_t>& f, size_t off, uint16_t v)
{
    if (off + 2 <= f.size()) {
        f[off] = static_cast<uint8_t>(v >> 8);
        f[off + 1] = static_cast<uint8_t>(v);
    }
}

} // namespace

Ipv4Addr ip4(const char* text)
{
    Ipv4Addr a{};
    if (inet_pton(AF_INET, text, a.data()) != 1)
        throw std::invalid_argument(text);
    return a;
}

Ipv6Addr ip6(const char* text)
{
    Ipv6Addr a{};
    if (inet_pton(AF_INET6, text, a.data()) != 1)
        throw std::invalid_argument(text);
    return a;
}

FrameBuilder::FrameBuilder()
{
    _bytes = {0x02, 0, 0, 0, 0, 0x02, // destination MAC (locally administered)
              0x02, 0, 0, 0, 0, 0x01, // source MAC
              0,    0};               // ethertype, filled by the next layer
}

void FrameBuilder::put16(uint16_t v)
{
    _bytes.push_back(static_cast<uint8_t>(v >> 8));
    _bytes.push_back(static_cast<uint8_t>(v));
}

void FrameBuilder::put32(uint32_t v)
{
    put16(static_cast<uint16_t>(v >> 16));
    put16(static_cast<uint16_t>(v));
}

void FrameBuilder::fill_pending_ethertype(uint16_t type)
{
    if (_pending != Pending::ethertype)
        throw std::logic_error("frame_builder: no ethertype to fill here");
    _bytes[_pending_off] = static_cast<uint8_t>(type >> 8);
    _bytes[_pending_off + 1] = static_cast<uint8_t>(type);
    _pending = Pending::none;
}

void FrameBuilder::fill_pending_proto(uint8_t proto)
{
    if (_pending != Pending::ip_proto)
        throw std::logic_error("frame_builder: no IP protocol field to fill here");
    _bytes[_pending_off] = proto;
    _pending = Pending::none;
}

FrameBuilder& FrameBuilder::vlan(uint16_t vid, uint16_t tpid, uint8_t pcp)
{
    fill_pending_ethertype(tpid);
    put16(static_cast<uint16_t>((pcp << 13) | (vid & 0x0fff)));
    _pending_off = _bytes.size();
    put16(0);
    _pending = Pending::ethertype;
    return *this;
}

FrameBuilder& FrameBuilder::ethertype(uint16_t type)
{
    fill_pending_ethertype(type);
    return *this;
}

FrameBuilder& FrameBuilder::ipv4(const Ipv4Spec& s)
{
    fill_pending_ethertype(0x0800);
    _l3 = _bytes.size();
    _ip_version = 4;
    _ip_length = s.total_length;
    const uint8_t ihl = s.ihl.value_or(static_cast<uint8_t>((20 + s.options.size()) / 4));
    _bytes.push_back(static_cast<uint8_t>((s.version << 4) | (ihl & 0x0f)));
    _bytes.push_back(0); // DSCP/ECN
    put16(0);            // total length, filled at build()
    put16(s.id);
    put16(static_cast<uint16_t>((s.dont_fragment ? 0x4000 : 0) | (s.more_fragments ? 0x2000 : 0) |
                                (s.frag_offset & 0x1fff)));
    _bytes.push_back(s.ttl);
    _pending_off = _bytes.size();
    _bytes.push_back(0); // protocol, filled by the next layer
    _pending = Pending::ip_proto;
    put16(0); // header checksum, filled at build()
    _bytes.insert(_bytes.end(), s.src.begin(), s.src.end());
    _bytes.insert(_bytes.end(), s.dst.begin(), s.dst.end());
    _bytes.insert(_bytes.end(), s.options.begin(), s.options.end());
    return *this;
}

FrameBuilder& FrameBuilder::ipv6(const Ipv6Spec& s)
{
    fill_pending_ethertype(0x86dd);
    _l3 = _bytes.size();
    _ip_version = 6;
    _ip_length = s.payload_length;
    put32((uint32_t{s.version} << 28) | (s.flow_label & 0xfffff));
    put16(0); // payload length, filled at build()
    _pending_off = _bytes.size();
    _bytes.push_back(0); // next header, filled by the next layer
    _pending = Pending::ip_proto;
    _bytes.push_back(s.hop_limit);
    _bytes.insert(_bytes.end(), s.src.begin(), s.src.end());
    _bytes.insert(_bytes.end(), s.dst.begin(), s.dst.end());
    return *this;
}

FrameBuilder& FrameBuilder::ipv6_ext(uint8_t type, size_t len)
{
    if (_ip_version != 6 || len < 8 || len % 8 != 0 || len > 2048)
        throw std::logic_error("frame_builder: ipv6_ext needs IPv6 and a length of 8..2048 in steps of 8");
    fill_pending_proto(type);
    _pending_off = _bytes.size();
    _bytes.push_back(0);
    _pending = Pending::ip_proto;
    _bytes.push_back(static_cast<uint8_t>(len / 8 - 1));
    // PadN option (type 1) covering the remaining len - 2 bytes (RFC 8200 4.2).
    _bytes.push_back(1);
    _bytes.push_back(static_cast<uint8_t>(len - 4));
    _bytes.insert(_bytes.end(), len - 4, 0);
    return *this;
}

FrameBuilder& FrameBuilder::ipv6_frag(uint16_t offset, bool more, uint32_t id)
{
    if (_ip_version != 6)
        throw std::logic_error("frame_builder: ipv6_frag needs IPv6");
    fill_pending_proto(44);
    _pending_off = _bytes.size();
    _bytes.push_back(0);
    _pending = Pending::ip_proto;
    _bytes.push_back(0);
    put16(static_cast<uint16_t>((offset << 3) | (more ? 1 : 0)));
    put32(id);
    return *this;
}

FrameBuilder& FrameBuilder::ipv6_ah(size_t len)
{
    if (_ip_version != 6 || len < 12 || len % 4 != 0 || len > 1028)
        throw std::logic_error("frame_builder: ipv6_ah needs IPv6 and a length of 12..1028 in steps of 4");
    fill_pending_proto(51);
    _pending_off = _bytes.size();
    _bytes.push_back(0);
    _pending = Pending::ip_proto;
    _bytes.push_back(static_cast<uint8_t>(len / 4 - 2));
    put16(0);                                    // reserved
    put32(0x1000);                               // SPI
    put32(1);                                    // sequence number
    _bytes.insert(_bytes.end(), len - 12, 0x5a); // ICV
    return *this;
}

FrameBuilder& FrameBuilder::tcp(const TcpSpec& s)
{
    fill_pending_proto(kProtoTcp);
    _l4 = _bytes.size();
    _l4_proto = kProtoTcp;
    const uint8_t doff = s.data_offset.value_or(static_cast<uint8_t>((20 + s.options.size()) / 4));
    put16(s.sport);
    put16(s.dport);
    put32(s.seq);
    put32(s.ack);
    _bytes.push_back(static_cast<uint8_t>(doff << 4));
    _bytes.push_back(s.flags);
    put16(s.window);
    put16(0); // checksum, filled at build()
    put16(0); // urgent pointer
    _bytes.insert(_bytes.end(), s.options.begin(), s.options.end());
    return *this;
}

FrameBuilder& FrameBuilder::udp(const UdpSpec& s)
{
    fill_pending_proto(kProtoUdp);
    _l4 = _bytes.size();
    _l4_proto = kProtoUdp;
    _udp_length = s.length;
    put16(s.sport);
    put16(s.dport);
    put16(0); // length, filled at build()
    put16(0); // checksum, filled at build()
    return *this;
}

FrameBuilder& FrameBuilder::icmp(const IcmpSpec& spec)
{
    const uint8_t proto = _ip_version == 6 ? kProtoIcmpv6 : kProtoIcmp;
    fill_pending_proto(proto);
    _l4 = _bytes.size();
    _l4_proto = proto;
    _bytes.push_back(spec.type.value_or(_ip_version == 6 ? 128 : 8)); // echo request by default
    _bytes.push_back(spec.code);
    put16(0); // checksum, filled at build()
    if (spec.rest) {
        put32(*spec.rest);
    } else {
        put16(spec.id);
        put16(spec.seq);
    }
    return *this;
}

FrameBuilder& FrameBuilder::quote(const FrameBuilder& inner, size_t max_bytes)
{
    if (inner.l3_offset() == kNpos)
        throw std::logic_error("FrameBuilder::quote: the inner frame has no IP header");
    const std::vector<uint8_t> f = inner.build();
    const size_t n = std::min(f.size() - inner.l3_offset(), max_bytes);
    _bytes.insert(_bytes.end(), f.begin() + static_cast<long>(inner.l3_offset()),
                  f.begin() + static_cast<long>(inner.l3_offset() + n));
    return *this;
}

FrameBuilder& FrameBuilder::next_protocol(uint8_t proto)
{
    fill_pending_proto(proto);
    return *this;
}

FrameBuilder& FrameBuilder::payload(size_t n, uint8_t fill)
{
    _bytes.insert(_bytes.end(), n, fill);
    return *this;
}

FrameBuilder& FrameBuilder::raw(const std::vector<uint8_t>& bytes)
{
    _bytes.insert(_bytes.end(), bytes.begin(), bytes.end());
    return *this;
}

FrameBuilder& FrameBuilder::truncate(size_t n)
{
    if (n < _bytes.size())
        _bytes.resize(n);
    return *this;
}

FrameBuilder& FrameBuilder::pad_to(size_t frame_len)
{
    _pad_to = frame_len;
    return *this;
}

void FrameBuilder::fix_lengths(std::vector<uint8_t>& f) const
{
    if (_l3 != kNpos && _ip_version == 4)
        store16(f, _l3 + 2, _ip_length.value_or(static_cast<uint16_t>(f.size() - _l3)));
    if (_l3 != kNpos && _ip_version == 6 && f.size() >= _l3 + 40)
        store16(f, _l3 + 4, _ip_length.value_or(static_cast<uint16_t>(f.size() - _l3 - 40)));
    if (_l4 != kNpos && _l4_proto == kProtoUdp)
        store16(f, _l4 + 4, _udp_length.value_or(static_cast<uint16_t>(f.size() - _l4)));
}

void FrameBuilder::fix_checksums(std::vector<uint8_t>& f) const
{
    if (_l3 == kNpos)
        return;
    if (_ip_version == 4 && f.size() >= _l3 + 20) {
        const size_t ihl = size_t{f[_l3] & 0x0fu} * 4;
        if (ihl >= 20 && _l3 + ihl <= f.size())
            store16(f, _l3 + 10, fold(sum16(&f[_l3], ihl)));
    }
    if (_l4 == kNpos || _l4 >= f.size())
        return;
    const size_t l4_len = f.size() - _l4;
    size_t csum_at;
    if (_l4_proto == kProtoTcp)
        csum_at = 16;
    else if (_l4_proto == kProtoUdp)
        csum_at = 6;
    else
        csum_at = 2;
    if (l4_len < csum_at + 2)
        return;
    uint32_t acc = 0;
    if (_ip_version == 4 && _l4_proto != kProtoIcmp) {
        acc = sum16(&f[_l3 + 12], 8);
        acc += _l4_proto + static_cast<uint32_t>(l4_len);
    } else if (_ip_version == 6) {
        acc = sum16(&f[_l3 + 8], 32);
        acc += static_cast<uint32_t>(l4_len >> 16) + static_cast<uint32_t>(l4_len & 0xffff) + _l4_proto;
    }
    acc = sum16(&f[_l4], l4_len, acc);
    uint16_t c = fold(acc);
    if (c == 0 && _l4_proto == kProtoUdp)
        c = 0xffff; // RFC 768: 0 means "no checksum"
    store16(f, _l4 + csum_at, c);
}

std::vector<uint8_t> FrameBuilder::build() const
{
    std::vector<uint8_t> f = _bytes;
    fix_lengths(f);
    fix_checksums(f);
    if (f.size() < _pad_to)
        f.resize(_pad_to, 0);
    return f;
}

size_t ip_length(const std::vector<uint8_t>& frame)
{
    auto be16 = [&frame](size_t at) { return size_t(frame[at]) << 8 | frame[at + 1]; };
    size_t off = 12;
    while (off + 2 <= frame.size() && (be16(off) == 0x8100 || be16(off) == 0x88a8 || be16(off) == 0x9100))
        off += 4;
    if (off + 2 > frame.size())
        return 0;
    const size_t type = be16(off), l3 = off + 2;
    if (type == 0x0800 && l3 + 4 <= frame.size())
        return be16(l3 + 2);
    if (type == 0x86dd && l3 + 6 <= frame.size())
        return 40 + be16(l3 + 4);
    return 0;
}

} // namespace flowcop::test
