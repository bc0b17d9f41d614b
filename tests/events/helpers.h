// SPDX-License-Identifier: BSD-3-Clause
// Test fixtures: events that carry (lcore, sequence) so a line can be traced back to its emit(), a
// temporary directory, file reading, and stderr capture.
#pragma once

#include <events/event.h>
#include <events/stream.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace flowcop::events::test {

// A stream of n lcores; tests fail loudly rather than dereference nullptr.
inline std::unique_ptr<Stream> make_stream(unsigned n)
{
    std::string error;
    auto s = Stream::create(n, error);
    if (!s)
        throw std::runtime_error(error);
    return s;
}

// 10.0.<lcore>.1:40000 -> 192.0.2.7:443; packets_orig carries the per-lcore sequence number.
inline Event numbered_event(uint16_t lcore, uint64_t seq)
{
    Event e{};
    e.time_ns = 1'700'000'000'000'000'000ull + seq * 1000;
    e.first_seen_ns = e.last_seen_ns = e.time_ns;
    e.packets[0] = seq;
    e.bytes[0] = 60;
    const uint8_t src[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, static_cast<uint8_t>(lcore), 1};
    const uint8_t dst[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
    std::memcpy(e.src, src, 16);
    std::memcpy(e.dst, dst, 16);
    e.sport = 40000;
    e.dport = 443;
    e.lcore = lcore;
    e.proto = 6;
    e.kind = Kind::created;
    e.state = "SYN_SENT";
    return e;
}

// The unsigned number after "key": in a line, or -1.
inline long long field(const std::string& line, const char* key)
{
    const std::string k = std::string("\"") + key + "\":";
    const size_t at = line.find(k);
    if (at == std::string::npos)
        return -1;
    return std::strtoll(line.c_str() + at + k.size(), nullptr, 10);
}

class TempDir {
public:
    TempDir()
    {
        char tmpl[] = "/tmp/flowcop-events-XXXXXX";
        _path = mkdtemp(tmpl);
    }
    ~TempDir() { std::filesystem::remove_all(_path); }
    std::string file(const char* name) const { return _path + "/" + name; }
    const std::string& path() const { return _path; }

private:
    std::string _path;
};

inline std::string read_all(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Splits on '\n'; a trailing fragment without '\n' is returned as its own element.
inline std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
        out.push_back(text.substr(start, nl - start));
    if (start < text.size())
        out.push_back(text.substr(start));
    return out;
}

// Redirects file descriptor `fd` (stdout or stderr) to a temp file until text() is called.
class CaptureFd {
public:
    explicit CaptureFd(int fd) : _fd(fd)
    {
        std::fflush(nullptr);
        _file = _dir.file("captured");
        _saved = dup(fd);
        const int f = ::open(_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(f, fd);
        ::close(f);
    }
    ~CaptureFd() { restore(); }
    std::string text()
    {
        restore();
        return read_all(_file);
    }

private:
    void restore()
    {
        if (_saved < 0)
            return;
        std::fflush(nullptr);
        dup2(_saved, _fd);
        ::close(_saved);
        _saved = -1;
    }
    TempDir _dir;
    std::string _file;
    int _fd;
    int _saved = -1;
};

} // namespace flowcop::events::test
