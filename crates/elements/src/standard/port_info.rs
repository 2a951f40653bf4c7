//! `PortInfo`: names for TCP and UDP ports that other elements' arguments
//! may use (Click's `elements/standard/portinfo.cc`). A name is looked up
//! as Click's `NameInfo` does: the `PortInfo`s of the asking element's
//! compound first, then those of each enclosing compound, then Click's
//! well-known port names.

use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo as Ports};

/// The `PortInfo` class.
pub static CLASS: ElementClass = ElementClass {
    name: "PortInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "gives names to TCP and UDP ports",
    synopsis: "PortInfo(NAME PORT[/PROTOCOL] [NAME...], ...)",
    description: "Each argument gives NAME, and any further names before a `#`, the port \
        number PORT. With `/tcp` or `/udp` (or `/` and another protocol's name or number) \
        the names are for that protocol only; without, for both TCP and UDP. A PORT/PROTOCOL \
        with an unknown protocol is skipped, as in Click. Empty arguments and arguments that \
        start with `#` are comments. Elements that take a port (UDPIPEncap's SPORT and \
        DPORT) then accept NAME; names defined inside a compound element apply only inside \
        it, and take precedence there over names defined outside. Names no PortInfo \
        defines fall back to Click's well-known ports (`ssh`, `www`, `domain`...).",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "PortInfo(dns 53/udp); \
        InfiniteSource(LIMIT 1) -> UDPIPEncap(10.0.0.1, 1024, 10.0.0.2, dns) -> Discard;",
    see_also: &["AddressInfo", "UDPIPEncap"],
};

/// IP protocol numbers of TCP and UDP.
const TCP: u8 = 6;
const UDP: u8 = 17;

/// A configuration's port names may not exceed this many per `PortInfo`.
const MAX_NAMES: usize = 4096;

/// The names one `PortInfo` defines, in definition order.
#[derive(Debug, Default)]
pub struct PortNames {
    /// (name, protocol or `None` for both TCP and UDP, port).
    names: Vec<(String, Option<u8>, u16)>,
}

impl PortNames {
    /// The port `name` stands for in protocol `proto`, if this table
    /// defines it (the last definition wins, as Click's `NameInfo::define`
    /// replaces).
    pub fn get(&self, name: &str, proto: u8) -> Option<u16> {
        self.names
            .iter()
            .rev()
            .find(|(n, p, _)| n == name && p.map_or(proto == TCP || proto == UDP, |p| p == proto))
            .map(|&(_, _, port)| port)
    }

    /// Adds one argument's definitions, `NAME PORT[/PROTO] [NAME...]`.
    fn define(&mut self, arg: &str) -> Result<(), String> {
        let mut words = arg.split_whitespace();
        let Some(first) = words.next().filter(|w| !w.starts_with('#')) else {
            return Ok(());
        };
        let spec = words.next().unwrap_or("");
        let (number, proto) = match spec.split_once('/') {
            Some((n, p)) => (n, Some(p)),
            None => (spec, None),
        };
        let port: u16 = match number.parse::<u32>() {
            Ok(p) => u16::try_from(p).map_err(|_| format!("{first}: port {p} out of range"))?,
            Err(_) => return Err(format!("expected `NAME PORT/PROTO`, not `{arg}`")),
        };
        let proto = match proto {
            None => None,
            Some("tcp") => Some(TCP),
            Some("udp") => Some(UDP),
            Some(p) => match protocol(p) {
                Some(p) => Some(p),
                // Click skips a definition whose protocol it does not know.
                None => return Ok(()),
            },
        };
        for name in std::iter::once(first).chain(words.take_while(|w| !w.starts_with('#'))) {
            if self.names.len() >= MAX_NAMES {
                return Err(format!("more than {MAX_NAMES} port names"));
            }
            self.names.push((name.to_string(), proto, port));
        }
        Ok(())
    }
}

/// An IP protocol by name or number, as Click's `T_IP_PROTO` names them.
fn protocol(text: &str) -> Option<u8> {
    if let Ok(n) = text.parse::<u8>() {
        return Some(n);
    }
    Some(match text {
        "icmp" => 1,
        "igmp" => 2,
        "ipip" => 4,
        "tcp" => TCP,
        "udp" => UDP,
        "dccp" => 33,
        "gre" => 47,
        "sctp" => 132,
        _ => return None,
    })
}

/// The port `text` names for protocol `proto` (6 or 17), as seen from the
/// element whose arguments `args` holds: a number from 0 to 65535, a name
/// of a `PortInfo` in scope (nearest compound first), or one of Click's
/// well-known port names.
pub fn lookup(args: &Args<'_>, text: &str, proto: u8) -> Result<u16, String> {
    let text = text.trim();
    if let Ok(n) = text.parse::<u32>() {
        return u16::try_from(n).map_err(|_| format!("port {n} out of range 0-65535"));
    }
    for table in args.shared_in_scope::<PortNames>(CLASS.name)? {
        if let Some(port) = table.get(text, proto) {
            return Ok(port);
        }
    }
    crate::classify::ip_filter::PORTS
        .iter()
        .find(|(n, _)| *n == text)
        .map(|&(_, p)| p)
        .ok_or_else(|| format!("`{text}` is not a port number or a known port name"))
}

fn make(args: &mut Args<'_>, _ports: &Ports) -> Result<Box<dyn Element>, ArgError> {
    let mut names = PortNames::default();
    for (text, span) in args.rest() {
        names.define(text).map_err(|e| ArgError::at(span, e))?;
    }
    args.shared(|_| Ok(names))?;
    Ok(Box::new(PortInfo))
}

/// Holds nothing at run time: its names live in the shared [`PortNames`].
#[derive(Debug)]
pub struct PortInfo;

impl Element for PortInfo {}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(args: &[&str]) -> Result<PortNames, String> {
        let mut t = PortNames::default();
        for a in args {
            t.define(a)?;
        }
        Ok(t)
    }

    #[test]
    fn click_definitions() {
        // Click's test/tcpudp/UDPIPEncap-01.
        let t = table(&[
            "foo 79/udp # ssh 25/udp comment",
            "# ssh 26/udp comment",
            "",
        ])
        .unwrap();
        assert_eq!(t.get("foo", UDP), Some(79));
        assert_eq!(t.get("foo", TCP), None);
        assert_eq!(t.get("ssh", UDP), None);
        let t = table(&["foo 80 ssh", "bar 7/tcp", "baz 9/gre", "odd 5/nothing"]).unwrap();
        assert_eq!(t.get("ssh", UDP), Some(80));
        assert_eq!(t.get("ssh", TCP), Some(80));
        assert_eq!(t.get("bar", UDP), None);
        assert_eq!(t.get("bar", TCP), Some(7));
        assert_eq!(t.get("baz", 47), Some(9));
        assert_eq!(t.get("odd", TCP), None);
    }

    #[test]
    fn bad_definitions() {
        assert!(table(&["foo"]).is_err());
        assert!(table(&["foo bar"]).is_err());
        assert!(table(&["foo 70000"]).is_err());
        assert!(table(&["foo 1x/udp"]).is_err());
    }

    #[test]
    fn lookup_without_port_info() {
        let args = &Args::from_strs(&[]);
        assert_eq!(lookup(args, "53", UDP), Ok(53));
        assert_eq!(lookup(args, "ssh", UDP), Ok(22));
        assert!(lookup(args, "65536", UDP).is_err());
        assert!(lookup(args, "nosuch", UDP).is_err());
    }
}
