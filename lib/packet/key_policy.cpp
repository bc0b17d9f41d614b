// SPDX-License-Identifier: BSD-3-Clause
#include <packet/key_policy.h>

namespace flowcop::packet {
namespace {

constexpr const char* kVlanKeyNames[] = {"both", "outer", "none"};

} // namespace

const char* vlan_key_name(VlanKey mode) noexcept
{
    const auto i = static_cast<unsigned>(mode);
    return i < 3 ? kVlanKeyNames[i] : "unknown";
}

bool parse_vlan_key(std::string_view text, VlanKey& out) noexcept
{
    for (unsigned i = 0; i < 3; ++i) {
        if (text == kVlanKeyNames[i]) {
            out = static_cast<VlanKey>(i);
            return true;
        }
    }
    return false;
}

} // namespace flowcop::packet
