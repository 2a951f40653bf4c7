//! The tcpdump-like pattern language of Click's IPFilter and IPClassifier
//! (`elements/ip/ipfilter.cc`), compiled to [`Expr`]essions over IP and
//! transport header fields.
//!
//! ```text
//! expr   ::= orexpr | orexpr ? expr : orexpr ...
//! orexpr ::= term (or|'||' term)*
//! term   ::= factor ((and|'&&')? factor)*      adjacent factors are and-ed
//! factor ::= (not|'!') factor | ( expr ) | test
//! test   ::= true | false | QUALIFIERS [[POS:LEN]] [& MASK] [RELOP] [VALUE]
//! ```
//!
//! A test's qualifiers are `src`, `dst`, `src and dst`, `src or dst`, `ip`,
//! a protocol (`tcp`, `udp`, ...) and a type (`host`, `net`, `port`,
//! `proto`, `opt`, `frag`, `unfrag`, `vers`, `hl`, `tos`, `dscp`, `ect`,
//! `ce`, `ttl`, `len`, `id`, `win`, `type`). A value alone takes its type
//! from its form (an address is a host, a prefix a net, `www` a port, `syn`
//! a TCP flag), and a test without qualifiers inherits those of the test
//! before it, so `src port 80 or 81` means `src port 80 or src port 81`.
//!
//! Semantics follow Click: tests on transport fields (ports, TCP flags,
//! ICMP type, `transp[...]`) also require the protocol and a first fragment
//! (fragment offset 0); a field the packet is too short for makes its test
//! false, and a relation like `!=` stays false there while `not` does not.
//!
//! Ethernet addresses (Click's `ether host`): `src 0:1:2:3:4:5`, `dst
//! ADDR`, `host ADDR`, `ether src ADDR`, with `!=` and an Ethernet mask,
//! read the Ethernet header in front of the IP header ([`Base::Link`];
//! `super::ip_headers` says where it is and when a packet has none).
//!
//! IPv6 (bricks' extension; Click's IPFilter is IPv4 only): the qualifier
//! `ip6`, the protocol `icmp6`, or an IPv6 address or prefix as the value
//! makes a test about an IPv6 header, and such a test also requires IP
//! version 6: `ip6`, `ip6 src net 2001:db8::/32`, `dst host fe80::1`,
//! `icmp6 type echo`, `ip6 hlim < 2`, `ip6 nxt tcp`, `ip6 flow 7`,
//! `ip6 and tcp dst port 22`. `hlim`, `nxt`, `plen`, `flow` name the IPv6
//! fields; `ttl`, `len`, `tos`, `dscp`, `ect` and `ce` read their IPv6
//! counterparts in an `ip6` test. A protocol (`ip6 proto tcp`, `ip6 tcp`)
//! and the transport tests on IPv6 are about the upper-layer header found
//! by walking the extension header chain (Hop-by-Hop, Routing, Destination
//! Options, Fragment, AH; at most eight, RFC 8200 section 4), while `ip6
//! nxt` reads the fixed header's Next Header field. A fragment other than
//! the first has no transport header, so its transport tests are false, as
//! are all of them, and the protocol, on a chain that runs past the
//! payload or is longer than sixteen headers. Transport tests
//! without `ip` or `ip6` (`tcp`, `port 22`) are about either family. An
//! IPv4 test is false on an IPv6 packet (Click's IPFilter would read the
//! IPv6 header's bytes as if they were IPv4's); on every other packet it
//! is Click's.

use super::click_program::{IpExpr, IpKind, IpPrim, IpSides};
use super::program::{Base, Expr, Op, Test};
use super::PatternError;
use std::net::Ipv4Addr;
use std::ops::Range;

/// IP protocol numbers and Click's two pseudo-protocols.
const ICMP: u16 = 1;
const TCP: u16 = 6;
const UDP: u16 = 17;
const DCCP: u16 = 33;
const SCTP: u16 = 132;
/// ICMPv6 (RFC 4443).
const ICMP6: u16 = 58;
/// TCP or UDP (Click's `tcpudp`).
const TCP_OR_UDP: u16 = 256;
/// Any transport protocol (Click's `transp`).
const TRANSP: u16 = 257;

const PROTOCOLS: &[(&str, u16)] = &[
    ("icmp", ICMP),
    ("icmp6", ICMP6),
    ("igmp", 2),
    ("ipip", 4),
    ("tcp", TCP),
    ("udp", UDP),
    ("dccp", DCCP),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("ospf", 89),
    ("sctp", SCTP),
    ("tcpudp", TCP_OR_UDP),
    ("transp", TRANSP),
];

/// Click's well-known port names (the same for TCP and UDP), plus `http`
/// and `imap`.
pub(crate) const PORTS: &[(&str, u16)] = &[
    ("auth", 113),
    ("bootpc", 68),
    ("bootps", 67),
    ("chargen", 19),
    ("daytime", 13),
    ("discard", 9),
    ("dns", 53),
    ("domain", 53),
    ("echo", 7),
    ("finger", 79),
    ("ftp", 21),
    ("ftp-data", 20),
    ("http", 80),
    ("https", 443),
    ("imap", 143),
    ("imap3", 220),
    ("imaps", 993),
    ("irc", 194),
    ("netbios-dgm", 138),
    ("netbios-ns", 137),
    ("netbios-ssn", 139),
    ("nntp", 119),
    ("ntp", 123),
    ("pop3", 110),
    ("pop3s", 995),
    ("rip", 520),
    ("route", 520),
    ("smtp", 25),
    ("snmp", 161),
    ("snmp-trap", 162),
    ("ssh", 22),
    ("sunrpc", 111),
    ("telnet", 23),
    ("tftp", 69),
    ("www", 80),
];

/// TCP flag names, for `tcp opt` (RFC 9293 §3.1, RFC 3168 §6.1).
const TCP_FLAGS: &[(&str, u16)] = &[
    ("fin", 0x01),
    ("syn", 0x02),
    ("rst", 0x04),
    ("psh", 0x08),
    ("ack", 0x10),
    ("urg", 0x20),
    ("ece", 0x40),
    ("cwr", 0x80),
];

/// ICMP type names (RFC 792, RFC 950, RFC 1256).
const ICMP_TYPES: &[(&str, u16)] = &[
    ("echo-reply", 0),
    ("unreachable", 3),
    ("sourcequench", 4),
    ("redirect", 5),
    ("echo", 8),
    ("routeradvert", 9),
    ("routersolicit", 10),
    ("timeexceeded", 11),
    ("parameterproblem", 12),
    ("timestamp", 13),
    ("timestamp-reply", 14),
    ("inforeq", 15),
    ("inforeq-reply", 16),
    ("maskreq", 17),
    ("maskreq-reply", 18),
];

/// ICMPv6 type names (RFC 4443, RFC 4861).
const ICMP6_TYPES: &[(&str, u16)] = &[
    ("unreachable", 1),
    ("toobig", 2),
    ("packettoobig", 2),
    ("timeexceeded", 3),
    ("parameterproblem", 4),
    ("echo", 128),
    ("echo-reply", 129),
    ("routersolicit", 133),
    ("routeradvert", 134),
    ("neighborsolicit", 135),
    ("neighboradvert", 136),
    ("redirect", 137),
];

fn find(table: &[(&str, u16)], w: &str) -> Option<u16> {
    table.iter().find(|(n, _)| *n == w).map(|&(_, v)| v)
}

