//! Click's `IPField` (`elements/ip/ipfieldinfo.cc`): a bit range of an IP
//! packet's IP header, transport header or payload, written as
//! `ip src/8`, `tcp flags`, `ip[8:2] & 0x3F0`, `transp{4:4}`.
//!
//! A field is a header (an IP protocol number, 0 for the IP header, or
//! one of Click's pseudo-protocols [`TCP_OR_UDP`], [`TRANSP`],
//! [`PAYLOAD`]), a bit offset into that header and a bit length. The
//! parser follows Click's `IPField::parse` word for word (its `cp_scanf`
//! patterns, the order it tries them in, its error messages), except
//! where Click goes on with a field it could not encode; see [`parse`].

use std::fmt::Write as _;

/// Click's `IP_PROTO_TCP_OR_UDP`: a TCP or UDP first fragment.
pub const TCP_OR_UDP: u16 = 256;
/// Click's `IP_PROTO_TRANSP`: the transport header of any first fragment.
pub const TRANSP: u16 = 258;
/// Click's `IP_PROTO_PAYLOAD`: the payload after a TCP or UDP header.
pub const PAYLOAD: u16 = 259;

/// Largest header number Click's encoding holds (`IPField::MAX_PROTO`).
const MAX_PROTO: u32 = 0x1FF;
/// Largest offset Click's encoding holds, in bits or (aligned) bytes.
const MAX_OFFSET: u64 = 0x1FFF;
/// Largest length Click's encoding holds, in bits or (aligned) bytes.
const MAX_LENGTH: u64 = 0x40;

/// A field: header, bit offset, bit length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpField {
    /// 0 for the IP header, an IP protocol, or a pseudo-protocol.
    pub proto: u16,
    /// Where the field starts, in bits from the header's start.
    pub bit_offset: u32,
    /// How many bits it has (at least 1).
    pub bit_length: u32,
}

impl IpField {
    /// Click's `IPField(proto, bit_offset, bit_length)`: `None` where
    /// Click's 32-bit encoding cannot hold the field (bit offsets past
    /// 8191 must be whole bytes, lengths past 64 bits too).
    pub fn new(proto: u32, bit_offset: u64, bit_length: u64) -> Option<IpField> {
        if proto > MAX_PROTO || bit_length == 0 {
            return None;
        }
        let fits = (bit_offset <= MAX_OFFSET && bit_length <= MAX_LENGTH)
            || (bit_offset.is_multiple_of(8)
                && bit_length.is_multiple_of(8)
                && bit_length <= MAX_LENGTH * 8
                && bit_offset / 8 <= MAX_OFFSET);
        fits.then_some(IpField {
            proto: proto as u16,
            bit_offset: bit_offset as u32,
            bit_length: bit_length as u32,
        })
    }

    const fn named(proto: u16, bit_offset: u32, bit_length: u32) -> IpField {
        IpField {
            proto,
            bit_offset,
            bit_length,
        }
    }

    /// Click's `IPField::unparse(elt, false)`: the field's shortest name
    /// (`ip src/8` for `ip[12]`).
    pub fn unparse(&self) -> String {
        let mut s = match proto_name(self.proto) {
            Some(n) => n.to_string(),
            None => format!("ip proto {}", self.proto),
        };
        if let Some(n) = field_name(self) {
            let _ = write!(s, " {n}");
            return s;
        }
        let (mut bo, bl) = (self.bit_offset, self.bit_length);
        let mut container = 8;
        while container < 64 {
            if bo / container == (bo + bl - 1) / container {
                let x = IpField::named(self.proto, bo & !(container - 1), container);
                if let Some(n) = field_name(&x) {
                    let _ = write!(s, " {n}");
                    bo &= container - 1;
                    if bo == 0 {
                        let _ = write!(s, "/{bl}");
                        return s;
                    }
                    break;
                }
            }
            container *= 2;
        }
        let _ = if bo.is_multiple_of(8) && bl == 8 {
            write!(s, "[{}]", bo / 8)
        } else if bo.is_multiple_of(8) && bl.is_multiple_of(8) {
            write!(s, "[{}:{}]", bo / 8, bl / 8)
        } else if bl == 1 {
            write!(s, "{{{bo}}}")
        } else {
            write!(s, "{{{bo}:{bl}}}")
        };
        s
    }
}

