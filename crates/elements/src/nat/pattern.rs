//! Rewriting patterns and input specifications, parsed and printed as
//! Click's `IPRewriterPattern` and `IPRewriterBase::parse_input_spec` do
//! (`elements/ip/iprwpattern.cc`, `iprewriterbase.cc`).
//!
//! A pattern `SADDR SPORT DADDR DPORT` (or `SADDR DADDR` for the
//! address-only rewriters) says what a new flow becomes; `-` keeps a
//! field. One source field may be a range (`L-H`, or a prefix for
//! addresses): the rewriter then picks a value whose reply flow is not
//! already mapped, preferring the packet's own (unless the range ends in
//! `?`), sequentially from the last one taken with `#`, randomly
//! otherwise.

use super::flow::Tuple;
use bricks_element::click_random;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

/// Finds a named pattern (IPRewriterPatterns) visible to a rewriter.
pub type Named<'a> = &'a dyn Fn(&str) -> Option<Arc<Pattern>>;

/// Finds a mapper element (RoundRobinIPMapper) an input spec names; the
/// error says why the word names none.
pub type MapperOf<'a> = &'a dyn Fn(&str) -> Result<Arc<Mapper>, String>;

/// A mapper element's state (Click's `IPMapper`; RoundRobinIPMapper,
/// SourceIPHashMapper): patterns with their outputs, tried in turn, one
/// new flow each, or chosen by the flow's source address.
pub struct Mapper {
    /// The mapper's name, for errors.
    pub name: String,
    pub choices: Vec<(Arc<Pattern>, usize, usize)>,
    next: std::sync::atomic::AtomicUsize,
    /// Picks a choice by the flow's source address instead of in turn
    /// (SourceIPHashMapper).
    by_source: Option<Box<dyn Fn(u32) -> usize + Send + Sync>>,
}

impl std::fmt::Debug for Mapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mapper")
            .field("name", &self.name)
            .field("choices", &self.choices)
            .field("by_source", &self.by_source.is_some())
            .finish()
    }
}

impl Mapper {
    /// Parses `PATTERN FOUTPUT ROUTPUT` specs (a one-word PATTERN names
    /// an IPRewriterPatterns pattern). Outputs are checked by the
    /// rewriter that uses the mapper.
    pub fn parse<'a>(
        name: &str,
        specs: impl IntoIterator<Item = &'a str>,
        named: Named<'_>,
    ) -> Result<Mapper, String> {
        let mut choices = Vec::new();
        for (i, text) in specs.into_iter().enumerate() {
            let words: Vec<&str> = text.split_whitespace().collect();
            if words.len() < 3 {
                return Err(format!("pattern {i}: syntax error"));
            }
            let (pw, ports) = words.split_at(words.len() - 2);
            let p = match pw {
                [n] => named(n).ok_or_else(|| format!("pattern {i}: no such pattern `{n}`"))?,
                _ => Arc::new(Pattern::parse(pw).map_err(|why| format!("pattern {i}: {why}"))?),
            };
            let f: usize = ports[0]
                .parse()
                .map_err(|_| format!("pattern {i}: bad forward port"))?;
            let r: usize = ports[1]
                .parse()
                .map_err(|_| format!("pattern {i}: bad reply port"))?;
            choices.push((p, f, r));
        }
        if choices.is_empty() {
            return Err("no patterns given".into());
        }
        Ok(Mapper {
            name: name.to_string(),
            choices,
            next: std::sync::atomic::AtomicUsize::new(0),
            by_source: None,
        })
    }

    /// This mapper choosing by the flow's source address (host order):
    /// `pick` gives the index of the choice.
    pub fn with_source_choice(
        mut self,
        pick: impl Fn(u32) -> usize + Send + Sync + 'static,
    ) -> Mapper {
        self.by_source = Some(Box::new(pick));
        self
    }

    /// How many choices a new flow tries: every pattern in turn, or the
    /// one its source address picks.
    pub fn tries(&self) -> usize {
        if self.by_source.is_some() {
            1
        } else {
            self.choices.len()
        }
    }

    /// The next choice to try for a flow from `saddr`: round robin (every
    /// try advances it, as Click's `_last_pattern`), or the one the source
    /// address picks.
    #[inline]
    pub fn next_choice(&self, saddr: u32) -> &(Arc<Pattern>, usize, usize) {
        let i = match &self.by_source {
            Some(pick) => pick(saddr),
            None => self.next.fetch_add(1, Relaxed),
        };
        &self.choices[i % self.choices.len()]
    }
}

