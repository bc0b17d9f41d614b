// SPDX-License-Identifier: BSD-3-Clause
// Delta counts for flows reported more than once (interim records, `--ipfix-active-timeout`).
//
// IPFIX's octetDeltaCount/packetDeltaCount count what happened since the flow's previous record, so
// a collector adds a flow's records up to its totals. The flow table's events carry totals; this
// turns the totals of a flow's interim and final events into deltas on the export thread, so the
// table keeps no per-flow "last exported" counters and the packet path pays nothing. Because it
// works from totals, a lost interim event (its ring was full) loses nothing: the next record carries
// the missed delta.
//
// Contract: one DeltaTracker per observation domain (lcore), used by the export thread only.
// apply() is given every interim and destroyed event of the domain, in emission order, and rewrites
// the event's packets, bytes and first_seen_ns to the interval since the flow's previous record:
// the counts since then, and its start as the previous record's end (the flow's first packet for
// its first record). A flow is known by its slot and generation (events::Event::flow_id): an entry
// whose slot now holds a newer generation belonged to a flow whose final event was lost, and is
// replaced, so the tracker holds at most one entry per slot with an interim record outstanding.
// Events without a flow id (kHasFlowId) or with interims == 0 pass unchanged.
// Memory: one hash entry (~64 bytes) per flow that has had an interim record and not yet ended, at
// most max_tracked entries (the exporter passes the lcore's flow table capacity: one entry per slot
// at most, so the bound holds whatever the table does).
// Degraded behaviour: an interim event that needs a new entry when max_tracked are held, or when the
// entry cannot be allocated, is refused (apply() returns false) and must not be exported: the flow's
// next record then carries the counts since its last exported one, so a collector's sums stay right.
// Nothing here throws.
#pragma once

#include <events/event.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace flowcop::ipfix {

class DeltaTracker {
public:
    explicit DeltaTracker(size_t max_tracked) noexcept : _max(max_tracked) {}

    // Rewrites `e` (interim or destroyed) to deltas as the contract says. false: an interim event the
    // tracker has no room for (see above), left unchanged: drop it, count it.
    bool apply(events::Event& e) noexcept;
    size_t tracked() const noexcept { return _last.size(); }
    size_t max_tracked() const noexcept { return _max; }

    // Restarts (--state-file, issue 32): what a flow's records have reported so far, saved with the flow
    // and handed to the next process's tracker, so the restored flow's next record is the delta since
    // its last record here, not its totals again (a collector would count them twice).
    struct Reported {
        uint64_t packets[2] = {0, 0}, bytes[2] = {0, 0};
        uint64_t end_ns = 0; // the last record's last_seen_ns
    };
    // False when this flow (id: slot and generation) has no interim record outstanding.
    bool reported(uint64_t flow_id, Reported& out) const noexcept;
    // Makes flow_id's previous record `r` (replacing whatever its slot held); false when full.
    bool seed(uint64_t flow_id, const Reported& r) noexcept;

private:
    struct Last {
        uint32_t generation;
        uint64_t packets[2], bytes[2];
        uint64_t end_ns; // last_seen_ns of the previous record
    };
    size_t _max;
    std::unordered_map<uint32_t, Last> _last; // by slot
};

} // namespace flowcop::ipfix
