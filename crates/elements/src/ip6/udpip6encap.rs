//! `UDPIP6Encap`: puts fixed UDP (RFC 768) and IPv6 (RFC 8200 section 3)
//! headers in front of each packet, with Click's arguments
//! (`elements/tcpudp/udpip6encap.cc`): tunnels and generators of UDP over
//! IPv6.
//!
//! Per packet the element moves the frame start back 48 bytes, copies the
//! prebuilt headers there and fills in the lengths, (with DST_ANNO) the
//! destination, and the UDP checksum, which IPv6 makes mandatory (RFC 8200
//! section 8.1).

use super::ip6encap::Dst6;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};
use bricks_wire::checksum;
use bricks_wire::IpProtocol;
use std::net::Ipv6Addr;

/// The `UDPIP6Encap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "UDPIP6Encap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates packets in static UDP/IPv6 headers",
    synopsis: "UDPIP6Encap(SRC, SPORT, DST, DPORT)",
    description: "Prepends a 40-byte IPv6 header from SRC to DST and a UDP header from \
        SPORT to DPORT to every packet, and sets the packet's IPv6 destination annotation \
        to the header's destination and its network header annotation to the IPv6 header. \
        The IPv6 header has traffic class 0, flow label 0, next header 17 and hop limit \
        255; its payload length and the UDP length cover the UDP header and the packet. \
        The UDP checksum over the IPv6 pseudo-header is always computed, since IPv6 makes \
        it mandatory. DST may be DST_ANNO: each packet's IPv6 destination annotation \
        becomes the destination. Strip(48) takes the headers off at the other end. Handlers \
        `src`, `sport`, `dst` and `dport` read and set the arguments while the router runs \
        (as in Click, `dst` reads `::` when DST is DST_ANNO). Differences from Click: a \
        checksum that computes to zero is sent as 0xffff (RFC 8200 section 8.1; Click sends \
        zero, which receivers must drop), and the sum never loses a carry (Click's 32-bit \
        accumulator can, for addresses with many high bits set); the headers go into the \
        buffer's headroom, and a packet with less than 48 bytes of headroom is dropped and \
        counted where Click copies it into a larger buffer (bricks buffers have 128 bytes \
        of headroom, so only an already encapsulated packet can lack it).",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "SRC",
            ty: "IPv6 address",
            default: None,
            doc: "source address; positional",
        },
        Keyword {
            name: "SPORT",
            ty: "UDP port: number or name (PortInfo, well-known)",
            default: None,
            doc: "source port; positional",
        },
        Keyword {
            name: "DST",
            ty: "IPv6 address or DST_ANNO",
            default: None,
            doc: "destination address; positional",
        },
        Keyword {
            name: "DPORT",
            ty: "UDP port: number or name (PortInfo, well-known)",
            default: None,
            doc: "destination port; positional",
        },
    ],
    counters: &[(
        "no_headroom",
        "packets dropped for lack of 48 bytes of headroom",
    )],
    example: "InfiniteSource(DATA \\<68 65 6c 6c 6f>, LIMIT 1) \
        -> UDPIP6Encap(2001:db8::1, 1234, 2001:db8:1::2, 53) -> CheckIP6Header \
        -> IP6Print(udp6) -> Discard;",
    see_also: &[
        "IP6Encap",
        "UDPIPEncap",
        "CheckIP6Header",
        "Strip",
        "PortInfo",
    ],
};

/// UDP's protocol number, for port names.
const UDP: u8 = 17;

