//! `EnsureEther`: makes sure IP packets carry an Ethernet header, as
//! Click's `elements/ethernet/ensureether.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::ethernet::EthernetAddress;

/// The `EnsureEther` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EnsureEther",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "ensures that IP packets are Ethernet encapsulated",
    synopsis: "EnsureEther([ETHERTYPE, SRC, DST])",
    description: "Packets whose network header annotation is not set pass unchanged. An IP \
        packet whose IP header follows an Ethernet header of type IPv4 or IPv6 passes \
        unchanged; one whose Ethernet header was stripped (the 14 bytes before the IP \
        header still say IPv4 or IPv6) gets it back; any other loses what precedes its IP \
        header and gets the header ETHERTYPE, SRC, DST. A packet without the headroom is \
        dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "ETHERTYPE",
            ty: "unsigned 16-bit",
            default: Some("0x0800"),
            doc: "type of the header added; positional",
        },
        Keyword {
            name: "SRC",
            ty: "Ethernet address",
            default: Some("01:01:01:01:01:01"),
            doc: "source of the header added; positional",
        },
        Keyword {
            name: "DST",
            ty: "Ethernet address",
            default: Some("02:02:02:02:02:02"),
            doc: "destination of the header added; positional",
        },
    ],
    counters: &[("drops", "packets without headroom for a header")],
    example: "InfiniteSource(DATA \\<45000014 00000000 40110000 0a000001 0a000002>, LIMIT 1) \
        -> MarkIPHeader -> EnsureEther(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> Print -> Discard;",
    see_also: &["EtherEncap", "EtherRewrite"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let etype: u16 = args.read_p("ETHERTYPE")?.unwrap_or(0x0800);
    let src: EthernetAddress = args.read_p("SRC")?.unwrap_or(EthernetAddress([1; 6]));
    let dst: EthernetAddress = args.read_p("DST")?.unwrap_or(EthernetAddress([2; 6]));
    let mut header = [0u8; 14];
    header[..6].copy_from_slice(&dst.0);
    header[6..12].copy_from_slice(&src.0);
    header[12..].copy_from_slice(&etype.to_be_bytes());
    Ok(Box::new(EnsureEther { header, drops: 0 }))
}

/// Adds Ethernet headers where missing.
#[derive(Debug)]
pub struct EnsureEther {
    header: [u8; 14],
    drops: u64,
}

fn ip_type(t: &[u8]) -> bool {
    t == [0x08, 0x00] || t == [0x86, 0xdd]
}

impl EnsureEther {
    /// False when the packet must be dropped.
    fn ensure(&self, p: &mut Packet) -> bool {
        let Some(l3) = p.anno().l3_offset().map(usize::from) else {
            return true;
        };
        let Some(off) = p.network_header_offset() else {
            // The IP header was stripped away: Click passes such packets.
            return true;
        };
        if off == 14 && p.len() >= 14 && ip_type(&p.data()[12..14]) {
            return true;
        }
        if off == 0 && l3 >= 14 {
            let before = p.bytes_from(l3 - 14);
            if ip_type(&before[12..14]) {
                return p.push_front(14).is_ok();
            }
        }
        p.pull_front(off);
        if p.push_front(14).is_err() {
            return false;
        }
        p.data_mut()[..14].copy_from_slice(&self.header);
        true
    }

    fn apply(&mut self, b: &mut Batch) {
        let mut drops = 0;
        b.retain(|p| {
            let ok = self.ensure(p);
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for EnsureEther {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::Harness;

    fn framed() -> Vec<u8> {
        let mut f = vec![
            0x52, 0x54, 0, 0xaa, 0, 1, 0x52, 0x54, 0, 0xbb, 0, 2, 0x08, 0x00,
        ];
        f.extend(udp(4));
        f
    }

    fn run(p: Packet) -> Vec<u8> {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [p]);
        h.take_bytes(0).pop().unwrap()
    }

    #[test]
    fn keeps_restores_or_adds_a_header() {
        let mut p = Packet::from_slice(&framed()).unwrap();
        p.set_network_header(14);
        assert_eq!(run(p), framed());
        let mut p = Packet::from_slice(&framed()).unwrap();
        p.set_network_header(14);
        p.pull_front(14);
        assert_eq!(run(p), framed());
        let mut p = Packet::from_slice(&udp(4)).unwrap();
        p.set_network_header(0);
        let out = run(p);
        assert_eq!(&out[..14], &[2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 8, 0]);
        assert_eq!(&out[14..], &udp(4)[..]);
    }

    #[test]
    fn packets_without_network_header_pass() {
        let p = Packet::from_slice(&udp(4)).unwrap();
        assert_eq!(run(p), udp(4));
    }
}
