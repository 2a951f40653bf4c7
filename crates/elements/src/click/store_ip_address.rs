//! `StoreIPAddress`: writes an IPv4 address into packets, as Click's
//! `elements/ip/storeipaddress.cc`; into the IP header's source or
//! destination with the IP, TCP and UDP checksums updated incrementally
//! (RFC 1624).

use crate::ip::header::{be16, be32};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// The `StoreIPAddress` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StoreIPAddress",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores an IP address in packets",
    synopsis: "StoreIPAddress(OFFSET) or StoreIPAddress(ADDR, OFFSET)",
    description: "The one-argument form writes the destination IP address annotation into \
        the packet at byte OFFSET; when the annotation is zero the packet is not changed. \
        The two-argument form writes ADDR (which may be 0.0.0.0). No checksum is updated \
        for a numeric OFFSET.\n\n\
        OFFSET may be `src` or `dst`: the address then goes into the source or destination \
        field of the IP header (found at the network header annotation, else at the start \
        of the packet), and the IP checksum, and the TCP or UDP checksum of a first \
        fragment, are updated incrementally. A packet too short for OFFSET, or without an \
        IP header for `src`/`dst`, goes out of output 1, or is dropped and counted if it is \
        not connected.",
    ports: "one input, one or two outputs; agnostic (output 1 push)",
    keywords: &[
        Keyword {
            name: "ADDR",
            ty: "IPv4 address",
            default: Some("the destination address annotation"),
            doc: "address written; positional",
        },
        Keyword {
            name: "OFFSET",
            ty: "unsigned, src or dst",
            default: None,
            doc: "where it is written; positional",
        },
    ],
    counters: &[("drops", "packets out of range with output 1 unconnected")],
    example: "InfiniteSource(DATA \\<45000014 00000000 40110000 0a000001 0a000002>, LIMIT 1) \
        -> MarkIPHeader(0) \
        -> StoreIPAddress(192.0.2.9, src) -> Print -> Discard;",
    see_also: &["SetIPAddress", "SetIPChecksum", "IPAddrRewriter"],
};

/// Where the address goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offset {
    /// A byte offset into the packet.
    Byte(usize),
    /// The IP header field at this offset (12 source, 16 destination).
    Header(usize),
}

