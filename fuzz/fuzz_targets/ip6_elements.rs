//! Arbitrary bytes as a packet through every IPv6 element, alone and
//! chained as an IPv6 router chains them (CheckIP6Header, GetIP6Address,
//! DecIP6HLIM, ICMP6Error on the rejects, ICMP6PingResponder; redirects
//! and answers to multicast pings alone), and as
//! frames through IP6RouterAdvertiser, MLDReporter and the header writers (IP6Encap,
//! UDPIP6Encap, SetIP6DSCP, ...) and IP6Fragmenter, with and
//! without an Ethernet header in front, with the annotations those
//! elements read set in several ways. Nothing may panic or loop; every
//! ICMPv6 error that comes out is a well-formed IPv6 packet of at most
//! 1280 bytes with a correct checksum.
#![no_main]

use bricks_element::{Packet, PortInfo, Processing};
use bricks_elements::ip6;
use bricks_packet::PacketType;
use bricks_runtime::testing::Harness;
use bricks_wire::icmpv6::Icmpv6Packet;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::net::Ipv6Addr;

#[path = "support/header.rs"]
mod header;

/// One element under test and the number of outputs it is built with.
struct Dut {
    h: Harness,
    noutputs: usize,
}

impl Dut {
    fn new(class: &bricks_element::ElementClass, args: &str, noutputs: usize) -> Dut {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; noutputs],
        };
        Dut {
            h: Harness::new(class, args, ports),
            noutputs,
        }
    }

    /// Pushes `p` and returns everything that came out, by output.
    fn run(&mut self, p: Packet) -> Vec<Vec<Packet>> {
        self.h.push_packets(0, [p]);
        (0..self.noutputs).map(|o| self.h.take(o)).collect()
    }
}

struct Duts {
    alone: Vec<Dut>,
    check: Dut,
    get: Dut,
    dh: Dut,
    ping: Dut,
    errors: Vec<Dut>,
}

const ROUTER: &str = "2001:db8::ff";

fn duts() -> Duts {
    Duts {
        alone: vec![
            Dut::new(&ip6::checkip6header::CLASS, "INTERFACES 2001:db8::ff", 3),
            Dut::new(&ip6::checkip6header::CLASS, "2001:db8::7, 14", 1),
            Dut::new(&ip6::decip6hlim::CLASS, "", 2),
            Dut::new(&ip6::getip6address::CLASS, "24", 1),
            Dut::new(&ip6::getip6address::CLASS, "2040", 1),
            Dut::new(&ip6::ip6mirror::CLASS, "", 1),
            Dut::new(&ip6::icmp6pingresponder::CLASS, "", 2),
            Dut::new(
                &ip6::icmp6pingresponder::CLASS,
                "MULTICAST_SRC fe80::1",
                2,
            ),
            Dut::new(&ip6::icmp6error::CLASS, "fe80::1, redirect, RATE 0", 1),
            Dut::new(
                &ip6::ip6_router_advertiser::CLASS,
                "52:54:00:aa:00:01, PREFIX 2001:db8::/64, MTU 1500",
                2,
            ),
            Dut::new(
                &ip6::mld_reporter::CLASS,
                "52:54:00:aa:00:01, fe80::1, ADDRESS 2001:db8::1, ADDRESS fe80::1",
                2,
            ),
            Dut::new(&ip6::markip6header::CLASS, "14", 1),
            Dut::new(&ip6::setip6dscp::CLASS, "46", 1),
            Dut::new(&ip6::setip6address::CLASS, "2001:db8::1", 1),
            Dut::new(&ip6::ip6encap::CLASS, "ipip, 2001:db8::1, DST_ANNO", 1),
            Dut::new(
                &ip6::udpip6encap::CLASS,
                "2001:db8::1, 9, 2001:db8::2, 9",
                1,
            ),
            Dut::new(&ip6::ip6fragmenter::CLASS, "56", 2),
            Dut::new(&ip6::ip6fragmenter::CLASS, "1280", 1),
            // The last two: their outputs are checked as ICMPv6 errors.
            Dut::new(&ip6::icmp6error::CLASS, "2001:db8::ff, 3, 0, RATE 0", 1),
            Dut::new(&ip6::icmp6error::CLASS, "2001:db8::ff, 4, 2, RATE 0", 1),
        ],
        check: Dut::new(&ip6::checkip6header::CLASS, "INTERFACES 2001:db8::ff", 4),
        get: Dut::new(&ip6::getip6address::CLASS, "24", 1),
        dh: Dut::new(&ip6::decip6hlim::CLASS, "", 2),
        ping: Dut::new(&ip6::icmp6pingresponder::CLASS, "", 2),
        errors: vec![
            Dut::new(
                &ip6::icmp6error::CLASS,
                "2001:db8::ff, parameterproblem, header, RATE 0",
                1,
            ),
            Dut::new(
                &ip6::icmp6error::CLASS,
                "2001:db8::ff, parameterproblem, option, RATE 0",
                1,
            ),
            Dut::new(
                &ip6::icmp6error::CLASS,
                "2001:db8::ff, timeexceeded, hoplimit, RATE 0",
                1,
            ),
            Dut::new(&ip6::icmp6error::CLASS, "2001:db8::ff, toobig, RATE 0", 1),
        ],
    }
}

