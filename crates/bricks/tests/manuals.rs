//! Every element's manual is complete and its example configuration builds.

use bricks_config::{Source, SourceMap};
use std::path::Path;

#[test]
fn every_manual_is_complete_and_its_example_builds() {
    // Examples name files as a user at the project's root would (conf/...).
    std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::set_current_dir(&root).unwrap();
    for (name, input) in [
        ("eth0", "tests/golden/ip-router/eth0-in.pcap"),
        ("eth1", "tests/golden/ip-router/eth1-in.pcap"),
    ] {
        bricks_io::binding::bind(
            name,
            bricks_io::binding::Binding::Pcap {
                input: Some(input.into()),
                output: None,
            },
        );
    }
    let reg = bricks_elements::registry();
    let mut failures = Vec::new();
    for class in reg.classes() {
        let m = class.manual;
        assert!(!m.summary.is_empty(), "{}: no summary", class.name);
        assert!(
            m.synopsis.starts_with(class.name),
            "{}: synopsis",
            class.name
        );
        assert!(
            m.description.len() > 40,
            "{}: description too short",
            class.name
        );
        assert!(!m.ports.is_empty(), "{}: ports", class.name);
        class.port_count();
        class.processing_spec();
        assert!(
            m.example.contains(class.name),
            "{}: example does not use it",
            class.name
        );
        let mut map = SourceMap::default();
        let parsed = bricks_config::parse(
            &mut map,
            Source {
                name: format!("<{} example>", class.name),
                text: m.example.to_string(),
            },
        );
        let result = match parsed {
            Ok(r) => bricks_runtime::build(&r, &reg).map(|_| ()),
            Err(d) => Err(d),
        };
        // Error exists to make a configuration fail, as Click's does.
        if class.name == "Error" {
            assert!(result.is_err(), "Error's example built");
            continue;
        }
        if let Err(diags) = result {
            let text: Vec<String> = diags.iter().map(|d| map.render(d)).collect();
            failures.push(format!("{}:\n{}", class.name, text.join("\n")));
        }
    }
    assert!(
        failures.is_empty(),
        "examples that do not build:\n{}",
        failures.join("\n\n")
    );
}
