//! `IP6Fragmenter`: splits IPv6 packets larger than the outgoing link's
//! MTU into fragments with a Fragment header, as a source node does (RFC
//! 8200 section 4.5), keeping the whole header chain in the first fragment
//! (RFC 7112), or refuses them so that a Packet Too Big reaches the sender
//! (RFC 8201).
//!
//! Click's element (`elements/ip6/ip6fragmenter.cc`) has the name, the
//! argument, the ports and the handlers but no fragmenting code: a packet
//! above the MTU disappears there. This one does what its manual and RFC
//! 8200 describe; each difference is in the manual below.

use crate::ip::header::prefix_len;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::ipv6ext;

/// The `IP6Fragmenter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IP6Fragmenter",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

/// The fixed IPv6 header.
const HEADER: usize = 40;
/// The Fragment header (RFC 8200 section 4.5).
const FRAGMENT_HEADER: usize = 8;
/// The smallest MTU that carries a bare IPv6 header, a Fragment header
/// and one 8-octet unit of data.
const MIN_MTU: usize = HEADER + FRAGMENT_HEADER + 8;

static MANUAL: Manual = Manual {
    summary: "fragments IPv6 packets larger than the MTU",
    synopsis: "IP6Fragmenter(MTU)",
    description: "Expects IPv6 packets with the network header annotation set (or the \
        IPv6 header at the start of the data); what is in front of the header (an \
        Ethernet header) is copied into every fragment. A packet whose IPv6 part is at \
        most MTU bytes leaves on output 0 unchanged. A larger one is split into \
        fragments of at most MTU bytes as a source node does (RFC 8200 section 4.5): \
        each fragment repeats the per-fragment headers, the IPv6 header and the \
        extension headers up to and including the Routing header, or else the \
        Hop-by-Hop Options header, or else none; a Fragment header follows them with \
        the next header they named, the fragment's offset in 8-octet units, the More \
        Fragments flag on all but the last, and one 32-bit identification for all the \
        fragments of a packet; then a piece of the rest, a multiple of 8 octets in all \
        but the last fragment. The first fragment carries the whole header chain, \
        through the upper-layer header (RFC 7112 section 5: 20 or more bytes of TCP, \
        8 of UDP or ICMPv6). Each fragment's payload length is its own; every fragment \
        keeps the original's annotations; fragments leave on output 0 in order, the \
        first first. Identifications come from a counter through a keyed 32-bit \
        permutation: none repeats within 2^32 packets, and one does not tell the next \
        (RFC 7739).\n\n\
        A packet that cannot be fragmented is refused: one that already has a \
        Fragment header (only the source fragments, once: RFC 8200 section 4.5), and \
        one whose per-fragment headers leave no room for 8 octets under MTU or whose \
        header chain does not fit in the first fragment. A refused packet leaves \
        unchanged on output 1 with its MTU annotation set to MTU, ready for \
        `ICMP6Error(SRC, packettoobig)` (RFC 8201), and is dropped if output 1 is \
        unconnected; either way it is counted by reason. A packet above MTU that is no \
        IPv6 packet (shorter than 40 bytes, version not 6, payload length past its \
        end) or whose extension header chain is broken (running past the packet, \
        more than 16 headers, Hop-by-Hop not first) is dropped and counted. Link \
        padding past the payload length is cut off before the size is compared.\n\n\
        Differences from Click, whose IP6Fragmenter does not fragment: Click drops \
        every packet above MTU without a word or a count (and leaks it); bricks \
        fragments it, or refuses it to output 1 as above. Click compares the whole \
        packet's length with MTU, bricks the IPv6 part's (the same when nothing is \
        in front of the header). Click's manual says fragments keep only the \
        mac_broadcast annotation and the first fragment goes last; bricks fragments \
        keep every annotation, and go in order (receivers reassemble in any order). \
        MTU must be at least 56, where Click accepts any.",
    ports: "one input; output 0 packets and fragments (push); optional output 1 \
        packets that cannot be fragmented (push)",
    keywords: &[Keyword {
        name: "MTU",
        ty: "unsigned integer",
        default: None,
        doc: "largest IPv6 packet, header included, that leaves output 0; at least 56 \
            (an IPv6 header, a Fragment header and 8 octets); below 1280, RFC 8200's \
            least link MTU, is no real IPv6 link but is accepted (for tests)",
    }],
    counters: &[
        ("fragmented", "packets split into fragments"),
        ("fragments", "fragments sent (Click's handler)"),
        (
            "drops",
            "packets dropped: malformed, or refused with output 1 unconnected (Click's \
             handler)",
        ),
        ("bad_header", "above MTU and no IPv6 packet (dropped)"),
        (
            "bad_chain",
            "above MTU with a broken extension header chain (dropped)",
        ),
        (
            "already_fragment",
            "above MTU with a Fragment header (output 1 or dropped)",
        ),
        (
            "chain_too_long",
            "above MTU with headers that leave no room or do not fit in the first \
             fragment (output 1 or dropped)",
        ),
    ],
    example: "FastUDPSourceIP6(0, 2, 1514, 0:0:0:0:0:1, 2001:db8::1, 1234, 0:0:0:0:0:2, \
        2001:db8::2, 5678) -> fr :: IP6Fragmenter(1280) -> Discard; \
        fr[1] -> ICMP6Error(2001:db8::ff, packettoobig) -> Discard;",
    see_also: &["ICMP6Error", "CheckIP6Header", "IPFragmenter"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mtu: usize = args.read_mp("MTU")?;
    if mtu < MIN_MTU {
        return Err(
            ArgError::new(format!("MTU {mtu} is below {MIN_MTU}")).with_help(
                "a fragment holds a 40-byte IPv6 header, an 8-byte Fragment header and \
                 at least 8 octets of data",
            ),
        );
    }
    Ok(Box::new(IP6Fragmenter {
        mtu,
        has_reject: ports.noutputs() > 1,
        idents: Idents::new(bricks_packet::Timestamp::now().0),
        fragmented: 0,
        fragments: 0,
        drops: 0,
        refusals: [0; Refusal::ALL.len()],
    }))
}

/// Why a packet above the MTU is not fragmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Shorter than the 40-byte header, version not 6, or a payload
    /// length past the end of the packet.
    BadHeader,
    /// The extension header chain runs past the packet, has more than
    /// [`ipv6ext::MAX_HEADERS`] headers, or a Hop-by-Hop header not first.
    BadChain,
    /// The packet is already a fragment: only its source fragments it.
    AlreadyFragment,
    /// The per-fragment headers and a Fragment header leave no room for 8
    /// octets under the MTU, or the first fragment cannot hold the header
    /// chain through the upper-layer header (RFC 7112).
    ChainTooLong,
}

