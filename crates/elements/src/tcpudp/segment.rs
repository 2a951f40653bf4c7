//! What the TCP elements of this group share: finding a TCP segment behind
//! an IPv4 header with every length checked (RFC 791 section 3.1, RFC 9293
//! section 3.1), sequence number comparisons modulo 2^32 (RFC 9293 section
//! 3.4), checksums written whole or updated incrementally (RFC 1071, RFC
//! 1624), and TCP/IP packets built from scratch, as Click's
//! `Packet::make` plus a hand-filled `click_ip` and `click_tcp` do.

use crate::ip::header::{be16, be32};
use crate::ip::transport::segment_checksum;
use bricks_element::Packet;
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// TCP control bits (RFC 9293 section 3.1, RFC 3168 section 6.1).
pub(crate) const FIN: u8 = 0x01;
pub(crate) const SYN: u8 = 0x02;
pub(crate) const RST: u8 = 0x04;
pub(crate) const PSH: u8 = 0x08;
pub(crate) const ACK: u8 = 0x10;
pub(crate) const URG: u8 = 0x20;
#[cfg(test)]
pub(crate) const ECE: u8 = 0x40;
pub(crate) const CWR: u8 = 0x80;

/// The IP protocol number of TCP.
pub(crate) const PROTO_TCP: u8 = 6;

/// Why a packet holds no TCP segment an element can work on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotSegment {
    /// An IPv4 packet of another protocol.
    OtherProtocol,
    /// A fragment: the segment is not whole (or, past the first, absent).
    Fragment,
    /// Not IPv4, or a length field disagrees with the packet.
    Malformed,
}

/// Where the IPv4 header and TCP segment of a packet lie, every length
/// checked by [`locate`]: the accessors below never read past the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The IP header's offset in the frame.
    pub ip: usize,
    /// The IP header's length, 20 to 60.
    pub ip_hlen: usize,
    /// The IP total length: the datagram ends `ip_len` bytes after `ip`,
    /// at or before the frame's end (Ethernet padding may follow).
    pub ip_len: usize,
    /// The TCP header's length, 20 to 60, within the datagram.
    pub tcp_hlen: usize,
}

impl Segment {
    /// The TCP header's offset in the frame.
    pub fn tcp(&self) -> usize {
        self.ip + self.ip_hlen
    }

    /// The payload's offset in the frame.
    pub fn payload(&self) -> usize {
        self.tcp() + self.tcp_hlen
    }

    /// The payload's length.
    pub fn payload_len(&self) -> usize {
        self.ip_len - self.ip_hlen - self.tcp_hlen
    }

    /// The datagram's end in the frame.
    pub fn end(&self) -> usize {
        self.ip + self.ip_len
    }

    /// The segment's length in sequence space: its payload, plus one for
    /// a SYN and one for a FIN (RFC 9293 section 3.4, "SEG.LEN").
    pub fn seq_len(&self, frame: &[u8]) -> u32 {
        let flags = self.flags(frame);
        self.payload_len() as u32 + u32::from(flags & SYN != 0) + u32::from(flags & FIN != 0)
    }

    pub fn src(&self, frame: &[u8]) -> Ipv4Addr {
        addr(frame, self.ip + 12)
    }

    pub fn dst(&self, frame: &[u8]) -> Ipv4Addr {
        addr(frame, self.ip + 16)
    }

    pub fn sport(&self, frame: &[u8]) -> u16 {
        be16(frame, self.tcp())
    }

    pub fn dport(&self, frame: &[u8]) -> u16 {
        be16(frame, self.tcp() + 2)
    }

    pub fn seq(&self, frame: &[u8]) -> u32 {
        be32(frame, self.tcp() + 4)
    }

    pub fn ack(&self, frame: &[u8]) -> u32 {
        be32(frame, self.tcp() + 8)
    }

    pub fn flags(&self, frame: &[u8]) -> u8 {
        frame[self.tcp() + 13]
    }

    pub fn window(&self, frame: &[u8]) -> u16 {
        be16(frame, self.tcp() + 14)
    }

