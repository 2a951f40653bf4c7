//! `GetIPAddress`: sets the destination address annotation, which the route
//! lookup reads, from four bytes of the packet.

use super::header::be32;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use std::net::Ipv4Addr;

/// The `GetIPAddress` class.
pub static CLASS: ElementClass = ElementClass {
    name: "GetIPAddress",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets the destination IP address annotation from the packet",
    synopsis: "GetIPAddress(OFFSET) or GetIPAddress(IP src|dst)",
    description: "Copies four bytes of each packet, starting OFFSET bytes into the \
        data, into the destination IP address annotation that StaticIPLookup and \
        ARPQuerier read. OFFSET is usually 16, the destination address of an IP header \
        at the start of the data. With IP dst (or IP src) instead of OFFSET, the \
        address is read from the IP header wherever the network header annotation \
        puts it. A packet too short to hold the address is dropped and counted: \
        routing it on a stale annotation would send it somewhere arbitrary.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "OFFSET",
            ty: "unsigned integer",
            default: None,
            doc: "where the address starts in the packet data",
        },
        Keyword {
            name: "IP",
            ty: "`src` or `dst`",
            default: None,
            doc: "read the IP header's source or destination instead of a fixed \
                offset; give OFFSET or IP, not both",
        },
    ],
    counters: &[("drops", "packets too short to hold the address")],
    example: "InfiniteSource(LIMIT 1, LENGTH 20) -> GetIPAddress(16) -> Discard;",
    see_also: &["CheckIPHeader", "StaticIPLookup"],
};

/// Where the address is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// At a fixed offset in the packet data.
    Offset(usize),
    /// At an offset in the IP header.
    Header(usize),
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: Option<usize> = args.read_p("OFFSET")?;
    let ip: Option<String> = args.read("IP")?;
    let source = match (offset, ip.as_deref()) {
        (Some(o), None) => Source::Offset(o),
        (None, Some("src")) => Source::Header(12),
        (None, Some("dst")) => Source::Header(16),
        (None, Some(other)) => {
            return Err(ArgError::new(format!(
                "bad argument IP: expected `src` or `dst`, found `{other}`"
            )))
        }
        _ => {
            return Err(ArgError::new("set one of OFFSET, IP")
                .with_help("GetIPAddress(16) reads the destination of an IP header at offset 0"))
        }
    };
    Ok(Box::new(GetIPAddress { source, drops: 0 }))
}

/// Sets the destination annotation from the packet.
#[derive(Debug)]
pub struct GetIPAddress {
    source: Source,
    drops: u64,
}

impl GetIPAddress {
    #[inline]
    fn get(&mut self, p: &mut Packet) -> Option<usize> {
        let (bytes, at) = match self.source {
            Source::Offset(o) => (p.data(), o),
            Source::Header(o) => (p.l3_bytes(), o),
        };
        match bytes.get(at..at.saturating_add(4)) {
            Some(a) => {
                let addr = be32(a, 0);
                p.anno_mut().dst_ip = Ipv4Addr::from(addr);
                Some(0)
            }
            None => {
                self.drops += 1;
                None
            }
        }
    }
}

impl GetIPAddress {
    /// Sets the annotation of every packet of `batch` from a fixed offset,
    /// and says whether all of them were long enough: the rule, after which
    /// the batch leaves by output 0 whole. A short packet leaves the batch
    /// to [`GetIPAddress::get`], which sets the annotations again (the same
    /// values) and counts and drops it.
    #[inline]
    fn all_at_offset(batch: &mut Batch, at: usize) -> bool {
        batch.iter_mut().all(|p| match p.chunk_at::<4>(at) {
            Some(&a) => {
                p.anno_mut().dst_ip = Ipv4Addr::from(a);
                true
            }
            None => false,
        })
    }
}

impl Element for GetIPAddress {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if let Source::Offset(at) = self.source {
            if Self::all_at_offset(batch, at) {
                return cx.push(0, batch);
            }
        }
        cx.push_classified(batch, |p| self.get(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.get(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::echo_request;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn reads_destination_at_offset_16() {
        let mut h = Harness::push(&CLASS, "16", 1, 1);
        h.push_bytes(0, &echo_request());
        assert_eq!(h.take(0)[0].anno().dst_ip, Ipv4Addr::new(198, 51, 100, 7));
    }

    #[test]
    fn reads_from_the_ip_header() {
        let mut frame = vec![0u8; 14];
        frame.extend(echo_request());
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        let mut h = Harness::push(&CLASS, "IP src", 1, 1);
        h.push_packets(0, [p]);
        assert_eq!(h.take(0)[0].anno().dst_ip, Ipv4Addr::new(192, 0, 2, 1));
    }

    #[test]
    fn short_packet_is_dropped() {
        let mut h = Harness::push(&CLASS, "16", 1, 1);
        h.push_bytes(0, &echo_request()[..19]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
        let mut h = Harness::push(&CLASS, &format!("{}", usize::MAX), 1, 1);
        h.push_bytes(0, &echo_request());
        assert_eq!(h.stats().get("drops"), Some(1));
    }

    #[test]
    fn batch_with_a_short_packet_agrees_with_one_at_a_time() {
        let full = echo_request();
        let frames: [&[u8]; 3] = [&full, &full[..19], &full];
        let mut h = Harness::push(&CLASS, "16", 1, 1);
        h.push_packets(0, frames.map(|f| Packet::from_slice(f).unwrap()));
        let out = h.take(0);
        assert_eq!(out.len(), 2);
        assert!(out
            .iter()
            .all(|p| p.anno().dst_ip == Ipv4Addr::new(198, 51, 100, 7)));
        assert_eq!(h.stats().get("drops"), Some(1));
        let mut one = Harness::push(&CLASS, "16", 1, 1);
        for f in frames {
            one.push_bytes(0, f);
        }
        assert_eq!(one.take(0).len(), 2);
        assert_eq!(one.stats().get("drops"), Some(1));
    }

    #[test]
    fn arguments() {
        let ports = PortInfo::default();
        assert!(make_element(&CLASS, "", &ports)
            .unwrap_err()
            .contains("OFFSET"));
        assert!(make_element(&CLASS, "16, IP dst", &ports).is_err());
        assert!(make_element(&CLASS, "IP both", &ports).is_err());
        assert!(make_element(&CLASS, "IP dst", &ports).is_ok());
    }
}
