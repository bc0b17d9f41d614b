#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seeds of tests/fuzz/corpus/statefile/ (the fuzz_statefile target, tests/fuzzing.md):
valid state files of lib/statefile's format version 1 (statefile.h, statefile.cpp's byte map) with
TCP, UDP and ICMP flows, slot collisions, odd values, and the damaged kinds the reader must refuse.
The CRCs are CRC32-C as DPDK's rte_hash_crc computes it (seed 0xffffffff, no final inversion), so a
seed reaches the restore and does not stop at the checksum. Usage: make_statefile_corpus.py DIR"""
import struct
import sys
from pathlib import Path

HEADER, ENTRY = 128, 216


def crc32c(data, crc=0xFFFFFFFF):
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def v4(a, b, c, d):
    return bytes(10) + b"\xff\xff" + bytes([a, b, c, d])


def entry(lo, hi, port_lo, port_hi, proto=6, state=3, bits=0x0c, gen=1, slot=0, first=10**18, last=10**18 + 5 * 10**9,
          orig_is_lo=True, vlan=(0, 0), zone=0, cap=0, override=0, packets=(10, 8), nbytes=(4000, 900),
          window=True, liberal=False, in_port=0, interims=0, pending=0, reported=None):
    e = bytearray(ENTRY)
    e[0:16], e[16:32] = lo, hi
    struct.pack_into("<HHB", e, 32, port_lo, port_hi, proto)
    e[37] = (1 if orig_is_lo else 0) | pending
    struct.pack_into("<HHH", e, 38, zone, vlan[0], vlan[1])
    e[44], e[45], e[46] = state, bits, cap
    struct.pack_into("<QQQQ", e, 48, (gen << 32) | slot, first, last, override)
    struct.pack_into("<QQQQ", e, 80, packets[0], packets[1], nbytes[0], nbytes[1])
    struct.pack_into("<IHH", e, 112, 0, in_port, interims)
    if proto == 6:
        e[120], e[121] = 0x1A, 0x12
        if window:
            e[123] = 0x02 if liberal else 0
            e[124] = 2
            for d in range(2):
                base = 1000 + 7919 * d
                struct.pack_into("<IIIIBB", e, 128 + 20 * d, base + 4001, base + 70000, 64240, base + 1, 7, 0x0B)
            struct.pack_into("<I", e, 168, 0x1234)
    if reported:
        struct.pack_into("<QQQQQ", e, 176, *reported)
    return bytes(e)


def file(entries, version=1, base=0, written=10**18 + 6 * 10**9, base_now=None, build=b"0.1.0 corpus"):
    body = b"".join(entries)
    h = bytearray(HEADER)
    h[0:8] = b"FLOWCOPS"
    struct.pack_into("<IIII", h, 8, version, HEADER, ENTRY, base)
    struct.pack_into("<QQQ", h, 24, len(entries), written, written if base_now is None else base_now)
    struct.pack_into("<I", h, 48, crc32c(body))
    h[56:56 + len(build)] = build
    struct.pack_into("<I", h, 124, crc32c(bytes(h[:124])))
    return bytes(h) + body


def seeds():
    tcp = [entry(v4(10, 0, 0, 1), v4(10, 0, 0, 2), 40000 + i, 80, slot=i, gen=1 + i % 3) for i in range(6)]
    yield "tcp-six-flows", file(tcp)
    yield "empty", file([])
    yield "udp-icmp-other", file([
        entry(v4(10, 0, 0, 1), v4(10, 0, 0, 53), 5353, 53, proto=17, state=0, bits=0x05, window=False),
        entry(v4(10, 0, 0, 1), v4(10, 0, 0, 9), 77, 8, proto=1, state=0, bits=0x02, window=False, slot=1),
        entry(v4(10, 0, 0, 1), v4(10, 0, 0, 9), 0, 0, proto=47, state=0, bits=0x03, window=False, slot=2),
    ])
    yield "slot-collisions", file([entry(v4(10, 1, 0, i), v4(10, 0, 0, 2), 1000, 80, slot=3) for i in range(5)])
    yield "beyond-capacity", file([entry(v4(10, 2, 0, i), v4(10, 0, 0, 2), 1000, 80, slot=60 + i) for i in range(8)])
    yield "pending-kill-reset-override", file([
        entry(v4(10, 3, 0, 1), v4(10, 0, 0, 2), 1, 2, pending=2, state=8),
        entry(v4(10, 3, 0, 2), v4(10, 0, 0, 2), 1, 2, pending=4, slot=1),
        entry(v4(10, 3, 0, 3), v4(10, 0, 0, 2), 1, 2, override=10**18 + 30 * 10**9, cap=2, slot=2),
    ])
    yield "vlan-zone-ipv6", file([
        entry(bytes(15) + b"\x01", b"\x20\x01\x0d\xb8" + bytes(11) + b"\x02", 443, 50000, vlan=(100, 200), zone=7,
              in_port=1),
    ])
    yield "out-of-range-values", file([
        entry(v4(10, 4, 0, 1), v4(10, 0, 0, 2), 1, 2, state=42),
        entry(v4(10, 4, 0, 2), v4(10, 0, 0, 2), 1, 2, slot=1, gen=0),
        entry(v4(10, 4, 0, 3), v4(10, 0, 0, 2), 1, 2, slot=2, cap=9, vlan=(5000, 0)),
        entry(v4(10, 4, 0, 3), v4(10, 0, 0, 2), 1, 2, slot=3),  # the same key again
        entry(v4(10, 4, 0, 4), v4(10, 0, 0, 2), 1, 2, slot=4, first=0),
    ])
    yield "ipfix-reported", file([entry(v4(10, 6, 0, 1), v4(10, 0, 0, 2), 1, 2, interims=3,
                                        reported=(8, 6, 3000, 700, 10**18 + 4 * 10**9))])
    yield "packet-time-base", file(tcp[:2], base=1, base_now=10**18 + 999 * 10**9)
    yield "generation-max", file([entry(v4(10, 5, 0, 1), v4(10, 0, 0, 2), 1, 2, gen=0xFFFFFFFF, slot=0),
                                  entry(v4(10, 5, 0, 2), v4(10, 0, 0, 2), 1, 2, gen=7, slot=0)])
    good = file(tcp)
    yield "bad-future-version", good[:8] + struct.pack("<I", 2) + good[12:]
    yield "bad-truncated", good[:HEADER + 3 * ENTRY + 17]
    yield "bad-trailing", good + b"\x00"
    yield "bad-checksum", good[:HEADER + 100] + bytes([good[HEADER + 100] ^ 1]) + good[HEADER + 101:]
    yield "bad-header-checksum", good[:30] + bytes([good[30] ^ 1]) + good[31:]
    yield "bad-magic", b"FLOWCOPX" + good[8:]
    yield "bad-short", good[:20]


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, data in seeds():
        (out / name).write_bytes(data)


if __name__ == "__main__":
    main()
