//! `IP6Encap`: puts a fixed IPv6 header (RFC 8200 section 3) in front of
//! each packet, with Click's arguments (`elements/ip6/ip6encap.cc`): the
//! outer header of an IPv6 tunnel (RFC 2473: IPv6 in IPv6, next header
//! 41; IPv4 in IPv6, next header 4).
//!
//! The header is built once; per packet the element moves the frame start
//! back 40 bytes, copies the header there and fills in the payload length
//! and (with DST_ANNO) the destination. IPv6 has no header checksum.

use crate::ip::ipencap::protocol;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};
use std::net::Ipv6Addr;

/// The `IP6Encap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IP6Encap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates packets in a static IPv6 header",
    synopsis: "IP6Encap(PROTO, SRC, DST [, KEYWORDS HLIM, CLASS])",
    description: "Prepends a 40-byte IPv6 header with next header PROTO, source SRC and \
        destination DST to every packet, and sets the packet's IPv6 destination annotation \
        to the header's destination and its network header annotation to the new header. \
        The payload length covers the rest of the packet; the flow label is 0; the traffic \
        class is CLASS, the hop limit HLIM. DST may be DST_ANNO: each packet's IPv6 \
        destination annotation becomes the destination, except that a packet whose \
        annotation is unset (`::`) keeps `::` there, as in Click. Useful for tunnels: \
        PROTO 41 (`ipv6`) carries IPv6 in IPv6 (RFC 2473), PROTO 4 (`ipip`) IPv4 in IPv6; \
        Strip(40) takes the header off again at the other end. Handlers `src` and `dst` \
        read and set SRC and DST while the router runs (`dst` reads DST_ANNO when that is \
        what it is). Difference from Click: the header goes into the buffer's headroom, \
        and a packet with less than 40 bytes of headroom is dropped and counted where \
        Click copies it into a larger buffer (bricks buffers have 128 bytes of headroom, \
        so only a packet that has already been encapsulated twice or more can lack it).",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "PROTO",
            ty: "IP protocol number 0 to 255 or name (icmp, igmp, ipip, tcp, udp, dccp, \
                ipv6, ipv6-route, ipv6-frag, gre, esp, ah, ipv6-icmp, ipv6-nonxt, \
                ipv6-opts, ospf, sctp)",
            default: None,
            doc: "the next header field; positional",
        },
        Keyword {
            name: "SRC",
            ty: "IPv6 address",
            default: None,
            doc: "source address; positional",
        },
        Keyword {
            name: "DST",
            ty: "IPv6 address or DST_ANNO",
            default: None,
            doc: "destination address; positional",
        },
        Keyword {
            name: "HLIM",
            ty: "integer 0 to 255",
            default: Some("250"),
            doc: "the hop limit",
        },
        Keyword {
            name: "CLASS",
            ty: "integer 0 to 255",
            default: Some("0"),
            doc: "the whole traffic class byte (DSCP and ECN bits)",
        },
    ],
    counters: &[(
        "no_headroom",
        "packets dropped for lack of 40 bytes of headroom",
    )],
    example: "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 00 00 00 0a 00 00 01 \
        0a 00 00 02>, LIMIT 1) -> IP6Encap(ipip, 2001:db8::1, 2001:db8:1::2, HLIM 64) \
        -> CheckIP6Header -> IP6Print(tunnel) -> Discard;",
    see_also: &["UDPIP6Encap", "IPEncap", "CheckIP6Header", "Strip"],
};

/// IP protocol names PROTO accepts: Click's `T_IP_PROTO` table and the
/// usual `/etc/protocols` names Click reads at user level, as IANA
/// numbers them.
const PROTOCOLS: &[(&str, u8)] = &[
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("tcp", 6),
    ("udp", 17),
    ("dccp", 33),
    ("ipv6", 41),
    ("ipv6-route", 43),
    ("ipv6-frag", 44),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("ipv6-icmp", 58),
    ("ipv6-nonxt", 59),
    ("ipv6-opts", 60),
    ("ospf", 89),
    ("sctp", 132),
];

