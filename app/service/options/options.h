// SPDX-License-Identifier: BSD-3-Clause
// flowcop's own command-line options: the arguments after EAL's `--`, parsed into a plain value.
//
// Contract
// - EAL-free and pure: parse_options() reads only argv (after rte_eal_init() has consumed EAL's
//   arguments and left argv[0] as the program name) and keeps no global state (no getopt optind),
//   so it may be called any number of times, from tests, on any thread. argv is not modified.
// - One table drives parsing, help_text(), describe() and option_table(), so an option the parser
//   accepts is always documented, and every default --help shows is rendered from default_options().
//   For an option that takes a value, the default --help shows is itself an accepted value that
//   selects that default (`--events none`, `--flowgen off`), so copying it from --help is safe.
// - Syntax: `--opt VALUE` or `--opt=VALUE`, exact names only (no prefix abbreviation, no
//   positional arguments). In the separate form a VALUE starting with "--" is not taken: it is the
//   next option, so `--events --quiet` reports a missing value instead of writing a file called
//   "--quiet"; use `--opt=VALUE` for such a value. Numbers are decimal digits only: no sign, no 0x,
//   no spaces or trailing characters; overflow is reported, never wrapped.
// - A later occurrence of an option replaces the earlier one ("last wins", as getopt programs and
//   systemd drop-ins expect): a wrapper's defaults (deploy/run-sample.sh), the unit's FLOWCOP_OPTS
//   and an operator's additions compose. Every occurrence is still checked, and the start-up
//   configuration line prints the values that run. A list (--ipfix) adds with each occurrence.
// - Errors: parsing goes left to right and stops at the first bad argument. The message is ONE
//   line without a trailing newline, "flowcop: <flag>: <detail>", naming the flag, the bad value
//   (quoted, control characters escaped, long values shortened) and what is allowed. The caller
//   prints it to stderr and exits with code 2. -h/--help reached before any error yields the help
//   text (the caller prints it to stdout and exits 0).
// - On help or error, ParseOutcome::options holds default_options(), never a half-parsed mix.
// - option_table() returns a view of a table built on first use and never freed or changed.
#pragma once

#include "events_filter.h"

#include <conntrack/proto.h>
#include <packet/key_policy.h>
#include <protostate/proto_state.h>
#include <tcpstate/tcp_state.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace flowcop::app {

enum class Mode : uint8_t {
    monitor,    // track every packet, then free it
    inline_fwd, // track, then forward between paired ports 0<->1, 2<->3, ...
};

enum class ClockSource : uint8_t {
    tsc,    // wall time from the TSC
    packet, // time from packet timestamps: a pcap replays its own timeline at full speed
};