fn name_of(table: &[(&'static str, u16)], v: u16) -> Option<&'static str> {
    table.iter().find(|&&(_, x)| x == v).map(|&(n, _)| n)
}

/// A header field: `bits` bits starting `bit` bits into the IP header or
/// the transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Field {
    base: Base,
    bit: usize,
    bits: u32,
    /// The transport protocol a transport field belongs to, if named.
    proto: Option<u16>,
    name: &'static str,
}

const fn ip_field(name: &'static str, bit: usize, bits: u32) -> Field {
    Field {
        base: Base::Network,
        bit,
        bits,
        proto: None,
        name,
    }
}

const VERS: Field = ip_field("ip vers", 0, 4);
const HL: Field = ip_field("ip hl", 4, 4);
const TOS: Field = ip_field("ip tos", 8, 8);
const DSCP: Field = ip_field("ip dscp", 8, 6);
const LEN: Field = ip_field("ip len", 16, 16);
const ID: Field = ip_field("ip id", 32, 16);
const TTL: Field = ip_field("ip ttl", 64, 8);
const PROTO_FIELD: Field = ip_field("ip proto", 72, 8);
const FRAG_FIELD: Field = ip_field("ip frag", 48, 16);
const SRC_ADDR: Field = ip_field("src host", 96, 32);
const DST_ADDR: Field = ip_field("dst host", 128, 32);
const VERS6: Field = ip_field("ip6 vers", 0, 4);
const TC6: Field = ip_field("ip6 tos", 4, 8);
const DSCP6: Field = ip_field("ip6 dscp", 4, 6);
const FLOW6: Field = ip_field("ip6 flow", 12, 20);
const PLEN6: Field = ip_field("ip6 plen", 32, 16);
const NXT6: Field = ip_field("ip6 nxt", 48, 8);
const HLIM6: Field = ip_field("ip6 hlim", 56, 8);
/// The upper-layer protocol behind the IPv6 extension headers.
const UPPER6: Field = Field {
    base: Base::Upper,
    bit: 0,
    bits: 8,
    proto: None,
    name: "ip6 proto",
};
/// The flags the walk of the IPv6 extension headers found.
const FRAG6: Field = Field {
    base: Base::Upper,
    bit: 8,
    bits: 8,
    proto: None,
    name: "ip6 frag",
};
const WIN: Field = Field {
    base: Base::Transport,
    bit: 112,
    bits: 16,
    proto: Some(TCP),
    name: "tcp win",
};
const ICMP_TYPE: Field = Field {
    base: Base::Transport,
    bit: 0,
    bits: 8,
    proto: Some(ICMP),
    name: "icmp type",
};
const ICMP6_TYPE: Field = Field {
    base: Base::Transport,
    bit: 0,
    bits: 8,
    proto: Some(ICMP6),
    name: "icmp6 type",
};
const SRC_PORT: Field = Field {
    base: Base::Transport,
    bit: 0,
    bits: 16,
    proto: None,
    name: "src port",
};
const DST_PORT: Field = Field {
    base: Base::Transport,
    bit: 16,
    bits: 16,
    proto: None,
    name: "dst port",
};
const TCP_FLAGS_FIELD: Field = Field {
    base: Base::Transport,
    bit: 104,
    bits: 8,
    proto: Some(TCP),
    name: "tcp opt",
};

/// What a test is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    None,
    Host,
    Net,
    Proto,
    Port,
    TcpOpt,
    Frag,
    Unfrag,
    Ect,
    Ce,
    Field(Field),
    /// An Ethernet address in the Ethernet header (Click's `ether host`).
    Ether,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::None => "primitive",
            Kind::Host => "host",
            Kind::Net => "net",
            Kind::Proto => "proto",
            Kind::Port => "port",
            Kind::TcpOpt => "tcp opt",
            Kind::Frag => "ip frag",
            Kind::Unfrag => "ip unfrag",
            Kind::Ect => "ip ect",
            Kind::Ce => "ip ce",
            Kind::Field(f) => f.name,
            Kind::Ether => "ether host",
        }
    }
}

/// The type words of Click's IPFilter.
fn type_word(w: &str) -> Option<Kind> {
    Some(match w {
        "host" => Kind::Host,
        "net" => Kind::Net,
        "proto" => Kind::Proto,
        "port" => Kind::Port,
        "opt" => Kind::TcpOpt,
        "frag" => Kind::Frag,
        "unfrag" => Kind::Unfrag,
        "ect" => Kind::Ect,
        "ce" => Kind::Ce,
        "vers" => Kind::Field(VERS),
        "hl" => Kind::Field(HL),
        "tos" => Kind::Field(TOS),
        "dscp" => Kind::Field(DSCP),
        "len" => Kind::Field(LEN),
        "id" => Kind::Field(ID),
        "ttl" => Kind::Field(TTL),
        "win" => Kind::Field(WIN),
        "type" => Kind::Field(ICMP_TYPE),
        "hlim" => Kind::Field(HLIM6),
        "nxt" => Kind::Field(NXT6),
        "plen" => Kind::Field(PLEN6),
        "flow" => Kind::Field(FLOW6),
        _ => return None,
    })
}

/// The value of a test as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Data {
    None,
    Int(u32),
    Range(u32, u32),
    Host(u32),
    Net(u32, u32),
    Proto(u16),
    Port(u16),
    TcpOpt(u16),
    IcmpType(u16),
    /// An IPv6 address.
    Host6(u128),
    /// An IPv6 prefix: address and length.
    Net6(u128, u8),
    /// An Ethernet address.
    Ether([u8; 6]),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SrcDst {
    None,
    Src,
    Dst,
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rel {
    Eq,
    Gt,
    Lt,
}

/// A test being parsed, and once resolved, the qualifiers the next test
/// may inherit.
#[derive(Debug, Clone, Copy)]
struct Prim {
    kind: Kind,
    data: Data,
    srcdst: SrcDst,
    proto: Option<u16>,
    rel: Rel,
    /// `!=`, `>=`-style relations (Click's `_op_negated`).
    negated: bool,
    /// A test about an IPv6 header.
    v6: bool,
}

impl Default for Prim {
    fn default() -> Prim {
        Prim {
            kind: Kind::None,
            data: Data::None,
            srcdst: SrcDst::None,
            proto: None,
            rel: Rel::Eq,
            negated: false,
            v6: false,
        }
    }
}

/// A mask given with `& MASK`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mask {
    None,
    Int(u32),
    Addr(u32),
    Ether([u8; 6]),
}

/// A comparison of a field, after Click's `set_mask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Const(bool),
    Eq(u32, u32),
    Gt(u32, u32),
    In(u32, u32, u32),
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

/// Splits a pattern into words the way Click's `separate_text` does.
fn tokenize(s: &str) -> Vec<Token<'_>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || b"-./@_:".contains(&c);
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let next = b.get(i + 1).copied();
        i += match b[i] {
            c @ (b'&' | b'|') if next == Some(c) => 2,
            b'<' | b'>' | b'!' | b'=' if next == Some(b'=') => 2,
            c if word(c) => b[i..].iter().take_while(|&&c| word(c)).count(),
            // Punctuation, or any other character, alone.
            _ => s[i..].chars().next().map_or(1, char::len_utf8),
        };
        out.push(Token {
            text: &s[start..i],
            start,
            end: i,
        });
    }
    out
}

/// An integer as Click's `IntArg` reads it: decimal or `0x` hex.
fn parse_int(w: &str) -> Option<u32> {
    if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        return u32::from_str_radix(h, 16).ok();
    }
    if !w.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    w.parse().ok()
}

/// `LO-HI`, a range of values.
fn parse_range(w: &str) -> Option<(u32, u32)> {
    let (lo, hi) = w.split_once('-')?;
    Some((parse_int(lo)?, parse_int(hi)?))
}

fn parse_ether(w: &str) -> Option<[u8; 6]> {
    w.parse::<bricks_wire::ethernet::EthernetAddress>()
        .ok()
        .map(|a| a.0)
}

fn parse_addr(w: &str) -> Option<u32> {
    w.parse::<Ipv4Addr>().ok().map(u32::from)
}

/// An IPv6 address, or a prefix `ADDR/LEN` (host bits are ignored).
fn parse_v6(w: &str) -> Option<Data> {
    if !w.contains(':') {
        return None;
    }
    if let Some((a, l)) = w.split_once('/') {
        let a = a.parse::<std::net::Ipv6Addr>().ok()?;
        let l: u8 = l.parse().ok().filter(|&l| l <= 128)?;
        return Some(Data::Net6(u128::from(a), l));
    }
    w.parse::<std::net::Ipv6Addr>()
        .ok()
        .map(|a| Data::Host6(u128::from(a)))
}

