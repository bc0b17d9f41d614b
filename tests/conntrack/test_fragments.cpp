// SPDX-License-Identifier: BSD-3-Clause
// Fragmented datagrams through the attributor and the table as the worker runs them
// (app/service/dataplane/worker.cpp, track_fragmented): every order of a datagram's fragments, both address
// families, both directions, duplicates, a first fragment that never comes or starts no flow, and a
// flood of unmatched fragments. The flow's packets and bytes must be the datagram's frames'.
#include <catch2/catch.hpp>

#include <conntrack/flow_table.h>
#include <fragattr/fragment_attributor.h>
#include <packet/packet.h>

#include "frame_builder.h"
#include "harness.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

using namespace flowcop;
using namespace flowcop::test;
using Frame = std::vector<uint8_t>;

namespace {

// A table and an attributor, fed one burst at a time the way the worker feeds them.
struct Rig {
    explicit Rig(fragattr::Config fc = {}, conntrack::TableConfig tc = small_config())
        : h(tc), memory(static_cast<uint8_t*>(std::aligned_alloc(64, fragattr::FragmentAttributor::bytes_for(fc))))
    {
        fa = std::make_unique<fragattr::FragmentAttributor>(fc, memory.get());
    }
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    Harness h;
    std::unique_ptr<uint8_t, Free> memory;
    std::unique_ptr<fragattr::FragmentAttributor> fa;

    // Attribute, track, then count what the first fragments brought back on their flows.
    void burst(const std::vector<Frame>& frames)
    {
        std::vector<packet::Packet> pkts(frames.size());
        std::vector<const packet::Packet*> ptrs;
        std::vector<fragattr::Held> held;
        for (size_t i = 0; i < frames.size(); ++i) {
            packet::parse(frames[i].data(), uint32_t(frames[i].size()), pkts[i]);
            held.push_back(fa->attribute(pkts[i], h.now));
            ptrs.push_back(&pkts[i]);
        }
        h.table->process_burst(ptrs.data(), unsigned(ptrs.size()), h.now);
        for (size_t i = 0; i < frames.size(); ++i)
            if (held[i].packets != 0)
                h.table->count_held_fragments(pkts[i], held[i].packets, held[i].bytes);
    }
    void send(const Frame& f) { burst({f}); }

    const conntrack::Counters& c() const { return h.c(); }
    // Every later fragment ends in exactly one of these (or is still pending).
    uint64_t later_accounted() const
    {
        return c().fragments_tracked + c().fragments_late + c().fragments_no_flow + fa->counters().unattributed +
               fa->counters().pending;
    }
    std::vector<conntrack::FlowSnapshot> flows() const
    {
        std::vector<conntrack::FlowSnapshot> all(h.table->capacity() + 1);
        all.resize(h.table->snapshot({}, all.data(), all.size()));
        return all;
    }
};

struct Peers {
    bool v6 = false;
    bool reply = false; // from the server (port 53) back to the client
};

// One UDP datagram of 8 + 16 * parts bytes sent as `parts` frames: the first carries the UDP header
// and 16 bytes, each later one 16 bytes (offsets 24, 40, ... bytes).
std::vector<Frame> datagram(Peers peers, uint32_t id, unsigned parts)
{
    const char* client = peers.v6 ? "2001:db8::1" : "10.0.0.1";
    const char* server = peers.v6 ? "2001:db8::2" : "10.0.0.2";
    const char* src = peers.reply ? server : client;
    const char* dst = peers.reply ? client : server;
    const UdpSpec udp{.sport = uint16_t(peers.reply ? 53 : 5353),
                      .dport = uint16_t(peers.reply ? 5353 : 53),
                      .length = uint16_t(8 + 16 * parts)};
    std::vector<Frame> out;
    for (unsigned i = 0; i < parts; ++i) {
        const uint16_t offset = i == 0 ? 0 : uint16_t(3 + 2 * (i - 1)); // 8-byte units
        const bool more = i + 1 < parts;
        FrameBuilder f;
        if (peers.v6)
            f.ipv6({.src = ip6(src), .dst = ip6(dst)}).ipv6_frag(offset, more, id);
        else
            f.ipv4(
                {.src = ip4(src), .dst = ip4(dst), .id = uint16_t(id), .frag_offset = offset, .more_fragments = more});
        if (i == 0)
            f.udp(udp);
        else
            f.next_protocol(17);
        out.push_back(f.payload(16).build());
    }
    return out;
}

uint64_t bytes_of(const std::vector<Frame>& frames)
{
    uint64_t n = 0;
    for (const Frame& f : frames)
        n += test::ip_length(f); // IP bytes, as the table counts
    return n;
}

} // namespace

