//! `FastUDPSourceIP6`: the IPv6 counterpart of FastUDPSource, a benchmark
//! generator that re-sends one prebuilt Ethernet/IPv6/UDP frame (Click's
//! `elements/tcpudp/fastudpsrcip6.cc`). The headers are Click's: traffic
//! class and flow label 0, hop limit 250, a zero payload, the UDP
//! checksum over the IPv6 pseudo-header (RFC 8200 section 8.1) unless
//! CHECKSUM is false. Pacing, LIMIT and the handlers are FastUDPSource's
//! own code.

use crate::standard::fast_udp::{
    emitter, kw, read_common, FastUDPSource, UdpFrame, CHECKSUM, LENGTH, LIMIT, RATE,
};
use crate::standard::source::LIMIT_KEYWORDS;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_wire::ethernet::EthernetAddress;
use std::net::Ipv6Addr;

/// The `FastUDPSourceIP6` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FastUDPSourceIP6",
    ports: "0/1",
    processing: "/a",
    manual: &MANUAL,
    make,
};

/// The shortest frame with a whole UDP header: Ethernet 14, IPv6 40, UDP 8.
const MIN_LENGTH: usize = 62;

static MANUAL: Manual = Manual {
    summary: "creates packets with static UDP/IP6/Ethernet headers",
    synopsis: "FastUDPSourceIP6(RATE, LIMIT, LENGTH, SRCETH, SRCIP6, SPORT, DSTETH, DSTIP6, \
        DPORT [, CHECKSUM, INTERVAL, ACTIVE, KEYWORDS])",
    description: "Builds one UDP/IPv6/Ethernet frame of LENGTH bytes at start and sends \
        copies of it at RATE packets per second, LIMIT in all, as FastUDPSource does for \
        IPv4. The IPv6 header has traffic class and flow label 0, next header 17 and hop \
        limit 250; the payload is zeros; each packet's IPv6 destination annotation is \
        DSTIP6 and its network header annotation the IPv6 header. With INTERVAL N, after \
        every N packets both ports go up by one and the checksum is recomputed. After \
        LIMIT packets the `rate` handler reads the average rate between the first and \
        the last packet (Click's); writing `rate` sets RATE. Writing `active` true starts \
        the count over.\n\n\
        Differences from Click: a UDP checksum that computes to zero is sent as 0xffff \
        (RFC 8200 section 8.1; Click sends zero, which IPv6 receivers drop), and the sum \
        never loses a carry (Click's 32-bit accumulator can, for addresses with many high \
        bits set). LENGTH below 62 becomes 62, where Click makes it 60: a 60-byte frame \
        leaves no room for the UDP header's last two bytes, so Click's UDP length says 6 \
        and its checksum lies past the frame's end. CHECKSUM false sends a zero \
        checksum, as Click does, which IPv6 receivers drop (RFC 8200 section 8.1).",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        RATE,
        LIMIT,
        Keyword {
            doc: "frame length with the Ethernet header (at least 62, at most 2048)",
            ..LENGTH
        },
        kw("SRCETH", "Ethernet address", "source Ethernet address"),
        kw("SRCIP6", "IPv6 address", "source address"),
        kw("SPORT", "port", "source port"),
        kw("DSTETH", "Ethernet address", "destination Ethernet address"),
        kw("DSTIP6", "IPv6 address", "destination address"),
        kw("DPORT", "port", "destination port"),
        CHECKSUM,
        Keyword {
            name: "INTERVAL",
            ty: "unsigned",
            default: Some("0"),
            doc: "packets between port increments; 0 for never",
        },
        LIMIT_KEYWORDS[1],
        LIMIT_KEYWORDS[2],
        LIMIT_KEYWORDS[3],
        LIMIT_KEYWORDS[4],
    ],
    counters: &[("count", "packets sent since the last reset")],
    example: "FastUDPSourceIP6(1000, 10, 100, 0:0:0:0:0:1, 2001:db8::1, 1234, 0:0:0:0:0:2, \
        2001:db8::2, 5678, STOP true) -> Discard;",
    see_also: &["FastUDPSource", "UDPIP6Encap", "RatedSource"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let (rate, limit, len) = read_common(args)?;
    let src_eth: EthernetAddress = args.read_mp("SRCETH")?;
    let src: Ipv6Addr = args.read_mp("SRCIP6")?;
    let sport: u16 = args.read_mp("SPORT")?;
    let dst_eth: EthernetAddress = args.read_mp("DSTETH")?;
    let dst: Ipv6Addr = args.read_mp("DSTIP6")?;
    let dport: u16 = args.read_mp("DPORT")?;
    let cksum: bool = args.read_p("CHECKSUM")?.unwrap_or(true);
    let interval: u64 = args.read_p("INTERVAL")?.unwrap_or(0);
    let active: bool = args.read_p("ACTIVE")?.unwrap_or(true);
    let e = emitter(args, ports, limit, active)?;
    let udp = UdpFrame::new_v6(len.max(MIN_LENGTH), src_eth, src, dst_eth, dst, cksum);
    Ok(Box::new(FastUDPSourceIP6(FastUDPSource::new(
        e, rate, udp, sport, dport, interval,
    ))))
}