impl Refusal {
    /// Every reason, in counter order.
    pub const ALL: [Refusal; 4] = [
        Refusal::BadHeader,
        Refusal::BadChain,
        Refusal::AlreadyFragment,
        Refusal::ChainTooLong,
    ];

    /// The counter of this reason.
    pub const fn counter(self) -> &'static str {
        match self {
            Refusal::BadHeader => "bad_header",
            Refusal::BadChain => "bad_chain",
            Refusal::AlreadyFragment => "already_fragment",
            Refusal::ChainTooLong => "chain_too_long",
        }
    }

    /// Whether the packet is malformed (dropped) rather than only
    /// unfragmentable (for output 1).
    pub const fn malformed(self) -> bool {
        matches!(self, Refusal::BadHeader | Refusal::BadChain)
    }
}

impl core::fmt::Display for Refusal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Refusal::BadHeader => "not an IPv6 packet, or shorter than its payload length",
            Refusal::BadChain => "broken extension header chain",
            Refusal::AlreadyFragment => "already a fragment",
            Refusal::ChainTooLong => "header chain too long for the MTU",
        })
    }
}

/// How one packet is cut (RFC 8200 section 4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cut {
    /// The end of the per-fragment headers, which every fragment repeats.
    pub unfragmentable: usize,
    /// Where the Next Header field that names the first header of the
    /// fragmentable part is; it names the Fragment header in fragments.
    pub next_at: usize,
    /// Octets of the fragmentable part in each fragment but the last: a
    /// multiple of 8, at least 8.
    pub room: usize,
    /// The packet's length (40 plus its payload length).
    pub total: usize,
}

