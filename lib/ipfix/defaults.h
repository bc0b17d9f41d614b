// SPDX-License-Identifier: BSD-3-Clause
// The IPFIX export's defaults, named once: the encoder's and exporter's configs start from them and
// flowcop's --ipfix-* options (app/service/options/options.h, which explains each choice) render them in
// --help, /flowcop/config and flowcop_config_info. Constants only, std only: anything may include it.
#pragma once

#include <cstdint>

namespace flowcop::ipfix {

inline constexpr uint32_t kDefaultPathMtu = 1500;                 // Ethernet's
inline constexpr uint32_t kIpv4UdpHeaderBytes = 20 + 8;           // what an IPv4 path takes from the MTU
inline constexpr uint32_t kDefaultTemplateRefreshS = 60;          // templates resent at least once a minute
inline constexpr uint32_t kDefaultTemplateRefreshMessages = 1000; // ... and every 1000 messages
inline constexpr uint32_t kDefaultActiveTimeoutS = 1800;          // interim records of long flows every 30 min
inline constexpr uint32_t kDefaultDomainBase = 1;                 // lcore L exports in domain base + L
// Messages a second to each collector (--ipfix-max-rate; pacer.h): ~14 MB/s and ~170k records/s of
// 1472-byte messages, which nfcapd on one core keeps up with, so a stop with 10^6 open flows takes ~5 s.
inline constexpr uint32_t kDefaultMaxRate = 10000;

} // namespace flowcop::ipfix
