//! `DynamicUDPIPEncap`: UDPIPEncap whose ports move on by one every
//! INTERVAL packets, as Click's `elements/tcpudp/dynudpipencap.cc`, and
//! whose addresses and ports handlers change while the router runs. The
//! encapsulation itself is UDPIPEncap's (`ip::udpipencap`), one packet at a
//! time so that the ports can change between two packets of a batch.

use crate::ip::udpipencap::{self, UDPIPEncap};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats,
};

/// The `DynamicUDPIPEncap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "DynamicUDPIPEncap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "encapsulates packets in dynamic UDP/IP headers",
    synopsis: "DynamicUDPIPEncap(SRC, SPORT, DST, DPORT [, CHECKSUM, INTERVAL])",
    description: "Encapsulates each packet in a UDP/IP packet from SRC port SPORT to DST \
        port DPORT, as UDPIPEncap does (the same headers: TOS 0, TTL 250, an \
        identification counting up from 0, the IP checksum, the UDP checksum unless \
        CHECKSUM is false, the destination and network header annotations set; a packet \
        without 28 bytes of headroom is dropped and counted). With INTERVAL above 0, \
        SPORT and DPORT both go up by one (wrapping at 65535) after every INTERVAL \
        packets, which spreads a stream over many flows (receive-side scaling, \
        load-balancer tests).\n\n\
        Write handlers `src`, `sport`, `dst` and `dport` change the addresses and ports \
        from the next packet on, and `interval` the interval (the count towards it \
        starts again); these are bricks additions, as in UDPIPEncap, and so is DST_ANNO \
        for DST (each packet's destination annotation).",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "SRC",
            ty: "IPv4 address",
            default: None,
            doc: "source address",
        },
        Keyword {
            name: "SPORT",
            ty: "UDP port: number or name",
            default: None,
            doc: "the first source port",
        },
        Keyword {
            name: "DST",
            ty: "IPv4 address or DST_ANNO",
            default: None,
            doc: "destination address",
        },
        Keyword {
            name: "DPORT",
            ty: "UDP port: number or name",
            default: None,
            doc: "the first destination port",
        },
        Keyword {
            name: "CHECKSUM",
            ty: "boolean",
            default: Some("true"),
            doc: "compute the UDP checksum",
        },
        Keyword {
            name: "INTERVAL",
            ty: "unsigned",
            default: Some("0 (the ports never change)"),
            doc: "packets between port changes",
        },
    ],
    counters: &[(
        "no_headroom",
        "packets dropped for lack of 28 bytes of headroom",
    )],
    example: "InfiniteSource(LIMIT 20) -> DynamicUDPIPEncap(1.0.0.1, 1234, 2.0.0.2, 1234, 1, 10) \
        -> IPPrint -> Discard;",
    see_also: &["UDPIPEncap", "Strip", "IPEncap"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let inner = udpipencap::configure(args)?;
    let interval: u32 = args.read_p("INTERVAL")?.unwrap_or(0);
    Ok(Box::new(DynamicUDPIPEncap {
        inner,
        interval,
        count: 0,
    }))
}

/// UDPIPEncap with moving ports.
#[derive(Debug)]
pub struct DynamicUDPIPEncap {
    inner: UDPIPEncap,
    interval: u32,
    /// Packets since the ports last changed.
    count: u32,
}

impl DynamicUDPIPEncap {
    fn encap(&mut self, batch: &mut Batch) {
        batch.retain(|p| {
            if !self.inner.encap_one(p) {
                return false;
            }
            self.count += 1;
            if self.interval > 0 && self.count >= self.interval {
                self.inner.advance_ports();
                self.count = 0;
            }
            true
        });
    }
}

