//! Text route files, one route per line, in the syntax of Click's
//! `StaticIPLookup` / `LinearIPLookup` arguments:
//!
//! ```text
//! # PREFIX            [GATEWAY]       OUTPUT
//! 0.0.0.0/0           192.0.2.1       0        // default route
//! 10.0.0.0/255.0.0.0  -               1
//! 10.1.0.0/16                         2        # directly attached
//! 2001:db8::/32       fe80::1         3
//! 198.51.100.0/24     192.0.2.1       0        # an ECMP group:
//! 198.51.100.0/24     192.0.2.9       4        # two lines, one prefix
//! ```
//!
//! - `PREFIX` is `ADDR/LEN` or `ADDR/NETMASK` (a contiguous mask of the same
//!   family), IPv4 or IPv6, with host bits zero (`10.0.0.1/8` is refused:
//!   it is more often a typo than a route).
//! - `GATEWAY` is optional; `-`, `0.0.0.0` and `::` mean none (the
//!   destination is on the attached link), as in Click. An IPv6 gateway for
//!   an IPv4 prefix is accepted (RFC 8950); an IPv4 one for an IPv6 prefix
//!   is not.
//! - `OUTPUT` is the output port, a decimal `u32`.
//! - `#` and `//` start a comment that runs to the end of the line; blank
//!   lines are ignored; fields are separated by spaces or tabs; lines end in
//!   LF or CRLF.
//! - **ECMP**: several lines with the same prefix form one ECMP group, hops
//!   in file order (a line repeated exactly adds nothing). One hop per line
//!   keeps every line in Click's syntax and lets a group be edited with line
//!   tools; [`write_text`] writes groups that way.
//!
//! A line that breaks these rules is a [`SourceError`] naming the line and
//! what is wrong.

use super::{
    Duplicates, Hop, Loaded, OnError, Route, RoutePrefix, RouteTable, SourceError, Warnings,
};
use crate::prefix::{Prefix4, Prefix6};
use std::io::{self, BufRead, BufWriter, Write};
use std::net::IpAddr;

/// Reads a text route file; `file` names it in error locations. Under
/// [`OnError::Skip`] a bad line is returned as a warning and the rest is
/// read; under [`OnError::Refuse`] the first bad line is the error.
pub fn read_text(
    mut reader: impl BufRead,
    file: &str,
    on_error: OnError,
) -> Result<Loaded, SourceError> {
    let mut table = RouteTable::new();
    let mut warnings = Warnings::new(on_error);
    let mut buf = Vec::with_capacity(256);
    let mut line_no = 0usize;
    loop {
        buf.clear();
        line_no += 1;
        match read_line(&mut reader, &mut buf) {
            Ok(Line::End) => break,
            Ok(Line::Whole) => {}
            Ok(Line::TooLong) => {
                let msg = format!("line longer than {MAX_LINE} bytes");
                warnings.error(SourceError::line(file, line_no, msg))?;
                continue;
            }
            Err(e) => {
                // The rest of the input cannot be read: nothing to skip to.
                warnings.error(SourceError::line(file, line_no, format!("read error: {e}")))?;
                break;
            }
        }
        let line = match std::str::from_utf8(&buf) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!(
                    "not UTF-8 text (bad byte at column {})",
                    e.valid_up_to() + 1
                );
                warnings.error(SourceError::line(file, line_no, msg))?;
                continue;
            }
        };
        // A byte-order mark, as some Windows editors write.
        let line = if line_no == 1 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        match parse_line(line) {
            Ok(Some(route)) => table.push(route),
            Ok(None) => {}
            Err(msg) => warnings.error(SourceError::line(file, line_no, msg))?,
        }
    }
    table.canonicalize(Duplicates::Merge);
    Ok((table, warnings.finish()))
}

/// Longest line read. Route lines are under 100 bytes; the limit keeps a
/// binary or decompressed-bomb input without newlines from filling memory.
pub const MAX_LINE: usize = 4096;

enum Line {
    /// A line (maybe the last, without a newline) is in the buffer.
    Whole,
    /// A line over [`MAX_LINE`] was consumed and dropped.
    TooLong,
    /// The input is over.
    End,
}

