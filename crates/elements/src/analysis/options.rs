//! IP and TCP options in Click's summary dump text: `mss1460;wscale7`,
//! `sack1-10;sack20-30`, `ts5:6`, `rr{1.2.3.4}`, `ts.ip{...}`, `nop`,
//! `eol`, `N=B:B:...` for others; `.` for no options and `?` for options
//! that do not parse (Click's `unparse_tcp_opt` and `unparse_ip_opt` in
//! `ipsumdump_tcp.cc` and `ipsumdump_ip.cc`, and their readers). Option
//! formats: RFC 791 section 3.1 (IP), RFC 9293 section 3.2, RFC 7323 and
//! RFC 2018 (TCP).

use std::fmt::Write;

/// Longest option area of an IP or TCP header (15 words less the fixed 5).
pub const MAX_OPTIONS: usize = 40;

const EOL: u8 = 0;
const NOP: u8 = 1;

/// Which TCP options a field shows (Click's `DO_TCPOPT_*` masks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpOptSet {
    /// `tcp_opt`: every option but padding.
    All,
    /// `tcp_ntopt`: every option but padding and timestamps.
    NoTimestamp,
    /// `tcp_sack`: SACK-permitted and SACK blocks only.
    Sack,
}

impl TcpOptSet {
    fn shows(self, kind: u8) -> bool {
        match self {
            TcpOptSet::All => kind != EOL && kind != NOP,
            TcpOptSet::NoTimestamp => kind != EOL && kind != NOP && kind != 8,
            TcpOptSet::Sack => kind == 4 || kind == 5,
        }
    }
}

/// Reads a decimal (or `0x` hex, or leading-`0` octal, as Click's
/// `cp_integer` with base 0) unsigned number at the start of `s`; returns
/// the value (saturated) and the rest. `None` when no digit is there.
fn integer(s: &[u8], base0: bool) -> Option<(u64, &[u8])> {
    let (radix, start) = if base0 && s.len() > 2 && s[0] == b'0' && (s[1] | 0x20) == b'x' {
        (16, 2)
    } else if base0 && s.len() > 1 && s[0] == b'0' && s[1].is_ascii_digit() {
        (8, 1)
    } else {
        (10, 0)
    };
    let mut v: u64 = 0;
    let mut i = start;
    while i < s.len() {
        let Some(d) = char::from(s[i]).to_digit(radix) else {
            break;
        };
        v = v
            .saturating_mul(u64::from(radix))
            .saturating_add(u64::from(d));
        i += 1;
    }
    if i == start && start == 0 {
        return None;
    }
    Some((v, &s[i..]))
}

