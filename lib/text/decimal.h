// SPDX-License-Identifier: BSD-3-Clause
// The one strict decimal parser behind every number an operator types: command-line options
// (app/service/options/option_values.h), telemetry parameters (control_parse.h) and the flowgen port's
// devargs (drivers/net/flowgen/number.h).
//
// Contract: decimal digits only — no sign, no "0x", no spaces, no suffix, no empty string — and no
// overflow: "1e6", "-1", " 5", "5k" and "18446744073709551616" are all rejected, never misread.
// Pure and header-only (std only): no allocation, no locale, safe on any thread.
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>
#include <system_error>

namespace flowcop::text {

// true and `out` set when `v` is a whole unsigned decimal number that fits 64 bits; else false and
// `out` unchanged.
inline bool parse_decimal(std::string_view v, uint64_t& out) noexcept
{
    if (v.empty() || v.front() < '0' || v.front() > '9') // from_chars would accept neither, but say so
        return false;
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n, 10);
    if (ec != std::errc{} || end != v.data() + v.size())
        return false;
    out = n;
    return true;
}

// parse_decimal() and lo <= value <= hi.
inline bool parse_decimal_in(std::string_view v, uint64_t lo, uint64_t hi, uint64_t& out) noexcept
{
    uint64_t n = 0;
    if (!parse_decimal(v, n) || n < lo || n > hi)
        return false;
    out = n;
    return true;
}

} // namespace flowcop::text
