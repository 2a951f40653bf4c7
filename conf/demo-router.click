// demo-router.click: the IPv4 router `bricks demo` runs between two Linux
// hosts, one on each of its two interfaces.
//
// It is the router of the Click paper (Kohler et al., TOCS 2000, Figure 8;
// conf/ip-router.click is the original), with the addresses taken out into
// variables. `bricks demo` builds a network of namespaces and starts it as
//
//   bricks run conf/demo-router.click --threads 2 \
//       -D MAC0=<eth0's MAC> -D MAC1=<eth1's MAC> [-D BACKEND=xdp] ...
//
// inside the router's namespace; to run it by hand on two real interfaces,
// give each interface's address, network and MAC the same way (every
// variable below can be set with -D NAME=VALUE).
//
//        h1 10.1.0.2 ---- eth0 [ bricks 10.1.0.1 | 10.2.0.1 ] eth1 ---- h2 10.2.0.2
//
// Linux has no address on eth0 and eth1 and does not forward: bricks
// answers ARP for the router's addresses, learns the hosts' MACs with ARP,
// routes, decrements the TTL and sends the ICMP errors a router owes
// (RFC 1812). It answers pings to its own addresses; other packets for the
// router itself are counted and dropped: it has no host stack behind it.

define(
    // Interface 0: its name, the router's address on it, that subnet (its
    // network address, prefix length and broadcast address), its MAC.
    $DEV0 eth0,
    $IP0 10.1.0.1,
    $NET0 10.1.0.0,
    $LEN0 24,
    $BCAST0 10.1.0.255,
    $MAC0 02:00:00:00:01:01,

    // Interface 1, the same.
    $DEV1 eth1,
    $IP1 10.2.0.1,
    $NET1 10.2.0.0,
    $LEN1 24,
    $BCAST1 10.2.0.255,
    $MAC1 02:00:00:00:02:01,

    // How packets reach bricks: auto (AF_XDP, else AF_PACKET), xdp or
    // packet.
    $BACKEND auto,

    // Forward the ordinary IPv4 packets in the kernel, in bricks' XDP
    // program (AF_XDP only; see FromDevice's FASTPATH). Everything else
    // (ARP, TTL 1, options, pings to the router, unknown neighbours) goes
    // through this configuration as without it.
    $FASTPATH false,

    // AF_XDP busy polling (FromDevice's BUSY_POLL): 0 leaves the
    // interfaces' receive processing to the kernel; a duration such as
    // 50us has the worker run it in its own polls.
    $BUSY_POLL 0,

    // The links' MTU: larger packets are fragmented, or answered with ICMP
    // "fragmentation needed" when they say Don't Fragment.
    $MTU 1500,
);

// ---------------------------------------------------------------------
// The routing table, shared by both interfaces' input paths.
//
// Output 0 is local delivery (the router's own addresses, the subnets'
// network and broadcast addresses, the limited broadcast, local network
// control multicast: never forwarded, RFC 1812 section 5.3.7 and RFC 2644);
// output 1 leaves through eth0, output 2 through eth1. A default route would
// go here too, e.g. `0.0.0.0/0 10.2.0.254 2`.

rt :: StaticIPLookup(
    $IP0/32 0,
    $BCAST0/32 0,
    $NET0/32 0,
    $IP1/32 0,
    $BCAST1/32 0,
    $NET1/32 0,
    255.255.255.255/32 0.0.0.0 0,
    224.0.0.0/24 0,
    0.0.0.0/32 0,
    $NET0/$LEN0 1,
    $NET1/$LEN1 2,
);

// The IP input path: take off the Ethernet header, check the IP header
// (RFC 1812 section 5.2.2) and drop martian sources and destinations
// (section 5.3.7: loopback, network 0, class E, the router's own address as
// a source), copy the destination address into the packet's
// destination annotation, look the route up.
ip :: Strip(14)
    -> CheckIPHeader(INTERFACES $IP0/$LEN0 $IP1/$LEN1, MARTIANS true)
    -> GetIPAddress(16)
    -> [0]rt;

// ARP replies (and the requests hosts send us) go to both ARPQueriers,
// which learn the hosts' MACs from them.
arpt :: Tee(2);

// ---------------------------------------------------------------------
// Interface 0. The named device elements (in0, out0) are what `bricks demo`
// reads its per-port rates from.

