//! `VLANEncap`: inserts an 802.1Q tag into Ethernet frames (Click's
//! `elements/ethernet/vlanencap.cc`): the virtual link of a router that
//! shares a physical port with others (Egi et al. §3.2).
//!
//! The 12 address bytes move 4 bytes into the headroom and the tag goes
//! where they were, so the payload is never copied.

use super::{TagSpec, ETHER_LEN};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};

/// The `VLANEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "VLANEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "adds an 802.1Q VLAN tag to Ethernet frames",
    synopsis: "VLANEncap(VLAN_TCI [, VLAN_PCP, KEYWORDS VLAN_ID, NATIVE_VLAN, ETHERTYPE])",
    description: "Expects Ethernet frames and inserts a 4-byte 802.1Q tag after their source \
        address: the frame's type becomes ETHERTYPE (0x8100) and its old type follows the tag. \
        The tag's TCI is VLAN_TCI, or VLAN_ID with priority VLAN_PCP; VLAN_TCI ANNO takes the \
        whole TCI from the packet's VLAN TCI annotation (set by VLANDecap). VLAN_TCI and \
        VLAN_ID may not both be given (Click lets VLAN_TCI win); with neither, the VLAN ID is \
        0, as in Click. A frame whose VLAN ID equals NATIVE_VLAN (0 unless \
        set; -1 for none) leaves untagged and unchanged, as in Click: by default a frame for \
        VLAN 0 (priority only) gets no tag. The tag is made in the buffer's headroom; a frame \
        shorter than an Ethernet header is dropped and counted, and so is one with less than 4 \
        bytes of headroom. Write handlers `vlan_tci`, `vlan_id`, `vlan_pcp`, `native_vlan` and \
        `ethertype` change the tag while the router runs.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "VLAN_TCI",
            ty: "unsigned 16-bit integer or ANNO",
            default: None,
            doc: "the whole Tag Control Information (priority, DEI, VLAN ID); ANNO reads it \
                from each packet's VLAN TCI annotation",
        },
        Keyword {
            name: "VLAN_PCP",
            ty: "integer 0 to 7",
            default: Some("0"),
            doc: "priority code point, or'ed into VLAN_TCI or VLAN_ID",
        },
        Keyword {
            name: "VLAN_ID",
            ty: "integer 0 to 4095",
            default: None,
            doc: "the VLAN ID, instead of VLAN_TCI",
        },
        Keyword {
            name: "NATIVE_VLAN",
            ty: "integer -1 to 4095",
            default: Some("0"),
            doc: "frames of this VLAN ID are sent untagged; -1 tags every frame",
        },
        Keyword {
            name: "ETHERTYPE",
            ty: "unsigned 16-bit integer",
            default: Some("0x8100"),
            doc: "the tag protocol identifier: 0x8100 (802.1Q C-tag), 0x88a8 (802.1ad S-tag)",
        },
    ],
    counters: &[
        (
            "truncated",
            "frames shorter than an Ethernet header, dropped",
        ),
        (
            "no_headroom",
            "frames dropped for lack of 4 bytes of headroom",
        ),
    ],
    example: "InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 08 00 45 00 00 14 \
        00 00 40 00 40 11 00 00 0a 00 00 01 0a 00 00 02>, LIMIT 1) \
        -> VLANEncap(VLAN_ID 10, VLAN_PCP 5) -> VLANDecap -> Discard;",
    see_also: &["VLANDecap", "EtherVLANEncap", "VRDemux"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let spec = TagSpec::read(args)?;
    let tpid: u16 = args.read("ETHERTYPE")?.unwrap_or(0x8100);
    Ok(Box::new(VLANEncap {
        spec,
        tpid,
        truncated: 0,
        no_headroom: 0,
    }))
}

/// Inserts 802.1Q tags.
#[derive(Debug)]
pub struct VLANEncap {
    spec: TagSpec,
    tpid: u16,
    truncated: u64,
    no_headroom: u64,
}

/// What happened to one frame.
enum Outcome {
    Done,
    Truncated,
    NoHeadroom,
}

/// Inserts the tag `tpid`/`tci` after the addresses of Ethernet frame `p`:
/// the addresses move back into the headroom, nothing else moves.
#[inline(always)]
fn insert_tag(p: &mut Packet, tpid: u16, tci: u16) -> Outcome {
    if p.len() < ETHER_LEN {
        return Outcome::Truncated;
    }
    if p.push_front(4).is_err() {
        return Outcome::NoHeadroom;
    }
    let d = p.data_mut();
    d.copy_within(4..16, 0);
    d[12..14].copy_from_slice(&tpid.to_be_bytes());
    d[14..16].copy_from_slice(&tci.to_be_bytes());
    Outcome::Done
}

