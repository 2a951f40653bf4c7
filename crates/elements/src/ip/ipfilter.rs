//! `IPFilter`: filters IP packets with Click's `ACTION PATTERN` rules
//! (`elements/ip/ipfilter.cc`): the patterns are IPClassifier's tcpdump-like
//! language, compiled by the same compiler (`classify::ip_filter`) into one
//! decision program; the first rule that matches says where the packet
//! goes.

use crate::classify::click_program::{ipfilter_program_text, IpExpr};
use crate::classify::program::{Expr, Program};
use crate::classify::{ip_filter, ip_headers, locate, read_patterns, PatternError};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Manual, Packet, PortInfo, Stats,
};

/// The `IPFilter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPFilter",
    ports: "1/-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "filters IP packets by contents",
    synopsis: "IPFilter(ACTION_1 PATTERN_1, ..., ACTION_N PATTERN_N)",
    description: "Filters IP packets by rules, each an ACTION followed by a PATTERN in \
        IPClassifier's tcpdump-like language (`bricks elements IPClassifier` describes it). \
        Packets are tested against the rules in order and handled by the ACTION of the \
        first rule they match: `allow` sends them to output 0, an output number to that \
        output, `deny` or `drop` drops them. A packet that matches no rule is dropped. A \
        rule without a pattern (`allow`), or with `-`, `any` or `all`, matches every \
        packet. Drops are counted. The IP header is where the network header annotation \
        says (CheckIPHeader and MarkIPHeader set it), or at the start of the data. The \
        `program` read handler prints the decision program Click compiles for these rules, \
        in Click's format; bricks runs its own equivalent program (8-byte words). Rules \
        Click's IPFilter does not have (IPv6, port ranges) have no Click program, and the \
        handler says so.\n\n\
        Example, the start of a firewall's inbound rules: `IPFilter(deny src net \
        10.0.0.0/8, allow dst host 192.0.2.80 && tcp && dst port www, allow icmp type echo, \
        deny all)`.",
    ports: "one push input; any number of push outputs",
    keywords: &[],
    counters: &[(
        "drops",
        "packets dropped by a deny or drop rule, or matching no rule",
    )],
    example: "InfiniteSource(DATA \\<45 00 00 28 12 34 40 00 40 06 14 9a 0a 00 00 01 \
        0a 00 00 02 9c 40 00 50 00 00 00 01 00 00 00 00 50 02 72 10 8d 3e 00 00>, LIMIT 1) \
        -> f :: IPFilter(drop src net 192.168.0.0/16, allow tcp dst port www, 1 icmp, deny all) \
        -> Discard; f[1] -> Discard;",
    see_also: &[
        "IPClassifier",
        "Classifier",
        "CheckIPHeader",
        "MarkIPHeader",
    ],
};

