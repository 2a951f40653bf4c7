//! `EtherVLANEncap`: puts a whole 802.1Q Ethernet header in front of each
//! packet (Click's `elements/ethernet/ethervlanencap.cc`): EtherEncap for a
//! virtual link.
//!
//! The header is built once; per packet the element moves the frame start
//! back 18 bytes (14 for the native VLAN) and writes the TCI when it comes
//! from the annotation.

use super::vlan_encap::write_tag_handler;
use super::TagSpec;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_wire::ethernet::EthernetAddress;

/// The `EtherVLANEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EtherVLANEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates packets in an 802.1Q Ethernet header",
    synopsis:
        "EtherVLANEncap(ETHERTYPE, SRC, DST, VLAN_TCI [, VLAN_PCP, KEYWORDS VLAN_ID, NATIVE_VLAN])",
    description: "Prepends an 18-byte 802.1Q Ethernet header to every packet: destination \
        DST, source SRC, type 0x8100, the tag, and the encapsulated type ETHERTYPE (written in \
        host order, as in Click: 0x0800 for IPv4). The tag's TCI is VLAN_TCI, or VLAN_ID with \
        priority VLAN_PCP; VLAN_TCI ANNO takes the whole TCI from each packet's VLAN TCI \
        annotation. VLAN_TCI and VLAN_ID may not both be given (Click lets VLAN_TCI win); \
        with neither, the VLAN ID is 0, as in Click. A packet whose VLAN ID \
        equals NATIVE_VLAN (0 unless set; -1 for none) gets a plain 14-byte Ethernet header \
        instead. The header goes into the buffer's headroom; a packet without room for it is \
        dropped and counted. Write handlers `src`, `dst`, `ethertype`, `vlan_tci`, `vlan_id`, \
        `vlan_pcp` and `native_vlan` change the header while the router runs.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "ETHERTYPE",
            ty: "unsigned 16-bit integer",
            default: None,
            doc: "the encapsulated EtherType, e.g. 0x0800",
        },
        Keyword {
            name: "SRC",
            ty: "Ethernet address",
            default: None,
            doc: "source address",
        },
        Keyword {
            name: "DST",
            ty: "Ethernet address",
            default: None,
            doc: "destination address",
        },
        Keyword {
            name: "VLAN_TCI",
            ty: "unsigned 16-bit integer or ANNO",
            default: None,
            doc: "the whole Tag Control Information; ANNO reads it from each packet's \
                VLAN TCI annotation",
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
            doc: "packets of this VLAN ID get an untagged header; -1 tags every packet",
        },
    ],
    counters: &[(
        "no_headroom",
        "packets dropped for lack of headroom for the header",
    )],
    example:
        "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 00 00 00 0a 00 00 01 0a 00 00 02>, \
        LIMIT 1) -> EtherVLANEncap(0x0800, 52:54:00:aa:00:01, 52:54:00:bb:00:02, VLAN_ID 10) \
        -> Discard;",
    see_also: &["EtherEncap", "VLANEncap", "VLANDecap", "VRDemux"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let ethertype: u16 = args.read_mp("ETHERTYPE")?;
    let src: EthernetAddress = args.read_mp("SRC")?;
    let dst: EthernetAddress = args.read_mp("DST")?;
    let spec = TagSpec::read(args)?;
    let mut e = EtherVLANEncap {
        header: [0; 18],
        spec,
        no_headroom: 0,
    };
    e.header[..6].copy_from_slice(&dst.0);
    e.header[6..12].copy_from_slice(&src.0);
    e.header[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
    e.header[16..18].copy_from_slice(&ethertype.to_be_bytes());
    Ok(Box::new(e))
}

/// Prepends a prebuilt 802.1Q header.
#[derive(Debug)]
pub struct EtherVLANEncap {
    /// Destination, source, 0x8100, TCI (rewritten per packet) and type.
    header: [u8; 18],
    spec: TagSpec,
    no_headroom: u64,
}

impl EtherVLANEncap {
    #[inline]
    fn encap(&mut self, batch: &mut Batch) {
        let mut no_headroom = 0u64;
        let spec = self.spec;
        let header = &mut self.header;
        batch.retain(|p| {
            let tci = spec.tci(p.anno().vlan_tci);
            let native = spec.is_native(tci);
            let len = if native { 14 } else { 18 };
            if p.push_front(len).is_err() {
                no_headroom += 1;
                return false;
            }
            let d = p.data_mut();
            if native {
                d[..12].copy_from_slice(&header[..12]);
                d[12..14].copy_from_slice(&header[16..18]);
            } else {
                header[14..16].copy_from_slice(&tci.to_be_bytes());
                d[..18].copy_from_slice(&header[..]);
            }
            true
        });
        self.no_headroom += no_headroom;
    }
}

impl Element for EtherVLANEncap {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.encap(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.encap(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("no_headroom", self.no_headroom);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match handler {
            "src" => self.header[6..12].copy_from_slice(&EthernetAddress::from_arg(value)?.0),
            "dst" => self.header[..6].copy_from_slice(&EthernetAddress::from_arg(value)?.0),
            "ethertype" => {
                self.header[16..18].copy_from_slice(&u16::from_arg(value)?.to_be_bytes())
            }
            _ => {
                return write_tag_handler(&mut self.spec, None, handler, value).map_err(|e| {
                    if e.starts_with("no write handler") {
                        format!("{e}, src, dst, ethertype")
                    } else {
                        e
                    }
                })
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{IPV4_UDP, VLAN_TCP};
    use crate::vrouter::vlan_decap;
    use bricks_element::Packet;
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    /// The capture's addresses and type, for rebuilding it.
    const CAPTURE_ARGS: &str = "0x0800, 00:15:2c:9d:cc:00, 00:10:db:ff:10:00";

    #[test]
    fn rebuilds_a_real_capture() {
        let mut h = Harness::push(&CLASS, &format!("{CAPTURE_ARGS}, VLAN_ID 503"), 1, 1);
        let mut p = Packet::from_slice(&VLAN_TCP[18..]).unwrap();
        p.set_network_header(0);
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out[0].data(), &VLAN_TCP[..]);
        assert_eq!(out[0].network_header_offset(), Some(18));
        assert_eq!(out[0].headroom(), HEADROOM - 18);
    }

    #[test]
    fn positional_tci_and_pcp() {
        let mut h = Harness::push(&CLASS, &format!("{CAPTURE_ARGS}, 0x1f7, 6"), 1, 1);
        h.push_bytes(0, &VLAN_TCP[18..]);
        let mut want = VLAN_TCP.to_vec();
        want[14] = 0xc1;
        assert_eq!(h.take_bytes(0)[0], want);
    }

    #[test]
    fn anno_and_native_vlan() {
        let mut h = Harness::push(
            &CLASS,
            &format!("{CAPTURE_ARGS}, ANNO, NATIVE_VLAN 9"),
            1,
            1,
        );
        let mut a = Packet::from_slice(&VLAN_TCP[18..]).unwrap();
        a.anno_mut().vlan_tci = 0x01f7;
        let mut b = Packet::from_slice(&VLAN_TCP[18..]).unwrap();
        b.anno_mut().vlan_tci = 0x6009;
        h.push_packets(0, [a, b]);
        let out = h.take_bytes(0);
        assert_eq!(out[0], VLAN_TCP.to_vec());
        assert_eq!(out[1], [&VLAN_TCP[..12], &VLAN_TCP[16..]].concat());
    }

    #[test]
    fn decap_undoes_it() {
        let mut h = Harness::push(&CLASS, "0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, VLAN_ID 42", 1, 1);
        let mut d = Harness::push(&vlan_decap::CLASS, "", 1, 1);
        h.push_bytes(0, &IPV4_UDP[14..]);
        d.push_packets(0, h.take(0));
        let out = d.take(0);
        assert_eq!(out[0].anno().vlan_tci, 42);
        let plain = [
            &[2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 8, 0][..],
            &IPV4_UDP[14..],
        ]
        .concat();
        assert_eq!(out[0].data(), &plain[..]);
    }

    #[test]
    fn no_headroom_is_counted() {
        let mut h = Harness::push(&CLASS, "0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, VLAN_ID 42", 1, 1);
        let mut p = Packet::from_slice(&[1, 2, 3]).unwrap();
        p.push_front(HEADROOM - 10).unwrap();
        h.push_packets(0, [p]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("no_headroom"), Some(1));
    }

    #[test]
    fn write_handlers() {
        let mut h = Harness::push(&CLASS, "0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, VLAN_ID 42", 1, 1);
        h.write_handler("dst", "ff:ff:ff:ff:ff:ff").unwrap();
        h.write_handler("src", "02:00:00:00:00:01").unwrap();
        h.write_handler("ethertype", "0x86dd").unwrap();
        h.write_handler("vlan_id", "7").unwrap();
        let e = h.write_handler("mtu", "1").unwrap_err();
        assert!(e.contains("src"), "{e}");
        h.push_bytes(0, &[]);
        assert_eq!(
            h.take_bytes(0)[0],
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x81, 0, 0, 7, 0x86, 0xdd]
        );
    }

    #[test]
    fn arguments_are_checked() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(make("0x0800, 1:1:1:1:1:1").unwrap_err().contains("DST"));
        assert!(make("0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2").is_ok());
        assert!(make("0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, 5, VLAN_ID 5")
            .unwrap_err()
            .contains("both"));
        assert!(make("0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, 0x10000")
            .unwrap_err()
            .contains("VLAN_TCI"));
        assert!(make("0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2, 5, 2").is_ok());
    }
}
