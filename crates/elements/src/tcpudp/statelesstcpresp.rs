//! `StatelessTCPResponder`: a TCP server that keeps no state at all, as
//! Click's `elements/tcpudp/statelesstcpresp.cc` sketches it: the state of
//! a connection travels in the sequence numbers. The initial sequence
//! number carries the client's MSS and source port, so every
//! acknowledgment the client sends says where in the data it stands, and
//! the answer to it is the next piece of DATA, then a FIN.
//!
//! A SYN's answer has ISS = (MSS << 16) + (source port << 8); the data's
//! byte i then has sequence number ISS + 1 + i and the FIN ISS + 1 +
//! len(DATA) (RFC 9293 section 3.4). An ACK for ISS + pos asks for the
//! data from pos: subtracting the port term gives back MSS (high 16 bits)
//! and pos (low 16 bits). Nothing about a connection is ever stored, so a
//! SYN flood costs nothing but the answers (the idea of SYN cookies, RFC
//! 4987 section 3.6); the price is that the ISS is predictable (RFC 6528),
//! which is why this is a toy for tests and measurements, not a server.

use super::segment::{self, TcpIp, ACK, FIN, RST, SYN};
use bricks_element::args::Data;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::MAX_FRAME;

/// The `StatelessTCPResponder` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StatelessTCPResponder",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

/// The longest DATA: positions up to len + 2 (after the FIN) must fit the
/// 16 bits the sequence numbers give them.
const MAX_DATA: usize = 0xffff - 2;

/// The largest payload of an answer: a packet buffer holds the 40 bytes of
/// headers and this much.
const MAX_SEGMENT: u32 = (MAX_FRAME - 40) as u32;

/// RFC 9293 section 3.7.1: the send MSS when a SYN has no MSS option.
const DEFAULT_MSS: u32 = 536;

/// The MSS this element announces.
const OWN_MSS: u16 = 1460;

static MANUAL: Manual = Manual {
    summary: "answers TCP connections with fixed data, keeping no state",
    synopsis: "StatelessTCPResponder(DATA)",
    description: "Serves DATA to every TCP connection that reaches it without keeping \
        anything per connection: the state of a connection is in its sequence numbers. \
        Input packets are IPv4 TCP segments (the IP header at the network header \
        annotation, else at the start); each gets at most one answer, a new TCP/IP packet \
        (TTL 200, window 65535, the network header and destination annotations set) out \
        of output 0, and is then dropped.\n\n\
        A SYN is answered with a SYN-ACK announcing MSS 1460, whose sequence number \
        ISS = (MSS << 16) + (sport << 8), with the client's MSS option (536 without one, \
        RFC 9293) and source port. An ACK for ISS + pos (pos counting the SYN as 0 and \
        DATA's first byte as 1) is answered with DATA from pos, at most the client's MSS \
        and its window, and a FIN once the data is all sent; each answer acknowledges \
        everything the client's segment carried (its data and FIN). So the client, \
        acknowledging each answer, pulls DATA through one segment at a time. An ACK for \
        everything (FIN included) is answered, with a bare ACK, only when it carries \
        data or a FIN of its own. Resets are dropped and counted. A SYN-ACK, a segment \
        with neither SYN nor ACK, an MSS below 20, or an acknowledgment that decodes to \
        no position in DATA is dropped and counted as evil.\n\n\
        What is not a TCP segment (another protocol, a fragment, lengths that disagree \
        with the packet) goes to output 1, or is dropped (`unconnected_drops`) when it is \
        unconnected.\n\n\
        Click's element is a sketch that does not compile (Click marks it \
        ELEMENT_REQUIRES(false)) and names no argument for its data; bricks takes DATA. \
        Where the sketch is wrong bricks follows TCP: the acknowledgment number is the \
        client's sequence number plus what its segment occupies (Click's is the sequence \
        number itself, which no client accepts for a SYN), the default MSS is 536 (Click: \
        576), an acknowledgment of ISS alone is evil (Click reads before DATA), an \
        acknowledgment of everything sends no data (Click's length wraps), and the \
        answers' IP identification counts up by 1 (Click's by 2). DATA is at most 65533 \
        bytes.",
    ports: "one input; output 0: answers; output 1 (optional, push): what is not TCP",
    keywords: &[Keyword {
        name: "DATA",
        ty: "data (string or \\<hex>), at most 65533 bytes",
        default: Some("empty"),
        doc: "what every connection is served; positional",
    }],
    counters: &[
        ("replies", "answers sent"),
        ("resets", "resets received (dropped)"),
        ("evil", "segments that fit no connection of this responder"),
        ("quiet", "acknowledgments that needed no answer"),
    ],
    example: "tun :: KernelTun(10.9.0.1/24);\n\
        tun -> CheckIPHeader -> c :: IPClassifier(tcp dst port 80, -);\n\
        c[0] -> StatelessTCPResponder(\"HTTP/1.0 200 OK\\r\\n\\r\\nhello\\n\") -> tun;\n\
        c[1] -> Discard;",
    see_also: &["TCPReflector", "CheckTCPHeader", "KernelTun"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let Data(data) = args.read_p("DATA")?.unwrap_or_default();
    if data.len() > MAX_DATA {
        return Err(ArgError::new(format!(
            "DATA of {} bytes: at most {MAX_DATA}, what 16 bits of sequence number address",
            data.len()
        )));
    }
    Ok(Box::new(StatelessTCPResponder {
        data,
        id: 0,
        replies: 0,
        resets: 0,
        evil: 0,
        quiet: 0,
    }))
}

/// Answers TCP segments from its data.
#[derive(Debug)]
pub struct StatelessTCPResponder {
    data: Vec<u8>,
    /// The next IP identification.
    id: u16,
    replies: u64,
    resets: u64,
    evil: u64,
    quiet: u64,
}

/// What becomes of one input packet.
enum Verdict {
    Reply(Packet),
    NotTcp,
    Drop,
}

/// The client's MSS from a SYN's options (RFC 9293 section 3.2): the last
/// well-formed MSS option before the end of the list, else the default.
fn syn_mss(options: &[u8]) -> u32 {
    let mut mss = DEFAULT_MSS;
    let mut i = 0;
    while i < options.len() {
        match options[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let Some(&len) = options.get(i + 1) else {
                    break;
                };
                let len = usize::from(len);
                if len < 2 || i + len > options.len() {
                    break;
                }
                if kind == 2 && len == 4 {
                    mss = u32::from(u16::from_be_bytes([options[i + 2], options[i + 3]]));
                }
                i += len;
            }
        }
    }
    mss
}