/// `ADDR/LEN` or `ADDR/MASK`.
fn parse_prefix(w: &str) -> Option<(u32, u32)> {
    let (a, m) = w.split_once('/')?;
    // Click abbreviates the address of a prefix (`net 10/8`, `18.26/16`,
    // `0/0`) when the length covers no more bytes than are written.
    if let Ok(c) = w.parse::<bricks_wire::ipv4::Ipv4Cidr>() {
        let mask = u32::from(c.netmask());
        return Some((u32::from(c.address()), mask));
    }
    let a = parse_addr(a)?;
    let mask = match parse_addr(m) {
        Some(m) => m,
        None => match parse_int(m)? {
            0 => 0,
            n @ 1..=32 => u32::MAX << (32 - n),
            _ => return None,
        },
    };
    Some((a, mask))
}

/// What a word names, as data for a test of kind `kind` and protocol
/// `proto` (Click's `IPFilter::lookup`): `Ok(None)` if it is no name,
/// `Err` if it names several things or none that fit.
fn lookup(w: &str, kind: Kind, proto: Option<u16>) -> Result<Option<Data>, String> {
    let any = kind == Kind::None;
    let transport_ok = |allowed: &[u16]| proto.is_none_or(|p| allowed.contains(&p));
    let mut found: Vec<(Data, bool, String)> = Vec::new();
    if let Some(p) = find(PROTOCOLS, w) {
        let ok = any || kind == Kind::Proto || kind == Kind::Field(NXT6);
        found.push((Data::Proto(p), ok, format!("proto {w}")));
    }
    if let Some(p) = find(PORTS, w) {
        let ok = (any || kind == Kind::Port) && transport_ok(&[TCP, UDP, TCP_OR_UDP, SCTP, DCCP]);
        found.push((Data::Port(p), ok, format!("port {w}")));
    }
    if let Some(f) = find(TCP_FLAGS, w) {
        let ok = (any || kind == Kind::TcpOpt) && transport_ok(&[TCP, TCP_OR_UDP]);
        found.push((Data::TcpOpt(f), ok, format!("tcp opt {w}")));
    }
    if let Some(t) = find(ICMP_TYPES, w) {
        let ok = (any || kind == Kind::Field(ICMP_TYPE)) && transport_ok(&[ICMP]);
        found.push((Data::IcmpType(t), ok, format!("icmp type {w}")));
    }
    if let Some(t) = find(ICMP6_TYPES, w) {
        // Only after `icmp6` (or `icmp6 type`): a bare `echo` stays ICMP's.
        let ok = proto == Some(ICMP6) && (any || kind == Kind::Field(ICMP6_TYPE));
        if ok {
            found.retain(|f| !matches!(f.0, Data::IcmpType(_)));
            found.push((Data::IcmpType(t), ok, format!("icmp6 type {w}")));
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    let fits: Vec<Data> = found.iter().filter(|f| f.1).map(|f| f.0).collect();
    if let [d] = fits[..] {
        return Ok(Some(d));
    }
    let tries: Vec<String> = found.iter().map(|f| format!("`{}`", f.2)).collect();
    let what = if fits.len() > 1 {
        "is ambiguous".to_string()
    } else if any {
        "does not fit here".to_string()
    } else {
        format!("is not a value for `{}`", kind.name())
    };
    Err(format!("`{w}` {what}; try {}", tries.join(" or ")))
}

/// Nesting of parentheses and `?:` a pattern may use; bounds the stack.
const MAX_DEPTH: usize = 64;

type Parsed<T> = Result<T, PatternError>;

struct Parser<'a> {
    text: &'a str,
    toks: Vec<Token<'a>>,
    pos: usize,
    /// The last test, whose qualifiers a bare value inherits.
    prev: Prim,
    depth: usize,
    /// The expressions parsed so far, as Click's IPFilter nests them.
    click: Vec<IpExpr>,
}

/// Compiles one IPClassifier pattern to an expression.
pub(crate) fn parse_pattern(text: &str) -> Parsed<Expr> {
    parse_pattern_click(text).map(|(e, _)| e)
}

/// Compiles one IPClassifier pattern to an expression, and to the
/// expression Click's IPFilter builds for it (`None` for a pattern that
/// matches everything, which Click compiles on its own).
pub(crate) fn parse_pattern_click(text: &str) -> Parsed<(Expr, Option<IpExpr>)> {
    let toks = tokenize(text);
    // Click: an empty pattern, or one of `-`, `any`, `all`, matches
    // everything.
    match toks[..] {
        [] => return Ok((Expr::Const(true), None)),
        [t] if matches!(t.text, "-" | "any" | "all") => return Ok((Expr::Const(true), None)),
        _ => {}
    }
    let mut p = Parser {
        text,
        toks,
        pos: 0,
        prev: Prim::default(),
        depth: 0,
        click: Vec::new(),
    };
    let e = p.expr()?;
    if let Some(t) = p.tok(p.pos) {
        let help = if t.text == ")" {
            "this `)` closes no `(`"
        } else {
            "primitives are joined with `and`, `or`, `not` and parentheses"
        };
        return Err(p
            .error(
                p.pos,
                format!("unexpected `{}` after the expression", t.text),
            )
            .help(help));
    }
    let click = p.click.pop();
    Ok((e, click))
}

impl<'a> Parser<'a> {
    fn tok(&self, i: usize) -> Option<Token<'a>> {
        self.toks.get(i).copied()
    }

    fn is(&self, i: usize, words: &[&str]) -> bool {
        self.tok(i).is_some_and(|t| words.contains(&t.text))
    }

    /// The text of token `i`, or the end of the pattern.
    fn span(&self, i: usize) -> Range<usize> {
        match self.tok(i) {
            Some(t) => t.start..t.end,
            None => self.text.len()..self.text.len(),
        }
    }

    /// Tokens `a..b`.
    fn span_of(&self, a: usize, b: usize) -> Range<usize> {
        if b <= a {
            return self.span(a);
        }
        self.span(a).start..self.span(b - 1).end
    }

    fn found(&self, i: usize) -> String {
        match self.tok(i) {
            Some(t) => format!("`{}`", t.text),
            None => "the end of the pattern".to_string(),
        }
    }

    fn error(&self, i: usize, msg: impl Into<String>) -> PatternError {
        PatternError::new(self.span(i), msg)
    }

    fn enter(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(
                self.pos,
                format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
            ));
        }
        Ok(())
    }

    /// Replaces the last `n` Click expressions with `group(them)`, or
    /// leaves a single one alone.
    fn group_click(&mut self, n: usize, group: fn(Vec<IpExpr>) -> IpExpr) {
        if n > 1 {
            let v = self.click.split_off(self.click.len() - n);
            self.click.push(group(v));
        }
    }

    fn expr(&mut self) -> Parsed<Expr> {
        let mut cur = self.orexpr()?;
        let mut arms = Vec::new();
        while self.is(self.pos, &["?"]) {
            let q = self.pos;
            self.pos += 1;
            self.enter()?;
            let then = self.expr()?;
            self.depth -= 1;
            if !self.is(self.pos, &[":"]) {
                return Err(self
                    .error(
                        self.pos,
                        format!(
                            "expected `:` of the `?` at byte {}, found {}",
                            self.span(q).start,
                            self.found(self.pos)
                        ),
                    )
                    .help("write `COND ? THEN : ELSE`, with spaces around `:`"));
            }
            self.pos += 1;
            let els = self.orexpr()?;
            arms.push((cur, then));
            cur = els;
        }
        self.group_click(1 + 2 * arms.len(), IpExpr::Ternary);
        for (c, t) in arms.into_iter().rev() {
            cur = Expr::Cond(Box::new([c, t, cur]));
        }
        Ok(cur)
    }

    fn orexpr(&mut self) -> Parsed<Expr> {
        let mut v = vec![self.term()?];
        while self.is(self.pos, &["or", "||"]) {
            self.pos += 1;
            v.push(self.term()?);
        }
        self.group_click(v.len(), IpExpr::Or);
        Ok(if v.len() == 1 {
            v.pop().unwrap_or(Expr::Const(false))
        } else {
            Expr::Or(v)
        })
    }

    fn at_term_end(&self) -> bool {
        self.tok(self.pos).is_none() || self.is(self.pos, &[")", "or", "||", "?", ":"])
    }

    fn term(&mut self) -> Parsed<Expr> {
        let mut v = vec![self.factor()?];
        loop {
            if self.is(self.pos, &["and", "&&"]) {
                self.pos += 1;
            } else if self.at_term_end() {
                break;
            }
            // Adjacent factors are and-ed, as in tcpdump.
            v.push(self.factor()?);
        }
        self.group_click(v.len(), IpExpr::And);
        Ok(if v.len() == 1 {
            v.pop().unwrap_or(Expr::Const(true))
        } else {
            Expr::And(v)
        })
    }

    fn factor(&mut self) -> Parsed<Expr> {
        let mut negated = false;
        while self.is(self.pos, &["not", "!"]) {
            negated = !negated;
            self.pos += 1;
        }
        let e = if self.is(self.pos, &["("]) {
            let open = self.pos;
            self.pos += 1;
            self.enter()?;
            if self.is(self.pos, &[")"]) {
                return Err(self.error(self.pos, "expected an expression after `(`, found `)`"));
            }
            let e = self.expr()?;
            self.depth -= 1;
            if !self.is(self.pos, &[")"]) {
                return Err(self
                    .error(
                        self.pos,
                        format!("expected `)`, found {}", self.found(self.pos)),
                    )
                    .help(format!(
                        "the `(` at byte {} is not closed",
                        self.span(open).start
                    )));
            }
            self.pos += 1;
            e
        } else {
            self.test()?
        };
        if negated {
            let inner = self.click.pop().unwrap_or(IpExpr::NotClick);
            self.click.push(IpExpr::Not(Box::new(inner)));
        }
        Ok(if negated { Expr::Not(Box::new(e)) } else { e })
    }

    /// One primitive test.
    fn test(&mut self) -> Parsed<Expr> {
        let first = self.pos;
        let Some(t) = self.tok(first) else {
            let after = match first.checked_sub(1).and_then(|i| self.tok(i)) {
                Some(t) => format!(" after `{}`", t.text),
                None => String::new(),
            };
            return Err(self
                .error(
                    first,
                    format!("expected a primitive{after}, found the end of the pattern"),
                )
                .help(PRIMITIVES_HELP));
        };
        match t.text {
            "true" => {
                self.pos += 1;
                self.click.push(IpExpr::Const(true));
                return Ok(Expr::Const(true));
            }
            "false" => {
                self.pos += 1;
                self.click.push(IpExpr::Const(false));
                return Ok(Expr::Const(false));
            }
            _ => {}
        }
        let mut prim = Prim::default();
        let mut negated = false;
        // Click's header qualifier: `ip` or `ether`, at most one.
        let mut ip = false;
        let mut ether = false;
        // Qualifiers.
        while let Some(t) = self.tok(self.pos) {
            let w = t.text;
            if let Some(k) = type_word(w) {
                if prim.kind != Kind::None {
                    return Err(self.error(
                        self.pos,
                        format!(
                            "`{w}` after `{}`: a primitive has one type",
                            prim.kind.name()
                        ),
                    ));
                }
                let k = match k {
                    Kind::Field(f) if f == ICMP_TYPE && prim.proto == Some(ICMP6) => {
                        Kind::Field(ICMP6_TYPE)
                    }
                    k => k,
                };
                prim.kind = k;
                if let Kind::Field(Field { proto: Some(p), .. }) = k {
                    self.set_proto(&mut prim, p)?;
                }
            } else if let Some(named) = lookup(w, Kind::None, None).unwrap_or(Some(Data::None)) {
                match named {
                    Data::Proto(p) => self.set_proto(&mut prim, p)?,
                    // A port, flag or ICMP type name (or an ambiguous one):
                    // the value.
                    _ => break,
                }
            } else {
                match w {
                    "src" => {
                        let sd = if self.is(self.pos + 2, &["dst", "dest"]) {
                            if self.is(self.pos + 1, &["and", "&&"]) {
                                SrcDst::And
                            } else if self.is(self.pos + 1, &["or", "||"]) {
                                SrcDst::Or
                            } else {
                                SrcDst::Src
                            }
                        } else {
                            SrcDst::Src
                        };
                        self.set_srcdst(&mut prim, sd)?;
                        if matches!(sd, SrcDst::And | SrcDst::Or) {
                            self.pos += 2;
                        }
                    }
                    "dst" | "dest" => self.set_srcdst(&mut prim, SrcDst::Dst)?,
                    "ip" => {
                        if ip || ether {
                            break;
                        }
                        ip = true;
                    }
                    "ether" => {
                        if ip || ether {
                            break;
                        }
                        ether = true;
                    }
                    "ip6" => {
                        if prim.v6 {
                            break;
                        }
                        prim.v6 = true;
                    }
                    "not" | "!" => negated = !negated,
                    _ => break,
                }
            }
            self.pos += 1;
        }
        if self.pos != first {
            self.prev = Prim::default();
        }
        // A test without qualifiers after an Ethernet one is about the
        // Ethernet header too (Click).
        if matches!(self.prev.data, Data::Ether(_)) {
            ether = true;
        }

        // `ip[POS:LEN]`, `tcp[POS]`, `transp[POS:LEN]`.
        if self.is(self.pos, &["["]) && self.pos > first && prim.kind == Kind::None {
            prim.kind = Kind::Field(self.brackets(&prim)?);
        }

        // `& MASK`.
        let mut mask = Mask::None;
        if self.is(self.pos, &["&"]) {
            let amp = self.pos;
            let Some(t) = self.tok(amp + 1) else {
                return Err(self.error(
                    amp + 1,
                    "expected a mask after `&`, found the end of the pattern",
                ));
            };
            mask = if let Some(m) = parse_int(t.text) {
                Mask::Int(m)
            } else if let Some(a) = parse_addr(t.text).filter(|_| !ether) {
                Mask::Addr(a)
            } else if let Some(a) = parse_ether(t.text).filter(|_| !ip) {
                Mask::Ether(a)
            } else {
                return Err(self.error(
                    amp + 1,
                    format!(
                        "expected a mask (a number, an IP address or an Ethernet address) \
                         after `&`, found `{}`",
                        t.text
                    ),
                ));
            };
            if matches!(mask, Mask::Int(0) | Mask::Addr(0)) {
                return Err(self.error(amp + 1, "a mask of zero compares nothing"));
            }
            self.pos += 2;
        }

        // Relation.
        let rel_at = self.pos;
        if let Some(t) = self.tok(self.pos) {
            let rel = match t.text {
                "=" | "==" => Some((Rel::Eq, false)),
                "!=" => Some((Rel::Eq, true)),
                ">" => Some((Rel::Gt, false)),
                "<" => Some((Rel::Lt, false)),
                ">=" => Some((Rel::Lt, true)),
                "<=" => Some((Rel::Gt, true)),
                _ => None,
            };
            if let Some((r, n)) = rel {
                prim.rel = r;
                prim.negated = n;
                self.pos += 1;
            }
        }
        let has_rel = self.pos != rel_at;

        // The value.
        if let Some(t) = self.tok(self.pos) {
            let w = t.text;
            let data = match lookup(w, prim.kind, prim.proto) {
                Err(msg) => return Err(self.error(self.pos, msg)),
                Ok(Some(d)) => Some(d),
                Ok(None) if type_word(w).is_some() => None,
                Ok(None) if ether => parse_ether(w).map(Data::Ether),
                Ok(None) => {
                    if let Some(d) = parse_v6(w) {
                        Some(d)
                    } else if let Some(n) = parse_int(w) {
                        Some(Data::Int(n))
                    } else if let Some((lo, hi)) = parse_range(w) {
                        Some(Data::Range(lo, hi))
                    } else if let Some(a) = parse_addr(w) {
                        let m = self.tok(self.pos + 2).and_then(|t| parse_addr(t.text));
                        match m {
                            Some(m) if self.is(self.pos + 1, &["mask"]) => {
                                self.pos += 2;
                                Some(Data::Net(a, m))
                            }
                            _ if prim.kind == Kind::Net => Some(Data::Net(a, u32::MAX)),
                            _ => Some(Data::Host(a)),
                        }
                    } else if let Some(p) = parse_prefix(w) {
                        Some(Data::Net(p.0, p.1))
                    } else if ip {
                        None
                    } else {
                        parse_ether(w).map(Data::Ether)
                    }
                }
            };
            match data {
                Some(d) => {
                    prim.data = d;
                    self.pos += 1;
                }
                None if has_rel => {
                    return Err(self
                        .error(
                            self.pos,
                            format!(
                                "expected a value after `{}`, found `{w}`",
                                self.toks[rel_at].text
                            ),
                        )
                        .help("a value is a number, a name, an address or a prefix"));
                }
                None => {}
            }
        } else if has_rel {
            return Err(self.error(
                self.pos,
                format!(
                    "expected a value after `{}`, found the end of the pattern",
                    self.toks[rel_at].text
                ),
            ));
        }

        if prim.data == Data::None && !has_rel {
            if let (Some(t), Some(what)) = (self.tok(self.pos), value_of(prim.kind)) {
                let what = match prim.kind {
                    Kind::Host if ether => "an Ethernet address",
                    _ => what,
                };
                let connector = ["and", "&&", "or", "||", "not", "!", "(", ")", "?", ":"];
                if !connector.contains(&t.text) && type_word(t.text).is_none() {
                    return Err(self
                        .error(
                            self.pos,
                            format!(
                                "expected {what} after `{}`, found `{}`",
                                self.toks[self.pos.saturating_sub(1)].text,
                                t.text
                            ),
                        )
                        .help(PRIMITIVES_HELP));
                }
            }
        }
        if self.pos == first {
            return Err(self
                .error(
                    first,
                    format!("expected a primitive, found {}", self.found(first)),
                )
                .help(PRIMITIVES_HELP));
        }
        let span = self.span_of(first, self.pos);
        let given = prim;
        if ether && prim.kind == Kind::Host {
            prim.kind = Kind::Ether;
        }
        let (prim, mut e, click) =
            resolve(prim, &self.prev, mask).map_err(|m| PatternError::new(span, m))?;
        let click = click.map_or(IpExpr::NotClick, IpExpr::Prim);
        self.click.push(if negated {
            IpExpr::Not(Box::new(click))
        } else {
            click
        });
        if !prim.v6 && !matches!(prim.kind, Kind::Field(VERS) | Kind::Ether) {
            // An IPv4 primitive reads IPv4's header: an IPv6 packet's
            // bytes there mean something else.
            e = Expr::And(vec![Expr::Not(Box::new(version6())), e]);
            if !ip && family_neutral(&prim) {
                // `tcp`, `port 22`, `tcp opt syn`: about either family,
                // each read where its header has it.
                let v6 = Prim { v6: true, ..given };
                if let Ok((_, e6, _)) = resolve(v6, &self.prev, mask) {
                    e = Expr::Or(vec![e, e6]);
                }
            }
        }
        self.prev = prim;
        Ok(if negated { Expr::Not(Box::new(e)) } else { e })
    }

    fn set_proto(&self, prim: &mut Prim, p: u16) -> Parsed<()> {
        match prim.proto {
            Some(q) if q != p => Err(self.error(
                self.pos,
                format!(
                    "`{}` after `{}`: a primitive has one transport protocol",
                    proto_name(p),
                    proto_name(q)
                ),
            )),
            _ => {
                prim.proto = Some(p);
                Ok(())
            }
        }
    }

    fn set_srcdst(&self, prim: &mut Prim, sd: SrcDst) -> Parsed<()> {
        if prim.srcdst != SrcDst::None {
            return Err(self.error(self.pos, "`src` or `dst` given twice"));
        }
        prim.srcdst = sd;
        Ok(())
    }

    /// `[POS]` or `[POS:LEN]` after `ip`, a protocol or `transp`.
    fn brackets(&mut self, prim: &Prim) -> Parsed<Field> {
        let open = self.pos;
        let mut inner = String::new();
        let mut i = open + 1;
        while let Some(t) = self.tok(i) {
            if t.text == "]" {
                break;
            }
            inner.push_str(t.text);
            i += 1;
        }
        if self.tok(i).is_none() {
            return Err(self.error(open, "this `[` has no `]`"));
        }
        self.pos = i + 1;
        let at = self.span_of(open, i + 1);
        let bad = || {
            PatternError::new(
                at.clone(),
                format!("expected `[POS]` or `[POS:LEN]`, found `[{inner}]`"),
            )
        };
        let (pos, len) = match inner.split_once(':') {
            Some((p, l)) => (parse_int(p).ok_or_else(bad)?, parse_int(l).ok_or_else(bad)?),
            None => (parse_int(&inner).ok_or_else(bad)?, 1),
        };
        if !(1..=4).contains(&len) {
            return Err(PatternError::new(
                at,
                format!("LEN in `[POS:LEN]` is {len}; it must be 1 to 4 bytes"),
            ));
        }
        if pos as usize + len as usize > u16::MAX as usize {
            return Err(PatternError::new(at, format!("POS {pos} is too large")));
        }
        let (base, proto) = match prim.proto {
            None => (Base::Network, None),
            Some(p) => (Base::Transport, Some(p)),
        };
        Ok(Field {
            base,
            bit: pos as usize * 8,
            bits: len * 8,
            proto,
            name: if base == Base::Network {
                "ip[...]"
            } else {
                "transp[...]"
            },
        })
    }
}

