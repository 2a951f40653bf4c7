//! `AggregateIP`: sets the aggregate annotation to a field of the packet's
//! IP header, transport header or payload (Click's
//! `elements/analysis/aggregateip.cc`).
//!
//! The field is written as Click's `IPField` ([`super::ip_field`]): `ip
//! src/8`, `tcp dport`, `ip[8:2] & 0x3F0`. As Click does, the element
//! reads the aligned 32-bit word holding the field, so a packet must hold
//! that whole word; one that does not, or that is a later fragment or of
//! another protocol than the field's, leaves by output 1 or is dropped.
//! The aggregate annotation is the packet's `flow` annotation, as for
//! AggregateCounter and AggregateIPFlows.

use super::ip_field::{self, IpField, PAYLOAD, TCP_OR_UDP, TRANSP};
use crate::ip::header::be16;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};

/// The `AggregateIP` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregateIP",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets aggregate annotation based on IP packet field",
    synopsis: "AggregateIP(FIELD [, KEYWORDS])",
    description: "Sets the aggregate annotation of every passing packet to a field of its IP \
        header, transport header or payload, in host byte order. FIELD is a header field \
        name such as `ip tos`, `ip src`, `tcp flags`, `udp dport` or `ip sport` (TCP or UDP), \
        or an offset and length after `ip`, `transp`, `payload`, `tcp`, `udp`, `icmp`, \
        `tcpudp` or `ip proto N`: `[OFFSET]`, `[OFFSET:LENGTH]`, `[OFFSET1-OFFSET2]` in bytes \
        and the same in braces in bits (`ip[8:2]`, `ip{96:8}`); either may be followed by \
        `/N` (the top N bits) and `& MASK` (one run of 1 bits). The field must lie in one \
        aligned 32-bit word, which the packet must hold whole. Packets without the field \
        (no network header annotation, too short, a later fragment, the wrong protocol; \
        `payload` needs a TCP or UDP first fragment) leave by output 1, or are dropped. \
        With INCREMENTAL, a field of N bits with value V turns an aggregate O into \
        O * 2^N + V. With UNSHIFT_IP_ADDR, a field inside the IP source or destination \
        address keeps its place in the address (`ip src/8` of 1.0.0.0 gives 16777216, \
        not 1). Handlers `header`, `bit_offset`, `bit_length` and `field` tell the field \
        as Click does. Differences from Click: a field Click's encoding cannot hold (an \
        offset or prefix of 0 bits) is refused where Click goes on with a broken one; a \
        mask whose top bit is bit 31 (`ip src & 0xFF000000`) overflows in Click and is \
        refused there, here it means what Click's manual says; protocol names are Click's \
        built-in ones (`/etc/protocols` is not read); a packet whose IP header is shorter \
        than 20 bytes leaves by output 1 for any field outside the IP header, where Click \
        reads past it.",
    ports: "one input, push or pull; output 0 like the input, output 1 (optional) push",
    keywords: &[
        Keyword {
            name: "FIELD",
            ty: "IP field (positional)",
            default: None,
            doc: "the field, as `ip src/8` or `ip[8:2] & 0x3F0`",
        },
        Keyword {
            name: "INCREMENTAL",
            ty: "boolean",
            default: Some("false"),
            doc: "shift the old aggregate left by the field's length and add the field \
                  (refused with a 32-bit field)",
        },
        Keyword {
            name: "UNSHIFT_IP_ADDR",
            ty: "boolean",
            default: Some("false"),
            doc: "a field inside an IP address keeps its place in the address",
        },
    ],
    counters: &[(
        "bad",
        "packets without the field (output 1, or dropped without it)",
    )],
    example: "InfiniteSource(DATA \\<45 00 00 20 00 01 00 00 40 11 00 00 12 1a 04 2c 0a 00 00 04 00 1e 00 28 00 0c 00 00 de ad be ef>, LIMIT 1, STOP true)\n\
              -> MarkIPHeader -> AggregateIP(ip src/8) -> Discard;",
    see_also: &[
        "AggregateLength",
        "AggregateIPFlows",
        "AggregateCounter",
        "AggregateFilter",
    ],
};

