// SPDX-License-Identifier: BSD-3-Clause
// Oracle: the model, the common checks and the burst rules (see track_oracle.h).
#include "track_oracle.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace flowcop::fuzz {

using conntrack::FlowSnapshot;
using conntrack::Reason;

namespace {

unsigned ri(Reason r)
{
    return static_cast<unsigned>(r);
}

} // namespace

const FlowSnapshot* Oracle::Flows::find(const packet::FlowKey& k) const
{
    auto it = std::lower_bound(v.begin(), v.end(), k,
                               [](const FlowSnapshot& f, const packet::FlowKey& key) { return key_less(f.key, key); });
    return it != v.end() && it->key == k ? &*it : nullptr;
}

Oracle::Oracle(conntrack::FlowTable& table, const TrackSetup& setup, const fragattr::Counters* fragments)
    : _table(table), _capacity(setup.capacity), _timeouts(timeout_preset(setup.preset)),
      _all_protocols(setup.all_protocols), _vlan_key(setup.vlan_key), _proto_timeouts(kProtoTimeouts),
      _fragments(fragments), _active_ns(setup.active ? uint64_t(kActiveTimeoutS) * kSecNs : 0), _c(table.counters()),
      _buf(setup.capacity + 1)
{}

void Oracle::fail(const std::string& what)
{
    if (_failure.empty())
        _failure = what;
}

Oracle::Flows Oracle::take_snapshot()
{
    Flows f;
    const size_t n = _table.snapshot(conntrack::SnapshotFilter{}, _buf.data(), _buf.size());
    f.v.assign(_buf.begin(), _buf.begin() + long(n));
    std::sort(f.v.begin(), f.v.end(),
              [](const FlowSnapshot& a, const FlowSnapshot& b) { return key_less(a.key, b.key); });
    return f;
}

uint64_t Oracle::inactivity_deadline(const FlowSnapshot& f) const
{
    // TCP: its state's timeout, capped as window tracking chose; every other family: the timeout of
    // its protostate (protostate::timeout_of), which no cap shortens.
    const uint64_t s = f.proto == conntrack::Proto::tcp ? tcpstate::capped_timeout(_timeouts, f.state, f.cap)
                                                        : _proto_timeouts.seconds(protostate::timeout_of(f.other));
    return f.last_seen_ns + s * kSecNs;
}

uint64_t Oracle::deadline(const FlowSnapshot& f) const
{
    const uint64_t inactivity = inactivity_deadline(f);
    const uint64_t active = _active_ns ? f.first_seen_ns + _active_ns : 0;
    return active != 0 && active < inactivity ? active : inactivity;
}

Reason Oracle::timeout_reason(const FlowSnapshot& f, uint64_t t) const
{
    const uint64_t inactivity = inactivity_deadline(f);
    if (_active_ns && f.first_seen_ns + _active_ns <= t && f.first_seen_ns + _active_ns <= inactivity)
        return Reason::active;
    // No state of another protocol is a closed end (protostate: "inactivity").
    return f.proto == conntrack::Proto::tcp && tcpstate::expiry_is_closed(f.state) ? Reason::closed
                                                                                   : Reason::inactivity;
}

uint64_t Oracle::d_expired(Reason r) const
{
    return _c1.flows_expired[ri(r)] - _c.flows_expired[ri(r)];
}

bool Oracle::same_flow(const FlowSnapshot& a, const FlowSnapshot& b) const
{
    return a.key == b.key && a.orig_is_lo == b.orig_is_lo && a.assured == b.assured && a.reset == b.reset &&
           a.killed == b.killed && a.state == b.state && a.position == b.position &&
           a.first_seen_ns == b.first_seen_ns && a.last_seen_ns == b.last_seen_ns && a.packets[0] == b.packets[0] &&
           a.packets[1] == b.packets[1] && a.bytes[0] == b.bytes[0] && a.bytes[1] == b.bytes[1];
}

const Oracle::Mark* Oracle::find_mark(const std::vector<Mark>& marks, const FlowSnapshot& f)
{
    for (const Mark& m : marks)
        if (m.key == f.key && m.first_seen_ns == f.first_seen_ns)
            return &m;
    return nullptr;
}