/// An IP protocol by number or name.
struct Proto(u8);

impl FromArg for Proto {
    const TYPE: &'static str = "IP protocol (0 to 255, or a name such as ipv6)";
    fn from_arg(text: &str) -> Result<Self, String> {
        protocol(text, PROTOCOLS).map(Proto)
    }
}

/// DST: an address, or the packet's IPv6 destination annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dst6 {
    Anno,
    Addr(Ipv6Addr),
}

impl FromArg for Dst6 {
    const TYPE: &'static str = "IPv6 address or DST_ANNO";
    fn from_arg(text: &str) -> Result<Self, String> {
        if text == "DST_ANNO" {
            return Ok(Dst6::Anno);
        }
        Ipv6Addr::from_arg(text).map(Dst6::Addr)
    }
}

impl Dst6 {
    /// Writes the destination into the IPv6 header at the start of
    /// `header` (`::` for the annotation); true for the annotation.
    pub(crate) fn write_into(self, header: &mut [u8]) -> bool {
        let (anno, a) = match self {
            Dst6::Anno => (true, Ipv6Addr::UNSPECIFIED),
            Dst6::Addr(a) => (false, a),
        };
        header[24..40].copy_from_slice(&a.octets());
        anno
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let proto: Proto = args.read_mp("PROTO")?;
    let src: Ipv6Addr = args.read_mp("SRC")?;
    let dst: Dst6 = args.read_mp("DST")?;
    let hlim: u8 = args.read("HLIM")?.unwrap_or(250);
    let class: u8 = args.read("CLASS")?.unwrap_or(0);
    // Version 6, the traffic class, flow label 0 (Click has no argument
    // for it), next header and hop limit; the payload length is filled in
    // per packet.
    let mut header = [0u8; 40];
    header[..4].copy_from_slice(&(6u32 << 28 | u32::from(class) << 20).to_be_bytes());
    header[6] = proto.0;
    header[7] = hlim;
    header[8..24].copy_from_slice(&src.octets());
    let mut e = IP6Encap {
        header,
        dst_anno: false,
        no_headroom: 0,
    };
    e.set_dst(dst);
    Ok(Box::new(e))
}

/// Prepends a prebuilt IPv6 header.
#[derive(Debug)]
pub struct IP6Encap {
    /// Everything but the payload length (and, with DST_ANNO, the
    /// destination, zero here).
    header: [u8; 40],
    dst_anno: bool,
    no_headroom: u64,
}

impl IP6Encap {
    fn set_dst(&mut self, dst: Dst6) {
        self.dst_anno = dst.write_into(&mut self.header);
    }

