//! Software steering on arbitrary frames and arbitrary control commands:
//! every frame goes to a worker that exists, the same frame always to the
//! same worker, and a command is applied whole or refused with a message,
//! never a panic.
#![no_main]

use bricks_io::steer::Steering;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = Steering::new(3);
    let (cmd, frame) = data.split_at(data.iter().position(|&b| b == 0).unwrap_or(0));
    if let Ok(text) = std::str::from_utf8(cmd) {
        let _ = s.apply(text);
    }
    let w = s.worker_for(frame);
    assert!(w < 3);
    assert_eq!(w, s.worker_for(frame));
    let _ = s.apply("show");
});
