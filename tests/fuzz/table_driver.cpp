// SPDX-License-Identifier: BSD-3-Clause
// run_table(): one script (table_script.h) through a FlowTable's pipelined packet path and its cop,
// checked against TableModel after every drain (see table_driver.h).
#include "table_driver.h"

#include "table_model.h"
#include "table_script.h"

#include <conntrack/flow_hash.h>
#include <conntrack/flow_index.h>
#include <conntrack/table_inspector.h>

#include <cstring>
#include <map>
#include <memory>
#include <utility>

namespace flowcop::fuzz {

namespace {

constexpr uint32_t kCapacities[4] = {16, 64, 256, 1024};
constexpr unsigned kCollidingKeys = 200; // more than one probe window (kMaxProbe x 10 slots) holds

packet::FlowKey make_key(uint32_t n)
{
    packet::FlowKey k{};
    k.addr_lo[10] = k.addr_lo[11] = 0xff;
    k.addr_hi[10] = k.addr_hi[11] = 0xff;
    k.addr_lo[12] = 10;
    k.addr_lo[13] = uint8_t(n >> 24);
    k.addr_lo[14] = uint8_t(n >> 16);
    k.addr_lo[15] = uint8_t(n >> 8);
    k.addr_hi[12] = 172;
    k.addr_hi[13] = 16;
    k.addr_hi[15] = 1;
    k.port_lo = uint16_t(1024 + (n & 0xff));
    k.port_hi = 80;
    k.proto = 6;
    return k;
}

std::vector<packet::FlowKey> build_keys(const TableSetup& setup)
{
    // The home bucket as FlowIndex::probe() computes it for this capacity.
    const uint32_t n_buckets = conntrack::FlowIndex::buckets_for(setup.capacity);
    auto home = [&](const packet::FlowKey& k) {
        return uint32_t((uint64_t(conntrack::flow_hash(k)) * n_buckets) >> 32);
    };
    std::vector<packet::FlowKey> keys;
    uint32_t n = 0;
    switch (setup.key_mode) {
    case 0: // a crowd in bucket 0, then random keys
        while (keys.size() < kCollidingKeys)
            if (const packet::FlowKey k = make_key(n++); home(k) == 0)
                keys.push_back(k);
        while (keys.size() < kKeys)
            if (const packet::FlowKey k = make_key(n++); home(k) != 0)
                keys.push_back(k);
        break;
    case 1: // everything in buckets 0 and 1
        while (keys.size() < kKeys)
            if (const packet::FlowKey k = make_key(n++); home(k) <= 1)
                keys.push_back(k);
        break;
    case 2:
        while (keys.size() < kKeys)
            keys.push_back(make_key(n++));
        break;
    default: // twins: each tuple in zone 0, zone 1, zone 0x100 and (zone 0) VLAN 1, the same tuple four flows
        while (keys.size() < kKeys) {
            packet::FlowKey k = make_key(n++);
            keys.push_back(k);
            k.zone = 1;
            keys.push_back(k);
            k.zone = 0x100;
            keys.push_back(k);
            k.zone = 0;
            k.vlan[1] = 0x10; // outer VLAN ID 1 (flow_key.h: outer << 12 | inner)
            keys.push_back(k);
        }
        break;
    }
    return keys;
}

packet::Packet make_packet(const packet::FlowKey& key, unsigned kind, bool from_hi)
{
    packet::Packet p;
    std::memset(&p, 0, sizeof p);
    p.key = key;
    p.tcp_flags = packet_flags(kind);
    p.ip_len = 46 + kind;
    p.src_is_lo = !from_hi;
    p.ip_version = 4;
    p.l4_proto = 6;
    p.verdict = packet::Verdict::tcp;
    return p;
}

} // namespace

TableSetup TableSetup::from_byte(uint8_t b) noexcept
{
    TableSetup s;
    s.capacity = kCapacities[b & 3];
    s.loose_pickup = (b & 4) != 0;
    s.key_mode = (b >> 3) & 3;
    s.active = (b & 0x20) != 0;
    return s;
}

tcpstate::Timeouts table_timeouts() noexcept
{
    // none, syn_sent, syn_recv, established, fin_wait, close_wait, last_ack, time_wait, close, syn_sent2
    return tcpstate::Timeouts{{0, 3, 2, 5, 3, 2, 2, 2, 1, 3}, 4};
}

conntrack::TableConfig TableSetup::table_config() const
{
    conntrack::TableConfig c;
    c.name = "fuzz_table";
    c.capacity = capacity;
    c.wheel.buckets = 16;
    c.wheel.tick_ns = kTableSecNs;
    c.timeouts = table_timeouts();
    c.active_timeout_s = active ? kTableActiveTimeoutS : 0;
    c.loose_pickup = loose_pickup;
    return c;
}

const std::vector<packet::FlowKey>& key_space(const TableSetup& setup)
{
    static std::map<std::pair<uint32_t, unsigned>, std::vector<packet::FlowKey>> cache;
    const auto id = std::make_pair(setup.capacity, setup.key_mode);
    auto it = cache.find(id);
    if (it == cache.end())
        it = cache.emplace(id, build_keys(setup)).first;
    return it->second;
}

uint8_t packet_flags(unsigned kind) noexcept
{
    static constexpr uint8_t kFlags[8] = {
        packet::kTcpSyn,
        packet::kTcpSyn | packet::kTcpAck,
        packet::kTcpAck,
        packet::kTcpPsh | packet::kTcpAck,
        packet::kTcpFin | packet::kTcpAck,
        packet::kTcpRst,
        packet::kTcpRst | packet::kTcpAck,
        packet::kTcpSyn | packet::kTcpFin, // invalid: never creates, ignored by every state
    };
    return kFlags[kind & 7];
}

std::string run_table(const uint8_t* data, size_t size, TableRunStats* stats)
{
    if (size == 0)
        return {};
    const TableSetup setup = TableSetup::from_byte(data[0]);
    const std::vector<packet::FlowKey>& keys = key_space(setup);
    std::string error;
    std::unique_ptr<conntrack::FlowTable> table = conntrack::FlowTable::create(setup.table_config(), error);
    if (!table)
        return "cannot create the flow table: " + error;
    TableModel model(setup.table_config(), keys);

    // Packets live until the pipeline has tracked them: one slot per burst in flight, as the worker does.
    packet::Packet ring[conntrack::kPipelineDepth][conntrack::kMaxBurst];
    unsigned slot = 0, n = 0;
    const packet::Packet* ptrs[conntrack::kMaxBurst];
    uint64_t times[conntrack::kMaxBurst];
    uint64_t now = kTableStartNs;

    auto submit = [&] {
        if (n == 0)
            return;
        for (unsigned i = 0; i < n; ++i)
            ptrs[i] = &ring[slot][i];
        conntrack::TableInspector::submit(*table, ptrs, n, times);
        slot = (slot + 1) % conntrack::kPipelineDepth;
        n = 0;
    };
    auto drain_check = [&]() -> std::string {
        submit();
        conntrack::TableInspector::drain(*table);
        return model.check(*table);
    };
    auto next_second = [&](unsigned extra) { return (now / kTableSecNs + 1 + extra) * kTableSecNs; };

    size_t i = 1;
    auto arg = [&]() -> uint8_t { return i < size ? data[i++] : 0; };
    while (i < size) {
        const uint8_t c = data[i++];
        std::string broken;
        if (c < 0x80) {
            const unsigned k = arg() % kKeys;
            now += ((c >> 4) & 7) * 50'000'000ull;
            ring[slot][n] = make_packet(keys[k], c & 7, (c & 8) != 0);
            times[n] = now;
            model.packet(k, ring[slot][n], now);
            if (++n == conntrack::kMaxBurst)
                submit();
            if (stats)
                ++stats->packets;
        } else if (c < 0x90) {
            submit();
        } else if (c < 0xa0) {
            broken = drain_check();
        } else if (c < 0xd0) {
            const bool budgeted = c >= 0xc0;
            if (!(broken = drain_check()).empty())
                return "before a cop pass: " + broken;
            now = next_second(budgeted ? 0 : c & 0x1f);
            if (budgeted) {
                const conntrack::CopResult r = table->run_cop(now, 1 + (c & 3), 1 + ((c >> 2) & 3) * 4);
                broken = model.check_partial_cop(*table, now);
                if (stats && r.wheel.budget_exhausted)
                    ++stats->budget_stops;
            } else {
                const conntrack::CopResult r = table->run_cop(now, UINT64_MAX, UINT64_MAX);
                model.cop(now);
                broken = model.check(*table);
                if (stats)
                    stats->fired += r.wheel.fired;
            }
        } else if (c < 0xe0) {
            const unsigned k = arg() % kKeys;
            if (!(broken = drain_check()).empty())
                return "before a kill: " + broken;
            const bool found = table->kill(keys[k]);
            if (found != model.kill(k))
                return "kill(key " + std::to_string(k) + ") found " + (found ? "a flow" : "none") + ", the model not";
        } else if (c < 0xe8) {
            if (!(broken = drain_check()).empty())
                return "before destroy_all: " + broken;
            table->destroy_all(now, conntrack::Reason::shutdown);
            model.destroy_all(now);
            broken = model.check(*table);
        } else {
            submit();
        }
        if (!broken.empty())
            return "op " + std::to_string(i) + ": " + broken;
    }
    if (std::string broken = drain_check(); !broken.empty())
        return "at the end: " + broken;
    if (stats) {
        const conntrack::Counters& c = table->counters();
        stats->created = c.flows_created;
        stats->evicted = c.flows_expired[static_cast<unsigned>(conntrack::Reason::evicted)];
        stats->probe_window_full = c.probe_window_full;
        stats->refused = c.tcp_table_full;
    }
    now = next_second(3600);
    table->run_cop(now, UINT64_MAX, UINT64_MAX);
    model.cop(now);
    if (std::string broken = model.check(*table); !broken.empty())
        return "after the final pass: " + broken;
    if (table->active() != 0)
        return std::to_string(table->active()) + " flows left after a pass past every deadline";
    return {};
}

} // namespace flowcop::fuzz
