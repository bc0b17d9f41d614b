// SPDX-License-Identifier: BSD-3-Clause
// check_config(): the ranges of every field again (a Config built in code never went through the
// parser) plus the rules that involve two keys. Messages use the kvargs key names.
#include <flowgen/config.h>

#include <string>

namespace flowcop::flowgen {
namespace {

std::string out_of_range(const char* key, uint64_t v, uint64_t lo, uint64_t hi)
{
    return "flowgen: " + std::string(key) + ": " + std::to_string(v) + " is not in " + std::to_string(lo) + ".." +
           std::to_string(hi);
}

bool in(uint64_t v, uint64_t lo, uint64_t hi)
{
    return v >= lo && v <= hi;
}

} // namespace

std::string check_config(const Config& c)
{
    if (!in(c.flows, 1, kMaxFlows))
        return out_of_range("flows", c.flows, 1, kMaxFlows);
    if (c.new_flow_rate != 0 && !in(c.new_flow_rate, 1, kMaxNewFlowRate))
        return out_of_range("new_flow_rate", c.new_flow_rate, 1, kMaxNewFlowRate);
    if (!in(c.lifetime_ms, kMinLifetimeMs, kMaxLifetimeMs))
        return out_of_range("lifetime (ms)", c.lifetime_ms, kMinLifetimeMs, kMaxLifetimeMs);
    if (c.lifetime_dist != LifetimeDist::fixed && c.lifetime_dist != LifetimeDist::exp)
        return "flowgen: lifetime_dist: not one of fixed, exp";
    if (c.idle_pct > 100)
        return out_of_range("idle_pct", c.idle_pct, 0, 100);
    if (c.rst_pct > 100)
        return out_of_range("rst_pct", c.rst_pct, 0, 100);
    if (c.idle_pct + c.rst_pct > 100)
        return "flowgen: idle_pct + rst_pct is " + std::to_string(c.idle_pct + c.rst_pct) +
               ", more than 100 (the rest close by FIN)";
    if (!in(c.pkt_size, kMinPktSize, kMaxPktSize))
        return out_of_range("pkt_size", c.pkt_size, kMinPktSize, kMaxPktSize);
    if (c.ipv6_pct > 100)
        return out_of_range("ipv6_pct", c.ipv6_pct, 0, 100);
    if (!in(c.pps, 1, kMaxPps))
        return out_of_range("pps", c.pps, 1, kMaxPps);
    if (c.duration_ms > kMaxDurationMs)
        return out_of_range("duration (ms)", c.duration_ms, 0, kMaxDurationMs);
    if (c.start_s > kMaxStartS)
        return out_of_range("start", c.start_s, 0, kMaxStartS);
    if (c.overflow != Overflow::wait && c.overflow != Overflow::drop)
        return "flowgen: overflow: not one of wait, drop";
    if (c.overflow == Overflow::drop && !c.realtime)
        return "flowgen: overflow=drop needs realtime=1 (unpaced, the generator outruns any consumer and "
               "would drop most frames; without realtime the port back-pressures)";
    if (c.vlan && !in(*c.vlan, 1, 4094))
        return out_of_range("vlan", *c.vlan, 1, 4094);
    if (!in(c.ring, kMinRing, kMaxRing))
        return out_of_range("ring", c.ring, kMinRing, kMaxRing);
    if (!in(c.burst, 1, kMaxBurst))
        return out_of_range("burst", c.burst, 1, kMaxBurst);
    if (!in(c.queues, 1, kMaxQueues))
        return out_of_range("queues", c.queues, 1, kMaxQueues);
    if (c.burst > c.ring)
        return "flowgen: burst: " + std::to_string(c.burst) + " is larger than ring (" + std::to_string(c.ring) + ")";
    // A flow needs at least 9 segments (3 handshake, one data each way, up to 4 to close); 10 slots per
    // new flow leaves data turns for the flows already established.
    if (c.new_flow_rate != 0 && c.new_flow_rate * 10 > c.pps)
        return "flowgen: new_flow_rate: " + std::to_string(c.new_flow_rate) +
               " new flows per second need 10 slots each, more than pps=" + std::to_string(c.pps) + " (at most pps/10)";
    if (c.new_flow_rate == 0 && c.flows * 1000 * 10 > c.pps * c.lifetime_ms)
        return "flowgen: flows=" + std::to_string(c.flows) + " with lifetime=" + std::to_string(c.lifetime_ms) +
               " ms starts " + std::to_string(c.flows * 1000 / c.lifetime_ms) +
               " flows per second, which need 10 slots each, more than pps=" + std::to_string(c.pps) +
               ": raise pps or lifetime, or lower flows";
    if (c.wave) {
        const Wave& w = *c.wave;
        if (w.at_s > kMaxWaveSecond)
            return out_of_range("wave second", w.at_s, 0, kMaxWaveSecond);
        if (!in(w.flows, 1, c.flows))
            return "flowgen: wave: " + std::to_string(w.flows) + " flows is not in 1..flows (" +
                   std::to_string(c.flows) + ")";
        // Each wave flow needs one slot for its last segment, and handshakes and closes of other flows
        // take slots too; half a second's slots keeps the whole wave inside its second.
        if (w.flows > c.pps / 2)
            return "flowgen: wave: " + std::to_string(w.flows) +
                   " flows cannot all send their last segment within one second at pps=" + std::to_string(c.pps) +
                   " (at most pps/2 = " + std::to_string(c.pps / 2) + ")";
        if (c.duration_ms != 0 && w.at_s * 1000 >= c.duration_ms)
            return "flowgen: wave: second " + std::to_string(w.at_s) + " is not before duration (" +
                   std::to_string(c.duration_ms) + " ms)";
    }
    return {};
}

} // namespace flowcop::flowgen