/// A port given to a write handler: a number or a well-known name (the
/// PortInfo names of the configuration are for the arguments only).
fn handler_port(text: &str) -> Result<u16, String> {
    crate::standard::port_info::lookup(&Args::from_strs(&[]), text, UDP)
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let src: Ipv6Addr = args.read_mp("SRC")?;
    let sport: String = args.read_mp("SPORT")?;
    let dst: Dst6 = args.read_mp("DST")?;
    let dport: String = args.read_mp("DPORT")?;
    let port = |key: &str, text: &str| {
        crate::standard::port_info::lookup(args, text, UDP)
            .map_err(|why| ArgError::new(format!("bad argument {key}: {why}")))
    };
    let sport = port("SPORT", &sport)?;
    let dport = port("DPORT", &dport)?;
    let mut e = UDPIP6Encap {
        header: [0; 48],
        dst_anno: false,
        no_headroom: 0,
    };
    e.header[0] = 0x60;
    e.header[6] = UDP;
    e.header[7] = 255;
    e.header[8..24].copy_from_slice(&src.octets());
    e.header[40..42].copy_from_slice(&sport.to_be_bytes());
    e.header[42..44].copy_from_slice(&dport.to_be_bytes());
    e.set_dst(dst);
    Ok(Box::new(e))
}

/// Prepends prebuilt UDP/IPv6 headers.
#[derive(Debug)]
pub struct UDPIP6Encap {
    /// IPv6 and UDP headers without lengths and checksum (and, with
    /// DST_ANNO, the destination, zero here).
    header: [u8; 48],
    dst_anno: bool,
    no_headroom: u64,
}

impl UDPIP6Encap {
    fn set_dst(&mut self, dst: Dst6) {
        self.dst_anno = dst.write_into(&mut self.header);
    }

    fn port(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.header[at], self.header[at + 1]])
    }

    #[inline]
    fn encap(&mut self, batch: &mut Batch) {
        let mut no_headroom = 0u64;
        let (header, dst_anno) = (&self.header, self.dst_anno);
        let src = Ipv6Addr::from(super::header6::addr_at(header, 8));
        batch.retain(|p| {
            // A buffer holds at most 2,176 bytes: the lengths fit.
            let ulen = (p.len() + 8) as u16;
            let dst = if dst_anno {
                p.anno().dst_ip6
            } else {
                Ipv6Addr::from(super::header6::addr_at(header, 24))
            };
            let pushed = p.push_front_with(|h: &mut [u8; 48]| {
                *h = *header;
                h[4..6].copy_from_slice(&ulen.to_be_bytes());
                h[24..40].copy_from_slice(&dst.octets());
                h[44..46].copy_from_slice(&ulen.to_be_bytes());
            });
            if pushed.is_err() {
                no_headroom += 1;
                return false;
            }
            // The checksum field is zero in `header`; the sum covers the
            // UDP header and the payload after the IPv6 header.
            let pseudo = checksum::pseudo_header_v6(src, dst, IpProtocol::UDP, u32::from(ulen));
            let d = p.data_mut();
            let segment = d.get(40..).unwrap_or(&[]);
            // Zero would mean "no checksum", which IPv6 forbids: a
            // computed zero is sent as 0xffff (RFC 8200 section 8.1;
            // Click sends zero).
            let sum = match !checksum::combine(&[pseudo, checksum::data(segment)]) {
                0 => 0xffff,
                s => s,
            };
            if let Some(field) = d.get_mut(46..48) {
                field.copy_from_slice(&sum.to_be_bytes());
            }
            p.set_network_header(0);
            p.anno_mut().dst_ip6 = dst;
            true
        });
        self.no_headroom += no_headroom;
    }
}

