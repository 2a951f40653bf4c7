//! Text route files from arbitrary bytes: both error policies return a
//! canonical table or a located error, never panic; a file that Refuse
//! accepts loads the same under Skip with no warning; and whatever loads
//! writes back out as text that loads to the same table.
#![no_main]

use bricks_lpm::source::{read_text, write_text, Location, OnError, RouteTable};
use libfuzzer_sys::fuzz_target;

fn canonical(t: &RouteTable) -> bool {
    t.v4.windows(2).all(|w| w[0].0 < w[1].0)
        && t.v6.windows(2).all(|w| w[0].0 < w[1].0)
        && t.routes().all(|(_, hops)| !hops.is_empty())
}

fuzz_target!(|data: &[u8]| {
    let lines = data.split(|&b| b == b'\n').count();
    let (skipped, warnings) = read_text(data, "fuzz", OnError::Skip).expect("Skip never fails");
    assert!(canonical(&skipped));
    for w in &warnings {
        match &w.location {
            Location::Line { line, .. } => assert!(*line >= 1 && *line <= lines),
            l => panic!("text error located at {l:?}"),
        }
    }
    match read_text(data, "fuzz", OnError::Refuse) {
        Ok((refused, none)) => {
            assert!(none.is_empty() && warnings.is_empty());
            assert_eq!(refused, skipped);
        }
        Err(e) => assert_eq!(Some(&e), warnings.first()),
    }
    let mut out = Vec::new();
    write_text(&skipped, &mut out).unwrap();
    let (again, w) = read_text(&out[..], "out", OnError::Refuse).expect("written text reads back");
    assert!(w.is_empty());
    assert_eq!(again, skipped);
});
