//! `SetIPECN`: sets the ECN field of IPv4 packets, the low two bits of the
//! TOS byte (RFC 3168 section 5), as Click's `elements/ip/setipecn.cc`,
//! with the header checksum updated incrementally (RFC 1624).

use crate::click::set_ip_dscp::set_tos;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};

/// The `SetIPECN` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetIPECN",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets IP packets' ECN fields",
    synopsis: "SetIPECN(ECN)",
    description: "Sets the ECN field, the lower 2 bits of the TOS byte, of each IP packet \
        to ECN, keeping the DSCP, and updates the header checksum incrementally (RFC \
        1624). ECN is a number from 0 to 3 or one of Click's words: `no` or `-` (0, not \
        ECN-capable), `ect1` or `ECT(1)` (1), `ect2` or `ECT(0)` (2), `ce` or `CE` (3, \
        Congestion Experienced). The `ecn` handler reads ECN as written and sets it while \
        the router runs.\n\n\
        The IP header is found at the network header annotation, else at the start of \
        the packet. Unlike Click, which assumes a header is there, bricks drops and \
        counts a packet too short for a 20-byte IP header.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "ECN",
        ty: "0 to 3, no, -, ect1, ECT(1), ect2, ECT(0), ce or CE",
        default: None,
        doc: "the ECN code point; positional",
    }],
    counters: &[("drops", "packets too short for an IP header")],
    example: "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 11 66 d7 0a 00 00 01 \
        0a 00 00 02>, LIMIT 1) -> MarkIPHeader(0) -> SetIPECN(ce) \
        -> CheckIPHeader -> Print -> Discard;",
    see_also: &["SetIPDSCP", "MarkIPCE", "SetIPChecksum"],
};