    /// The TCP options, between the fixed header and the payload.
    pub fn options<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        &frame[self.tcp() + 20..self.payload()]
    }

    /// Writes both checksums from scratch: the IP header's, then the
    /// segment's over its pseudo-header.
    pub fn fill_checksums(&self, frame: &mut [u8]) {
        let ip = &mut frame[self.ip..self.end()];
        set_ip_checksum(ip, self.ip_hlen);
        ip[self.ip_hlen + 16..self.ip_hlen + 18].fill(0);
        let (header, tcp) = ip.split_at_mut(self.ip_hlen);
        let sum = segment_checksum(header, self.ip_hlen, tcp);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());
    }

    /// Replaces a 32-bit TCP header field at `at` (4: sequence number, 8:
    /// acknowledgment number) and updates the TCP checksum (RFC 1624).
    pub fn set_tcp32(&self, frame: &mut [u8], at: usize, value: u32) {
        let t = self.tcp();
        let old = be32(frame, t + at);
        frame[t + at..t + at + 4].copy_from_slice(&value.to_be_bytes());
        let sum = checksum::update32(be16(frame, t + 16), old, value);
        frame[t + 16..t + 18].copy_from_slice(&sum.to_be_bytes());
    }

    /// Replaces a 16-bit TCP header field at `at` (0: source port, 2:
    /// destination port, 12: offset and flags) and updates the checksum.
    pub fn set_tcp16(&self, frame: &mut [u8], at: usize, value: u16) {
        let t = self.tcp();
        let old = be16(frame, t + at);
        frame[t + at..t + at + 2].copy_from_slice(&value.to_be_bytes());
        let sum = checksum::update(be16(frame, t + 16), old, value);
        frame[t + 16..t + 18].copy_from_slice(&sum.to_be_bytes());
    }

    /// Sets the control bits, updating the checksum.
    pub fn set_flags(&self, frame: &mut [u8], flags: u8) {
        let t = self.tcp();
        self.set_tcp16(frame, 12, u16::from_be_bytes([frame[t + 12], flags]));
    }

    /// Replaces the IP source (12) or destination (16) address, updating
    /// the IP header checksum and the TCP checksum, whose pseudo-header
    /// holds the address (RFC 1624, RFC 3022 section 4.2).
    pub fn set_addr(&self, frame: &mut [u8], at: usize, value: Ipv4Addr) {
        let (i, t) = (self.ip, self.tcp());
        let old = be32(frame, i + at);
        let new = u32::from(value);
        frame[i + at..i + at + 4].copy_from_slice(&value.octets());
        let sum = checksum::update32(be16(frame, i + 10), old, new);
        frame[i + 10..i + 12].copy_from_slice(&sum.to_be_bytes());
        let sum = checksum::update32(be16(frame, t + 16), old, new);
        frame[t + 16..t + 18].copy_from_slice(&sum.to_be_bytes());
    }
}

fn addr(frame: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(frame[at], frame[at + 1], frame[at + 2], frame[at + 3])
}

/// Finds the TCP segment of the IPv4 datagram that starts `ip` bytes into
/// `frame`, checking the version, both header lengths and the total length
/// against the frame.
pub(crate) fn locate(frame: &[u8], ip: usize) -> Result<Segment, NotSegment> {
    let Some(h) = frame.get(ip..).filter(|h| h.len() >= 20) else {
        return Err(NotSegment::Malformed);
    };
    let ip_hlen = usize::from(h[0] & 0x0f) * 4;
    let ip_len = usize::from(be16(h, 2));
    if h[0] >> 4 != 4 || ip_hlen < 20 || ip_len < ip_hlen || ip_len > h.len() {
        return Err(NotSegment::Malformed);
    }
    if h[9] != PROTO_TCP {
        return Err(NotSegment::OtherProtocol);
    }
    if be16(h, 6) & 0x3fff != 0 {
        return Err(NotSegment::Fragment);
    }
    if ip_len < ip_hlen + 20 {
        return Err(NotSegment::Malformed);
    }
    let tcp_hlen = usize::from(h[ip_hlen + 12] >> 4) * 4;
    if tcp_hlen < 20 || ip_hlen + tcp_hlen > ip_len {
        return Err(NotSegment::Malformed);
    }
    Ok(Segment {
        ip,
        ip_hlen,
        ip_len,
        tcp_hlen,
    })
}

