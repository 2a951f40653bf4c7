//! `StoreUDPTimeSeqRecord`: writes a sequence number and a timestamp, or
//! the time since that timestamp, into UDP payloads (Click's
//! `elements/analysis/storeudptimeseqrecord.cc`), for measuring one-way
//! delays from captures; the UDP checksum is updated incrementally
//! (RFC 1624).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_wire::checksum;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The `StoreUDPTimeSeqRecord` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StoreUDPTimeSeqRecord",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores a sequence number and timestamps in UDP payloads",
    synopsis: "StoreUDPTimeSeqRecord(OFFSET [, DELTA])",
    description: "Writes a record of five 32-bit words in network byte order at the start \
        of each UDP payload: a sequence number, the initial time's seconds and \
        nanoseconds, and the difference's seconds and nanoseconds. With DELTA false (the \
        default) the sequence number becomes the packets counted so far (this one \
        included), the initial time the router's clock now, and the difference 0. With \
        DELTA true the initial time is left as it is and the difference becomes the time \
        since it (negative differences have negative seconds and nanoseconds from 0 to \
        999999999, as Click's timestamps). Two such elements, one before a delay and one \
        after, record each packet's delay in the packet itself.\n\n\
        The IPv4 or IPv6 header starts OFFSET bytes into the packet (14 after an Ethernet \
        header); its version says which. An IPv6 header must be followed by UDP (next \
        header 17). The UDP checksum is updated for the words changed (RFC 1624); an IPv4 \
        checksum of 0 (none) stays 0, and a computed 0 is written as 0xffff (RFC 768). \
        Packets of another version, IPv6 packets whose next header is not UDP, and packets \
        too short for the record are dropped and counted. The `count` handler reads the \
        packets counted and `reset` sets it to 0; one count serves every worker's copy of \
        the element.\n\n\
        Unlike Click, bricks drops an IPv4 header whose length is below 20 bytes, and \
        updates the checksum exactly (Click's update leaves the old difference words in \
        it, so a DELTA record's checksum is wrong unless they were zero, and it may write \
        a checksum where an IPv4 packet had none).",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "unsigned",
            default: None,
            doc: "where the IP header starts; positional",
        },
        Keyword {
            name: "DELTA",
            ty: "boolean",
            default: Some("false"),
            doc: "write the time since the initial time instead of starting a record",
        },
    ],
    counters: &[
        ("count", "packets counted (the last sequence number)"),
        (
            "drops",
            "packets dropped: not UDP over IPv4 or IPv6, or too short",
        ),
    ],
    example: "RatedSource(\\<00>, LENGTH 22, RATE 10, LIMIT 10) \
        -> UDPIPEncap(10.0.1.1, 6667, 20.0.0.2, 6667) \
        -> EtherEncap(0x0800, 00:04:23:D0:93:63, 00:17:cb:0d:f8:db) \
        -> StoreUDPTimeSeqRecord(OFFSET 14, DELTA false) -> DelayShaper(100msec) \
        -> StoreUDPTimeSeqRecord(OFFSET 14, DELTA true) -> Discard;",
    see_also: &["DelayShaper", "ToDump", "SetTimestamp"],
};

/// The record's length: five 32-bit words.
const RECORD: usize = 20;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: u32 = args.read_mp("OFFSET")?;
    let delta = args.read("DELTA")?.unwrap_or(false);
    let count = args.shared(|_| Ok(AtomicU64::new(0)))?;
    Ok(Box::new(StoreUDPTimeSeqRecord {
        offset: offset as usize,
        delta,
        count,
        drops: 0,
    }))
}

/// Records sequence numbers and times.
#[derive(Debug)]
pub struct StoreUDPTimeSeqRecord {
    offset: usize,
    delta: bool,
    /// Packets counted, shared by every worker's instance.
    count: Arc<AtomicU64>,
    drops: u64,
}

