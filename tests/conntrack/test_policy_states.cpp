// SPDX-License-Identifier: BSD-3-Clause
// The connection-state policy inside the flow table (ct_judge.h, issue 31): every packet's conntrack
// state as netfilter means it, and the no-trace rules under enforcement: a dropped `new` packet creates
// no flow and no event, a dropped `invalid` one changes nothing of its flow. No EAL: the table on the heap.
#include "harness.h"

#include <conntrack/ct_judge.h>
#include <policy/parse.h>

#include <catch2/catch.hpp>

#include <string>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::CtState;
using conntrack::Judge;
using packet::Verdict;

namespace {

policy::Policy compile(const std::string& text)
{
    const policy::ParseResult r = policy::parse(text, "test.nft");
    REQUIRE(r.ok);
    policy::Policy p;
    REQUIRE(policy::Policy::compile(r.ruleset, "test.nft", nullptr, p).ok);
    return p;
}

// The table with a judge, as a worker runs it: each frame parsed, judged and tracked in a burst of one.
struct Judged {
    Judged(const std::string& policy_text, bool enforce, const conntrack::TableConfig& cfg = small_config())
        : h(cfg), policy(compile(policy_text)), counters(policy)
    {
        judge.set_policy(&policy, &counters);
        judge.set_enforce(enforce);
        h.table->set_judge(&judge);
    }
    struct Result {
        CtState state;
        bool drop;
    };
    // The state and verdict of one frame (a packet the table does not take is judged as the worker does).
    Result send(const std::vector<uint8_t>& frame)
    {
        packet::Packet p;
        packet::parse(frame.data(), uint32_t(frame.size()), p);
        const packet::Packet* pp = &p;
        uint64_t before[conntrack::kCtStateCount];
        for (unsigned s = 0; s < conntrack::kCtStateCount; ++s)
            before[s] = judge.verdicts().packets[s][0];
        judge.begin(&p, 1);
        h.table->process_burst(&pp, 1, h.now);
        uint8_t out = judge.out(p);
        if (out == Judge::kNotJudged && !h.table->takes(p)) {
            judge.judge(p, conntrack::state_outside(p));
            out = judge.out(p);
        }
        if (out == Judge::kNotJudged) {
            // Taken and accepted by the steady path's tally (fast_accept()): the state whose tally grew.
            REQUIRE(judge.taken() == 1);
            for (unsigned s = 0; s < conntrack::kCtStateCount; ++s)
                if (judge.verdicts().packets[s][0] == before[s] + 1)
                    return {CtState(s), false};
            FAIL("a packet the table took was neither judged nor tallied");
        }
        REQUIRE((out & Judge::kJudged) != 0);
        return {CtState(out & Judge::kStateMask), (out & Judge::kDropBit) != 0};
    }
    // A segment numbered as a real stack numbers it (Harness::send's rule).
    Result send(Ep a, Ep b, uint8_t flags, size_t payload = 0)
    {
        uint32_t& nxt = h.next_seq(a, b);
        const uint32_t ack = (flags & kAck) ? h.next_seq(b, a) : 0;
        const Result r = send(tcp_frame(a, b, flags, payload, 0, nxt, ack));
        nxt += uint32_t(payload) + ((flags & kSyn) ? 1u : 0u) + ((flags & kFin) ? 1u : 0u);
        return r;
    }
    uint64_t verdicts(CtState s, bool drop) const { return judge.verdicts().packets[uint8_t(s)][drop ? 1 : 0]; }
    conntrack::FlowSnapshot only_flow() const
    {
        conntrack::FlowSnapshot s[2];
        REQUIRE(h.table->snapshot({}, s, 2) == 1);
        return s[0];
    }

    Harness h;
    policy::Policy policy;
    policy::Counters counters;
    Judge judge;
};

FrameBuilder ip_from(Ep a, Ep b)
{
    FrameBuilder f;
    f.ipv4({.src = ip4(a.addr), .dst = ip4(b.addr)});
    return f;
}

std::vector<uint8_t> udp(Ep a, Ep b)
{
    return ip_from(a, b).udp({.sport = a.port, .dport = b.port}).payload(20).build();
}

const std::string kAcceptAll = "policy accept\n";

} // namespace

