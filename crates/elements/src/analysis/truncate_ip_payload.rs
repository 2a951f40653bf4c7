//! `TruncateIPPayload`: cuts IP packets down to their headers and at
//! most LENGTH bytes of payload (Click's `elements/ip/truncateippayload.cc`),
//! as a trace keeping headers only is made.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};

/// The `TruncateIPPayload` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TruncateIPPayload",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "limits payload length",
    synopsis: "TruncateIPPayload([LENGTH, TRANSPORT, KEYWORDS])",
    description: "Shortens IP packets to hold at most LENGTH bytes of payload, removing bytes \
        at the end. The payload starts after the transport header (TCP's data offset, 8 bytes \
        for UDP, 8 for ICMP or 20 for ICMP timestamps), or, with TRANSPORT false, after the \
        IP header. The IP header is at the network header annotation; the transport header \
        after it by the IP header length, for any fragment, as Click's MarkIPHeader puts it; \
        an IP header length under 20 bytes counts as 20, a TCP data offset under 20 bytes \
        (or unreadable) as 20. Bytes before the network header are kept. A packet without a \
        network header annotation is cut to LENGTH bytes. The IP length and checksum are \
        not changed, as in Click: the packet stands for its whole length, and with \
        EXTRA_LENGTH the bytes removed are added to the extra length annotation. Same as \
        Click.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "LENGTH",
            ty: "unsigned 16-bit",
            default: Some("0"),
            doc: "most payload bytes kept; positional",
        },
        Keyword {
            name: "TRANSPORT",
            ty: "boolean",
            default: Some("true"),
            doc: "the payload starts after the transport header (false: after the IP header); \
                  positional",
        },
        Keyword {
            name: "EXTRA_LENGTH",
            ty: "boolean",
            default: Some("true"),
            doc: "add the bytes removed to the extra length annotation",
        },
    ],
    counters: &[],
    example: "InfiniteSource(DATA \\<45 00 00 20 00 01 00 00 40 11 66 ca 0a 00 00 01 0a 00 00 02 \
              04 d2 00 35 00 0c 49 2f de ad be ef>, LIMIT 1, STOP true)\n\
              -> MarkIPHeader -> TruncateIPPayload(2) -> Discard;",
    see_also: &["Truncate", "EraseIPPayload", "AnonymizeIPAddr"],
};

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let length = args.read_p::<u16>("LENGTH")?.unwrap_or(0);
    let transport = args.read_p::<bool>("TRANSPORT")?.unwrap_or(true);
    let extra_length = args.read::<bool>("EXTRA_LENGTH")?.unwrap_or(true);
    Ok(Box::new(TruncateIPPayload {
        length: usize::from(length),
        transport,
        extra_length,
    }))
}

/// One worker's TruncateIPPayload.
#[derive(Debug)]
pub struct TruncateIPPayload {
    length: usize,
    transport: bool,
    extra_length: bool,
}

impl TruncateIPPayload {
    /// Bytes to keep of `ip` (the network header and all after it), as
    /// Click's `simple_action` counts them.
    fn keep(&self, ip: &[u8]) -> usize {
        let mut n = self.length;
        let ihl = ip.first().map_or(0, |&b| usize::from(b & 0x0F) * 4);
        if ihl < 20 {
            // A broken IP header counts as 20 bytes; no transport header.
            return n + 20;
        }
        n += ihl;
        if self.transport && ip.len() >= 10 {
            let l4 = ip.get(ihl..).unwrap_or(&[]);
            n += match ip[9] {
                TCP => match l4.get(12).map(|&b| usize::from(b >> 4) * 4) {
                    Some(off) if off >= 20 => off,
                    _ => 20,
                },
                UDP => 8,
                // ICMP timestamp and timestamp reply carry 12 more bytes.
                ICMP if l4.len() >= 8 => {
                    if matches!(l4[0], 13 | 14) {
                        20
                    } else {
                        8
                    }
                }
                _ => 0,
            };
        }
        n
    }

    fn apply(&self, p: &mut Packet) {
        let cut = match p.network_header() {
            Some(ip) => ip.len().saturating_sub(self.keep(ip)),
            None => p.len().saturating_sub(self.length),
        }
        // A network header the packet was stripped past counts the
        // stripped bytes, but only the frame's can be removed.
        .min(p.len());
        if cut > 0 {
            if self.extra_length {
                let a = p.anno_mut();
                a.extra_length = a.extra_length.saturating_add(cut as u32);
            }
            p.take_back(cut);
        }
    }

    fn apply_batch(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            self.apply(p);
        }
    }
}