/// Click's text for TCP options `opt` (the bytes after the fixed header).
pub fn tcp_text(opt: &[u8], set: TcpOptSet, out: &mut String) {
    let start = out.len();
    let mut sep = "";
    let mut i = 0;
    // Bounded: every pass moves `i` forward or leaves the loop.
    while i < opt.len() {
        let kind = opt[i];
        match kind {
            EOL => break,
            NOP => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = opt.get(i + 1) else {
            return bad(out, start);
        };
        let len = usize::from(len);
        let body = match opt.get(i..i + len) {
            Some(b) if len >= 2 => b,
            _ => return bad(out, start),
        };
        let ok_len = match kind {
            2 => len == 4,
            3 => len == 3,
            4 => len == 2,
            5 => len % 8 == 2,
            8 => len == 10,
            _ => true,
        };
        if !ok_len {
            return bad(out, start);
        }
        if set.shows(kind) {
            let _ = match kind {
                2 => write!(out, "{sep}mss{}", u16::from_be_bytes([body[2], body[3]])),
                3 => write!(out, "{sep}wscale{}", body[2]),
                4 => write!(out, "{sep}sackok"),
                5 => {
                    for b in body[2..].chunks_exact(8) {
                        let l = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                        let r = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                        let _ = write!(out, "{sep}sack{l}-{r}");
                        sep = ";";
                    }
                    Ok(())
                }
                8 => write!(
                    out,
                    "{sep}ts{}:{}",
                    u32::from_be_bytes([body[2], body[3], body[4], body[5]]),
                    u32::from_be_bytes([body[6], body[7], body[8], body[9]])
                ),
                _ => unknown_text(out, sep, body),
            };
            sep = ";";
        }
        i += len;
    }
    if out.len() == start {
        out.push('.');
    }
}

fn unknown_text(out: &mut String, sep: &str, body: &[u8]) -> std::fmt::Result {
    write!(out, "{sep}{}", body[0])?;
    let mut c = '=';
    for b in &body[2..] {
        write!(out, "{c}{b}")?;
        c = ':';
    }
    Ok(())
}

fn bad(out: &mut String, start: usize) {
    out.truncate(start);
    out.push('?');
}

/// Reads Click's text for TCP options into their bytes (at most
/// [`MAX_OPTIONS`]); `.` is no options. `None` when the text is malformed.
pub fn tcp_parse(text: &str, set: TcpOptSet) -> Option<Vec<u8>> {
    let mut s = text.as_bytes();
    let mut o: Vec<u8> = Vec::new();
    if s.is_empty() || s == b"." {
        return Some(o);
    }
    let sack = matches!(
        set,
        TcpOptSet::All | TcpOptSet::NoTimestamp | TcpOptSet::Sack
    );
    let others = set != TcpOptSet::Sack;
    // Bounded: every pass consumes at least one byte of `s` or returns.
    loop {
        if others && s.starts_with(b"mss") {
            let (v, rest) = integer(&s[3..], true)?;
            let v = u16::try_from(v).ok()?;
            o.extend_from_slice(&[2, 4]);
            o.extend_from_slice(&v.to_be_bytes());
            s = rest;
        } else if others && s.starts_with(b"wscale") {
            let (v, rest) = integer(&s[6..], true)?;
            o.extend_from_slice(&[3, 3, u8::try_from(v).ok()?]);
            s = rest;
        } else if sack && s.starts_with(b"sackok") {
            o.extend_from_slice(&[4, 2]);
            s = &s[6..];
        } else if sack && s.starts_with(b"sack") {
            let at = o.len();
            o.extend_from_slice(&[5, 0]);
            s = &s[4..];
            loop {
                let (l, rest) = integer(s, true)?;
                let rest = match rest.first() {
                    Some(b':' | b'-') => &rest[1..],
                    _ => return None,
                };
                let (r, rest) = integer(rest, true)?;
                o.extend_from_slice(&(l as u32).to_be_bytes());
                o.extend_from_slice(&(r as u32).to_be_bytes());
                s = rest;
                if o.len() - at > MAX_OPTIONS {
                    return None;
                }
                match s.strip_prefix(b",sack") {
                    Some(rest) => s = rest,
                    None => break,
                }
            }
            o[at + 1] = (o.len() - at) as u8;
        } else if set == TcpOptSet::All && s.starts_with(b"ts") {
            let (a, rest) = integer(&s[2..], true)?;
            let rest = rest.strip_prefix(b":")?;
            let (b, rest) = integer(rest, true)?;
            if o.is_empty() {
                o.extend_from_slice(&[NOP, NOP]);
            }
            o.extend_from_slice(&[8, 10]);
            o.extend_from_slice(&(a as u32).to_be_bytes());
            o.extend_from_slice(&(b as u32).to_be_bytes());
            s = rest;
        } else if others && s.first().is_some_and(u8::is_ascii_digit) {
            s = unknown_parse(s, &mut o)?;
        } else if s.starts_with(b"nop") {
            o.push(NOP);
            s = &s[3..];
        } else if s.starts_with(b"eol") && s.get(3) != Some(&b',') {
            o.push(EOL);
            s = &s[3..];
        } else {
            return None;
        }
        if o.len() > 2 * MAX_OPTIONS {
            return None;
        }
        match s.first() {
            None => return finish(o),
            Some(c) if c.is_ascii_whitespace() => return finish(o),
            Some(b',' | b';') => s = &s[1..],
            Some(_) => return None,
        }
    }
}

/// `N` or `N=B:B:...`: an option Click has no name for.
fn unknown_parse<'a>(s: &'a [u8], o: &mut Vec<u8>) -> Option<&'a [u8]> {
    let (kind, mut s) = integer(s, true)?;
    o.push(u8::try_from(kind).ok()?);
    if s.len() > 1 && s[0] == b'=' && s[1].is_ascii_digit() {
        let at = o.len();
        o.push(0);
        loop {
            let (b, rest) = integer(&s[1..], true)?;
            o.push(u8::try_from(b).ok()?);
            s = rest;
            if o.len() - at > MAX_OPTIONS {
                return None;
            }
            if !(s.len() > 1 && s[0] == b':' && s[1].is_ascii_digit()) {
                break;
            }
        }
        o[at] = (o.len() - at + 1) as u8;
    }
    Some(s)
}

