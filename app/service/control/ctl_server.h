// SPDX-License-Identifier: BSD-3-Clause
// The control socket: a Unix stream socket that streams the whole flow table, and deletes, flushes
// and gets flows, for flowcopctl (app/flowcopctl). DPDK telemetry's replies are size-limited (about
// 32 flows), so a 10^6-flow listing needs a channel of its own.
//
// Where: <EAL runtime dir>/flowcop_ctl.sock, next to DPDK's dpdk_telemetry.v2 (/var/run/dpdk/PREFIX/ for
// root: a directory of mode 0700), created mode 0600: only flowcop's user can connect, and whoever can
// controls flowcop (delete, flush). A stale file of a dead instance with the same prefix is replaced (EAL
// refuses a second live primary with one prefix). Removed when the server stops.
//
// Protocol: the client sends one request line (ctl_query.h); the server answers with JSON lines and
// closes: one line per flow (ctl_format.h) for list, get and update (the flow after the change), one line per lcore for stats (every
// lcore row of stats_rows.h under its /flowcop/stats key), then a last line {"done":VERB,...} with
// the totals, or {"error":"<one sentence>"} instead.
//
// Threading and the data path. One server thread (every signal blocked, pinned to EAL's control-thread
// CPUs: never a polling lcore's CPU) serves every client with poll(). It reads tables only through
// FlowTable::read_slice: kSliceRecords positions under one shard lock, copied, then formatted outside it,
// so a worker waits for a reader at most one slice's copy, and its cop only defers that shard's due
// flows. A walk lists every flow that lives through it exactly once (not an atomic snapshot, as conntrack
// -L is not). Clients are served in turns of kSlicesPerTurn slices each, so one big listing does not
// starve another client. Changes (delete, flush, update) and get go to the owner lcore's mailbox
// (commands.h): get and update are one O(1) lookup per lcore; delete/flush send each slice's matching flow ids (at most
// kSliceRecords) as one kill_ids command, which the owner marks in O(1) each; the cop reaps them as its
// budget allows, like any kill (reason "killed"). A flow that ended and whose position was reused between
// the read and the kill is not touched: ids carry the position's generation.
//
// Following events (`events`, flowcopctl -E): the server owns one subscription to the event stream
// (stream.h), paused (set_kinds(0): the lcores build no event for it) while nobody follows, and taking
// only the kinds some follower asked for (the union of theirs) while some do. With followers it
// takes every lcore's ring every kFollowPollMs and hands each event, formatted once as the --events line
// (events/event.h), to every follower whose kinds and filters match. A follower whose output is full loses
// the event: counted per follower (a {"lost":N} line tells it, once it has read what waited) and in
// events_lost; an lcore whose ring was full lost it for every follower (the subscription's dropped_full).
// Both are flowcop_ctl_events_lost_total{reason} in /metrics (stats_rows.h). Neither ever slows an lcore. A follower is never dropped for reading
// slowly; it only loses events.
//
// Abusive clients get a bounded, counted refusal, never a stall: more than kMaxClients connections (the
// extra one gets an error line, refused_busy), no complete request within kRequestTimeoutMs (an error
// line, refused_timeout), a request over kMaxRequestBytes or a malformed one (an error line, refused_bad), a reader that takes nothing for
// kStallMs while output is pending (dropped: refused_slow). Output is produced only while less than
// kOutputHighBytes wait for a client, so a slow reader costs bounded memory and no table work.
#pragma once

#include "control.h"
#include "ctl_stats.h"
#include "stats_view.h"

#include <events/stream.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace flowcop::app {

class CtlServer {
public:
    static constexpr unsigned kMaxClients = 16;
    static constexpr uint32_t kSliceRecords = 256;
    static constexpr unsigned kSlicesPerTurn = 16;
    static constexpr size_t kOutputHighBytes = 256 * 1024;
    static constexpr unsigned kRequestTimeoutMs = 5000;
    static constexpr unsigned kStallMs = 10000;
    static constexpr unsigned kFollowPollMs = 5;
    // Per lcore, the follow subscription's ring: kFollowPollMs of events at 3 M/s.
    static constexpr unsigned kFollowRingEvents = 16383;

    // The socket's path for this process (EAL must be initialised): <runtime dir>/flowcop_ctl.sock.
    static std::string default_path();

    // Binds `path` and starts the server thread over `view` and `control` (both outlive the server).
    // `follow`: the subscription followers read (one ring per lcore in StatsView::lcores order; the
    // server pauses and resumes it), or nullptr for none. `stats`: the counters it keeps (ctl_stats.h;
    // they outlive the server). nullptr and one sentence in `error` if the socket cannot be made.
    static std::unique_ptr<CtlServer> start(const std::string& path, const StatsView& view, Control& control,
                                            events::Subscription* follow, CtlServerStats& stats, std::string& error);
    ~CtlServer(); // stops the thread, closes every client, removes the socket file
    CtlServer(const CtlServer&) = delete;
    CtlServer& operator=(const CtlServer&) = delete;

    const std::string& path() const noexcept { return _path; }

    struct Client;

private:
    CtlServer(const StatsView& view, Control& control, CtlServerStats& stats); // in the .cpp, where Client is complete
    void run() noexcept;
    void accept_clients() noexcept;
    void on_readable(Client& c) noexcept;
    void start_request(Client& c, const std::string& line);
    void work(Client& c);
    void finish(Client& c);
    void flush_output(Client& c) noexcept;
    void close(Client& c) noexcept;
    // Sets the follow subscription's kinds to the union of the followers' (0 with none).
    void follow_kinds() noexcept;
    // Takes every lcore's follow ring and hands the events to the followers.
    void fan_out();
    uint64_t lcore_now(size_t worker) const noexcept;

    const StatsView& _view;
    Control& _control;
    std::string _path;
    int _listen_fd = -1;
    std::thread _thread;
    std::atomic<bool> _stop{false};
    CtlServerStats& _stats; // written by the server thread only
    std::unique_ptr<Client[]> _clients;
    events::Subscription* _follow = nullptr;
    unsigned _followers = 0;
};

} // namespace flowcop::app
