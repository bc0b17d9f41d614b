// SPDX-License-Identifier: BSD-3-Clause
// --events-filter KIND[,KIND...][:PROTO[,PROTO...]]: which flow events the --events log carries.
//
// KIND is new, update or destroy (any case: conntrack -E's NEW, UPDATE, DESTROY); PROTO a protocol as
// proto_names.h spells it (tcp, udp, icmp, icmpv6, ..., or 0..255), the event's own IP protocol (icmp is
// 1, icmpv6 58). Without ":PROTO..." every protocol. The default is new,destroy: the log's lines and rate
// stay what they were before update events existed. The filter is applied at the source: the service
// subscribes the log's writer to exactly these kinds and protocols (events::Stream::subscribe), so a
// filtered-out event costs no ring slot, and the lcores build no event of a kind no subscriber takes.
//
// Pure functions, any thread, no EAL.
#pragma once

#include <events/event.h>
#include <events/producer.h>
#include <events/writer.h>

#include <string>
#include <string_view>

namespace flowcop::app {

struct EventsFilter {
    events::KindMask kinds = events::kWriterKinds;
    events::ProtoSet protos; // every protocol
    bool operator==(const EventsFilter& o) const noexcept
    {
        return kinds == o.kinds && protos.words[0] == o.protos.words[0] && protos.words[1] == o.protos.words[1] &&
               protos.words[2] == o.protos.words[2] && protos.words[3] == o.protos.words[3];
    }
};

// Parses `spec` into `out` (untouched on error). Returns "" or one sentence naming the bad part.
std::string parse_events_filter(std::string_view spec, EventsFilter& out);
// The spec parse_events_filter() turns back into `f`: kinds in the order new, update, destroy; then
// ":" and the protocols by number order (names where proto_names.h has one) unless all are taken.
std::string show_events_filter(const EventsFilter& f);

} // namespace flowcop::app