const PRIMITIVES_HELP: &str =
    "a primitive is like `tcp`, `src host 10.0.0.1`, `dst net 10.0.0.0/8`, \
`dst port 80`, `tcp opt syn`, `icmp type echo`, `ip ttl > 1`, `ip[9] = 6` or `true`";

/// What a test of kind `k` takes as its value, if it needs one.
fn value_of(k: Kind) -> Option<&'static str> {
    Some(match k {
        Kind::Host => "an IP address",
        Kind::Net => "a prefix like 10.0.0.0/8",
        Kind::Port => "a port number, name or range",
        Kind::TcpOpt => "a TCP flag",
        Kind::Proto => "a protocol",
        Kind::Field(_) => "a number",
        _ => return None,
    })
}

fn proto_name(p: u16) -> String {
    match name_of(PROTOCOLS, p) {
        Some(n) => n.to_string(),
        None => format!("ip proto {p}"),
    }
}

/// The test "first fragment": fragment offset zero.
fn first_fragment() -> Expr {
    Expr::Test(Test::field(
        Base::Network,
        FRAG_FIELD.bit,
        16,
        0x1fff,
        Op::Eq,
        0,
        0,
    ))
}

/// The test "transport protocol is `p`" on the protocol field `field`
/// (IPv4's protocol or IPv6's next header), if `p` needs one.
fn protocol_guard(p: u16, field: Field) -> Option<Expr> {
    let is = |n: u16| {
        Expr::Test(Test::field(
            field.base,
            field.bit,
            8,
            0xff,
            Op::Eq,
            n as u64,
            0,
        ))
    };
    match p {
        TCP_OR_UDP => Some(Expr::Or(vec![is(TCP), is(UDP)])),
        TRANSP => None,
        n => Some(is(n)),
    }
}

