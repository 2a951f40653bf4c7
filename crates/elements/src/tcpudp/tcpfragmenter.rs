//! `TCPFragmenter`: cuts TCP segments whose datagram exceeds an MTU into
//! several segments, as TCP segmentation offload does in a NIC and GSO in
//! Linux (`tcp_gso_segment`), with Click's arguments
//! (`elements/tcpudp/tcpfragmenter.cc`).
//!
//! Each new segment is the original's link header, IP header and TCP
//! header (options included) followed by its piece of the payload; its
//! sequence number is advanced by the bytes before it (RFC 9293 section
//! 3.4, a SYN counting for one), control bits that mark the start of the
//! stream (SYN, CWR) stay on the first segment and those that mark its end
//! (FIN, PSH, RST) on the last, the urgent pointer follows the urgent byte
//! (RFC 9293 section 3.8.5), the IP identification counts up per segment
//! (RFC 6864 section 4.1), and both checksums are summed anew.

use super::segment::{self, NotSegment, Segment, CWR, FIN, PSH, RST, SYN, URG};
use crate::ip::header::be16;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};

/// The `TCPFragmenter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TCPFragmenter",
    ports: "1/1",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "segments TCP packets to fit an MTU",
    synopsis: "TCPFragmenter(MTU [, MTU_ANNO])",
    description: "Cuts every TCP/IP packet whose IP datagram is longer than MTU bytes into \
        as many segments as it takes, each at most MTU bytes of IP datagram (IP header, TCP \
        header and payload: all but the last carry MTU less the two headers of payload). \
        Each segment is a copy of the packet's bytes before the IP header (an Ethernet \
        header, which is why the element works on frames as well as on IP packets), of \
        its IP header and of its TCP header with the options, followed by its piece of the \
        payload. The IP header is found at the network header annotation (else the packet \
        starts with it).\n\n\
        In each segment the sequence number is advanced by the payload bytes before it \
        (and by one after a SYN, which takes a sequence number before the data); SYN and \
        CWR stay on the first segment only, FIN, PSH and RST on the last only (a FIN in \
        the middle would end the stream early); with URG set, a segment before the \
        urgent byte points to it and the segments after it lose URG; the IP total length \
        is the segment's, the IP identification counts up from the original's, one per \
        segment (as Linux's GSO does); the IP header checksum and the TCP checksum are \
        summed anew.\n\n\
        Packets that fit go out unchanged, and so do IP packets of other protocols and IP \
        fragments, which hold no whole segment. A TCP packet whose lengths disagree with \
        its bytes (a header shorter than 20 bytes or running past the datagram, an IP \
        total length past the packet) is dropped and counted.\n\n\
        Differences from Click: Click's MTU keyword is read positionally too; Click keeps \
        FIN on all segments but the last only when it miscounts, keeps PSH, SYN, CWR and \
        URG on every segment, gives every segment the same IP identification and the \
        sequence number after a SYN one too low, and reads any packet as TCP. bricks has \
        no numbered annotation area: MTU_ANNO, given as Click gives it (a two-byte \
        annotation's name or offset), reads the next-hop MTU annotation, which IPFragmenter \
        sets. Bytes after the IP total length (Ethernet padding) are not copied into \
        segments.",
    ports: "one push input, one push output",
    keywords: &[
        Keyword {
            name: "MTU",
            ty: "unsigned 16-bit integer",
            default: Some("0"),
            doc: "the largest IP datagram, in bytes; 0: only MTU_ANNO; positional or \
                keyword",
        },
        Keyword {
            name: "MTU_ANNO",
            ty: "two-byte annotation (name or offset)",
            default: None,
            doc: "also cut at the packet's next-hop MTU annotation when it is set and \
                smaller than MTU",
        },
    ],
    counters: &[
        ("count", "packets in (Click's `count`)"),
        (
            "fragmented_count",
            "packets cut into segments (Click's `fragmented_count`)",
        ),
        ("fragments", "segments made (Click's `fragments`)"),
        (
            "drops",
            "TCP packets whose lengths disagree with their bytes",
        ),
    ],
    example: "tun :: KernelTun(10.9.0.1/24, MTU 2000);\n\
        tun -> MarkIPHeader -> TCPFragmenter(1500) \
        -> EtherEncap(0x0800, 2:0:0:0:0:1, 2:0:0:0:0:2) -> Queue -> ToDevice(eth0);",
    see_also: &["IPFragmenter", "SetTCPChecksum", "CheckTCPHeader"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mtu: u16 = args.read_p("MTU")?.unwrap_or(0);
    let anno: Option<String> = args.read("MTU_ANNO")?;
    if mtu == 0 && anno.is_none() {
        return Err(ArgError::new(
            "At least one of MTU and MTU_ANNO must be set",
        ));
    }
    Ok(Box::new(TCPFragmenter {
        mtu,
        mtu_anno: anno.is_some(),
        count: 0,
        fragmented: 0,
        fragments: 0,
        drops: 0,
    }))
}

