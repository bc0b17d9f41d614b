// SPDX-License-Identifier: BSD-3-Clause
// Private: the strict number syntax every flowgen key uses. Decimal digits only (no sign, no hex, no
// spaces, no suffix), so "1e6", "-1", " 5" and "5k" are errors rather than silently misread values:
// lib/text's parser, the one the command line and telemetry use.
#pragma once

#include <text/decimal.h>

#include <cstdint>

namespace flowcop::flowgen::detail {

// Unsigned decimal integer in [lo, hi]. false for nullptr, empty, non-digits, overflow or out of range.
inline bool parse_uint(const char* s, uint64_t lo, uint64_t hi, uint64_t& out) noexcept
{
    return s != nullptr && text::parse_decimal_in(s, lo, hi, out);
}

// Seconds with up to three decimals ("10", "0.5", "2.125"), returned in milliseconds, in [lo_ms, hi_ms].
inline bool parse_seconds_ms(const char* s, uint64_t lo_ms, uint64_t hi_ms, uint64_t& out_ms) noexcept
{
    if (s == nullptr || *s == '\0' || *s == '.')
        return false;
    uint64_t whole = 0;
    for (; *s != '\0' && *s != '.'; ++s) {
        if (*s < '0' || *s > '9' || whole > UINT64_MAX / 100'000)
            return false;
        whole = whole * 10 + static_cast<uint64_t>(*s - '0');
    }
    uint64_t frac = 0;
    unsigned decimals = 0;
    if (*s == '.') {
        ++s;
        if (*s == '\0')
            return false;
        for (; *s != '\0'; ++s, ++decimals) {
            if (*s < '0' || *s > '9' || decimals == 3)
                return false;
            frac = frac * 10 + static_cast<uint64_t>(*s - '0');
        }
    }
    for (; decimals < 3; ++decimals)
        frac *= 10;
    const uint64_t ms = whole * 1000 + frac;
    if (ms < lo_ms || ms > hi_ms)
        return false;
    out_ms = ms;
    return true;
}

} // namespace flowcop::flowgen::detail
