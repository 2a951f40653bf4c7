//! `EraseIPPayload`: zeroes the payload of TCP and UDP packets, keeping
//! their length (Click's `elements/analysis/eraseippayload.cc`), so that
//! a trace keeps its headers and sizes without its contents.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};

/// The `EraseIPPayload` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EraseIPPayload",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "erases IP packet payload",
    synopsis: "EraseIPPayload()",
    description: "Erases the TCP or UDP payload of passing packets: every byte after the \
        transport header, to the end of the packet, becomes zero, and the packet keeps its \
        length. The TCP or UDP checksum is set to zero too (for TCP that is a wrong \
        checksum; for UDP it means none), when the packet holds it. The transport header \
        is where Click's MarkIPHeader puts it, the IP header length after the IP header \
        (for a later fragment too), and TCP's length is its data offset, as in Click. ICMP \
        packets pass unchanged; packets of any other protocol are dropped and counted. The \
        IP header is at the network header annotation, or at the packet's start. \
        Differences from Click: a TCP packet cut short before its data offset byte has \
        nothing erased, and a packet too short to have a protocol byte is dropped (Click \
        reads past their ends).",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[
        ("erased", "TCP and UDP packets whose payload was erased"),
        (
            "dropped",
            "packets dropped: neither TCP, UDP nor ICMP, or too short to tell",
        ),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 20 00 01 00 00 40 11 66 ca 0a 00 00 01 0a 00 00 02 \
              04 d2 00 35 00 0c 49 2f de ad be ef>, LIMIT 1, STOP true)\n\
              -> MarkIPHeader -> EraseIPPayload -> Discard;",
    see_also: &["AnonymizeIPAddr", "TruncateIPPayload"],
};

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(EraseIPPayload {
        erased: 0,
        dropped: 0,
    }))
}

/// One worker's EraseIPPayload.
#[derive(Debug)]
pub struct EraseIPPayload {
    erased: u64,
    dropped: u64,
}

/// Erases `ip`'s payload (the IP header and all after it); whether the
/// packet stays.
fn erase(ip: &mut [u8]) -> bool {
    let (Some(&vhl), Some(&proto)) = (ip.first(), ip.get(9)) else {
        return false;
    };
    let th = usize::from(vhl & 0x0F) * 4;
    let (payload, sum) = match proto {
        // A header cut before its data offset has no payload found.
        TCP => match ip.get(th + 12) {
            Some(&off) => (th + usize::from(off >> 4) * 4, th + 16),
            None => (ip.len(), th + 16),
        },
        UDP => (th + 8, th + 6),
        ICMP => return true,
        _ => return false,
    };
    if let Some(rest) = ip.get_mut(payload..) {
        rest.fill(0);
    }
    if let Some(s) = ip.get_mut(sum..sum + 2) {
        s.fill(0);
    }
    true
}

impl EraseIPPayload {
    fn classify(&mut self, p: &mut Packet) -> Option<usize> {
        let ip = p.l3_bytes_mut();
        let is_tcp_or_udp = matches!(ip.get(9), Some(&TCP | &UDP));
        if erase(ip) {
            self.erased += u64::from(is_tcp_or_udp);
            Some(0)
        } else {
            self.dropped += 1;
            None
        }
    }
}