/// Cuts TCP segments to an MTU.
#[derive(Debug)]
pub struct TCPFragmenter {
    mtu: u16,
    /// Whether MTU_ANNO was given: the next-hop MTU annotation counts.
    mtu_anno: bool,
    count: u64,
    fragmented: u64,
    fragments: u64,
    drops: u64,
}

impl TCPFragmenter {
    /// The MTU for `p` (Click's choice: the annotation when set and
    /// smaller than MTU, or when MTU is 0).
    fn mtu_for(&self, p: &Packet) -> usize {
        let mut mtu = self.mtu;
        let anno = p.anno().mtu;
        if self.mtu_anno && anno != 0 && (mtu == 0 || mtu > anno) {
            mtu = anno;
        }
        usize::from(mtu)
    }
}

/// The segments of `p` (located at `s`) for payloads of at most `max`
/// bytes, appended to `out` through `emit` (which pushes a full batch on).
fn cut(p: &Packet, s: &Segment, max: usize, mut emit: impl FnMut(Packet)) -> u64 {
    let frame = p.data();
    let head_len = s.payload();
    let total = s.payload_len();
    let flags = s.flags(frame);
    let seq = s.seq(frame);
    let id = be16(frame, s.ip + 4);
    let urgent_end =
        (flags & URG != 0).then(|| seq.wrapping_add(u32::from(be16(frame, s.tcp() + 18))));
    // The data starts one sequence number after a SYN.
    let data_seq = seq.wrapping_add(u32::from(flags & SYN != 0));
    let l3 = p.network_header_offset();
    let mut made = 0u64;
    let mut at = 0;
    while at < total {
        let len = max.min(total - at);
        let first = at == 0;
        let last = at + len == total;
        let mut q = Packet::new();
        *q.anno_mut() = *p.anno();
        // At most the original's length: it fits.
        if q.put_back(head_len + len).is_err() {
            break;
        }
        if let Some(off) = l3 {
            q.set_network_header(off);
        }
        let d = q.data_mut();
        d[..head_len].copy_from_slice(&frame[..head_len]);
        d[head_len..].copy_from_slice(&frame[head_len + at..head_len + at + len]);
        let seg = Segment {
            ip_len: s.ip_hlen + s.tcp_hlen + len,
            ..*s
        };
        let (i, t) = (seg.ip, seg.tcp());
        d[i + 2..i + 4].copy_from_slice(&(seg.ip_len as u16).to_be_bytes());
        d[i + 4..i + 6].copy_from_slice(&id.wrapping_add(made as u16).to_be_bytes());
        let seg_seq = if first {
            seq
        } else {
            data_seq.wrapping_add(at as u32)
        };
        d[t + 4..t + 8].copy_from_slice(&seg_seq.to_be_bytes());
        let mut f = flags;
        if !first {
            f &= !(SYN | CWR);
        }
        if !last {
            f &= !(FIN | PSH | RST);
        }
        if let Some(end) = urgent_end {
            // The urgent pointer is an offset from this segment's sequence
            // number to the byte after the urgent data.
            let to = end.wrapping_sub(seg_seq);
            if (1..=0xffff).contains(&to) {
                d[t + 18..t + 20].copy_from_slice(&(to as u16).to_be_bytes());
            } else {
                f &= !URG;
                d[t + 18..t + 20].fill(0);
            }
        }
        d[t + 13] = f;
        seg.fill_checksums(d);
        made += 1;
        emit(q);
        at += len;
    }
    made
}