TEST_CASE("Every order of a datagram's fragments puts all its frames and bytes on its flow",
          "[conntrack][fragment][order]")
{
    const bool v6 = GENERATE(false, true);
    const bool reply = GENERATE(false, true);
    const bool one_burst = GENERATE(false, true);
    const std::vector<Frame> frames = datagram({.v6 = v6, .reply = reply}, 0x10000 + 77, 4);
    std::vector<unsigned> order(frames.size());
    std::iota(order.begin(), order.end(), 0u);
    unsigned orders = 0;
    do {
        CAPTURE(v6, reply, one_burst, order);
        Rig r;
        std::vector<Frame> sent;
        for (unsigned i : order)
            sent.push_back(frames[i]);
        if (one_burst) {
            r.burst(sent);
        } else {
            for (const Frame& f : sent) {
                r.send(f);
                r.h.now += 1'000'000; // 1 ms apart
            }
        }
        const auto flows = r.flows();
        REQUIRE(flows.size() == 1);
        // The flow's originator is the first fragment's sender (the datagram's, either way round).
        CHECK(flows[0].proto == conntrack::Proto::udp);
        CHECK(flows[0].packets[0] == 4);
        CHECK(flows[0].bytes[0] == bytes_of(frames));
        CHECK(flows[0].packets[1] == 0);
        // The later fragments before the first were held and credited, the others attributed at once.
        const auto first_at = unsigned(std::find(order.begin(), order.end(), 0u) - order.begin());
        CHECK(r.c().fragments_late == first_at);
        CHECK(r.c().fragments_tracked == 3 - first_at);
        CHECK(r.later_accounted() == 3);
        CHECK(r.fa->counters().pending == 0);
        CHECK(r.fa->counters().completed == 1);
        ++orders;
    } while (std::next_permutation(order.begin(), order.end()));
    CHECK(orders == 24);
}

TEST_CASE("A reply's fragments out of order count in the reply direction of the query's flow",
          "[conntrack][fragment][order]")
{
    const bool v6 = GENERATE(false, true);
    Rig r;
    // A whole query (not fragmented) opens the flow.
    FrameBuilder q;
    if (v6)
        q.ipv6({.src = ip6("2001:db8::1"), .dst = ip6("2001:db8::2")});
    else
        q.ipv4({.src = ip4("10.0.0.1"), .dst = ip4("10.0.0.2")});
    const Frame whole_query = q.udp({.sport = 5353, .dport = 53}).payload(20).build();
    r.send(whole_query);
    // The answer, fragmented, last fragment first, then the middle, then the first.
    const std::vector<Frame> answer = datagram({.v6 = v6, .reply = true}, 42, 3);
    r.send(answer[2]);
    r.send(answer[1]);
    CHECK(r.fa->counters().pending == 2);
    r.send(answer[0]);
    const auto flows = r.flows();
    REQUIRE(flows.size() == 1);
    CHECK(flows[0].packets[0] == 1);
    CHECK(flows[0].bytes[0] == test::ip_length(whole_query));
    CHECK(flows[0].packets[1] == 3);
    CHECK(flows[0].bytes[1] == bytes_of(answer));
    CHECK(std::string(conntrack::state_name(flows[0])) == "REPLIED");
    CHECK(r.c().fragments_late == 2);
}

TEST_CASE("Duplicate fragments count as the frames they are, before and after the datagram is complete",
          "[conntrack][fragment][duplicate]")
{
    const bool v6 = GENERATE(false, true);
    const auto d = datagram({.v6 = v6}, 9, 3);
    struct Case {
        const char* name;
        std::vector<unsigned> order;
    };
    for (const Case& k : {Case{"last twice, then the first, then the middle", {2, 2, 0, 1}},
                          Case{"in order, then the middle again", {0, 1, 2, 1}},
                          Case{"the middle, the first twice, the last", {1, 0, 0, 2}},
                          Case{"every fragment twice, reversed", {2, 1, 0, 2, 1, 0}}}) {
        CAPTURE(v6, k.name);
        Rig r;
        uint64_t bytes = 0;
        for (unsigned i : k.order) {
            r.send(d[i]);
            bytes += test::ip_length(d[i]);
        }
        const auto flows = r.flows();
        REQUIRE(flows.size() == 1);
        CHECK(flows[0].packets[0] == k.order.size());
        CHECK(flows[0].bytes[0] == bytes);
        CHECK(r.fa->counters().unattributed == 0);
        CHECK(r.fa->counters().pending == 0);
    }
}

