//! Arbitrary text into the Click parser: it must never panic, and must
//! finish quickly however the text nests compound elements. The same text
//! is read as a Click archive: parsed or refused, never read past its end,
//! and an archive written from what was read reads back the same.
#![no_main]

use bricks_config::{
    parse_data, parse_with, split_keyword, unquote, Limits, Options, Source, SourceMap,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Smaller bounds than the defaults keep each run short; the code
    // paths that enforce them are the same.
    let options = Options {
        defines: vec![("FUZZ".into(), "1".into())],
        limits: Limits {
            max_elements: 20_000,
            max_depth: 64,
            max_connections: 100_000,
            max_config_bytes: 1 << 20,
        },
    };
    if let Ok(members) = bricks_config::archive::parse(text) {
        if let Ok(again) = bricks_config::archive::unparse(&members) {
            assert_eq!(bricks_config::archive::parse(&again).as_ref(), Ok(&members));
        }
    }
    let _ = bricks_config::archive::split_config(text);
    let mut map = SourceMap::new();
    match parse_with(&mut map, Source::new("fuzz.click", text), &options) {
        Ok(router) => {
            for e in &router.elements {
                map.line_col(e.class_span);
                for arg in e.args.iter() {
                    let (_, value) = split_keyword(&arg.text);
                    let _ = unquote(value);
                    let _ = parse_data(&arg.text);
                }
            }
            for c in &router.connections {
                assert!(c.from < router.elements.len() && c.to < router.elements.len());
            }
        }
        Err(errors) => {
            assert!(!errors.is_empty());
            let _ = map.render_all(&errors);
        }
    }
});
