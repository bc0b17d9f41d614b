// SPDX-License-Identifier: BSD-3-Clause
// Test harness for FlowTable: crafted frames through the real parser into a real
// table, on a virtual clock (no sleeping). Each Harness makes its own table.
#pragma once

#include <conntrack/flow_table.h>
#include <conntrack/table_inspector.h>
#include <packet/packet.h>

#include "frame_builder.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <rte_tcp.h>

namespace flowcop::test {

inline constexpr uint64_t kSec = 1'000'000'000ull;
inline constexpr uint64_t kStart = 1'700'000'000ull * kSec;

// DPDK's TCP flag bits (rte_tcp.h) under short names.
inline constexpr uint8_t kFin = RTE_TCP_FIN_FLAG, kSyn = RTE_TCP_SYN_FLAG, kRst = RTE_TCP_RST_FLAG,
                         kPsh = RTE_TCP_PSH_FLAG, kAck = RTE_TCP_ACK_FLAG;

struct Ep {
    const char* addr;
    uint16_t port;
};

// One TCP frame from a to b (IPv4 or IPv6 by the address text), optional VLAN.
inline std::vector<uint8_t> tcp_frame(Ep a, Ep b, uint8_t flags, size_t payload = 0, uint16_t vlan = 0,
                                      uint32_t seq = 1000, uint32_t ack = 0)
{
    FrameBuilder f;
    if (vlan)
        f.vlan(vlan);
    const bool v6 = std::string(a.addr).find(':') != std::string::npos;
    if (v6)
        f.ipv6({.src = ip6(a.addr), .dst = ip6(b.addr)});
    else
        f.ipv4({.src = ip4(a.addr), .dst = ip4(b.addr)});
    f.tcp({.sport = a.port, .dport = b.port, .seq = seq, .ack = ack, .flags = flags});
    if (payload)
        f.payload(payload);
    return f.build();
}

inline conntrack::TableConfig small_config(uint32_t capacity = 1024)
{
    static std::atomic<unsigned> seq{0};
    conntrack::TableConfig c;
    c.name = "test_flows_" + std::to_string(seq++);
    c.capacity = capacity;
    c.wheel.buckets = 4096;
    c.wheel.tick_ns = kSec;
    return c;
}

class Harness {
public:
    explicit Harness(const conntrack::TableConfig& cfg = small_config())
    {
        std::string err;
        table = conntrack::FlowTable::create(cfg, err);
        if (!table)
            throw std::runtime_error(err);
    }
    // Parses and feeds one frame at the current time, as arrived on port in_port; returns the parse verdict.
    packet::Verdict send(const std::vector<uint8_t>& frame)
    {
        packet::Packet p;
        packet::parse(frame.data(), uint32_t(frame.size()), p);
        p.in_port = in_port; // what parse_mbuf() takes from the mbuf
        const packet::Packet* pp = &p;
        table->process_burst(&pp, 1, now);
        return p.verdict;
    }
    // A segment numbered as a real stack numbers it (see next_seq()), so window tracking sees a
    // plausible conversation: the test writes only flags and payloads.
    void send(Ep a, Ep b, uint8_t flags, size_t payload = 0, uint16_t vlan = 0)
    {
        uint32_t& nxt = next_seq(a, b);
        const uint32_t ack = (flags & kAck) ? next_seq(b, a) : 0;
        send(tcp_frame(a, b, flags, payload, vlan, nxt, ack));
        nxt += uint32_t(payload) + ((flags & kSyn) ? 1u : 0u) + ((flags & kFin) ? 1u : 0u);
    }
    // The next sequence number a sends to b: an ISN from the endpoints, advanced by what a sent.
    uint32_t& next_seq(Ep a, Ep b)
    {
        const std::string k =
            std::string(a.addr) + ":" + std::to_string(a.port) + ">" + b.addr + ":" + std::to_string(b.port);
        auto it = _next_seq.find(k);
        if (it == _next_seq.end())
            it = _next_seq.emplace(k, 1000u + 7919u * a.port + 104729u * b.port).first;
        return it->second;
    }
    // a opens to b with a full handshake.
    void handshake(Ep a, Ep b)
    {
        send(a, b, kSyn);
        send(b, a, kSyn | kAck);
        send(a, b, kAck);
    }
    conntrack::CopResult cop(uint64_t fire_budget = 1'000'000, uint64_t visit_budget = 16'000'000)
    {
        return table->run_cop(now, fire_budget, visit_budget);
    }
    // Advances the clock one second at a time, running the cop at each second.
    void run_for(uint64_t seconds)
    {
        for (uint64_t i = 0; i < seconds; ++i) {
            now += kSec;
            cop();
        }
    }
    const conntrack::Counters& c() const { return table->counters(); }
    uint64_t expired(conntrack::Reason r) const { return c().flows_expired[static_cast<unsigned>(r)]; }
    bool has(Ep a, Ep b) const
    {
        packet::Packet p;
        const auto f = tcp_frame(a, b, kAck);
        packet::parse(f.data(), uint32_t(f.size()), p);
        return conntrack::TableInspector::find(*table, p.key) >= 0;
    }
    packet::FlowKey key(Ep a, Ep b, uint16_t vlan = 0) const
    {
        packet::Packet p;
        const auto f = tcp_frame(a, b, kAck, 0, vlan);
        packet::parse(f.data(), uint32_t(f.size()), p);
        return p.key;
    }
    // Flows really in the table, counted by walking it (not from the counters).
    size_t live_flows() const
    {
        std::vector<conntrack::FlowSnapshot> all(table->capacity() + 1);
        return table->snapshot(conntrack::SnapshotFilter{}, all.data(), all.size());
    }
    // The invariant every test ends with: created == expired + what is really in the table.
    bool accounting_holds() const { return c().flows_created == c().expired_total() + live_flows(); }

    std::unique_ptr<conntrack::FlowTable> table;
    uint64_t now = kStart;
    uint16_t in_port = 0; // the port send() says its frames arrived on

private:
    std::map<std::string, uint32_t> _next_seq;
};

// Every flow of t as a FlowImage (what --state-file writes), in slices as the service exports them.
inline std::vector<conntrack::FlowImage> export_all(const conntrack::FlowTable& t, conntrack::TimeBase base = {})
{
    std::vector<conntrack::FlowImage> out;
    conntrack::FlowImage slice[256];
    for (uint32_t start = 0; start != conntrack::kNoPosition;) {
        size_t n = 0;
        start = t.export_slice(start, 256, base, slice, n);
        out.insert(out.end(), slice, slice + n);
    }
    return out;
}

inline const Ep client{"10.0.0.1", 40000};
inline const Ep server{"10.0.0.2", 80};

} // namespace flowcop::test