TEST_CASE("Held fragments whose first never comes, or comes too late, count unattributed, never on a flow",
          "[conntrack][fragment][expiry]")
{
    const bool v6 = GENERATE(false, true);
    Rig r; // the default hold: 1 s
    const auto d = datagram({.v6 = v6}, 5, 3);
    r.send(d[1]);
    r.send(d[2]);
    CHECK(r.fa->counters().pending == 2);
    CHECK(r.flows().empty());
    // 1.5 s later the entry is over: the first starts a flow of its own frame only.
    r.h.now += 1'500'000'000;
    r.send(d[0]);
    CHECK(r.fa->counters().unattributed == 2);
    CHECK(r.fa->counters().pending == 0);
    const auto flows = r.flows();
    REQUIRE(flows.size() == 1);
    CHECK(flows[0].packets[0] == 1);
    CHECK(flows[0].bytes[0] == test::ip_length(d[0]));
    CHECK(r.c().fragments_late == 0);
    // A datagram whose first never comes: the sweep ends it.
    const auto lost = datagram({.v6 = v6}, 6, 2);
    r.send(lost[1]);
    CHECK(r.fa->counters().pending == 1);
    r.fa->expire(r.h.now + 2'000'000'000, r.fa->capacity());
    CHECK(r.fa->counters().pending == 0);
    CHECK(r.fa->counters().unattributed == 3);
    CHECK(r.later_accounted() == 3);
}

TEST_CASE("Held fragments of a first fragment that starts no flow count no_flow", "[conntrack][fragment]")
{
    Rig r;
    // An ICMP echo reply with no request starts no flow (netfilter's rule), fragmented, last part first.
    const Frame first =
        FrameBuilder().ipv4({.id = 3, .more_fragments = true}).icmp({.type = uint8_t(0), .id = 7}).payload(16).build();
    const Frame later = FrameBuilder().ipv4({.id = 3, .frag_offset = 3}).next_protocol(1).payload(16).build();
    r.send(later);
    r.send(first);
    CHECK(r.flows().empty());
    CHECK(r.c().fragments_no_flow == 1);
    CHECK(r.c().fragments_late == 0);
    CHECK(r.later_accounted() == 1);
}

TEST_CASE("A flood of unmatched fragments: fixed memory, every fragment accounted, resolved datagrams kept",
          "[conntrack][fragment][flood]")
{
    const fragattr::Config fc{.capacity = 256};
    const size_t bytes = fragattr::FragmentAttributor::bytes_for(fc);
    Rig r(fc);
    std::mt19937 rng(7);
    uint64_t later_sent = 0;
    // A real datagram in order and one out of order every 100 junk fragments.
    std::vector<std::vector<Frame>> real;
    for (unsigned i = 0; i < 50'000; ++i) {
        const uint32_t src = rng();
        const Frame junk = FrameBuilder()
                               .ipv4({.src = {172, uint8_t(src), uint8_t(src >> 8), uint8_t(src >> 16)},
                                      .id = uint16_t(rng()),
                                      .frag_offset = 3})
                               .next_protocol(17)
                               .payload(16)
                               .build();
        r.send(junk);
        ++later_sent;
        if (i % 100 == 0) {
            const auto d = datagram({}, 1000 + i / 100, 3);
            r.burst({d[0], d[1], d[2]});
            later_sent += 2;
        }
        if (i % 1000 == 0) {
            r.h.now += 10'000'000;
            r.fa->expire(r.h.now, 64);
        }
    }
    CHECK(fragattr::FragmentAttributor::bytes_for(fc) == bytes);
    CHECK(r.fa->counters().pending <= r.fa->capacity());
    CHECK(r.later_accounted() == later_sent);
    // Every real datagram, in order, was whole on its flow: the flood never took a resolved slot.
    const auto flows = r.flows();
    REQUIRE(flows.size() == 1); // every real datagram is the same UDP flow
    CHECK(flows[0].packets[0] == 3 * 500);
    CHECK(r.c().fragments_tracked == 2 * 500);
}