impl Element for UDPIP6Encap {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.encap(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.encap(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("no_headroom", self.no_headroom);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        let addr = |at| Ipv6Addr::from(super::header6::addr_at(&self.header, at)).to_string();
        match handler {
            "src" => Some(addr(8)),
            "sport" => Some(self.port(40).to_string()),
            "dst" => Some(addr(24)),
            "dport" => Some(self.port(42).to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match handler {
            "src" => self.header[8..24].copy_from_slice(&Ipv6Addr::from_arg(value)?.octets()),
            "sport" => self.header[40..42].copy_from_slice(&handler_port(value)?.to_be_bytes()),
            "dst" => self.set_dst(Dst6::from_arg(value)?),
            "dport" => self.header[42..44].copy_from_slice(&handler_port(value)?.to_be_bytes()),
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (src, sport, dst, dport)"
                ))
            }
        }
        Ok(())
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        match handler {
            "src" => Some("0 SRC"),
            "sport" => Some("1 SPORT"),
            "dst" => Some("2 DST"),
            "dport" => Some("3 DPORT"),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("src"),
            Handler::rw("sport"),
            Handler::rw("dst"),
            Handler::rw("dport"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{HOST_A, HOST_B};
    use bricks_element::{Packet, Processing};
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::udp::UdpPacket;

    /// What the Linux kernel (6.x, transmit checksum offload off) sent for
    /// `sendto(b"hello")` from [2001:db8::1]:1234 to [2001:db8:1::2]:53
    /// with IPV6_UNICAST_HOPS 255 and auto flow labels off, captured
    /// with tcpdump on a veth pair between two network namespaces (the
    /// receiver's kernel took it: Udp6InCsumErrors 0). Click's
    /// UDPIP6Encap builds the same headers: flow 0, hop limit 255.
    const KERNEL_HELLO: [u8; 53] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x0d, 0x11, 0xff, // plen 13, UDP, hlim 255
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, // src 2001:db8::1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, //
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, // dst 2001:db8:1::2
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, //
        0x04, 0xd2, 0x00, 0x35, 0x00, 0x0d, 0x5b, 0x85, // 1234 -> 53, len 13, sum
        b'h', b'e', b'l', b'l', b'o',
    ];

    /// The same kernel's empty datagram.
    const KERNEL_EMPTY: [u8; 48] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x08, 0x11, 0xff, //
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, //
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, //
        0x04, 0xd2, 0x00, 0x35, 0x00, 0x08, 0x9f, 0x61,
    ];

    /// The same kernel's datagram with payload 9f 5d, whose checksum
    /// computes to zero (Python: `~sum & 0xffff == 0`): sent as 0xffff.
    const KERNEL_ZERO_SUM: [u8; 50] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x11, 0xff, //
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, //
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, //
        0x04, 0xd2, 0x00, 0x35, 0x00, 0x0a, 0xff, 0xff, //
        0x9f, 0x5d,
    ];

    fn udp_ok(d: &[u8]) -> bool {
        UdpPacket::new_checked(&d[40..]).is_ok_and(|u| {
            u.verify_checksum_v6(
                Ipv6Addr::from(super::super::header6::addr_at(d, 8)),
                Ipv6Addr::from(super::super::header6::addr_at(d, 24)),
            )
        })
    }

    #[test]
    fn builds_what_the_kernel_sends() {
        let mut h = Harness::push(&CLASS, "2001:db8::1, 1234, 2001:db8:1::2, 53", 1, 1);
        h.push_bytes(0, b"hello");
        h.push_bytes(0, b"");
        h.push_bytes(0, &[0x9f, 0x5d]);
        let out = h.take(0);
        assert_eq!(out[0].data(), &KERNEL_HELLO[..]);
        assert_eq!(out[1].data(), &KERNEL_EMPTY[..]);
        assert_eq!(out[2].data(), &KERNEL_ZERO_SUM[..]);
        for p in &out {
            assert!(udp_ok(p.data()));
            assert_eq!(p.network_header_offset(), Some(0));
            assert_eq!(p.anno().dst_ip6, Ipv6Addr::from(HOST_B));
            assert_eq!(p.headroom(), HEADROOM - 48);
        }
    }

    #[test]
    fn odd_and_long_payloads_check() {
        let mut h = Harness::push(&CLASS, "2001:db8::1, 40000, 2001:db8:1::2, domain", 1, 1);
        for n in [1usize, 3, 77, 1500, 2000] {
            let payload: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            h.push_bytes(0, &payload);
        }
        for d in h.take_bytes(0) {
            let plen = (d.len() - 40) as u16;
            assert_eq!(&d[4..6], &plen.to_be_bytes());
            assert_eq!(&d[44..46], &plen.to_be_bytes());
            assert_eq!(&d[40..44], &[0x9c, 0x40, 0x00, 0x35]);
            assert!(udp_ok(&d), "{} bytes", d.len());
        }
    }