in0 :: FromDevice($DEV0, BACKEND $BACKEND, FASTPATH $FASTPATH, BUSY_POLL $BUSY_POLL);
out0 :: ToDevice($DEV0);
q0 :: Queue(1024) -> out0;

// ARP requests, ARP replies, IPv4, everything else.
c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
in0 -> c0;

// Answer "who has 10.1.0.1?" with our MAC.
c0[0] -> ar0 :: ARPResponder($IP0 $MAC0) -> q0;
// Find the MAC of each next hop on this link, and put the Ethernet header
// on. Packets wait here while their next hop is being asked for.
arpq0 :: ARPQuerier($IP0/$LEN0, $MAC0) -> q0;
c0[1] -> arpt;
arpt[0] -> [1]arpq0;
// Paint remembers the input interface, so that a packet sent back out of
// the interface it came in on is noticed (ICMP redirect, below).
c0[2] -> Paint(1) -> ip;
// IPv6, LLDP and the rest: this router speaks IPv4 only.
c0[3] -> other0 :: Discard;

// ---------------------------------------------------------------------
// Interface 1, the same.

in1 :: FromDevice($DEV1, BACKEND $BACKEND, FASTPATH $FASTPATH, BUSY_POLL $BUSY_POLL);
out1 :: ToDevice($DEV1);
q1 :: Queue(1024) -> out1;

c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
in1 -> c1;

c1[0] -> ar1 :: ARPResponder($IP1 $MAC1) -> q1;
arpq1 :: ARPQuerier($IP1/$LEN1, $MAC1) -> q1;
c1[1] -> arpt;
arpt[1] -> [1]arpq1;
c1[2] -> Paint(2) -> ip;
c1[3] -> other1 :: Discard;

// ---------------------------------------------------------------------
// Local delivery. The router answers pings to its own addresses (RFC 1812
// section 4.3.3.6): the echo reply goes back into the route lookup like
// any other packet. Everything else for the router is counted and dropped
// (Click would hand it to the host's stack with ToHost; this router has no
// host stack behind it).

rt[0] -> ping :: ICMPPingResponder -> rt;
ping[1] -> local :: Discard;

// ---------------------------------------------------------------------
// The forwarding path out of eth0 (RFC 1812 section 5.2):
//   DropBroadcasts   no forwarding of link-level broadcasts
//   PaintTee(1)      came in on eth0 and leaves on eth0: also send a redirect
//   IPGWOptions      Record Route and Timestamp options; bad ones get a
//                    parameter problem
//   FixIPSrc         ICMP errors made here get eth0's address as source
//   DecIPTTL         TTL 1 or 0: "time exceeded" back to the sender
//   IPFragmenter     larger than the MTU: fragments, or "fragmentation
//                    needed" when Don't Fragment is set
//   ARPQuerier       next hop's MAC, Ethernet header, then the queue
// Each ICMP error goes back into the routing table like any other packet.

rt[1] -> DropBroadcasts
    -> cp0 :: PaintTee(1)
    -> gio0 :: IPGWOptions($IP0)
    -> FixIPSrc($IP0)
    -> dt0 :: DecIPTTL
    -> fr0 :: IPFragmenter($MTU)
    -> [0]arpq0;
dt0[1] -> ICMPError($IP0, timeexceeded) -> rt;
fr0[1] -> ICMPError($IP0, unreachable, needfrag) -> rt;
gio0[1] -> ICMPError($IP0, parameterproblem) -> rt;
cp0[1] -> ICMPError($IP0, redirect, host) -> rt;

// The forwarding path out of eth1, the same.

rt[2] -> DropBroadcasts
    -> cp1 :: PaintTee(2)
    -> gio1 :: IPGWOptions($IP1)
    -> FixIPSrc($IP1)
    -> dt1 :: DecIPTTL
    -> fr1 :: IPFragmenter($MTU)
    -> [0]arpq1;
dt1[1] -> ICMPError($IP1, timeexceeded) -> rt;
fr1[1] -> ICMPError($IP1, unreachable, needfrag) -> rt;
gio1[1] -> ICMPError($IP1, parameterproblem) -> rt;
cp1[1] -> ICMPError($IP1, redirect, host) -> rt;