const TCP: u8 = 6;
const UDP: u8 = 17;

/// The field, and how the word holding it is read.
#[derive(Debug, Clone, Copy)]
struct Extract {
    field: IpField,
    /// Offset of the 32-bit word from the header's start, in bytes.
    word: usize,
    shift: u32,
    mask: u32,
    incremental: bool,
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let spec = args.read_mp::<String>("FIELD")?;
    let incremental = args.read::<bool>("INCREMENTAL")?.unwrap_or(false);
    let unshift = args.read::<bool>("UNSHIFT_IP_ADDR")?.unwrap_or(false);
    let spec = spec.trim();
    let (field, end) = ip_field::parse(spec).map_err(|e| ArgError::new(e.to_string()))?;
    if end != spec.len() {
        return Err(ArgError::new("garbage after field specification"));
    }
    let bo = field.bit_offset;
    let bl = field.bit_length;
    let right = bo + bl - 1;
    if bo / 32 != right / 32 {
        return Err(ArgError::new(
            "field specification does not fit within a single word",
        ));
    }
    if bl == 32 && incremental {
        return Err(ArgError::new(
            "'INCREMENTAL' is incompatible with field length 32",
        ));
    }
    let mut mask = if bl == 32 { u32::MAX } else { (1u32 << bl) - 1 };
    let shift = if !unshift || field.proto != 0 || !(12 * 8..20 * 8).contains(&bo) {
        31 - right % 32
    } else {
        mask <<= 31 - right % 32;
        0
    };
    Ok(Box::new(AggregateIP {
        x: Extract {
            field,
            word: (bo / 32) as usize * 4,
            shift,
            mask,
            incremental,
        },
        two_outputs: ports.noutputs() > 1,
        bad: 0,
    }))
}

/// One worker's AggregateIP.
#[derive(Debug)]
pub struct AggregateIP {
    x: Extract,
    two_outputs: bool,
    bad: u64,
}

impl Extract {
    /// The field's value in `p`, or `None` when `p` lacks it (Click's
    /// `handle_packet`).
    fn value(&self, p: &Packet) -> Option<u32> {
        let ip = p.network_header()?;
        let base = match self.field.proto {
            0 => 0,
            proto => {
                let h = ip.first_chunk::<20>()?;
                let ihl = usize::from(h[0] & 0x0f) * 4;
                if ihl < 20 {
                    return None;
                }
                let first_frag = be16(h, 6) & 0x1fff == 0;
                let ip_p = h[9];
                match proto {
                    TCP_OR_UDP if first_frag && matches!(ip_p, TCP | UDP) => ihl,
                    TRANSP if first_frag => ihl,
                    PAYLOAD if first_frag && ip_p == TCP && ip.len() >= ihl + 20 => {
                        ihl + usize::from(ip[ihl + 12] >> 4) * 4
                    }
                    PAYLOAD if first_frag && ip_p == UDP => ihl + 8,
                    _ if first_frag && proto == u16::from(ip_p) => ihl,
                    _ => return None,
                }
            }
        };
        let at = base + self.word;
        let w = u32::from_be_bytes(*ip.get(at..)?.first_chunk::<4>()?);
        Some((w >> self.shift) & self.mask)
    }

    /// Sets `p`'s aggregate; whether it had the field.
    fn apply(&self, p: &mut Packet) -> bool {
        let Some(v) = self.value(p) else {
            return false;
        };
        let a = &mut p.anno_mut().flow;
        *a = if self.incremental {
            (*a << self.field.bit_length).wrapping_add(v)
        } else {
            v
        };
        true
    }
}

impl AggregateIP {
    fn classify(&mut self, p: &mut Packet) -> Option<usize> {
        if self.x.apply(p) {
            return Some(0);
        }
        self.bad += 1;
        self.two_outputs.then_some(1)
    }
}

