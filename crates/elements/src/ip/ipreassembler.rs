//! `IPReassembler`: puts fragmented IPv4 datagrams back together (RFC 791
//! section 3.2, with RFC 815's hole bookkeeping; Click's
//! `elements/ip/ipreassembler.cc`), safe against hostile fragments: memory
//! is bounded by HIMEM, every datagram in progress is charged at least
//! [`ENTRY_COST`] bytes (so at most HIMEM / 64 are in progress), datagrams
//! larger than a bricks buffer are refused up front, and a fragment that
//! overlaps received data with different bytes discards the whole datagram
//! (RFC 5722's rule for IPv6, applied to IPv4; Click lets the later
//! fragment win).

use super::header::{be16, prefix_len};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::{Timestamp, MAX_FRAME};
use bricks_wire::checksum;
use std::collections::HashMap;

/// The `IPReassembler` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPReassembler",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reassembles fragmented IP packets",
    synopsis: "IPReassembler([HIMEM])",
    description: "Expects IP packets, located by the network header annotation (or at the \
        start of the data). A packet that is not a fragment passes to output 0 unchanged. \
        Fragments are held until every byte of their datagram has arrived; then the \
        datagram leaves on output 0, built on the fragment at offset 0 (its link-level \
        header, IP header with options, and annotations), with its length, offset and \
        checksum fixed and the timestamp of the fragment that completed it. A datagram \
        still incomplete 30 seconds after its last fragment arrived is given up: its first \
        fragment, if it came, leaves on output 1 (for ICMPError(ADDR, timeexceeded, \
        reassembly), which RFC 792 says quotes fragment zero; Click sends the partial \
        datagram), else it is dropped. When the memory held passes HIMEM, the oldest \
        datagrams are given up until it is under 3/4 HIMEM. Hostile fragments are dropped \
        and counted: bad lengths, middle fragments not a multiple of 8 bytes, ends past \
        65535, fragments disagreeing with the datagram's known end, datagrams larger than \
        a bricks buffer (2048 bytes with the link header), and fragments overlapping \
        received data with different bytes, which discard their whole datagram (RFC 5722; \
        Click lets the later fragment win). Identical overlaps (retransmissions) are fine.",
    ports: "one input; output 0 whole packets (agnostic); optional output 1 first fragments \
        of datagrams given up (push)",
    keywords: &[
        Keyword {
            name: "HIMEM",
            ty: "unsigned integer",
            default: Some("262144"),
            doc: "most bytes held in datagrams in progress",
        },
        Keyword {
            name: "MAX_MTU_ANNO",
            ty: "annotation",
            default: None,
            doc: "accepted for Click compatibility and ignored",
        },
    ],
    counters: &[
        ("fragments", "fragments received"),
        ("reassembled", "datagrams completed"),
        ("bad", "malformed or inconsistent fragments, dropped"),
        ("overlaps", "datagrams discarded for conflicting overlaps"),
        (
            "too_big",
            "fragments of datagrams too large for a buffer, dropped",
        ),
        ("failed", "datagrams given up (timeout or memory)"),
        ("in_progress", "datagrams being reassembled now"),
        ("mem_used", "bytes held now"),
    ],
    example: "InfiniteSource(LIMIT 1, STOP true) -> UDPIPEncap(1.0.0.1, 2, 3.0.0.3, 4) \
        -> IPFragmenter(45) -> IPReassembler -> CheckIPHeader -> Discard;",
    see_also: &["IPFragmenter", "ICMPError"],
};

/// Bytes charged per datagram in progress besides its data.
const ENTRY_COST: usize = 64;
/// Seconds of silence after which a datagram is given up (Click's).
const REAP_TIMEOUT_NS: u64 = 30_000_000_000;
/// How often to look for silent datagrams.
const REAP_INTERVAL_NS: u64 = 10_000_000_000;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let himem: usize = args.read("HIMEM")?.unwrap_or(256 * 1024);
    let _mtu_anno: Option<String> = args.read("MAX_MTU_ANNO")?;
    Ok(Box::new(IPReassembler {
        himem,
        map: HashMap::new(),
        mem_used: 0,
        reap_at: 0,
        next_seq: 0,
        fragments: 0,
        reassembled: 0,
        bad: 0,
        overlaps: 0,
        too_big: 0,
        failed: 0,
    }))
}