// The defaults (see default_options()) and why. Each is named once, where it is explained; options
// and every layer below read the name:
// - wheel_buckets 4096, tick_ms 1000 (timerwheel::kDefaultBuckets, kDefaultTickNs): the ATS wheel's
//   choice, measured there: 4095 one-second ticks (~68 min) of range cover every default timeout
//   but established, which then costs one extra visit per lap of the ring rather than a wrong expiry.
// - check_interval_ms 1000 (kDefaultCheckIntervalMs): the cop runs once per tick; running it more
//   often finds nothing new.
// - visit_budget_factor 16 (timerwheel::kDefaultVisitBudgetFactor): ATS's VISIT_BUDGET_FACTOR (a
//   re-arm is far cheaper than an expiry).
// - timeout_budget 128 (kDefaultTimeoutBudget): measured (tests/benchmarks.md, issue 6 part 5):
//   with 2 MiB pages a fire costs ~130 ns and a re-link of a busy flow 25-45 ns, so a pass stopped
//   by the fire budget takes ~17 us and one stopped by the visit budget (16 x 128 re-links)
//   50-90 us: both under the 102 us a 1024-descriptor RX ring takes to fill at 10 Mpps. 256
//   measured 33 us and 100-180 us. A backlog drains at 128,000 expiries a second per lcore; a pass
//   that hits the budget resumes 1 ms later, so the budget delays expiries, never loses them.
// - flows_per_lcore 2^20 and events_ring 2^16: round starting points, not measured; both are
//   allocated up front, so a larger value costs memory, not per-packet time.
// - events_invalid_rate 100 (conntrack::kDefaultInvalidEventRate): lib/conntrack/event_budget.h says why.
// - mbufs auto and mbuf_data_room 2176 (RTE_MBUF_DEFAULT_BUF_SIZE): the pool flowcop made before
//   the options existed, sized for the ports' rings and the lcores' bursts (mbuf_pool.h), each
//   mbuf holding a 1518-byte frame whole. Replays with pcap's infinite_rx need a larger pool.
// - tcp_timeout_s and default_inactivity_timeout_s: tcpstate::Timeouts::netfilter_defaults(),
//   netfilter's nf_conntrack_tcp_timeout_* and generic timeout (its reasons are there), so counts
//   compare with conntrack; the default inactivity timeout applies only where a state has none.
// - metrics 127.0.0.1:9781: loopback, so the exporter is never exposed without a deliberate flag.
//   metrics_allow any: as before the option existed; the address already limits who can connect.
// - proto_timeout_s: protostate::Timeouts::netfilter_defaults() (its header gives netfilter's reasons),
//   track all: every protocol is tracked, as netfilter does; port_zones none: every port in zone 0.
// - vlan_key both: what the key always held (overlapping address plans in different VLANs stay
//   apart); outer/none are for links that tag one direction, or one tag, only (key_policy.h).
// - ipfix_mtu 1500 (lib/ipfix/defaults.h names it and the IPFIX defaults below): Ethernet's, so
//   messages (1472 octets to IPv4 collectors, 1452 to IPv6) never fragment on a standard path. ipfix_template_refresh 60 s / 1000 messages: a collector that
//   restarts decodes again within a minute at any rate, and templates stay under 1% of the messages
//   at full rate. ipfix_domain_base 1: observation domain 0 means "no specific domain" (IANA 149),
//   so lcore 0 exports in domain 1. ipfix_active_timeout 1800 s: Cisco NetFlow's default active
//   timeout (collectors' dashboards expect long flows reported at most every 30 minutes), and one
//   interim report per long flow every 30 minutes is noise next to the cop's budget. ipfix_max_rate
//   10000 messages/s (lib/ipfix/pacer.h): ~170k records/s, which nfcapd keeps up with, in bursts a
//   collector's default socket buffer holds; a stop with 10^6 open flows then takes ~5 s to export.
inline constexpr uint32_t kDefaultCheckIntervalMs = 1000;
inline constexpr uint64_t kDefaultTimeoutBudget = 128;
// The longest timeout flowcop accepts (every timeout option, flowcopctl -U): one year; anything longer
// is a unit mistake.
inline constexpr uint32_t kMaxTimeoutS = 31536000;

// --tcp-timeout-<state> exists for every state a flow can be in: tcpstate's states after
// State::none, in State order. tcp_timeout_s[i] is the timeout of tcp_timeout_state(i).
inline constexpr size_t kTcpTimeoutStates = tcpstate::kStateCount - 1;
constexpr tcpstate::State tcp_timeout_state(size_t i) noexcept
{
    return static_cast<tcpstate::State>(i + 1);
}

