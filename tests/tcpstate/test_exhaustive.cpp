// SPDX-License-Identifier: BSD-3-Clause
// Whole-machine checks: the documented transition matrix cell by cell, an exhaustive sweep of every
// input for invariants, and a seeded random-sequence property test of forward-only progress.
#include "tcp_test_util.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace tcptest;
using flowcop::tcpstate::initial_state;
using flowcop::tcpstate::kStateCount;
using flowcop::tcpstate::step;
namespace detail = flowcop::tcpstate::detail;

namespace {

// Progress order: a flow only ever moves to a state of equal or higher rank. SYN_SENT2 sits between
// SYN_SENT and SYN_RECV; CLOSE is last because RST reaches it from everywhere.
int rank(State s)
{
    switch (s) {
    case State::none: return 0;
    case State::syn_sent: return 1;
    case State::syn_sent2: return 2;
    case State::syn_recv: return 3;
    case State::established: return 4;
    case State::fin_wait: return 5;
    case State::close_wait: return 6;
    case State::last_ack: return 7;
    case State::time_wait: return 8;
    case State::close: return 9;
    case State::count: break;
    }
    return -1;
}

bool valid_flow_state(State s)
{
    return s != State::none && static_cast<size_t>(s) < kStateCount;
}

bool syn_class(uint8_t f)
{
    return (f & (kFin | kSyn | kRst | kAck)) == kSyn;
}

// Collects violations instead of asserting each of millions of steps (Catch2 assertions are costly);
// the first few are reported with their inputs.
struct Violations {
    std::vector<std::string> first;
    uint64_t count = 0;
    void add(const std::string& what)
    {
        if (first.size() < 8)
            first.push_back(what);
        ++count;
    }
};

std::string describe(State s, uint8_t tflags, int dir, uint8_t f)
{
    return std::string(flowcop::tcpstate::state_name(s)) + "/flags=" + std::to_string(tflags) +
           " dir=" + std::to_string(dir) + " tcp=" + std::to_string(f);
}

} // namespace

// The matrix in lib/tcpstate/tcp-tracking.md, restated independently of lib/tcpstate's table. Rows are
// trackers reached by ordinary traffic (tcp_test_util.h reach(); FIN_WAIT..LAST_ACK after an orig
// FIN), plus the two SYN_RECV variants whose reply ACK completes the handshake. A change to either the
// code or the document must be made to both, deliberately.
TEST_CASE("The transition matrix is the one documented in lib/tcpstate/tcp-tracking.md", "[tcpstate][exhaustive]")
{
    constexpr int kIg = -1, kRo = -2;
    constexpr int kSs = 1, kSr = 2, kEs = 3, kFw = 4, kCw = 5, kLa = 6, kTw = 7, kCl = 8, kS2 = 9;
    struct Row {
        const char* name;
        Tracker t;
        int next[2][5]; // [orig, reply][SYN, SYN-ACK, FIN, ACK, RST]
    };
    Tracker simopen = stepped(stepped(reach(State::syn_sent), kR, kSyn), kO, kSynack);
    const Row rows[] = {
        {"SYN_SENT", reach(State::syn_sent), {{kSs, kIg, kIg, kIg, kCl}, {kS2, kSr, kIg, kIg, kCl}}},
        {"SYN_RECV", reach(State::syn_recv), {{kIg, kSr, kFw, kEs, kCl}, {kIg, kIg, kFw, kSr, kCl}}},
        {"SYN_RECV (simultaneous open)", simopen, {{kIg, kSr, kFw, kEs, kCl}, {kIg, kIg, kFw, kEs, kCl}}},
        {"SYN_RECV (picked up at SYN-ACK)",
         Tracker{initial_state(kSynack, true)},
         {{kIg, kSr, kFw, kEs, kCl}, {kIg, kIg, kFw, kEs, kCl}}},
        {"ESTABLISHED", reach(State::established), {{kIg, kIg, kFw, kEs, kCl}, {kIg, kIg, kFw, kEs, kCl}}},
        {"FIN_WAIT (orig sent FIN)", reach(State::fin_wait), {{kIg, kIg, kFw, kCw, kCl}, {kIg, kIg, kLa, kCw, kCl}}},
        {"CLOSE_WAIT (orig sent FIN)",
         reach(State::close_wait),
         {{kIg, kIg, kCw, kCw, kCl}, {kIg, kIg, kLa, kCw, kCl}}},
        {"LAST_ACK", reach(State::last_ack), {{kIg, kIg, kLa, kTw, kCl}, {kIg, kIg, kLa, kTw, kCl}}},
        {"TIME_WAIT", reach(State::time_wait), {{kRo, kIg, kTw, kTw, kCl}, {kRo, kIg, kTw, kTw, kCl}}},
        {"CLOSE", reach(State::close), {{kRo, kIg, kCl, kCl, kCl}, {kRo, kIg, kCl, kCl, kCl}}},
        {"SYN_SENT2", reach(State::syn_sent2), {{kS2, kSr, kIg, kIg, kCl}, {kS2, kSr, kIg, kIg, kCl}}},
    };
    const uint8_t klass[5] = {kSyn, kSynack, kFinack, kAck, kRst};
    const char* const kname[5] = {"SYN", "SYN-ACK", "FIN", "ACK", "RST"};
    for (const Row& row : rows) {
        for (int d = 0; d < 2; ++d) {
            for (int k = 0; k < 5; ++k) {
                CAPTURE(row.name, d == 0 ? "orig" : "reply", kname[k]);
                Tracker t = row.t;
                const Outcome out = step(t, static_cast<Dir>(d), klass[k]);
                const int want = row.next[d][k];
                if (want == kIg) {
                    CHECK(out == Outcome::ignored);
                    CHECK(t.state == row.t.state);
                } else if (want == kRo) {
                    CHECK(out == Outcome::reopen);
                    CHECK(t.state == row.t.state);
                } else {
                    CHECK(out == (k == 4 ? Outcome::reset : Outcome::ok));
                    CHECK(t.state == static_cast<State>(want));
                }
            }
        }
    }
}

