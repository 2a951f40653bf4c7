//! Arbitrary bytes as a source-route shim (`bricks_qos::sroute`) and as a
//! frame through SourceRouteLookup, SourceRouteDecap and
//! SourceRouteEncap. The view never panics once `check_len` passed; a
//! checked shim parses into a `Repr` that emits the same bytes (the
//! reserved byte aside); consuming moves the index to the end and no
//! further. Every frame leaves each element once, by output 0 or 1; a
//! frame the encapsulator takes comes back from the decapsulator byte
//! for byte.
#![no_main]

use bricks_element::{PortInfo, Processing};
use bricks_elements::qos::{sroute_decap, sroute_encap, sroute_lookup};
use bricks_qos::sroute::{SourceRoute, SourceRouteRepr};
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

fn dut(class: &bricks_element::ElementClass, args: &str) -> Harness {
    Harness::new(
        class,
        args,
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        },
    )
}

struct Duts {
    lookup: Harness,
    decap: Harness,
    encap: Harness,
}

thread_local! {
    static DUTS: RefCell<Duts> = RefCell::new(Duts {
        lookup: dut(&sroute_lookup::CLASS, ""),
        decap: dut(&sroute_decap::CLASS, ""),
        encap: dut(&sroute_encap::CLASS, "10.0.0.1:1 10.0.0.2:65535 255.255.255.255:0"),
    });
}

/// Packets out of each output, checking that exactly one came out.
fn one_out(h: &mut Harness) -> (usize, Vec<u8>) {
    let a = h.take_bytes(0);
    let b = h.take_bytes(1);
    assert_eq!(a.len() + b.len(), 1);
    match a.into_iter().next() {
        Some(f) => (0, f),
        None => (1, b.into_iter().next().unwrap()),
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(mut s) = SourceRoute::new_checked(data.to_vec()) {
        let repr = SourceRouteRepr::parse(&s).expect("checked");
        let mut out = vec![0; repr.buffer_len()];
        repr.emit(&mut out).expect("a parsed route emits");
        let mut want = data[..s.header_len()].to_vec();
        want[3] = 0;
        assert_eq!(out, want);
        let n = s.count();
        while s.consume().is_some() {}
        assert_eq!(s.index(), n);
        assert!(s.check_len().is_ok());
    }
    if data.len() > 2048 {
        return;
    }
    DUTS.with(|d| {
        let d = &mut *d.borrow_mut();
        d.lookup.push_bytes(0, data);
        let (port, f) = one_out(&mut d.lookup);
        if port == 1 {
            assert_eq!(f, data);
        }
        d.decap.push_bytes(0, data);
        one_out(&mut d.decap);
        d.encap.push_bytes(0, data);
        let (port, f) = one_out(&mut d.encap);
        if port == 0 {
            d.decap.push_bytes(0, &f);
            assert_eq!(one_out(&mut d.decap), (0, data.to_vec()));
        } else {
            assert!(data.len() < 14);
        }
    });
});
