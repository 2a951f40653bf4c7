// XDP_PASS for every frame. Attached where a driver only accepts redirected
// frames (ndo_xdp_xmit) while an XDP program is loaded: a veth whose peer
// receives XDP_TX/XDP_REDIRECT frames, some NICs' transmit side.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int bricks_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

// bricks' own licence; none of the helpers used is GPL-only.
char _license[] SEC("license") = "Apache-2.0";
