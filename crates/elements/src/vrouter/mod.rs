//! Virtual routers sharing one box (Egi et al., CoNEXT 2008, §3.2): the
//! elements that put a demultiplexing tag on the wire and take it off
//! again (802.1Q VLAN, MPLS, IP-in-IP), and the demultiplexer that hands
//! each frame to its virtual router by that tag.
//!
//! "The different virtual links need some form of de-multiplexing tag,
//! whether it be an Ethernet MAC address, VLAN tag, MPLS label or IP
//! tunnel address" (§3.2): [`vr_demux`] reads any of the four in constant
//! time whatever the number of routers (the paper's Fig. 16 scales software
//! demultiplexing to many routers on one box). The tags are written and
//! removed by `VLANEncap`/`VLANDecap`/`EtherVLANEncap` (Click's names and
//! arguments), `MPLSPush`/`MPLSPop`/`MPLSSwap` (RFC 3032; Click has no MPLS
//! elements) and, for IP-in-IP, `IPEncap`/`StripIPHeader` in `ip`.

pub mod ether_vlan_encap;
pub mod mpls_pop;
pub mod mpls_push;
pub mod mpls_swap;
pub mod strip_ether_vlan_header;
pub mod tag_table;
pub mod vlan_decap;
pub mod vlan_encap;
pub mod vr_demux;

#[cfg(test)]
pub(crate) mod testdata;

use bricks_element::{ArgError, Args, FromArg};
use bricks_wire::ethernet::EtherType;

/// The virtual-router elements.
pub static CLASSES: &[&ElementClass] = &[
    &vlan_encap::CLASS,
    &vlan_decap::CLASS,
    &strip_ether_vlan_header::CLASS,
    &ether_vlan_encap::CLASS,
    &mpls_push::CLASS,
    &mpls_pop::CLASS,
    &mpls_swap::CLASS,
    &vr_demux::CLASS,
];

use bricks_element::ElementClass;

/// Offset of the Ethernet type field.
pub(crate) const ETHERTYPE_AT: usize = 12;
/// Length of an Ethernet header without tags.
pub(crate) const ETHER_LEN: usize = 14;
/// The IPv4 EtherType.
pub(crate) const ETHERTYPE_IPV4: u16 = EtherType::IPV4.0;
/// The IPv6 EtherType.
pub(crate) const ETHERTYPE_IPV6: u16 = EtherType::IPV6.0;
/// MPLS unicast (RFC 3032 section 5).
pub(crate) const ETHERTYPE_MPLS: u16 = EtherType::MPLS_UNICAST.0;
/// MPLS multicast (RFC 5332).
pub(crate) const ETHERTYPE_MPLS_MULTICAST: u16 = EtherType::MPLS_MULTICAST.0;

/// Whether `t` is an 802.1Q C-tag or 802.1ad S-tag protocol identifier.
#[inline(always)]
pub(crate) fn is_vlan_tpid(t: u16) -> bool {
    t == EtherType::VLAN.0 || t == EtherType::QINQ.0
}

/// Whether `t` announces an MPLS label stack.
#[inline(always)]
pub(crate) fn is_mpls(t: u16) -> bool {
    t == ETHERTYPE_MPLS || t == ETHERTYPE_MPLS_MULTICAST
}

