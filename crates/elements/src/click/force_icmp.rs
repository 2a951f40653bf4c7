//! `ForceICMP`: sets the ICMP checksum of ICMP-in-IP packets, and
//! optionally their type and code (Click's `elements/local/forceicmp.cc`),
//! a fuzzing aid: the checksum over the ICMP message (RFC 792) is made
//! right whatever else the bytes say.

use super::force_udp::lengths;
use super::{SimpleAction, SimpleElement};
use crate::ip::icmperror;
use bricks_element::{
    click_random, ArgError, Args, Element, ElementClass, FromArg, Keyword, Manual, Packet, PortInfo,
};
use bricks_wire::checksum;

/// The `ForceICMP` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ForceICMP",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets ICMP checksum",
    synopsis: "ForceICMP([TYPE, CODE])",
    description: "Sets the ICMP checksum of each ICMP-in-IP packet, computed over the ICMP \
        message to the IP total length (RFC 792), as Click's ForceICMP does for fuzzing. \
        Half of the packets (by Click's random stream, which RandomSeed seeds) first get a \
        random type and code from 0 to 19; TYPE and CODE, when given, then set the type \
        and code of every packet. TYPE is a number from 0 to 255 or an ICMP type name \
        (`echo`, `unreachable`...); CODE a number or a code name of that type (`port` \
        for `unreachable`). The IP header is found at the network header annotation.\n\n\
        Packets without a network header annotation, with an IP header length below 20 or \
        past the packet, or whose total length runs past the packet or leaves no room for \
        an 8-byte ICMP header are dropped and counted (Click prints `ForceICMP: bad \
        lengths` for each). Click's code requires TYPE and CODE although its synopsis \
        shows them optional; bricks takes the synopsis at its word: without them the \
        random type and code are kept.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "TYPE",
            ty: "ICMP type (0 to 255 or name)",
            default: Some("none (keep)"),
            doc: "the type written into every packet; positional",
        },
        Keyword {
            name: "CODE",
            ty: "ICMP code (0 to 255 or name)",
            default: Some("none (keep)"),
            doc: "the code written into every packet; positional",
        },
    ],
    counters: &[("drops", "packets with bad lengths")],
    example: "RandomSource(40, LIMIT 8) -> ForceIP -> ForceICMP(unreachable, port) \
        -> Discard;",
    see_also: &["ForceIP", "ForceUDP", "ForceTCP", "ICMPError", "RandomSeed"],
};

/// A number 0 to 255 or one of `names`.
fn named(text: &str, names: &[(&str, u8)], what: &str) -> Result<u8, String> {
    let t = text.trim();
    if let Some(&(_, v)) = names.iter().find(|(n, _)| *n == t) {
        return Ok(v);
    }
    u8::from_arg(t).map_err(|_| format!("{what}: expected 0 to 255 or a name, found `{t}`"))
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let ty = args
        .read_p::<String>("TYPE")?
        .map(|t| named(&t, icmperror::TYPES, "TYPE"))
        .transpose()
        .map_err(ArgError::new)?;
    let code_text: Option<String> = args.read_p("CODE")?;
    let code = match (code_text, ty) {
        (None, _) => None,
        (Some(t), ty) => {
            let names = ty.map_or(&[][..], icmperror::code_names);
            Some(named(&t, names, "CODE").map_err(ArgError::new)?)
        }
    };
    Ok(Box::new(SimpleElement::new(ForceICMP {
        ty,
        code,
        count: 0,
    })))
}

/// Sets ICMP checksums.
#[derive(Debug)]
pub struct ForceICMP {
    ty: Option<u8>,
    code: Option<u8>,
    /// Packets forced (Click's `_count`).
    count: u64,
}

impl SimpleAction for ForceICMP {
    /// Forces one packet; false for one with bad lengths.
    fn simple_action(&mut self, p: &mut Packet) -> bool {
        let Some(ip) = p.network_header_mut() else {
            return false;
        };
        let Some((hlen, ilen)) = lengths(ip, 8) else {
            return false;
        };
        let icmp = &mut ip[hlen..ilen];
        if click_random::random_between(0, 1) == 1 {
            icmp[0] = click_random::random_between(0, 19) as u8;
            icmp[1] = click_random::random_between(0, 19) as u8;
        }
        if let Some(t) = self.ty {
            icmp[0] = t;
        }
        if let Some(c) = self.code {
            icmp[1] = c;
        }
        self.count += 1;
        icmp[2] = 0;
        icmp[3] = 0;
        let sum = !checksum::data(icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::force_ip::tests::sums_right;
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// A real ICMP echo request, 10.0.0.1 to 10.0.0.2, 8 bytes of data,
    /// its ICMP checksum wrong; 36 bytes in all.
    fn echo() -> Packet {
        let f = [
            0x45, 0x00, 0x00, 0x24, 0xc8, 0x50, 0x40, 0x00, 0x40, 0x01, 0x5e, 0x86, 10, 0, 0, 1,
            10, 0, 0, 2, 0x08, 0x00, 0x12, 0x34, 0x00, 0x07, 0x00, 0x01, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        let mut p = Packet::from_slice(&f).unwrap();
        p.set_network_header(0);
        p
    }

    #[test]
    fn type_code_and_checksum() {
        let mut h = Harness::push(&CLASS, "unreachable, port", 1, 1);
        for _ in 0..10 {
            h.push_packets(0, [echo()]);
        }
        for o in h.take_bytes(0) {
            assert_eq!(o[20..22], [3, 3]);
            assert!(sums_right(&o[20..]));
            assert_eq!(o[24..], echo().data()[24..]);
        }
    }

    #[test]
    fn without_type_some_packets_are_randomised() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for _ in 0..64 {
            h.push_packets(0, [echo()]);
        }
        let out = h.take_bytes(0);
        let changed = out.iter().filter(|o| o[20..22] != [8, 0]).count();
        // Half of 64 draws, give or take.
        assert!((10..=54).contains(&changed), "{changed}");
        for o in &out {
            assert!(o[20] < 20 && o[21] < 20 || o[20..22] == [8, 0]);
            assert!(sums_right(&o[20..]));
        }
    }

    #[test]
    fn bad_lengths_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "8, 0", 1, 1);
        let mut p = echo();
        p.data_mut()[3] = 27;
        h.push_packets(0, [p]);
        let mut p = echo();
        p.data_mut()[3] = 37;
        h.push_packets(0, [p]);
        h.push_bytes(0, echo().data());
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(3));
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("echo, 0").is_ok());
        assert!(m("timeexceeded, reassembly").is_ok());
        assert!(m("256, 0").is_err());
        assert!(m("echo, port").is_err());
        assert!(m("nosuch, 0").is_err());
    }
}
