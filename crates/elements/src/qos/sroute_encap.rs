//! `SourceRouteEncap`: writes a source route (the shim of
//! [`bricks_qos::sroute`]) into Ethernet frames, for route selection
//! "look" by the routers on the path (`SourceRouteLookup`). bricks' own
//! element.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_qos::sroute::{Hop, SourceRoute, SourceRouteRepr, ETHERTYPE, MAX_HOPS};
use std::net::Ipv4Addr;

/// The `SourceRouteEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SourceRouteEncap",
    ports: "1/1-2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// Bytes of an Ethernet header without tags.
pub(crate) const ETHER_LEN: usize = 14;

/// The shim of an Ethernet frame announced by `ethertype`: the view, or
/// `None` when the frame carries none (or too short a one to check).
#[inline(always)]
pub(crate) fn shim_of(d: &[u8], ethertype: u16) -> Option<&[u8]> {
    let t = d.get(12..14)?;
    (u16::from_be_bytes([t[0], t[1]]) == ethertype).then(|| &d[ETHER_LEN..])
}

/// Reads the ETHERTYPE keyword shared by the source-route elements.
pub(crate) fn read_ethertype(args: &mut Args<'_>) -> Result<u16, ArgError> {
    let t: u16 = args.read("ETHERTYPE")?.unwrap_or(ETHERTYPE);
    if t < 0x0600 {
        return Err(ArgError::new(format!(
            "ETHERTYPE {t:#06x} is a length, not a type (types start at 0x0600)"
        )));
    }
    Ok(t)
}

pub(crate) static ETHERTYPE_KEYWORD: Keyword = Keyword {
    name: "ETHERTYPE",
    ty: "16-bit EtherType",
    default: Some("0x88B5"),
    doc: "the EtherType that announces the shim",
};

static MANUAL: Manual = Manual {
    summary: "writes a source route into Ethernet frames",
    synopsis: "SourceRouteEncap(HOPS [, ETHERTYPE t])",
    description: "Inserts bricks' source-route shim between the Ethernet header and the \
        payload of each frame: the frame's type becomes ETHERTYPE, and the shim holds the \
        payload's type and the hops, each a next-hop address and an output port, to be \
        consumed one per router by SourceRouteLookup and removed by SourceRouteDecap. The \
        shim is 6 bytes plus 6 per hop (at most 16 hops); the Ethernet header moves into the \
        packet's headroom, so the payload is never copied.\
        \n\nShim layout: version (2), hop count, index of the next hop (0 here), 0, the \
        payload's EtherType, then each hop's IPv4 next hop and 16-bit output port. Frames \
        shorter than an Ethernet header, and frames without room in front for the shim, go \
        to output 1, or are dropped and counted when it is not connected.",
    ports: "one input; output 0 the frames with their route, output 1 (optional) refused frames; agnostic",
    keywords: &[
        Keyword {
            name: "HOPS",
            ty: "list of NEXTHOP:OUTPUT",
            default: None,
            doc: "the route, first hop first (e.g. `10.0.1.1:1 10.0.2.1:0`); positional",
        },
        ETHERTYPE_KEYWORD,
    ],
    counters: &[
        ("encapsulated", "frames given the route"),
        ("truncated", "frames shorter than an Ethernet header"),
        ("no_headroom", "frames without room in front for the shim"),
    ],
    example: "InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 08 00 45 00 00 14 00 00 \
        40 00 40 11 23 3d 12 1a 04 63 01 00 00 02>, LIMIT 2) \
        -> SourceRouteEncap(10.0.1.1:1 10.0.2.1:0) -> sl :: SourceRouteLookup \
        -> SourceRouteDecap -> Discard;\nsl[1] -> Discard;",
    see_also: &["SourceRouteLookup", "SourceRouteDecap", "FlowLookup"],
};

/// A route as HOPS gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hops(Vec<Hop>);

