// SPDX-License-Identifier: BSD-3-Clause
// crafted_table_scripts() (corpus_seeds.h): one script per path of the flow table the table target
// checks (table_script.h has the format).
#include "corpus_seeds.h"
#include "table_script.h"

namespace flowcop::fuzz {

namespace {

enum Kind : uint8_t { kSyn, kSynAck, kAck, kPshAck, kFinAck, kRst, kRstAck, kSynFin };

class TableWriter {
public:
    explicit TableWriter(uint8_t setup) { _b.push_back(setup); }
    // A packet of `kind` for key k, from the key's higher endpoint if `reply`, dt x 50 ms later.
    TableWriter& pkt(unsigned k, Kind kind, bool reply = false, unsigned dt = 0)
    {
        _b.push_back(uint8_t((dt & 7) << 4 | (reply ? 8 : 0) | kind));
        _b.push_back(uint8_t(k));
        return *this;
    }
    TableWriter& handshake(unsigned k) { return pkt(k, kSyn).pkt(k, kSynAck, true).pkt(k, kAck); }
    TableWriter& submit() { return op(0x80); }
    TableWriter& drain() { return op(0x90); }
    TableWriter& cop(unsigned extra_s) { return op(uint8_t(0xa0 | (extra_s & 0x1f))); }
    TableWriter& budget_cop(unsigned fire, unsigned visit) { return op(uint8_t(0xc0 | (visit & 3) << 2 | (fire & 3))); }
    TableWriter& kill(unsigned k) { return op(uint8_t(0xd0)).op(uint8_t(k)); }
    TableWriter& destroy_all() { return op(0xe0); }
    std::vector<uint8_t> bytes() const { return _b; }

private:
    TableWriter& op(uint8_t c)
    {
        _b.push_back(c);
        return *this;
    }
    std::vector<uint8_t> _b;
};

// Setup bytes (TableSetup::from_byte): capacity index, loose pickup (4), key mode << 3, active (0x20).
constexpr uint8_t kCap16 = 0, kCap256 = 2, kCap1024 = 3, kLoose = 4, kCrowd = 0 << 3, kTwoBuckets = 1 << 3,
                  kRandom = 2 << 3, kTwins = 3 << 3, kActive = 0x20;

} // namespace

std::vector<Seed> crafted_table_scripts()
{
    std::vector<Seed> out;
    { // Handshake, data both ways, FIN close, TIME_WAIT expiry; a reopen on TIME_WAIT.
        TableWriter w(kCap256 | kLoose | kRandom);
        w.handshake(1).pkt(1, kPshAck).pkt(1, kAck, true).pkt(1, kFinAck).pkt(1, kFinAck, true).pkt(1, kAck);
        w.handshake(2).pkt(2, kFinAck, true).pkt(2, kAck).pkt(2, kFinAck).pkt(2, kAck, true).drain();
        w.pkt(2, kSyn, false, 1).drain().cop(2).cop(5);
        out.push_back({"handshake_close_reopen", w.bytes()});
    }
    { // The pipeline: flows reset, reopened and created across bursts still pending (stale candidates).
        TableWriter w(kCap256 | kLoose | kTwoBuckets);
        for (unsigned k = 0; k < 20; ++k)
            w.handshake(k);
        w.submit();
        for (unsigned k = 0; k < 20; ++k)
            w.pkt(k, kRst, k % 2 == 1).pkt(k, kSyn);
        w.submit();
        for (unsigned k = 0; k < 20; ++k)
            w.pkt(k, kSynAck, true).pkt(k + 20, kAck);
        w.submit();
        for (unsigned k = 0; k < 40; ++k)
            w.pkt(k, kPshAck, k % 3 == 0);
        w.submit().drain().cop(0);
        out.push_back({"pipeline_stale_candidates", w.bytes()});
    }
    { // More keys homed in one bucket than its probe window holds: window-full eviction and refusal.
        TableWriter w(kCap1024 | kLoose | kCrowd);
        for (unsigned k = 0; k < 170; ++k)
            w.pkt(k, kSyn);
        w.drain();
        for (unsigned k = 0; k < 165; ++k)
            w.pkt(k, kSynAck, true).pkt(k, kAck);
        w.drain();
        for (unsigned k = 170; k < 200; ++k)
            w.pkt(k, kSyn);
        w.drain().cop(1);
        out.push_back({"probe_window_full", w.bytes()});
    }
    { // A table of 16 flows under 60 new keys: early drop, refusals once everything is assured.
        TableWriter w(kCap16 | kLoose | kRandom);
        for (unsigned k = 0; k < 16; ++k)
            w.handshake(k);
        for (unsigned k = 16; k < 60; ++k)
            w.pkt(k, kSyn);
        w.drain();
        for (unsigned k = 0; k < 8; ++k)
            w.kill(k);
        w.cop(0);
        for (unsigned k = 60; k < 80; ++k)
            w.pkt(k, kSyn);
        w.drain().cop(4);
        out.push_back({"capacity_full_early_drop", w.bytes()});
    }
    { // Cop passes cut short by their budgets, then one without.
        TableWriter w(kCap256 | kLoose | kRandom);
        for (unsigned k = 0; k < 100; ++k)
            w.pkt(k, k % 2 ? kSyn : kAck, false, k % 8 == 0 ? 1 : 0);
        w.drain().cop(3).budget_cop(0, 0).budget_cop(1, 2).budget_cop(3, 3).cop(0).cop(6);
        out.push_back({"budgeted_cop_passes", w.bytes()});
    }
    { // Kills, an RST, a flow past its deadline hit by a packet before the cop (expiry on arrival), shutdown.
        TableWriter w(kCap256 | kRandom | kActive);
        w.handshake(5).handshake(6).handshake(7).pkt(8, kSyn).drain().kill(5).kill(9);
        w.pkt(6, kRstAck, true).pkt(6, kAck).drain().cop(0);
        for (unsigned i = 0; i < 14; ++i)
            w.pkt(7, kPshAck, false, 7); // 0.35 s apart: past the active timeout (7 s)
        w.pkt(8, kSyn, false, 7).drain().destroy_all().handshake(5).cop(2);
        out.push_back({"kill_rst_arrival_shutdown", w.bytes()});
    }
    { // One tuple in zones 0, 1, 0x100 and VLAN 1 is four flows (keys 4t..4t+3): each twin gets its own
        // handshake, close or RST, and a kill of one twin leaves the other three.
        TableWriter w(kCap256 | kLoose | kTwins);
        for (unsigned k = 0; k < 32; ++k)
            w.handshake(k);
        w.drain();
        for (unsigned t = 0; t < 8; ++t)
            w.pkt(4 * t, kFinAck).pkt(4 * t + 1, kRst, true).pkt(4 * t + 2, kPshAck, true);
        w.drain().kill(3).kill(7).cop(0).cop(3);
        out.push_back({"zone_and_vlan_twins", w.bytes()});
    }
    return out;
}

} // namespace flowcop::fuzz
