//! `GenStamp`: writes a probe header (flow, sequence, transmit time) into
//! the UDP payload of each packet, for `TrafficSink` at the far end.

use super::probe::{locate_udp, Probe, ProbeRepr, UdpAt, HEADER_LEN};
use super::{monotonic_ns, FlowMap};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;
use bricks_wire::udp::UdpPacket;
use std::hash::{Hash, Hasher};
use std::net::Ipv6Addr;

/// The `GenStamp` class.
pub static CLASS: ElementClass = ElementClass {
    name: "GenStamp",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stamps a probe (flow, sequence, send time) into UDP payloads",
    synopsis: "GenStamp([OFFSET])",
    description: "Writes an 18-byte probe header OFFSET bytes into the UDP payload of each \
        IPv4 or IPv6 UDP packet: the magic `BRK1`, a flow id (u32), the packet's sequence \
        number within its flow (low 32 bits) and the transmit time (low 48 bits of \
        CLOCK_MONOTONIC in ns, read once per batch), all big-endian; then fixes the UDP \
        checksum (RFC 1624 incremental update; a zero IPv4 checksum, meaning none, stays \
        zero). A flow is a 5-tuple; flows are numbered 0, 1, 2... in the order this element \
        first sees them, and each has its own sequence starting at 0. Place it just before \
        ToDevice (after the Queue when there is one: it works pull too) so the stamp is as \
        late as possible. Packets that are not UDP, are fragments, or whose payload is too \
        short pass unchanged and are counted. The header fits the smallest Ethernet frame \
        (60 bytes: 18 bytes of payload after Ethernet, IPv4 and UDP). TrafficSink reads it.",
    ports: "one input, one output; push or pull (agnostic)",
    keywords: &[Keyword {
        name: "OFFSET",
        ty: "unsigned (even)",
        default: Some("0"),
        doc: "where the probe starts in the UDP payload, in bytes",
    }],
    counters: &[
        ("count", "packets seen"),
        ("stamped", "packets that got a probe"),
        (
            "skipped",
            "packets passed unchanged: not UDP, a fragment, or a payload too short",
        ),
        ("flows", "distinct 5-tuples numbered so far"),
        (
            "untracked",
            "packets of new flows past the 16,777,216th, passed unchanged",
        ),
    ],
    example: "WorkloadSource(FLOWS 16, LIMIT 100, STOP true) -> GenStamp -> Discard;",
    see_also: &["TrafficSink", "WorkloadSource"],
};

/// Flow ids are dense from 0; this many at most (WorkloadSource's FLOWS
/// limit too), so a replayed capture with endless flows cannot grow the
/// table without bound.
pub const MAX_FLOWS: usize = 1 << 24;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: usize = args.read_p("OFFSET")?.unwrap_or(0);
    if !offset.is_multiple_of(2) || offset > 2048 {
        // The checksum is updated over 16-bit words of the datagram, which
        // an odd offset would straddle.
        return Err(ArgError::new(format!(
            "OFFSET {offset}: expected an even number of bytes up to 2048"
        )));
    }
    Ok(Box::new(GenStamp {
        id_base: 0,
        offset,
        ids: FlowMap::default(),
        next_seq: Vec::new(),
        count: 0,
        stamped: 0,
        skipped: 0,
        untracked: 0,
    }))
}

/// A UDP 5-tuple held in integers, so that building, hashing and comparing
/// it are a few register operations (a byte-array key cost a stalled
/// store-to-load forward and a `memcmp` per packet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FlowKey {
    src: u128,
    dst: u128,
    /// IP version << 32 | source port << 16 | destination port.
    rest: u64,
}

impl Hash for FlowKey {
    #[inline]
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.src as u64 ^ (self.src >> 64) as u64);
        h.write_u64(self.dst as u64 ^ (self.dst >> 64) as u64);
        h.write_u64(self.rest);
    }
}

fn flow_key(frame: &[u8], at: &UdpAt) -> FlowKey {
    let be32 = |o: usize| u32::from_be_bytes(frame[o..o + 4].try_into().unwrap_or([0; 4]));
    let be128 = |o: usize| u128::from_be_bytes(frame[o..o + 16].try_into().unwrap_or([0; 16]));
    let ports = u64::from(be32(at.l4));
    if at.v6 {
        FlowKey {
            src: be128(at.l3 + 8),
            dst: be128(at.l3 + 24),
            rest: 6 << 32 | ports,
        }
    } else {
        FlowKey {
            src: u128::from(be32(at.l3 + 12)),
            dst: u128::from(be32(at.l3 + 16)),
            rest: 4 << 32 | ports,
        }
    }
}