impl FromArg for Hops {
    const TYPE: &'static str = "list of NEXTHOP:OUTPUT";
    fn from_arg(text: &str) -> Result<Self, String> {
        let mut hops = Vec::new();
        for w in text.split_whitespace() {
            let (a, p) = w
                .split_once(':')
                .ok_or_else(|| format!("`{w}` is not NEXTHOP:OUTPUT"))?;
            let next_hop: Ipv4Addr = a
                .parse()
                .map_err(|_| format!("`{a}` is not an IPv4 address"))?;
            let output: u16 = p
                .parse()
                .map_err(|_| format!("`{p}` is not an output port (0 to 65535)"))?;
            hops.push(Hop { next_hop, output });
        }
        if hops.is_empty() || hops.len() > MAX_HOPS {
            return Err(format!(
                "found {} hops; a route has 1 to {MAX_HOPS}",
                hops.len()
            ));
        }
        Ok(Hops(hops))
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let hops: Hops = args.read_mp("HOPS")?;
    let ethertype = read_ethertype(args)?;
    let repr = SourceRouteRepr {
        hops: hops.0,
        index: 0,
        ethertype: 0,
    };
    let mut shim = vec![0; repr.buffer_len()];
    repr.emit(&mut shim)
        .map_err(|e| ArgError::new(format!("HOPS: {e}")))?;
    Ok(Box::new(SourceRouteEncap {
        shim,
        ethertype,
        encapsulated: 0,
        truncated: 0,
        no_headroom: 0,
    }))
}

/// Inserts a fixed source route.
pub struct SourceRouteEncap {
    /// The shim, its payload type left 0 (written per frame).
    shim: Vec<u8>,
    ethertype: u16,
    encapsulated: u64,
    truncated: u64,
    no_headroom: u64,
}

impl SourceRouteEncap {
    #[inline(always)]
    fn encap(&mut self, p: &mut Packet) -> usize {
        if p.len() < ETHER_LEN {
            self.truncated += 1;
            return 1;
        }
        let n = self.shim.len();
        if p.push_front(n).is_err() {
            self.no_headroom += 1;
            return 1;
        }
        let d = p.data_mut();
        d.copy_within(n..n + 12, 0);
        let payload = [d[n + 12], d[n + 13]];
        d[12..14].copy_from_slice(&self.ethertype.to_be_bytes());
        let shim = &mut d[ETHER_LEN..ETHER_LEN + n];
        shim.copy_from_slice(&self.shim);
        shim[4..6].copy_from_slice(&payload);
        debug_assert!(SourceRoute::new_checked(&*shim).is_ok());
        self.encapsulated += 1;
        0
    }
}

impl Element for SourceRouteEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| Some(self.encap(p)));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("encapsulated", self.encapsulated);
        s.counter("truncated", self.truncated);
        s.counter("no_headroom", self.no_headroom);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::IPV4_UDP;
    use bricks_runtime::testing::Harness;

    #[test]
    fn inserts_the_shim_after_the_addresses() {
        let mut h = Harness::push(&CLASS, "10.0.1.1:1 10.0.2.1:3", 1, 2);
        h.push_bytes(0, &IPV4_UDP);
        h.push_bytes(0, &IPV4_UDP[..13]);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        let f = &out[0];
        assert_eq!(f.len(), 64 + 18);
        assert_eq!(&f[..12], &IPV4_UDP[..12]);
        assert_eq!(&f[12..14], &[0x88, 0xb5]);
        assert_eq!(
            &f[14..32],
            &[0x02, 0x02, 0x00, 0x00, 0x08, 0x00, 10, 0, 1, 1, 0, 1, 10, 0, 2, 1, 0, 3]
        );
        assert_eq!(&f[32..], &IPV4_UDP[14..]);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("truncated"), Some(1));
    }

    #[test]
    fn arguments() {
        for (args, why) in [
            ("", "missing mandatory argument HOPS"),
            ("10.0.0.1", "not NEXTHOP:OUTPUT"),
            ("10.0.0:1", "not an IPv4 address"),
            ("10.0.0.1:70000", "not an output port"),
            ("10.0.0.1:1, ETHERTYPE 0x05dc", "is a length"),
        ] {
            let e = Harness::try_new(
                &CLASS,
                args,
                PortInfo {
                    inputs: vec![bricks_element::Processing::Push],
                    outputs: vec![bricks_element::Processing::Push],
                },
            )
            .err()
            .unwrap();
            assert!(e.contains(why), "{args}: {e}");
        }
        let many = vec!["1.1.1.1:1"; 17].join(" ");
        assert!(Hops::from_arg(&many).unwrap_err().contains("1 to 16"));
        assert_eq!(
            Hops::from_arg(&vec!["1.1.1.1:1"; 16].join(" "))
                .unwrap()
                .0
                .len(),
            16
        );
    }

    #[test]
    fn no_headroom_is_refused() {
        let mut h = Harness::push(&CLASS, "10.0.1.1:1", 1, 1);
        let mut p = Packet::from_slice(&IPV4_UDP).unwrap();
        let room = p.headroom();
        p.push_front(room - 3).unwrap();
        h.push_packets(0, [p]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("no_headroom"), Some(1));
    }
}
