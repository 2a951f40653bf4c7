//! `IPEncap`: puts a fixed IPv4 header (RFC 791) in front of each packet,
//! with Click's arguments (`elements/ip/ipencap.cc`): IP-in-IP tunnels
//! (RFC 2003, protocol 4) between virtual routers (Egi et al. §3.2) are
//! what it is for.
//!
//! The header is built once; per packet the element moves the frame start
//! back 20 bytes, copies the header there and fills in the total length,
//! the identification and (with DST_ANNO) the destination, then the
//! checksum over the 20 bytes.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// The `IPEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates packets in a fixed IPv4 header",
    synopsis: "IPEncap(PROTO, SRC, DST [, KEYWORDS TOS, DSCP, ECT, CE, TTL, DF])",
    description: "Prepends a 20-byte IPv4 header with protocol PROTO, source SRC and \
        destination DST to every packet, and sets the packet's destination address annotation \
        to DST and its network header annotation to the new header. Most useful for IP-in-IP \
        (PROTO 4, or `ipip`; RFC 2003); StripIPHeader takes the header off again at the other \
        end. DST may be DST_ANNO: each packet's destination address annotation is used. The \
        total length covers the whole packet, the identification counts up from 0 packet by \
        packet (per worker), the checksum is filled in. TOS sets the whole TOS byte; DSCP, ECT \
        and CE set its parts instead. The header goes into the buffer's headroom; a packet \
        with less than 20 bytes of headroom is dropped and counted. Write handlers `src` and \
        `dst` change the addresses while the router runs.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "PROTO",
            ty: "IP protocol number or name (icmp, igmp, ipip, tcp, udp, ipv6, gre, esp, \
                ah, ospf, sctp)",
            default: None,
            doc: "the protocol field",
        },
        Keyword {
            name: "SRC",
            ty: "IPv4 address",
            default: None,
            doc: "source address",
        },
        Keyword {
            name: "DST",
            ty: "IPv4 address or DST_ANNO",
            default: None,
            doc: "destination address",
        },
        Keyword {
            name: "TOS",
            ty: "integer 0 to 255",
            default: Some("0"),
            doc: "the whole TOS byte (not with DSCP, ECT or CE)",
        },
        Keyword {
            name: "DSCP",
            ty: "integer 0 to 63",
            default: Some("0"),
            doc: "the Differentiated Services code point",
        },
        Keyword {
            name: "ECT",
            ty: "boolean or 2",
            default: Some("false"),
            doc: "ECN-capable transport: true sets the ECN bits to 1, `2` sets them to 2",
        },
        Keyword {
            name: "CE",
            ty: "boolean",
            default: Some("false"),
            doc: "ECN congestion experienced: the ECN bits are 3",
        },
        Keyword {
            name: "TTL",
            ty: "integer 0 to 255",
            default: Some("250"),
            doc: "time to live",
        },
        Keyword {
            name: "DF",
            ty: "boolean",
            default: Some("false"),
            doc: "set the Don't Fragment flag",
        },
    ],
    counters: &[(
        "no_headroom",
        "packets dropped for lack of 20 bytes of headroom",
    )],
    example:
        "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 00 00 00 0a 00 00 01 0a 00 00 02>, \
        LIMIT 1) -> IPEncap(ipip, 192.0.2.1, 198.51.100.7) -> StripIPHeader -> Discard;",
    see_also: &["StripIPHeader", "EtherEncap", "CheckIPHeader", "VRDemux"],
};

/// IP protocol names Click's PROTO accepts (its `NameInfo` table), as
/// IANA numbers them; IPsecEncap's PROTO takes them too.
pub(crate) const PROTOCOLS: &[(&str, u8)] = &[
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("tcp", 6),
    ("udp", 17),
    ("ipv6", 41),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("ospf", 89),
    ("sctp", 132),
];

/// `text` as an IP protocol: one of `names`, in any case, or a number from
/// 0 to 255. The PROTO argument of IPEncap, IP6Encap and IPsecEncap, each
/// with its own table of names.
pub(crate) fn protocol(text: &str, names: &[(&str, u8)]) -> Result<u8, String> {
    let lower = text.to_ascii_lowercase();
    if let Some(&(_, n)) = names.iter().find(|(name, _)| *name == lower) {
        return Ok(n);
    }
    u8::from_arg(text)
}

