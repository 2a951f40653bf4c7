//! `IPInputCombo`: the input path of Click's IP router in one element,
//! `Paint(COLOR) -> Strip(14) -> CheckIPHeader(...) -> GetIPAddress(16)`,
//! as Click's `elements/ip/ipinputcombo.cc` composes it. The header check
//! is bricks' CheckIPHeader itself (RFC 1812 section 5.2.2), run on each
//! packet after the paint and the strip.

use super::checkipheader::{self, CheckIPHeader};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};

/// The `IPInputCombo` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPInputCombo",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "input combo for IP routing",
    synopsis: "IPInputCombo(COLOR [, BADSRC, KEYWORDS INTERFACES, BADSRC, GOODDST])",
    description: "The common tasks of an IP router's input path in one element; the \
        same as\n\n\
        \x20 elementclass IPInputCombo { $COLOR, $BADSRC |\n\
        \x20   input -> Paint($COLOR) -> Strip(14) -> CheckIPHeader($BADSRC)\n\
        \x20     -> GetIPAddress(16) -> output;\n\
        \x20 }\n\n\
        Each packet gets paint annotation COLOR, loses its 14-byte Ethernet header, has its \
        IPv4 header checked by CheckIPHeader's rules (the INTERFACES, BADSRC and GOODDST \
        keywords, and the deprecated positional BADSRC list, are CheckIPHeader's), is \
        trimmed to the IP length and gets its destination address annotation set. Invalid \
        packets are dropped and counted by CheckIPHeader's reasons. CheckIPHeader's bricks \
        keywords (MARTIANS, BADDST, CHECKSUM) are accepted too.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "COLOR",
            ty: "integer 0 to 255",
            default: None,
            doc: "the paint annotation to set",
        },
        Keyword {
            name: "INTERFACES",
            ty: "space-separated IPv4 prefixes (ADDR/LEN)",
            default: None,
            doc: "as CheckIPHeader's",
        },
        Keyword {
            name: "BADSRC",
            ty: "space-separated IPv4 addresses",
            default: Some("empty"),
            doc: "as CheckIPHeader's",
        },
        Keyword {
            name: "GOODDST",
            ty: "space-separated IPv4 addresses",
            default: Some("empty"),
            doc: "as CheckIPHeader's",
        },
    ],
    counters: &[
        ("drops", "invalid packets, whatever the reason"),
        (
            "truncated",
            "shorter than 14 + 20 bytes or than the IP total length",
        ),
        ("bad_version", "version field not 4"),
        ("bad_header_length", "header length below 5 words"),
        ("bad_length", "total length below the header length"),
        ("bad_checksum", "header checksum wrong"),
        ("bad_source", "source address not a valid unicast address"),
        ("martian_source", "MARTIANS: as CheckIPHeader's"),
        ("martian_destination", "MARTIANS: as CheckIPHeader's"),
        ("bad_destination", "destination listed in BADDST"),
    ],
    example: "InfiniteSource(DATA \\<00 00 c0 ae 67 ef 00 20 6f 14 54 c2 08 00 \
        45 00 00 14 00 00 00 00 40 11 66 d7 0a 00 00 01 0a 00 00 02>, LIMIT 1) \
        -> IPInputCombo(1, INTERFACES 10.0.0.2/24) -> Discard;",
    see_also: &[
        "CheckIPHeader",
        "Paint",
        "Strip",
        "GetIPAddress",
        "IPOutputCombo",
    ],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let color: u8 = args.read_mp("COLOR")?;
    let check = checkipheader::configure(args, false)?;
    Ok(Box::new(IPInputCombo { color, check }))
}

/// Paint, Strip(14), CheckIPHeader and GetIPAddress(16) in one.
#[derive(Debug)]
pub struct IPInputCombo {
    color: u8,
    check: CheckIPHeader,
}

impl IPInputCombo {
    #[inline(always)]
    fn verdict(&mut self, p: &mut Packet) -> bool {
        p.anno_mut().paint = self.color;
        p.pull_front(14);
        // CheckIPHeader sets the destination annotation from the header,
        // which is what GetIPAddress(16) reads after the strip.
        self.check.verdict(p).is_some()
    }

    #[inline]
    fn run(&mut self, batch: &mut Batch) {
        batch.retain(|p| self.verdict(p));
    }
}

impl Element for IPInputCombo {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.run(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.run(b));
    }

    fn stats(&self, s: &mut Stats) {
        self.check.stats(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{echo_request, fix_ip_checksum};
    use bricks_runtime::testing::{make_element, Harness};
    use std::net::Ipv4Addr;

    fn ether(ip: &[u8]) -> Vec<u8> {
        let mut f = vec![
            0x00, 0x00, 0xc0, 0xae, 0x67, 0xef, 0x00, 0x20, 0x6f, 0x14, 0x54, 0xc2, 0x08, 0x00,
        ];
        f.extend(ip);
        f
    }

    #[test]
    fn paints_strips_checks_and_annotates() {
        let mut h = Harness::push(&CLASS, "3, INTERFACES 198.51.100.1/24", 1, 1);
        let mut padded = ether(&echo_request());
        padded.extend([0; 4]);
        h.push_bytes(0, &padded);
        let out = h.take(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &echo_request()[..]);
        assert_eq!(out[0].anno().paint, 3);
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(198, 51, 100, 7));
        assert_eq!(out[0].network_header_offset(), Some(0));
    }

    #[test]
    fn invalid_packets_are_dropped_by_reason() {
        let mut h = Harness::push(&CLASS, "1, 192.0.2.1", 1, 1);
        let mut bad_sum = echo_request();
        bad_sum[10] ^= 1;
        // The deprecated BADSRC list: 192.0.2.1 may not send.
        let mut bad_src = echo_request();
        bad_src[12..16].copy_from_slice(&[192, 0, 2, 1]);
        fix_ip_checksum(&mut bad_src);
        h.push_bytes(0, &ether(&bad_sum));
        h.push_bytes(0, &ether(&bad_src));
        h.push_bytes(0, &ether(&echo_request())[..20]);
        h.push_bytes(0, &[1, 2, 3]);
        assert!(h.take(0).is_empty());
        let s = h.stats();
        assert_eq!(s.get("drops"), Some(4));
        assert_eq!(s.get("bad_checksum"), Some(1));
        assert_eq!(s.get("bad_source"), Some(1));
        assert_eq!(s.get("truncated"), Some(2));
    }

    #[test]
    fn arguments() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("").unwrap_err().contains("COLOR"));
        assert!(make("256").unwrap_err().contains("COLOR"));
        assert!(make("1, GOODDST 1.2.3.4, BADSRC 1.2.3.5").is_ok());
        assert!(make("1, MTU 3").is_err());
    }
}
