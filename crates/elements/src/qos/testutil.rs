//! Helpers for the tests of the QoS elements: a flow table made from
//! `FlowTable` arguments, and a harness whose `TABLE` names it as `ft`.

use super::flow_table::CLASS as FLOW_TABLE;
use bricks_element::{Args, ElementClass, FixedRefs, PortInfo, Processing, SharedSlot};
use bricks_qos::flow::FlowTable;
use bricks_runtime::testing::Harness;
use std::sync::Arc;

/// The table `FlowTable(args)` makes.
pub fn table(args: &str) -> Arc<FlowTable> {
    let parsed = bricks_runtime::testing::parse_args(args).unwrap();
    let slot = SharedSlot::new();
    let mut a = Args::new(&parsed, None).with_shared(&slot);
    (FLOW_TABLE.make)(&mut a, &PortInfo::default()).unwrap_or_else(|e| panic!("{}", e.message));
    a.complete().unwrap();
    slot.get()
        .unwrap()
        .clone()
        .downcast::<FlowTable>()
        .ok()
        .unwrap()
}

/// `class(args)` with one push input and `noutputs` push outputs, where
/// `ft` names `table`.
pub fn try_harness(
    class: &ElementClass,
    args: &str,
    table: &Arc<FlowTable>,
    noutputs: usize,
) -> Result<Harness, String> {
    let refs = FixedRefs(vec![("ft".into(), "FlowTable", table.clone())]);
    Harness::with_refs(
        class,
        args,
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; noutputs],
        },
        &refs,
    )
}

/// Like [`try_harness`], panicking on a configuration error.
pub fn harness(
    class: &ElementClass,
    args: &str,
    table: &Arc<FlowTable>,
    noutputs: usize,
) -> Harness {
    try_harness(class, args, table, noutputs).unwrap_or_else(|e| panic!("{}: {e}", class.name))
}

/// Checks `config` against every built-in class.
pub fn plan(config: &str) -> bricks_runtime::Plan {
    use bricks_config::{Source, SourceMap};
    let mut map = SourceMap::default();
    let render = |map: &SourceMap, d: Vec<bricks_config::Diagnostic>| {
        d.iter()
            .map(|d| map.render(d))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let router = bricks_config::parse(
        &mut map,
        Source {
            name: "<test>".into(),
            text: config.to_string(),
        },
    )
    .unwrap_or_else(|d| panic!("{}", render(&map, d)));
    bricks_runtime::build(&router, &crate::registry())
        .unwrap_or_else(|d| panic!("{}", render(&map, d)))
}

/// Runs `config` on one engine to the end, the clock following the
/// packets.
pub fn run(config: &str) -> bricks_runtime::RunSummary {
    let plan = plan(config);
    let mut engine = bricks_runtime::Engine::new(&plan).unwrap();
    engine.idle_sleep = false;
    engine.set_trace_clock(true);
    let s = engine.run();
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    s
}

/// Runs `config` on `threads` unpinned workers to the end.
pub fn run_workers(config: &str, threads: usize) -> bricks_runtime::WorkersSummary {
    let plan = plan(config);
    let opts = bricks_runtime::WorkerOptions {
        threads,
        pin: false,
        ..bricks_runtime::WorkerOptions::default()
    };
    let w = bricks_runtime::Workers::start(Arc::new(plan), &opts).unwrap();
    let s = w.join();
    assert!(s.total.errors.is_empty(), "{:?}", s.total.errors);
    s
}

#[test]
fn manual_examples_run() {
    use super::*;
    for class in [
        &flow_table::CLASS,
        &tag_classifier::CLASS,
        &hash_classifier::CLASS,
        &flow_lookup::CLASS,
        &sroute_encap::CLASS,
        &sroute_lookup::CLASS,
        &sroute_decap::CLASS,
    ] {
        let m = class.manual;
        assert!(m.example.contains(class.name), "{}", class.name);
        let s = run(m.example);
        // Every packet made it through, none was refused.
        for e in &s.elements {
            for (name, v) in e.stats.entries() {
                let bad = matches!(
                    &**name,
                    "unknown"
                        | "beyond"
                        | "untagged"
                        | "not_ip"
                        | "no_flow"
                        | "no_output"
                        | "no_route"
                        | "malformed"
                        | "exhausted"
                        | "truncated"
                        | "no_headroom"
                        | "unconnected_drops"
                );
                assert!(!bad || *v == 0, "{}: {}.{name} = {v}", class.name, e.name);
            }
        }
        let good: u64 = s
            .elements
            .iter()
            .flat_map(|e| e.stats.entries())
            .filter(|(n, _)| matches!(&**n, "classified" | "forwarded" | "routed" | "decapsulated"))
            .map(|(_, v)| *v)
            .sum();
        assert!(good > 0, "{}: {}", class.name, s.render());
    }
}
