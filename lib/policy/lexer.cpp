// SPDX-License-Identifier: BSD-3-Clause
#include "lexer.h"

#include <policy/ruleset.h>

#include <cstdio>

namespace flowcop::policy::detail {

namespace {

bool is_word_byte(char c) noexcept
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ':' || c == '/' || c == '-';
}

std::string printable(std::string_view s)
{
    std::string out;
    const size_t n = s.size() < 40 ? s.size() : 40;
    for (size_t i = 0; i < n; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            char hex[5];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        }
    }
    if (s.size() > n)
        out += "...";
    return out;
}

} // namespace

std::string describe(const Token& t)
{
    switch (t.kind) {
    case Token::Kind::newline: return "end of line";
    case Token::Kind::eof: return "end of file";
    case Token::Kind::string: return "\"" + printable(t.text) + "\"";
    default: return "'" + printable(t.text) + "'";
    }
}

Token Lexer::next()
{
    // Blanks and comments are skipped; a comment ends before its newline, which is still a token.
    while (_pos < _text.size()) {
        const char c = _text[_pos];
        if (c == ' ' || c == '\t' || c == '\r') {
            ++_pos;
        } else if (c == '#') {
            while (_pos < _text.size() && _text[_pos] != '\n')
                ++_pos;
        } else {
            break;
        }
    }
    Token t;
    t.line = _line;
    t.column = static_cast<unsigned>(_pos - _line_start + 1);
    if (_pos >= _text.size()) {
        t.kind = Token::Kind::eof;
        return t;
    }
    const size_t start = _pos;
    const char c = _text[_pos];
    auto single = [&](Token::Kind k) {
        ++_pos;
        t.kind = k;
        t.text = _text.substr(start, 1);
        return t;
    };
    switch (c) {
    case '\n':
        single(Token::Kind::newline);
        ++_line;
        _line_start = _pos;
        return t;
    case '{': return single(Token::Kind::lbrace);
    case '}': return single(Token::Kind::rbrace);
    case ',': return single(Token::Kind::comma);
    case ';': return single(Token::Kind::semicolon);
    case '"': {
        ++_pos;
        while (_pos < _text.size() && _text[_pos] != '"' && _text[_pos] != '\n')
            ++_pos;
        if (_pos >= _text.size() || _text[_pos] != '"') {
            t.kind = Token::Kind::bad;
            t.text = _text.substr(start, _pos - start);
            t.problem = "expected a closing '\"' before the end of the line";
            return t;
        }
        t.kind = Token::Kind::string;
        t.text = _text.substr(start + 1, _pos - start - 1);
        ++_pos;
        return t;
    }
    default: break;
    }
    if (!is_word_byte(c)) {
        // An operator nft has and this subset refuses (`!=`), or garbage.
        ++_pos;
        t.kind = Token::Kind::other;
        t.text = _text.substr(start, 1);
        return t;
    }
    while (_pos < _text.size() && is_word_byte(_text[_pos]))
        ++_pos;
    t.kind = Token::Kind::word;
    t.text = _text.substr(start, _pos - start);
    if (t.text.size() > kMaxTokenBytes) {
        t.kind = Token::Kind::bad;
        t.problem = "expected a word of at most " + std::to_string(kMaxTokenBytes) + " bytes, found one of " +
                    std::to_string(t.text.size()) + " bytes";
    }
    return t;
}

} // namespace flowcop::policy::detail
