// SPDX-License-Identifier: BSD-3-Clause
// Contract: the flowgen traffic generator's parameters, their one parser and their one help text.
//
// parse_config() reads DPDK devargs syntax ("flows=1000,pps=2000000,...") through rte_kvargs; it needs
// no EAL. It starts from the defaults below, applies each key once, checks the keys against each other
// (check_config()) and only then assigns `out`: on error `out` is left exactly as it was, and the
// return value is one sentence that names the bad key and value and says what is accepted
// ("flowgen: pps: 'abc' is not a number in 1..1000000000"). An empty or null string yields the defaults.
// check_config() is the single source of truth for what a Config may hold; Core, Generator and Port
// refuse (produce nothing, or fail create()) a Config it rejects, so a Config built in code gets the
// same checks as one parsed from text.
// help() is the one documentation string for every key, its default and its range (drivers/net/flowgen/flowgen.md
// quotes it). Setup time only: everything here may allocate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace flowcop::flowgen {

enum class LifetimeDist : uint8_t {
    fixed, // every flow lives exactly `lifetime`
    exp,   // exponential with mean `lifetime` (memoryless, the classic flow-duration model)
};

// What the Port does with frames that find its rx ring full. `wait` holds them and retries
// (back-pressure: the consumer sees the whole stream); `drop` frees the frames that do not fit and
// counts them (Stats::rx_dropped), as a NIC drops what finds its descriptor ring full. drop needs
// realtime=1: without a wall-clock pace the generator would just outrun any consumer.
enum class Overflow : uint8_t { wait, drop };

// At virtual second `at_s` after `start`, the next `flows` established flows each send one last data
// segment and go silent, all within that second, so a tracker finds them all due at once.
struct Wave {
    uint64_t at_s = 0;
    uint64_t flows = 0;
};

// Ranges enforced by check_config(). flows is capped at 10^7 because the generator keeps ~34 bytes per
// concurrent flow (340 MB at the cap). pps is capped at 10^9: the virtual clock counts slots of
// 1/pps s in 64 bits, and no single port is faster. Lifetimes and durations are held in milliseconds.
inline constexpr uint64_t kMaxFlows = 10'000'000;
inline constexpr uint64_t kMaxPps = 1'000'000'000;
inline constexpr uint64_t kMaxNewFlowRate = 100'000'000;
inline constexpr uint64_t kMinLifetimeMs = 1, kMaxLifetimeMs = 1'000'000'000; // 1 ms .. 10^6 s
inline constexpr uint64_t kMaxDurationMs = 1'000'000'000'000;                 // 10^9 s
inline constexpr uint64_t kMaxWaveSecond = 1'000'000'000;
inline constexpr uint32_t kMinPktSize = 64, kMaxPktSize = 9000;
inline constexpr uint64_t kMaxStartS = 4'102'444'800; // 2100-01-01
inline constexpr uint32_t kMinRing = 64, kMaxRing = 1u << 20;
inline constexpr uint32_t kMaxBurst = 1024;
inline constexpr uint16_t kMaxQueues = 64;

struct Config {
    uint64_t flows = 1000;         // concurrent flows
    uint64_t new_flow_rate = 0;    // new flows per virtual second; 0: flows / lifetime
    uint64_t lifetime_ms = 10'000; // mean flow lifetime, virtual time
    LifetimeDist lifetime_dist = LifetimeDist::exp;
    uint32_t idle_pct = 10;  // flows that go silent instead of closing
    uint32_t rst_pct = 10;   // flows that close by RST; the rest close by FIN
    uint32_t pkt_size = 128; // frame bytes of a data segment (no FCS)
    uint32_t ipv6_pct = 0;
    uint64_t pps = 1'000'000; // packet slots per virtual second: the timeline
    std::optional<Wave> wave;
    uint64_t packets = 0;     // stop after this many frames; 0: unlimited
    uint64_t duration_ms = 0; // stop at this virtual time; 0: unlimited
    uint64_t seed = 1;
    uint64_t start_s = 1'700'000'000;   // virtual clock at the first slot, Unix seconds
    bool realtime = false;              // Port only: pace emission to wall time
    Overflow overflow = Overflow::wait; // Port only: a full rx ring holds the burst or drops it
    std::optional<uint16_t> vlan;       // 802.1Q VLAN ID 1..4094 on every frame
    uint32_t ring = 4096;               // Port only: rx/tx ring entries
    uint32_t burst = 32;                // Port only: frames generated per ring enqueue
    // Port only: RX queues (and as many TX queues). With more than one, each frame goes to the queue a
    // NIC's symmetric RSS would give it (rss_dealer.h), so flowcop can run its rss plan on the port.
    uint16_t queues = 1;
    // Frames from this Ethernet pcap file, in its order and with its timestamps, instead of the model
    // (capture.h). The model's keys do not apply and parse_config() refuses them beside it.
    std::string replay;
};

// "" or one sentence naming the bad key/value. On error `out` is unchanged. kvargs may be nullptr.
std::string parse_config(const char* kvargs, Config& out);

// "" if every field is in range and the fields agree with each other, else one sentence.
std::string check_config(const Config& cfg);

// The documentation of every key: syntax, default, range. Never nullptr; static storage.
const char* help();

} // namespace flowcop::flowgen
