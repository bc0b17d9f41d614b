// SPDX-License-Identifier: BSD-3-Clause
// Writes the seed corpora of the fuzz targets (corpus_seeds.h, corpus_files()):
//   fuzz_make_corpus OUTDIR [CAPTURE.pcap...]
// creates OUTDIR/parse/, OUTDIR/track/ and OUTDIR/table/ and writes one file per seed, named after what it is
// ("crafted-<rule>", "<capture>-frame<N>", "<capture>-script<N>"). The captures may come in any order
// (they are sorted). Existing files of the same name are overwritten; nothing else is touched. Exit 0,
// or 1 with a message per failure.
#include "corpus_seeds.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace fs = std::filesystem;

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: fuzz_make_corpus OUTDIR [CAPTURE.pcap...]\n");
        return 2;
    }
    std::string error;
    const std::vector<flowcop::fuzz::CorpusFile> files =
        flowcop::fuzz::corpus_files(std::vector<std::string>(argv + 2, argv + argc), error);
    if (!error.empty()) {
        std::fprintf(stderr, "fuzz_make_corpus: %s\n", error.c_str());
        return 1;
    }
    std::map<std::string, size_t> count{{"parse", 0}, {"track", 0}, {"table", 0}};
    for (const auto& [dir, n] : count)
        fs::create_directories(fs::path(argv[1]) / dir);
    for (const flowcop::fuzz::CorpusFile& f : files) {
        const fs::path path = fs::path(argv[1]) / f.dir / f.seed.name;
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(f.seed.bytes.data()), std::streamsize(f.seed.bytes.size()));
        if (!out) {
            std::fprintf(stderr, "fuzz_make_corpus: cannot write %s\n", path.c_str());
            return 1;
        }
        ++count[f.dir];
    }
    for (const auto& [dir, n] : count)
        std::printf("fuzz_make_corpus: %zu %s seeds in %s\n", n, dir.c_str(), (fs::path(argv[1]) / dir).c_str());
    return 0;
}
