// SPDX-License-Identifier: BSD-3-Clause
// protostate's transitions and names (proto_state.h).
#include <protostate/proto_state.h>

namespace flowcop::protostate {
namespace {

constexpr const char* kFamilyNames[] = {"udp", "icmp", "generic"};
static_assert(sizeof(kFamilyNames) / sizeof(kFamilyNames[0]) == static_cast<size_t>(Family::count));

constexpr const char* kTimeoutFlagNames[] = {"udp-timeout", "udp-timeout-stream", "icmp-timeout", "generic-timeout"};
static_assert(sizeof(kTimeoutFlagNames) / sizeof(kTimeoutFlagNames[0]) == kTimeoutCount);

} // namespace

const char* family_name(Family f) noexcept
{
    const auto i = static_cast<size_t>(f);
    return i < static_cast<size_t>(Family::count) ? kFamilyNames[i] : "unknown";
}

bool step(Tracker& t, Dir dir, uint64_t age_ns) noexcept
{
    const Tracker before = t;
    if (t.family() == Family::udp && t.seen_reply() && age_ns > kUdpStreamAgeNs)
        t.bits |= Tracker::kAssured;
    if (dir == Dir::reply)
        t.bits |= Tracker::kSeenReply;
    return !(t == before);
}

const char* state_name(Tracker t) noexcept
{
    return t.seen_reply() ? "REPLIED" : "UNREPLIED";
}

const char* timeout_flag_name(Timeout t) noexcept
{
    const auto i = static_cast<size_t>(t);
    return i < kTimeoutCount ? kTimeoutFlagNames[i] : "unknown";
}

bool parse_timeout_flag_name(std::string_view name, Timeout& out) noexcept
{
    for (size_t i = 0; i < kTimeoutCount; ++i) {
        if (name == kTimeoutFlagNames[i]) {
            out = static_cast<Timeout>(i);
            return true;
        }
    }
    return false;
}

} // namespace flowcop::protostate
