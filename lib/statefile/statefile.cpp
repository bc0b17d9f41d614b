// SPDX-License-Identifier: BSD-3-Clause
// The state file's encoding, reader and atomic writer (statefile.h).
//
// Entry byte map (kEntryBytes = 216, little-endian):
//   0   addr_lo[16]          16  addr_hi[16]
//   32  u16 port_lo          34  u16 port_hi          36  u8 proto
//   37  u8 bits: 0x01 orig_is_lo, 0x02 reset_pending, 0x04 killed_pending
//   38  u16 zone             40  u16 vlan_outer       42  u16 vlan_inner
//   44  u8 state             45  u8 state_bits        46  u8 timeout_cap      47  reserved
//   48  u64 flow_id          56  u64 first_seen_ns    64  u64 last_seen_ns
//   72  u64 timeout_override_ns (0: none)
//   80  u64 packets[orig]    88  u64 packets[reply]   96  u64 bytes[orig]     104 u64 bytes[reply]
//   112 u32 related          116 u16 in_port          118 u16 interims
//   120 u8 tcp_flags_seen[orig]  121 u8 tcp_flags_seen[reply]
//   122 u8 retrans           123 u8 window bits: 0x01 last_ignored, 0x02 liberal, 0x04 last_dir,
//                                                 0x08 last_win_zero
//   124 u8 last_class        125 u8 window_cap        126 u16 reserved
//   128 + 20 * d (d = orig, reply): u32 end, u32 maxend, u32 maxwin, u32 maxack, u8 scale,
//       u8 bits (0x01 sack_perm, 0x02 wscale_offered, 0x04 unacked, 0x08 maxack_set), u16 reserved
//   168 u32 last             172 u32 reserved
//   176 u64 reported_packets[orig], [reply]   192 u64 reported_bytes[orig], [reply]   208 u64 reported_end_ns
#include <statefile/statefile.h>

#include <rte_byteorder.h>
#include <rte_hash_crc.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace flowcop::statefile {

namespace {

// Little-endian fields at any offset: DPDK's byte order conversions, then a copy (no alignment needed).
void put16(uint8_t* p, uint16_t v) noexcept
{
    const uint16_t le = rte_cpu_to_le_16(v);
    std::memcpy(p, &le, sizeof le);
}
void put32(uint8_t* p, uint32_t v) noexcept
{
    const uint32_t le = rte_cpu_to_le_32(v);
    std::memcpy(p, &le, sizeof le);
}
void put64(uint8_t* p, uint64_t v) noexcept
{
    const uint64_t le = rte_cpu_to_le_64(v);
    std::memcpy(p, &le, sizeof le);
}
uint16_t get16(const uint8_t* p) noexcept
{
    uint16_t le;
    std::memcpy(&le, p, sizeof le);
    return rte_le_to_cpu_16(le);
}
uint32_t get32(const uint8_t* p) noexcept
{
    uint32_t le;
    std::memcpy(&le, p, sizeof le);
    return rte_le_to_cpu_32(le);
}
uint64_t get64(const uint8_t* p) noexcept
{
    uint64_t le;
    std::memcpy(&le, p, sizeof le);
    return rte_le_to_cpu_64(le);
}

uint32_t crc(const uint8_t* p, size_t n, uint32_t seed) noexcept
{
    // rte_hash_crc takes a 32-bit length: feed it in chunks.
    constexpr size_t kChunk = size_t(1) << 30;
    while (n > 0) {
        const size_t k = std::min(n, kChunk);
        seed = rte_hash_crc(p, uint32_t(k), seed);
        p += k;
        n -= k;
    }
    return seed;
}

constexpr size_t kHeaderCrcAt = 124;

void encode_header(const Header& h, uint32_t body_crc, uint8_t out[kHeaderBytes]) noexcept
{
    std::memset(out, 0, kHeaderBytes);
    std::memcpy(out, kMagic, sizeof kMagic);
    put32(out + 8, h.version);
    put32(out + 12, uint32_t(kHeaderBytes));
    put32(out + 16, uint32_t(kEntryBytes));
    put32(out + 20, static_cast<uint32_t>(h.base));
    put64(out + 24, h.flows);
    put64(out + 32, h.written_ns);
    put64(out + 40, h.base_now_ns);
    put32(out + 48, body_crc);
    std::memcpy(out + 56, h.build.data(), std::min(h.build.size(), kBuildBytes - 1));
    put32(out + kHeaderCrcAt, crc(out, kHeaderCrcAt, kCrcSeed));
}

const char* const kStatusNames[] = {"ok",      "missing",         "unreadable", "not_a_state_file",
                                    "version", "header_checksum", "truncated",  "trailing",
                                    "checksum"};
static_assert(std::size(kStatusNames) == kStatusCount);

} // namespace

