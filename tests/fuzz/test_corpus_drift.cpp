// SPDX-License-Identifier: BSD-3-Clause
// The committed seed corpus (tests/fuzz/corpus) is exactly what fuzz_make_corpus writes from today's
// code and the committed captures: every seed is there with the same bytes, and parse/ and track/
// hold nothing else (table/ also keeps what libFuzzer found, tests/fuzzing.md). Why: seeds that
// drifted from their generator no longer reach the paths they are named for, and nobody notices.
// FLOWCOP_CORPUS_DIR and FLOWCOP_CAPTURES_DIR name the two directories (meson.build).
#include "corpus_seeds.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace fs = std::filesystem;
using flowcop::fuzz::CorpusFile;

namespace {

fs::path env_dir(const char* name)
{
    const char* v = std::getenv(name);
    return v != nullptr ? fs::path(v) : fs::path();
}

std::vector<uint8_t> read_file(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

} // namespace

TEST_CASE("The committed seed corpus is what fuzz_make_corpus writes", "[fuzz][corpus]")
{
    const fs::path corpus = env_dir("FLOWCOP_CORPUS_DIR"), captures_dir = env_dir("FLOWCOP_CAPTURES_DIR");
    REQUIRE(fs::is_directory(corpus));
    REQUIRE(fs::is_directory(captures_dir));
    std::vector<std::string> captures;
    for (const auto& e : fs::directory_iterator(captures_dir))
        if (e.path().extension() == ".pcap")
            captures.push_back(e.path().string());
    REQUIRE(!captures.empty());
    std::string error;
    const std::vector<CorpusFile> files = flowcop::fuzz::corpus_files(captures, error);
    REQUIRE(error == "");
    REQUIRE(!files.empty());

    const std::string fix =
        "regenerate: build/tests/fuzz/fuzz_make_corpus tests/fuzz/corpus tests/data/captures/*.pcap";
    std::set<fs::path> expected;
    for (const CorpusFile& f : files) {
        const fs::path p = corpus / f.dir / f.seed.name;
        expected.insert(p);
        INFO(p.string() << " (" << fix << ")");
        REQUIRE(fs::exists(p));
        // A bool, not the vectors: Catch2's TAP reporter prints a passed check's expansion, and a seed's
        // bytes (newlines among them) would be lines no TAP reader knows.
        const bool same_bytes = read_file(p) == f.seed.bytes;
        CHECK(same_bytes);
    }
    for (const char* dir : {"parse", "track"})
        for (const auto& e : fs::directory_iterator(corpus / dir)) {
            INFO(e.path().string() << " is no seed fuzz_make_corpus writes: remove it (or " << fix << ")");
            CHECK(expected.count(e.path()) == 1);
        }
}
