//! `CopyFlowID`: remembers the addresses and ports of the first packet on
//! one path and writes them into the packets of another, as Click's
//! experimental `elements/local/copyflowid.cc`: the bare ACKs of TCPAck
//! get the connection's identity from its outgoing segments.

use super::segment;
use super::{Copied, CopyRule, LearnAndCopy};
use crate::ip::header::{be16, be32};
use bricks_element::{ElementClass, Manual, Packet};
use std::net::Ipv4Addr;

/// The `CopyFlowID` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CopyFlowID",
    ports: "2/2",
    processing: "a/a",
    manual: &MANUAL,
    make: super::make_copy::<FlowRule>,
};

static MANUAL: Manual = Manual {
    summary: "sets TCP/UDP flow IDs",
    synopsis: "CopyFlowID()",
    description: "Packets on input 0 go out of output 0 unchanged; the first TCP or UDP \
        packet among them (IP header at the network header annotation, else at the \
        start) after the element starts or its `reset` handler is written sets the \
        remembered flow: source and destination addresses and ports. Packets on input 1 \
        go out of output 1 with the remembered flow written in (both checksums updated \
        incrementally, and the destination address annotation set to the destination).\n\n\
        Before a flow is remembered, packets on input 1 go on unchanged and are counted \
        (Click writes whatever its unset flow holds); packets on input 1 that hold no \
        TCP or UDP header are dropped and counted. The remembered flow is one for all \
        workers.",
    ports: "input 0, output 0: packets to learn from; input 1, output 1: packets to \
        change; each agnostic",
    keywords: &[],
    counters: &[
        (
            "unset",
            "packets on input 1 before any flow was learnt (unchanged)",
        ),
        (
            "drops",
            "packets on input 1 without a TCP or UDP header (dropped)",
        ),
    ],
    example: super::STACK_EXAMPLE,
    see_also: &["CopyTCPSeq", "TCPAck", "TCPConn"],
};

/// Source address and port, destination address and port.
type FlowId = (Ipv4Addr, u16, Ipv4Addr, u16);

/// The rule of CopyFlowID: the flow of the first TCP or UDP packet.
#[derive(Debug)]
pub struct FlowRule;

/// Copies a flow ID from one path to another.
pub type CopyFlowID = LearnAndCopy<FlowRule>;

/// The addresses and ports of a TCP or UDP packet (the first fragment
/// of one included): what Click's `IPFlowID(p)` reads.
fn flow_of(p: &Packet) -> Option<FlowId> {
    let ip = p.data().get(segment::ip_offset(p)..)?;
    let ihl = usize::from(*ip.first()? & 15) * 4;
    if ip.len() < 20
        || ip[0] >> 4 != 4
        || ihl < 20
        || ip.len() < ihl + 4
        || !matches!(ip[9], 6 | 17)
        || be16(ip, 6) & 0x1fff != 0
    {
        return None;
    }
    let addr = |at: usize| Ipv4Addr::new(ip[at], ip[at + 1], ip[at + 2], ip[at + 3]);
    Some((addr(12), be16(ip, ihl), addr(16), be16(ip, ihl + 2)))
}

impl CopyRule for FlowRule {
    type Value = FlowId;
    const CLASS: &'static str = "CopyFlowID";

    fn learn(p: &Packet, old: Option<FlowId>) -> Option<FlowId> {
        old.or_else(|| flow_of(p))
    }

    fn write(p: &mut Packet, value: Option<FlowId>) -> Copied {
        let Some((src, sport, dst, dport)) = value else {
            return Copied::Unset;
        };
        let at = segment::ip_offset(p);
        let d = p.data_mut();
        if d.len() >= at + 20 && d[at + 9] == 17 {
            return write_udp(p, at, (src, sport, dst, dport));
        }
        let Ok(s) = segment::locate(d, at) else {
            return Copied::Dropped;
        };
        s.set_addr(d, 12, src);
        s.set_addr(d, 16, dst);
        s.set_tcp16(d, 0, sport);
        s.set_tcp16(d, 2, dport);
        p.anno_mut().dst_ip = dst;
        Copied::Written
    }
}

