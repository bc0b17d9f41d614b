// SPDX-License-Identifier: BSD-3-Clause
// parse_config / check_config / help: every key, every kind of bad value, the cross-key rules.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include <flowgen/config.h>
#include <flowgen/core.h>

using namespace flowcop::flowgen;

namespace {

const char* const all_keys[] = {"flows",    "new_flow_rate", "lifetime", "lifetime_dist", "idle_pct", "rst_pct",
                                "pkt_size", "ipv6_pct",      "pps",      "wave",          "packets",  "duration",
                                "seed",     "start",         "realtime", "overflow",      "vlan",     "ring",
                                "burst",    "queues",        "replay"};

std::string parse_error(const char* kv)
{
    Config c;
    return parse_config(kv, c);
}

bool contains(const std::string& s, const std::string& part)
{
    return s.find(part) != std::string::npos;
}

} // namespace

// The defaults are the brief's numbers; an empty string must give exactly them, not zeros.
TEST_CASE("an empty or null string yields the documented defaults", "[flowgen][config]")
{
    for (const char* kv : {static_cast<const char*>(nullptr), ""}) {
        Config c;
        c.flows = 7;
        REQUIRE(parse_config(kv, c) == "");
        CHECK(c.flows == 1000);
        CHECK(c.new_flow_rate == 0);
        CHECK(c.lifetime_ms == 10000);
        CHECK(c.lifetime_dist == LifetimeDist::exp);
        CHECK(c.idle_pct == 10);
        CHECK(c.rst_pct == 10);
        CHECK(c.pkt_size == 128);
        CHECK(c.ipv6_pct == 0);
        CHECK(c.pps == 1000000);
        CHECK_FALSE(c.wave.has_value());
        CHECK(c.packets == 0);
        CHECK(c.duration_ms == 0);
        CHECK(c.seed == 1);
        CHECK(c.start_s == 1700000000);
        CHECK_FALSE(c.realtime);
        CHECK(c.overflow == Overflow::wait);
        CHECK_FALSE(c.vlan.has_value());
        CHECK(c.ring == 4096);
        CHECK(c.burst == 32);
    }
}

// One string setting every key: each handler must store into its own field.
TEST_CASE("every key sets its own field", "[flowgen][config]")
{
    Config c;
    REQUIRE(parse_config("flows=5000,new_flow_rate=200,lifetime=2.5,lifetime_dist=fixed,idle_pct=20,"
                         "rst_pct=30,pkt_size=1500,ipv6_pct=40,pps=2000000,wave=7:100,packets=123456,"
                         "duration=60.125,seed=99,start=1600000000,realtime=1,overflow=drop,vlan=42,ring=8192,burst=64",
                         c) == "");
    CHECK(c.flows == 5000);
    CHECK(c.new_flow_rate == 200);
    CHECK(c.lifetime_ms == 2500);
    CHECK(c.lifetime_dist == LifetimeDist::fixed);
    CHECK(c.idle_pct == 20);
    CHECK(c.rst_pct == 30);
    CHECK(c.pkt_size == 1500);
    CHECK(c.ipv6_pct == 40);
    CHECK(c.pps == 2000000);
    REQUIRE(c.wave.has_value());
    CHECK(c.wave->at_s == 7);
    CHECK(c.wave->flows == 100);
    CHECK(c.packets == 123456);
    CHECK(c.duration_ms == 60125);
    CHECK(c.seed == 99);
    CHECK(c.start_s == 1600000000);
    CHECK(c.realtime);
    CHECK(c.overflow == Overflow::drop);
    REQUIRE(c.vlan.has_value());
    CHECK(*c.vlan == 42);
    CHECK(c.ring == 8192);
    CHECK(c.burst == 64);
}

// The brief's exact sentence for a non-number, and the same shape for every integer key.
TEST_CASE("a non-number names the key, the value and the accepted range", "[flowgen][config]")
{
    CHECK(parse_error("pps=abc") == "flowgen: pps: 'abc' is not a number in 1..1000000000");
    CHECK(parse_error("flows=0") == "flowgen: flows: '0' is not a number in 1..10000000");
    CHECK(parse_error("flows=10000001") == "flowgen: flows: '10000001' is not a number in 1..10000000");
    CHECK(parse_error("seed=18446744073709551616") ==
          "flowgen: seed: '18446744073709551616' is not a number in 0..18446744073709551615");
}

