//! Sequence-number deltas of a rewritten TCP flow (Click's
//! `TCPRewriter::TCPFlow::delta_transition`): when an element changes the
//! length of a flow's payload (FTPPortMapper rewriting a PORT command),
//! the bytes after the change move, and every later sequence number of
//! that direction, every acknowledgement of the other, and every SACK
//! block (RFC 2018) must move with them.
//!
//! A transition says: from sequence number `trigger` on, add `delta`.
//! Transitions are kept newest first, one column per direction, exactly as
//! Click keeps them, so that retransmissions of bytes before a change get
//! the delta that held then. A transition 2^30 bytes behind a newer one is
//! forgotten (Click's rule). Click's list grows with every change; this
//! one keeps at most [`MAX_TRANSITIONS`], forgetting the oldest (whose
//! bytes would only come again as very old retransmissions).

use bricks_wire::checksum;

/// Transitions kept per flow, at most.
pub const MAX_TRANSITIONS: usize = 64;

/// Whether `a` is at or after `b` in sequence space (RFC 793 section
/// 3.3, modulo 2^32).
#[inline]
fn seq_geq(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Transition {
    delta: [i32; 2],
    trigger: [u32; 2],
    has: [bool; 2],
}

/// The transitions of one flow; direction 0 is the flow as first seen,
/// 1 its replies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeqDeltas {
    /// Newest first.
    dt: Vec<Transition>,
}

/// Why a delta was not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaRefused {
    /// The trigger is before the direction's newest one (Click records
    /// transitions in increasing order only).
    OutOfOrder,
}

impl SeqDeltas {
    /// The current delta of direction `dir` (the table handler's
    /// `seq +N`).
    pub fn current(&self, dir: bool) -> i32 {
        self.dt.first().map_or(0, |t| t.delta[usize::from(dir)])
    }

    /// Click's `update_seqno_delta`: from sequence number `trigger` on,
    /// direction `dir`'s bytes move by `d` more.
    pub fn update(&mut self, dir: bool, trigger: u32, d: i32) -> Result<(), DeltaRefused> {
        let dd = usize::from(dir);
        let o = 1 - dd;
        if let Some(h) = self.dt.first() {
            if h.has[dd] && !seq_geq(trigger, h.trigger[dd]) {
                return Err(DeltaRefused::OutOfOrder);
            }
        }
        let new = match self.dt.first() {
            None => true,
            Some(h) if h.has[dd] => trigger != h.trigger[dd],
            Some(h) => h.delta[dd] != 0,
        };
        if new {
            self.dt.insert(0, Transition::default());
            // The other direction's column moves down with the list.
            let mut i = 0;
            while i + 1 < self.dt.len() {
                let x = self.dt[i + 1];
                self.dt[i].delta[o] = x.delta[o];
                self.dt[i].trigger[o] = x.trigger[o];
                self.dt[i].has[o] = x.has[o];
                if !x.has[o] {
                    break;
                }
                i += 1;
            }
        }
        let below = self.dt.get(1).map_or(0, |t| t.delta[dd]);
        let h = &mut self.dt[0];
        h.trigger[dd] = trigger;
        h.delta[dd] = below.wrapping_add(d);
        h.has[dd] = true;
        // Forget transitions 2^30 behind this one.
        let mut j = 1;
        while j < self.dt.len()
            && self.dt[j].has[dd]
            && !seq_geq(trigger, self.dt[j].trigger[dd].wrapping_add(1 << 30))
        {
            j += 1;
        }
        if j < self.dt.len() && self.dt[j].has[dd] {
            self.dt[j].has[dd] = false;
            if !self.dt[j].has[o] {
                self.dt.truncate(j + 1);
            }
        }
        if self.dt.len() > MAX_TRANSITIONS {
            self.dt.truncate(MAX_TRANSITIONS);
            if let Some(last) = self.dt.last_mut() {
                last.has = [false, false];
            }
        }
        Ok(())
    }

    /// Click's `new_seq`.
    fn new_seq(&self, dir: usize, seq: u32) -> u32 {
        for t in &self.dt {
            if t.has[dir] && !seq_geq(seq, t.trigger[dir]) {
                continue;
            }
            return seq.wrapping_add(t.delta[dir] as u32);
        }
        seq
    }