impl Element for TruncateIPPayload {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply_batch(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply_batch(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    /// TCP 10.0.0.1:1234 -> 10.0.0.2:80 with a 4-byte option (NOP NOP
    /// NOP EOL, data offset 6) and 8 bytes of payload; checksums valid.
    const TCP_OPT: [u8; 52] = [
        0x45, 0x00, 0x00, 0x34, 0x00, 0x01, 0x00, 0x00, 0x40, 0x06, 0x66, 0xc1, 10, 0, 0, 1, 10, 0,
        0, 2, // IP
        0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, 0x60, 0x18, 0x20, 0x00, 0x54, 0x84, 0x00,
        0x00, 1, 1, 1, 0, // TCP
        1, 2, 3, 4, 5, 6, 7, 8,
    ];

    /// UDP 10.0.0.1:1234 -> 10.0.0.2:53 with 4 bytes of payload.
    const UDP_DATA: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x66, 0xca, 10, 0, 0, 1, 10, 0,
        0, 2, // IP
        0x04, 0xd2, 0x00, 0x35, 0x00, 0x0c, 0x49, 0x2f, // UDP
        0xde, 0xad, 0xbe, 0xef,
    ];

    /// ICMP timestamp request 10.0.0.1 -> 10.0.0.2 (20-byte header) with
    /// 4 trailing bytes.
    const ICMP_TSTAMP: [u8; 44] = [
        0x45, 0x00, 0x00, 0x2c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0x66, 0xce, 10, 0, 0, 1, 10, 0,
        0, 2, // IP
        13, 0, 0x7b, 0x63, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, // ICMP
        0xaa, 0xbb, 0xcc, 0xdd,
    ];

    fn ip(b: &[u8], at: usize) -> Packet {
        let mut p = Packet::from_slice(b).unwrap();
        p.set_network_header(at);
        p
    }

    fn run(args: &str, packets: Vec<Packet>) -> Vec<Packet> {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(0, packets);
        h.take(0)
    }

    fn lens(ps: &[Packet]) -> Vec<usize> {
        ps.iter().map(Packet::len).collect()
    }

    #[test]
    fn payload_is_cut_after_the_transport_header() {
        let out = run(
            "",
            vec![ip(&TCP_OPT, 0), ip(&UDP_DATA, 0), ip(&ICMP_TSTAMP, 0)],
        );
        assert_eq!(lens(&out), [44, 28, 40]);
        assert_eq!(out[0].data(), &TCP_OPT[..44]);
        // The IP header is kept whole: length and checksum unchanged.
        assert_eq!(out[1].data(), &UDP_DATA[..28]);
        assert_eq!(
            out.iter()
                .map(|p| p.anno().extra_length)
                .collect::<Vec<_>>(),
            [8, 4, 4]
        );
        let out = run("3", vec![ip(&TCP_OPT, 0), ip(&UDP_DATA, 0)]);
        assert_eq!(lens(&out), [47, 31]);
        let out = run("100", vec![ip(&TCP_OPT, 0)]);
        assert_eq!(out[0].data(), &TCP_OPT[..]);
        assert_eq!(out[0].anno().extra_length, 0);
    }

    #[test]
    fn without_transport_the_payload_starts_after_ip() {
        let out = run("4, false", vec![ip(&TCP_OPT, 0), ip(&UDP_DATA, 0)]);
        assert_eq!(lens(&out), [24, 24]);
        let out = run(
            "LENGTH 0, TRANSPORT false, EXTRA_LENGTH false",
            vec![ip(&UDP_DATA, 0)],
        );
        assert_eq!(lens(&out), [20]);
        assert_eq!(out[0].anno().extra_length, 0);
    }

    #[test]
    fn bytes_before_the_network_header_are_kept() {
        let mut frame = vec![0xee; 14];
        frame.extend_from_slice(&UDP_DATA);
        let out = run("1", vec![ip(&frame, 14)]);
        assert_eq!(out[0].data(), &frame[..14 + 29]);
    }

    #[test]
    fn non_ip_packets_are_cut_to_length() {
        let out = run(
            "10",
            vec![
                Packet::from_slice(&[7; 30]).unwrap(),
                Packet::from_slice(&[7; 5]).unwrap(),
            ],
        );
        assert_eq!(lens(&out), [10, 5]);
        assert_eq!(out[0].anno().extra_length, 20);
    }

    #[test]
    fn broken_headers_count_as_clicks() {
        // IP header length 8 bytes: counted as 20, no transport header.
        let mut bad = UDP_DATA;
        bad[0] = 0x42;
        // ICMP cut before its 8 bytes: no transport header counted.
        let short_icmp = &ICMP_TSTAMP[..26];
        // TCP data offset 2 (under 5): counted as 20.
        let mut off2 = TCP_OPT;
        off2[32] = 0x20;
        let out = run(
            "",
            vec![
                ip(&bad, 0),
                ip(short_icmp, 0),
                ip(&off2, 0),
                ip(&TCP_OPT[..30], 0),
            ],
        );
        assert_eq!(lens(&out), [20, 20, 40, 30]);
    }

    #[test]
    fn truncated_packets_never_panic() {
        let mut ps = Vec::new();
        for n in 0..=TCP_OPT.len() {
            ps.push(ip(&TCP_OPT[..n], 0));
            ps.push(ip(&ICMP_TSTAMP[..n.min(44)], 0));
        }
        let mut long_ihl = UDP_DATA;
        long_ihl[0] = 0x4f;
        ps.push(ip(&long_ihl, 0));
        let out = run("", ps);
        assert!(out.iter().all(|p| p.len() <= TCP_OPT.len()));
        assert_eq!(out.last().unwrap().data(), &long_ihl[..]);
    }

    #[test]
    fn pull_and_arguments() {
        let mut h = Harness::new(
            &CLASS,
            "0",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull],
            },
        );
        h.feed(0, [ip(&UDP_DATA, 0)]);
        assert_eq!(h.pull(0, 4)[0].len(), 28);
        let push = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        assert!(Harness::try_new(&CLASS, "65536", push.clone()).is_err());
        assert!(Harness::try_new(&CLASS, "1, maybe", push.clone()).is_err());
        assert!(Harness::try_new(&CLASS, "BOGUS 1", push).is_err());
    }
}
