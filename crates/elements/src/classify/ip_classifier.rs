//! `IPClassifier`: sends each IP packet to the output of the first
//! tcpdump-like pattern it matches (Click's `elements/ip/ipclassifier.cc`,
//! built on IPFilter's pattern language, here [`super::ip_filter`]).

use super::click_program::{ipfilter_program_text, IpExpr};
use super::program::{Expr, Program};
use super::{check_outputs, ip_filter, ip_headers, locate, read_patterns, PatternError};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Manual, PortInfo, Stats,
};

/// The `IPClassifier` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPClassifier",
    ports: "1/-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "classifies IP packets with tcpdump-like patterns",
    synopsis: "IPClassifier(PATTERN_1, ..., PATTERN_N)",
    description: "Sends each IP packet to the output of the first pattern it matches; a \
packet that matches no pattern is dropped and counted. There must be exactly one pattern \
per output. The IP header is where the network header annotation says (CheckIPHeader and \
MarkIPHeader set it), or at the start of the data if nothing set it; the transport header \
follows it, at the IP header length.

A pattern is made of primitives joined with `and` (or `&&`), `or` (`||`) and `not` (`!`), \
and parentheses. `not` binds tightest, then `and`, then `or`; two primitives side by side \
are joined with `and`; `C ? A : B` chooses between A and B (put spaces around the colon). \
A pattern that is just `-`, `any` or `all` matches every packet.

The primitives are: `ip proto P`, also written `proto P` or just `P`, for IP protocol P, a \
number or one of icmp, igmp, ipip, tcp, udp, dccp, gre, esp, ah, ospf, sctp, or tcpudp for \
TCP or UDP; `host ADDR` for an IP address; `net ADDR/LEN`, also `net ADDR/MASK` and `net \
ADDR mask MASK`, for a prefix; `port PORT` for a TCP or UDP port, and `tcp port PORT`, `udp \
port PORT`, `sctp port PORT`, `dccp port PORT` for one protocol's, where PORT is a number, \
a range LO-HI or a name (http, www, https, ssh, telnet, ftp, smtp, domain, dns, bootps, \
bootpc, tftp, ntp, snmp, pop3, imap, ...); `tcp opt FLAG` for a TCP flag that is set, one \
of fin, syn, rst, psh, ack, urg, ece, cwr (also `tcp FLAG` or just `FLAG`); `tcp win N` for \
the TCP window; `icmp type T` for an ICMP type, a number or one of echo, echo-reply, \
unreachable, sourcequench, redirect, routeradvert, routersolicit, timeexceeded, \
parameterproblem, timestamp, timestamp-reply, inforeq, inforeq-reply, maskreq, \
maskreq-reply; `ip vers N`, `ip hl N` (in 32-bit words), `ip tos N`, `ip dscp N` (the upper \
six bits of the TOS), `ip ttl N`, `ip len N`, `ip id N`; `ip ect` and `ip ce` for the ECN \
bits; `ip frag` for fragments (more-fragments set or a fragment offset) and `ip unfrag` for \
the rest; `ip[POS:LEN] V` for LEN bytes (1 to 4) of the IP header from byte POS, and \
`ip[POS]` for one; `transp[POS:LEN] V` for the transport header, and `tcp[...]`, \
`udp[...]`, `icmp[...]` for it in one protocol; `true` and `false`.

host, net and port take a direction first: `src`, `dst`, `src or dst` (the default) or \
`src and dst`. A primitive with a value may put a relation before it: `==` (the default), \
`!=`, `<`, `>`, `<=`, `>=`; and a mask before that, as in `tcp[13] & 0x12 == 0x02` or `dst \
host & 255.255.0.0 10.1.0.0`. With both directions, `!=`, `<` and `<=` must hold for the \
source and the destination, and `==`, `>`, `>=` for either: `port != 80` is `not port 80` \
among TCP and UDP packets.

A value may stand alone, its type told by its form: `tcp`, `www` (a port), `syn` (a TCP \
flag), `echo-reply` (an ICMP type), `10.0.0.1` (a host), `10.0.0.0/8` (a net), `frag`, \
`unfrag`. A primitive without qualifiers takes those of the one before it: `src port 80 or \
81` means `src port 80 or src port 81`, and `src host 10.0.0.1 or 10.0.0.2` means `src host \
10.0.0.1 or src host 10.0.0.2`.

Port, TCP flag and window, ICMP type and transport header primitives also require their \
protocol and a first fragment (fragment offset 0): a later fragment carries no transport \
header. A primitive on bytes the packet does not have is false, and so is its `!=` form, \
while `not` of it is true: `port != 80` never matches an ICMP packet, `not port 80` does.