/// Whether a resolved IPv4 test also has a meaning for IPv6: transport
/// protocols and their ports, flags and window (not ICMP or IGMP, which
/// IPv6 replaces, nor IPv4 header fields).
fn family_neutral(p: &Prim) -> bool {
    let proto_ok = p.proto.is_none_or(|q| !matches!(q, ICMP | 2 | ICMP6));
    match p.kind {
        Kind::Port | Kind::TcpOpt => true,
        Kind::Proto => {
            proto_ok && !matches!(p.data, Data::Proto(1 | 2 | 58) | Data::Int(1 | 2 | 58))
        }
        Kind::Field(f) => f.base == Base::Transport && f.proto != Some(ICMP) && proto_ok,
        _ => false,
    }
}

/// The test "IP version 6".
fn version6() -> Expr {
    Expr::Test(Test::field(Base::Network, VERS6.bit, 4, 0xf, Op::Eq, 6, 0))
}

/// The IPv6 header's counterpart of the IPv4 field `f`.
fn field6(f: Field) -> Result<Field, String> {
    Ok(match f {
        f if f == VERS => VERS6,
        f if f == TOS => TC6,
        f if f == DSCP => DSCP6,
        f if f == LEN => PLEN6,
        f if f == TTL => HLIM6,
        f if f == ICMP_TYPE => ICMP6_TYPE,
        f if f == HL || f == ID => {
            return Err(format!("`{}` is not a field of IPv6 headers", f.name))
        }
        f => f,
    })
}

