// SPDX-License-Identifier: BSD-3-Clause
// One worker lcore's polling loop.
//
// Each turn: for every RX queue the lcore owns, one burst of up to kBurst (kReplayBurst under --clock packet)
// packets -> parse (then --vlan-key, key_policy.h, unless it is `both`: the default
// costs nothing; then the RX port's --port-zone, only when some port has one) ->
// [handoff plan: pass the packets of flows another worker owns to it,
// worker_handoff.cpp; a burst that holds a fragment is first attributed here, where
// all of a datagram's fragments arrive, worker_related.cpp] -> fragments through the
// lcore's fragment attributor (lib/fragattr, only when the burst holds one; under
// the handoff and rss plans the lcore that polled them did) -> FlowTable::process_burst (the flow table; then, for a burst with a
// first fragment whose later ones came first, FlowTable::count_held_fragments) -> forward
// (inline) or free (monitor). Under the handoff plan it then takes up to a burst
// from each ring that feeds it and tracks and forwards those the same way. Then,
// between bursts: the inactivity cop when it is due, the control-plane mailbox, and
// a step of a pending rebase sweep (after a live timeout change), budgeted like a cop
// pass: it moves at most fire_budget flows to earlier buckets and looks at most
// kRebaseStepRecords table positions (fewer if the visit budget is smaller), so one step
// costs no more than a budgeted pass and a sweep of a full table spreads over many loop
// turns. A step runs only in a turn whose RX polls all came back short of a full burst (the
// queues were drained: the lcore has slack), or after kRebaseMaxDeferrals turns without one,
// so the sweep takes the lcore's idle time instead of adding its work to a backlog, and still
// ends under sustained full bursts. Under single_lcore the handoff costs one predictable
// branch per burst. Under rss a port delivers each flow's packets to its owner, except the
// two kinds a NIC hashes on other fields than the flow's: ICMP errors (their outer addresses)
// and fragments (addresses only). A burst that holds one of those (a scan of the verdicts
// and one predictable branch per burst) goes through worker_related.cpp, which attributes
// the fragments here, where all of a datagram's arrive, and hands those packets whose flow
// another worker owns to it through the same rings, marked with what the attribution found;
// every other packet stays where it arrived.
//
// --clock packet (clock.h): a burst's packet times are taken in the order read, before the handoff,
// so this lcore's cop runs where the timeline crosses a check instant even when the packet that
// crosses it goes to another lcore; the handoff rings carry the same timeline to the owners as time
// marks (handoff.h), and a worker that reads ports publishes its newest time (ReplayTime) for the
// others to adopt once per loop turn. Under the rss plan on the flowgen port the dealer sends each
// queue's reader the one timeline as time marks beside its frames (flowgen/time_marks.h): replay_burst()
// applies them where they fall between the burst's frames, follow_replay() those after the last. A full handoff ring holds back the poller of a port that reads a
// file (WorkerSettings::wait_ports) instead of dropping; it keeps taking from its own rings meanwhile.
// A kill (-D, -F, /flowcop/kill) under the packet clock ends its flows at once (reap_killed()) rather
// than at the next tick of a replay time that may never move again; under the TSC clock the next tick
// comes within one check interval.
//
// The cop runs every check interval. When a budget stops a pass with work left,
// the next pass is scheduled kCopRetryNs (1 ms) later — not immediately, which
// would starve RX (the seed's schedule_imm trap), and not a whole interval
// later, which would delay every tick queued behind the over-full bucket.
//
// Inline mode forwards every packet once, from the worker that tracked it, on that
// worker's own TX queue of the pair port (port_plan.h), in the order it tracked them.
//
// --policy (lib/policy/policy.md): the worker holds its own copy of the compiled policy and its counters
// and hands the table a Judge (lib/conntrack/ct_judge.h), which judges each packet's conntrack state where
// the decision must be taken; release() judges what the table did not take (non-IP, malformed,
// untracked) and, inline, frees the dropped packets instead of forwarding them (policy_dropped). Monitor
// mode counts the same verdicts and drops nothing. Without a policy: one predictable branch per burst. A
// reload arrives as a set_policy command in the mailbox, so it swaps between bursts.
//
// Nothing on this path allocates, locks a contended lock, logs or makes a
// syscall. WorkerStats (worker_stats.h) are single-writer fields read by other threads.
#pragma once

