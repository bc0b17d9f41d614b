// SPDX-License-Identifier: BSD-3-Clause
// Test-only: an independent reading of flowgen's output. parse_frame() is a minimal
// Ethernet/802.1Q/IPv4|IPv6/TCP parser that also verifies lengths and both checksums; Tracker is a
// small reference TCP tracker that checks each flow's lifecycle segment by segment (handshake,
// sequence and ack numbers of each side, FIN exchange directions, nothing after a close) and records
// what it saw, so tests compare the generator's claims (Stats) against the wire.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <rte_tcp.h>

namespace flowcop::flowgen::test {

struct Frame {
    std::string error; // "" if the frame is valid Ethernet/IP/TCP with correct lengths and checksums
    uint32_t len = 0;
    std::array<uint8_t, 6> dst_mac{}, src_mac{};
    int vlan = -1; // VLAN ID, -1 untagged
    bool ipv6 = false;
    std::array<uint8_t, 16> src{}, dst{}; // IPv4 in the first 4 bytes
    uint16_t sport = 0, dport = 0;
    uint32_t seq = 0, ack = 0;
    uint8_t flags = 0;
    uint16_t window = 0;
    uint32_t payload = 0;
};

Frame parse_frame(const uint8_t* p, uint32_t len);

// DPDK's TCP flag bits (rte_tcp.h) under short names.
inline constexpr uint8_t kFin = RTE_TCP_FIN_FLAG, kSyn = RTE_TCP_SYN_FLAG, kRst = RTE_TCP_RST_FLAG,
                         kPsh = RTE_TCP_PSH_FLAG, kAck = RTE_TCP_ACK_FLAG;

enum class Phase { syn_sent, syn_received, established, fin_sent, fin_acked, fin2_sent, closed_fin, closed_rst };

struct FlowTrace {
    bool ipv6 = false;
    Phase phase = Phase::syn_sent;
    bool closer_is_client = false;
    uint32_t client_next = 0, server_next = 0;
    uint64_t first_us = 0, last_us = 0;
    uint64_t packets = 0, data_c2s = 0, data_s2c = 0;
    uint8_t last_flags = 0;
};

class Tracker {
public:
    // Checks the frame against its flow; a broken rule is appended to errors() (first 20 kept).
    void add(const Frame& f, uint64_t ts_us);

    const std::vector<std::string>& errors() const { return _errors; }
    uint64_t error_count() const { return _error_count; }
    // Keyed by (client addr, client port, server addr, server port) as the SYN showed them.
    using Key = std::tuple<std::array<uint8_t, 16>, uint16_t, std::array<uint8_t, 16>, uint16_t>;
    const std::map<Key, FlowTrace>& flows() const { return _flows; }
    uint64_t count(Phase p) const;

private:
    void error(const std::string& what);

    std::map<Key, FlowTrace> _flows;
    std::vector<std::string> _errors;
    uint64_t _error_count = 0;
};

} // namespace flowcop::flowgen::test
