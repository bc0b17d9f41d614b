// SPDX-License-Identifier: BSD-3-Clause
// process_metrics.h's parsers: /proc/PID/stat and /proc/stat's btime, including the odd cases.
#include <service/control/process_metrics.h>

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace flowcop::app;

// The fields after the command name: utime 11th, stime 12th, starttime 19th, vsize 20th of them.
TEST_CASE("parse_proc_stat reads utime+stime, starttime and vsize after the command name", "[app][process]")
{
    const auto s = parse_proc_stat("4242 (flowcop) S 1 4242 4242 0 -1 4194560 100 0 0 0 70 7 0 0 20 0 9 0 "
                                   "871914 984440832 34050 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0\n");
    REQUIRE(s);
    CHECK(s->cpu_ticks == 77);
    CHECK(s->start_ticks == 871914);
    CHECK(s->vsize_bytes == 984440832);
}

// A thread may rename itself to anything, "x) S 1 2" included: fields count from the last ')'.
TEST_CASE("parse_proc_stat is not fooled by a command name with spaces and parentheses", "[app][process]")
{
    const auto s =
        parse_proc_stat("7 (a) b (c) S 1) S 1 7 7 0 -1 0 0 0 0 0 5 6 0 0 20 0 1 0 99 4096 1 0 0 0 0 0 0 0 0 0 0 0 0 0");
    REQUIRE(s);
    CHECK(s->cpu_ticks == 11);
    CHECK(s->start_ticks == 99);
    CHECK(s->vsize_bytes == 4096);
}

TEST_CASE("parse_proc_stat refuses truncated or non-numeric text", "[app][process]")
{
    CHECK_FALSE(parse_proc_stat(""));
    CHECK_FALSE(parse_proc_stat("1 (x) S 1 2 3"));
    CHECK_FALSE(parse_proc_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 6 0 0 20 0 1 0 99 4096 1"));
}

TEST_CASE("parse_boot_time finds btime among /proc/stat's lines", "[app][process]")
{
    CHECK(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1796225445\nprocesses 9\n") == 1796225445u);
    CHECK_FALSE(parse_boot_time("cpu 1 2 3\n"));
}

// This machine's own files parse (the exporter reads exactly these).
TEST_CASE("this process's /proc/self/stat and /proc/stat parse", "[app][process]")
{
    auto slurp = [](const char* p) {
        std::ifstream in(p);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    };
    const auto s = parse_proc_stat(slurp("/proc/self/stat"));
    REQUIRE(s);
    CHECK(s->vsize_bytes > 0);
    CHECK(parse_boot_time(slurp("/proc/stat")));
}
