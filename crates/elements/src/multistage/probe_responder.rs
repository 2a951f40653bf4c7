//! `ProbeResponder`: a multistage router's L3 router answering the L2
//! balancers' liveness probes.
//!
//! Each probe gets one reply per front port `k`, from the router's MAC for
//! that port (`02:4d:53:ii:kk:00`) to the balancer's back MAC the probe
//! came from. The replies prove the router alive and, as they cross the
//! switch, teach it where every one of the router's MACs is, so that the
//! balancers' frames to the router are never flooded to every port.

use super::{router_mac, Probe, ProbeKind, ETHERTYPE_PROBE, ETHER_LEN};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};

/// The `ProbeResponder` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ProbeResponder",
    ports: "1/1",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "answers L2Balancer liveness probes on a multistage router's L3 router",
    synopsis: "ProbeResponder(ROUTER I, FRONTS F)",
    description: "Runs on L3 router I of a multistage router, on the frames of type 0x88B7 \
        from its back NIC. A probe from an L2Balancer addressed to this router (destination \
        02:4d:53:II:..:00 and router I in the probe) is answered with F replies, one per \
        front port K from 0 to F-1: source 02:4d:53:II:KK:00 (the router's MAC for front \
        port K), destination the probe's source (the balancer's back MAC), type 0x88B7, the \
        probe's balancer and sequence number, padded to 60 bytes. So the balancer sees the \
        router alive, and the switch learns every one of the router's MACs. Probes for \
        another router (the switch floods frames for addresses it has not learnt yet) are \
        dropped and counted, as are frames that are not probes and probes from a group \
        address.",
    ports: "one push input (0x88B7 frames); one push output (replies)",
    keywords: &[
        Keyword {
            name: "ROUTER",
            ty: "unsigned integer (0 to 254)",
            default: None,
            doc: "this router's number",
        },
        Keyword {
            name: "FRONTS",
            ty: "unsigned integer (1 to 255)",
            default: None,
            doc: "the number of front ports of the whole multistage router",
        },
    ],
    counters: &[
        ("probes", "probes answered"),
        ("replies", "replies sent (FRONTS per probe)"),
        ("not_mine", "probes for another router, dropped"),
        (
            "malformed",
            "frames that are not a probe from a unicast address, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<02 4d 53 00 00 00 02 4d 42 00 00 00 88 b7 \
        42 4b 4d 53 01 00 00 00 00 00 00 07>, LIMIT 1) \
        -> ProbeResponder(ROUTER 0, FRONTS 2) -> Discard;",
    see_also: &["L2Balancer", "VRDemux"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let router: u8 = args.read_mp("ROUTER")?;
    let fronts: usize = args.read_mp("FRONTS")?;
    if router == 255 {
        return Err(ArgError::new("ROUTER 255: routers are numbered 0 to 254"));
    }
    if !(1..=255).contains(&fronts) {
        return Err(ArgError::new(format!(
            "FRONTS {fronts}: from 1 to 255 front ports"
        )));
    }
    Ok(Box::new(ProbeResponder {
        router,
        fronts: fronts as u8,
        probes: 0,
        replies: 0,
        not_mine: 0,
        malformed: 0,
    }))
}

/// Answers probes for one router.
#[derive(Debug)]
pub struct ProbeResponder {
    router: u8,
    fronts: u8,
    probes: u64,
    replies: u64,
    not_mine: u64,
    malformed: u64,
}

impl ProbeResponder {
    /// The probe `d` carries if it is one for this router.
    fn probe(&mut self, d: &[u8]) -> Option<(Probe, [u8; 6])> {
        let Some(h) = d.first_chunk::<ETHER_LEN>() else {
            self.malformed += 1;
            return None;
        };
        let probe = Probe::parse(&d[ETHER_LEN..]);
        let src: [u8; 6] = [h[6], h[7], h[8], h[9], h[10], h[11]];
        let Some(pr) = probe.filter(|p| {
            p.kind == ProbeKind::Probe
                && h[12..14] == ETHERTYPE_PROBE.to_be_bytes()
                && src[0] & 1 == 0
        }) else {
            self.malformed += 1;
            return None;
        };
        let to_me = h[..3] == router_mac(0, 0)[..3] && h[3] == self.router && h[5] == 0;
        if !to_me || pr.router != self.router {
            self.not_mine += 1;
            return None;
        }
        Some((pr, src))
    }
}

impl Element for ProbeResponder {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut out = Batch::new();
        for p in batch.drain() {
            let Some((pr, balancer)) = self.probe(p.data()) else {
                continue;
            };
            self.probes += 1;
            for k in 0..self.fronts {
                let reply = Probe {
                    kind: ProbeKind::Reply,
                    balancer: pr.balancer,
                    router: self.router,
                    front: k,
                    seq: pr.seq,
                };
                let frame = reply.frame(balancer, router_mac(self.router, k));
                let Ok(q) = Packet::from_slice(&frame) else {
                    continue;
                };
                if let Err(q) = out.push(q) {
                    cx.push(0, &mut out);
                    let _ = out.push(q);
                }
                self.replies += 1;
            }
        }
        cx.push(0, &mut out);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("probes", self.probes);
        s.counter("replies", self.replies);
        s.counter("not_mine", self.not_mine);
        s.counter("malformed", self.malformed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multistage::balancer_mac;
    use bricks_runtime::testing::{make_element, Harness};

    fn probe(router: u8, dst_front: u8, balancer: u8, seq: u32) -> Vec<u8> {
        Probe {
            kind: ProbeKind::Probe,
            balancer,
            router,
            front: 0,
            seq,
        }
        .frame(router_mac(router, dst_front), balancer_mac(balancer, 1))
        .to_vec()
    }

    #[test]
    fn one_reply_per_front_port_with_the_right_macs() {
        let mut h = Harness::push(&CLASS, "ROUTER 3, FRONTS 4", 1, 1);
        h.push_bytes(0, &probe(3, 0, 1, 77));
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 4);
        for (k, f) in out.iter().enumerate() {
            assert_eq!(f.len(), 60);
            assert_eq!(
                &f[..6],
                &[0x02, 0x4d, 0x42, 1, 1, 0],
                "to the balancer's back MAC"
            );
            assert_eq!(
                &f[6..12],
                &[0x02, 0x4d, 0x53, 3, k as u8, 0],
                "from the router's MAC for port {k}"
            );
            assert_eq!(&f[12..14], &[0x88, 0xb7]);
            let r = Probe::parse(&f[14..]).unwrap();
            assert_eq!(
                r,
                Probe {
                    kind: ProbeKind::Reply,
                    balancer: 1,
                    router: 3,
                    front: k as u8,
                    seq: 77
                }
            );
            assert!(f[26..].iter().all(|&b| b == 0), "zero padding");
        }
        let s = h.stats();
        assert_eq!(s.get("probes"), Some(1));
        assert_eq!(s.get("replies"), Some(4));
    }

    #[test]
    fn a_probe_to_any_of_its_macs_is_answered() {
        let mut h = Harness::push(&CLASS, "3, 2", 1, 1);
        h.push_bytes(0, &probe(3, 1, 0, 1));
        assert_eq!(h.take(0).len(), 2);
    }

    #[test]
    fn others_probes_and_junk_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "ROUTER 3, FRONTS 2", 1, 1);
        // Flooded by the switch: a probe for router 4.
        h.push_bytes(0, &probe(4, 0, 0, 1));
        // Addressed to router 3's MAC but naming router 4.
        let mut f = probe(4, 0, 0, 1);
        f[3] = 3;
        h.push_bytes(0, &f);
        // A reply (another router's) is not a probe.
        let mut f = probe(3, 0, 0, 1);
        f[18] = ProbeKind::Reply as u8;
        h.push_bytes(0, &f);
        // Bad magic, wrong type, truncated, runt, group source.
        let mut f = probe(3, 0, 0, 1);
        f[15] = 0;
        h.push_bytes(0, &f);
        let mut f = probe(3, 0, 0, 1);
        f[13] = 0;
        h.push_bytes(0, &f);
        h.push_bytes(0, &probe(3, 0, 0, 1)[..25]);
        h.push_bytes(0, &[0x02; 13]);
        let mut f = probe(3, 0, 0, 1);
        f[6] = 0x03;
        h.push_bytes(0, &f);
        assert!(h.take(0).is_empty());
        let s = h.stats();
        assert_eq!(s.get("not_mine"), Some(2));
        assert_eq!(s.get("malformed"), Some(6));
        assert_eq!(s.get("probes"), Some(0));
    }

    #[test]
    fn many_probes_in_one_batch() {
        let mut h = Harness::push(&CLASS, "ROUTER 0, FRONTS 255", 1, 1);
        let frames: Vec<Packet> = (0..3)
            .map(|s| Packet::from_slice(&probe(0, 0, 2, s)).unwrap())
            .collect();
        h.push_packets(0, frames);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 765);
        assert_eq!(Probe::parse(&out[764][14..]).unwrap().seq, 2);
        assert_eq!(&out[764][6..12], &router_mac(0, 254));
    }

    #[test]
    fn arguments_are_checked() {
        let p = PortInfo::default();
        assert!(make_element(&CLASS, "ROUTER 1", &p)
            .unwrap_err()
            .contains("FRONTS"));
        assert!(make_element(&CLASS, "ROUTER 255, FRONTS 1", &p).is_err());
        assert!(make_element(&CLASS, "ROUTER 256, FRONTS 1", &p).is_err());
        assert!(make_element(&CLASS, "ROUTER 1, FRONTS 0", &p).is_err());
        assert!(make_element(&CLASS, "ROUTER 1, FRONTS 256", &p).is_err());
        assert!(make_element(&CLASS, "ROUTER 1, FRONTS 1, MAC 1", &p).is_err());
        assert!(make_element(&CLASS, "ROUTER 254, FRONTS 255", &p).is_ok());
    }
}
