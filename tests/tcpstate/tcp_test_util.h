// SPDX-License-Identifier: BSD-3-Clause
// Test fixtures for tcpstate: flag spellings, printable states, canonical trackers, and FlowDriver,
// the smallest stand-in for the flow table's use of the API (create, step, reopen, reap).
#pragma once

#include <tcpstate/tcp_state.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <utility>

#include <rte_tcp.h>

namespace tcptest {

using flowcop::tcpstate::Dir;
using flowcop::tcpstate::Flag;
using flowcop::tcpstate::Outcome;
using flowcop::tcpstate::State;
using flowcop::tcpstate::Tracker;

// DPDK's TCP flag bits (rte_tcp.h) under short names.
constexpr uint8_t kFin = RTE_TCP_FIN_FLAG, kSyn = RTE_TCP_SYN_FLAG, kRst = RTE_TCP_RST_FLAG, kPsh = RTE_TCP_PSH_FLAG,
                  kAck = RTE_TCP_ACK_FLAG, kUrg = RTE_TCP_URG_FLAG, kEce = RTE_TCP_ECE_FLAG, kCwr = RTE_TCP_CWR_FLAG;
constexpr uint8_t kSynack = kSyn | kAck, kFinack = kFin | kAck, kRstack = kRst | kAck, kData = kPsh | kAck;
constexpr Dir kO = Dir::orig, kR = Dir::reply;

// One captured segment: which endpoint sent it ('c' client, 's' server) and its flags byte.
using Seg = std::pair<char, uint8_t>;

// The states a flow can be in (everything but none), in declaration order.
constexpr State kFlowStates[] = {State::syn_sent,  State::syn_recv,   State::established,
                                 State::fin_wait,  State::close_wait, State::last_ack,
                                 State::time_wait, State::close,      State::syn_sent2};

inline Tracker stepped(Tracker t, Dir d, uint8_t flags)
{
    flowcop::tcpstate::step(t, d, flags);
    return t;
}

// A tracker in state s, reached the ordinary way (a SYN from orig, then the usual packets), so its
// private bits are what real traffic leaves behind. FIN_WAIT/CLOSE_WAIT/LAST_ACK follow an orig FIN.
inline Tracker reach(State s)
{
    Tracker t{flowcop::tcpstate::initial_state(kSyn, false)};
    switch (s) {
    case State::syn_sent: return t;
    case State::syn_sent2: return stepped(t, kR, kSyn);
    default: break;
    }
    t = stepped(t, kR, kSynack);
    if (s == State::syn_recv)
        return t;
    t = stepped(t, kO, kAck);
    if (s == State::established)
        return t;
    if (s == State::close)
        return stepped(t, kO, kRst);
    t = stepped(t, kO, kFinack);
    if (s == State::fin_wait)
        return t;
    t = stepped(t, kR, kAck);
    if (s == State::close_wait)
        return t;
    t = stepped(t, kR, kFinack);
    if (s == State::last_ack)
        return t;
    return stepped(t, kO, kAck); // time_wait
}

// Drives one 5-tuple the way the flow table does (lifecycle in tcp_state.h). Endpoints are 'c' and
// 's' (client, server) so a sequence can be copied from a capture without deciding who is "orig".
class FlowDriver {
public:
    enum class Event { created, not_created, ok, ignored, reset, reopened };

    explicit FlowDriver(bool loose) : _loose(loose) {}

    Event feed(char from, uint8_t flags)
    {
        if (!_tracked)
            return create(from, flags);
        const Dir d = from == _orig ? Dir::orig : Dir::reply;
        switch (flowcop::tcpstate::step(_t, d, flags)) {
        case Outcome::ok: return Event::ok;
        case Outcome::ignored: ++ignored; return Event::ignored;
        case Outcome::reset:
            ++resets;
            _reap_due = true;
            return Event::reset;
        case Outcome::reopen:
            ++reopens;
            _tracked = false;
            return create(from, flags) == Event::created ? Event::reopened : Event::not_created;
        case Outcome::out_of_window: break; // only track() returns it
        }
        FAIL("step() returned a value outside its Outcomes");
        return Event::ignored;
    }

    // The next timer tick: a reset flow goes away (the table reaps it on the tick after the RST).
    void tick()
    {
        if (_tracked && _reap_due)
            _tracked = false;
        _reap_due = false;
    }

    bool tracked() const { return _tracked; }
    const Tracker& tracker() const { return _t; }
    State state() const { return _tracked ? _t.state : State::none; }
    char orig() const { return _orig; }

    int created = 0, not_created = 0, ignored = 0, resets = 0, reopens = 0;

private:
    Event create(char from, uint8_t flags)
    {
        const State s = flowcop::tcpstate::initial_state(flags, _loose);
        if (s == State::none) {
            ++not_created;
            return Event::not_created;
        }
        _t = Tracker{s};
        _orig = from;
        _tracked = true;
        _reap_due = false;
        ++created;
        return Event::created;
    }

    bool _loose;
    bool _tracked = false;
    bool _reap_due = false;
    char _orig = 0;
    Tracker _t{};
};

} // namespace tcptest

namespace Catch {
template <>
struct StringMaker<flowcop::tcpstate::State> {
    static std::string convert(flowcop::tcpstate::State s) { return flowcop::tcpstate::state_name(s); }
};
template <>
struct StringMaker<flowcop::tcpstate::Outcome> {
    static std::string convert(flowcop::tcpstate::Outcome o)
    {
        switch (o) {
        case flowcop::tcpstate::Outcome::ok: return "ok";
        case flowcop::tcpstate::Outcome::ignored: return "ignored";
        case flowcop::tcpstate::Outcome::reset: return "reset";
        case flowcop::tcpstate::Outcome::reopen: return "reopen";
        case flowcop::tcpstate::Outcome::out_of_window: return "out_of_window";
        }
        return "Outcome(" + std::to_string(static_cast<int>(o)) + ")";
    }
};
template <>
struct StringMaker<tcptest::FlowDriver::Event> {
    static std::string convert(tcptest::FlowDriver::Event e)
    {
        static const char* const names[] = {"created", "not_created", "ok", "ignored", "reset", "reopened"};
        return names[static_cast<int>(e)];
    }
};
} // namespace Catch
