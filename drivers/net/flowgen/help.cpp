// SPDX-License-Identifier: BSD-3-Clause
// help(): the one place every key is documented (the parser's key table lists the same keys in the
// same order; tests/flowgen/test_config.cpp checks that each appears here).
#include <flowgen/config.h>

namespace flowcop::flowgen {

const char* help()
{
    return "flowgen: synthetic TCP traffic, deterministic for a given seed. Keys (key=value, comma-separated):\n"
           "  flows=N          concurrent flows (default 1000; 1..10000000). Memory: 32 bytes per flow\n"
           "                   plus 1/16 slack, ~34 bytes per configured flow (340 MB at 10^7).\n"
           "  new_flow_rate=N  new flows per virtual second (default flows/lifetime, which keeps `flows`\n"
           "                   concurrent; 1..100000000). A flow takes at least 9 slots, so the rate\n"
           "                   (given or flows/lifetime) must be at most pps/10. Arrivals beyond\n"
           "                   flows*17/16 active flows are dropped and counted (arrivals_dropped).\n"
           "  lifetime=S       mean flow lifetime in virtual seconds, up to 3 decimals (default 10;\n"
           "                   0.001..1000000). A flow ends at its first data turn after its lifetime,\n"
           "                   once it has sent data both ways; turns come round every ~flows/pps s,\n"
           "                   so shorter lifetimes stretch to that.\n"
           "  lifetime_dist=D  fixed or exp (default exp: exponential with mean `lifetime`).\n"
           "  idle_pct=P       percent of flows that go silent instead of closing (default 10; 0..100).\n"
           "  rst_pct=P        percent of flows that close by RST (default 10; 0..100; idle_pct+rst_pct\n"
           "                   <= 100). The rest close by FIN, FIN-ACK, FIN, ACK.\n"
           "  pkt_size=B       frame bytes of a data segment, without FCS (default 128; 64..9000). IPv6\n"
           "                   data frames carry at least 1 payload byte (75 bytes, 79 with vlan).\n"
           "                   Handshake and close frames are padded to 60 bytes.\n"
           "  ipv6_pct=P       percent of flows over IPv6 (default 0; 0..100).\n"
           "  pps=N            packet slots per virtual second (default 1000000; 1..1000000000). Frame i\n"
           "                   is stamped start + floor(i*10^6/pps) us while traffic is continuous; when\n"
           "                   nothing is due (no established flow) the clock skips the empty slots.\n"
           "  wave=T:N         at virtual second T after start (0..1000000000), N established flows\n"
           "                   (1..flows, at most pps/2) send one last data segment within that second and\n"
           "                   go silent, so a tracker finds them all due together (default: no wave).\n"
           "  packets=N        stop after N frames (default 0: unlimited).\n"
           "  duration=S       stop at S virtual seconds, up to 3 decimals (default 0: unlimited;\n"
           "                   0..1000000000). Stopped, the port returns no more packets.\n"
           "  seed=N           random seed (default 1; 0..2^64-1). Same seed and keys: same frames.\n"
           "  start=UNIX_S     virtual clock at the first slot, Unix seconds (default 1700000000;\n"
           "                   0..4102444800). Timestamps are microseconds since the Unix epoch.\n"
           "  realtime=0|1     0: generate as fast as the consumer takes frames; 1: pace to wall time\n"
           "                   (default 0). Timestamps follow virtual time either way.\n"
           "  overflow=M       wait or drop (default wait): what a burst that does not fit in the rx\n"
           "                   ring gets. wait: held and retried (back-pressure, nothing lost); drop:\n"
           "                   the frames that do not fit are freed and counted (rx_dropped, flowcop's\n"
           "                   port_rx_missed), as a NIC drops on a full descriptor ring. Needs realtime=1.\n"
           "  vlan=ID          802.1Q tag with this VLAN ID on every frame (default none; 1..4094).\n"
           "  ring=N           rx and tx ring entries of the port (default 4096; 64..1048576).\n"
           "  burst=N          frames generated per ring enqueue (default 32; 1..1024, <= ring).\n"
           "  queues=N         rx queues, and as many tx queues (default 1; 1..64). With more than one,\n"
           "                   each frame goes to the queue a NIC's RSS would give it: a Toeplitz\n"
           "                   hash of the outer addresses, and ports for unfragmented TCP, UDP and\n"
           "                   SCTP (fragments and other protocols: addresses only), symmetric key\n"
           "                   and a 128-entry table, which flowcop's rss plan programs.\n"
           "  replay=FILE      frames from an Ethernet pcap file, in its order, with its timestamps,\n"
           "                   instead of the model (default none). With replay only queues,\n"
           "                   realtime (paced to the capture's timestamps), overflow, ring and\n"
           "                   burst apply. The port stops at the file's end.\n";
}

} // namespace flowcop::flowgen
