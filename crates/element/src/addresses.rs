//! Address names: Click's `AddressInfo`.
//!
//! `AddressInfo(intern 10.0.0.1 10.0.0.0/8 00:50:ba:85:84:a9)` lets every
//! other element of its compound (and of compounds inside it) write
//! `intern` where an address is expected. A name may stand for an IPv4
//! address, an IPv4 prefix, an Ethernet address, an IPv6 address and an
//! IPv6 prefix at once; which one a use means depends on what the argument
//! expects, or on a suffix: `intern:ip`, `intern:ipnet`, `intern:eth`,
//! `intern:ip6`, `intern:ip6net`, `intern:bcast` (the prefix with every
//! host bit set), `intern:gw` (the prefix's network address with its lowest
//! bit set).
//!
//! A name no AddressInfo defines may be a network device of the host, as
//! in Click's user-level driver: `eth0` for its IPv4 address (or its
//! Ethernet address, or its prefix, as the argument needs), `eth0:bcast`,
//! `eth0:net`, `eth0:gw` (its default gateway, or the prefix's network
//! address with its lowest bit set). The build supplies the devices
//! ([`AddressBook::set_devices`]); a device name is first tried as
//! written, since it is also what FromDevice and ToDevice take.
//!
//! This module reads the definitions and rewrites the words of other
//! elements' arguments; the build (crates/runtime) decides, for a bare name
//! that stands for several kinds of address, which one an argument takes
//! by trying them in Click's order (an address before a prefix, IPv4 before
//! Ethernet) and keeping the first the element accepts.

use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::ipv4::Ipv4Cidr;
use std::borrow::Cow;
use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// What one name stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressEntry {
    /// An IPv4 address (`10.0.0.1`, or the address part of `10.0.0.1/24`).
    pub ip: Option<Ipv4Addr>,
    /// An IPv4 prefix (`10.0.0.0/8`, or `10.0.0.1/24` as written).
    pub ipnet: Option<Ipv4Cidr>,
    /// An Ethernet address.
    pub eth: Option<EthernetAddress>,
    /// An IPv6 address.
    pub ip6: Option<Ipv6Addr>,
    /// An IPv6 prefix, as written (`2001:db8::/32`).
    pub ip6net: Option<String>,
    /// A network device's default gateway (`NAME:gw`).
    pub gw: Option<Ipv4Addr>,
}

/// How a bare name is written into an argument that takes one of several
/// kinds of address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// The IPv4 address.
    Ip,
    /// The IPv4 prefix.
    IpNet,
    /// The Ethernet address.
    Eth,
    /// The IPv4 address and the Ethernet address, space-separated
    /// (`ARPResponder(intern)`).
    IpEth,
    /// The IPv6 address.
    Ip6,
}

impl AddressEntry {
    /// The readings this entry allows for a bare name, in the order they
    /// are tried.
    pub fn readings(&self) -> Vec<Reading> {
        let mut r = Vec::new();
        if self.ip.is_some() {
            r.push(Reading::Ip);
        }
        if self.ipnet.is_some() {
            r.push(Reading::IpNet);
        }
        if self.eth.is_some() {
            r.push(Reading::Eth);
        }
        if self.ip.is_some() && self.eth.is_some() {
            r.push(Reading::IpEth);
        }
        if self.ip6.is_some() {
            r.push(Reading::Ip6);
        }
        r
    }

    /// The text of a bare name under `reading`, if the entry has it.
    pub fn text(&self, reading: Reading) -> Option<String> {
        Some(match reading {
            Reading::Ip => self.ip?.to_string(),
            Reading::IpNet => self.ipnet?.to_string(),
            Reading::Eth => self.eth?.to_string(),
            Reading::IpEth => format!("{} {}", self.ip?, self.eth?),
            Reading::Ip6 => self.ip6?.to_string(),
        })
    }

