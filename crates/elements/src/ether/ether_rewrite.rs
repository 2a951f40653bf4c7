//! `EtherRewrite`: overwrites the two addresses of an Ethernet header in
//! place, leaving its type and the payload alone.
//!
//! This is the whole per-packet work of minimal forwarding (RouteBricks
//! §5.1): one length check and a 12-byte copy.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_wire::ethernet::{EthernetAddress, HEADER_LEN};

/// The `EtherRewrite` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EtherRewrite",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "rewrites the source and destination Ethernet addresses",
    synopsis: "EtherRewrite(SRC, DST)",
    description: "Overwrites the source address of each frame's Ethernet header with SRC \
        and the destination address with DST; the EtherType and the payload are left \
        untouched. Useful when a link has a single possible next hop (a transparent \
        firewall, minimal forwarding between two ports), so that both addresses are the \
        same for every packet. Frames shorter than an Ethernet header (14 bytes) are \
        dropped and counted. Write handlers `src` and `dst` change the addresses while \
        the router runs.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "SRC",
            ty: "Ethernet address",
            default: None,
            doc: "new source address",
        },
        Keyword {
            name: "DST",
            ty: "Ethernet address",
            default: None,
            doc: "new destination address",
        },
    ],
    counters: &[("runts", "frames shorter than 14 bytes, dropped")],
    example: "InfiniteSource(LIMIT 1) -> EtherRewrite(52:54:00:aa:00:01, 52:54:00:bb:00:02) \
        -> Discard;",
    see_also: &["EtherEncap", "ARPQuerier", "HostEtherFilter"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let src: EthernetAddress = args.read_mp("SRC")?;
    let dst: EthernetAddress = args.read_mp("DST")?;
    Ok(Box::new(EtherRewrite::new(src, dst)))
}

/// Overwrites both Ethernet addresses.
#[derive(Debug)]
pub struct EtherRewrite {
    /// Destination then source, in wire order.
    addrs: [u8; 12],
    runts: u64,
}

impl EtherRewrite {
    /// A rewriter to `src` and `dst`.
    pub fn new(src: EthernetAddress, dst: EthernetAddress) -> EtherRewrite {
        let mut addrs = [0u8; 12];
        addrs[..6].copy_from_slice(&dst.0);
        addrs[6..].copy_from_slice(&src.0);
        EtherRewrite { addrs, runts: 0 }
    }

    #[inline]
    fn rewrite(&mut self, batch: &mut Batch) {
        let mut runts = 0u64;
        for p in batch.iter_mut() {
            let d = p.data_mut();
            if d.len() >= HEADER_LEN {
                d[..12].copy_from_slice(&self.addrs);
            } else {
                runts += 1;
            }
        }
        if runts != 0 {
            self.runts += runts;
            batch.retain(|p| p.len() >= HEADER_LEN);
        }
    }
}

impl Element for EtherRewrite {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.rewrite(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.rewrite(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("runts", self.runts);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let addr = || EthernetAddress::from_arg(value.trim());
        match handler {
            "src" => self.addrs[6..].copy_from_slice(&addr()?.0),
            "dst" => self.addrs[..6].copy_from_slice(&addr()?.0),
            _ => return Err(format!("no write handler `{handler}` (src, dst)")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ether::testdata::{A_ECHO_B, B_REPLY_A};
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn rewrites_both_addresses_only() {
        // B's reply to A, readdressed as if A had sent its echo: the
        // addresses become A_ECHO_B's, type and ARP payload stay.
        let mut h = Harness::push(&CLASS, "52:54:00:aa:00:01, 52:54:00:bb:00:02", 1, 1);
        h.push_bytes(0, &B_REPLY_A);
        let out = h.take_bytes(0);
        assert_eq!(out[0][..12], A_ECHO_B[..12]);
        assert_eq!(out[0][12..], B_REPLY_A[12..]);
    }

    #[test]
    fn runts_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "1:1:1:1:1:1, 2:2:2:2:2:2", 1, 1);
        h.push_packets(
            0,
            [
                Packet::from_slice(&[0; 13]).unwrap(),
                Packet::from_slice(&[0; 14]).unwrap(),
                Packet::from_slice(&[]).unwrap(),
            ],
        );
        let out = h.take_bytes(0);
        assert_eq!(out, vec![vec![2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0]]);
        assert_eq!(h.stats().get("runts"), Some(2));
    }

    #[test]
    fn pull_path_rewrites() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "1:1:1:1:1:1, 2:2:2:2:2:2", ports);
        h.feed(0, [Packet::from_slice(&A_ECHO_B).unwrap()]);
        let got = h.pull(0, 4);
        assert_eq!(got[0].data()[..12], [2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1]);
        assert_eq!(got[0].data()[12..], A_ECHO_B[12..]);
    }

    #[test]
    fn write_handlers_and_arguments() {
        let mut h = Harness::push(&CLASS, "1:1:1:1:1:1, 2:2:2:2:2:2", 1, 1);
        h.write_handler("src", "3:3:3:3:3:3").unwrap();
        h.write_handler("dst", "4:4:4:4:4:4").unwrap();
        assert!(h.write_handler("dst", "nonsense").is_err());
        h.push_bytes(0, &[0; 14]);
        assert_eq!(
            h.take_bytes(0)[0][..12],
            [4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3]
        );
        let e = make_element(&CLASS, "1:1:1:1:1:1", &PortInfo::default());
        assert!(e.unwrap_err().contains("DST"));
    }
}