void Oracle::commit(Flows&& s1)
{
    const conntrack::Counters& c = _c1;
    const uint64_t n = s1.v.size();
    if (n > _capacity)
        fail("more flows than the capacity: " + std::to_string(n));
    if (_table.active() != n)
        fail("active() " + std::to_string(_table.active()) + " != flows in the table " + std::to_string(n));
    if (c.flows_created != c.expired_total() + n)
        fail("created " + std::to_string(c.flows_created) + " != expired " + std::to_string(c.expired_total()) +
             " + in the table " + std::to_string(n));
    uint64_t by_verdict = 0;
    for (uint64_t v : c.packets_by_verdict)
        by_verdict += v;
    if (by_verdict != _frames)
        fail("packets by verdict " + std::to_string(by_verdict) + " != frames fed " + std::to_string(_frames));
    const uint64_t tcp = c.packets_by_verdict[static_cast<unsigned>(packet::Verdict::tcp)];
    if (c.tcp_tracked + c.tcp_invalid + c.tcp_no_flow + c.tcp_table_full + c.out_of_window_total() != tcp)
        fail("tracked + invalid + no_flow + table_full + out_of_window != TCP packets");
    if (c.tcp_out_of_window[static_cast<unsigned>(tcpstate::WindowReason::none)] != 0)
        fail("a packet counted out of window for no reason");
    if (c.cop_lock_failures != 0)
        fail("a cop lock failure with no reader holding a shard");
    if (_fragments != nullptr &&
        c.fragments_tracked + c.fragments_no_flow + c.fragments_late + _fragments->unattributed + _fragments->pending !=
            _fragment_frames)
        fail("later fragments fed " + std::to_string(_fragment_frames) +
             " != tracked + no_flow + late + unattributed + pending");
    check_flow_keys(s1);
    for (const FlowSnapshot& f : s1.v) {
        if (f.proto == conntrack::Proto::tcp) {
            if (f.state == tcpstate::State::none || f.state >= tcpstate::State::count)
                fail("a flow in state none or out of range");
        } else {
            const protostate::Family want = f.proto == conntrack::Proto::udp    ? protostate::Family::udp
                                            : f.proto == conntrack::Proto::icmp ? protostate::Family::icmp
                                                                                : protostate::Family::generic;
            if (!_all_protocols || f.proto >= conntrack::Proto::count)
                fail("a flow of a protocol that is not tracked");
            if (f.other.family() != want || f.assured != f.other.assured() ||
                (f.assured && (want != protostate::Family::udp || !f.other.seen_reply())))
                fail(std::string("a ") + conntrack::proto_name(f.proto) +
                     " flow whose family or assured flag its protocol's rules cannot give");
        }
        if (f.first_seen_ns > f.last_seen_ns || f.last_seen_ns > _now)
            fail("first_seen <= last_seen <= now broken");
        if (f.packets[0] == 0)
            fail("a flow without its creating packet");
        if (!f.reset && !f.killed && f.deadline_ns != deadline(f))
            fail("deadline " + std::to_string(f.deadline_ns) + " != the model's " + std::to_string(deadline(f)));
    }
    // Marks: remember when each mark was first seen (for the next-tick rule of after_cop).
    std::vector<Mark> marks;
    for (const FlowSnapshot& f : s1.v) {
        if (!f.reset && !f.killed)
            continue;
        const Mark* m = mark_of(f);
        marks.push_back(m ? *m : Mark{f.key, f.first_seen_ns, _drained_tick});
    }
    _marks = std::move(marks);
    std::vector<Mark> lowered;
    for (const Mark& m : _lowered) {
        const FlowSnapshot* f = s1.find(m.key);
        if (f && f->first_seen_ns == m.first_seen_ns)
            lowered.push_back(m);
    }
    _lowered = std::move(lowered);
    _flows = std::move(s1);
    _c = _c1;
}

