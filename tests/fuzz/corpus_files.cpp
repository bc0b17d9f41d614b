// SPDX-License-Identifier: BSD-3-Clause
// corpus_files() (corpus_seeds.h): the whole seed corpus in one list, for make_corpus.cpp and the drift test.
#include "corpus_seeds.h"

#include <algorithm>
#include <filesystem>

namespace flowcop::fuzz {

namespace {

void append(std::vector<CorpusFile>& out, const char* dir, std::vector<Seed> seeds, const std::string& prefix)
{
    for (Seed& s : seeds)
        out.push_back({dir, {prefix + s.name, std::move(s.bytes)}});
}

} // namespace

std::vector<CorpusFile> corpus_files(std::vector<std::string> captures, std::string& error)
{
    std::vector<CorpusFile> out;
    append(out, "parse", crafted_frames(), "crafted-");
    append(out, "track", crafted_scripts(), "crafted-");
    append(out, "table", crafted_table_scripts(), "crafted-");
    // Byte order, not the shell's glob order (which follows the locale): the variant must not move.
    std::sort(captures.begin(), captures.end());
    for (size_t i = 0; i < captures.size(); ++i) {
        const std::string tag = std::filesystem::path(captures[i]).stem().string();
        append(out, "parse", capture_frames(captures[i], tag, error), "");
        append(out, "track", capture_scripts(captures[i], tag, unsigned(i), error), "");
        if (!error.empty())
            return {};
    }
    return out;
}

} // namespace flowcop::fuzz
