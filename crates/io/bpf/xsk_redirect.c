// bricks' AF_XDP steering program: a frame received on queue q goes to the
// AF_XDP socket registered at index q of `bricks_xsks`; a frame of a queue
// with no socket goes on to the kernel's stack (the XDP_PASS default of
// bpf_redirect_map, Linux 5.3+), so opening one queue never blackholes the
// others.
//
// Built by crates/io/build.rs with `clang -O2 -g -target bpf -c`; loaded and
// attached by crates/io/src/xdp (aya). The map is BTF-defined, hence `-g`.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

// Queue ids up to 1023; an XSKMAP slot is one pointer.
#define BRICKS_MAX_QUEUES 1024

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, BRICKS_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} bricks_xsks SEC(".maps");

SEC("xdp")
int bricks_xsk_redirect(struct xdp_md *ctx)
{
	return bpf_redirect_map(&bricks_xsks, ctx->rx_queue_index, XDP_PASS);
}

// bricks' own licence; none of the helpers used is GPL-only.
char _license[] SEC("license") = "Apache-2.0";