const char* status_name(Status s) noexcept
{
    const auto i = static_cast<size_t>(s);
    return i < kStatusCount ? kStatusNames[i] : "unknown";
}

void encode_entry(const conntrack::FlowImage& im, uint8_t out[kEntryBytes]) noexcept
{
    std::memset(out, 0, kEntryBytes);
    std::memcpy(out, im.addr_lo, 16);
    std::memcpy(out + 16, im.addr_hi, 16);
    put16(out + 32, im.port_lo);
    put16(out + 34, im.port_hi);
    out[36] = im.proto;
    out[37] = uint8_t((im.orig_is_lo ? 1 : 0) | (im.reset_pending ? 2 : 0) | (im.killed_pending ? 4 : 0));
    put16(out + 38, im.zone);
    put16(out + 40, im.vlan_outer);
    put16(out + 42, im.vlan_inner);
    out[44] = im.state;
    out[45] = im.state_bits;
    out[46] = im.timeout_cap;
    put64(out + 48, im.flow_id);
    put64(out + 56, im.first_seen_ns);
    put64(out + 64, im.last_seen_ns);
    put64(out + 72, im.timeout_override_ns);
    for (int d = 0; d < 2; ++d) {
        put64(out + 80 + 8 * d, im.dir[d].packets);
        put64(out + 96 + 8 * d, im.dir[d].bytes);
        out[120 + d] = im.dir[d].tcp_flags_seen;
    }
    put32(out + 112, im.related);
    put16(out + 116, im.in_port);
    put16(out + 118, im.interims);
    out[122] = im.retrans;
    out[123] =
        uint8_t((im.last_ignored ? 1 : 0) | (im.liberal ? 2 : 0) | (im.last_dir ? 4 : 0) | (im.last_win_zero ? 8 : 0));
    out[124] = im.last_class;
    out[125] = im.window_cap;
    for (int d = 0; d < 2; ++d) {
        uint8_t* p = out + 128 + 20 * d;
        const conntrack::FlowImageDir& s = im.dir[d];
        put32(p, s.end);
        put32(p + 4, s.maxend);
        put32(p + 8, s.maxwin);
        put32(p + 12, s.maxack);
        p[16] = s.scale;
        p[17] =
            uint8_t((s.sack_perm ? 1 : 0) | (s.wscale_offered ? 2 : 0) | (s.unacked ? 4 : 0) | (s.maxack_set ? 8 : 0));
    }
    put32(out + 168, im.last);
    for (int d = 0; d < 2; ++d) {
        put64(out + 176 + 8 * d, im.reported_packets[d]);
        put64(out + 192 + 8 * d, im.reported_bytes[d]);
    }
    put64(out + 208, im.reported_end_ns);
}

