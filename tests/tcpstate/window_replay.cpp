// SPDX-License-Identifier: BSD-3-Clause
// tcp_window_replay: the differential test's model side (test_netfilter_diff.py). Replays a classic
// pcap through packet::parse and tcpstate's window_create()/track(), one flow per key, as the flow
// table does but without timeouts (the kernel side is replayed at full speed too, so nothing expires
// in either), and prints what Linux's conntrack would show:
//   flow <orig tuple: src dst sport dport> <STATE> timeout=<s> reply=<0|1> assured=<0|1>
//                   (timeout: the state's, capped as window.h says, counted from the flow's last packet)
//   invalid <n>   : packets netfilter would count in conntrack -S's invalid (tcp_error: bad flags or data
//                   offset; no flow and not creatable by netfilter's rule; a state-machine rejection
//                   netfilter marks sIV; a window refusal netfilter counts)
//   tcp <n>       : TCP packets offered to the tracker
//   reason <name> <n> for each WindowReason seen
// Flows that an RST ended before any reply are dropped at once, as netfilter kills them.
// Options: --liberal, --ignore-invalid-rst, --no-loose, --trace (one line per TCP packet: its number,
// direction, flags, outcome, reason and the state after). Exit 2 on a bad pcap.
#include <packet/flow_key.h>
#include <packet/packet.h>
#include <tcpstate/segment.h>
#include <tcpstate/window.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "pcap_reader.h"

using namespace flowcop;
using tcpstate::Dir;
using tcpstate::Outcome;
using tcpstate::State;

namespace {

struct KeyLess {
    bool operator()(const packet::FlowKey& a, const packet::FlowKey& b) const
    {
        return std::memcmp(&a, &b, sizeof a) < 0;
    }
};

struct Flow {
    tcpstate::Tracker tracker;
    tcpstate::WindowSeq seq{};
    tcpstate::WindowMeta meta{};
    bool orig_is_lo = false;
    tcpstate::FlowRef ref() { return {tracker, seq, meta}; }
};

// netfilter creates a conntrack only from a SYN, or (loose) from an ACK-class segment.
bool netfilter_creates(uint8_t flags, bool loose)
{
    const tcpstate::State s = tcpstate::initial_state(flags, loose);
    return s == State::syn_sent || s == State::established;
}

// step()'s ignored packets that netfilter marks sIG (ignored, not counted) rather than sIV (invalid):
// the same cells window_track.cpp notes.
bool netfilter_ignores_silently(State old, Dir d, uint8_t flags)
{
    const bool syn = flags & 0x02, ack = flags & 0x10, rst = flags & 0x04, fin = flags & 0x01;
    const bool synack = syn && ack && !rst;
    auto in = [old](std::initializer_list<State> l) {
        for (State s : l)
            if (s == old)
                return true;
        return false;
    };
    if (synack)
        return in({State::syn_recv, State::established, State::fin_wait, State::close_wait, State::last_ack,
                   State::time_wait, State::close});
    if (d == Dir::orig)
        return syn && !ack &&
               in({State::syn_recv, State::established, State::fin_wait, State::close_wait, State::last_ack});
    return ack && !syn && !fin && !rst && in({State::syn_sent, State::syn_sent2});
}

} // namespace