/// RFC 791's identification of a datagram: source, destination, protocol, ID.
type Key = ([u8; 4], [u8; 4], u8, u16);

#[derive(Debug)]
struct Entry {
    /// The fragment at offset 0, once it came.
    first: Option<Packet>,
    /// Payload bytes at their offsets; `len()` is the furthest end seen.
    data: Vec<u8>,
    /// Received payload ranges, sorted, disjoint and not adjacent.
    have: Vec<(usize, usize)>,
    /// The payload length, once the last fragment came.
    total: Option<usize>,
    /// Time of the last fragment.
    last: u64,
    /// Sequence number of creation, for giving up the oldest first.
    seq: u64,
}

impl Entry {
    fn mem(&self) -> usize {
        ENTRY_COST + self.data.len() + self.first.as_ref().map_or(0, |p| p.len())
    }

    fn complete(&self) -> bool {
        self.first.is_some() && self.total.is_some_and(|t| self.have == [(0, t)])
    }

    /// Whether `bytes` at `off` agree with every byte received already.
    fn agrees(&self, off: usize, bytes: &[u8]) -> bool {
        let end = off + bytes.len();
        self.have.iter().all(|&(a, b)| {
            let (lo, hi) = (a.max(off), b.min(end));
            lo >= hi || self.data[lo..hi] == bytes[lo - off..hi - off]
        })
    }

    fn insert(&mut self, off: usize, bytes: &[u8]) {
        let end = off + bytes.len();
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        self.data[off..end].copy_from_slice(bytes);
        let (mut lo, mut hi) = (off, end);
        self.have.retain(|&(a, b)| {
            if b < lo || a > hi {
                true
            } else {
                lo = lo.min(a);
                hi = hi.max(b);
                false
            }
        });
        let at = self.have.partition_point(|&(a, _)| a < lo);
        self.have.insert(at, (lo, hi));
    }
}

/// Reassembles fragments.
#[derive(Debug)]
pub struct IPReassembler {
    himem: usize,
    map: HashMap<Key, Entry>,
    mem_used: usize,
    reap_at: u64,
    next_seq: u64,
    fragments: u64,
    reassembled: u64,
    bad: u64,
    overlaps: u64,
    too_big: u64,
    failed: u64,
}

/// What became of one input packet.
enum Outcome {
    Out(Packet),
    Held,
}

impl IPReassembler {
    fn remove(&mut self, key: &Key) -> Option<Entry> {
        let e = self.map.remove(key)?;
        self.mem_used -= e.mem();
        Some(e)
    }

    /// Gives up datagrams silent for 30 s, and the oldest while memory is
    /// over HIMEM; first fragments go to `failed_out`.
    fn reap(&mut self, now: u64, failed_out: &mut Vec<Packet>) {
        if now >= self.reap_at {
            self.reap_at = now.saturating_add(REAP_INTERVAL_NS);
            let dead: Vec<Key> = self
                .map
                .iter()
                .filter(|(_, e)| e.last.saturating_add(REAP_TIMEOUT_NS) < now)
                .map(|(k, _)| *k)
                .collect();
            for k in dead {
                self.give_up(&k, failed_out);
            }
        }
        if self.mem_used > self.himem {
            let low = self.himem / 4 * 3;
            let mut by_age: Vec<(u64, Key)> = self.map.iter().map(|(k, e)| (e.seq, *k)).collect();
            by_age.sort_unstable();
            for (_, k) in by_age {
                if self.mem_used <= low {
                    break;
                }
                self.give_up(&k, failed_out);
            }
        }
    }

    fn give_up(&mut self, key: &Key, failed_out: &mut Vec<Packet>) {
        if let Some(e) = self.remove(key) {
            self.failed += 1;
            failed_out.extend(e.first);
        }
    }