impl Element for DynamicUDPIPEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.encap(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.encap(b));
    }

    fn stats(&self, s: &mut Stats) {
        self.inner.stats(s);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "interval" => {
                self.interval = bricks_element::FromArg::from_arg(value.trim())
                    .map_err(|why: String| format!("bad interval: {why}"))?;
                self.count = 0;
                Ok(())
            }
            "src" | "sport" | "dst" | "dport" => self.inner.write_handler(handler, value),
            _ => Err(format!(
                "no write handler `{handler}` (src, sport, dst, dport, interval)"
            )),
        }
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        match handler {
            "src" => Some("0 SRC"),
            "sport" => Some("1 SPORT"),
            "dst" => Some("2 DST"),
            "dport" => Some("3 DPORT"),
            "interval" => Some("5 INTERVAL"),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::w("src"),
            Handler::w("sport"),
            Handler::w("dst"),
            Handler::w("dport"),
            Handler::w("interval"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{ip_ok, sum};
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    fn ports(d: &[u8]) -> (u16, u16) {
        (
            u16::from_be_bytes([d[20], d[21]]),
            u16::from_be_bytes([d[22], d[23]]),
        )
    }

    /// The UDP checksum over the pseudo-header, summed here.
    fn udp_ok(d: &[u8]) -> bool {
        let mut all = d[12..20].to_vec();
        all.extend([0, 17]);
        all.extend(((d.len() - 20) as u16).to_be_bytes());
        all.extend(&d[20..]);
        sum(&all) == 0xffff
    }

    #[test]
    fn ports_move_every_interval() {
        let mut h = Harness::push(&CLASS, "1.0.0.1, 1234, 2.0.0.2, 65534, 1, 3", 1, 1);
        for _ in 0..7 {
            h.push_bytes(0, b"hi");
        }
        let out = h.take_bytes(0);
        let got: Vec<(u16, u16)> = out.iter().map(|d| ports(d)).collect();
        assert_eq!(
            got,
            [
                (1234, 65534),
                (1234, 65534),
                (1234, 65534),
                (1235, 65535),
                (1235, 65535),
                (1235, 65535),
                (1236, 0)
            ]
        );
        for (i, d) in out.iter().enumerate() {
            assert!(ip_ok(d) && udp_ok(d));
            assert_eq!(&d[28..], b"hi");
            assert_eq!(u16::from_be_bytes([d[4], d[5]]), i as u16);
            assert_eq!(d[8], 250);
        }
    }

    #[test]
    fn a_batch_changes_ports_inside_it() {
        let mut h = Harness::push(&CLASS, "1.0.0.1, 10, 2.0.0.2, 20, INTERVAL 2", 1, 1);
        let pkts = (0..5).map(|_| bricks_element::Packet::from_slice(&[0; 4]).unwrap());
        h.push_packets(0, pkts);
        let got: Vec<(u16, u16)> = h.take_bytes(0).iter().map(|d| ports(d)).collect();
        assert_eq!(got, [(10, 20), (10, 20), (11, 21), (11, 21), (12, 22)]);
    }

    #[test]
    fn no_interval_keeps_ports_and_handlers_change_them() {
        let mut h = Harness::push(&CLASS, "1.0.0.1, 10, 2.0.0.2, 20, false", 1, 1);
        h.push_bytes(0, b"a");
        h.push_bytes(0, b"b");
        let out = h.take_bytes(0);
        assert_eq!(ports(&out[1]), (10, 20));
        // No checksum asked for.
        assert_eq!(out[0][26..28], [0, 0]);
        h.write_handler("dst", "9.9.9.9").unwrap();
        h.write_handler("sport", "53").unwrap();
        h.write_handler("interval", "1").unwrap();
        h.push_bytes(0, b"c");
        h.push_bytes(0, b"d");
        let out = h.take_bytes(0);
        assert_eq!(out[0][16..20], [9, 9, 9, 9]);
        assert_eq!(ports(&out[0]), (53, 20));
        assert_eq!(ports(&out[1]), (54, 21));
        assert!(h.write_handler("interval", "-1").is_err());
        assert!(h.write_handler("ttl", "1").is_err());
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(m("1.0.0.1, 1234, 2.0.0.2").is_err());
        assert!(m("1.0.0.1, 1234, 2.0.0.2, 1234, 1, 10").is_ok());
        assert!(m("1.0.0.1, 1234, 2.0.0.2, 1234, INTERVAL x").is_err());
    }
}
