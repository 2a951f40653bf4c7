// SPDX-License-Identifier: GPL-2.0
// `bricks gen --backend live`: a traffic generator inside the kernel.
//
// Not attached to any interface: user space runs it with BPF_PROG_RUN in
// live-frames mode (BPF_F_TEST_XDP_LIVE_FRAMES, Linux 5.18), which hands
// it the same frame over and over and transmits it out of the "ingress"
// interface whenever it returns XDP_TX. Each run writes one flow's
// addresses and ports into the frame and a probe header for `bricks
// sink` (the layout GenStamp writes), so that the frames leave at the
// speed of the kernel's transmit path, with no socket, ring or copy in
// between.
//
// The rate: with an interval set, a frame whose send time has not come
// is returned as XDP_DROP (the page goes back to the run's pool, nothing
// is sent) and the loop tries again; a sender that fell behind (the CPU
// taken by another task) catches up by at most SLACK_NS worth of frames
// and counts the rest as `behind`.
//
// The frame: Ethernet, IPv4 with no options, UDP, at least 60 bytes (the
// probe ends at byte 60), as user space built it; each frame gets its
// flow's headers and its probe.

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define MAX_FLOWS 65536
#define SLACK_NS 1000000ULL

struct state {
	__u64 interval_ns; // 0: as fast as the loop goes
	__u64 next_ns;     // send time of the next frame; 0: the first one's
	__u64 limit;       // frames to send, 0 for no limit
	__u64 sent;        // frames returned as XDP_TX
	__u64 behind;      // frames the rate allowed but were skipped
	__u32 flows;       // flows in bricks_flows, taken in turn
	__u32 id_base;     // the probes' flow ids are id_base | flow
	__u32 stamp;       // write probes
	__u32 pad;
};

// A flow's headers as they go on the wire: Ethernet, IPv4 (checksum
// included), UDP, 42 bytes. All of them are written into every frame:
// the kernel gives a run's pages back to it with whatever the receivers
// left in them (a router's new MACs and TTL), and only resets a frame's
// bounds.
#define HDR_LEN 42
struct flow {
	__u8 hdr[44];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct state);
} bricks_gen_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_FLOWS);
	__type(key, __u32);
	__type(value, struct flow);
} bricks_gen_flows SEC(".maps");

static __always_inline void put32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

SEC("xdp")
int bricks_gen_live(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct state *s = bpf_map_lookup_elem(&bricks_gen_state, &zero);
	if (!s || s->flows == 0)
		return XDP_ABORTED;
	if (s->limit && s->sent >= s->limit)
		return XDP_DROP;
	__u64 now = bpf_ktime_get_ns();
	if (s->interval_ns) {
		// The clock starts with the first frame: the run's set-up (its
		// page pool) takes milliseconds the rate should not count.
		if (s->next_ns == 0)
			s->next_ns = now;
		if (now < s->next_ns)
			return XDP_DROP;
		s->next_ns += s->interval_ns;
		if (s->next_ns + SLACK_NS < now) {
			s->behind += (now - SLACK_NS - s->next_ns) / s->interval_ns;
			s->next_ns = now - SLACK_NS;
		}
	}
	__u64 n = s->sent;
	__u32 f = n % s->flows;
	__u32 seq = n / s->flows;
	struct flow *fl = bpf_map_lookup_elem(&bricks_gen_flows, &f);
	__u8 *d = (void *)(long)ctx->data;
	__u8 *end = (void *)(long)ctx->data_end;
	if (!fl || d + 60 > end)
		return XDP_ABORTED;
	__builtin_memcpy(d, fl->hdr, HDR_LEN);
	if (s->stamp) {
		// GenStamp's probe: "BRK1", flow, sequence, the low 48 bits of
		// CLOCK_MONOTONIC in ns, big-endian. The UDP checksum is 0 (none).
		__u8 *p = d + 42;
		p[0] = 'B';
		p[1] = 'R';
		p[2] = 'K';
		p[3] = '1';
		put32(p + 4, s->id_base | f);
		put32(p + 8, seq);
		put32(p + 12, now >> 16);
		p[16] = now >> 8;
		p[17] = now;
	}
	s->sent = n + 1;
	return XDP_TX;
}

char LICENSE[] SEC("license") = "GPL";
