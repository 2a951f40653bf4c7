// The "XDP_REDIRECT" comparison point of `bricks bench io`: every frame
// received on the interface this is attached to leaves through the
// interface in slot 0 of `bricks_tx_port`, untouched. It is the fastest a
// software forwarder on this machine can be, with no per-packet work.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} bricks_tx_port SEC(".maps");

SEC("xdp")
int bricks_devmap_redirect(struct xdp_md *ctx)
{
	return bpf_redirect_map(&bricks_tx_port, 0, XDP_ABORTED);
}

// bricks' own licence; none of the helpers used is GPL-only.
char _license[] SEC("license") = "Apache-2.0";