TEST_CASE("TCP: the original direction is new until the first reply, then every packet is established",
          "[conntrack][policy]")
{
    Judged j(kAcceptAll, true);
    CHECK(j.send(client, server, kSyn).state == CtState::new_);
    // A retransmitted SYN: still no reply.
    j.h.next_seq(client, server) -= 1;
    CHECK(j.send(client, server, kSyn).state == CtState::new_);
    CHECK(j.send(server, client, kSyn | kAck).state == CtState::established);
    CHECK(j.send(client, server, kAck).state == CtState::established);
    CHECK(j.send(client, server, kAck | kPsh, 100).state == CtState::established);
    CHECK(j.send(server, client, kAck, 0).state == CtState::established);
    CHECK(j.h.c().flows_created == 1);
    CHECK(j.verdicts(CtState::new_, false) == 2);
    CHECK(j.verdicts(CtState::established, false) == 4);
}

TEST_CASE("a mid-stream pickup is new; a segment of no flow the state machine refuses is invalid",
          "[conntrack][policy]")
{
    Judged j(kAcceptAll, true);
    CHECK(j.send(client, server, kAck | kPsh, 10).state == CtState::new_); // loose pickup
    CHECK(j.h.c().flows_created == 1);
    CHECK(j.send(server, client, kAck).state == CtState::established);
    // An RST for a connection nobody knows: netfilter's tcp_new() refuses it.
    const Ep other{"10.0.0.9", 9};
    CHECK(j.send(other, server, kRst).state == CtState::invalid);
    CHECK(j.h.c().flows_created == 1);
}

TEST_CASE("UDP and ICMP: new until a reply; a reply to no query is invalid; errors are related or invalid",
          "[conntrack][policy]")
{
    Judged j(kAcceptAll, true);
    const Ep c{"10.0.0.1", 5353}, s{"10.0.0.2", 53};
    CHECK(j.send(udp(c, s)).state == CtState::new_);
    CHECK(j.send(udp(c, s)).state == CtState::new_); // no reply yet
    CHECK(j.send(udp(s, c)).state == CtState::established);
    CHECK(j.send(udp(c, s)).state == CtState::established);
    // The server's port closed: an error quoting the client's datagram is related to the flow.
    const auto quoted = ip_from(c, s).udp({.sport = c.port, .dport = s.port}).payload(20);
    CHECK(j.send(ip_from(s, c).icmp({.type = 3, .code = 3, .rest = 0}).quote(quoted).build()).state ==
          CtState::related);
    // One quoting nothing tracked is invalid.
    const auto stranger = ip_from(c, s).udp({.sport = 1, .dport = 2}).payload(20);
    CHECK(j.send(ip_from(s, c).icmp({.type = 3, .code = 3, .rest = 0}).quote(stranger).build()).state ==
          CtState::invalid);
    // An echo reply with no request.
    CHECK(j.send(ip_from(s, c).icmp({.type = 0, .id = 9}).payload(8).build()).state == CtState::invalid);
    CHECK(j.send(ip_from(c, s).icmp({.type = 8, .id = 9}).payload(8).build()).state == CtState::new_);
    CHECK(j.send(ip_from(s, c).icmp({.type = 0, .id = 9}).payload(8).build()).state == CtState::established);
}

TEST_CASE("frames the table does not track are untracked; malformed ones are invalid", "[conntrack][policy]")
{
    conntrack::TableConfig cfg = small_config();
    cfg.track = conntrack::track_bit(conntrack::Proto::tcp); // --track tcp
    Judged j(kAcceptAll, true, cfg);
    FrameBuilder arp;
    arp.ethertype(0x0806).raw(std::vector<uint8_t>(28, 0));
    CHECK(j.send(arp.build()).state == CtState::untracked);
    CHECK(j.send(udp({"10.0.0.1", 1}, {"10.0.0.2", 2})).state == CtState::untracked); // excluded by --track
    // A TCP header cut short: malformed.
    CHECK(j.send(ip_from(client, server).tcp({.sport = 1, .dport = 2}).truncate(14 + 20 + 10).build()).state ==
          CtState::invalid);
    CHECK(j.h.c().flows_created == 0);
}

