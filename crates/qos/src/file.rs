//! The flow file and the flow syntax of `FlowTable`'s `add` and `remove`
//! handlers: one flow a line, `#` to the end of a line is a comment.
//!
//! ```text
//! # KEY                              RATE         NEXT HOP          OUTPUT
//! tag 17                             rate 64k     via 10.0.2.1      output 1
//! tag 18                             rate 2.5M
//! udp 10.0.0.1:5000 10.0.9.9:53      rate 1G      via 10.0.3.1      output 2
//! tcp 10.0.0.1 10.0.9.9:80           rate 100000
//! proto 47 192.0.2.1 198.51.100.7    rate 10M     output 0
//! ```
//!
//! A key is `tag N` (tag mode: the flow ID the packet carries, an MPLS
//! label by default) or a 5-tuple (match mode): the protocol (`tcp`,
//! `udp`, `icmp`, `sctp` or `proto N`), the source and the destination
//! address, each with an optional `:port` (0 when left out; protocols
//! other than TCP, UDP, SCTP and UDP-Lite have no ports and must leave
//! them out). `rate` is the flow's reserved rate in bit/s, with an
//! optional decimal unit `k`, `M`, `G` or `T` and an optional `bps`
//! (`64k`, `64kbps`, `2.5M`); it is mandatory, and 0 or more than
//! 1 Tbit/s is refused. `via` is the next hop for route selection "look"
//! (default: none, the packet's destination address stays as it is),
//! `output` the output port of `FlowLookup` (default 0). A key given
//! twice is refused with both lines.

use crate::flow::{FiveTuple, FlowKey, FlowSpec, MAX_RATE_BPS};
use std::net::Ipv4Addr;

/// The most lines a flow file may hold: a file is read whole into memory
/// before the table is filled.
pub const MAX_LINES: usize = 1 << 22;

/// A line of a flow file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number (0 for a single handler argument).
    pub line: usize,
    /// What is wrong with it.
    pub reason: String,
}

impl core::fmt::Display for LineError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.line == 0 {
            f.write_str(&self.reason)
        } else {
            write!(f, "line {}: {}", self.line, self.reason)
        }
    }
}

impl std::error::Error for LineError {}

/// Whether protocol `p` carries 16-bit ports at the start of its header.
#[inline(always)]
pub fn has_ports(p: u8) -> bool {
    matches!(p, 6 | 17 | 132 | 136)
}

fn protocol(word: &str) -> Option<u8> {
    match word.to_ascii_lowercase().as_str() {
        "tcp" => Some(6),
        "udp" => Some(17),
        "icmp" => Some(1),
        "sctp" => Some(132),
        "udplite" => Some(136),
        _ => None,
    }
}

fn endpoint(word: &str, proto: u8) -> Result<(Ipv4Addr, u16), String> {
    let (addr, port) = match word.split_once(':') {
        Some((a, p)) => {
            if !has_ports(proto) {
                return Err(format!(
                    "`{word}`: protocol {proto} has no ports; leave out `:{p}`"
                ));
            }
            let p: u16 = p
                .parse()
                .map_err(|_| format!("`{p}` is not a port (0 to 65535)"))?;
            (a, p)
        }
        None => (word, 0),
    };
    let a: Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("`{addr}` is not an IPv4 address"))?;
    Ok((a, port))
}

/// Reads a rate in bit/s: a decimal number with an optional unit `k`,
/// `M`, `G` or `T` (powers of 1000) and an optional `bps`. 0 and rates
/// above 1 Tbit/s are refused.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.strip_suffix("bps").unwrap_or(text);
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'M')) => (&t[..i], 1e6),
        Some((i, 'G')) => (&t[..i], 1e9),
        Some((i, 'T')) => (&t[..i], 1e12),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0 && !num.starts_with('+'))
        .ok_or_else(|| format!("`{text}` is not a rate (e.g. 64k, 2.5M, 1G)"))?;
    let bps = (v * scale).round();
    if bps < 1.0 {
        return Err(format!("rate `{text}` is 0: a flow needs a reserved rate"));
    }
    if bps > MAX_RATE_BPS as f64 {
        return Err(format!("rate `{text}` is above 1 Tbit/s"));
    }
    Ok(bps as u64)
}

