//! Arbitrary frames through VRDemux in every mode (VLAN ID, MAC address
//! with broadcast replication, MPLS label, IP-in-IP address), with and
//! without UNKNOWN and NOTAG outputs. Nothing may panic; every frame is
//! accounted for exactly once (an output or a drop counter); every packet
//! leaves by the output its `vrouter` annotation names; replicas reach
//! every router. The first input byte picks variations: bit 0 makes the
//! second copy of the frame a broadcast, bit 1 the third an MPLS frame.
#![no_main]

use bricks_element::{Packet, PortInfo, Processing, Stats};
use bricks_elements::vrouter::vr_demux::CLASS;
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

/// One demultiplexer and its number of outputs.
struct Dut {
    h: Harness,
    noutputs: usize,
    /// Frames it copies to every router (BROADCAST replicate): to this
    /// many outputs.
    replicas: Option<u64>,
}

impl Dut {
    fn new(args: &str, noutputs: usize, replicas: Option<u64>) -> Dut {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; noutputs],
        };
        Dut {
            h: Harness::new(&CLASS, args, ports),
            noutputs,
            replicas,
        }
    }
}

fn duts() -> Vec<Dut> {
    vec![
        // The seeds' tags: VLAN 503, label 29, their destination MACs.
        Dut::new("BY vlan, 503 0, 10 1, 4094 1, UNKNOWN 2, NOTAG 3", 4, None),
        Dut::new("BY vlan, 503 0", 1, None),
        Dut::new(
            "BY mac, 00:10:db:ff:10:00 0, 00:30:96:e6:fc:39 1, 02:00:00:00:00:01 1, \
             UNKNOWN 2, BROADCAST replicate",
            3,
            Some(2),
        ),
        Dut::new("BY mac, 00:10:db:ff:10:00 0, BROADCAST 1", 2, None),
        Dut::new("BY mac, 00:30:96:e6:fc:39 0", 1, None),
        Dut::new("BY mpls, 29 0, 30 1, 1048575 1, NOTAG 2", 3, None),
        Dut::new("BY mpls, 29 0", 1, None),
        Dut::new("BY ipip, 10.0.0.2 0, 10.34.0.1 1, NOTAG 2", 3, None),
        Dut::new("BY ipip, 10.0.0.2 0, UNKNOWN 1", 2, None),
    ]
}

thread_local! {
    static DUTS: RefCell<Vec<Dut>> = RefCell::new(duts());
}

fn counted(s: &Stats) -> u64 {
    ["unknown_tag", "no_tag", "malformed", "broadcast_drops"]
        .iter()
        .map(|c| s.get(c).unwrap_or(0))
        .sum()
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, frame)) = data.split_first() else {
        return;
    };
    let mut frames = vec![frame.to_vec(); 3];
    if pick & 1 != 0 && frames[1].len() >= 6 {
        frames[1][..6].fill(0xff);
    }
    if pick & 2 != 0 && frames[2].len() >= 14 {
        frames[2][12..14].copy_from_slice(&[0x88, 0x47]);
    }
    let Ok(packets) = frames
        .iter()
        .map(|f| Packet::from_slice(f))
        .collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    DUTS.with_borrow_mut(|duts| {
        for dut in duts.iter_mut() {
            let before = dut.h.stats();
            let before_out: u64 = out_total(&before, dut.noutputs);
            let before_drops = counted(&before);
            let before_repl = before.get("replicated").unwrap_or(0);
            dut.h.push_packets(0, packets.iter().map(|p| p.duplicate()));
            let mut got = 0u64;
            for o in 0..dut.noutputs {
                for p in dut.h.take(o) {
                    assert_eq!(usize::from(p.anno().vrouter), o);
                    got += 1;
                }
            }
            let after = dut.h.stats();
            assert_eq!(out_total(&after, dut.noutputs) - before_out, got);
            let drops = counted(&after) - before_drops;
            let replicated = after.get("replicated").unwrap_or(0) - before_repl;
            let copies = dut.replicas.map_or(0, |n| replicated * (n - 1));
            assert_eq!(got + drops, frames.len() as u64 + copies);
        }
    });
});

fn out_total(s: &Stats, noutputs: usize) -> u64 {
    (0..noutputs)
        .map(|o| s.get(&format!("out{o}")).unwrap_or(0))
        .sum()
}
