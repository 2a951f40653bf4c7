// dual-stack-router.click: the router `bricks demo` runs between two Linux
// hosts, one on each of its two interfaces, routing IPv4 and IPv6.
//
// The IPv4 half is conf/demo-router.click; the IPv6 half beside it is the
// same router for IPv6 (RFC 8200, RFC 4443, RFC 4861), with Click's IPv6
// element names: CheckIP6Header, LookupIP6Route, DecIP6HLIM, ICMP6Error,
// IP6NDSolicitor and IP6NDAdvertiser, and bricks' IP6RouterAdvertiser,
// which announces the router and each link's prefix so that hosts can
// configure themselves (SLAAC, RFC 4862).
//
// It is the router of the Click paper (Kohler et al., TOCS 2000, Figure 8;
// conf/ip-router.click is the original), with the addresses taken out into
// variables. `bricks demo` builds a network of namespaces and starts it as
//
//   bricks run conf/dual-stack-router.click --threads 2 \
//       -D MAC0=<eth0's MAC> -D MAC1=<eth1's MAC> [-D BACKEND=xdp] ...
//
// inside the router's namespace; to run it by hand on two real interfaces,
// give each interface's address, network and MAC the same way (every
// variable below can be set with -D NAME=VALUE).
//
//     h1 10.1.0.2     ---- eth0 [ bricks 10.1.0.1    | 10.2.0.1    ] eth1 ---- h2 10.2.0.2
//        2001:db8:1::2                2001:db8:1::1 | 2001:db8:2::1              2001:db8:2::2
//
// Linux has no address on eth0 and eth1 and does not forward: bricks
// answers ARP and Neighbor Solicitations for the router's addresses, learns
// the hosts' MACs with ARP and Neighbor Discovery, routes, decrements the
// TTL or hop limit and sends the ICMP and ICMPv6 errors a router owes (RFC
// 1812, RFC 4443). It answers pings to its own addresses, link-local
// included, and UDP to them with port unreachable; other packets for the
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
    // Its IPv6 address and that subnet, and its link-local address: the
    // source of its Router Advertisements, the hosts' default router.
    $IP6_0 2001:db8:1::1,
    $NET6_0 2001:db8:1::,
    $LEN6_0 64,
    $LL6_0 fe80::1,

    // Interface 1, the same.
    $DEV1 eth1,
    $IP1 10.2.0.1,
    $NET1 10.2.0.0,
    $LEN1 24,
    $BCAST1 10.2.0.255,
    $MAC1 02:00:00:00:02:01,
    $IP6_1 2001:db8:2::1,
    $NET6_1 2001:db8:2::,
    $LEN6_1 64,
    $LL6_1 fe80::1,

    // How packets reach bricks: auto (AF_XDP, else AF_PACKET), xdp or
    // packet.
    $BACKEND auto,

    // When the router stops it sends a final Router Advertisement with
    // router lifetime 0, so that hosts stop using it as their default
    // router at once (RFC 4861 section 6.2.5); false leaves them to find
    // out when the advertised lifetime runs out.
    $RA_FINAL true,

    // The links' MTU: larger IPv4 packets are fragmented, or answered with
    // ICMP "fragmentation needed" when they say Don't Fragment; larger IPv6
    // packets are answered with Packet Too Big (routers do not fragment
    // IPv6). Each link's may be set on its own with MTU0 and MTU1.
    $MTU 1500,
    $MTU0 $MTU,
    $MTU1 $MTU,
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

in0 :: FromDevice($DEV0, BACKEND $BACKEND);
out0 :: ToDevice($DEV0);
q0 :: Queue(1024) -> out0;