// Each bad value of each key is refused with its key named; strict syntax rejects what strtoul
// would half-read ("1e6", "-1", " 5", "5k").
TEST_CASE("every key rejects each kind of bad value", "[flowgen][config]")
{
    struct Bad {
        const char* kv;
        const char* key;
    };
    const Bad bad[] = {
        {"flows=", "flows"},
        {"flows=-1", "flows"},
        {"flows=1e6", "flows"},
        {"flows= 5", "flows"},
        {"flows=5k", "flows"},
        {"flows=20000000", "flows"},
        {"new_flow_rate=0", "new_flow_rate"},
        {"new_flow_rate=x", "new_flow_rate"},
        {"new_flow_rate=100000001", "new_flow_rate"},
        {"lifetime=0", "lifetime"},
        {"lifetime=0.0005", "lifetime"},
        {"lifetime=1000001", "lifetime"},
        {"lifetime=.5", "lifetime"},
        {"lifetime=5.", "lifetime"},
        {"lifetime=1.2.3", "lifetime"},
        {"lifetime=abc", "lifetime"},
        {"lifetime_dist=normal", "lifetime_dist"},
        {"lifetime_dist=", "lifetime_dist"},
        {"idle_pct=101", "idle_pct"},
        {"idle_pct=x", "idle_pct"},
        {"rst_pct=101", "rst_pct"},
        {"rst_pct=-5", "rst_pct"},
        {"pkt_size=63", "pkt_size"},
        {"pkt_size=9001", "pkt_size"},
        {"pkt_size=big", "pkt_size"},
        {"ipv6_pct=101", "ipv6_pct"},
        {"pps=0", "pps"},
        {"pps=1000000001", "pps"},
        {"wave=5", "wave"},
        {"wave=:5", "wave"},
        {"wave=5:", "wave"},
        {"wave=5:0", "wave"},
        {"wave=a:b", "wave"},
        {"wave=1000000001:5", "wave"},
        {"packets=-1", "packets"},
        {"packets=many", "packets"},
        {"duration=x", "duration"},
        {"duration=1000000001", "duration"},
        {"duration=1.0001", "duration"},
        {"seed=0x10", "seed"},
        {"start=4102444801", "start"},
        {"start=now", "start"},
        {"realtime=2", "realtime"},
        {"realtime=yes", "realtime"},
        {"overflow=lose", "overflow"},
        {"overflow=", "overflow"},
        {"overflow=1", "overflow"},
        {"vlan=0", "vlan"},
        {"vlan=4095", "vlan"},
        {"vlan=x", "vlan"},
        {"ring=63", "ring"},
        {"ring=1048577", "ring"},
        {"burst=0", "burst"},
        {"burst=1025", "burst"},
    };
    for (const Bad& b : bad) {
        INFO(b.kv);
        const std::string err = parse_error(b.kv);
        CHECK(err.rfind(std::string("flowgen: ") + b.key + ": ", 0) == 0);
        const char* value = std::strchr(b.kv, '=') + 1;
        CHECK(contains(err, std::string("'") + value + "'"));
    }
}

// rte_kvargs hands a key without '=' a null value; that is a missing value, not a crash.
TEST_CASE("a key without a value is reported as such", "[flowgen][config]")
{
    CHECK(parse_error("flows") == "flowgen: flows: no value (write flows=...; expected a number in 1..10000000)");
    CHECK(contains(parse_error("pps=5,wave"), "flowgen: wave: no value"));
}

// A typo must not be silently ignored, and the message must list what is valid.
TEST_CASE("an unknown key is named with the list of valid keys", "[flowgen][config]")
{
    const std::string err = parse_error("flow=10");
    CHECK(err.rfind("flowgen: unknown key 'flow' (valid: flows, new_flow_rate, ", 0) == 0);
    for (const char* k : all_keys)
        CHECK(contains(err, k));
    CHECK(contains(parse_error("=3"), "unknown key ''"));
}

TEST_CASE("a key given twice is an error, not last-one-wins", "[flowgen][config]")
{
    CHECK(parse_error("flows=10,pps=1000000,flows=20") == "flowgen: flows: given more than once");
}

// The contract: on any error the caller's Config is untouched, so a failed reload keeps the old one.
TEST_CASE("on error the output Config is left unchanged", "[flowgen][config]")
{
    Config c;
    c.flows = 77;
    c.pps = 555;
    REQUIRE(parse_config("flows=10,pps=bad", c) != "");
    CHECK(c.flows == 77);
    CHECK(c.pps == 555);
}

TEST_CASE("more pairs than rte_kvargs holds is a clear error", "[flowgen][config]")
{
    std::string kv;
    for (int i = 0; i < 40; ++i)
        kv += (i ? "," : "") + std::string("flows=1");
    CHECK(contains(parse_error(kv.c_str()), "cannot split"));
}

