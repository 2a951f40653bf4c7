//! Ethernet and ARP: encapsulation, address rewriting, the receive filter
//! of an Ethernet card, and both halves of ARP (RFC 826), with Click's
//! names, arguments and ports.
//!
//! - [`ether_encap`]: `EtherEncap`, a fixed header in front of each packet.
//! - [`ether_rewrite`]: `EtherRewrite`, both addresses of an existing header.
//! - [`host_ether_filter`]: `HostEtherFilter`, packet type and host filter.
//! - [`arp_responder`]: `ARPResponder`, answers requests (and proxy ARP).
//! - [`arp_querier`]: `ARPQuerier`, resolves next hops, on top of the table
//!   in [`arp_table`].
//! - [`checkarpheader`]: `CheckARPHeader`, the length checks of an ARP header.
//! - [`store_ether_address`]: `StoreEtherAddress`, a fixed address at an offset.
//! - [`ether_switch`]: `EtherSwitch`, a learning bridge.
//! - [`listen_ether_switch`]: `ListenEtherSwitch`, one with a listening port.

pub mod arp_querier;
pub mod arp_responder;
pub mod arp_table;
pub mod arp_table_element;
pub mod checkarpheader;
pub mod ether_encap;
pub mod ether_rewrite;
pub mod ether_span_tree;
pub mod ether_switch;
pub mod host_ether_filter;
pub mod listen_ether_switch;
pub mod store_ether_address;

#[cfg(test)]
mod testdata;

use bricks_element::{ElementClass, Packet};
use bricks_packet::PacketError;
use bricks_wire::ethernet::HEADER_LEN;

/// An Ethernet header as the words of its bytes 0..8 and 6..14, which a
/// batch loop keeps in registers and [`push_header_words`] writes with
/// two stores (as an array, the compiler writes it in four or five pieces
/// and reloads it from the stack for every packet).
#[inline(always)]
pub(crate) fn header_words(h: &[u8; HEADER_LEN]) -> [u64; 2] {
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&h[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    [word(0), word(HEADER_LEN - 8)]
}

/// Prepends the Ethernet header given by [`header_words`].
#[inline(always)]
pub(crate) fn push_header_words(p: &mut Packet, [w0, w1]: [u64; 2]) -> Result<(), PacketError> {
    p.push_front_with(|h: &mut [u8; HEADER_LEN]| {
        h[HEADER_LEN - 8..].copy_from_slice(&w1.to_ne_bytes());
        h[..8].copy_from_slice(&w0.to_ne_bytes());
    })
}

/// An Ethernet address as Click's handlers print it
/// (`EtherAddress::unparse`): upper-case hex, dashes.
pub fn dashed(a: &[u8]) -> String {
    a.iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join("-")
}

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &arp_querier::CLASS,
    &arp_responder::CLASS,
    &arp_table_element::CLASS,
    &checkarpheader::CLASS,
    &ether_encap::CLASS,
    &ether_rewrite::CLASS,
    &host_ether_filter::CLASS,
    &store_ether_address::CLASS,
    &ether_switch::CLASS,
    &listen_ether_switch::CLASS,
    &ether_span_tree::CLASS,
];

#[cfg(test)]
mod tests {
    use super::CLASSES;
    use bricks_config::{Source, SourceMap};

    #[test]
    fn classes_declare_valid_ports_and_manuals() {
        for c in CLASSES {
            let _ = c.port_count();
            let _ = c.processing_spec();
            let m = c.manual;
            assert!(
                !m.summary.is_empty() && !m.description.is_empty(),
                "{}",
                c.name
            );
            assert!(m.synopsis.contains(c.name), "{}", c.name);
            assert!(m.example.contains(c.name), "{}", c.name);
        }
    }

    /// Every manual's example builds and runs to completion with the
    /// built-in elements.
    #[test]
    fn manual_examples_run() {
        let registry = crate::registry();
        for c in CLASSES {
            let mut map = SourceMap::default();
            let router = bricks_config::parse(
                &mut map,
                Source {
                    name: format!("{} example", c.name),
                    text: c.manual.example.to_string(),
                },
            )
            .unwrap_or_else(|d| panic!("{}: {}", c.name, map.render(&d[0])));
            let plan = bricks_runtime::build(&router, &registry)
                .unwrap_or_else(|d| panic!("{}: {}", c.name, map.render(&d[0])));
            let mut engine = bricks_runtime::Engine::new(&plan).unwrap();
            engine.idle_sleep = false;
            let summary = engine.run();
            assert!(
                summary.errors.is_empty(),
                "{}: {:?}",
                c.name,
                summary.errors
            );
            let stats = summary
                .elements
                .iter()
                .find(|e| e.class == c.name)
                .unwrap_or_else(|| panic!("{}: no counters reported", c.name));
            // Each example is built so that its element does its main job
            // once: answer, query, encapsulate, or pass a frame.
            let did = match c.name {
                "ARPResponder" => stats.stats.get("replies"),
                "ARPQuerier" => stats.stats.get("queries"),
                _ => Some(1),
            };
            assert_eq!(did, Some(1), "{}: {:?}", c.name, stats.stats);
        }
    }
}