impl Element for EraseIPPayload {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.classify(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.classify(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("erased", self.erased);
        s.counter("dropped", self.dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    /// RFC 1071 sum of `b` (odd length padded), as an independent check.
    fn sum(b: &[u8]) -> u32 {
        b.chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
            .sum()
    }

    fn fold(mut s: u32) -> u16 {
        while s > 0xFFFF {
            s = (s & 0xFFFF) + (s >> 16);
        }
        !(s as u16)
    }

    /// TCP 10.0.0.1:1234 -> 10.0.0.2:80, seq 1, ack 2, PSH|ACK, window
    /// 8192, 4 bytes of payload; IP and TCP checksums valid (checked in
    /// `test_packets_are_valid`).
    const TCP_DATA: [u8; 44] = [
        0x45, 0x00, 0x00, 0x2c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x06, 0x66, 0xc9, 10, 0, 0, 1, 10, 0,
        0, 2, // IP
        0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x18, 0x20, 0x00, 0xd9, 0x03, 0x00,
        0x00, // TCP
        0xde, 0xad, 0xbe, 0xef,
    ];

    /// UDP 10.0.0.1:1234 -> 10.0.0.2:53 with 4 bytes of payload.
    const UDP_DATA: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x66, 0xca, 10, 0, 0, 1, 10, 0,
        0, 2, // IP
        0x04, 0xd2, 0x00, 0x35, 0x00, 0x0c, 0x49, 0x2f, // UDP
        0xde, 0xad, 0xbe, 0xef,
    ];

    /// ICMP echo request 10.0.0.1 -> 10.0.0.2, id 1, seq 1, 4 bytes.
    const ICMP_ECHO: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0x66, 0xda, 10, 0, 0, 1, 10, 0,
        0, 2, // IP
        0x08, 0x00, 0x5a, 0x60, 0x00, 0x01, 0x00, 0x01, // ICMP
        0xde, 0xad, 0xbe, 0xef,
    ];

    /// The transport checksum of a TCP or UDP packet over its pseudo
    /// header, 0 when right.
    fn transport_check(p: &[u8]) -> u16 {
        let l4 = &p[20..];
        let pseudo = sum(&p[12..20]) + u32::from(p[9]) + l4.len() as u32;
        fold(pseudo + sum(l4))
    }

    #[test]
    fn test_packets_are_valid() {
        for p in [&TCP_DATA[..], &UDP_DATA[..], &ICMP_ECHO[..]] {
            assert_eq!(fold(sum(&p[..20])), 0);
        }
        assert_eq!(transport_check(&TCP_DATA), 0);
        assert_eq!(transport_check(&UDP_DATA), 0);
        assert_eq!(fold(sum(&ICMP_ECHO[20..])), 0);
    }

    fn marked(b: &[u8]) -> Packet {
        let mut p = Packet::from_slice(b).unwrap();
        p.set_network_header(0);
        p
    }

    #[test]
    fn tcp_and_udp_payloads_become_zeros() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(
            0,
            [marked(&TCP_DATA), marked(&UDP_DATA), marked(&ICMP_ECHO)],
        );
        let out = h.take_bytes(0);
        let mut tcp = TCP_DATA;
        tcp[36..38].fill(0);
        tcp[40..].fill(0);
        let mut udp = UDP_DATA;
        udp[26..28].fill(0);
        udp[28..].fill(0);
        assert_eq!(out, vec![tcp.to_vec(), udp.to_vec(), ICMP_ECHO.to_vec()]);
        // The IP header is untouched, so its checksum still holds.
        assert_eq!(fold(sum(&out[0][..20])), 0);
        assert_eq!(h.stats().get("erased"), Some(2));
    }

    #[test]
    fn trailer_bytes_are_erased_and_the_header_found_behind_ethernet() {
        // Click erases to the end of the packet, Ethernet padding too.
        let mut frame = vec![0u8; 14];
        frame[12] = 0x08;
        frame.extend_from_slice(&UDP_DATA);
        frame.extend_from_slice(&[0xaa; 6]);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [p]);
        let out = &h.take_bytes(0)[0];
        assert_eq!(out.len(), frame.len());
        assert_eq!(&out[..14 + 26], &frame[..14 + 26]);
        assert!(out[14 + 26..].iter().all(|&b| b == 0));
    }

    #[test]
    fn other_protocols_and_short_packets_are_dropped() {
        let mut gre = UDP_DATA;
        gre[9] = 47;
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [marked(&gre), marked(&UDP_DATA[..9]), marked(&[])]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("dropped"), Some(3));
    }

    #[test]
    fn truncated_headers_never_panic() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for n in 10..=TCP_DATA.len() {
            h.push_packets(0, [marked(&TCP_DATA[..n]), marked(&UDP_DATA[..n.min(32)])]);
        }
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 2 * (TCP_DATA.len() - 9));
        // TCP cut before byte 12 of its header: nothing erased.
        assert_eq!(out[0], &TCP_DATA[..10]);
        // Cut inside the checksum: the data offset is read, the checksum
        // left (Click needs 18 bytes of TCP header to zero it).
        let cut = &out[2 * (37 - 10)];
        assert_eq!(cut[..], TCP_DATA[..37]);
        // A TCP data offset under 5 erases from inside the header, as
        // Click's: here offset 0 erases the whole TCP header.
        let mut bad = TCP_DATA;
        bad[32] = 0x00;
        h.push_packets(0, [marked(&bad)]);
        let out = &h.take_bytes(0)[0];
        assert_eq!(out[..20], TCP_DATA[..20]);
        assert!(out[20..].iter().all(|&b| b == 0));
        // A header length past the end erases nothing.
        let mut long = UDP_DATA;
        long[0] = 0x4f;
        h.push_packets(0, [marked(&long)]);
        assert_eq!(h.take_bytes(0)[0], long);
    }

    #[test]
    fn pull_erases_too() {
        let mut h = Harness::new(
            &CLASS,
            "",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull],
            },
        );
        h.feed(0, [marked(&UDP_DATA)]);
        let got = h.pull(0, 4);
        assert_eq!(&got[0].data()[28..], &[0, 0, 0, 0]);
        let push = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        assert!(Harness::try_new(&CLASS, "X 1", push).is_err());
    }
}
