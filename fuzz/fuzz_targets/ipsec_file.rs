//! The SA and policy file parser on arbitrary text: it must return a
//! database or an error naming a line inside the text, never panic.
#![no_main]

use bricks_ipsec::Database;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Database::from_text(text, 0) {
        Ok(db) => {
            // Reloading the same text keeps every SA.
            let s = db.reload(text, 1).expect("the same text parses again");
            assert_eq!(s.added, 0);
            assert_eq!(s.removed, 0);
        }
        Err(e) => assert!(e.line >= 1 && e.line <= text.lines().count().max(1), "{e}"),
    }
});
