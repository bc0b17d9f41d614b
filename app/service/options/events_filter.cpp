// SPDX-License-Identifier: BSD-3-Clause
#include "events_filter.h"

#include "proto_names.h"

#include <algorithm>
#include <cctype>

namespace flowcop::app {
namespace {

struct KindName {
    const char* name;
    events::Kind kind;
};
// --events-filter's kinds, in the order show_events_filter() prints them. Interim reports are IPFIX's.
constexpr KindName kKindNames[] = {
    {"new", events::Kind::created}, {"update", events::Kind::updated}, {"destroy", events::Kind::destroyed}};

std::string lower(std::string_view s)
{
    std::string out(s);
    for (char& c : out)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// 'item' then rest. Appended piece by piece: GCC 12's -Wrestrict misfires on "'" + std::string(...)
// inlined at -O3 (a release build with -Dwerror=true).
std::string quoted(std::string_view item, std::string_view rest)
{
    std::string s = "'";
    s.append(item).append("'").append(rest);
    return s;
}

// Calls each(item) for every comma-separated item of `list`; stops at the first error it returns.
template <typename Each>
std::string for_each_item(std::string_view list, const char* what, Each each)
{
    size_t at = 0;
    while (true) {
        const size_t comma = std::min(list.find(',', at), list.size());
        const std::string_view item = list.substr(at, comma - at);
        if (item.empty())
            return std::string("an empty ") + what + " in '" + std::string(list) + "'";
        if (std::string e = each(item); !e.empty())
            return e;
        if (comma == list.size())
            return "";
        at = comma + 1;
    }
}

} // namespace

std::string parse_events_filter(std::string_view spec, EventsFilter& out)
{
    const size_t colon = spec.find(':');
    const std::string_view kinds = spec.substr(0, colon);
    EventsFilter f;
    f.kinds = 0;
    std::string e = for_each_item(kinds, "event kind", [&](std::string_view item) {
        const std::string k = lower(item);
        for (const KindName& n : kKindNames)
            if (k == n.name) {
                f.kinds |= events::kind_bit(n.kind);
                return std::string();
            }
        return quoted(item, " is not an event kind (new, update, destroy)");
    });
    if (!e.empty())
        return e;
    if (colon == std::string_view::npos) {
        out = f;
        return "";
    }
    f.protos = events::ProtoSet::none();
    e = for_each_item(spec.substr(colon + 1), "protocol", [&](std::string_view item) {
        uint8_t p = 0;
        if (!parse_proto(std::string(item), p))
            return quoted(item, " is not a protocol name (tcp, udp, icmp, icmpv6, ...) or number (0..255)");
        f.protos.add(p);
        return std::string();
    });
    if (!e.empty())
        return e;
    out = f;
    return "";
}

std::string show_events_filter(const EventsFilter& f)
{
    std::string s;
    for (const KindName& n : kKindNames)
        if (f.kinds & events::kind_bit(n.kind))
            s.append(s.empty() ? "" : ",").append(n.name);
    if (f.protos.all())
        return s;
    s += ':';
    bool first = true;
    for (unsigned p = 0; p < 256; ++p)
        if (f.protos.has(uint8_t(p))) {
            s.append(first ? "" : ",").append(proto_name(uint8_t(p)));
            first = false;
        }
    return s;
}

} // namespace flowcop::app
