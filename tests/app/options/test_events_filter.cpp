// SPDX-License-Identifier: BSD-3-Clause
// --events-filter's parser (app/service/options/events_filter.h): kinds and protocols, what is refused, and the
// spelling --help and /flowcop/config show, which parses back to the same filter.
#include <service/options/events_filter.h>
#include <service/options/options.h>

#include <catch2/catch.hpp>

#include <string>

using namespace flowcop;
using namespace flowcop::app;
using events::Kind;
using events::kind_bit;

namespace {

EventsFilter parsed(const std::string& spec)
{
    EventsFilter f;
    const std::string e = parse_events_filter(spec, f);
    INFO(spec << " -> " << e);
    REQUIRE(e.empty());
    return f;
}

std::string error_of(const std::string& spec)
{
    EventsFilter f;
    f.kinds = 12345; // untouched on error
    const std::string e = parse_events_filter(spec, f);
    CHECK(f.kinds == 12345);
    return e;
}

} // namespace

TEST_CASE("--events-filter takes kinds, then protocols after a colon", "[app][events_filter]")
{
    const EventsFilter def;
    CHECK(def.kinds == events::kWriterKinds);
    CHECK(def.protos.all());
    CHECK(default_options().events_filter == def);
    CHECK(show_events_filter(def) == "new,destroy");

    const EventsFilter all = parsed("NEW,Update,destroy");
    CHECK(all.kinds == (kind_bit(Kind::created) | kind_bit(Kind::updated) | kind_bit(Kind::destroyed)));
    CHECK(all.protos.all());
    CHECK(parsed("update").kinds == kind_bit(Kind::updated));
    CHECK(parsed("destroy,destroy").kinds == kind_bit(Kind::destroyed));

    const EventsFilter some = parsed("new,destroy:tcp,UDP,icmpv6,47,ipv6-icmp");
    CHECK(some.kinds == events::kWriterKinds);
    CHECK(some.protos.has(6));
    CHECK(some.protos.has(17));
    CHECK(some.protos.has(58));
    CHECK(some.protos.has(47));
    CHECK_FALSE(some.protos.has(1)); // icmp is ICMP over IPv4 (1), not ICMPv6 (58)
    CHECK_FALSE(some.protos.has(0));
    CHECK_FALSE(some.protos.has(255));
    CHECK(parsed("new:0").protos.has(0));
    CHECK(parsed("new:255").protos.has(255));
}

TEST_CASE("--events-filter shows a spelling that parses back to the same filter", "[app][events_filter]")
{
    for (const char* spec : {"new,destroy", "new,update,destroy", "update", "destroy:udp", "new,update:tcp,icmpv6,47",
                             "new:0,255", "destroy:icmp,tcp,udp"}) {
        const EventsFilter f = parsed(spec);
        CHECK(parsed(show_events_filter(f)) == f);
    }
    CHECK(show_events_filter(parsed("DESTROY,new:udp,6,gre")) == "new,destroy:tcp,udp,gre"); // by number
    CHECK(show_events_filter(parsed("update:200")) == "update:200");
}

TEST_CASE("A bad --events-filter is refused with one sentence naming the bad part", "[app][events_filter]")
{
    CHECK(error_of("") == "an empty event kind in ''");
    CHECK(error_of("new,,destroy") == "an empty event kind in 'new,,destroy'");
    CHECK(error_of("new,bogus") == "'bogus' is not an event kind (new, update, destroy)");
    CHECK(error_of("interim") == "'interim' is not an event kind (new, update, destroy)");
    CHECK(error_of(":tcp") == "an empty event kind in ''");
    CHECK(error_of("new:") == "an empty protocol in ''");
    CHECK(error_of("new:tcp,") == "an empty protocol in 'tcp,'");
    CHECK(error_of("new:xyz") == "'xyz' is not a protocol name (tcp, udp, icmp, icmpv6, ...) or number (0..255)");
    CHECK(error_of("new:256").find("'256' is not a protocol") == 0);
    CHECK(error_of("new:tcp:udp").find("'tcp:udp' is not a protocol") == 0);
}