// Every state value (valid, none, and corrupt), every private-bits byte, every direction value
// (including ones outside Dir) and every flags byte: 13 x 256 x 4 x 256 steps. None may produce
// none or an out-of-range state, clear a bit, move backwards, or touch the tracker when it does not
// accept the packet.
TEST_CASE("No input combination leaves the state machine's range or moves a flow backwards", "[tcpstate][exhaustive]")
{
    std::vector<unsigned> states;
    for (unsigned s = 0; s < kStateCount; ++s)
        states.push_back(s);
    for (unsigned s : {unsigned(kStateCount), 0x7Fu, 0xFFu})
        states.push_back(s);
    const unsigned dirs[] = {0, 1, 2, 255};

    Violations v;
    uint64_t steps = 0;
    for (const unsigned sv : states) {
        for (unsigned tf = 0; tf < 256; ++tf) {
            for (const unsigned dv : dirs) {
                for (unsigned pf = 0; pf < 256; ++pf) {
                    const Tracker before{static_cast<State>(sv), static_cast<uint8_t>(tf)};
                    Tracker t = before;
                    const auto f = static_cast<uint8_t>(pf);
                    const Outcome out = step(t, static_cast<Dir>(dv), f);
                    ++steps;
                    const auto at = [&] { return describe(before.state, before.flags, int(dv), f); };
                    const bool unchanged = t.state == before.state && t.flags == before.flags;
                    if (!valid_flow_state(before.state)) {
                        if (out != Outcome::ignored || !unchanged)
                            v.add("not a flow yet accepted: " + at());
                        continue;
                    }
                    if (!valid_flow_state(t.state))
                        v.add("left the range: " + at());
                    switch (out) {
                    case Outcome::ignored:
                        if (!unchanged)
                            v.add("ignored but changed: " + at());
                        break;
                    case Outcome::reopen:
                        if (!unchanged)
                            v.add("reopen but changed: " + at());
                        if (!syn_class(f) || (before.state != State::time_wait && before.state != State::close))
                            v.add("reopen without SYN on TIME_WAIT/CLOSE: " + at());
                        break;
                    case Outcome::reset:
                        if (t.state != State::close)
                            v.add("reset but not CLOSE: " + at());
                        [[fallthrough]];
                    case Outcome::ok:
                        if ((t.flags & before.flags) != before.flags)
                            v.add("cleared a bit: " + at());
                        if (rank(t.state) < rank(before.state))
                            v.add("moved backwards: " + at());
                        break;
                    default: v.add("outcome out of range: " + at());
                    }
                }
            }
        }
    }
    CHECK(steps == states.size() * 256u * 4u * 256u);
    for (const auto& s : v.first)
        UNSCOPED_INFO(s);
    CHECK(v.count == 0);
}