#include "clock.h"
#include "commands.h"
#include "worker_stats.h"
#include <service/options/options.h>
#include <service/plan/handoff.h>
#include <service/plan/ports.h>
#include <service/plan/rss_owner.h>

#include <conntrack/flow_table.h>
#include <fragattr/fragment_attributor.h>
#include <timerwheel/config.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct rte_mbuf;
struct rte_ring;

namespace flowcop::flowgen {
class TimeMarks;
}

namespace flowcop::app {

// Frames a poll asks a queue (or a handoff ring) for under the TSC clock, and so the table's pipeline
// depth per burst (its records' misses are asked for together). 64, not DPDK's customary 32: at 10^6
// flows a steady packet's two record lines are DRAM misses, and a burst of 32 left the core's miss
// buffers idle while the burst was tracked; 64 gave 1.13-1.14x at 10^6 and 10^4 unchanged, 128 no more
// (tests/benchmarks.md, issue 29, "The burst"). The per-burst arrays are this big.
inline constexpr unsigned kBurst = 64;
// Under --clock packet (a replay) a poll asks for kReplayBurst: a burst's frames there span capture
// time, and the cop runs between bursts, so a burst's span bounds how late in capture time an expiry can
// come (and where layouts' bursts split decides what they agree on); the replays' ground truth and the
// layout comparisons are built on this burst.
inline constexpr unsigned kReplayBurst = 32;
static_assert(kReplayBurst <= kBurst);
inline constexpr uint64_t kCopRetryNs = 1'000'000;
// Table positions one rebase step looks at, at most (never more than the visit budget), and the
// turns with a full RX burst a pending step may wait for one without (then it runs anyway: under
// sustained full bursts a sweep of 10^6 moved flows, ~7800 steps, takes ~64 x 7800 turns). Measured
// on 10^6 flows at 6 Mpps into a 1024-entry ring: a step every turn with the visit budget's 2048
// records cost ~100k frames per change beyond the host's noise; these ~20k (deploy/bench/
// live_set_loss.py, tests/benchmarks.md part 7).
inline constexpr uint64_t kRebaseStepRecords = 256;
inline constexpr unsigned kRebaseMaxDeferrals = 64;

// What a worker runs with; the service fills every field from the options (whose defaults are
// named in options.h).
struct WorkerSettings {
    Mode mode = Mode::monitor;
    ClockSource clock = ClockSource::tsc;
    uint64_t check_interval_ns = uint64_t(kDefaultCheckIntervalMs) * 1'000'000;
    uint64_t fire_budget = kDefaultTimeoutBudget;
    uint32_t visit_budget_factor = timerwheel::kDefaultVisitBudgetFactor;
    packet::VlanKey vlan_key = packet::VlanKey::both;      // applied to every parsed packet and to kills
    std::vector<std::pair<uint16_t, uint16_t>> port_zones; // (port, zone): key.zone of its packets
    fragattr::Config fragments;                            // the lcore's fragment attributor
    // By port id: 1 when a full handoff ring may hold that port's poller back rather than drop (a port
    // that reads a file under --clock packet: it loses nothing by waiting). Empty: every port drops.
    std::vector<uint8_t> wait_ports;
    // --policy: the compiled policy (each worker keeps its own copy); nullptr: none (the table judges
    // nothing, release() drops nothing, at no cost).
    const policy::Policy* policy = nullptr;
    // --state-file (issue 32): run() leaves the flows open at stop, for the service to save them and then
    // end them itself (FlowTable::destroy_all at stopped_ns()).
    bool keep_flows_at_stop = false;
};

// Where a worker sits among the others (port_plan.h, handoff.h).
struct WorkerPlace {
    unsigned index = 0;              // in PortPlan::workers
    std::vector<uint16_t> peer;      // PortPlan::peer: where inline mode forwards each port's packets
    HandoffRings* handoff = nullptr; // the rings of the handoff and rss plans; nullptr with one worker
    uint64_t owner_seed = 0;         // flow_owner.h
    bool rss = false;                // the rss plan: the rings carry only ICMP errors and fragments
    RssOwnerConf rss_owner;          // rss: which worker the ports deliver a flow to (rss_owner.h)
    ReplayTime* replay = nullptr;    // --clock packet: the time every worker publishes (clock.h); else nullptr
    // --clock packet, rss on the flowgen port: the time marks of each of WorkerPlan::rx's queues (nullptr
    // for a queue without them), which carry the replay's one timeline between that queue's frames.
    std::vector<flowgen::TimeMarks*> rx_marks;
};

// Registers the mbuf dynamic field that carries a handed-off fragment's attribution under the rss plan
// (worker_related.cpp); its offset, or -1 with rte_errno set.
int register_handoff_mark() noexcept;

class Worker {
public:
    static std::unique_ptr<Worker> create(const WorkerPlan& plan, const WorkerPlace& place, conntrack::FlowTable& table,
                                          const TscClock& clock, TimestampField ts, const WorkerSettings& settings,
                                          std::string& error);
    ~Worker();

