//! Big configurations parse and expand in time linear in their size.
//!
//! The sizes are chosen so that a quadratic step (a class or name looked up
//! by scanning everything defined before it) would take minutes even in a
//! release build, while the linear code takes about a second in a debug
//! one.

use bricks_config::{parse, Source, SourceMap};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Far above what the linear code needs, far below what a quadratic one
/// does.
const GENEROUS: Duration = Duration::from_secs(20);

#[test]
fn forty_thousand_element_classes_parse() {
    let n = 40_000;
    let mut text = String::new();
    for i in 0..n {
        let _ = writeln!(text, "elementclass C{i} {{ input -> Paint(1) -> output }}");
    }
    // Uses of the last class and of the first, and bare words looked up
    // against every class name.
    let _ = writeln!(text, "src :: Source -> C{} -> C0 -> sink :: Sink;", n - 1);
    let t0 = Instant::now();
    let r = parse(&mut SourceMap::new(), Source::from_string(&text)).unwrap();
    let took = t0.elapsed();
    assert_eq!(r.elements.len(), 4, "src, two Paints, sink");
    assert_eq!(r.elements[1].name, format!("C{}@2/Paint@1", n - 1));
    assert_eq!(r.connections.len(), 3);
    assert!(took < GENEROUS, "{n} element classes took {took:?}");
}

#[test]
fn a_hundred_thousand_deep_class_chain_gives_the_depth_error_quickly() {
    let n = 100_000;
    let mut text = String::from("elementclass C0 { input -> Paint(1) -> output }\n");
    for i in 1..n {
        let _ = writeln!(
            text,
            "elementclass C{i} {{ input -> C{} -> output }}",
            i - 1
        );
    }
    let _ = writeln!(text, "Source -> C{} -> Sink;", n - 1);
    let t0 = Instant::now();
    let errors = parse(&mut SourceMap::new(), Source::from_string(&text)).unwrap_err();
    let took = t0.elapsed();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].message.contains("nested more than 64 deep"),
        "{}",
        errors[0].message
    );
    assert!(took < GENEROUS, "a {n}-deep class chain took {took:?}");
}

#[test]
fn anonymous_names_clashing_with_many_declared_ones_are_numbered_quickly() {
    // Declared names `Paint@2` ... `Paint@N+1` push every anonymous Paint
    // past all of them: probing from each one's position would try N
    // names per element.
    let n = 30_000;
    let mut text = String::new();
    for i in 2..n + 2 {
        let _ = writeln!(text, "Paint@{i} :: Paint(1);");
    }
    text.push_str("Source");
    for _ in 0..n {
        text.push_str(" -> Paint(2)");
    }
    text.push_str(" -> Sink;\n");
    let t0 = Instant::now();
    let r = parse(&mut SourceMap::new(), Source::from_string(&text)).unwrap();
    let took = t0.elapsed();
    // Positions: n declared Paints, then Source at n+1, the anonymous
    // Paints at n+2.., all of whose own numbers are taken up to n+1.
    let first = r.find(&format!("Paint@{}", n + 2)).unwrap();
    assert_eq!(&*r.elements[first].config, "2", "the first anonymous Paint");
    assert_eq!(r.elements.len(), 2 * n + 2);
    let names: std::collections::HashSet<&str> =
        r.elements.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.len(), r.elements.len(), "names are unique");
    assert!(took < GENEROUS, "{n} anonymous elements took {took:?}");
}