/// Reads the big-endian 16-bit word at `at`, if the frame holds it.
#[inline(always)]
pub(crate) fn be16_at(d: &[u8], at: usize) -> Option<u16> {
    d.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

/// Where the EtherType that describes the payload of an Ethernet frame
/// is: 12 for an untagged frame, 16 behind one 802.1Q/802.1ad tag, 20
/// behind two (Q-in-Q), skipping at most `max_tags` tags. `None` when the
/// frame ends inside the Ethernet header or inside a tag.
#[inline(always)]
pub(crate) fn payload_type_at(d: &[u8], max_tags: usize) -> Option<usize> {
    let mut at = ETHERTYPE_AT;
    let mut t = be16_at(d, at)?;
    for _ in 0..max_tags {
        if !is_vlan_tpid(t) {
            break;
        }
        at += 4;
        t = be16_at(d, at)?;
    }
    Some(at)
}

/// An 802.1Q priority code point, 0 to 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pcp(pub u8);

impl FromArg for Pcp {
    const TYPE: &'static str = "priority code point (0 to 7)";
    fn from_arg(text: &str) -> Result<Self, String> {
        match u8::from_arg(text) {
            Ok(v) if v <= 7 => Ok(Pcp(v)),
            _ => Err(format!("found `{text}`")),
        }
    }
}

/// A VLAN ID, 0 to 0xFFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VlanId(pub u16);

impl FromArg for VlanId {
    const TYPE: &'static str = "VLAN ID (0 to 4095)";
    fn from_arg(text: &str) -> Result<Self, String> {
        match u16::from_arg(text) {
            Ok(v) if v <= 0xfff => Ok(VlanId(v)),
            _ => Err(format!("found `{text}`")),
        }
    }
}

/// Click's NATIVE_VLAN: a VLAN ID, or -1 for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NativeVlan(pub Option<u16>);

impl FromArg for NativeVlan {
    const TYPE: &'static str = "VLAN ID (0 to 4095) or -1";
    fn from_arg(text: &str) -> Result<Self, String> {
        if text == "-1" {
            return Ok(NativeVlan(None));
        }
        VlanId::from_arg(text).map(|v| NativeVlan(Some(v.0)))
    }
}

/// Click's VLAN_TCI: a 16-bit TCI, or `ANNO` for the packet's annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TciArg {
    /// Read the TCI from the `vlan_tci` annotation.
    Anno,
    /// This TCI.
    Value(u16),
}

impl FromArg for TciArg {
    const TYPE: &'static str = "VLAN TCI (0 to 0xFFFF) or ANNO";
    fn from_arg(text: &str) -> Result<Self, String> {
        if text == "ANNO" {
            return Ok(TciArg::Anno);
        }
        u16::from_arg(text).map(TciArg::Value)
    }
}

/// The tag an encapsulator writes, as Click's VLANEncap and EtherVLANEncap
/// read it: VLAN_TCI (or VLAN_ID) with VLAN_PCP, and NATIVE_VLAN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TagSpec {
    /// The TCI to write, or `None` to take the packet's annotation.
    pub tci: Option<u16>,
    /// A VLAN ID whose frames are sent untagged (Click's default 0: the
    /// "no VLAN" ID of 802.1Q).
    pub native: Option<u16>,
}

impl TagSpec {
    /// Reads VLAN_TCI and VLAN_PCP (positional, in that order), VLAN_ID
    /// and NATIVE_VLAN; a bare `ANNO` is `VLAN_TCI ANNO`. Exactly one of VLAN_TCI and VLAN_ID must be given,
    /// as Click's manual says (its code takes VLAN_ID 0 when neither is).
    pub fn read(args: &mut Args<'_>) -> Result<TagSpec, ArgError> {
        let mut tci: Option<TciArg> = args.read_p("VLAN_TCI")?;
        let pcp: Option<Pcp> = args.read_p("VLAN_PCP")?;
        // A bare `ANNO` reads as a keyword with no value, so it is one.
        if let Some(v) = args.read::<String>("ANNO")? {
            if !v.is_empty() {
                return Err(ArgError::new(format!("ANNO takes no value, found `{v}`"))
                    .with_help("write `ANNO` or `VLAN_TCI ANNO`"));
            }
            if tci.is_some() {
                return Err(ArgError::new("VLAN_TCI given twice (ANNO and a value)"));
            }
            tci = Some(TciArg::Anno);
        }
        let id: Option<VlanId> = args.read("VLAN_ID")?;
        let native = args
            .read::<NativeVlan>("NATIVE_VLAN")?
            .unwrap_or(NativeVlan(Some(0)))
            .0;
        let pcp_bits = u16::from(pcp.map_or(0, |p| p.0)) << 13;
        let tci = match (tci, id) {
            (Some(_), Some(_)) => {
                return Err(ArgError::new("VLAN_TCI and VLAN_ID both given")
                    .with_help("give the whole TCI or the VLAN ID (with VLAN_PCP), not both"))
            }
            // Click's default: VLAN ID 0 (with VLAN_PCP), which NATIVE_VLAN 0
            // leaves untagged.
            (None, None) => Some(pcp_bits),
            (Some(TciArg::Anno), None) => {
                if pcp.is_some() {
                    return Err(ArgError::new("VLAN_PCP cannot be used with VLAN_TCI ANNO")
                        .with_help("the annotation holds the whole TCI, priority included"));
                }
                None
            }
            (Some(TciArg::Value(t)), None) => Some(t | pcp_bits),
            (None, Some(v)) => Some(v.0 | pcp_bits),
        };
        Ok(TagSpec { tci, native })
    }

