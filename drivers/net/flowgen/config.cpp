// SPDX-License-Identifier: BSD-3-Clause
// parse_config(): the rte_eth_null.c anatomy. One handler per key, a key table that is also the
// "valid:" list of the unknown-key error, rte_kvargs_parse + rte_kvargs_process, one cleanup exit.
#include <flowgen/config.h>

#include <cstring>
#include <iterator>
#include <string>

#include <rte_kvargs.h>

#include "number.h"

namespace flowcop::flowgen {
namespace {

using detail::parse_seconds_ms;
using detail::parse_uint;

struct Ctx {
    Config cfg;
    std::string error;
    std::string model_key; // a key of the traffic model that was given (refused beside replay=)
};

int fail(void* opaque, const char* key, const char* value, const char* expected)
{
    auto& ctx = *static_cast<Ctx*>(opaque);
    if (value == nullptr)
        ctx.error = std::string("flowgen: ") + key + ": no value (write " + key + "=...; expected " + expected + ")";
    else
        ctx.error = std::string("flowgen: ") + key + ": '" + value + "' is not " + expected;
    return -1;
}

Config& cfg_of(void* opaque)
{
    return static_cast<Ctx*>(opaque)->cfg;
}

// A handler for an integer key stored in a field of type T, range [lo, hi].
template <typename T, T Config::*Field, uint64_t Lo, uint64_t Hi>
int on_uint(const char* key, const char* value, void* opaque)
{
    uint64_t v = 0;
    if (!parse_uint(value, Lo, Hi, v)) {
        const std::string expected = "a number in " + std::to_string(Lo) + ".." + std::to_string(Hi);
        return fail(opaque, key, value, expected.c_str());
    }
    cfg_of(opaque).*Field = static_cast<T>(v);
    return 0;
}

int on_lifetime(const char* key, const char* value, void* opaque)
{
    if (!parse_seconds_ms(value, kMinLifetimeMs, kMaxLifetimeMs, cfg_of(opaque).lifetime_ms))
        return fail(opaque, key, value, "a number of seconds in 0.001..1000000 (at most 3 decimals)");
    return 0;
}

int on_duration(const char* key, const char* value, void* opaque)
{
    if (!parse_seconds_ms(value, 0, kMaxDurationMs, cfg_of(opaque).duration_ms))
        return fail(opaque, key, value, "a number of seconds in 0..1000000000 (at most 3 decimals; 0: unlimited)");
    return 0;
}

int on_lifetime_dist(const char* key, const char* value, void* opaque)
{
    if (value != nullptr && std::strcmp(value, "fixed") == 0)
        cfg_of(opaque).lifetime_dist = LifetimeDist::fixed;
    else if (value != nullptr && std::strcmp(value, "exp") == 0)
        cfg_of(opaque).lifetime_dist = LifetimeDist::exp;
    else
        return fail(opaque, key, value, "one of fixed, exp");
    return 0;
}

int on_wave(const char* key, const char* value, void* opaque)
{
    static constexpr const char* kExpected = "T:N (virtual second T in 0..1000000000, flows N in 1..10000000)";
    const char* colon = value != nullptr ? std::strchr(value, ':') : nullptr;
    if (colon == nullptr || colon - value > 20)
        return fail(opaque, key, value, kExpected);
    const std::string t(value, colon);
    Wave w;
    if (!parse_uint(t.c_str(), 0, kMaxWaveSecond, w.at_s) || !parse_uint(colon + 1, 1, kMaxFlows, w.flows))
        return fail(opaque, key, value, kExpected);
    cfg_of(opaque).wave = w;
    return 0;
}

int on_realtime(const char* key, const char* value, void* opaque)
{
    uint64_t v = 0;
    if (!parse_uint(value, 0, 1, v))
        return fail(opaque, key, value, "0 or 1");
    cfg_of(opaque).realtime = v == 1;
    return 0;
}

int on_overflow(const char* key, const char* value, void* opaque)
{
    if (value != nullptr && std::strcmp(value, "wait") == 0)
        cfg_of(opaque).overflow = Overflow::wait;
    else if (value != nullptr && std::strcmp(value, "drop") == 0)
        cfg_of(opaque).overflow = Overflow::drop;
    else
        return fail(opaque, key, value, "one of wait, drop");
    return 0;
}

int on_vlan(const char* key, const char* value, void* opaque)
{
    uint64_t v = 0;
    if (!parse_uint(value, 1, 4094, v))
        return fail(opaque, key, value, "a VLAN ID in 1..4094");
    cfg_of(opaque).vlan = static_cast<uint16_t>(v);
    return 0;
}

int on_replay(const char* key, const char* value, void* opaque)
{
    if (value == nullptr || *value == '\0')
        return fail(opaque, key, value, "the path of an Ethernet pcap file");
    cfg_of(opaque).replay = value;
    return 0;
}

struct Key {
    const char* name;
    arg_handler_t handler;
    bool model; // a key of the traffic model: meaningless when frames come from replay=
};

// Order is the order of help() and of the "valid:" list.
constexpr Key kKeys[] = {
    {"flows", on_uint<uint64_t, &Config::flows, 1, kMaxFlows>, true},
    {"new_flow_rate", on_uint<uint64_t, &Config::new_flow_rate, 1, kMaxNewFlowRate>, true},
    {"lifetime", on_lifetime, true},
    {"lifetime_dist", on_lifetime_dist, true},
    {"idle_pct", on_uint<uint32_t, &Config::idle_pct, 0, 100>, true},
    {"rst_pct", on_uint<uint32_t, &Config::rst_pct, 0, 100>, true},
    {"pkt_size", on_uint<uint32_t, &Config::pkt_size, kMinPktSize, kMaxPktSize>, true},
    {"ipv6_pct", on_uint<uint32_t, &Config::ipv6_pct, 0, 100>, true},
    {"pps", on_uint<uint64_t, &Config::pps, 1, kMaxPps>, true},
    {"wave", on_wave, true},
    {"packets", on_uint<uint64_t, &Config::packets, 0, UINT64_MAX>, true},
    {"duration", on_duration, true},
    {"seed", on_uint<uint64_t, &Config::seed, 0, UINT64_MAX>, true},
    {"start", on_uint<uint64_t, &Config::start_s, 0, kMaxStartS>, true},
    {"realtime", on_realtime, false},
    {"overflow", on_overflow, false},
    {"vlan", on_vlan, true},
    {"ring", on_uint<uint32_t, &Config::ring, kMinRing, kMaxRing>, false},
    {"burst", on_uint<uint32_t, &Config::burst, 1, kMaxBurst>, false},
    {"queues", on_uint<uint16_t, &Config::queues, 1, kMaxQueues>, false},
    {"replay", on_replay, false},
};

const Key* find_key(const char* name)
{
    for (const Key& k : kKeys)
        if (std::strcmp(k.name, name) == 0)
            return &k;
    return nullptr;
}

std::string valid_list()
{
    std::string s;
    for (const Key& k : kKeys)
        s += (s.empty() ? "" : ", ") + std::string(k.name);
    return s;
}

// Everything that can fail once the string is split; returns at the first error.
void apply(const rte_kvargs& kv, Ctx& ctx)
{
    for (unsigned i = 0; i < kv.count; ++i) {
        const char* name = kv.pairs[i].key;
        if (find_key(name) == nullptr) {
            ctx.error = "flowgen: unknown key '" + std::string(name) + "' (valid: " + valid_list() + ")";
            return;
        }
        if (rte_kvargs_count(&kv, name) > 1) {
            ctx.error = "flowgen: " + std::string(name) + ": given more than once";
            return;
        }
        if (find_key(name)->model && ctx.model_key.empty())
            ctx.model_key = name;
    }
    if (rte_kvargs_count(&kv, "replay") != 0 && !ctx.model_key.empty()) {
        ctx.error = "flowgen: " + ctx.model_key +
                    ": a key of the traffic model, which replay= replaces (with replay: queues, realtime, overflow, "
                    "ring, burst)";
        return;
    }
    for (const Key& k : kKeys)
        if (rte_kvargs_process(&kv, k.name, k.handler, &ctx) < 0)
            return;
    ctx.error = check_config(ctx.cfg);
}

} // namespace

std::string parse_config(const char* kvargs, Config& out)
{
    Ctx ctx;
    rte_kvargs* kv = nullptr;
    if (kvargs == nullptr || *kvargs == '\0')
        ctx.error = check_config(ctx.cfg);
    else if ((kv = rte_kvargs_parse(kvargs, nullptr)) == nullptr)
        ctx.error = "flowgen: cannot split '" + std::string(kvargs) + "' into key=value pairs (at most " +
                    std::to_string(RTE_KVARGS_MAX) + ", separated by ',')";
    else
        apply(*kv, ctx);

    rte_kvargs_free(kv);
    if (ctx.error.empty())
        out = ctx.cfg;
    return ctx.error;
}

} // namespace flowcop::flowgen
