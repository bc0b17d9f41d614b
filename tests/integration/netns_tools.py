#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Helpers the inline test runs inside a network namespace (`ip netns exec NS python3 ...`).

  sniff IFACE OUT.json   count the TCP frames this namespace sends and receives on IFACE, per
                         4-tuple and direction, with their IP bytes, until SIGTERM (at most
                         60 s); writes {"src sport dst dport out|in": [frames, bytes]} to OUT.json.
                         An independent count of what flowcop forwarded.
  idle HOST PORT LPORT IDLE_S PATH
                         connect from local port LPORT, stay silent IDLE_S seconds, then send
                         an HTTP/1.0 GET for PATH and print the response body's length and
                         sha256 (proves the connection still works after flowcop expired it).
"""

import hashlib
import ipaddress
import json
import signal
import socket
import struct
import sys
import time

PACKET_OUTGOING = 4
ETH_P_ALL = 0x0003


def sniff(iface, out_path):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((iface, 0))
    s.settimeout(0.2)
    counts = {}
    stop = [False]

    def on_term(*_):
        stop[0] = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    print("ready", flush=True)
    deadline = time.monotonic() + 60
    while not stop[0] and time.monotonic() < deadline:
        try:
            data, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if len(data) < 14 + 20 + 20 or struct.unpack("!H", data[12:14])[0] != 0x0800:
            continue
        ip = data[14:]
        if ip[9] != 6:
            continue
        ihl = (ip[0] & 0xF) * 4
        sp, dp = struct.unpack("!HH", ip[ihl:ihl + 4])
        key = "%s %d %s %d %s" % (ipaddress.IPv4Address(ip[12:16]), sp, ipaddress.IPv4Address(ip[16:20]), dp,
                                  "out" if addr[2] == PACKET_OUTGOING else "in")
        c = counts.setdefault(key, [0, 0])
        c[0] += 1
        total = struct.unpack("!H", ip[2:4])[0]
        c[1] += total if total else len(ip)  # IP bytes, as flowcop counts (0: a GSO frame, length from it)
    with open(out_path, "w") as f:
        json.dump(counts, f)


def idle(host, port, lport, idle_s, path):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", lport))
    s.settimeout(15)
    s.connect((host, port))
    time.sleep(idle_s)
    s.sendall(("GET %s HTTP/1.0\r\n\r\n" % path).encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].decode(errors="replace")
    print(json.dumps({"status": status, "length": len(body), "sha256": hashlib.sha256(body).hexdigest()}))


if __name__ == "__main__":
    if sys.argv[1] == "sniff":
        sniff(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "idle":
        idle(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6])
    else:
        sys.exit("unknown command " + sys.argv[1])