/// The 16-byte address at `offset` of the IPv6 header, under the mask
/// `m`, equals `addr`: a test per 8-byte half the mask covers.
fn addr6_eq(offset: u16, m: u128, addr: u128) -> Expr {
    let halves = [
        (offset, (m >> 64) as u64, (addr >> 64) as u64),
        (offset + 8, m as u64, addr as u64),
    ];
    let tests: Vec<Expr> = halves
        .into_iter()
        .filter(|&(_, mask, _)| mask != 0)
        .map(|(o, mask, a)| Expr::Test(Test::eq(Base::Network, o, mask, a)))
        .collect();
    match tests.len() {
        0 => Expr::Const(true),
        _ => Expr::And(tests),
    }
}

/// A comparison of one field; `negated` gives "present and not".
fn field_cmp(f: Field, cmp: Cmp, negated: bool) -> Expr {
    let t = match cmp {
        Cmp::Const(b) => return Expr::Const(b),
        Cmp::Eq(m, v) => Test::field(f.base, f.bit, f.bits, m as u64, Op::Eq, v as u64, 0),
        Cmp::Gt(m, v) => Test::field(f.base, f.bit, f.bits, m as u64, Op::Gt, v as u64, 0),
        Cmp::In(m, lo, hi) => Test::field(
            f.base,
            f.bit,
            f.bits,
            m as u64,
            Op::In,
            lo as u64,
            hi as u64,
        ),
    };
    Expr::Test(if negated { t.negated() } else { t })
}

/// The comparison applied to the source field, the destination field, or
/// both.
fn sides(sd: SrcDst, src: Field, dst: Field, cmp: Cmp) -> Expr {
    let one = |f| field_cmp(f, cmp, false);
    match sd {
        SrcDst::Src => one(src),
        SrcDst::Dst => one(dst),
        SrcDst::And => Expr::And(vec![one(src), one(dst)]),
        SrcDst::Or | SrcDst::None => Expr::Or(vec![one(src), one(dst)]),
    }
}

