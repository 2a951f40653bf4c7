//! Arbitrary frames through the elements that put virtual-link tags on
//! and take them off (VLANEncap, VLANDecap, EtherVLANEncap, MPLSPush,
//! MPLSPop, MPLSSwap, IPEncap, StripIPHeader). Nothing may panic, and the
//! pairs undo each other: a frame VLANEncap tags comes back from VLANDecap
//! byte for byte, and so does one MPLSPush labels from MPLSPop when what
//! it labelled was IPv4, IPv6 or an MPLS stack. The first input byte
//! becomes the VLAN TCI annotation and the label's low bits.
#![no_main]

use bricks_element::{ElementClass, Packet, PortInfo, Processing};
use bricks_elements::{ip, vrouter};
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

fn dut(class: &ElementClass, args: &str, noutputs: usize) -> Harness {
    Harness::new(
        class,
        args,
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; noutputs],
        },
    )
}

struct Duts {
    vlan_encap: Harness,
    vlan_anno: Harness,
    vlan_decap: Harness,
    ether_vlan: Harness,
    push: Harness,
    pop: Harness,
    swap: Harness,
    ipencap: Harness,
    strip: Harness,
}

thread_local! {
    static DUTS: RefCell<Duts> = RefCell::new(Duts {
        vlan_encap: dut(&vrouter::vlan_encap::CLASS, "VLAN_ID 100, VLAN_PCP 5", 1),
        vlan_anno: dut(&vrouter::vlan_encap::CLASS, "ANNO, NATIVE_VLAN -1", 1),
        vlan_decap: dut(&vrouter::vlan_decap::CLASS, "", 1),
        ether_vlan: dut(
            &vrouter::ether_vlan_encap::CLASS,
            "0x0800, 2:0:0:0:0:1, 2:0:0:0:0:2, ANNO",
            1,
        ),
        push: dut(&vrouter::mpls_push::CLASS, "1000, 3", 1),
        pop: dut(&vrouter::mpls_pop::CLASS, "", 1),
        swap: dut(&vrouter::mpls_swap::CLASS, "77", 2),
        ipencap: dut(&ip::ipencap::CLASS, "ipip, 10.0.0.1, DST_ANNO, DF true", 1),
        strip: dut(&ip::stripipheader::CLASS, "", 1),
    });
}

/// Runs `p` through `h` and returns what came out of output 0.
fn run(h: &mut Harness, p: Packet) -> Option<Packet> {
    h.push_packets(0, [p]);
    let mut out = h.take(0);
    assert!(out.len() <= 1);
    out.pop()
}

/// The EtherType of what follows the Ethernet header and up to two tags,
/// and where it is.
fn payload_type(f: &[u8]) -> Option<(u16, usize)> {
    let mut at = 12;
    for _ in 0..3 {
        let t = u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?]);
        if (t != 0x8100 && t != 0x88a8) || at == 20 {
            return Some((t, at));
        }
        at += 4;
    }
    None
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, frame)) = data.split_first() else {
        return;
    };
    let Ok(mut original) = Packet::from_slice(frame) else {
        return;
    };
    original.anno_mut().vlan_tci = u16::from(pick) << 4 | u16::from(pick);
    DUTS.with_borrow_mut(|d| {
        // VLANEncap then VLANDecap: the frame comes back.
        if let Some(tagged) = run(&mut d.vlan_encap, original.duplicate()) {
            assert_eq!(tagged.len(), frame.len() + 4);
            let back = run(&mut d.vlan_decap, tagged).expect("a tag VLANEncap made");
            assert_eq!(back.data(), frame);
            assert_eq!(back.anno().vlan_tci, 0xa064);
        } else {
            assert!(frame.len() < 14);
        }
        if let Some(tagged) = run(&mut d.vlan_anno, original.duplicate()) {
            let back = run(&mut d.vlan_decap, tagged).expect("a tag VLANEncap made");
            assert_eq!(back.data(), frame);
        }
        // Arbitrary frames through the decapsulators.
        let _ = run(&mut d.vlan_decap, original.duplicate());
        let _ = run(&mut d.ether_vlan, original.duplicate());
        let _ = run(&mut d.pop, original.duplicate());
        d.swap.push_packets(0, [original.duplicate()]);
        d.swap.take(0);
        d.swap.take(1);
        let _ = run(&mut d.strip, original.duplicate());
        let mut marked = original.duplicate();
        marked.set_network_header(usize::from(pick) % (frame.len() + 1));
        let _ = run(&mut d.strip, marked);
        // IPEncap then StripIPHeader.
        let enc = run(&mut d.ipencap, original.duplicate()).expect("IPEncap takes anything");
        let back = run(&mut d.strip, enc).expect("IPEncap's header");
        assert_eq!(back.data(), frame);
        // MPLSPush then MPLSPop, when the payload says what it is.
        let Some((t, at)) = payload_type(frame) else {
            return;
        };
        let nibble = frame.get(at + 2).map(|b| b >> 4);
        let stack_left = frame.len().saturating_sub(at + 2);
        let poppable = match t {
            0x0800 => nibble == Some(4),
            0x86dd => nibble == Some(6),
            0x8847 | 0x8848 => stack_left >= 4,
            _ => false,
        };
        if let Some(labelled) = run(&mut d.push, original.duplicate()) {
            let swapped = {
                d.swap.push_packets(0, [labelled.duplicate()]);
                d.swap.take(1);
                d.swap.take(0).pop()
            };
            if let Some(s) = swapped {
                assert_eq!(s.len(), labelled.len());
            }
            let back = run(&mut d.pop, labelled);
            if poppable {
                assert_eq!(back.expect("a label MPLSPush made").data(), frame);
            }
        }
    });
});