    fn process(&mut self, p: Packet, now: u64, seq: u64, failed_out: &mut Vec<Packet>) -> Outcome {
        let ip = p.l3_bytes();
        if ip.len() < 20 {
            return Outcome::Out(p);
        }
        let frag = be16(ip, 6);
        let off = usize::from(frag & 0x1fff) * 8;
        let mf = frag & 0x2000 != 0;
        if off == 0 && !mf {
            return Outcome::Out(p);
        }
        self.fragments += 1;
        let hl = usize::from(ip[0] & 0x0f) * 4;
        let ip_len = usize::from(be16(ip, 2));
        if hl < 20 || ip_len < hl || ip_len > ip.len() {
            self.bad += 1;
            return Outcome::Held;
        }
        let end = off + ip_len - hl;
        if end > 0xffff || end <= off || (mf && end % 8 != 0) {
            self.bad += 1;
            return Outcome::Held;
        }
        let key: Key = (
            ip[12..16].try_into().unwrap_or_default(),
            ip[16..20].try_into().unwrap_or_default(),
            ip[9],
            be16(ip, 4),
        );
        let prefix = if off == 0 { prefix_len(&p) + hl } else { 20 };
        if prefix + end > MAX_FRAME {
            self.too_big += 1;
            self.remove(&key);
            return Outcome::Held;
        }
        self.reap(now, failed_out);
        let mem_used = &mut self.mem_used;
        let entry = self.map.entry(key).or_insert_with(|| {
            *mem_used += ENTRY_COST;
            Entry {
                first: None,
                data: Vec::new(),
                have: Vec::new(),
                total: None,
                last: now,
                seq,
            }
        });
        let before = entry.mem();
        let payload = &ip[hl..ip_len];
        let inconsistent = match entry.total {
            Some(t) => end > t || (!mf && end != t),
            None => !mf && entry.data.len() > end,
        };
        if inconsistent {
            self.bad += 1;
            return Outcome::Held;
        }
        if !entry.agrees(off, payload) {
            self.overlaps += 1;
            self.remove(&key);
            return Outcome::Held;
        }
        entry.insert(off, payload);
        entry.last = now;
        if !mf {
            entry.total = Some(end);
        }
        if off == 0 {
            entry.first = Some(p);
        }
        let after = entry.mem();
        self.mem_used = self.mem_used + after - before;
        if !entry.complete() {
            return Outcome::Held;
        }
        let Some(e) = self.remove(&key) else {
            return Outcome::Held;
        };
        match build(e) {
            Some(q) => {
                self.reassembled += 1;
                Outcome::Out(q)
            }
            None => {
                self.too_big += 1;
                Outcome::Held
            }
        }
    }

    fn run(&mut self, batch: &mut Batch, now: u64, failed_out: &mut Vec<Packet>) {
        let mut out = Batch::new();
        for p in batch.drain() {
            let seq = self.next_seq;
            self.next_seq += 1;
            if let Outcome::Out(q) = self.process(p, now, seq, failed_out) {
                let _ = out.push(q);
            }
        }
        batch.append(&mut out);
    }
}

