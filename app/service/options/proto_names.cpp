// SPDX-License-Identifier: BSD-3-Clause
#include "proto_names.h"

#include <text/decimal.h>

#include <cctype>

namespace flowcop::app {
namespace {

struct ProtoName {
    uint8_t number;
    const char* name;
};
constexpr ProtoName kProtoNames[] = {{1, "icmp"}, {6, "tcp"},     {17, "udp"},   {33, "dccp"},
                                     {47, "gre"}, {58, "icmpv6"}, {132, "sctp"}, {136, "udplite"}};

} // namespace

const char* known_proto_name(uint8_t proto) noexcept
{
    for (const ProtoName& p : kProtoNames)
        if (p.number == proto)
            return p.name;
    return nullptr;
}

std::string proto_name(uint8_t proto)
{
    const char* name = known_proto_name(proto);
    return name != nullptr ? name : std::to_string(proto);
}

bool parse_proto(const std::string& name, uint8_t& out)
{
    const std::string lower = [&] {
        std::string s = name;
        for (char& c : s)
            c = char(std::tolower(static_cast<unsigned char>(c)));
        return s;
    }();
    for (const ProtoName& p : kProtoNames)
        if (lower == p.name || (lower == "ipv6-icmp" && p.number == 58)) {
            out = p.number;
            return true;
        }
    uint64_t n = 0;
    if (!text::parse_decimal_in(name, 0, 255, n))
        return false;
    out = uint8_t(n);
    return true;
}

} // namespace flowcop::app
