// SPDX-License-Identifier: BSD-3-Clause
// Test helpers around packet::parse().
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <packet/packet.h>

namespace flowcop::test {

// Parses from an exact-size heap copy, so ASan reports any read past the frame.
inline packet::Packet parse_bytes(const std::vector<uint8_t>& f)
{
    std::unique_ptr<uint8_t[]> buf(new uint8_t[f.size()]);
    if (!f.empty())
        std::memcpy(buf.get(), f.data(), f.size());
    packet::Packet p;
    const packet::Verdict v = packet::parse(buf.get(), static_cast<uint32_t>(f.size()), p);
    if (v != p.verdict)
        p.verdict = packet::Verdict::count; // makes a return/out mismatch fail every check
    return p;
}

inline packet::Verdict verdict_of(const std::vector<uint8_t>& f)
{
    return parse_bytes(f).verdict;
}

} // namespace flowcop::test

// Lets Catch2 print verdicts by name in failed assertions.
namespace Catch {
template <>
struct StringMaker<flowcop::packet::Verdict> {
    static std::string convert(flowcop::packet::Verdict v) { return flowcop::packet::verdict_name(v); }
};
} // namespace Catch
