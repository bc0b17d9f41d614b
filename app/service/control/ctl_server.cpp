// SPDX-License-Identifier: BSD-3-Clause
// The control socket's server thread (ctl_server.h): accept, read one request, walk, write, close.
#include "ctl_server.h"

#include "control_cpus.h"
#include "control_parse.h"
#include "ctl_format.h"
#include "ctl_query.h"
#include "stats_rows.h"
#include <service/dataplane/commands.h>

#include <conntrack/flow_table.h>
#include <conntrack/reason.h>
#include <events/thread.h>
#include <stats/family.h>
#include <stats/relaxed.h>

#include <rte_eal.h>

#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

namespace flowcop::app {

using Clock = std::chrono::steady_clock;
using stats::bump;
using stats::load_relaxed;
using stats::store_relaxed;

struct CtlServer::Client {
    enum class Phase : uint8_t { free, reading, walking, draining, following };
    int fd = -1;
    Phase phase = Phase::free;
    std::string in, out;
    size_t out_off = 0;
    CtlRequest req;
    size_t worker = 0;
    uint32_t cursor = 0;
    uint64_t matched = 0, killed = 0, updated = 0;
    bool failed = false;              // some worker did not answer a kill_ids, or an update by filters stopped
    std::string fail_why;             // update by filters: why it stopped
    uint64_t lost = 0, lost_told = 0; // following: events lost because `out` was full, and told so
    size_t high = kOutputHighBytes;   // following: output held for it before it loses events (buffer=)
    bool paced = false;               // delete, flush: waiting for followers to take the destroys
    Clock::time_point since;          // accepted, or the last byte the client took
    size_t pending() const noexcept { return out.size() - out_off; }
};

namespace {

// {"error":"..."}: the sentence made printable ASCII (reply_text's \xNN for other bytes), then
// JSON-escaped, so any request bytes quoted in it keep the line valid JSON.
std::string error_line(const std::string& msg)
{
    std::string out = "{\"error\":\"";
    for (const char ch : reply_text(msg, 400)) {
        if (ch == '"' || ch == '\\')
            out += '\\';
        out += ch;
    }
    return out + "\"}\n";
}

// A JSON string: printable ASCII (reply_text), quotes and backslashes escaped.
std::string json_string(const std::string& text)
{
    std::string out = "\"";
    for (const char ch : reply_text(text, 400)) {
        if (ch == '"' || ch == '\\')
            out += '\\';
        out += ch;
    }
    return out + "\"";
}

long ms_since(Clock::time_point t, Clock::time_point now)
{
    return long(std::chrono::duration_cast<std::chrono::milliseconds>(now - t).count());
}

const char* verb_name(CtlVerb v)
{
    switch (v) {
    case CtlVerb::list: return "list";
    case CtlVerb::count: return "count";
    case CtlVerb::remove: return "delete";
    case CtlVerb::flush: return "flush";
    case CtlVerb::get: return "get";
    case CtlVerb::update: return "update";
    case CtlVerb::stats: return "stats";
    case CtlVerb::events: return "events";
    case CtlVerb::policy: return "policy";
    case CtlVerb::policy_reload: return "policy-reload";
    }
    return "?";
}

void discard_and_close(CtlServer::Client& c)
{
    if (c.fd >= 0) {
        // Unread request bytes (an oversized request) would make close() reset the connection, and the
        // client could lose the error line before reading it: discard what has arrived (bounded).
        char sink[4096];
        for (int i = 0; i < 16 && ::recv(c.fd, sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
        }
        ::close(c.fd);
    }
    c = CtlServer::Client{};
}

} // namespace

CtlServer::CtlServer(const StatsView& view, Control& control, CtlServerStats& stats)
    : _view(view), _control(control), _stats(stats)
{}

void CtlServer::close(Client& c) noexcept
{
    const bool was_following = c.phase == Client::Phase::following;
    discard_and_close(c);
    if (was_following) {
        --_followers;
        store_relaxed(_stats.followers, uint64_t{_followers});
        follow_kinds();
    }
}

void CtlServer::follow_kinds() noexcept
{
    // The kinds some follower wants, and no other: with nobody following (0) or followers of new and
    // destroy only, the lcores build no event (no update event) for this subscription.
    events::KindMask kinds = 0;
    for (unsigned i = 0; i < kMaxClients; ++i)
        if (_clients[i].phase == Client::Phase::following)
            kinds |= _clients[i].req.kinds;
    _follow_kinds = kinds;
    if (_follow != nullptr)
        _follow->set_kinds(kinds);
}

std::string CtlServer::default_path()
{
    return std::string(rte_eal_get_runtime_dir()) + "/flowcop_ctl.sock";
}

std::unique_ptr<CtlServer> CtlServer::start(const std::string& path, const StatsView& view, Control& control,
                                            events::Subscription* follow, CtlServerStats& stats, std::string& error)
{
    sockaddr_un addr{};
    if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
        error = "control socket path '" + path + "' is empty or longer than " +
                std::to_string(sizeof(addr.sun_path) - 1) + " bytes";
        return nullptr;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    addr.sun_family = AF_UNIX;
    std::unique_ptr<CtlServer> s(new CtlServer(view, control, stats));
    s->_clients = std::make_unique<Client[]>(kMaxClients);
    s->_follow = follow;
    if (follow != nullptr)
        follow->set_kinds(0); // paused until someone follows
    s->_listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->_listen_fd < 0) {
        error = std::string("control socket: ") + std::strerror(errno);
        return nullptr;
    }
    // A stale socket of a dead instance with this prefix (EAL allows one live primary per prefix).
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
        ::unlink(path.c_str());
    // Linux creates the file with the unbound socket's mode: 0600 from the start, no window.
    ::fchmod(s->_listen_fd, 0600);
    if (::bind(s->_listen_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
        ::chmod(path.c_str(), 0600) != 0 || ::listen(s->_listen_fd, 64) != 0) {
        error = "control socket " + path + ": " + std::strerror(errno);
        ::close(s->_listen_fd);
        s->_listen_fd = -1;
        return nullptr;
    }
    s->_path = path;
    CtlServer* self = s.get();
    try {
        s->_thread = events::spawn_consumer_thread(
            [] {
                pin_to_control_cpus();
                pthread_setname_np(pthread_self(), "flowcop-ctl"); // what top -H shows
            },
            [self] { self->run(); });
    } catch (const std::exception& e) {
        error = std::string("control socket thread: ") + e.what();
        ::close(s->_listen_fd);
        ::unlink(path.c_str());
        s->_listen_fd = -1;
        return nullptr;
    }
    return s;
}

CtlServer::~CtlServer()
{
    _stop.store(true, std::memory_order_relaxed);
    if (_thread.joinable())
        _thread.join();
    for (unsigned i = 0; _clients && i < kMaxClients; ++i)
        close(_clients[i]);
    if (_listen_fd >= 0) {
        ::close(_listen_fd);
        ::unlink(_path.c_str());
    }
}

uint64_t CtlServer::lcore_now(size_t worker) const noexcept
{
    // The lcore's own clock (the packet clock under --clock packet), which its deadlines follow.
    const uint64_t now = worker < _view.lcores.size() ? load_relaxed(_view.lcores[worker].worker->now_ns) : 0;
    return now != 0 ? now : _control.now_ns();
}

void CtlServer::run() noexcept
{
    std::vector<pollfd> fds(1 + kMaxClients);
    while (!_stop.load(std::memory_order_relaxed)) {
        bool busy = false; // a walk can go on without waiting for the socket
        fds[0] = {_listen_fd, POLLIN, 0};
        for (unsigned i = 0; i < kMaxClients; ++i) {
            const Client& c = _clients[i];
            short ev = 0;
            if (c.phase == Client::Phase::reading || c.phase == Client::Phase::following)
                ev = POLLIN; // a follower's end: its close
            if (c.pending() > 0)
                ev |= POLLOUT;
            busy = busy || (c.phase == Client::Phase::walking && !c.paced && c.pending() < kOutputHighBytes);
            fds[1 + i] = {c.fd, ev, 0};
        }
        const int timeout_ms = busy ? 0 : _followers > 0 ? int(kFollowPollMs) : 50;
        if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR)
            return;
        try {
            if (fds[0].revents & POLLIN)
                accept_clients();
            if (_followers > 0)
                fan_out();
            const auto now = Clock::now();
            for (unsigned i = 0; i < kMaxClients; ++i) {
                Client& c = _clients[i];
                if (c.phase == Client::Phase::free)
                    continue;
                if (c.phase == Client::Phase::reading && (fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
                    on_readable(c);
                if (c.phase == Client::Phase::following && (fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR))) {
                    char sink[256];
                    const ssize_t n = ::recv(c.fd, sink, sizeof sink, MSG_DONTWAIT);
                    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                        close(c); // the follower left
                        continue;
                    }
                }
                if (c.phase == Client::Phase::walking && c.pending() < kOutputHighBytes)
                    work(c);
                if (c.phase != Client::Phase::free && c.pending() > 0)
                    flush_output(c);
                if (c.phase == Client::Phase::following && c.pending() == 0 && c.lost > c.lost_told) {
                    // Tell it, once it has read what waited, how many events it lost.
                    c.out = "{\"lost\":" + std::to_string(c.lost) + "}\n";
                    c.lost_told = c.lost;
                    flush_output(c);
                }
                if (c.phase == Client::Phase::draining && c.pending() == 0) {
                    close(c);
                } else if (c.phase == Client::Phase::reading && ms_since(c.since, now) > long(kRequestTimeoutMs)) {
                    bump(_stats.refused_timeout);
                    c.out = error_line("no request line within " + std::to_string(kRequestTimeoutMs) + " ms");
                    c.phase = Client::Phase::draining;
                } else if (c.phase != Client::Phase::following && c.pending() > 0 &&
                           ms_since(c.since, now) > long(kStallMs)) {
                    bump(_stats.refused_slow); // it stopped reading: drop it rather than hold its output
                    close(c);
                }
            }
        } catch (const std::bad_alloc&) {
            // Out of memory formatting a reply: drop every client rather than the process.
            for (unsigned i = 0; i < kMaxClients; ++i)
                close(_clients[i]);
        }
    }
}

void CtlServer::accept_clients() noexcept
{
    while (true) {
        const int fd = ::accept4(_listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; // EAGAIN: none left (or a transient error: the next poll retries)
        Client* slot = nullptr;
        for (unsigned i = 0; i < kMaxClients && slot == nullptr; ++i)
            if (_clients[i].phase == Client::Phase::free)
                slot = &_clients[i];
        if (slot == nullptr) {
            bump(_stats.refused_busy);
            static const std::string busy =
                error_line("too many control clients (" + std::to_string(kMaxClients) + "): try again");
            (void)::send(fd, busy.data(), busy.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
            ::close(fd);
            continue;
        }
        bump(_stats.connections);
        slot->fd = fd;
        slot->phase = Client::Phase::reading;
        slot->since = Clock::now();
    }
}

void CtlServer::on_readable(Client& c) noexcept
{
    char buf[2048];
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        close(c); // gone before asking anything
        return;
    }
    if (n < 0)
        return;
    c.in.append(buf, size_t(n));
    const size_t nl = c.in.find('\n');
    if (nl == std::string::npos) {
        if (c.in.size() > kMaxRequestBytes) {
            bump(_stats.refused_bad);
            c.out = error_line("request longer than " + std::to_string(kMaxRequestBytes) + " bytes");
            c.phase = Client::Phase::draining;
        }
        return;
    }
    std::string line = c.in.substr(0, nl);
    if (!line.empty() && line.back() == '\r')
        line.pop_back();
    start_request(c, line);
}

void CtlServer::start_request(Client& c, const std::string& line)
{
    bump(_stats.requests);
    c.phase = Client::Phase::draining;
    if (std::string e = parse_ctl_request(line, c.req); !e.empty()) {
        bump(_stats.refused_bad);
        c.out = error_line(e);
        return;
    }
    if (!_control.running()) {
        c.out = error_line("flowcop is not running");
        return;
    }
    const CtlRequest& r = c.req;
    if (r.verb == CtlVerb::get || (r.verb == CtlVerb::update && !r.walk)) {
        conntrack::FlowSnapshot snap{};
        size_t worker = 0;
        const int found = r.verb == CtlVerb::get ? _control.get(r.key, snap, worker)
                                                 : _control.set_timeout(r.key, r.timeout_s, snap, worker);
        if (found == -2) {
            c.out = error_line("lcore " + std::to_string(_view.lcores[worker].lcore) + " holds " +
                               std::to_string(conntrack::FlowTable::kMaxTimeoutUpdates) +
                               " flows whose timeout was set and has not been cleared by a packet or their end: "
                               "try again later");
            return;
        }
        if (found < 0) {
            c.out = error_line("a worker lcore did not answer");
            return;
        }
        if (found == 1)
            append_flow_json(c.out, _view.lcores[worker].lcore, snap, lcore_now(worker));
        c.out += std::string("{\"done\":\"") + verb_name(r.verb) + "\",\"flows\":" + std::to_string(found) + "}\n";
        return;
    }
    if (r.verb == CtlVerb::stats) {
        // Every lcore row of the stats model (stats_rows.h) under its /flowcop/stats key, per lcore.
        for (const LcoreView& v : _view.lcores) {
            c.out += "{\"lcore\":" + std::to_string(v.lcore);
            stats::for_each_telemetry_sample(
                lcore_families(), std::span<const LcoreView>(&v, 1),
                [&](const std::string& key, uint64_t value) { c.out += ",\"" + key + "\":" + std::to_string(value); });
            c.out += "}\n";
        }
        // Then the socket's own counters and the state file's, from the rows /metrics serves (ctl_families(),
        // state_families()).
        c.out += "{\"done\":\"stats\"";
        stats::for_each_telemetry_sample(
            ctl_families(), std::span<const CtlView>(&_view.ctl, 1),
            [&](const std::string& key, uint64_t value) { c.out += ",\"" + key + "\":" + std::to_string(value); });
        stats::for_each_telemetry_sample(
            state_families(), std::span<const StateView>(&_view.state, 1),
            [&](const std::string& key, uint64_t value) { c.out += ",\"" + key + "\":" + std::to_string(value); });
        c.out += "}\n";
        return;
    }
    if (r.verb == CtlVerb::policy_reload) {
        std::string error;
        if (!_control.reload_policy(error)) {
            c.out = error_line("policy reload failed, the running policy stays: " + error);
            return;
        }
        c.out = "{\"done\":\"policy-reload\",\"rules\":" + std::to_string(_control.policy_listing().rules.size() - 1) +
                "}\n";
        return;
    }
    if (r.verb == CtlVerb::policy) {
        const PolicyListing l = _control.policy_listing();
        if (!l.active) {
            c.out = error_line("flowcop runs without --policy");
            return;
        }
        // One line per rule, the default last, then the totals.
        for (const PolicyRuleRow& row : l.rules)
            c.out += "{\"rule\":" + std::to_string(row.index) + ",\"text\":" + json_string(row.text) +
                     ",\"comment\":" + json_string(row.comment) + ",\"action\":\"" + (row.drop ? "drop" : "accept") +
                     "\",\"packets\":" + std::to_string(row.packets) + ",\"bytes\":" + std::to_string(row.bytes) +
                     "}\n";
        c.out += "{\"done\":\"policy\",\"path\":" + json_string(l.path) +
                 ",\"enforced\":" + (l.enforced ? "true" : "false") + ",\"reloads\":" + std::to_string(l.reloads_ok) +
                 ",\"reload_failures\":" + std::to_string(l.reloads_failed) +
                 ",\"last_error\":" + json_string(l.last_error) + "}\n";
        return;
    }
    if (r.verb == CtlVerb::events) {
        if (_follow == nullptr) {
            c.out = error_line("this flowcop has no event stream to follow");
            return;
        }
        c.phase = Client::Phase::following;
        c.high = r.buffer_bytes != 0 ? r.buffer_bytes : kFollowBufferBytes;
        ++_followers;
        store_relaxed(_stats.followers, uint64_t{_followers});
        follow_kinds();
        c.out = "{\"following\":\"events\"}\n"; // the client knows the request was taken
        return;
    }
    c.phase = Client::Phase::walking; // list, count, delete, flush, update by filters: sliced walks (work())
    c.worker = 0;
    c.cursor = 0;
    c.since = Clock::now();
}

void CtlServer::work(Client& c)
{
    static thread_local std::vector<conntrack::FlowSnapshot> slice(kSliceRecords);
    static_assert(kSliceRecords <= Command::kMaxIds, "one slice's matches are one kill_ids command");
    uint64_t ids[kSliceRecords];
    uint32_t at[kSliceRecords]; // the slice index of ids[i]
    uint8_t killed[kSliceRecords];
    const CtlVerb verb = c.req.verb;
    const bool kill = verb == CtlVerb::remove || verb == CtlVerb::flush;
    for (unsigned k = 0; k < kSlicesPerTurn && c.pending() < kOutputHighBytes; ++k) {
        if (c.worker >= _view.lcores.size()) {
            finish(c);
            return;
        }
        const uint32_t room = kill ? kill_room() : kSliceRecords;
        c.paced = room == 0;
        if (c.paced)
            return; // the next turn asks again (every kFollowPollMs while someone follows)
        const unsigned lcore = _view.lcores[c.worker].lcore;
        if (c.req.filter.has_lcore && c.req.filter.lcore != lcore) {
            ++c.worker;
            continue;
        }
        size_t n = 0;
        const uint32_t next = _control.read_slice(c.worker, c.cursor, room, slice.data(), n);
        const uint64_t now = lcore_now(c.worker);
        unsigned n_ids = 0;
        for (size_t i = 0; i < n; ++i) {
            if (verb != CtlVerb::flush && !ctl_matches(c.req.filter, CtlCandidate::of(lcore, slice[i])))
                continue;
            ++c.matched;
            if (verb == CtlVerb::list) {
                append_flow_json(c.out, lcore, slice[i], now);
            } else if (kill) {
                at[n_ids] = uint32_t(i);
                ids[n_ids++] = slice[i].flow_id;
            } else if (verb == CtlVerb::update && !update_one(c, slice[i])) {
                finish(c);
                return;
            }
        }
        if (n_ids > 0) {
            const int n_killed = _control.kill_ids(c.worker, ids, n_ids, killed);
            if (n_killed < 0) { // each further ask would hold this thread (every client) for its timeout
                c.failed = true;
                finish(c);
                return;
            }
            c.killed += uint64_t(n_killed);
            _kills_marked += uint64_t(n_killed);
            // conntrack -D prints each entry it deleted (-F does not): the flow as read, before its kill.
            for (unsigned j = 0; verb == CtlVerb::remove && j < n_ids; ++j)
                if (killed[j] != 0)
                    append_flow_json(c.out, lcore, slice[at[j]], now);
        }
        if (next == conntrack::kNoPosition) {
            ++c.worker;
            c.cursor = 0;
        } else {
            c.cursor = next;
        }
    }
}

bool CtlServer::update_one(Client& c, const conntrack::FlowSnapshot& f)
{
    conntrack::FlowSnapshot after{};
    size_t worker = 0;
    const int found = _control.set_timeout(f.key, c.req.timeout_s, after, worker);
    if (found == 1) {
        ++c.updated;
        append_flow_json(c.out, _view.lcores[worker].lcore, after, lcore_now(worker));
        return true;
    }
    if (found == 0) // it ended since the slice was read
        return true;
    c.failed = true;
    c.fail_why = found == -2 ? "lcore " + std::to_string(_view.lcores[worker].lcore) + " holds " +
                                   std::to_string(conntrack::FlowTable::kMaxTimeoutUpdates) +
                                   " flows whose timeout was set and has not been cleared by a packet or their end"
                             : std::string("a worker lcore did not answer");
    return false;
}

void CtlServer::finish(Client& c)
{
    c.phase = Client::Phase::draining;
    const CtlVerb verb = c.req.verb;
    if (c.failed && verb == CtlVerb::update) {
        c.out += error_line(c.fail_why + ": " + std::to_string(c.updated) + " of the matching flows were updated; " +
                            "the walk stopped there");
        return;
    }
    if (c.failed) {
        c.out += error_line("a worker lcore did not answer: " + std::to_string(c.killed) + " of " +
                            std::to_string(c.matched) + " matching flows seen were killed; the walk stopped there");
        return;
    }
    c.out += std::string("{\"done\":\"") + verb_name(verb) + "\"";
    if (verb == CtlVerb::remove || verb == CtlVerb::flush)
        c.out += ",\"matched\":" + std::to_string(c.matched) + ",\"killed\":" + std::to_string(c.killed) + "}\n";
    else if (verb == CtlVerb::update)
        c.out += ",\"flows\":" + std::to_string(c.updated) + "}\n";
    else
        c.out += ",\"flows\":" + std::to_string(c.matched) + "}\n";
}

size_t CtlServer::format_follow_line(const events::Event& e, std::optional<Options>& opt, char* line, size_t size)
{
    const size_t len = events::format_json_line(e, line, size - 32);
    if (len < 2 || e.kind != events::Kind::created)
        return len;
    // conntrack -E's NEW line shows the timeout the flow starts with: "timeout" before the closing brace.
    if (!opt)
        opt = _control.current_options();
    const int n = std::snprintf(line + len - 2, 32, ",\"timeout\":%u}\n", created_timeout_s(*opt, e));
    return n > 0 && n < 32 ? len - 2 + size_t(n) : 0;
}

uint32_t CtlServer::kill_room() noexcept
{
    if (_follow == nullptr || !(_follow_kinds & events::kind_bit(events::Kind::destroyed)))
        return kSliceRecords; // nobody follows destroys: kill at the walk's pace
    const auto now = Clock::now();
    // Destroys a follower can still hold: what its buffer has free, at kPaceEventBytes a line.
    uint64_t room = kSliceRecords + kPaceWindow;
    for (unsigned i = 0; i < kMaxClients; ++i) {
        const Client& f = _clients[i];
        if (f.phase != Client::Phase::following || !(f.req.kinds & events::kind_bit(events::Kind::destroyed)))
            continue;
        // One that took nothing for kPaceStallMs while output waited holds nothing back: it loses events.
        if (f.pending() > 0 && ms_since(f.since, now) > long(kPaceStallMs))
            continue;
        room = std::min<uint64_t>(room, (f.high - std::min(f.high, f.pending())) / kPaceEventBytes);
    }
    room = std::min<uint64_t>(room, kPaceWindow);
    const uint64_t outstanding = _kills_marked > _kill_destroys_seen ? _kills_marked - _kill_destroys_seen : 0;
    if (outstanding < room) {
        _pace_progress = now;
        return uint32_t(std::min<uint64_t>(room - outstanding, kSliceRecords));
    }
    if (ms_since(_pace_progress, now) > long(kPaceStallMs)) {
        // No destroy came for that long (an lcore's follow ring overflowed, or its cop is held): stop
        // waiting for the ones outstanding rather than stall the kill.
        _kill_destroys_seen = _kills_marked;
        _pace_progress = now;
    }
    return 0;
}

void CtlServer::fan_out()
{
    constexpr unsigned kTake = 512;
    static thread_local std::vector<events::Event> batch(kTake);
    char line[events::kTypicalMaxLine + 32];
    std::optional<Options> opt; // the timeouts in force, read once per turn that has a new event
    for (unsigned p = 0; p < _follow->producers(); ++p) {
        for (unsigned round = 0; round < 64; ++round) { // a bounded share per turn: other clients wait
            unsigned left = 0;
            const unsigned n = _follow->take(p, batch.data(), kTake, left);
            for (unsigned i = 0; i < n; ++i) {
                const events::Event& e = batch[i];
                if (e.kind == events::Kind::destroyed && e.reason_code == uint8_t(conntrack::Reason::killed)) {
                    ++_kill_destroys_seen; // kill pacing: a kill reported
                    _pace_progress = Clock::now();
                }
                const CtlCandidate candidate = CtlCandidate::of(e);
                size_t len = 0;
                for (unsigned k = 0; k < kMaxClients; ++k) {
                    Client& c = _clients[k];
                    if (c.phase != Client::Phase::following || !(c.req.kinds & events::kind_bit(e.kind)) ||
                        !ctl_matches(c.req.filter, candidate))
                        continue;
                    if (c.pending() >= c.high) {
                        ++c.lost;
                        bump(_stats.events_lost);
                        continue;
                    }
                    if (len == 0 && (len = format_follow_line(e, opt, line, sizeof line)) == 0)
                        break; // unformattable (cannot happen for the table's events): nobody gets it
                    c.out.append(line, len);
                    bump(_stats.events_sent);
                }
            }
            if (n < kTake || left == 0)
                break;
        }
    }
}

void CtlServer::flush_output(Client& c) noexcept
{
    while (c.pending() > 0) {
        const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.pending(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            close(c); // the client went away (EPIPE, ECONNRESET)
            return;
        }
        c.out_off += size_t(n);
        bump(_stats.sent_bytes, uint64_t(n));
        c.since = Clock::now();
    }
    // Everything sent: reuse the buffer from its start.
    c.out.clear();
    c.out_off = 0;
}

} // namespace flowcop::app
