// bricks' XDP fast path: forwards the common IPv4 case inside the kernel
// and steers everything else to the AF_XDP socket of the receive queue,
// exactly as xsk_redirect.c does, so that user space handles it as if
// there were no fast path.
//
// A frame is forwarded here only when the router configuration would do
// nothing to it but check its header, look its destination up, decrement
// its TTL and put a new Ethernet header on it (CheckIPHeader, a route
// lookup, DecIPTTL, EtherEncap or ARPQuerier). Every other frame, and
// every frame the maps know nothing about, goes to user space with the
// reason counted in `bricks_stats`. The maps are filled and kept in sync
// by crates/io/src/xdp/fastpath.rs; their layouts are mirrored there.
//
// Built by crates/io/build.rs with `clang -O2 -g -target bpf -c`; the
// maps are BTF-defined, hence `-g`. Only non-GPL helpers are used.

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

// Queue ids up to 1023; an XSKMAP slot is one pointer.
#define BRICKS_MAX_QUEUES 1024
// Route outputs with a port; FastPath::new refuses more.
#define BRICKS_MAX_PORTS 256
// Extra source addresses always sent to user space.
#define BRICKS_MAX_BAD_SRC 256
// A route output meaning "to user space" (FastPath::SLOW).
#define BRICKS_SLOW 0xffffffffu

// bricks_ports[].flags
#define PORT_VALID 1u
#define PORT_STATIC_DST 2u

// bricks_stats indexes: forwarded frames, their bytes, then one counter
// per reason a frame went to user space, in FastPathStats' order.
enum {
	STAT_FORWARDED,
	STAT_FORWARDED_BYTES,
	STAT_NOT_IPV4,
	STAT_L2_MULTICAST,
	STAT_IP_OPTIONS,
	STAT_BAD_HEADER,
	STAT_BAD_ADDRESS,
	STAT_TTL,
	STAT_NO_ROUTE,
	STAT_SLOW_OUTPUT,
	STAT_TOO_BIG,
	STAT_NO_NEIGHBOUR,
	STAT_OTHER_HOST,
	STAT_COUNT,
};

// The kernel wants an LPM trie's key to be a struct (trie_check_btf).
struct route_key {
	__u32 prefixlen;
	__u8 addr[4]; // network order
};

struct route {
	__u32 output;  // BRICKS_SLOW: to user space
	__u32 gateway; // network order; 0: the destination is on the link
};

struct port {
	__u32 flags;   // PORT_*
	__u8 src[6];   // Ethernet source of forwarded frames
	__u8 dst[6];   // Ethernet destination, with PORT_STATIC_DST
	__u32 mtu;     // largest IPv4 total length; 0: no limit
};

// The input interface: frames unicast to another MAC than `mac` go to
// user space when `check_mac` is set (FromDevice drops them there unless
// PROMISC).
// `bad_filter` has bit filter_bit(a) set for every address `a` of
// bricks_bad_src, so that an ordinary packet costs no hash lookup.
struct input {
	__u32 check_mac;
	__u8 mac[6];
	__u8 pad[2];
	__u64 bad_filter;
};

// The bit of `bad_filter` for `a` (as read from the packet): the bytes
// folded together, low 6 bits. FastPath::new computes the same.
static __always_inline __u64 filter_bit(__u32 a)
{
	return 1ull << ((a ^ (a >> 8) ^ (a >> 16) ^ (a >> 24)) & 63);
}

struct neigh_key {
	__u32 output;
	__u32 ip; // network order
};

struct neigh {
	__u8 mac[6];
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, BRICKS_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} bricks_xsks SEC(".maps");

// max_entries is set by the loader from FastPathSpec::max_routes.
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct route_key);
	__type(value, struct route);
} bricks_routes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BRICKS_MAX_PORTS);
	__type(key, __u32);
	__type(value, struct port);
} bricks_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct input);
} bricks_input SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, BRICKS_MAX_PORTS);
	__type(key, __u32);
	__type(value, __u32);
} bricks_tx SEC(".maps");

// max_entries is set by the loader from FastPathSpec::max_neighbours.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct neigh_key);
	__type(value, struct neigh);
} bricks_neigh SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, BRICKS_MAX_BAD_SRC);
	__type(key, __u32);
	__type(value, __u8);
} bricks_bad_src SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} bricks_stats SEC(".maps");

static __always_inline void count(__u32 what, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&bricks_stats, &what);

	if (c)
		*c += n; // per CPU: no other writer
}

// To user space: the AF_XDP socket of this receive queue, or the kernel's
// stack for a queue with no socket (as xsk_redirect.c).
static __always_inline int to_user(struct xdp_md *ctx, __u32 why)
{
	count(why, 1);
	return bpf_redirect_map(&bricks_xsks, ctx->rx_queue_index, XDP_PASS);
}

// 0.0.0.0/8, 127.0.0.0/8 and 224.0.0.0/3 (multicast, class E and the
// limited broadcast); `a` in network order.
static __always_inline int martian(__u32 a)
{
	__u32 h = bpf_ntohl(a);
	__u32 first = h >> 24;

	return first == 0 || first == 127 || first >= 224;
}

