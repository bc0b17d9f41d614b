// SPDX-License-Identifier: BSD-3-Clause
// Every flowcop option: name, meaning, allowed values, and how it is stored and shown.
#include "option_table.h"

#include <conntrack/event_budget.h>
#include <events/event.h> // header-only: sizeof(Event) for --events-ring's help
#include <tcpstate/window.h>

#include <type_traits>

#include "mbuf_pool.h"
#include "option_values.h"
#include "options.h"

namespace flowcop::app::detail {
namespace {

// A day: a longer idle wait means milliseconds were confused with another unit.
constexpr uint64_t kMaxStopWhenIdleMs = 86400000;
// The "not set" spellings --help shows as defaults, accepted as values so copying them is safe.
constexpr char kNone[] = "none";
constexpr char kOff[] = "off";
constexpr char kAuto[] = "auto";
constexpr char kAny[] = "any";

template <auto Field>
std::string set_number(const Spec& s, std::string_view v, Options& o)
{
    uint64_t n = 0;
    std::string err = check_number(v, s.min, s.max, s.pow2, n);
    if (err.empty())
        o.*Field = static_cast<std::remove_reference_t<decltype(o.*Field)>>(n);
    return err;
}

template <auto Field>
std::string show_number(const Spec&, const Options& o)
{
    return std::to_string(o.*Field);
}

std::string set_tcp_timeout(const Spec& s, std::string_view v, Options& o)
{
    uint64_t n = 0;
    std::string err = check_number(v, s.min, s.max, s.pow2, n);
    if (err.empty())
        o.tcp_timeout_s.at(s.index) = static_cast<uint32_t>(n);
    return err;
}

std::string show_tcp_timeout(const Spec& s, const Options& o)
{
    return std::to_string(o.tcp_timeout_s.at(s.index));
}

template <auto Field>
std::string set_choice(const Spec& s, std::string_view v, Options& o)
{
    for (std::size_t i = 0; i < s.choices.size(); ++i) {
        if (v == s.choices[i]) {
            o.*Field = static_cast<std::remove_reference_t<decltype(o.*Field)>>(i);
            return {};
        }
    }
    return quote(v) + " is not one of " + join(s.choices, ", ");
}

template <auto Field>
std::string show_choice(const Spec& s, const Options& o)
{
    return s.choices.at(static_cast<std::size_t>(o.*Field));
}

// A string whose OffWord (the default --help shows) means "not set", stored as "".
template <auto Field, const char* OffWord>
std::string set_optional_string(const Spec& s, std::string_view v, Options& o)
{
    if (v.empty())
        return "must not be empty (allowed: " + s.allowed + ")";
    o.*Field = v == OffWord ? std::string() : std::string(v);
    return {};
}

template <auto Field, const char* OffWord>
std::string show_optional_string(const Spec&, const Options& o)
{
    const std::string& v = o.*Field;
    if (v.empty())
        return OffWord;
    return v == OffWord ? "./" + v : v; // a file literally named like the off word
}

// on|off, in the order operators write it (a choice list would be indexed off=0, on=1).
template <auto Field>
std::string set_switch(const Spec&, std::string_view v, Options& o)
{
    if (v != "on" && v != "off")
        return quote(v) + " is not one of on, off";
    o.*Field = v == "on";
    return {};
}

template <auto Field>
std::string show_switch(const Spec&, const Options& o)
{
    return o.*Field ? "on" : "off";
}

// --mbufs: auto (stored as 0: the service sizes the pool for the ports and lcores it finds, and
// checks a given count against the same need; mbuf_pool.h) or a count in the table's range.
std::string set_mbufs(const Spec& s, std::string_view v, Options& o)
{
    if (v == kAuto) {
        o.mbufs = 0;
        return {};
    }
    uint64_t n = 0;
    if (!parse_decimal(v, n))
        return quote(v) + " is neither auto nor a number in " + std::to_string(s.min) + ".." + std::to_string(s.max);
    return set_number<&Options::mbufs>(s, v, o);
}

std::string show_mbufs(const Spec&, const Options& o)
{
    return o.mbufs == 0 ? kAuto : std::to_string(o.mbufs);
}

std::string set_events_filter(const Spec&, std::string_view v, Options& o)
{
    return parse_events_filter(v, o.events_filter);
}

std::string show_events_filter_option(const Spec&, const Options& o)
{
    return show_events_filter(o.events_filter);
}

std::string set_quiet(const Spec&, std::string_view, Options& o)
{
    o.quiet = true;
    return {};
}

std::string set_metrics_addr(const Spec&, std::string_view v, Options& o)
{
    if (v == kNone) {
        o.metrics_enabled = false;
        o.metrics_host.clear();
        o.metrics_port = 0;
        return {};
    }
    HostPort hp{};
    std::string err = check_host_port(v, hp);
    if (err.empty()) {
        o.metrics_enabled = true;
        o.metrics_host = std::move(hp.host);
        o.metrics_port = hp.port;
    }
    return err;
}

std::string show_metrics_addr(const Spec&, const Options& o)
{
    return o.metrics_enabled ? format_host_port(o.metrics_host, o.metrics_port) : kNone;
}

// --metrics-allow: any, or networks separated by commas, each once (check_network's canonical form).
std::string set_metrics_allow(const Spec& s, std::string_view v, Options& o)
{
    if (v.empty())
        return "must not be empty (allowed: " + s.allowed + ")";
    if (v == kAny) {
        o.metrics_allow.clear();
        return {};
    }
    std::vector<std::string> networks;
    for (std::size_t start = 0;;) {
        const std::size_t comma = v.find(',', start);
        const std::string_view one = v.substr(start, comma == std::string_view::npos ? v.npos : comma - start);
        if (one.empty())
            return quote(v) + ": an empty network between commas";
        std::string network;
        if (std::string err = check_network(one, network); !err.empty())
            return err;
        for (const auto& have : networks)
            if (have == network)
                return quote(one) + " is given twice (as " + network + ")";
        networks.push_back(std::move(network));
        if (comma == std::string_view::npos)
            break;
        start = comma + 1;
    }
    o.metrics_allow = std::move(networks);
    return {};
}

std::string show_metrics_allow(const Spec&, const Options& o)
{
    return o.metrics_allow.empty() ? kAny : join(o.metrics_allow, ",");
}

// packet::VlanKey's names in enum order, as set_choice/show_choice index them.
std::vector<std::string> vlan_key_choices()
{
    std::vector<std::string> c;
    for (packet::VlanKey m : {packet::VlanKey::both, packet::VlanKey::outer, packet::VlanKey::none})
        c.emplace_back(packet::vlan_key_name(m));
    return c;
}

// --ipfix: HOST:PORT[,HOST:PORT...], repeatable; every occurrence adds its collectors. none = no
// export (as --help shows the default), accepted only as the whole value.
std::string set_ipfix(const Spec&, std::string_view v, Options& o)
{
    if (v == kNone) {
        o.ipfix.clear();
        return {};
    }
    std::vector<Options::Collector> add;
    for (std::size_t start = 0;;) {
        const std::size_t comma = v.find(',', start);
        const std::string_view one = v.substr(start, comma == std::string_view::npos ? v.npos : comma - start);
        HostPort hp{};
        if (std::string err = check_host_port(one, hp); !err.empty())
            return err;
        if (hp.port == 0)
            return quote(one) + ": port 0 is not a collector's port (1..65535; IPFIX's is 4739)";
        add.push_back({std::move(hp.host), hp.port});
        if (comma == std::string_view::npos)
            break;
        start = comma + 1;
    }
    for (auto& c : add) {
        for (const auto& have : o.ipfix)
            if (have == c)
                return quote(format_host_port(c.host, c.port)) + " is given twice";
        o.ipfix.push_back(std::move(c));
    }
    return {};
}

std::string show_ipfix(const Spec&, const Options& o)
{
    if (o.ipfix.empty())
        return kNone;
    std::string out;
    for (const auto& c : o.ipfix) {
        if (!out.empty())
            out += ',';
        out += format_host_port(c.host, c.port);
    }
    return out;
}

// --- Every protocol (issue 15): --udp-timeout..., --track, --port-zone ---

std::string set_proto_timeout(const Spec& s, std::string_view v, Options& o)
{
    uint64_t n = 0;
    std::string err = check_number(v, s.min, s.max, s.pow2, n);
    if (err.empty())
        o.proto_timeout_s.at(s.index) = static_cast<uint32_t>(n);
    return err;
}

std::string show_proto_timeout(const Spec& s, const Options& o)
{
    return std::to_string(o.proto_timeout_s.at(s.index));
}

std::string set_track(const Spec&, std::string_view v, Options& o)
{
    conntrack::TrackMask m = 0;
    if (!conntrack::parse_track_mask(v, m))
        return quote(v) + " is not all or a comma-separated list of tcp, udp, icmp, other";
    o.track = m;
    return {};
}

std::string show_track(const Spec&, const Options& o)
{
    if (o.track == conntrack::kTrackAll)
        return "all";
    std::vector<std::string> words;
    for (size_t p = 0; p < conntrack::kProtoCount; ++p)
        if (o.track & conntrack::track_bit(static_cast<conntrack::Proto>(p)))
            words.emplace_back(conntrack::proto_name(static_cast<conntrack::Proto>(p)));
    return join(words, ",");
}

std::string set_port_zone(const Spec&, std::string_view v, Options& o)
{
    std::vector<std::pair<uint16_t, uint16_t>> zones;
    if (v == kNone) {
        o.port_zones.clear();
        return {};
    }
    while (true) {
        const size_t comma = v.find(',');
        const std::string_view item = v.substr(0, comma);
        const size_t colon = item.find(':');
        uint64_t port = 0, zone = 0;
        if (colon == std::string_view::npos || !parse_decimal(item.substr(0, colon), port) ||
            !parse_decimal(item.substr(colon + 1), zone) || port > UINT16_MAX || zone > UINT16_MAX)
            return quote(item) + " is not PORT:ZONE with PORT and ZONE in 0..65535";
        for (const auto& [p, z] : zones)
            if (p == port)
                return "port " + std::to_string(port) + " is given two zones";
        zones.emplace_back(uint16_t(port), uint16_t(zone));
        if (comma == std::string_view::npos)
            break;
        v.remove_prefix(comma + 1);
    }
    o.port_zones = std::move(zones);
    return {};
}

std::string show_port_zone(const Spec&, const Options& o)
{
    if (o.port_zones.empty())
        return kNone;
    std::vector<std::string> items;
    for (const auto& [p, z] : o.port_zones)
        items.push_back(std::to_string(p) + ":" + std::to_string(z));
    return join(items, ",");
}

void add_protocol_specs(std::vector<Spec>& t);

Spec base(std::string name, std::string metavar, std::string help)
{
    Spec s;
    s.name = std::move(name);
    s.metavar = std::move(metavar);
    s.help = std::move(help);
    return s;
}

Spec number(std::string name, std::string metavar, std::string help, uint64_t min, uint64_t max, Setter set,
            Shower show, bool pow2 = false)
{
    Spec s = base(std::move(name), std::move(metavar), std::move(help));
    s.min = min;
    s.max = max;
    s.pow2 = pow2;
    s.set = set;
    s.show = show;
    s.allowed = (pow2 ? "a power of two in " : "") + std::to_string(min) + ".." + std::to_string(max);
    return s;
}

Spec choice(std::string name, std::string help, std::vector<std::string> choices, Setter set, Shower show)
{
    Spec s = base(std::move(name), join(choices, "|"), std::move(help));
    s.allowed = join(choices, ", ");
    s.choices = std::move(choices);
    s.set = set;
    s.show = show;
    return s;
}

Spec text(std::string name, std::string metavar, std::string help, std::string allowed, Setter set, Shower show)
{
    Spec s = base(std::move(name), std::move(metavar), std::move(help));
    s.allowed = std::move(allowed);
    s.set = set;
    s.show = show;
    return s;
}

std::vector<Spec> build_specs()
{
    using O = Options;
    std::vector<Spec> t;
    t.push_back(choice("--mode",
                       "monitor: track every packet, then free it.\n"
                       "inline: track, then forward between paired ports 0<->1, 2<->3, ...",
                       {"monitor", "inline"}, set_choice<&O::mode>, show_choice<&O::mode>));
    t.push_back(choice("--clock",
                       "tsc: real time from the CPU's time-stamp counter.\n"
                       "packet: time from packet timestamps, so a pcap replays its own\n"
                       "timeline at full speed.",
                       {"tsc", "packet"}, set_choice<&O::clock>, show_choice<&O::clock>));
    t.push_back(number("--wheel-buckets", "N", "Timer wheel buckets per lcore; the wheel's range is N-1 ticks.", 256,
                       1u << 24, set_number<&O::wheel_buckets>, show_number<&O::wheel_buckets>, true));
    t.push_back(number("--tick-ms", "MS", "Timer wheel tick: the resolution of every timeout.", 1, 60000,
                       set_number<&O::tick_ms>, show_number<&O::tick_ms>));
    t.push_back(number("--check-interval-ms", "MS", "How often the inactivity cop runs.", 1, 60000,
                       set_number<&O::check_interval_ms>, show_number<&O::check_interval_ms>));
    t.push_back(number("--timeout-budget", "N", "Most expiries one cop pass fires; the rest wait for the next pass.", 1,
                       10000000, set_number<&O::timeout_budget>, show_number<&O::timeout_budget>));
    t.push_back(number("--visit-budget-factor", "N", "A cop pass also stops after visiting N x --timeout-budget flows.",
                       1, 1024, set_number<&O::visit_budget_factor>, show_number<&O::visit_budget_factor>));
    t.push_back(number("--flows-per-lcore", "N",
                       "Flow table capacity per lcore, fixed at start; when it is full a new\n"
                       "flow evicts an unassured one or is refused and counted.",
                       1024, 1u << 27, set_number<&O::flows_per_lcore>, show_number<&O::flows_per_lcore>));
    std::string mbufs_help = "Mbufs in the packet pool, fixed at start. auto: enough for the ports'\n"
                             "RX and TX rings and the lcores' bursts (";
    mbufs_help += std::to_string(mbufs_default(1, 1));
    mbufs_help += " for one port on one lcore).\n"
                  "A pcap vdev with infinite_rx=1 needs one more per packet of its capture.";
    Spec mbufs = number("--mbufs", "N", std::move(mbufs_help), mbufs_minimum(1, 1), kMaxMbufs, set_mbufs, show_mbufs);
    mbufs.allowed = "auto, or " + mbufs.allowed + " (at start: at least what the ports need)";
    t.push_back(std::move(mbufs));
    t.push_back(number("--mbuf-data-room", "BYTES",
                       "Bytes per mbuf, DPDK's 128-byte headroom included. A frame longer than\n"
                       "BYTES - 128 takes several mbufs; a device that cannot chain them (or\n"
                       "pcap's infinite_rx) refuses to start, and flowcop says so.",
                       kMinMbufDataRoom, UINT16_MAX, set_number<&O::mbuf_data_room>, show_number<&O::mbuf_data_room>));
    for (std::size_t i = 0; i < kTcpStateFlagNames.size(); ++i) {
        // Spelled as every other flag is (--tcp-timeout-time-wait); the state's own spelling
        // (--tcp-timeout-time_wait, as the state machine and telemetry name it) stays accepted.
        const std::string state = kTcpStateFlagNames[i];
        Spec s = number("--tcp-timeout-" + hyphenated(state), "SECONDS",
                        "Inactivity timeout in TCP state " + state +
                            "; 0 = none of its own:\n--default-inactivity-timeout applies.",
                        0, kMaxTimeoutS, set_tcp_timeout, show_tcp_timeout);
        if (state != hyphenated(state))
            s.alias = "--tcp-timeout-" + state;
        s.index = i;
        t.push_back(std::move(s));
    }
    t.push_back(number("--default-inactivity-timeout", "SECONDS",
                       "Inactivity timeout for flows whose TCP state has none of its own.", 1, kMaxTimeoutS,
                       set_number<&O::default_inactivity_timeout_s>, show_number<&O::default_inactivity_timeout_s>));
    t.push_back(number("--active-timeout", "SECONDS",
                       "Expire a flow this long after it was first seen, however busy;\n"
                       "0 = no active timeout.",
                       0, kMaxTimeoutS, set_number<&O::active_timeout_s>, show_number<&O::active_timeout_s>));
    t.push_back(text("--metrics-addr", "HOST:PORT",
                     "Prometheus exporter address. PORT 0 binds any free port and prints it;\n"
                     "localhost means 127.0.0.1; none disables the exporter. [IPv6]:PORT needs\n"
                     "an HTTP server (civetweb) built with IPv6: Debian 12's is not, and flowcop\n"
                     "then refuses to start, saying so.",
                     "IPv4:PORT, [IPv6]:PORT or localhost:PORT with PORT in 0..65535; none", set_metrics_addr,
                     show_metrics_addr));
    t.push_back(text("--metrics-allow", "CIDR,...",
                     "Clients that may connect to the exporter: any, or networks\n"
                     "ADDRESS/LENGTH (an address alone is one host) separated by commas.\n"
                     "Others are closed as they connect, before they take one of its HTTP\n"
                     "threads: list your Prometheus servers, and held or slow connections\n"
                     "from anywhere else cannot delay their scrapes. IPv6 networks need\n"
                     "civetweb built with IPv6 (Debian 12's is not: flowcop then says so).",
                     "any, or IPv4/LENGTH and IPv6/LENGTH networks, comma-separated", set_metrics_allow,
                     show_metrics_allow));
    Spec ipfix = text("--ipfix", "HOST:PORT",
                      "Export every ended flow as IPFIX (RFC 7011) over UDP to this collector\n"
                      "(nfcapd, nfacctd, ...). Repeat it, or list collectors separated by\n"
                      "commas, to send the same records to several.",
                      "IPv4:PORT, [IPv6]:PORT or localhost:PORT with PORT in 1..65535, comma-separated; none",
                      set_ipfix, show_ipfix);
    ipfix.repeatable = true;
    t.push_back(std::move(ipfix));
    t.push_back(number("--ipfix-mtu", "BYTES",
                       "Path MTU to the collectors: IPFIX messages stay within it less the\n"
                       "IP and UDP headers (28 bytes for IPv4, 48 for IPv6), never fragmented.",
                       576, 65535, set_number<&O::ipfix_mtu>, show_number<&O::ipfix_mtu>));
    t.push_back(number("--ipfix-template-refresh", "SECONDS",
                       "Send the IPFIX templates again at least this often (UDP export:\n"
                       "a collector that restarts can decode again after at most this long).",
                       1, 86400, set_number<&O::ipfix_template_refresh_s>, show_number<&O::ipfix_template_refresh_s>));
    t.push_back(number(
        "--ipfix-template-refresh-messages", "N", "... and after every N IPFIX messages, whichever comes first.", 1,
        1000000, set_number<&O::ipfix_template_refresh_messages>, show_number<&O::ipfix_template_refresh_messages>));
    t.push_back(number("--ipfix-max-rate", "N",
                       "Send at most N IPFIX messages a second to each collector, in bursts of\n"
                       "at most 32, so a burst of records (the flows still open at a stop, a\n"
                       "flush) reaches it at a rate it can read: UDP loses what a collector's\n"
                       "socket buffer cannot hold, uncounted here. 0 = unpaced.",
                       0, 1000000, set_number<&O::ipfix_max_rate>, show_number<&O::ipfix_max_rate>));
    t.push_back(number("--ipfix-domain-base", "N",
                       "Lcore L exports in IPFIX observation domain N + L; give each flowcop\n"
                       "instance that exports from one host its own range.",
                       0, 4294967295u - 1024, set_number<&O::ipfix_domain_base>, show_number<&O::ipfix_domain_base>));
    t.push_back(number("--ipfix-active-timeout", "SECONDS",
                       "With --ipfix, also report a flow this often while it lasts (interim\n"
                       "records, the NetFlow/IPFIX active timeout); the flow goes on. 0 = report\n"
                       "flows only when they end. Unlike --active-timeout, which ends flows.",
                       0, 86400, set_number<&O::ipfix_active_timeout_s>, show_number<&O::ipfix_active_timeout_s>));
    t.push_back(text("--policy", "FILE",
                     "Judge every packet by the connection-state policy in FILE: nftables'\n"
                     "rule syntax for `ct state` and a few matches, first match wins, a final\n"
                     "`policy accept|drop` (lib/policy/policy.md). Inline mode drops what it\n"
                     "drops (a dropped new packet creates no flow); monitor mode only counts\n"
                     "(a dry run). SIGHUP, /flowcop/policy/reload and flowcopctl\n"
                     "--policy-reload re-read it; a bad file is refused (at start: exit 2).\n"
                     "none = no policy: every packet is accepted, at no cost.",
                     "a file path, or none (./none for a file named none)", set_optional_string<&O::policy_path, kNone>,
                     show_optional_string<&O::policy_path, kNone>));
    t.push_back(text("--events", "PATH", "Write flow events as JSON lines to PATH; - = stdout.",
                     "a file path, - (stdout), or none (./none for a file named none)",
                     set_optional_string<&O::events_path, kNone>, show_optional_string<&O::events_path, kNone>));
    t.push_back(text("--events-filter", "KINDS[:PROTOS]",
                     "The events --events writes, comma-separated: new, update (a state\n"
                     "change, the first reply, assured, a refused TCP segment), destroy;\n"
                     "after ':' only these IP protocols. Applied at the source: a\n"
                     "filtered-out event takes no ring slot. Example: new,update,destroy:tcp,udp",
                     "kinds new, update, destroy; protocols tcp, udp, icmp, icmpv6, ... or 0..255", set_events_filter,
                     show_events_filter_option));
    t.push_back(number("--events-invalid-rate", "N",
                       "Update events for refused TCP segments (invalid for the flow's state,\n"
                       "or out of its window), at most N a second per lcore after a burst of N;\n"
                       "the rest are counted (events_invalid_suppressed). 0 = none.",
                       0, conntrack::kMaxInvalidEventRate, set_number<&O::events_invalid_rate>,
                       show_number<&O::events_invalid_rate>));
    t.push_back(number("--events-ring", "N",
                       "Slots of each lcore's event ring, for --events and for --ipfix each:\n"
                       "it holds N - 1 events, beyond which events are dropped and counted;\n"
                       "it takes N x " +
                           std::to_string(sizeof(events::Event)) + " bytes.",
                       64, 1u << 22, set_number<&O::events_ring>, show_number<&O::events_ring>, true));
    t.push_back(number("--stop-when-idle-ms", "MS",
                       "Stop once no port has received a packet for MS of wall time\n"
                       "(for replays); 0 = never.",
                       0, kMaxStopWhenIdleMs, set_number<&O::stop_when_idle_ms>, show_number<&O::stop_when_idle_ms>));
    t.push_back(text("--loose-pickup", "on|off",
                     "Track flows first seen mid-stream (netfilter's nf_conntrack_tcp_loose).", "on, off",
                     set_switch<&O::loose_pickup>, show_switch<&O::loose_pickup>));
    // TCP window tracking (issue 16): netfilter's nf_conntrack_tcp_* knobs of the same names.
    t.push_back(text("--tcp-be-liberal", "on|off",
                     "Accept TCP segments outside the window (they teach it nothing); only\n"
                     "RSTs before the receiver's highest ack are refused. For links where\n"
                     "flowcop misses segments of both directions (asymmetric routing, a\n"
                     "lossy mirror port). netfilter's nf_conntrack_tcp_be_liberal.",
                     "on, off", set_switch<&O::tcp_be_liberal>, show_switch<&O::tcp_be_liberal>));
    t.push_back(text("--tcp-ignore-invalid-rst", "on|off",
                     "Accept RSTs before the receiver's highest ack (stacks that send them,\n"
                     "or acks lost before flowcop); an assured flow still needs the exact\n"
                     "sequence to end. netfilter's nf_conntrack_tcp_ignore_invalid_rst.",
                     "on, off", set_switch<&O::tcp_ignore_invalid_rst>, show_switch<&O::tcp_ignore_invalid_rst>));
    t.push_back(number("--tcp-max-retrans", "N",
                       "Identical segments in a row (no progress) after which a flow's timeout\n"
                       "is capped at --tcp-timeout-max-retrans. netfilter's\n"
                       "nf_conntrack_tcp_max_retrans.",
                       1, tcpstate::WindowPolicy::kMaxMaxRetrans, set_number<&O::tcp_max_retrans>,
                       show_number<&O::tcp_max_retrans>));
    t.push_back(number("--tcp-timeout-max-retrans", "SECONDS",
                       "Timeout cap of a TCP flow retransmitting without progress (see\n"
                       "--tcp-max-retrans) or whose last ACK advertised a zero window;\n"
                       "0 = no cap.",
                       0, kMaxTimeoutS, set_number<&O::tcp_timeout_max_retrans_s>,
                       show_number<&O::tcp_timeout_max_retrans_s>));
    t.push_back(number("--tcp-timeout-unacknowledged", "SECONDS",
                       "Timeout cap of a TCP flow with data not yet acknowledged, or picked\n"
                       "up mid-stream and never answered (instead of ESTABLISHED's 5 days);\n"
                       "0 = no cap.",
                       0, kMaxTimeoutS, set_number<&O::tcp_timeout_unacknowledged_s>,
                       show_number<&O::tcp_timeout_unacknowledged_s>));
    t.push_back(choice("--vlan-key",
                       "Which VLAN IDs are part of a flow's identity. both: outer and inner,\n"
                       "so overlapping address plans in different VLANs stay apart. outer:\n"
                       "the outer ID only. none: no VLAN ID, for links that tag one direction\n"
                       "only (Suricata's vlan.use-for-tracking: false). A third tag is never\n"
                       "part of the key.",
                       vlan_key_choices(), set_choice<&O::vlan_key>, show_choice<&O::vlan_key>));
    add_protocol_specs(t);
    t.push_back(text(
        "--flowgen", "KEY=VAL,...", "Add flowcop's own port: a TCP model or replay=FILE; queues=N deals it by RSS.",
        "KEY=VAL,... or off", set_optional_string<&O::flowgen, kOff>, show_optional_string<&O::flowgen, kOff>));
    t.push_back(text("--state-file", "PATH",
                     "Keep the flows across a restart: on a clean stop (SIGTERM, SIGINT) write\n"
                     "every flow to PATH (a temporary file beside it, fsync'd and renamed), and\n"
                     "at start restore the flows PATH holds before the first packet is read,\n"
                     "with their ids, state, windows, counters and remaining timeouts. A\n"
                     "missing or bad file starts empty, counted. none = off.",
                     "a file path, or none", set_optional_string<&O::state_file, kNone>,
                     show_optional_string<&O::state_file, kNone>));
    t.push_back(number("--state-checkpoint-s", "SECONDS",
                       "Also write --state-file every SECONDS while running, from the control\n"
                       "plane in the listing's bounded slices (no packet path stall), so a crash\n"
                       "loses at most SECONDS of flow state. 0 = only on a clean stop. Needs\n"
                       "--state-file (without it: a warning, no checkpoints).",
                       0, 86400, set_number<&O::state_checkpoint_s>, show_number<&O::state_checkpoint_s>));
    t.push_back(text("--quiet", "",
                     "No live status line, start-up lines or final summary; errors and\n"
                     "warnings are still logged, and a port chosen by --metrics-addr HOST:0\n"
                     "is still printed.",
                     "", set_quiet, show_switch<&O::quiet>));
    Spec help = base("--help", "", "Print this help and exit.");
    help.alias = "-h";
    help.is_help = true;
    t.push_back(std::move(help));
    return t;
}

void add_protocol_specs(std::vector<Spec>& t)
{
    // protostate's timeouts, named as its flag names say (netfilter's sysctls with '-').
    constexpr const char* kHelp[] = {
        "Inactivity timeout of a UDP flow until it is assured (replied, and\nseen again more than 2 s after "
        "its start).",
        "Inactivity timeout of an assured UDP flow (a stream).",
        "Inactivity timeout of an ICMP/ICMPv6 query flow (echo, ...).",
        "Inactivity timeout of a flow of any other IP protocol (GRE, ESP, SCTP, ...),\nkeyed by addresses and "
        "protocol.",
    };
    static_assert(std::size(kHelp) == protostate::kTimeoutCount);
    for (std::size_t i = 0; i < protostate::kTimeoutCount; ++i) {
        Spec s = number(std::string("--") + protostate::timeout_flag_name(static_cast<protostate::Timeout>(i)),
                        "SECONDS", kHelp[i], 1, kMaxTimeoutS, set_proto_timeout, show_proto_timeout);
        s.index = i;
        t.push_back(std::move(s));
    }
    t.push_back(text("--track", "LIST",
                     "The protocols tracked: all, or a comma-separated list of tcp, udp, icmp\n"
                     "(ICMP and ICMPv6 queries, and the errors that relate to flows), other\n"
                     "(every other IP protocol). Packets of the others are only counted.",
                     "all, or a list of tcp, udp, icmp, other", set_track, show_track));
    t.push_back(text("--port-zone", "PORT:ZONE,...",
                     "Put the flows of each listed DPDK port in its own conntrack zone, so the\n"
                     "same addresses seen on ports with overlapping address plans are\n"
                     "different flows. Unlisted ports are zone 0.",
                     "none, or PORT:ZONE,... with PORT and ZONE in 0..65535, each port once", set_port_zone,
                     show_port_zone));
}

} // namespace

std::string hyphenated(std::string name)
{
    for (char& ch : name)
        ch = ch == '_' ? '-' : ch;
    return name;
}

const std::vector<Spec>& specs()
{
    static const std::vector<Spec> table = build_specs();
    return table;
}

} // namespace flowcop::app::detail