/// Drops leading NOPs that push the options past the limit, as Click does.
fn finish(mut o: Vec<u8>) -> Option<Vec<u8>> {
    while o.len() > MAX_OPTIONS && o.first() == Some(&NOP) {
        o.remove(0);
    }
    (o.len() <= MAX_OPTIONS).then_some(o)
}

/// Click's text for IP options `opt` (the bytes after the fixed header).
pub fn ip_text(opt: &[u8], out: &mut String) {
    let start = out.len();
    let mut sep = "";
    let mut i = 0;
    // Bounded: every pass moves `i` forward or leaves the loop.
    while i < opt.len() {
        let kind = opt[i];
        match kind {
            EOL => break,
            NOP => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let Some(&len) = opt.get(i + 1) else {
            return bad(out, start);
        };
        let len = usize::from(len);
        let Some(body) = opt.get(i..i + len) else {
            return bad(out, start);
        };
        match kind {
            7 | 131 | 137 => {
                if len < 3 || body[2] < 4 {
                    return bad(out, start);
                }
                let name = match kind {
                    7 => "rr",
                    131 => "lsrr",
                    _ => "ssrr",
                };
                let _ = write!(out, "{sep}{name}");
                route_text(body, kind == 7, out);
            }
            68 => {
                if len < 4 || body[2] < 5 {
                    return bad(out, start);
                }
                let _ = write!(out, "{sep}ts");
                ts_text(body, out);
            }
            _ => {
                if len < 2 {
                    return bad(out, start);
                }
                let _ = unknown_text(out, sep, body);
            }
        }
        sep = ";";
        i += len;
    }
    if out.len() == start {
        out.push('.');
    }
}

fn addr(out: &mut String, b: &[u8]) {
    let _ = write!(out, "{}.{}.{}.{}", b[0], b[1], b[2], b[3]);
}

/// `{A,B^C}`: the addresses of a route option, `^` at the pointer (source
/// routes), `+N` for the free slots of a record route.
fn route_text(body: &[u8], record: bool, out: &mut String) {
    let ptr = usize::from(body[2]) - 1;
    let mut o = 3;
    let mut sep = "";
    out.push('{');
    while o + 4 <= body.len() {
        if o == ptr {
            if record {
                break;
            }
            sep = "^";
        }
        out.push_str(sep);
        addr(out, &body[o..o + 4]);
        sep = ",";
        o += 4;
    }
    if o == body.len() && o == ptr && !record {
        out.push('^');
    }
    out.push('}');
    if o + 4 <= body.len() && o == ptr && record {
        let _ = write!(out, "+{}", (body.len() - o) / 4);
    }
}

/// `.ip{A=T,...}`, `.preip{...}` or `{T,...}`: an IP timestamp option.
fn ts_text(body: &[u8], out: &mut String) {
    let ptr = usize::from(body[2]) - 1;
    let flag = body[3] & 15;
    let size = if (1..=3).contains(&flag) { 8 } else { 4 };
    // An entry of every flag but 0 is an address and a timestamp, as
    // Click prints it; for the flags RFC 791 does not define (2, 4 and
    // up) Click's `size` is 4 and it reads an entry's timestamp past the
    // option's end when only the address fits; here such an entry ends
    // the list.
    let entry = if flag == 0 { 4 } else { 8 };
    match flag {
        0 => {}
        1 => out.push_str(".ip"),
        3 => out.push_str(".preip"),
        f => {
            let _ = write!(out, ".{f}");
        }
    }
    out.push('{');
    let mut o = 4;
    let mut sep = "";
    while o + entry <= body.len() {
        if o == ptr {
            if flag != 3 {
                break;
            }
            sep = "^";
        }
        out.push_str(sep);
        let mut t = o;
        if flag != 0 {
            addr(out, &body[t..t + 4]);
            out.push('=');
            t += 4;
        }
        if flag == 3 && t > ptr {
            out.pop();
        } else {
            let v = u32::from_be_bytes([body[t], body[t + 1], body[t + 2], body[t + 3]]);
            if v & 0x8000_0000 != 0 {
                out.push('!');
            }
            let _ = write!(out, "{}", v & 0x7fff_ffff);
        }
        sep = ",";
        o += entry;
    }
    if o == body.len() && o == ptr {
        out.push('^');
    }
    out.push('}');
    if o + size <= body.len() && o == ptr {
        let _ = write!(out, "+{}", (body.len() - o) / size);
    }
    if body[3] & 0xf0 != 0 {
        let _ = write!(out, "++{}", body[3] >> 4);
    }
}

/// Reads Click's text for IP options into their bytes (at most
/// [`MAX_OPTIONS`]); `.` is no options. `None` when malformed.
pub fn ip_parse(text: &str) -> Option<Vec<u8>> {
    let mut s = text.as_bytes();
    let mut o: Vec<u8> = Vec::new();
    if s.is_empty() || s == b"." {
        return Some(o);
    }
    // Bounded: every pass consumes at least one byte of `s` or returns.
    loop {
        if let Some(rest) = s.strip_prefix(b"rr{") {
            s = route_parse(7, rest, &mut o)?;
        } else if let Some(rest) = s.strip_prefix(b"lsrr{") {
            s = route_parse(131, rest, &mut o)?;
        } else if let Some(rest) = s.strip_prefix(b"ssrr{") {
            s = route_parse(137, rest, &mut o)?;
        } else if s.starts_with(b"ts{") || s.starts_with(b"ts.") {
            s = ts_parse(s, &mut o)?;
        } else if s.first().is_some_and(u8::is_ascii_digit) {
            s = unknown_parse(s, &mut o)?;
        } else if s.starts_with(b"nop") {
            o.push(NOP);
            s = &s[3..];
        } else if s.starts_with(b"eol") && s.get(3) != Some(&b',') {
            o.push(EOL);
            s = &s[3..];
        } else {
            return None;
        }
        if o.len() > 2 * MAX_OPTIONS {
            return None;
        }
        match s.first() {
            None => return finish(o),
            Some(b',' | b';') => s = &s[1..],
            Some(_) => return None,
        }
    }
}

fn addr_parse<'a>(mut s: &'a [u8], o: &mut Vec<u8>) -> Option<&'a [u8]> {
    for i in 0..4 {
        let (v, rest) = integer(s, false)?;
        o.push(u8::try_from(v).ok()?);
        s = rest;
        if i < 3 {
            s = s.strip_prefix(b".")?;
        }
    }
    Some(s)
}

