// SPDX-License-Identifier: BSD-3-Clause
// The file and rule structure of a policy (policy.md's `file`, `rule` and `policy-line`).
#include <policy/parse.h>

#include "parser.h"

#include <new>

namespace flowcop::policy {

ParseResult parse(std::string_view text, std::string_view file) noexcept
{
    ParseResult res;
    try {
        if (text.size() > kMaxFileBytes) {
            res.error = std::string(file) + ":1:1: expected a file of at most " + std::to_string(kMaxFileBytes) +
                        " bytes, found " + std::to_string(text.size()) + " bytes";
            return res;
        }
        detail::Parser p(text, file);
        res.ok = p.file(res.ruleset);
        if (!res.ok) {
            res.error = p.error();
            res.ruleset = Ruleset{};
        }
    } catch (const std::bad_alloc&) {
        res.ok = false;
        res.ruleset = Ruleset{};
        res.error = std::string(file) + ": out of memory while reading the policy";
    }
    return res;
}

namespace detail {

void Parser::advance()
{
    if (_identity && _tok.kind != Token::Kind::eof) {
        if (!_identity->empty())
            *_identity += ' ';
        if (_tok.kind == Token::Kind::string)
            *_identity += "\"" + std::string(_tok.text) + "\"";
        else
            *_identity += _tok.text;
    }
    _prev = std::string(_tok.text);
    _tok = _lex.next();
}

bool Parser::fail_at(unsigned line, unsigned column, const std::string& message)
{
    if (_error.empty())
        _error = std::string(_file) + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
    return false;
}

bool Parser::fail(const std::string& what)
{
    if (_tok.kind == Token::Kind::bad)
        return fail_at(_tok.line, _tok.column, _tok.problem);
    return fail_at(_tok.line, _tok.column, "expected " + what + ", found " + describe(_tok));
}

bool Parser::fail_after(const std::string& what)
{
    return fail(what + " after '" + _prev + "'");
}

bool Parser::end_of_rule() const noexcept
{
    return _tok.kind == Token::Kind::newline || _tok.kind == Token::Kind::semicolon || _tok.kind == Token::Kind::eof;
}

void Parser::skip_blank_lines()
{
    while (_tok.kind == Token::Kind::newline || _tok.kind == Token::Kind::semicolon)
        advance();
}

bool Parser::file(Ruleset& out)
{
    for (;;) {
        skip_blank_lines();
        if (_tok.kind == Token::Kind::eof)
            return true;
        if (is_word("policy"))
            return policy_line(out);
        if (out.rules.size() >= kMaxRules)
            return fail_at(_tok.line, _tok.column,
                           "expected at most " + std::to_string(kMaxRules) + " rules, found another");
        Rule r;
        if (!rule(r))
            return false;
        out.rules.push_back(std::move(r));
    }
}

bool Parser::policy_line(Ruleset& out)
{
    advance(); // 'policy'
    if (is_word("accept"))
        out.default_action = Action::accept;
    else if (is_word("drop"))
        out.default_action = Action::drop;
    else
        return fail_after("'accept' or 'drop'");
    advance();
    // The default is the end of the chain: a rule after it would never be reached.
    skip_blank_lines();
    if (_tok.kind != Token::Kind::eof)
        return fail("nothing after the policy line");
    return true;
}

bool Parser::rule(Rule& r)
{
    r.line = _tok.line;
    _seen = 0;
    _identity = &r.identity;
    bool first = true;
    for (;;) {
        if (is_word("accept") || is_word("drop")) {
            r.action = is_word("accept") ? Action::accept : Action::drop;
            advance();
            break;
        }
        const char* expected = first ? "a match, 'accept', 'drop' or 'policy'" : "another match, 'accept' or 'drop'";
        if (_tok.kind != Token::Kind::word)
            return fail(expected);
        bool handled = true;
        if (!match(r, handled))
            return false;
        if (!handled)
            return fail(expected);
        first = false;
    }
    _identity = nullptr; // the comment is not part of the rule's identity
    if (is_word("comment")) {
        advance();
        if (_tok.kind != Token::Kind::string)
            return fail_after("a quoted string");
        if (_tok.text.size() > kMaxCommentBytes)
            return fail_at(_tok.line, _tok.column,
                           "expected a comment of at most " + std::to_string(kMaxCommentBytes) + " bytes, found " +
                               std::to_string(_tok.text.size()) + " bytes");
        r.comment = std::string(_tok.text);
        advance();
        if (!end_of_rule())
            return fail("the end of the rule after the comment");
        return true;
    }
    if (!end_of_rule())
        return fail_after("'comment' or the end of the rule");
    return true;
}

} // namespace detail
} // namespace flowcop::policy
