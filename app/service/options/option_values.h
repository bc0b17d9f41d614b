// SPDX-License-Identifier: BSD-3-Clause
// Private to the options library: the value checks behind its table, written as plain functions
// of a string so each rule has exactly one place. Each check returns an error detail (what was
// wrong and what is allowed, without the flag name) or an empty string on success; outputs are
// written only on success. No global state; safe on any thread.
#pragma once

#include <text/decimal.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flowcop::app::detail {

// Printable ASCII is kept; every other byte becomes \xNN so messages and log lines stay one line.
bool printable(char c);
void append_escaped(std::string& out, char c);
std::string escaped(std::string_view v);

// 'v', escaped, cut after 64 bytes with "..." so a pasted blob does not flood the terminal.
std::string quote(std::string_view v);

std::string join(const std::vector<std::string>& items, std::string_view sep);

// Decimal digits only: false on empty input, a sign, a space, any other character, or overflow.
using text::parse_decimal;

// A number in [min, max], a power of two as well when pow2 (then min and max are powers of two).
std::string check_number(std::string_view v, uint64_t min, uint64_t max, bool pow2, uint64_t& out);

// HOST:PORT where HOST is an IPv4 literal, a bracketed IPv6 literal or localhost (stored as
// 127.0.0.1) and PORT is 0..65535. The host is returned without brackets. Does not resolve or bind.
struct HostPort {
    std::string host;
    uint16_t port;
};
std::string check_host_port(std::string_view v, HostPort& out);

// One network ADDRESS/LENGTH: an IPv4 or IPv6 address (IPv6 optionally in brackets) with a prefix
// length of 0..32 or 0..128; an address alone is one host (/32, /128). The address must be the
// network's (no host bits set: 10.1.2.3/8 is refused, naming 10.0.0.0/8). out is the canonical
// spelling without brackets ("192.0.2.0/24", "2001:db8::/32"), as inet_ntop writes the address.
std::string check_network(std::string_view v, std::string& out);

} // namespace flowcop::app::detail