    /// The text of `name:suffix`, if the entry has that kind.
    pub fn suffixed(&self, suffix: &str) -> Option<String> {
        let net = || self.ipnet.map(|n| n.network());
        Some(match suffix {
            "ip" | "ip4" => self.ip?.to_string(),
            "ipnet" | "net" | "ip4net" => net()?.to_string(),
            "eth" | "ether" | "ethernet" => self.eth?.to_string(),
            "ip6" => self.ip6?.to_string(),
            "ip6net" => self.ip6net.clone()?,
            "bcast" => {
                let n = net()?;
                let host = u32::MAX.checked_shr(u32::from(n.prefix_len())).unwrap_or(0);
                Ipv4Addr::from(u32::from(n.address()) | host).to_string()
            }
            "gw" => {
                if let Some(g) = self.gw {
                    return Some(g.to_string());
                }
                let n = net()?;
                Ipv4Addr::from(u32::from(n.address()) | 1).to_string()
            }
            _ => return None,
        })
    }

    /// How many kinds of address the entry has.
    fn kinds(&self) -> usize {
        [
            self.ip.is_some(),
            self.ipnet.is_some(),
            self.eth.is_some(),
            self.ip6.is_some(),
            self.ip6net.is_some(),
        ]
        .iter()
        .filter(|&&b| b)
        .count()
    }

    /// Adds one address as written (`AddressInfo`'s words after the name).
    pub fn add(&mut self, word: &str) -> Result<(), String> {
        if let Ok(a) = word.parse::<Ipv4Addr>() {
            self.ip = Some(a);
        } else if let Ok(p) = word.parse::<Ipv4Cidr>() {
            // `10.0.0.1/24` is both an address and a prefix; a bare
            // network (`10.0.0.0/8`) only a prefix, unless no address is
            // given at all.
            if p.network() != p || self.ip.is_none() {
                self.ip.get_or_insert(p.address());
            }
            self.ipnet = Some(p);
        } else if let Ok(e) = word.parse::<EthernetAddress>() {
            self.eth = Some(e);
        } else if let Ok(a) = word.parse::<Ipv6Addr>() {
            self.ip6 = Some(a);
        } else if let Some((a, len)) = word.split_once('/') {
            let ok = a.parse::<Ipv6Addr>().is_ok() && len.parse::<u8>().is_ok_and(|l| l <= 128);
            if !ok {
                return Err(format!("`{word}` is not an address or prefix"));
            }
            self.ip6
                .get_or_insert_with(|| a.parse().unwrap_or(Ipv6Addr::UNSPECIFIED));
            self.ip6net = Some(word.to_string());
        } else {
            return Err(format!(
                "`{word}` is not an IPv4 or IPv6 address or prefix, or an Ethernet address"
            ));
        }
        Ok(())
    }
}

/// Reads one `NAME ADDRESS [ADDRESS...]` argument of `AddressInfo`.
pub fn parse_definition(text: &str) -> Result<(String, AddressEntry), String> {
    let mut words = text.split_whitespace();
    let name = words.next().ok_or("expected `NAME ADDRESS [ADDRESS...]`")?;
    if name.contains(':') || name.parse::<Ipv4Addr>().is_ok() {
        return Err(format!("`{name}` cannot be a name"));
    }
    let mut e = AddressEntry::default();
    for w in words {
        e.add(w)?;
    }
    if e.kinds() == 0 {
        return Err(format!("`{name}` has no address"));
    }
    Ok((name.to_string(), e))
}

/// The names visible from one element: its own compound's definitions over
/// the enclosing compounds'.
#[derive(Debug, Clone, Default)]
pub struct AddressBook {
    /// name -> compound prefix -> entry; the top level's prefix is empty.
    /// Keyed by name first so that a word of an argument is looked up
    /// without building a key: most words (numbers, addresses, keywords)
    /// name nothing, and a route table inline has millions of them.
    defs: HashMap<String, HashMap<String, AddressEntry>>,
    /// The host's network devices, below every definition.
    devices: HashMap<String, AddressEntry>,
    /// The first bytes of every defined name and device, as a 256-bit
    /// set: a word that starts with none of them names nothing, found
    /// without hashing it (the words of a route, `10.0.0.0/8 10.0.0.1 1`,
    /// start with digits, and no device name does).
    first_bytes: [u64; 4],
    /// Whether the empty name is defined (no definition or device makes
    /// one today; kept so that [`AddressBook::rewrite`]'s shortcut stays
    /// exact whatever is defined).
    empty_name: bool,
}