/// Fills in what a test leaves out, from its value and the test before it,
/// checks that type, value, relation and mask agree (Click's
/// `Primitive::check`), and compiles it (Click's `Primitive::compile`).
/// Returns the test as the next one inherits it.
/// Also returns the primitive as Click's IPFilter compiles it, if Click has
/// it.
#[allow(clippy::type_complexity)]
fn resolve(mut p: Prim, prev: &Prim, mask: Mask) -> Result<(Prim, Expr, Option<IpPrim>), String> {
    // The comparison Click makes, its field's whole mask, and whether
    // it is negated; `None`: none, or not one Click's IPFilter has.
    let mut click: Option<(Cmp, u32, bool)> = None;
    if matches!(p.data, Data::Host6(_) | Data::Net6(..)) || p.proto == Some(ICMP6) {
        p.v6 = true;
    }
    if let Kind::Field(f) = p.kind {
        if f == HLIM6 || f == PLEN6 || f == FLOW6 || f == NXT6 {
            p.v6 = true;
        }
    }
    if p.v6 && p.kind == Kind::None && p.data == Data::None && p.proto.is_none() {
        // `ip6` alone: the packet is IPv6.
        return Ok((p, version6(), None));
    }
    if p.kind == Kind::None {
        match p.data {
            Data::Int(_) | Data::Range(..) => {
                // A bare number continues the previous test: `port 80 or 81`.
                match prev.kind {
                    Kind::Port => {
                        if p.srcdst == SrcDst::None {
                            p.srcdst = prev.srcdst;
                        }
                        if p.proto.is_none() {
                            p.proto = prev.proto;
                        }
                    }
                    Kind::Field(f) => {
                        if p.proto.is_none() {
                            p.proto = f.proto;
                        }
                    }
                    Kind::Proto => {}
                    _ => {
                        return Err(
                            "a bare number needs a field before it, like `port 80` or `ip ttl 64`"
                                .to_string(),
                        )
                    }
                }
                p.kind = prev.kind;
                p.v6 |= prev.v6;
            }
            Data::Ether(_) => {
                p.kind = Kind::Ether;
                if p.srcdst == SrcDst::None {
                    p.srcdst = prev.srcdst;
                }
            }
            Data::Host(_)
            | Data::Net(..)
            | Data::Host6(_)
            | Data::Net6(..)
            | Data::TcpOpt(_)
            | Data::Port(_) => {
                p.kind = match p.data {
                    Data::Host(_) | Data::Host6(_) => Kind::Host,
                    Data::Net(..) | Data::Net6(..) => Kind::Net,
                    Data::TcpOpt(_) => Kind::TcpOpt,
                    _ => Kind::Port,
                };
                if p.srcdst == SrcDst::None {
                    p.srcdst = prev.srcdst;
                }
                if p.kind == Kind::Port && p.proto.is_none() {
                    p.proto = prev.proto;
                }
            }
            Data::Proto(_) => p.kind = Kind::Proto,
            Data::IcmpType(_) if p.v6 => {
                p.kind = Kind::Field(ICMP6_TYPE);
                p.proto.get_or_insert(ICMP6);
            }
            Data::IcmpType(_) => {
                p.kind = Kind::Field(ICMP_TYPE);
                p.proto.get_or_insert(ICMP);
            }
            Data::None if p.proto.is_some() => p.kind = Kind::Proto,
            Data::None => return Err(
                "incomplete primitive: expected a type like `host`, `port` or `proto` and a value"
                    .to_string(),
            ),
        }
    }

    if p.kind == Kind::Host && matches!(p.data, Data::Ether(_)) {
        // `host 0:1:2:3:4:5`: the value says which header.
        p.kind = Kind::Ether;
    }
    if p.kind == Kind::Ether {
        return resolve_ether(p, mask);
    }
    if p.v6 {
        if let Kind::Field(f) = p.kind {
            p.kind = Kind::Field(field6(f)?);
        }
    }
    let (proto_field, tos_field) = if p.v6 {
        (UPPER6, TC6)
    } else {
        (PROTO_FIELD, TOS)
    };
    let what = p.kind.name();
    let int_mask = match (mask, p.kind) {
        (Mask::None, _) => None,
        (Mask::Int(m), _) => Some(m),
        (Mask::Addr(m), Kind::Host | Kind::Net) => Some(m),
        (Mask::Addr(m), Kind::Field(f)) if f.bits == 32 => Some(m),
        (Mask::Addr(_), _) => return Err(format!("`{what}` takes a number as its mask")),
        (Mask::Ether(_), _) => {
            return Err(format!(
                "`{what}` takes a number as its mask, not an Ethernet address"
            ))
        }
    };
    let main =
        match p.kind {
            Kind::None | Kind::Ether => return Err("incomplete primitive".to_string()),
            Kind::Host | Kind::Net if p.v6 => {
                let (addr, len) = match (p.kind, p.data) {
                    (_, Data::Host6(a)) => (a, 128),
                    (Kind::Net, Data::Net6(a, l)) => (a, l),
                    (Kind::Host, Data::Net6(..)) => {
                        return Err("`host` takes an address; for a prefix write `net ADDR/LEN`"
                            .to_string())
                    }
                    _ => {
                        return Err("an IPv6 `host` or `net` needs an IPv6 address or prefix, \
                        like `net 2001:db8::/32`"
                            .to_string())
                    }
                };
                if p.rel != Rel::Eq {
                    return Err(format!("`{what}` takes `==` or `!=`, not `<` or `>`"));
                }
                if mask != Mask::None {
                    return Err("an IPv6 prefix takes its length after `/`, not a mask".to_string());
                }
                p.kind = Kind::Host;
                if p.srcdst == SrcDst::None {
                    p.srcdst = SrcDst::Or;
                }
                let m = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
                let one = |offset| addr6_eq(offset, m, addr);
                let e = match p.srcdst {
                    SrcDst::Src => one(8),
                    SrcDst::Dst => one(24),
                    SrcDst::And => Expr::And(vec![one(8), one(24)]),
                    SrcDst::Or | SrcDst::None => Expr::Or(vec![one(8), one(24)]),
                };
                if p.negated {
                    e.negate_present()
                } else {
                    e
                }
            }
            Kind::Host | Kind::Net => {
                let (addr, net_mask) = match (p.kind, p.data) {
                    (Kind::Host, Data::Host(a)) | (Kind::Net, Data::Host(a)) => (a, u32::MAX),
                    (Kind::Net, Data::Net(a, m)) => (a, m),
                    (Kind::Host, Data::Net(..)) => {
                        return Err("`host` takes an address; for a prefix write `net ADDR/LEN`"
                            .to_string())
                    }
                    (Kind::Host, _) => {
                        return Err("`host` needs an IP address, like `host 10.0.0.1`".to_string())
                    }
                    _ => return Err("`net` needs a prefix, like `net 10.0.0.0/8`".to_string()),
                };
                if p.rel != Rel::Eq {
                    return Err(format!("`{what}` takes `==` or `!=`, not `<` or `>`"));
                }
                let m = match mask {
                    Mask::None => net_mask,
                    Mask::Int(m) | Mask::Addr(m) => m,
                    Mask::Ether(_) => {
                        return Err("an IP address takes an IP address as its mask".to_string())
                    }
                };
                p.kind = Kind::Host;
                if p.srcdst == SrcDst::None {
                    p.srcdst = SrcDst::Or;
                }
                click = Some((Cmp::Eq(m, addr), u32::MAX, p.negated));
                let e = sides(p.srcdst, SRC_ADDR, DST_ADDR, Cmp::Eq(m, addr));
                if p.negated {
                    e.negate_present()
                } else {
                    e
                }
            }
            Kind::Proto => {
                let given = match p.data {
                    Data::Int(n) => Some(n),
                    Data::Proto(n) => Some(n as u32),
                    Data::None => None,
                    _ => {
                        return Err(
                            "`proto` needs a protocol, like `proto tcp` or `proto 17`".to_string()
                        )
                    }
                };
                let value = match (given, p.proto) {
                    (Some(n), Some(q)) if q as u32 != n => {
                        return Err(format!(
                            "`{}` and protocol {n}: a primitive has one transport protocol",
                            proto_name(q)
                        ))
                    }
                    (Some(n), _) => n,
                    (None, Some(q)) => q as u32,
                    (None, None) => {
                        return Err(
                            "`proto` needs a protocol, like `proto tcp` or `proto 17`".to_string()
                        )
                    }
                };
                p.proto = None;
                if value >= 256 {
                    if value > TRANSP as u32 {
                        return Err(format!("protocol {value} is out of range (0-255)"));
                    }
                    if p.rel != Rel::Eq || p.negated || mask != Mask::None {
                        return Err(format!(
                            "`{}` takes no relation or mask; use `not` to negate it",
                            proto_name(value as u16)
                        ));
                    }
                    p.proto = Some(value as u16);
                    click = Some((Cmp::Const(true), 0xff, false));
                    Expr::Const(true)
                } else {
                    let cmp = set_mask(&mut p, Data::Int(value), 0xff, int_mask)?;
                    click = Some((cmp, 0xff, p.negated));
                    if cmp == Cmp::Eq(0xff, value) && !p.negated {
                        // The protocol guard below is the whole test.
                        p.proto = Some(value as u16);
                        Expr::Const(true)
                    } else {
                        field_cmp(proto_field, cmp, p.negated)
                    }
                }
            }
            Kind::Port => {
                let data = match p.data {
                    Data::Int(n) => Data::Int(n),
                    Data::Port(n) => Data::Int(n as u32),
                    Data::Range(lo, hi) => Data::Range(lo, hi),
                    _ => {
                        return Err(
                            "`port` needs a port number, name or range, like `port 80`, \
                        `port http` or `port 1024-65535`"
                                .to_string(),
                        )
                    }
                };
                match p.proto {
                    None => p.proto = Some(TCP_OR_UDP),
                    Some(TCP | UDP | TCP_OR_UDP | SCTP | DCCP) => {}
                    Some(q) => {
                        return Err(format!(
                            "`port` applies to TCP, UDP, SCTP and DCCP, not `{}`",
                            proto_name(q)
                        ))
                    }
                }
                if p.srcdst == SrcDst::None {
                    p.srcdst = SrcDst::Or;
                }
                let cmp = set_mask(&mut p, data, 0xffff, int_mask)?;
                click = Some((cmp, 0xffff, p.negated));
                let e = sides(p.srcdst, SRC_PORT, DST_PORT, cmp);
                if p.negated {
                    e.negate_present()
                } else {
                    e
                }
            }
            Kind::TcpOpt => {
                let v = match p.data {
                    Data::TcpOpt(v) => v as u32,
                    Data::Int(v) => v,
                    _ => {
                        return Err(
                            "`tcp opt` needs a flag: fin, syn, rst, psh, ack, urg, ece or cwr"
                                .to_string(),
                        )
                    }
                };
                match p.proto {
                    None => p.proto = Some(TCP),
                    Some(TCP) => {}
                    Some(q) => {
                        return Err(format!("`tcp opt` applies to TCP, not `{}`", proto_name(q)))
                    }
                }
                if p.rel != Rel::Eq || p.negated || mask != Mask::None {
                    return Err(
                        "`tcp opt` takes no relation or mask; use `not` to negate it".to_string(),
                    );
                }
                if v == 0 || v > 0xff {
                    return Err(format!("TCP flags {v} are out of range (1-255)"));
                }
                click = Some((Cmp::Eq(v, v), 0xff, false));
                field_cmp(TCP_FLAGS_FIELD, Cmp::Eq(v, v), false)
            }
            Kind::Ect | Kind::Ce => {
                let cmp = match (p.kind, p.data) {
                    (Kind::Ect, Data::None) if mask == Mask::None => {
                        // ECN-capable: the ECN bits are not 00.
                        p.negated = !p.negated;
                        Cmp::Eq(3, 0)
                    }
                    (Kind::Ect, Data::Int(v)) => set_mask(&mut p, Data::Int(v), 3, int_mask)?,
                    (Kind::Ce, Data::None) if mask == Mask::None => Cmp::Eq(3, 3),
                    _ => return Err(format!("`{what}` takes no value")),
                };
                // The ECN bits are the low two of the TOS or traffic class.
                p.kind = Kind::Field(tos_field);
                click = Some((cmp, 0xff, p.negated));
                field_cmp(tos_field, cmp, p.negated)
            }
            Kind::Frag | Kind::Unfrag => {
                if p.data != Data::None || mask != Mask::None || p.rel != Rel::Eq || p.negated {
                    return Err(format!("`{what}` takes no value"));
                }
                if p.v6 {
                    // A Fragment header anywhere in the chain.
                    let f = u32::from(super::program::UPPER_FRAGMENT);
                    field_cmp(FRAG6, Cmp::Eq(f, f), p.kind == Kind::Unfrag)
                } else {
                    // More fragments set, or a fragment offset.
                    click = Some((Cmp::Eq(0x3fff, 0), 0xffff, p.kind == Kind::Unfrag));
                    field_cmp(FRAG_FIELD, Cmp::Eq(0x3fff, 0), p.kind == Kind::Frag)
                }
            }
            Kind::Field(f) => {
                let data = match p.data {
                    Data::Int(v) => Data::Int(v),
                    Data::Range(lo, hi) => Data::Range(lo, hi),
                    Data::IcmpType(v) if f == ICMP_TYPE || f == ICMP6_TYPE => Data::Int(v as u32),
                    Data::Proto(v) if f == NXT6 && v < 256 => Data::Int(u32::from(v)),
                    // `ip6 nxt tcp`: the protocol word is the value, not a
                    // guard on the upper-layer protocol.
                    Data::None if f == NXT6 && p.proto.is_some_and(|q| q < 256) => {
                        Data::Int(u32::from(p.proto.take().unwrap_or(0)))
                    }
                    // A four-byte field may be compared with an address.
                    Data::Host(a) if f.bits == 32 => Data::Int(a),
                    _ => return Err(format!("`{}` needs a number", f.name)),
                };
                let full = if f.bits == 32 {
                    u32::MAX
                } else {
                    (1u32 << f.bits) - 1
                };
                let cmp = set_mask(&mut p, data, full, int_mask)?;
                click = Some((cmp, full, p.negated));
                field_cmp(f, cmp, p.negated)
            }
        };

    let transport = match p.kind {
        Kind::Port | Kind::TcpOpt => true,
        Kind::Field(f) => f.base == Base::Transport,
        _ => false,
    };
    let mut parts = Vec::with_capacity(4);
    if p.v6 {
        parts.push(version6());
    }
    parts.extend(p.proto.and_then(|q| protocol_guard(q, proto_field)));
    if transport && !p.v6 {
        // Transport headers exist in first fragments only.
        parts.push(first_fragment());
    }
    parts.push(main);
    let click = if p.v6 {
        None
    } else {
        click.and_then(|(cmp, full, negated)| click_prim(&p, cmp, full, negated))
    };
    Ok((p, Expr::And(parts), click))
}

