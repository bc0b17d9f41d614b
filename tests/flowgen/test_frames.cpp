// SPDX-License-Identifier: BSD-3-Clause
// What each frame looks like on the wire: valid headers and checksums, sizes, MACs, VLAN tag.
#include <catch2/catch.hpp>

#include <array>
#include <set>

#include "run.h"

#ifdef FLOWGEN_HAVE_PACKET
#include <packet/packet.h>
#endif

using namespace flowcop::flowgen;
using namespace flowcop::flowgen::test;

namespace {

constexpr std::array<uint8_t, 6> kClientMac{0x02, 0x66, 0x67, 0x00, 0x00, 0x01};
constexpr std::array<uint8_t, 6> kServerMac{0x02, 0x66, 0x67, 0x00, 0x00, 0x02};

} // namespace

// The test's own parser verifies IPv4 header and TCP checksums, lengths and zero padding; when the
// project's parser (lib/packet) is built, every frame must also be a tracked `tcp` verdict there.
TEST_CASE("every frame is valid Ethernet/IP/TCP with correct lengths and checksums", "[flowgen][frames]")
{
    for (const char* kv : {"flows=100,pps=100000,lifetime=0.1,duration=1,ipv6_pct=50",
                           "flows=100,pps=100000,lifetime=0.1,duration=1,ipv6_pct=50,vlan=4094,pkt_size=9000",
                           "flows=100,pps=100000,lifetime=0.1,duration=1,ipv6_pct=100,pkt_size=64"}) {
        INFO(kv);
        uint64_t project_parser_rejects = 0;
        Core core(config(kv));
        std::vector<uint8_t> buf(core.max_frame_len());
        uint64_t ts = 0, frames = 0, bad = 0;
        std::string first_bad;
        for (uint32_t len; (len = core.next(buf.data(), ts)) != 0; ++frames) {
            const Frame f = parse_frame(buf.data(), len);
            if (!f.error.empty() && bad++ == 0)
                first_bad = f.error;
#ifdef FLOWGEN_HAVE_PACKET
            flowcop::packet::Packet pkt;
            project_parser_rejects += flowcop::packet::parse(buf.data(), len, pkt) != flowcop::packet::Verdict::tcp;
#endif
        }
        CHECK(frames == 100000);
        CHECK(bad == 0);
        CHECK(first_bad == "");
        CHECK(project_parser_rejects == 0);
    }
}

// pkt_size is the data frame size; control segments are minimal frames (padded to 60); IPv6 data
// frames keep at least one payload byte.
TEST_CASE("data frames are pkt_size bytes and control frames are minimal", "[flowgen][frames]")
{
    struct Case {
        const char* kv;
        uint32_t data_len, control_len;
    };
    for (const Case& c : {Case{"pkt_size=128", 128, 60}, Case{"pkt_size=1514", 1514, 60},
                          Case{"pkt_size=64,vlan=5", 64, 60}, Case{"pkt_size=200,ipv6_pct=100", 200, 74},
                          Case{"pkt_size=64,ipv6_pct=100", 75, 74}, Case{"pkt_size=64,ipv6_pct=100,vlan=5", 79, 78}}) {
        INFO(c.kv);
        const std::string kv = std::string("flows=50,lifetime=0.05,pps=100000,packets=20000,") + c.kv;
        std::set<uint32_t> data_lens, control_lens;
        run(config(kv.c_str()), 0, [&](const Frame& f, uint64_t, uint64_t, const Stats&) {
            (f.payload != 0 ? data_lens : control_lens).insert(f.len);
        });
        CHECK(data_lens == std::set<uint32_t>{c.data_len});
        CHECK(control_lens == std::set<uint32_t>{c.control_len});
    }
}

// A tracker or a capture tool may key on MACs: each direction has its own, consistently.
TEST_CASE("client and server frames carry distinct MACs per direction and the VLAN tag", "[flowgen][frames]")
{
    uint64_t wrong_mac = 0, wrong_vlan = 0, syns = 0, syn_acks = 0;
    run(config("flows=50,lifetime=0.05,pps=100000,packets=20000,vlan=77"), 0,
        [&](const Frame& f, uint64_t, uint64_t, const Stats&) {
            wrong_vlan += f.vlan != 77;
            if (f.flags == kSyn) {
                ++syns;
                wrong_mac += f.src_mac != kClientMac || f.dst_mac != kServerMac;
            } else if (f.flags == (kSyn | kAck)) {
                ++syn_acks;
                wrong_mac += f.src_mac != kServerMac || f.dst_mac != kClientMac;
            } else {
                wrong_mac += f.src_mac == f.dst_mac;
            }
        });
    CHECK(syns > 50);
    CHECK(syn_acks > 50);
    CHECK(wrong_mac == 0);
    CHECK(wrong_vlan == 0);
}

// Addresses come from a bijection: across thousands of flows no 4-tuple repeats (a repeat would show
// as "a segment after the flow closed" in the tracker, or as two flows merged).
TEST_CASE("no two flows share a 4-tuple", "[flowgen][frames]")
{
    const RunResult r = run(config("flows=1000,pps=1000000,lifetime=0.1,duration=2"), 0);
    CHECK(r.tracker.error_count() == 0);
    CHECK(r.tracker.flows().size() == r.stats.flows_started);
    CHECK(r.stats.flows_started > 15000);
}
