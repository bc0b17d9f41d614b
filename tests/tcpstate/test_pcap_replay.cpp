// SPDX-License-Identifier: BSD-3-Clause
// Replays real captures from ../shared/pcaps (PROVENANCE.md) through the state machine. Meson registers
// this test only when that directory exists (a fresh clone has none), and passes it in
// FLOWCOP_PCAP_DIR; the files are read in place, never copied into the repository. The reader is the
// minimum these captures need: classic libpcap, Ethernet with any 802.1Q/802.1ad tag stack, IPv4 or
// IPv6 without extension headers, first fragments only. Flows are keyed on the unordered address/port
// pair, without VLAN tags (suricata syn_retransmit tags only one direction of its connection).
#include "tcp_test_util.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace tcptest;

namespace {

struct Segment {
    std::string src, dst; // address bytes + port bytes
    uint8_t flags;
};

uint32_t rd32(const unsigned char* p, bool swap)
{
    const uint32_t v = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    return swap ? __builtin_bswap32(v) : v;
}

// Appends the TCP segments of one Ethernet frame; anything else is skipped.
void parse_frame(const std::vector<unsigned char>& f, std::vector<Segment>& out)
{
    size_t off = 12;
    auto u16 = [&](size_t at) { return unsigned(f[at]) << 8 | f[at + 1]; };
    if (f.size() < off + 2)
        return;
    unsigned type = u16(off);
    while ((type == 0x8100 || type == 0x88a8 || type == 0x9100) && f.size() >= off + 6) {
        off += 4;
        type = u16(off);
    }
    off += 2;
    size_t l4 = 0;
    std::string src, dst;
    if (type == 0x0800 && f.size() >= off + 20) {
        const size_t ihl = (f[off] & 0x0f) * 4u;
        const bool first_fragment = (u16(off + 6) & 0x1fff) == 0;
        if (f[off + 9] != 6 || !first_fragment || ihl < 20)
            return;
        src.assign(f.begin() + off + 12, f.begin() + off + 16);
        dst.assign(f.begin() + off + 16, f.begin() + off + 20);
        l4 = off + ihl;
    } else if (type == 0x86dd && f.size() >= off + 40) {
        if (f[off + 6] != 6)
            return;
        src.assign(f.begin() + off + 8, f.begin() + off + 24);
        dst.assign(f.begin() + off + 24, f.begin() + off + 40);
        l4 = off + 40;
    } else {
        return;
    }
    if (f.size() < l4 + 14)
        return;
    src.append(f.begin() + l4, f.begin() + l4 + 2);
    dst.append(f.begin() + l4 + 2, f.begin() + l4 + 4);
    out.push_back({src, dst, f[l4 + 13]});
}

std::vector<Segment> read_pcap(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    unsigned char gh[24];
    REQUIRE(in.read(reinterpret_cast<char*>(gh), sizeof gh));
    const uint32_t magic = rd32(gh, false);
    REQUIRE((magic == 0xa1b2c3d4 || magic == 0xd4c3b2a1 || magic == 0xa1b23c4d || magic == 0x4d3cb2a1));
    const bool swap = magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1;
    REQUIRE(rd32(gh + 20, swap) == 1); // DLT_EN10MB
    std::vector<Segment> segs;
    unsigned char rh[16];
    while (in.read(reinterpret_cast<char*>(rh), sizeof rh)) {
        const uint32_t caplen = rd32(rh + 8, swap);
        REQUIRE(caplen <= 262144);
        std::vector<unsigned char> frame(caplen);
        REQUIRE(in.read(reinterpret_cast<char*>(frame.data()), caplen));
        parse_frame(frame, segs);
    }
    return segs;
}

struct Replayed {
    std::vector<FlowDriver> flows; // in order of their first segment
    size_t segments = 0;
};

// One FlowDriver per unordered address pair; within a pair the first sender is 'c'.
Replayed replay(const std::string& file, bool loose)
{
    const char* dir = std::getenv("FLOWCOP_PCAP_DIR");
    REQUIRE(dir != nullptr); // meson sets it whenever it registers this test
    const auto segs = read_pcap(std::string(dir) + "/" + file);
    Replayed r;
    std::map<std::pair<std::string, std::string>, std::pair<size_t, std::string>> index; // -> flow, 'c' endpoint
    for (const Segment& s : segs) {
        const auto key = s.src < s.dst ? std::pair{s.src, s.dst} : std::pair{s.dst, s.src};
        auto it = index.find(key);
        if (it == index.end()) {
            it = index.emplace(key, std::pair{r.flows.size(), s.src}).first;
            r.flows.emplace_back(loose);
        }
        r.flows[it->second.first].feed(s.src == it->second.second ? 'c' : 's', s.flags);
        ++r.segments;
    }
    return r;
}

} // namespace