    // The lcore body: loops until `quit`, then ends every open flow (reason shutdown), unless
    // keep_flows_at_stop: then the table is left as it was, quiescent, at stopped_ns().
    void run(const std::atomic<bool>& quit) noexcept;
    // The worker's clock when run() returned (0 before): the time its flows end or are saved at.
    uint64_t stopped_ns() const noexcept { return _stopped_ns; }
    // Any thread. False if the mailbox is full.
    bool post(Command* cmd) noexcept;

    unsigned lcore() const noexcept { return _plan.lcore; }
    const std::vector<RxQueueRef>& plan_rx() const noexcept { return _plan.rx; }
    conntrack::FlowTable& table() noexcept { return _table; }
    const conntrack::FlowTable& table() const noexcept { return _table; }
    // The lane's copy a worker runs (packet/lane_isa.h): x86-64-v3's where this CPU runs it and DPDK allows
    // 256-bit vectors (rte_vect_get_max_simd_bitwidth(): EAL's --force-max-simd-bitwidth=128 keeps the
    // baseline's), else the baseline's. After EAL's initialisation.
    static packet::LaneIsa lane_isa_allowed() noexcept;
    const WorkerStats& stats() const noexcept { return _stats; }
    const fragattr::Counters& fragment_stats() const noexcept { return _fragments->counters(); }
    // --policy: this lcore's copy and its counters, nullptr without one. The pointers change only while a
    // set_policy command runs: a reader holds the lock the poster holds for that (the service's).
    const policy::Policy* policy() const noexcept { return _policy.get(); }
    const policy::Counters* policy_counters() const noexcept { return _policy_counters.get(); }
    const conntrack::StateVerdicts& policy_verdicts() const noexcept { return _judge.verdicts(); }

private:
    // The packet-path benchmark (tests/bench/bench_packet_path.cpp) drives handle() on pre-built mbufs.
    friend struct WorkerBench;
    Worker(const WorkerPlan& plan, const WorkerPlace& place, conntrack::FlowTable& table, const TscClock& clock,
           TimestampField ts, const WorkerSettings& settings) noexcept
        : _plan(plan), _place(place), _table(table), _clock(clock), _packet_clock(ts), _settings(settings),
          _burst(uint16_t(settings.clock == ClockSource::packet ? kReplayBurst : kBurst))
    {
        _table.set_lane_isa(lane_isa_allowed());
    }
    // --clock packet: a burst's packet times in the order read (`all` of them, those handed off
    // included), and for each packet this worker tracks its index among them.
    struct Timeline {
        const uint64_t* times;
        const uint8_t* orig;
        uint16_t all;
    };
    // Returns how many packets the burst brought (kBurst: the queue may hold more). qi: q's index in
    // WorkerPlan::rx.
    uint16_t poll(const RxQueueRef& q, unsigned qi, uint64_t tsc) noexcept;
    // --clock packet: handle() for a burst read from q, split where its time marks fall (clock.h), then
    // the newest time published for the others.
    void replay_burst(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef& q, unsigned qi) noexcept;
    // --clock packet, once per loop turn: the time marks due after the last frame read from each queue,
    // then, for a worker without marks (idle: every queue and ring that feeds it was emptied), the newest
    // time any worker has read.
    void follow_replay(uint64_t newest, bool idle, uint64_t tsc) noexcept;
    // Parses, tracks and forwards (or frees) a burst; `rx` is the queue it came from, or nullptr for
    // packets taken from a handoff ring (forwarded by their mbuf's port).
    void handle(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef* rx) noexcept;
    // The steady lane (issue 29): a burst read from rx by a worker with no policy, the TSC clock, no
    // handoff plan and no zones (lite_lane()): each frame read by packet::parse_tcp_lite() where it can be,
    // each run of such frames tracked by FlowTable::process_lite() (a frame it cannot take is parsed in
    // full there, lite_full()), each run of other frames by handle_full(), in the burst's order. Taken
    // only while it pays (_lane_pays: most of the last burst was steady), else the burst goes whole to
    // handle_full().
    bool lite_lane() const noexcept
    {
        return !_policy && _settings.clock == ClockSource::tsc && (_place.handoff == nullptr || _place.rss) &&
               _port_zone.empty() && _table.lite_ready();
    }
    // In the copy of the lane the table runs (its lane_isa(), packet/lane_isa.h): both are read_lite().
    void handle_lite(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef& rx) noexcept;
    FLOWCOP_LANE_V3_CODE void handle_lite_v3(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef& rx) noexcept;
    [[gnu::always_inline]] inline void read_lite(rte_mbuf** mbufs, uint16_t n, uint64_t tsc,
                                                 const RxQueueRef& rx) noexcept;
    // Frames [first, first + n) of the burst, whose segments and probes (probe_lite(), run by
    // handle_lite()'s reader loop) are at that index; mbufs points at the run's first.
    void track_lite(rte_mbuf** mbufs, const packet::TcpLite* segs, const conntrack::FlowTable::LiteProbes& probes,
                    uint16_t first, uint16_t n, uint64_t tsc, const RxQueueRef& rx) noexcept;
    static const packet::Packet& lite_full(void* ctx, unsigned i) noexcept;
    // Every burst the lane does not take: parse() each frame, then the plan's handoff, fragments, policy.
    void handle_full(rte_mbuf** mbufs, uint16_t n, uint64_t tsc, const RxQueueRef* rx) noexcept;
    // --port-zone: each packet's key gets the zone of the port it arrived on (rx's, or for handed-off
    // packets the port their mbuf names).
    void apply_zones(rte_mbuf* const* mbufs, packet::Packet* pkts, uint16_t n, const RxQueueRef* rx) const noexcept;
    // track() for a burst that holds a fragment: later fragments get their first fragment's ports
    // (kFragAttributed) or wait for it (lib/fragattr); the frames that waited are counted on the flow
    // once their first fragment was tracked.
    // `attributed`: the rss plan's fragments, already attributed (here or by the worker that handed them
    // over), with what was held for each first fragment; nullptr: attribute them here.
    void track_fragmented(packet::Packet* const* ptrs, uint16_t n, uint64_t tsc, const Timeline* tl,
                          const fragattr::Held* attributed = nullptr) noexcept;
    // The lcore's fragment attributor over a burst (each fragment at its time in tl, else now): what each
    // first fragment had held for it.
    void attribute_fragments(packet::Packet* const* ptrs, uint16_t n, const Timeline* tl,
                             fragattr::Held* held) noexcept;
    // tl: --clock packet (each packet at its own time, the cop wherever the timeline crosses a check
    // instant); nullptr: the TSC clock.
    void track(const packet::Packet* const* ptrs, uint16_t n, uint64_t tsc, const Timeline* tl) noexcept;
    // --clock packet: each packet's time as the packet clock advances over the burst; from_port: read
    // from a port here (packets without a timestamp are counted where they are read).
    void stamp(rte_mbuf* const* mbufs, uint16_t n, uint64_t* times, uint8_t* orig, bool from_port) noexcept;
    // --clock packet: time moves to ns (another worker's, a time mark) and the cop runs if that crosses
    // its next instant.
    void advance_replay(uint64_t ns) noexcept;
    bool cop_due(uint64_t ns) const noexcept
    {
        return ns >= _next_cop_ns && ns != 0 && _next_cop_ns != 0 && !_holding_cop;
    }
    void forward(rte_mbuf** mbufs, uint16_t n, uint16_t tx_port) noexcept;
    // worker_handoff.cpp: the handoff plan's two halves. hand_off() leaves this worker's packets first
    // and, for each, its index in the burst in orig; times (--clock packet, else nullptr) adds the time
    // marks. take_handoffs() returns true when every ring that feeds this worker gave less than a burst
    // (it emptied them).
    // held (a burst with a fragment, attributed here: worker_related.cpp): what was held for each packet,
    // compacted with the burst; the fragments are marked for their owner, and a later fragment not
    // attributed stays here.
    uint16_t hand_off(rte_mbuf** mbufs, packet::Packet** ptrs, uint16_t n, uint16_t rx_port, const uint64_t* times,
                      uint8_t* orig, fragattr::Held* held = nullptr) noexcept;
    // worker_related.cpp: for hand_off()'s fragment with its owner by key, marks it for that owner and
    // returns the owner, or this worker for a later fragment it could not attribute.
    unsigned mark_fragment(rte_mbuf* m, const packet::Packet& p, const fragattr::Held& held, unsigned owner) noexcept;
    unsigned wait_enqueue(rte_ring* ring, rte_mbuf* const* out, unsigned k) noexcept;
    // Enqueues each owner's staged packets (the outboxes) on its ring, once per owner, and empties the
    // outboxes: a port that can wait (a file) waits for room, any other drops and counts what did not fit.
    // with_time_marks: the outboxes hold time marks too (handoff.h), which are neither counted nor freed.
    void send_outboxes(uint16_t rx_port, bool with_time_marks) noexcept;
    bool take_handoffs(uint64_t tsc) noexcept;
    // --clock packet under rss: the ICMP errors and fragments another worker handed here, each tracked
    // once this worker's replay time has reached its own (never ahead of this worker's timeline: clock.h);
    // those not yet due wait in _held. Returns true when the ring gave less than a burst.
    bool take_related(unsigned from, uint64_t tsc) noexcept;
    // take_related() from every other worker: before a time mark moves this worker's time on.
    void take_due_related(uint64_t tsc) noexcept;
    void finish_handoffs() noexcept;
    // Forwards (inline) or frees a tracked burst; under --policy judges first what the table left unjudged
    // (police()) and, inline, frees what the policy dropped instead of forwarding it.
    void release(rte_mbuf** mbufs, packet::Packet* const* ptrs, uint16_t n, const RxQueueRef* rx) noexcept;
    // The burst's verdicts (the Judge's; packets outside the table judged here); inline: frees and counts
    // the dropped ones and compacts mbufs to the rest. Returns how many are left.
    uint16_t police(rte_mbuf** mbufs, packet::Packet* const* ptrs, uint16_t n) noexcept;
    // worker_related.cpp: handle()'s rest for a burst with an ICMP error or a fragment under rss, or one
    // from the rings, and for a burst with a fragment under the handoff plan: attribute, pass on what
    // another worker owns, track and release the rest.
    void handle_related(rte_mbuf** mbufs, packet::Packet** ptrs, uint16_t n, uint64_t tsc, const RxQueueRef* rx,
                        const Timeline* tl, uint8_t* orig, bool fragmented) noexcept;
    // worker_related.cpp: the rss plan's handoff of ICMP errors and fragments (see above). Compacts the
    // burst (and `held`) to the packets this worker owns and returns how many.
    // Like hand_off(), it leaves each kept packet's index in the burst in orig.
    uint16_t pass_related(rte_mbuf** mbufs, packet::Packet** ptrs, fragattr::Held* held, uint8_t* orig, uint16_t n,
                          uint16_t rx_port) noexcept;
    // Packets from the rings under rss: what the sending worker's attribution found, from each mbuf's mark.
    void read_marks(rte_mbuf* const* mbufs, packet::Packet* const* ptrs, uint16_t n, fragattr::Held* held) noexcept;
    void run_cop(uint64_t now_ns) noexcept;
    // --clock packet: ends the kill-marked flows now (FlowTable::reap_killed); what the budget leaves
    // waits for the next turn.
    void reap_killed() noexcept;
    void drain_mailbox() noexcept;
    void execute(Command& cmd) noexcept;
    uint64_t now_ns() const noexcept;