/// An Ethernet address primitive (Click's `TYPE_ETHER`): the source
/// address is bytes 6 to 11 of the Ethernet header, the destination bytes
/// 0 to 5. It reads no IP field, so it holds for either IP version.
#[allow(clippy::type_complexity)]
fn resolve_ether(mut p: Prim, mask: Mask) -> Result<(Prim, Expr, Option<IpPrim>), String> {
    let Data::Ether(addr) = p.data else {
        return Err("`ether host` needs an Ethernet address, like `ether src 0:1:2:3:4:5`".into());
    };
    if p.rel != Rel::Eq {
        return Err("an Ethernet address takes `==` or `!=`, not `<` or `>`".to_string());
    }
    if p.v6 || p.proto.is_some() {
        return Err("an Ethernet address takes no `ip6` or protocol".to_string());
    }
    let m = match mask {
        Mask::None => [0xff; 6],
        Mask::Ether(m) => m,
        _ => return Err("an Ethernet address takes an Ethernet address as its mask".to_string()),
    };
    if p.srcdst == SrcDst::None {
        p.srcdst = SrcDst::Or;
    }
    let word = |b: [u8; 6]| {
        let mut w = [0u8; 8];
        w[..6].copy_from_slice(&b);
        u64::from_be_bytes(w)
    };
    let at = |offset| Expr::Test(Test::eq(Base::Link, offset, word(m), word(addr)));
    let (src, dst) = (at(6), at(0));
    let e = match p.srcdst {
        SrcDst::Src => src,
        SrcDst::Dst => dst,
        SrcDst::And => Expr::And(vec![src, dst]),
        SrcDst::Or | SrcDst::None => Expr::Or(vec![src, dst]),
    };
    let e = if p.negated { e.negate_present() } else { e };
    let click = IpPrim {
        kind: IpKind::Ether { addr, mask: m },
        sides: match p.srcdst {
            SrcDst::Src => IpSides::Src,
            SrcDst::Dst => IpSides::Dst,
            SrcDst::And => IpSides::And,
            SrcDst::Or | SrcDst::None => IpSides::Or,
        },
        proto: None,
        gt: false,
        value: 0,
        mask: 0,
        full: 0,
        negated: p.negated,
    };
    Ok((p, e, Some(click)))
}

/// The primitive as Click's IPFilter has it after `Primitive::check`.
fn click_prim(p: &Prim, cmp: Cmp, full: u32, negated: bool) -> Option<IpPrim> {
    let kind = match p.kind {
        Kind::Host | Kind::Net => IpKind::Host,
        Kind::Proto => IpKind::Proto,
        Kind::Port => IpKind::Port,
        Kind::TcpOpt => IpKind::TcpOpt,
        Kind::Frag | Kind::Unfrag => IpKind::Frag,
        Kind::Field(f) if f.base != Base::Upper => IpKind::Field {
            transport: f.base == Base::Transport,
            bit: f.bit,
            bits: f.bits,
        },
        _ => return None,
    };
    let sides = match p.srcdst {
        SrcDst::Src => IpSides::Src,
        SrcDst::Dst => IpSides::Dst,
        SrcDst::And => IpSides::And,
        SrcDst::Or | SrcDst::None => IpSides::Or,
    };
    let (gt, value, mask, negated) = match cmp {
        // Click: always true or false is an empty mask, negated if false.
        Cmp::Const(holds) => (false, 0, 0, !holds),
        Cmp::Eq(m, v) => (false, v, m, negated),
        Cmp::Gt(m, v) => (true, v, m, negated),
        Cmp::In(..) => return None,
    };
    Some(IpPrim {
        kind,
        sides,
        proto: p.proto,
        gt,
        value,
        mask,
        full,
        negated,
    })
}

/// Click's `set_mask`: checks the value against the field's range and
/// turns `<` and `>=` into `>` and a negation.
fn set_mask(p: &mut Prim, data: Data, full: u32, provided: Option<u32>) -> Result<Cmp, String> {
    let what = p.kind.name();
    let m = provided.unwrap_or(full);
    if m & !full != 0 {
        return Err(format!(
            "mask {m:#x} is out of range for `{what}` (at most {full:#x})"
        ));
    }
    match data {
        Data::Range(lo, hi) => {
            if p.rel != Rel::Eq {
                return Err("a range takes `==` or `!=`, not `<` or `>`".to_string());
            }
            if lo > hi {
                return Err(format!("range {lo}-{hi} is empty"));
            }
            if hi > full {
                return Err(format!(
                    "range {lo}-{hi} is out of range for `{what}` (0-{full})"
                ));
            }
            Ok(Cmp::In(m, lo, hi))
        }
        Data::Int(v) => match p.rel {
            Rel::Gt | Rel::Lt => {
                let lt = p.rel == Rel::Lt;
                if (lt && (v == 0 || v > m)) || (!lt && v >= m) {
                    // Always true or always false.
                    let holds = if lt && v > m { !p.negated } else { p.negated };
                    p.negated = false;
                    p.rel = Rel::Eq;
                    return Ok(Cmp::Const(holds));
                }
                if lt {
                    // x < v is !(x > v - 1).
                    p.negated = !p.negated;
                    p.rel = Rel::Gt;
                    return Ok(Cmp::Gt(m, v - 1));
                }
                Ok(Cmp::Gt(m, v))
            }
            Rel::Eq => {
                if v > full {
                    return Err(format!("value {v} is out of range for `{what}` (0-{full})"));
                }
                Ok(Cmp::Eq(m, v))
            }
        },
        _ => Err(format!("`{what}` needs a number")),
    }
}