impl Cut {
    /// How to cut `ip`, an IPv6 packet exactly its payload length long
    /// (at most 65,575 bytes), into fragments of at most `mtu` bytes.
    /// Costs one walk of at most [`ipv6ext::MAX_HEADERS`] headers.
    pub(crate) fn plan(ip: &[u8], mtu: usize) -> Result<Cut, Refusal> {
        let chain = ipv6ext::walk(ip).map_err(|_| Refusal::BadChain)?;
        if chain.fragment.is_some() {
            return Err(Refusal::AlreadyFragment);
        }
        // Per-fragment headers: through the Routing header, else the
        // Hop-by-Hop header, else none. A Destination Options header in
        // front of the Routing header goes with it; one behind goes in
        // the fragmentable part. (A second Routing header, which RFC 8200
        // section 4.1 does not allow, would be fragmentable.)
        let (unfragmentable, next_at) = match (chain.routing, chain.hop_by_hop) {
            // The walk checked that the header's bytes are there.
            (Some((at, _, _)), _) => (at + (usize::from(ip[at + 1]) + 1) * 8, at),
            (None, Some((at, len))) => (at + len, at),
            (None, None) => (HEADER, 6),
        };
        // The upper-layer header, which the first fragment must hold whole
        // (RFC 7112 section 5); for others, the chain up to it.
        let at = chain.upper_offset;
        let upper = match chain.upper {
            6 => ip
                .get(at + 12)
                .map_or(20, |&b| usize::from(b >> 4) * 4)
                .max(20),
            17 | 58 => 8,
            _ => 0,
        };
        let chain_end = (at + upper).min(ip.len());
        let room = mtu.saturating_sub(unfragmentable + FRAGMENT_HEADER) & !7;
        if room < 8 || chain_end - unfragmentable > room {
            return Err(Refusal::ChainTooLong);
        }
        Ok(Cut {
            unfragmentable,
            next_at,
            room,
            total: ip.len(),
        })
    }

    /// The fragments, in order: offset into the fragmentable part, length,
    /// and whether more follow.
    pub(crate) fn pieces(&self) -> impl Iterator<Item = (usize, usize, bool)> {
        let all = self.total - self.unfragmentable;
        let room = self.room;
        (0..all).step_by(room).map(move |off| {
            let len = room.min(all - off);
            (off, len, off + len < all)
        })
    }

    /// The length of a fragment of `len` fragmentable octets.
    pub(crate) fn fragment_len(&self, len: usize) -> usize {
        self.unfragmentable + FRAGMENT_HEADER + len
    }

    /// Writes the fragment of `ip` at offset `off`, `len` octets long,
    /// into `out`, which is [`Cut::fragment_len`] bytes long.
    pub(crate) fn write(
        &self,
        ip: &[u8],
        ident: u32,
        (off, len, more): (usize, usize, bool),
        out: &mut [u8],
    ) {
        let u = self.unfragmentable;
        out[..u].copy_from_slice(&ip[..u]);
        let payload = (u - HEADER + FRAGMENT_HEADER + len) as u16;
        out[4..6].copy_from_slice(&payload.to_be_bytes());
        out[self.next_at] = ipv6ext::FRAGMENT;
        let frag = &mut out[u..u + FRAGMENT_HEADER];
        frag[0] = ip[self.next_at];
        frag[1] = 0;
        // Offsets below 65,536 octets fit the 13-bit field.
        let field = (off as u16 & !7) | u16::from(more);
        frag[2..4].copy_from_slice(&field.to_be_bytes());
        frag[4..8].copy_from_slice(&ident.to_be_bytes());
        out[u + FRAGMENT_HEADER..].copy_from_slice(&ip[u + off..u + off + len]);
    }
}

