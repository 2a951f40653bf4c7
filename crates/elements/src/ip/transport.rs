//! What the UDP, TCP and ICMP elements share: where the transport header
//! is behind an IPv4 header, the pseudo-header of the UDP and TCP
//! checksums (RFC 768, RFC 9293 section 3.1) with the final destination of
//! a source route (RFC 1122 section 4.1.3.3's "final destination"), and the
//! element that Click's CheckUDPHeader, CheckTCPHeader and CheckICMPHeader
//! all are: one check per packet, bad packets to an optional output 1,
//! counted by reason.

use super::header::{be16, IPOPT_EOL, IPOPT_LSRR, IPOPT_NOP, IPOPT_SSRR};
use bricks_element::{ArgError, Args, Batch, Context, Element, Keyword, Packet, PortInfo, Stats};
use bricks_wire::checksum;
use bricks_wire::IpProtocol;
use std::marker::PhantomData;
use std::net::Ipv4Addr;

/// The header length of the IPv4 header at the start of `ip`, when `ip`
/// holds at least that header and it is at least 20 bytes long.
#[inline(always)]
pub(crate) fn header_len(ip: &[u8]) -> Option<usize> {
    let hlen = usize::from(*ip.first()? & 0x0f) * 4;
    (hlen >= 20 && hlen <= ip.len()).then_some(hlen)
}

/// Whether the IPv4 header `ip` is that of a fragment (More Fragments set
/// or a fragment offset); the caller has checked 20 bytes.
#[inline(always)]
pub(crate) fn is_fragment(ip: &[u8]) -> bool {
    be16(ip, 6) & 0x3fff != 0
}

/// The destination the pseudo-header carries: the last address of a
/// Loose or Strict Source Route option when the header has one, else the
/// destination field (Click's `click_in_cksum_pseudohdr`).
#[inline]
fn final_destination(ip: &[u8], hlen: usize) -> [u8; 4] {
    let dst = [ip[16], ip[17], ip[18], ip[19]];
    if hlen == 20 {
        return dst;
    }
    let mut i = 20;
    // Each step advances by at least one byte: bounded by the 40 bytes of
    // options.
    while i < hlen {
        match ip[i] {
            IPOPT_NOP => i += 1,
            IPOPT_EOL => break,
            kind => {
                let Some(&olen) = ip.get(i + 1).filter(|_| i + 1 < hlen) else {
                    break;
                };
                let olen = usize::from(olen);
                if olen < 2 || i + olen > hlen {
                    break;
                }
                if (kind == IPOPT_LSRR || kind == IPOPT_SSRR) && olen >= 7 {
                    let at = i + olen - 4;
                    return [ip[at], ip[at + 1], ip[at + 2], ip[at + 3]];
                }
                i += olen;
            }
        }
    }
    dst
}

/// The ones' complement sum of the pseudo-header of the IPv4 header `ip`
/// (`hlen` bytes, checked) for an upper-layer segment of `len` bytes.
#[inline]
pub(crate) fn pseudo_sum(ip: &[u8], hlen: usize, len: u16) -> u16 {
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::from(final_destination(ip, hlen));
    checksum::pseudo_header_v4(src, dst, IpProtocol::from(ip[9]), len)
}

/// The checksum to write into a UDP or TCP header whose field is zero:
/// the complement of the segment's sum and the pseudo-header's.
#[inline]
pub(crate) fn segment_checksum(ip: &[u8], hlen: usize, segment: &[u8]) -> u16 {
    // A segment behind an IPv4 header in a buffer is below 64 KiB.
    let len = segment.len() as u16;
    !checksum::combine(&[checksum::data(segment), pseudo_sum(ip, hlen, len)])
}

/// Whether the segment's checksum (its field filled in) is right.
#[inline]
pub(crate) fn segment_checksum_ok(ip: &[u8], hlen: usize, segment: &[u8]) -> bool {
    let len = segment.len() as u16;
    checksum::combine(&[checksum::data(segment), pseudo_sum(ip, hlen, len)]) == 0xffff
}

