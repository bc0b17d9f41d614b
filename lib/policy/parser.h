// SPDX-License-Identifier: BSD-3-Clause
// Internal to lib/policy: the recursive-descent parser behind parse() (parse.h). parse.cpp reads
// the file and rule structure, parse_match.cpp one match (selector and value or set). The first
// error wins: fail() records it and returns false, and every caller returns at once.
#pragma once

#include "lexer.h"

#include <policy/ruleset.h>

#include <functional>
#include <string>
#include <string_view>

namespace flowcop::policy::detail {

class Parser {
public:
    Parser(std::string_view text, std::string_view file) : _lex(text), _file(file) { advance(); }

    bool file(Ruleset& out);
    const std::string& error() const noexcept { return _error; }

private:
    // The rule structure (parse.cpp).
    bool rule(Rule& r);
    bool policy_line(Ruleset& out);
    bool end_of_rule() const noexcept;
    void skip_blank_lines();

    // One match, starting at its first keyword (parse_match.cpp). Returns false on error; sets
    // `handled` false when the current word starts no match.
    bool match(Rule& r, bool& handled);
    bool ct(Rule& r, const Token& first);
    bool address(Rule& r, const Token& first, Family f);
    bool meta(Rule& r, const Token& first);
    bool ports(Rule& r, const Token& first, uint8_t proto);
    bool iif(Rule& r, const Token& first);
    bool vlan(Rule& r, const Token& first);
    // Reads one value or a `{ a, b, ... }` set of them; `one` reads the current word (the
    // current token is a word when it is called) and returns false after fail(). `what` names
    // the value for the error when the token is not a word.
    bool values(const std::string& what, const std::function<bool(const Token&)>& one);
    // The family and protocol a selector needs, against what the rule already requires.
    bool require_family(Rule& r, const Token& first, Family f);
    bool require_proto(Rule& r, const Token& first, uint8_t proto);
    bool once(unsigned bit, const Token& first, const std::string& name);

    void advance();
    bool is_word(std::string_view w) const noexcept { return _tok.kind == Token::Kind::word && _tok.text == w; }
    // "expected <what> after '<previous>', found <current>" at the current token.
    bool fail(const std::string& what);
    bool fail_after(const std::string& what);
    bool fail_at(unsigned line, unsigned column, const std::string& message);

    Lexer _lex;
    std::string_view _file;
    Token _tok;
    std::string _prev;                // the previous token's text, for "after '...'"
    std::string* _identity = nullptr; // the current rule's identity while its tokens are read
    unsigned _seen = 0;               // the current rule's selectors so far (parse_match.cpp's bits)
    std::string _error;
};

} // namespace flowcop::policy::detail
