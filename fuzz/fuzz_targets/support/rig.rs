//! One element under test: the runtime's `Harness`, built as the graph
//! builder builds it, with a shared-state slot that other elements may
//! find by flow (`Refs`: an IPsec element finds the RadixIPsecLookup
//! upstream, a TCPConn the TCPDemux upstream, a TCPAck the TCPBuffer
//! downstream). Targets build their elements afresh for every input, so
//! each argument text is parsed once.
#![allow(dead_code)]

use bricks_config::Arg;
use bricks_element::{ElementClass, PortInfo, Processing};
pub use bricks_runtime::testing::{FlowRefs as Refs, Harness as Rig};
use std::cell::RefCell;
use std::collections::HashMap;

/// `args` as the configuration parser splits them, parsed once.
fn parsed(args: &str) -> Vec<Arg> {
    thread_local! {
        static PARSED: RefCell<HashMap<String, Vec<Arg>>> = RefCell::new(HashMap::new());
    }
    PARSED.with(|m| {
        m.borrow_mut()
            .entry(args.to_string())
            .or_insert_with(|| bricks_runtime::testing::parse_args(args).unwrap())
            .clone()
    })
}

/// Builds `class(args)` with these ports; panics on a configuration
/// error (the targets' configurations are fixed).
pub fn new(
    class: &ElementClass,
    args: &str,
    inputs: &[Processing],
    outputs: &[Processing],
    refs: &Refs,
) -> Rig {
    let ports = PortInfo {
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
    };
    Rig::from_args(class, &parsed(args), ports, refs)
        .unwrap_or_else(|e| panic!("{}({args}): {e}", class.name))
}