/// Parses one rule: its action (an output, or `None` to drop) and its
/// pattern, with errors located in `text`.
#[allow(clippy::type_complexity)]
fn parse_rule(
    text: &str,
    noutputs: usize,
) -> Result<(Option<usize>, Expr, Option<IpExpr>), PatternError> {
    let start = text.len() - text.trim_start().len();
    let word_len = text[start..]
        .find(char::is_whitespace)
        .unwrap_or(text.len() - start);
    let word = &text[start..start + word_len];
    let at = start..start + word_len;
    let action = match word {
        "allow" if noutputs == 0 => {
            return Err(PatternError::new(
                at,
                "`allow` is meaningless, element has zero outputs",
            ))
        }
        "allow" => Some(0),
        "deny" | "drop" => None,
        "" => return Err(PatternError::new(at, "empty rule")),
        _ => match word.parse::<usize>() {
            Ok(n) if n < noutputs => Some(n),
            Ok(n) => {
                return Err(
                    PatternError::new(at, format!("slot `{n}` out of range")).help(format!(
                        "the outputs are 0 to {}",
                        noutputs.saturating_sub(1)
                    )),
                )
            }
            Err(_) => {
                return Err(PatternError::new(at, format!("unknown slot ID `{word}`"))
                    .help("a rule starts with allow, deny, drop or an output number"))
            }
        },
    };
    let offset = start + word_len;
    let (expr, click) =
        ip_filter::parse_pattern_click(&text[offset..]).map_err(|e| PatternError {
            at: e.at.start + offset..e.at.end + offset,
            ..e
        })?;
    Ok((action, expr, click))
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rules = read_patterns(args);
    // Click lets a rule be quoted.
    let texts: Vec<String> = rules
        .iter()
        .map(|(t, _)| match t.starts_with('"') || t.starts_with('\'') {
            true => bricks_config::unquote(t).unwrap_or_else(|_| t.to_string()),
            false => t.to_string(),
        })
        .collect();
    let located: Vec<_> = texts
        .iter()
        .zip(&rules)
        .map(|(t, (_, s))| (t.as_str(), *s))
        .collect();
    let mut actions = Vec::with_capacity(texts.len());
    let mut exprs = Vec::with_capacity(texts.len());
    let mut click = Vec::with_capacity(texts.len());
    for (i, t) in texts.iter().enumerate() {
        let (action, expr, c) = parse_rule(t, ports.noutputs())
            .map_err(|e| locate(PatternError { pattern: i, ..e }, &located))?;
        actions.push(action);
        exprs.push(expr);
        click.push((action, c));
    }
    let program = Program::build(&exprs);
    Ok(Box::new(IPFilter {
        link: program.reads_link(),
        program,
        click_rules: click,
        actions: actions.into_boxed_slice(),
        drops: 0,
    }))
}

/// Filters IP packets.
pub struct IPFilter {
    /// Gives the first matching rule.
    program: Program,
    /// Whether a rule reads the Ethernet header.
    link: bool,
    /// Each rule's output, `None` to drop.
    actions: Box<[Option<usize>]>,
    /// The rules as Click's IPFilter parses them, for the `program`
    /// handler, which builds Click's program only when it is read.
    click_rules: Vec<(Option<usize>, Option<IpExpr>)>,
    drops: u64,
}

const HANDLERS: &[Handler] = &[Handler::r("program")];

impl IPFilter {
    #[inline(always)]
    fn verdict(&self, p: &Packet) -> Option<usize> {
        let rule = self.program.run(&ip_headers(p, self.link))?;
        *self.actions.get(rule)?
    }
}

