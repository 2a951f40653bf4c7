// The host's own IP stack as an interface of the router. KernelTun makes
// the TUN device $DEV, gives the host the address $ADDR on it and brings
// it up: the host then routes the rest of that subnet through bricks.
// Here bricks answers the host's pings to any other address of the subnet
// (a stand-in for the router's own addresses: a routing daemon on the host
// reaches the router's side the same way) and counts the rest.
//
//   sudo bricks run conf/host-tun.click        then, on the host:
//   ping 10.9.0.2
//
// Needs root (CAP_NET_ADMIN) to run; `bricks check` needs nothing.

define($DEV bricks0, $ADDR 10.9.0.1/24)

tun :: KernelTun($ADDR, DEVNAME $DEV);
tun -> c :: IPClassifier(icmp type echo, -);
c[0] -> pings :: Counter -> ICMPPingResponder -> tun;
c[1] -> other :: Counter -> Discard;