void Oracle::after_burst(const packet::Packet* const* pkts, const uint64_t* times, unsigned n,
                         const fragattr::Held* held)
{
    _c1 = _table.counters();
    check_frame_keys(pkts, n);
    std::map<packet::FlowKey, uint64_t, KeyLess> first; // key -> time of its first packet that steps a flow
    uint64_t verdicts[packet::kVerdictCount] = {};
    uint64_t t_min = UINT64_MAX, t_max = 0;
    for (unsigned i = 0; i < n; ++i) {
        ++verdicts[static_cast<unsigned>(pkts[i]->verdict)];
        t_min = std::min(t_min, times[i]);
        t_max = std::max(t_max, times[i]);
        if (steps_a_flow(*pkts[i], _all_protocols)) {
            first.emplace(pkts[i]->key, times[i]);
            if (!_clock_started) {
                _clock_started = true;
                _drained_tick = times[i] / kTickNs;
            }
        }
    }
    _frames += n;
    if (_fragments != nullptr)
        _fragment_frames += verdicts[static_cast<unsigned>(packet::Verdict::fragment)];
    _now = std::max(_now, t_max);
    for (unsigned v = 0; v < packet::kVerdictCount; ++v)
        if (_c1.packets_by_verdict[v] - _c.packets_by_verdict[v] != verdicts[v])
            fail(std::string("packets counted as ") + packet::verdict_name(packet::Verdict(v)) +
                 " != frames parsed so");
    // A burst ends a flow as reset or killed only when a SYN reopens one that an RST (before or in
    // this burst) or a kill had already ended, before the cop's next tick reaped it; never as shutdown.
    uint64_t marked_reset = 0, marked_killed = 0;
    for (unsigned i = 0; i < n; ++i)
        if (pkts[i]->verdict == packet::Verdict::tcp && (pkts[i]->tcp_flags & 0x04))
            ++marked_reset;
    for (const auto& [key, t] : first)
        if (const FlowSnapshot* f = _flows.find(key)) {
            marked_reset += f->reset ? 1 : 0;
            marked_killed += (f->killed && !f->reset) ? 1 : 0;
        }
    if (d_expired(Reason::reset) > marked_reset || d_expired(Reason::killed) > marked_killed ||
        d_expired(Reason::shutdown))
        fail("a burst ended a flow as reset, killed or shutdown that no RST or kill had ended before it");
    if (_c1.cop_passes != _c.cop_passes || _c1.cop_fired != _c.cop_fired || _c1.rebase_visited != _c.rebase_visited)
        fail("a burst moved the cop's counters");

    // Expiry on arrival. A flow whose key's first packet comes at or after its deadline surely
    // ends then (a candidate). One whose deadline falls inside the burst after earlier packets
    // may end at the first packet at or after it, if every packet before was invalid (which keeps
    // the deadline; a valid one moves it at least the shortest timeout, 1 s, past the burst's
    // 500 ms span): a possible candidate, with its lag and reason known but not whether it ends.
    struct Tally {
        uint64_t n = 0, lag = 0, inactivity = 0, active = 0, closed = 0;
        void add(uint64_t l, Reason r)
        {
            ++n;
            lag += l;
            if (r == Reason::active)
                ++active;
            else if (r == Reason::closed)
                ++closed;
            else
                ++inactivity;
        }
    } sure, maybe;
    for (const auto& [key, t] : first) {
        const FlowSnapshot* f = _flows.find(key);
        if (!f || f->reset || f->killed)
            continue;
        const uint64_t d = deadline(*f);
        if (t >= d) {
            sure.add(t - d, timeout_reason(*f, t));
            continue;
        }
        for (unsigned i = 0; i < n; ++i)
            if (pkts[i]->verdict == packet::Verdict::tcp && pkts[i]->key == key && times[i] >= d) {
                maybe.add(times[i] - d, timeout_reason(*f, times[i]));
                break;
            }
    }
    const uint64_t lag_n = _c1.timeout_lag_ns.total() - _c.timeout_lag_ns.total();
    const uint64_t lag_sum = _c1.timeout_lag_ns.sum() - _c.timeout_lag_ns.sum();
    const uint64_t evicted = d_expired(Reason::evicted);
    const uint64_t timed_out = d_expired(Reason::inactivity) + d_expired(Reason::active);
    // Early drop may end a flow past its deadline that got no packet (EarlyDrop::timed_out): with its own
    // reason and a lag observation, which the model of expiry on arrival does not predict.
    const auto early = [&](conntrack::EarlyDrop d) {
        return _c1.early_dropped[static_cast<unsigned>(d)] - _c.early_dropped[static_cast<unsigned>(d)];
    };
    const uint64_t dropped_timed_out = early(conntrack::EarlyDrop::timed_out);
    if (evicted != early(conntrack::EarlyDrop::closing) + early(conntrack::EarlyDrop::unassured))
        fail("evictions differ from the closing and unassured early drops");
    if (lag_n > sure.n + maybe.n + dropped_timed_out)
        fail("more expiries on arrival (" + std::to_string(lag_n) + ") than flows past their deadline (" +
             std::to_string(sure.n + maybe.n) + ")");
    if (timed_out > lag_n || lag_n > timed_out + d_expired(Reason::closed))
        fail("lag observations do not match the timeout expiries of the burst");
    auto within = [](uint64_t v, uint64_t lo, uint64_t extra) { return v >= lo && v <= lo + extra; };
    if (evicted == 0 && dropped_timed_out == 0 &&
        (!within(lag_n, sure.n, maybe.n) || !within(lag_sum, sure.lag, maybe.lag) ||
         !within(d_expired(Reason::inactivity), sure.inactivity, maybe.inactivity) ||
         !within(d_expired(Reason::active), sure.active, maybe.active) || d_expired(Reason::closed) < sure.closed))
        fail("expiry on arrival differs from the model: lag count " + std::to_string(lag_n) + " want " +
             std::to_string(sure.n) + " + up to " + std::to_string(maybe.n) + ", lag sum " + std::to_string(lag_sum) +
             " want " + std::to_string(sure.lag) + " + up to " + std::to_string(maybe.lag));
    if (evicted + dropped_timed_out >
        _c1.early_drop_attempts - _c.early_drop_attempts + _c1.probe_window_full - _c.probe_window_full)
        fail("more early drops than early-drop attempts and full probe windows");

    Flows s1 = take_snapshot();
    // Window tracking (issue 16): a key with one packet in the burst, whose flow was live and not
    // past its deadline, gets tcpstate::track()'s verdict on a copy of the flow's state; when that is
    // out of window, the flow must have changed in nothing but its packet and byte counts (state,
    // tracker bits, last_seen, deadline and timeout cap as they were).
    // (A later fragment counted on the flow turns it liberal: its key is left out.)
    std::map<packet::FlowKey, unsigned, KeyLess> count;
    for (unsigned i = 0; i < n; ++i)
        if (steps_a_flow(*pkts[i], _all_protocols))
            ++count[pkts[i]->key];
    uint64_t predicted_out = 0;
    for (unsigned i = 0; i < n; ++i) {
        const packet::Packet& p = *pkts[i];
        if (p.verdict != packet::Verdict::tcp || count[p.key] != 1)
            continue;
        const FlowSnapshot* f = _flows.find(p.key);
        if (!f || f->reset || f->killed || times[i] >= deadline(*f))
            continue;
        tcpstate::Tracker tr = f->tcp;
        conntrack::WindowSpan w = f->window;
        const tcpstate::Dir dir = f->orig_is_lo == p.src_is_lo ? tcpstate::Dir::orig : tcpstate::Dir::reply;
        const tcpstate::TrackResult r = tcpstate::track(tcpstate::FlowRef{tr, w.tcp.seq, w.tcp.meta}, dir,
                                                        tcpstate::segment_of(p), _policy, _timeouts);
        if (r.outcome != tcpstate::Outcome::out_of_window)
            continue;
        ++predicted_out;
        const FlowSnapshot* g = s1.find(p.key);
        const unsigned d = static_cast<unsigned>(dir);
        if (!g || g->first_seen_ns != f->first_seen_ns || g->state != f->state || g->tcp.flags != f->tcp.flags ||
            g->last_seen_ns != f->last_seen_ns || g->deadline_ns != f->deadline_ns || g->cap != f->cap ||
            g->packets[d] != f->packets[d] + 1)
            fail(std::string("an out-of-window segment (") + tcpstate::window_reason_name(r.reason) +
                 ") changed its flow's state or deadline");
    }
    if (_c1.out_of_window_total() - _c.out_of_window_total() < predicted_out)
        fail("fewer segments counted out of window than track() refuses");
    uint64_t untouched_gone = 0;
    for (const FlowSnapshot& f : _flows.v) {
        const FlowSnapshot* g = s1.find(f.key);
        if (first.count(f.key)) {
            if (g && g->last_seen_ns < f.last_seen_ns)
                fail("a flow's last_seen went backwards");
            continue;
        }
        if (g && !same_flow(f, *g))
            fail("a flow that got no packet changed");
        if (!g) {
            ++untouched_gone;
            // Early drop takes an assured flow only when it is closing or past its deadline.
            if (f.assured && !(f.proto == conntrack::Proto::tcp && tcpstate::is_closing(f.state)) &&
                deadline(f) > t_max)
                fail("an assured open flow was evicted");
        }
    }
    if (untouched_gone > evicted + dropped_timed_out)
        fail("flows without a packet left the table, more than early drop took");
    for (const FlowSnapshot& g : s1.v) {
        const FlowSnapshot* f = _flows.find(g.key);
        const bool is_new = !f || f->first_seen_ns != g.first_seen_ns || f->position != g.position;
        if (is_new && !first.count(g.key))
            fail("a flow appeared for a key that got no packet");
        if (is_new && (g.first_seen_ns < t_min || g.first_seen_ns > t_max))
            fail("a new flow's first_seen is outside the burst's times");
    }
    if (_all_protocols) {
        uint64_t refused = _c1.tcp_table_full - _c.tcp_table_full;
        for (size_t p = 0; p < conntrack::kProtoCount; ++p)
            refused += _c1.proto_table_full[p] - _c.proto_table_full[p];
        check_other(pkts, times, n, held, s1, evicted == 0 && refused == 0);
    }
    commit(std::move(s1));
}

} // namespace flowcop::fuzz
