#!/usr/bin/env python3
"""Writes the input capture of the fragment golden test: raw IPv4 packets
(link type 101) in a big-endian capture with nanosecond timestamps, so that
the test also covers those reader paths. Run from the repository root:
scripts/make-fragment-inputs.py tests/golden/fragment
"""
import struct
import sys


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip(s):
    return bytes(int(x) for x in s.split("."))


def ipv4(ident, payload, df=False, options=b""):
    ihl = (20 + len(options)) // 4
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(options) + len(payload), ident,
                    0x4000 if df else 0, 64, 17, 0, ip("198.51.100.7"), ip("203.0.113.9")) + options
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload


def udp(n):
    data = bytes(i % 251 for i in range(n))
    return struct.pack("!HHHH", 7000, 9000, 8 + len(data), 0) + data


def main(out):
    # Router Alert (148, copied into every fragment) and a NOP pad; a
    # Record Route (7, not copied) in another packet.
    ra = bytes([148, 4, 0, 0])
    rr = bytes([7, 7, 4, 0, 0, 0, 0, 0])
    packets = [
        ipv4(1, udp(100)),                    # fits: passes unchanged
        ipv4(2, udp(1400)),                   # three fragments at MTU 576
        ipv4(3, udp(1400), options=ra),       # options copied to every fragment
        ipv4(4, udp(1000), options=rr),       # option only in the first fragment
        ipv4(5, udp(1000), df=True),          # DF: ICMP needfrag, MTU 576
    ]
    with open(f"{out}/in.pcap", "wb") as f:
        f.write(struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 101))
        for i, p in enumerate(packets):
            f.write(struct.pack(">IIII", 1700000100, 123456789 + i, len(p), len(p)))
            f.write(p)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/golden/fragment")
