//! `TCPReflector`: pretends to be a TCP server that echoes, keeping no
//! state, as Click's experimental `elements/local/tcpreflector.cc`: each
//! segment is turned around into a plausible answer (a SYN into a
//! SYN-ACK, data into the same data acknowledged), so a real TCP client
//! connects, sends and reads its own bytes back.

use super::segment::{self, ACK, FIN, PSH, RST, SYN};
use bricks_element::{
    click_random, ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo,
    Stats,
};

/// The `TCPReflector` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TCPReflector",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pretends to be a TCP server",
    synopsis: "TCPReflector()",
    description: "Answers each TCP/IP segment (IP header at the network header annotation, \
        else at the start) by turning it around, keeping no state: addresses and ports \
        swapped, TTL 250, window 61440, the destination address annotation set, both \
        checksums summed anew, the segment's options and payload kept. A SYN (PSH \
        aside, nothing else set) becomes a SYN-ACK with a random sequence number \
        acknowledging the SYN. A segment with data or a FIN becomes an ACK (with FIN when \
        it had one) whose sequence number is the segment's acknowledgment number and \
        which acknowledges the data and the FIN: the data goes back where it came from, \
        so a client reads what it wrote. Anything else (a bare ACK, a reset, SYN with \
        other bits) is dropped and counted, and so are packets that hold no TCP segment.\n\n\
        Differences from Click: Click reads the segment's length from the packet's \
        length (Ethernet padding counts as data) and its TCP checksum trick assumes a \
        20-byte IP header; bricks uses the IP total length, trims bytes after it and \
        sums over the real pseudo-header. Click reads any packet as TCP at the start of \
        the data; bricks drops what is not TCP.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[
        ("replies", "answers sent"),
        ("ignored", "segments that need no answer (dropped)"),
        ("drops", "packets that hold no TCP segment (dropped)"),
    ],
    example: "FromDevice(eth1) -> Strip(14) -> CheckIPHeader \
        -> IPFilter(allow tcp && dst host 1.0.0.77 && dst port 99, deny all) \
        -> TCPReflector -> EtherEncap(0x0800, 1:1:1:1:1:1, 00:03:47:07:E9:94) \
        -> Queue -> ToDevice(eth1);",
    see_also: &["StatelessTCPResponder", "ToyTCP"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(TCPReflector {
        replies: 0,
        ignored: 0,
        drops: 0,
    }))
}

/// Turns TCP segments around.
#[derive(Debug)]
pub struct TCPReflector {
    replies: u64,
    ignored: u64,
    drops: u64,
}

impl TCPReflector {
    fn reflect(&mut self, p: &mut Packet) -> bool {
        let Ok(s) = segment::locate_in(p) else {
            self.drops += 1;
            return false;
        };
        // Bytes after the datagram (Ethernet padding) are not data.
        let extra = p.len() - s.end();
        p.take_back(extra);
        let d = p.data_mut();
        let (seq, ack) = (s.seq(d), s.ack(d));
        let dlen = s.payload_len() as u32;
        let flags = s.flags(d) & !PSH;
        let (new_flags, new_seq, new_ack) = if flags == SYN {
            (
                SYN | ACK,
                click_random::random_between(0, u32::MAX),
                seq.wrapping_add(1),
            )
        } else if flags & (SYN | RST) != 0 || (dlen == 0 && flags & FIN == 0) {
            self.ignored += 1;
            return false;
        } else if flags & FIN != 0 {
            (ACK | FIN, ack, seq.wrapping_add(dlen).wrapping_add(1))
        } else {
            (ACK, ack, seq.wrapping_add(dlen))
        };
        let (i, t) = (s.ip, s.tcp());
        let (src, dst) = (s.src(d), s.dst(d));
        d[i + 12..i + 16].copy_from_slice(&dst.octets());
        d[i + 16..i + 20].copy_from_slice(&src.octets());
        d[i + 8] = 250;
        let (sport, dport) = (s.sport(d), s.dport(d));
        d[t..t + 2].copy_from_slice(&dport.to_be_bytes());
        d[t + 2..t + 4].copy_from_slice(&sport.to_be_bytes());
        d[t + 4..t + 8].copy_from_slice(&new_seq.to_be_bytes());
        d[t + 8..t + 12].copy_from_slice(&new_ack.to_be_bytes());
        d[t + 13] = new_flags;
        d[t + 14..t + 16].copy_from_slice(&(60u16 * 1024).to_be_bytes());
        s.fill_checksums(d);
        p.anno_mut().dst_ip = src;
        self.replies += 1;
        true
    }
}

