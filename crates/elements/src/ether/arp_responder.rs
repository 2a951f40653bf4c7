//! `ARPResponder`: answers ARP requests (RFC 826) for a set of IPv4
//! addresses and prefixes, the host side of ARP and proxy ARP (RFC 1027).
//!
//! A request is turned into its reply in its own buffer: the addresses are
//! swapped in place and the frame is cut to 42 bytes, so answering costs
//! no allocation.

use bricks_element::addresses::Reading;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::{Annotations, PacketType};
use bricks_wire::arp::{ArpOperation, ArpPacket, ArpRepr, ETHERNET_IPV4_LEN};
use bricks_wire::ethernet::{EtherType, EthernetAddress, HEADER_LEN};
use bricks_wire::ipv4::Ipv4Cidr;
use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// The `ARPResponder` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ARPResponder",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "answers ARP requests for given addresses",
    synopsis: "ARPResponder(IP/MASK [IP/MASK...] ETH, IP2/MASK2 ETH2, ...)",
    description: "Input frames should be ARP requests, Ethernet header included. Each \
        argument is a space-separated list of IPv4 addresses and prefixes (ADDR, ADDR/LEN \
        or ADDR/NETMASK) and exactly one Ethernet address, in any order. A request whose \
        target protocol address falls in one of the prefixes is answered (RFC 826): the \
        reply goes to the requester's hardware address, from ETH, with opcode 2, sender \
        (ETH, the asked address) and target (requester's hardware and protocol addresses), \
        and leaves on output 0 in place of the request (42 bytes, padding dropped). A \
        prefix answers for every address in it: proxy ARP (RFC 1027). When prefixes \
        overlap the longest one wins; for the same prefix given twice the later one wins. \
        Requests from a host probing for an address (RFC 5227, sender protocol address \
        0.0.0.0) are answered the same way, with target protocol address 0.0.0.0, so the \
        prober sees the conflict; gratuitous requests (sender and target address equal) \
        are answered like any other request, as Click does. \
        \n\nEverything else leaves on output 1 if it is connected and is dropped otherwise, \
        counted by reason either way: frames too short for an Ethernet ARP packet, other \
        EtherTypes, ARP for other hardware or protocol types, ARP operations other than \
        request, requests from a group (multicast) hardware address, and requests for \
        addresses not configured. Unlike Click, the ARP header's address lengths are \
        checked too and group senders are refused: a reply to them would be broadcast. \
        Annotations of a reply are reset except the input device and the virtual \
        router, as Click keeps only the device and VLAN annotations: a reply is a new \
        packet, so its timestamp is zero; its packet type becomes OUTGOING. \
        \n\nWith no arguments it answers nothing until entries are added. Read handlers: \
        `table` (one `PREFIX ETH` line per entry, longest prefix first, ETH as Click \
        prints it: `00-01-02-03-04-05`) and `lookup ADDR` (the Ethernet address that \
        answers for ADDR, empty for none). Write handlers: `config` replaces every entry \
        with its arguments (commas between them, a prefix given twice is warned about); \
        `add` takes an argument in the form above and adds its entries; `remove` takes \
        one IP/MASK and deletes that entry. AddressInfo names may be written in all of \
        them (`a`, `a:ipnet b:eth`).",
    ports: "one input; output 0 agnostic (replies); optional output 1 push (everything \
        not answered)",
    keywords: &[],
    counters: &[
        ("replies", "requests answered"),
        (
            "truncated",
            "frames shorter than an Ethernet ARP packet (42 bytes)",
        ),
        ("not_arp", "frames whose EtherType is not ARP (0x0806)"),
        (
            "unsupported",
            "ARP for other than Ethernet hardware and IPv4 addresses",
        ),
        ("not_request", "ARP operations other than request (1)"),
        ("bad_sender", "requests from a group hardware address"),
        ("unknown_target", "requests for an address not configured"),
    ],
    example: "InfiniteSource(DATA \\<ff ff ff ff ff ff 52 54 00 aa 00 01 08 06 00 01 08 00 06 04 \
        00 01 52 54 00 aa 00 01 0a 00 00 01 00 00 00 00 00 00 0a 00 00 02>, LIMIT 1) \
        -> ar :: ARPResponder(10.0.0.2 52:54:00:bb:00:02, 192.168.0.0/16 52:54:00:bb:00:02) \
        -> Discard; ar[1] -> Discard;",
    see_also: &["ARPQuerier", "HostEtherFilter", "Classifier"],
};

/// One answered prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    /// Host bits cleared.
    prefix: Ipv4Cidr,
    eth: EthernetAddress,
}

