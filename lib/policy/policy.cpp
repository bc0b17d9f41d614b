// SPDX-License-Identifier: BSD-3-Clause
// compile() and the rule walk: policy.h's contract.
#include <policy/policy.h>

#include <cstring>
#include <new>

namespace flowcop::policy {

namespace {

enum : uint8_t {
    kNeedProto = 1u << 0,
    kNeedSaddr = 1u << 1,
    kNeedDaddr = 1u << 2,
    kNeedSport = 1u << 3,
    kNeedDport = 1u << 4,
    kNeedIif = 1u << 5,
    kNeedVlan = 1u << 6,
    kNeedZone = 1u << 7,
};

uint64_t load_be64(const uint8_t* p) noexcept
{
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_bswap64(v);
}

uint64_t mask_of(unsigned bits) noexcept
{
    return bits == 0 ? 0 : bits >= 64 ? ~uint64_t{0} : ~uint64_t{0} << (64 - bits);
}

} // namespace

bool Policy::in_nets(const Net* nets, uint16_t n, const uint8_t addr[16]) noexcept
{
    const uint64_t hi = load_be64(addr);
    const uint64_t lo = load_be64(addr + 8);
    for (uint16_t i = 0; i < n; ++i)
        if ((hi & nets[i].mask_hi) == nets[i].hi && (lo & nets[i].mask_lo) == nets[i].lo)
            return true;
    return false;
}

bool Policy::in_ranges(const PortRange* ranges, uint16_t n, uint16_t port) noexcept
{
    for (uint16_t i = 0; i < n; ++i)
        if (port >= ranges[i].lo && port <= ranges[i].hi)
            return true;
    return false;
}

Decision Policy::walk(const PacketView& v, uint16_t start, unsigned* examined) const noexcept
{
    const uint8_t bit = state_bit(v.state);
    const size_t n = _rules.size();
    for (size_t i = start; i < n; ++i) {
        const Compiled& r = _rules[i];
        if (!(r.states & bit))
            continue;
        if (examined)
            ++*examined;
        if (r.family != Family::any && r.family != v.family)
            continue;
        const uint8_t need = r.need;
        if (need) {
            if ((need & kNeedProto) && (v.family == Family::any || v.proto != r.proto))
                continue;
            if ((need & kNeedIif) && v.port != r.iif)
                continue;
            if ((need & kNeedVlan) && v.vlan != r.vlan)
                continue;
            if ((need & kNeedZone) && v.zone != r.zone)
                continue;
            if ((need & kNeedSport) && !in_ranges(&_ranges[r.sport], r.n_sport, v.sport))
                continue;
            if ((need & kNeedDport) && !in_ranges(&_ranges[r.dport], r.n_dport, v.dport))
                continue;
            if ((need & kNeedSaddr) && !in_nets(&_nets[r.saddr], r.n_saddr, v.src))
                continue;
            if ((need & kNeedDaddr) && !in_nets(&_nets[r.daddr], r.n_daddr, v.dst))
                continue;
        }
        return {static_cast<uint16_t>(i), r.action};
    }
    return {static_cast<uint16_t>(n), _default};
}

CompileResult Policy::compile(const Ruleset& rules, std::string_view file, const PortResolver& resolve,
                              Policy& out) noexcept
{
    CompileResult res;
    try {
        if (rules.rules.size() > kMaxRules) {
            res.error = std::string(file) + ":1:1: expected at most " + std::to_string(kMaxRules) + " rules";
            return res;
        }
        Policy p;
        p._default = rules.default_action;
        auto add_nets = [&p](const std::vector<Prefix>& prefixes, uint32_t& first, uint16_t& count) {
            first = static_cast<uint32_t>(p._nets.size());
            count = static_cast<uint16_t>(prefixes.size());
            for (const Prefix& pf : prefixes) {
                const unsigned len = pf.length;
                const uint64_t mhi = mask_of(len > 64 ? 64 : len);
                const uint64_t mlo = mask_of(len > 64 ? len - 64 : 0);
                p._nets.push_back({load_be64(pf.addr.data()) & mhi, load_be64(pf.addr.data() + 8) & mlo, mhi, mlo});
            }
        };
        auto add_ranges = [&p](const std::vector<PortRange>& ranges, uint32_t& first, uint16_t& count) {
            first = static_cast<uint32_t>(p._ranges.size());
            count = static_cast<uint16_t>(ranges.size());
            p._ranges.insert(p._ranges.end(), ranges.begin(), ranges.end());
        };
        for (const Rule& r : rules.rules) {
            Compiled c;
            c.states = r.states;
            c.family = r.family;
            c.action = r.action;
            if (r.proto >= 0) {
                c.need |= kNeedProto;
                c.proto = static_cast<uint8_t>(r.proto);
            }
            if (!r.iif.empty()) {
                c.need |= kNeedIif;
                const bool digits = r.iif.find_first_not_of("0123456789") == std::string::npos;
                std::optional<uint16_t> id;
                if (digits && r.iif.size() <= 5 && std::stoul(r.iif) <= 65535)
                    id = static_cast<uint16_t>(std::stoul(r.iif));
                else if (!digits && resolve)
                    id = resolve(r.iif);
                if (!id) {
                    res.error =
                        std::string(file) + ":" + std::to_string(r.iif_line) + ":" + std::to_string(r.iif_column) +
                        ": expected the id or name of a port after 'iif', found '" + r.iif + "', which names no port";
                    return res;
                }
                c.iif = *id;
            }
            if (r.vlan >= 0) {
                c.need |= kNeedVlan;
                c.vlan = static_cast<uint16_t>(r.vlan);
            }
            if (r.zone >= 0) {
                c.need |= kNeedZone;
                c.zone = static_cast<uint16_t>(r.zone);
            }
            if (!r.saddr.empty()) {
                c.need |= kNeedSaddr;
                add_nets(r.saddr, c.saddr, c.n_saddr);
            }
            if (!r.daddr.empty()) {
                c.need |= kNeedDaddr;
                add_nets(r.daddr, c.daddr, c.n_daddr);
            }
            if (!r.sport.empty()) {
                c.need |= kNeedSport;
                add_ranges(r.sport, c.sport, c.n_sport);
            }
            if (!r.dport.empty()) {
                c.need |= kNeedDport;
                add_ranges(r.dport, c.dport, c.n_dport);
            }
            p._rules.push_back(c);
            p._text.push_back({r.identity, r.comment});
        }
        // The per-state shortcut (policy.h): the first rule that can match each state; when it
        // matches on its state alone, it decides every packet in that state.
        const size_t n = p._rules.size();
        for (unsigned s = 0; s < kStateCount; ++s) {
            Shortcut& sc = p._by_state[s];
            const uint8_t bit = state_bit(static_cast<State>(s));
            size_t i = 0;
            while (i < n && !(p._rules[i].states & bit))
                ++i;
            sc.start = static_cast<uint16_t>(i);
            if (i == n) {
                sc.decided = true;
                sc.decision = {static_cast<uint16_t>(n), p._default};
            } else {
                sc.decided = p._rules[i].need == 0 && p._rules[i].family == Family::any;
                sc.decision = {static_cast<uint16_t>(i), p._rules[i].action};
            }
        }
        out = std::move(p);
        res.ok = true;
    } catch (const std::exception&) {
        res.ok = false;
        res.error = std::string(file) + ": out of memory while compiling the policy";
    }
    return res;
}

} // namespace flowcop::policy