/// Re-sends one prebuilt UDP/IPv6 frame: FastUDPSource with an IPv6 frame.
#[derive(Debug)]
pub struct FastUDPSourceIP6(FastUDPSource);

impl Element for FastUDPSourceIP6 {
    fn task_kind(&self) -> TaskKind {
        self.0.task_kind()
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        self.0.run_task(cx)
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.0.run_timer(cx);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        self.0.pull(port, out, max, cx);
    }

    fn stats(&self, s: &mut Stats) {
        self.0.stats(s);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.0.read_handler(handler)
    }

    fn handlers(&self) -> &'static [Handler] {
        self.0.handlers()
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.0.write_handler(handler, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::udp::UdpPacket;

    const ARGS: &str = "1000, 3, 70, 00:11:22:33:44:55, 2001:db8::1, 1234, \
                        66:77:88:99:aa:bb, 2001:db8:1::2, 5678";

    /// The frame Click's FastUDPSourceIP6 builds for ARGS, field by field
    /// from its `initialize`; the checksum 0x8958 was computed by hand
    /// (RFC 1071 over the pseudo-header and the 16-byte datagram) and is
    /// checked again below, apart from the wire crate.
    const FRAME: [u8; 70] = [
        0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x86,
        0xdd, // eth
        0x60, 0x00, 0x00, 0x00, 0x00, 0x10, 0x11, 0xfa, // v6, plen 16, UDP, hlim 250
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, // src
        0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, // dst
        0x04, 0xd2, 0x16, 0x2e, 0x00, 0x10, 0x89, 0x58, // udp
        0, 0, 0, 0, 0, 0, 0, 0, // zeros
    ];

    /// RFC 1071 the slow way, for the test's own check.
    fn sum(words: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for c in words.chunks(2) {
            s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    /// The IPv6 pseudo-header and datagram of frame `f`, summed.
    fn udp_sum(f: &[u8]) -> u16 {
        let ulen = (f.len() - 54) as u32;
        let mut pseudo = Vec::from(&f[22..54]);
        pseudo.extend_from_slice(&ulen.to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, 17]);
        pseudo.extend_from_slice(&f[54..]);
        sum(&pseudo)
    }

    fn addr(f: &[u8], at: usize) -> Ipv6Addr {
        Ipv6Addr::from(<[u8; 16]>::try_from(&f[at..at + 16]).unwrap())
    }

    #[test]
    fn frame_bytes_are_clicks() {
        assert_eq!(udp_sum(&FRAME), 0xffff);
        let mut h = Harness::push(&CLASS, ARGS, 0, 1);
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        let out = h.take(0);
        assert_eq!(out.len(), 1, "RATE 1000: one packet at once");
        assert_eq!(out[0].data(), &FRAME[..]);
        assert_eq!(
            out[0].anno().dst_ip6,
            "2001:db8:1::2".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(out[0].network_header().map(|h| h[0]), Some(0x60));
        let udp = UdpPacket::new_checked(&FRAME[54..]).unwrap();
        assert!(udp.verify_checksum_v6(addr(&FRAME, 22), addr(&FRAME, 38)));
    }

    #[test]
    fn short_length_keeps_the_udp_header_whole() {
        // Click's minimum, 60, would cut the UDP checksum off.
        let mut h = Harness::push(
            &CLASS,
            "0, 1, 20, 0:0:0:0:0:1, 2001:db8::1, 7, 0:0:0:0:0:2, 2001:db8::2, 9",
            0,
            1,
        );
        h.run_task();
        let f = &h.take_bytes(0)[0];
        assert_eq!(f.len(), 62);
        assert_eq!(&f[18..20], &[0, 8], "payload length");
        assert_eq!(&f[58..60], &[0, 8], "UDP length");
        assert_eq!(udp_sum(f), 0xffff);
    }

    /// Ports chosen so that the checksum computes to zero: sent as 0xffff,
    /// which sums the same (RFC 8200 section 8.1), where Click sends 0.
    #[test]
    fn zero_checksum_is_sent_as_ones() {
        // With the ports at 0 the sum of everything but the source port is
        // S; a source port of !S makes the total 0xffff, the checksum 0.
        let base = "0, 1, 62, 0:0:0:0:0:1, 2001:db8::1, 0, 0:0:0:0:0:2, 2001:db8::2, 0";
        let mut h = Harness::push(&CLASS, &format!("{base}, CHECKSUM false"), 0, 1);
        h.run_task();
        let f = h.take_bytes(0).remove(0);
        let sport = !udp_sum(&f);
        let args =
            format!("0, 1, 62, 0:0:0:0:0:1, 2001:db8::1, {sport}, 0:0:0:0:0:2, 2001:db8::2, 0");
        let mut h = Harness::push(&CLASS, &args, 0, 1);
        h.run_task();
        let f = h.take_bytes(0).remove(0);
        assert_eq!(&f[60..62], &[0xff, 0xff]);
        assert_eq!(udp_sum(&f), 0xffff);
    }

    #[test]
    fn interval_limit_and_rate() {
        let mut h = Harness::push(&CLASS, &format!("{ARGS}, INTERVAL 2"), 0, 1);
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        let mut frames = h.take_bytes(0);
        assert_eq!(frames.len(), 1);
        // RATE 1000: the next packet is due 1 ms later, not before.
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(1_001_000_000)]);
        h.advance_to(Timestamp(1_002_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        frames.extend(h.take_bytes(0));
        assert_eq!(frames.len(), 3, "two more were due; LIMIT 3");
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(h.take_bytes(0).is_empty());
        // INTERVAL 2: the third packet has both ports one up.
        assert_eq!(&frames[0][54..58], &[0x04, 0xd2, 0x16, 0x2e]);
        assert_eq!(&frames[1][54..58], &[0x04, 0xd2, 0x16, 0x2e]);
        assert_eq!(&frames[2][54..58], &[0x04, 0xd3, 0x16, 0x2f]);
        assert!(frames.iter().all(|f| udp_sum(f) == 0xffff));
        assert_eq!(h.read_handler("count").unwrap(), "3");
        // 3 packets between 1.000 s and 1.002 s: 3 * 1000 / 2 ms.
        assert_eq!(h.read_handler("rate").unwrap(), "1500");
        h.write_handler("active", "true").unwrap();
        assert_eq!(h.read_handler("count").unwrap(), "0");
        assert_eq!(h.read_handler("rate").unwrap(), "0");
    }

    #[test]
    fn checksum_false_and_arguments() {
        let mut h = Harness::push(&CLASS, &format!("{ARGS}, CHECKSUM false"), 0, 1);
        h.run_task();
        assert_eq!(&h.take_bytes(0)[0][60..62], &[0, 0]);
        let p = PortInfo::default();
        for bad in [
            "1000, 3, 60",
            // An IPv4 address where IPv6 is wanted.
            "1, 3, 60, 0:0:0:0:0:1, 10.0.0.1, 1, 0:0:0:0:0:2, 2001:db8::2, 2",
            "1, 3, 9000, 0:0:0:0:0:1, ::1, 1, 0:0:0:0:0:2, ::2, 2",
            "1, 3, 60, 0:0:0:0:0:1, ::1, 1, 0:0:0:0:0:2, ::2, 2, BOGUS 1",
        ] {
            assert!(make_element(&CLASS, bad, &p).is_err(), "{bad}");
        }
        // Click's example, with IPv4-embedded notation.
        assert!(make_element(
            &CLASS,
            "100000, 500000, 60, 0:0:0:0:0:0, 3ffe::1.0.0.1, 1234, 1:1:1:1:1:1, \
             3ff2::2.0.0.2, 1234",
            &p
        )
        .is_ok());
    }
}