/// Why a frame was not answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    Truncated,
    NotArp,
    Unsupported,
    NotRequest,
    BadSender,
    UnknownTarget,
}

impl Reject {
    const ALL: [Reject; 6] = [
        Reject::Truncated,
        Reject::NotArp,
        Reject::Unsupported,
        Reject::NotRequest,
        Reject::BadSender,
        Reject::UnknownTarget,
    ];

    /// The counter name, also the reason in words.
    fn as_str(self) -> &'static str {
        match self {
            Reject::Truncated => "truncated",
            Reject::NotArp => "not_arp",
            Reject::Unsupported => "unsupported",
            Reject::NotRequest => "not_request",
            Reject::BadSender => "bad_sender",
            Reject::UnknownTarget => "unknown_target",
        }
    }
}

/// Parses one argument, `IP/MASK [IP/MASK...] ETH` (any order), appending
/// its entries to `out`. Errors say what is wrong in words.
fn parse_entries(text: &str, out: &mut Vec<Entry>) -> Result<(), String> {
    let mut prefixes = Vec::new();
    let mut eth: Option<EthernetAddress> = None;
    for word in text.split_ascii_whitespace() {
        if let Ok(p) = Ipv4Cidr::from_arg(word) {
            prefixes.push(p.network());
        } else if let Ok(e) = word.parse::<EthernetAddress>() {
            if eth.replace(e).is_some() {
                return Err(format!("more than one Ethernet address in `{text}`"));
            }
        } else {
            return Err(format!(
                "expected IP/MASK or Ethernet address, found `{word}`"
            ));
        }
    }
    let Some(eth) = eth else {
        return Err(format!("missing Ethernet address in `{text}`"));
    };
    if prefixes.is_empty() {
        return Err(format!("missing IP address or prefix in `{text}`"));
    }
    out.extend(prefixes.into_iter().map(|prefix| Entry { prefix, eth }));
    Ok(())
}

/// Longest prefixes first; of two equal prefixes the later one stays
/// (Click's `normalize`).
fn normalize(entries: &mut Vec<Entry>) {
    let mut keep: Vec<Entry> = Vec::with_capacity(entries.len());
    for e in entries.drain(..).rev() {
        if !keep.iter().any(|k| k.prefix == e.prefix) {
            keep.push(e);
        }
    }
    keep.reverse();
    keep.sort_by_key(|e| std::cmp::Reverse(e.prefix.prefix_len()));
    *entries = keep;
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut entries = Vec::new();
    for (i, (text, span)) in args.rest().into_iter().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        if let (Some(k), _) = bricks_config::split_keyword(text) {
            return Err(ArgError::at(span, format!("unknown keyword {k}"))
                .with_help("ARPResponder takes no keywords, only `IP/MASK ... ETH` arguments"));
        }
        parse_entries(text, &mut entries)
            .map_err(|m| ArgError::at(span, format!("argument {}: {m}", i + 1)))?;
    }
    normalize(&mut entries);
    Ok(Box::new(ArpResponder {
        entries,
        has_reject: ports.noutputs() > 1,
        replies: 0,
        rejects: [0; Reject::ALL.len()],
    }))
}

/// Answers ARP requests for configured prefixes.
#[derive(Debug)]
pub struct ArpResponder {
    entries: Vec<Entry>,
    has_reject: bool,
    replies: u64,
    rejects: [u64; Reject::ALL.len()],
}

impl ArpResponder {
    /// The Ethernet address that answers for `ip`, if any.
    pub fn lookup(&self, ip: Ipv4Addr) -> Option<EthernetAddress> {
        self.entries
            .iter()
            .find(|e| e.prefix.contains_addr(&ip))
            .map(|e| e.eth)
    }

    /// The table, one `PREFIX ETH` line per entry, longest prefix first,
    /// the address as Click prints it (Click's `table` handler).
    pub fn table(&self) -> String {
        let mut s = String::new();
        for e in &self.entries {
            let _ = writeln!(s, "{} {}", e.prefix, super::dashed(&e.eth.0));
        }
        s
    }

    /// Replaces every entry with those of `value`, arguments separated by
    /// commas as in the configuration (Click's `config` write handler);
    /// a prefix given twice is warned about, and the later one is kept.
    fn reconfigure(&mut self, value: &str) -> Result<(), String> {
        let mut entries = Vec::new();
        for (i, arg) in bricks_config::split_args(value).iter().enumerate() {
            if arg.trim().is_empty() {
                continue;
            }
            parse_entries(arg, &mut entries).map_err(|m| format!("argument {}: {m}", i + 1))?;
        }
        let mut seen = std::collections::HashSet::new();
        let mut warned = std::collections::HashSet::new();
        for e in &entries {
            if !seen.insert(e.prefix) && warned.insert(e.prefix) {
                eprintln!("  warning: multiple entries for {}", e.prefix);
            }
        }
        normalize(&mut entries);
        self.entries = entries;
        Ok(())
    }