/// The whole datagram of a complete entry, on its first fragment.
fn build(e: Entry) -> Option<Packet> {
    let mut q = e.first?;
    let total = e.total?;
    let prefix = prefix_len(&q);
    let hl = usize::from(q.l3_bytes()[0] & 0x0f) * 4;
    let ip_len = hl + total;
    q.set_len(prefix + hl).ok()?;
    q.set_len(prefix + ip_len).ok()?;
    let d = q.data_mut();
    d[prefix + hl..].copy_from_slice(&e.data[..total]);
    let h = &mut d[prefix..prefix + hl];
    h[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    let flags = u16::from_be_bytes([h[6], h[7]]) & 0xc000;
    h[6..8].copy_from_slice(&flags.to_be_bytes());
    h[10] = 0;
    h[11] = 0;
    let sum = !checksum::data(h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    Some(q)
}

fn now_of(cx: &Context<'_>) -> u64 {
    let t: Timestamp = cx.now();
    t.0
}

impl Element for IPReassembler {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut failed = Vec::new();
        self.run(batch, now_of(cx), &mut failed);
        cx.push(0, batch);
        push_failed(failed, cx);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut failed = Vec::new();
        let mut b = Batch::new();
        cx.pull(0, &mut b, max.min(out.remaining()));
        self.run(&mut b, now_of(cx), &mut failed);
        out.append(&mut b);
        push_failed(failed, cx);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("fragments", self.fragments);
        s.counter("reassembled", self.reassembled);
        s.counter("bad", self.bad);
        s.counter("overlaps", self.overlaps);
        s.counter("too_big", self.too_big);
        s.counter("failed", self.failed);
        s.counter("in_progress", self.map.len() as u64);
        s.counter("mem_used", self.mem_used as u64);
    }
}

fn push_failed(failed: Vec<Packet>, cx: &mut Context<'_>) {
    let mut b = Batch::new();
    for p in failed {
        if let Err(p) = b.push(p) {
            cx.push(1, &mut b);
            let _ = b.push(p);
        }
    }
    cx.push(1, &mut b);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{fix_ip_checksum, ip_checksum_ok, udp};
    use bricks_runtime::testing::{make_element, Harness};

    /// The fragment of `d` (a 20-byte-header datagram) carrying payload
    /// bytes `off..off + len`, More Fragments set if `mf`.
    fn frag(d: &[u8], off: usize, len: usize, mf: bool) -> Vec<u8> {
        let mut f = d[..20].to_vec();
        f.extend_from_slice(&d[20 + off..20 + off + len]);
        f[2..4].copy_from_slice(&((20 + len) as u16).to_be_bytes());
        let fo = (off / 8) as u16 | if mf { 0x2000 } else { 0 };
        f[6..8].copy_from_slice(&fo.to_be_bytes());
        fix_ip_checksum(&mut f);
        f
    }

    /// A 77-byte UDP datagram split into 24, 24, 24, 5 payload bytes, as
    /// IPFragmenter(44) splits it.
    fn pieces() -> (Vec<u8>, Vec<Vec<u8>>) {
        let d = udp(69);
        let f = vec![
            frag(&d, 0, 24, true),
            frag(&d, 24, 24, true),
            frag(&d, 48, 24, true),
            frag(&d, 72, 5, false),
        ];
        (d, f)
    }

    #[test]
    fn reassembles_in_any_order() {
        let (d, f) = pieces();
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
            let mut h = Harness::push(&CLASS, "", 1, 2);
            for i in order {
                h.push_bytes(0, &f[i]);
            }
            let out = h.take_bytes(0);
            assert_eq!(out, vec![d.clone()], "order {order:?}");
            assert!(ip_checksum_ok(&out[0]));
            assert_eq!(h.stats().get("reassembled"), Some(1));
            assert_eq!(h.stats().get("in_progress"), Some(0));
            assert_eq!(h.stats().get("mem_used"), Some(0));
        }
    }

    #[test]
    fn whole_packets_pass_and_link_header_is_kept() {
        let (d, f) = pieces();
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &d);
        assert_eq!(h.take_bytes(0), vec![d.clone()]);
        let eth = [2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 8, 0];
        for (i, x) in f.iter().enumerate() {
            let mut fr = eth.to_vec();
            fr.extend(x);
            let mut p = Packet::from_slice(&fr).unwrap();
            p.set_network_header(14);
            h.push_packets(0, [p]);
            assert_eq!(h.stats().get("in_progress"), Some(u64::from(i < 3)));
        }
        let mut want = eth.to_vec();
        want.extend(&d);
        assert_eq!(h.take_bytes(0), vec![want]);
    }

    #[test]
    fn identical_overlap_is_fine_conflicting_overlap_discards() {
        let (d, f) = pieces();
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &f[0]);
        h.push_bytes(0, &f[0]);
        // 16..40 overlaps both neighbours with the same bytes.
        h.push_bytes(0, &frag(&d, 16, 24, true));
        h.push_bytes(0, &f[2]);
        h.push_bytes(0, &f[3]);
        h.push_bytes(0, &f[1]);
        assert_eq!(h.take_bytes(0), vec![d.clone()]);
        // Now a fragment rewriting bytes 24..48 (a Teardrop-style attack).
        let mut evil = d.clone();
        evil[20 + 30] ^= 0xff;
        h.push_bytes(0, &f[0]);
        h.push_bytes(0, &f[1]);
        h.push_bytes(0, &frag(&evil, 24, 24, true));
        assert_eq!(h.stats().get("overlaps"), Some(1));
        assert_eq!(h.stats().get("in_progress"), Some(0));
        h.push_bytes(0, &f[2]);
        h.push_bytes(0, &f[3]);
        assert!(h.take(0).is_empty());
    }

    #[test]
    fn hostile_fragments_are_dropped_and_counted() {
        let d = udp(3000);
        let mut h = Harness::push(&CLASS, "", 1, 2);
        // Middle fragment not a multiple of 8 bytes.
        h.push_bytes(0, &frag(&d, 0, 20, true));
        // Length field beyond the packet, and below the header.
        let mut f = frag(&d, 8, 8, true);
        f[2..4].copy_from_slice(&100u16.to_be_bytes());
        h.push_bytes(0, &f);
        f[2..4].copy_from_slice(&10u16.to_be_bytes());
        h.push_bytes(0, &f);
        // Ending past 65535.
        let mut f = frag(&d, 0, 8, true);
        f[6..8].copy_from_slice(&0x3fffu16.to_be_bytes());
        h.push_bytes(0, &f);
        assert_eq!(h.stats().get("bad"), Some(4));
        // Past what a buffer holds.
        h.push_bytes(0, &frag(&d, 2040, 4, false));
        assert_eq!(h.stats().get("too_big"), Some(1));
        // A last fragment disagreeing with the known end.
        h.push_bytes(0, &frag(&d, 16, 8, false));
        h.push_bytes(0, &frag(&d, 24, 8, false));
        h.push_bytes(0, &frag(&d, 0, 32, true));
        assert_eq!(h.stats().get("bad"), Some(6));
        assert!(h.take(0).is_empty());
        // Tiny and empty packets pass as not fragments.
        h.push_bytes(0, &[0x45]);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn silent_datagrams_are_given_up_with_fragment_zero_on_output_1() {
        let (_, f) = pieces();
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.advance_to(Timestamp::from_parts(100, 0));
        h.push_bytes(0, &f[0]);
        h.push_bytes(0, &f[1]);
        h.advance_to(Timestamp::from_parts(131, 0));
        let other = frag(&udp(69), 0, 24, true);
        let mut other = other;
        other[5] ^= 1; // another identification
        fix_ip_checksum(&mut other);
        h.push_bytes(0, &other);
        assert_eq!(h.take_bytes(1), vec![f[0].clone()]);
        assert_eq!(h.stats().get("failed"), Some(1));
        assert_eq!(h.stats().get("in_progress"), Some(1));
    }

    #[test]
    fn memory_and_datagrams_in_progress_are_bounded() {
        let mut h = Harness::push(&CLASS, "HIMEM 4096", 1, 1);
        for id in 0..2000u16 {
            let mut f = frag(&udp(200), 8, 48, true);
            f[4..6].copy_from_slice(&id.to_be_bytes());
            fix_ip_checksum(&mut f);
            h.push_bytes(0, &f);
            assert!(h.stats().get("mem_used").unwrap() <= 4096 + 200);
        }
        assert!(h.stats().get("in_progress").unwrap() <= 4096 / ENTRY_COST as u64);
        assert!(h.stats().get("failed").unwrap() > 1900);
    }

    #[test]
    fn arguments() {
        assert!(make_element(&CLASS, "HIMEM 1000, MAX_MTU_ANNO 20", &PortInfo::default()).is_ok());
        assert!(make_element(&CLASS, "HIMEM x", &PortInfo::default()).is_err());
    }
}