/// Where a packet's IP header starts in its frame: the network header
/// annotation when an element set one inside the frame, else the start.
pub(crate) fn ip_offset(p: &Packet) -> usize {
    crate::ip::header::prefix_len(p)
}

/// Finds the TCP segment of packet `p` (see [`locate`]).
pub(crate) fn locate_in(p: &Packet) -> Result<Segment, NotSegment> {
    locate(p.data(), ip_offset(p))
}

/// Writes the IP header checksum of the `hlen`-byte header at `ip[..hlen]`.
pub(crate) fn set_ip_checksum(ip: &mut [u8], hlen: usize) {
    ip[10..12].fill(0);
    let sum = !checksum::data(&ip[..hlen]);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
}

/// A TCP port in a handler's value: a number from 0 to 65535 or one of
/// Click's well-known port names (a PortInfo's names are read only with an
/// element's arguments).
pub(crate) fn port_word(text: &str) -> Result<u16, String> {
    use bricks_element::FromArg;
    if let Ok(n) = u32::from_arg(text) {
        return u16::try_from(n).map_err(|_| format!("port {n} out of range 0-65535"));
    }
    crate::classify::ip_filter::PORTS
        .iter()
        .find(|(n, _)| *n == text)
        .map(|&(_, p)| p)
        .ok_or_else(|| format!("`{text}` is not a port number or a known port name"))
}

/// `a < b` in sequence space (RFC 9293 section 3.4; Click's `SEQ_LT`).
pub(crate) fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `a > b` in sequence space (Click's `SEQ_GT`).
pub(crate) fn seq_gt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// A TCP/IP packet to build: the fields Click's elements fill in by hand
/// (the rest zero), a 20-byte IP header and a TCP header with `options`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TcpIp<'a> {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub window: u16,
    pub tos: u8,
    pub ttl: u8,
    pub id: u16,
    /// Don't Fragment.
    pub df: bool,
    /// TCP options, a multiple of 4 bytes, at most 40.
    pub options: &'a [u8],
    pub payload: &'a [u8],
}

impl Default for TcpIp<'_> {
    fn default() -> Self {
        TcpIp {
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            sport: 0,
            dport: 0,
            seq: 0,
            ack: 0,
            flags: 0,
            window: 0,
            tos: 0,
            ttl: 255,
            id: 0,
            df: false,
            options: &[],
            payload: &[],
        }
    }
}