struct Options {
    Mode mode;
    ClockSource clock;
    uint32_t wheel_buckets;       // power of two in [256, 2^24]
    uint32_t tick_ms;             // [1, 60000]
    uint32_t check_interval_ms;   // [1, 60000]
    uint64_t timeout_budget;      // expiries per cop pass, [1, 1e7]
    uint32_t visit_budget_factor; // visits per pass = factor * timeout_budget, [1, 1024]
    uint32_t flows_per_lcore;     // [1024, 2^27]
    // 0 = auto (mbufs_default() for the ports and lcores found at start); otherwise
    // [7168, 2^30 - 1], and the service refuses fewer than mbufs_minimum() (mbuf_pool.h).
    uint32_t mbufs;
    uint16_t mbuf_data_room; // bytes per mbuf, the 128-byte headroom included, [192, 65535]
    // tcp_timeout_s[i] is state tcp_timeout_state(i), named kTcpStateFlagNames[i]. 0 = no explicit
    // timeout: the default inactivity timeout applies. Max 31536000 (one year).
    std::array<uint32_t, kTcpTimeoutStates> tcp_timeout_s;
    uint32_t default_inactivity_timeout_s; // [1, 31536000]
    uint32_t active_timeout_s;             // 0 = none, max 31536000
    // metrics_enabled false (`--metrics-addr none`) leaves host empty and port 0.
    // metrics_host is an IPv4 or IPv6 literal without brackets; `localhost` is stored as
    // 127.0.0.1 so binding never depends on a resolver. metrics_port 0 = bind any free port
    // (the service prints the one it got).
    bool metrics_enabled;
    std::string metrics_host;
    uint16_t metrics_port;
    // Networks allowed to connect to the exporter (--metrics-allow), canonical "ADDRESS/LENGTH"
    // with no host bits set (IPv4 or IPv6, distinct, in given order); empty = every client.
    std::vector<std::string> metrics_allow;
    // IPFIX collectors (RFC 7011 over UDP): IPv4 or IPv6 literals without brackets (`localhost` is
    // stored as 127.0.0.1), ports 1..65535; empty = no export.
    struct Collector {
        std::string host;
        uint16_t port;
        bool operator==(const Collector&) const = default;
    };
    std::vector<Collector> ipfix;
    uint32_t ipfix_mtu;                       // path MTU to the collectors, [576, 65535]
    uint32_t ipfix_template_refresh_s;        // [1, 86400]
    uint32_t ipfix_template_refresh_messages; // [1, 1000000]
    uint32_t ipfix_max_rate;                  // messages a second to each collector; 0 = unpaced, max 1000000
    uint32_t ipfix_domain_base;               // lcore L exports in observation domain base + L
    uint32_t ipfix_active_timeout_s;          // interim records of long flows; 0 = none, max 86400
    std::string events_path;                  // empty = no event log, "-" = stdout
    // --policy: the connection-state policy file (lib/policy/policy.md); empty = none (accept everything).
    // Read, parsed and compiled by the service at start (exit 2 with file:line:column) and on reload.
    std::string policy_path;
    EventsFilter events_filter; // the kinds and protocols --events carries (events_filter.h)
    uint32_t
        events_ring; // events buffered per lcore and per consumer (JSON, IPFIX) before dropping; power of two in [64, 2^22]
    // Update events for invalid TCP segments per second per lcore, [0, conntrack::kMaxInvalidEventRate];
    // 0 = none. Default conntrack::kDefaultInvalidEventRate (event_budget.h says why).
    uint32_t events_invalid_rate;
    uint32_t stop_when_idle_ms; // 0 = never; else stop after no port received a packet for this long
    bool loose_pickup;          // netfilter's nf_conntrack_tcp_loose: track flows first seen mid-stream
    // TCP window tracking (lib/tcpstate/window.h), netfilter's nf_conntrack_tcp_* of the same names;
    // defaults from tcpstate (WindowPolicy, Timeouts::kDefaultCapSeconds): off, off, 3, 300 s, 300 s.
    bool tcp_be_liberal;                   // out-of-window segments pass; only the RST rules refuse
    bool tcp_ignore_invalid_rst;           // RSTs below the receiver's highest ack pass
    uint32_t tcp_max_retrans;              // identical segments before the max-retrans cap, [1, 127]
    uint32_t tcp_timeout_max_retrans_s;    // that cap; 0 = none, max 31536000
    uint32_t tcp_timeout_unacknowledged_s; // cap with data unacknowledged or no reply; 0 = none
    packet::VlanKey vlan_key;              // which VLAN IDs are part of a flow's key
    // Every protocol (issue 15): UDP/ICMP/generic timeouts in protostate::Timeout order, each
    // [1, 31536000]; the families tracked (--track); each listed port's conntrack zone (--port-zone).
    std::array<uint32_t, protostate::kTimeoutCount> proto_timeout_s;
    conntrack::TrackMask track;
    std::vector<std::pair<uint16_t, uint16_t>> port_zones; // (port, zone), ports distinct, in given order
    std::string flowgen; // raw KEY=VAL,... for the synthetic port, empty = off; validated there
    // Flows that survive a restart (issue 32; lib/statefile): the file written on a clean stop and read
    // at start (empty = none), and the period of the control plane's checkpoints of it (0 = none).
    std::string state_file;
    uint32_t state_checkpoint_s;
    // quiet: no live status line, no informational lines (startup configuration, port list) and
    // no final summary; errors and warnings are still logged (app/service/log.h), and a port chosen
    // by --metrics-addr HOST:0 is still printed. Metrics and the event log are the record for
    // unattended runs.
    bool quiet;

