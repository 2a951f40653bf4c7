// bgp-router.click: a dual-stack router whose routes come from a routing
// daemon (BIRD, FRR) running on the same host, and whose own traffic
// (BGP, OSPF, OSPFv3, BFD, SSH, ping, Neighbor Discovery) reaches that
// host through the ports bricks forwards on.
//
//        h1 ---- eth0 [ bricks | host stack: bricks0, bricks1 ] eth1 ---- peer
//
// bricks owns eth0 and eth1 (AF_XDP or AF_PACKET). For each port it makes a
// TAP device that mirrors it for the host: bricks0 for eth0, bricks1 for
// eth1, with the port's MAC and the router's addresses (IPv4, and IPv6
// with the link-local address the kernel derives from the MAC). Frames for
// the router itself go up the TAP: IPv4 to its addresses, local network
// control multicast such as OSPF's 224.0.0.5 and ARP replies; IPv6 to its
// addresses, link-local (fe80::/10) and link-scope multicast (ff02::/16:
// all-nodes, all-routers, solicited-node, OSPFv3's ff02::5 and ff02::6),
// Neighbor Solicitations and Advertisements. Everything the host sends out
// of a TAP leaves by its port. So a daemon on the host binds to the TAP's
// addresses and peers across the port as if the port were its own, while
// transit traffic never enters the host's stack.
//
// Who answers what: bricks answers ARP for the router's IPv4 addresses;
// the host answers Neighbor Solicitations for its IPv6 addresses (never
// bricks: there is no IP6NDAdvertiser here), as a router (the TAPs are
// made with IP6_ROUTER, so its advertisements carry the Router flag and it
// takes nothing from Router Advertisements or Redirects). Solicitations
// and advertisements also reach bricks' IP6NDSolicitor, which resolves the
// next hops of forwarded packets. Router Advertisements for the LANs, if
// wanted, come from the daemon (BIRD's radv protocol, FRR's `ipv6 nd`).
//
// The daemon writes its routes to kernel table 100 (BIRD: `kernel { kernel
// table 100; ... }`, one kernel protocol per address family), and both
// route lookups follow that table live: routes out of bricks0 leave by
// eth0, out of bricks1 by eth1. With FRR, zebra can stream its FIB to
// bricks instead (`zebra -M dplane_fpm_nl`, then `-D ROUTES=fpm`): IPv4
// and IPv6 routes come over the one connection.
//
//   sudo bricks run conf/bgp-router.click -D MAC0=<eth0's MAC> -D MAC1=<eth1's MAC>
//
// On the host: no address on eth0 and eth1 and no IPv6 there either
// (`sysctl net.ipv6.conf.eth0.disable_ipv6=1`, the same for eth1: the
// kernel would otherwise give the ports the TAPs' link-local addresses),
// `sysctl net.ipv4.ip_forward=0` and `net.ipv6.conf.all.forwarding=0`
// (bricks forwards); with AF_PACKET also `net.ipv4.conf.all.rp_filter=1`
// and `arp_ignore=8` on eth0 and eth1, since AF_PACKET leaves the kernel
// its copy of every frame.

define(
    $DEV0 eth0, $IP0 10.1.0.1, $NET0 10.1.0.0, $LEN0 24, $MAC0 02:00:00:00:01:01,
    $IP6_0 2001:db8:1::1, $NET6_0 2001:db8:1::, $LEN6_0 64,
    $TAP0 bricks0,
    $DEV1 eth1, $IP1 10.2.0.1, $NET1 10.2.0.0, $LEN1 24, $MAC1 02:00:00:00:02:01,
    $IP6_1 2001:db8:2::1, $NET6_1 2001:db8:2::, $LEN6_1 64,
    $TAP1 bricks1,
    // Where the routes come from: a kernel routing table the daemon
    // writes to (netlink:table=ID[,proto=NAME]) or zebra's FPM stream
    // (fpm[:ADDR:PORT]).
    $ROUTES netlink:table=100,
    // auto (AF_XDP, else AF_PACKET), xdp or packet.
    $BACKEND auto,
);

// The connected networks are configured; every other route is learnt.
// Output 0 is the router itself. (The IPv6 table is below.)
rt :: DirectIPLookup(
    $IP0/32 0, $IP1/32 0, 255.255.255.255/32 0,
    $NET0/$LEN0 1, $NET1/$LEN1 2,
    ROUTES $ROUTES, DEVICES "- $DEV0|$TAP0 $DEV1|$TAP1");

ip :: Strip(14)
    -> CheckIPHeader(INTERFACES $IP0/$LEN0 $IP1/$LEN1, MARTIANS true)
    -> GetIPAddress(16)
    -> rt;

