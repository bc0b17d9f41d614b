// SPDX-License-Identifier: BSD-3-Clause
#include "policy_file.h"

#include <policy/parse.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace flowcop::app {

bool load_policy_file(const std::string& path, const policy::PortResolver& resolve, policy::Policy& out,
                      std::string& error) noexcept
{
    try {
        std::FILE* f = std::fopen(path.c_str(), "rb");
        if (f == nullptr) {
            error = path + ": cannot open: " + std::strerror(errno);
            return false;
        }
        // One byte past the bound, so that parse() reports a file that is too long instead of a cut one.
        std::string text(policy::kMaxFileBytes + 1, '\0');
        const size_t n = std::fread(text.data(), 1, text.size(), f);
        const bool failed = std::ferror(f) != 0;
        std::fclose(f);
        if (failed) {
            error = path + ": cannot read";
            return false;
        }
        text.resize(n);
        const policy::ParseResult parsed = policy::parse(text, path);
        if (!parsed.ok) {
            error = parsed.error;
            return false;
        }
        const policy::CompileResult compiled = policy::Policy::compile(parsed.ruleset, path, resolve, out);
        if (!compiled.ok) {
            error = compiled.error;
            return false;
        }
        return true;
    } catch (...) {
        error = path + ": out of memory";
        return false;
    }
}

} // namespace flowcop::app
