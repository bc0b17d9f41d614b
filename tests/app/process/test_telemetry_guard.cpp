// SPDX-License-Identifier: BSD-3-Clause
// telemetry_guard.h without EAL: a server shaped like DPDK 22.11's telemetry (a listener, one thread
// per client named "telemetry-*" that greets, then blocks in read() with no timeout and closes the
// connection when read() fails) and the guard's scans against it.
#include <service/control/telemetry_guard.h>

#include <catch2/catch.hpp>

#include <pthread.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using flowcop::app::TelemetryGuard;
using namespace std::chrono_literals;

namespace {

class FakeTelemetry {
public:
    FakeTelemetry() : _path("/tmp/fct-guard-" + std::to_string(getpid()) + ".sock")
    {
        unlink(_path.c_str());
        _listener = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        sockaddr_un sun{};
        sun.sun_family = AF_UNIX;
        std::strncpy(sun.sun_path, _path.c_str(), sizeof sun.sun_path - 1);
        REQUIRE(bind(_listener, reinterpret_cast<sockaddr*>(&sun), sizeof sun) == 0);
        REQUIRE(listen(_listener, 16) == 0);
    }
    ~FakeTelemetry()
    {
        for (int c : _clients)
            close(c);
        for (auto& t : _handlers)
            t.join();
        close(_listener);
        unlink(_path.c_str());
    }
    const std::string& path() const { return _path; }
    // Connects a client and waits for the greeting; the handler thread then blocks in read().
    int connect_client()
    {
        const int c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        sockaddr_un sun{};
        sun.sun_family = AF_UNIX;
        std::strncpy(sun.sun_path, _path.c_str(), sizeof sun.sun_path - 1);
        REQUIRE(connect(c, reinterpret_cast<sockaddr*>(&sun), sizeof sun) == 0);
        const int s = accept(_listener, nullptr, nullptr);
        REQUIRE(s >= 0);
        _handlers.emplace_back([this, s] { handle(s); });
        char buf[64];
        REQUIRE(recv(c, buf, sizeof buf, 0) > 0);
        _clients.push_back(c);
        std::this_thread::sleep_for(20ms); // the handler reaches read()
        return c;
    }
    unsigned closed() const { return _closed.load(); }

private:
    void handle(int s)
    {
        pthread_setname_np(pthread_self(), "telemetry-t");
        const char hello[] = "{\"version\": \"fake\"}";
        if (write(s, hello, sizeof hello - 1) > 0) {
            char buf[64];
            // No Catch2 assertion here: it is not thread-safe; a failed reply shows as a failed recv.
            while (read(s, buf, sizeof buf) > 0 && write(s, "{}", 2) == 2) {
            }
        }
        close(s);
        _closed.fetch_add(1);
    }
    std::string _path;
    int _listener = -1;
    std::vector<int> _clients;
    std::vector<std::thread> _handlers;
    std::atomic<unsigned> _closed{0};
};

bool wait_for(const std::function<bool()>& cond, std::chrono::milliseconds limit)
{
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!cond()) {
        if (std::chrono::steady_clock::now() > end)
            return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

bool eof(int client)
{
    char buf[8];
    return recv(client, buf, sizeof buf, MSG_DONTWAIT) == 0;
}

} // namespace

TEST_CASE("blocked_fd reads the descriptor of a read() or write() in progress, and nothing else",
          "[app][telemetry_guard]")
{
    const std::string rd = std::to_string(SYS_read), wr = std::to_string(SYS_write);
    CHECK(TelemetryGuard::blocked_fd(rd + " 0x7 0x7f12a4e0 0x3ff 0x0 0x0 0x0 0x7f12a4df 0x7f12b001\n") == 7);
    CHECK(TelemetryGuard::blocked_fd(rd + " 0x1a 0x7f12a4e0 0x3ff 0x0 0x0 0x0 0x7f 0x7f\n") == 26);
    CHECK(TelemetryGuard::blocked_fd(wr + " 0x9 0x7f12a4e0 0x3ff 0x0 0x0 0x0 0x7f 0x7f\n") == 9);
    CHECK(TelemetryGuard::blocked_fd(std::to_string(SYS_accept) + " 0x5 0x0 0x0 0x0 0x0 0x0 0x7f 0x7f\n") == -1);
    CHECK(TelemetryGuard::blocked_fd("running\n") == -1);
    CHECK(TelemetryGuard::blocked_fd("-1 0x7ffd 0x7f\n") == -1);
    CHECK(TelemetryGuard::blocked_fd(rd + " 7\n") == -1);
    CHECK(TelemetryGuard::blocked_fd(rd + " 0xffffffffffff 0x0\n") == -1);
    CHECK(TelemetryGuard::blocked_fd("") == -1);
}

TEST_CASE("below the pressure threshold connections keep DPDK's behaviour; at it, idle ones close",
          "[app][telemetry_guard]")
{
    FakeTelemetry tel;
    TelemetryGuard guard(tel.path(), {.pressure = 4, .pressure_idle_ms = 300});
    CHECK(guard.scan() == 0); // the listener is not a connection
    std::vector<int> idle;
    for (int i = 0; i < 3; ++i)
        idle.push_back(tel.connect_client());
    CHECK(guard.scan() == 3);
    CHECK_FALSE(guard.under_pressure());
    std::this_thread::sleep_for(800ms);
    CHECK(tel.closed() == 0); // no limit below the threshold
    CHECK(guard.scan() == 3);

    idle.push_back(tel.connect_client());
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(guard.scan() == 4);
    CHECK(guard.under_pressure());
    // Each handler was blocked in read() with no limit: woken, it restarts with 300 ms, fails and closes.
    CHECK(wait_for([&] { return tel.closed() == 4; }, 3000ms));
    CHECK(std::chrono::steady_clock::now() - t0 >= 250ms);
    for (int c : idle)
        CHECK(eof(c));
    CHECK(guard.scan() == 0);
    CHECK_FALSE(guard.under_pressure());
    CHECK(guard.connections_seen() == 4);
}

TEST_CASE("under pressure a client that keeps sending requests is not cut", "[app][telemetry_guard]")
{
    FakeTelemetry tel;
    TelemetryGuard guard(tel.path(), {.pressure = 4, .pressure_idle_ms = 300});
    for (int i = 0; i < 3; ++i)
        tel.connect_client();
    const int active = tel.connect_client();
    CHECK(guard.scan() == 4);
    CHECK(guard.under_pressure());
    for (int i = 0; i < 15; ++i) { // a request every 100 ms, under the 300 ms limit
        REQUIRE(send(active, "/", 1, 0) == 1);
        char buf[8];
        CHECK(recv(active, buf, sizeof buf, 0) == 2);
        std::this_thread::sleep_for(100ms);
        guard.scan();
    }
    CHECK(tel.closed() == 3); // the three idle ones, not the active one
    CHECK_FALSE(eof(active));
    CHECK_FALSE(guard.under_pressure());
}