void decode_entry(const uint8_t in[kEntryBytes], conntrack::FlowImage& im) noexcept
{
    im = conntrack::FlowImage{};
    std::memcpy(im.addr_lo, in, 16);
    std::memcpy(im.addr_hi, in + 16, 16);
    im.port_lo = get16(in + 32);
    im.port_hi = get16(in + 34);
    im.proto = in[36];
    im.orig_is_lo = in[37] & 1;
    im.reset_pending = in[37] & 2;
    im.killed_pending = in[37] & 4;
    im.zone = get16(in + 38);
    im.vlan_outer = get16(in + 40);
    im.vlan_inner = get16(in + 42);
    im.state = in[44];
    im.state_bits = in[45];
    im.timeout_cap = in[46];
    im.flow_id = get64(in + 48);
    im.first_seen_ns = get64(in + 56);
    im.last_seen_ns = get64(in + 64);
    im.timeout_override_ns = get64(in + 72);
    for (int d = 0; d < 2; ++d) {
        im.dir[d].packets = get64(in + 80 + 8 * d);
        im.dir[d].bytes = get64(in + 96 + 8 * d);
        im.dir[d].tcp_flags_seen = in[120 + d];
    }
    im.related = get32(in + 112);
    im.in_port = get16(in + 116);
    im.interims = get16(in + 118);
    im.retrans = in[122];
    im.last_ignored = in[123] & 1;
    im.liberal = in[123] & 2;
    im.last_dir = (in[123] & 4) ? 1 : 0;
    im.last_win_zero = in[123] & 8;
    im.last_class = in[124];
    im.window_cap = in[125];
    for (int d = 0; d < 2; ++d) {
        const uint8_t* p = in + 128 + 20 * d;
        conntrack::FlowImageDir& s = im.dir[d];
        s.end = get32(p);
        s.maxend = get32(p + 4);
        s.maxwin = get32(p + 8);
        s.maxack = get32(p + 12);
        s.scale = p[16];
        s.sack_perm = p[17] & 1;
        s.wscale_offered = p[17] & 2;
        s.unacked = p[17] & 4;
        s.maxack_set = p[17] & 8;
    }
    im.last = get32(in + 168);
    for (int d = 0; d < 2; ++d) {
        im.reported_packets[d] = get64(in + 176 + 8 * d);
        im.reported_bytes[d] = get64(in + 192 + 8 * d);
    }
    im.reported_end_ns = get64(in + 208);
}

Status parse(const uint8_t* bytes, size_t len, Header& h, std::string& why) noexcept
{
    h = Header{};
    if (len < sizeof kMagic || std::memcmp(bytes, kMagic, sizeof kMagic) != 0) {
        why = "not a flowcop state file (no FLOWCOPS magic)";
        return Status::not_a_state_file;
    }
    if (len < 16) {
        why = "not a flowcop state file (" + std::to_string(len) + " bytes, shorter than a header)";
        return Status::not_a_state_file;
    }
    h.version = get32(bytes + 8);
    const uint32_t header_bytes = get32(bytes + 12);
    if (h.version != kFormatVersion || header_bytes != kHeaderBytes) {
        why = "format version " + std::to_string(h.version) + ", this flowcop reads version " +
              std::to_string(kFormatVersion);
        return Status::version;
    }
    if (len < kHeaderBytes) {
        why = "truncated inside its header (" + std::to_string(len) + " of " + std::to_string(kHeaderBytes) + " bytes)";
        return Status::truncated;
    }
    if (get32(bytes + kHeaderCrcAt) != crc(bytes, kHeaderCrcAt, kCrcSeed)) {
        why = "header checksum mismatch (damaged)";
        return Status::header_checksum;
    }
    if (get32(bytes + 16) != kEntryBytes) {
        why = "entry size " + std::to_string(get32(bytes + 16)) + ", version 1 has " + std::to_string(kEntryBytes);
        return Status::version;
    }
    h.base = get32(bytes + 20) == 1 ? TimeBase::packet : TimeBase::wall;
    h.flows = get64(bytes + 24);
    h.written_ns = get64(bytes + 32);
    h.base_now_ns = get64(bytes + 40);
    const char* build = reinterpret_cast<const char*>(bytes + 56);
    h.build.assign(build, strnlen(build, kBuildBytes - 1));
    const size_t body = len - kHeaderBytes;
    // flows * kEntryBytes without overflow: compare by division.
    if (h.flows > body / kEntryBytes) {
        why = "truncated: " + std::to_string(body / kEntryBytes) + " of " + std::to_string(h.flows) + " flows present";
        return Status::truncated;
    }
    if (body != h.flows * kEntryBytes) {
        why = std::to_string(body - h.flows * kEntryBytes) + " bytes after the last of " + std::to_string(h.flows) +
              " flows";
        return Status::trailing;
    }
    if (get32(bytes + 48) != crc(bytes + kHeaderBytes, body, kCrcSeed)) {
        why = "checksum mismatch over " + std::to_string(h.flows) + " flows (damaged)";
        return Status::checksum;
    }
    return Status::ok;
}

