// SPDX-License-Identifier: BSD-3-Clause
// Triage of a tracking input: fuzz_explain FILE runs it like the fuzz target and prints every op,
// every frame as parsed and the table's flows after each burst and cop pass, then the verdict.
// Exit 0 when every invariant held, 1 when one broke, 2 on bad usage or a missing file.
#include "fuzz_eal.h"
#include "track_driver.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: fuzz_explain TRACK_INPUT\n");
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "fuzz_explain: cannot read %s\n", argv[1]);
        return 2;
    }
    const std::vector<uint8_t> data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!flowcop::fuzz::init_eal_once(argv[0]))
        return 2;
    const std::string broken = flowcop::fuzz::run_track(data.data(), data.size(), nullptr, stdout);
    std::printf("%s\n", broken.empty() ? "every invariant held" : ("BROKEN: " + broken).c_str());
    return broken.empty() ? 0 : 1;
}
