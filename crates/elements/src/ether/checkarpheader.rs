//! `CheckARPHeader`: the length checks of an ARP packet (RFC 826) before
//! anything reads its addresses, as Click's
//! `elements/ethernet/checkarpheader.cc`: the fixed 8 bytes, then the two
//! hardware and two protocol addresses their length fields announce, and
//! the lengths Ethernet (6) and IPv4 (4) or IPv6 (16) addresses must have.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};

/// The `CheckARPHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckARPHeader",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks ARP headers",
    synopsis: "CheckARPHeader([OFFSET, KEYWORDS OFFSET, VERBOSE, DETAILS])",
    description: "Expects ARP packets whose header starts OFFSET bytes into the data, and \
        checks that the packet is long enough: at least the 8 fixed bytes of an ARP \
        header, then the sender and target hardware and protocol addresses whose lengths \
        the header gives. A packet whose hardware type is Ethernet (1) must announce \
        6-byte hardware addresses; one whose protocol type is IPv4 (0x0800) 4-byte \
        protocol addresses, IPv6 (0x86DD) 16-byte ones. Other types are not checked.\n\n\
        Valid packets get their network header annotation set to the ARP header and \
        leave on output 0. Invalid packets leave on output 1 if the element has one and \
        are dropped otherwise; either way they are counted, by reason too. The first \
        invalid packet is reported on standard error, as Click's `ARP header check \
        failed: REASON` (every one with VERBOSE).\n\n\
        As in Click, the `drop_details` handler exists only with DETAILS true. bricks \
        also keeps the per-reason counters `miniscule_packet`, `bad_length`, `bad_hrd` \
        and `bad_pro` (Click's reason names) whatever DETAILS says, and, having no \
        transport header annotation, does not mark where the ARP header ends.",
    ports: "one input; output 0 valid packets (agnostic); optional output 1 invalid \
        packets (push)",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "unsigned integer",
            default: Some("0"),
            doc: "where the ARP header starts in the packet data; positional",
        },
        Keyword {
            name: "VERBOSE",
            ty: "boolean",
            default: Some("false"),
            doc: "report every invalid packet on standard error, not only the first",
        },
        Keyword {
            name: "DETAILS",
            ty: "boolean",
            default: Some("false"),
            doc: "offer the `drop_details` handler: a line `COUNT<TAB>REASON` per reason",
        },
    ],
    counters: &[
        ("drops", "invalid packets, whatever the reason"),
        (
            "miniscule_packet",
            "shorter than the 8 fixed bytes of an ARP header",
        ),
        (
            "bad_length",
            "too short for the addresses the header announces",
        ),
        (
            "bad_hrd",
            "Ethernet hardware type with an address length other than 6",
        ),
        (
            "bad_pro",
            "IPv4 protocol type with an address length other than 4, or IPv6 with one \
             other than 16",
        ),
    ],
    example: "InfiniteSource(DATA \\<ffffffffffff 525400aa0001 0806 0001 0800 06 04 0001 \
        525400aa0001 0a000001 000000000000 0a000002>, LIMIT 1) \
        -> c :: CheckARPHeader(14, DETAILS true) -> Discard; c[1] -> Discard;",
    see_also: &["ARPPrint", "ARPQuerier", "ARPResponder", "CheckIPHeader"],
};

/// The fixed part of an ARP header (Click's `sizeof(click_arp)`):
/// hardware type, protocol type, the two lengths, the operation.
const FIXED_LEN: usize = 8;
/// ARP hardware type Ethernet (`ARPHRD_ETHER`).
const HRD_ETHER: u16 = 1;
/// EtherType IPv4, as an ARP protocol type.
const PRO_IP: u16 = 0x0800;
/// EtherType IPv6, as an ARP protocol type.
const PRO_IP6: u16 = 0x86dd;