/// The UDP case of `FlowRule::write`: addresses and ports, the checksum
/// updated unless it is 0 (none, RFC 768).
fn write_udp(p: &mut Packet, at: usize, (src, sport, dst, dport): FlowId) -> Copied {
    use bricks_wire::checksum::{update, update32};
    let d = p.data_mut();
    let ihl = usize::from(d[at] & 15) * 4;
    let u = at + ihl;
    if ihl < 20 || d.len() < u + 8 {
        return Copied::Dropped;
    }
    let mut ip_sum = be16(d, at + 10);
    let mut udp_sum = be16(d, u + 6);
    let has_sum = udp_sum != 0;
    for (off, new) in [(12, src), (16, dst)] {
        let (old, new) = (be32(d, at + off), u32::from(new));
        ip_sum = update32(ip_sum, old, new);
        udp_sum = update32(udp_sum, old, new);
        d[at + off..at + off + 4].copy_from_slice(&new.to_be_bytes());
    }
    for (off, new) in [(0, sport), (2, dport)] {
        udp_sum = update(udp_sum, be16(d, u + off), new);
        d[u + off..u + off + 2].copy_from_slice(&new.to_be_bytes());
    }
    d[at + 10..at + 12].copy_from_slice(&ip_sum.to_be_bytes());
    if has_sum {
        let s = if udp_sum == 0 { 0xffff } else { udp_sum };
        d[u + 6..u + 8].copy_from_slice(&s.to_be_bytes());
    }
    p.anno_mut().dst_ip = dst;
    Copied::Written
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, ip_ok, sum, tcp_ok, Rig};
    use super::super::segment::{ACK, PSH};
    use super::*;
    use bricks_element::Processing;

    fn rig() -> Rig {
        Rig::alone(&CLASS, "", &[Processing::Push; 2], &[Processing::Push; 2])
    }

    fn udp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
        let len = 28 + payload.len();
        let mut d = vec![0x45, 0, 0, len as u8, 0, 0, 0, 0, 64, 17, 0, 0];
        d.extend(src);
        d.extend(dst);
        let c = !(sum(&d) as u16);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d.extend(sport.to_be_bytes());
        d.extend(dport.to_be_bytes());
        d.extend(((8 + payload.len()) as u16).to_be_bytes());
        d.extend([0, 0]);
        d.extend(payload);
        let mut ph = d[12..20].to_vec();
        ph.extend([0, 17, 0, (8 + payload.len()) as u8]);
        ph.extend(&d[20..]);
        let c = !(sum(&ph) as u16);
        d[26..28].copy_from_slice(&c.to_be_bytes());
        d
    }

    fn udp_ok(d: &[u8]) -> bool {
        let mut ph = d[12..20].to_vec();
        ph.extend([0, 17, 0, (d.len() - 20) as u8]);
        ph.extend(&d[20..]);
        sum(&ph) == 0xffff
    }

    #[test]
    fn learns_from_the_first_and_writes_into_the_others() {
        let mut r = rig();
        let bare = datagram([0; 4], [0; 4], 0, 0, 0, 9, ACK, &[], &[]);
        // Nothing learnt yet: unchanged.
        r.push(1, &[&bare]);
        assert_eq!(r.take(1), vec![bare.clone()]);
        assert_eq!(r.counter("unset"), 1);
        let first = datagram([10, 0, 0, 1], [10, 0, 0, 2], 4000, 80, 1, 0, PSH, &[], b"a");
        let second = datagram([10, 0, 0, 7], [10, 0, 0, 8], 1, 2, 1, 0, PSH, &[], b"a");
        r.push(0, &[&first, &second]);
        assert_eq!(r.take(0), vec![first, second]);
        r.push(1, &[&bare]);
        let out = r.take(1);
        assert_eq!(
            out[0][12..24],
            [10, 0, 0, 1, 10, 0, 0, 2, 0x0f, 0xa0, 0, 80]
        );
        assert!(ip_ok(&out[0]) && tcp_ok(&out[0]));
        // UDP too, its checksum kept right.
        let u = udp([1, 1, 1, 1], 5, [2, 2, 2, 2], 6, b"data");
        r.push(1, &[&u]);
        let out = r.take(1);
        assert_eq!(
            out[0][12..24],
            [10, 0, 0, 1, 10, 0, 0, 2, 0x0f, 0xa0, 0, 80]
        );
        assert!(ip_ok(&out[0]) && udp_ok(&out[0]));
        // Not TCP or UDP, or too short: dropped.
        let mut icmp = bare.clone();
        icmp[9] = 1;
        r.push(1, &[&icmp, &bare[..24]]);
        assert!(r.take(1).is_empty());
        assert_eq!(r.counter("drops"), 2);
    }

    #[test]
    fn reset_learns_again() {
        let mut r = rig();
        let a = datagram([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, 1, 0, ACK, &[], &[]);
        let b = datagram([10, 0, 0, 3], [10, 0, 0, 4], 3, 4, 1, 0, ACK, &[], &[]);
        r.push(0, &[&a]);
        r.write("reset", "").unwrap();
        r.push(0, &[&b, &a]);
        r.push(1, &[&a]);
        assert_eq!(r.take(1)[0][12..24], b[12..24]);
    }
}