    WorkerStats _stats;
    conntrack::Judge _judge; // --policy: the table's seam (ct_judge.h), used when _policy is set
    std::unique_ptr<policy::Policy> _policy;
    std::unique_ptr<policy::Counters> _policy_counters;
    WorkerPlan _plan;
    WorkerPlace _place;
    std::vector<rte_mbuf*> _outbox;     // handoff: kBurst packets staged per owner
    std::vector<uint16_t> _outbox_size; // handoff: per owner
    std::vector<uint64_t> _told;        // handoff, --clock packet: the newest time each worker was sent
    conntrack::FlowTable& _table;
    const TscClock& _clock;
    PacketClock _packet_clock;
    WorkerSettings _settings;
    uint16_t _burst; // frames a poll or a handoff dequeue asks for: kBurst, or kReplayBurst under --clock packet
    rte_ring* _mailbox = nullptr;
    std::vector<uint16_t> _port_zone; // by port id; empty when no port has a zone
    void* _fragment_memory = nullptr;
    std::unique_ptr<fragattr::FragmentAttributor> _fragments;
    int _mark_offset = -1; // the mbuf dynfield that carries a handed-off fragment's attribution
    uint64_t _next_cop_ns = 0;
    std::vector<uint64_t> _rx_read; // --clock packet with time marks: frames read from each of _plan.rx
    bool _follows_marks = false;    // some queue of this worker has time marks: its time comes from them
    // take_related(): per sending worker, packets taken from its ring and not yet due here.
    struct Held {
        rte_mbuf* m[kBurst];
        uint16_t head = 0, n = 0;
    };
    std::vector<Held> _held;
    const std::atomic<bool>* _quit = nullptr; // run()'s: a waiting poller gives up once it is set
    bool _holding_cop = false;                // waiting on a full ring: no cop before the burst is tracked
    bool _reap_pending = false;               // reap_killed() left kill-marked flows for the next turn
    uint64_t _stopped_ns = 0;                 // the clock when run() returned (stopped_ns())
    unsigned _rebase_deferrals = 0;           // turns a pending rebase step has waited for RX slack
    // handle(): the steady lane for the next burst read from a port, when the fused path took every frame
    // of the last one (tests/benchmarks.md, issue 29: "The lane only for a wholly steady burst").
    bool _lane_pays = true;
};

} // namespace flowcop::app