/// Why CheckARPHeader refused a packet, in Click's reason order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Fewer than the 8 fixed bytes (Click's `MINISCULE_PACKET`).
    MinisculePacket,
    /// Too short for the addresses the length fields announce.
    BadLength,
    /// Ethernet hardware with an address length other than 6.
    BadHrd,
    /// IPv4 with an address length other than 4, or IPv6 other than 16.
    BadPro,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 4] = [
        DropReason::MinisculePacket,
        DropReason::BadLength,
        DropReason::BadHrd,
        DropReason::BadPro,
    ];

    /// The name of the counter for this reason.
    pub const fn counter(self) -> &'static str {
        match self {
            DropReason::MinisculePacket => "miniscule_packet",
            DropReason::BadLength => "bad_length",
            DropReason::BadHrd => "bad_hrd",
            DropReason::BadPro => "bad_pro",
        }
    }

    /// What is wrong, in Click's words (its `drop_details` lines).
    pub const fn text(self) -> &'static str {
        match self {
            DropReason::MinisculePacket => "tiny packet",
            DropReason::BadLength => "too small for addresses",
            DropReason::BadHrd => "bad hardware type/length",
            DropReason::BadPro => "bad protocol type/length",
        }
    }
}

impl core::fmt::Display for DropReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.text())
    }
}

/// Checks the ARP header at the start of `arp`; `Ok` gives its length,
/// addresses included. Reads nothing beyond `arp`, whatever its length.
pub fn check(arp: &[u8]) -> Result<usize, DropReason> {
    let Some(h) = arp.first_chunk::<FIXED_LEN>() else {
        return Err(DropReason::MinisculePacket);
    };
    let hrd = u16::from_be_bytes([h[0], h[1]]);
    let pro = u16::from_be_bytes([h[2], h[3]]);
    let (hln, pln) = (usize::from(h[4]), usize::from(h[5]));
    let hlen = FIXED_LEN + 2 * hln + 2 * pln;
    if arp.len() < hlen {
        Err(DropReason::BadLength)
    } else if hrd == HRD_ETHER && hln != 6 {
        Err(DropReason::BadHrd)
    } else if (pro == PRO_IP && pln != 4) || (pro == PRO_IP6 && pln != 16) {
        Err(DropReason::BadPro)
    } else {
        Ok(hlen)
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: usize = args.read_p("OFFSET")?.unwrap_or(0);
    let verbose: bool = args.read("VERBOSE")?.unwrap_or(false);
    let details: bool = args.read("DETAILS")?.unwrap_or(false);
    Ok(Box::new(CheckARPHeader {
        offset,
        verbose,
        details,
        has_reject: ports.noutputs() > 1,
        drops: [0; DropReason::ALL.len()],
    }))
}

/// Checks ARP headers.
#[derive(Debug)]
pub struct CheckARPHeader {
    offset: usize,
    verbose: bool,
    details: bool,
    has_reject: bool,
    drops: [u64; DropReason::ALL.len()],
}

impl CheckARPHeader {
    fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }

    /// The output for `p`: 0 when valid (its network header annotation
    /// set), else 1 or none; `seen` counts the reasons of this batch.
    #[inline(always)]
    fn verdict(&self, p: &mut Packet, seen: &mut [u32; 4]) -> Option<usize> {
        let arp = p.data().get(self.offset..).unwrap_or(&[]);
        match check(arp) {
            Ok(_) => {
                p.set_network_header(self.offset);
                Some(0)
            }
            Err(r) => {
                seen[r as usize] += 1;
                self.has_reject.then_some(1)
            }
        }
    }

    /// Counts what one batch refused and reports as Click does: the first
    /// invalid packet ever, or every one with VERBOSE.
    #[inline]
    fn account(&mut self, seen: [u32; 4]) {
        if seen == [0; 4] {
            return;
        }
        self.report(seen);
        for (d, s) in self.drops.iter_mut().zip(seen) {
            *d += u64::from(s);
        }
    }

    #[cold]
    fn report(&self, seen: [u32; 4]) {
        let mut first = self.total_drops() == 0;
        for (r, n) in DropReason::ALL.iter().zip(seen) {
            for _ in 0..n {
                if !(first || self.verbose) {
                    return;
                }
                eprintln!("ARP header check failed: {r}");
                first = false;
            }
        }
    }
}