impl VLANEncap {
    #[inline]
    fn encap(&mut self, batch: &mut Batch) {
        let (mut truncated, mut no_headroom) = (0u64, 0u64);
        let spec = self.spec;
        let tpid = self.tpid;
        batch.retain(|p| {
            let tci = spec.tci(p.anno().vlan_tci);
            if spec.is_native(tci) {
                return true;
            }
            match insert_tag(p, tpid, tci) {
                Outcome::Done => true,
                Outcome::Truncated => {
                    truncated += 1;
                    false
                }
                Outcome::NoHeadroom => {
                    no_headroom += 1;
                    false
                }
            }
        });
        self.truncated += truncated;
        self.no_headroom += no_headroom;
    }
}

impl Element for VLANEncap {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.encap(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.encap(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("truncated", self.truncated);
        s.counter("no_headroom", self.no_headroom);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        write_tag_handler(&mut self.spec, Some(&mut self.tpid), handler, value.trim())
    }
}

/// The write handlers VLANEncap and EtherVLANEncap share: `vlan_tci`
/// (a TCI or ANNO), `vlan_id` and `vlan_pcp` (change one part of a fixed
/// TCI), `native_vlan`, and, when `tpid` is given, `ethertype`.
pub(crate) fn write_tag_handler(
    spec: &mut TagSpec,
    tpid: Option<&mut u16>,
    handler: &str,
    value: &str,
) -> Result<(), String> {
    use super::{NativeVlan, Pcp, TciArg, VlanId};
    let fixed = |spec: &TagSpec| {
        spec.tci
            .ok_or_else(|| format!("`{handler}` needs a fixed TCI (VLAN_TCI is ANNO)"))
    };
    match handler {
        "vlan_tci" => {
            spec.tci = match TciArg::from_arg(value)? {
                TciArg::Anno => None,
                TciArg::Value(t) => Some(t),
            }
        }
        "vlan_id" => {
            let tci = fixed(spec)?;
            spec.tci = Some((tci & !0xfff) | VlanId::from_arg(value)?.0);
        }
        "vlan_pcp" => {
            let tci = fixed(spec)?;
            spec.tci = Some((tci & 0x1fff) | u16::from(Pcp::from_arg(value)?.0) << 13);
        }
        "native_vlan" => spec.native = NativeVlan::from_arg(value)?.0,
        "ethertype" if tpid.is_some() => {
            if let Some(t) = tpid {
                *t = u16::from_arg(value)?;
            }
        }
        _ => {
            return Err(format!(
                "no write handler `{handler}` (vlan_tci, vlan_id, vlan_pcp, native_vlan{})",
                if tpid.is_some() { ", ethertype" } else { "" }
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{tagged, IPV4_UDP, VLAN_TCP};
    use bricks_element::{Packet, Processing};
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn tags_like_a_real_capture() {
        // Untagging the captured VLAN 503 frame and tagging it again gives
        // the capture back, byte for byte.
        let untagged = [&VLAN_TCP[..12], &VLAN_TCP[16..]].concat();
        let mut h = Harness::push(&CLASS, "VLAN_ID 503", 1, 1);
        let mut p = Packet::from_slice(&untagged).unwrap();
        p.set_network_header(14);
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out[0].data(), &VLAN_TCP[..]);
        assert_eq!(out[0].headroom(), HEADROOM - 4);
        // The network header did not move.
        assert_eq!(out[0].network_header_offset(), Some(18));
    }

    #[test]
    fn tci_pcp_and_ethertype() {
        let mut h = Harness::push(&CLASS, "0x0123, 5, ETHERTYPE 0x88a8", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], tagged(&IPV4_UDP, &[(0x88a8, 0xa123)]));
        let mut h = Harness::push(&CLASS, "VLAN_ID 4094, VLAN_PCP 7", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], tagged(&IPV4_UDP, &[(0x8100, 0xeffe)]));
    }

    #[test]
    fn native_vlan_is_untagged() {
        // Click's default NATIVE_VLAN 0: a priority-only TCI adds no tag.
        let mut h = Harness::push(&CLASS, "VLAN_ID 0, VLAN_PCP 3", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], IPV4_UDP.to_vec());
        let mut h = Harness::push(&CLASS, "VLAN_ID 0, NATIVE_VLAN -1", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], tagged(&IPV4_UDP, &[(0x8100, 0)]));
        let mut h = Harness::push(&CLASS, "VLAN_ID 7, NATIVE_VLAN 7", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], IPV4_UDP.to_vec());
    }

    #[test]
    fn anno_takes_the_annotation() {
        let mut h = Harness::push(&CLASS, "ANNO", 1, 1);
        let mut a = Packet::from_slice(&IPV4_UDP).unwrap();
        a.anno_mut().vlan_tci = 0x2064;
        let b = Packet::from_slice(&IPV4_UDP).unwrap(); // annotation 0: native
        h.push_packets(0, [a, b]);
        let out = h.take_bytes(0);
        assert_eq!(out[0], tagged(&IPV4_UDP, &[(0x8100, 0x2064)]));
        assert_eq!(out[1], IPV4_UDP.to_vec());
    }

    #[test]
    fn short_frames_and_full_headroom_are_counted() {
        let mut h = Harness::push(&CLASS, "VLAN_ID 2", 1, 1);
        let mut full = Packet::from_slice(&IPV4_UDP).unwrap();
        full.push_front(HEADROOM - 2).unwrap();
        h.push_packets(
            0,
            [
                Packet::from_slice(&IPV4_UDP[..13]).unwrap(),
                full,
                Packet::from_slice(&IPV4_UDP[..14]).unwrap(),
            ],
        );
        let out = h.take_bytes(0);
        assert_eq!(out, vec![tagged(&IPV4_UDP[..14], &[(0x8100, 2)])]);
        let s = h.stats();
        assert_eq!(s.get("truncated"), Some(1));
        assert_eq!(s.get("no_headroom"), Some(1));
    }

    #[test]
    fn pull_path_tags() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "VLAN_ID 9", ports);
        h.feed(0, [Packet::from_slice(&IPV4_UDP).unwrap()]);
        let got = h.pull(0, 8);
        assert_eq!(got[0].data(), &tagged(&IPV4_UDP, &[(0x8100, 9)])[..]);
    }

    #[test]
    fn write_handlers() {
        let mut h = Harness::push(&CLASS, "VLAN_ID 9", 1, 1);
        h.write_handler("vlan_id", "100").unwrap();
        h.write_handler("vlan_pcp", "1").unwrap();
        h.write_handler("ethertype", "0x9100").unwrap();
        assert!(h.write_handler("vlan_id", "4096").is_err());
        assert!(h.write_handler("mtu", "1").is_err());
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], tagged(&IPV4_UDP, &[(0x9100, 0x2064)]));
        h.write_handler("native_vlan", "100").unwrap();
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], IPV4_UDP.to_vec());
        h.write_handler("vlan_tci", "ANNO").unwrap();
        assert!(h.write_handler("vlan_id", "3").is_err());
    }

    #[test]
    fn arguments_are_checked() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        // Click's default, VLAN 0, is the native VLAN: frames pass untagged.
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], IPV4_UDP.to_vec());
        let mut h = Harness::push(&CLASS, "VLAN_PCP 5, NATIVE_VLAN -1", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], tagged(&IPV4_UDP, &[(0x8100, 0xa000)]));
        assert!(make("10, VLAN_ID 10").unwrap_err().contains("both"));
        assert!(make("ANNO, VLAN_PCP 3").unwrap_err().contains("VLAN_PCP"));
        assert!(make("VLAN_TCI ANNO, VLAN_PCP 3")
            .unwrap_err()
            .contains("VLAN_PCP"));
        assert!(make("ANNO 3").unwrap_err().contains("ANNO"));
        assert!(make("5, ANNO").is_err());
        assert!(make("VLAN_ID 4096").unwrap_err().contains("VLAN_ID"));
        assert!(make("VLAN_ID 1, VLAN_PCP 8")
            .unwrap_err()
            .contains("VLAN_PCP"));
        assert!(make("VLAN_ID 1, NATIVE_VLAN -2")
            .unwrap_err()
            .contains("NATIVE_VLAN"));
        assert!(make("VLAN_ID 1, VLAN 2").unwrap_err().contains("VLAN"));
        assert!(make("VLAN_ID 1, ETHERTYPE 0x88a8").is_ok());
        assert!(make("ANNO").is_ok());
        assert!(make("VLAN_TCI ANNO, NATIVE_VLAN -1").is_ok());
    }
}