// steady() is the flow table's shortcut past step(): wherever it says true, step() must return ok and
// leave the tracker exactly as it was, for every direction. And it must say true for the established,
// assured flow's plain ACK, with or without PSH, URG, ECE and CWR, or the shortcut is never taken.
TEST_CASE("steady() is true only where step() would change nothing", "[tcpstate][exhaustive]")
{
    Violations v;
    uint64_t steady_inputs = 0;
    for (unsigned sv = 0; sv <= kStateCount; ++sv) {
        for (unsigned tf = 0; tf < 256; ++tf) {
            for (unsigned pf = 0; pf < 256; ++pf) {
                const Tracker before{static_cast<State>(sv), static_cast<uint8_t>(tf)};
                const auto f = static_cast<uint8_t>(pf);
                if (!steady(before, f))
                    continue;
                ++steady_inputs;
                for (const unsigned dv : {0u, 1u}) {
                    Tracker t = before;
                    const Outcome out = step(t, static_cast<Dir>(dv), f);
                    if (out != Outcome::ok || t.state != before.state || t.flags != before.flags)
                        v.add("steady but step() changes it: " + describe(before.state, before.flags, int(dv), f));
                }
            }
        }
    }
    for (const auto& s : v.first)
        UNSCOPED_INFO(s);
    CHECK(v.count == 0);
    // ESTABLISHED with its three bits (32 values of the other five) and the 16 flag bytes with ACK set,
    // FIN, SYN and RST clear (PSH, URG, ECE and CWR free; URG|ACK is still the ACK class).
    CHECK(steady_inputs == 32u * 16u);
    Tracker assured = Tracker{State::established, 0};
    step(assured, Dir::orig, 0x10);
    step(assured, Dir::reply, 0x10);
    step(assured, Dir::orig, 0x10);
    CHECK(assured.assured());
    CHECK(steady(assured, 0x10));
    CHECK(steady(assured, 0x18));
    CHECK(!steady(assured, 0x11));
    CHECK(!steady(assured, 0x14));
}

// Random traffic on one 5-tuple, driven like the flow table (create, step, reopen, reap on a tick
// after a RST). Within one flow the rank never decreases and private bits are never cleared; rank
// drops only when a new flow starts (reopen, or a pickup after the old one was reaped). Assured
// implies seen_reply, and LAST_ACK/TIME_WAIT imply both sides sent a FIN. The seed is fixed and the
// engine's raw output is used (distributions differ between standard libraries), so every run and
// every platform checks the same sequences; the run must visit every flow state to count.
TEST_CASE("Random flag sequences only move a flow forward, except by starting a new flow", "[tcpstate][exhaustive]")
{
    constexpr uint32_t kSeed = 20240611;
    std::mt19937 rng(kSeed);
    const uint8_t common[] = {kSyn, kSynack, kAck, kData, kData, kAck, kFinack, kFinack | kPsh, kRst, kRstack};

    Violations v;
    bool visited[kStateCount] = {};
    uint64_t steps = 0, new_flows = 0;
    for (int seq = 0; seq < 4000; ++seq) {
        FlowDriver f((rng() & 1) != 0);
        const unsigned len = 1 + rng() % 48;
        for (unsigned i = 0; i < len; ++i) {
            if (rng() % 10 == 0)
                f.tick();
            const char from = (rng() & 1) ? 'c' : 's';
            const uint32_t r = rng();
            const uint8_t flags =
                (r % 8 == 0) ? static_cast<uint8_t>(r >> 8) : common[(r >> 8) % (sizeof(common) / sizeof(common[0]))];
            const bool was = f.tracked();
            const Tracker before = f.tracker();
            const auto ev = f.feed(from, flags);
            ++steps;
            if (!f.tracked())
                continue;
            const Tracker& t = f.tracker();
            visited[static_cast<size_t>(t.state)] = true;
            const std::string at = "seq " + std::to_string(seq) + " step " + std::to_string(i) + ": " +
                                   describe(before.state, before.flags, from, flags);
            if (!valid_flow_state(t.state))
                v.add("left the range: " + at);
            if (t.assured() && !t.seen_reply())
                v.add("assured without a reply: " + at);
            if ((t.state == State::last_ack || t.state == State::time_wait) &&
                (t.flags & (detail::kFinOrig | detail::kFinReply)) != (detail::kFinOrig | detail::kFinReply))
                v.add("closing state without both FINs: " + at);
            if (ev == FlowDriver::Event::created || ev == FlowDriver::Event::reopened) {
                ++new_flows;
                continue;
            }
            if (!was)
                continue;
            if (rank(t.state) < rank(before.state))
                v.add("moved backwards: " + at);
            if ((t.flags & before.flags) != before.flags)
                v.add("cleared a bit: " + at);
        }
    }
    for (const auto& s : v.first)
        UNSCOPED_INFO(s);
    CHECK(v.count == 0);
    for (const State s : kFlowStates) {
        CAPTURE(s);
        CHECK(visited[static_cast<size_t>(s)]);
    }
    CHECK(new_flows > 4000); // reopens and re-pickups happened, not just one flow per sequence
    CHECK(steps > 50000);
}
