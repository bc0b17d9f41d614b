// SPDX-License-Identifier: BSD-3-Clause
// Writes the seed corpora of both fuzz targets (corpus_seeds.h):
//   fuzz_make_corpus OUTDIR [CAPTURE.pcap...]
// creates OUTDIR/parse/, OUTDIR/track/ and OUTDIR/table/ and writes one file per seed, named after what it is
// ("crafted-<rule>", "<capture>-frame<N>", "<capture>-script<N>"). Existing files of the same
// name are overwritten; nothing else is touched. Exit 0, or 1 with a message per failure.
#include "corpus_seeds.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using flowcop::fuzz::Seed;

namespace {

bool write_all(const fs::path& dir, const std::vector<Seed>& seeds, size_t& count)
{
    for (const Seed& s : seeds) {
        std::ofstream out(dir / s.name, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(s.bytes.data()), std::streamsize(s.bytes.size()));
        if (!out) {
            std::fprintf(stderr, "fuzz_make_corpus: cannot write %s\n", (dir / s.name).c_str());
            return false;
        }
        ++count;
    }
    return true;
}

std::vector<Seed> prefixed(std::vector<Seed> seeds, const std::string& prefix)
{
    for (Seed& s : seeds)
        s.name = prefix + s.name;
    return seeds;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: fuzz_make_corpus OUTDIR [CAPTURE.pcap...]\n");
        return 2;
    }
    const fs::path parse_dir = fs::path(argv[1]) / "parse", track_dir = fs::path(argv[1]) / "track",
                   table_dir = fs::path(argv[1]) / "table";
    fs::create_directories(parse_dir);
    fs::create_directories(track_dir);
    fs::create_directories(table_dir);
    size_t n_parse = 0, n_track = 0, n_table = 0;
    bool ok = write_all(parse_dir, prefixed(flowcop::fuzz::crafted_frames(), "crafted-"), n_parse) &&
              write_all(track_dir, prefixed(flowcop::fuzz::crafted_scripts(), "crafted-"), n_track) &&
              write_all(table_dir, prefixed(flowcop::fuzz::crafted_table_scripts(), "crafted-"), n_table);
    for (int i = 2; i < argc && ok; ++i) {
        const std::string tag = fs::path(argv[i]).stem().string();
        std::string error;
        ok = write_all(parse_dir, flowcop::fuzz::capture_frames(argv[i], tag, error), n_parse) &&
             write_all(track_dir, flowcop::fuzz::capture_scripts(argv[i], tag, unsigned(i - 2), error), n_track);
        if (!error.empty()) {
            std::fprintf(stderr, "fuzz_make_corpus: %s\n", error.c_str());
            ok = false;
        }
    }
    std::printf("fuzz_make_corpus: %zu parse seeds in %s, %zu track seeds in %s, %zu table seeds in %s\n", n_parse,
                parse_dir.c_str(), n_track, track_dir.c_str(), n_table, table_dir.c_str());
    return ok ? 0 : 1;
}