/// Stamps probes.
#[derive(Debug)]
pub struct GenStamp {
    offset: usize,
    /// Added to every flow id: the worker number in the top 8 bits, so
    /// generators on several workers never share a flow id.
    id_base: u32,
    ids: FlowMap<FlowKey, u32>,
    /// Next sequence number of each flow, by flow id.
    next_seq: Vec<u64>,
    count: u64,
    stamped: u64,
    skipped: u64,
    untracked: u64,
}

impl GenStamp {
    fn flow_id(&mut self, key: FlowKey) -> Option<usize> {
        if let Some(&id) = self.ids.get(&key) {
            return Some(id as usize);
        }
        let id = self.next_seq.len();
        if id >= MAX_FLOWS {
            return None;
        }
        self.ids.insert(key, id as u32);
        self.next_seq.push(0);
        Some(id)
    }

    #[inline]
    fn stamp(&mut self, p: &mut Packet, now: u64) {
        let l3 = p.network_header_offset();
        let frame = p.data_mut();
        let Some(at) = locate_udp(frame, l3) else {
            self.skipped += 1;
            return;
        };
        let start = at.l4 + UdpPacket::<&[u8]>::HEADER_LEN + self.offset;
        if start + HEADER_LEN > at.end {
            self.skipped += 1;
            return;
        }
        let Some(id) = self.flow_id(flow_key(frame, &at)) else {
            self.untracked += 1;
            return;
        };
        let seq = self.next_seq[id];
        self.next_seq[id] = seq + 1;
        let field = start..start + HEADER_LEN;
        // A zero checksum over IPv4 means none (RFC 768), WorkloadSource's
        // case: nothing to sum.
        let csum = u16::from_be_bytes([frame[at.l4 + 6], frame[at.l4 + 7]]);
        let update = csum != 0 || at.v6;
        let old = if update {
            checksum::data(&frame[field.clone()])
        } else {
            0
        };
        ProbeRepr {
            flow: self.id_base | id as u32,
            seq,
            time: now,
        }
        .emit(&mut Probe::new_unchecked(&mut frame[field.clone()]));
        if update {
            let new = checksum::data(&frame[field]);
            fix_udp_checksum(frame, &at, old, new);
        }
        self.stamped += 1;
    }

    fn stamp_batch(&mut self, batch: &mut Batch) {
        // One clock read per batch: the batch leaves together.
        let now = monotonic_ns();
        self.count += batch.len() as u64;
        for p in batch.iter_mut() {
            self.stamp(p, now);
        }
    }
}

/// Brings the UDP checksum up to date after bytes summing to `old` were
/// replaced by bytes summing to `new` (RFC 1624: the sum is linear, so a
/// block's sum updates like a single word).
fn fix_udp_checksum(frame: &mut [u8], at: &UdpAt, old: u16, new: u16) {
    let mut udp = UdpPacket::new_unchecked(&mut frame[at.l4..at.end]);
    let c = udp.checksum();
    if c == 0 {
        if at.v6 {
            // Zero is not allowed over IPv6 (RFC 8200 §8.1): compute it.
            let (s, d) = v6_addrs(frame, at.l3);
            UdpPacket::new_unchecked(&mut frame[at.l4..at.end]).fill_checksum_v6(s, d);
        }
        // Over IPv4 zero means "no checksum" (RFC 768) and stays so.
        return;
    }
    let c = checksum::update(c, old, new);
    udp.set_checksum(if c == 0 { 0xffff } else { c });
}

fn v6_addrs(frame: &[u8], l3: usize) -> (Ipv6Addr, Ipv6Addr) {
    let a = |o: usize| {
        let b: [u8; 16] = frame[l3 + o..l3 + o + 16].try_into().unwrap_or([0; 16]);
        Ipv6Addr::from(b)
    };
    (a(8), a(24))
}