arpt :: Tee(2);

// ---------------------------------------------------------------------
// Port 0 and its host mirror.

in0 :: FromDevice($DEV0, BACKEND $BACKEND);
q0 :: Queue(1024) -> out0 :: ToDevice($DEV0);
host0 :: KernelTap($IP0/$LEN0, DEVNAME $TAP0, ETHER $MAC0,
                   ADDR6 $IP6_0/$LEN6_0, IP6_ROUTER true);
host0 -> fromhost0 :: Counter -> q0;

// ARP requests, ARP replies, IPv4, Neighbor Solicitations, Neighbor
// Advertisements, the rest of IPv6, everything else.
in0 -> c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800,
                        12/86dd 20/3a 54/87, 12/86dd 20/3a 54/88, 12/86dd, -);
c0[0] -> ar0 :: ARPResponder($IP0 $MAC0) -> q0;
arpq0 :: ARPQuerier($IP0/$LEN0, $MAC0) -> q0;
// ARP replies: to bricks' querier and to the host, which asks too.
c0[1] -> arpr0 :: Tee(2);
arpr0[0] -> arpt;
arpr0[1] -> tohost0 :: Counter -> host0;
// The router's own traffic up to the host; the rest is forwarded.
c0[2] -> MarkIPHeader(14)
    -> me0 :: IPClassifier(dst host $IP0 or dst host $IP1 or dst net 224.0.0.0/24, -);
me0[0] -> tohost0;
me0[1] -> Paint(1) -> ip;
// Neighbor Discovery: to the host, which answers for its addresses, and
// to bricks' solicitor, which learns from it.
nds0 :: IP6NDSolicitor($IP6_0/$LEN6_0, $MAC0) -> q0;
c0[3] -> ns0 :: Tee(2);
ns0[0] -> tohost0;
ns0[1] -> [1]nds0;
c0[4] -> na0 :: Tee(2);
na0[0] -> tohost0;
na0[1] -> [1]nds0;
// The router's own IPv6 up to the host; the rest is forwarded.
c0[5] -> MarkIPHeader(14)
    -> me6_0 :: IPClassifier(dst host $IP6_0 or dst host $IP6_1
                             or dst net fe80::/10 or dst net ff02::/16, -);
me6_0[0] -> tohost0;
me6_0[1] -> Paint(1) -> ip6;
c0[6] -> other0 :: Discard;
arpt[0] -> [1]arpq0;

// ---------------------------------------------------------------------
// Port 1, the same.

in1 :: FromDevice($DEV1, BACKEND $BACKEND);
q1 :: Queue(1024) -> out1 :: ToDevice($DEV1);
host1 :: KernelTap($IP1/$LEN1, DEVNAME $TAP1, ETHER $MAC1,
                   ADDR6 $IP6_1/$LEN6_1, IP6_ROUTER true);
host1 -> fromhost1 :: Counter -> q1;

in1 -> c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800,
                        12/86dd 20/3a 54/87, 12/86dd 20/3a 54/88, 12/86dd, -);
c1[0] -> ar1 :: ARPResponder($IP1 $MAC1) -> q1;
arpq1 :: ARPQuerier($IP1/$LEN1, $MAC1) -> q1;
c1[1] -> arpr1 :: Tee(2);
arpr1[0] -> arpt;
arpr1[1] -> tohost1 :: Counter -> host1;
c1[2] -> MarkIPHeader(14)
    -> me1 :: IPClassifier(dst host $IP0 or dst host $IP1 or dst net 224.0.0.0/24, -);
me1[0] -> tohost1;
me1[1] -> Paint(2) -> ip;
nds1 :: IP6NDSolicitor($IP6_1/$LEN6_1, $MAC1) -> q1;
c1[3] -> ns1 :: Tee(2);
ns1[0] -> tohost1;
ns1[1] -> [1]nds1;
c1[4] -> na1 :: Tee(2);
na1[0] -> tohost1;
na1[1] -> [1]nds1;
c1[5] -> MarkIPHeader(14)
    -> me6_1 :: IPClassifier(dst host $IP6_0 or dst host $IP6_1
                             or dst net fe80::/10 or dst net ff02::/16, -);
me6_1[0] -> tohost1;
me6_1[1] -> Paint(2) -> ip6;
c1[6] -> other1 :: Discard;
arpt[1] -> [1]arpq1;

// ---------------------------------------------------------------------
// What reaches the router's own addresses without coming through a port's
// classifier (none in this configuration) is dropped; the forwarding
// paths are the demo router's (RFC 1812 section 5.2).

rt[0] -> local :: Discard;

