//! `UDPIPEncap`: puts fixed UDP (RFC 768) and IPv4 (RFC 791) headers in
//! front of each packet, with Click's arguments
//! (`elements/tcpudp/udpipencap.cc`): tunnels and generators of UDP
//! traffic.
//!
//! Per packet the element moves the frame start back 28 bytes, copies the
//! prebuilt headers there and fills in the lengths, the identification,
//! (with DST_ANNO) the destination and the checksums.

use super::transport::segment_checksum;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// The `UDPIPEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "UDPIPEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates packets in static UDP/IP headers",
    synopsis: "UDPIPEncap(SRC, SPORT, DST, DPORT [, CHECKSUM])",
    description: "Prepends a UDP header from SPORT to DPORT and a 20-byte IPv4 header from \
        SRC to DST to every packet, and sets the destination address annotation to the IP \
        destination and the network header annotation to the new IP header. DST may be \
        DST_ANNO: each packet's destination address annotation is used. The IP header has \
        TOS 0, TTL 250, no fragmentation flags, an identification counting up from 0 (per \
        worker) and its checksum; the UDP checksum is computed unless CHECKSUM is false (a \
        checksum that computes to zero is sent as 0xffff, RFC 768, where Click sends zero). \
        The headers go into the buffer's headroom; a packet with less than 28 bytes of \
        headroom is dropped and counted. Write handlers `src`, `sport`, `dst` and `dport` \
        change the arguments while the router runs (Click's read side of them is not \
        available: a read handler is a counter in bricks). Ports are numbers.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "SRC",
            ty: "IPv4 address",
            default: None,
            doc: "source address",
        },
        Keyword {
            name: "SPORT",
            ty: "UDP port: number or name (PortInfo, well-known)",
            default: None,
            doc: "source port",
        },
        Keyword {
            name: "DST",
            ty: "IPv4 address or DST_ANNO",
            default: None,
            doc: "destination address",
        },
        Keyword {
            name: "DPORT",
            ty: "UDP port: number or name (PortInfo, well-known)",
            default: None,
            doc: "destination port",
        },
        Keyword {
            name: "CHECKSUM",
            ty: "boolean",
            default: Some("true"),
            doc: "compute the UDP checksum",
        },
    ],
    counters: &[(
        "no_headroom",
        "packets dropped for lack of 28 bytes of headroom",
    )],
    example: "InfiniteSource(DATA \\<68 69>, LIMIT 1) -> UDPIPEncap(10.0.0.1, 1234, 10.0.0.2, 53) \
        -> CheckIPHeader -> CheckUDPHeader -> Discard;",
    see_also: &[
        "IPEncap",
        "SetUDPChecksum",
        "Strip",
        "CheckUDPHeader",
        "PortInfo",
    ],
};

/// DST: an address, or the packet's destination annotation.
enum Dst {
    Anno,
    Addr(Ipv4Addr),
}

impl FromArg for Dst {
    const TYPE: &'static str = "IPv4 address or DST_ANNO";
    fn from_arg(text: &str) -> Result<Self, String> {
        if text == "DST_ANNO" {
            return Ok(Dst::Anno);
        }
        Ipv4Addr::from_arg(text).map(Dst::Addr)
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(configure(args)?))
}

/// Reads `SRC, SPORT, DST, DPORT [, CHECKSUM]`, the arguments UDPIPEncap
/// and DynamicUDPIPEncap share.
pub(crate) fn configure(args: &mut Args<'_>) -> Result<UDPIPEncap, ArgError> {
    let src: Ipv4Addr = args.read_mp("SRC")?;
    let sport: String = args.read_mp("SPORT")?;
    let dst: Dst = args.read_mp("DST")?;
    let dport: String = args.read_mp("DPORT")?;
    let port = |key: &str, text: &str| {
        crate::standard::port_info::lookup(args, text, 17)
            .map_err(|why| ArgError::new(format!("bad argument {key}: {why}")))
    };
    let sport = port("SPORT", &sport)?;
    let dport = port("DPORT", &dport)?;
    let checksum = args.read_p("CHECKSUM")?.unwrap_or(true);
    let mut e = UDPIPEncap {
        header: [0; 28],
        dst_anno: false,
        checksum,
        id: 0,
        no_headroom: 0,
    };
    e.header[0] = 0x45;
    e.header[8] = 250;
    e.header[9] = 17;
    e.header[12..16].copy_from_slice(&src.octets());
    e.header[20..22].copy_from_slice(&sport.to_be_bytes());
    e.header[22..24].copy_from_slice(&dport.to_be_bytes());
    e.set_dst(dst);
    Ok(e)
}

