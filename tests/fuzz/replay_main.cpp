// SPDX-License-Identifier: BSD-3-Clause
// Replays fuzz inputs without libFuzzer: a main for the same entry points (fuzz_parse.cpp,
// fuzz_track.cpp) built with the project's compiler, so every test run exercises the corpus and
// the regression inputs. Usage: fuzz_replay_<target> PATH... where each PATH is an input file or
// a directory of them (not recursive; README* and *.md are skipped). TAP output, one test point
// per PATH; a PATH that is missing is a failure, an empty directory a skipped point, and a run
// that replays no input at all fails (a replay of nothing proves nothing). A broken invariant aborts (the entry point prints which); the input
// being replayed is printed first, also under ASan/UBSan, whose reports end the process.
#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// The sanitizer runtimes' hook, called before they end the process; weak so that a build
// without a sanitizer links too (the symbol is then null).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

namespace fs = std::filesystem;

const char* g_current = "(none)";

void say_current() noexcept
{
    const char head[] = "fuzz replay: failing input: ";
    [[maybe_unused]] ssize_t r = write(2, head, sizeof(head) - 1);
    r = write(2, g_current, std::strlen(g_current));
    r = write(2, "\n", 1);
}

void on_abort(int sig)
{
    say_current();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

bool is_input(const fs::path& p)
{
    const std::string name = p.filename().string();
    return fs::is_regular_file(p) && name.rfind("README", 0) != 0 && p.extension() != ".md";
}

// Runs one input from an exact-size heap copy (under ASan an over-read is caught at the end).
void replay(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::vector<uint8_t> data(bytes.begin(), bytes.end());
    data.shrink_to_fit();
    const std::string name = p.string();
    g_current = name.c_str();
    LLVMFuzzerTestOneInput(data.empty() ? nullptr : data.data(), data.size());
    g_current = "(none)";
}

} // namespace

int main(int argc, char** argv)
{
    std::signal(SIGABRT, on_abort);
    std::signal(SIGSEGV, on_abort);
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(say_current);
    LLVMFuzzerInitialize(&argc, &argv);
    std::printf("1..%d\n", argc - 1);
    int failed = 0;
    size_t total = 0;
    for (int i = 1; i < argc; ++i) {
        const fs::path arg(argv[i]);
        const bool exists = fs::exists(arg);
        std::vector<fs::path> files;
        if (fs::is_directory(arg)) {
            for (const auto& e : fs::directory_iterator(arg))
                if (is_input(e.path()))
                    files.push_back(e.path());
            std::sort(files.begin(), files.end());
        } else if (is_input(arg)) {
            files.push_back(arg);
        }
        uintmax_t bytes = 0;
        for (const fs::path& f : files) {
            replay(f);
            bytes += fs::file_size(f);
        }
        total += files.size();
        if (!exists) {
            ++failed;
            std::printf("not ok %d - %s does not exist\n", i, argv[i]);
        } else if (files.empty()) {
            std::printf("ok %d - %s # SKIP no inputs in it\n", i, argv[i]);
        } else {
            std::printf("ok %d - %zu inputs (%ju bytes) from %s replay with every invariant holding\n", i, files.size(),
                        bytes, argv[i]);
        }
    }
    if (total == 0) {
        std::printf("# no input replayed at all\n");
        return 1;
    }
    return failed ? 1 : 0;
}
