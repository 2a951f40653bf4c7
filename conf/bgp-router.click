// bgp-router.click: an IPv4 router whose routes come from a routing
// daemon (BIRD, FRR) running on the same host, and whose own traffic
// (BGP, OSPF, BFD, SSH, ping) reaches that host through the ports bricks
// forwards on.
//
//        h1 ---- eth0 [ bricks | host stack: bricks0, bricks1 ] eth1 ---- peer
//
// bricks owns eth0 and eth1 (AF_XDP or AF_PACKET). For each port it makes a
// TAP device that mirrors it for the host: bricks0 for eth0, bricks1 for
// eth1, with the router's address and the port's MAC. Frames for the
// router itself (its addresses, local network control multicast such as
// OSPF's 224.0.0.5) and ARP replies go up the TAP; everything the host
// sends out of a TAP leaves by its port. So a daemon on the host binds
// to the TAP's address and peers across the port as if the port were its
// own, while transit traffic never enters the host's stack. The daemon
// writes its routes to kernel table 100 (BIRD: `kernel { kernel table
// 100; ... }`), and the route lookup follows that table live: routes out
// of bricks0 leave by eth0, out of bricks1 by eth1. With FRR, zebra can
// stream its FIB to bricks instead (`zebra -M dplane_fpm_nl`, then
// `-D ROUTES=fpm`).
//
//   sudo bricks run conf/bgp-router.click -D MAC0=<eth0's MAC> -D MAC1=<eth1's MAC>
//
// On the host: no address on eth0 and eth1, `sysctl net.ipv4.ip_forward=0`
// (bricks forwards); with AF_PACKET also `net.ipv4.conf.all.rp_filter=1`
// and `arp_ignore=8` on eth0 and eth1, since AF_PACKET leaves the kernel
// its copy of every frame.

define(
    $DEV0 eth0, $IP0 10.1.0.1, $NET0 10.1.0.0, $LEN0 24, $MAC0 02:00:00:00:01:01,
    $TAP0 bricks0,
    $DEV1 eth1, $IP1 10.2.0.1, $NET1 10.2.0.0, $LEN1 24, $MAC1 02:00:00:00:02:01,
    $TAP1 bricks1,
    // Where the routes come from: a kernel routing table the daemon
    // writes to (netlink:table=ID[,proto=NAME]) or zebra's FPM stream
    // (fpm[:ADDR:PORT]).
    $ROUTES netlink:table=100,
    // auto (AF_XDP, else AF_PACKET), xdp or packet.
    $BACKEND auto,
);

// The connected networks are configured; every other route is learnt.
// Output 0 is the router itself.
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
host0 :: KernelTap($IP0/$LEN0, DEVNAME $TAP0, ETHER $MAC0);
host0 -> fromhost0 :: Counter -> q0;

in0 -> c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
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
c0[3] -> other0 :: Discard;
arpt[0] -> [1]arpq0;

// ---------------------------------------------------------------------
// Port 1, the same.

in1 :: FromDevice($DEV1, BACKEND $BACKEND);
q1 :: Queue(1024) -> out1 :: ToDevice($DEV1);
host1 :: KernelTap($IP1/$LEN1, DEVNAME $TAP1, ETHER $MAC1);
host1 -> fromhost1 :: Counter -> q1;

in1 -> c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
c1[0] -> ar1 :: ARPResponder($IP1 $MAC1) -> q1;
arpq1 :: ARPQuerier($IP1/$LEN1, $MAC1) -> q1;
c1[1] -> arpr1 :: Tee(2);
arpr1[0] -> arpt;
arpr1[1] -> tohost1 :: Counter -> host1;
c1[2] -> MarkIPHeader(14)
    -> me1 :: IPClassifier(dst host $IP0 or dst host $IP1 or dst net 224.0.0.0/24, -);
me1[0] -> tohost1;
me1[1] -> Paint(2) -> ip;
c1[3] -> other1 :: Discard;
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