/// Click's static `T_IP_PROTO` names (`elements/ip/ipnameinfo.cc`).
const PROTOS: &[(&str, u16)] = &[
    ("dccp", 33),
    ("gre", 47),
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("payload", PAYLOAD),
    ("sctp", 132),
    ("tcp", 6),
    ("tcpudp", TCP_OR_UDP),
    ("transp", TRANSP),
    ("udp", 17),
];

/// The name Click gives header `proto`, if it has one (`ip` for 0, as
/// `/etc/protocols` names it).
pub fn proto_name(proto: u16) -> Option<&'static str> {
    if proto == 0 {
        return Some("ip");
    }
    PROTOS.iter().find(|(_, p)| *p == proto).map(|(n, _)| *n)
}

const fn f(proto: u16, bit_offset: u32, bit_length: u32) -> IpField {
    IpField::named(proto, bit_offset, bit_length)
}

/// Click's field name tables, in its order (a reverse lookup gives the
/// first name of a field).
const IP_FIELDS: &[(&str, IpField)] = &[
    ("df", f(0, 6 * 8 + 1, 1)),
    ("dport", f(TCP_OR_UDP, 2 * 8, 16)),
    ("dscp", f(0, 8, 6)),
    ("dst", f(0, 16 * 8, 32)),
    ("ecn", f(0, 8 + 6, 2)),
    ("fragoff", f(0, 6 * 8 + 3, 13)),
    ("hl", f(0, 4, 4)),
    ("id", f(0, 4 * 8, 16)),
    ("len", f(0, 2 * 8, 16)),
    ("mf", f(0, 6 * 8 + 2, 1)),
    ("off", f(0, 6 * 8, 16)),
    ("proto", f(0, 9 * 8, 8)),
    ("rf", f(0, 6 * 8, 1)),
    ("sport", f(TCP_OR_UDP, 0, 16)),
    ("src", f(0, 12 * 8, 32)),
    ("sum", f(0, 10 * 8, 16)),
    ("tos", f(0, 8, 8)),
    ("ttl", f(0, 8 * 8, 8)),
    ("vers", f(0, 0, 4)),
];

const UDP_FIELDS: &[(&str, IpField)] = &[
    ("dport", f(17, 2 * 8, 16)),
    ("len", f(17, 4 * 8, 16)),
    ("sport", f(17, 0, 16)),
    ("sum", f(17, 6 * 8, 16)),
];

const TCP_FIELDS: &[(&str, IpField)] = &[
    ("ack", f(6, 13 * 8 + 3, 1)),
    ("ackno", f(6, 8 * 8, 32)),
    ("dport", f(6, 2 * 8, 16)),
    ("fin", f(6, 13 * 8 + 7, 1)),
    ("flags", f(6, 13 * 8, 8)),
    ("hl", f(6, 12 * 8, 4)),
    ("psh", f(6, 13 * 8 + 4, 1)),
    ("push", f(6, 13 * 8 + 4, 1)),
    ("rst", f(6, 13 * 8 + 5, 1)),
    ("seq", f(6, 4 * 8, 32)),
    ("seqno", f(6, 4 * 8, 32)),
    ("sport", f(6, 0, 16)),
    ("sum", f(6, 16 * 8, 16)),
    ("syn", f(6, 13 * 8 + 6, 1)),
    ("urg", f(6, 13 * 8 + 2, 1)),
    ("urp", f(6, 18 * 8, 16)),
    ("win", f(6, 14 * 8, 16)),
];

const ICMP_FIELDS: &[(&str, IpField)] = &[
    ("code", f(1, 8, 8)),
    ("sum", f(1, 2 * 8, 16)),
    ("type", f(1, 0, 8)),
];

const TCP_OR_UDP_FIELDS: &[(&str, IpField)] = &[
    ("dport", f(TCP_OR_UDP, 2 * 8, 16)),
    ("sport", f(TCP_OR_UDP, 0, 16)),
];

/// The field names of header `proto` (Click's `T_IP_FIELDNAME + proto`).
fn fields_of(proto: u16) -> &'static [(&'static str, IpField)] {
    match proto {
        0 => IP_FIELDS,
        1 => ICMP_FIELDS,
        6 => TCP_FIELDS,
        17 => UDP_FIELDS,
        TCP_OR_UDP => TCP_OR_UDP_FIELDS,
        _ => &[],
    }
}

