//! `ForceTCP`: makes IP packets' payloads look like TCP (Click's
//! `elements/local/forcetcp.cc`), a fuzzing aid: a data offset that fits,
//! chosen flags and destination port, and the checksum over the
//! pseudo-header (RFC 9293 section 3.1) made right.

use super::force_udp::{lengths, transport_checksum};
use super::{SimpleAction, SimpleElement};
use crate::standard::port_info;
use bricks_element::{
    click_random, ArgError, Args, Element, ElementClass, FromArg, Keyword, Manual, Packet, PortInfo,
};
use bricks_wire::IpProtocol;

/// The `ForceTCP` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ForceTCP",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets TCP packet fields",
    synopsis: "ForceTCP([DPORT, RANDOM_DPORT, FLAGS])",
    description: "Makes the payload of each IP packet look like TCP, as Click's ForceTCP \
        does for fuzzing. A data offset below 5 words or past the segment's end becomes a \
        random number of bytes from 0 to the segment length less 21 (the segment length \
        when it is exactly 20), divided by four and kept to the field's four bits, as \
        Click's bit field keeps it. With DPORT not 0 the destination port becomes DPORT; \
        otherwise, with RANDOM_DPORT, of each eight packets the first two get port 80, the \
        fourth a random port below 1024 and the others keep theirs. With FLAGS not -1 the \
        flags byte becomes FLAGS. Then the checksum is computed over the pseudo-header with \
        the protocol the IP header names, and the TCP header and data. Random numbers come \
        from Click's random stream, which RandomSeed seeds. The IP header is found at the \
        network header annotation.\n\n\
        Packets without a network header annotation, with an IP header length below 20 or \
        past the packet, or whose total length runs past the packet or leaves no room for a \
        20-byte TCP header are dropped and counted (Click prints `ForceTCP: bad lengths` \
        for each). Unlike Click, bricks leaves IP options out of the pseudo-header (Click \
        sums them in).",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "DPORT",
            ty: "TCP port (number or name)",
            default: Some("0 (keep)"),
            doc: "destination port; positional",
        },
        Keyword {
            name: "RANDOM_DPORT",
            ty: "boolean",
            default: Some("false"),
            doc: "vary the destination port when DPORT is 0; positional",
        },
        Keyword {
            name: "FLAGS",
            ty: "integer, -1 to 255",
            default: Some("-1 (keep)"),
            doc: "the TCP flags byte; positional",
        },
    ],
    counters: &[("drops", "packets with bad lengths")],
    example: "RandomSource(60, LIMIT 8) -> ForceIP -> ForceTCP(80, FLAGS 2) -> Discard;",
    see_also: &["ForceIP", "ForceUDP", "ForceICMP", "RandomSeed"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let dport = match args.read_p::<String>("DPORT")? {
        None => 0,
        Some(t) => port_info::lookup(args, &t, IpProtocol::TCP.0)
            .map_err(|e| ArgError::new(format!("DPORT: {e}")))?,
    };
    let random = args.read_p("RANDOM_DPORT")?.unwrap_or(false);
    let flags = match args.read_p::<String>("FLAGS")?.as_deref().map(str::trim) {
        None | Some("-1") => None,
        // Click's IntArg: decimal, or hexadecimal with 0x.
        Some(t) => Some(
            u8::from_arg(t)
                .map_err(|_| ArgError::new(format!("FLAGS `{t}`: expected -1 to 255")))?,
        ),
    };
    Ok(Box::new(SimpleElement::new(ForceTCP {
        dport,
        random,
        flags,
        count: 0,
    })))
}

/// Sets TCP fields.
#[derive(Debug)]
pub struct ForceTCP {
    /// 0: not set.
    dport: u16,
    random: bool,
    flags: Option<u8>,
    /// Packets made TCP (Click's `_count`).
    count: u64,
}