thread_local! {
    static DUTS: RefCell<Duts> = RefCell::new(duts());
}

/// The annotations an input is tried with.
fn annotate(p: &mut Packet, variant: usize, data: &[u8]) {
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let a = p.anno_mut();
    match variant {
        0 => {}
        1 => {
            a.packet_type = PacketType::Multicast;
            a.mtu = u16::from_be_bytes([byte(2), byte(3)]);
            a.param_off = Some(byte(1));
            p.set_network_header(0);
        }
        _ => {
            a.param_off = Some(byte(5));
            header::anywhere(p, byte(0), 8);
        }
    }
}

fn check(out: &[Vec<Packet>]) {
    for p in out.iter().flatten() {
        // An encapsulation may grow a packet into its headroom, never
        // past its buffer.
        assert!(p.len() <= bricks_packet::BUFFER_SIZE);
        let _ = p.network_header();
    }
}

/// An ICMPv6 error is a whole IPv6 packet from the router, at most 1280
/// bytes, with a correct checksum.
fn check_error(q: &Packet) {
    let d = q.data();
    assert!(d.len() >= 48 && d.len() <= 1280);
    assert_eq!(d[0] >> 4, 6);
    assert_eq!(usize::from(u16::from_be_bytes([d[4], d[5]])), d.len() - 40);
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&d[8..24]).unwrap());
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&d[24..40]).unwrap());
    assert_eq!(src, ROUTER.parse::<Ipv6Addr>().unwrap());
    assert!(Icmpv6Packet::new_checked(&d[40..])
        .unwrap()
        .verify_checksum(src, dst));
}

fuzz_target!(|data: &[u8]| {
    if data.len() > bricks_packet::MAX_FRAME {
        return;
    }
    DUTS.with(|d| {
        let mut d = d.borrow_mut();
        for strip in [0, 14] {
            if strip > data.len() {
                continue;
            }
            for variant in 0..3 {
                let make = || {
                    let mut p = Packet::from_slice(data).unwrap();
                    p.pull_front(strip);
                    annotate(&mut p, variant, data);
                    p
                };
                let n = d.alone.len();
                for (i, dut) in d.alone.iter_mut().enumerate() {
                    let out = dut.run(make());
                    check(&out);
                    if i + 2 >= n {
                        out.iter().flatten().for_each(check_error);
                    }
                }

                // The forwarding path, errors included.
                let mut out = d.check.run(make());
                check(&out);
                let mut rejected: Vec<(usize, Packet)> = Vec::new();
                rejected.extend(out[1].drain(..).map(|p| (0, p)));
                rejected.extend(out[2].drain(..).map(|p| (1, p)));
                rejected.extend(out[3].drain(..).map(|p| (0, p)));
                let valid = out.swap_remove(0);
                for p in valid {
                    let p = d.get.run(p).swap_remove(0);
                    for p in p {
                        // Half to the router itself, half forwarded.
                        if data.first().is_some_and(|b| b & 1 == 1) {
                            let out = d.ping.run(p);
                            check(&out);
                            continue;
                        }
                        let mut out = d.dh.run(p);
                        check(&out);
                        rejected.extend(out[1].drain(..).map(|p| (2, p)));
                        for p in out.swap_remove(0) {
                            if p.len() > 1280 {
                                rejected.push((3, p));
                            }
                        }
                    }
                }
                for (e, p) in rejected {
                    let errs = d.errors[e].run(p);
                    check(&errs);
                    errs.iter().flatten().for_each(check_error);
                }
            }
        }
    });
});