// ARP requests, ARP replies, IPv4, Neighbor Solicitations, Neighbor
// Advertisements, Router Solicitations, MLD queries (behind their
// Hop-by-Hop header), the rest of IPv6, everything else.
c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800,
                 12/86dd 20/3a 54/87, 12/86dd 20/3a 54/88, 12/86dd 20/3a 54/85,
                 12/86dd 20/00 54/3a 62/82, 12/86dd, -);
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
// "Who has 2001:db8:1::1?" (or fe80::1): answered with our MAC; the
// asker's MAC, which the question carries, is learnt too (RFC 4861
// section 7.2.3). At start both addresses are announced to all nodes
// three times, a second apart (section 7.2.6).
nda0 :: IP6NDAdvertiser($IP6_0/128 $MAC0, $LL6_0/128 $MAC0) -> q0;
nds0 :: IP6NDSolicitor($IP6_0/$LEN6_0, $MAC0, LINK_LOCAL $LL6_0) -> q0;
c0[3] -> ns0 :: Tee(2);
ns0[0] -> nda0;
ns0[1] -> [1]nds0;
c0[4] -> [1]nds0;
// Router Advertisements: at start, then every 200 to 600 s, and in answer
// to Router Solicitations; hosts that accept them learn the prefix, the
// MTU and the router (RFC 4861 section 6.2). A last one with router
// lifetime 0 when the router stops.
c0[5] -> ra0 :: IP6RouterAdvertiser($MAC0, $LL6_0, PREFIX $NET6_0/$LEN6_0, MTU $MTU0,
                                    FINAL $RA_FINAL) -> q0;
// Multicast Listener Discovery: the router reports the solicited-node
// groups of its addresses and the all-routers group when it starts and
// in answer to queries, so that a switch that snoops MLD forwards it the
// Neighbor Solicitations for its addresses (RFC 3810, RFC 4861 section
// 7.2.1).
c0[6] -> mld0 :: MLDReporter($MAC0, $LL6_0, ADDRESS $IP6_0, ADDRESS $LL6_0) -> q0;
c0[7] -> Paint(1) -> ip6;
// LLDP and the rest.
c0[8] -> other0 :: Discard;

// ---------------------------------------------------------------------
// Interface 1, the same.

in1 :: FromDevice($DEV1, BACKEND $BACKEND);
out1 :: ToDevice($DEV1);
q1 :: Queue(1024) -> out1;

c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800,
                 12/86dd 20/3a 54/87, 12/86dd 20/3a 54/88, 12/86dd 20/3a 54/85,
                 12/86dd 20/00 54/3a 62/82, 12/86dd, -);
in1 -> c1;

c1[0] -> ar1 :: ARPResponder($IP1 $MAC1) -> q1;
arpq1 :: ARPQuerier($IP1/$LEN1, $MAC1) -> q1;
c1[1] -> arpt;
arpt[1] -> [1]arpq1;
c1[2] -> Paint(2) -> ip;
nda1 :: IP6NDAdvertiser($IP6_1/128 $MAC1, $LL6_1/128 $MAC1) -> q1;
nds1 :: IP6NDSolicitor($IP6_1/$LEN6_1, $MAC1, LINK_LOCAL $LL6_1) -> q1;
c1[3] -> ns1 :: Tee(2);
ns1[0] -> nda1;
ns1[1] -> [1]nds1;
c1[4] -> [1]nds1;
c1[5] -> ra1 :: IP6RouterAdvertiser($MAC1, $LL6_1, PREFIX $NET6_1/$LEN6_1, MTU $MTU1,
                                    FINAL $RA_FINAL) -> q1;
c1[6] -> mld1 :: MLDReporter($MAC1, $LL6_1, ADDRESS $IP6_1, ADDRESS $LL6_1) -> q1;
c1[7] -> Paint(2) -> ip6;
c1[8] -> other1 :: Discard;

// ---------------------------------------------------------------------
// Local delivery. The router answers pings to its own addresses (RFC 1812
// section 4.3.3.6): the echo reply goes back into the route lookup like
// any other packet. Click would hand everything else for the router to
// the host's stack with ToHost; this router has no host stack behind it.

