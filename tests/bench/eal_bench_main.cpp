// SPDX-License-Identifier: BSD-3-Clause
// Catch2 runner for the expiry benchmarks: boots EAL without hugepages or PCI, on one lcore, with
// enough memory for a 10^7-flow table (~1.3 GB), then hands Catch2 its own arguments.
//
// Environment:
//   FLOWCOP_BENCH_EAL_MEM  EAL -m in MB (default 3072: a 10^7-flow table plus headroom). --no-huge
//                          memory is reserved up front but only resident where it is touched.
//   FLOWCOP_BENCH_HUGE_DIR=DIR
//                          EAL memory in real hugetlbfs pages mounted at DIR (production's layout), e.g.
//                          after `dpdk-hugepages.py -p 2M --setup 4G` (which mounts /dev/hugepages; create
//                          that directory first if it is missing). -m is then taken from the pages at once,
//                          so reserve at least FLOWCOP_BENCH_EAL_MEM. Overrides FLOWCOP_BENCH_THP.
//   FLOWCOP_BENCH_THP=1    madvise(MADV_HUGEPAGE) on EAL's memory, so the flow table can live in
//                          2 MiB pages as production's hugepage memory does, on a machine without
//                          hugetlbfs pages. Without them records sit in 4 KiB pages and a scattered
//                          walk over a large table pays page-table walks that have nothing to do with
//                          expiry. EAL's --no-huge memory is a memfd (shared memory), so this works
//                          only where /sys/kernel/mm/transparent_hugepage/shmem_enabled allows
//                          "advise"; the runner says when it does not, and each benchmark prints the
//                          huge-page MiB it really got.
// EAL starts through the one test bootstrap (tests/common/eal_boot.h), which also removes the
// runtime directory at exit. After init the main thread's CPU affinity is restored: EAL pins it to
// lcore 0's core, and on a 2-core machine shared with other builds that only adds preemptions.
// rte_lcore_id() stays 0.
#define CATCH_CONFIG_RUNNER
#include <eal_boot.h>
#include <text/decimal.h>

#include <catch2/catch.hpp>
#include <catch2/catch_reporter_tap.hpp>

#include <rte_eal.h>
#include <rte_memory.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <sched.h>
#include <sys/mman.h>

namespace {

int advise_huge(const rte_memseg_list* msl, void* arg)
{
    if (msl->base_va != nullptr && msl->len != 0 && madvise(msl->base_va, msl->len, MADV_HUGEPAGE) == 0)
        *static_cast<size_t*>(arg) += msl->len;
    return 0;
}

int largest_page(const rte_memseg_list* msl, void* arg)
{
    auto& largest = *static_cast<uint64_t*>(arg);
    if (msl->memseg_arr.count != 0 && msl->page_sz > largest)
        largest = msl->page_sz;
    return 0;
}

// The bracketed word of shmem_enabled, e.g. "never" in "always within_size advise [never] deny force".
std::string shmem_thp_policy()
{
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t a = all.find('['), b = all.find(']');
    return a != std::string::npos && b != std::string::npos && b > a ? all.substr(a + 1, b - a - 1) : "unknown";
}

} // namespace

int main(int argc, char** argv)
{
    cpu_set_t before;
    CPU_ZERO(&before);
    const bool have_affinity = sched_getaffinity(0, sizeof(before), &before) == 0;

    const char* mem_env = std::getenv("FLOWCOP_BENCH_EAL_MEM");
    const std::string mem_mb = mem_env != nullptr && *mem_env != '\0' ? mem_env : "3072";
    const char* huge_env = std::getenv("FLOWCOP_BENCH_HUGE_DIR");
    // With hugepages the bootstrap adds --huge-unlink, which returns them to the pool when the
    // process exits (the prefix is per process, and EAL only clears its own prefix's leftover files).
    const std::string huge_dir = huge_env != nullptr && *huge_env != '\0' ? huge_env : "";
    flowcop::test::EalOptions eal;
    uint64_t memory_mb = 0;
    if (!flowcop::text::parse_decimal_in(mem_mb, 1, 1u << 20, memory_mb)) {
        std::fprintf(stderr, "FLOWCOP_BENCH_EAL_MEM='%s': MiB of EAL memory, 1 to 1048576\n", mem_mb.c_str());
        return 2;
    }
    eal.memory_mb = unsigned(memory_mb);
    eal.huge_dir = huge_dir;
    eal.main_lcore_only = true;
    if (const std::string why = flowcop::test::start_eal(argv[0], eal); !why.empty()) {
        std::fprintf(stderr, "%s (set FLOWCOP_BENCH_EAL_MEM%s)\n", why.c_str(),
                     huge_dir.empty() ? "" : ", and reserve that much in hugepages");
        return 1;
    }
    if (have_affinity)
        sched_setaffinity(0, sizeof(before), &before);

    const char* thp = std::getenv("FLOWCOP_BENCH_THP");
    size_t advised = 0;
    if (!huge_dir.empty()) {
        uint64_t page = 0;
        rte_memseg_list_walk(largest_page, &page);
        std::fprintf(stderr, "EAL: --huge-dir=%s -m %s, EAL memory in %llu KiB hugetlbfs pages\n", huge_dir.c_str(),
                     mem_mb.c_str(), (unsigned long long)(page >> 10));
    } else if (thp != nullptr && std::strcmp(thp, "1") == 0) {
        rte_memseg_list_walk(advise_huge, &advised);
        const std::string policy = shmem_thp_policy();
        std::fprintf(stderr, "EAL: --no-huge -m %s, MADV_HUGEPAGE on %zu MiB of EAL memory; shmem THP policy '%s'%s\n",
                     mem_mb.c_str(), advised >> 20, policy.c_str(),
                     policy == "advise" || policy == "always" || policy == "within_size" || policy == "force"
                         ? ""
                         : ": no huge pages will back it (EAL memory stays in 4 KiB pages)");
    } else {
        std::fprintf(stderr, "EAL: --no-huge -m %s, EAL memory in 4 KiB pages\n", mem_mb.c_str());
    }

    return Catch::Session().run(argc, argv);
}
