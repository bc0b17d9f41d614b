// SPDX-License-Identifier: BSD-3-Clause
// Internal to lib/policy: splits policy text into tokens with their 1-based line and column (in
// bytes). A word is a run of letters, digits and `_ . : / -` (names, numbers, ranges, addresses
// and prefixes are all words; the parser reads their values). `#` starts a comment to the end of
// the line. Newlines are tokens, since a rule ends at the end of its line (or at `;`).
// Never throws: a word longer than kMaxTokenBytes, an unterminated string or a byte that starts no
// token comes back as Kind::bad with the reason in `text`; every call consumes at least one byte
// or returns eof, so a caller's loop over next() ends. A byte that starts no token (`!`, `=`,
// a control byte) is Kind::other: the parser refuses it with what it expected instead.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace flowcop::policy::detail {

struct Token {
    enum class Kind { word, string, lbrace, rbrace, comma, semicolon, newline, eof, other, bad };
    Kind kind = Kind::eof;
    std::string_view text; // the word, the string without its quotes, the punctuation, or the bad byte(s)
    unsigned line = 1;
    unsigned column = 1;
    std::string problem; // Kind::bad only: the complete "expected ..., found ..." sentence
};

class Lexer {
public:
    explicit Lexer(std::string_view text) noexcept : _text(text) {}
    Token next();

private:
    std::string_view _text;
    size_t _pos = 0;
    unsigned _line = 1;
    size_t _line_start = 0;
};

// How an error message shows a token: 'word', "string", end of line, end of file; bytes that are
// not printable ASCII as \xNN, and at most 40 bytes of it.
std::string describe(const Token& t);

} // namespace flowcop::policy::detail
