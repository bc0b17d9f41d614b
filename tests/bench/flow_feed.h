// SPDX-License-Identifier: BSD-3-Clause
// Crafted TCP packets for driving a real FlowTable in the benchmarks: flow i's SYN is one template
// frame (FrameBuilder) with i's client address and port patched in, parsed by the real parser, so
// the table sees exactly what a port would hand it. 10^7 distinct flows: client 10.a.b.c port
// 1024 + i % 50000, server 172.16.0.1:80.
//
// Threading: a Feed is used by one thread. It allocates once, in its constructor.
#pragma once

#include <conntrack/flow_table.h>
#include <packet/packet.h>

#include <cstdint>
#include <functional>

namespace flowcop::bench {

class Feed {
public:
    Feed();
    // Parses flow i's SYN into out (verdict tcp).
    void syn(uint32_t i, packet::Packet& out) noexcept;
    // Sends the SYNs of flows first..first+count-1, in bursts of kMaxBurst, flow i at time_of(i).
    // Returns how many flows the table counted as created. Allocates nothing (the memory benchmark
    // measures the process RSS around it).
    uint64_t open(conntrack::FlowTable& table, uint32_t first, uint32_t count,
                  const std::function<uint64_t(uint32_t)>& time_of);

private:
    std::vector<uint8_t> _frame;
    size_t _src_off = 0; // IPv4 source address
    size_t _sport_off = 0;
    packet::Packet _pkt[conntrack::kMaxBurst];
};

} // namespace flowcop::bench