TEST_CASE("a new packet the policy drops creates no flow, no event, evicts nothing; the rule counts it",
          "[conntrack][policy]")
{
    Judged j("ct state established,related accept\n"
             "ct state new tcp dport 80 accept comment \"web\"\n"
             "policy drop\n",
             true);
    const Ep denied{"10.0.0.2", 81};
    const Judged::Result r = j.send(client, denied, kSyn);
    CHECK(r.state == CtState::new_);
    CHECK(r.drop);
    CHECK(j.h.c().flows_created == 0);
    CHECK(j.h.live_flows() == 0);
    CHECK(j.counters.read(2).packets == 1); // the default
    CHECK(j.counters.read(2).bytes == 40);
    // The allowed port: a flow, and the handshake passes by the first rule.
    CHECK_FALSE(j.send(client, server, kSyn).drop);
    CHECK_FALSE(j.send(server, client, kSyn | kAck).drop);
    CHECK_FALSE(j.send(client, server, kAck).drop);
    CHECK(j.h.c().flows_created == 1);
    CHECK(j.counters.read(1).packets == 1);
    CHECK(j.counters.read(0).packets == 2);
    // A scan of denied ports leaves the table empty but for the allowed flow.
    for (uint16_t port = 1000; port < 11000; ++port)
        j.send(tcp_frame({"10.0.0.7", uint16_t(20000 + port % 30000)}, {"10.0.0.2", port}, kSyn));
    CHECK(j.h.live_flows() == 1);
    CHECK(j.h.c().flows_created == 1);
    CHECK(j.counters.read(2).packets == 10001);
    CHECK(j.h.accounting_holds());
}

TEST_CASE("monitor mode is a dry run: the same verdicts counted, the table tracks as without a policy",
          "[conntrack][policy]")
{
    Judged j("ct state new tcp dport 80 accept\npolicy drop\n", false);
    const Judged::Result r = j.send(client, {"10.0.0.2", 81}, kSyn);
    CHECK(r.state == CtState::new_);
    CHECK(r.drop);                     // what inline mode would do
    CHECK(j.h.c().flows_created == 1); // but the flow is tracked
    CHECK(j.verdicts(CtState::new_, true) == 1);
}

TEST_CASE("an invalid segment the policy drops changes nothing of its flow; accepted, it counts as before",
          "[conntrack][policy]")
{
    for (bool drop_invalid : {true, false}) {
        CAPTURE(drop_invalid);
        Judged j(drop_invalid ? "ct state invalid drop\n" : kAcceptAll, true);
        j.send(client, server, kSyn);
        j.send(server, client, kSyn | kAck);
        j.send(client, server, kAck);
        j.send(client, server, kAck | kPsh, 100);
        const conntrack::FlowSnapshot before = j.only_flow();
        // A forged RST far outside the window, from the server's side.
        const Judged::Result r = j.send(tcp_frame(server, client, kRst, 0, 0, 12345, 0));
        CHECK(r.state == CtState::invalid);
        CHECK(r.drop == drop_invalid);
        // A segment far beyond the window, with data.
        CHECK(j.send(tcp_frame(client, server, kAck, 50, 0, j.h.next_seq(client, server) + 0x40000000u,
                               j.h.next_seq(server, client)))
                  .state == CtState::invalid);
        const conntrack::FlowSnapshot after = j.only_flow();
        CHECK(after.last_seen_ns == before.last_seen_ns);
        if (drop_invalid) {
            CHECK(after.packets[0] == before.packets[0]);
            CHECK(after.packets[1] == before.packets[1]);
            CHECK(after.bytes[0] == before.bytes[0]);
            CHECK(after.tcp_flags_seen[1] == before.tcp_flags_seen[1]); // the RST's flag is not seen
        } else {
            CHECK(after.packets[0] + after.packets[1] == before.packets[0] + before.packets[1] + 2);
        }
        // Refused segments count in the table either way.
        CHECK(j.h.c().out_of_window_total() == 2);
        // The connection goes on: an in-window segment is established.
        CHECK(j.send(client, server, kAck | kPsh, 10).state == CtState::established);
        // And an in-window RST from the server is accepted and ends it.
        CHECK(j.send(server, client, kRst | kAck).state == CtState::established);
    }
}
