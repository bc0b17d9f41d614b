// SPDX-License-Identifier: BSD-3-Clause
// TableModel (see table_model.h).
#include "table_model.h"
#include <conntrack/table_inspector.h>

#include <cstring>

namespace flowcop::fuzz {

using conntrack::FlowSnapshot;
using conntrack::Reason;

namespace {

unsigned ri(Reason r)
{
    return static_cast<unsigned>(r);
}

std::string n2s(uint64_t v)
{
    return std::to_string(v);
}

} // namespace

TableModel::TableModel(const conntrack::TableConfig& config, const std::vector<packet::FlowKey>& keys)
    : _config(config), _keys(keys), _flows(keys.size())
{
    for (size_t s = 0; s < tcpstate::kStateCount; ++s)
        _rules.state_timeout_ns[s] = uint64_t(config.timeouts.effective(tcpstate::State(s))) * kTableSecNs;
    _rules.active_timeout_ns = uint64_t(config.active_timeout_s) * kTableSecNs;
    const uint32_t caps[tcpstate::kCapCount] = {0, config.timeouts.max_retrans, config.timeouts.unacknowledged,
                                                config.timeouts.effective(tcpstate::State::close)};
    for (size_t c = 0; c < tcpstate::kCapCount; ++c)
        _rules.cap_timeout_ns[c] = caps[c] == 0 ? UINT64_MAX : uint64_t(caps[c]) * kTableSecNs;
}

uint8_t TableModel::marks(const ModelFlow& f) noexcept
{
    return uint8_t((f.reset ? conntrack::FlowRecord::kReset : 0) | (f.killed ? conntrack::FlowRecord::kKilled : 0) |
                   (f.window.meta.cap << conntrack::FlowRecord::kCapShift));
}

size_t TableModel::live() const noexcept
{
    size_t n = 0;
    for (const ModelFlow& f : _flows)
        n += f.live ? 1 : 0;
    return n;
}

uint64_t TableModel::deadline(const ModelFlow& f) const noexcept
{
    return conntrack::flow_deadline(_rules, marks(f), f.tcp.state, f.last_seen, [&] { return f.first_seen; });
}

Reason TableModel::reason(const ModelFlow& f, uint64_t now) const noexcept
{
    if (f.reset)
        return Reason::reset;
    if (f.killed)
        return Reason::killed;
    const uint64_t inactivity = f.last_seen + conntrack::inactivity_timeout_ns(_rules, marks(f), f.tcp.state);
    const uint64_t active = f.first_seen + _rules.active_timeout_ns;
    if (_rules.active_timeout_ns != 0 && active <= now && active <= inactivity)
        return Reason::active;
    return tcpstate::expiry_is_closed(f.tcp.state) ? Reason::closed : Reason::inactivity;
}

void TableModel::end(ModelFlow& f, Reason r)
{
    f = ModelFlow{};
    ++_expired[ri(r)];
}

void TableModel::create(unsigned k, const packet::Packet& p, uint64_t t)
{
    const tcpstate::State s = tcpstate::initial_state(p.tcp_flags, _config.loose_pickup);
    if (s == tcpstate::State::none) {
        ++_no_flow;
        return;
    }
    if (live() >= _config.capacity) {
        _unpredicted = true; // early drop picks at random
        return;
    }
    ModelFlow& f = _flows[k];
    f = ModelFlow{};
    f.live = true;
    f.tcp = tcpstate::Tracker{s, 0};
    f.orig_is_lo = p.src_is_lo;
    f.first_seen = f.last_seen = t;
    f.packets[0] = 1;
    f.bytes[0] = p.ip_len;
    f.flags_seen[0] = p.tcp_flags;
    tcpstate::window_create(tcpstate::FlowRef{f.tcp, f.window.seq, f.window.meta}, tcpstate::segment_of(p),
                            _config.timeouts);
    ++_created;
    ++_tracked;
}

void TableModel::packet(unsigned k, const packet::Packet& p, uint64_t t)
{
    if (_unpredicted)
        return; // resynced at the next check
    ModelFlow& f = _flows[k];
    if (!f.live) {
        create(k, p, t);
        return;
    }
    if (!f.reset && !f.killed &&
        conntrack::timeout_deadline(_rules, marks(f), f.tcp.state, f.last_seen, [&] { return f.first_seen; }) <= t) {
        end(f, reason(f, t)); // expiry on arrival
        create(k, p, t);
        return;
    }
    const tcpstate::Dir dir = f.orig_is_lo == p.src_is_lo ? tcpstate::Dir::orig : tcpstate::Dir::reply;
    tcpstate::Tracker tr = f.tcp;
    const uint8_t cap_before = f.window.meta.cap;
    const tcpstate::TrackResult res = tcpstate::track(tcpstate::FlowRef{tr, f.window.seq, f.window.meta}, dir,
                                                      tcpstate::segment_of(p), _config.window, _config.timeouts);
    const tcpstate::Outcome o = res.outcome;
    if (o == tcpstate::Outcome::reopen) {
        end(f, (f.reset || f.killed) ? reason(f, t) : Reason::closed);
        create(k, p, t);
        return;
    }
    const unsigned d = static_cast<unsigned>(dir);
    ++f.packets[d];
    f.bytes[d] += p.ip_len;
    f.flags_seen[d] |= p.tcp_flags;
    if (o == tcpstate::Outcome::ignored) {
        ++_invalid;
        return;
    }
    if (o == tcpstate::Outcome::out_of_window) {
        // The oracle rule: an out-of-window segment changes neither the state nor the deadline's inputs.
        if (tr.state != f.tcp.state || tr.flags != f.tcp.flags || f.window.meta.cap != cap_before)
            _violation = "an out-of-window segment changed the tracker or the timeout cap";
        ++_out_of_window;
        return;
    }
    ++_tracked;
    f.last_seen = t;
    f.tcp = tr;
    if (o == tcpstate::Outcome::reset)
        f.reset = true;
}

void TableModel::cop(uint64_t now)
{
    if (_unpredicted)
        return;
    for (ModelFlow& f : _flows)
        if (f.live && deadline(f) <= now)
            end(f, reason(f, now));
}

bool TableModel::kill(unsigned k)
{
    ModelFlow& f = _flows[k];
    if (!f.live)
        return false;
    f.killed = true;
    return true;
}

void TableModel::destroy_all(uint64_t now)
{
    for (ModelFlow& f : _flows)
        if (f.live)
            end(f, (f.reset || f.killed || deadline(f) <= now) ? reason(f, now) : Reason::shutdown);
}

int TableModel::key_index(const packet::FlowKey& key) const noexcept
{
    for (size_t i = 0; i < _keys.size(); ++i)
        if (_keys[i] == key)
            return int(i);
    return -1;
}

std::vector<FlowSnapshot> TableModel::flows_of(const conntrack::FlowTable& table) const
{
    std::vector<FlowSnapshot> out(table.capacity() + 1);
    out.resize(table.snapshot(conntrack::SnapshotFilter{}, out.data(), out.size()));
    return out;
}

// What holds whatever the model could not predict.
std::string TableModel::weak_check(const conntrack::FlowTable& table) const
{
    if (conntrack::TableInspector::pending(table))
        return "the table has packets pending after drain()";
    const std::string index = conntrack::TableInspector::index(table).check(
        [&](uint32_t pos) { return conntrack::TableInspector::home_bucket(table, pos); });
    if (!index.empty())
        return "index: " + index;
    const conntrack::Counters& c = table.counters();
    const std::vector<FlowSnapshot> flows = flows_of(table);
    if (flows.size() != table.active() || c.flows_created != c.expired_total() + flows.size())
        return "accounting: created " + n2s(c.flows_created) + " != expired " + n2s(c.expired_total()) +
               " + in the table " + n2s(flows.size()) + " (active " + n2s(table.active()) + ")";
    if (flows.size() > table.capacity())
        return "more flows than the capacity";
    std::vector<int> pos_of(_keys.size(), -1);
    for (const FlowSnapshot& f : flows) {
        const int k = key_index(f.key);
        if (k < 0)
            return "a flow whose key no packet carried";
        if (pos_of[size_t(k)] >= 0)
            return "two flows with key " + n2s(unsigned(k));
        pos_of[size_t(k)] = int(f.position);
        if (f.deadline_ns != conntrack::TableInspector::deadline(table, f.position))
            return "key " + n2s(unsigned(k)) + ": the listing's deadline is not the table's";
    }
    for (size_t k = 0; k < _keys.size(); ++k)
        if (conntrack::TableInspector::find(table, _keys[k]) != pos_of[k])
            return "find(key " + n2s(k) + ") = " + std::to_string(conntrack::TableInspector::find(table, _keys[k])) +
                   ", the listing says " + std::to_string(pos_of[k]);
    return "";
}

std::string TableModel::resync(const conntrack::FlowTable& table)
{
    for (ModelFlow& f : _flows)
        f = ModelFlow{};
    for (const FlowSnapshot& s : flows_of(table)) {
        ModelFlow& f = _flows[size_t(key_index(s.key))];
        f.live = true;
        f.tcp = s.tcp;
        f.orig_is_lo = s.orig_is_lo;
        f.reset = s.reset;
        f.killed = s.killed;
        f.first_seen = s.first_seen_ns;
        f.last_seen = s.last_seen_ns;
        f.window = s.window.tcp;
        for (int d = 0; d < 2; ++d) {
            f.packets[d] = s.packets[d];
            f.bytes[d] = s.bytes[d];
            f.flags_seen[d] = s.tcp_flags_seen[d];
        }
    }
    _base = table.counters();
    _created = _tracked = _invalid = _no_flow = _out_of_window = 0;
    _expired = {};
    _unpredicted = false;
    return "";
}

std::string TableModel::check(const conntrack::FlowTable& table)
{
    if (std::string w = weak_check(table); !w.empty())
        return w;
    const conntrack::Counters& c = table.counters();
    if (_unpredicted || c.early_drop_attempts != _base.early_drop_attempts ||
        c.probe_window_full != _base.probe_window_full || c.tcp_table_full != _base.tcp_table_full)
        return resync(table);
    if (!_violation.empty())
        return _violation;
    auto moved = [](uint64_t now, uint64_t before) { return now - before; };
    if (moved(c.out_of_window_total(), _base.out_of_window_total()) != _out_of_window)
        return "tcp out of window " + n2s(moved(c.out_of_window_total(), _base.out_of_window_total())) +
               ", the model " + n2s(_out_of_window);
    if (moved(c.flows_created, _base.flows_created) != _created)
        return "flows created " + n2s(moved(c.flows_created, _base.flows_created)) + ", the model " + n2s(_created);
    if (moved(c.tcp_tracked, _base.tcp_tracked) != _tracked || moved(c.tcp_invalid, _base.tcp_invalid) != _invalid ||
        moved(c.tcp_no_flow, _base.tcp_no_flow) != _no_flow)
        return "tcp outcomes tracked/invalid/no_flow " + n2s(moved(c.tcp_tracked, _base.tcp_tracked)) + "/" +
               n2s(moved(c.tcp_invalid, _base.tcp_invalid)) + "/" + n2s(moved(c.tcp_no_flow, _base.tcp_no_flow)) +
               ", the model " + n2s(_tracked) + "/" + n2s(_invalid) + "/" + n2s(_no_flow);
    for (unsigned r = 0; r < conntrack::kReasonCount; ++r)
        if (moved(c.flows_expired[r], _base.flows_expired[r]) != _expired[r])
            return std::string("flows expired '") + conntrack::reason_name(Reason(r)) + "' " +
                   n2s(moved(c.flows_expired[r], _base.flows_expired[r])) + ", the model " + n2s(_expired[r]);
    const std::vector<FlowSnapshot> flows = flows_of(table);
    if (flows.size() != live())
        return n2s(flows.size()) + " flows in the table, the model has " + n2s(live());
    for (const FlowSnapshot& s : flows) {
        const unsigned k = unsigned(key_index(s.key));
        const ModelFlow& f = _flows[k];
        const std::string who = "key " + n2s(k) + ": ";
        if (!f.live)
            return who + "in the table, not in the model";
        if (s.tcp.state != f.tcp.state || s.tcp.flags != f.tcp.flags)
            return who + "state " + tcpstate::state_name(s.tcp.state) + ", the model " +
                   tcpstate::state_name(f.tcp.state);
        if (s.orig_is_lo != f.orig_is_lo || s.reset != f.reset || s.killed != f.killed)
            return who + "direction or marks differ";
        if (s.cap != f.window.meta.timeout_cap() || std::memcmp(&s.window.tcp, &f.window, sizeof f.window) != 0)
            return who + "window tracking's state or timeout cap differs";
        if (s.first_seen_ns != f.first_seen || s.last_seen_ns != f.last_seen)
            return who + "first/last seen " + n2s(s.first_seen_ns) + "/" + n2s(s.last_seen_ns) + ", the model " +
                   n2s(f.first_seen) + "/" + n2s(f.last_seen);
        for (int d = 0; d < 2; ++d)
            if (s.packets[d] != f.packets[d] || s.bytes[d] != f.bytes[d] || s.tcp_flags_seen[d] != f.flags_seen[d])
                return who + "direction " + n2s(unsigned(d)) + ": packets " + n2s(s.packets[d]) + " bytes " +
                       n2s(s.bytes[d]) + " flags " + n2s(s.tcp_flags_seen[d]) + ", the model " + n2s(f.packets[d]) +
                       " / " + n2s(f.bytes[d]) + " / " + n2s(f.flags_seen[d]);
    }
    return resync(table); // the same state: takes the new counter base
}

std::string TableModel::check_partial_cop(const conntrack::FlowTable& table, uint64_t now)
{
    if (std::string w = weak_check(table); !w.empty())
        return w;
    if (!_unpredicted) {
        std::vector<bool> present(_keys.size(), false);
        for (const FlowSnapshot& s : flows_of(table))
            present[size_t(key_index(s.key))] = true;
        for (size_t k = 0; k < _keys.size(); ++k) {
            const ModelFlow& f = _flows[k];
            if (present[k] && !f.live)
                return "key " + n2s(k) + ": appeared in a cop pass";
            if (!present[k] && f.live && deadline(f) > now)
                return "key " + n2s(k) + ": fired before its deadline";
        }
    }
    return resync(table);
}

} // namespace flowcop::fuzz
