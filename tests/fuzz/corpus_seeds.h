// SPDX-License-Identifier: BSD-3-Clause
// Seed inputs for the fuzz targets, built from the test frame builder (tests/packet) and from
// classic pcap files. make_corpus.cpp writes them out; tests use them directly.
// - crafted_frames(): one frame per parser rule (every Verdict, VLAN stacks, IPv4 options and
//   fragments, each IPv6 extension header, BIG TCP, padding), for the parser target.
// - crafted_table_scripts(): scripts of the flow-table target (table_script.h).
// - crafted_scripts(): tracking scenarios (handshake and close, RST, reopen, loose pickup, table
//   full and eviction, kill, budgets, timeout changes with rebase, active timeout, expiry on
//   arrival, shutdown; then every protocol's scenarios and the key's: zones, --vlan-key), for the
//   tracking target.
// - capture_frames()/capture_scripts(): a capture split into parser seeds (the first frame of
//   each kind: verdict, flags, IP version, tagged or not) and into scripts that replay its frames
//   with its own timeline (gaps become clock advances with cop passes), each at most
//   kMaxScriptBytes; only the bytes that decide the parse are kept, the rest becomes padding. A
//   capture with VLAN tags is also replayed under --vlan-key outer and none
//   ("<capture>-vlan_outer-script<N>", "<capture>-vlan_none-script<N>").
// Names are stable, readable and unique within a call; contents are deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace flowcop::fuzz {

struct Seed {
    std::string name;
    std::vector<uint8_t> bytes;
};

// libFuzzer's default -max_len is 4096; scripts stay within it so no seed is cut.
inline constexpr size_t kMaxScriptBytes = 4096;
inline constexpr unsigned kMaxScriptsPerCapture = 2;

std::vector<Seed> crafted_frames();
std::vector<Seed> crafted_scripts();
// The all-protocols part of crafted_scripts() (TrackSetup::all_protocols): UDP, ICMP/ICMPv6 echo
// and errors, other protocols, fragments in and out of order, VLANs, a fragment flood, a full table.
std::vector<Seed> crafted_protocol_scripts();
// The key's part of crafted_scripts(): zones from the script's ports (port_zone()) and each --vlan-key
// mode, over TCP, UDP, ICMP errors and fragments, and a kill by a zoned key.
std::vector<Seed> crafted_key_scripts();
// Scripts of the flow-table target (table_script.h): pipeline staleness, probe-window and capacity
// evictions, budgeted passes, kills and shutdown.
std::vector<Seed> crafted_table_scripts();
// `tag` prefixes the names; returns nothing (and sets error) if the file is not a readable pcap.
std::vector<Seed> capture_frames(const std::string& path, const std::string& tag, std::string& error);
std::vector<Seed> capture_scripts(const std::string& path, const std::string& tag, unsigned variant,
                                  std::string& error);

// Every seed make_corpus.cpp writes, by target directory ("parse", "track", "table"), named as the
// files are: "crafted-<name>" and, for the i-th of `captures` in byte order of their paths (the order
// decides each capture's script variant), "<stem>-frame<N>" and "<stem>-script<N>". The committed
// corpus must equal it (test_corpus_drift.cpp). Empty, with error set, if a capture is unreadable.
struct CorpusFile {
    std::string dir;
    Seed seed;
};
std::vector<CorpusFile> corpus_files(std::vector<std::string> captures, std::string& error);

// The shortest prefix of `frame` (at most 255 bytes) that, followed by zeros up to the frame's
// length, parses to exactly the same Packet: what a script must carry of this frame.
size_t significant_prefix(const std::vector<uint8_t>& frame);

} // namespace flowcop::fuzz
