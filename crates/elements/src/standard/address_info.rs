//! `AddressInfo`: names for addresses (Click's
//! `elements/standard/addressinfo.cc`).
//!
//! The element holds nothing at run time: the build rewrites the names in
//! other elements' arguments (bricks_element::addresses,
//! bricks_runtime::addresses). Here the definitions are checked.

use bricks_element::addresses::parse_definition;
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `AddressInfo` class.
pub static ADDRESS_INFO: ElementClass = ElementClass {
    name: "AddressInfo",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "gives names to addresses that other elements' arguments may use",
    synopsis: "AddressInfo(NAME ADDRESS [ADDRESS...], ...)",
    description: "Each argument associates NAME with one or more addresses: an IPv4 address \
        (`10.0.0.1`), an IPv4 prefix (`10.0.0.0/8`; `10.0.0.1/24` gives both the address and \
        the prefix), an Ethernet address, an IPv6 address or prefix. Other elements then write \
        NAME where an address is expected. Which kind a bare NAME means follows from the \
        argument, as in Click: an address before a prefix, IPv4 before Ethernet, and a lone \
        NAME of an element that takes an IPv4 and an Ethernet address (`ARPQuerier(NAME)`, \
        `ARPResponder(NAME)`) gives both. Suffixes say it outright: `NAME:ip`, `NAME:ipnet` \
        (the network prefix), `NAME:eth`, `NAME:ip6`, `NAME:ip6net`, `NAME:bcast` (every host \
        bit of the prefix set), `NAME:gw` (the network address with its lowest bit set). \
        Names defined inside a compound element apply only inside it.\n\n\
        As in Click's user-level driver, a name no AddressInfo defines may be a network \
        device of the host: `eth0` stands for its IPv4 address, prefix or Ethernet address as \
        the argument needs (a device name is first tried as written, so `FromDevice(eth0)` \
        keeps it), and `eth0:ip`, `eth0:net`, `eth0:bcast`, `eth0:eth` and `eth0:gw` (the \
        device's default gateway, else its network address with the lowest bit set) for \
        one. Devices are looked up in the network namespace the router runs in. A device \
        the host lacks is a warning for `bricks check` (the address is looked up where the \
        router runs) and an error for `bricks run`.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example: "AddressInfo(intern 10.0.0.1 10.0.0.0/8 00:50:ba:85:84:a9); \
        InfiniteSource(LIMIT 1) -> EtherEncap(0x0800, intern, ff:ff:ff:ff:ff:ff) -> Discard;",
    see_also: &["ARPQuerier", "ARPResponder", "EtherEncap", "IPEncap"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    for (text, span) in args.rest() {
        parse_definition(text).map_err(|e| ArgError::at(span, e))?;
    }
    Ok(Box::new(AddressInfo))
}

/// Holds nothing at run time.
#[derive(Debug)]
pub struct AddressInfo;

impl Element for AddressInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    #[test]
    fn definitions_are_checked() {
        let ok = "a 10.0.0.1, b 10.0.0.1/24 00:01:02:03:04:05, c 2001:db8::/32";
        assert!(make_element(&ADDRESS_INFO, ok, &Default::default()).is_ok());
        for bad in ["a", "a 10.0.0", "a:ip 10.0.0.1", "a 10.0.0.1 nonsense"] {
            assert!(
                make_element(&ADDRESS_INFO, bad, &Default::default()).is_err(),
                "{bad}"
            );
        }
    }
}
