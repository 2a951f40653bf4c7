//! `EtherEncap`: puts a fixed Ethernet II header (RFC 894) in front of each
//! packet, in the headroom, without touching the payload.
//!
//! The header is built once from the arguments; per packet the element
//! moves the frame start back 14 bytes and copies the prebuilt array there.
//! It is on the IPv4 forwarding fast path, so it does nothing else.

use super::{header_words, push_header_words};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};
use bricks_wire::ethernet::{EthernetAddress, HEADER_LEN};

/// The `EtherEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EtherEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates packets in a fixed Ethernet header",
    synopsis: "EtherEncap(ETHERTYPE, SRC, DST)",
    description: "Prepends a 14-byte Ethernet II header (RFC 894) with type ETHERTYPE, \
        source address SRC and destination address DST to every packet. ETHERTYPE is \
        written in host order, as in Click: 0x0800 for IPv4, 0x86DD for IPv6. The header \
        goes into the buffer's headroom, so the payload is never copied; a packet with \
        less than 14 bytes of headroom (only possible after other encapsulations have used \
        it up) is dropped and counted. When the next hop is not fixed, ARPQuerier finds \
        the destination address instead. Write handlers `src`, `dst` and `ethertype` \
        change the header while the router runs.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "ETHERTYPE",
            ty: "unsigned 16-bit integer",
            default: None,
            doc: "the EtherType, e.g. 0x0800",
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
    ],
    counters: &[(
        "no_headroom",
        "packets dropped for lack of 14 bytes of headroom",
    )],
    example:
        "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 00 00 00 0a 00 00 01 0a 00 00 02>, \
        LIMIT 1) -> EtherEncap(0x0800, 52:54:00:aa:00:01, 52:54:00:bb:00:02) -> Discard;",
    see_also: &["EtherRewrite", "ARPQuerier", "Strip"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let ethertype: u16 = args.read_mp("ETHERTYPE")?;
    let src: EthernetAddress = args.read_mp("SRC")?;
    let dst: EthernetAddress = args.read_mp("DST")?;
    Ok(Box::new(EtherEncap::new(ethertype, src, dst)))
}

/// Prepends a prebuilt Ethernet header.
#[derive(Debug)]
pub struct EtherEncap {
    /// Destination, source and type, in wire order.
    header: [u8; HEADER_LEN],
    no_headroom: u64,
}

impl EtherEncap {
    /// An encapsulator writing `dst`, `src` and `ethertype`.
    pub fn new(ethertype: u16, src: EthernetAddress, dst: EthernetAddress) -> EtherEncap {
        let mut header = [0u8; HEADER_LEN];
        header[..6].copy_from_slice(&dst.0);
        header[6..12].copy_from_slice(&src.0);
        header[12..].copy_from_slice(&ethertype.to_be_bytes());
        EtherEncap {
            header,
            no_headroom: 0,
        }
    }

    #[inline]
    fn encap(&mut self, batch: &mut Batch) {
        let mut failed = 0u64;
        // In registers: read from the element (or a copy on the stack), it
        // would be loaded again for every packet, as a store to the packet
        // might have changed it.
        let words = header_words(&self.header);
        for p in batch.iter_mut() {
            if push_header_words(p, words).is_err() {
                // Emptied so that the rare cleanup pass below can tell it
                // apart: every encapsulated frame is at least 14 bytes.
                p.take_back(p.len());
                failed += 1;
            }
        }
        if failed != 0 {
            self.no_headroom += failed;
            batch.retain(|p| !p.is_empty());
        }
    }
}

impl Element for EtherEncap {
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
            "ethertype" => self.header[12..].copy_from_slice(&u16::from_arg(value)?.to_be_bytes()),
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (src, dst, ethertype)"
                ))
            }
        }
        Ok(())
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        let h = &self.header;
        // Click prints EtherType in decimal and addresses with dashes.
        let dashed = super::dashed;
        match handler {
            "ethertype" => Some(u16::from_be_bytes([h[12], h[13]]).to_string()),
            "src" => Some(dashed(&h[6..12])),
            "dst" => Some(dashed(&h[..6])),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 3] = [
            Handler::rw("src"),
            Handler::rw("dst"),
            Handler::rw("ethertype"),
        ];
        &HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ether::testdata::{echo_ip, A_ECHO_B};
    use bricks_element::{Packet, Processing};
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    const ARGS: &str = "0x0800, 52:54:00:aa:00:01, 52:54:00:bb:00:02";

    #[test]
    fn prepends_exact_header() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 1);
        h.push_bytes(0, echo_ip());
        assert_eq!(h.take_bytes(0), vec![A_ECHO_B.to_vec()]);
    }

    #[test]
    fn uses_headroom_without_moving_payload() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 1);
        let mut p = Packet::from_slice(echo_ip()).unwrap();
        p.set_network_header(0);
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out[0].headroom(), HEADROOM - 14);
        assert_eq!(out[0].network_header_offset(), Some(14));
    }

    #[test]
    fn pull_path_encapsulates() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, ARGS, ports);
        h.feed(0, [Packet::from_slice(echo_ip()).unwrap()]);
        let got = h.pull(0, 8);
        assert_eq!(got[0].data(), &A_ECHO_B[..]);
    }

    #[test]
    fn no_headroom_is_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 1);
        let mut full = Packet::from_slice(&[1, 2, 3]).unwrap();
        full.push_front(HEADROOM - 4).unwrap();
        let ok = Packet::from_slice(&[9]).unwrap();
        h.push_packets(0, [full, ok]);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0][14], 9);
        assert_eq!(h.stats().get("no_headroom"), Some(1));
    }

    #[test]
    fn write_handlers_change_header() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 1);
        h.write_handler("dst", "ff:ff:ff:ff:ff:ff").unwrap();
        h.write_handler("src", "02-00-00-00-00-01").unwrap();
        h.write_handler("ethertype", "0x86dd").unwrap();
        assert!(h.write_handler("ethertype", "0x10000").is_err());
        assert_eq!(h.read_handler("ethertype").unwrap(), "34525");
        assert_eq!(h.read_handler("src").unwrap(), "02-00-00-00-00-01");
        assert_eq!(h.read_handler("dst").unwrap(), "FF-FF-FF-FF-FF-FF");
        assert!(h.write_handler("mtu", "1").is_err());
        h.push_bytes(0, &[]);
        assert_eq!(
            h.take_bytes(0)[0],
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x86, 0xdd]
        );
    }

    #[test]
    fn arguments_are_checked() {
        let e = make_element(&CLASS, "0x0800, 1:2:3:4:5:6", &PortInfo::default());
        assert!(e.unwrap_err().contains("DST"));
        let e = make_element(
            &CLASS,
            "0x10000, 1:2:3:4:5:6, 1:2:3:4:5:6",
            &PortInfo::default(),
        );
        assert!(e.unwrap_err().contains("ETHERTYPE"));
        let e = make_element(
            &CLASS,
            "0x0800, 1:2:3:4:5, 1:2:3:4:5:6",
            &PortInfo::default(),
        );
        assert!(e.unwrap_err().contains("SRC"));
        assert!(make_element(
            &CLASS,
            "ETHERTYPE 2048, SRC 1:2:3:4:5:6, DST 1:2:3:4:5:6",
            &PortInfo::default()
        )
        .is_ok());
    }
}