impl Element for GenStamp {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.id_base = ((cx.worker() & 0xff) as u32) << 24;
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.stamp_batch(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.stamp_batch(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("stamped", self.stamped);
        s.counter("skipped", self.skipped);
        s.counter("flows", self.next_seq.len() as u64);
        s.counter("untracked", self.untracked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;
    use bricks_wire::ipv4::Ipv4Packet;
    use std::net::Ipv4Addr;

    /// Ethernet + IPv4 + UDP from 10.0.0.1:1000 to 10.0.0.2:`dport`, with
    /// `payload` bytes of 0xaa and a correct UDP checksum if `csum`.
    fn udp4(dport: u16, payload: usize, csum: bool) -> Vec<u8> {
        let mut f = vec![0u8; 42 + payload];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((28 + payload) as u16).to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 0, 1]);
        f[30..34].copy_from_slice(&[10, 0, 0, 2]);
        let sum = !checksum::data(&f[14..34]);
        f[24..26].copy_from_slice(&sum.to_be_bytes());
        f[34..36].copy_from_slice(&1000u16.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f[38..40].copy_from_slice(&((8 + payload) as u16).to_be_bytes());
        f[42..].fill(0xaa);
        if csum {
            UdpPacket::new_unchecked(&mut f[34..])
                .fill_checksum_v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        }
        f
    }

    fn probe_of(f: &[u8], offset: usize) -> ProbeRepr {
        ProbeRepr::parse(&Probe::new_checked(&f[42 + offset..]).unwrap())
    }

    #[test]
    fn stamps_flows_and_sequences() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for dport in [1, 2, 1, 1, 2, 3] {
            h.push_bytes(0, &udp4(dport, 18, false));
        }
        let out = h.take_bytes(0);
        let probes: Vec<(u32, u64)> = out
            .iter()
            .map(|f| probe_of(f, 0))
            .map(|p| (p.flow, p.seq))
            .collect();
        assert_eq!(probes, [(0, 0), (1, 0), (0, 1), (0, 2), (1, 1), (2, 0)]);
        let age = super::super::probe::elapsed48(monotonic_ns(), probe_of(&out[0], 0).time);
        assert!(age.is_some_and(|a| a < 10_000_000_000), "{age:?}");
        for f in &out {
            // Zero meant "no checksum" and still does.
            assert_eq!(&f[40..42], &[0, 0]);
            assert!(Ipv4Packet::new_checked(&f[14..]).unwrap().verify_checksum());
        }
        let s = h.stats();
        assert_eq!(s.get("count"), Some(6));
        assert_eq!(s.get("stamped"), Some(6));
        assert_eq!(s.get("flows"), Some(3));
    }

    #[test]
    fn keeps_a_udp_checksum_valid() {
        let mut h = Harness::push(&CLASS, "OFFSET 4", 1, 1);
        for len in [22, 23, 100, 1000] {
            h.push_bytes(0, &udp4(7, len, true));
        }
        for f in h.take_bytes(0) {
            let udp = UdpPacket::new_checked(&f[34..]).unwrap();
            assert_ne!(udp.checksum(), 0);
            assert!(udp.verify_checksum_v4(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)));
            assert_eq!(&f[42..46], &[0xaa; 4]);
            assert_eq!(probe_of(&f, 4).flow, 0);
        }
    }

    #[test]
    fn computes_the_mandatory_ipv6_checksum() {
        let mut f = vec![0u8; 14 + 40 + 8 + 30];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[18..20].copy_from_slice(&38u16.to_be_bytes());
        f[20] = 17;
        f[21] = 64;
        f[22..38].copy_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        f[38..54].copy_from_slice(&"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets());
        f[54..56].copy_from_slice(&5u16.to_be_bytes());
        f[56..58].copy_from_slice(&6u16.to_be_bytes());
        f[58..60].copy_from_slice(&38u16.to_be_bytes());
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &f);
        let out = h.take_bytes(0);
        let udp = UdpPacket::new_checked(&out[0][54..]).unwrap();
        let (s, d) = v6_addrs(&out[0], 14);
        assert!(udp.verify_checksum_v6(s, d));
        assert_eq!(&out[0][62..66], b"BRK1");
    }

    #[test]
    fn passes_what_it_cannot_stamp() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let short = udp4(1, 17, false);
        let mut tcp = udp4(1, 40, false);
        tcp[23] = 6;
        let arp = {
            let mut a = vec![0u8; 60];
            a[12..14].copy_from_slice(&[0x08, 0x06]);
            a
        };
        for f in [&short, &tcp, &arp] {
            h.push_bytes(0, f);
        }
        assert_eq!(h.take_bytes(0), vec![short, tcp, arp]);
        assert_eq!(h.stats().get("skipped"), Some(3));
        assert_eq!(h.stats().get("stamped"), Some(0));
    }

    #[test]
    fn uses_the_network_header_annotation() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let f = udp4(9, 18, false);
        let mut p = Packet::from_slice(&f[14..]).unwrap();
        p.set_network_header(0);
        h.push_packets(0, [p]);
        let out = h.take_bytes(0);
        assert_eq!(&out[0][28..32], b"BRK1");
    }

    #[test]
    fn odd_offset_is_refused() {
        let e = bricks_runtime::testing::make_element(&CLASS, "OFFSET 3", &PortInfo::default())
            .unwrap_err();
        assert!(e.contains("even"), "{e}");
    }
}
