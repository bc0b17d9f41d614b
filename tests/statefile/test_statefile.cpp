// SPDX-License-Identifier: BSD-3-Clause
// lib/statefile (issue 32): every FlowImage field survives encode/decode and a whole file; the writer
// is atomic (a failed or abandoned save leaves the old file); every kind of bad file is named, never
// read as flows.
#include <statefile/statefile.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

using namespace flowcop;
using conntrack::FlowImage;
using statefile::Status;

namespace {

// Every field a distinct, non-default value, so a field dropped or swapped by the encoding shows.
FlowImage sample(uint32_t i)
{
    FlowImage im;
    for (int b = 0; b < 16; ++b) {
        im.addr_lo[b] = uint8_t(b + i);
        im.addr_hi[b] = uint8_t(0x80 + b + i);
    }
    im.port_lo = uint16_t(1000 + i);
    im.port_hi = 443;
    im.proto = 6;
    im.vlan_outer = 0x123;
    im.vlan_inner = 0x456;
    im.zone = 7;
    im.orig_is_lo = true;
    im.state = 3;
    im.state_bits = 0x0c;
    im.reset_pending = true;
    im.killed_pending = true;
    im.timeout_cap = 2;
    im.timeout_override_ns = 0x1122334455667788ull;
    im.retrans = 5;
    im.last_ignored = true;
    im.liberal = true;
    im.last_dir = 1;
    im.last_class = 6;
    im.last_win_zero = true;
    im.window_cap = 3;
    im.last = 0xdeadbeef;
    for (int d = 0; d < 2; ++d) {
        auto& s = im.dir[d];
        s.packets = 100 + d + i;
        s.bytes = 0x100000000ull + d;
        s.tcp_flags_seen = uint8_t(0x12 + d);
        s.end = 0xf0000000u + d;
        s.maxend = 0xf1000000u + d;
        s.maxwin = 65535u + d;
        s.maxack = 0xf2000000u + d;
        s.scale = uint8_t(7 + d);
        s.sack_perm = d == 0;
        s.wscale_offered = d == 1;
        s.unacked = d == 0;
        s.maxack_set = d == 1;
    }
    im.flow_id = (uint64_t(9) << 32) | i;
    im.first_seen_ns = 1'700'000'000'000'000'000ull + i;
    im.last_seen_ns = 1'700'000'100'000'000'000ull + i;
    im.related = 77;
    im.in_port = 3;
    im.interims = 12;
    im.reported_packets[0] = 90;
    im.reported_packets[1] = 91;
    im.reported_bytes[0] = 9000;
    im.reported_bytes[1] = 9100;
    im.reported_end_ns = 1'700'000'050'000'000'000ull;
    return im;
}

void check_same(const FlowImage& a, const FlowImage& b)
{
    CHECK(std::memcmp(a.addr_lo, b.addr_lo, 16) == 0);
    CHECK(std::memcmp(a.addr_hi, b.addr_hi, 16) == 0);
    CHECK(a.port_lo == b.port_lo);
    CHECK(a.port_hi == b.port_hi);
    CHECK(a.proto == b.proto);
    CHECK(a.vlan_outer == b.vlan_outer);
    CHECK(a.vlan_inner == b.vlan_inner);
    CHECK(a.zone == b.zone);
    CHECK(a.orig_is_lo == b.orig_is_lo);
    CHECK(a.state == b.state);
    CHECK(a.state_bits == b.state_bits);
    CHECK(a.reset_pending == b.reset_pending);
    CHECK(a.killed_pending == b.killed_pending);
    CHECK(a.timeout_cap == b.timeout_cap);
    CHECK(a.timeout_override_ns == b.timeout_override_ns);
    CHECK(a.retrans == b.retrans);
    CHECK(a.last_ignored == b.last_ignored);
    CHECK(a.liberal == b.liberal);
    CHECK(a.last_dir == b.last_dir);
    CHECK(a.last_class == b.last_class);
    CHECK(a.last_win_zero == b.last_win_zero);
    CHECK(a.window_cap == b.window_cap);
    CHECK(a.last == b.last);
    for (int d = 0; d < 2; ++d) {
        const auto &x = a.dir[d], &y = b.dir[d];
        CHECK(x.packets == y.packets);
        CHECK(x.bytes == y.bytes);
        CHECK(x.tcp_flags_seen == y.tcp_flags_seen);
        CHECK(x.end == y.end);
        CHECK(x.maxend == y.maxend);
        CHECK(x.maxwin == y.maxwin);
        CHECK(x.maxack == y.maxack);
        CHECK(x.scale == y.scale);
        CHECK(x.sack_perm == y.sack_perm);
        CHECK(x.wscale_offered == y.wscale_offered);
        CHECK(x.unacked == y.unacked);
        CHECK(x.maxack_set == y.maxack_set);
    }
    CHECK(a.flow_id == b.flow_id);
    CHECK(a.first_seen_ns == b.first_seen_ns);
    CHECK(a.last_seen_ns == b.last_seen_ns);
    CHECK(a.related == b.related);
    CHECK(a.in_port == b.in_port);
    CHECK(a.interims == b.interims);
    for (int d = 0; d < 2; ++d) {
        CHECK(a.reported_packets[d] == b.reported_packets[d]);
        CHECK(a.reported_bytes[d] == b.reported_bytes[d]);
    }
    CHECK(a.reported_end_ns == b.reported_end_ns);
}

struct TempDir {
    std::string path;
    TempDir()
    {
        char tmpl[] = "/tmp/flowcop-statefile-XXXXXX";
        path = mkdtemp(tmpl);
    }
    ~TempDir()
    {
        std::string cmd = "rm -rf '" + path + "'";
        CHECK(std::system(cmd.c_str()) == 0);
    }
    std::vector<std::string> entries() const
    {
        std::vector<std::string> out;
        DIR* d = opendir(path.c_str());
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.')
                out.emplace_back(e->d_name);
        closedir(d);
        return out;
    }
};

statefile::Header header_of(uint64_t written)
{
    statefile::Header h;
    h.written_ns = written;
    h.base_now_ns = written + 1;
    h.base = statefile::TimeBase::packet;
    h.build = "0.1.0 abcdef";
    return h;
}

std::string write_file(const std::string& path, uint32_t flows)
{
    std::string error;
    auto w = statefile::Writer::create(path, error);
    REQUIRE(w);
    std::vector<FlowImage> images;
    for (uint32_t i = 0; i < flows; ++i)
        images.push_back(sample(i));
    REQUIRE(w->append(images.data(), images.size()));
    REQUIRE(w->commit(header_of(42), error));
    return error;
}

std::vector<uint8_t> slurp(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}
void spit(const std::string& path, const std::vector<uint8_t>& bytes)
{
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

} // namespace

// Why: a field the encoding drops or swaps would restore a different flow.
TEST_CASE("Every image field survives encode and decode", "[statefile][format]")
{
    const FlowImage im = sample(5);
    uint8_t bytes[statefile::kEntryBytes];
    statefile::encode_entry(im, bytes);
    FlowImage back;
    statefile::decode_entry(bytes, back);
    check_same(im, back);
}

// Why: the file is read by another build on another day: its byte order must not be the host's.
TEST_CASE("Entries are little-endian at the documented offsets", "[statefile][format]")
{
    FlowImage im;
    im.port_lo = 0x0102;
    im.flow_id = 0x0807060504030201ull;
    im.dir[1].maxack = 0x0a0b0c0d;
    uint8_t b[statefile::kEntryBytes];
    statefile::encode_entry(im, b);
    CHECK(b[32] == 0x02);
    CHECK(b[33] == 0x01);
    for (int i = 0; i < 8; ++i)
        CHECK(b[48 + i] == i + 1);
    CHECK(b[128 + 20 + 12] == 0x0d);
    CHECK(b[128 + 20 + 15] == 0x0a);
}

TEST_CASE("A written file reads back whole, header and flows", "[statefile][file]")
{
    TempDir dir;
    const std::string path = dir.path + "/state";
    write_file(path, 1000);
    CHECK(dir.entries() == std::vector<std::string>{"state"}); // no temporary left behind
    statefile::Reader r(path);
    REQUIRE(r.status() == Status::ok);
    CHECK(r.header().flows == 1000);
    CHECK(r.header().written_ns == 42);
    CHECK(r.header().base_now_ns == 43);
    CHECK(r.header().base == statefile::TimeBase::packet);
    CHECK(r.header().build == "0.1.0 abcdef");
    CHECK(slurp(path).size() == statefile::kHeaderBytes + 1000 * statefile::kEntryBytes);
    for (uint32_t i : {0u, 1u, 517u, 999u}) {
        FlowImage im;
        r.entry(i, im);
        check_same(im, sample(i));
    }
}

TEST_CASE("An empty table is a valid file of zero flows", "[statefile][file]")
{
    TempDir dir;
    write_file(dir.path + "/state", 0);
    statefile::Reader r(dir.path + "/state");
    CHECK(r.status() == Status::ok);
    CHECK(r.header().flows == 0);
}

// Why: a save that fails half-way (or is abandoned) must leave the previous file intact.
TEST_CASE("An abandoned save leaves the old file and no temporary", "[statefile][file]")
{
    TempDir dir;
    const std::string path = dir.path + "/state";
    write_file(path, 3);
    {
        std::string error;
        auto w = statefile::Writer::create(path, error);
        REQUIRE(w);
        const FlowImage im = sample(9);
        w->append(&im, 1);
    } // destroyed without commit()
    CHECK(dir.entries() == std::vector<std::string>{"state"});
    statefile::Reader r(path);
    CHECK(r.status() == Status::ok);
    CHECK(r.header().flows == 3);

    std::string error;
    CHECK_FALSE(statefile::Writer::create(dir.path + "/no/such/dir/state", error));
    CHECK(error.find("cannot create") != std::string::npos);
}

// Why: a save killed mid-way (SIGKILL at TimeoutStopSec=, a crash) leaves PATH.tmp.PID; each start
// would otherwise leave one more file the size of the table beside the state file.
TEST_CASE("Stale temporaries of other processes are removed, nothing else", "[statefile][file]")
{
    TempDir dir;
    const std::string path = dir.path + "/state";
    write_file(path, 2);
    for (const char* name : {"state.tmp.1", "state.tmp.99999", "state.tmp.x", "other.tmp.5", "state.tmp."})
        std::ofstream(dir.path + "/" + name) << "x";
    std::ofstream(path + ".tmp." + std::to_string(getpid())) << "mine";
    CHECK(statefile::remove_stale_temporaries(path) == 2);
    auto left = dir.entries();
    std::sort(left.begin(), left.end());
    CHECK(left == std::vector<std::string>{"other.tmp.5", "state", "state.tmp.",
                                           "state.tmp." + std::to_string(getpid()), "state.tmp.x"});
    CHECK(statefile::remove_stale_temporaries(dir.path + "/nodir/state") == 0);
}

// Why: every bad file must be named for what it is, counted, and never read as flows.
TEST_CASE("Every kind of bad file is named and never read", "[statefile][file]")
{
    TempDir dir;
    const std::string path = dir.path + "/state";
    CHECK(statefile::Reader(path).status() == Status::missing);
    CHECK(statefile::Reader(dir.path).status() == Status::unreadable); // a directory

    write_file(path, 10);
    const std::vector<uint8_t> good = slurp(path);
    auto with = [&](auto change) {
        std::vector<uint8_t> b = good;
        change(b);
        spit(path, b);
        statefile::Reader r(path);
        CHECK(r.why().empty() == (r.status() == Status::ok));
        return r.status();
    };
    CHECK(with([](auto& b) { b.clear(); }) == Status::not_a_state_file);
    CHECK(with([](auto& b) { b[0] = 'X'; }) == Status::not_a_state_file);
    CHECK(with([](auto& b) { b[8] = 2; }) == Status::version); // a future version
    CHECK(with([](auto& b) { b.resize(60); }) == Status::truncated);
    CHECK(with([](auto& b) { b[30] ^= 1; }) == Status::header_checksum);
    CHECK(with([](auto& b) { b.resize(b.size() - 1); }) == Status::truncated);
    CHECK(with([](auto& b) { b.resize(statefile::kHeaderBytes + 3 * statefile::kEntryBytes); }) == Status::truncated);
    CHECK(with([](auto& b) { b.push_back(0); }) == Status::trailing);
    CHECK(with([](auto& b) { b[statefile::kHeaderBytes + 500] ^= 0x10; }) == Status::checksum);
    CHECK(with([](auto&) {}) == Status::ok);

    std::vector<uint8_t> t = good;
    t.resize(statefile::kHeaderBytes + 3 * statefile::kEntryBytes);
    statefile::Header h;
    std::string why;
    CHECK(statefile::parse(t.data(), t.size(), h, why) == Status::truncated);
    CHECK(h.flows == 10); // known from the header, for the count of what was lost
    CHECK(why.find("3 of 10") != std::string::npos);
}

TEST_CASE("Status names are the metric's label values", "[statefile][format]")
{
    CHECK(std::string(statefile::status_name(Status::checksum)) == "checksum");
    CHECK(std::string(statefile::status_name(Status::not_a_state_file)) == "not_a_state_file");
    CHECK(std::string(statefile::status_name(Status::count)) == "unknown");
}