// PROVENANCE: SYN-ACK captured before the SYN, then a normal FIN close (14 TCP frames).
TEST_CASE("zeek handshake-reorder replays to an assured TIME_WAIT flow with loose pickup", "[tcpstate][pcap]")
{
    const Replayed r = replay("zeek_tcp_handshake_reorder_synack_first.pcap", true);
    CHECK(r.segments == 14);
    REQUIRE(r.flows.size() == 1);
    const FlowDriver& f = r.flows[0];
    CHECK(f.created == 1);
    CHECK(f.ignored == 1); // the late SYN
    CHECK(f.state() == State::time_wait);
    CHECK(f.tracker().assured());
}

// PROVENANCE: capture starts at the SYN-ACK, FIN close (21 TCP frames).
TEST_CASE("zeek missing-syn replays to an assured TIME_WAIT flow with loose pickup", "[tcpstate][pcap]")
{
    const Replayed r = replay("zeek_tcp_missing_syn_midstream.pcap", true);
    CHECK(r.segments == 21);
    REQUIRE(r.flows.size() == 1);
    CHECK(r.flows[0].ignored == 0);
    CHECK(r.flows[0].state() == State::time_wait);
    CHECK(r.flows[0].tracker().assured());
}

// PROVENANCE: 166 retransmitted segments and every FIN sent three times (377 TCP frames).
TEST_CASE("zeek ssh-dups replays to TIME_WAIT with nothing ignored", "[tcpstate][pcap]")
{
    const Replayed r = replay("zeek_tcp_ssh_dups_retransmissions.pcap", false);
    CHECK(r.segments == 377);
    REQUIRE(r.flows.size() == 1);
    CHECK(r.flows[0].ignored == 0);
    CHECK(r.flows[0].state() == State::time_wait);
}

// PROVENANCE: two TFO connections, the second with 86 bytes of data in its SYN; both FIN-closed.
TEST_CASE("zeek tcp-fast-open replays to two TIME_WAIT flows in strict mode", "[tcpstate][pcap]")
{
    const Replayed r = replay("zeek_tcp_fast_open_syn_data.pcap", false);
    REQUIRE(r.flows.size() == 2);
    for (const FlowDriver& f : r.flows) {
        CHECK(f.created == 1);
        CHECK(f.ignored == 0);
        CHECK(f.state() == State::time_wait);
        CHECK(f.tracker().assured());
    }
}

// PROVENANCE: a retransmitted SYN, client frames VLAN-tagged and server frames not; FIN close.
TEST_CASE("suricata syn_retransmit replays to TIME_WAIT despite the repeated SYN", "[tcpstate][pcap]")
{
    const Replayed r = replay("suricata_syn_retransmit_asym_vlan.pcap", false);
    REQUIRE(r.flows.size() == 1);
    CHECK(r.flows[0].ignored == 0);
    CHECK(r.flows[0].state() == State::time_wait);
}

// PROVENANCE: an established LDAP connection idle for 181 s, then ended by RST,ACK.
TEST_CASE("zeek ldap replays to a reset flow", "[tcpstate][pcap]")
{
    const Replayed r = replay("zeek_ldap_idle181s_then_rst.pcap", false);
    REQUIRE(r.flows.size() == 1);
    CHECK(r.flows[0].resets == 1);
    CHECK(r.flows[0].state() == State::close);
    CHECK(r.flows[0].tracker().assured());
}
