// SPDX-License-Identifier: BSD-3-Clause
// Restoring and saving --state-file (state.h).
#include "state.h"

#include "build_info.h"
#include "log.h"

#include <conntrack/flow_id.h>
#include <packet/key_policy.h>
#include <stats/relaxed.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

namespace flowcop::app {

namespace {

using conntrack::FlowImage;
using conntrack::RestoreOutcome;
using stats::bump;
using stats::store_relaxed;

uint64_t realtime_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

uint64_t elapsed_ns(std::chrono::steady_clock::time_point t0)
{
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

StateDiscard discard_of(statefile::Status s)
{
    switch (s) {
    case statefile::Status::not_a_state_file: return StateDiscard::not_a_state_file;
    case statefile::Status::version: return StateDiscard::version;
    case statefile::Status::header_checksum: return StateDiscard::header_checksum;
    case statefile::Status::truncated: return StateDiscard::truncated;
    case statefile::Status::trailing: return StateDiscard::trailing;
    case statefile::Status::checksum: return StateDiscard::checksum;
    default: return StateDiscard::unreadable;
    }
}

// Whether the running options could have produced this key: the VLAN IDs --vlan-key keeps, and the
// zone --port-zone gives the flow's first port.
bool key_fits(const packet::FlowKey& key, uint16_t in_port, const Options& opt)
{
    packet::FlowKey kept = key;
    packet::apply_vlan_key(kept, opt.vlan_key);
    if (!(kept == key))
        return false;
    uint16_t zone = 0;
    for (const auto& [port, z] : opt.port_zones)
        if (port == in_port)
            zone = z;
    return key.zone == zone;
}

const char* plural(uint64_t n)
{
    return n == 1 ? "" : "s";
}

} // namespace

StateClock state_clock(ClockSource clock, uint64_t table_now_ns)
{
    StateClock c;
    c.table_now_ns = table_now_ns;
    if (clock == ClockSource::packet) {
        c.base = statefile::TimeBase::packet;
        return c;
    }
    c.file_minus_table = int64_t(realtime_ns() - table_now_ns);
    return c;
}

RestoreReport restore_state(const Options& opt, ClockSource clock, uint64_t tsc_now_ns,
                            const std::vector<conntrack::FlowTable*>& tables,
                            const std::function<unsigned(const packet::FlowKey&)>& owner, StateStats& stats,
                            const OnRestored& on_restored)
{
    RestoreReport report;
    if (opt.state_file.empty() || tables.empty())
        return report;
    const auto t0 = std::chrono::steady_clock::now();
    const char* path = opt.state_file.c_str();
    // A save that died with its process (a crash, SIGKILL) left its temporary file beside the state file.
    if (const unsigned n = statefile::remove_stale_temporaries(opt.state_file); n != 0)
        log::write(RTE_LOG_WARNING, log::Part::service,
                   "flowcop: state: removed %u temporary file%s an interrupted save left beside %s", n, plural(n),
                   path);
    statefile::Reader file(opt.state_file);
    if (file.status() != statefile::Status::ok) {
        if (file.status() == statefile::Status::missing) {
            report.line = "flowcop: state: no file at " + opt.state_file + ", starting with no flows";
        } else {
            bump(stats.discarded[static_cast<size_t>(discard_of(file.status()))]);
            log::write(RTE_LOG_WARNING, log::Part::service, "flowcop: state: %s refused (%s): %s", path,
                       statefile::status_name(file.status()), file.why().c_str());
            report.line = "flowcop: state: " + opt.state_file + " refused (" + statefile::status_name(file.status()) +
                          "), starting with no flows";
        }
        stats.restore_ns.observe(elapsed_ns(t0));
        return report;
    }
    report.read = true;
    const statefile::Header& h = file.header();
    // The tables' clock and the file's time base (state.h, "Time").
    StateClock c;
    uint64_t now = tsc_now_ns;
    if (clock == ClockSource::packet) {
        c.base = statefile::TimeBase::packet;
        now = h.base == statefile::TimeBase::packet ? h.base_now_ns : h.written_ns;
    } else {
        c = state_clock(clock, tsc_now_ns);
    }
    const conntrack::TimeBase base{c.file_minus_table};

    uint32_t top_generation = 0;
    std::vector<std::pair<uint64_t, unsigned>> again; // (entry, worker): slot taken, to renumber
    std::array<uint64_t, kStateDiscardCount> discarded{};
    uint64_t restored = 0, renumbered = 0;
    FlowImage im;
    auto count = [&](RestoreOutcome o, unsigned w, uint64_t id) {
        if ((o == RestoreOutcome::restored || o == RestoreOutcome::renumbered) && on_restored)
            on_restored(w, id, im, base);
        switch (o) {
        case RestoreOutcome::restored: ++restored; break;
        case RestoreOutcome::renumbered:
            ++restored;
            ++renumbered;
            break;
        case RestoreOutcome::no_room: ++discarded[size_t(StateDiscard::no_room)]; break;
        case RestoreOutcome::not_tracked: ++discarded[size_t(StateDiscard::not_tracked)]; break;
        default: ++discarded[size_t(StateDiscard::invalid)]; break;
        }
    };
    for (uint64_t i = 0; i < h.flows; ++i) {
        file.entry(i, im);
        top_generation = std::max(top_generation, conntrack::flow_id_generation(im.flow_id));
    }
    for (uint64_t i = 0; i < h.flows; ++i) {
        file.entry(i, im);
        const packet::FlowKey key = conntrack::image_key(im);
        if (!key_fits(key, im.in_port, opt)) {
            ++discarded[size_t(StateDiscard::key_changed)];
            continue;
        }
        const unsigned w = owner(key);
        uint64_t id = 0;
        const RestoreOutcome o = tables[w]->restore_flow(im, base, now, 0, &id);
        if (o == RestoreOutcome::slot_taken)
            again.emplace_back(i, w);
        else
            count(o, w, id);
    }
    for (conntrack::FlowTable* t : tables)
        t->finish_restore();
    const uint32_t fresh_generation = top_generation == UINT32_MAX ? UINT32_MAX : top_generation + 1;
    for (const auto& [i, w] : again) {
        file.entry(i, im);
        uint64_t id = 0;
        const RestoreOutcome o = tables[w]->restore_flow(im, base, now, fresh_generation, &id);
        count(o, w, id);
    }

    store_relaxed(stats.restored, restored);
    store_relaxed(stats.renumbered, renumbered);
    uint64_t lost = 0;
    for (size_t r = 0; r < kStateDiscardCount; ++r) {
        if (discarded[r] == 0)
            continue;
        lost += discarded[r];
        bump(stats.discarded[r], discarded[r]);
        log::write(RTE_LOG_WARNING, log::Part::service, "flowcop: state: %llu flow%s of %s not restored: %s",
                   (unsigned long long)discarded[r], plural(discarded[r]), path, kStateDiscardNames[r]);
    }
    const uint64_t ns = elapsed_ns(t0);
    stats.restore_ns.observe(ns);
    report.restored = restored;
    const double age_s = h.written_ns != 0 ? (double(realtime_ns()) - double(h.written_ns)) / 1e9 : 0;
    report.line = "flowcop: state: restored " + std::to_string(restored) + " of " + std::to_string(h.flows) +
                  " flows from " + opt.state_file + " (written " + std::to_string(int64_t(age_s)) + " s ago by " +
                  (h.build.empty() ? "an unnamed build" : h.build) + ") in " + std::to_string(ns / 1'000'000) + " ms" +
                  (renumbered ? ", " + std::to_string(renumbered) + " renumbered" : "") +
                  (lost ? ", " + std::to_string(lost) + " discarded" : "");
    return report;
}

bool consume_state_file(const std::string& path)
{
    const std::string aside = path + ".restored";
    if (::rename(path.c_str(), aside.c_str()) != 0) {
        log::write(RTE_LOG_WARNING, log::Part::service, "flowcop: state: cannot rename %s to %s: %s", path.c_str(),
                   aside.c_str(), std::strerror(errno));
        return false;
    }
    return true;
}

bool save_state(const Options& opt, const StateClock& clock, const std::vector<const conntrack::FlowTable*>& tables,
                StateStats& stats, std::string& line, const Annotate& annotate)
{
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    auto writer = statefile::Writer::create(opt.state_file, error);
    bool ok = writer != nullptr;
    const conntrack::TimeBase base{clock.file_minus_table};
    // The listing's slice (ctl_server.h): one shard lock held for at most this many records.
    constexpr uint32_t kSlice = 256;
    FlowImage slice[kSlice];
    for (size_t w = 0; ok && w < tables.size(); ++w)
        for (uint32_t start = 0; ok && start != conntrack::kNoPosition;) {
            size_t n = 0;
            start = tables[w]->export_slice(start, kSlice, base, slice, n);
            for (size_t i = 0; annotate && i < n; ++i)
                annotate(unsigned(w), base, slice[i]);
            ok = writer->append(slice, n);
        }
    if (!ok && writer != nullptr)
        error = "cannot write the temporary file beside " + opt.state_file + " (disk full?)";
    if (ok) {
        statefile::Header h;
        h.base = clock.base;
        h.written_ns = realtime_ns();
        h.base_now_ns = clock.base == statefile::TimeBase::packet ? clock.table_now_ns : h.written_ns;
        h.build = std::string(build_version()) + " " + build_commit();
        ok = writer->commit(h, error);
    }
    const uint64_t ns = elapsed_ns(t0);
    stats.save_ns.observe(ns);
    if (!ok) {
        bump(stats.saves_failed);
        log::write(RTE_LOG_ERR, log::Part::service, "flowcop: state: saving %s failed: %s", opt.state_file.c_str(),
                   error.c_str());
        line = "flowcop: state: not saved (" + error + ")";
        return false;
    }
    bump(stats.saves_ok);
    store_relaxed(stats.saved_flows, writer->flows());
    line = "flowcop: state: saved " + std::to_string(writer->flows()) + " flows to " + opt.state_file + " (" +
           std::to_string(writer->bytes()) + " bytes) in " + std::to_string(ns / 1'000'000) + " ms";
    return true;
}

} // namespace flowcop::app
