//! `IPMirror`: swaps a packet's IP source and destination, and for TCP
//! and UDP its ports (TCP: also its sequence and acknowledgement numbers),
//! as Click's `elements/ip/ipmirror.cc` does: the reply skeleton of a
//! responder or a reflector.

use super::header::be16;
use super::transport::header_len;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};
use std::net::Ipv4Addr;

/// The `IPMirror` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPMirror",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "swaps IP source and destination",
    synopsis: "IPMirror([DST_ANNO])",
    description: "Swaps the source and destination addresses of each packet's IPv4 header \
        (at the network header annotation, else at the start of the packet). For TCP and \
        UDP, in the first fragment, the ports are swapped too, and for TCP the sequence and \
        acknowledgement numbers. No checksum changes: swapping 16-bit words leaves a \
        ones'-complement sum as it was. With DST_ANNO true (the default) the destination \
        address annotation is set to the new destination. Packets too short for what \
        would be swapped keep those fields: the addresses need a 20-byte header, the ports \
        8 bytes of transport header, TCP's numbers 12 (Click checks 8 for both).",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "DST_ANNO",
        ty: "bool",
        default: Some("true"),
        doc: "set the destination address annotation to the new destination",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 1, LENGTH 28) -> IPMirror -> Discard;",
    see_also: &["ICMPPingResponder", "SetIPAddress"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let dst_anno: bool = args.read_p("DST_ANNO")?.unwrap_or(true);
    Ok(Box::new(IPMirror { dst_anno }))
}

/// Swaps addresses (and ports, and TCP's sequence numbers).
#[derive(Debug)]
pub struct IPMirror {
    dst_anno: bool,
}

/// Swaps `b[x..x + n]` with `b[y..y + n]`; the ranges do not overlap.
#[inline(always)]
fn swap_fields(b: &mut [u8], x: usize, y: usize, n: usize) {
    for i in 0..n {
        b.swap(x + i, y + i);
    }
}

impl IPMirror {
    #[inline]
    fn mirror(&self, p: &mut Packet) {
        let ip = p.l3_bytes_mut();
        if ip.len() < 20 {
            return;
        }
        swap_fields(ip, 12, 16, 4);
        let new_dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
        let proto = ip[9];
        // Only the first fragment (offset 0) carries the transport header.
        let first_fragment = be16(ip, 6) & 0x1fff == 0;
        if (proto == 6 || proto == 17) && first_fragment {
            if let Some(hlen) = header_len(ip) {
                let l4 = &mut ip[hlen..];
                if l4.len() >= 8 {
                    swap_fields(l4, 0, 2, 2);
                }
                if proto == 6 && l4.len() >= 12 {
                    swap_fields(l4, 4, 8, 4);
                }
            }
        }
        if self.dst_anno {
            p.anno_mut().dst_ip = new_dst;
        }
    }
}

impl Element for IPMirror {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        for p in batch.iter_mut() {
            self.mirror(p);
        }
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| {
            for p in b.iter_mut() {
                self.mirror(p);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{ip_checksum_ok, udp};
    use bricks_runtime::testing::Harness;

    /// A TCP segment 10.0.0.1:1000 -> 10.0.0.2:80, seq 1, ack 2.
    fn tcp() -> Vec<u8> {
        let mut f = vec![
            0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        f.extend_from_slice(&[0x03, 0xe8, 0, 80, 0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x10, 0, 0]);
        f.extend_from_slice(&[0, 0, 0, 0]);
        crate::ip::header::testing::fix_ip_checksum(&mut f[..20]);
        f
    }

    fn run(conf: &str, frame: &[u8]) -> Packet {
        let mut h = Harness::push(&CLASS, conf, 1, 1);
        h.push_packets(0, [Packet::from_slice(frame).unwrap()]);
        h.take(0).pop().unwrap()
    }

    #[test]
    fn tcp_addresses_ports_and_numbers_swap_and_checksums_hold() {
        let p = run("", &tcp());
        let d = p.data();
        assert_eq!(&d[12..20], &[10, 0, 0, 2, 10, 0, 0, 1]);
        assert_eq!(&d[20..24], &[0, 80, 0x03, 0xe8]);
        assert_eq!(&d[24..32], &[0, 0, 0, 2, 0, 0, 0, 1]);
        assert!(ip_checksum_ok(&d[..20]));
        assert_eq!(p.anno().dst_ip, Ipv4Addr::new(10, 0, 0, 1));
    }

    #[test]
    fn udp_ports_swap_and_the_annotation_can_stay() {
        let frame = udp(4);
        let (sport, dport) = ([frame[20], frame[21]], [frame[22], frame[23]]);
        let p = run("false", &frame);
        let d = p.data();
        assert_eq!(&d[12..16], &frame[16..20]);
        assert_eq!(&d[16..20], &frame[12..16]);
        assert_eq!([d[20], d[21]], dport);
        assert_eq!([d[22], d[23]], sport);
        assert_eq!(p.anno().dst_ip, Ipv4Addr::UNSPECIFIED);
    }

    #[test]
    fn later_fragments_and_short_packets_keep_their_ports() {
        let mut frag = tcp();
        frag[6] = 0x00;
        frag[7] = 0x10; // offset 16 bytes: not the first fragment
        let p = run("", &frag);
        assert_eq!(&p.data()[20..24], &frag[20..24]);
        let short = &tcp()[..26];
        let p = run("", short);
        assert_eq!(&p.data()[12..20], &[10, 0, 0, 2, 10, 0, 0, 1]);
        assert_eq!(&p.data()[20..24], &short[20..24]);
        assert_eq!(run("", &[0x45; 12]).data(), &[0x45; 12]);
    }
}