impl Element for TCPFragmenter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.count += batch.len() as u64;
        let mut out = Batch::new();
        for p in batch.drain() {
            let mtu = self.mtu_for(&p);
            let s = match segment::locate_in(&p) {
                Ok(s) => s,
                Err(NotSegment::Malformed) if is_tcp(&p) => {
                    self.drops += 1;
                    continue;
                }
                Err(_) => {
                    push_out(&mut out, p, cx);
                    continue;
                }
            };
            let headers = s.ip_hlen + s.tcp_hlen;
            if mtu <= headers || s.ip_len <= mtu {
                push_out(&mut out, p, cx);
                continue;
            }
            self.fragmented += 1;
            self.fragments += cut(&p, &s, mtu - headers, |q| push_out(&mut out, q, cx));
        }
        cx.push(0, &mut out);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("fragmented_count", self.fragmented);
        s.counter("fragments", self.fragments);
        s.counter("drops", self.drops);
    }
}

/// Whether `p`'s IP header (as far as it goes) says TCP: a malformed TCP
/// packet is dropped, anything else malformed passes as Click passes it.
fn is_tcp(p: &Packet) -> bool {
    let d = p.data();
    let ip = segment::ip_offset(p);
    d.len() >= ip + 20 && d[ip] >> 4 == 4 && d[ip + 9] == segment::PROTO_TCP
}