/// Click's reading of ECN: exactly these texts, nothing else.
fn parse_ecn(text: &str) -> Result<u8, String> {
    match text {
        "0" | "no" | "-" => Ok(0),
        "1" | "ect1" | "ECT(1)" => Ok(1),
        "2" | "ect2" | "ECT(0)" => Ok(2),
        "3" | "ce" | "CE" => Ok(3),
        _ => Err(format!(
            "bad ECN argument `{text}`: expected 0 to 3, no, -, ect1, ECT(1), ect2, \
             ECT(0), ce or CE"
        )),
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let text: String = args.read_mp("ECN")?;
    let text = text.trim().to_string();
    let ecn = parse_ecn(&text).map_err(ArgError::new)?;
    Ok(Box::new(SetIPECN {
        ecn,
        text,
        drops: 0,
    }))
}

/// Sets the ECN field.
#[derive(Debug)]
pub struct SetIPECN {
    ecn: u8,
    /// ECN as written, which the `ecn` handler reads back (Click's
    /// `read_keyword_handler`).
    text: String,
    drops: u64,
}

impl SetIPECN {
    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        let ecn = self.ecn;
        let mut drops = 0;
        b.retain(|p: &mut Packet| {
            let ip = p.l3_bytes_mut();
            let ok = ip.len() >= 20 && set_tos(ip, (ip[1] & !3) | ecn);
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for SetIPECN {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "ecn").then(|| self.text.clone())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "ecn" => {
                let text = value.trim();
                self.ecn = parse_ecn(text)?;
                self.text = text.to_string();
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (SetIPECN has `ecn`)")),
        }
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        (handler == "ecn").then_some("0 ECN")
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("ecn")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// The IPv4 header of a real ICMP echo request, 10.0.0.1 to 10.0.0.2
    /// (tcpdump on Linux), with its 64 bytes of ICMP behind it cut to 4;
    /// TOS 0, checksum 0x5e56.
    const ECHO_HEADER: [u8; 24] = [
        0x45, 0x00, 0x00, 0x54, 0xc8, 0x50, 0x40, 0x00, 0x40, 0x01, 0x5e, 0x56, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x08, 0x00, 0xa2, 0x9e,
    ];

    /// The header checksum computed from scratch (RFC 1071), the field
    /// taken as zero: written here rather than borrowed from the code
    /// under test.
    fn full_checksum(h: &[u8]) -> u16 {
        let hlen = usize::from(h[0] & 0x0f) * 4;
        let mut sum = 0u32;
        for (i, w) in h[..hlen].chunks(2).enumerate() {
            if i != 5 {
                sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
            }
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn checksum_field(h: &[u8]) -> u16 {
        u16::from_be_bytes([h[10], h[11]])
    }

    #[test]
    fn the_sample_header_is_valid() {
        assert_eq!(full_checksum(&ECHO_HEADER), 0x5e56);
    }

    #[test]
    fn sets_each_code_point_keeps_dscp_and_checksum() {
        let mut frame = ECHO_HEADER;
        // DSCP 46 (EF), ECN 1, checksum made right again from scratch.
        frame[1] = (46 << 2) | 1;
        let sum = full_checksum(&frame);
        frame[10..12].copy_from_slice(&sum.to_be_bytes());
        for (arg, ecn) in [
            ("0", 0),
            ("no", 0),
            ("-", 0),
            ("1", 1),
            ("ect1", 1),
            ("ECT(1)", 1),
            ("2", 2),
            ("ect2", 2),
            ("ECT(0)", 2),
            ("3", 3),
            ("ce", 3),
            ("CE", 3),
            ("ECN ce", 3),
        ] {
            let mut h = Harness::push(&CLASS, arg, 1, 1);
            h.push_bytes(0, &frame);
            let out = h.take_bytes(0);
            assert_eq!(out.len(), 1, "{arg}");
            let o = &out[0];
            assert_eq!(o[1], (46 << 2) | ecn, "{arg}");
            assert_eq!(checksum_field(o), full_checksum(o), "{arg}");
            // Nothing else changed.
            assert_eq!(o[..1], frame[..1]);
            assert_eq!(o[2..10], frame[2..10]);
            assert_eq!(o[12..], frame[12..]);
        }
    }

    #[test]
    fn uses_the_network_header_annotation() {
        let mut frame = vec![0xee; 14];
        frame.extend_from_slice(&ECHO_HEADER);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        let mut h = Harness::push(&CLASS, "CE", 1, 1);
        h.push_packets(0, [p]);
        let out = h.take_bytes(0);
        assert_eq!(out[0][..14], [0xee; 14]);
        let ip = &out[0][14..];
        assert_eq!(ip[1], 3);
        assert_eq!(checksum_field(ip), full_checksum(ip));
    }

    #[test]
    fn short_packets_of_any_length_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "ce", 1, 1);
        for len in 0..20 {
            h.push_bytes(0, &ECHO_HEADER[..len]);
        }
        h.push_bytes(0, &ECHO_HEADER[..20]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(20));
    }

    #[test]
    fn pull_sets_too() {
        use bricks_element::Processing;
        let mut h = Harness::new(
            &CLASS,
            "ect2",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull],
            },
        );
        h.feed(0, [Packet::from_slice(&ECHO_HEADER).unwrap()]);
        let out = h.pull(0, 4);
        assert_eq!(out[0].data()[1], 2);
        assert_eq!(checksum_field(out[0].data()), full_checksum(out[0].data()));
    }

    #[test]
    fn ecn_handler_reads_as_written_and_sets() {
        let mut h = Harness::push(&CLASS, "ECT(1)", 1, 1);
        assert_eq!(h.read_handler("ecn").unwrap(), "ECT(1)");
        h.write_handler("ecn", " ce ").unwrap();
        assert_eq!(h.read_handler("ecn").unwrap(), "ce");
        h.push_bytes(0, &ECHO_HEADER);
        assert_eq!(h.take_bytes(0)[0][1], 3);
        let err = h.write_handler("ecn", "4").unwrap_err();
        assert!(err.contains("bad ECN"), "{err}");
        // A refused value changes nothing.
        assert_eq!(h.read_handler("ecn").unwrap(), "ce");
    }

    #[test]
    fn bad_arguments_are_refused() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        for bad in ["4", "ect", "Ce", "ECT(2)", "00", "1, 2"] {
            assert!(m(bad).is_err(), "{bad}");
        }
        assert!(m("4").unwrap_err().contains("bad ECN argument"));
        assert!(m("").unwrap_err().contains("ECN"));
    }
}