fn field_name(x: &IpField) -> Option<&'static str> {
    fields_of(x.proto)
        .iter()
        .find(|(_, v)| v == x)
        .map(|(n, _)| *n)
}

/// Why a field specification was refused: Click's three messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldError {
    /// No header, or neither a field name nor an offset after it.
    Syntax,
    /// An offset or length that is empty, outside the named field, or
    /// that Click's encoding cannot hold.
    OffsetLength,
    /// A prefix longer than the field, or a mask that is not one run of
    /// 1 bits inside it.
    PrefixMask,
}

impl core::fmt::Display for FieldError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            FieldError::Syntax => "expected 'HEADER [NAME] [{OFFSET:LENGTH}] [/PREFIX] [& MASK]'",
            FieldError::OffsetLength => "bad offset or length in TCP/IP field",
            FieldError::PrefixMask => "bad prefix or mask in TCP/IP field",
        })
    }
}

/// A cursor over the specification, with Click's `cp_scanf` steps.
struct Scan<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn lit(&mut self, c: u8) -> Option<()> {
        (self.s.get(self.at) == Some(&c)).then(|| self.at += 1)
    }

    /// `%u`: Click's `cp_integer` in base 0 (`0x` hex, `0b` binary, a
    /// leading 0 octal, `_` between digits); a value past 32 bits fails.
    fn uint(&mut self) -> Option<u64> {
        let s = &self.s[self.at..];
        let mut i = usize::from(s.first() == Some(&b'+'));
        let (base, skip) = match (s.get(i), s.get(i + 1)) {
            (Some(b'0'), Some(b'x' | b'X')) if s.len() > i + 2 => (16, 2),
            (Some(b'0'), Some(b'b' | b'B')) if s.len() > i + 2 => (2, 2),
            (Some(b'0'), _) => (8, 0),
            _ => (10, 0),
        };
        let prefix = i;
        i += skip;
        let mut v: u64 = 0;
        let mut last_digit = None;
        while let Some(&c) = s.get(i) {
            if c == b'_' && last_digit == Some(i) {
                i += 1;
                continue;
            }
            match (c as char).to_digit(base) {
                Some(d) => {
                    v = v
                        .saturating_mul(u64::from(base))
                        .saturating_add(u64::from(d));
                    last_digit = Some(i + 1);
                    i += 1;
                }
                None => break,
            }
        }
        let end = match last_digit {
            Some(e) => e,
            // `0x!`: the initial 0 is the number.
            None if skip > 0 => prefix + 1,
            None => return None,
        };
        if v > u64::from(u32::MAX) {
            return None;
        }
        self.at += end;
        Some(v)
    }

    /// A word up to white space or one of `delims` (`%N`'s word).
    fn word(&mut self, delims: &[u8]) -> &'a str {
        let start = self.at;
        while self
            .s
            .get(self.at)
            .is_some_and(|c| !c.is_ascii_whitespace() && !delims.contains(c))
        {
            self.at += 1;
        }
        std::str::from_utf8(&self.s[start..self.at]).unwrap_or("")
    }

    /// Runs `f` from here; on failure the cursor does not move.
    fn try_<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<T> {
        let at = self.at;
        let r = f(self);
        if r.is_none() {
            self.at = at;
        }
        r
    }
}

/// What follows the header: `[O]`, `[O:L]`, `[O1-O2]`, and the same in
/// bits with braces. Gives (offset, length) in bits, as Click computes
/// them (in wider integers: Click's 32-bit arithmetic would wrap).
fn limitation(sc: &mut Scan<'_>) -> Option<(i64, i64)> {
    for (open, close, unit) in [(b'[', b']', 8i64), (b'{', b'}', 1)] {
        // `[ %u ]`
        if let Some(o) = sc.try_(|sc| {
            sc.ws();
            sc.lit(open)?;
            sc.ws();
            let o = sc.uint()?;
            sc.ws();
            sc.lit(close)?;
            Some(o as i64)
        }) {
            return Some((o * unit, unit));
        }
        // `[ %u : %u ]` and `[ %u - %u ]`
        for sep in [b':', b'-'] {
            if let Some((a, b)) = sc.try_(|sc| {
                sc.ws();
                sc.lit(open)?;
                sc.ws();
                let a = sc.uint()? as i64;
                sc.ws();
                sc.lit(sep)?;
                sc.ws();
                let b = sc.uint()? as i64;
                sc.ws();
                sc.lit(close)?;
                Some((a, b))
            }) {
                return Some(if sep == b':' {
                    (a * unit, b * unit)
                } else {
                    (a * unit, (b - a + 1) * unit)
                });
            }
        }
    }
    None
}