/// Reads one line into `buf` (which is empty), keeping at most
/// [`MAX_LINE`] bytes of it.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<Line> {
    let mut any = false;
    let mut too_long = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        if !too_long {
            if buf.len() + part.len() > MAX_LINE {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        reader.consume(used);
        if done {
            break;
        }
    }
    Ok(match (any, too_long) {
        (false, _) => Line::End,
        (true, true) => Line::TooLong,
        (true, false) => Line::Whole,
    })
}

/// Parses one line: `Ok(None)` for a blank or comment line, the route, or
/// what is wrong with it.
pub fn parse_line(line: &str) -> Result<Option<Route>, String> {
    let code = strip_comment(line);
    let mut fields = code.split_ascii_whitespace();
    let (Some(a), b, c, d) = (fields.next(), fields.next(), fields.next(), fields.next()) else {
        return Ok(None);
    };
    let (prefix, gateway, output) = match (b, c, d) {
        (Some(out), None, _) => (a, None, out),
        (Some(gw), Some(out), None) => (a, Some(gw), out),
        (None, _, _) => {
            return Err(format!(
                "`{a}`: expected PREFIX [GATEWAY] OUTPUT, the output is missing"
            ))
        }
        (Some(_), Some(_), Some(extra)) => {
            return Err(format!(
                "`{extra}`: too many fields (expected PREFIX [GATEWAY] OUTPUT; \
                 for ECMP write one line per hop)"
            ))
        }
    };
    let prefix = parse_prefix(prefix)?;
    let gateway = match gateway {
        None | Some("-") => None,
        Some(g) => parse_gateway(g, prefix)?,
    };
    let output = output.parse::<u32>().map_err(|_| {
        format!(
            "`{output}`: bad output port: expected an output port number, e.g. 0 \
                 (the element output the route's packets leave by; an interface is \
                 reached through the output connected to it)"
        )
    })?;
    Ok(Some(Route {
        prefix,
        hops: vec![Hop { gateway, output }],
    }))
}

fn strip_comment(line: &str) -> &str {
    let end = [line.find('#'), line.find("//")]
        .into_iter()
        .flatten()
        .min();
    match end {
        Some(i) => &line[..i],
        None => line,
    }
}