impl Element for TCPReflector {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        batch.retain(|p| self.reflect(p));
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| b.retain(|p| self.reflect(p)));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("replies", self.replies);
        s.counter("ignored", self.ignored);
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, ip_ok, tcp_ok};
    use super::super::segment::{CWR, ECE, URG};
    use super::*;
    use crate::ip::header::{be16, be32};
    use bricks_runtime::testing::Harness;

    const C: [u8; 4] = [10, 0, 0, 1];
    const S: [u8; 4] = [1, 0, 0, 77];

    fn from_client(seq: u32, ack: u32, flags: u8, options: &[u8], data: &[u8]) -> Vec<u8> {
        datagram(C, S, 40000, 99, seq, ack, flags, options, data)
    }

    fn reflect(pkt: &[u8]) -> Option<Vec<u8>> {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, pkt);
        let mut out = h.take_bytes(0);
        out.pop().inspect(|a| {
            assert!(ip_ok(a) && tcp_ok(a));
            assert_eq!(a[12..20], [S, C].concat());
            assert_eq!((be16(a, 20), be16(a, 22)), (99, 40000));
            assert_eq!(a[8], 250);
            assert_eq!(be16(a, 34), 61440);
        })
    }

    #[test]
    fn a_syn_becomes_a_syn_ack_with_its_options() {
        let opts = [2, 4, 5, 0xb4, 1, 3, 3, 7];
        let a = reflect(&from_client(1000, 0, SYN | PSH, &opts, &[])).unwrap();
        assert_eq!(a[33], SYN | ACK);
        assert_eq!(be32(&a, 28), 1001);
        assert_eq!(a[40..48], opts);
    }

    #[test]
    fn data_comes_back_acknowledged() {
        let a = reflect(&from_client(1001, 5000, ACK | PSH, &[], b"echo me")).unwrap();
        assert_eq!(a[33], ACK);
        assert_eq!(be32(&a, 24), 5000);
        assert_eq!(be32(&a, 28), 1008);
        assert_eq!(&a[40..], b"echo me");
        let a = reflect(&from_client(
            1008,
            5007,
            ACK | FIN | ECE | CWR | URG,
            &[],
            b"bye",
        ))
        .unwrap();
        assert_eq!(a[33], ACK | FIN);
        assert_eq!(be32(&a, 24), 5007);
        assert_eq!(be32(&a, 28), 1012);
        // Padding after the datagram is not data, and is not sent back.
        let mut padded = from_client(1, 2, ACK, &[], b"p");
        padded.extend([0; 5]);
        let a = reflect(&padded).unwrap();
        assert_eq!(a.len(), 41);
        assert_eq!(be32(&a, 28), 2);
    }

    #[test]
    fn what_needs_no_answer_is_dropped() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for p in [
            from_client(1, 2, ACK, &[], &[]),
            from_client(1, 2, RST, &[], b"x"),
            from_client(1, 2, SYN | ACK, &[], &[]),
            from_client(1, 2, SYN | ECE | CWR, &[], &[]),
        ] {
            h.push_bytes(0, &p);
        }
        let syn = from_client(1, 0, SYN, &[], &[]);
        for len in 0..syn.len() {
            h.push_bytes(0, &syn[..len]);
        }
        let mut udp = syn.clone();
        udp[9] = 17;
        h.push_bytes(0, &udp);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("ignored"), Some(4));
        assert_eq!(h.stats().get("drops"), Some(41));
    }
}