rt[0] -> ping :: ICMPPingResponder -> rt;
// UDP to the router's addresses is answered with port unreachable (RFC
// 1812 section 4.3.2.7), from the address it was sent to, so that a UDP
// traceroute to the router ends there; other protocols but ICMP and IGMP
// (TCP too: the router has no TCP) with protocol unreachable (RFC 1122
// section 3.2.2.1). What is left (other ICMP, IGMP, broadcasts) is
// counted and dropped.
ping[1] -> udp :: IPClassifier(udp and dst host $IP0, udp and dst host $IP1, icmp or igmp,
                               dst host $IP0, dst host $IP1, -);
udp[0] -> ICMPError($IP0, unreachable, port) -> rt;
udp[1] -> ICMPError($IP1, unreachable, port) -> rt;
udp[2] -> local :: Discard;
udp[3] -> ICMPError($IP0, unreachable, protocol) -> rt;
udp[4] -> ICMPError($IP1, unreachable, protocol) -> rt;
udp[5] -> local;

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
    -> fr0 :: IPFragmenter($MTU0)
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
    -> fr1 :: IPFragmenter($MTU1)
    -> [0]arpq1;
dt1[1] -> ICMPError($IP1, timeexceeded) -> rt;
fr1[1] -> ICMPError($IP1, unreachable, needfrag) -> rt;
gio1[1] -> ICMPError($IP1, parameterproblem) -> rt;
cp1[1] -> ICMPError($IP1, redirect, host) -> rt;

// =====================================================================
// IPv6.
//
// The routing table. Output 0 is local delivery: the router's addresses
// and multicast destinations (never forwarded: RFC 4291 section 2.5.6, RFC
// 4007). Output 1 leaves through eth0, output 2 through eth1; output 3 is
// "no route", answered with ICMPv6 destination unreachable (RFC 4443
// section 3.1, code 0). Output 4 is every other link-local address: it is
// on the link the packet came in by, so the router's echo replies and
// errors to a host's link-local address leave by that interface, never by
// another.

rt6 :: LookupIP6Route(
    $IP6_0/128 0,
    $IP6_1/128 0,
    $LL6_0/128 0,
    $LL6_1/128 0,
    ff00::/8 0,
    fe80::/10 4,
    $NET6_0/$LEN6_0 1,
    $NET6_1/$LEN6_1 2,
    ::/0 3,
);

// The IPv6 input path: take off the Ethernet header, check the IPv6 header
// (version, lengths, source addresses, extension headers, Hop-by-Hop
// options) and look the route up. Options a router must report (RFC 8200
// section 4.2) get a parameter problem, code 2; a Routing header with
// segments left, to the router, one of code 0 (Type 0: RFC 5095; the
// others: RFC 8200 section 4.4, the router implements no routing type).
ip6 :: Strip(14)
    -> chk6 :: CheckIP6Header(INTERFACES $IP6_0 $IP6_1)
    -> [0]rt6;
chk6[1] -> bad6 :: Discard;
chk6[2] -> err_opt :: PaintSwitch;
chk6[3] -> err_hdr :: PaintSwitch;

// ICMPv6 errors come from the router's address on the interface the
// offending packet came in by (its paint: 1 for eth0, 2 for eth1), and go
// back into the table like any other packet, painted again with that
// interface (a new packet has no paint): an error to a host's link-local
// address then leaves by the link it came from.
back6_0 :: Paint(1) -> rt6;
back6_1 :: Paint(2) -> rt6;
err_hlim :: PaintSwitch;
err_hlim[0] -> Discard;
err_hlim[1] -> ICMP6Error($IP6_0, timeexceeded, hoplimit) -> back6_0;
err_hlim[2] -> ICMP6Error($IP6_1, timeexceeded, hoplimit) -> back6_1;
err_route :: PaintSwitch;
err_route[0] -> Discard;
err_route[1] -> ICMP6Error($IP6_0, unreachable, noroute) -> back6_0;
err_route[2] -> ICMP6Error($IP6_1, unreachable, noroute) -> back6_1;
err_opt[0] -> Discard;
err_opt[1] -> ICMP6Error($IP6_0, parameterproblem, option) -> back6_0;
err_opt[2] -> ICMP6Error($IP6_1, parameterproblem, option) -> back6_1;
err_hdr[0] -> Discard;
err_hdr[1] -> ICMP6Error($IP6_0, parameterproblem, header) -> back6_0;
err_hdr[2] -> ICMP6Error($IP6_1, parameterproblem, header) -> back6_1;
rt6[3] -> no_route6 :: Counter -> err_route;

