// SPDX-License-Identifier: BSD-3-Clause
#include "trace.h"

#include <cstring>

namespace flowcop::flowgen::test {
namespace {

uint16_t be16(const uint8_t* p)
{
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
uint32_t be32(const uint8_t* p)
{
    return static_cast<uint32_t>(be16(p)) << 16 | be16(p + 2);
}

uint32_t sum16(const uint8_t* p, uint32_t n)
{
    uint32_t s = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2)
        s += be16(p + i);
    if (n & 1)
        s += static_cast<uint32_t>(p[n - 1]) << 8;
    return s;
}

// True if a one's-complement sum that includes its checksum field verifies.
bool verifies(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return s == 0xffff;
}

} // namespace

Frame parse_frame(const uint8_t* p, uint32_t len)
{
    Frame f;
    f.len = len;
    auto fail = [&f](const char* why) {
        f.error = why;
        return f;
    };
    if (len < 60)
        return fail("frame shorter than the 60-byte Ethernet minimum");
    std::memcpy(f.dst_mac.data(), p, 6);
    std::memcpy(f.src_mac.data(), p + 6, 6);
    uint32_t off = 12;
    uint16_t type = be16(p + off);
    if (type == 0x8100) {
        f.vlan = be16(p + 14) & 0x0fff;
        off += 4;
        type = be16(p + off);
    }
    off += 2;
    const uint8_t* ip = p + off;
    const uint8_t* l4;
    uint32_t l4_len, pseudo;
    if (type == 0x0800) {
        if (ip[0] != 0x45)
            return fail("IPv4 version/IHL is not 4/5");
        const uint32_t total = be16(ip + 2);
        if (total < 20 || off + total > len)
            return fail("IPv4 total length does not fit the frame");
        if ((be16(ip + 6) & 0x3fff) != 0)
            return fail("IPv4 fragment");
        if (ip[9] != 6)
            return fail("IPv4 protocol is not TCP");
        if (!verifies(sum16(ip, 20)))
            return fail("IPv4 header checksum is wrong");
        std::memcpy(f.src.data(), ip + 12, 4);
        std::memcpy(f.dst.data(), ip + 16, 4);
        l4 = ip + 20;
        l4_len = total - 20;
        pseudo = sum16(ip + 12, 8) + 6 + l4_len;
    } else if (type == 0x86dd) {
        f.ipv6 = true;
        if ((ip[0] >> 4) != 6)
            return fail("IPv6 version is not 6");
        l4_len = be16(ip + 4);
        if (off + 40 + l4_len > len)
            return fail("IPv6 payload length does not fit the frame");
        if (ip[6] != 6)
            return fail("IPv6 next header is not TCP");
        std::memcpy(f.src.data(), ip + 8, 16);
        std::memcpy(f.dst.data(), ip + 24, 16);
        l4 = ip + 40;
        pseudo = sum16(ip + 8, 32) + 6 + l4_len;
    } else {
        return fail("ethertype is not IPv4 or IPv6");
    }
    if (l4_len < 20 || (l4[12] >> 4) < 5 || (l4[12] >> 4) * 4u > l4_len)
        return fail("TCP header does not fit or has a bad data offset");
    if (!verifies(pseudo + sum16(l4, l4_len)))
        return fail("TCP checksum is wrong");
    for (const uint8_t* q = l4 + l4_len; q < p + len; ++q)
        if (*q != 0)
            return fail("Ethernet padding is not zero");
    f.sport = be16(l4);
    f.dport = be16(l4 + 2);
    f.seq = be32(l4 + 4);
    f.ack = be32(l4 + 8);
    f.flags = l4[13];
    f.window = be16(l4 + 14);
    f.payload = l4_len - (l4[12] >> 4) * 4u;
    return f;
}

void Tracker::error(const std::string& what)
{
    if (_errors.size() < 20)
        _errors.push_back(what);
    ++_error_count;
}

uint64_t Tracker::count(Phase p) const
{
    uint64_t n = 0;
    for (const auto& [key, t] : _flows)
        n += t.phase == p;
    return n;
}

void Tracker::add(const Frame& f, uint64_t ts_us)
{
    const Key fwd{f.src, f.sport, f.dst, f.dport};
    bool from_client = true;
    auto it = _flows.find(fwd);
    if (it == _flows.end()) {
        it = _flows.find(Key{f.dst, f.dport, f.src, f.sport});
        from_client = false;
    }
    if (it == _flows.end()) {
        if (f.flags != kSyn || f.payload != 0)
            return error("a flow's first segment is not a bare SYN (flags " + std::to_string(f.flags) + ")");
        FlowTrace t;
        t.ipv6 = f.ipv6;
        t.client_next = f.seq + 1;
        t.first_us = t.last_us = ts_us;
        t.packets = 1;
        t.last_flags = f.flags;
        _flows.emplace(fwd, t);
        return;
    }
    FlowTrace& t = it->second;
    ++t.packets;
    t.last_us = ts_us;
    t.last_flags = f.flags;
    uint32_t& own = from_client ? t.client_next : t.server_next;
    const uint32_t other = from_client ? t.server_next : t.client_next;
    const bool by_closer = from_client == t.closer_is_client;
    auto expect = [this, &f](bool ok, const char* rule) {
        if (!ok)
            error(std::string(rule) + " (flags " + std::to_string(f.flags) + ", seq " + std::to_string(f.seq) +
                  ", ack " + std::to_string(f.ack) + ")");
        return ok;
    };
    if (t.ipv6 != f.ipv6)
        error("a flow changed IP version");
    switch (t.phase) {
    case Phase::syn_sent:
        expect(!from_client && f.flags == (kSyn | kAck) && f.ack == t.client_next,
               "second segment is the server's SYN-ACK acking ISN+1");
        t.server_next = f.seq + 1;
        t.phase = Phase::syn_received;
        break;
    case Phase::syn_received:
        expect(from_client && f.flags == kAck && f.seq == own && f.ack == other,
               "third segment is the client's ACK of the SYN-ACK");
        t.phase = Phase::established;
        break;
    case Phase::established:
        expect(f.seq == own, "seq is the sender's next byte");
        expect(f.ack == other, "ack is the other side's next byte");
        if (f.flags == (kPsh | kAck)) {
            expect(f.payload > 0, "a data segment carries payload");
            own += f.payload;
            (from_client ? t.data_c2s : t.data_s2c) += 1;
        } else if (f.flags == (kFin | kAck)) {
            expect(t.data_c2s > 0 && t.data_s2c > 0, "a flow closes only after data both ways");
            own += 1;
            t.closer_is_client = from_client;
            t.phase = Phase::fin_sent;
        } else if (expect(f.flags == (kRst | kAck), "established flags are PSH|ACK, FIN|ACK or RST|ACK")) {
            t.phase = Phase::closed_rst;
        }
        break;
    case Phase::fin_sent:
        expect(!by_closer && f.flags == kAck && f.seq == own && f.ack == other,
               "the FIN is answered by an ACK from the other side");
        t.phase = Phase::fin_acked;
        break;
    case Phase::fin_acked:
        expect(!by_closer && f.flags == (kFin | kAck) && f.seq == own && f.ack == other,
               "then the other side sends its FIN");
        own += 1;
        t.phase = Phase::fin2_sent;
        break;
    case Phase::fin2_sent:
        expect(by_closer && f.flags == kAck && f.seq == own && f.ack == other, "and the closer ACKs it");
        t.phase = Phase::closed_fin;
        break;
    case Phase::closed_fin:
    case Phase::closed_rst: error("a segment after the flow closed"); break;
    }
}

} // namespace flowcop::flowgen::test