impl StatelessTCPResponder {
    fn answer(&mut self, p: &Packet) -> Verdict {
        let Ok(s) = segment::locate_in(p) else {
            return Verdict::NotTcp;
        };
        let frame = p.data();
        let flags = s.flags(frame);
        let sport = u32::from(s.sport(frame));
        let (ackno, syn) = if flags & RST != 0 {
            self.resets += 1;
            return Verdict::Drop;
        } else if flags & (SYN | ACK) == SYN {
            (
                (syn_mss(s.options(frame)) << 16).wrapping_add(sport << 8),
                true,
            )
        } else if flags & (SYN | ACK) == ACK {
            (s.ack(frame), false)
        } else {
            self.evil += 1;
            return Verdict::Drop;
        };
        let base = ackno.wrapping_sub(sport << 8);
        let (mss, pos) = (base >> 16, (base & 0xffff) as usize);
        let end = self.data.len() + 2;
        if mss < 20 || pos > end || (!syn && pos == 0) {
            self.evil += 1;
            return Verdict::Drop;
        }
        // How much of the stream (data, then the FIN) this answer carries.
        let mut take = if syn {
            0
        } else {
            mss.min(u32::from(s.window(frame))).min(MAX_SEGMENT) as usize
        };
        take = take.min(end - pos);
        let fin = take > 0 && pos + take == end;
        let data_len = take - usize::from(fin);
        if !syn && take == 0 && s.seq_len(frame) == 0 {
            // Nothing to send and nothing to acknowledge: answering would
            // only start an exchange of bare ACKs.
            self.quiet += 1;
            return Verdict::Drop;
        }
        // DATA's byte i is at position i + 1; past the data (the FIN's
        // position and after) there is nothing to send.
        let data_at = pos.saturating_sub(1);
        let payload = self.data.get(data_at..data_at + data_len).unwrap_or(&[]);
        let mss_option = [2, 4, (OWN_MSS >> 8) as u8, OWN_MSS as u8];
        let reply = TcpIp {
            src: s.dst(frame),
            dst: s.src(frame),
            sport: s.dport(frame),
            dport: s.sport(frame),
            seq: ackno,
            // What the client's segment occupies, except the data of a SYN,
            // which a stateless server cannot keep (RFC 9293 section 3.10.7.2
            // lets it be sent again).
            ack: s
                .seq(frame)
                .wrapping_add(if syn { 1 } else { s.seq_len(frame) }),
            flags: if syn { SYN | ACK } else { ACK } | if fin { FIN } else { 0 },
            window: 0xffff,
            ttl: 200,
            id: self.id,
            options: if syn { &mss_option } else { &[] },
            payload,
            ..TcpIp::default()
        };
        self.id = self.id.wrapping_add(1);
        match reply.packet() {
            Some(q) => {
                self.replies += 1;
                Verdict::Reply(q)
            }
            None => Verdict::Drop,
        }
    }