    /// Turns a request into its reply in place, or says why not.
    fn answer(&self, p: &mut Packet) -> Result<(), Reject> {
        let d = p.data();
        if d.len() < HEADER_LEN + ETHERNET_IPV4_LEN {
            return Err(Reject::Truncated);
        }
        if d[12..14] != EtherType::ARP.0.to_be_bytes() {
            return Err(Reject::NotArp);
        }
        let arp = ArpPacket::new_unchecked(&d[HEADER_LEN..]);
        // The fixed fields fit in the 28 bytes checked above; with lengths
        // 6 and 4 so do the addresses.
        if !arp.is_ethernet_ipv4() {
            return Err(Reject::Unsupported);
        }
        if arp.operation() != ArpOperation::Request {
            return Err(Reject::NotRequest);
        }
        let sha = arp.source_hardware_addr();
        let requester = EthernetAddress([sha[0], sha[1], sha[2], sha[3], sha[4], sha[5]]);
        if requester.is_multicast() {
            return Err(Reject::BadSender);
        }
        let ip4 = |b: &[u8]| Ipv4Addr::new(b[0], b[1], b[2], b[3]);
        let requester_ip = ip4(arp.source_protocol_addr());
        let asked = ip4(arp.target_protocol_addr());
        let eth = self.lookup(asked).ok_or(Reject::UnknownTarget)?;

        let reply = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Reply,
            source_hardware_addr: eth,
            source_protocol_addr: asked,
            target_hardware_addr: requester,
            target_protocol_addr: requester_ip,
        };
        p.take_back(p.len() - (HEADER_LEN + ETHERNET_IPV4_LEN));
        let d = p.data_mut();
        d[..6].copy_from_slice(&requester.0);
        d[6..12].copy_from_slice(&eth.0);
        reply.emit(&mut ArpPacket::new_unchecked(&mut d[HEADER_LEN..]));
        let old = *p.anno();
        let a = p.anno_mut();
        *a = Annotations::default();
        a.device = old.device;
        a.vrouter = old.vrouter;
        a.packet_type = PacketType::Outgoing;
        Ok(())
    }

    #[inline]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        match self.answer(p) {
            Ok(()) => {
                self.replies += 1;
                Some(0)
            }
            Err(why) => {
                self.rejects[why as usize] += 1;
                self.has_reject.then_some(1)
            }
        }
    }
}