/// Most candidates tried for a new flow's free port or address. Click
/// tries the whole range; a bound keeps a new flow's cost O(1) when an
/// attacker has filled the range. A flow that finds no free value in this
/// many tries is dropped and counted as a mapping failure.
pub const MAX_PROBES: u32 = 256;

/// A pattern (Click's `IPRewriterPattern`). Addresses and ports are host
/// order; 0 means `-`.
#[derive(Debug)]
pub struct Pattern {
    pub saddr: u32,
    pub sport: u16,
    pub daddr: u32,
    pub dport: u16,
    /// Ports are part of the pattern (four words).
    pub napt: bool,
    pub sequential: bool,
    pub same_first: bool,
    /// The range's size minus one (0: no range).
    pub variation_top: u32,
    /// Where a sequential search starts next (shared by every worker).
    next_variation: AtomicU32,
}

/// Click's pattern errors, by the word that is wrong.
fn err(what: &str) -> String {
    what.to_string()
}

fn strip_flags(s: &str) -> (&str, bool, bool) {
    if let Some(r) = s.strip_suffix('#') {
        (r, true, false)
    } else if let Some(r) = s.strip_suffix('?') {
        (r, false, false)
    } else {
        (s, false, true)
    }
}

fn addr(s: &str) -> Option<u32> {
    s.parse::<Ipv4Addr>().ok().map(u32::from)
}

/// `A-B` or `PREFIX/LEN` (or `PREFIX/MASK`): the base and variation.
fn addr_variation(s: &str) -> Option<(u32, u32, bool, bool)> {
    let (body, seq, same) = strip_flags(s);
    if let Some((a, b)) = body.split_once('-') {
        let (a, b) = (addr(a)?, addr(b)?);
        return (b >= a).then(|| (a, b - a, seq, same));
    }
    let (a, m) = body.split_once('/')?;
    let a = addr(a)?;
    let len: u32 = match m.parse::<u32>() {
        Ok(n) if n <= 32 => n,
        Ok(_) => return None,
        Err(_) => {
            let mask = addr(m)?;
            if mask.leading_ones() + mask.trailing_zeros() != 32 {
                return None;
            }
            mask.leading_ones()
        }
    };
    if a == 0 || len == 0 {
        return None;
    }
    let mask = if len == 32 {
        u32::MAX
    } else {
        !(u32::MAX >> len)
    };
    Some(match len {
        32 => (a, 0, seq, same),
        31 => (a & mask, 1, seq, same),
        // Not counting PREFIX.0 and PREFIX.255, as Click.
        _ => ((a & mask) | 1, !mask - 2, seq, same),
    })
}

fn port(s: &str) -> Option<u16> {
    s.parse::<u32>()
        .ok()
        .filter(|&p| p > 0 && p < 65536)
        .map(|p| p as u16)
}

fn port_variation(s: &str) -> Option<(u16, u32, bool, bool)> {
    let (body, seq, same) = strip_flags(s);
    let (a, b) = body.split_once('-')?;
    let a: u32 = a.parse().ok()?;
    let b: u32 = b.parse().ok()?;
    (b >= a && b < 65536).then(|| (a as u16, b - a, seq, same))
}

impl Pattern {
    /// Parses a pattern's 2 (`SADDR DADDR`) or 4 words, or 3 (`SADDR
    /// SPORT DADDR`, as Click). The error is Click's text.
    pub fn parse(words: &[&str]) -> Result<Pattern, String> {
        if words.len() < 2 || words.len() > 4 {
            return Err(err("syntax error"));
        }
        let mut p = Pattern {
            saddr: 0,
            sport: 0,
            daddr: 0,
            dport: 0,
            napt: words.len() >= 3,
            sequential: false,
            same_first: true,
            variation_top: 0,
            next_variation: AtomicU32::new(0),
        };
        let w = words[0];
        if w != "-" {
            if let Some(a) = addr(w) {
                p.saddr = a;
            } else if let Some((a, v, seq, same)) = addr_variation(w) {
                p.saddr = a;
                p.variation_top = v;
                p.sequential = seq;
                p.same_first = same;
            } else {
                return Err(err("bad source address"));
            }
        }
        // Click's order: `SADDR SPORT DADDR DPORT`, `SADDR DADDR SPORT`
        // (three words) or `SADDR DADDR`.
        let (sport_at, daddr_at) = match words.len() {
            2 => (None, 1),
            3 => (Some(2), 1),
            _ => (Some(1), 2),
        };
        if let Some(i) = sport_at {
            let w = words[i];
            if w != "-" {
                if let Some(n) = port(w) {
                    p.sport = n;
                } else if let Some((a, v, seq, same)) = port_variation(w) {
                    p.sport = a;
                    p.variation_top = v;
                    p.sequential = seq;
                    p.same_first = same;
                } else {
                    return Err(err("bad source port"));
                }
            }
        }
        let w = words[daddr_at];
        if w != "-" {
            p.daddr = addr(w).ok_or_else(|| err("bad destination address"))?;
        }
        if words.len() == 4 {
            let w = words[3];
            if w != "-" {
                p.dport = port(w).ok_or_else(|| err("bad destination port"))?;
            }
        }
        Ok(p)
    }