impl Element for CheckARPHeader {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut seen = [0u32; 4];
        cx.push_classified(batch, |p| self.verdict(p, &mut seen));
        self.account(seen);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut seen = [0u32; 4];
        cx.pull_classified(out, max, |p| self.verdict(p, &mut seen));
        self.account(seen);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.total_drops());
        for (r, &n) in DropReason::ALL.iter().zip(&self.drops) {
            s.counter(r.counter(), n);
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        if handler != "drop_details" || !self.details {
            return None;
        }
        Some(
            DropReason::ALL
                .iter()
                .zip(&self.drops)
                .map(|(r, n)| format!("{n}\t{r}\n"))
                .collect(),
        )
    }

    fn handlers(&self) -> &'static [Handler] {
        // The counters, `drops` among them, are listed by the engine.
        const DETAILS: &[Handler] = &[Handler::r("drop_details")];
        if self.details {
            DETAILS
        } else {
            &[]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata::{A_REQUEST_B, B_REPLY_A};
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    /// An ARP request as Click's test configurations write it: who has
    /// 10.0.0.2, tell 10.0.0.1 (52:54:00:aa:00:01), in an Ethernet frame.
    const REQUEST: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // destination: broadcast
        0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, // source
        0x08, 0x06, // EtherType ARP
        0x00, 0x01, // hardware type Ethernet
        0x08, 0x00, // protocol type IPv4
        0x06, 0x04, // address lengths
        0x00, 0x01, // request
        0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x01, // sender
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02, // target
    ];

    /// An IPv6-over-Ethernet ARP reply (an address length of 16, as
    /// Click allows for 0x86DD), 28 + 24 bytes of ARP.
    fn ip6_reply() -> Vec<u8> {
        let mut a = vec![0x00, 0x01, 0x86, 0xdd, 6, 16, 0x00, 0x02];
        a.extend([0x52, 0x54, 0x00, 0xbb, 0x00, 0x02]);
        a.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[2]));
        a.extend([0x52, 0x54, 0x00, 0xaa, 0x00, 0x01]);
        a.extend([0x20, 0x01, 0x0d, 0xb8].iter().chain(&[0; 11]).chain(&[1]));
        a
    }

    fn with_reject() -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        }
    }

    #[test]
    fn the_written_out_request_is_the_captured_one() {
        assert_eq!(REQUEST, A_REQUEST_B);
    }

    #[test]
    fn valid_requests_and_replies_pass_with_their_network_header() {
        let mut h = Harness::new(&CLASS, "14", with_reject());
        h.push_bytes(0, &REQUEST);
        h.push_bytes(0, &B_REPLY_A);
        // Ethernet padding behind the addresses is fine.
        let mut padded = B_REPLY_A.to_vec();
        padded.resize(60, 0);
        h.push_bytes(0, &padded);
        let out = h.take(0);
        assert_eq!(out.len(), 3);
        for p in &out {
            assert_eq!(p.network_header_offset(), Some(14));
        }
        assert_eq!(out[1].data(), &B_REPLY_A[..]);
        assert!(h.take(1).is_empty());
        assert_eq!(h.stats().get("drops"), Some(0));
        assert_eq!(check(&ip6_reply()), Ok(52));
        assert_eq!(check(&REQUEST[14..]), Ok(28));
    }

    #[test]
    fn each_reason_is_counted_and_goes_to_output_1() {
        let arp = &REQUEST[14..];
        let mut hrd = arp.to_vec();
        hrd[4] = 8; // Ethernet with 8-byte hardware addresses
        hrd.resize(8 + 16 + 8, 0);
        let mut pro = arp.to_vec();
        pro[5] = 6; // IPv4 with 6-byte protocol addresses
        pro.resize(8 + 12 + 12, 0);
        let mut pro6 = ip6_reply();
        pro6[5] = 4; // IPv6 with 4-byte addresses
        let bad: [(&[u8], DropReason); 6] = [
            (&arp[..7], DropReason::MinisculePacket),
            (&[], DropReason::MinisculePacket),
            (&arp[..27], DropReason::BadLength),
            (&hrd, DropReason::BadHrd),
            (&pro, DropReason::BadPro),
            (&pro6, DropReason::BadPro),
        ];
        let mut h = Harness::new(&CLASS, "DETAILS true", with_reject());
        for (bytes, why) in &bad {
            assert_eq!(check(bytes), Err(*why));
            h.push_bytes(0, bytes);
        }
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 6);
        let s = h.stats();
        assert_eq!(s.get("drops"), Some(6));
        assert_eq!(s.get("miniscule_packet"), Some(2));
        assert_eq!(s.get("bad_length"), Some(1));
        assert_eq!(s.get("bad_hrd"), Some(1));
        assert_eq!(s.get("bad_pro"), Some(2));
        assert_eq!(
            h.read_handler("drop_details").unwrap(),
            "2\ttiny packet\n1\ttoo small for addresses\n\
             1\tbad hardware type/length\n2\tbad protocol type/length\n"
        );
        assert_eq!(h.read_handler("drops").unwrap(), "6");
    }

    #[test]
    fn other_hardware_and_protocol_types_are_only_length_checked() {
        // Token ring (6) with 4-byte "hardware" addresses, protocol 0x0801.
        let mut a = vec![0x00, 0x06, 0x08, 0x01, 4, 2, 0x00, 0x01];
        a.resize(8 + 8 + 4, 0);
        assert_eq!(check(&a), Ok(20));
        assert_eq!(check(&a[..19]), Err(DropReason::BadLength));
    }

    #[test]
    fn without_output_1_bad_packets_are_dropped() {
        let mut h = Harness::push(&CLASS, "OFFSET 14", 1, 1);
        h.push_bytes(0, &REQUEST[..20]);
        h.push_bytes(0, &REQUEST);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(1));
        assert_eq!(h.stats().get("unconnected_drops").unwrap_or(0), 0);
        // No DETAILS, no drop_details (as in Click).
        assert!(h.read_handler("drop_details").is_err());
    }

    #[test]
    fn any_length_and_offset_never_panics() {
        let mut h = Harness::new(&CLASS, "14", with_reject());
        let mut frame = REQUEST.to_vec();
        frame[18] = 0xff;
        frame[19] = 0xff;
        for len in 0..=frame.len() {
            h.push_bytes(0, &frame[..len]);
            h.push_bytes(0, &REQUEST[..len]);
        }
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(2 * 43 - 1));
        let mut h = Harness::new(&CLASS, &usize::MAX.to_string(), with_reject());
        h.push_bytes(0, &REQUEST);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("miniscule_packet"), Some(1));
    }

    #[test]
    fn pull_checks_too() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "14", ports);
        h.feed(
            0,
            [
                Packet::from_slice(&REQUEST[..30]).unwrap(),
                Packet::from_slice(&REQUEST).unwrap(),
            ],
        );
        let out = h.pull(0, 8);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &REQUEST[..]);
        assert_eq!(h.stats().get("bad_length"), Some(1));
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &with_reject());
        assert!(m("").is_ok());
        assert!(m("OFFSET 14, VERBOSE true, DETAILS false").is_ok());
        assert!(m("-1").unwrap_err().contains("OFFSET"));
        assert!(m("VERBOSE maybe").unwrap_err().contains("VERBOSE"));
        assert!(m("14, 15").unwrap_err().contains("too many"));
        assert!(m("CHECKSUM true").unwrap_err().contains("CHECKSUM"));
    }
}