    /// Click's `new_ack`: an acknowledgement in direction `dir` is of
    /// the other direction's bytes.
    fn new_ack(&self, dir: usize, ack: u32) -> u32 {
        let o = 1 - dir;
        for t in &self.dt {
            let back = ack.wrapping_sub(t.delta[o] as u32);
            if t.has[o] && !seq_geq(back, t.trigger[o]) {
                continue;
            }
            return back;
        }
        ack
    }

    /// Rewrites the sequence and acknowledgement numbers and SACK blocks
    /// of the TCP segment `tcp` (header onwards) going in direction `dir`,
    /// patching its checksum (RFC 1624). A segment shorter than its
    /// header is left alone, as Click leaves it.
    pub fn apply(&mut self, dir: bool, tcp: &mut [u8]) {
        if self.dt.is_empty() || tcp.len() < 20 {
            return;
        }
        let off = usize::from(tcp[12] >> 4) * 4;
        if tcp.len() < off || off < 20 {
            return;
        }
        let d = usize::from(dir);
        let o = 1 - d;
        let seq = be32(tcp, 4);
        let h = &mut self.dt[0];
        if h.has[d] && seq_geq(seq, h.trigger[d].wrapping_add(1 << 30)) {
            h.has[d] = false;
            if !h.has[o] {
                self.dt.truncate(1);
            }
        }
        let h = self.dt[0];
        let mut sum = u16::from_be_bytes([tcp[16], tcp[17]]);
        if h.delta[d] != 0 || h.has[d] {
            let n = self.new_seq(d, seq);
            sum = checksum::update32(sum, seq, n);
            tcp[4..8].copy_from_slice(&n.to_be_bytes());
        }
        if h.delta[o] != 0 || h.has[o] {
            let ack = be32(tcp, 8);
            let n = self.new_ack(d, ack);
            sum = checksum::update32(sum, ack, n);
            tcp[8..12].copy_from_slice(&n.to_be_bytes());
            // Click skips the common timestamp-only option layout.
            if off > 32 || (off == 32 && be32(tcp, 20) != 0x0101_080a) {
                sum = self.apply_sack(d, &mut tcp[..off], sum);
            }
        }
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());
    }

    /// Click's `apply_sack`: every SACK block's edges are acknowledgements.
    fn apply_sack(&self, dir: usize, hdr: &mut [u8], mut sum: u16) -> u16 {
        let end = hdr.len();
        let mut i = 20;
        while i < end {
            match hdr[i] {
                0 => break,
                1 => i += 1,
                kind => {
                    let Some(&len) = hdr.get(i + 1) else { break };
                    let len = usize::from(len);
                    if kind == 5 {
                        if i + len > end || len % 8 != 2 {
                            break;
                        }
                        // The blocks may sit at any offset: patch the sum
                        // word by word over the aligned bytes they cover
                        // (the header's length is a multiple of 4, so
                        // rounding up stays inside it).
                        let lo = (i + 2) & !1;
                        let hi = (i + len + 1) & !1;
                        let mut before = [0u8; 48];
                        before[..hi - lo].copy_from_slice(&hdr[lo..hi]);
                        let mut at = i + 2;
                        while at + 8 <= i + len {
                            for k in [at, at + 4] {
                                let v = self.new_ack(dir, be32(hdr, k));
                                hdr[k..k + 4].copy_from_slice(&v.to_be_bytes());
                            }
                            at += 8;
                        }
                        for (w, old) in hdr[lo..hi].chunks_exact(2).zip(before.chunks_exact(2)) {
                            sum = checksum::update(
                                sum,
                                u16::from_be_bytes([old[0], old[1]]),
                                u16::from_be_bytes([w[0], w[1]]),
                            );
                        }
                        i += len;
                    } else {
                        if len < 2 {
                            break;
                        }
                        i += len;
                    }
                }
            }
        }
        sum
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP header (ports 21 -> 1024, ACK) with `opts` and a checksum
    /// that makes the segment's one's complement sum 0xffff (the pseudo
    /// header left out: it does not change here).
    fn segment(seq: u32, ack: u32, opts: &[u8]) -> Vec<u8> {
        let mut t = vec![
            0x00, 0x15, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x10, 0x20, 0x00, 0, 0, 0, 0,
        ];
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t.extend_from_slice(opts);
        t[12] = ((t.len() / 4) as u8) << 4;
        let s = !checksum::data(&t);
        t[16..18].copy_from_slice(&s.to_be_bytes());
        t
    }

    fn sack(blocks: &[(u32, u32)]) -> Vec<u8> {
        let mut o = vec![1, 1, 5, 2 + 8 * blocks.len() as u8];
        for (l, r) in blocks {
            o.extend_from_slice(&l.to_be_bytes());
            o.extend_from_slice(&r.to_be_bytes());
        }
        o
    }

    fn blocks(t: &[u8]) -> Vec<(u32, u32)> {
        (24..t.len())
            .step_by(8)
            .map(|i| (be32(t, i), be32(t, i + 4)))
            .collect()
    }

    /// Click's TCPRewriter-01 case: a 29-byte PORT command at sequence
    /// number 1 became 17 bytes.
    #[test]
    fn later_bytes_and_their_acks_move() {
        let mut d = SeqDeltas::default();
        d.update(false, 30, -12).unwrap();
        assert_eq!(d.current(false), -12);
        let mut t = segment(30, 0, &[]);
        d.apply(false, &mut t);
        assert_eq!(be32(&t, 4), 18);
        assert_eq!(checksum::data(&t), 0xffff);
        let mut t = segment(1, 0, &[]);
        d.apply(false, &mut t);
        assert_eq!(be32(&t, 4), 1, "before the change: unchanged");
        for (ack, want) in [(18, 30), (1, 1), (0, 0)] {
            let mut t = segment(0, ack, &[]);
            d.apply(true, &mut t);
            assert_eq!(be32(&t, 8), want);
            assert_eq!(checksum::data(&t), 0xffff);
        }
        let mut t = segment(0, 0, &sack(&[(1, 10), (1, 18), (18, 20)]));
        d.apply(true, &mut t);
        assert_eq!(blocks(&t), vec![(1, 10), (1, 30), (30, 32)]);
        assert_eq!(checksum::data(&t), 0xffff);
    }

    #[test]
    fn sack_at_an_odd_offset_keeps_the_checksum() {
        let mut d = SeqDeltas::default();
        d.update(false, 100, 7).unwrap();
        let mut opts = vec![1];
        opts.extend_from_slice(&[5, 10, 0, 0, 0, 200, 0, 0, 1, 0x2c]);
        opts.push(0);
        let mut t = segment(0, 150, &opts);
        d.apply(true, &mut t);
        assert_eq!(be32(&t, 8), 143);
        assert_eq!(be32(&t, 23), 193);
        assert_eq!(be32(&t, 27), 293);
        assert_eq!(checksum::data(&t), 0xffff);
    }

    #[test]
    fn transitions_are_ordered_and_old_ones_forgotten() {
        let mut d = SeqDeltas::default();
        d.update(false, 1000, 5).unwrap();
        assert_eq!(d.update(false, 999, 1), Err(DeltaRefused::OutOfOrder));
        d.update(false, 2000, 5).unwrap();
        assert_eq!(d.new_seq(0, 1500), 1505);
        assert_eq!(d.new_seq(0, 2500), 2510);
        assert_eq!(d.new_seq(0, 10), 10);
        // 1G later the old transitions no longer apply.
        let far = 2000u32 + (1 << 30) + 1;
        d.update(false, far, 1).unwrap();
        assert_eq!(d.new_seq(0, 10), 20);
        for i in 0..(MAX_TRANSITIONS as u32 + 10) {
            d.update(true, 10 * i, 1).unwrap();
        }
        assert!(d.dt.len() <= MAX_TRANSITIONS);
    }

    #[test]
    fn short_or_malformed_headers_are_left_alone() {
        let mut d = SeqDeltas::default();
        d.update(false, 0, 3).unwrap();
        let mut short = segment(5, 0, &[])[..19].to_vec();
        let before = short.clone();
        d.apply(false, &mut short);
        assert_eq!(short, before);
        // A data offset past the bytes there.
        let mut t = segment(5, 0, &[]);
        t[12] = 0xf0;
        let before = t.clone();
        d.apply(false, &mut t);
        assert_eq!(t, before);
        // Options that run off the end, or claim length 0.
        for opts in [vec![5, 200, 0, 0], vec![3, 0, 0, 0], vec![5]] {
            let mut o = opts.clone();
            o.resize(4, 0);
            let mut t = segment(5, 9, &o);
            d.apply(true, &mut t);
            assert_eq!(checksum::data(&t), 0xffff);
        }
    }
}