// Rules that involve two keys, each with its own sentence.
TEST_CASE("cross-key rules are checked after every key parsed", "[flowgen][config]")
{
    CHECK(parse_error("idle_pct=60,rst_pct=50") ==
          "flowgen: idle_pct + rst_pct is 110, more than 100 (the rest close by FIN)");
    CHECK(parse_error("idle_pct=50,rst_pct=50") == "");
    CHECK(parse_error("ring=64,burst=65") == "flowgen: burst: 65 is larger than ring (64)");
    CHECK(contains(parse_error("flows=100,wave=3:101"), "flowgen: wave: 101 flows is not in 1..flows (100)"));
    CHECK(contains(parse_error("flows=10000,pps=10000,lifetime=100,wave=3:5001"), "at most pps/2 = 5000"));
    CHECK(contains(parse_error("wave=30:10,duration=30"), "flowgen: wave: second 30 is not before duration"));
    CHECK(parse_error("wave=29:10,duration=30") == "");
    CHECK(contains(parse_error("new_flow_rate=100001"), "flowgen: new_flow_rate: 100001 new flows per second"));
    CHECK(parse_error("new_flow_rate=100000") == "");
    // 10^7 flows over 10 s start 10^6 flows/s: 10^7 slots/s, more than the default pps.
    CHECK(contains(parse_error("flows=10000000"), "raise pps or lifetime, or lower flows"));
    CHECK(parse_error("flows=10000000,lifetime=100") == "");
    // Unpaced, the generator outruns any consumer: drop is only a NIC's behaviour at a wall-clock rate.
    CHECK(contains(parse_error("overflow=drop"), "flowgen: overflow=drop needs realtime=1"));
    CHECK(contains(parse_error("overflow=drop,realtime=0"), "flowgen: overflow=drop needs realtime=1"));
    CHECK(parse_error("overflow=drop,realtime=1") == "");
    CHECK(parse_error("overflow=wait") == "");
}

// A Config built in code gets the same range checks, and Core refuses it rather than misbehaving.
TEST_CASE("check_config rejects out-of-range fields set in code and Core then generates nothing", "[flowgen][config]")
{
    Config c;
    CHECK(check_config(c) == "");
    c.pkt_size = 20;
    CHECK(check_config(c) == "flowgen: pkt_size: 20 is not in 64..9000");
    Core core(c);
    CHECK(core.error() == check_config(c));
    uint8_t buf[9100];
    uint64_t ts = 0;
    CHECK(core.next(buf, ts) == 0);
    CHECK(core.stats().finished);
    CHECK(core.stats().packets == 0);

    Config v;
    v.vlan = 4095;
    CHECK(check_config(v) == "flowgen: vlan: 4095 is not in 1..4094");
    Config f;
    f.flows = 0;
    CHECK(check_config(f) == "flowgen: flows: 0 is not in 1..10000000");
    Config o;
    o.overflow = Overflow::drop;
    CHECK(contains(check_config(o), "overflow=drop needs realtime=1"));
    o.realtime = true;
    CHECK(check_config(o) == "");
}

// help() is the single documentation string: every key the parser accepts appears in it with '='.
TEST_CASE("help documents every key", "[flowgen][config]")
{
    const std::string h = help();
    for (const char* k : all_keys) {
        INFO(k);
        CHECK(contains(h, std::string("  ") + k + "="));
    }
    CHECK(contains(h, "default 1000;"));
}

// queues=N and replay=FILE (the ring-backed port a NIC's RSS fills, and its capture source).
TEST_CASE("queues and replay: ranges, and replay refuses the traffic model's keys beside it", "[flowgen][config]")
{
    Config c;
    CHECK(parse_config("queues=4,replay=/tmp/x.pcap,ring=64,burst=8", c) == "");
    CHECK(c.queues == 4);
    CHECK(c.replay == "/tmp/x.pcap");
    CHECK(parse_error("queues=0") == "flowgen: queues: '0' is not a number in 1..64");
    CHECK(parse_error("queues=65") == "flowgen: queues: '65' is not a number in 1..64");
    CHECK(parse_error("replay=").find("flowgen: replay:") == 0);
    const std::string e = parse_error("replay=/tmp/x.pcap,flows=10");
    CHECK(e.find("flowgen: flows: a key of the traffic model, which replay= replaces") == 0);
    CHECK(parse_error("replay=/tmp/x.pcap,realtime=1,overflow=drop") == "");
    Config bad;
    bad.queues = 0;
    CHECK(check_config(bad).find("queues") != std::string::npos);
}