    /// What `flow` becomes, before any range is searched.
    #[inline]
    pub fn apply_fixed(&self, flow: Tuple) -> Tuple {
        let mut r = flow;
        if self.saddr != 0 {
            r.saddr = self.saddr;
        }
        if self.sport != 0 {
            r.sport = self.sport;
        }
        if self.daddr != 0 {
            r.daddr = self.daddr;
        }
        if self.dport != 0 {
            r.dport = self.dport;
        }
        r
    }

    /// What `flow` becomes: `taken(reply)` says whether a candidate's
    /// reply flow is already mapped. `None`: no free value in the range
    /// (within [`MAX_PROBES`] tries).
    pub fn rewrite(&self, flow: Tuple, mut taken: impl FnMut(Tuple) -> bool) -> Option<Tuple> {
        let mut r = self.apply_fixed(flow);
        if self.variation_top == 0 {
            return Some(r);
        }
        let top = self.variation_top;
        let base = if self.napt {
            u32::from(self.sport)
        } else {
            self.saddr
        };
        let set = |r: &mut Tuple, v: u32| {
            if self.napt {
                r.sport = (base + v) as u16;
            } else {
                r.saddr = base + v;
            }
        };
        if self.same_first {
            let own = if self.napt {
                u32::from(flow.sport)
            } else {
                flow.saddr
            };
            let v = own.wrapping_sub(base);
            if v <= top {
                set(&mut r, v);
                if !taken(r.reverse()) {
                    self.next_variation.store(v.wrapping_add(1), Relaxed);
                    return Some(r);
                }
            }
        }
        let mut v = if self.sequential {
            let n = self.next_variation.load(Relaxed);
            if n > top {
                0
            } else {
                n
            }
        } else {
            // Click's shared stream, which RandomSeed seeds: a seeded
            // configuration picks the ports Click picks.
            click_random::random_between(0, top)
        };
        let tries = top.saturating_add(1).min(MAX_PROBES);
        for _ in 0..tries {
            set(&mut r, v);
            if !taken(r.reverse()) {
                self.next_variation.store(v.wrapping_add(1), Relaxed);
                return Some(r);
            }
            v = if v == top { 0 } else { v + 1 };
        }
        None
    }

    /// Click's `IPRewriterPattern::unparse`.
    pub fn unparse(&self) -> String {
        let a = |x: u32| Ipv4Addr::from(x).to_string();
        let mut s = if !self.napt && self.variation_top != 0 {
            format!("{}-{}", a(self.saddr), a(self.saddr + self.variation_top))
        } else if self.saddr != 0 {
            a(self.saddr)
        } else {
            "-".to_string()
        };
        if self.napt {
            if self.sport == 0 {
                s.push_str(" -");
            } else if self.variation_top != 0 {
                s += &format!(
                    " {}-{}",
                    self.sport,
                    u32::from(self.sport) + self.variation_top
                );
            } else {
                s += &format!(" {}", self.sport);
            }
        }
        if self.daddr != 0 {
            s += &format!(" {}", a(self.daddr));
        } else {
            s.push_str(" -");
        }
        if self.napt {
            if self.dport == 0 {
                s.push_str(" -");
            } else {
                s += &format!(" {}", self.dport);
            }
        }
        s
    }
}