/// Fragment identifications: a counter through a keyed permutation of
/// the 32-bit numbers (Wellons' `lowbias32`, every step invertible), so
/// that none repeats within 2^32 packets and the next cannot be read off
/// the last (RFC 7739 section 5).
#[derive(Debug, Clone)]
struct Idents {
    count: u32,
    key: u32,
}

impl Idents {
    fn new(seed: u64) -> Idents {
        Idents {
            count: 0,
            key: (seed ^ (seed >> 32)) as u32,
        }
    }

    fn next(&mut self) -> u32 {
        self.count = self.count.wrapping_add(1);
        let mut x = self.count ^ self.key;
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        x = x.wrapping_mul(0x846c_a68b);
        x ^ (x >> 16)
    }
}

/// What became of one packet.
enum Outcome {
    /// Small enough: forward it.
    Forward(Packet),
    /// Split; the fragments went to the sink.
    Fragmented,
    /// Cannot be fragmented: for output 1.
    Refused(Packet),
    /// Malformed, or refused with nowhere to go: dropped.
    Dropped,
}

/// Fragments IPv6 packets.
#[derive(Debug)]
pub struct IP6Fragmenter {
    mtu: usize,
    has_reject: bool,
    idents: Idents,
    fragmented: u64,
    fragments: u64,
    drops: u64,
    refusals: [u64; Refusal::ALL.len()],
}

impl IP6Fragmenter {
    /// Handles a packet whose IPv6 part is above the MTU (or that only
    /// looks so), handing fragments to `sink`.
    #[cold]
    fn process(&mut self, mut p: Packet, sink: &mut impl FnMut(Packet)) -> Outcome {
        let ip = p.l3_bytes();
        if ip.len() < HEADER || ip[0] >> 4 != 6 {
            return self.refuse(p, Refusal::BadHeader);
        }
        let total = HEADER + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        if total > ip.len() {
            return self.refuse(p, Refusal::BadHeader);
        }
        if total <= self.mtu {
            // Only link padding makes it look big.
            let padding = ip.len() - total;
            p.take_back(padding);
            return Outcome::Forward(p);
        }
        let ip = &ip[..total];
        let cut = match Cut::plan(ip, self.mtu) {
            Ok(cut) => cut,
            Err(why) => return self.refuse(p, why),
        };
        let ident = self.idents.next();
        let prefix = &p.data()[..prefix_len(&p)];
        let anno = *p.anno();
        for piece in cut.pieces() {
            let mut q = Packet::new();
            // A fragment is never longer than the packet it comes from.
            if q.put_back(prefix.len() + cut.fragment_len(piece.1))
                .is_err()
            {
                continue;
            }
            let (pre, rest) = q.data_mut().split_at_mut(prefix.len());
            pre.copy_from_slice(prefix);
            cut.write(ip, ident, piece, rest);
            *q.anno_mut() = anno;
            q.set_network_header(prefix.len());
            self.fragments += 1;
            sink(q);
        }
        self.fragmented += 1;
        Outcome::Fragmented
    }

    fn refuse(&mut self, mut p: Packet, why: Refusal) -> Outcome {
        self.refusals[why as usize] += 1;
        if why.malformed() || !self.has_reject {
            self.drops += 1;
            return Outcome::Dropped;
        }
        p.anno_mut().mtu = self.mtu.min(usize::from(u16::MAX)) as u16;
        Outcome::Refused(p)
    }
}

/// Appends `p` to `out`, pushing `out` first if it is full.
#[inline]
fn emit(out: &mut Batch, p: Packet, cx: &mut Context<'_>) {
    if let Err(p) = out.push(p) {
        cx.push(0, out);
        let _ = out.push(p);
    }
}

