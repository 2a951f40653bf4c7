//! `VLBNode` on hostile frames from its internal links: labels, shims and
//! hellos of any content are dropped and counted or forwarded, never a
//! panic. The first byte picks the link and whether the frame is made a
//! data frame or a hello of this cluster first (so that fuzzing reaches
//! past the EtherType check).
#![no_main]

use bricks_element::{PortInfo, Processing};
use bricks_packet::{Packet, Timestamp};
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::sync::OnceLock;

const RB4: &str = include_str!("../../conf/cluster/rb4.toml");

fn file() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let p = std::env::temp_dir().join(format!("bricks-fuzz-vlb-{}.toml", std::process::id()));
        std::fs::write(&p, RB4).unwrap();
        p.display().to_string()
    })
}

thread_local! {
    /// One node for every input: counters and flowlets carry over, as in
    /// a running router.
    static NODE: RefCell<Harness> = RefCell::new({
        let mut h = Harness::new(
            &bricks_elements::cluster::vlb::CLASS,
            &format!("FILE {}, NODE n1", file()),
            PortInfo {
                inputs: vec![Processing::Push; 4],
                outputs: vec![Processing::Push; 5],
            },
        );
        h.advance_to(Timestamp(1_000_000_000));
        h
    });
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut frame = rest.to_vec();
    if frame.len() >= 14 {
        match pick >> 4 {
            0 => frame[12..14].copy_from_slice(&[0x88, 0xb5]),
            1 => frame[12..14].copy_from_slice(&[0x88, 0xb6]),
            _ => {}
        }
    }
    NODE.with_borrow_mut(|h| {
        let link = 1 + usize::from(pick & 3) % 3;
        if let Ok(p) = Packet::from_slice(&frame) {
            h.push_packets(link, [p]);
        }
        // And as a packet from outside.
        if let Ok(mut p) = Packet::from_slice(rest) {
            p.set_network_header(0);
            h.push_packets(0, [p]);
        }
        for port in 0..5 {
            h.take(port);
        }
        let t = h.now().0 + u64::from(pick) * 1_000_000;
        h.advance_to(Timestamp(t));
    });
});