/// One word of an argument that names an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameUse {
    /// `name:suffix`, or a name that stands for one kind only: its text.
    Fixed(String),
    /// A bare name with several kinds: the entry, read as the argument
    /// needs.
    Ambiguous(AddressEntry),
}

impl AddressBook {
    /// Whether no name is defined and no device known.
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty() && self.devices.is_empty()
    }

    /// Sets the network devices that names no AddressInfo defines may
    /// stand for.
    pub fn set_devices(&mut self, devices: HashMap<String, AddressEntry>) {
        for name in devices.keys() {
            self.note_name(name);
        }
        self.devices = devices;
    }

    /// Adds one network device.
    pub fn add_device(&mut self, name: &str, entry: AddressEntry) {
        self.note_name(name);
        self.devices.insert(name.to_string(), entry);
    }

    /// Adds `name`'s first byte to [`AddressBook::first_bytes`].
    fn note_name(&mut self, name: &str) {
        match name.as_bytes().first() {
            Some(&c) => self.first_bytes[usize::from(c >> 6)] |= 1 << (c & 63),
            None => self.empty_name = true,
        }
    }

    /// Whether some name starts with byte `c`.
    fn starts_name(&self, c: u8) -> bool {
        self.first_bytes[usize::from(c >> 6)] & (1 << (c & 63)) != 0
    }

    /// Whether `word` may name something or be `name:suffix`: false only
    /// when it starts with a byte no name starts with. A word starting
    /// with `:` may be the empty name with a suffix, and the empty word
    /// the empty name, so both are looked up.
    fn may_name(&self, word: &str) -> bool {
        match word.as_bytes().first() {
            None | Some(b':') => true,
            Some(&c) => self.starts_name(c),
        }
    }

    /// Whether `name`, for `element`, is a network device rather than a
    /// defined name.
    pub fn is_device(&self, element: &str, name: &str) -> bool {
        self.devices.contains_key(name) && self.lookup_defined(element, name).is_none()
    }

    /// Defines `name` in compound `prefix` (`""` for the top level); a
    /// later definition of the same name in the same compound adds to it.
    pub fn define(&mut self, prefix: &str, name: &str, entry: AddressEntry) {
        self.note_name(name);
        let e = self
            .defs
            .entry(name.to_string())
            .or_default()
            .entry(prefix.to_string())
            .or_default();
        if entry.ip.is_some() {
            e.ip = entry.ip;
        }
        if entry.ipnet.is_some() {
            e.ipnet = entry.ipnet;
        }
        if entry.eth.is_some() {
            e.eth = entry.eth;
        }
        if entry.ip6.is_some() {
            e.ip6 = entry.ip6;
        }
        if entry.ip6net.is_some() {
            e.ip6net = entry.ip6net;
        }
    }

    /// The entry `name` means for element `element` (a full name such as
    /// `c/x`): looked up in its compound, then each enclosing one.
    pub fn lookup(&self, element: &str, name: &str) -> Option<&AddressEntry> {
        self.lookup_defined(element, name)
            .or_else(|| self.devices.get(name))
    }

    /// [`AddressBook::lookup`] among the AddressInfo definitions only.
    fn lookup_defined(&self, element: &str, name: &str) -> Option<&AddressEntry> {
        let by_prefix = self.defs.get(name)?;
        let mut prefix = element;
        loop {
            prefix = prefix.rsplit_once('/').map_or("", |(p, _)| p);
            if let Some(e) = by_prefix.get(prefix) {
                return Some(e);
            }
            if prefix.is_empty() {
                return None;
            }
        }
    }

    /// What `word` means as an address for `element`, if it names one.
    pub fn resolve(&self, element: &str, word: &str) -> Option<NameUse> {
        if !self.may_name(word) {
            return None;
        }
        let defined = self.lookup_defined(element, word);
        let device = self.devices.get(word);
        if let (Some(d), None) = (device, defined) {
            // Also a device name as written: never fixed.
            return Some(NameUse::Ambiguous(d.clone()));
        }
        if let Some(e) = defined {
            let r = e.readings();
            return Some(match r.as_slice() {
                [only] => NameUse::Fixed(e.text(*only)?),
                _ if e.ip6net.is_some() && r.is_empty() => NameUse::Fixed(e.ip6net.clone()?),
                _ => NameUse::Ambiguous(e.clone()),
            });
        }
        let (name, suffix) = word.rsplit_once(':')?;
        let e = self.lookup(element, name)?;
        e.suffixed(suffix).map(NameUse::Fixed)
    }

    /// Rewrites the words of `text` that name addresses for `element`:
    /// suffixed and single-kind names become their address; bare names of
    /// several kinds become `reading` of them (or are left as they are
    /// when the entry lacks it). Returns the text (borrowed when no word
    /// names anything, as in almost every argument, so a configuration of
    /// a million arguments is not copied) and whether any ambiguous name
    /// was in it.
    pub fn rewrite<'t>(
        &self,
        element: &str,
        text: &'t str,
        reading: Reading,
    ) -> (Cow<'t, str>, bool) {
        if !self.empty_name && !text.bytes().any(|c| c == b':' || self.starts_name(c)) {
            // No word of it can start a name or be `name:suffix`.
            return (Cow::Borrowed(text), false);
        }
        let mut out: Option<String> = None;
        let mut ambiguous = false;
        // `text[..copied]` is in `out` (when there is one).
        let mut copied = 0;
        let mut at = 0;
        while at < text.len() {
            let rest = &text[at..];
            let start = at + rest.find(|c: char| !is_separator(c)).unwrap_or(rest.len());
            let rest = &text[start..];
            let end = start + rest.find(is_separator).unwrap_or(rest.len());
            let word = &text[start..end];
            let replacement: Option<Cow<'_, str>> = match self.resolve(element, word) {
                Some(NameUse::Fixed(t)) => Some(t.into()),
                Some(NameUse::Ambiguous(e)) => {
                    ambiguous = true;
                    e.text(reading).map(Cow::Owned)
                }
                None => None,
            };
            if let Some(r) = replacement {
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(&text[copied..start]);
                o.push_str(&r);
                copied = end;
            }
            at = end;
        }
        let text = match out {
            Some(mut o) => {
                o.push_str(&text[copied..]);
                Cow::Owned(o)
            }
            None => Cow::Borrowed(text),
        };
        (text, ambiguous)
    }
}