    #[inline]
    fn encap(&mut self, batch: &mut Batch) {
        let mut no_headroom = 0u64;
        let (header, dst_anno) = (&self.header, self.dst_anno);
        batch.retain(|p| {
            // A buffer holds at most 2,176 bytes: the length fits.
            let plen = (p.len() as u16).to_be_bytes();
            let anno = p.anno().dst_ip6.octets();
            // As Click: an unset annotation leaves the header's `::`.
            let dst = if dst_anno && anno != [0; 16] {
                anno
            } else {
                super::header6::addr_at(header, 24)
            };
            let pushed = p.push_front_with(|h: &mut [u8; 40]| {
                *h = *header;
                h[4..6].copy_from_slice(&plen);
                h[24..40].copy_from_slice(&dst);
            });
            if pushed.is_err() {
                no_headroom += 1;
                return false;
            }
            p.set_network_header(0);
            p.anno_mut().dst_ip6 = Ipv6Addr::from(dst);
            true
        });
        self.no_headroom += no_headroom;
    }
}

impl Element for IP6Encap {
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
        match handler {
            "src" => Some(Ipv6Addr::from(super::header6::addr_at(&self.header, 8)).to_string()),
            "dst" if self.dst_anno => Some("DST_ANNO".into()),
            "dst" => Some(Ipv6Addr::from(super::header6::addr_at(&self.header, 24)).to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match handler {
            "src" => self.header[8..24].copy_from_slice(&Ipv6Addr::from_arg(value)?.octets()),
            "dst" => self.set_dst(Dst6::from_arg(value)?),
            _ => return Err(format!("no write handler `{handler}` (src, dst)")),
        }
        Ok(())
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        match handler {
            "src" => Some("1 SRC"),
            "dst" => Some("2 DST"),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("src"), Handler::rw("dst")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{ECHO_REQUEST, HOST_A, HOST_B};
    use bricks_element::{Packet, Processing};
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    /// 2001:db8:ff::1 and 2001:db8:ff::2, the tunnel's ends.
    const TUN_A: [u8; 16] = [
        0x20, 0x01, 0x0d, 0xb8, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    ];
    const TUN_B: [u8; 16] = [
        0x20, 0x01, 0x0d, 0xb8, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
    ];

    #[test]
    fn wraps_like_click() {
        // IPv6 in IPv6 (RFC 2473): the echo request behind a 40-byte
        // header, payload length 56, next header 41, hop limit 250.
        let mut h = Harness::push(&CLASS, "ipv6, 2001:db8:ff::1, 2001:db8:ff::2", 1, 1);
        let mut p = Packet::from_slice(&ECHO_REQUEST).unwrap();
        p.anno_mut().dst_ip6 = Ipv6Addr::from(HOST_B);
        h.push_packets(0, [p]);
        let out = h.take(0);
        let d = out[0].data();
        let want: [u8; 40] = [
            0x60, 0x00, 0x00, 0x00, 0x00, 0x38, 0x29, 0xfa, // v6, plen 56, next 41, hlim 250
            0x20, 0x01, 0x0d, 0xb8, 0x00, 0xff, 0x00, 0x00, // src
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, //
            0x20, 0x01, 0x0d, 0xb8, 0x00, 0xff, 0x00, 0x00, // dst
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
        ];
        assert_eq!(&d[..40], &want);
        assert_eq!(&d[40..], &ECHO_REQUEST[..]);
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(out[0].anno().dst_ip6, Ipv6Addr::from(TUN_B));
        assert_eq!(out[0].headroom(), HEADROOM - 40);
    }

    #[test]
    fn keywords_fill_the_header() {
        // Click's example, with a traffic class: IPv4 in IPv6, hop limit 20.
        let mut h = Harness::push(
            &CLASS,
            "4, 2000:10:1::2, 2000:20:1::2, HLIM 20, CLASS 0xb9",
            1,
            1,
        );
        h.push_bytes(0, &[0xaa; 3]);
        h.push_bytes(0, &[]);
        let out = h.take_bytes(0);
        let want: [u8; 40] = [
            0x6b, 0x90, 0x00, 0x00, 0x00, 0x03, 0x04, 0x14, // class 0xb9, plen 3
            0x20, 0x00, 0x00, 0x10, 0x00, 0x01, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, //
            0x20, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
        ];
        assert_eq!(&out[0][..40], &want);
        assert_eq!(&out[0][40..], &[0xaa; 3]);
        // An empty packet: a bare header, payload length 0.
        assert_eq!(out[1].len(), 40);
        assert_eq!(&out[1][4..6], &[0, 0]);
        for (proto, n) in [
            ("udp", 17),
            ("IPV6-ICMP", 58),
            ("gre", 47),
            ("0", 0),
            ("255", 255),
        ] {
            let mut h = Harness::push(&CLASS, &format!("{proto}, ::1, ::2"), 1, 1);
            h.push_bytes(0, &[]);
            assert_eq!(h.take_bytes(0)[0][6], n, "{proto}");
        }
    }

    #[test]
    fn dst_anno() {
        let mut h = Harness::push(&CLASS, "41, 2001:db8:ff::1, DST_ANNO", 1, 1);
        let mut p = Packet::from_slice(&ECHO_REQUEST).unwrap();
        p.anno_mut().dst_ip6 = Ipv6Addr::from(HOST_A);
        // Unset annotation: the destination stays `::`, as in Click.
        let unset = Packet::from_slice(&ECHO_REQUEST).unwrap();
        h.push_packets(0, [p, unset]);
        let out = h.take(0);
        assert_eq!(&out[0].data()[24..40], &HOST_A);
        assert_eq!(out[0].anno().dst_ip6, Ipv6Addr::from(HOST_A));
        assert_eq!(&out[1].data()[24..40], &[0; 16]);
        assert_eq!(out[1].anno().dst_ip6, Ipv6Addr::UNSPECIFIED);
        assert_eq!(h.read_handler("dst").unwrap(), "DST_ANNO");
    }

    #[test]
    fn no_headroom_and_pull() {
        let mut h = Harness::push(&CLASS, "41, ::1, ::2", 1, 1);
        let mut full = Packet::from_slice(&[1]).unwrap();
        full.push_front(HEADROOM - 39).unwrap();
        let mut fits = Packet::from_slice(&[1]).unwrap();
        fits.push_front(HEADROOM - 40).unwrap();
        h.push_packets(0, [full, fits]);
        let out = h.take(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].headroom(), 0);
        assert_eq!(h.stats().get("no_headroom"), Some(1));
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "41, ::1, ::2", ports);
        h.feed(0, [Packet::from_slice(&[1]).unwrap()]);
        let out = h.pull(0, 4);
        assert_eq!(out[0].len(), 41);
        assert_eq!(&out[0].data()[4..6], &[0, 1]);
    }

    #[test]
    fn handlers() {
        let mut h = Harness::push(&CLASS, "41, 2001:db8:ff::1, 2001:db8:ff::2", 1, 1);
        assert_eq!(h.read_handler("src").unwrap(), "2001:db8:ff::1");
        assert_eq!(h.read_handler("dst").unwrap(), "2001:db8:ff::2");
        h.write_handler("src", "2001:db8::1").unwrap();
        h.write_handler("dst", " 2001:db8:1::2\n").unwrap();
        assert_eq!(h.read_handler("src").unwrap(), "2001:db8::1");
        assert!(h.write_handler("dst", "10.0.0.1").is_err());
        assert!(h.write_handler("hlim", "1").is_err());
        h.push_bytes(0, &[]);
        let d = &h.take_bytes(0)[0];
        assert_eq!(&d[8..24], &HOST_A);
        assert_eq!(&d[24..40], &HOST_B);
        h.write_handler("dst", "DST_ANNO").unwrap();
        let mut p = Packet::from_slice(&[]).unwrap();
        p.anno_mut().dst_ip6 = Ipv6Addr::from(TUN_A);
        h.push_packets(0, [p]);
        assert_eq!(&h.take_bytes(0)[0][24..40], &TUN_A);
    }

    #[test]
    fn arguments_are_checked() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("41, ::1").unwrap_err().contains("DST"));
        assert!(make("41").unwrap_err().contains("SRC"));
        assert!(make("").unwrap_err().contains("PROTO"));
        assert!(make("256, ::1, ::2").unwrap_err().contains("PROTO"));
        assert!(make("-1, ::1, ::2").unwrap_err().contains("PROTO"));
        assert!(make("smtp, ::1, ::2").unwrap_err().contains("PROTO"));
        assert!(make("41, 10.0.0.1, ::2").unwrap_err().contains("SRC"));
        assert!(make("41, ::1, nowhere").unwrap_err().contains("DST"));
        assert!(make("41, ::1, ::2, HLIM 256").unwrap_err().contains("HLIM"));
        assert!(make("41, ::1, ::2, CLASS 256")
            .unwrap_err()
            .contains("CLASS"));
        assert!(make("41, ::1, ::2, TTL 1").is_err());
        assert!(make("41, ::1, ::2, ::3").is_err());
        assert!(make("PROTO ipv6, SRC ::1, DST DST_ANNO, HLIM 0, CLASS 255").is_ok());
    }
}