impl SimpleAction for ForceTCP {
    /// Forces one packet; false for one with bad lengths.
    fn simple_action(&mut self, p: &mut Packet) -> bool {
        let Some(ip) = p.network_header_mut() else {
            return false;
        };
        let Some((hlen, ilen)) = lengths(ip, 20) else {
            return false;
        };
        let seg_len = ilen - hlen;
        let tcp = &mut ip[hlen..ilen];
        let off = usize::from(tcp[12] >> 4) * 4;
        if off < 20 || off > seg_len {
            let noff = if seg_len > 20 {
                click_random::random_between(0, (seg_len - 21) as u32) as usize
            } else {
                seg_len
            };
            tcp[12] = ((((noff >> 2) & 0x0f) as u8) << 4) | (tcp[12] & 0x0f);
        }
        if let Some(f) = self.flags {
            tcp[13] = f;
        }
        if self.dport > 0 {
            tcp[2..4].copy_from_slice(&self.dport.to_be_bytes());
        } else if self.random {
            match self.count & 7 {
                0 | 1 => tcp[2..4].copy_from_slice(&80u16.to_be_bytes()),
                3 => {
                    let port = (click_random::random() % 1024) as u16;
                    tcp[2..4].copy_from_slice(&port.to_be_bytes());
                }
                _ => {}
            }
        }
        self.count += 1;
        let sum = transport_checksum(ip, hlen, ilen, 16);
        ip[hlen + 16..hlen + 18].copy_from_slice(&sum.to_be_bytes());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::force_udp::tests::transport_sums_right;
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// A real TCP SYN, 10.0.0.1:40000 to 10.0.0.2:22, data offset 5, and
    /// 4 bytes of data, its checksum wrong.
    fn syn() -> Packet {
        let f = [
            0x45, 0x00, 0x00, 0x2c, 0x00, 0x01, 0x40, 0x00, 0x40, 0x06, 0x26, 0xc8, 10, 0, 0, 1,
            10, 0, 0, 2, 0x9c, 0x40, 0x00, 0x16, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xfa, 0xf0,
            0xde, 0xad, 0, 0, 1, 2, 3, 4,
        ];
        let mut p = Packet::from_slice(&f).unwrap();
        p.set_network_header(0);
        p
    }

    #[test]
    fn sets_port_flags_and_checksum() {
        let mut h = Harness::push(&CLASS, "ssh, FLAGS 0x12", 1, 1);
        h.push_packets(0, [syn()]);
        let o = &h.take_bytes(0)[0];
        assert_eq!(o[22..24], [0, 22]);
        assert_eq!(o[32], 0x50);
        assert_eq!(o[33], 0x12);
        assert!(transport_sums_right(o));
    }

    #[test]
    fn a_bad_data_offset_is_replaced() {
        let mut p = syn();
        p.data_mut()[32] = 0xf3; // 60 bytes: past the 24-byte segment.
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [p]);
        let o = &h.take_bytes(0)[0];
        // A random 0 to 3 bytes, divided by four: 0 words; low bits kept.
        assert_eq!(o[32], 0x03);
        assert!(transport_sums_right(o));
    }

    #[test]
    fn random_ports_follow_clicks_cycle() {
        let mut h = Harness::push(&CLASS, "0, true", 1, 1);
        for _ in 0..8 {
            h.push_packets(0, [syn()]);
        }
        let ports: Vec<u16> = h
            .take_bytes(0)
            .iter()
            .map(|o| u16::from_be_bytes([o[22], o[23]]))
            .collect();
        assert_eq!(ports[..3], [80, 80, 22]);
        assert!(ports[3] < 1024);
        assert_eq!(ports[4..], [22, 22, 22, 22]);
    }

    #[test]
    fn bad_lengths_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut short = syn();
        short.data_mut()[3] = 39; // 19 bytes of TCP.
        let mut long = syn();
        long.data_mut()[3] = 45;
        h.push_packets(0, [short, long]);
        h.push_bytes(0, syn().data()); // no annotation
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(3));
    }

    #[test]
    fn bad_arguments_are_refused() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("80, false, -1").is_ok());
        assert!(m("FLAGS 256").is_err());
        assert!(m("FLAGS -2").is_err());
        assert!(m("RANDOM_DPORT maybe").is_err());
    }
}