int main(int argc, char** argv)
{
    tcpstate::WindowPolicy policy;
    bool loose = true, trace = false;
    const char* path = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--liberal"))
            policy.be_liberal = true;
        else if (!std::strcmp(argv[i], "--ignore-invalid-rst"))
            policy.ignore_invalid_rst = true;
        else if (!std::strcmp(argv[i], "--no-loose"))
            loose = false;
        else if (!std::strcmp(argv[i], "--trace"))
            trace = true;
        else
            path = argv[i];
    }
    test::PcapReader reader;
    if (path == nullptr || !reader.open(path)) {
        std::fprintf(stderr, "usage: tcp_window_replay [--liberal] [--ignore-invalid-rst] [--no-loose] PCAP (%s)\n",
                     reader.error().c_str());
        return 2;
    }
    const tcpstate::Timeouts timeouts = tcpstate::Timeouts::netfilter_defaults();
    std::map<packet::FlowKey, Flow, KeyLess> flows;
    uint64_t invalid = 0, tcp = 0, reasons[tcpstate::kWindowReasonCount] = {};
    test::PcapRecord rec;
    while (reader.next(rec)) {
        packet::Packet p;
        // The captured bytes are the frame: tcpreplay sends no more than those (a snaplen-cut frame is
        // then shorter than its IP length, and both sides drop it).
        packet::parse(rec.data.data(), static_cast<uint32_t>(rec.data.size()), p);
        if (p.verdict == packet::Verdict::tcp_bad_data_offset) {
            ++invalid; // tcp_error(): "truncated packet"
            continue;
        }
        if (p.verdict != packet::Verdict::tcp)
            continue;
        ++tcp;
        const tcpstate::Segment seg = tcpstate::segment_of(p);
        auto it = flows.find(p.key);
        if (it != flows.end()) {
            Flow& f = it->second;
            const Dir d = f.orig_is_lo == p.src_is_lo ? Dir::orig : Dir::reply;
            const bool had_reply = f.tracker.seen_reply();
            const State old = f.tracker.state;
            const tcpstate::TrackResult r = tcpstate::track(f.ref(), d, seg, policy, timeouts);
            if (trace)
                std::printf("pkt %llu %s flags=0x%02x outcome=%d reason=%s state=%s cap=%d\n",
                            static_cast<unsigned long long>(tcp), d == Dir::orig ? "orig" : "reply", p.tcp_flags,
                            static_cast<int>(r.outcome), tcpstate::window_reason_name(r.reason),
                            tcpstate::state_name(f.tracker.state), f.meta.cap);
            switch (r.outcome) {
            case Outcome::ok: continue;
            case Outcome::ignored: invalid += !netfilter_ignores_silently(old, d, p.tcp_flags); continue;
            case Outcome::out_of_window:
                ++reasons[static_cast<size_t>(r.reason)];
                invalid += tcpstate::netfilter_counts_invalid(r.reason);
                continue;
            case Outcome::reset:
                if (!had_reply && d == Dir::orig)
                    flows.erase(it); // netfilter kills a conntrack whose only "reply" is none yet
                else if (!had_reply)
                    flows.erase(it);
                continue;
            case Outcome::reopen: flows.erase(it); break;
            }
        }
        // No flow (or reopened): create as flowcop does; count what netfilter would refuse.
        const State s = tcpstate::initial_state(p.tcp_flags, loose);
        if (!netfilter_creates(p.tcp_flags, loose))
            ++invalid;
        if (s == State::none)
            continue;
        Flow f;
        f.tracker = tcpstate::Tracker{s};
        f.orig_is_lo = p.src_is_lo;
        tcpstate::window_create(f.ref(), seg, timeouts);
        flows.emplace(p.key, f);
    }
    if (!reader.error().empty()) {
        std::fprintf(stderr, "tcp_window_replay: %s: %s\n", path, reader.error().c_str());
        return 2;
    }
    for (const auto& [key, f] : flows) {
        uint8_t src[16], dst[16];
        uint16_t sport, dport;
        packet::key_endpoints(key, f.orig_is_lo, src, sport, dst, dport);
        char a[packet::kAddrStrLen], b[packet::kAddrStrLen];
        packet::format_addr(src, a, sizeof a);
        packet::format_addr(dst, b, sizeof b);
        std::printf("flow %s %s %u %u %s timeout=%u reply=%d assured=%d\n", a, b, sport, dport,
                    tcpstate::state_name(f.tracker.state),
                    tcpstate::capped_timeout(timeouts, f.tracker.state, f.meta.timeout_cap()),
                    f.tracker.seen_reply() ? 1 : 0, f.tracker.assured() ? 1 : 0);
    }
    std::printf("tcp %llu\ninvalid %llu\n", static_cast<unsigned long long>(tcp),
                static_cast<unsigned long long>(invalid));
    for (size_t r = 1; r < tcpstate::kWindowReasonCount; ++r)
        std::printf("reason %s %llu\n", tcpstate::window_reason_name(static_cast<tcpstate::WindowReason>(r)),
                    static_cast<unsigned long long>(reasons[r]));
    return 0;
}
