//! `IPOutputCombo`: the output path of Click's IP router in one element,
//! `DropBroadcasts -> PaintTee(COLOR) -> IPGWOptions(IPADDR) ->
//! FixIPSrc(IPADDR) -> DecIPTTL -> CheckLength(MTU)`, as Click's
//! `elements/ip/ipoutputcombo.cc` composes it (RFC 1812 sections 5.2.1,
//! 5.3.1 and 5.3.4). Each step is bricks' element of that name, run on
//! each packet in turn.

use super::decipttl::DecIPTTL;
use super::dropbroadcasts::DropBroadcasts;
use super::fixipsrc::FixIPSrc;
use super::header::ms_since_midnight;
use super::ipgwoptions::IPGWOptions;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};
use std::net::Ipv4Addr;

/// The `IPOutputCombo` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPOutputCombo",
    ports: "1/5",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "output combo for IP routing",
    synopsis: "IPOutputCombo(COLOR, IPADDR, MTU)",
    description: "The common tasks of an IP router's output path in one element; the \
        same as\n\n\
        \x20 elementclass IPOutputCombo { $COLOR, $IPADDR, $MTU |\n\
        \x20   input -> DropBroadcasts -> p :: PaintTee($COLOR) -> g :: IPGWOptions($IPADDR)\n\
        \x20     -> FixIPSrc($IPADDR) -> d :: DecIPTTL -> l :: CheckLength($MTU) -> [0]output;\n\
        \x20   p[1] -> [1]output; g[1] -> [2]output; d[1] -> [3]output; l[1] -> [4]output;\n\
        \x20 }\n\n\
        Output 0 carries the packets to send; output 1 copies of packets painted COLOR \
        (they leave by the interface they came in on: an ICMP redirect is due); output 2 \
        packets with a bad IP option (the parameter problem offset annotation set); output \
        3 packets whose TTL expired; output 4 packets longer than MTU, for an IPFragmenter. \
        Link-level broadcasts and multicasts are dropped and counted. IPOutputCombo does no \
        fragmentation itself.",
    ports: "one push input; five push outputs as above",
    keywords: &[
        Keyword {
            name: "COLOR",
            ty: "integer 0 to 255",
            default: None,
            doc: "the paint of packets that arrived on this interface",
        },
        Keyword {
            name: "IPADDR",
            ty: "IPv4 address",
            default: None,
            doc: "the interface's address, for options and FixIPSrc",
        },
        Keyword {
            name: "MTU",
            ty: "unsigned integer",
            default: None,
            doc: "the largest packet output 0 passes, in bytes",
        },
    ],
    counters: &[
        ("drops", "link-level broadcasts and multicasts dropped"),
        ("copies", "packets painted COLOR copied to output 1"),
        ("bad_options", "packets with a bad IP option (output 2)"),
        ("fixed", "packets whose source address FixIPSrc set"),
        ("expired", "packets whose TTL expired (output 3)"),
        ("too_long", "packets longer than MTU (output 4)"),
        (
            "truncated",
            "packets too short for their IP header, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 11 66 d7 0a 00 00 01 \
        0a 00 00 02>, LIMIT 1) -> MarkIPHeader -> oc :: IPOutputCombo(2, 10.0.0.254, 1500) \
        -> Discard; oc[1] -> Discard; oc[2] -> Discard; oc[3] -> Discard; oc[4] -> Discard;",
    see_also: &[
        "DropBroadcasts",
        "PaintTee",
        "IPGWOptions",
        "FixIPSrc",
        "DecIPTTL",
        "IPFragmenter",
        "IPInputCombo",
    ],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let color: u8 = args.read_mp("COLOR")?;
    let addr: Ipv4Addr = args.read_mp("IPADDR")?;
    let mtu: usize = args.read_mp("MTU")?;
    Ok(Box::new(IPOutputCombo {
        color,
        mtu,
        broadcasts: DropBroadcasts::new(),
        options: IPGWOptions::new(addr, true),
        fix_src: FixIPSrc::new(addr),
        ttl: DecIPTTL::new(true),
        copies: 0,
        too_long: 0,
    }))
}

/// DropBroadcasts, PaintTee, IPGWOptions, FixIPSrc, DecIPTTL and
/// CheckLength in one.
#[derive(Debug)]
pub struct IPOutputCombo {
    color: u8,
    mtu: usize,
    broadcasts: DropBroadcasts,
    options: IPGWOptions,
    fix_src: FixIPSrc,
    ttl: DecIPTTL,
    copies: u64,
    too_long: u64,
}

impl Element for IPOutputCombo {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        batch.retain(|p| self.broadcasts.keep(p));
        // PaintTee copies before anything is changed.
        let color = self.color;
        if batch.iter().any(|p| p.anno().paint == color) {
            let mut copies = Batch::new();
            for p in batch.iter().filter(|p| p.anno().paint == color) {
                let _ = copies.push(p.duplicate());
            }
            self.copies += copies.len() as u64;
            cx.push(1, &mut copies);
        }
        let ms = ms_since_midnight(cx.now());
        let Self {
            options,
            fix_src,
            ttl,
            mtu,
            too_long,
            ..
        } = self;
        cx.push_classified(batch, |p| {
            match options.verdict(p, ms) {
                Some(0) => {}
                Some(_) => return Some(2),
                None => return None,
            }
            fix_src.fix(p);
            match ttl.verdict(p) {
                Some(0) => {}
                Some(_) => return Some(3),
                None => return None,
            }
            if p.len() > *mtu {
                *too_long += 1;
                return Some(4);
            }
            Some(0)
        });
    }

    fn stats(&self, s: &mut Stats) {
        self.broadcasts.stats(s);
        s.counter("copies", self.copies);
        self.options.stats(s);
        self.fix_src.stats(s);
        self.ttl.stats(s);
        s.counter("too_long", self.too_long);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{fix_ip_checksum, ip_checksum_ok, udp, udp_with_options};
    use bricks_element::Packet;
    use bricks_packet::PacketType;
    use bricks_runtime::testing::{make_element, Harness};

    fn packet(ip: &[u8], paint: u8) -> Packet {
        let mut p = Packet::from_slice(ip).unwrap();
        p.set_network_header(0);
        p.anno_mut().paint = paint;
        p
    }

    #[test]
    fn each_output_as_click_composes_it() {
        let mut h = Harness::push(&CLASS, "2, 18.26.4.24, 100", 1, 5);
        let mut expired = udp(10);
        expired[8] = 1;
        fix_ip_checksum(&mut expired);
        // A Record Route option whose length runs past the header.
        let bad_option = udp_with_options(&[7, 9, 4, 0]);
        let mut broadcast = packet(&udp(10), 0);
        broadcast.anno_mut().packet_type = PacketType::Broadcast;
        let mut fix = packet(&udp(10), 0);
        fix.anno_mut().fix_ip_src = true;
        h.push_packets(
            0,
            [
                packet(&udp(10), 0),
                packet(&udp(10), 2),
                packet(&expired, 0),
                packet(&bad_option, 0),
                packet(&udp(100), 0),
                broadcast,
                fix,
            ],
        );
        let out0 = h.take_bytes(0);
        assert_eq!(out0.len(), 3);
        for d in &out0 {
            assert_eq!(d[8], 63, "TTL decremented");
            assert!(ip_checksum_ok(d));
        }
        assert_eq!(&out0[2][12..16], &[18, 26, 4, 24], "FixIPSrc");
        // The copy to output 1 is taken before the TTL changes.
        let out1 = h.take_bytes(1);
        assert_eq!(out1.len(), 1);
        assert_eq!(out1[0][8], 64);
        let out2 = h.take(2);
        assert_eq!(out2.len(), 1);
        assert_eq!(out2[0].anno().param_off, Some(21));
        assert_eq!(h.take_bytes(3), vec![expired]);
        let out4 = h.take_bytes(4);
        assert_eq!(out4.len(), 1);
        assert_eq!(out4[0].len(), 128);
        let s = h.stats();
        for (name, v) in [
            ("drops", 1),
            ("copies", 1),
            ("bad_options", 1),
            ("fixed", 1),
            ("expired", 1),
            ("too_long", 1),
            ("truncated", 0),
        ] {
            assert_eq!(s.get(name), Some(v), "{name}");
        }
    }

    #[test]
    fn short_packets_and_arguments() {
        let mut h = Harness::push(&CLASS, "2, 18.26.4.24, 1500", 1, 5);
        h.push_packets(0, [packet(&[0x45, 0, 0], 0)]);
        for port in 0..5 {
            assert!(h.take(port).is_empty());
        }
        assert_eq!(h.stats().get("truncated"), Some(1));
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("2, 18.26.4.24").unwrap_err().contains("MTU"));
        assert!(make("2, 18.26.4, 1500").unwrap_err().contains("IPADDR"));
        assert!(make("COLOR 2, IPADDR 18.26.4.24, MTU 1500").is_ok());
    }
}