/// Appends `p` to `out`, pushing `out` on first when it is full.
fn push_out(out: &mut Batch, p: Packet, cx: &mut Context<'_>) {
    if let Err(p) = out.push(p) {
        cx.push(0, out);
        let _ = out.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, ip_ok, sum, tcp_ok};
    use super::super::segment::{locate, ACK, ECE};
    use super::*;
    use crate::ip::header::be32;
    use bricks_runtime::testing::{make_element, Harness};

    fn payload(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + 3) as u8).collect()
    }

    /// A 20-byte IP header, a 32-byte TCP header (timestamps) and `n`
    /// bytes of payload, with `flags`.
    fn big(flags: u8, n: usize) -> Vec<u8> {
        let ts = [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
        datagram(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            40000,
            5001,
            1000,
            77,
            flags,
            &ts,
            &payload(n),
        )
    }

    /// Reassembles segments as a receiver would: checks each one's sums,
    /// sequence number and headers, returns the payload and the flags seen.
    fn reassemble(orig: &[u8], segs: &[Vec<u8>], mtu: usize) -> (Vec<u8>, Vec<u8>) {
        let mut data = Vec::new();
        let mut flags = Vec::new();
        let seq0 = be32(orig, 24);
        let syn = u32::from(orig[33] & SYN != 0);
        for (k, s) in segs.iter().enumerate() {
            assert!(s.len() <= mtu, "segment {k}: {} bytes", s.len());
            assert!(ip_ok(s), "segment {k} IP sum");
            assert!(tcp_ok(s), "segment {k} TCP sum");
            assert_eq!(usize::from(be16(s, 2)), s.len());
            assert_eq!(be16(s, 4), 0x1234 + k as u16, "id");
            // Addresses, ports, ack, window, options as in the original.
            assert_eq!(s[6..10], orig[6..10]);
            assert_eq!(s[12..24], orig[12..24]);
            assert_eq!(s[28..33], orig[28..33]);
            assert_eq!(s[34..36], orig[34..36]);
            assert_eq!(s[40..52], orig[40..52]);
            let want_seq = if k == 0 {
                seq0
            } else {
                seq0 + syn + data.len() as u32
            };
            assert_eq!(be32(s, 24), want_seq, "segment {k} seq");
            flags.push(s[33]);
            data.extend_from_slice(&s[52..]);
        }
        (data, flags)
    }

    #[test]
    fn cuts_at_the_mtu_and_reassembles() {
        let orig = big(ACK | PSH | FIN, 1950);
        let mut h = Harness::push(&CLASS, "MTU 1000", 1, 1);
        h.push_bytes(0, &orig);
        let segs = h.take_bytes(0);
        // 948 bytes a segment: 948, 948, 54.
        assert_eq!(
            segs.iter().map(Vec::len).collect::<Vec<_>>(),
            [1000, 1000, 106]
        );
        let (data, flags) = reassemble(&orig, &segs, 1000);
        assert_eq!(data, payload(1950));
        assert_eq!(flags, [ACK, ACK, ACK | PSH | FIN]);
        let st = h.stats();
        assert_eq!(st.get("count"), Some(1));
        assert_eq!(st.get("fragmented_count"), Some(1));
        assert_eq!(st.get("fragments"), Some(3));
        // An independent check of one segment's TCP sum against its
        // bytes: the sum over pseudo-header and segment is all ones.
        let s = &segs[1];
        let mut ph = s[12..20].to_vec();
        ph.extend([0, 6]);
        ph.extend(((s.len() - 20) as u16).to_be_bytes());
        ph.extend(&s[20..]);
        assert_eq!(sum(&ph), 0xffff);
    }

    #[test]
    fn syn_and_cwr_stay_first_and_data_follows_the_syn() {
        let orig = big(SYN | CWR | ECE, 100);
        let mut h = Harness::push(&CLASS, "100", 1, 1);
        h.push_bytes(0, &orig);
        let segs = h.take_bytes(0);
        // 48 bytes a segment.
        assert_eq!(segs.len(), 3);
        let (data, flags) = reassemble(&orig, &segs, 100);
        assert_eq!(data, payload(100));
        assert_eq!(flags, [SYN | CWR | ECE, ECE, ECE]);
        // The first data byte is sequence number ISN+1.
        assert_eq!(be32(&segs[1], 24), 1000 + 1 + 48);
    }

    #[test]
    fn urgent_pointer_follows_the_urgent_byte() {
        let mut fixed = big(ACK | URG, 300);
        // Urgent data ends before byte 150.
        fixed[38..40].copy_from_slice(&150u16.to_be_bytes());
        let s = locate(&fixed, 0).unwrap();
        s.fill_checksums(&mut fixed);
        let mut h = Harness::push(&CLASS, "MTU 152", 1, 1);
        h.push_bytes(0, &fixed);
        let segs = h.take_bytes(0);
        // 100 bytes a segment: urgent pointer 150, then 50, then none.
        assert_eq!(segs.len(), 3);
        let (data, flags) = reassemble(&fixed, &segs, 152);
        assert_eq!(data, payload(300));
        assert_eq!(flags, [ACK | URG, ACK | URG, ACK]);
        assert_eq!(be16(&segs[0], 38), 150);
        assert_eq!(be16(&segs[1], 38), 50);
        assert_eq!(be16(&segs[2], 38), 0);
    }

    #[test]
    fn the_link_header_is_copied_and_the_annotation_kept() {
        let orig = big(ACK, 1000);
        let mut frame = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
        frame.extend(&orig);
        // Ethernet padding past the datagram is not copied.
        frame.extend([0xee; 4]);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        p.anno_mut().paint = 9;
        let mut h = Harness::push(&CLASS, "MTU 600", 1, 1);
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out.len(), 2);
        let segs: Vec<Vec<u8>> = out.iter().map(|p| p.data()[14..].to_vec()).collect();
        let (data, _) = reassemble(&orig, &segs, 600);
        assert_eq!(data, payload(1000));
        for p in &out {
            assert_eq!(p.data()[..14], frame[..14]);
            assert_eq!(p.network_header_offset(), Some(14));
            assert_eq!(p.anno().paint, 9);
        }
    }

    #[test]
    fn what_fits_or_is_not_tcp_passes_unchanged() {
        let mut h = Harness::push(&CLASS, "MTU 1000", 1, 1);
        let fits = big(ACK, 948);
        let mut udp = big(ACK, 1500);
        udp[9] = 17;
        let mut frag = big(ACK, 1500);
        frag[6] = 0x20;
        for p in [&fits, &udp, &frag] {
            h.push_bytes(0, p);
        }
        assert_eq!(h.take_bytes(0), vec![fits, udp, frag]);
        assert_eq!(h.stats().get("fragments"), Some(0));
    }

    #[test]
    fn malformed_tcp_is_dropped_at_every_length() {
        let orig = big(ACK, 1500);
        let mut h = Harness::push(&CLASS, "MTU 1000", 1, 1);
        for len in 0..60 {
            h.push_bytes(0, &orig[..len]);
        }
        let mut bad_off = orig.clone();
        bad_off[32] = 0x40;
        h.push_bytes(0, &bad_off);
        let mut long = orig.clone();
        long[2..4].copy_from_slice(&2000u16.to_be_bytes());
        h.push_bytes(0, &long);
        let out = h.take_bytes(0);
        // Too short to say TCP (under 20 bytes) passes as Click passes it.
        assert_eq!(out.len(), 20);
        assert_eq!(h.stats().get("drops"), Some(42));
    }

    #[test]
    fn mtu_anno_picks_the_smaller() {
        let orig = big(ACK, 1000);
        let mut h = Harness::push(&CLASS, "MTU 1500, MTU_ANNO 20", 1, 1);
        let mut p = Packet::from_slice(&orig).unwrap();
        p.anno_mut().mtu = 552;
        h.push_packets(0, [p, Packet::from_slice(&orig).unwrap()]);
        let out = h.take_bytes(0);
        // 500 bytes a segment for the first; the second fits 1500.
        assert_eq!(
            out.iter().map(Vec::len).collect::<Vec<_>>(),
            [552, 552, 1052]
        );
        let mut h = Harness::push(&CLASS, "MTU_ANNO 20", 1, 1);
        h.push_bytes(0, &orig);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn a_full_batch_of_big_packets_all_comes_out_in_order() {
        let mut h = Harness::push(&CLASS, "MTU 300", 1, 1);
        let pkts: Vec<Packet> = (0..200u32)
            .map(|i| {
                let mut d = big(ACK, 600);
                d[24..28].copy_from_slice(&(i * 1000).to_be_bytes());
                let s = locate(&d, 0).unwrap();
                s.fill_checksums(&mut d);
                Packet::from_slice(&d).unwrap()
            })
            .collect();
        h.push_packets(0, pkts);
        let out = h.take_bytes(0);
        // 248 bytes a segment: 3 each.
        assert_eq!(out.len(), 600);
        for (k, s) in out.iter().enumerate() {
            let (i, j) = (k / 3, k % 3);
            assert_eq!(be32(s, 24), i as u32 * 1000 + 248 * j as u32);
        }
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(m("").unwrap_err().contains("At least one"));
        assert!(m("0").is_err());
        assert!(m("MTU 70000").is_err());
        assert!(m("MTU 1500, MTU_ANNO 20").is_ok());
        assert!(m("1500, FOO 1").is_err());
    }
}