/// An IP protocol by number or name.
struct Proto(u8);

impl FromArg for Proto {
    const TYPE: &'static str = "IP protocol (0 to 255, or a name such as ipip)";
    fn from_arg(text: &str) -> Result<Self, String> {
        protocol(text, PROTOCOLS).map(Proto)
    }
}

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

/// ECT: a boolean (ECN bits 1) or `2` (ECN bits 2).
struct Ect(u8);

impl FromArg for Ect {
    const TYPE: &'static str = "boolean or 2";
    fn from_arg(text: &str) -> Result<Self, String> {
        if text == "2" {
            return Ok(Ect(2));
        }
        bool::from_arg(text).map(|b| Ect(u8::from(b)))
    }
}

/// A DSCP, 0 to 63.
struct Dscp(u8);

impl FromArg for Dscp {
    const TYPE: &'static str = "DSCP (0 to 63)";
    fn from_arg(text: &str) -> Result<Self, String> {
        match u8::from_arg(text) {
            Ok(v) if v <= 63 => Ok(Dscp(v)),
            _ => Err(format!("found `{text}`")),
        }
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let proto: Proto = args.read_mp("PROTO")?;
    let src: Ipv4Addr = args.read_mp("SRC")?;
    let dst: Option<Dst> = args.read_p("DST")?;
    // A bare `DST_ANNO` reads as a keyword with no value.
    let bare_anno = args.read::<String>("DST_ANNO")?;
    let dst = match (dst, bare_anno) {
        (Some(d), None) => d,
        (None, Some(v)) if v.is_empty() => Dst::Anno,
        (None, None) => return Err(ArgError::new("missing mandatory argument DST")),
        (None, Some(v)) => {
            return Err(ArgError::new(format!(
                "DST_ANNO takes no value, found `{v}`"
            )))
        }
        _ => {
            return Err(
                ArgError::new("DST given twice").with_help("give an address or DST_ANNO, once")
            )
        }
    };
    let tos: Option<u8> = args.read("TOS")?;
    let ttl: u8 = args.read("TTL")?.unwrap_or(250);
    let dscp: Option<Dscp> = args.read("DSCP")?;
    let ect: Ect = args.read("ECT")?.unwrap_or(Ect(0));
    let ce: bool = args.read("CE")?.unwrap_or(false);
    let df: bool = args.read("DF")?.unwrap_or(false);
    if tos.is_some() && dscp.is_some() {
        return Err(ArgError::new("cannot set both TOS and DSCP"));
    }
    if tos.is_some() && (ect.0 != 0 || ce) {
        return Err(ArgError::new("cannot set both TOS and ECN bits (ECT, CE)"));
    }
    if ect.0 != 0 && ce {
        return Err(ArgError::new("can set at most one ECN option (ECT or CE)"));
    }
    let tos = tos.unwrap_or_else(|| dscp.map_or(0, |d| d.0 << 2) | ect.0 | if ce { 3 } else { 0 });
    let mut header = [0u8; 20];
    header[0] = 0x45;
    header[1] = tos;
    if df {
        header[6] = 0x40;
    }
    header[8] = ttl;
    header[9] = proto.0;
    header[12..16].copy_from_slice(&src.octets());
    let dst_anno = match dst {
        Dst::Anno => true,
        Dst::Addr(a) => {
            header[16..20].copy_from_slice(&a.octets());
            false
        }
    };
    Ok(Box::new(IPEncap {
        header,
        dst_anno,
        id: 0,
        no_headroom: 0,
    }))
}

/// Prepends a prebuilt IPv4 header.
#[derive(Debug)]
pub struct IPEncap {
    /// Everything but length, identification, checksum (and the
    /// destination with DST_ANNO).
    header: [u8; 20],
    dst_anno: bool,
    /// The next identification (Click's `_id`, one per element; here one
    /// per worker's instance).
    id: u16,
    no_headroom: u64,
}

impl IPEncap {
    #[inline]
    fn encap(&mut self, batch: &mut Batch) {
        let mut no_headroom = 0u64;
        let mut id = self.id;
        let (header, dst_anno) = (&self.header, self.dst_anno);
        batch.retain(|p| {
            if p.push_front(20).is_err() {
                no_headroom += 1;
                return false;
            }
            // A buffer holds at most 2,176 bytes: the length fits.
            let len = p.len() as u16;
            let dst = p.anno().dst_ip.octets();
            let Some(h) = p.data_mut().first_chunk_mut::<20>() else {
                return false;
            };
            *h = *header;
            h[2..4].copy_from_slice(&len.to_be_bytes());
            h[4..6].copy_from_slice(&id.to_be_bytes());
            if dst_anno {
                h[16..20].copy_from_slice(&dst);
            }
            let sum = !checksum::header20(h);
            h[10..12].copy_from_slice(&sum.to_be_bytes());
            let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
            id = id.wrapping_add(1);
            p.set_network_header(0);
            p.anno_mut().dst_ip = dst;
            true
        });
        self.id = id;
        self.no_headroom += no_headroom;
    }
}

impl Element for IPEncap {
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
            "dst" => match Dst::from_arg(value)? {
                Dst::Anno => self.dst_anno = true,
                Dst::Addr(a) => {
                    self.header[16..20].copy_from_slice(&a.octets());
                    self.dst_anno = false;
                }
            },
            _ => return Err(format!("no write handler `{handler}` (src, dst)")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::be16;
    use crate::ip::header::testing::{ip_checksum_ok, udp};
    use bricks_element::{Packet, Processing};
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn wraps_like_click() {
        // Click's example: IP-in-IP from 18.26.4.24 to 140.247.60.147.
        let inner = udp(10);
        let mut h = Harness::push(&CLASS, "4, 18.26.4.24, 140.247.60.147", 1, 1);
        let mut p = Packet::from_slice(&inner).unwrap();
        p.anno_mut().dst_ip = Ipv4Addr::new(9, 9, 9, 9);
        h.push_packets(0, [p, Packet::from_slice(&inner).unwrap()]);
        let out = h.take(0);
        let total = (20 + inner.len()) as u16;
        let mut want = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 250, 4, 0, 0, 18, 26, 4, 24, 140, 247, 60, 147,
        ];
        want[2..4].copy_from_slice(&total.to_be_bytes());
        for (i, p) in out.iter().enumerate() {
            want[5] = i as u8;
            let mut w = want.clone();
            let sum = !checksum::data(&w);
            w[10..12].copy_from_slice(&sum.to_be_bytes());
            assert_eq!(&p.data()[..20], &w[..]);
            assert_eq!(&p.data()[20..], &inner[..]);
            assert!(ip_checksum_ok(p.data()));
            assert_eq!(p.network_header_offset(), Some(0));
            assert_eq!(p.anno().dst_ip, Ipv4Addr::new(140, 247, 60, 147));
            assert_eq!(p.headroom(), HEADROOM - 20);
        }
    }

