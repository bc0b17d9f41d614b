// SPDX-License-Identifier: BSD-3-Clause
// A Command's copy is the same request, not yet done (Service::broadcast posts one copy per worker).
#include <catch2/catch.hpp>

#include <service/dataplane/commands.h>

using flowcop::app::Command;

TEST_CASE("a copied command carries every field of the request and starts not done")
{
    Command proto;
    proto.type = Command::Type::set_window;
    proto.window.be_liberal = true;
    proto.window.ignore_invalid_rst = true;
    proto.window.max_retrans = 9;
    proto.timeouts.seconds[1] = 77;
    proto.active_timeout_s = 5;
    proto.fire_budget = 3;
    proto.visit_budget_factor = 4;
    proto.n_ids = 1;
    proto.ids[0] = 42;
    proto.done.store(true);
    const Command copy(proto);
    CHECK(copy.type == Command::Type::set_window);
    CHECK(copy.window.be_liberal);
    CHECK(copy.window.ignore_invalid_rst);
    CHECK(copy.window.max_retrans == 9);
    CHECK(copy.timeouts.seconds[1] == 77);
    CHECK(copy.active_timeout_s == 5);
    CHECK(copy.fire_budget == 3);
    CHECK(copy.visit_budget_factor == 4);
    CHECK(copy.n_ids == 1);
    CHECK(copy.ids[0] == 42);
    CHECK_FALSE(copy.done.load());
}