    /// The TCI for a packet whose annotation holds `anno`.
    #[inline(always)]
    pub fn tci(&self, anno: u16) -> u16 {
        self.tci.unwrap_or(anno)
    }

    /// Whether a frame with TCI `tci` leaves untagged.
    #[inline(always)]
    pub fn is_native(&self, tci: u16) -> bool {
        self.native == Some(tci & 0xfff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{tagged, IPV4_UDP};
    use bricks_config::{Source, SourceMap};
    use bricks_runtime::{build, Engine};

    /// Every manual's example builds, runs, and drops nothing.
    #[test]
    fn manual_examples_run() {
        for class in CLASSES {
            let m = class.manual;
            assert!(m.example.contains(class.name), "{} example", class.name);
            let mut map = SourceMap::default();
            let router = bricks_config::parse(
                &mut map,
                Source {
                    name: "<example>".into(),
                    text: m.example.to_string(),
                },
            )
            .unwrap_or_else(|_| panic!("{}: example does not parse", class.name));
            let plan = build(&router, &crate::registry()).unwrap_or_else(|d| {
                let text: Vec<String> = d.iter().map(|d| map.render(d)).collect();
                panic!("{}: {}", class.name, text.join("\n"))
            });
            let mut engine = Engine::new(&plan).unwrap();
            engine.idle_sleep = false;
            let summary = engine.run();
            assert!(summary.errors.is_empty(), "{:?}", summary.errors);
            let mut delivered = 0;
            for e in &summary.elements {
                for (name, v) in e.stats.entries() {
                    let dropped = matches!(
                        &**name,
                        "truncated"
                            | "no_headroom"
                            | "not_mpls"
                            | "unknown_payload"
                            | "expired"
                            | "malformed"
                            | "unknown_tag"
                            | "no_tag"
                            | "unconnected_drops"
                    );
                    assert!(
                        !dropped || *v == 0,
                        "{}: {}.{name} = {v}",
                        class.name,
                        e.name
                    );
                    if name.starts_with("out") && e.name == "vr" {
                        delivered += v;
                    }
                }
            }
            if class.name == "VRDemux" {
                assert_eq!(delivered, 2, "{}", summary.render());
            }
        }
    }

    #[test]
    fn payload_type_skips_tags() {
        let f = tagged(&IPV4_UDP, &[(0x8100, 10)]);
        assert_eq!(payload_type_at(&f, 1), Some(16));
        assert_eq!(payload_type_at(&f, 0), Some(12));
        let f = tagged(&IPV4_UDP, &[(0x88a8, 10), (0x8100, 20)]);
        assert_eq!(payload_type_at(&f, 2), Some(20));
        assert_eq!(payload_type_at(&f, 1), Some(16));
        assert_eq!(payload_type_at(&f[..17], 2), None);
        assert_eq!(payload_type_at(&IPV4_UDP[..13], 2), None);
        assert_eq!(payload_type_at(&IPV4_UDP, 2), Some(12));
    }

    #[test]
    fn argument_types() {
        assert_eq!(Pcp::from_arg("7"), Ok(Pcp(7)));
        assert!(Pcp::from_arg("8").is_err());
        assert_eq!(VlanId::from_arg("0xfff"), Ok(VlanId(4095)));
        assert!(VlanId::from_arg("4096").is_err());
        assert_eq!(NativeVlan::from_arg("-1"), Ok(NativeVlan(None)));
        assert_eq!(NativeVlan::from_arg("5"), Ok(NativeVlan(Some(5))));
        assert!(NativeVlan::from_arg("-2").is_err());
        assert_eq!(TciArg::from_arg("ANNO"), Ok(TciArg::Anno));
        assert_eq!(TciArg::from_arg("0xe00a"), Ok(TciArg::Value(0xe00a)));
        assert!(TciArg::from_arg("0x10000").is_err());
    }
}