    #[test]
    fn keywords_fill_the_header() {
        let mut h = Harness::push(
            &CLASS,
            "udp, 10.0.0.1, 10.0.0.2, DSCP 46, ECT 2, TTL 7, DF true",
            1,
            1,
        );
        h.push_bytes(0, &[1, 2, 3]);
        let d = &h.take_bytes(0)[0];
        assert_eq!(d[1], 46 << 2 | 2);
        assert_eq!((d[6], d[8], d[9]), (0x40, 7, 17));
        assert_eq!(be16(d, 2), 23);
        assert!(ip_checksum_ok(d));
        for (args, tos) in [
            ("TOS 0xff", 0xff),
            ("ECT true", 1),
            ("CE true", 3),
            ("DSCP 63", 252),
        ] {
            let mut h = Harness::push(&CLASS, &format!("gre, 1.1.1.1, 2.2.2.2, {args}"), 1, 1);
            h.push_bytes(0, &[]);
            let d = &h.take_bytes(0)[0];
            assert_eq!((d[1], d[9]), (tos, 47), "{args}");
        }
    }

    #[test]
    fn dst_anno_and_identification() {
        let mut h = Harness::push(&CLASS, "4, 10.0.0.1, DST_ANNO", 1, 1);
        let ps = (0..300u16).map(|i| {
            let mut p = Packet::from_slice(&[0xaa]).unwrap();
            p.anno_mut().dst_ip = Ipv4Addr::from(0x0a00_0000 + u32::from(i));
            p
        });
        h.push_packets(0, ps);
        let out = h.take(0);
        for (i, p) in out.iter().enumerate() {
            let d = p.data();
            assert_eq!(be16(d, 4), i as u16);
            assert_eq!(&d[16..20], &(0x0a00_0000 + i as u32).to_be_bytes());
            assert!(ip_checksum_ok(d));
            assert_eq!(p.anno().dst_ip, Ipv4Addr::from(0x0a00_0000 + i as u32));
        }
    }

