//! `DecIPTTL`: the TTL decrement every forwarded datagram gets (RFC 1812
//! section 5.3.1), with the checksum patched rather than recomputed
//! (RFC 1624).
//!
//! This is on every packet's path through an IP router, so the work per
//! packet is one bounds check, one compare, two byte writes and the
//! RFC 1624 eqn. 3 update.

use super::header::is_multicast;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};

/// The `DecIPTTL` class.
pub static CLASS: ElementClass = ElementClass {
    name: "DecIPTTL",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "decrements the IP time-to-live, sending expired packets to output 1",
    synopsis: "DecIPTTL([KEYWORDS ACTIVE, MULTICAST])",
    description: "Expects IP packets with the network header annotation set. A packet \
        whose TTL is 0 or 1 must not be forwarded (RFC 1812 section 5.3.1): it leaves \
        unchanged on output 1, usually connected to ICMPError(..., timeexceeded), or is \
        dropped if output 1 is unconnected. Other packets have their TTL decreased by \
        one and their header checksum updated incrementally with RFC 1624 eqn. 3, which \
        gives the same result as recomputing it, and leave on output 0. A packet \
        shorter than an IP header is dropped and counted.",
    ports: "one input; output 0 forwarded packets (agnostic); optional output 1 \
        expired packets (push)",
    keywords: &[
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "when false, packets pass untouched; the write handler `active` \
                changes it at run time",
        },
        Keyword {
            name: "MULTICAST",
            ty: "boolean",
            default: Some("true"),
            doc: "when false, packets to multicast destinations pass untouched",
        },
    ],
    counters: &[
        (
            "expired",
            "packets with TTL 0 or 1 (sent to output 1 or dropped)",
        ),
        ("truncated", "packets shorter than an IP header, dropped"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 11 66 d7 0a 00 00 01 \
        0a 00 00 02>, LIMIT 1) -> MarkIPHeader -> dt :: DecIPTTL -> Discard; \
        dt[1] -> Discard;",
    see_also: &["ICMPError", "CheckIPHeader"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(DecIPTTL {
        active: args.read("ACTIVE")?.unwrap_or(true),
        multicast: args.read("MULTICAST")?.unwrap_or(true),
        has_reject: ports.noutputs() > 1,
        expired: 0,
        truncated: 0,
    }))
}

/// Decrements the TTL.
#[derive(Debug)]
pub struct DecIPTTL {
    active: bool,
    multicast: bool,
    has_reject: bool,
    expired: u64,
    truncated: u64,
}

/// Decrements the TTL of the header `h` and patches its checksum; the
/// caller has checked that the TTL is above 1.
///
/// RFC 1624 eqn. 3 only needs the difference between the old and the new
/// 16-bit word (TTL, protocol): it is always 0x0100, so the update is
/// written with constant words, `update(HC, 0x0100, 0x0000)`, which gives
/// the same sum as the real words. The words are taken in memory order
/// (0x0100 is the bytes `[1, 0]`), which
/// [`checksum::update`](bricks_wire::checksum::update) allows, so that
/// neither the checksum read nor its write swaps bytes. With the new word
/// zero the sum has two 16-bit terms, at most 0x1fffe, so one end-around
/// carry completes the fold: an add, a fold and a complement.
#[inline(always)]
pub(crate) fn decrement_ttl(h: &mut [u8; 20]) {
    let sum =
        u32::from(!u16::from_ne_bytes([h[10], h[11]])) + u32::from(!u16::from_ne_bytes([1, 0]));
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    h[8] -= 1;
    h[10..12].copy_from_slice(&sum.to_ne_bytes());
}

impl DecIPTTL {
    /// A DecIPTTL with its defaults (IPOutputCombo's).
    pub(crate) fn new(has_reject: bool) -> DecIPTTL {
        DecIPTTL {
            active: true,
            multicast: true,
            has_reject,
            expired: 0,
            truncated: 0,
        }
    }