    #[test]
    fn every_length_up_to_a_full_buffer() {
        let mut h = Harness::push(&CLASS, "2001:db8::1, 1234, 2001:db8:1::2, 53", 1, 1);
        let big: Vec<u8> = (0..bricks_packet::MAX_FRAME)
            .map(|i| (i * 13) as u8)
            .collect();
        for n in 0..=big.len() {
            h.push_bytes(0, &big[..n]);
            let d = &h.take_bytes(0)[0];
            assert_eq!(d.len(), n + 48);
            assert!(udp_ok(d), "{n} bytes");
        }
    }

    #[test]
    fn dst_anno_and_handlers() {
        let mut h = Harness::push(&CLASS, "2001:db8::1, 5, DST_ANNO, 6", 1, 1);
        assert_eq!(h.read_handler("dst").unwrap(), "::");
        let mut p = Packet::from_slice(&[1, 2, 3]).unwrap();
        p.anno_mut().dst_ip6 = Ipv6Addr::from(HOST_B);
        h.push_packets(0, [p]);
        let d = &h.take_bytes(0)[0];
        assert_eq!(&d[24..40], &HOST_B);
        assert!(udp_ok(d));
        h.write_handler("dst", "2001:db8::1").unwrap();
        h.write_handler("sport", "53").unwrap();
        h.write_handler("dport", "domain").unwrap();
        h.write_handler("src", "2001:db8:1::2").unwrap();
        assert!(h.write_handler("dport", "65536").is_err());
        assert!(h.write_handler("src", "10.0.0.1").is_err());
        assert!(h.write_handler("ttl", "1").is_err());
        for (name, v) in [
            ("src", "2001:db8:1::2"),
            ("sport", "53"),
            ("dst", "2001:db8::1"),
            ("dport", "53"),
        ] {
            assert_eq!(h.read_handler(name).unwrap(), v);
        }
        h.push_bytes(0, &[]);
        let d = &h.take_bytes(0)[0];
        assert_eq!(&d[8..24], &HOST_B);
        assert_eq!(&d[24..40], &HOST_A);
        assert_eq!(&d[40..44], &[0, 53, 0, 53]);
        assert!(udp_ok(d));
    }

    #[test]
    fn no_headroom_pull_and_arguments() {
        let mut h = Harness::push(&CLASS, "::1, 5, ::2, 6", 1, 1);
        let mut full = Packet::from_slice(&[1]).unwrap();
        full.push_front(HEADROOM - 47).unwrap();
        h.push_packets(0, [full]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("no_headroom"), Some(1));
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "::1, 5, ::2, 6", ports);
        h.feed(0, [Packet::from_slice(&[1]).unwrap()]);
        let out = h.pull(0, 4);
        assert_eq!(out[0].len(), 49);
        assert!(udp_ok(out[0].data()));
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("::1, 5, ::2").unwrap_err().contains("DPORT"));
        assert!(make("::1, 70000, ::2, 1").unwrap_err().contains("SPORT"));
        assert!(make("::1, nosuchport, ::2, 1")
            .unwrap_err()
            .contains("SPORT"));
        assert!(make("::1, 5, 10.0.0.2, 1").unwrap_err().contains("DST"));
        assert!(make("10.0.0.1, 5, ::2, 1").unwrap_err().contains("SRC"));
        // Click's UDPIP6Encap has no CHECKSUM argument: IPv6 needs it.
        assert!(make("::1, 5, ::2, 1, false").is_err());
        assert!(make("SRC ::1, SPORT 5, DST DST_ANNO, DPORT 1").is_ok());
    }
}
