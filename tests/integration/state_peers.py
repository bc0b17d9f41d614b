#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The peers of test_state_veth.py, run inside a network namespace (`ip netns exec NS python3 ...`).

  serve HOST PORT SIZE RATE     accept connections; a client line "echo ..." is answered with the
                                same line (a long-lived idle connection's keep-alive), a line "get"
                                with SIZE pseudo-random bytes (seed 32) at about RATE bytes/s, so a
                                download lasts across a restart of flowcop. Until SIGTERM (<= 120 s).
  hold HOST PORT LPORT... [--get LPORT OUT]
                                open one connection from each LPORT, send "echo hello" on each and
                                read the answer, then wait for commands on stdin: "echo LPORT" sends
                                and reads one more echo on that connection (prints "ok LPORT" or
                                "fail LPORT why"), "quit" ends. With --get, one more connection from
                                LPORT downloads into OUT and prints "got SHA256" when done.
  inject IFACE SMAC DMAC SRC SPORT DST DPORT
                                send one TCP ACK segment with 8 bytes of payload whose sequence number
                                is half the sequence space away from anything plausible: outside any
                                window. Prints "sent".
"""

import hashlib
import random
import select
import signal
import socket
import struct
import sys
import threading
import time


def payload(size):
    return random.Random(32).randbytes(size)


def serve(host, port, size, rate):
    data = payload(int(size))
    rate = float(rate)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, int(port)))
    srv.listen(16)
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))

    def client(c):
        f = c.makefile("rb")
        try:
            for line in f:
                if line.startswith(b"echo"):
                    c.sendall(line)
                elif line.startswith(b"get"):
                    chunk = 16384
                    t0 = time.monotonic()
                    for off in range(0, len(data), chunk):
                        c.sendall(data[off:off + chunk])
                        ahead = (off + chunk) / rate - (time.monotonic() - t0)
                        if ahead > 0:
                            time.sleep(ahead)
                    c.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    deadline = time.monotonic() + 120
    srv.settimeout(0.2)
    print("ready", flush=True)
    while not stop[0] and time.monotonic() < deadline:
        try:
            c, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=client, args=(c,), daemon=True).start()


def hold(host, port, args):
    get = None
    if "--get" in args:
        i = args.index("--get")
        get = (int(args[i + 1]), args[i + 2])
        args = args[:i]
    conns = {}
    for lport in map(int, args):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", lport))
        s.settimeout(30)
        s.connect((host, int(port)))
        conns[lport] = s
    for lport, s in conns.items():
        s.sendall(b"echo hello\n")
        if s.recv(64) != b"echo hello\n":
            print("fail %d first echo" % lport, flush=True)
    if get:
        def download():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("", get[0]))
            s.settimeout(60)  # the restart's downtime is a few seconds: TCP retransmits across it
            s.connect((host, int(port)))
            s.sendall(b"get\n")
            h, n = hashlib.sha256(), 0
            with open(get[1], "wb") as out:
                while True:
                    b = s.recv(65536)
                    if not b:
                        break
                    h.update(b)
                    out.write(b)
                    n += len(b)
            print("got %s %d" % (h.hexdigest(), n), flush=True)
        threading.Thread(target=download, daemon=True).start()
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "echo":
            lport = int(cmd[1])
            try:
                conns[lport].sendall(b"echo again\n")
                got = conns[lport].recv(64)
                print(("ok %d" % lport) if got == b"echo again\n" else "fail %d %r" % (lport, got), flush=True)
            except OSError as e:
                print("fail %d %s" % (lport, e), flush=True)


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def inject(iface, smac, dmac, src, sport, dst, dport):
    body = b"outside!"
    seq = random.Random(int(sport)).getrandbits(32) ^ 0x80000000
    tcp = struct.pack("!HHIIBBHHH", int(sport), int(dport), seq, 1, 5 << 4, 0x10, 65535, 0, 0) + body
    s, d = socket.inet_aton(src), socket.inet_aton(dst)
    tcp = tcp[:16] + struct.pack("!H", csum(s + d + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 7, 0, 64, 6, 0, s, d)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    frame = bytes.fromhex(dmac.replace(":", "")) + bytes.fromhex(smac.replace(":", "")) + b"\x08\x00" + ip + tcp
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    raw.bind((iface, 0))
    raw.send(frame)
    print("sent", flush=True)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "serve":
        serve(*sys.argv[2:6])
    elif what == "hold":
        hold(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif what == "inject":
        inject(*sys.argv[2:9])
    else:
        sys.exit("unknown command " + what)
    select.select([], [], [], 0)