/// Where the UDP header is in `d`, given the IP header at `offset`, and
/// whether a zero checksum means none (IPv4); `None` for a packet that is
/// not UDP over IPv4 or IPv6 or is too short for the record.
fn udp_at(d: &[u8], offset: usize) -> Option<(usize, bool)> {
    let first = *d.get(offset..offset.checked_add(8)?)?.first()?;
    let (udp, v4) = match first >> 4 {
        4 => {
            let hl = usize::from(first & 0x0f) * 4;
            if hl < 20 {
                return None;
            }
            (offset + hl, true)
        }
        6 if d[offset + 6] == 17 => (offset + 40, false),
        _ => return None,
    };
    (d.len() >= udp + 8 + RECORD).then_some((udp, v4))
}

/// Splits nanoseconds (possibly negative) into Click's seconds and
/// nanoseconds 0 to 999999999.
fn split(ns: i128) -> (u32, u32) {
    let sec = ns.div_euclid(1_000_000_000);
    let nsec = ns.rem_euclid(1_000_000_000);
    // Seconds are written as Click's 32-bit field: two's complement.
    (sec as i64 as u32, nsec as u32)
}

impl StoreUDPTimeSeqRecord {
    /// Writes one packet's record; false to drop it.
    fn record(&self, p: &mut Packet, now: i128) -> bool {
        let Some((udp, v4)) = udp_at(p.data(), self.offset) else {
            return false;
        };
        let d = p.data_mut();
        let at = udp + 8;
        let mut old = [0u8; RECORD];
        old.copy_from_slice(&d[at..at + RECORD]);
        let word = |i: usize| u32::from_be_bytes([old[i], old[i + 1], old[i + 2], old[i + 3]]);
        let mut new = old;
        let count = self.count.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        if self.delta {
            let start = i128::from(word(4)) * 1_000_000_000 + i128::from(word(8));
            let (s, ns) = split(now - start);
            new[12..16].copy_from_slice(&s.to_be_bytes());
            new[16..20].copy_from_slice(&ns.to_be_bytes());
        } else {
            let (s, ns) = split(now);
            new[0..4].copy_from_slice(&(count as u32).to_be_bytes());
            new[4..8].copy_from_slice(&s.to_be_bytes());
            new[8..12].copy_from_slice(&ns.to_be_bytes());
            new[12..20].fill(0);
        }
        d[at..at + RECORD].copy_from_slice(&new);
        let old_sum = u16::from_be_bytes([d[udp + 6], d[udp + 7]]);
        if !(v4 && old_sum == 0) {
            // RFC 1624 eqn. 3 over the record's ten words.
            let sum = !checksum::combine(&[!old_sum, !checksum::data(&old), checksum::data(&new)]);
            let sum = if sum == 0 { 0xffff } else { sum };
            d[udp + 6..udp + 8].copy_from_slice(&sum.to_be_bytes());
        }
        true
    }

    fn apply(&mut self, b: &mut Batch, cx: &Context<'_>) {
        let now = i128::from(cx.now().0);
        let before = b.len();
        b.retain(|p| self.record(p, now));
        self.drops += (before - b.len()) as u64;
    }
}

