// SPDX-License-Identifier: BSD-3-Clause
// The one bounded text writer behind flowcop's JSON lines: the event stream's (lib/events/format_json.cpp)
// and the control socket's flow lines (app/service/control/ctl_format.cpp), millions of lines a listing.
//
// Contract: an Appender writes into a buffer its caller owns, never past its end, and never allocates.
// Once anything fails to fit, every later call is a no-op and ok() stays false, so the caller checks
// once at the end instead of after every field; what was written before the failure stays in place.
// Pure and header-only (std only): no locale, safe on any thread.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <system_error>

namespace flowcop::text {

class Appender {
public:
    Appender(char* buf, size_t len) noexcept : _p(buf), _begin(buf), _end(buf + len) {}
    bool ok() const noexcept { return _ok; }
    size_t size() const noexcept { return static_cast<size_t>(_p - _begin); }
    std::string_view view() const noexcept { return {_begin, size()}; }

    void lit(std::string_view s) noexcept
    {
        if (!room(s.size()))
            return;
        std::memcpy(_p, s.data(), s.size());
        _p += s.size();
    }
    void ch(char c) noexcept
    {
        if (room(1))
            *_p++ = c;
    }
    void u64(uint64_t v) noexcept
    {
        if (!_ok)
            return;
        auto [ptr, ec] = std::to_chars(_p, _end, v);
        if (ec != std::errc())
            return fail();
        _p = ptr;
    }
    // `,"key":v`: one numeric member after the first.
    void field(std::string_view key, uint64_t v) noexcept
    {
        lit(",\"");
        lit(key);
        lit("\":");
        u64(v);
    }
    // Seconds with 6 decimals; truncates so the printed time is never later than the clock reading.
    void seconds(uint64_t ns) noexcept
    {
        u64(ns / 1000000000u);
        uint64_t us = ns % 1000000000u / 1000u;
        if (!room(7))
            return;
        _p[0] = '.';
        for (int i = 6; i >= 1; --i, us /= 10)
            _p[i] = static_cast<char>('0' + us % 10);
        _p += 7;
    }
    // A JSON string, or null for nullptr. Callers pass static names that need no escaping, but the line
    // must stay valid JSON whatever they pass: quote, backslash and control characters are escaped.
    void str(const char* s) noexcept
    {
        if (s == nullptr)
            return lit("null");
        ch('"');
        for (; *s != '\0' && _ok; ++s) {
            const auto c = static_cast<unsigned char>(*s);
            if (c == '"' || c == '\\') {
                ch('\\');
                ch(static_cast<char>(c));
            } else if (c < 0x20) {
                static constexpr char kHex[] = "0123456789abcdef";
                const char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
                lit(std::string_view(esc, sizeof esc));
            } else {
                ch(static_cast<char>(c));
            }
        }
        ch('"');
    }
    // Marks the line failed (a caller's own conversion did not succeed).
    void fail() noexcept { _ok = false; }

private:
    bool room(size_t n) noexcept
    {
        if (_ok && static_cast<size_t>(_end - _p) >= n)
            return true;
        fail();
        return false;
    }

    char* _p;
    char* _begin;
    char* _end;
    bool _ok = true;
};

} // namespace flowcop::text