impl TcpIp<'_> {
    /// The packet's length.
    pub fn len(&self) -> usize {
        40 + self.options.len() + self.payload.len()
    }

    /// Writes the headers and payload into `out` (exactly [`TcpIp::len`]
    /// bytes), both checksums included.
    pub fn emit(&self, out: &mut [u8]) {
        let tcp_hlen = 20 + self.options.len();
        let len = self.len() as u16;
        let (ip, tcp) = out.split_at_mut(20);
        ip.fill(0);
        ip[0] = 0x45;
        ip[1] = self.tos;
        ip[2..4].copy_from_slice(&len.to_be_bytes());
        ip[4..6].copy_from_slice(&self.id.to_be_bytes());
        if self.df {
            ip[6] = 0x40;
        }
        ip[8] = self.ttl;
        ip[9] = PROTO_TCP;
        ip[12..16].copy_from_slice(&self.src.octets());
        ip[16..20].copy_from_slice(&self.dst.octets());
        set_ip_checksum(ip, 20);
        tcp[..20].fill(0);
        tcp[0..2].copy_from_slice(&self.sport.to_be_bytes());
        tcp[2..4].copy_from_slice(&self.dport.to_be_bytes());
        tcp[4..8].copy_from_slice(&self.seq.to_be_bytes());
        tcp[8..12].copy_from_slice(&self.ack.to_be_bytes());
        tcp[12] = ((tcp_hlen / 4) as u8) << 4;
        tcp[13] = self.flags;
        tcp[14..16].copy_from_slice(&self.window.to_be_bytes());
        tcp[20..tcp_hlen].copy_from_slice(self.options);
        tcp[tcp_hlen..].copy_from_slice(self.payload);
        let sum = segment_checksum(ip, 20, tcp);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());
    }

    /// A new packet holding the datagram, its network header annotation
    /// at its start and its destination annotation the IP destination;
    /// `None` when it would not fit a packet buffer.
    pub fn packet(&self) -> Option<Packet> {
        let mut p = Packet::new();
        p.put_back(self.len()).ok()?;
        self.emit(p.data_mut());
        p.set_network_header(0);
        p.anno_mut().dst_ip = self.dst;
        Some(p)
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! An independent reading of what the elements write: RFC 1071 the
    //! slow way, byte by byte, and TCP/IP packets assembled field by field;
    //! and the runtime's Harness with frames as bytes in and out.

    use bricks_element::{Batch, ElementClass, Packet, PortInfo, Processing};
    pub use bricks_runtime::testing::FlowRefs;
    use bricks_runtime::testing::Harness;
    use std::any::Any;
    use std::sync::Arc;

    /// The runtime's [`Harness`] with frames as bytes in and out, and
    /// the element's shared state for the test and for other elements.
    pub struct Rig(Harness);

    impl std::ops::Deref for Rig {
        type Target = Harness;
        fn deref(&self) -> &Harness {
            &self.0
        }
    }

    impl std::ops::DerefMut for Rig {
        fn deref_mut(&mut self) -> &mut Harness {
            &mut self.0
        }
    }

    /// The ports of a rig: the processing of each input, then of each
    /// output.
    pub fn port_info(inputs: &[Processing], outputs: &[Processing]) -> PortInfo {
        PortInfo {
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
        }
    }

    impl Rig {
        /// A rig whose element finds no other element's state: what a
        /// test of one element alone asks for.
        pub fn alone(
            class: &ElementClass,
            args: &str,
            inputs: &[Processing],
            outputs: &[Processing],
        ) -> Rig {
            Rig::new(
                class,
                args,
                port_info(inputs, outputs),
                &FlowRefs::default(),
            )
        }

        pub fn new(class: &ElementClass, args: &str, ports: PortInfo, refs: &FlowRefs) -> Rig {
            Rig::try_new(class, args, ports, refs).unwrap()
        }

        pub fn try_new(
            class: &ElementClass,
            args: &str,
            ports: PortInfo,
            refs: &FlowRefs,
        ) -> Result<Rig, String> {
            Harness::with_refs(class, args, ports, refs).map(Rig)
        }

        /// The element's shared state, as the type it made it.
        pub fn shared<T: Any + Send + Sync>(&self) -> Arc<T> {
            self.0.shared_as::<T>()
        }

        /// The element's shared state, for [`FlowRefs`].
        pub fn state(&self) -> Arc<dyn Any + Send + Sync> {
            self.0.shared().expect("the element keeps shared state")
        }

        pub fn push(&mut self, port: usize, frames: &[&[u8]]) {
            let mut b = Batch::new();
            for f in frames {
                b.push(Packet::from_slice(f).unwrap()).unwrap();
            }
            self.0.push_batch(port, &mut b);
        }

        pub fn feed(&mut self, port: usize, frames: &[&[u8]]) {
            self.0
                .feed(port, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        }

        pub fn pull(&mut self, port: usize, max: usize) -> Vec<Vec<u8>> {
            let p = self.0.pull(port, max);
            p.iter().map(|p| p.data().to_vec()).collect()
        }

        pub fn take(&mut self, port: usize) -> Vec<Vec<u8>> {
            self.0.take_bytes(port)
        }

        pub fn write(&mut self, handler: &str, value: &str) -> Result<String, String> {
            self.0.call_handler(handler, value, true)
        }

        pub fn read(&mut self, handler: &str) -> Result<String, String> {
            self.0.call_handler(handler, "", false)
        }
    }

    /// RFC 1071's sum, not complemented, one 16-bit word at a time.
    pub fn sum(bytes: &[u8]) -> u32 {
        let mut s: u32 = 0;
        for c in bytes.chunks(2) {
            s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s
    }

    /// Whether the IPv4 header at the start of `ip` sums right.
    pub fn ip_ok(ip: &[u8]) -> bool {
        let hlen = usize::from(ip[0] & 15) * 4;
        sum(&ip[..hlen]) == 0xffff
    }

    /// Whether the TCP segment behind the IPv4 header `ip` (to its total
    /// length) sums right with its pseudo-header.
    pub fn tcp_ok(ip: &[u8]) -> bool {
        let hlen = usize::from(ip[0] & 15) * 4;
        let len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let seg = &ip[hlen..len];
        let mut all = ip[12..20].to_vec();
        all.extend([0, ip[9]]);
        all.extend((seg.len() as u16).to_be_bytes());
        all.extend(seg);
        sum(&all) == 0xffff
    }

    /// An IPv4/TCP datagram with the given fields, checksums summed here.
    #[allow(clippy::too_many_arguments)]
    pub fn datagram(
        src: [u8; 4],
        dst: [u8; 4],
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        options: &[u8],
        payload: &[u8],
    ) -> Vec<u8> {
        let tcp_hlen = 20 + options.len();
        let len = (20 + tcp_hlen + payload.len()) as u16;
        let mut d = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0];
        d[2..4].copy_from_slice(&len.to_be_bytes());
        d.extend(src);
        d.extend(dst);
        let c = !(sum(&d) as u16);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d.extend(sport.to_be_bytes());
        d.extend(dport.to_be_bytes());
        d.extend(seq.to_be_bytes());
        d.extend(ack.to_be_bytes());
        d.extend([((tcp_hlen / 4) as u8) << 4, flags, 0xfa, 0xf0, 0, 0, 0, 0]);
        d.extend(options);
        d.extend(payload);
        let mut all = d[12..20].to_vec();
        all.extend([0, 6]);
        all.extend(((tcp_hlen + payload.len()) as u16).to_be_bytes());
        all.extend(&d[20..]);
        let c = !(sum(&all) as u16);
        d[36..38].copy_from_slice(&c.to_be_bytes());
        d
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    /// A SYN as Linux sends one, 10.0.0.1:40000 to 10.0.0.2:80, with its
    /// options in Linux's order: MSS 1460, SACK permitted, timestamps,
    /// window scale 7; checksums 0x9c9a and 0xde07.
    const LINUX_SYN: [u8; 60] = [
        0x45, 0x00, 0x00, 0x3c, 0x8a, 0x1f, 0x40, 0x00, 0x40, 0x06, 0x9c, 0x9a, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x00, 0x50, 0x2b, 0x5e, 0x2e, 0x5d, 0x00, 0x00,
        0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0, 0xde, 0x07, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04,
        0x02, 0x08, 0x0a, 0x1d, 0x8e, 0x47, 0x2b, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x07,
    ];

    #[test]
    fn the_sample_is_valid() {
        assert!(ip_ok(&LINUX_SYN));
        assert!(tcp_ok(&LINUX_SYN));
    }

    #[test]
    fn locates_a_linux_syn() {
        let s = locate(&LINUX_SYN, 0).unwrap();
        assert_eq!((s.ip_hlen, s.ip_len, s.tcp_hlen), (20, 60, 40));
        assert_eq!(s.payload_len(), 0);
        assert_eq!(s.seq_len(&LINUX_SYN), 1);
        assert_eq!(s.sport(&LINUX_SYN), 40000);
        assert_eq!(s.dport(&LINUX_SYN), 80);
        assert_eq!(s.seq(&LINUX_SYN), 0x2b5e_2e5d);
        assert_eq!(s.flags(&LINUX_SYN), SYN);
        assert_eq!(s.options(&LINUX_SYN)[..4], [2, 4, 5, 0xb4]);
        assert_eq!(s.src(&LINUX_SYN), Ipv4Addr::new(10, 0, 0, 1));
    }

    #[test]
    fn every_truncation_is_refused() {
        for len in 0..LINUX_SYN.len() {
            assert!(locate(&LINUX_SYN[..len], 0).is_err(), "{len}");
        }
        // Ethernet padding after the datagram is allowed.
        let mut padded = LINUX_SYN.to_vec();
        padded.extend([0; 6]);
        assert_eq!(locate(&padded, 0).unwrap().end(), 60);
        // A data offset past the datagram, or below 5 words.
        for off in [0u8, 0x40, 0xb0, 0xf0] {
            let mut bad = LINUX_SYN;
            bad[32] = off;
            assert_eq!(locate(&bad, 0), Err(NotSegment::Malformed), "{off:#x}");
        }
        let mut udp = LINUX_SYN;
        udp[9] = 17;
        assert_eq!(locate(&udp, 0), Err(NotSegment::OtherProtocol));
        let mut frag = LINUX_SYN;
        frag[6] = 0x20;
        assert_eq!(locate(&frag, 0), Err(NotSegment::Fragment));
        let mut v6 = LINUX_SYN;
        v6[0] = 0x65;
        assert_eq!(locate(&v6, 0), Err(NotSegment::Malformed));
        assert_eq!(locate(&LINUX_SYN, 1), Err(NotSegment::Malformed));
    }

    #[test]
    fn incremental_updates_match_a_fresh_sum() {
        let mut f = LINUX_SYN.to_vec();
        let s = locate(&f, 0).unwrap();
        s.set_tcp32(&mut f, 4, 0xdead_beef);
        s.set_tcp32(&mut f, 8, 7);
        s.set_tcp16(&mut f, 0, 1);
        s.set_flags(&mut f, SYN | ACK);
        s.set_addr(&mut f, 12, Ipv4Addr::new(192, 0, 2, 9));
        s.set_addr(&mut f, 16, Ipv4Addr::new(198, 51, 100, 1));
        assert!(ip_ok(&f) && tcp_ok(&f));
        assert_eq!(f[33], SYN | ACK);
        assert_eq!(&f[24..28], &[0xde, 0xad, 0xbe, 0xef]);
        let mut g = f.clone();
        g[36] ^= 0xff;
        s.fill_checksums(&mut g);
        assert_eq!(f, g);
    }

    #[test]
    fn built_packets_read_back() {
        let t = TcpIp {
            src: Ipv4Addr::new(1, 2, 3, 4),
            dst: Ipv4Addr::new(5, 6, 7, 8),
            sport: 99,
            dport: 100,
            seq: 1,
            ack: 2,
            flags: ACK | PSH,
            window: 32120,
            options: &[1, 1, 1, 0],
            payload: b"hey",
            df: true,
            ..TcpIp::default()
        };
        let p = t.packet().unwrap();
        let d = p.data();
        assert_eq!(d.len(), 47);
        assert!(ip_ok(d) && tcp_ok(d));
        let want = datagram(
            [1, 2, 3, 4],
            [5, 6, 7, 8],
            99,
            100,
            1,
            2,
            ACK | PSH,
            &[1, 1, 1, 0],
            b"hey",
        );
        // The same but for the fields `datagram` fixes otherwise.
        assert_eq!(d[20..34], want[20..34]);
        assert_eq!(&d[40..], &want[40..]);
        assert_eq!(d[6], 0x40);
        assert_eq!(d[8], 255);
        assert_eq!(p.network_header_offset(), Some(0));
        assert_eq!(p.anno().dst_ip, Ipv4Addr::new(5, 6, 7, 8));
    }

    #[test]
    fn sequence_comparisons_wrap() {
        assert!(seq_lt(0xffff_fff0, 5));
        assert!(seq_gt(5, 0xffff_fff0));
        assert!(!seq_lt(7, 7) && !seq_gt(7, 7));
    }
}