impl Element for StoreUDPTimeSeqRecord {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch, cx);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, cx| self.apply(b, cx));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "count").then(|| self.count.load(Ordering::Relaxed).to_string())
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                self.count.store(0, Ordering::Relaxed);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (StoreUDPTimeSeqRecord has `reset`)"
            )),
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "reset"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("count"), Handler::w("reset")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::super::force_udp::tests::transport_sums_right;
    use super::*;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    /// A UDP datagram 10.0.1.1:6667 to 20.0.0.2:6667 with 22 payload
    /// bytes, behind an Ethernet header, its UDP checksum right.
    fn datagram() -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 0x08;
        let mut ip = vec![
            0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 1, 1, 20, 0, 0, 2, 0x1a, 0x0b, 0x1a,
            0x0b, 0, 30, 0, 0,
        ];
        ip.extend((0..22).map(|i| i as u8 * 3));
        set_udp_sum(&mut ip);
        f.extend_from_slice(&ip);
        f
    }

    /// Computes the UDP checksum from scratch.
    fn set_udp_sum(ip: &mut [u8]) {
        ip[26] = 0;
        ip[27] = 0;
        for s in 0..=0xffffu16 {
            ip[26..28].copy_from_slice(&s.to_be_bytes());
            if transport_sums_right(ip) {
                return;
            }
        }
        unreachable!()
    }

    fn words(f: &[u8]) -> Vec<u32> {
        f[42..62]
            .chunks(4)
            .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
            .collect()
    }

    #[test]
    fn stamps_then_measures() {
        assert!(transport_sums_right(&datagram()[14..]));
        let mut first = Harness::push(&CLASS, "14", 1, 1);
        first.advance_to(Timestamp::from_parts(1000, 250_000_000));
        first.push_bytes(0, &datagram());
        first.push_bytes(0, &datagram());
        let out = first.take_bytes(0);
        assert_eq!(words(&out[0]), [1, 1000, 250_000_000, 0, 0]);
        assert_eq!(words(&out[1]), [2, 1000, 250_000_000, 0, 0]);
        assert!(transport_sums_right(&out[1][14..]));
        assert_eq!(out[1][62..], datagram()[62..]);

        let mut second = Harness::push(&CLASS, "OFFSET 14, DELTA true", 1, 1);
        second.advance_to(Timestamp::from_parts(1001, 100_000_000));
        second.push_bytes(0, &out[1]);
        let o = &second.take_bytes(0)[0];
        assert_eq!(words(o), [2, 1000, 250_000_000, 0, 850_000_000]);
        assert!(transport_sums_right(&o[14..]));
        // Measured again later: the old difference words are replaced.
        second.advance_to(Timestamp::from_parts(1003, 0));
        second.push_bytes(0, o);
        let o = &second.take_bytes(0)[0];
        assert_eq!(words(o), [2, 1000, 250_000_000, 2, 750_000_000]);
        assert!(transport_sums_right(&o[14..]));
        assert_eq!(second.read_handler("count").unwrap(), "2");
    }

    #[test]
    fn a_negative_difference() {
        let mut h = Harness::push(&CLASS, "14, DELTA true", 1, 1);
        h.advance_to(Timestamp::from_parts(5, 0));
        let mut f = datagram();
        f[46..50].copy_from_slice(&6u32.to_be_bytes());
        f[50..54].copy_from_slice(&500_000_000u32.to_be_bytes());
        set_udp_sum(&mut f[14..]);
        h.push_bytes(0, &f);
        let o = &h.take_bytes(0)[0];
        assert_eq!(words(o)[3..], [(-2i32) as u32, 500_000_000]);
        assert!(transport_sums_right(&o[14..]));
    }

    #[test]
    fn no_checksum_stays_none() {
        let mut f = datagram();
        f[40] = 0;
        f[41] = 0;
        let mut h = Harness::push(&CLASS, "14", 1, 1);
        h.push_bytes(0, &f);
        assert_eq!(h.take_bytes(0)[0][40..42], [0, 0]);
    }

    #[test]
    fn ipv6_and_drops() {
        // IPv6, next header UDP, 8 + 20 bytes of UDP.
        let mut v6 = vec![0x60, 0, 0, 0, 0, 28, 17, 64];
        v6.extend_from_slice(&[0; 32]);
        v6.extend_from_slice(&[0, 1, 0, 2, 0, 28, 0x12, 0x34]);
        v6.extend_from_slice(&[0; 20]);
        let mut h = Harness::push(&CLASS, "0", 1, 1);
        h.push_bytes(0, &v6);
        assert_eq!(h.take(0).len(), 1);
        let mut not_udp = v6.clone();
        not_udp[6] = 6;
        h.push_bytes(0, &not_udp);
        h.push_bytes(0, &v6[..67]);
        h.push_bytes(0, &[0x50; 80]);
        let mut hl4 = datagram()[14..].to_vec();
        hl4[0] = 0x44;
        h.push_bytes(0, &hl4);
        h.push_bytes(0, &[]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(5));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.read_handler("count").unwrap(), "0");
    }

    #[test]
    fn offset_is_mandatory() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("").is_err());
        assert!(m("14, true").is_err());
        assert!(m("OFFSET 14, DELTA true").is_ok());
    }
}