Reader::Reader(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        _status = errno == ENOENT ? Status::missing : Status::unreadable;
        _why = _status == Status::missing ? "no such file" : std::strerror(errno);
        return;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        _why = S_ISREG(st.st_mode) ? std::strerror(errno) : "not a regular file";
        ::close(fd);
        return;
    }
    _len = size_t(st.st_size);
    if (_len > 0) {
        void* m = mmap(nullptr, _len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            _why = std::string("mmap: ") + std::strerror(errno);
            _len = 0;
            ::close(fd);
            return;
        }
        _map = static_cast<const uint8_t*>(m);
        madvise(m, _len, MADV_SEQUENTIAL);
    }
    ::close(fd);
    static const uint8_t kEmpty = 0;
    _status = parse(_map != nullptr ? _map : &kEmpty, _len, _header, _why);
}

Reader::~Reader()
{
    if (_map != nullptr)
        munmap(const_cast<uint8_t*>(_map), _len);
}

void Reader::entry(uint64_t i, conntrack::FlowImage& out) const noexcept
{
    decode_entry(_map + kHeaderBytes + i * kEntryBytes, out);
}

namespace {
// The file is written as a stream of whole blocks of kBlock bytes from an aligned buffer, with O_DIRECT
// where the file system takes it: the bytes go from the buffer to the disk with no copy into the page
// cache, which on the machines measured was most of a save's time (tests/benchmarks.md, "State file":
// 216 MB buffered took 1.4 to 3.7 s under load, direct 0.22 s). The last block is padded and the file
// truncated to its size; the header, known at the end, is written into the first block again.
constexpr size_t kBlock = 4096;
constexpr size_t kBufferBytes = 512 * kBlock; // 2 MiB per write

bool write_all(int fd, const uint8_t* p, size_t n, off_t at, int& err) noexcept
{
    while (n > 0) {
        const ssize_t w = ::pwrite(fd, p, n, at);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
            return false;
        }
        p += w;
        n -= size_t(w);
        at += w;
    }
    return true;
}

std::string dir_of(const std::string& path)
{
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

uint8_t* aligned_buffer(size_t bytes)
{
    void* p = nullptr;
    return posix_memalign(&p, kBlock, bytes) == 0 ? static_cast<uint8_t*>(p) : nullptr;
}
} // namespace

unsigned remove_stale_temporaries(const std::string& path) noexcept
{
    const std::string dir = dir_of(path);
    const size_t slash = path.rfind('/');
    const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
    const std::string mine = prefix + std::to_string(getpid());
    DIR* d = opendir(dir.c_str());
    if (d == nullptr)
        return 0;
    unsigned removed = 0;
    while (const dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && name != mine &&
            name.find_first_not_of("0123456789", prefix.size()) == std::string::npos &&
            unlinkat(dirfd(d), name.c_str(), 0) == 0)
            ++removed;
    }
    closedir(d);
    return removed;
}

void Writer::FreeBuffer::operator()(uint8_t* p) const noexcept
{
    std::free(p);
}