fn route_parse<'a>(kind: u8, mut s: &'a [u8], o: &mut Vec<u8>) -> Option<&'a [u8]> {
    let at = o.len();
    o.extend_from_slice(&[kind, 0, 0]);
    let mut pointer = None;
    loop {
        if s.first() == Some(&b'^') && pointer.is_none() {
            pointer = Some(o.len() - at + 1);
            s = &s[1..];
        }
        if !s.first().is_some_and(u8::is_ascii_digit) {
            break;
        }
        s = addr_parse(s, o)?;
        if o.len() - at > MAX_OPTIONS {
            return None;
        }
        if s.first() == Some(&b',') {
            s = &s[1..];
        }
    }
    s = s.strip_prefix(b"}")?;
    o[at + 2] = pointer.unwrap_or(o.len() - at + 1) as u8;
    if s.len() > 1 && s[0] == b'+' && s[1].is_ascii_digit() {
        let (n, rest) = integer(&s[1..], false)?;
        if n < 16 {
            o.resize(o.len() + n as usize * 4, 0);
        }
        s = rest;
    }
    if o.len() - at > MAX_OPTIONS {
        return None;
    }
    o[at + 1] = (o.len() - at) as u8;
    Some(s)
}

/// The IP timestamp option, `ts{...}`, `ts.ip{...}`, `ts.preip{...}` or
/// `ts.N{...}`.
fn ts_parse<'a>(s: &'a [u8], o: &mut Vec<u8>) -> Option<&'a [u8]> {
    let at = o.len();
    o.extend_from_slice(&[68, 0, 0, 0]);
    // -1: not known yet; -2: addresses seen, flag 1 or 3.
    let mut flag: i32 = -1;
    let mut s = if s[2] == b'.' {
        if let Some(rest) = s[3..].strip_prefix(b"ip{") {
            flag = 1;
            rest
        } else if let Some(rest) = s[3..].strip_prefix(b"preip{") {
            flag = 3;
            rest
        } else {
            let (f, rest) = integer(&s[3..], true)?;
            if f > 15 {
                return None;
            }
            flag = f as i32;
            rest.strip_prefix(b"{")?
        }
    } else {
        &s[3..]
    };
    let mut pointer = None;
    loop {
        if s.first() == Some(&b'^') && pointer.is_none() {
            pointer = Some(o.len() - at + 1);
            s = &s[1..];
        }
        if !s.first().is_some_and(|c| c.is_ascii_digit() || *c == b'!') {
            break;
        }
        let entry = s;
        let mut retried = false;
        // At most two passes: the second reads the entry as `ADDR=TIME`.
        'entry: loop {
            // Every flag but 0 has an address before each time (Click
            // prints the flags RFC 791 leaves undefined so).
            if flag > 0 || flag == -2 {
                s = addr_parse(s, o)?;
                if pointer.is_some() && flag == -2 {
                    flag = 3;
                }
                if s.len() > 1 && s[0] == b'=' {
                    if s[1].is_ascii_digit() || s[1] == b'!' {
                        s = &s[1..];
                    } else if s[1] == b'?' && pointer.is_some() {
                        o.extend_from_slice(&[0; 4]);
                        s = &s[2..];
                        break 'entry;
                    } else {
                        return None;
                    }
                } else if pointer.is_some() {
                    o.extend_from_slice(&[0; 4]);
                    break 'entry;
                } else {
                    return None;
                }
            }
            let mut top = 0u32;
            if s.first() == Some(&b'!') {
                top = 0x8000_0000;
                s = &s[1..];
            }
            let (v, rest) = integer(s, true)?;
            if rest.first() == Some(&b'.') && flag == -1 && !retried {
                flag = -2;
                retried = true;
                s = entry;
                continue 'entry;
            } else if flag == -1 {
                flag = 0;
            }
            o.extend_from_slice(&((v as u32) | top).to_be_bytes());
            s = rest;
            break 'entry;
        }
        if o.len() - at > MAX_OPTIONS {
            return None;
        }
        if s.first() == Some(&b',') {
            s = &s[1..];
        }
    }
    if let Some((&c, rest)) = s.split_first() {
        if c != b'}' {
            return None;
        }
        s = rest;
    }
    if flag == -2 {
        flag = 1;
    }
    let flag = flag.max(0) as u8;
    o[at + 2] = pointer.unwrap_or(o.len() - at + 1) as u8;
    if s.len() > 1 && s[0] == b'+' && s[1].is_ascii_digit() {
        let (n, rest) = integer(&s[1..], true)?;
        if n < 16 {
            // As the text counts them: Click's entry size.
            let size = if (1..=3).contains(&flag) { 8 } else { 4 };
            o.resize(o.len() + n as usize * size, 0);
        }
        s = rest;
    }
    let mut overflow = 0u8;
    if s.len() > 2 && s[0] == b'+' && s[1] == b'+' && s[2].is_ascii_digit() {
        let (n, rest) = integer(&s[2..], true)?;
        if n < 16 {
            overflow = n as u8;
        }
        s = rest;
    }
    o[at + 3] = (overflow << 4) | flag;
    if o.len() - at > MAX_OPTIONS {
        return None;
    }
    o[at + 1] = (o.len() - at) as u8;
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(o: &[u8]) -> String {
        let mut s = String::new();
        tcp_text(o, TcpOptSet::All, &mut s);
        s
    }

    fn ip(o: &[u8]) -> String {
        let mut s = String::new();
        ip_text(o, &mut s);
        s
    }

    #[test]
    fn tcp_options_of_a_linux_syn() {
        // MSS 1460, SACK permitted, timestamps, NOP, window scale 7.
        let o = [
            2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6, 1, 3, 3, 7,
        ];
        assert_eq!(tcp(&o), "mss1460;sackok;ts5:6;wscale7");
        let mut s = String::new();
        tcp_text(&o, TcpOptSet::NoTimestamp, &mut s);
        assert_eq!(s, "mss1460;sackok;wscale7");
        s.clear();
        tcp_text(&o, TcpOptSet::Sack, &mut s);
        assert_eq!(s, "sackok");
        assert_eq!(tcp(&[]), ".");
        assert_eq!(tcp(&[2, 4, 5]), "?");
        assert_eq!(tcp(&[2, 3, 5, 0]), "?");
    }

    #[test]
    fn tcp_options_read_back() {
        for t in [
            "mss1460",
            "sack1-10;sack1-18",
            "wscale10",
            "ts5:6",
            "mss1460;sackok;ts5:6;wscale7",
            "99=1:2:3",
            "99",
        ] {
            let o = tcp_parse(t, TcpOptSet::All).unwrap();
            if t == "99" {
                assert_eq!(o, [99]);
                continue;
            }
            assert_eq!(tcp(&o), t, "{t}");
        }
        assert_eq!(
            tcp_parse("sack1-10,sack1-18", TcpOptSet::All).unwrap(),
            [5, 18, 0, 0, 0, 1, 0, 0, 0, 10, 0, 0, 0, 1, 0, 0, 0, 18]
        );
        assert_eq!(tcp_parse("ts1:2", TcpOptSet::All).unwrap()[..2], [1, 1]);
        assert_eq!(tcp_parse(".", TcpOptSet::All).unwrap(), []);
        for bad in [
            "mss",
            "mss70000",
            "wscale300",
            "sack1",
            "ts1",
            "bogus",
            "mss1;",
        ] {
            assert_eq!(tcp_parse(bad, TcpOptSet::All), None, "{bad}");
        }
        let long = ["mss1"; 12].join(";");
        assert_eq!(tcp_parse(&long, TcpOptSet::All), None);
    }

    #[test]
    fn ip_options() {
        // Record route with room for 2 more, one filled in.
        let rr = [7, 11, 8, 1, 2, 3, 4, 0, 0, 0, 0, 0];
        assert_eq!(ip(&rr[..11]), "rr{1.2.3.4}+1");
        let lsrr = [131, 11, 8, 1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(ip(&lsrr), "lsrr{1.2.3.4^5.6.7.8}");
        assert_eq!(ip(&[148, 4, 0, 0]), "148=0:0");
        assert_eq!(ip(&[68, 12, 13, 0, 0, 0, 0, 1, 0, 0, 0, 2]), "ts{1,2^}");
        assert_eq!(ip(&[7, 1]), "?");
        // Flags RFC 791 leaves undefined: entries of an address and a
        // timestamp, as Click prints them; one with only its address
        // inside the option ends the list (Click reads past the option).
        assert_eq!(
            ip(&[68, 12, 13, 2, 1, 2, 3, 4, 0, 0, 0, 9]),
            "ts.2{1.2.3.4=9^}"
        );
        assert_eq!(ip(&[68, 12, 5, 2, 1, 2, 3, 4, 0, 0, 0, 9]), "ts.2{}+1");
        assert_eq!(ip(&[68, 8, 5, 11, 0, 0, 0, 3]), "ts.11{}+1");
        assert_eq!(ip(&[68, 8, 9, 11, 0, 0, 0, 3]), "ts.11{}");
        assert_eq!(
            ip(&[68, 12, 13, 4, 1, 2, 3, 4, 0, 0, 0, 9]),
            "ts.4{1.2.3.4=9^}"
        );
        for t in [
            "ts.2{1.2.3.4=9^}",
            "ts.4{1.2.3.4=9^}",
            "ts.2{1.2.3.4=9}+1",
            "ts.4{1.2.3.4=9}+2",
            "ts.15{}+1",
        ] {
            let o = ip_parse(t).unwrap_or_else(|| panic!("{t} does not parse"));
            assert_eq!(ip(&o), t, "{t}");
        }
        // What an option whose entries do not fill it prints reads back.
        let odd = [68, 16, 17, 2, 0, 0, 13, 232, 0, 0, 0, 0, 0, 0, 0, 6];
        assert_eq!(ip(&odd), "ts.2{0.0.13.232=0}");
        assert!(ip_parse("ts.2{0.0.13.232=0}").is_some());
        for t in ["ts.11{3", "ts.1{3{3", "ts.11{3}", "ts.4{1}"] {
            if let Some(o) = ip_parse(t) {
                let _ = ip(&o);
            }
        }
        for t in [
            "rr{1.2.3.4}+1",
            "lsrr{1.2.3.4^5.6.7.8}",
            "ssrr{^1.2.3.4}",
            "148=0:0",
            "ts{1,2^}",
            "ts.ip{1.0.0.1=5}+1",
            "ts.preip{1.0.0.1=5^2.0.0.2}",
        ] {
            let o = ip_parse(t).unwrap();
            assert_eq!(ip(&o), t, "{t}");
        }
        for bad in ["rr{1.2.3}", "rr{1.2.3.4", "ts.x{1}", "xyz", "ts.ip{1}"] {
            assert_eq!(ip_parse(bad), None, "{bad}");
        }
    }
}
