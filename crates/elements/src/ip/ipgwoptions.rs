//! `IPGWOptions`: the IP options a router acts on while forwarding (RFC 1812
//! section 5.2.4, RFC 791 section 3.1): Record Route and Timestamp are
//! filled in, every option's length is checked, and a malformed option is
//! answered with a Parameter Problem that points at the bad octet.
//!
//! Source routes (LSRR, SSRR) are left alone, as in Click: a router acts on
//! them only when the datagram is addressed to it (RFC 1812 section
//! 5.2.4.1), which is the local delivery path, not the forwarding one.

use super::header::{ms_since_midnight, AddressList, IPOPT_EOL, IPOPT_NOP, IPOPT_RR, IPOPT_TS};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// The `IPGWOptions` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPGWOptions",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "processes router IP options (Record Route, Timestamp)",
    synopsis: "IPGWOptions(MYADDR [, OTHERADDRS])",
    description: "Processes the IP options of packets a router forwards (RFC 1812 \
        section 5.2.4, RFC 791 section 3.1). Expects the network header annotation to \
        be set. Packets without options (header length 20) pass at once.\n\n\
        Record Route: MYADDR is written where the pointer says and the pointer \
        advances by 4; a full option (pointer past the length) is left as it is. \
        Timestamp: the time in milliseconds since midnight UT, in network byte order, \
        is recorded for flag 0 (timestamps only), MYADDR and the time for flag 1, and \
        the time after a prespecified address for flag 3 when that address is MYADDR or \
        one of OTHERADDRS; when the option is full, its overflow count goes up by one. \
        The header checksum is recomputed after a change. Source route and other \
        options pass unchanged.\n\n\
        An option whose length is below 2 or runs past the header, a Record Route or \
        Timestamp pointer below its minimum or leaving room for only part of an entry, \
        an unknown Timestamp flag, or an overflow count that would pass 15 is a \
        parameter problem: the packet leaves unchanged on output 1 with its \
        parameter problem annotation set to the offset of the bad octet within the IP \
        header, for ICMPError(..., parameterproblem) to report (RFC 1812 section \
        4.3.2.6); it is dropped if output 1 is unconnected.",
    ports: "one input; output 0 forwarded packets (agnostic); optional output 1 \
        packets with bad options (push)",
    keywords: &[
        Keyword {
            name: "MYADDR",
            ty: "IPv4 address",
            default: None,
            doc: "the address recorded in Record Route and Timestamp options, usually \
                that of the outgoing interface",
        },
        Keyword {
            name: "OTHERADDRS",
            ty: "space-separated IPv4 addresses",
            default: Some("empty"),
            doc: "the router's other addresses, recognised in prespecified Timestamp \
                options",
        },
    ],
    counters: &[
        (
            "bad_options",
            "packets with a malformed option (sent to output 1 or dropped)",
        ),
        (
            "truncated",
            "packets shorter than the header length they announce, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<47 00 00 1c 00 00 00 00 40 11 59 c8 0a 00 00 01 \
        0a 00 00 02 07 07 04 00 00 00 00 00>, LIMIT 1) -> MarkIPHeader -> gio :: IPGWOptions(18.26.4.24) \
        -> Discard; gio[1] -> Discard;",
    see_also: &["ICMPError", "FixIPSrc", "DecIPTTL"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let my_addr: Ipv4Addr = args.read_mp("MYADDR")?;
    let others: AddressList = args.read_p("OTHERADDRS")?.unwrap_or_default();
    let mut my_addrs = others.bits();
    my_addrs.push(u32::from(my_addr));
    Ok(Box::new(IPGWOptions {
        my_addr: my_addr.octets(),
        my_addrs: my_addrs.into_boxed_slice(),
        has_reject: ports.noutputs() > 1,
        bad_options: 0,
        truncated: 0,
    }))
}

/// Walks the options of `h` (a whole IPv4 header, options included) and,
/// when `apply` is set, records `my_addr` and `ms` in the options that ask
/// for it. Returns whether anything was written, or the offset within the
/// header of the first octet in error.
///
/// Running it once without `apply` validates every option before any is
/// changed, so a packet with a bad option is reported unchanged.
fn walk_options(
    h: &mut [u8],
    apply: bool,
    my_addr: [u8; 4],
    my_addrs: &[u32],
    ms: u32,
) -> Result<bool, usize> {
    let hlen = h.len();
    let mut changed = false;
    let mut i = 20;
    while i < hlen {
        let kind = h[i];
        if kind == IPOPT_EOL {
            break;
        }
        if kind == IPOPT_NOP {
            i += 1;
            continue;
        }
        if i + 1 >= hlen {
            // The option's length octet would be past the header.
            return Err(i);
        }
        let olen = usize::from(h[i + 1]);
        if olen < 2 || i + olen > hlen {
            return Err(i + 1);
        }
        match kind {
            IPOPT_RR => {
                // RFC 791: pointer is 1-based, at least 4; past the length
                // means the route data area is full.
                if olen < 3 {
                    return Err(i + 1);
                }
                let ptr = usize::from(h[i + 2]);
                if ptr < 4 {
                    return Err(i + 2);
                }
                if ptr <= olen {
                    if ptr + 3 > olen {
                        return Err(i + 2);
                    }
                    if apply {
                        let at = i + ptr - 1;
                        h[at..at + 4].copy_from_slice(&my_addr);
                        h[i + 2] += 4;
                        changed = true;
                    }
                }
            }
            IPOPT_TS => {
                if olen < 4 {
                    return Err(i + 1);
                }
                let ptr = usize::from(h[i + 2]);
                let oflw_flag = h[i + 3];
                let entry = match oflw_flag & 0x0f {
                    0 => 4,
                    1 | 3 => 8,
                    _ => return Err(i + 3),
                };
                if ptr < 5 {
                    return Err(i + 2);
                }
                if ptr > olen {
                    // Full: count the hop in the overflow field, and report
                    // the datagram when that field itself overflows.
                    if oflw_flag >> 4 == 15 {
                        return Err(i + 3);
                    }
                    if apply {
                        h[i + 3] = oflw_flag + 0x10;
                        changed = true;
                    }
                } else if ptr - 1 + entry > olen {
                    return Err(i + 2);
                } else if apply {
                    let at = i + ptr - 1;
                    let stamp = ms.to_be_bytes();
                    match oflw_flag & 0x0f {
                        0 => {
                            h[at..at + 4].copy_from_slice(&stamp);
                            h[i + 2] += 4;
                            changed = true;
                        }
                        1 => {
                            h[at..at + 4].copy_from_slice(&my_addr);
                            h[at + 4..at + 8].copy_from_slice(&stamp);
                            h[i + 2] += 8;
                            changed = true;
                        }
                        _ => {
                            let addr = u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
                            if my_addrs.contains(&addr) {
                                h[at + 4..at + 8].copy_from_slice(&stamp);
                                h[i + 2] += 8;
                                changed = true;
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        i += olen;
    }
    Ok(changed)
}

/// Processes Record Route and Timestamp options.
#[derive(Debug)]
pub struct IPGWOptions {
    my_addr: [u8; 4],
    /// MYADDR and OTHERADDRS, host order.
    my_addrs: Box<[u32]>,
    has_reject: bool,
    bad_options: u64,
    truncated: u64,
}

impl IPGWOptions {
    /// An IPGWOptions for MYADDR `my_addr` alone (IPOutputCombo's).
    pub(crate) fn new(my_addr: Ipv4Addr, has_reject: bool) -> IPGWOptions {
        IPGWOptions {
            my_addr: my_addr.octets(),
            my_addrs: Box::new([u32::from(my_addr)]),
            has_reject,
            bad_options: 0,
            truncated: 0,
        }
    }

    #[inline]
    pub(crate) fn verdict(&mut self, p: &mut Packet, ms: u32) -> Option<usize> {
        let ihl = match p.l3_bytes().first() {
            Some(&b) => b & 0x0f,
            None => 0,
        };
        if ihl <= 5 {
            return Some(0);
        }
        self.slow(p, usize::from(ihl) * 4, ms)
    }

    #[cold]
    fn slow(&mut self, p: &mut Packet, hlen: usize, ms: u32) -> Option<usize> {
        let Some(h) = p.l3_bytes_mut().get_mut(..hlen) else {
            self.truncated += 1;
            return None;
        };
        let result = walk_options(h, false, self.my_addr, &self.my_addrs, ms)
            .and_then(|_| walk_options(h, true, self.my_addr, &self.my_addrs, ms));
        match result {
            Ok(changed) => {
                if changed {
                    h[10] = 0;
                    h[11] = 0;
                    let sum = !checksum::data(h);
                    h[10..12].copy_from_slice(&sum.to_be_bytes());
                }
                Some(0)
            }
            Err(off) => {
                self.bad_options += 1;
                // The offset is within a header of at most 60 bytes.
                p.anno_mut().param_off = Some(off as u8);
                self.has_reject.then_some(1)
            }
        }
    }
}

impl Element for IPGWOptions {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // A batch without options (the rule) leaves by output 0 whole,
        // without reading the clock.
        if batch
            .iter()
            .all(|p| p.l3_chunk::<1>().is_none_or(|&[b]| b & 0x0f <= 5))
        {
            return cx.push(0, batch);
        }
        let ms = ms_since_midnight(cx.now());
        cx.push_classified(batch, |p| self.verdict(p, ms));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let ms = ms_since_midnight(cx.now());
        cx.pull_classified(out, max, |p| self.verdict(p, ms));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("bad_options", self.bad_options);
        s.counter("truncated", self.truncated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{echo_request, ip_checksum_ok, udp_with_options};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    const ME: [u8; 4] = [18, 26, 4, 24];

    /// 2001-09-09 01:46:40.123 UT: 6,400,123 ms after midnight.
    fn clock() -> Timestamp {
        Timestamp::from_parts(1_000_000_000, 123_456_789)
    }
    const MS: [u8; 4] = 6_400_123u32.to_be_bytes();

    fn harness(args: &str) -> Harness {
        let mut h = Harness::push(&CLASS, args, 1, 2);
        h.advance_to(clock());
        h
    }

    /// Runs `options` through IPGWOptions; returns the options out of output
    /// 0 (checksum checked) or the parameter problem offset of output 1.
    fn run(args: &str, options: &[u8]) -> Result<Vec<u8>, u8> {
        let frame = udp_with_options(options);
        let mut h = harness(args);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(0);
        h.push_packets(0, [p]);
        let ok = h.take(0);
        let bad = h.take(1);
        match (ok.len(), bad.len()) {
            (1, 0) => {
                let d = ok[0].data();
                assert!(ip_checksum_ok(d));
                assert_eq!(&d[20 + options.len()..], &frame[20 + options.len()..]);
                Ok(d[20..20 + options.len()].to_vec())
            }
            (0, 1) => {
                assert_eq!(bad[0].data(), &frame[..], "reported packets are unchanged");
                Err(bad[0].anno().param_off.unwrap())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_options_pass_untouched() {
        let frame = echo_request();
        let mut h = harness("18.26.4.24");
        h.push_bytes(0, &frame);
        assert_eq!(h.take_bytes(0), vec![frame]);
    }

    #[test]
    fn batch_with_options_agrees_with_one_at_a_time() {
        let plain = echo_request();
        let rr = udp_with_options(&[7, 7, 4, 0, 0, 0, 0, 0]);
        let frames = [plain.clone(), rr, plain];
        let mut batched = harness("18.26.4.24");
        batched.push_packets(0, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        let mut single = harness("18.26.4.24");
        for f in &frames {
            single.push_bytes(0, f);
        }
        let out = batched.take_bytes(0);
        assert_eq!(out.len(), 3);
        assert_ne!(out[1], frames[1], "the option was filled in");
        assert_eq!(out, single.take_bytes(0));
    }

    #[test]
    fn record_route() {
        // 07 07 04: room for one address, pointer at it; then EOL.
        let out = run("18.26.4.24", &[7, 7, 4, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(out, [&[7, 7, 8][..], &ME, &[0]].concat());
        // Second slot of a two-address option.
        let opt = [7, 11, 8, 1, 2, 3, 4, 0, 0, 0, 0, 0];
        let out = run("18.26.4.24", &opt).unwrap();
        assert_eq!(out, [&[7, 11, 12, 1, 2, 3, 4][..], &ME, &[0]].concat());
        // Full (pointer past the length): forwarded unchanged.
        let full = [7, 7, 8, 9, 9, 9, 9, 0];
        assert_eq!(run("18.26.4.24", &full).unwrap(), full);
        // After NOPs, the offsets still count from the header start.
        let out = run("18.26.4.24", &[1, 7, 7, 4, 0, 0, 0, 0]).unwrap();
        assert_eq!(&out[4..8], &ME);
    }

    #[test]
    fn record_route_errors() {
        assert_eq!(
            run("1.1.1.1", &[7, 7, 3, 0, 0, 0, 0, 0]),
            Err(22),
            "pointer below 4"
        );
        assert_eq!(
            run("1.1.1.1", &[7, 7, 5, 0, 0, 0, 0, 0]),
            Err(22),
            "partial slot"
        );
        assert_eq!(run("1.1.1.1", &[7, 2, 0, 0]), Err(21), "no pointer octet");
        assert_eq!(
            run("1.1.1.1", &[1, 7, 9, 4, 0, 0, 0, 0]),
            Err(22),
            "length past header"
        );
        assert_eq!(run("1.1.1.1", &[7, 1, 4, 0]), Err(21), "length below 2");
        assert_eq!(run("1.1.1.1", &[1, 1, 1, 7]), Err(23), "no length octet");
    }

    #[test]
    fn timestamp_only() {
        // 44 0c 05 00: two timestamp slots, pointer at the first.
        let opt = [0x44, 0x0c, 0x05, 0x00, 0, 0, 0, 0, 0, 0, 0, 0];
        let out = run("18.26.4.24", &opt).unwrap();
        assert_eq!(out, [&[0x44, 0x0c, 0x09, 0x00][..], &MS, &[0; 4]].concat());
    }

    #[test]
    fn timestamp_with_address() {
        let opt = [0x44, 0x0c, 0x05, 0x01, 0, 0, 0, 0, 0, 0, 0, 0];
        let out = run("18.26.4.24", &opt).unwrap();
        assert_eq!(out, [&[0x44, 0x0c, 0x0d, 0x01][..], &ME, &MS].concat());
    }

    #[test]
    fn timestamp_prespecified() {
        // Two prespecified hops: someone else, then us (as OTHERADDRS).
        let opt = [
            0x44, 0x14, 0x05, 0x03, 9, 9, 9, 9, 0, 0, 0, 0, 10, 0, 0, 1, 0, 0, 0, 0,
        ];
        // Not our address at the pointer: unchanged.
        assert_eq!(run("18.26.4.24, 10.0.0.1", &opt).unwrap(), opt);
        let mut at_us = opt;
        at_us[2] = 13;
        let out = run("18.26.4.24, 10.0.0.1", &at_us).unwrap();
        assert_eq!(&out[..4], &[0x44, 0x14, 21, 0x03]);
        assert_eq!(&out[16..20], &MS);
        // MYADDR itself also matches.
        let mut me = at_us;
        me[12..16].copy_from_slice(&ME);
        assert_eq!(&run("18.26.4.24", &me).unwrap()[16..20], &MS);
    }

    #[test]
    fn timestamp_overflow() {
        // Full option (pointer 13 > length 12): overflow 2 becomes 3.
        let opt = [0x44, 0x0c, 0x0d, 0x20, 1, 1, 1, 1, 2, 2, 2, 2];
        let out = run("18.26.4.24", &opt).unwrap();
        assert_eq!(&out[..4], &[0x44, 0x0c, 0x0d, 0x30]);
        assert_eq!(&out[4..], &opt[4..]);
        // Overflow already 15: parameter problem at the flags octet.
        let mut top = opt;
        top[3] = 0xf0;
        assert_eq!(run("18.26.4.24", &top), Err(23));
    }

    #[test]
    fn timestamp_errors() {
        let base = [0x44, 0x0c, 0x05, 0x00, 0, 0, 0, 0, 0, 0, 0, 0];
        let mut bad_flag = base;
        bad_flag[3] = 0x02;
        assert_eq!(run("1.1.1.1", &bad_flag), Err(23));
        let mut low_ptr = base;
        low_ptr[2] = 4;
        assert_eq!(run("1.1.1.1", &low_ptr), Err(22));
        // Flag 1 with room for 4 bytes only.
        let mut partial = [0x44, 0x0c, 0x09, 0x01, 0, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(run("1.1.1.1", &partial), Err(22));
        partial[1] = 3;
        assert_eq!(run("1.1.1.1", &partial), Err(21), "length below 4");
    }

    #[test]
    fn source_routes_and_unknown_options_pass() {
        // LSRR with one hop left, then a security-like option 0x82 len 4.
        let opt = [131, 7, 4, 10, 9, 8, 7, 0x82, 4, 0, 0, 0];
        assert_eq!(run("18.26.4.24", &opt).unwrap(), opt);
    }

    #[test]
    fn bad_option_before_a_good_one_leaves_packet_unchanged() {
        // A good RR followed by a TS with a bad flag: nothing is written.
        let opt = [7, 7, 4, 0, 0, 0, 0, 0x44, 0x05, 0x05, 0x07, 0];
        assert_eq!(run("18.26.4.24", &opt), Err(30));
    }

    #[test]
    fn unconnected_output_1_and_truncated() {
        let mut h = Harness::push(&CLASS, "1.1.1.1", 1, 1);
        let bad = udp_with_options(&[7, 1, 4, 0]);
        h.push_bytes(0, &bad);
        let short = &udp_with_options(&[1, 1, 1, 0])[..22];
        h.push_bytes(0, short);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("bad_options"), Some(1));
        assert_eq!(h.stats().get("truncated"), Some(1));
    }
}