    /// Answers every packet of `batch`: answers stay in `batch`, what is
    /// not TCP is pushed out of output 1.
    fn run(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut others = Batch::new();
        let mut answers = Batch::new();
        for p in batch.drain() {
            match self.answer(&p) {
                // At most one answer per input packet: `answers` has room.
                Verdict::Reply(q) => {
                    let _ = answers.push(q);
                }
                Verdict::NotTcp => {
                    let _ = others.push(p);
                }
                Verdict::Drop => {}
            }
        }
        cx.push(1, &mut others);
        batch.append(&mut answers);
    }
}

impl Element for StatelessTCPResponder {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.run(batch, cx);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, cx| self.run(b, cx));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("replies", self.replies);
        s.counter("resets", self.resets);
        s.counter("evil", self.evil);
        s.counter("quiet", self.quiet);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, ip_ok, tcp_ok};
    use super::super::segment::PSH;
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    fn seg(frame: &[u8]) -> segment::Segment {
        segment::locate(frame, 0).unwrap()
    }

    const C: [u8; 4] = [10, 0, 0, 1];
    const S: [u8; 4] = [10, 0, 0, 2];

    fn from_client(seq: u32, ack: u32, flags: u8, options: &[u8], data: &[u8]) -> Vec<u8> {
        let mut d = datagram(C, S, 40000, 80, seq, ack, flags, options, data);
        // A window of 64 KiB less one (datagram writes 0xfaf0).
        let s = seg(&d);
        s.set_tcp16(&mut d, 14, 0xffff);
        d
    }

    fn answer(h: &mut Harness, pkt: &[u8]) -> Option<Vec<u8>> {
        h.push_bytes(0, pkt);
        let mut out = h.take_bytes(0);
        assert!(out.len() <= 1);
        out.pop().inspect(|a| {
            assert!(ip_ok(a) && tcp_ok(a));
            // From the server, to the client.
            assert_eq!(a[12..20], [S, C].concat());
            assert_eq!(a[20..24], [0, 80, 0x9c, 0x40]);
        })
    }

    fn be32(b: &[u8], at: usize) -> u32 {
        u32::from_be_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn serves_a_whole_connection() {
        let data: Vec<u8> = (0..50u8).collect();
        let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
        let mut h = Harness::push(&CLASS, &format!("DATA \\<{hex}>"), 1, 2);
        // SYN with MSS 20: 20-byte pieces.
        let syn = from_client(5000, 0, SYN, &[2, 4, 0, 20], &[]);
        let sa = answer(&mut h, &syn).unwrap();
        let iss = (20u32 << 16) + (40000 << 8);
        assert_eq!(be32(&sa, 24), iss);
        assert_eq!(be32(&sa, 28), 5001);
        assert_eq!(sa[33], SYN | ACK);
        // The MSS option, 1460.
        assert_eq!(sa[32] >> 4, 6);
        assert_eq!(sa[40..44], [2, 4, 0x05, 0xb4]);
        assert_eq!(sa[8], 200);
        // The handshake's ACK, carrying a request: the first 20 bytes,
        // the request acknowledged.
        let a = answer(&mut h, &from_client(5001, iss + 1, ACK | PSH, &[], b"GET")).unwrap();
        assert_eq!(be32(&a, 24), iss + 1);
        assert_eq!(be32(&a, 28), 5004);
        assert_eq!(a[33], ACK);
        assert_eq!(&a[40..], &data[..20]);
        let a = answer(&mut h, &from_client(5004, iss + 21, ACK, &[], &[])).unwrap();
        assert_eq!(&a[40..], &data[20..40]);
        // The last 10 bytes and the FIN.
        let a = answer(&mut h, &from_client(5004, iss + 41, ACK, &[], &[])).unwrap();
        assert_eq!(a[33], ACK | FIN);
        assert_eq!(&a[40..], &data[40..]);
        // The client acknowledges the FIN: nothing to say.
        assert!(answer(&mut h, &from_client(5004, iss + 52, ACK, &[], &[])).is_none());
        // Its own FIN is acknowledged.
        let a = answer(&mut h, &from_client(5004, iss + 52, ACK | FIN, &[], &[])).unwrap();
        assert_eq!(a[33], ACK);
        assert_eq!(be32(&a, 24), iss + 52);
        assert_eq!(be32(&a, 28), 5005);
        assert_eq!(a.len(), 40);
        let st = h.stats();
        assert_eq!(st.get("replies"), Some(5));
        assert_eq!(st.get("quiet"), Some(1));
    }

    #[test]
    fn the_window_and_the_default_mss_limit_pieces() {
        let mut h = Harness::push(&CLASS, &format!("\"{}\"", "x".repeat(1000)), 1, 1);
        let iss = (536u32 << 16) + (40000 << 8);
        let sa = answer(&mut h, &from_client(1, 0, SYN, &[1, 1, 1, 0], &[])).unwrap();
        assert_eq!(be32(&sa, 24), iss);
        let a = answer(&mut h, &from_client(2, iss + 1, ACK, &[], &[])).unwrap();
        assert_eq!(a.len(), 40 + 536);
        let mut small = from_client(2, iss + 1, ACK, &[], &[]);
        seg(&small).set_tcp16(&mut small, 14, 100);
        assert_eq!(answer(&mut h, &small).unwrap().len(), 140);
        // A zero window and nothing to acknowledge: no answer.
        seg(&small).set_tcp16(&mut small, 14, 0);
        assert!(answer(&mut h, &small).is_none());
    }

    #[test]
    fn evil_resets_and_others() {
        let mut h = Harness::push(&CLASS, "\"abc\"", 1, 2);
        let iss = (1460u32 << 16) + (40000 << 8);
        for (pkt, why) in [
            (from_client(1, 0, SYN | ACK, &[], &[]), "evil"),
            (from_client(1, 0, 0, &[], &[]), "evil"),
            (from_client(1, 0, FIN, &[], &[]), "evil"),
            // MSS below 20.
            (from_client(1, 0, SYN, &[2, 4, 0, 19], &[]), "evil"),
            // Acknowledges only the ISS, or past the FIN.
            (from_client(1, iss, ACK, &[], &[]), "evil"),
            (from_client(1, iss + 6, ACK, &[], &[]), "evil"),
            (from_client(1, 7, ACK, &[], &[]), "evil"),
            (from_client(1, 0, RST, &[], &[]), "resets"),
            (from_client(1, 0, RST | ACK, &[], &[]), "resets"),
        ] {
            let before = h.stats().get(why).unwrap_or(0);
            assert!(answer(&mut h, &pkt).is_none(), "{why}");
            assert_eq!(h.stats().get(why), Some(before + 1), "{why}");
        }
        let mut udp = from_client(1, 0, SYN, &[], &[]);
        udp[9] = 17;
        let mut frag = from_client(1, 0, SYN, &[], &[]);
        frag[6] = 0x20;
        let short = from_client(1, 0, SYN, &[], &[])[..30].to_vec();
        for p in [&udp, &frag, &short] {
            h.push_bytes(0, p);
        }
        assert!(h.take(0).is_empty());
        assert_eq!(h.take_bytes(1), vec![udp, frag, short]);
        // Every truncation of a valid SYN is harmless.
        let syn = from_client(1, 0, SYN, &[2, 4, 5, 0xb4], &[]);
        for len in 0..syn.len() {
            h.push_bytes(0, &syn[..len]);
        }
        assert_eq!(h.take(1).len(), syn.len());
    }

    #[test]
    fn mss_options_are_read_safely() {
        assert_eq!(syn_mss(&[]), 536);
        assert_eq!(syn_mss(&[1, 2, 4, 1, 0]), 256);
        assert_eq!(syn_mss(&[0, 2, 4, 1, 0]), 536);
        assert_eq!(syn_mss(&[2, 4, 1]), 536);
        assert_eq!(syn_mss(&[3, 0, 2, 4, 1, 0]), 536);
        assert_eq!(
            syn_mss(&[8, 10, 0, 0, 0, 0, 0, 0, 0, 0, 2, 4, 0x23, 0x28]),
            9000
        );
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(m("").is_ok());
        assert!(m("\\<00 01>").is_ok());
        let big = format!("\"{}\"", "x".repeat(MAX_DATA + 1));
        assert!(m(&big).unwrap_err().contains("at most 65533"));
        assert!(m("DATA a, FOO b").is_err());
    }
}