/// Reads a flow key from the front of `words`, returning it and the number
/// of words it took.
pub fn parse_key(words: &[&str]) -> Result<(FlowKey, usize), String> {
    let Some(&first) = words.first() else {
        return Err("missing flow key (`tag N` or `PROTO SRC[:PORT] DST[:PORT]`)".into());
    };
    if first == "tag" {
        let n = words.get(1).ok_or("`tag` needs a flow ID")?;
        let id: u32 = n
            .parse()
            .map_err(|_| format!("`{n}` is not a flow ID (0 to 4294967295)"))?;
        return Ok((FlowKey::Tag(id), 2));
    }
    let (proto, used) = if first == "proto" {
        let n = words.get(1).ok_or("`proto` needs a protocol number")?;
        let p: u8 = n
            .parse()
            .map_err(|_| format!("`{n}` is not a protocol number (0 to 255)"))?;
        (p, 2)
    } else {
        let p = protocol(first).ok_or_else(|| {
            format!("`{first}` is not a flow key: write `tag N`, or tcp, udp, icmp, sctp, udplite or `proto N` and two addresses")
        })?;
        (p, 1)
    };
    let (Some(src), Some(dst)) = (words.get(used), words.get(used + 1)) else {
        return Err("a 5-tuple needs a source and a destination address".into());
    };
    let (src, sport) = endpoint(src, proto)?;
    let (dst, dport) = endpoint(dst, proto)?;
    Ok((
        FlowKey::Tuple(FiveTuple {
            src,
            dst,
            sport,
            dport,
            proto,
        }),
        used + 2,
    ))
}

/// Reads one flow: `KEY rate RATE [via ADDR] [output N]`.
pub fn parse_flow(line: &str) -> Result<FlowSpec, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let (key, mut i) = parse_key(&words)?;
    let mut rate = None;
    let mut next_hop = None;
    let mut output = None;
    while i < words.len() {
        let w = words[i];
        let v = words
            .get(i + 1)
            .ok_or_else(|| format!("`{w}` needs a value"))?;
        match w {
            "rate" if rate.is_none() => rate = Some(parse_rate(v)?),
            "via" if next_hop.is_none() => {
                next_hop = Some(
                    v.parse::<Ipv4Addr>()
                        .map_err(|_| format!("`{v}` is not an IPv4 next hop"))?,
                )
            }
            "output" if output.is_none() => {
                output = Some(
                    v.parse::<u16>()
                        .map_err(|_| format!("`{v}` is not an output port (0 to 65535)"))?,
                )
            }
            "rate" | "via" | "output" => return Err(format!("`{w}` given twice")),
            _ => {
                return Err(format!(
                    "unexpected `{w}`: after the key come `rate R`, `via ADDR` and `output N`"
                ))
            }
        }
        i += 2;
    }
    let rate = rate.ok_or("missing `rate R` (the flow's reserved rate in bit/s)")?;
    Ok(FlowSpec {
        key,
        rate,
        next_hop,
        output: output.unwrap_or(0),
    })
}

/// Writes a flow as a line of the flow file (what `parse_flow` reads back).
pub fn format_flow(f: &FlowSpec) -> String {
    let mut s = format!("{} rate {}", f.key, f.rate);
    if let Some(h) = f.next_hop {
        s.push_str(&format!(" via {h}"));
    }
    s.push_str(&format!(" output {}", f.output));
    s
}

