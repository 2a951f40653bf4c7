//! `SetIPAddress`: sets the destination IP address annotation to a fixed
//! address, as Click's `elements/ip/setipaddress.cc` does: the next hop
//! that ARPQuerier resolves, for traffic a configuration routes by hand.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
};
use std::net::Ipv4Addr;

/// The `SetIPAddress` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetIPAddress",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets destination IP address annotations",
    synopsis: "SetIPAddress(ADDR [, ANNO])",
    description: "Sets the destination IP address annotation of every packet to ADDR and \
        passes it on; the packet's bytes are not touched. The write handler `addr` changes \
        ADDR while the router runs. bricks' annotations are named fields, not Click's \
        numbered bytes: ANNO may only name the destination address annotation \
        (`DST_IP_ANNO`, or `0`, its offset in Click), and reading `addr` back is not \
        possible (a read handler is a counter in bricks).",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "ADDR",
            ty: "IPv4 address",
            default: None,
            doc: "the address (Click's keyword for it is IPADDR, also accepted)",
        },
        Keyword {
            name: "ANNO",
            ty: "DST_IP_ANNO or 0",
            default: Some("DST_IP_ANNO"),
            doc: "the annotation to set",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 1, LENGTH 20) -> SetIPAddress(10.0.0.1) -> Discard;",
    see_also: &["GetIPAddress", "ARPQuerier", "StaticIPLookup"],
};

/// ANNO: the destination address annotation, by Click's name or offset.
struct DstAnno;

impl FromArg for DstAnno {
    const TYPE: &'static str = "DST_IP_ANNO (the only address annotation bricks has)";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text {
            "DST_IP_ANNO" | "0" => Ok(DstAnno),
            _ => Err(format!("found `{text}`")),
        }
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let addr: Ipv4Addr = match args.read("IPADDR")? {
        Some(a) => a,
        None => args.read_mp("ADDR")?,
    };
    let _: Option<DstAnno> = args.read_p("ANNO")?;
    Ok(Box::new(SetIPAddress { addr }))
}

/// Sets the destination address annotation.
#[derive(Debug)]
pub struct SetIPAddress {
    addr: Ipv4Addr,
}

impl SetIPAddress {
    #[inline]
    fn set(&self, batch: &mut Batch) {
        for p in batch.iter_mut() {
            p.anno_mut().dst_ip = self.addr;
        }
    }
}

impl Element for SetIPAddress {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.set(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.set(b));
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "addr" => {
                self.addr = Ipv4Addr::from_arg(value.trim())?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (SetIPAddress has `addr`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::Packet;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn sets_the_annotation_only() {
        let mut h = Harness::push(&CLASS, "10.0.0.1", 1, 1);
        let frame = udp(4);
        h.push_packets(0, [Packet::from_slice(&frame).unwrap()]);
        let out = h.take(0);
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(out[0].data(), &frame[..]);
        h.write_handler("addr", " 192.0.2.9").unwrap();
        assert!(h.write_handler("addr", "nowhere").is_err());
        assert!(h.write_handler("dst", "1.2.3.4").is_err());
        h.push_bytes(0, &frame);
        assert_eq!(h.take(0)[0].anno().dst_ip, Ipv4Addr::new(192, 0, 2, 9));
    }

    #[test]
    fn arguments() {
        let ok = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(ok("IPADDR 10.0.0.1").is_ok());
        assert!(ok("ADDR 10.0.0.1, ANNO DST_IP_ANNO").is_ok());
        assert!(ok("10.0.0.1, 0").is_ok());
        assert!(ok("10.0.0.1, 4").unwrap_err().contains("ANNO"));
        assert!(ok("").unwrap_err().contains("ADDR"));
        assert!(ok("10.0.0").is_err());
    }
}
