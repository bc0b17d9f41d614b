// SPDX-License-Identifier: BSD-3-Clause
// The read-only stats view: what every reader of flowcop's counters iterates.
//
// The service builds it once, after start() created the workers, tables and ports, and never
// changes it; it outlives every reader (exporter, telemetry, status line). An LcoreView points at
// one worker lcore's single-writer counters and holds what is constant after start; a PortView
// names one ethdev port; a CollectorView one IPFIX collector; `plan` is the ownership plan
// (port_plan.h), constant after start. Readers combine the view with the descriptor rows of stats_rows.h, so
// none of them includes service.h or walks the workers itself.
//
// Threading: any thread may read through the view at any time while the service lives; every
// value is a relaxed load of a field its owner writes (stats/relaxed.h), or a port counter read by
// `read_port` (rte_eth_stats_get by default: the PMD's per-queue counters or device registers,
// never a lock an RX or TX burst takes), plus in `imissed` the losses its PMD does not count: an
// af_packet port's kernel ring drops (packet_ring_drops.h: a getsockopt per socket under a mutex
// only control threads take) and the --flowgen port's full-ring drops (flowgen overflow=drop: relaxed
// loads of the generator thread's counters).
#pragma once

#include "ctl_stats.h"
#include "state_stats.h"
#include <conntrack/ct_judge.h>
#include <service/dataplane/worker_stats.h>
#include <service/plan/packet_ring_drops.h>
#include <service/plan/port_plan.h>

#include <conntrack/counters.h>
#include <events/writer.h>
#include <fragattr/fragment_attributor.h>
#include <ipfix/exporter.h>

#include <rte_ethdev.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace flowcop::app {

struct LcoreView {
    unsigned lcore = 0;
    const conntrack::Counters* table = nullptr;       // the lcore's flow table counters
    const WorkerStats* worker = nullptr;              // the lcore's own counters
    const fragattr::Counters* fragments = nullptr;    // the lcore's fragment attributor; nullptr: all 0
    const conntrack::StateVerdicts* policy = nullptr; // --policy's verdicts by state; nullptr: all 0
    uint64_t capacity = 0;                            // --flows-per-lcore
    uint64_t memory_bytes = 0;                        // what the table allocated at start
    const events::Writer* events = nullptr;           // nullptr without --events: every event count is 0
    unsigned events_producer = 0;                     // this lcore's producer index in `events`

    const ipfix::Exporter* ipfix = nullptr; // nullptr without --ipfix: every IPFIX count is 0
    unsigned ipfix_producer = 0;            // this lcore's producer index in `ipfix`

    events::WriterStats event_stats() const noexcept
    {
        return events != nullptr ? events->stats(events_producer) : events::WriterStats{};
    }
    ipfix::ExporterStats ipfix_stats() const noexcept
    {
        return ipfix != nullptr ? ipfix->stats(ipfix_producer) : ipfix::ExporterStats{};
    }
};

// One --ipfix collector (labelled collector="HOST:PORT"); its counters are the export thread's.
struct CollectorView {
    const ipfix::Collector* collector = nullptr;
};

struct PortView {
    uint16_t port = 0;
    std::string name; // the device name (net_pcap0, 0000:01:00.0, ...)
};

// One port's counters as read at one instant, with its labels.
struct PortSample {
    uint16_t port = 0;
    const std::string* name = nullptr;
    rte_eth_stats counters{};
};

struct StatsView {
    std::vector<LcoreView> lcores;         // one per worker lcore, in worker order
    std::vector<PortView> ports;           // every ethdev port, in port id order
    std::vector<CollectorView> collectors; // every --ipfix collector, in command-line order
    const PortPlan* plan = nullptr;        // the ownership plan that runs (fixed once the ports started)
    CtlView ctl;                           // the control socket's counters (ctl_stats.h)
    StateView state;                       // --state-file's restore and saves (state_stats.h)
    // Reads one port's counters; false if the port cannot say (it is then left out).
    bool (*read_port)(uint16_t port, rte_eth_stats& out) noexcept = [](uint16_t port, rte_eth_stats& out) noexcept {
        return rte_eth_stats_get(port, &out) == 0;
    };
    // The kernel ring drops of af_packet ports (their PMD counts none); nullptr when no port has any.
    const PacketRingDrops* ring_drops = nullptr;
    // The --flowgen port and the frames it dropped on its full RX ring (overflow=drop); its ring PMD
    // counts none. Unset (empty) without --flowgen.
    uint16_t synthetic_port = 0;
    std::function<uint64_t()> synthetic_drops;

    // Every port's counters, read once each, for one pass of a reader.
    std::vector<PortSample> port_samples() const
    {
        std::vector<PortSample> out;
        for (const PortView& p : ports) {
            PortSample s{p.port, &p.name, {}};
            if (!read_port(p.port, s.counters))
                continue;
            if (ring_drops != nullptr)
                s.counters.imissed += ring_drops->drops(p.port);
            if (synthetic_drops && p.port == synthetic_port)
                s.counters.imissed += synthetic_drops();
            out.push_back(s);
        }
        return out;
    }
};

} // namespace flowcop::app
