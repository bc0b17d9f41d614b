// SPDX-License-Identifier: BSD-3-Clause
// Real captures through the parser into a real table (packet clock, default timeouts, the same
// fragment attribution the worker does): every UDP conversation is one flow holding exactly the
// packets of tshark's conversation, ICMP errors count on the flows they quote, and the fragments of
// fragmented TCP are counted on their flow, in order or last fragment first. Expected sizes from tshark 4.0.17 (`-z conv,udp`, and
// for ICMP the echo packets grouped by addresses and identifier), as tests/packet/test_parse_pcaps.cpp
// explains per capture. Skips when ../shared/pcaps (FLOWCOP_PCAP_DIR) is absent.
#include "harness.h"

#include <fragattr/fragment_attributor.h>

#include "pcap_reader.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sys/stat.h>
#include <vector>

using namespace flowcop;
using namespace flowcop::test;
using conntrack::Proto;
using packet::Verdict;

namespace {

using Sizes = std::map<uint64_t, unsigned>; // {packets in a flow: how many flows}

std::string pcap_dir()
{
    const char* d = std::getenv("FLOWCOP_PCAP_DIR");
    std::string dir = d ? d : "../shared/pcaps";
    struct stat st;
    return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? dir : std::string();
}

// Without the captures the case asserts nothing: said as a TAP comment (Catch2's WARN is a line TAP
// readers such as meson's do not know), so the run reads "1..0", which meson counts as skipped.
void say_skipped()
{
    std::cout << "# ../shared/pcaps is absent (set FLOWCOP_PCAP_DIR): real-capture checks skipped" << std::endl;
}

struct Run {
    std::unique_ptr<Harness> h;
    std::vector<conntrack::FlowSnapshot> flows; // every flow at the end, before anything expired
    // Frees what new (std::align_val_t(64)) uint8_t[] returned (a plain delete[] mismatches).
    struct AlignedDelete {
        void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t(64)); }
    };
    std::unique_ptr<uint8_t[], AlignedDelete> frag_memory;
    std::unique_ptr<fragattr::FragmentAttributor> frag;

    Sizes sizes(Proto p) const
    {
        Sizes s;
        for (const auto& f : flows)
            if (f.proto == p)
                ++s[f.packets[0] + f.packets[1]];
        return s;
    }
};

// Replays a capture packet by packet at its own timestamps, the fragments through an attributor as
// the worker does (app/service/dataplane/worker.cpp), with timeouts long enough that no flow expires inside
// the capture: a conversation is then exactly one flow, as tshark counts it. reverse_fragments:
// each run of consecutive frames that are fragments of one datagram is replayed last fragment first.
Run replay(const std::string& path, bool reverse_fragments = false)
{
    auto cfg = small_config(1u << 16);
    cfg.wheel.buckets = 1u << 16;
    for (auto& s : cfg.proto_timeouts.seconds_by_timeout)
        s = 86400;
    Run run;
    run.h = std::make_unique<Harness>(cfg);
    fragattr::Config fc;
    run.frag_memory.reset(new (std::align_val_t(64)) uint8_t[fragattr::FragmentAttributor::bytes_for(fc)]);
    run.frag = std::make_unique<fragattr::FragmentAttributor>(fc, run.frag_memory.get());
    fragattr::FragmentAttributor& frag = *run.frag;
    PcapReader r;
    INFO(path);
    REQUIRE(r.open(path));
    std::vector<PcapRecord> records;
    for (PcapRecord rec; r.next(rec);)
        records.push_back(rec);
    REQUIRE(r.error().empty());
    if (reverse_fragments) {
        const auto fragment_id = [](const PcapRecord& rec) -> int64_t {
            packet::Packet p;
            packet::parse(rec.data.data(), uint32_t(rec.data.size()), p);
            return (p.extra.frag_flags & packet::kFragmented) ? int64_t{p.extra.frag_id} : -1;
        };
        for (size_t i = 0; i < records.size();) {
            size_t j = i + 1;
            const int64_t id = fragment_id(records[i]);
            while (id >= 0 && j < records.size() && fragment_id(records[j]) == id)
                ++j;
            std::reverse(records.begin() + ptrdiff_t(i), records.begin() + ptrdiff_t(j));
            i = j;
        }
    }
    bool first = true;
    for (const PcapRecord& rec : records) {
        packet::Packet p;
        packet::parse(rec.data.data(), uint32_t(rec.data.size()), p);
        if (first)
            run.h->now = rec.ts_ns;
        first = false;
        run.h->now = std::max(run.h->now, rec.ts_ns);
        const fragattr::Held held = frag.attribute(p, run.h->now);
        const packet::Packet* pp = &p;
        run.h->table->process_burst(&pp, 1, run.h->now);
        if (held.packets != 0)
            run.h->table->count_held_fragments(p, held.packets, held.bytes);
    }
    run.flows.resize(cfg.capacity);
    run.flows.resize(run.h->table->snapshot({}, run.flows.data(), run.flows.size()));
    return run;
}

} // namespace