    #[test]
    fn no_headroom_and_pull() {
        let mut h = Harness::push(&CLASS, "4, 10.0.0.1, 10.0.0.2", 1, 1);
        let mut full = Packet::from_slice(&[1]).unwrap();
        full.push_front(HEADROOM - 19).unwrap();
        h.push_packets(0, [full]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("no_headroom"), Some(1));
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "4, 10.0.0.1, 10.0.0.2", ports);
        h.feed(0, [Packet::from_slice(&[1]).unwrap()]);
        assert_eq!(h.pull(0, 4)[0].len(), 21);
    }

    #[test]
    fn write_handlers() {
        let mut h = Harness::push(&CLASS, "4, 10.0.0.1, 10.0.0.2", 1, 1);
        h.write_handler("src", "192.0.2.1").unwrap();
        h.write_handler("dst", "192.0.2.2").unwrap();
        assert!(h.write_handler("dst", "nowhere").is_err());
        assert!(h.write_handler("ttl", "1").is_err());
        h.push_bytes(0, &[]);
        let d = &h.take_bytes(0)[0];
        assert_eq!(&d[12..20], &[192, 0, 2, 1, 192, 0, 2, 2]);
        assert!(ip_checksum_ok(d));
    }

    #[test]
    fn arguments_are_checked() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("4, 10.0.0.1").unwrap_err().contains("DST"));
        assert!(make("256, 10.0.0.1, 10.0.0.2")
            .unwrap_err()
            .contains("PROTO"));
        assert!(make("smtp, 10.0.0.1, 10.0.0.2")
            .unwrap_err()
            .contains("PROTO"));
        assert!(make("4, 10.0.0.1, 10.0.0.2, TOS 1, DSCP 1")
            .unwrap_err()
            .contains("TOS"));
        assert!(make("4, 10.0.0.1, 10.0.0.2, TOS 1, CE true")
            .unwrap_err()
            .contains("ECN"));
        assert!(make("4, 10.0.0.1, 10.0.0.2, ECT 1, CE true")
            .unwrap_err()
            .contains("ECN"));
        assert!(make("4, 10.0.0.1, 10.0.0.2, ECT 3")
            .unwrap_err()
            .contains("ECT"));
        assert!(make("4, 10.0.0.1, 10.0.0.2, DSCP 64")
            .unwrap_err()
            .contains("DSCP"));
        assert!(make("4, 10.0.0.1, 10.0.0.2, TTL 256")
            .unwrap_err()
            .contains("TTL"));
        assert!(make("4, 10.0.0.1, 10.0.0.2, MTU 1").is_err());
        // As in Click: a fourth positional argument is one too many.
        assert!(make("4, 10.0.0.1, 10.0.0.2, DST_ANNO").is_err());
        assert!(make("4, 10.0.0.1, DST_ANNO").is_ok());
        assert!(make("PROTO IPIP, SRC 10.0.0.1, DST 10.0.0.2").is_ok());
        assert!(make("PROTO IPIP, SRC 10.0.0.1, DST DST_ANNO").is_ok());
    }
}
