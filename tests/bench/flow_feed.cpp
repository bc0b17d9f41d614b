// SPDX-License-Identifier: BSD-3-Clause
#include "flow_feed.h"

#include "frame_builder.h"

#include <stdexcept>

namespace flowcop::bench {

namespace {
constexpr uint32_t kPorts = 50000;
}

Feed::Feed()
{
    test::FrameBuilder b;
    b.ipv4({.src = test::ip4("10.0.0.0"), .dst = test::ip4("172.16.0.1")});
    b.tcp({.sport = 1024, .dport = 80, .flags = packet::kTcpSyn});
    _src_off = b.l3_offset() + 12;
    _sport_off = b.l4_offset();
    _frame = b.build();
    syn(0, _pkt[0]);
    if (_pkt[0].verdict != packet::Verdict::tcp)
        throw std::logic_error("bench feed: the template SYN does not parse as TCP");
}

void Feed::syn(uint32_t i, packet::Packet& out) noexcept
{
    const uint32_t host = i / kPorts + 1; // 10.0.0.1 upwards
    const uint16_t port = uint16_t(1024 + i % kPorts);
    _frame[_src_off + 1] = uint8_t(host >> 16);
    _frame[_src_off + 2] = uint8_t(host >> 8);
    _frame[_src_off + 3] = uint8_t(host);
    _frame[_sport_off] = uint8_t(port >> 8);
    _frame[_sport_off + 1] = uint8_t(port);
    packet::parse(_frame.data(), uint32_t(_frame.size()), out);
}

uint64_t Feed::open(conntrack::FlowTable& table, uint32_t first, uint32_t count,
                    const std::function<uint64_t(uint32_t)>& time_of)
{
    const uint64_t before = table.counters().flows_created;
    const packet::Packet* ptrs[conntrack::kMaxBurst];
    uint64_t times[conntrack::kMaxBurst];
    uint32_t k = 0;
    while (k < count) {
        unsigned n = 0;
        for (; n < conntrack::kMaxBurst && k < count; ++n, ++k) {
            syn(first + k, _pkt[n]);
            ptrs[n] = &_pkt[n];
            times[n] = time_of(first + k);
        }
        table.process_burst(ptrs, n, times);
    }
    return table.counters().flows_created - before;
}

} // namespace flowcop::bench
