// SPDX-License-Identifier: BSD-3-Clause
// Per-rule counters (counters.h): one slot per rule plus the default, and carry-over on reload by
// rule identity.
#include "policy_test_support.h"

#include <policy/counters.h>

using namespace flowcop::policy;
using namespace flowcop::policy::test;

TEST_CASE("count adds packets and bytes to the decision's rule, the default in the last slot", "[policy][counters]")
{
    Policy p = compiled("tcp dport 22 accept\npolicy drop");
    Counters c(p);
    REQUIRE(c.size() == 2);
    c.count(p.verdict(tcp(State::new_, "10.0.0.1", 1, "10.0.0.2", 22)), 60);
    c.count(p.verdict(tcp(State::new_, "10.0.0.1", 1, "10.0.0.2", 22)), 1500);
    c.count(p.verdict(tcp(State::new_, "10.0.0.1", 1, "10.0.0.2", 23)), 40);
    CHECK(c.read(0).packets == 2);
    CHECK(c.read(0).bytes == 1560);
    CHECK(c.read(1).packets == 1);
    CHECK(c.read(1).bytes == 40);
    CHECK(Counters().size() == 1); // the empty policy's default slot
}

// A reload must not zero the counters of rules the operator did not touch (issue 31).
TEST_CASE("carry_over keeps the counts of unchanged rules, matched by text without comments", "[policy][counters]")
{
    Policy old_p = compiled("ct state established,related accept\n"
                            "tcp dport 22 accept comment \"ssh\"\n"
                            "tcp dport 80 accept\n"
                            "udp dport 53 accept\n"
                            "udp dport 53 accept\n"
                            "policy drop");
    Counters old_c(old_p);
    for (uint16_t rule = 0; rule <= 5; ++rule)
        for (uint16_t k = 0; k <= rule; ++k)
            old_c.count({rule, Action::accept}, 100);
    // Reordered, one rule edited (80 -> 8080), the comment changed, one of the twins removed.
    Policy new_p = compiled("tcp dport 22   accept comment \"secure shell\" # moved up\n"
                            "ct state established,related accept\n"
                            "tcp dport 8080 accept\n"
                            "udp dport 53 accept\n"
                            "policy drop");
    Counters new_c(new_p);
    new_c.carry_over(old_p, old_c, new_p);
    CHECK(new_c.read(0).packets == 2); // tcp dport 22: old rule 1
    CHECK(new_c.read(1).packets == 1); // established: old rule 0
    CHECK(new_c.read(2).packets == 0); // edited: starts over
    CHECK(new_c.read(3).packets == 4); // the first of the twins (old rule 3)
    CHECK(new_c.read(3).bytes == 400);
    CHECK(new_c.read(4).packets == 6); // default drop unchanged: carried

    Policy accept_default = compiled("udp dport 53 accept\npolicy accept");
    Counters c3(accept_default);
    c3.carry_over(old_p, old_c, accept_default);
    CHECK(c3.read(0).packets == 4);
    CHECK(c3.read(1).packets == 0); // the default changed action: starts over
}
