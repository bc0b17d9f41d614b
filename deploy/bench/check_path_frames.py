# SPDX-License-Identifier: BSD-3-Clause
"""Checks that bench_packet_path's mbufs hold flows_pcap.py's frames, byte for byte.

tests/bench/bench_packet_path.cpp builds its input in C++ (tests/bench/path_frames.cpp); this runs it with
--write-frames (every flow's client->server and server->client frame, in flow order) and compares each
frame with flows_pcap.frame() for the same flow and direction.
    /usr/bin/python3 deploy/bench/check_path_frames.py --build build --flows 100000
"""

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flows_pcap  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--flows", type=int, default=100000)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "frames")
        subprocess.run([os.path.join(a.build, "tests", "bench", "bench_packet_path"), "--mode", "own", "--flows",
                        str(a.flows), "--write-frames", out], check=True, stdout=subprocess.DEVNULL)
        with open(out, "rb") as f:
            data = f.read()
    n = flows_pcap.FRAME_LEN
    if len(data) != 2 * n * a.flows:
        sys.exit("%d bytes, expected %d" % (len(data), 2 * n * a.flows))
    for i in range(a.flows):
        cip, cport, sip, sport = flows_pcap.flow_endpoints(i)
        cseq, sseq = (i * 7919 + 1) & 0xFFFFFFFF, (i * 104729 + 7) & 0xFFFFFFFF  # flows_pcap.write()'s
        want = (flows_pcap.frame(cip, cport, sip, sport, cseq, sseq, True),
                flows_pcap.frame(sip, sport, cip, cport, sseq, cseq, False))
        for k in range(2):
            got = data[(2 * i + k) * n:(2 * i + k + 1) * n]
            if got != want[k]:
                sys.exit("flow %d %s: bench_packet_path's frame differs from flows_pcap.py's:\n%s\n%s" %
                         (i, "client->server" if k == 0 else "server->client", got.hex(), want[k].hex()))
    print("%d flows: every frame of bench_packet_path equals flows_pcap.py's" % a.flows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