/// Prepends prebuilt UDP/IP headers.
#[derive(Debug)]
pub struct UDPIPEncap {
    /// IP and UDP headers without lengths, identification, checksums
    /// (and the destination with DST_ANNO).
    header: [u8; 28],
    dst_anno: bool,
    checksum: bool,
    /// The next identification (per worker's instance).
    id: u16,
    no_headroom: u64,
}

impl UDPIPEncap {
    fn set_dst(&mut self, dst: Dst) {
        match dst {
            Dst::Anno => self.dst_anno = true,
            Dst::Addr(a) => {
                self.header[16..20].copy_from_slice(&a.octets());
                self.dst_anno = false;
            }
        }
    }

    #[inline]
    fn encap(&mut self, batch: &mut Batch) {
        let mut no_headroom = 0u64;
        let mut id = self.id;
        let (header, dst_anno, udp_sum) = (&self.header, self.dst_anno, self.checksum);
        batch.retain(|p| {
            if !encap_packet(p, header, dst_anno, udp_sum, id) {
                no_headroom += 1;
                return false;
            }
            id = id.wrapping_add(1);
            true
        });
        self.id = id;
        self.no_headroom += no_headroom;
    }

    /// Encapsulates one packet (DynamicUDPIPEncap, whose ports change
    /// between packets); false when it was refused and counted.
    #[inline]
    pub(crate) fn encap_one(&mut self, p: &mut Packet) -> bool {
        if !encap_packet(p, &self.header, self.dst_anno, self.checksum, self.id) {
            self.no_headroom += 1;
            return false;
        }
        self.id = self.id.wrapping_add(1);
        true
    }

    /// Adds one to both ports, wrapping (DynamicUDPIPEncap's INTERVAL).
    pub(crate) fn advance_ports(&mut self) {
        for at in [20, 22] {
            let port = u16::from_be_bytes([self.header[at], self.header[at + 1]]);
            self.header[at..at + 2].copy_from_slice(&port.wrapping_add(1).to_be_bytes());
        }
    }
}