fn parse_offset(text: &str) -> Result<Offset, String> {
    match text.to_ascii_lowercase().as_str() {
        "src" => Ok(Offset::Header(12)),
        "dst" => Ok(Offset::Header(16)),
        _ => <usize as bricks_element::FromArg>::from_arg(text)
            .map(Offset::Byte)
            .map_err(|_| {
                format!("type mismatch: OFFSET requires integer, src or dst, found `{text}`")
            }),
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let bad = |e: String| ArgError::new(e);
    let (addr, offset) = match args.read::<String>("OFFSET")? {
        Some(off) => (args.read_p::<Ipv4Addr>("ADDR")?, off),
        None => {
            let first: String = args.read_mp("ADDR")?;
            match args.read_p::<String>("OFFSET")? {
                Some(off) => {
                    let a = first.parse::<Ipv4Addr>().map_err(|_| {
                        bad(format!(
                            "bad argument ADDR: expected IPv4 address, found `{first}`"
                        ))
                    })?;
                    (Some(a), off)
                }
                None => (None, first),
            }
        }
    };
    Ok(Box::new(StoreIPAddress {
        addr,
        offset: parse_offset(&offset).map_err(bad)?,
        has_reject: ports.noutputs() > 1,
        drops: 0,
    }))
}

/// Writes an address into packets.
#[derive(Debug)]
pub struct StoreIPAddress {
    /// ADDR, or `None` to use the destination annotation.
    addr: Option<Ipv4Addr>,
    offset: Offset,
    has_reject: bool,
    drops: u64,
}

impl StoreIPAddress {
    /// The output for `p` after storing, `None` to drop it.
    #[inline]
    fn store(&mut self, p: &mut Packet) -> Option<usize> {
        let addr = self.addr.unwrap_or(p.anno().dst_ip);
        let ok = match self.offset {
            Offset::Byte(off) => match off.checked_add(4) {
                Some(end) if end <= p.len() => {
                    if self.addr.is_some() || !addr.is_unspecified() {
                        p.data_mut()[off..end].copy_from_slice(&addr.octets());
                    }
                    true
                }
                _ => false,
            },
            Offset::Header(field) => store_header(p.l3_bytes_mut(), field, addr),
        };
        if ok {
            Some(0)
        } else if self.has_reject {
            Some(1)
        } else {
            self.drops += 1;
            None
        }
    }
}

/// Writes `addr` into the IP header field at `field` (12 source, 16
/// destination) and updates the IP checksum and, for the first fragment
/// of a TCP or UDP datagram, the transport checksum, which covers the
/// addresses through the pseudo-header. False when `ip` holds no IPv4
/// header.
fn store_header(ip: &mut [u8], field: usize, addr: Ipv4Addr) -> bool {
    if ip.len() < 20 {
        return false;
    }
    let hlen = usize::from(ip[0] & 0x0f) * 4;
    // As in Click, a header length beyond the packet still gets its
    // address and IP checksum; only the transport update needs the bytes.
    if hlen < 20 {
        return false;
    }
    let old = be32(ip, field);
    let new = u32::from(addr);
    ip[field..field + 4].copy_from_slice(&addr.octets());
    let sum = checksum::update32(be16(ip, 10), old, new);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let first_frag = be16(ip, 6) & 0x1fff == 0;
    let proto = ip[9];
    let l4 = ip.get_mut(hlen..).unwrap_or_default();
    match proto {
        6 if first_frag && l4.len() >= 20 => {
            let sum = checksum::update32(be16(l4, 16), old, new);
            l4[16..18].copy_from_slice(&sum.to_be_bytes());
        }
        17 if first_frag && l4.len() >= 8 && be16(l4, 6) != 0 => {
            // A computed zero is sent as all ones: zero means no
            // checksum (RFC 768).
            let sum = match checksum::update32(be16(l4, 6), old, new) {
                0 => 0xffff,
                s => s,
            };
            l4[6..8].copy_from_slice(&sum.to_be_bytes());
        }
        _ => {}
    }
    true
}

impl Element for StoreIPAddress {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.store(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.store(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{ip_checksum_ok, udp};
    use bricks_runtime::testing::{make_element, Harness};

    /// Click's test/ip/StoreIPAddress-01: a 20-byte packet of 0x99.
    fn nines() -> Packet {
        let mut p = Packet::from_slice(&[0x99; 20]).unwrap();
        p.set_network_header(0);
        p.anno_mut().dst_ip = Ipv4Addr::new(1, 0, 0, 2);
        p
    }

    fn run(args: &str) -> Vec<u8> {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(0, [nines()]);
        h.take_bytes(0).pop().unwrap()
    }

    #[test]
    fn click_test_cases() {
        let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(run("0")), format!("01000002{}", "99".repeat(16)));
        assert_eq!(
            hex(run("1.0.0.3, 4")),
            format!("99999999010000 03{}", "99".repeat(12)).replace(' ', "")
        );
        assert_eq!(
            hex(run("src")),
            "999999999999999999 99cbca0100000299999999".replace(' ', "")
        );
        assert_eq!(hex(run("dst")), "99999999999999999999cbca9999999901000002");
        assert_eq!(
            hex(run("1.0.0.4, dst")),
            "99999999999999999999cbc89999999901000004"
        );
    }

    #[test]
    fn keeps_ip_and_udp_checksums_valid() {
        let mut frame = udp(12);
        // A real UDP checksum over the pseudo-header.
        let sum = {
            let src = Ipv4Addr::new(10, 0, 0, 1);
            let dst = Ipv4Addr::new(10, 1, 2, 3);
            let ph = checksum::pseudo_header_v4(src, dst, bricks_wire::ip::IpProtocol::UDP, 20);
            !checksum::combine(&[ph, checksum::data(&frame[20..])])
        };
        frame[26..28].copy_from_slice(&sum.to_be_bytes());
        let mut h = Harness::push(&CLASS, "192.0.2.77, src", 1, 1);
        h.push_bytes(0, &frame);
        let out = h.take_bytes(0).pop().unwrap();
        assert_eq!(&out[12..16], &[192, 0, 2, 77]);
        assert!(ip_checksum_ok(&out));
        let ph = checksum::pseudo_header_v4(
            Ipv4Addr::new(192, 0, 2, 77),
            Ipv4Addr::new(10, 1, 2, 3),
            bricks_wire::ip::IpProtocol::UDP,
            20,
        );
        assert_eq!(checksum::combine(&[ph, checksum::data(&out[20..])]), 0xffff);
    }

    #[test]
    fn out_of_range_goes_to_output_1_or_is_dropped() {
        let mut h = Harness::push(&CLASS, "1.2.3.4, 18", 1, 2);
        h.push_bytes(0, &[0; 20]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 1);
        let mut h = Harness::push(&CLASS, "dst", 1, 1);
        h.push_bytes(0, &[0x45; 12]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
        // A zero annotation leaves the packet alone.
        let mut h = Harness::push(&CLASS, "OFFSET 0", 1, 1);
        h.push_bytes(0, &[7; 8]);
        assert_eq!(h.take_bytes(0), vec![vec![7; 8]]);
        assert!(make_element(&CLASS, "sideways", &PortInfo::default()).is_err());
        assert!(make_element(&CLASS, "1.2.3, 4", &PortInfo::default()).is_err());
    }
}