/// One protocol's header check: Click's CheckUDPHeader, CheckTCPHeader or
/// CheckICMPHeader.
pub(crate) trait HeaderCheck: Send + 'static {
    /// The protocol, as Click's messages name it ("UDP").
    const PROTOCOL: &'static str;
    /// Counter names of the drop reasons, in Click's reason order.
    const COUNTERS: [&'static str; 3];
    /// Click's texts of the drop reasons (its `drop_details` lines).
    const TEXTS: [&'static str; 3];
    /// Checks the packet whose IPv4 header starts `ip`; `Err` gives the
    /// index of the reason.
    fn check(ip: &[u8]) -> Result<(), usize>;
}

/// Reason index: not this protocol.
pub(crate) const NOT_PROTOCOL: usize = 0;
/// Reason index: a length field disagrees with the packet.
pub(crate) const BAD_LENGTH: usize = 1;
/// Reason index: the checksum is wrong.
pub(crate) const BAD_CHECKSUM: usize = 2;

/// The keywords the three check elements take.
pub(crate) const CHECK_KEYWORDS: &[Keyword] = &[
    Keyword {
        name: "VERBOSE",
        ty: "boolean",
        default: Some("false"),
        doc: "print a line to standard error for every invalid packet, not only the \
            first one",
    },
    Keyword {
        name: "DETAILS",
        ty: "boolean",
        default: Some("false"),
        doc: "accepted for compatibility with Click, whose `drop_details` handler it \
            enables; bricks always keeps the per-reason counters",
    },
];

/// Makes a check element of protocol `C`.
pub(crate) fn make_check<C: HeaderCheck>(
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    let verbose = args.read("VERBOSE")?.unwrap_or(false);
    let _details: Option<bool> = args.read("DETAILS")?;
    Ok(Box::new(CheckHeader::<C> {
        verbose,
        reported: false,
        has_reject: ports.noutputs() > 1,
        drops: [0; 3],
        _check: PhantomData,
    }))
}

/// Checks one transport protocol's headers.
pub(crate) struct CheckHeader<C> {
    verbose: bool,
    /// Whether the first invalid packet was reported.
    reported: bool,
    has_reject: bool,
    drops: [u64; 3],
    _check: PhantomData<fn() -> C>,
}

/// The verdict on one packet: output 0, output 1 (or a drop) counted in
/// `seen` by reason.
#[inline(always)]
fn verdict<C: HeaderCheck>(p: &Packet, has_reject: bool, seen: &mut [u32; 3]) -> Option<usize> {
    match C::check(p.l3_bytes()) {
        Ok(()) => Some(0),
        Err(r) => {
            seen[r] += 1;
            has_reject.then_some(1)
        }
    }
}

impl<C: HeaderCheck> CheckHeader<C> {
    /// Counts what one batch refused, and prints what Click prints: the
    /// first invalid packet, or every one with VERBOSE (at most a batch's
    /// worth per call).
    #[inline]
    fn account(&mut self, cx: &Context<'_>, seen: [u32; 3]) {
        if seen == [0; 3] {
            return;
        }
        for (d, s) in self.drops.iter_mut().zip(seen) {
            *d += u64::from(s);
        }
        if self.verbose || !self.reported {
            self.report(cx, seen);
        }
    }

    #[cold]
    fn report(&mut self, cx: &Context<'_>, seen: [u32; 3]) {
        for (r, &n) in seen.iter().enumerate() {
            for _ in 0..n {
                if !self.verbose && self.reported {
                    return;
                }
                eprintln!(
                    "{}: {} header check failed: {}",
                    cx.name(),
                    C::PROTOCOL,
                    C::TEXTS[r]
                );
                self.reported = true;
            }
        }
    }
}

impl<C: HeaderCheck> Element for CheckHeader<C> {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut seen = [0u32; 3];
        let has_reject = self.has_reject;
        cx.push_classified(batch, |p| verdict::<C>(p, has_reject, &mut seen));
        self.account(cx, seen);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut seen = [0u32; 3];
        let has_reject = self.has_reject;
        cx.pull_classified(out, max, |p| verdict::<C>(p, has_reject, &mut seen));
        self.account(cx, seen);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops.iter().sum());
        for (name, v) in C::COUNTERS.iter().zip(self.drops) {
            s.counter(*name, v);
        }
    }
}