SEC("xdp")
int bricks_fastpath(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + sizeof(*eth);

	if ((void *)(eth + 1) > data_end)
		return to_user(ctx, STAT_NOT_IPV4);
	// VLAN tags and every other EtherType go to user space.
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return to_user(ctx, STAT_NOT_IPV4);
	if (eth->h_dest[0] & 1)
		return to_user(ctx, STAT_L2_MULTICAST);
	__u32 zero = 0;
	struct input *in = bpf_map_lookup_elem(&bricks_input, &zero);
	if (in && in->check_mac &&
	    (*(__u32 *)eth->h_dest != *(__u32 *)in->mac ||
	     *(__u16 *)(eth->h_dest + 4) != *(__u16 *)(in->mac + 4)))
		return to_user(ctx, STAT_OTHER_HOST);
	if ((void *)(ip + 1) > data_end)
		return to_user(ctx, STAT_BAD_HEADER);
	if (ip->version != 4)
		return to_user(ctx, STAT_BAD_HEADER);
	if (ip->ihl != 5)
		return to_user(ctx, ip->ihl > 5 ? STAT_IP_OPTIONS : STAT_BAD_HEADER);

	// The IP packet fills the frame exactly: no Ethernet padding to strip
	// (user space does that), no truncated packet.
	__u32 tot_len = bpf_ntohs(ip->tot_len);
	if (tot_len < sizeof(*ip) || (void *)ip + tot_len != data_end)
		return to_user(ctx, STAT_BAD_HEADER);

	// RFC 1071: the one's complement sum of a correct header is 0xffff.
	__u16 *w = (__u16 *)ip;
	__u32 sum = 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < 10; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	if (sum != 0xffff)
		return to_user(ctx, STAT_BAD_HEADER);

	__u32 saddr = ip->saddr;
	__u32 daddr = ip->daddr;
	// The listed addresses are what the configuration's CheckIPHeader may
	// refuse or treat apart, as a source or a destination.
	__u64 filter = in ? in->bad_filter : ~0ull;
	if (martian(saddr) || martian(daddr) ||
	    ((filter & filter_bit(saddr)) &&
	     bpf_map_lookup_elem(&bricks_bad_src, &saddr)) ||
	    ((filter & filter_bit(daddr)) &&
	     bpf_map_lookup_elem(&bricks_bad_src, &daddr)))
		return to_user(ctx, STAT_BAD_ADDRESS);

	// TTL 1 expires here: user space sends the ICMP time exceeded.
	if (ip->ttl <= 1)
		return to_user(ctx, STAT_TTL);

	struct route_key key = { .prefixlen = 32 };
	__builtin_memcpy(key.addr, &daddr, 4);
	struct route *rt = bpf_map_lookup_elem(&bricks_routes, &key);
	if (!rt)
		return to_user(ctx, STAT_NO_ROUTE);
	__u32 output = rt->output;
	__u32 gateway = rt->gateway;
	if (output == BRICKS_SLOW)
		return to_user(ctx, STAT_SLOW_OUTPUT);
	struct port *port = bpf_map_lookup_elem(&bricks_ports, &output);
	if (!port || !(port->flags & PORT_VALID))
		return to_user(ctx, STAT_SLOW_OUTPUT);

	if (port->mtu && tot_len > port->mtu)
		return to_user(ctx, STAT_TOO_BIG);

	__u8 *dst = port->dst;
	if (!(port->flags & PORT_STATIC_DST)) {
		struct neigh_key nk = {
			.output = output,
			.ip = gateway ? gateway : daddr,
		};
		struct neigh *n = bpf_map_lookup_elem(&bricks_neigh, &nk);
		if (!n)
			return to_user(ctx, STAT_NO_NEIGHBOUR);
		dst = n->mac;
	}

	// Chooses the output before the frame is touched: an empty DEVMAP slot
	// (an output interface that went away) fails here, and the frame goes
	// to user space unchanged rather than being lost.
	if (bpf_redirect_map(&bricks_tx, output, XDP_ABORTED) != XDP_REDIRECT)
		return to_user(ctx, STAT_SLOW_OUTPUT);

	// DecIPTTL: RFC 1624 eqn. 3 for the 16-bit word holding TTL and
	// protocol, which goes down by 0x0100: HC' = ~(~HC + ~m + m'), and
	// ~m + m' = 0xfeff.
	ip->ttl--;
	__u32 c = (~bpf_ntohs(ip->check) & 0xffff) + 0xfeff;
	c = (c & 0xffff) + (c >> 16);
	ip->check = bpf_htons(~c & 0xffff);

	__builtin_memcpy(eth->h_dest, dst, ETH_ALEN);
	__builtin_memcpy(eth->h_source, port->src, ETH_ALEN);

	count(STAT_FORWARDED, 1);
	count(STAT_FORWARDED_BYTES, sizeof(*eth) + tot_len);
	return XDP_REDIRECT;
}

// bricks' own licence; none of the helpers used is GPL-only.
char _license[] SEC("license") = "Apache-2.0";