    #[inline(always)]
    pub(crate) fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        if self.multicast {
            self.verdict_with::<true>(p)
        } else {
            self.verdict_with::<false>(p)
        }
    }

    /// [`DecIPTTL::verdict`] with `self.multicast` a constant, so that a
    /// batch loop tests it once.
    #[inline(always)]
    fn verdict_with<const MULTICAST: bool>(&mut self, p: &mut Packet) -> Option<usize> {
        let Some(h) = p.l3_chunk_mut::<20>() else {
            self.truncated += 1;
            return None;
        };
        if !MULTICAST && is_multicast(u32::from_be_bytes([h[16], h[17], h[18], h[19]])) {
            return Some(0);
        }
        if h[8] <= 1 {
            self.expired += 1;
            return self.has_reject.then_some(1);
        }
        decrement_ttl(h);
        Some(0)
    }

    /// The usual packet: decremented, bound for output 0; any other
    /// (multicast when MULTICAST is off included) is left as it was, for
    /// [`DecIPTTL::verdict_with`].
    #[inline(always)]
    fn usual<const MULTICAST: bool>(p: &mut Packet) -> bool {
        match p.l3_chunk_mut::<20>() {
            Some(h)
                if h[8] > 1
                    && (MULTICAST
                        || !is_multicast(u32::from_be_bytes([h[16], h[17], h[18], h[19]]))) =>
            {
                decrement_ttl(h);
                true
            }
            _ => false,
        }
    }
}