impl Element for ArpResponder {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("replies", self.replies);
        for r in Reject::ALL {
            s.counter(r.as_str(), self.rejects[r as usize]);
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 4] = [
            Handler::r("table"),
            Handler::r("lookup"),
            Handler::w("add"),
            Handler::w("remove"),
        ];
        &HANDLERS
    }

    fn handler_addresses(&self, handler: &str) -> Option<Reading> {
        match handler {
            "config" | "add" => Some(Reading::IpEth),
            "remove" | "lookup" => Some(Reading::Ip),
            _ => None,
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "table").then(|| self.table())
    }

    /// `lookup ADDR`: the Ethernet address answering for ADDR, empty when
    /// none does.
    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        _cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler != "lookup" || write {
            return None;
        }
        Some(match value.trim().parse::<Ipv4Addr>() {
            Ok(ip) => Ok(self
                .lookup(ip)
                .map(|e| super::dashed(&e.0))
                .unwrap_or_default()),
            Err(_) => Err(format!("lookup: `{}` is not an IPv4 address", value.trim())),
        })
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "config" => self.reconfigure(value),
            "add" => {
                let mut v = self.entries.clone();
                parse_entries(value, &mut v)?;
                normalize(&mut v);
                self.entries = v;
                Ok(())
            }
            "remove" => {
                let p = Ipv4Cidr::from_arg(value.trim())?.network();
                let before = self.entries.len();
                self.entries.retain(|e| e.prefix != p);
                if self.entries.len() == before {
                    return Err(format!("{p} not found"));
                }
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (config, add, remove)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ether::testdata::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    fn responder(args: &str) -> Harness {
        Harness::push(&CLASS, args, 1, 2)
    }

    #[test]
    fn answers_linux_request_with_linux_reply() {
        // B's configuration: A's real request must produce exactly the
        // reply B's kernel sent.
        let mut h = responder("10.0.0.2 52:54:00:bb:00:02");
        h.push_bytes(0, &A_REQUEST_B);
        assert_eq!(h.take_bytes(0), vec![B_REPLY_A.to_vec()]);
        assert!(h.take(1).is_empty());
        assert_eq!(h.stats().get("replies"), Some(1));
    }

    #[test]
    fn padded_request_gets_42_byte_reply() {
        let mut h = responder("52:54:00:bb:00:02 10.0.0.2");
        let mut p = Packet::from_slice(&padded(&A_REQUEST_B)).unwrap();
        p.anno_mut().device = 3;
        p.anno_mut().paint = 9;
        p.anno_mut().packet_type = PacketType::Broadcast;
        p.anno_mut().timestamp = bricks_packet::Timestamp(81_000_000);
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out[0].data(), &B_REPLY_A[..]);
        assert_eq!(out[0].anno().device, 3);
        assert_eq!(out[0].anno().paint, 0);
        // A new packet, as Click's: no timestamp (ARPPrint shows 0.000000).
        assert_eq!(out[0].anno().timestamp, bricks_packet::Timestamp::default());
        assert_eq!(out[0].anno().packet_type, PacketType::Outgoing);
    }

    #[test]
    fn proxy_arp_for_prefix() {
        // Click's example form: an address and a prefix sharing one ETH.
        let mut h = responder("10.0.0.77 10.0.0.0/28 52:54:00:bb:00:02");
        h.push_bytes(0, &A_REQUEST_UNKNOWN);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        let reply = ArpRepr::parse(&ArpPacket::new_checked(&out[0][14..]).unwrap()).unwrap();
        assert_eq!(
            reply,
            ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Reply,
                source_hardware_addr: B_MAC,
                source_protocol_addr: Ipv4Addr::new(10, 0, 0, 9),
                target_hardware_addr: A_MAC,
                target_protocol_addr: A_IP,
            }
        );
        assert_eq!(out[0][..12], B_REPLY_A[..12]);
    }

    #[test]
    fn longest_prefix_wins_and_later_duplicate_wins() {
        let h = ArpResponder {
            entries: {
                let mut v = Vec::new();
                parse_entries("10.0.0.0/8 1:1:1:1:1:1", &mut v).unwrap();
                parse_entries("10.0.0.0/255.255.255.0 2:2:2:2:2:2", &mut v).unwrap();
                parse_entries("10.0.0.9/8 3:3:3:3:3:3", &mut v).unwrap();
                normalize(&mut v);
                v
            },
            has_reject: false,
            replies: 0,
            rejects: [0; 6],
        };
        assert_eq!(
            h.lookup(Ipv4Addr::new(10, 0, 0, 9)),
            Some(EthernetAddress([2; 6]))
        );
        assert_eq!(
            h.lookup(Ipv4Addr::new(10, 1, 0, 9)),
            Some(EthernetAddress([3; 6]))
        );
        assert_eq!(h.lookup(Ipv4Addr::new(11, 0, 0, 1)), None);
        assert_eq!(
            h.table(),
            "10.0.0.0/24 02-02-02-02-02-02\n10.0.0.0/8 03-03-03-03-03-03\n"
        );
    }

    #[test]
    fn unknown_target_goes_to_output_1_or_is_dropped() {
        let mut h = responder("10.0.0.2 52:54:00:bb:00:02");
        h.push_bytes(0, &A_REQUEST_UNKNOWN);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take_bytes(1), vec![A_REQUEST_UNKNOWN.to_vec()]);
        assert_eq!(h.stats().get("unknown_target"), Some(1));

        let mut h = Harness::push(&CLASS, "10.0.0.2 52:54:00:bb:00:02", 1, 1);
        h.push_bytes(0, &A_REQUEST_UNKNOWN);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("unknown_target"), Some(1));
        assert_eq!(h.stats().get("unconnected_drops"), None);
    }

    #[test]
    fn malformed_frames_counted_by_reason() {
        let mut h = responder("10.0.0.2 52:54:00:bb:00:02");
        let mut not_arp = A_REQUEST_B;
        not_arp[13] = 0x00;
        let mut reply = A_REQUEST_B;
        reply[21] = 2;
        let mut ipv6 = A_REQUEST_B;
        ipv6[16..18].copy_from_slice(&[0x86, 0xdd]);
        let mut hlen = A_REQUEST_B;
        hlen[18] = 8;
        let mut group = A_REQUEST_B;
        group[22] = 0x01;
        for f in [&A_REQUEST_B[..41], &A_REQUEST_B[..14], &[][..]] {
            h.push_bytes(0, f);
        }
        for f in [not_arp, reply, ipv6, hlen, group] {
            h.push_bytes(0, &f);
        }
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 8);
        let s = h.stats();
        assert_eq!(s.get("truncated"), Some(3));
        assert_eq!(s.get("not_arp"), Some(1));
        assert_eq!(s.get("not_request"), Some(1));
        assert_eq!(s.get("unsupported"), Some(2));
        assert_eq!(s.get("bad_sender"), Some(1));
        assert_eq!(s.get("replies"), Some(0));
    }

    #[test]
    fn probe_is_answered_to_the_prober() {
        // RFC 5227 probe: sender IP 0.0.0.0, target the address A wants.
        let mut probe = A_REQUEST_B;
        probe[28..32].copy_from_slice(&[0, 0, 0, 0]);
        let mut h = responder("10.0.0.2 52:54:00:bb:00:02");
        h.push_bytes(0, &probe);
        let out = h.take_bytes(0);
        let mut want = B_REPLY_A;
        want[38..42].copy_from_slice(&[0, 0, 0, 0]);
        assert_eq!(out, vec![want.to_vec()]);
    }

    #[test]
    fn gratuitous_request_for_our_address_is_answered() {
        // B announces 10.0.0.2; a responder that also claims 10.0.0.2
        // answers, as Click does, which tells B of the conflict.
        let mut h = responder("10.0.0.2 52:54:00:aa:00:01");
        h.push_bytes(0, &B_GRATUITOUS);
        let out = h.take_bytes(0);
        assert_eq!(out[0][..6], B_MAC.0);
        assert_eq!(out[0][6..12], A_MAC.0);
        // A gratuitous request for an address we do not claim is not ours.
        let mut h = responder("10.0.0.1 52:54:00:aa:00:01");
        h.push_bytes(0, &B_GRATUITOUS);
        assert!(h.take(0).is_empty());
    }

    #[test]
    fn pull_path_answers() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull, Processing::Push],
        };
        let mut h = Harness::new(&CLASS, "10.0.0.2 52:54:00:bb:00:02", ports);
        h.feed(
            0,
            [
                Packet::from_slice(&A_REQUEST_UNKNOWN).unwrap(),
                Packet::from_slice(&A_REQUEST_B).unwrap(),
            ],
        );
        let got = h.pull(0, 8);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data(), &B_REPLY_A[..]);
        assert_eq!(h.take(1).len(), 1);
    }

    #[test]
    fn add_and_remove_handlers() {
        let mut h = responder("10.0.0.1 52:54:00:aa:00:01");
        h.push_bytes(0, &A_REQUEST_B);
        assert!(h.take(0).is_empty());
        h.write_handler("add", "10.0.0.2/32 52:54:00:bb:00:02")
            .unwrap();
        h.push_bytes(0, &A_REQUEST_B);
        assert_eq!(h.take_bytes(0), vec![B_REPLY_A.to_vec()]);
        h.write_handler("remove", "10.0.0.2").unwrap();
        assert!(h
            .write_handler("remove", "10.0.0.2")
            .unwrap_err()
            .contains("not found"));
        assert!(h.write_handler("add", "10.0.0.3").is_err());
        h.push_bytes(0, &A_REQUEST_B);
        assert!(h.take(0).is_empty());
    }

    #[test]
    fn arguments_are_checked() {
        let err = |a: &str| make_element(&CLASS, a, &PortInfo::default()).unwrap_err();
        // No arguments, as in Click: a table to fill with `add`.
        assert!(make_element(&CLASS, "", &PortInfo::default()).is_ok());
        assert!(err("10.0.0.1").contains("missing Ethernet address"));
        assert!(err("52:54:00:aa:00:01").contains("missing IP"));
        assert!(err("10.0.0.1 1:1:1:1:1:1 2:2:2:2:2:2").contains("more than one"));
        assert!(err("10.0.0.1 1:1:1:1:1:1, 10.0.0.300 1:1:1:1:1:1").contains("argument 2"));
        assert!(err("10.0.0.1/33 1:1:1:1:1:1").contains("10.0.0.1/33"));
        assert!(err("10.0.0.1 1:1:1:1:1:1, TIMEOUT 5").contains("unknown keyword TIMEOUT"));
        assert!(make_element(
            &CLASS,
            "10.0.0.1 10.1.0.0/255.255.0.0 1:1:1:1:1:1",
            &PortInfo::default()
        )
        .is_ok());
    }
}