/// The words of an argument that may be address names.
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(is_separator).filter(|w| !w.is_empty())
}

/// What separates the words of an argument that may be address names:
/// space and the punctuation of filter expressions.
fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | ',' | '!' | '=' | '<' | '>' | '&' | '|')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(defs: &[(&str, &str)]) -> AddressBook {
        let mut b = AddressBook::default();
        for (prefix, text) in defs {
            let (n, e) = parse_definition(text).unwrap();
            b.define(prefix, &n, e);
        }
        b
    }

    /// Arguments in which no word can name anything come back borrowed;
    /// names starting with a digit, names inside other text and
    /// `name:suffix` are still found, in a compound or at the top level.
    #[test]
    fn text_without_names_is_borrowed_and_names_are_still_found() {
        let mut b = book(&[("", "foo 1.2.3.4"), ("c", "9net 10.0.0.0/8")]);
        b.add_device("eth7", AddressEntry::default());
        for text in ["10.0.0.0/8 1", "1.0.0.0/16 10.0.1.1 1", "", "  ", "0 "] {
            let (t, amb) = b.rewrite("rt", text, Reading::Ip);
            assert!(matches!(t, Cow::Borrowed(_)), "{text:?}");
            assert_eq!((&*t, amb), (text, false));
        }
        assert_eq!(
            b.rewrite("c/rt", "9net:ipnet 1", Reading::Ip).0,
            "10.0.0.0/8 1"
        );
        assert_eq!(
            b.rewrite("rt", "9net:ipnet 1", Reading::Ip).0,
            "9net:ipnet 1"
        );
        assert_eq!(
            b.rewrite("rt", "10.0.0.0/8 foo:ip 1", Reading::Ip).0,
            "10.0.0.0/8 1.2.3.4 1"
        );
        assert_eq!(b.rewrite("c/x", "(foo)", Reading::Ip).0, "(1.2.3.4)");
        assert!(matches!(
            b.rewrite("rt", ":ip 1", Reading::Ip).0,
            Cow::Borrowed(":ip 1")
        ));
    }

    #[test]
    fn an_address_with_a_prefix_length_is_both_address_and_prefix() {
        let b = book(&[("", "foo 1.2.3.4/20")]);
        let (t, amb) = b.rewrite("rt", "foo 0", Reading::Ip);
        assert_eq!((&*t, amb), ("1.2.3.4 0", true));
        assert_eq!(
            b.rewrite("rt", "foo:ipnet 1", Reading::Ip).0,
            "1.2.0.0/20 1"
        );
        assert_eq!(
            b.rewrite("rt", "foo:bcast 2", Reading::Ip).0,
            "1.2.15.255 2"
        );
        assert_eq!(b.rewrite("rt", "foo:gw", Reading::Ip).0, "1.2.0.1");
    }

    #[test]
    fn names_are_scoped_to_their_compound() {
        let b = book(&[("", "mauer 10.0.0.1"), ("c", "mazu 10.0.0.10")]);
        assert_eq!(
            b.rewrite("c/e", "mauer, mazu", Reading::Ip).0,
            "10.0.0.1, 10.0.0.10"
        );
        assert_eq!(b.rewrite("e", "mazu", Reading::Ip).0, "mazu");
        let b = book(&[("", "x 10.0.0.1"), ("c", "x 10.0.0.2")]);
        assert_eq!(b.rewrite("c/d/e", "x", Reading::Ip).0, "10.0.0.2");
        assert_eq!(b.rewrite("e", "x", Reading::Ip).0, "10.0.0.1");
    }

    #[test]
    fn a_name_of_several_kinds_is_read_as_asked() {
        let b = book(&[("", "intern 10.0.0.1 10.0.0.0/8 00:50:ba:85:84:a9")]);
        let e = b.lookup("x", "intern").unwrap();
        assert_eq!(e.ip, Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(
            e.ipnet.map(|n| n.to_string()).as_deref(),
            Some("10.0.0.0/8")
        );
        assert_eq!(
            e.readings(),
            [Reading::Ip, Reading::IpNet, Reading::Eth, Reading::IpEth]
        );
        assert_eq!(
            b.rewrite("x", "intern", Reading::Eth).0,
            "00:50:ba:85:84:a9"
        );
        assert_eq!(
            b.rewrite("x", "intern", Reading::IpEth).0,
            "10.0.0.1 00:50:ba:85:84:a9"
        );
        assert_eq!(
            b.rewrite(
                "x",
                "src net intern:ipnet and !(dst host intern)",
                Reading::Ip
            )
            .0,
            "src net 10.0.0.0/8 and !(dst host 10.0.0.1)"
        );
        // Words that merely contain a name are left alone.
        assert_eq!(
            b.rewrite("x", "interns intern.count", Reading::Ip).0,
            "interns intern.count"
        );
    }

    #[test]
    fn bad_definitions_are_refused() {
        assert!(parse_definition("").is_err());
        assert!(parse_definition("lonely").is_err());
        assert!(parse_definition("x 10.0.0.300").is_err());
        assert!(parse_definition("x:ip 10.0.0.1").is_err());
        let (_, e) = parse_definition("v6 2001:db8::1 2001:db8::/32").unwrap();
        assert_eq!(e.ip6, Some("2001:db8::1".parse().unwrap()));
        assert_eq!(e.suffixed("ip6net").as_deref(), Some("2001:db8::/32"));
    }
}