/// Click's `IPField::parse(begin, end, -1, ...)` over the whole of
/// `spec`: the field and where the specification ends in `spec` (the
/// caller refuses what follows). Differences from Click, where Click
/// would go on with a field its encoding cannot hold (an offset or a
/// prefix of 0 bits, a field past its encoding's limits): these are
/// refused. A mask whose top bit is bit 31 (`ip src & 0xFF000000`, the
/// example of Click's own manual) overflows Click's arithmetic and is
/// refused there; here it means what the manual says.
pub fn parse(spec: &str) -> Result<(IpField, usize), FieldError> {
    let mut sc = Scan {
        s: spec.as_bytes(),
        at: 0,
    };
    // The header: `ip proto N`, `ip`, or a protocol name.
    let header: u32 = if let Some(n) = sc.try_(|sc| {
        sc.lit(b'i')?;
        sc.lit(b'p')?;
        // A space is required between literal words.
        if !sc.s.get(sc.at).is_some_and(|c| c.is_ascii_whitespace()) {
            return None;
        }
        sc.ws();
        for &c in b"proto" {
            sc.lit(c)?;
        }
        sc.ws();
        sc.uint()
    }) {
        n as u32
    } else if sc
        .try_(|sc| {
            sc.lit(b'i')?;
            sc.lit(b'p')?;
            (!sc.s
                .get(sc.at)
                .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_'))
            .then_some(())
        })
        .is_some()
    {
        0
    } else if let Some(p) = sc.try_(|sc| {
        let w = sc.word(&[]);
        PROTOS.iter().find(|(n, _)| *n == w).map(|(_, p)| *p)
    }) {
        u32::from(p)
    } else {
        return Err(FieldError::Syntax);
    };

    // A field name.
    let field = sc.try_(|sc| {
        sc.ws();
        let w = sc.word(b"/[{&");
        let table = if header <= u32::from(u16::MAX) {
            fields_of(header as u16)
        } else {
            &[]
        };
        table.iter().find(|(n, _)| *n == w).map(|(_, v)| *v)
    });

    // An offset and length.
    let (offset, length) = match sc.try_(limitation) {
        Some(ol) => ol,
        None if field.is_none() => return Err(FieldError::Syntax),
        None => (-1, -1),
    };
    if offset >= 0 && length <= 0 {
        return Err(FieldError::OffsetLength);
    }
    let mut field = match field {
        Some(f) => {
            let bl = i64::from(f.bit_length);
            if offset >= bl || offset + length > bl {
                return Err(FieldError::OffsetLength);
            }
            if offset >= 0 {
                IpField::new(
                    u32::from(f.proto),
                    u64::from(f.bit_offset) + offset as u64,
                    length as u64,
                )
                .ok_or(FieldError::OffsetLength)?
            } else {
                f
            }
        }
        None => {
            IpField::new(header, offset as u64, length as u64).ok_or(FieldError::OffsetLength)?
        }
    };

    // A prefix: the top bits.
    if let Some(n) = sc.try_(|sc| {
        sc.ws();
        sc.lit(b'/')?;
        sc.ws();
        sc.uint()
    }) {
        if n > u64::from(field.bit_length) {
            return Err(FieldError::PrefixMask);
        }
        field = IpField::new(u32::from(field.proto), u64::from(field.bit_offset), n)
            .ok_or(FieldError::PrefixMask)?;
    }

    // A mask: one run of 1 bits, counted from the field's low end.
    if let Some(m) = sc.try_(|sc| {
        sc.ws();
        sc.lit(b'&')?;
        sc.ws();
        sc.uint()
    }) {
        if m == 0 {
            return Err(FieldError::PrefixMask);
        }
        let low = m.trailing_zeros();
        let above = m + (1u64 << low);
        let msb = above.trailing_zeros();
        if above & (above - 1) != 0 || msb > field.bit_length {
            return Err(FieldError::PrefixMask);
        }
        field = IpField::new(
            u32::from(field.proto),
            u64::from(field.bit_offset + field.bit_length - msb),
            u64::from(msb - low),
        )
        .ok_or(FieldError::PrefixMask)?;
    }
    Ok((field, sc.at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> IpField {
        let (f, end) = parse(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(end, s.len(), "{s}");
        f
    }

    #[test]
    fn the_manual_examples_are_the_top_byte_of_the_source() {
        let top = IpField::new(0, 96, 8).unwrap();
        for s in [
            "ip src/8",
            "ip src & 0xFF000000",
            "ip[12]",
            "ip{96:8}",
            "ip{96-103}",
            "ip [ 12 ]",
            "ip[12:1]",
            "ip[12-12]",
        ] {
            assert_eq!(p(s), top, "{s}");
        }
        assert_eq!(top.unparse(), "ip src/8");
    }

    #[test]
    fn names_headers_and_masks() {
        assert_eq!(p("ip ttl"), IpField::new(0, 64, 8).unwrap());
        assert_eq!(p("tcp flags"), IpField::new(6, 104, 8).unwrap());
        assert_eq!(p("udp dport"), IpField::new(17, 16, 16).unwrap());
        assert_eq!(p("ip sport"), IpField::new(256, 0, 16).unwrap());
        assert_eq!(p("tcpudp dport"), IpField::new(256, 16, 16).unwrap());
        assert_eq!(p("ip proto 6 win"), IpField::new(6, 112, 16).unwrap());
        assert_eq!(p("ip proto"), IpField::new(0, 72, 8).unwrap());
        assert_eq!(p("transp [0:2]"), IpField::new(258, 0, 16).unwrap());
        assert_eq!(p("payload [0x4]"), IpField::new(259, 32, 8).unwrap());
        assert_eq!(parse("payload[0x4]").unwrap_err(), FieldError::Syntax);
        assert_eq!(p("ip[8:2] & 0x3F0"), IpField::new(0, 70, 6).unwrap());
        assert_eq!(p("ip dst[1]"), IpField::new(0, 136, 8).unwrap());
        assert_eq!(p("ip dst{4:4}"), IpField::new(0, 132, 4).unwrap());
    }

    #[test]
    fn unparse_is_clicks() {
        let u = |s: &str| p(s).unparse();
        assert_eq!(u("ip ttl"), "ip ttl");
        assert_eq!(u("ip sport"), "tcpudp sport");
        assert_eq!(u("tcp push"), "tcp psh");
        assert_eq!(u("tcp seqno"), "tcp seq");
        assert_eq!(u("ip[8:2] & 0x3F0"), "ip{70:6}");
        assert_eq!(u("ip dst{4:4}"), "ip dst{4:4}");
        assert_eq!(u("ip[8:2]"), "ip[8:2]");
        assert_eq!(u("ip{3}"), "ip{3}");
        assert_eq!(u("ip proto 50 [4:4]"), "ip proto 50[4:4]");
        assert_eq!(u("ip[16:4]"), "ip dst");
    }

    #[test]
    fn bad_specifications_get_clicks_messages() {
        let e = |s: &str| parse(s).unwrap_err();
        assert_eq!(e("foo"), FieldError::Syntax);
        assert_eq!(e("sport"), FieldError::Syntax, "no header");
        assert_eq!(e("tcp[0:2]"), FieldError::Syntax, "`tcp[` is not a word");
        assert_eq!(e("ip bogus"), FieldError::Syntax);
        assert_eq!(e("ip"), FieldError::Syntax);
        assert_eq!(e("ip[3:0]"), FieldError::OffsetLength);
        assert_eq!(e("ip src[4]"), FieldError::OffsetLength);
        assert_eq!(e("ip[5-4]"), FieldError::OffsetLength);
        assert_eq!(e("ip src/33"), FieldError::PrefixMask);
        assert_eq!(e("ip src/0"), FieldError::PrefixMask);
        assert_eq!(e("ip ttl & 0x101"), FieldError::PrefixMask);
        assert_eq!(e("ip ttl & 0x100"), FieldError::PrefixMask);
        assert_eq!(e("ip ttl & 0"), FieldError::PrefixMask);
        assert_eq!(
            FieldError::Syntax.to_string(),
            "expected 'HEADER [NAME] [{OFFSET:LENGTH}] [/PREFIX] [& MASK]'"
        );
        // Garbage is left for the caller.
        assert_eq!(parse("ip ttl x").unwrap().1, 6);
    }
}