impl Element for DecIPTTL {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        match (self.active, self.multicast) {
            (true, true) => {
                cx.push_usual(batch, Self::usual::<true>, |p| self.verdict_with::<true>(p))
            }
            (true, false) => cx.push_usual(batch, Self::usual::<false>, |p| {
                self.verdict_with::<false>(p)
            }),
            (false, _) => cx.push(0, batch),
        }
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if self.active {
            cx.pull_classified(out, max, |p| self.verdict(p));
        } else {
            cx.pull_with(out, max, |_, _| {});
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("expired", self.expired);
        s.counter("truncated", self.truncated);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "active" => {
                self.active = bool::from_arg(value.trim())
                    .map_err(|why| format!("active: expected true or false, {why}"))?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}`; DecIPTTL has `active`"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::be16;
    use crate::ip::header::testing::{echo_request, fix_ip_checksum, ip_checksum_ok};
    use bricks_runtime::testing::Harness;
    use bricks_wire::checksum;
    use proptest::prelude::*;

    fn with_ttl(ttl: u8) -> Vec<u8> {
        let mut p = echo_request();
        p[8] = ttl;
        fix_ip_checksum(&mut p);
        p
    }

    #[test]
    fn decrements_and_keeps_checksum_valid() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let frame = with_ttl(64);
        h.push_bytes(0, &frame);
        let out = h.take_bytes(0);
        assert_eq!(out[0][8], 63);
        assert!(ip_checksum_ok(&out[0]));
        let mut expected = frame.clone();
        expected[8] = 63;
        fix_ip_checksum(&mut expected);
        assert_eq!(out[0], expected);
    }

    #[test]
    fn ttl_one_and_zero_go_to_output_1_unchanged() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        for ttl in [1, 0] {
            h.push_bytes(0, &with_ttl(ttl));
            assert!(h.take(0).is_empty());
            assert_eq!(h.take_bytes(1), vec![with_ttl(ttl)]);
        }
        h.push_bytes(0, &with_ttl(2));
        assert_eq!(h.take_bytes(0)[0][8], 1);
        assert_eq!(h.stats().get("expired"), Some(2));
    }

    /// A batch whose usual packets come before and after unusual ones:
    /// each packet is decremented once, in order within each output.
    #[test]
    fn a_mixed_batch_is_decremented_once_and_split_in_order() {
        let mut multicast = with_ttl(5);
        multicast[16..20].copy_from_slice(&[239, 1, 1, 1]);
        fix_ip_checksum(&mut multicast);
        let frames = [
            with_ttl(64),
            with_ttl(9),
            multicast.clone(),
            with_ttl(1),
            with_ttl(9)[..19].to_vec(),
            with_ttl(30),
            with_ttl(0),
            with_ttl(2),
        ];
        let mut h = Harness::push(&CLASS, "MULTICAST false", 1, 2);
        h.push_packets(0, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        let forwarded = [
            with_ttl(63),
            with_ttl(8),
            multicast,
            with_ttl(29),
            with_ttl(1),
        ];
        let out = h.take_bytes(0);
        assert_eq!(out, forwarded.to_vec());
        assert!(out.iter().all(|f| ip_checksum_ok(f)));
        assert_eq!(h.take_bytes(1), vec![with_ttl(1), with_ttl(0)]);
        let s = h.stats();
        assert_eq!((s.get("expired"), s.get("truncated")), (Some(2), Some(1)));
    }

    #[test]
    fn expired_dropped_without_output_1() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &with_ttl(1));
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("expired"), Some(1));
    }

    #[test]
    fn truncated_dropped() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &with_ttl(9)[..19]);
        assert!(h.take(0).is_empty() && h.take(1).is_empty());
        assert_eq!(h.stats().get("truncated"), Some(1));
    }

    #[test]
    fn inactive_and_multicast() {
        let mut h = Harness::push(&CLASS, "ACTIVE false", 1, 2);
        h.push_bytes(0, &with_ttl(1));
        assert_eq!(h.take_bytes(0), vec![with_ttl(1)]);
        h.write_handler("active", "true").unwrap();
        h.push_bytes(0, &with_ttl(1));
        assert_eq!(h.take(1).len(), 1);
        assert!(h.write_handler("active", "perhaps").is_err());
        assert!(h.write_handler("colour", "red").is_err());

        let mut m = with_ttl(1);
        m[16..20].copy_from_slice(&[239, 1, 1, 1]);
        fix_ip_checksum(&mut m);
        let mut h = Harness::push(&CLASS, "MULTICAST false", 1, 2);
        h.push_bytes(0, &m);
        assert_eq!(h.take_bytes(0), vec![m.clone()]);
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &m);
        assert_eq!(h.take(1).len(), 1);
    }

    #[test]
    fn checksum_corner_cases_match_recompute() {
        // Headers whose checksum field is 0x0000 or 0xffff before or after
        // the decrement: eqn. 3 must agree with a full recomputation.
        let mut found = [false; 2];
        for id in 0..=0xffffu16 {
            let mut hdr = with_ttl(2)[..20].to_vec();
            hdr[4..6].copy_from_slice(&id.to_be_bytes());
            fix_ip_checksum(&mut hdr);
            let before = be16(&hdr, 10);
            let mut h: [u8; 20] = hdr.clone().try_into().unwrap();
            decrement_ttl(&mut h);
            let mut expected = hdr.clone();
            expected[8] = 1;
            fix_ip_checksum(&mut expected);
            assert_eq!(&h[..], &expected[..], "ident {id:#06x}");
            if before == 0x0000 || be16(&h, 10) == 0x0000 {
                found[0] = true;
            }
            if before == 0xffff || be16(&h, 10) == 0xffff {
                found[1] = true;
            }
        }
        // A recomputed checksum is never 0xffff (RFC 1624 section 3), and
        // 0x0000 is reached for some identification.
        assert!(found[0]);
        assert!(!found[1]);
    }

    #[test]
    fn constant_words_equal_real_words() {
        for ttl in 2..=255u8 {
            for proto in [0u8, 1, 6, 17, 255] {
                for hc in (0..=0xffffu32).step_by(251).chain([0, 0xffff]) {
                    let hc = hc as u16;
                    let real = checksum::update(
                        hc,
                        u16::from_be_bytes([ttl, proto]),
                        u16::from_be_bytes([ttl - 1, proto]),
                    );
                    assert_eq!(checksum::update(hc, 0x0100, 0), real);
                }
            }
        }
    }

    proptest! {
        #[test]
        fn decrement_equals_recompute(mut hdr in proptest::collection::vec(any::<u8>(), 20), ttl in 2u8..=255) {
            hdr[0] = 0x45;
            hdr[8] = ttl;
            fix_ip_checksum(&mut hdr);
            let mut h: [u8; 20] = hdr.clone().try_into().unwrap();
            decrement_ttl(&mut h);
            let mut expected = hdr.clone();
            expected[8] = ttl - 1;
            fix_ip_checksum(&mut expected);
            prop_assert_eq!(&h[..], &expected[..]);
            prop_assert!(ip_checksum_ok(&h));
        }
    }
}