impl Element for IPFilter {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut drops = 0u64;
        let this = &*self;
        cx.push_classified(batch, |p| {
            let out = this.verdict(p);
            drops += u64::from(out.is_none());
            out
        });
        self.drops += drops;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "program").then(|| ipfilter_program_text(&self.click_rules))
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// TCP SYN 10.0.0.1:40000 -> 10.0.0.2:80.
    const TCP_SYN: [u8; 40] = [
        0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
        0x00, 0x00, 0x50, 0x02, 0x72, 0x10, 0x8d, 0x3e, 0x00, 0x00,
    ];
    /// DNS query 192.168.1.10:53000 -> 8.8.8.8:53.
    const UDP_DNS: [u8; 57] = [
        0x45, 0x00, 0x00, 0x39, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x96, 0xbe, 0xc0, 0xa8, 0x01,
        0x0a, 0x08, 0x08, 0x08, 0x08, 0xcf, 0x08, 0x00, 0x35, 0x00, 0x25, 0xe3, 0x68, 0xab, 0xcd,
        0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d,
        0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00, 0x01,
    ];
    /// ICMP echo request 10.0.0.1 -> 10.0.0.2.
    const ICMP_ECHO: [u8; 36] = [
        0x45, 0x00, 0x00, 0x24, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x14, 0xa3, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x08, 0x00, 0x66, 0x68, 0x00, 0x01, 0x00, 0x01, 0x61, 0x62,
        0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    ];

    /// Where each sample packet goes: its output, or `None`.
    fn outputs(rules: &str, n: usize) -> Vec<Option<usize>> {
        [&TCP_SYN[..], &UDP_DNS[..], &ICMP_ECHO[..]]
            .iter()
            .map(|b| {
                let mut h = Harness::push(&CLASS, rules, 1, n);
                h.push_bytes(0, b);
                let found = (0..n).find(|&o| !h.take(o).is_empty());
                assert_eq!(h.stats().get("drops"), Some(u64::from(found.is_none())));
                found
            })
            .collect()
    }

    #[test]
    fn first_matching_rule_decides() {
        assert_eq!(
            outputs(
                "deny src net 192.168.0.0/16, allow tcp dst port www, 1 icmp",
                2
            ),
            [Some(0), None, Some(1)]
        );
        assert_eq!(outputs("drop tcp, allow", 1), [None, Some(0), Some(0)]);
        assert_eq!(outputs("allow udp", 1), [None, Some(0), None]);
        assert_eq!(
            outputs("2 icmp type echo, 1 src host 10.0.0.1, deny all", 3),
            [Some(1), None, Some(2)]
        );
        assert_eq!(
            outputs("\"allow dst port 53\", deny -", 1),
            [None, Some(0), None]
        );
        // Click's example shape: && and a relation.
        assert_eq!(
            outputs(
                "allow dst host 10.0.0.2 && tcp && dst port < 1024 && syn",
                1
            ),
            [Some(0), None, None]
        );
    }

    /// The Ethernet header of [`ethernet_frame`]: to 10:20:30:40:50:60
    /// from 00:01:02:03:04:05, IPv4.
    const ETHER: [u8; 14] = [
        0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x08, 0x00,
    ];

    fn ethernet_frame(ip: &[u8]) -> Vec<u8> {
        [&ETHER[..], ip].concat()
    }

    /// Whether `rule` allows each packet.
    fn allowed(rule: &str, packets: Vec<Packet>) -> Vec<bool> {
        packets
            .into_iter()
            .map(|p| {
                let mut h = Harness::push(&CLASS, rule, 1, 1);
                h.push_packets(0, [p]);
                !h.take(0).is_empty()
            })
            .collect()
    }

    /// The TCP SYN as four packets: in an Ethernet frame whose network
    /// header is marked (CheckIPHeader(14)); the same frame stripped of
    /// its Ethernet header (Strip(14), then CheckIPHeader); an IPv6 packet
    /// in a frame; and the bare IP packet, made with no Ethernet header.
    fn frames() -> Vec<Packet> {
        let mut marked = Packet::from_slice(&ethernet_frame(&TCP_SYN)).unwrap();
        marked.set_network_header(14);
        let mut stripped = Packet::from_slice(&ethernet_frame(&TCP_SYN)).unwrap();
        stripped.pull_front(14);
        stripped.set_network_header(0);
        let mut v6 = vec![0u8; 40];
        v6[0] = 0x60;
        v6[6] = 59; // no next header
        v6[7] = 64;
        let mut ipv6 = Packet::from_slice(&ethernet_frame(&v6)).unwrap();
        ipv6.set_network_header(14);
        let bare = Packet::from_slice(&TCP_SYN).unwrap();
        vec![marked, stripped, ipv6, bare]
    }

    #[test]
    fn ethernet_addresses_match_the_header_in_front_of_ip() {
        let t = [true, true, true, false];
        let f = [false; 4];
        assert_eq!(allowed("allow src 0:1:2:3:4:5", frames()), t);
        assert_eq!(allowed("allow ether src 00:01:02:03:04:05", frames()), t);
        assert_eq!(allowed("allow dst 10:20:30:40:50:60", frames()), t);
        assert_eq!(allowed("allow dst 0:1:2:3:4:5", frames()), f);
        assert_eq!(allowed("allow src 10:20:30:40:50:60", frames()), f);
        // `host` and a bare address: either address.
        assert_eq!(allowed("allow host 10:20:30:40:50:60", frames()), t);
        assert_eq!(allowed("allow ether host 0:1:2:3:4:5", frames()), t);
        assert_eq!(allowed("allow 0:1:2:3:4:5", frames()), t);
        assert_eq!(allowed("allow host 9:A:B:C:D:E", frames()), f);
        assert_eq!(
            allowed("allow src and dst 0:1:2:3:4:5", frames()),
            f,
            "both addresses must be it"
        );
        // A mask.
        assert_eq!(
            allowed(
                "allow ether src & ff:ff:ff:0:0:0 = 0:1:2:ff:ff:ff",
                frames()
            ),
            t
        );
        // Combined with IP primitives; a bare address after an Ethernet
        // test is an Ethernet address too.
        assert_eq!(
            allowed("allow src 0:1:2:3:4:5 and tcp dst port 80", frames()),
            [true, true, false, false]
        );
        assert_eq!(
            allowed("allow ether src 9:9:9:9:9:9 or 0:1:2:3:4:5", frames()),
            t
        );
    }

    #[test]
    fn a_packet_without_an_ethernet_header_matches_no_ethernet_address() {
        // Nothing in front of the bare packet's IP header is its own: the
        // test is false, its `!=` form too, and only `not` holds.
        let only_bare = [false, false, false, true];
        assert_eq!(allowed("allow not src 0:1:2:3:4:5", frames()), only_bare);
        assert_eq!(allowed("allow src != 0:1:2:3:4:5", frames()), [false; 4]);
        assert_eq!(
            allowed("allow src != 9:A:B:C:D:E", frames()),
            [true, true, true, false]
        );
        // The bytes of an earlier packet in a reused buffer are not read.
        let mut bare = Packet::from_slice(&ethernet_frame(&TCP_SYN)).unwrap();
        bare.pull_front(14);
        let fresh = Packet::from_slice(bare.data()).unwrap();
        assert_eq!(
            allowed("allow src 0:1:2:3:4:5", vec![bare, fresh]),
            [true, false]
        );
    }

    #[test]
    fn ethernet_rules_print_at_clicks_link_offsets() {
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push],
        };
        let e = make_element(&CLASS, "allow dst 10:20:30:40:50:60", &ports).unwrap();
        assert_eq!(
            e.read_handler("program").unwrap(),
            " 0   0/00001020%0000ffff  yes->step 1  no->[X]\n\
             \x201   4/30405060%ffffffff  yes->[0]  no->[X]\n\
             safe length 8\nalignment offset 0\n"
        );
    }

    #[test]
    fn bad_ethernet_rules_are_refused() {
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push],
        };
        let make = |a: &str| make_element(&CLASS, a, &ports).map(|_| ());
        assert!(make("allow ip src 0:1:2:3:4:5").is_err());
        assert!(make("allow ether src 10.0.0.1").is_err());
        assert!(make("allow src 0:1:2:3:4:5 > 0:1:2:3:4:6").is_err());
        assert!(make("allow src 0:1:2:3:4:5 & 255.0.0.0").is_err());
        assert!(make("allow ether net 0:1:2:3:4:5").is_err());
        assert!(make("allow tcp src 0:1:2:3:4:5").is_err());
        assert!(make("allow ether src 0:1:2:3:4:5").is_ok());
    }

    #[test]
    fn program_handler_prints_clicks_program() {
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push],
        };
        let e = make_element(&CLASS, "allow src 10.0.0.1", &ports).unwrap();
        assert_eq!(
            e.read_handler("program").unwrap(),
            " 0 268/0a000001%ffffffff  yes->[0]  no->[X]\nsafe length 272\nalignment offset 0\n"
        );
    }

    #[test]
    fn bad_rules_are_refused() {
        let make = |a: &str, n: usize| {
            let ports = PortInfo {
                inputs: vec![bricks_element::Processing::Push],
                outputs: vec![bricks_element::Processing::Push; n],
            };
            make_element(&CLASS, a, &ports).map(|_| ())
        };
        assert!(make("allow tcp", 0).unwrap_err().contains("meaningless"));
        assert!(make("2 tcp", 2).unwrap_err().contains("out of range"));
        assert!(make("permit tcp", 1).unwrap_err().contains("unknown slot"));
        assert!(make("allow tcp port bogus", 1)
            .unwrap_err()
            .contains("port"));
        assert!(make("allow tcp, deny udp", 1).is_ok());
    }
}