// Link-local destinations: out of the interface the packet came in by,
// into the forwarding path of that interface (fwd6_0, fwd6_1, below).
fwd6_0 :: Null;
fwd6_1 :: Null;
rt6[4] -> ll6 :: PaintSwitch;
ll6[0] -> Discard;
ll6[1] -> fwd6_0;
ll6[2] -> fwd6_1;

// Local delivery: pings to the router's addresses are answered, and
// pings to all-nodes (ff02::1) and all-routers (ff02::2, ff05::2) from the
// link-local address of the interface they came in by (RFC 4443 sections
// 4.2 and 2.2). UDP to the router's addresses is answered with port
// unreachable (section 3.1, code 4), from the address it was sent to
// (section 2.2), so that a UDP traceroute to the router ends there; other
// protocols but ICMPv6 (TCP too: the router has no TCP) with parameter
// problem, unrecognised next header, pointing at the Next Header field
// that names it (RFC 8200 section 4, RFC 4443 section 3.4). Fragments
// (the router does not reassemble), No Next Header (RFC 8200 section
// 4.7), other ICMPv6 (multicast listener reports, router solicitations,
// ...) and what went to a group are counted and dropped.
rt6[0] -> ping6 :: ICMP6PingResponder -> rt6;
ping6[1] -> local_from6 :: PaintSwitch;
local_from6[0] -> local6 :: Discard;
local_from6[1] -> mping6_0 :: ICMP6PingResponder(MULTICAST_SRC $LL6_0) -> back6_0;
local_from6[2] -> mping6_1 :: ICMP6PingResponder(MULTICAST_SRC $LL6_1) -> back6_1;
mping6_0[1] -> udp6_0 :: IPClassifier(ip6 frag or ip6 icmp6 or ip6 proto 59,
                                         ip6 udp and dst host $IP6_0, ip6 udp and dst host $IP6_1,
                                         ip6 udp and dst host $LL6_0,
                                         ip6 dst host $IP6_0, ip6 dst host $IP6_1,
                                         ip6 dst host $LL6_0, -);
udp6_0[0] -> local6;
udp6_0[1] -> ICMP6Error($IP6_0, unreachable, port) -> back6_0;
udp6_0[2] -> ICMP6Error($IP6_1, unreachable, port) -> back6_0;
udp6_0[3] -> ICMP6Error($LL6_0, unreachable, port) -> back6_0;
udp6_0[4] -> ICMP6Error($IP6_0, parameterproblem, nextheader) -> back6_0;
udp6_0[5] -> ICMP6Error($IP6_1, parameterproblem, nextheader) -> back6_0;
udp6_0[6] -> ICMP6Error($LL6_0, parameterproblem, nextheader) -> back6_0;
udp6_0[7] -> local6;
mping6_1[1] -> udp6_1 :: IPClassifier(ip6 frag or ip6 icmp6 or ip6 proto 59,
                                         ip6 udp and dst host $IP6_0, ip6 udp and dst host $IP6_1,
                                         ip6 udp and dst host $LL6_1,
                                         ip6 dst host $IP6_0, ip6 dst host $IP6_1,
                                         ip6 dst host $LL6_1, -);