/// `ADDR/LEN` or `ADDR/NETMASK`.
fn parse_prefix(s: &str) -> Result<RoutePrefix, String> {
    let Some((addr, mask)) = s.split_once('/') else {
        return Err(format!("`{s}`: a prefix needs /LEN or /NETMASK"));
    };
    // An IPv4 address may be cut to its leading bytes, as Click reads
    // prefixes (`18.26/16`, `10/8`, `0/0`), when the length covers no more.
    let (addr, given_bits): (IpAddr, u8) = match addr.parse() {
        Ok(a @ IpAddr::V4(_)) => (a, 32),
        Ok(a) => (a, 128),
        Err(_) => match bricks_wire::ipv4::parse_abbreviated(addr) {
            Some((a, bytes)) => (IpAddr::V4(a), 8 * bytes),
            None => return Err(format!("`{s}`: `{addr}` is not an IPv4 or IPv6 address")),
        },
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = if !mask.is_empty() && mask.bytes().all(|b| b.is_ascii_digit()) {
        match mask.parse::<u8>() {
            Ok(len) if len <= max => len,
            _ => return Err(format!("`{s}`: prefix length {mask} is over {max}")),
        }
    } else {
        let m: IpAddr = mask
            .parse()
            .map_err(|_| format!("`{s}`: `{mask}` is neither a prefix length nor a netmask"))?;
        let len = match (addr, m) {
            (IpAddr::V4(_), IpAddr::V4(m)) => contiguous(u128::from(u32::from(m)) << 96),
            (IpAddr::V6(_), IpAddr::V6(m)) => contiguous(u128::from(m)),
            _ => {
                return Err(format!(
                    "`{s}`: netmask and address are of different families"
                ))
            }
        };
        len.ok_or_else(|| format!("`{s}`: netmask {mask} is not contiguous"))?
    };
    if len > given_bits {
        return Err(format!(
            "`{s}`: /{len} is longer than the {given_bits} bits of address given"
        ));
    }
    let prefix = match addr {
        IpAddr::V4(a) => {
            let p = Prefix4::new(u32::from(a), len);
            (p.addr == u32::from(a)).then_some(RoutePrefix::V4(p))
        }
        IpAddr::V6(a) => {
            let p = Prefix6::new(u128::from(a), len);
            (p.addr == u128::from(a)).then_some(RoutePrefix::V6(p))
        }
    };
    prefix.ok_or_else(|| {
        let fixed = match addr {
            IpAddr::V4(a) => RoutePrefix::V4(Prefix4::new(u32::from(a), len)),
            IpAddr::V6(a) => RoutePrefix::V6(Prefix6::new(u128::from(a), len)),
        };
        format!("`{s}`: host bits are set (the network is {fixed})")
    })
}

/// The length of a left-aligned contiguous mask, if it is one.
fn contiguous(mask: u128) -> Option<u8> {
    let len = mask.leading_ones();
    (mask.checked_shl(len).unwrap_or(0) == 0).then_some(len as u8)
}

fn parse_gateway(s: &str, prefix: RoutePrefix) -> Result<Option<IpAddr>, String> {
    let gw: IpAddr = s
        .parse()
        .map_err(|_| format!("`{s}`: bad gateway (an IPv4 or IPv6 address, or `-` for none)"))?;
    if gw.is_ipv4() && matches!(prefix, RoutePrefix::V6(_)) {
        return Err(format!("`{s}`: IPv4 gateway for IPv6 prefix {prefix}"));
    }
    Ok((!gw.is_unspecified()).then_some(gw))
}

/// Writes `table` in the format [`read_text`] reads, one line per hop (an
/// ECMP group is several lines with the same prefix), IPv4 first, with a
/// header comment. Reading the output back gives the same table when it is
/// canonical (as every source returns it).
pub fn write_text(table: &RouteTable, out: impl Write) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 16, out);
    writeln!(
        w,
        "# bricks route table: {} IPv4 and {} IPv6 prefixes\n\
         # PREFIX GATEWAY OUTPUT; `-` is no gateway; lines with the same prefix are an ECMP group",
        table.v4.len(),
        table.v6.len()
    )?;
    for (prefix, hops) in table.routes() {
        for hop in hops {
            match hop.gateway {
                Some(gw) => writeln!(w, "{prefix} {gw} {}", hop.output)?,
                None => writeln!(w, "{prefix} - {}", hop.output)?,
            }
        }
    }
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Location;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn v4(a: [u8; 4], len: u8) -> RoutePrefix {
        RoutePrefix::V4(Prefix4::new(u32::from(Ipv4Addr::from(a)), len))
    }

    fn v6(s: &str, len: u8) -> RoutePrefix {
        RoutePrefix::V6(Prefix6::new(
            u128::from(s.parse::<Ipv6Addr>().unwrap()),
            len,
        ))
    }

    fn hop(gw: Option<&str>, output: u32) -> Hop {
        Hop {
            gateway: gw.map(|g| g.parse().unwrap()),
            output,
        }
    }

    fn read(s: &str, on_error: OnError) -> Result<Loaded, SourceError> {
        read_text(s.as_bytes(), "routes.txt", on_error)
    }

    #[test]
    fn source_text_lines() {
        let route = |l: &str| parse_line(l).unwrap().unwrap();
        assert_eq!(
            route("10.0.0.0/8 192.0.2.1 3"),
            Route {
                prefix: v4([10, 0, 0, 0], 8),
                hops: vec![hop(Some("192.0.2.1"), 3)]
            }
        );
        assert_eq!(route("10.0.0.0/255.0.0.0 - 1").prefix, v4([10, 0, 0, 0], 8));
        assert_eq!(
            route("\t10.1.0.0/16\t2  # attached").hops,
            vec![hop(None, 2)]
        );
        assert_eq!(route("0.0.0.0/0 0.0.0.0 0").hops, vec![hop(None, 0)]);
        assert_eq!(route("0.0.0.0/0.0.0.0 0").prefix, v4([0, 0, 0, 0], 0));
        assert_eq!(route("1.2.3.4/32 7//x").prefix, v4([1, 2, 3, 4], 32));
        assert_eq!(
            route("2001:db8::/32 fe80::1 4\r\n").prefix,
            v6("2001:db8::", 32)
        );
        assert_eq!(
            route("2001:db8::/ffff:ffff:: 4").prefix,
            v6("2001:db8::", 32)
        );
        assert_eq!(route("::/0 :: 4").hops, vec![hop(None, 4)]);
        // Click's abbreviated prefixes.
        assert_eq!(route("18.26/16 2").prefix, v4([18, 26, 0, 0], 16));
        assert_eq!(route("10/8 1").prefix, v4([10, 0, 0, 0], 8));
        assert_eq!(route("0/0 18.26.4.1 1").prefix, v4([0, 0, 0, 0], 0));
        assert!(parse_line("18.26/24 1")
            .unwrap_err()
            .contains("longer than the 16 bits"));
        assert!(parse_line("300/8 1").is_err());
        assert!(read("\u{feff}10.0.0.0/8 1\n", OnError::Refuse).is_ok());
        // RFC 8950: an IPv4 route over an IPv6 next hop.
        assert_eq!(
            route("10.0.0.0/8 2001:db8::1 1").hops,
            vec![hop(Some("2001:db8::1"), 1)]
        );
        for blank in [
            "",
            "   ",
            "# comment",
            "// comment",
            "\r\n",
            "  # 10.0.0.0/8 1",
        ] {
            assert_eq!(parse_line(blank), Ok(None), "{blank:?}");
        }
    }

    #[test]
    fn source_text_bad_lines() {
        let cases = [
            ("10.0.0.0/8", "output is missing"),
            ("10.0.0.0 1", "needs /LEN"),
            ("10.0.0/25 1", "longer than the 24 bits"),
            ("10.0.0.0.0/8 1", "not an IPv4 or IPv6 address"),
            ("10.0.0.0/33 1", "over 32"),
            ("2001:db8::/129 1", "over 128"),
            ("10.0.0.0/999999999999 1", "over 32"),
            ("10.0.0.0/255.0.255.0 1", "not contiguous"),
            ("10.0.0.0/ffff:: 1", "different families"),
            ("10.0.0.0/x 1", "neither a prefix length nor a netmask"),
            ("10.0.0.0/ 1", "neither"),
            (
                "10.0.0.1/8 1",
                "host bits are set (the network is 10.0.0.0/8)",
            ),
            (
                "2001:db8::1/32 1",
                "host bits are set (the network is 2001:db8::/32)",
            ),
            ("10.0.0.0/8 gw 1", "bad gateway"),
            ("2001:db8::/32 10.0.0.1 1", "IPv4 gateway for IPv6 prefix"),
            ("10.0.0.0/8 -1", "bad output port"),
            ("10.0.0.0/8 4294967296", "bad output port"),
            ("10.0.0.0/8 eth0", "expected an output port number, e.g. 0"),
            ("10.0.0.0/8 1.1.1.1 1 | 2.2.2.2 2", "too many fields"),
        ];
        for (line, want) in cases {
            let err = parse_line(line).unwrap_err();
            assert!(err.contains(want), "{line:?}: {err}");
        }
    }

    #[test]
    fn source_text_file_ecmp_and_order() {
        let file = "\
# a table
2001:db8::/32 fe80::1 1
10.0.0.0/8 192.0.2.1 0
10.0.0.0/8 192.0.2.2 1   // second hop of the group
10.0.0.0/8 192.0.2.1 0   # repeated: nothing added
0.0.0.0/0 - 9
10.0.0.0/16 2
";
        let (table, warnings) = read(file, OnError::Refuse).unwrap();
        assert!(warnings.is_empty());
        let routes: Vec<_> = table.routes().map(|(p, h)| (p, h.to_vec())).collect();
        assert_eq!(
            routes,
            vec![
                (v4([0, 0, 0, 0], 0), vec![hop(None, 9)]),
                (
                    v4([10, 0, 0, 0], 8),
                    vec![hop(Some("192.0.2.1"), 0), hop(Some("192.0.2.2"), 1)]
                ),
                (v4([10, 0, 0, 0], 16), vec![hop(None, 2)]),
                (v6("2001:db8::", 32), vec![hop(Some("fe80::1"), 1)]),
            ]
        );
    }

    #[test]
    fn source_text_skip_and_refuse() {
        let file = "10.0.0.0/8 1\n\nbogus line here x\n10.1.0.0/16 2\n11.0.0.1/8 3\n";
        let bytes = file.as_bytes();
        let (table, warnings) = read_text(bytes, "r.txt", OnError::Skip).unwrap();
        assert_eq!(table.v4.len(), 2);
        let lines: Vec<_> = warnings
            .iter()
            .map(|w| match &w.location {
                Location::Line { file, line } => {
                    assert_eq!(file, "r.txt");
                    *line
                }
                l => panic!("{l:?}"),
            })
            .collect();
        assert_eq!(lines, [3, 5]);
        let mut raw = b"10.0.0.0/8 1\n".to_vec();
        raw.extend_from_slice(b"\xff\xfe 1\n10.1.0.0/16 2\n");
        let (table, warnings) = read_text(&raw[..], "r.txt", OnError::Skip).unwrap();
        assert_eq!((table.v4.len(), warnings.len()), (2, 1));
        assert_eq!(
            warnings[0].to_string(),
            "r.txt:2: not UTF-8 text (bad byte at column 1)"
        );

        let err = read(file, OnError::Refuse).unwrap_err();
        assert_eq!(
            err.to_string(),
            "routes.txt:3: `x`: too many fields (expected PREFIX [GATEWAY] OUTPUT; \
             for ECMP write one line per hop)"
        );
    }

    #[test]
    fn source_text_write_round_trip() {
        let file = "10.0.0.0/8 192.0.2.1 0\n10.0.0.0/8 2001:db8::1 1\n::/0 7\n1.2.3.0/24 - 4\n";
        let (table, _) = read(file, OnError::Refuse).unwrap();
        let mut out = Vec::new();
        write_text(&table, &mut out).unwrap();
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(text.contains(
            "\n1.2.3.0/24 - 4\n10.0.0.0/8 192.0.2.1 0\n10.0.0.0/8 2001:db8::1 1\n::/0 - 7\n"
        ));
        let (again, w) = read_text(&out[..], "out", OnError::Refuse).unwrap();
        assert!(w.is_empty());
        assert_eq!(again, table);
    }

    #[test]
    fn source_text_long_lines() {
        let long = format!(
            "10.0.0.0/8 {}1\n10.1.0.0/16 2\n{}",
            " ".repeat(MAX_LINE),
            "x".repeat(3 * MAX_LINE)
        );
        // A reader handing out a few bytes at a time, so lines span buffers.
        let reader = std::io::BufReader::with_capacity(7, long.as_bytes());
        let (table, warnings) = read_text(reader, "long", OnError::Skip).unwrap();
        assert_eq!(table.v4.len(), 1);
        let msgs: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            msgs,
            [
                "long:1: line longer than 4096 bytes",
                "long:3: line longer than 4096 bytes"
            ]
        );
        let exact = format!("{}10.0.0.0/8 1", " ".repeat(MAX_LINE - 12));
        assert_eq!(read(&exact, OnError::Refuse).unwrap().0.len(), 1);
    }

    #[test]
    fn source_text_many_warnings_are_capped() {
        let file = "x\n".repeat(crate::source::MAX_WARNINGS + 5);
        let (table, warnings) = read(&file, OnError::Skip).unwrap();
        assert!(table.is_empty());
        assert_eq!(warnings.len(), crate::source::MAX_WARNINGS + 1);
        assert!(warnings.last().unwrap().message.contains("5 more warnings"));
    }
}
