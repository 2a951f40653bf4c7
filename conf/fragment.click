// Fragments the IPv4 packets of a raw-IP capture to an MTU (RFC 791) and
// writes them, with nanosecond timestamps, to another capture. A packet
// that may not be fragmented is answered with an ICMP "fragmentation
// needed" error that carries the MTU (RFC 1191).
//
//   bricks run conf/fragment.click -D IN=in.pcap -D OUT=out.pcap -D MTU=576

define($IN tests/golden/fragment/in.pcap, $OUT /tmp/fragment-out.pcap, $MTU 576)

out :: ToDump($OUT, ENCAP IP, NANO true);
FromDump($IN, STOP true)
    -> CheckIPHeader
    -> frag :: IPFragmenter($MTU)
    -> out;
frag[1] -> ICMPError(192.0.2.1, unreachable, needfrag) -> out;