    bool operator==(const Options&) const = default;
};

// Flag suffixes of --tcp-timeout-<state>, in Options::tcp_timeout_s index order: tcpstate's own
// spelling (tcpstate::state_flag_name), so the option, telemetry and the state machine name a
// state alike.
inline const std::array<const char*, kTcpTimeoutStates> kTcpStateFlagNames = [] {
    std::array<const char*, kTcpTimeoutStates> names{};
    for (size_t i = 0; i < kTcpTimeoutStates; ++i)
        names[i] = tcpstate::state_flag_name(tcp_timeout_state(i));
    return names;
}();

Options default_options();

struct ParseOutcome {
    enum Kind { ok, help, error } kind;
    Options options;     // the parsed options when ok, default_options() otherwise
    std::string message; // error line without trailing newline, or the help text
};

// argv[0] is the program name (used in the help's usage line); argv[1..argc) are flowcop options.
ParseOutcome parse_options(int argc, char** argv);

// Usage and one block per option: name, value syntax, meaning, default and allowed values.
std::string help_text(const char* prog);

// "flowcop: <flag>: <detail>", the one format every option error uses, including those found
// after parsing (e.g. the service's bind failure: format_flag_error("--metrics-addr",
// "127.0.0.1:9781: address already in use")).
std::string format_flag_error(std::string_view flag, std::string_view detail);

// "HOST:PORT", bracketing IPv6 literals ("[::1]:9781"): the form --metrics-addr accepts.
std::string format_host_port(std::string_view host, uint16_t port);

// The effective configuration as (key, value) pairs in table order, one per option that takes a
// value plus "quiet". Keys are the flag names without "--", '-' replaced by '_' (usable as
// Prometheus label names); values are spelled as the flag accepts them, so `--<flag>=<value>`
// for every pair reproduces the same Options.
std::vector<std::pair<std::string, std::string>> describe(const Options&);

// describe() joined as `key=value` separated by spaces, values quoted when they are empty or
// contain spaces, quotes, '=' or control characters: the startup log line.
std::string describe_line(const Options&);

// The parser's table, read-only, for tools and tests that must agree with the parser.
struct OptionInfo {
    std::string name;         // "--wheel-buckets"
    std::string alias;        // another accepted spelling: "-h", "--tcp-timeout-time_wait"; else empty
    std::string metavar;      // "N", "monitor|inline"; empty for flags without a value
    std::string default_text; // as --help shows it, rendered from default_options(); empty for --help
    std::string allowed;      // as --help shows it, e.g. "power of two in 256..16777216"
    bool takes_value;
};
std::span<const OptionInfo> option_table();

} // namespace flowcop::app
