//! IPv6 forwarding elements, with Click's names and arguments where Click
//! has them (`elements/ip6/`): the steps a forwarded IPv6 packet takes
//! (RFC 8200), the ICMPv6 messages a router sends (RFC 4443) and Neighbor
//! Discovery (RFC 4861), Router Advertisements included.

pub mod address_translator;
pub mod checkip6header;
pub mod decip6hlim;
pub mod fast_udp_source6;
pub mod getip6address;
pub(crate) mod header6;
pub mod icmp6error;
pub mod icmp6pingresponder;
pub mod ip6_nd_advertiser;
pub mod ip6_nd_solicitor;
pub mod ip6_router_advertiser;
pub mod ip6encap;
pub mod ip6fragmenter;
pub mod ip6mirror;
pub mod ip6print;
pub mod markip6header;
pub mod mld_reporter;
pub mod nd_cache;
pub mod protocol_translator46;
pub mod protocol_translator64;
pub mod setip6address;
pub mod setip6dscp;
pub mod udpip6encap;

#[cfg(test)]
mod testdata;

use bricks_element::ElementClass;
use bricks_wire::ethernet::{EtherType, HEADER_LEN};
use bricks_wire::icmpv6::{Icmpv6Message, Icmpv6Packet};
use bricks_wire::ip::IpProtocol;
use bricks_wire::ipv6::Ipv6Packet;
use bricks_wire::ndisc::HOP_LIMIT;

/// Why a frame is no Neighbor Discovery message an element may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NdCheck {
    /// Not IPv6 ICMPv6 of the types asked for, or shorter than `min`.
    Other,
    /// A hop limit other than 255: it came from beyond the link.
    HopLimit,
    /// The ICMPv6 message is malformed.
    Malformed,
    /// The ICMPv6 checksum is wrong.
    Checksum,
}

/// The IPv6 packet of the Neighbor Discovery message in Ethernet frame
/// `d`, if its ICMPv6 type is one of `types`, it holds at least `min`
/// bytes of ICMPv6, and it passes the checks RFC 4861 sets for every ND
/// message (sections 6.1 and 7.1: hop limit 255, a valid checksum). The
/// caller parses the body and checks what its type needs besides.
pub(crate) fn nd_message<'a>(
    d: &'a [u8],
    types: &[Icmpv6Message],
    min: usize,
) -> Result<Ipv6Packet<&'a [u8]>, NdCheck> {
    if d.len() < HEADER_LEN + 40 + min || d[12..14] != EtherType::IPV6.0.to_be_bytes() {
        return Err(NdCheck::Other);
    }
    let ip = Ipv6Packet::new_checked(&d[HEADER_LEN..]).map_err(|_| NdCheck::Other)?;
    let msg = ip.payload();
    if ip.version() != 6
        || ip.next_header() != IpProtocol::ICMPV6
        || !msg
            .first()
            .is_some_and(|&t| types.contains(&Icmpv6Message::from(t)))
    {
        return Err(NdCheck::Other);
    }
    if ip.hop_limit() != HOP_LIMIT {
        return Err(NdCheck::HopLimit);
    }
    let icmp = Icmpv6Packet::new_checked(msg).map_err(|_| NdCheck::Malformed)?;
    if !icmp.verify_checksum(ip.src_addr(), ip.dst_addr()) {
        return Err(NdCheck::Checksum);
    }
    Ok(ip)
}

/// Appends `p` to `out`, pushing `out` on `port` first if it is full:
/// for the elements that make packets of their own as they go.
pub(crate) fn emit(
    out: &mut bricks_element::Batch,
    p: bricks_element::Packet,
    port: usize,
    cx: &mut bricks_element::Context<'_>,
) {
    if let Err(p) = out.push(p) {
        cx.push(port, out);
        let _ = out.push(p);
    }
}

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &address_translator::CLASS,
    &checkip6header::CLASS,
    &decip6hlim::CLASS,
    &fast_udp_source6::CLASS,
    &getip6address::CLASS,
    &icmp6error::CLASS,
    &icmp6pingresponder::CLASS,
    &ip6fragmenter::CLASS,
    &ip6_nd_advertiser::CLASS,
    &ip6_nd_solicitor::CLASS,
    &ip6_router_advertiser::CLASS,
    &ip6encap::CLASS,
    &ip6mirror::CLASS,
    &ip6print::CLASS,
    &markip6header::CLASS,
    &mld_reporter::CLASS,
    &protocol_translator46::CLASS,
    &protocol_translator64::CLASS,
    &setip6address::CLASS,
    &setip6dscp::CLASS,
    &udpip6encap::CLASS,
];

#[cfg(test)]
mod tests {
    use super::CLASSES;
    use bricks_config::{Source, SourceMap};
    use bricks_runtime::{build, Engine, RunSummary};

    fn run(config: &str) -> RunSummary {
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<test>".into(),
                text: config.to_string(),
            },
        )
        .unwrap_or_else(|d| panic!("{config}\n{}", map.render(&d[0])));
        let plan = build(&router, &crate::registry())
            .unwrap_or_else(|d| panic!("{config}\n{}", map.render(&d[0])));
        let mut engine = Engine::new(&plan).unwrap();
        engine.idle_sleep = false;
        engine.set_trace_clock(true);
        let summary = engine.run();
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
        summary
    }

    /// On the capture clock the router advertiser sends its first
    /// advertisement and no periodic ones (then its final one as the run
    /// ends), while the neighbour advertiser sends its three unsolicited
    /// advertisements a second apart, however long the run.
    #[test]
    fn advertisements_on_the_capture_clock() {
        let s = run("RatedSource(RATE 1, LIMIT 60) -> Discard; \
             Idle -> adv :: IP6RouterAdvertiser(52:54:00:aa:00:01, PREFIX 2001:db8::/64, \
                MAX_INTERVAL 4) -> ra :: Counter -> Discard; \
             Idle -> IP6NDAdvertiser(2001:db8::1 52:54:00:aa:00:01) -> na :: Counter -> Discard;");
        let stat = |name: &str, c: &str| {
            s.elements
                .iter()
                .find(|e| e.name == name)
                .and_then(|e| e.stats.get(c))
        };
        let count = |name: &str| stat(name, "count");
        assert_eq!(count("ra"), Some(2));
        assert_eq!(stat("adv", "final"), Some(1), "the second is the final one");
        assert_eq!(count("na"), Some(3));
    }

    #[test]
    fn manual_examples_run() {
        for class in CLASSES {
            let _ = class.port_count();
            let _ = class.processing_spec();
            let m = class.manual;
            assert!(!m.summary.is_empty() && !m.description.is_empty());
            assert!(m.synopsis.contains(class.name), "{}", class.name);
            assert!(m.example.contains(class.name), "{} example", class.name);
            let s = run(m.example);
            // The examples feed well-formed packets: nothing is refused.
            for e in &s.elements {
                for (name, v) in e.stats.entries() {
                    let bad = name.starts_with("bad_") || name == "not_nd" || name == "not_ns";
                    assert!(!bad || *v == 0, "{}: {}.{name} = {v}", class.name, e.name);
                    // And each does its job on them.
                    let job = matches!(
                        (class.name, name.as_ref()),
                        ("IP6NDAdvertiser", "advertisements")
                            | ("IP6NDSolicitor", "solicitations")
                            | ("IP6RouterAdvertiser", "solicitations")
                    );
                    if job {
                        assert!(*v >= 1, "{}: {}.{name} = {v}", class.name, e.name);
                    }
                }
            }
        }
    }
}