/// Puts `header` (completed with the lengths, identification `id`, the
/// destination annotation with `dst_anno` and the checksums) in front of
/// `p`; false when `p` has no room for it.
#[inline(always)]
fn encap_packet(p: &mut Packet, header: &[u8; 28], dst_anno: bool, udp_sum: bool, id: u16) -> bool {
    if p.push_front(28).is_err() {
        return false;
    }
    // A buffer holds at most 2,176 bytes: the lengths fit.
    let len = p.len() as u16;
    let dst = p.anno().dst_ip.octets();
    let d = p.data_mut();
    let Some(h) = d.first_chunk_mut::<28>() else {
        return false;
    };
    *h = *header;
    h[2..4].copy_from_slice(&len.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    if dst_anno {
        h[16..20].copy_from_slice(&dst);
    }
    h[24..26].copy_from_slice(&(len - 20).to_be_bytes());
    if let Some(ip) = h.first_chunk_mut::<20>() {
        let sum = !checksum::header20(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
    }
    let dst = Ipv4Addr::new(d[16], d[17], d[18], d[19]);
    if udp_sum {
        let (ip, udp) = d.split_at_mut(20);
        let sum = match segment_checksum(ip, 20, udp) {
            0 => 0xffff,
            s => s,
        };
        udp[6..8].copy_from_slice(&sum.to_be_bytes());
    }
    p.set_network_header(0);
    p.anno_mut().dst_ip = dst;
    true
}

impl Element for UDPIPEncap {
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

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match handler {
            "src" => self.header[12..16].copy_from_slice(&Ipv4Addr::from_arg(value)?.octets()),
            "sport" => self.header[20..22].copy_from_slice(&u16::from_arg(value)?.to_be_bytes()),
            "dst" => self.set_dst(Dst::from_arg(value)?),
            "dport" => self.header[22..24].copy_from_slice(&u16::from_arg(value)?.to_be_bytes()),
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (src, sport, dst, dport)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkudpheader::Udp;
    use crate::ip::header::be16;
    use crate::ip::header::testing::ip_checksum_ok;
    use crate::ip::transport::HeaderCheck;
    use bricks_element::Packet;
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn wraps_like_click() {
        let mut h = Harness::push(&CLASS, "1.0.0.1, 1234, 2.0.0.2, 1234", 1, 1);
        h.push_bytes(0, b"hello");
        h.push_bytes(0, b"");
        let out = h.take(0);
        let d = out[0].data();
        assert_eq!(
            &d[..20],
            &[0x45, 0, 0, 33, 0, 0, 0, 0, 250, 17, d[10], d[11], 1, 0, 0, 1, 2, 0, 0, 2]
        );
        assert!(ip_checksum_ok(d));
        assert_eq!(&d[20..26], &[0x04, 0xd2, 0x04, 0xd2, 0, 13]);
        assert_eq!(&d[28..], b"hello");
        assert!(Udp::check(d).is_ok());
        assert_ne!(be16(d, 26), 0);
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(2, 0, 0, 2));
        assert_eq!(be16(out[1].data(), 4), 1);
        assert!(Udp::check(out[1].data()).is_ok());
    }

    #[test]
    fn dst_anno_no_checksum_and_handlers() {
        let mut h = Harness::push(&CLASS, "10.0.0.1, 5, DST_ANNO, 6, false", 1, 1);
        let mut p = Packet::from_slice(&[1, 2, 3]).unwrap();
        p.anno_mut().dst_ip = Ipv4Addr::new(10, 9, 8, 7);
        h.push_packets(0, [p]);
        let d = &h.take_bytes(0)[0];
        assert_eq!(&d[16..20], &[10, 9, 8, 7]);
        assert_eq!(be16(d, 26), 0);
        assert!(ip_checksum_ok(d));
        h.write_handler("dst", "192.0.2.1").unwrap();
        h.write_handler("sport", "53").unwrap();
        h.write_handler("dport", "54").unwrap();
        h.write_handler("src", "192.0.2.2").unwrap();
        assert!(h.write_handler("dport", "65536").is_err());
        assert!(h.write_handler("ttl", "1").is_err());
        h.push_bytes(0, &[]);
        let d = &h.take_bytes(0)[0];
        assert_eq!(&d[12..24], &[192, 0, 2, 2, 192, 0, 2, 1, 0, 53, 0, 54]);
        assert!(ip_checksum_ok(d));
    }

    #[test]
    fn no_headroom_and_arguments() {
        let mut h = Harness::push(&CLASS, "10.0.0.1, 5, 10.0.0.2, 6", 1, 1);
        let mut full = Packet::from_slice(&[1]).unwrap();
        full.push_front(HEADROOM - 27).unwrap();
        h.push_packets(0, [full]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("no_headroom"), Some(1));
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("10.0.0.1, 5, 10.0.0.2").unwrap_err().contains("DPORT"));
        assert!(make("10.0.0.1, 70000, 10.0.0.2, 1")
            .unwrap_err()
            .contains("SPORT"));
        assert!(make("10.0.0.1, 5, nowhere, 1").unwrap_err().contains("DST"));
        assert!(make("SRC 10.0.0.1, SPORT 5, DST DST_ANNO, DPORT 1, CHECKSUM false").is_ok());
    }
}
