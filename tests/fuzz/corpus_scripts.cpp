// SPDX-License-Identifier: BSD-3-Clause
// Tracking seeds: crafted scenarios and capture replays as scripts (see corpus_seeds.h).
#include "corpus_seeds.h"

#include "corpus_script_frames.h"
#include "pcap_reader.h"

#include <string>
#include <utility>

namespace flowcop::fuzz {

using namespace seed;

std::vector<Seed> crafted_scripts()
{
    restart_sequence_numbers();
    std::vector<Seed> out;
    auto add = [&](const char* name, const ScriptWriter& w) { out.push_back({name, w.bytes()}); };
    const TrackSetup base; // 256 flows, preset 0, loose pickup, no active timeout

    { // A whole connection: handshake, data both ways, FIN close, TIME_WAIT expiry ("closed").
        ScriptWriter w(base);
        handshake(w, client, server);
        put(w, tcp(client, server, kAck, 100), 5);
        put(w, tcp(server, client, kAck, 1400), 5);
        close(w, client, server);
        w.advance(20).advance(20).advance(41);
        add("close_then_time_wait_expiry", w);
    }
    { // RST: marked, reaped on the next tick; packets after the RST still belong to it.
        ScriptWriter w(base);
        handshake(w, client, server);
        put(w, tcp(server, client, kRst));
        put(w, tcp(client, server, kAck));
        w.budget_cop(0, true).advance(10).advance(5);
        add("rst_reaped_next_tick", w);
    }
    { // Port reuse: a SYN on a TIME_WAIT flow ends it ("closed") and starts a new one, twice
        // in one burst (positions freed and reused mid-burst).
        ScriptWriter w(base);
        const Ep other{"10.0.0.3", 40001};
        handshake(w, client, server);
        handshake(w, other, server);
        close(w, client, server);
        close(w, other, server);
        w.flush();
        put(w, tcp(client, server, kSyn));
        put(w, tcp(other, server, kSyn));
        put(w, tcp(server, client, kSyn | kAck));
        put(w, tcp(server, other, kSyn | kAck));
        w.advance(45);
        add("reopen_twice_in_one_burst", w);
    }
    { // Loose pickup of a mid-stream flow; the reply side's packet makes it assured.
        ScriptWriter w(base);
        put(w, tcp(client, server, kAck, 50));
        put(w, tcp(server, client, kAck, 50));
        put(w, tcp(client, server, kFin | kAck), 20);
        w.advance(30).advance(50);
        add("loose_pickup_midstream", w);
        TrackSetup strict = base;
        strict.loose_pickup = false;
        ScriptWriter s(strict);
        put(s, tcp(client, server, kAck, 50));
        put(s, tcp(server, client, kSyn | kAck));
        s.advance(10);
        add("strict_pickup_no_flow", s);
    }
    { // An 8-flow table: assured flows stay, unassured ones are evicted; once every flow is
        // assured (further handshakes, each evicting a SYN_SENT flow), new flows are refused.
        TrackSetup small = base;
        small.capacity = 8;
        ScriptWriter w(small);
        for (unsigned i = 0; i < 4; ++i)
            handshake(w, nth(i), server);
        for (unsigned i = 4; i < 24; ++i)
            put(w, tcp(nth(i), server, kSyn), 2);
        for (unsigned i = 30; i < 40; ++i)
            handshake(w, nth(i), server);
        for (unsigned i = 40; i < 44; ++i)
            put(w, tcp(nth(i), server, kSyn), 2);
        w.advance(35).advance(50);
        add("table_full_eviction", w);
    }
    { // Kill: marked, reaped on the next tick; a kill of a gone flow misses.
        ScriptWriter w(base);
        handshake(w, client, server);
        handshake(w, nth(1), server);
        w.kill(0).kill(0).advance(10).kill(0).advance(10);
        add("kill_then_reap", w);
    }
    { // Budgets: 30 flows due in one tick, drained 1, 2, 4, 8 at a time, tight and loose.
        ScriptWriter w(base);
        for (unsigned i = 0; i < 30; ++i)
            put(w, tcp(nth(i), server, kSyn), 0);
        // 3 s: due but in an undrained tick; then 1 s on, budgets of 1, 2, 4, 8 fires.
        w.budget_cop(0, true, 3)
            .budget_cop(0, true, 1)
            .budget_cop(1, false)
            .budget_cop(2, true)
            .budget_cop(3, false, 1);
        w.advance(10);
        add("budget_limited_passes", w);
    }
    { // Timeouts shortened at run time: deadlines follow at once, the rebase re-arms the wheel.
        TrackSetup longer = base;
        longer.preset = 3;
        ScriptWriter w(longer);
        for (unsigned i = 0; i < 10; ++i)
            handshake(w, nth(i), server);
        w.set_timeouts(2, false).rebase(0).rebase(1).advance(15).rebase(3).advance(15);
        w.set_timeouts(0, true).advance(50).set_timeouts(1, false).rebase(3).advance(50);
        add("set_timeouts_and_rebase", w);
    }
    { // Active timeout: a busy flow still ends 25 s after its first packet ("active").
        TrackSetup active = base;
        active.active = true;
        ScriptWriter w(active);
        handshake(w, client, server);
        for (unsigned i = 0; i < 9; ++i) {
            put(w, tcp(client, server, kAck, 10), 3);
            w.advance(40); // + 4 s
        }
        add("active_timeout_busy_flow", w);
    }
    { // Expiry on arrival: the SYN's deadline (3.5 s into the tick) passes, a packet arrives in
        // the same tick before the cop could reap it: the old flow ends and a new one starts.
        ScriptWriter w(base);
        put(w, tcp(client, server, kSyn), 0);
        w.advance(30).advance(1); // 3.1 s: due, not yet reaped (its tick is not drained)
        put(w, tcp(client, server, kAck), 10);
        put(w, tcp(server, client, kAck), 1);
        w.advance(10);
        add("expiry_on_arrival", w);
    }
    { // Shutdown with flows in every condition: past its deadline but not reaped (its tick is
        // not drained yet), reset, killed, open; then the table is used again.
        ScriptWriter w(base);
        put(w, tcp(nth(5), server, kSyn), 0);
        w.advance(31); // 3.1 s: the SYN (3 s) is due, its tick not drained
        handshake(w, client, server);
        handshake(w, nth(1), server);
        handshake(w, nth(2), server);
        put(w, tcp(nth(3), server, kSyn));
        put(w, tcp(server, client, kRst));
        w.kill(1).destroy_all(); // kill(1): nth(3)'s SYN, the second most recent TCP packet
        handshake(w, nth(4), server);
        w.destroy_all().advance(5);
        add("shutdown_mixed_flows", w);
    }
    { // The same 4-tuple untagged, in VLAN 100 and in QinQ 200/300; IPv6; junk flags.
        ScriptWriter w(base);
        const Ep c6{"2001:db8::1", 40000}, s6{"2001:db8::2", 443};
        handshake(w, client, server);
        put(w, tcp(client, server, kSyn, 0, 100));
        put(w, tcp(client, server, kSyn, 0, 200, 300));
        handshake(w, c6, s6);
        put(w, tcp(client, server, kSyn | kFin));
        put(w, tcp(client, server, 0));
        put(w, tcp(c6, s6, kSyn | kRst));
        put(w, tcp(s6, c6, kSyn), 1); // simultaneous open from the other side
        w.advance(25).advance(50);
        add("vlans_ipv6_and_junk_flags", w);
    }
    { // Simultaneous open (SYN_SENT2) and a self-connect (both directions the same key side).
        ScriptWriter w(base);
        put(w, tcp(client, server, kSyn));
        put(w, tcp(server, client, kSyn));
        put(w, tcp(server, client, kSyn | kAck));
        put(w, tcp(client, server, kSyn | kAck));
        const Ep self{"10.0.0.9", 7000};
        put(w, tcp(self, self, kSyn));
        put(w, tcp(self, self, kSyn | kAck));
        put(w, tcp(self, self, kAck));
        w.advance(20).advance(45);
        add("simultaneous_open_and_self_connect", w);
    }
    for (Seed& s : crafted_protocol_scripts())
        out.push_back(std::move(s));
    for (Seed& s : crafted_key_scripts())
        out.push_back(std::move(s));
    return out;
}

namespace {

// One capture replayed under `setup`, as at most kMaxScriptsPerCapture scripts named <name>-script<N>;
// tagged says whether any of its frames carried a VLAN tag.
std::vector<Seed> replay_scripts(const std::string& path, const std::string& name, const TrackSetup& setup,
                                 bool& tagged, std::string& error)
{
    test::PcapReader pcap;
    std::vector<Seed> out;
    if (!pcap.open(path)) {
        error = path + ": " + pcap.error();
        return out;
    }
    ScriptWriter w(setup);
    test::PcapRecord rec;
    uint64_t last = 0;
    bool first = true;
    auto finish = [&] {
        if (w.size() > 1)
            out.push_back({name + "-script" + std::to_string(out.size()), w.bytes()});
        w = ScriptWriter(setup);
        first = true;
    };
    while (out.size() < kMaxScriptsPerCapture && pcap.next(rec)) {
        uint64_t gap = first || rec.ts_ns < last ? 0 : rec.ts_ns - last;
        last = rec.ts_ns;
        first = false;
        // The capture's own timeline: long gaps become clock steps with a cop pass each.
        while (gap >= 100 * kMsNs) {
            const unsigned v = gap >= 4 * kSecNs ? unsigned(39 + std::min<uint64_t>(24, gap / (4 * kSecNs)))
                                                 : unsigned(gap / (100 * kMsNs));
            w.advance(v);
            gap -= advance_ns(v);
        }
        packet::Packet parsed;
        packet::parse(rec.data.data(), uint32_t(rec.data.size()), parsed);
        tagged = tagged || parsed.vlan_outer != 0;
        const size_t keep = significant_prefix(rec.data);
        if (w.size() + 4 + keep > kMaxScriptBytes)
            finish();
        w.frame(rec.data, unsigned(std::min<uint64_t>(63, gap / kMsNs)), keep);
    }
    if (out.size() < kMaxScriptsPerCapture)
        finish();
    if (!pcap.error().empty())
        error = path + ": " + pcap.error();
    return out;
}

} // namespace

std::vector<Seed> capture_scripts(const std::string& path, const std::string& tag, unsigned variant, std::string& error)
{
    TrackSetup setup;
    setup.preset = variant % 4;
    setup.active = variant % 3 == 1;
    setup.all_protocols = variant % 2 == 1; // every other capture also through the other protocols' rules
    bool tagged = false;
    std::vector<Seed> out = replay_scripts(path, tag, setup, tagged, error);
    // A tagged capture also under --vlan-key outer and none, the modes that merge what its tags split.
    for (const packet::VlanKey mode : {packet::VlanKey::outer, packet::VlanKey::none}) {
        if (!tagged || !error.empty())
            break;
        setup.vlan_key = mode;
        for (Seed& s : replay_scripts(path, tag + "-vlan_" + packet::vlan_key_name(mode), setup, tagged, error))
            out.push_back(std::move(s));
    }
    return out;
}

} // namespace flowcop::fuzz