/// Reads a flow file. Every flow is checked; the first bad line is the
/// error. A key given twice names both lines.
pub fn parse_flows(text: &str) -> Result<Vec<FlowSpec>, LineError> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if out.len() >= MAX_LINES {
            return Err(LineError {
                line: n + 1,
                reason: format!("more than {MAX_LINES} flows"),
            });
        }
        let f = parse_flow(line).map_err(|reason| LineError {
            line: n + 1,
            reason,
        })?;
        if let Some(first) = seen.insert(f.key, n + 1) {
            return Err(LineError {
                line: n + 1,
                reason: format!("{} is already on line {first}", f.key),
            });
        }
        out.push(f);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_both_kinds() {
        let text = "# flows\n\
                    tag 17 rate 64k via 10.0.2.1 output 1\n\
                    \n\
                    tag 18 rate 2.5M   # comment\n\
                    udp 10.0.0.1:5000 10.0.9.9:53 rate 1Gbps via 10.0.3.1 output 2\n\
                    proto 47 192.0.2.1 198.51.100.7 output 3 rate 10M\n";
        let f = parse_flows(text).unwrap();
        assert_eq!(f.len(), 4);
        assert_eq!(f[0].key, FlowKey::Tag(17));
        assert_eq!(f[0].rate, 64_000);
        assert_eq!(f[0].next_hop, Some(Ipv4Addr::new(10, 0, 2, 1)));
        assert_eq!(f[0].output, 1);
        assert_eq!(f[1].rate, 2_500_000);
        assert_eq!(f[1].next_hop, None);
        assert_eq!(f[1].output, 0);
        assert_eq!(
            f[2].key,
            FlowKey::Tuple(FiveTuple {
                src: Ipv4Addr::new(10, 0, 0, 1),
                dst: Ipv4Addr::new(10, 0, 9, 9),
                sport: 5000,
                dport: 53,
                proto: 17
            })
        );
        assert_eq!(f[2].rate, 1_000_000_000);
        assert_eq!(f[3].output, 3);
    }

    #[test]
    fn bad_lines_are_refused_with_their_number() {
        let cases = [
            ("tag 1 rate 0", "is 0"),
            ("tag 1 rate 1.5T", "above 1 Tbit/s"),
            ("tag 1 rate -5", "not a rate"),
            ("tag 1", "missing `rate R`"),
            ("tag x rate 1", "not a flow ID"),
            ("icmp 1.2.3.4:5 1.2.3.5 rate 1", "has no ports"),
            ("tcp 1.2.3.4:70000 1.2.3.5 rate 1", "not a port"),
            ("tcp 1.2.3 1.2.3.5 rate 1", "not an IPv4 address"),
            ("tcp 1.2.3.4 rate 1", "not an IPv4 address"),
            ("gre 1.2.3.4 1.2.3.5 rate 1", "not a flow key"),
            ("tag 1 rate 1 rate 2", "given twice"),
            ("tag 1 rate 1 via", "needs a value"),
            ("tag 1 rate 1 colour red", "unexpected `colour`"),
            ("tag 1 rate 1 via 10.0.0", "not an IPv4 next hop"),
        ];
        for (line, why) in cases {
            let e = parse_flows(&format!("# header\n{line}\n")).unwrap_err();
            assert_eq!(e.line, 2, "{line}");
            assert!(e.reason.contains(why), "{line}: {}", e.reason);
        }
        assert_eq!(parse_rate("1T"), Ok(MAX_RATE_BPS));
        assert_eq!(parse_rate("1"), Ok(1));
        assert!(parse_rate("0.4").is_err());
    }

    #[test]
    fn formatted_flows_read_back() {
        let text = "tag 17 rate 64k via 10.0.2.1 output 1\n\
                    udp 10.0.0.1:5000 10.0.9.9:53 rate 1G\n\
                    proto 47 192.0.2.1 198.51.100.7 rate 10M output 3\n\
                    tcp 1.1.1.1 2.2.2.2:80 rate 1\n";
        for f in parse_flows(text).unwrap() {
            assert_eq!(parse_flow(&format_flow(&f)), Ok(f));
        }
    }

    #[test]
    fn duplicates_name_both_lines() {
        let e =
            parse_flows("tag 3 rate 1k\nudp 1.1.1.1 2.2.2.2 rate 1\ntag 3 rate 2k\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(e.reason, "tag 3 is already on line 1");
        let e =
            parse_flows("udp 1.1.1.1 2.2.2.2 rate 1\nudp 1.1.1.1:0 2.2.2.2 rate 9\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }
}