TEST_CASE("Real captures: UDP conversations are flows of tshark's sizes; ICMP errors relate to them",
          "[conntrack][proto][pcap]")
{
    const std::string dir = pcap_dir();
    if (dir.empty()) {
        say_skipped();
        return;
    }
    // 75 UDP conversations; no ICMP query (every ICMPv6 message is neighbour discovery or MLD).
    const Run ftp = replay(dir + "/suricata_ftp_data_ipv4_ipv6_80conns.pcap");
    CHECK(ftp.sizes(Proto::udp) ==
          Sizes{{1, 1}, {2, 65}, {3, 1}, {5, 1}, {6, 1}, {10, 1}, {18, 1}, {19, 1}, {28, 1}, {30, 1}, {51, 1}});
    CHECK(ftp.sizes(Proto::icmp).empty());
    CHECK(ftp.h->c().proto_tracked[size_t(Proto::udp)] == 301);
    CHECK(ftp.h->c().flows_created_by_proto[size_t(Proto::udp)] == 75);

    // 12 DNS conversations (10 of 2 packets, 2 of 4) and six port unreachables, each quoting a DNS
    // reply of one of them. The pings: tshark sees identifier 5's 5 requests and 5 replies, but the
    // requests travel inside MPLS (non_ip), so flowcop sees replies only, which start no flow
    // (netfilter's rule); likewise the reply of 3942, whose request the capture cut.
    const Run lan = replay(dir + "/tcpreplay_test_mixed_lan.pcap");
    CHECK(lan.sizes(Proto::udp) == Sizes{{2, 10}, {4, 2}});
    CHECK(lan.sizes(Proto::icmp).empty());
    CHECK(lan.h->c().proto_no_flow[size_t(Proto::icmp)] == 6);
    CHECK(lan.h->c().icmp_related == 6);
    CHECK(lan.h->c().icmp_related_unknown == 0);
    uint32_t related = 0;
    for (const auto& f : lan.flows)
        related += f.related;
    CHECK(related == 6);

    // One syslog-like stream of 15 datagrams over 1 h 52 min.
    const Run nest = replay(dir + "/ndpi_nest_log_sink_1h52m.pcap");
    CHECK(nest.sizes(Proto::udp) == Sizes{{15, 1}});
}

TEST_CASE("Real captures: every fragment of fragmented TCP is counted on its flow", "[conntrack][proto][pcap]")
{
    const std::string dir = pcap_dir();
    if (dir.empty()) {
        say_skipped();
        return;
    }
    // arkime: SOCKS5 over TCP segments fragmented in order, first fragment first. suricata's defrag
    // captures: a TCP SYN cut into 8-byte fragments, so the first fragment cannot hold the TCP header
    // (truncated_l4: no flow, no ports) and its later fragments are held, then unattributed.
    struct Want {
        const char* name;
        bool attributable;
        bool reversed; // each datagram's fragments replayed last first
    };
    for (const Want w : {Want{"arkime_socks5_tcp_over_ipv4_frags.pcap", true, false},
                         Want{"arkime_socks5_tcp_over_ipv4_frags.pcap", true, true},
                         Want{"suricata_defrag_vlan_ipv4_tcp_syn.pcap", false, false},
                         Want{"suricata_defrag_vlan_ipv6_tcp.pcap", false, false}}) {
        CAPTURE(w.name, w.reversed);
        const Run run = replay(dir + "/" + w.name, w.reversed);
        const auto& c = run.h->c();
        const auto& fc = run.frag->counters();
        const uint64_t frags = c.packets_by_verdict[size_t(Verdict::fragment)];
        uint64_t on_flows = 0;
        for (const auto& f : run.flows)
            on_flows += f.packets[0] + f.packets[1];
        CHECK(frags > 0);
        CHECK(c.fragments_no_flow == 0);
        if (w.attributable && !w.reversed) {
            CHECK(c.fragments_tracked == frags);
            CHECK(c.fragments_late == 0);
        } else if (w.attributable) {
            // Every later fragment came before its first, was held, and joined the flow with it.
            CHECK(c.fragments_tracked == 0);
            CHECK(c.fragments_late == frags);
            CHECK(fc.pending == 0);
        } else {
            CHECK(c.fragments_tracked == 0);
            run.frag->expire(run.h->now + 2 * kSec, run.frag->capacity());
            CHECK(fc.unattributed == frags);
            CHECK(fc.pending == 0);
        }
        CHECK(on_flows == c.tcp_tracked + c.tcp_invalid + c.out_of_window_total() +
                              c.proto_tracked[size_t(Proto::udp)] + c.proto_tracked[size_t(Proto::icmp)] +
                              c.proto_tracked[size_t(Proto::other)] + c.fragments_tracked + c.fragments_late);
        // A fragmented segment's first fragment carries only part of its bytes: the flow turns liberal at
        // its later fragments, so the peer's ACK of the whole segment is not out of window.
        CHECK(c.out_of_window_total() == 0);
    }
}
