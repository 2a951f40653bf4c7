//! Arbitrary bytes as a packet through every IPv4 element (and
//! CheckARPHeader, the trace tools that rewrite IPv4, and the stateless
//! TCP and UDP elements: TCPFragmenter, StatelessTCPResponder,
//! DynamicUDPIPEncap), alone and
//! chained as in Click's IP router, with and without an Ethernet header in
//! front, with the annotations those elements read set in several ways.
//! Nothing may panic, whatever the bytes and annotations say; every packet
//! that comes out must still be inside its buffer.
#![no_main]

use bricks_element::{Packet, PortInfo, Processing};
use bricks_elements::{analysis, ether, ip, tcpudp};
use bricks_packet::PacketType;
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::net::Ipv4Addr;

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
    responder: Dut,
    check: Dut,
    get: Dut,
    rt: Dut,
    gio: Dut,
    fix: Dut,
    dt: Dut,
    fr: Dut,
    errors: Vec<Dut>,
}

fn duts() -> Duts {
    Duts {
        alone: vec![
            Dut::new(
                &ip::checkipheader::CLASS,
                "INTERFACES 18.26.4.1/24 1.0.0.1/8",
                2,
            ),
            Dut::new(&ip::checkipheader::CLASS, "OFFSET 14, CHECKSUM false", 1),
            Dut::new(&ip::markipheader::CLASS, "14", 1),
            Dut::new(&ip::getipaddress::CLASS, "16", 1),
            Dut::new(&ip::getipaddress::CLASS, "IP src", 1),
            Dut::new(&ip::dropbroadcasts::CLASS, "", 1),
            Dut::new(&ip::ipgwoptions::CLASS, "18.26.4.24, 10.0.0.1", 2),
            Dut::new(&ip::fixipsrc::CLASS, "18.26.4.24", 1),
            Dut::new(&ip::decipttl::CLASS, "", 2),
            Dut::new(&ip::decipttl::CLASS, "MULTICAST false", 1),
            Dut::new(&ip::ipfragmenter::CLASS, "68", 2),
            Dut::new(&ip::ipfragmenter::CLASS, "576, false", 1),
            Dut::new(&ip::icmperror::CLASS, "18.26.4.24, timeexceeded", 1),
            Dut::new(&ip::icmperror::CLASS, "18.26.4.24, redirect, host", 1),
            Dut::new(&ip::icmperror::CLASS, "18.26.4.24, 3, 4, MTU 56", 1),
            Dut::new(&ip::setipecn::CLASS, "ce", 1),
            Dut::new(&ether::checkarpheader::CLASS, "14", 2),
            Dut::new(&ether::checkarpheader::CLASS, "OFFSET 0, DETAILS true", 1),
            Dut::new(&analysis::truncate_ip_payload::CLASS, "4", 1),
            Dut::new(&analysis::erase_ip_payload::CLASS, "", 1),
            Dut::new(&analysis::anonymize_ip_addr::CLASS, "CAPACITY 64", 2),
            Dut::new(
                &analysis::anonymize_ip_addr::CLASS,
                "PRESERVE_8 10, CAPACITY 100000",
                1,
            ),
            Dut::new(&tcpudp::tcpfragmenter::CLASS, "MTU 68", 1),
            Dut::new(&tcpudp::tcpfragmenter::CLASS, "MTU 576, MTU_ANNO 20", 1),
            Dut::new(&tcpudp::tcpfragmenter::CLASS, "MTU_ANNO 20", 1),
            Dut::new(
                &tcpudp::dynudpipencap::CLASS,
                "18.26.4.24, 1234, DST_ANNO, 53, true, 3",
                1,
            ),
        ],
        responder: Dut::new(
            &tcpudp::statelesstcpresp::CLASS,
            "\"HTTP/1.0 200 OK\\r\\n\\r\\nhello\"",
            2,
        ),
        check: Dut::new(
            &ip::checkipheader::CLASS,
            "INTERFACES 18.26.4.1/24 1.0.0.1/8",
            1,
        ),
        get: Dut::new(&ip::getipaddress::CLASS, "16", 1),
        rt: Dut::new(
            &ip::staticiplookup::CLASS,
            "18.26.4.1/32 0, 18.26.4.0/24 1, 1.0.0.0/8 1, 0.0.0.0/0 18.26.4.254 1",
            2,
        ),
        gio: Dut::new(&ip::ipgwoptions::CLASS, "18.26.4.1", 2),
        fix: Dut::new(&ip::fixipsrc::CLASS, "18.26.4.1", 1),
        dt: Dut::new(&ip::decipttl::CLASS, "", 2),
        fr: Dut::new(&ip::ipfragmenter::CLASS, "576", 2),
        errors: vec![
            Dut::new(&ip::icmperror::CLASS, "18.26.4.1, parameterproblem", 1),
            Dut::new(&ip::icmperror::CLASS, "18.26.4.1, timeexceeded", 1),
            Dut::new(&ip::icmperror::CLASS, "18.26.4.1, unreachable, needfrag", 1),
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
            a.packet_type = PacketType::Broadcast;
            a.fix_ip_src = true;
            a.mtu = u16::from_be_bytes([byte(2), byte(3)]);
            a.param_off = Some(byte(1));
            a.dst_ip = Ipv4Addr::new(byte(16), byte(17), byte(18), byte(19));
            p.set_network_header(0);
        }
        _ => {
            a.fix_ip_src = true;
            a.param_off = Some(byte(5));
            header::anywhere(p, byte(0), 4);
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

fuzz_target!(|data: &[u8]| {
    if data.len() > bricks_packet::MAX_FRAME {
        return;
    }
    DUTS.with(|d| {
        let mut d = d.borrow_mut();
        for strip in [0, 14] {
            for variant in 0..3 {
                let make = || {
                    let mut p = Packet::from_slice(data).unwrap();
                    p.pull_front(strip);
                    annotate(&mut p, variant, data);
                    p
                };
                for dut in d.alone.iter_mut() {
                    check(&dut.run(make()));
                }
                // StatelessTCPResponder: an answer is a whole TCP/IP
                // datagram whose sums are right, whatever it answered.
                let out = d.responder.run(make());
                check(&out);
                for q in &out[0] {
                    let q = q.data();
                    assert!(q.len() >= 40 && q[0] == 0x45 && q[9] == 6);
                    assert_eq!(usize::from(u16::from_be_bytes([q[2], q[3]])), q.len());
                    assert_eq!(bricks_wire::checksum::data(&q[..20]), 0xffff);
                    let pseudo = bricks_wire::checksum::pseudo_header_v4(
                        Ipv4Addr::new(q[12], q[13], q[14], q[15]),
                        Ipv4Addr::new(q[16], q[17], q[18], q[19]),
                        bricks_wire::IpProtocol::from(6),
                        (q.len() - 20) as u16,
                    );
                    let seg = bricks_wire::checksum::data(&q[20..]);
                    assert_eq!(bricks_wire::checksum::combine(&[pseudo, seg]), 0xffff);
                }

                // The forwarding path of Click's IP router, errors included.
                let pkts: Vec<_> = d
                    .check
                    .run(make())
                    .swap_remove(0)
                    .into_iter()
                    .flat_map(|p| d.get.run(p).swap_remove(0))
                    .collect();
                let mut forwarded = Vec::new();
                for p in pkts {
                    let mut out = d.rt.run(p);
                    check(&out);
                    forwarded.append(&mut out[1]);
                }
                let mut rejected: Vec<(usize, Packet)> = Vec::new();
                let mut stage = |dut: &mut Dut, pkts: Vec<Packet>, err: Option<usize>| {
                    let mut next = Vec::new();
                    for p in pkts {
                        let mut out = dut.run(p);
                        check(&out);
                        next.append(&mut out[0]);
                        if let (Some(e), Some(r)) = (err, out.get_mut(1)) {
                            rejected.extend(r.drain(..).map(|p| (e, p)));
                        }
                    }
                    next
                };
                let pkts = stage(&mut d.gio, forwarded, Some(0));
                let pkts = stage(&mut d.fix, pkts, None);
                let pkts = stage(&mut d.dt, pkts, Some(1));
                let out = stage(&mut d.fr, pkts, Some(2));
                check(&[out]);
                for (e, p) in rejected {
                    let errs = d.errors[e].run(p);
                    check(&errs);
                    for q in errs.into_iter().flatten() {
                        // An error is a well-formed IPv4 packet.
                        assert!(q.len() >= 28 && q.len() <= 576);
                        assert_eq!(q.data()[0], 0x45);
                        assert_eq!(bricks_wire::checksum::data(&q.data()[..20]), 0xffff);
                        assert_eq!(bricks_wire::checksum::data(&q.data()[20..]), 0xffff);
                    }
                }
            }
        }
    });
});