impl Element for IP6Fragmenter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mtu = self.mtu;
        if batch.iter().all(|p| p.l3_len() <= mtu) {
            cx.push(0, batch);
            return;
        }
        let mut out = Batch::new();
        let mut refused = Batch::new();
        for p in batch.drain() {
            if p.l3_len() <= mtu {
                emit(&mut out, p, cx);
                continue;
            }
            match self.process(p, &mut |f| emit(&mut out, f, cx)) {
                Outcome::Forward(p) => emit(&mut out, p, cx),
                // At most one refusal per input packet: it fits.
                Outcome::Refused(p) => {
                    let _ = refused.push(p);
                }
                Outcome::Fragmented | Outcome::Dropped => {}
            }
        }
        cx.push(0, &mut out);
        if !refused.is_empty() {
            cx.push(1, &mut refused);
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("fragmented", self.fragmented);
        s.counter("fragments", self.fragments);
        s.counter("drops", self.drops);
        for r in Refusal::ALL {
            s.counter(r.counter(), self.refusals[r as usize]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{udp_with, HOST_A, HOST_B};
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::udp::UdpPacket;
    use std::net::Ipv6Addr;

    /// A UDP datagram from HOST_A to HOST_B behind extension headers
    /// `ext` (the first named by `first`, the last naming UDP), with
    /// `payload` bytes counting up, and its checksum right.
    fn datagram(first: u8, ext: &[u8], payload: usize) -> Vec<u8> {
        let mut p = udp_with(first, ext, payload);
        let u = 40 + ext.len();
        for (i, b) in p[u + 8..].iter_mut().enumerate() {
            *b = (i * 7 + 3) as u8;
        }
        let mut udp = UdpPacket::new_unchecked(&mut p[u..]);
        udp.fill_checksum_v6(Ipv6Addr::from(HOST_A), Ipv6Addr::from(HOST_B));
        p
    }

    /// Reassembles `frags` as a receiver would (RFC 8200 section 4.5),
    /// written apart from the element: checks every fragment against the
    /// first and the MTU, and returns the rebuilt packet.
    fn reassemble(frags: &[Vec<u8>], mtu: usize) -> Vec<u8> {
        assert!(!frags.is_empty());
        // The per-fragment part: walk to the Fragment header.
        let first = &frags[0];
        let mut next_at = 6;
        let mut at = 40;
        while first[next_at] != 44 {
            next_at = at;
            at += (usize::from(first[at + 1]) + 1) * 8;
        }
        let (unfrag, ident) = (at, &first[at + 4..at + 8]);
        let mut data: Vec<Option<u8>> = Vec::new();
        let mut last_end = None;
        for (k, f) in frags.iter().enumerate() {
            assert!(f.len() <= mtu, "fragment {k}: {} > {mtu}", f.len());
            assert_eq!(usize::from(u16::from_be_bytes([f[4], f[5]])) + 40, f.len());
            assert_eq!(&f[..4], &first[..4], "fragment {k}: version, class, flow");
            assert_eq!(&f[6..unfrag], &first[6..unfrag], "fragment {k}: headers");
            assert_eq!(f[next_at], 44);
            let fh = &f[unfrag..unfrag + 8];
            assert_eq!(fh[0], first[unfrag], "fragment {k}: next header");
            assert_eq!(fh[1], 0, "reserved");
            assert_eq!(&fh[4..8], ident, "fragment {k}: identification");
            let field = u16::from_be_bytes([fh[2], fh[3]]);
            assert_eq!(field & 6, 0, "reserved bits");
            let off = usize::from(field >> 3) * 8;
            let more = field & 1 == 1;
            let piece = &f[unfrag + 8..];
            if more {
                assert_eq!(piece.len() % 8, 0, "fragment {k}: a multiple of 8");
            } else {
                assert!(last_end.is_none(), "two last fragments");
                last_end = Some(off + piece.len());
            }
            if data.len() < off + piece.len() {
                data.resize(off + piece.len(), None);
            }
            for (i, &b) in piece.iter().enumerate() {
                assert!(data[off + i].is_none(), "overlap at {}", off + i);
                data[off + i] = Some(b);
            }
        }
        assert_eq!(last_end, Some(data.len()));
        let mut out = first[..unfrag].to_vec();
        out[next_at] = first[unfrag];
        out.extend(data.iter().map(|b| b.expect("a hole")));
        let plen = (out.len() - 40) as u16;
        out[4..6].copy_from_slice(&plen.to_be_bytes());
        out
    }

    fn fragment(orig: &[u8], mtu: usize) -> Result<Vec<Vec<u8>>, Refusal> {
        let cut = Cut::plan(orig, mtu)?;
        Ok(cut
            .pieces()
            .map(|piece| {
                let mut f = vec![0; cut.fragment_len(piece.1)];
                cut.write(orig, 0x1234_5678, piece, &mut f);
                f
            })
            .collect())
    }

    #[test]
    fn udp_at_1280() {
        let orig = datagram(17, &[], 2000);
        let frags = fragment(&orig, 1280).unwrap();
        // 2008 bytes after the header: 1232 (1280 - 48, a multiple of 8)
        // then 776.
        assert_eq!(frags.iter().map(Vec::len).collect::<Vec<_>>(), [1280, 824]);
        // The first fragment's Fragment header: UDP, offset 0, M, the ident.
        assert_eq!(&frags[0][6..8], &[44, 64]);
        assert_eq!(&frags[0][40..48], &[17, 0, 0, 1, 0x12, 0x34, 0x56, 0x78]);
        // The second: offset 1232 / 8 = 154, no M.
        assert_eq!(
            &frags[1][40..48],
            &[17, 0, 0x04, 0xd0, 0x12, 0x34, 0x56, 0x78]
        );
        assert_eq!(reassemble(&frags, 1280), orig);
    }

    /// Hop-by-Hop and a Routing header are per-fragment, the Destination
    /// Options behind the Routing header is not; the first fragment holds
    /// the chain through UDP.
    #[test]
    fn per_fragment_headers_are_repeated() {
        // Hop-by-Hop (PadN), Destination Options (PadN), Routing (type 4,
        // segments left 0, one address), Destination Options, then UDP.
        let mut ext = vec![60, 0, 1, 4, 0, 0, 0, 0]; // HbH -> DestOpts
        ext.extend([43, 0, 1, 4, 0, 0, 0, 0]); // DestOpts -> Routing
        ext.extend([60, 2, 4, 0, 0, 0, 0, 0]); // Routing -> DestOpts
        ext.extend(HOST_B);
        ext.extend([17, 0, 1, 4, 0, 0, 0, 0]); // DestOpts -> UDP
        let orig = datagram(0, &ext, 1000);
        let cut = Cut::plan(&orig, 600).unwrap();
        assert_eq!(cut.unfragmentable, 40 + 8 + 8 + 24);
        assert_eq!(cut.next_at, 56, "the Routing header's Next Header");
        let frags = fragment(&orig, 600).unwrap();
        let mut per_fragment = orig[..80].to_vec();
        per_fragment[56] = 44;
        for f in &frags {
            assert_eq!(&f[6..80], &per_fragment[6..80]);
            assert_eq!(f[80], 60, "the Fragment header names Destination Options");
        }
        assert_eq!(reassemble(&frags, 600), orig);
        // With only Hop-by-Hop, it alone is repeated.
        let hbh = [17, 0, 1, 4, 0, 0, 0, 0];
        let orig = datagram(0, &hbh, 1000);
        let cut = Cut::plan(&orig, 600).unwrap();
        assert_eq!((cut.unfragmentable, cut.next_at), (48, 40));
        assert_eq!(reassemble(&fragment(&orig, 600).unwrap(), 600), orig);
    }

    #[test]
    fn every_size_and_mtu_reassembles() {
        let dst = [17, 0, 1, 4, 0, 0, 0, 0];
        for mtu in [56, 57, 63, 64, 100, 577, 1280, 1500] {
            for payload in [0, 1, 7, 8, 9, 100, 1000, 1913] {
                for (first, ext) in [(17u8, &[][..]), (60, &dst[..])] {
                    let orig = datagram(first, ext, payload);
                    if orig.len() <= mtu {
                        continue;
                    }
                    // No per-fragment extension headers: 48 bytes of
                    // headers in each fragment.
                    let room = (mtu - 48) & !7;
                    match fragment(&orig, mtu) {
                        Ok(frags) => {
                            assert_eq!(reassemble(&frags, mtu), orig, "{mtu} {payload}");
                            assert_eq!(frags.len(), (orig.len() - 40).div_ceil(room));
                        }
                        Err(r) => {
                            // Only when the chain (8 + 8) cannot fit in the
                            // first fragment.
                            assert_eq!(r, Refusal::ChainTooLong, "{mtu} {payload}");
                            assert!(ext.len() + 8 > room, "{mtu} {payload}");
                        }
                    }
                }
            }
        }
        // No Next Header: nothing to keep whole but the chain.
        let bare = udp_with(60, &[59, 0, 1, 4, 0, 0, 0, 0], 500);
        assert_eq!(reassemble(&fragment(&bare, 100).unwrap(), 100), bare);
    }

    /// RFC 7112: at an MTU of 63 a UDP header behind 8 octets of
    /// Destination Options does not fit in the first fragment's 8 octets;
    /// at 64 the first fragment carries 16.
    #[test]
    fn header_chain_must_fit_the_first_fragment() {
        let orig = datagram(60, &[17, 0, 1, 4, 0, 0, 0, 0], 100);
        assert_eq!(Cut::plan(&orig, 63), Err(Refusal::ChainTooLong));
        assert_eq!(Cut::plan(&orig, 64).map(|c| c.room), Ok(16));
        // TCP with 20 bytes of options: 40 bytes of header to keep whole.
        let mut tcp = udp_with(6, &[], 100);
        tcp[40 + 12] = 0xa0;
        assert_eq!(Cut::plan(&tcp, 87), Err(Refusal::ChainTooLong));
        assert!(Cut::plan(&tcp, 88).is_ok());
    }

    #[test]
    fn element_fragments_keeps_prefix_and_annotations() {
        let orig = datagram(17, &[], 1500);
        let mut frame = vec![0xee; 14];
        frame.extend(&orig);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        p.anno_mut().paint = 3;
        let mut h = Harness::push(&CLASS, "1280", 1, 2);
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out.len(), 2);
        let mut frags = Vec::new();
        for q in &out {
            assert_eq!(&q.data()[..14], &[0xee; 14]);
            assert_eq!(q.network_header_offset(), Some(14));
            assert_eq!(q.anno().paint, 3);
            frags.push(q.data()[14..].to_vec());
        }
        assert_eq!(reassemble(&frags, 1280), orig);
        let s = h.stats();
        assert_eq!(s.get("fragmented"), Some(1));
        assert_eq!(s.get("fragments"), Some(2));
        assert_eq!(s.get("drops"), Some(0));
    }

    #[test]
    fn identifications_differ_per_packet() {
        let orig = datagram(17, &[], 1500);
        let mut h = Harness::push(&CLASS, "1280", 1, 1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100 {
            h.push_bytes(0, &orig);
            let frags = h.take_bytes(0);
            assert_eq!(frags.len(), 2);
            assert_eq!(&frags[0][44..48], &frags[1][44..48]);
            assert!(seen.insert(frags[0][44..48].to_vec()), "repeated");
        }
        // The permutation itself: no repeat over a long stretch.
        let mut ids = Idents::new(42);
        let mut all: Vec<u32> = (0..100_000).map(|_| ids.next()).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 100_000);
    }

    #[test]
    fn small_and_padded_packets_pass() {
        let mut h = Harness::push(&CLASS, "1280", 1, 2);
        let small = datagram(17, &[], 1232);
        assert_eq!(small.len(), 1280);
        h.push_bytes(0, &small);
        assert_eq!(h.take_bytes(0), vec![small.clone()]);
        let mut padded = small.clone();
        padded.extend([0; 30]);
        h.push_bytes(0, &padded);
        assert_eq!(h.take_bytes(0), vec![small]);
        // Small garbage is not this element's business.
        h.push_bytes(0, &[0x45; 20]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("fragmented"), Some(0));
    }

    #[test]
    fn fragments_and_tight_chains_go_to_output_1() {
        // A first fragment (offset 0, M) and a chain one octet too long.
        let frag = datagram(44, &[17, 0, 0, 1, 0, 0, 0, 9], 1500);
        let tight = datagram(60, &[17, 0, 1, 4, 0, 0, 0, 0], 100);
        let mut h = Harness::push(&CLASS, "63", 1, 2);
        h.push_bytes(0, &frag);
        h.push_bytes(0, &tight);
        assert!(h.take(0).is_empty());
        let refused = h.take(1);
        assert_eq!(refused.len(), 2);
        assert_eq!(refused[0].data(), &frag[..]);
        assert_eq!(refused[0].anno().mtu, 63);
        assert_eq!(refused[1].data(), &tight[..]);
        let s = h.stats();
        assert_eq!(s.get("already_fragment"), Some(1));
        assert_eq!(s.get("chain_too_long"), Some(1));
        assert_eq!(s.get("drops"), Some(0));
        // Without output 1 they are dropped and counted.
        let mut h = Harness::push(&CLASS, "63", 1, 1);
        h.push_bytes(0, &frag);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
    }

    /// Hostile input: every length of every kind of broken packet, no
    /// panic, each dropped or refused and counted, nothing above the MTU
    /// forwarded.
    #[test]
    fn hostile_packets_never_panic() {
        // An endless chain: 20 Destination Options headers.
        let mut endless = Vec::new();
        for _ in 0..20 {
            endless.extend([60, 0, 1, 4, 0, 0, 0, 0]);
        }
        let chained = udp_with(60, &endless, 100);
        // A header length that runs past the end.
        let long = udp_with(60, &[17, 250, 1, 4, 0, 0, 0, 0], 100);
        // Hop-by-Hop not first.
        let hbh_late = udp_with(60, &[0, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0], 100);
        let mut bad_version = datagram(17, &[], 100);
        bad_version[0] = 0x40;
        let mut past_end = datagram(17, &[], 100);
        past_end[4..6].copy_from_slice(&2000u16.to_be_bytes());
        // (packet, whether its payload length follows each cut, so that
        // the chain rather than the length is what is tested)
        let cases = [
            (chained, true),
            (long, true),
            (hbh_late, true),
            (bad_version, false),
            (past_end, false),
        ];
        let mut h = Harness::push(&CLASS, "56", 1, 2);
        let mut big = 0;
        for (c, follow) in &cases {
            for len in 0..=c.len() {
                let mut t = c[..len].to_vec();
                if *follow && len >= 40 {
                    t[4..6].copy_from_slice(&((len - 40) as u16).to_be_bytes());
                }
                big += u64::from(len > 56);
                h.push_bytes(0, &t);
            }
        }
        let forwarded = h.take(0);
        let refused = h.take(1);
        assert!(forwarded.iter().all(|p| p.len() <= 56));
        let s = h.stats();
        let counted: u64 = Refusal::ALL
            .iter()
            .map(|r| s.get(r.counter()).unwrap())
            .sum();
        // Every packet above the MTU was refused and counted.
        assert_eq!(counted, big);
        assert_eq!(counted, s.get("drops").unwrap() + refused.len() as u64);
        assert_eq!(s.get("fragmented"), Some(0));
        assert!(s.get("bad_chain").unwrap() > 0 && s.get("bad_header").unwrap() > 0);
    }

    #[test]
    fn arguments() {
        let p = PortInfo::default();
        assert!(make_element(&CLASS, "", &p).unwrap_err().contains("MTU"));
        assert!(make_element(&CLASS, "55", &p)
            .unwrap_err()
            .contains("below 56"));
        assert!(make_element(&CLASS, "56", &p).is_ok());
        assert!(make_element(&CLASS, "MTU 1280", &p).is_ok());
        assert!(make_element(&CLASS, "1280, HONOR_DF false", &p).is_err());
    }
}