std::unique_ptr<Writer> Writer::create(const std::string& path, std::string& error)
{
    std::unique_ptr<Writer> w(new Writer());
    w->_path = path;
    w->_tmp = path + ".tmp." + std::to_string(getpid());
    constexpr int kFlags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    w->_fd = ::open(w->_tmp.c_str(), kFlags | O_DIRECT, 0600);
    if (w->_fd < 0 && errno == EINVAL) // a file system without O_DIRECT (tmpfs): through the page cache
        w->_fd = ::open(w->_tmp.c_str(), kFlags, 0600);
    if (w->_fd < 0) {
        error = "cannot create " + w->_tmp + ": " + std::strerror(errno);
        w->_tmp.clear(); // nothing to remove
        return nullptr;
    }
    w->_buf.reset(aligned_buffer(kBufferBytes));
    w->_first.reset(aligned_buffer(kBlock));
    if (!w->_buf || !w->_first) {
        error = "out of memory for the state file's buffers";
        return nullptr;
    }
    // The header's place: written for real by commit(), once the count and the checksum are known.
    std::memset(w->_buf.get(), 0, kHeaderBytes);
    w->_used = kHeaderBytes;
    return w;
}

Writer::~Writer()
{
    if (_fd >= 0)
        ::close(_fd);
    if (!_committed && !_tmp.empty())
        ::unlink(_tmp.c_str());
}

bool Writer::flush(bool last)
{
    if (_failed)
        return false;
    size_t n = _used;
    if (last) { // pad to whole blocks; commit() truncates the padding away
        n = (_used + kBlock - 1) / kBlock * kBlock;
        std::memset(_buf.get() + _used, 0, n - _used);
    }
    if (_written == 0) // the first block, kept for the header
        std::memcpy(_first.get(), _buf.get(), kBlock);
    if (n > 0 && !write_all(_fd, _buf.get(), n, off_t(_written), _errno)) {
        _failed = true;
        return false;
    }
    _written += n;
    _used = 0;
    return true;
}

bool Writer::append(const conntrack::FlowImage* images, size_t n)
{
    uint8_t entry[kEntryBytes];
    for (size_t i = 0; i < n && !_failed; ++i) {
        encode_entry(images[i], entry);
        _crc = crc(entry, kEntryBytes, _crc);
        // The stream is cut into whole buffers: an entry may straddle two.
        size_t done = 0;
        while (done < kEntryBytes) {
            const size_t k = std::min(kEntryBytes - done, kBufferBytes - _used);
            std::memcpy(_buf.get() + _used, entry + done, k);
            _used += k;
            done += k;
            if (_used == kBufferBytes && !flush(false))
                return false;
        }
        ++_flows;
    }
    return !_failed;
}

bool Writer::commit(const Header& header, std::string& error)
{
    Header h = header;
    h.flows = _flows;
    const uint64_t size = bytes();
    bool ok = flush(true);
    if (ok) {
        encode_header(h, _crc, _first.get());
        ok = write_all(_fd, _first.get(), kBlock, 0, _errno);
    }
    if (ok && ::ftruncate(_fd, off_t(size)) != 0) {
        _errno = errno;
        ok = false;
    }
    if (ok && ::fsync(_fd) != 0) {
        _errno = errno;
        ok = false;
    }
    if (!ok) {
        error = "cannot write " + _tmp + ": " + std::strerror(_errno);
        return false;
    }
    ::close(_fd);
    _fd = -1;
    if (::rename(_tmp.c_str(), _path.c_str()) != 0) {
        error = "cannot rename " + _tmp + " to " + _path + ": " + std::strerror(errno);
        return false;
    }
    _committed = true;
    // The rename itself must reach the disk: fsync the directory that holds the name.
    const int dfd = ::open(dir_of(_path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || ::fsync(dfd) != 0) {
        error = "cannot fsync the directory of " + _path + ": " + std::strerror(errno);
        if (dfd >= 0)
            ::close(dfd);
        return false;
    }
    ::close(dfd);
    return true;
}

} // namespace flowcop::statefile