udp6_1[0] -> local6;
udp6_1[1] -> ICMP6Error($IP6_0, unreachable, port) -> back6_1;
udp6_1[2] -> ICMP6Error($IP6_1, unreachable, port) -> back6_1;
udp6_1[3] -> ICMP6Error($LL6_1, unreachable, port) -> back6_1;
udp6_1[4] -> ICMP6Error($IP6_0, parameterproblem, nextheader) -> back6_1;
udp6_1[5] -> ICMP6Error($IP6_1, parameterproblem, nextheader) -> back6_1;
udp6_1[6] -> ICMP6Error($LL6_1, parameterproblem, nextheader) -> back6_1;
udp6_1[7] -> local6;

// The forwarding path out of eth0:
//   DropBroadcasts   no forwarding of link-level broadcasts and multicasts
//   PaintTee(1)      came in on eth0 and leaves on eth0, from a neighbour:
//                    also send a redirect (RFC 4861 section 8.2) from the
//                    link-local address, straight to IP6NDSolicitor (hosts
//                    take redirects only with hop limit 255)
//   IPClassifier     a link-local source leaves by no other link than its
//   PaintSwitch      own: "beyond scope of source address" (RFC 4291
//                    section 2.5.6, RFC 4443 section 3.1, code 2)
//   DecIP6HLIM       hop limit 1 or 0: "time exceeded" back to the sender
//   CheckLength      larger than the link's MTU: "packet too big" with the
//                    MTU, which the sender's path MTU discovery learns
//   IP6NDSolicitor   next hop's MAC by Neighbor Discovery, Ethernet header;
//                    a neighbour that never answers: "address unreachable"
// The errors made here go back painted with this interface: a packet with
// a link-local source that got this far came in by it.
rt6[1] -> DropBroadcasts
    -> rd6_0 :: PaintTee(1)
    -> scope0 :: IPClassifier(ip6 src net fe80::/10, -);
rd6_0[1] -> nb6_0 :: IPClassifier((ip6 src net fe80::/10 or ip6 src net $NET6_0/$LEN6_0)
                                  and not ip6 src host $LL6_0 and not ip6 src host $IP6_0, -);
nb6_0[0] -> redirect6_0 :: ICMP6Error($LL6_0, redirect) -> [0]nds0;
nb6_0[1] -> Discard;
scope0[0] -> from0 :: PaintSwitch;
from0[0] -> Discard;
from0[1] -> fwd6_0;
from0[2] -> beyond0 :: ICMP6Error($IP6_1, unreachable, beyondscope) -> back6_1;
scope0[1] -> fwd6_0
    -> dh0 :: DecIP6HLIM
    -> mtu0 :: CheckLength($MTU0)
    -> [0]nds0;
dh0[1] -> err_hlim;
mtu0[1] -> ICMP6Error($IP6_0, toobig, 0, $MTU0) -> back6_0;
nds0[1] -> ICMP6Error($IP6_0, unreachable, address) -> back6_0;

// The forwarding path out of eth1, the same.
rt6[2] -> DropBroadcasts
    -> rd6_1 :: PaintTee(2)
    -> scope1 :: IPClassifier(ip6 src net fe80::/10, -);
rd6_1[1] -> nb6_1 :: IPClassifier((ip6 src net fe80::/10 or ip6 src net $NET6_1/$LEN6_1)
                                  and not ip6 src host $LL6_1 and not ip6 src host $IP6_1, -);
nb6_1[0] -> redirect6_1 :: ICMP6Error($LL6_1, redirect) -> [0]nds1;
nb6_1[1] -> Discard;
scope1[0] -> from1 :: PaintSwitch;
from1[0] -> Discard;
from1[1] -> beyond1 :: ICMP6Error($IP6_0, unreachable, beyondscope) -> back6_0;
from1[2] -> fwd6_1;
scope1[1] -> fwd6_1
    -> dh1 :: DecIP6HLIM
    -> mtu1 :: CheckLength($MTU1)
    -> [0]nds1;
dh1[1] -> err_hlim;
mtu1[1] -> ICMP6Error($IP6_1, toobig, 0, $MTU1) -> back6_1;
nds1[1] -> ICMP6Error($IP6_1, unreachable, address) -> back6_1;