IPv6 (not in Click): `ip6` alone matches IPv6 packets; `ip6` before a primitive, the \
protocol `icmp6`, or an IPv6 address or prefix as the value makes a primitive about the \
IPv6 header, which also requires version 6: `ip6 src net 2001:db8::/32`, `dst host \
fe80::1`, `icmp6 type T` (a number or one of echo, echo-reply, unreachable, toobig, \
timeexceeded, parameterproblem, routersolicit, routeradvert, neighborsolicit, \
neighboradvert, redirect), `ip6 hlim N` (also `ip6 ttl`), `ip6 proto P` (the upper-layer \
protocol), `ip6 nxt P` (the fixed header's Next Header field), `ip6 plen N`, `ip6 flow N`, \
`ip6 tos N`, `ip6 dscp N`, `ip6 frag` (the packet has a Fragment header). Transport \
primitives without `ip` or `ip6` (`tcp`, `udp`, `port 22`, `tcp opt syn`) match both \
families, each read where its header has it; with `ip` they are IPv4's, as in Click. In \
IPv6 the protocol and the transport header are found by walking the extension headers \
(Hop-by-Hop, Routing, Destination Options, Fragment, AH; at most 16, so every packet \
costs a bounded time): `ip6 tcp port 80` matches behind a Hop-by-Hop header. A fragment \
other than the first has no transport header and matches no port, flag or type primitive \
(`not port 80` does match it); a chain that runs past the payload or holds more than 16 \
headers matches no protocol or transport primitive. An IPv4 primitive never matches an IPv6 packet (Click would read the IPv6 \
header as if it were IPv4's); on every other packet it means what it means in Click.

Ethernet addresses, as in Click's IPFilter: `src 0:1:2:3:4:5`, `dst ADDR`, `host ADDR` \
(either address), also after `ether` (`ether src ADDR`), with `!=` and an Ethernet mask \
(`ether src & ff:ff:ff:0:0:0 = 0:1:2:0:0:0`), test the Ethernet header in front of the IP \
header: the 14 bytes that end where the IP header starts, in the frame (`CheckIPHeader(14)`) \
or removed from its front by `Strip(14)`. A packet made as an IP packet has no Ethernet \
header of its own and matches no Ethernet address (`not` of one holds); Click would read \
through its unset MAC header annotation. A bare address after an Ethernet primitive is an \
Ethernet address too.

The `program` read handler prints the decision program Click compiles for these patterns, \
in Click's format (4-byte words `OFFSET/VALUE%MASK`, offsets 256 and up in the IP header and \
512 and up in the transport header, below 256 in the Ethernet header, from two bytes before \
it, `safe length`, `alignment offset`); bricks runs its own \
equivalent program (8-byte words). Patterns Click's IPClassifier does not have (IPv6, port \
ranges) have no Click program, and the handler says so.

Examples: `tcp dst port 80`; `dst tcp port 8000 or 8080`; `udp and (port 53 or port 123)`; \
`src net 10.0.0.0/8 and not dst net 10.0.0.0/8`; `icmp type echo`; `tcp opt syn and not \
tcp opt ack`; `ip ttl < 2`; `ip frag`; `dst port 1024-65535`; `tcp ? dst port 80 : udp`; \
`ip6 and tcp dst port 22`; `icmp6 type neighborsolicit`; `-`.",
    ports: "one push input; N push outputs, one per pattern",
    keywords: &[],
    counters: &[("drops", "packets that matched no pattern")],
    example: "InfiniteSource(LIMIT 1) -> Strip(14) -> c :: IPClassifier(tcp dst port 80, icmp type echo, -); \
c[0] -> Discard; c[1] -> Discard; c[2] -> Discard;",
    see_also: &["Classifier", "CheckIPHeader", "MarkIPHeader"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let patterns = read_patterns(args);
    check_outputs(CLASS.name, &patterns, ports)?;
    // Click lets a pattern be quoted.
    let texts: Vec<String> = patterns
        .iter()
        .map(|(t, _)| match t.starts_with('"') || t.starts_with('\'') {
            true => bricks_config::unquote(t).unwrap_or_else(|_| t.to_string()),
            false => t.to_string(),
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let located: Vec<_> = refs
        .iter()
        .zip(&patterns)
        .map(|(t, (_, s))| (*t, *s))
        .collect();
    let program = compile(&refs).map_err(|e| locate(e, &located))?;
    let mut click = Vec::with_capacity(refs.len());
    for (i, text) in refs.iter().enumerate() {
        let (_, c) = ip_filter::parse_pattern_click(text)
            .map_err(|e| locate(PatternError { pattern: i, ..e }, &located))?;
        click.push((Some(i), c));
    }
    Ok(Box::new(IpClassifier {
        link: program.reads_link(),
        program,
        click_rules: click,
        drops: 0,
    }))
}

/// Compiles IPClassifier patterns into a program whose outputs are the
/// pattern numbers; run it with [`Program::classify_ip`].
pub fn compile(patterns: &[&str]) -> Result<Program, PatternError> {
    Ok(Program::build(&parse(patterns)?))
}

/// Parses IPClassifier patterns into expressions, one per pattern; with
/// [`Expr::eval`] they are the reference meaning of the compiled program.
pub fn parse(patterns: &[&str]) -> Result<Vec<Expr>, PatternError> {
    patterns
        .iter()
        .enumerate()
        .map(|(i, text)| {
            ip_filter::parse_pattern(text).map_err(|e| PatternError { pattern: i, ..e })
        })
        .collect()
}

/// Classifies IP packets.
pub struct IpClassifier {
    program: Program,
    /// Whether a pattern reads the Ethernet header.
    link: bool,
    /// The rules as Click's IPFilter parses them, for the `program`
    /// handler, which builds Click's program only when it is read.
    click_rules: Vec<(Option<usize>, Option<IpExpr>)>,
    drops: u64,
}

const HANDLERS: &[Handler] = &[Handler::r("program")];

impl Element for IpClassifier {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let program = &self.program;
        let link = self.link;
        let drops = &mut self.drops;
        cx.push_classified(batch, |p| {
            let out = program.run(&ip_headers(p, link));
            *drops += out.is_none() as u64;
            out
        });
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
    use bricks_element::Packet;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    /// IPv4/TCP SYN 10.0.0.1:40000 -> 10.0.0.2:80, TTL 64, DF, window 29200.
    const TCP_SYN: [u8; 40] = [
        0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
        0x00, 0x00, 0x50, 0x02, 0x72, 0x10, 0x8d, 0x3e, 0x00, 0x00,
    ];
    /// IPv4/TCP FIN+ACK 10.0.0.2:80 -> 10.0.0.1:40000, DSCP EF (TOS 0xb8), window 0.
    const TCP_FIN_ACK: [u8; 40] = [
        0x45, 0xb8, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x13, 0xe2, 0x0a, 0x00, 0x00,
        0x02, 0x0a, 0x00, 0x00, 0x01, 0x00, 0x50, 0x9c, 0x40, 0x00, 0x00, 0x03, 0xe8, 0x00, 0x00,
        0x00, 0x02, 0x50, 0x11, 0x00, 0x00, 0xfb, 0x56, 0x00, 0x00,
    ];
    /// IPv4/UDP DNS query for example.com A, 192.168.1.10:53000 -> 8.8.8.8:53.
    const UDP_DNS: [u8; 57] = [
        0x45, 0x00, 0x00, 0x39, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x96, 0xbe, 0xc0, 0xa8, 0x01,
        0x0a, 0x08, 0x08, 0x08, 0x08, 0xcf, 0x08, 0x00, 0x35, 0x00, 0x25, 0xe3, 0x68, 0xab, 0xcd,
        0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d,
        0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00, 0x01,
    ];
    /// IPv4/ICMP echo request 10.0.0.1 -> 10.0.0.2, id 1, seq 1.
    const ICMP_ECHO: [u8; 36] = [
        0x45, 0x00, 0x00, 0x24, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x14, 0xa3, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x08, 0x00, 0x66, 0x68, 0x00, 0x01, 0x00, 0x01, 0x61, 0x62,
        0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    ];
    /// IPv4/ICMP echo reply 10.0.0.2 -> 10.0.0.1, id 1, seq 1.
    const ICMP_REPLY: [u8; 36] = [
        0x45, 0x00, 0x00, 0x24, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x14, 0xa3, 0x0a, 0x00, 0x00,
        0x02, 0x0a, 0x00, 0x00, 0x01, 0x00, 0x00, 0x6e, 0x68, 0x00, 0x01, 0x00, 0x01, 0x61, 0x62,
        0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
    ];
    /// First fragment (MF, offset 0) of a UDP datagram 10.0.0.1:5353 -> 10.0.0.2:53.
    const UDP_FIRST_FRAG: [u8; 44] = [
        0x45, 0x00, 0x00, 0x2c, 0x42, 0x42, 0x20, 0x00, 0x40, 0x11, 0x04, 0x7d, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x14, 0xe9, 0x00, 0x35, 0x05, 0xd0, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    /// Last fragment (offset 1480) of that datagram; its payload starts with bytes that look like ports 53 -> 53.
    const UDP_LATER_FRAG: [u8; 36] = [
        0x45, 0x00, 0x00, 0x24, 0x42, 0x42, 0x00, 0xb9, 0x40, 0x11, 0x23, 0xcc, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x00, 0x35, 0x00, 0x35, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    /// IPv4 with a Router Alert option (header length 24) carrying TCP PSH+ACK 10.0.0.1:1234 -> 10.0.0.2:22.
    const TCP_IP_OPTIONS: [u8; 44] = [
        0x46, 0x00, 0x00, 0x2c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x7f, 0x91, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x94, 0x04, 0x00, 0x00, 0x04, 0xd2, 0x00, 0x16, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x50, 0x18, 0x72, 0x10, 0x24, 0xd1, 0x00, 0x00,
    ];
    /// IGMPv2 membership report for 224.0.0.251, TTL 1, TOS 0xc0.
    const IGMP_REPORT: [u8; 28] = [
        0x45, 0xc0, 0x00, 0x1c, 0x12, 0x34, 0x00, 0x00, 0x01, 0x02, 0x04, 0x3f, 0xc0, 0xa8, 0x01,
        0x0a, 0xe0, 0x00, 0x00, 0xfb, 0x16, 0x00, 0x09, 0x04, 0xe0, 0x00, 0x00, 0xfb,
    ];
    /// IPv4/UDP 10.0.0.1:1000 -> 10.0.0.2:2000 marked ECN CE (TOS 0x03).
    const UDP_ECN_CE: [u8; 28] = [
        0x45, 0x03, 0x00, 0x1c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x98, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x03, 0xe8, 0x07, 0xd0, 0x00, 0x08, 0x00, 0x00,
    ];
    /// IPv6 ICMPv6 echo request fe80::1 -> ff02::1 (no payload).
    const IPV6_PING: [u8; 48] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x08, 0x3a, 0x40, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x80, 0x00, 0x7f, 0xbd, 0x00,
        0x01, 0x00, 0x01,
    ];
    /// The TCP SYN above in an Ethernet frame.
    const ETH_TCP_SYN: [u8; 54] = [
        0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x00, 0x66, 0x77, 0x88, 0x99, 0xaa, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, 0x0a, 0x00, 0x00, 0x01,
        0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x50, 0x02, 0x72, 0x10, 0x8d, 0x3e, 0x00, 0x00,
    ];

    /// Whether `pattern` matches the IP packet `ip`.
    fn m(pattern: &str, ip: &[u8]) -> bool {
        let p = compile(&[pattern]).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        p.classify_ip(ip) == Some(0)
    }

    fn err(pattern: &str) -> PatternError {
        match compile(&[pattern]) {
            Ok(p) => panic!("{pattern} compiled:\n{p}"),
            Err(e) => e,
        }
    }

    /// Asserts which of the sample packets `pattern` matches.
    fn matches(pattern: &str) -> Vec<&'static str> {
        let all: [(&str, &[u8]); 11] = [
            ("syn", &TCP_SYN),
            ("finack", &TCP_FIN_ACK),
            ("dns", &UDP_DNS),
            ("echo", &ICMP_ECHO),
            ("reply", &ICMP_REPLY),
            ("frag1", &UDP_FIRST_FRAG),
            ("frag2", &UDP_LATER_FRAG),
            ("opts", &TCP_IP_OPTIONS),
            ("igmp", &IGMP_REPORT),
            ("ce", &UDP_ECN_CE),
            ("v6", &IPV6_PING),
        ];
        let p = compile(&[pattern]).unwrap_or_else(|e| panic!("{pattern}: {e}"));
        all.iter()
            .filter(|(_, b)| p.classify_ip(b) == Some(0))
            .map(|(n, _)| *n)
            .collect()
    }

    /// An IPv6 TCP SYN 2001:db8::1 port 40000 -> 2001:db8:1::2 port 22,
    /// hop limit 63, flow label 0x12345, traffic class 0xb8 (EF); with
    /// `hbh`, a hop-by-hop options header (PadN) in front of the TCP
    /// header.
    fn ipv6_tcp_syn(hbh: bool) -> Vec<u8> {
        let mut p = vec![0x6b, 0x81, 0x23, 0x45, 0, 20, 6, 63];
        p.extend_from_slice(
            &"2001:db8::1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        p.extend_from_slice(
            &"2001:db8:1::2"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        if hbh {
            p[6] = 0;
            p[5] = 28;
            p.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        }
        p.extend_from_slice(&[0x9c, 0x40, 0, 22, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02]);
        p.extend_from_slice(&[0x72, 0x10, 0, 0, 0, 0]);
        p
    }

    #[test]
    fn ipv6_patterns() {
        let syn = ipv6_tcp_syn(false);
        let hbh = ipv6_tcp_syn(true);
        let v4 = &TCP_SYN[..];
        let all = |pat: &str| -> [bool; 4] {
            let p = compile(&[pat]).unwrap_or_else(|e| panic!("{pat}: {e}"));
            [&syn[..], &hbh[..], &IPV6_PING[..], v4].map(|b| p.classify_ip(b) == Some(0))
        };
        assert_eq!(all("ip6"), [true, true, true, false]);
        assert_eq!(all("not ip6"), [false, false, false, true]);
        assert_eq!(all("ip6 src net 2001:db8::/32"), [true, true, false, false]);
        assert_eq!(
            all("ip6 dst net 2001:db8:1::/48"),
            [true, true, false, false]
        );
        assert_eq!(all("dst net 2001:db8:2::/48"), [false, false, false, false]);
        assert_eq!(all("src host 2001:db8::1"), [true, true, false, false]);
        assert_eq!(all("host ff02::1"), [false, false, true, false]);
        assert_eq!(all("src host != fe80::1"), [true, true, false, false]);
        assert_eq!(all("ip6 net ::/0"), [true, true, true, false]);
        // Host bits past the prefix length are ignored.
        assert_eq!(
            all("ip6 src net 2001:db8::ff/64"),
            [true, true, false, false]
        );
        assert_eq!(all("icmp6"), [false, false, true, false]);
        assert_eq!(all("icmp6 type echo"), [false, false, true, false]);
        assert_eq!(all("icmp6 type echo-reply"), [false, false, false, false]);
        assert_eq!(all("icmp6 type 128"), [false, false, true, false]);
        // Transport tests find the transport header behind the
        // extension headers; `ip6 nxt` reads the fixed header's field.
        assert_eq!(all("ip6 and tcp dst port 22"), [true, true, false, false]);
        assert_eq!(all("ip6 tcp opt syn"), [true, true, false, false]);
        assert_eq!(all("ip6 nxt 0"), [false, true, false, false]);
        assert_eq!(all("ip6 nxt tcp"), [true, false, false, false]);
        assert_eq!(all("nxt 6"), [true, false, false, false]);
        assert_eq!(all("ip6 proto tcp"), [true, true, false, false]);
        assert_eq!(all("ip6 proto 0"), [false, false, false, false]);
        assert_eq!(all("ip6 hlim < 64"), [true, true, false, false]);
        assert_eq!(all("hlim 64"), [false, false, true, false]);
        assert_eq!(all("ip6 ttl 63"), [true, true, false, false]);
        assert_eq!(all("ip6 flow 0x12345"), [true, true, false, false]);
        assert_eq!(all("ip6 dscp 46"), [true, true, false, false]);
        assert_eq!(all("ip6 plen 20"), [true, false, false, false]);
        assert_eq!(all("ip6 unfrag"), [true, true, true, false]);
        assert_eq!(all("ip6 frag"), [false, false, false, false]);
        // Transport tests without `ip` or `ip6` apply to both families;
        // with `ip` they are IPv4's, as in Click.
        assert_eq!(all("tcp dst port 80"), [false, false, false, true]);
        assert_eq!(all("tcp dst port 22"), [true, true, false, false]);
        assert_eq!(all("tcp"), [true, true, false, true]);
        assert_eq!(all("ip proto tcp"), [false, false, false, true]);
        assert_eq!(all("proto udp"), [false, false, false, false]);
        assert_eq!(all("icmp"), [false, false, false, false]);
        for bad in [
            "ip6 hl 5",
            "ip6 id 7",
            "host 2001:db8::/32",
            "ip6 net 10.0.0.0/8",
            "src net 2001:db8::/129",
            "ip6 src net 2001:db8::/32 & 0xff",
        ] {
            assert!(compile(&[bad]).is_err(), "{bad} compiled");
        }
    }

    /// An IPv6 UDP datagram 2001:db8::1 port 40000 -> 2001:db8:1::2 port
    /// 53 behind `ext` (extension headers, the first named by `first`, the
    /// last naming UDP, or a Fragment header at `offset` 8-byte units).
    fn ipv6_udp_behind(first: u8, ext: &[u8]) -> Vec<u8> {
        let mut p = ipv6_tcp_syn(false);
        p.truncate(40);
        p[6] = first;
        p.extend_from_slice(ext);
        p.extend_from_slice(&[0x9c, 0x40, 0, 53, 0, 12, 0, 0, 1, 2, 3, 4]);
        let plen = (p.len() - 40) as u16;
        p[4..6].copy_from_slice(&plen.to_be_bytes());
        p
    }

    #[test]
    fn ipv6_transport_behind_extension_headers() {
        // Hop-by-Hop, a Type 0 Routing header with no segments left,
        // Destination Options, a first fragment (offset 0, more to come).
        let mut ext = vec![43, 0, 1, 4, 0, 0, 0, 0];
        ext.extend([60, 2, 0, 0, 0, 0, 0, 0]);
        ext.extend(
            &"2001:db8:2::1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        ext.extend([44, 0, 1, 4, 0, 0, 0, 0]);
        ext.extend([17, 0, 0x00, 0x01, 0, 0, 0x12, 0x34]);
        let chain = ipv6_udp_behind(0, &ext);
        // The next fragment of the same datagram: offset 8 bytes.
        let later = ipv6_udp_behind(44, &[17, 0, 0x00, 0x08, 0, 0, 0x12, 0x34]);
        // A chain running past the payload.
        let mut broken = ipv6_udp_behind(60, &[17, 9, 0, 0, 0, 0, 0, 0]);
        broken.extend([0; 80]);
        // Destination Options naming themselves, seventeen times: past the
        // walk's bound of sixteen headers.
        let mut long = [60u8, 0, 1, 4, 0, 0, 0, 0].repeat(16);
        long.extend([17, 0, 1, 4, 0, 0, 0, 0]);
        let long = ipv6_udp_behind(60, &long);
        let all = |pat: &str| -> [bool; 4] {
            let p = compile(&[pat]).unwrap_or_else(|e| panic!("{pat}: {e}"));
            [&chain, &later, &broken, &long].map(|b| p.classify_ip(b) == Some(0))
        };
        assert_eq!(all("ip6 udp port 53"), [true, false, false, false]);
        assert_eq!(all("udp dst port 53"), [true, false, false, false]);
        assert_eq!(all("ip6 udp src port 40000"), [true, false, false, false]);
        assert_eq!(all("ip6 tcp port 53"), [false, false, false, false]);
        assert_eq!(all("not udp port 53"), [false, true, true, true]);
        assert_eq!(all("udp port != 53"), [false, false, false, false]);
        assert_eq!(all("ip6 udp"), [true, true, false, false]);
        assert_eq!(all("ip6 frag"), [true, true, false, false]);
        assert_eq!(all("ip6 unfrag"), [false, false, false, false]);
        assert_eq!(all("ip6 nxt 0"), [true, false, false, false]);
        assert_eq!(all("ip6 nxt 44"), [false, true, false, false]);
        assert_eq!(all("ip6"), [true, true, true, true]);
        // ICMPv6 behind a Hop-by-Hop header: an MLDv2 report (type 143)
        // with a Router Alert, as Linux sends it.
        let mut mld = ipv6_udp_behind(0, &[58, 0, 5, 2, 0, 0, 1, 0]);
        mld.truncate(48);
        mld.extend([143, 0, 0, 0, 0, 0, 0, 0]);
        mld[4..6].copy_from_slice(&16u16.to_be_bytes());
        let p = compile(&["icmp6 type 143"]).unwrap();
        assert_eq!(p.classify_ip(&mld), Some(0));
    }

    #[test]
    fn protocols() {
        assert_eq!(matches("tcp"), ["syn", "finack", "opts"]);
        assert_eq!(matches("ip proto tcp"), ["syn", "finack", "opts"]);
        assert_eq!(matches("proto 6"), ["syn", "finack", "opts"]);
        assert_eq!(matches("udp"), ["dns", "frag1", "frag2", "ce"]);
        assert_eq!(matches("ip proto udp"), matches("proto 17"));
        assert_eq!(matches("icmp"), ["echo", "reply"]);
        assert_eq!(matches("igmp"), ["igmp"]);
        assert_eq!(matches("ip proto 2"), ["igmp"]);
        assert_eq!(matches("ip proto tcpudp"), matches("tcp or udp"));
        assert_eq!(
            matches("proto != tcp"),
            ["dns", "echo", "reply", "frag1", "frag2", "igmp", "ce", "v6"]
        );
        assert_eq!(matches("ip proto < 6"), ["echo", "reply", "igmp"]);
        assert_eq!(matches("ip proto transp"), matches("not ip6"));
        assert_eq!(matches("ip6").len() + matches("not ip6").len(), 11);
    }

    #[test]
    fn hosts_and_nets() {
        assert_eq!(
            matches("src host 10.0.0.1"),
            ["syn", "echo", "frag1", "frag2", "opts", "ce"]
        );
        assert_eq!(matches("dst host 10.0.0.1"), ["finack", "reply"]);
        assert_eq!(matches("host 8.8.8.8"), ["dns"]);
        assert_eq!(matches("8.8.8.8"), ["dns"]);
        assert_eq!(matches("src or dst host 8.8.8.8"), ["dns"]);
        assert_eq!(matches("src and dst host 10.0.0.1"), Vec::<&str>::new());
        // An IPv4 test is false on IPv6 packets (Click's would read the
        // IPv6 packet's bytes 12-15, zero, as the source).
        assert_eq!(
            matches("src host != 10.0.0.1"),
            ["finack", "dns", "reply", "igmp"]
        );
        // `host != A` is `not host A`: neither address is A.
        assert_eq!(matches("host != 10.0.0.2"), ["dns", "igmp"]);
        assert_eq!(matches("src net 192.168.0.0/16"), ["dns", "igmp"]);
        assert_eq!(
            matches("src net 192.168.0.0 mask 255.255.0.0"),
            ["dns", "igmp"]
        );
        assert_eq!(matches("src net 192.168.0.0/255.255.0.0"), ["dns", "igmp"]);
        // Click's abbreviated prefixes.
        assert_eq!(matches("src net 192.168/16"), ["dns", "igmp"]);
        assert_eq!(matches("dst net 224/4"), ["igmp"]);
        assert_eq!(matches("dst net 0/0").len(), matches("not ip6").len());
        assert_eq!(matches("dst net 224.0.0.0/4"), ["igmp"]);
        assert_eq!(matches("224.0.0.0/4"), ["igmp"]);
        assert_eq!(matches("net 8.8.8.8"), ["dns"]);
        assert_eq!(matches("dst host & 255.255.0.0 8.8.0.0"), ["dns"]);
        assert_eq!(
            matches("src net 10.0.0.0/8 and not dst net 10.0.0.0/8"),
            Vec::<&str>::new()
        );
    }

    #[test]
    fn ports() {
        assert_eq!(matches("dst port 80"), ["syn"]);
        assert_eq!(matches("port 80"), ["syn", "finack"]);
        assert_eq!(matches("src port 80"), ["finack"]);
        assert_eq!(matches("tcp dst port 80"), ["syn"]);
        assert_eq!(matches("dst tcp port 80"), ["syn"]);
        assert_eq!(matches("udp port 80"), Vec::<&str>::new());
        assert_eq!(matches("port http"), ["syn", "finack"]);
        assert_eq!(matches("www"), ["syn", "finack"]);
        assert_eq!(matches("dst port domain"), ["dns", "frag1"]);
        assert_eq!(matches("udp dst port dns"), ["dns", "frag1"]);
        assert_eq!(matches("dst port ssh"), ["opts"]);
        assert_eq!(matches("sctp port 80"), Vec::<&str>::new());
        // Relations: `>`, `>=`, `==` hold for either port, `<`, `<=`, `!=`
        // for both.
        assert_eq!(
            matches("port > 1023"),
            ["syn", "finack", "dns", "frag1", "opts", "ce"]
        );
        assert_eq!(matches("dst port > 1023"), ["finack", "ce"]);
        assert_eq!(matches("dst port >= 2000"), ["finack", "ce"]);
        assert_eq!(matches("dst port < 1024"), ["syn", "dns", "frag1", "opts"]);
        assert_eq!(matches("dst port <= 53"), ["dns", "frag1", "opts"]);
        assert_eq!(matches("port < 1024"), Vec::<&str>::new());
        assert_eq!(matches("port != 80"), ["dns", "frag1", "opts", "ce"]);
        assert_eq!(matches("dst port 1024-65535"), ["finack", "ce"]);
        assert_eq!(matches("dst port 20-60"), ["dns", "frag1", "opts"]);
        assert_eq!(matches("dst port != 20-60"), ["syn", "finack", "ce"]);
        assert_eq!(matches("src port & 0xff00 == 0x0300"), ["ce"]);
        assert_eq!(matches("port > 65535"), Vec::<&str>::new());
        assert_eq!(matches("tcp port < 65536"), ["syn", "finack", "opts"]);
    }

    #[test]
    fn ports_on_fragments() {
        // The later fragment's payload starts with what looks like ports
        // 53 -> 53, but only first fragments have a transport header.
        assert!(!m("udp port 53", &UDP_LATER_FRAG));
        assert!(!m("src port 53", &UDP_LATER_FRAG));
        assert!(!m("transp[0:2] = 53", &UDP_LATER_FRAG));
        assert!(m("udp", &UDP_LATER_FRAG));
        assert!(m("not udp port 53", &UDP_LATER_FRAG));
        assert!(!m("udp port != 53", &UDP_LATER_FRAG));
        assert!(m("udp dst port 53", &UDP_FIRST_FRAG));
        assert!(m("ip frag", &UDP_FIRST_FRAG));
        assert!(m("ip frag", &UDP_LATER_FRAG));
        assert!(!m("ip unfrag", &UDP_LATER_FRAG));
        // (Bytes 6-7 of the IPv6 header, read as IPv4, would say
        // "fragment" in Click.)
        assert_eq!(matches("frag"), ["frag1", "frag2"]);
        assert_eq!(
            matches("unfrag"),
            ["syn", "finack", "dns", "echo", "reply", "opts", "igmp", "ce"]
        );
    }

    #[test]
    fn tcp_flags_and_window() {
        assert_eq!(matches("tcp opt syn"), ["syn"]);
        assert_eq!(matches("tcp syn"), ["syn"]);
        assert_eq!(matches("syn"), ["syn"]);
        assert_eq!(matches("ack"), ["finack", "opts"]);
        assert_eq!(matches("fin ack"), ["finack"]);
        assert_eq!(matches("tcp opt psh"), ["opts"]);
        assert_eq!(matches("tcp opt rst"), Vec::<&str>::new());
        assert_eq!(matches("syn and not ack"), ["syn"]);
        assert_eq!(matches("tcp win 0"), ["finack"]);
        assert_eq!(matches("tcp win > 1000"), ["syn", "opts"]);
        assert_eq!(matches("tcp[13] & 0x12 == 0x02"), ["syn"]);
    }

    #[test]
    fn icmp_types() {
        assert_eq!(matches("icmp type echo"), ["echo"]);
        assert_eq!(matches("icmp type 8"), ["echo"]);
        assert_eq!(matches("icmp type echo-reply"), ["reply"]);
        assert_eq!(matches("type echo-reply"), ["reply"]);
        assert_eq!(matches("echo-reply"), ["reply"]);
        assert_eq!(matches("icmp type != echo"), ["reply"]);
        assert_eq!(matches("icmp type unreachable"), Vec::<&str>::new());
        assert_eq!(matches("icmp type < 3"), ["reply"]);
    }

    #[test]
    fn ip_fields() {
        assert_eq!(matches("ip vers 6"), ["v6"]);
        assert_eq!(matches("ip vers 4").len(), 10);
        assert_eq!(matches("ip hl 6"), ["opts"]);
        assert_eq!(matches("ip hl > 5"), ["opts"]);
        assert_eq!(matches("ip tos 0xb8"), ["finack"]);
        assert_eq!(matches("ip dscp 46"), ["finack"]);
        assert_eq!(matches("ip dscp 48"), ["igmp"]);
        assert_eq!(matches("ip ttl 1"), ["igmp"]);
        assert_eq!(matches("ip ttl < 2"), ["igmp"]);
        assert_eq!(matches("ip ttl != 64"), ["igmp"]);
        assert_eq!(matches("ip len 57"), ["dns"]);
        assert_eq!(matches("ip len >= 44"), ["dns", "frag1", "opts"]);
        assert_eq!(matches("ip id 0x4242"), ["frag1", "frag2"]);
        assert_eq!(matches("ip ce"), ["ce"]);
        assert_eq!(matches("ip ect"), ["ce"]);
        assert_eq!(matches("ip ect 3"), ["ce"]);
        assert_eq!(matches("ip[9] = 1"), ["echo", "reply"]);
        assert_eq!(matches("ip[12:4] = 0xc0a8010a"), ["dns", "igmp"]);
        assert_eq!(matches("ip[1] & 0xfc = 0xb8"), ["finack"]);
        assert_eq!(matches("ip[16:4] = 8.8.8.8"), ["dns"]);
        assert_eq!(matches("ip[16:4] & 255.0.0.0 = 224.0.0.0"), ["igmp"]);
        assert_eq!(
            err("ip[16:2] = 8.8.8.8").message,
            "`ip[...]` needs a number"
        );
        assert_eq!(matches("ip[16:2] == 0xe000"), ["igmp"]);
        assert_eq!(matches("transp[0:2] = 40000"), ["syn"]);
        assert_eq!(matches("udp[2:2] = 2000"), ["ce"]);
        assert_eq!(matches("icmp[0] = 0"), ["reply"]);
    }

    #[test]
    fn constants() {
        assert_eq!(matches("true").len(), 11);
        assert_eq!(matches("-").len(), 11);
        assert_eq!(matches("any").len(), 11);
        assert_eq!(matches("all").len(), 11);
        assert_eq!(matches(""), matches("true"));
        assert!(matches("false").is_empty());
        assert!(matches("not true").is_empty());
        assert_eq!(matches("tcp and true"), matches("tcp"));
    }

    #[test]
    fn precedence() {
        // `and` binds tighter than `or`.
        assert_eq!(
            matches("icmp or udp and dst port 53"),
            ["dns", "echo", "reply", "frag1"]
        );
        assert_eq!(matches("(icmp or udp) and dst port 53"), ["dns", "frag1"]);
        assert_eq!(
            matches("icmp || udp && dst port 53"),
            matches("icmp or udp and dst port 53")
        );
        // `not` binds tightest.
        assert_eq!(
            matches("not tcp and not udp"),
            ["echo", "reply", "igmp", "v6"]
        );
        assert_eq!(matches("!(tcp or udp)"), matches("not tcp and not udp"));
        assert_eq!(matches("not not tcp"), matches("tcp"));
        assert_eq!(
            matches("! tcp or icmp"),
            ["dns", "echo", "reply", "frag1", "frag2", "igmp", "ce", "v6"]
        );
        // Juxtaposition is `and`.
        assert_eq!(matches("tcp dst port 80 src host 10.0.0.1"), ["syn"]);
        assert_eq!(
            matches("udp dst port 53 or icmp"),
            ["dns", "echo", "reply", "frag1"]
        );
        // Ternary.
        assert_eq!(
            matches("tcp ? dst port 80 : icmp"),
            ["syn", "echo", "reply"]
        );
        assert_eq!(
            matches("tcp ? dst port 80 : udp ? dst port 53 : false"),
            ["syn", "dns", "frag1"]
        );
    }

    #[test]
    fn sticky_qualifiers() {
        assert_eq!(
            matches("src host 10.0.0.2 or 192.168.1.10"),
            ["finack", "dns", "reply", "igmp"]
        );
        assert_eq!(
            matches("src host 10.0.0.2 or 192.168.1.10"),
            matches("src host 10.0.0.2 or src host 192.168.1.10")
        );
        assert_eq!(matches("dst port 80 or 22"), ["syn", "opts"]);
        assert_eq!(matches("src port 80 or 1000"), ["finack", "ce"]);
        assert_eq!(matches("udp port 80 or 53"), ["dns", "frag1"]);
        assert_eq!(matches("dst tcp port 8000 or 80"), ["syn"]);
        assert_eq!(matches("ip ttl 1 or 255"), ["igmp"]);
        assert_eq!(matches("proto 1 or 2"), ["echo", "reply", "igmp"]);
        // `not 22` is `not dst port 22`: everything but the SSH packet.
        assert_eq!(matches("dst port 80 or not 22").len(), 10);
        assert!(!matches("dst port 80 or not 22").contains(&"opts"));
        // A new qualifier starts afresh: `dst` alone is not `dst port`.
        assert!(err("dst port 80 or dst 22").message.contains("bare number"));
    }

    #[test]
    fn short_packets() {
        let hdr = &TCP_SYN[..20];
        assert!(m("tcp", hdr));
        assert!(!m("dst port 80", hdr));
        assert!(m("not dst port 80", hdr));
        assert!(!m("dst port != 80", hdr));
        let tiny = &TCP_SYN[..8];
        assert!(!m("ip ttl 64", tiny));
        assert!(
            !m("ip ttl != 5", tiny),
            "a relation on a missing field is false"
        );
        assert!(m("not ip ttl 5", tiny), "not of it is true");
        assert!(m("ip vers 4", tiny));
        assert!(!m("ip vers 4", &[]));
        assert!(m("true", &[]));
        assert_eq!(compile(&["tcp", "-"]).unwrap().classify_ip(&[]), Some(1));
    }

    #[test]
    fn ip_options_move_the_transport_header() {
        assert!(m("dst port 22", &TCP_IP_OPTIONS));
        assert!(m("src port 1234", &TCP_IP_OPTIONS));
        assert!(m("tcp opt psh", &TCP_IP_OPTIONS));
        assert!(m("ip[20] = 0x94", &TCP_IP_OPTIONS));
    }

    #[test]
    fn parse_errors() {
        let e = err("tcp port");
        assert_eq!(e.message, "`port` needs a port number, name or range, like `port 80`, `port http` or `port 1024-65535`");
        assert_eq!(e.at, 0..8);
        let e = err("port foo");
        assert_eq!(
            e.message,
            "expected a port number, name or range after `port`, found `foo`"
        );
        assert_eq!(e.at, 5..8);
        let e = err("tcp or udp ]");
        assert_eq!(e.message, "expected a primitive, found `]`");
        let e = err("echo");
        assert_eq!(
            e.message,
            "`echo` is ambiguous; try `port echo` or `icmp type echo`"
        );
        assert_eq!(
            err("icmp type http").message,
            "`http` is not a value for `icmp type`; try `port http`"
        );
        let e = err("ip ttl >");
        assert_eq!(
            e.message,
            "expected a value after `>`, found the end of the pattern"
        );
        assert_eq!(e.at, 8..8);
        let e = err("ip ttl > x");
        assert_eq!(e.message, "expected a value after `>`, found `x`");
        let e = err("(tcp or udp");
        assert_eq!(e.message, "expected `)`, found the end of the pattern");
        assert_eq!(err("tcp)").message, "unexpected `)` after the expression");
        assert_eq!(
            err("80").message,
            "a bare number needs a field before it, like `port 80` or `ip ttl 64`"
        );
        assert!(err("icmp port 80").message.contains("not `icmp`"));
        assert_eq!(
            err("udp type 3").message,
            "`icmp` after `udp`: a primitive has one transport protocol"
        );
        assert!(err("host 10.0.0.0/8").message.contains("net ADDR/LEN"));
        assert_eq!(
            err("ip hl 16").message,
            "value 16 is out of range for `ip hl` (0-15)"
        );
        assert!(err("ip[0:5] = 1").message.contains("1 to 4 bytes"));
        assert!(err("ip[x] = 1").message.contains("[POS:LEN]"));
        assert!(err("tcp opt > syn").message.contains("no relation"));
        assert!(err("ether host 10.0.0.1")
            .message
            .contains("Ethernet address"));
        assert!(err("ip host 00:11:22:33:44:55")
            .message
            .contains("IP address"));
        let e = err("tcp and");
        assert_eq!(
            e.message,
            "expected a primitive after `and`, found the end of the pattern"
        );
        assert!(e.help.is_some());
        assert_eq!(
            err("not").message,
            "expected a primitive after `not`, found the end of the pattern"
        );
        assert_eq!(
            err("()").message,
            "expected an expression after `(`, found `)`"
        );
        assert_eq!(err("port 2000-1000").message, "range 2000-1000 is empty");
        assert_eq!(
            err("src").message,
            "incomplete primitive: expected a type like `host`, `port` or `proto` and a value"
        );
        assert_eq!(
            err("tcp ? syn").message,
            "expected `:` of the `?` at byte 4, found the end of the pattern"
        );
        assert!(err("host > 10.0.0.1").message.contains("not `<` or `>`"));
        assert_eq!(
            err("src src host 1.2.3.4").message,
            "`src` or `dst` given twice"
        );
        assert_eq!(
            err("ip ttl & 0 = 1").message,
            "a mask of zero compares nothing"
        );
        assert!(err("ip ttl & 0x100 = 1")
            .message
            .contains("mask 0x100 is out of range"));
        assert_eq!(
            err("host ttl").message,
            "`ttl` after `host`: a primitive has one type"
        );
        assert_eq!(
            err("host and tcp").message,
            "`host` needs an IP address, like `host 10.0.0.1`"
        );
        assert_eq!(
            err("src host 1.2.3").message,
            "expected an IP address after `host`, found `1.2.3`"
        );
        let e = err("tcp and ]");
        assert_eq!(e.message, "expected a primitive, found `]`");
        assert_eq!(e.at, 8..9);
        let deep = "(".repeat(100) + "tcp" + &")".repeat(100);
        assert!(err(&deep).message.contains("nested too deeply"));
        let ok = "(".repeat(30) + "tcp" + &")".repeat(30);
        assert!(m(&ok, &TCP_SYN));
        assert_eq!(compile(&["tcp", "udp port"]).unwrap_err().pattern, 1);
    }

    #[test]
    fn element_uses_the_network_header_annotation() {
        let mut h = Harness::push(&CLASS, "tcp dst port 80, icmp type echo, -", 1, 3);
        let mut eth = Packet::from_slice(&ETH_TCP_SYN).unwrap();
        eth.set_network_header(14);
        // Without the annotation the Ethernet header would be read as IP.
        let plain = Packet::from_slice(&ETH_TCP_SYN).unwrap();
        h.push_packets(
            0,
            [
                eth,
                plain,
                Packet::from_slice(&ICMP_ECHO).unwrap(),
                Packet::from_slice(&TCP_SYN).unwrap(),
            ],
        );
        assert_eq!(
            h.take_bytes(0),
            vec![ETH_TCP_SYN.to_vec(), TCP_SYN.to_vec()]
        );
        assert_eq!(h.take_bytes(1), vec![ICMP_ECHO.to_vec()]);
        assert_eq!(h.take_bytes(2), vec![ETH_TCP_SYN.to_vec()]);
        assert_eq!(h.stats().get("drops"), Some(0));
    }

    #[test]
    fn element_counts_drops() {
        let mut h = Harness::push(&CLASS, "tcp, udp", 1, 2);
        for b in [&ICMP_ECHO[..], &TCP_SYN, &UDP_DNS, &IGMP_REPORT] {
            h.push_bytes(0, b);
        }
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(2));
    }

    #[test]
    fn outputs_must_match_patterns() {
        let ports = |n| PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; n],
        };
        let e = make_element(&CLASS, "tcp, udp, -", &ports(2))
            .err()
            .unwrap();
        assert_eq!(
            e,
            "IPClassifier has 3 patterns but 2 outputs: pattern 2 has no output"
        );
        let e = make_element(&CLASS, "tcp", &ports(2)).err().unwrap();
        assert_eq!(e, "IPClassifier has 1 pattern but 2 outputs");
        assert!(
            make_element(&CLASS, "\"tcp port 80\", -", &ports(2)).is_ok(),
            "quoted pattern"
        );
    }

    #[test]
    fn errors_point_at_the_token() {
        let parsed = bricks_runtime::testing::parse_args("tcp, udp dst port bogus").unwrap();
        let mut a = Args::new(&parsed, None);
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        };
        let e = make(&mut a, &ports).err().unwrap();
        let span = e.span.unwrap();
        let arg = parsed[1].span;
        assert_eq!(
            &"udp dst port bogus"[span.start - arg.start..span.end - arg.start],
            "bogus"
        );
        assert_eq!(
            e.message,
            "pattern 1: expected a port number, name or range after `port`, found `bogus`"
        );
    }

    #[test]
    fn manual_example_builds() {
        let ex = MANUAL.example;
        let start = ex.find("IPClassifier(").unwrap() + "IPClassifier(".len();
        let end = ex[start..].find(')').unwrap() + start;
        let mut h = Harness::push(&CLASS, &ex[start..end], 1, 3);
        h.push_bytes(0, &TCP_SYN);
        assert_eq!(h.take(0).len(), 1);
    }

    /// The backquoted items of the manual's "Examples:" paragraph.
    fn manual_examples(description: &str) -> Vec<String> {
        let ex = &description[description.find("Examples:").unwrap()..];
        ex.split('`')
            .skip(1)
            .step_by(2)
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    }

    #[test]
    fn manual_pattern_examples_compile() {
        let examples = manual_examples(MANUAL.description);
        assert!(examples.len() >= 10, "{examples:?}");
        for pat in &examples {
            compile(&[pat]).unwrap_or_else(|e| panic!("{pat}: {e}"));
        }
        assert_eq!(
            matches("tcp ? dst port 80 : udp"),
            ["syn", "dns", "frag1", "frag2", "ce"]
        );
    }

    #[test]
    fn shared_tests_are_made_once() {
        let p = compile(&[
            "tcp dst port 80",
            "tcp dst port 443",
            "udp dst port 53",
            "-",
        ])
        .unwrap();
        // A UDP packet: IPv6? no (asked once for all three patterns);
        // tcp? no; (second tcp skipped); udp? yes; first fragment? yes;
        // port 53? yes.
        assert_eq!(
            p.run_counting(&super::super::program::IpHeaders::new(&UDP_DNS)),
            (Some(2), 5),
            "{p}"
        );
    }
}
