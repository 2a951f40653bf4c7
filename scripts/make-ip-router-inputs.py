#!/usr/bin/env python3
"""Writes the input captures of the ip-router golden test.

The two-interface router of conf/ip-router.click sits between
  eth0: router 18.26.4.1 (00:00:C0:3B:71:EF), host A 18.26.4.99, gateway 18.26.4.254
  eth1: router 1.0.0.1   (00:00:C0:AE:67:EF), host C 1.0.0.2
Each packet below exercises one behaviour; the comment says which. Run from
the repository root: scripts/make-ip-router-inputs.py tests/golden/ip-router
"""
import struct
import sys

R0_MAC = bytes.fromhex("0000C03B71EF")
R1_MAC = bytes.fromhex("0000C0AE67EF")
A_MAC = bytes.fromhex("00206a123456")
C_MAC = bytes.fromhex("00206a000002")
BCAST = b"\xff" * 6


def ip(s):
    return bytes(int(x) for x in s.split("."))


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def eth(dst, src, etype, payload):
    return dst + src + struct.pack("!H", etype) + payload


def arp(op, sha, spa, tha, tpa):
    return struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + sha + ip(spa) + tha + ip(tpa)


def ipv4(src, dst, proto, payload, ttl=64, df=False, options=b"", ident=1, version=4,
         bad_csum=False, total_len=None, frag=0):
    ihl = (20 + len(options)) // 4
    tl = total_len if total_len is not None else 20 + len(options) + len(payload)
    flags = (0x4000 if df else 0) | frag
    h = struct.pack("!BBHHHBBH4s4s", (version << 4) | ihl, 0, tl, ident, flags, ttl, proto, 0,
                    ip(src), ip(dst)) + options
    c = csum(h)
    if bad_csum:
        c ^= 0x5555
    h = h[:10] + struct.pack("!H", c) + h[12:]
    return h + payload


def udp(sport, dport, data):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


def icmp_echo(ident, seq, data):
    h = struct.pack("!BBHHH", 8, 0, 0, ident, seq) + data
    return h[:2] + struct.pack("!H", csum(h)) + h[4:]


def pcap(path, records):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for ms, frame in records:
            secs, usec = 1700000000 + ms // 1000, (ms % 1000) * 1000
            f.write(struct.pack("<IIII", secs, usec, len(frame), len(frame)))
            f.write(frame)


def main(out):
    payload = bytes(range(72))
    a_to_c = lambda **kw: eth(R0_MAC, A_MAC, 0x0800, ipv4("18.26.4.99", "1.0.0.2", 17,
                                                         udp(4000, 5000, kw.pop("data", payload)), **kw))
    # Record Route: type 7, length 11 (two slots), pointer 4, padded with EOL.
    rr = bytes([7, 11, 4]) + bytes(8) + b"\0"
    eth0 = [
        # ARP request for the router's own address: answered.
        (1, eth(BCAST, A_MAC, 0x0806, arp(1, A_MAC, "18.26.4.99", bytes(6), "18.26.4.1"))),
        # Forwarded A -> C: ARP for C goes out eth1, the packet waits for the reply.
        (10, a_to_c(ident=10)),
        # Dropped by CheckIPHeader: bad checksum, bad version, truncated, martian sources.
        (20, a_to_c(ident=20, bad_csum=True)),
        (21, a_to_c(ident=21, version=6)),
        (22, a_to_c(ident=22, total_len=400)),
        (23, eth(R0_MAC, A_MAC, 0x0800, ipv4("18.26.4.255", "1.0.0.2", 17, udp(1, 2, payload), ident=23))),
        (24, eth(R0_MAC, A_MAC, 0x0800, ipv4("224.1.2.3", "1.0.0.2", 17, udp(1, 2, payload), ident=24))),
        # TTL 1: ICMP time exceeded back to A.
        (25, a_to_c(ident=25, ttl=1)),
        # 1600 bytes with DF over MTU 1500: ICMP needfrag with MTU 1500 back to A.
        (30, a_to_c(ident=30, df=True, data=bytes(1572))),
        # 1600 bytes without DF: two fragments out eth1.
        (35, a_to_c(ident=35, data=bytes(i % 251 for i in range(1572)))),
        # Record Route option: the router records 1.0.0.1.
        (40, eth(R0_MAC, A_MAC, 0x0800, ipv4("18.26.4.99", "1.0.0.2", 17, udp(4000, 5000, payload),
                                               ident=40, options=rr))),
        # Ping to the router itself: local delivery.
        (45, eth(R0_MAC, A_MAC, 0x0800, ipv4("18.26.4.99", "18.26.4.1", 1, icmp_echo(7, 1, payload), ident=45))),
        # A answers the router's ARP query: the ICMP errors for A leave.
        (50, eth(R0_MAC, A_MAC, 0x0806, arp(2, A_MAC, "18.26.4.99", R0_MAC, "18.26.4.1"))),
        # Same-interface forwarding: ICMP redirect (host) to A, and the packet goes on.
        (65, eth(R0_MAC, A_MAC, 0x0800, ipv4("18.26.4.99", "18.26.4.200", 17, udp(1, 2, payload), ident=65))),
        # Not IP or ARP: printed and dropped.
        (70, eth(R0_MAC, A_MAC, 0x86DD, bytes(60))),
    ]
    eth1 = [
        # C answers the router's query: the held packet leaves.
        (15, eth(R1_MAC, C_MAC, 0x0806, arp(2, C_MAC, "1.0.0.2", R1_MAC, "1.0.0.1"))),
        # Proxy ARP: the router answers for any address in 1.0.0.0/8.
        (16, eth(BCAST, C_MAC, 0x0806, arp(1, C_MAC, "1.0.0.2", bytes(6), "1.0.0.77"))),
        # Forwarded C -> A (A's address is known by now).
        (60, eth(R1_MAC, C_MAC, 0x0800, ipv4("1.0.0.2", "18.26.4.99", 17, udp(5000, 4000, payload), ident=60))),
        # Default route via 18.26.4.254, which never answers: ARP query, packet held.
        (62, eth(R1_MAC, C_MAC, 0x0800, ipv4("1.0.0.2", "8.8.8.8", 17, udp(5000, 53, payload), ident=62))),
    ]
    pcap(f"{out}/eth0-in.pcap", eth0)
    pcap(f"{out}/eth1-in.pcap", eth1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/golden/ip-router")