/// What an input does with a packet of no mapping (Click's
/// `IPRewriterInput`).
#[derive(Debug)]
pub enum InputSpec {
    /// `drop`, `discard`.
    Drop,
    /// `pass OUTPUT`, `passthrough`, `nochange`: out unchanged, no mapping.
    Pass(usize),
    /// `keep FOUTPUT ROUTPUT`: a mapping that changes nothing.
    Keep(usize, usize),
    /// `pattern ... FOUTPUT ROUTPUT`.
    Pattern(Arc<Pattern>, usize, usize),
    /// A mapper element's name: it picks the pattern.
    Mapper(Arc<Mapper>),
}

impl InputSpec {
    /// Parses one input specification; `noutputs` bounds the outputs,
    /// `named` finds a pattern named by a one-word `pattern NAME F R`
    /// (shared: its sequential state is the same object in every
    /// rewriter that names it, as Click's). Errors are Click's text
    /// without the `input spec N: ` prefix.
    pub fn parse(
        text: &str,
        noutputs: usize,
        named: Named<'_>,
        mapper: MapperOf<'_>,
    ) -> Result<InputSpec, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let Some((&first, rest)) = words.split_first() else {
            return Err("empty argument".into());
        };
        let out = |w: &str, what: &str| -> Result<usize, String> {
            let n: usize = w.parse().map_err(|_| format!("bad {what} port"))?;
            if n >= noutputs {
                return Err("output port out of range".into());
            }
            Ok(n)
        };
        match first {
            "pass" | "passthrough" | "nochange" => match rest {
                [] => out("0", "forward").map(InputSpec::Pass),
                [n] => n
                    .parse::<usize>()
                    .map_err(|_| "syntax error, expected `nochange [OUTPUT]`".to_string())
                    .and_then(|n| {
                        if n < noutputs {
                            Ok(InputSpec::Pass(n))
                        } else {
                            Err("output port out of range".into())
                        }
                    }),
                _ => Err("syntax error, expected `nochange [OUTPUT]`".into()),
            },
            "drop" | "discard" => {
                if rest.is_empty() {
                    Ok(InputSpec::Drop)
                } else {
                    Err(format!("syntax error, expected `{first}`"))
                }
            }
            "keep" => match rest {
                [f, r] => Ok(InputSpec::Keep(out(f, "forward")?, out(r, "reply")?)),
                _ => Err("bad forward port".into()),
            },
            "pattern" | "xpattern" => {
                if rest.len() <= 2 {
                    return Err("syntax error".into());
                }
                let (pw, ports) = rest.split_at(rest.len() - 2);
                let p = match pw {
                    [name] => named(name).ok_or_else(|| format!("no such pattern `{name}`"))?,
                    _ => Arc::new(Pattern::parse(pw)?),
                };
                Ok(InputSpec::Pattern(
                    p,
                    out(ports[0], "forward")?,
                    out(ports[1], "reply")?,
                ))
            }
            _ => {
                let m = mapper(first)?;
                if !rest.is_empty() {
                    return Err("syntax error, expected element name".into());
                }
                for (i, (_, f, r)) in m.choices.iter().enumerate() {
                    if *f >= noutputs || *r >= noutputs {
                        return Err(format!(
                            "output port out of range in {} pattern {i}",
                            m.name
                        ));
                    }
                }
                Ok(InputSpec::Mapper(m))
            }
        }
    }

    /// Click's `patterns` handler line (without the count).
    pub fn unparse(&self) -> String {
        match self {
            InputSpec::Drop => "<drop>".into(),
            InputSpec::Pass(_) => "<nochange>".into(),
            InputSpec::Keep(..) => "<keep>".into(),
            InputSpec::Pattern(p, ..) => p.unparse(),
            InputSpec::Mapper(_) => "<mapper>".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(s: &str) -> Result<Pattern, String> {
        Pattern::parse(&s.split_whitespace().collect::<Vec<_>>())
    }

    #[test]
    fn parses_and_prints_like_click() {
        for (text, shown) in [
            ("1.0.0.1 1 - -", "1.0.0.1 1 - -"),
            ("1.0.0.1 1-65535 - -", "1.0.0.1 1-65535 - -"),
            ("1.0.0.1 - - -", "1.0.0.1 - - -"),
            ("1.0.0.1 -", "1.0.0.1 -"),
            ("1.0.0.1-1.0.255.255 -", "1.0.0.1-1.0.255.255 -"),
            ("1.0.0.1/24 -", "1.0.0.1-1.0.0.254 -"),
            ("1.0.0.1/8 -", "1.0.0.1-1.255.255.254 -"),
        ] {
            assert_eq!(pat(text).unwrap().unparse(), shown, "{text}");
        }
        assert_eq!(pat("1.0.0.1 1x - -").unwrap_err(), "bad source port");
        assert_eq!(pat("1.0.0.0 456-19 - -").unwrap_err(), "bad source port");
        assert_eq!(pat("1.0.0.0 456-65536 - -").unwrap_err(), "bad source port");
        assert_eq!(pat("1.0.0.x -").unwrap_err(), "bad source address");
        assert_eq!(
            pat("1.255.0.0-1.0.255.255 -").unwrap_err(),
            "bad source address"
        );
        assert_eq!(pat("- - 1.2.3 -").unwrap_err(), "bad destination address");
    }

    #[test]
    fn sequential_ranges_skip_taken_reply_flows() {
        let p = pat("1.0.0.1 1024-1026# - -").unwrap();
        let f = Tuple {
            saddr: 1,
            sport: 5,
            daddr: 2,
            dport: 6,
        };
        let a = p.rewrite(f, |_| false).unwrap();
        assert_eq!(a.sport, 1024);
        let b = p.rewrite(f, |r| r.dport == 1025).unwrap();
        assert_eq!(b.sport, 1026);
        assert!(p.rewrite(f, |_| true).is_none());
    }

    #[test]
    fn the_packets_own_port_is_preferred() {
        let p = pat("1.0.0.1 1024-65535 - -").unwrap();
        let f = Tuple {
            saddr: 1,
            sport: 5000,
            daddr: 2,
            dport: 6,
        };
        assert_eq!(p.rewrite(f, |_| false).unwrap().sport, 5000);
        let r = p.rewrite(f, |r| r.dport == 5000).unwrap();
        assert!(r.sport >= 1024 && r.sport != 5000);
    }

    #[test]
    fn mappers_take_their_patterns_in_turn() {
        let b = Arc::new(pat("2.0.0.2 - - -").unwrap());
        let named = |n: &str| (n == "b").then(|| Arc::clone(&b));
        let m = Mapper::parse("m", ["1.0.0.1 - - - 0 1", "b 1 1"], &named).unwrap();
        assert_eq!(m.next_choice(0).0.saddr, 0x0100_0001);
        assert!(Arc::ptr_eq(&m.next_choice(0).0, &b));
        assert_eq!(m.next_choice(0).1, 0);
        assert!(Mapper::parse("m", ["c 0 1"], &named).is_err());
        assert!(Mapper::parse("m", ["1.0.0.1 - - - x 1"], &named).is_err());
        assert!(Mapper::parse("m", [], &named).is_err());
        let m = Arc::new(m);
        let of = |_: &str| Ok(Arc::clone(&m));
        assert!(matches!(
            InputSpec::parse("m", 2, &|_| None, &of),
            Ok(InputSpec::Mapper(_))
        ));
        assert!(InputSpec::parse("m", 1, &|_| None, &of)
            .unwrap_err()
            .contains("output port out of range"));
        assert!(InputSpec::parse("m x", 2, &|_| None, &of).is_err());
    }

    #[test]
    fn input_specs() {
        assert!(matches!(
            InputSpec::parse("drop", 2, &|_| None, &|_| Err(
                "unknown specification".into()
            )),
            Ok(InputSpec::Drop)
        ));
        assert!(matches!(
            InputSpec::parse("pass 1", 2, &|_| None, &|_| Err(
                "unknown specification".into()
            )),
            Ok(InputSpec::Pass(1))
        ));
        assert!(InputSpec::parse("pass 2", 2, &|_| None, &|_| Err(
            "unknown specification".into()
        ))
        .is_err());
        assert!(matches!(
            InputSpec::parse("keep 0 1", 2, &|_| None, &|_| Err(
                "unknown specification".into()
            )),
            Ok(InputSpec::Keep(0, 1))
        ));
        assert!(
            InputSpec::parse("pattern 1.0.0.1 - - - 0 1", 2, &|_| None, &|_| Err(
                "unknown specification".into()
            ))
            .is_ok()
        );
        assert!(
            InputSpec::parse("pattern 1.0.0.1 - - - 0 2", 2, &|_| None, &|_| Err(
                "unknown specification".into()
            ))
            .is_err()
        );
        assert!(InputSpec::parse("frob", 2, &|_| None, &|_| Err(
            "unknown specification".into()
        ))
        .is_err());
    }
}
