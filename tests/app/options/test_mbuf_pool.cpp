// SPDX-License-Identifier: BSD-3-Clause
// --mbufs and --mbuf-data-room: their syntax, and the pool-size rule the service applies at start
// (mbuf_pool.h), which needs no EAL because it is arithmetic on the port and lcore counts.
#include <service/options/mbuf_pool.h>
#include <service/options/options.h>

#include "options_test_util.h"

using namespace flowcop::app;
using flowcop::app::test::described;
using flowcop::app::test::parsed;
using flowcop::app::test::rejected;

namespace {
// The pool flowcop created before the options existed (ports.cpp's mbufs_needed() plus the flowgen
// port's share), written out independently: auto must keep creating exactly this.
uint64_t pool_before_options(unsigned ports, unsigned lcores, uint64_t flowgen)
{
    const uint64_t n = uint64_t(ports) * lcores * 2048 + lcores * 1024 + 4096;
    return (n < 8191 ? 8191 : n) + flowgen;
}
} // namespace

// An operator who copies "auto" from --help, or from the startup config line, gets the default.
TEST_CASE("--mbufs takes auto or a count, and auto is the default", "[app][options][mbufs]")
{
    CHECK(parsed({"--mbufs", "auto"}) == default_options());
    CHECK(described(default_options(), "mbufs") == "auto");
    CHECK(parsed({"--mbufs=7168"}).mbufs == 7168);
    CHECK(described(parsed({"--mbufs", "20000000"}), "mbufs") == "20000000");
    CHECK(parsed({"--mbufs", "0007168"}).mbufs == 7168);
}

// "0" is not a spelling of auto: a zero pool is a mistake, and the message must say what is allowed.
TEST_CASE("--mbufs rejects anything but auto or a count in its range", "[app][options][mbufs]")
{
    CHECK(rejected({"--mbufs", "0"}) == "flowcop: --mbufs: must be at least 7168, got 0");
    CHECK(rejected({"--mbufs", "7167"}) == "flowcop: --mbufs: must be at least 7168, got 7167");
    CHECK(rejected({"--mbufs", "1073741824"}) == "flowcop: --mbufs: must be at most 1073741823, got 1073741824");
    for (const std::string bad : {"Auto", "", "-1", "8k", "1e6", "99999999999999999999"}) {
        INFO("'" << bad << "'");
        CHECK(rejected({"--mbufs=" + bad}) ==
              "flowcop: --mbufs: '" + bad + "' is neither auto nor a number in 7168..1073741823");
    }
    CHECK(rejected({"--mbufs"}) ==
          "flowcop: --mbufs: missing value (expected N; allowed: auto, or 7168..1073741823 (at "
          "start: at least what the ports need))");
}

// 192 = DPDK's 128-byte headroom + a 64-byte minimum frame (the benchmark's geometry, testpmd's
// --mbuf-size=192); 65535 is the most an mbuf's 16-bit buf_len can describe.
TEST_CASE("--mbuf-data-room takes 192..65535 bytes", "[app][options][mbufs]")
{
    CHECK(kMinMbufDataRoom == 192);
    CHECK(kDefaultMbufDataRoom == 2176);
    CHECK(parsed({"--mbuf-data-room", "192"}).mbuf_data_room == 192);
    CHECK(parsed({"--mbuf-data-room=65535"}).mbuf_data_room == 65535);
    CHECK(parsed({"--mbuf-data-room=2176"}) == default_options());
    CHECK(rejected({"--mbuf-data-room", "191"}) == "flowcop: --mbuf-data-room: must be at least 192, got 191");
    CHECK(rejected({"--mbuf-data-room", "65536"}) == "flowcop: --mbuf-data-room: must be at most 65535, got 65536");
    CHECK(rejected({"--mbuf-data-room", "2k"}) == "flowcop: --mbuf-data-room: '2k' is not a number in 192..65535");
}

// The parse-time floor is the smallest need of any start (one port, one lcore), so no count the
// parser accepts is refused for being below every configuration.
TEST_CASE("the pool's minimum and default follow the ports and lcores", "[app][mbufs]")
{
    CHECK(mbufs_minimum(1, 1) == 7168);
    CHECK(mbufs_default(1, 1) == 8191);
    CHECK(mbufs_minimum(2, 1) == 9216);
    CHECK(mbufs_minimum(2, 4) == 2 * 4 * 2048 + 4 * 1024 + 4096);
    CHECK(mbufs_minimum(1, 1, 100) == 7268);
    for (const unsigned ports : {1u, 2u, 3u, 32u})
        for (const unsigned lcores : {1u, 2u, 8u, 128u})
            for (const uint64_t flowgen : {uint64_t(0), uint64_t(2112)}) {
                INFO(ports << " ports, " << lcores << " lcores, flowgen " << flowgen);
                CHECK(mbufs_default(ports, lcores, flowgen) == pool_before_options(ports, lcores, flowgen));
                CHECK(mbufs_default(ports, lcores, flowgen) >= mbufs_minimum(ports, lcores, flowgen));
                CHECK(mbufs_minimum(ports, lcores, flowgen) >= mbufs_minimum(1, 1));
            }
    // The largest start (Debian's RTE_MAX_ETHPORTS 32, RTE_MAX_LCORE 128) fits the option's range,
    // so auto never asks for a pool DPDK cannot make.
    CHECK(mbufs_default(32, 128, 1u << 20) <= kMaxMbufs);
}

TEST_CASE("resolve_mbufs gives auto's default, keeps an adequate count, and refuses fewer", "[app][mbufs]")
{
    uint64_t n = 1;
    CHECK(resolve_mbufs(0, 1, 1, 0, n).empty());
    CHECK(n == 8191);
    CHECK(resolve_mbufs(0, 0, 1, 0, n).empty()); // no port yet: sized as for one
    CHECK(n == 8191);
    CHECK(resolve_mbufs(0, 2, 1, 2112, n).empty());
    CHECK(n == 9216 + 2112);
    CHECK(resolve_mbufs(7168, 1, 1, 0, n).empty()); // the minimum itself is enough
    CHECK(n == 7168);
    CHECK(resolve_mbufs(40000000, 3, 2, 0, n).empty());
    CHECK(n == 40000000);

    n = 1;
    CHECK(resolve_mbufs(9215, 2, 1, 0, n) ==
          "9215 is too few: 2 ports on 1 lcore need at least 9216 (2048 per RX and TX queue pair, 1024 "
          "per lcore, 4096 spare); auto gives 9216");
    CHECK(n == 1); // untouched on error
    CHECK(resolve_mbufs(8000, 1, 2, 0, n) ==
          "8000 is too few: 1 port on 2 lcores needs at least 10240 (2048 per RX and TX queue pair, "
          "1024 per lcore, 4096 spare); auto gives 10240");
    CHECK(resolve_mbufs(8000, 1, 1, 2112, n) ==
          "8000 is too few: 1 port on 1 lcore needs at least 9280 (2048 per RX and TX queue pair, "
          "1024 per lcore, 4096 spare, 2112 for the --flowgen port, the handoff rings and a device's own RX queues); "
          "auto gives 10303");
    CHECK(n == 1);
}