impl Element for AggregateIP {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.classify(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.classify(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("bad", self.bad);
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("header"),
            Handler::r("bit_offset"),
            Handler::r("bit_length"),
            Handler::r("field"),
        ];
        H
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        let f = &self.x.field;
        Some(match handler {
            "header" => ip_field::proto_name(f.proto)
                .map(str::to_string)
                .unwrap_or_else(|| f.proto.to_string()),
            "bit_offset" => f.bit_offset.to_string(),
            "bit_length" => f.bit_length.to_string(),
            "field" => f.unparse(),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    /// An IPv4 packet 18.26.4.44 -> 10.0.0.4 of protocol `proto` with
    /// `l4` after its header, the network header annotated.
    fn ip(proto: u8, frag: u16, l4: &[u8]) -> Packet {
        let mut b = vec![
            0x45, 0x10, 0x00, 0x00, 0x12, 0x34, 0x00, 0x00, 0x40, proto, 0x00, 0x00, 18, 26, 4, 44,
            10, 0, 0, 4,
        ];
        b[6..8].copy_from_slice(&frag.to_be_bytes());
        b.extend_from_slice(l4);
        let n = b.len() as u16;
        b[2..4].copy_from_slice(&n.to_be_bytes());
        let mut p = Packet::from_slice(&b).unwrap();
        p.set_network_header(0);
        p
    }

    /// A TCP SYN|ACK 30 -> 40, data offset 5, with 4 bytes of payload.
    fn tcp() -> Packet {
        ip(
            6,
            0,
            &[
                0, 30, 0, 40, 0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x12, 0x20, 0x00, 0, 0, 0, 0, 0xde,
                0xad, 0xbe, 0xef,
            ],
        )
    }

    /// A UDP datagram 30 -> 40 with 4 bytes of payload.
    fn udp() -> Packet {
        ip(17, 0, &[0, 30, 0, 40, 0, 12, 0, 0, 0xca, 0xfe, 0xf0, 0x0d])
    }

    fn aggs(h: &mut Harness, port: usize) -> Vec<u32> {
        h.take(port).iter().map(|p| p.anno().flow).collect()
    }

    fn run(field: &str, packets: Vec<Packet>) -> (Vec<u32>, Vec<u32>) {
        let mut h = Harness::push(&CLASS, field, 1, 2);
        h.push_packets(0, packets);
        (aggs(&mut h, 0), aggs(&mut h, 1))
    }

    #[test]
    fn ip_header_fields() {
        assert_eq!(run("ip src/8", vec![tcp()]).0, vec![18]);
        assert_eq!(run("ip src", vec![tcp()]).0, vec![0x121a_042c]);
        assert_eq!(run("ip dst & 0xFF000000", vec![tcp()]).0, vec![10]);
        assert_eq!(run("ip ttl", vec![udp()]).0, vec![64]);
        assert_eq!(run("ip proto", vec![udp(), tcp()]).0, vec![17, 6]);
        assert_eq!(run("ip dscp", vec![udp()]).0, vec![4]);
        assert_eq!(run("ip[4:2]", vec![udp()]).0, vec![0x1234]);
    }

    #[test]
    fn transport_and_payload_fields() {
        let (ok, bad) = run("tcp dport", vec![tcp(), udp()]);
        assert_eq!((ok, bad.len()), (vec![40], 1));
        assert_eq!(run("ip sport", vec![tcp(), udp()]).0, vec![30, 30]);
        assert_eq!(run("tcp flags", vec![tcp()]).0, vec![0x12]);
        assert_eq!(run("tcp syn", vec![tcp()]).0, vec![1]);
        assert_eq!(run("udp len", vec![udp()]).0, vec![12]);
        assert_eq!(
            run("payload [0:2]", vec![tcp(), udp()]).0,
            vec![0xdead, 0xcafe]
        );
        assert_eq!(run("transp [2:2]", vec![udp()]).0, vec![40]);
    }

    #[test]
    fn fragments_short_and_unmarked_packets_leave_by_output_1() {
        let later = ip(17, 0x0003, &[0, 30, 0, 40, 0, 12, 0, 0]);
        let mut first = ip(17, 0x2000, &[0, 30, 0, 40, 0, 12, 0, 0]);
        first.anno_mut().flow = 9;
        let mut unmarked = Packet::from_slice(udp().data()).unwrap();
        unmarked.anno_mut().flow = 0;
        // UDP with 2 bytes after its header: the payload word is cut off.
        let short = ip(17, 0, &[0, 30, 0, 40, 0, 10, 0, 0, 1, 2]);
        let truncated = {
            let mut p = Packet::from_slice(&udp().data()[..12]).unwrap();
            p.set_network_header(0);
            p
        };
        let mut h = Harness::push(&CLASS, "udp dport", 1, 2);
        h.push_packets(0, [later, first, unmarked, truncated]);
        assert_eq!(aggs(&mut h, 0), vec![40]);
        assert_eq!(h.take(1).len(), 3);
        assert_eq!(h.stats().get("bad"), Some(3));
        assert_eq!(run("payload [0]", vec![short]).1.len(), 1);
        // "ip ttl" reads bytes 8..12: a 10-byte header fragment lacks it.
        let mut tiny = Packet::from_slice(&udp().data()[..10]).unwrap();
        tiny.set_network_header(0);
        assert_eq!(run("ip ttl", vec![tiny]).1.len(), 1);
        // Without output 1 they are dropped.
        let mut h = Harness::push(&CLASS, "tcp dport", 1, 1);
        h.push_packets(0, [udp(), tcp()]);
        assert_eq!(aggs(&mut h, 0), vec![40]);
        assert_eq!(h.stats().get("bad"), Some(1));
    }

    #[test]
    fn incremental_and_unshift() {
        let mut p = tcp();
        p.anno_mut().flow = 3;
        assert_eq!(
            run("ip src/8, INCREMENTAL true", vec![p]).0,
            vec![3 * 256 + 18]
        );
        assert_eq!(
            run("ip src/8, UNSHIFT_IP_ADDR true", vec![tcp()]).0,
            vec![0x1200_0000]
        );
        assert_eq!(
            run("ip dst{8:8}, UNSHIFT_IP_ADDR true", vec![tcp()]).0,
            vec![0]
        );
        assert_eq!(run("ip ttl, UNSHIFT_IP_ADDR true", vec![tcp()]).0, vec![64]);
    }

    #[test]
    fn handlers_tell_the_field() {
        let h = Harness::push(&CLASS, "ip[12]", 1, 1);
        assert_eq!(h.read_handler("header").unwrap(), "ip");
        assert_eq!(h.read_handler("bit_offset").unwrap(), "96");
        assert_eq!(h.read_handler("bit_length").unwrap(), "8");
        assert_eq!(h.read_handler("field").unwrap(), "ip src/8");
        let h = Harness::push(&CLASS, "ip sport", 1, 1);
        assert_eq!(h.read_handler("header").unwrap(), "tcpudp");
        assert_eq!(h.read_handler("field").unwrap(), "tcpudp sport");
        let h = Harness::push(&CLASS, "ip proto 50 [4:4]", 1, 1);
        assert_eq!(h.read_handler("header").unwrap(), "50");
    }

    #[test]
    fn pull_passes_fields_and_pushes_the_rest() {
        let mut h = Harness::new(
            &CLASS,
            "udp sport",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull, Processing::Push],
            },
        );
        h.feed(0, [udp(), tcp()]);
        let got = h.pull(0, 8);
        assert_eq!(got.iter().map(|p| p.anno().flow).collect::<Vec<_>>(), [30]);
        assert_eq!(h.take(1).len(), 1);
    }

    #[test]
    fn bad_arguments_are_refused_with_clicks_messages() {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        let err = |a: &str| Harness::try_new(&CLASS, a, ports.clone()).err().unwrap();
        assert!(err("ip ttl junk").contains("garbage after field specification"));
        assert!(err("ip[3:2]").contains("does not fit within a single word"));
        assert!(err("ip src, INCREMENTAL true").contains("incompatible with field length 32"));
        assert!(err("bogus").contains("expected 'HEADER"));
        assert!(err("ip src/40").contains("bad prefix or mask"));
        assert!(err("").contains("FIELD"));
    }
}