rt[1] -> DropBroadcasts
    -> cp0 :: PaintTee(1)
    -> gio0 :: IPGWOptions($IP0)
    -> FixIPSrc($IP0)
    -> dt0 :: DecIPTTL
    -> fr0 :: IPFragmenter(1500)
    -> [0]arpq0;
dt0[1] -> ICMPError($IP0, timeexceeded) -> rt;
fr0[1] -> ICMPError($IP0, unreachable, needfrag) -> rt;
gio0[1] -> ICMPError($IP0, parameterproblem) -> rt;
cp0[1] -> ICMPError($IP0, redirect, host) -> rt;

rt[2] -> DropBroadcasts
    -> cp1 :: PaintTee(2)
    -> gio1 :: IPGWOptions($IP1)
    -> FixIPSrc($IP1)
    -> dt1 :: DecIPTTL
    -> fr1 :: IPFragmenter(1500)
    -> [0]arpq1;
dt1[1] -> ICMPError($IP1, timeexceeded) -> rt;
fr1[1] -> ICMPError($IP1, unreachable, needfrag) -> rt;
gio1[1] -> ICMPError($IP1, parameterproblem) -> rt;
cp1[1] -> ICMPError($IP1, redirect, host) -> rt;

// =====================================================================
// IPv6 (RFC 8200, RFC 4443, RFC 4861): the router of
// conf/dual-stack-router.click with its table fed by the daemon.
//
// Output 0 is the router itself (what reaches it here rather than up a
// TAP: nothing but errors about the router's own packets), 1 eth0, 2
// eth1, 3 no route, answered with ICMPv6 destination unreachable. Learnt
// routes override these for the same prefix (a learnt default route
// replaces ::/0 3); link-local and multicast routes are never learnt.

rt6 :: LookupIP6Route(
    $IP6_0/128 0, $IP6_1/128 0, fe80::/10 0, ff00::/8 0,
    $NET6_0/$LEN6_0 1, $NET6_1/$LEN6_1 2, ::/0 3,
    ROUTES $ROUTES, DEVICES "- $DEV0|$TAP0 $DEV1|$TAP1");

ip6 :: Strip(14)
    -> chk6 :: CheckIP6Header(INTERFACES $IP6_0 $IP6_1)
    -> rt6;
chk6[1] -> bad6 :: Discard;
chk6[2] -> err_opt :: PaintSwitch;
chk6[3] -> err_hdr :: PaintSwitch;

// ICMPv6 errors come from the router's address on the port the offending
// packet came in by (its paint) and go back into the table.
err_hlim :: PaintSwitch;
err_hlim[0] -> Discard;
err_hlim[1] -> ICMP6Error($IP6_0, timeexceeded, hoplimit) -> rt6;
err_hlim[2] -> ICMP6Error($IP6_1, timeexceeded, hoplimit) -> rt6;
err_route :: PaintSwitch;
err_route[0] -> Discard;
err_route[1] -> ICMP6Error($IP6_0, unreachable, noroute) -> rt6;
err_route[2] -> ICMP6Error($IP6_1, unreachable, noroute) -> rt6;
err_opt[0] -> Discard;
err_opt[1] -> ICMP6Error($IP6_0, parameterproblem, option) -> rt6;
err_opt[2] -> ICMP6Error($IP6_1, parameterproblem, option) -> rt6;
err_hdr[0] -> Discard;
err_hdr[1] -> ICMP6Error($IP6_0, parameterproblem, header) -> rt6;
err_hdr[2] -> ICMP6Error($IP6_1, parameterproblem, header) -> rt6;
rt6[3] -> no_route6 :: Counter -> err_route;

rt6[0] -> local6 :: Discard;

// Out of eth0: the hop limit (time exceeded at 1 or 0), the link's MTU
// (packet too big: routers do not fragment IPv6), the next hop's MAC by
// Neighbor Discovery (address unreachable when it never answers).
rt6[1] -> dh0 :: DecIP6HLIM
    -> mtu0 :: CheckLength(1500)
    -> [0]nds0;
dh0[1] -> err_hlim;
mtu0[1] -> ICMP6Error($IP6_0, toobig, 0, 1500) -> rt6;
nds0[1] -> ICMP6Error($IP6_0, unreachable, address) -> rt6;

rt6[2] -> dh1 :: DecIP6HLIM
    -> mtu1 :: CheckLength(1500)
    -> [0]nds1;
dh1[1] -> err_hlim;
mtu1[1] -> ICMP6Error($IP6_1, toobig, 0, 1500) -> rt6;
nds1[1] -> ICMP6Error($IP6_1, unreachable, address) -> rt6;
