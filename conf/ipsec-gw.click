// ipsec-gw.click: an IPsec VPN gateway. The Click IPv4 router of
// demo-router.click between a local network (LAN) and an uplink (WAN),
// plus an ESP tunnel (RFC 4303, tunnel mode) to a peer gateway on the WAN
// side that protects the traffic between the local and the remote network.
//
//   192.168.1.0/24 --- LAN [ bricks 192.168.1.1 | 10.0.0.1 ] WAN === ESP === 10.0.0.2 peer --- 192.168.2.0/24
//
// The SAs and policies are in SA_FILE (conf/ipsec-gw.sa), in `ip xfrm`
// notation: the peer can be a Linux host configured with the same state
// lines. Run it on two interfaces as
//
//   bricks run conf/ipsec-gw.click -D LAN=eth0 -D WAN=eth1 \
//       -D LAN_MAC=<eth0's MAC> -D WAN_MAC=<eth1's MAC> [-D SA_FILE=...] \
//       [--control /run/bricks.sock]
//
// and rekey with `bricks ctl /run/bricks.sock write esp_in.reload x` and
// `... esp_out.reload x` after editing SA_FILE (see conf/ipsec-gw.sa).
//
// Like demo-router.click, the interfaces carry no Linux addresses: bricks
// answers ARP and pings for its own addresses and learns its neighbours'
// MACs with ARP.

define(
    $LAN eth0,
    $LAN_IP 192.168.1.1,
    $LAN_NET 192.168.1.0,
    $LAN_LEN 24,
    $LAN_BCAST 192.168.1.255,
    $LAN_MAC 02:00:00:00:01:01,

    $WAN eth1,
    $WAN_IP 10.0.0.1,
    $WAN_NET 10.0.0.0,
    $WAN_LEN 24,
    $WAN_BCAST 10.0.0.255,
    $WAN_MAC 02:00:00:00:02:01,

    // The peer gateway (on the WAN link) and the network behind it.
    $PEER 10.0.0.2,
    $REMOTE_NET 192.168.2.0,
    $REMOTE_LEN 24,

    $SA_FILE conf/ipsec-gw.sa,
    $BACKEND auto,
    $MTU 1500,
    // Largest inner packet sent into the tunnel: MTU minus ESP's overhead
    // (57 bytes for AES-GCM, up to 73 for AES-CBC + HMAC-SHA1). Larger
    // packets are fragmented before encryption, or answered with ICMP
    // "fragmentation needed" quoting this MTU when they say Don't
    // Fragment, so that TCP picks segments that fit.
    $TUNNEL_MTU 1400,
);

// ---------------------------------------------------------------------
// Routes: 0 local delivery, 1 the LAN, 2 the WAN, 3 the tunnel.

rt :: StaticIPLookup(
    $LAN_IP/32 0,
    $LAN_BCAST/32 0,
    $LAN_NET/32 0,
    $WAN_IP/32 0,
    $WAN_BCAST/32 0,
    $WAN_NET/32 0,
    255.255.255.255/32 0.0.0.0 0,
    224.0.0.0/24 0,
    0.0.0.0/32 0,
    $LAN_NET/$LAN_LEN 1,
    $WAN_NET/$WAN_LEN 2,
    $REMOTE_NET/$REMOTE_LEN 3,
);

arpt :: Tee(2);

// ---------------------------------------------------------------------
// The LAN interface: ARP, and IPv4 into the route lookup.

in0 :: FromDevice($LAN, BACKEND $BACKEND);
out0 :: ToDevice($LAN);
q0 :: Queue(1024) -> out0;

c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
in0 -> c0;
c0[0] -> ARPResponder($LAN_IP $LAN_MAC) -> q0;
arpq0 :: ARPQuerier($LAN_IP/$LAN_LEN, $LAN_MAC) -> q0;
c0[1] -> arpt;
arpt[0] -> [1]arpq0;
c0[2] -> Strip(14)
    -> CheckIPHeader(INTERFACES $LAN_IP/$LAN_LEN $WAN_IP/$WAN_LEN, MARTIANS true)
    -> GetIPAddress(16)
    -> [0]rt;
c0[3] -> other0 :: Discard;

// ---------------------------------------------------------------------
// The WAN interface. IPv4 goes through the decapsulator first: ESP from
// the peer comes out decrypted, replay- and policy-checked on output 0
// and is routed like a packet that arrived on the LAN side of the peer;
// everything else comes out of output 1 unchanged.

in1 :: FromDevice($WAN, BACKEND $BACKEND);
out1 :: ToDevice($WAN);
q1 :: Queue(1024) -> out1;

c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
in1 -> c1;
c1[0] -> ARPResponder($WAN_IP $WAN_MAC) -> q1;
arpq1 :: ARPQuerier($WAN_IP/$WAN_LEN, $WAN_MAC) -> q1;
c1[1] -> arpt;
arpt[1] -> [1]arpq1;
c1[2] -> Strip(14)
    -> CheckIPHeader(INTERFACES $LAN_IP/$LAN_LEN $WAN_IP/$WAN_LEN, MARTIANS true)
    -> esp_in :: IPsecESPDecap(FILE $SA_FILE)
    -> CheckIPHeader(MARTIANS true)
    -> GetIPAddress(16)
    -> [0]rt;
// Not ESP. Packets from the remote network must come through the tunnel
// (RFC 4301 section 5.2): in the clear they are dropped and counted.
esp_in[1] -> clear_in :: IPClassifier(src net $REMOTE_NET/$REMOTE_LEN, -);
clear_in[0] -> unprotected :: Discard;
clear_in[1] -> GetIPAddress(16) -> [0]rt;
c1[3] -> other1 :: Discard;

// ---------------------------------------------------------------------
// Local delivery: pings to the gateway's addresses are answered.

rt[0] -> ping :: ICMPPingResponder -> rt;
ping[1] -> local :: Discard;

// ---------------------------------------------------------------------
// Forwarding to the LAN and to the WAN (RFC 1812 section 5.2).

rt[1] -> DropBroadcasts
    -> gio0 :: IPGWOptions($LAN_IP)
    -> FixIPSrc($LAN_IP)
    -> dt0 :: DecIPTTL
    -> fr0 :: IPFragmenter($MTU)
    -> [0]arpq0;
dt0[1] -> ICMPError($LAN_IP, timeexceeded) -> rt;
fr0[1] -> ICMPError($LAN_IP, unreachable, needfrag) -> rt;
gio0[1] -> ICMPError($LAN_IP, parameterproblem) -> rt;

rt[2] -> DropBroadcasts
    -> gio1 :: IPGWOptions($WAN_IP)
    -> FixIPSrc($WAN_IP)
    -> dt1 :: DecIPTTL
    -> fr1 :: IPFragmenter($MTU)
    -> [0]arpq1;
dt1[1] -> ICMPError($WAN_IP, timeexceeded) -> rt;
fr1[1] -> ICMPError($WAN_IP, unreachable, needfrag) -> rt;
gio1[1] -> ICMPError($WAN_IP, parameterproblem) -> rt;

// ---------------------------------------------------------------------
// Into the tunnel: the inner packet is forwarded like any other (TTL,
// options, fragmentation to the tunnel's MTU), then encapsulated as the
// `dir out` policies say, and the ESP packet leaves on the WAN towards its
// outer destination, the peer (on the WAN link; for a peer behind a
// router, look the outer destination up in a StaticIPLookup here).

rt[3] -> DropBroadcasts
    -> gio3 :: IPGWOptions($LAN_IP)
    -> FixIPSrc($LAN_IP)
    -> dt3 :: DecIPTTL
    -> fr3 :: IPFragmenter($TUNNEL_MTU)
    -> esp_out :: IPsecESPEncap(FILE $SA_FILE)
    -> GetIPAddress(16)
    -> [0]arpq1;
dt3[1] -> ICMPError($LAN_IP, timeexceeded) -> rt;
fr3[1] -> ICMPError($LAN_IP, unreachable, needfrag) -> rt;
gio3[1] -> ICMPError($LAN_IP, parameterproblem) -> rt;
// Traffic for the remote network that no policy protects is not sent in
// the clear.
esp_out[1] -> unprotected_out :: Discard;
